//! `udma_desc`: the 16-byte UDMA descriptor (docs/abi.md §1.11).
//!
//! One 16-byte, 16-byte-aligned union with three views:
//!
//! | view | +0 | +4 | +8 |
//! |---|---|---|---|
//! | M2S ("TX", source side) | `len_ctrl` u32 | `meta_ctrl` u32 | `buf_ptr` u64 (source pa) |
//! | M2S meta | `len_ctrl` u32 | `meta_ctrl` u32 | `meta1` u32, `meta2` u32 at +12 |
//! | S2M ("RX", destination side) | `len_ctrl` u32 | `buf2_ptr_lo` u32 | `buf1_ptr` u64 (destination pa) |
//!
//! `len_ctrl` (all views): bits 15:0 length (65536 encoded as 0), 25:24 ring id
//! (the "phase"), 26 FIRST, 27 LAST, 28 INT_EN, 29 STRONG_ORDER_WR (S2M only),
//! 30 DMB (M2S only: wait for earlier transfers). Bits 23:16 and 31 are
//! reserved: a decoder refuses them.
//!
//! M2S `meta_ctrl`: bit 0 is_last_block, bit 1 is_first_block, bit 19
//! copy_source_data, bits 22:20 op_type, bits 25:23 op, bit 26 write barrier;
//! the usual copy value is `0x0108_0003` ([`MetaCtrl::COPY`]).
//!
//! Every decoder here takes untrusted bytes and returns a typed
//! [`UdmaError`], never panics.

use bitflags::bitflags;

#[cfg(feature = "std")]
use super::layout::annotated_dump;
use super::layout::Block;
use super::{read, write};

/// Required alignment of a descriptor in its ring.
pub const ALIGN: usize = 16;
/// Largest transfer one descriptor can carry (encoded as length 0).
pub const MAX_LEN: u32 = 65536;
/// Number of distinct ring ids (2 bits).
pub const RING_IDS: u8 = 4;
/// The ring id a fresh ring starts with (docs/abi.md §1.11: "starts at 1").
pub const FIRST_RING_ID: u8 = 1;

wire_block! {
    /// Layout of the M2S view (the name the `layout` command lists). Its
    /// offsets serve every view: `WORD1` is `meta_ctrl` (M2S, M2S meta) or
    /// `buf2_ptr_lo` (S2M), `PTR` is `buf_ptr` / `buf1_ptr` / `meta1`.
    pub LAYOUT: "udma_desc", SIZE = 16, field {
        seed LEN_CTRL "len_ctrl" = 0, 4;
        seed WORD1 "meta_ctrl" = 4, 4;
        seed PTR "buf_ptr" = 8, 8;
    }
}

wire_block! {
    /// Layout of the M2S meta view.
    pub LAYOUT_M2S_META: "udma_desc (m2s meta)", M2S_META_SIZE = 16, meta_field {
        seed "len_ctrl" = 0, 4;
        seed "meta_ctrl" = 4, 4;
        seed "meta1" = 8, 4;
        seed "meta2" = 12, 4;
    }
}

wire_block! {
    /// Layout of the S2M view.
    pub LAYOUT_S2M: "udma_desc (s2m)", S2M_SIZE = 16, s2m_field {
        seed "len_ctrl" = 0, 4;
        seed "buf2_ptr_lo" = 4, 4;
        seed "buf1_ptr" = 8, 8;
    }
}

const _: () = assert!(SIZE == ALIGN && M2S_META_SIZE == SIZE && S2M_SIZE == SIZE);

/// `len_ctrl` bits 15:0: the length.
pub const LEN_MASK: u32 = 0x0000_FFFF;
/// `len_ctrl` bits 25:24: the ring id.
pub const RING_ID_SHIFT: u32 = 24;
/// Mask of the ring id after shifting.
pub const RING_ID_MASK: u32 = 0b11;
/// `len_ctrl` bits that must be zero (23:16 and 31).
pub const LEN_CTRL_RESERVED: u32 = 0x00FF_0000 | 0x8000_0000;

bitflags! {
    /// The flag bits of `len_ctrl` (26..=30).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct DescFlags: u32 {
        /// Bit 26: first descriptor of a packet.
        const FIRST = 1 << 26;
        /// Bit 27: last descriptor of a packet.
        const LAST = 1 << 27;
        /// Bit 28: raise an interrupt when done.
        const INT_EN = 1 << 28;
        /// Bit 29: strongly ordered write (S2M only).
        const STRONG_ORDER_WR = 1 << 29;
        /// Bit 30: data memory barrier, wait for earlier transfers (M2S only).
        const DMB = 1 << 30;
    }
}

