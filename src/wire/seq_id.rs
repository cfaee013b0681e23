//! `seq_id_t` / `xu_id_t` packing (docs/abi.md §1.4).
//!
//! `seq_id = (cursor & 0xFFFFFFFFFFFF) | (xu_id << 48)`;
//! `xu_id = {type:4 @[3:0], queue:4 @[7:4], vnc_id:8 @[15:8]}`, so the vNC id
//! is the seq_id's high byte (`HIBYTE(seq_id.raw)`, what `tpb_xu_get` indexes
//! by). In memory a `seq_id_t` is 8 little-endian bytes: `seq_num` in bytes
//! 0..6, `xu_id` in bytes 6..8 (`vnc_id` is byte 7).
//!
//! The same materialisation serves submit (`cursor = scheduled_tail`) and
//! "last completed" (`cursor = exec_head - 1`, docs/abi.md §1.8):
//! [`SeqId::from_cursor`] and [`SeqId::last_completed`].

use core::fmt;
use core::mem::size_of;

#[cfg(feature = "std")]
use super::layout::annotated_dump;
use super::{need, read, WireError};

/// Mask of the 48-bit `seq_num` field.
pub const SEQ_NUM_MASK: u64 = 0xFFFF_FFFF_FFFF;
/// Bit position of `xu_id` inside a `seq_id_t`.
pub const XU_ID_SHIFT: u32 = 48;
/// `sizeof(xu_id_t)`.
pub const XU_ID_SIZE: usize = 2;

wire_block! {
    /// Layout of `seq_id_t` (8 bytes, the little-endian storage of the
    /// bitfield): the 48-bit counter, then the XU id.
    pub LAYOUT: "seq_id_t", SIZE = 8, off {
        /// `seq_num:48`.
        seed SEQ_NUM "seq_num" = 0, 6;
        /// `xu_id:16`.
        seed XU_ID "xu_id" = 6, 2;
    }
}

const _: () = assert!(SEQ_NUM_MASK == (1u64 << XU_ID_SHIFT) - 1);
const _: () = assert!(off::XU_ID * 8 == XU_ID_SHIFT as usize);
const _: () = assert!(size_of::<SeqId>() == SIZE && size_of::<XuId>() == XU_ID_SIZE);
// docs/abi.md §1.4 bit positions: type @[3:0], queue @[7:4], vnc_id @[15:8].
const _: () = assert!(XuId::new(0xF, 0, 0).0 == 0x000F);
const _: () = assert!(XuId::new(0, 0xF, 0).0 == 0x00F0);
const _: () = assert!(XuId::new(0, 0, 0xFF).0 == 0xFF00);
// HIBYTE(seq_id) is the vNC (docs/abi.md §1.4).
const _: () = assert!(SeqId::from_cursor(0, XuId::new(0, 0, 0xAB)).0 >> 56 == 0xAB);

codec_as!(SeqId: u64, |s| s.0, |v| Some(SeqId(v)));
codec_as!(XuId: u16, |x| x.0, |v| Some(XuId(v)));

/// A 16-bit XU id: `{type:4, queue:4, vnc_id:8}`.
///
/// # Examples
///
/// ```
/// use xunds::wire::seq_id::XuId;
///
/// let xu = XuId::new(3, 5, 7); // type 3, queue 5, vNC 7
/// assert_eq!(xu.0, 0x0753);
/// assert_eq!((xu.ty(), xu.queue(), xu.vnc_id()), (3, 5, 7));
/// assert_eq!(XuId::parse(&xu.encode()), Ok(xu));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[repr(transparent)]
pub struct XuId(pub u16);

impl XuId {
    /// Build from the three bitfields (`ty` and `queue` are masked to 4 bits).
    pub const fn new(ty: u8, queue: u8, vnc_id: u8) -> XuId {
        XuId(((vnc_id as u16) << 8) | (((queue & 0xF) as u16) << 4) | ((ty & 0xF) as u16))
    }
    /// `type` (bits 3:0).
    pub const fn ty(self) -> u8 {
        (self.0 & 0xF) as u8
    }
    /// `queue` (bits 7:4).
    pub const fn queue(self) -> u8 {
        ((self.0 >> 4) & 0xF) as u8
    }
    /// `vnc_id` (bits 15:8).
    pub const fn vnc_id(self) -> u8 {
        (self.0 >> 8) as u8
    }
    /// The 2 little-endian bytes of an `xu_id_t`.
    pub const fn encode(self) -> [u8; XU_ID_SIZE] {
        self.0.to_le_bytes()
    }
    /// Decode the first 2 bytes (every bit pattern is an XU id).
    pub fn parse(bytes: &[u8]) -> Result<XuId, WireError> {
        need("xu_id_t", bytes, XU_ID_SIZE)?;
        Ok(XuId(read::<u16>(bytes, 0)))
    }
}

