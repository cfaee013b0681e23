//! The byte layer: every block the two seeds define, as values with checked
//! parsing and exact encoding, or checked byte views.
//!
//! `wire` owns bytes and nothing else: no I/O, no atomics, no `unsafe`. Each
//! ABI block is declared once, with `wire_block!` (`src/macros.rs`): the C
//! field names with the spec's literal offsets and sizes, and the Rust field
//! and type of each, give the value type, its checked `parse` (a
//! [`WireError`], never a panic, on untrusted bytes), `encode` / `emit`, the
//! `LAYOUT` descriptor, the offset consts, the compile-time asserts and an
//! annotated hex dump ([`layout::annotated_dump`]) used by snapshots and
//! error messages. Blocks whose bytes do not map one field to one value
//! (the seq_id bitfield, the UDMA descriptor views, the NQ record) declare
//! their layout the same way and read it with a codec of their own.
//!
//! docs/abi.md §1 blocks: [`xu_queue`], [`exec_slot`], [`seq_id`],
//! [`device_request`], [`work_item`]. Device side: [`udma`] (from
//! docs/abi.md §1.11) and [`nq`] (ours, §1.13). docs/abi.md §2: [`nds`]. Status codes:
//! [`status`].
#![forbid(unsafe_code)]

pub mod device_request;
pub mod exec_slot;
pub mod layout;
pub mod nds;
pub mod nq;
pub mod seq_id;
pub mod status;
pub mod udma;
pub mod work_item;
pub mod xu_queue;

use layout::Block;

/// The seed-000 blocks, in the seed's order: ring header, slot, seq_id,
/// device request (body, then the 0x38-byte buffer), work item and its
/// completion-response area.
pub const XU_BLOCKS: &[&Block] = &[
    &xu_queue::LAYOUT,
    &exec_slot::LAYOUT,
    &seq_id::LAYOUT,
    &device_request::LAYOUT,
    &device_request::BUFFER_LAYOUT,
    &work_item::LAYOUT,
    &work_item::INFER_RESP_LAYOUT,
];

/// The device-side blocks: the UDMA descriptor (docs/abi.md §1.11) and our NQ record (§1.13).
pub const DEVICE_BLOCKS: &[&Block] = &[
    &udma::LAYOUT,
    &udma::LAYOUT_M2S_META,
    &udma::LAYOUT_S2M,
    &nq::LAYOUT,
];

/// Every ABI block xunds defines, in the order `xunds layout` prints them:
/// [`XU_BLOCKS`], [`DEVICE_BLOCKS`], then [`nds::BLOCKS`] (docs/abi.md §2).
pub fn all_blocks() -> impl Iterator<Item = &'static Block> {
    XU_BLOCKS
        .iter()
        .copied()
        .chain(DEVICE_BLOCKS.iter().copied())
        .chain(nds::BLOCKS.iter())
}

error_enum! {
    /// Why a byte string was refused by a wire decoder.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum WireError {
        /// The input is shorter than the block.
        Truncated {
            /// The block's C name.
            block: &'static str,
            /// Bytes the block needs.
            need: usize,
            /// Bytes that were given.
            got: usize,
        } => "{block}: need {need} bytes, got {got}",
        /// A field holds a value the ABI does not allow.
        InvalidField {
            /// The block's C name.
            block: &'static str,
            /// The field's C name.
            field: &'static str,
            /// The offending raw value.
            value: u64,
        } => "{block}.{field}: invalid value {value:#x}",
        /// An index (counter, core, slot, ...) is outside its range.
        OutOfRange {
            /// What was being indexed.
            what: &'static str,
            /// The offending value.
            value: u64,
            /// The exclusive upper bound (or the band size) it violated.
            limit: u64,
        } => "{what} {value} out of range (limit {limit})",
    }
}

impl WireError {
    /// `InvalidField` for `block.field` holding `value`.
    pub(crate) fn invalid(block: &'static str, field: &'static str, value: impl Into<u64>) -> Self {
        WireError::InvalidField {
            block,
            field,
            value: value.into(),
        }
    }
}

/// `value` as an index when it is below `limit`, else
/// [`WireError::OutOfRange`] naming `what`: the range check of every
/// numbered ABI slot (counters, cores, model slots, error classes).
pub(crate) const fn below(
    what: &'static str,
    value: u64,
    limit: usize,
) -> Result<usize, WireError> {
    if value < limit as u64 {
        Ok(value as usize)
    } else {
        let limit = limit as u64;
        Err(WireError::OutOfRange { what, value, limit })
    }
}

/// Check that `bytes` holds at least `need` bytes for `block`.
pub(crate) fn need(block: &'static str, bytes: &[u8], need: usize) -> Result<(), WireError> {
    if bytes.len() < need {
        Err(WireError::Truncated {
            block,
            need,
            got: bytes.len(),
        })
    } else {
        Ok(())
    }
}

/// The little-endian `T` at byte `at` of `b` (zero when `b` is too short:
/// callers check the length first, with [`need`]).
pub(crate) fn read<T: layout::Codec + Default>(b: &[u8], at: usize) -> T {
    let d = b.get(at..at.saturating_add(T::SIZE));
    d.and_then(|d| T::get(d).ok()).unwrap_or_default()
}

/// Write `v` little-endian at byte `at` of `b` (nothing when `b` is too short).
pub(crate) fn write<T: layout::Codec>(b: &mut [u8], at: usize, v: T) {
    if let Some(d) = b.get_mut(at..at.saturating_add(T::SIZE)) {
        v.put(d);
    }
}