impl DescFlags {
    /// The set flags' names joined by `|`, or `-` for none (how a dump and
    /// the trace's text view show them).
    #[cfg(feature = "std")]
    pub fn names(self) -> String {
        let names: Vec<&str> = self.iter_names().map(|(n, _)| n).collect();
        if names.is_empty() {
            "-".to_string()
        } else {
            names.join("|")
        }
    }
}

// The flags, the length, the ring id and the reserved bits tile the word.
const _: () = assert!(
    DescFlags::all().bits() + LEN_CTRL_RESERVED + LEN_MASK + (RING_ID_MASK << RING_ID_SHIFT)
        == u32::MAX
        && DescFlags::all().bits() & (LEN_CTRL_RESERVED | LEN_MASK) == 0
        && DescFlags::all().bits() & (RING_ID_MASK << RING_ID_SHIFT) == 0
);

wire_enum! {
    /// Which of the three views a descriptor is read as.
    pub enum View(u8) {
        /// Source side ("TX").
        M2s = 0 => "m2s",
        /// Source side, metadata form.
        M2sMeta = 1 => "m2s-meta",
        /// Destination side ("RX").
        S2m = 2 => "s2m",
    }
}

impl View {
    /// The layout descriptor of this view.
    pub const fn layout(self) -> &'static Block {
        match self {
            View::M2s => &LAYOUT,
            View::M2sMeta => &LAYOUT_M2S_META,
            View::S2m => &LAYOUT_S2M,
        }
    }
}

error_enum! {
    /// Why a descriptor could not be encoded or decoded.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum UdmaError {
        /// Fewer than 16 bytes.
        Truncated {
            /// Bytes given.
            got: usize,
        } => "udma_desc: need 16 bytes, got {got}",
        /// A length outside `1..=65536` (encode side).
        BadLength {
            /// The length asked for.
            len: u32,
        } => "udma_desc: length {len} outside 1..=65536",
        /// A ring id outside `0..=3` (encode side).
        BadRingId {
            /// The ring id asked for.
            ring_id: u8,
        } => "udma_desc: ring id {ring_id} outside 0..=3",
        /// Reserved bits set in a control word.
        ReservedBits {
            /// `len_ctrl` or `meta_ctrl`.
            field: &'static str,
            /// The offending bits.
            bits: u32,
        } => "udma_desc.{field}: reserved bits {bits:#010x} set",
        /// A flag that the view does not allow (DMB on S2M, STRONG_ORDER_WR on M2S).
        FlagNotAllowed {
            /// The view decoded or encoded.
            view: View,
            /// The offending flag bits.
            flag: u32,
        } => "udma_desc ({view}): flag {flag:#010x} not allowed",
        /// A `meta_ctrl` sub-field out of its bit range (encode side).
        BadMetaField {
            /// `op_type` or `op`.
            field: &'static str,
            /// The value asked for.
            value: u8,
        } => "udma_desc.meta_ctrl.{field}: value {value} does not fit",
    }
}

/// The decoded `len_ctrl` word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LenCtrl {
    /// Transfer length in bytes, `1..=65536`.
    pub len: u32,
    /// The 2-bit ring id ("phase") the producer stamped.
    pub ring_id: u8,
    /// FIRST / LAST / INT_EN / STRONG_ORDER_WR / DMB.
    pub flags: DescFlags,
}

impl LenCtrl {
    /// Encode; refuses a length outside `1..=65536` or a ring id above 3.
    pub const fn encode(&self) -> Result<u32, UdmaError> {
        if self.len == 0 || self.len > MAX_LEN {
            return Err(UdmaError::BadLength { len: self.len });
        }
        if self.ring_id >= RING_IDS {
            return Err(UdmaError::BadRingId {
                ring_id: self.ring_id,
            });
        }
        // 65536 is encoded as 0 (docs/abi.md §1.11).
        let len = self.len & LEN_MASK;
        Ok(len | ((self.ring_id as u32) << RING_ID_SHIFT) | self.flags.bits())
    }

    /// Decode; refuses reserved bits (23:16, 31).
    pub const fn decode(w: u32) -> Result<LenCtrl, UdmaError> {
        if w & LEN_CTRL_RESERVED != 0 {
            return Err(UdmaError::ReservedBits {
                field: "len_ctrl",
                bits: w & LEN_CTRL_RESERVED,
            });
        }
        let raw_len = w & LEN_MASK;
        Ok(LenCtrl {
            len: if raw_len == 0 { MAX_LEN } else { raw_len },
            ring_id: Self::ring_id_of(w),
            flags: DescFlags::from_bits_truncate(w),
        })
    }