impl fmt::Display for XuId {
    /// `0x0753{type 3, queue 5, vnc 7}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:#06x}{{type {}, queue {}, vnc {}}}",
            self.0,
            self.ty(),
            self.queue(),
            self.vnc_id()
        )
    }
}

/// A 64-bit sequence handle: xu_id in bits 63:48, seq_num in 47:0.
///
/// # Examples
///
/// ```
/// use xunds::wire::seq_id::{SeqId, XuId};
///
/// let xu = XuId::new(0, 0, 2);
/// // What a submit at `scheduled_tail = 5` returns.
/// let s = SeqId::from_cursor(5, xu);
/// assert_eq!(s.0, 0x0200_0000_0000_0005);
/// assert_eq!((s.seq_num(), s.xu_id(), s.vnc_id()), (5, xu, 2));
/// // Done once the worker's `exec_head` has passed it.
/// assert!(s.is_completed_by(SeqId::last_completed(6, xu)));
/// assert!(!s.is_completed_by(SeqId::last_completed(5, xu)));
/// assert_eq!(SeqId::parse(&s.encode()), Ok(s));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[repr(transparent)]
pub struct SeqId(pub u64);

impl SeqId {
    /// The materialisation shared by submit and last-completed (docs/abi.md §1.4).
    pub const fn from_cursor(cursor: u64, xu: XuId) -> SeqId {
        SeqId((cursor & SEQ_NUM_MASK) | ((xu.0 as u64) << XU_ID_SHIFT))
    }
    /// `xuq_get_last_completed` (docs/abi.md §1.8): `(exec_head - 1) | xu_id << 48`.
    /// With `exec_head` at its start value 1 this is seq_num 0: nothing yet.
    pub const fn last_completed(exec_head: u64, xu: XuId) -> SeqId {
        SeqId::from_cursor(exec_head.wrapping_sub(1), xu)
    }
    /// The 48-bit per-XU counter.
    pub const fn seq_num(self) -> u64 {
        self.0 & SEQ_NUM_MASK
    }
    /// The owning XU.
    pub const fn xu_id(self) -> XuId {
        XuId((self.0 >> XU_ID_SHIFT) as u16)
    }
    /// The vNC id (`HIBYTE(seq_id.raw)`).
    pub const fn vnc_id(self) -> u8 {
        (self.0 >> 56) as u8
    }
    /// The completion test (docs/abi.md §1.8): `self <= last_completed` as one
    /// `u64` comparison, meaningful only for the same XU (`false` otherwise).
    pub const fn is_completed_by(self, last_completed: SeqId) -> bool {
        self.xu_id().0 == last_completed.xu_id().0 && self.0 <= last_completed.0
    }
    /// The 8 little-endian bytes of a `seq_id_t`.
    pub const fn encode(self) -> [u8; SIZE] {
        self.0.to_le_bytes()
    }
    /// Decode the first 8 bytes (every bit pattern is a seq_id).
    pub fn parse(bytes: &[u8]) -> Result<SeqId, WireError> {
        need(LAYOUT.name, bytes, SIZE)?;
        Ok(SeqId(read::<u64>(bytes, 0)))
    }
    /// Annotated hex dump.
    #[cfg(feature = "std")]
    pub fn dump(self) -> String {
        annotated_dump(&LAYOUT, &self.encode())
    }
}

impl fmt::Display for SeqId {
    /// `0x0753000000000005{xu 0x0753{type 3, queue 5, vnc 7}, seq 5}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:#018x}{{xu {}, seq {}}}",
            self.0,
            self.xu_id(),
            self.seq_num()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display() {
        let s = SeqId::from_cursor(5, XuId::new(3, 5, 7));
        assert_eq!(
            s.to_string(),
            "0x0753000000000005{xu 0x0753{type 3, queue 5, vnc 7}, seq 5}"
        );
    }

    #[test]
    fn completion_is_per_xu() {
        // b's raw handles are all below a's: a bare u64 compare would say "done".
        let a = XuId::new(0, 0, 2);
        let b = XuId::new(0, 0, 1);
        let last = SeqId::last_completed(4, a);
        assert!(SeqId::from_cursor(3, a).is_completed_by(last));
        assert!(!SeqId::from_cursor(4, a).is_completed_by(last));
        assert!(!SeqId::from_cursor(1, b).is_completed_by(last));
    }
}