    /// The ring id bits of a raw `len_ctrl` word, without any other check
    /// (what a consumer compares first: a wrong ring id means "not yet written").
    pub const fn ring_id_of(w: u32) -> u8 {
        ((w >> RING_ID_SHIFT) & RING_ID_MASK) as u8
    }

    /// Refuse the flag `view` must never carry (DMB on S2M, STRONG_ORDER_WR on M2S).
    fn check_view(&self, view: View) -> Result<(), UdmaError> {
        let forbidden = match view {
            View::M2s | View::M2sMeta => DescFlags::STRONG_ORDER_WR,
            View::S2m => DescFlags::DMB,
        };
        match self.flags.intersection(forbidden) {
            bad if bad.is_empty() => Ok(()),
            bad => Err(UdmaError::FlagNotAllowed {
                view,
                flag: bad.bits(),
            }),
        }
    }
}

/// The next ring id after a wrap: steps by 1 mod 4 (docs/abi.md §1.11).
pub const fn next_ring_id(id: u8) -> u8 {
    id.wrapping_add(1) % RING_IDS
}

// docs/abi.md §1.11: the ring id starts at 1 and steps by 1 mod 4; a length
// of 65536 is encoded as 0 in len_ctrl bits 15:0 (and 0 decodes back to
// 65536); the ring id sits at bits 25:24.
const _: () = assert!(FIRST_RING_ID == 1 && next_ring_id(1) == 2 && next_ring_id(3) == 0);
const _: () = assert!(MAX_LEN == 1 << 16 && LEN_MASK == 0xFFFF);
const _: () = assert!(matches!(
    LenCtrl {
        len: MAX_LEN,
        ring_id: 2,
        flags: DescFlags::empty()
    }
    .encode(),
    Ok(0x0200_0000)
));
const _: () = assert!(matches!(
    LenCtrl::decode(0),
    Ok(LenCtrl { len: MAX_LEN, .. })
));

/// M2S `meta_ctrl` bits 22:20.
pub const OP_TYPE_SHIFT: u32 = 20;
/// M2S `meta_ctrl` bits 25:23.
pub const OP_SHIFT: u32 = 23;
/// Width mask of `op_type` and `op`.
pub const OP_MASK: u32 = 0b111;
bitflags! {
    /// The one-bit fields of M2S `meta_ctrl`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct MetaFlags: u32 {
        /// Bit 0: last block.
        const IS_LAST_BLOCK = 1 << 0;
        /// Bit 1: first block.
        const IS_FIRST_BLOCK = 1 << 1;
        /// Bit 19: copy the source data.
        const COPY_SOURCE_DATA = 1 << 19;
        /// Bit 26: write barrier.
        const WRITE_BARRIER = 1 << 26;
    }
}

/// Every defined `meta_ctrl` bit; the rest are reserved.
pub const META_DEFINED: u32 =
    MetaFlags::all().bits() | (OP_MASK << OP_TYPE_SHIFT) | (OP_MASK << OP_SHIFT);

/// The decoded M2S `meta_ctrl` word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MetaCtrl {
    /// Bits 0, 1, 19 and 26.
    pub flags: MetaFlags,
    /// Bits 22:20.
    pub op_type: u8,
    /// Bits 25:23.
    pub op: u8,
}

impl MetaCtrl {
    /// The usual plain copy (`0x0108_0003`): first and last block, copy
    /// source data, op 2, op_type 0.
    pub const COPY: MetaCtrl = MetaCtrl {
        flags: MetaFlags::IS_LAST_BLOCK
            .union(MetaFlags::IS_FIRST_BLOCK)
            .union(MetaFlags::COPY_SOURCE_DATA),
        op_type: 0,
        op: 2,
    };

    /// Encode; refuses an `op_type` or `op` above 7.
    pub const fn encode(&self) -> Result<u32, UdmaError> {
        let (field, value) = if self.op_type as u32 > OP_MASK {
            ("op_type", self.op_type)
        } else if self.op as u32 > OP_MASK {
            ("op", self.op)
        } else {
            return Ok(self.flags.bits()
                | (self.op_type as u32) << OP_TYPE_SHIFT
                | (self.op as u32) << OP_SHIFT);
        };
        Err(UdmaError::BadMetaField { field, value })
    }

    /// Decode; refuses reserved bits.
    pub const fn decode(w: u32) -> Result<MetaCtrl, UdmaError> {
        if w & !META_DEFINED != 0 {
            return Err(UdmaError::ReservedBits {
                field: "meta_ctrl",
                bits: w & !META_DEFINED,
            });
        }
        Ok(MetaCtrl {
            flags: MetaFlags::from_bits_truncate(w),
            op_type: ((w >> OP_TYPE_SHIFT) & OP_MASK) as u8,
            op: ((w >> OP_SHIFT) & OP_MASK) as u8,
        })
    }
}

// docs/abi.md §1.11: the usual copy value is 0x01080003.
const _: () = assert!(matches!(MetaCtrl::COPY.encode(), Ok(0x0108_0003)));

/// The M2S (source) view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct M2sDesc {
    /// `len_ctrl`.
    pub ctrl: LenCtrl,
    /// `meta_ctrl`.
    pub meta: MetaCtrl,
    /// `buf_ptr`: the source device physical address.
    pub src: u64,
}

/// The M2S meta view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct M2sMetaDesc {
    /// `len_ctrl`.
    pub ctrl: LenCtrl,
    /// `meta_ctrl`.
    pub meta: MetaCtrl,
    /// `meta1`.
    pub meta1: u32,
    /// `meta2`.
    pub meta2: u32,
}

/// The S2M (destination) view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct S2mDesc {
    /// `len_ctrl`.
    pub ctrl: LenCtrl,
    /// `buf2_ptr_lo`: unused by our device; must round-trip.
    pub buf2_ptr_lo: u32,
    /// `buf1_ptr`: the destination device physical address.
    pub dst: u64,
}

/// The 16 bytes of a descriptor read as `view`: `len_ctrl` (view-checked),
/// the second word, then the 8-byte tail.
fn encode(
    view: View,
    ctrl: &LenCtrl,
    word1: Result<u32, UdmaError>,
    tail: u64,
) -> Result<[u8; SIZE], UdmaError> {
    ctrl.check_view(view)?;
    let mut b = [0u8; SIZE];
    write::<u32>(&mut b, field::LEN_CTRL, ctrl.encode()?);
    write::<u32>(&mut b, field::WORD1, word1?);
    write::<u64>(&mut b, field::PTR, tail);
    Ok(b)
}

/// `len_ctrl` (decoded and view-checked), the second word and the tail of
/// the first 16 bytes of `bytes` read as `view`.
#[inline]
fn decode(view: View, bytes: &[u8]) -> Result<(LenCtrl, u32, u64), UdmaError> {
    let Some(b) = bytes.first_chunk::<SIZE>() else {
        return Err(UdmaError::Truncated { got: bytes.len() });
    };
    let ctrl = LenCtrl::decode(read::<u32>(b, field::LEN_CTRL))?;
    ctrl.check_view(view)?;
    Ok((
        ctrl,
        read::<u32>(b, field::WORD1),
        read::<u64>(b, field::PTR),
    ))
}

/// Two `u32` as the 8-byte tail, `lo` first.
const fn join(lo: u32, hi: u32) -> u64 {
    lo as u64 | (hi as u64) << 32
}

impl M2sDesc {
    /// A plain copy of `len` bytes from `src`, FIRST|LAST, meta [`MetaCtrl::COPY`].
    pub const fn copy(len: u32, ring_id: u8, src: u64) -> M2sDesc {
        M2sDesc {
            ctrl: LenCtrl {
                len,
                ring_id,
                flags: DescFlags::FIRST.union(DescFlags::LAST),
            },
            meta: MetaCtrl::COPY,
            src,
        }
    }

    /// Encode to 16 bytes.
    pub fn encode(&self) -> Result<[u8; SIZE], UdmaError> {
        encode(View::M2s, &self.ctrl, self.meta.encode(), self.src)
    }

    /// Decode the first 16 bytes of `bytes`.
    #[inline]
    pub fn decode(bytes: &[u8]) -> Result<M2sDesc, UdmaError> {
        let (ctrl, meta, src) = decode(View::M2s, bytes)?;
        let meta = MetaCtrl::decode(meta)?;
        Ok(M2sDesc { ctrl, meta, src })
    }
}

impl M2sMetaDesc {
    /// Encode to 16 bytes.
    pub fn encode(&self) -> Result<[u8; SIZE], UdmaError> {
        let tail = join(self.meta1, self.meta2);
        encode(View::M2sMeta, &self.ctrl, self.meta.encode(), tail)
    }

    /// Decode the first 16 bytes of `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<M2sMetaDesc, UdmaError> {
        let (ctrl, meta, tail) = decode(View::M2sMeta, bytes)?;
        let meta = MetaCtrl::decode(meta)?;
        let (meta1, meta2) = (tail as u32, (tail >> 32) as u32);
        Ok(M2sMetaDesc {
            ctrl,
            meta,
            meta1,
            meta2,
        })
    }
}

impl S2mDesc {
    /// A plain write of `len` bytes to `dst`, FIRST|LAST.
    pub const fn copy(len: u32, ring_id: u8, dst: u64) -> S2mDesc {
        S2mDesc {
            ctrl: LenCtrl {
                len,
                ring_id,
                flags: DescFlags::FIRST.union(DescFlags::LAST),
            },
            buf2_ptr_lo: 0,
            dst,
        }
    }

    /// Encode to 16 bytes.
    pub fn encode(&self) -> Result<[u8; SIZE], UdmaError> {
        encode(View::S2m, &self.ctrl, Ok(self.buf2_ptr_lo), self.dst)
    }

    /// Decode the first 16 bytes of `bytes`.
    #[inline]
    pub fn decode(bytes: &[u8]) -> Result<S2mDesc, UdmaError> {
        let (ctrl, buf2_ptr_lo, dst) = decode(View::S2m, bytes)?;
        Ok(S2mDesc {
            ctrl,
            buf2_ptr_lo,
            dst,
        })
    }
}

/// Annotated dump of `bytes` read as `view`: the field-by-field hex dump, then
/// the decoded control words and the verdict of the checked decoder. Never
/// panics, whatever the input.
#[cfg(feature = "std")]
pub fn dump(view: View, bytes: &[u8]) -> String {
    use core::fmt::Write as _;
    let mut out = annotated_dump(view.layout(), bytes);
    let Some(b) = bytes.first_chunk::<SIZE>() else {
        let _ = writeln!(out, "  {}", UdmaError::Truncated { got: bytes.len() });
        return out;
    };
    let _ = match LenCtrl::decode(read::<u32>(b, field::LEN_CTRL)) {
        Ok(c) => {
            let (len, id, flags) = (c.len, c.ring_id, c.flags.names());
            writeln!(out, "  len_ctrl: len={len} ring_id={id} flags={flags}")
        }
        Err(e) => writeln!(out, "  len_ctrl: {e}"),
    };
    if view != View::S2m {
        let _ = match MetaCtrl::decode(read::<u32>(b, field::WORD1)) {
            Ok(m) => {
                let has = |f| m.flags.contains(f);
                writeln!(
                    out,
                    "  meta_ctrl: first_block={} last_block={} copy_source_data={} op_type={} op={} write_barrier={}",
                    has(MetaFlags::IS_FIRST_BLOCK), has(MetaFlags::IS_LAST_BLOCK),
                    has(MetaFlags::COPY_SOURCE_DATA), m.op_type, m.op, has(MetaFlags::WRITE_BARRIER)
                )
            }
            Err(e) => writeln!(out, "  meta_ctrl: {e}"),
        };
    }
    let verdict = match view {
        View::M2s => M2sDesc::decode(b)
            .map(|d| format!("m2s copy of {} bytes from pa {:#x}", d.ctrl.len, d.src)),
        View::M2sMeta => M2sMetaDesc::decode(b)
            .map(|d| format!("m2s meta meta1={:#x} meta2={:#x}", d.meta1, d.meta2)),
        View::S2m => S2mDesc::decode(b)
            .map(|d| format!("s2m write of {} bytes to pa {:#x}", d.ctrl.len, d.dst)),
    };
    let _ = match verdict {
        Ok(s) => writeln!(out, "  => {s}"),
        Err(e) => writeln!(out, "  => refused: {e}"),
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn len_65536_is_encoded_as_zero() {
        let c = LenCtrl {
            len: 65536,
            ring_id: 1,
            flags: DescFlags::empty(),
        };
        let w = c.encode().unwrap();
        assert_eq!(w & LEN_MASK, 0);
        assert_eq!(LenCtrl::decode(w).unwrap().len, 65536);
    }

    #[test]
    fn ring_id_steps_mod_4() {
        assert_eq!(next_ring_id(1), 2);
        assert_eq!(next_ring_id(3), 0);
        assert_eq!(next_ring_id(0), 1);
    }
}
