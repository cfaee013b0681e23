//! `xu_queue_t` (seed 000 §1, §7 item 1): the 256-byte ring header.
//!
//! `xu_id`, `buffer` and `capacity` share the first cache line; the three
//! cursors each own a 64-byte line at +0x40/+0x80/+0xC0. The gaps are padding
//! that xunds never reads or writes. The cursors are clean 48-bit counters
//! (top 16 bits zero); the xu_id is OR'd in only when a seq_id is built (§2).
//!
//! (The wire-layer issue completes this module: typed view, parse/emit, dump.)

/// Byte offsets of the `xu_queue_t` fields (seed 000 §7 item 1).
pub mod off {
    /// `xu_id_t xu_id` (2 bytes, padded to 8).
    pub const XU_ID: usize = 0x00;
    /// `xuq_exec_info_t *buffer`.
    pub const BUFFER: usize = 0x08;
    /// `uint64_t capacity`.
    pub const CAPACITY: usize = 0x10;
    /// `uint64_t exec_head` (consumer cursor; written by the worker).
    pub const EXEC_HEAD: usize = 0x40;
    /// `uint64_t scheduled_head` (trigger cursor; written by the producer).
    pub const SCHEDULED_HEAD: usize = 0x80;
    /// `uint64_t scheduled_tail` (submit cursor; written by the producer).
    pub const SCHEDULED_TAIL: usize = 0xC0;
}

/// `sizeof(xu_queue_t)`.
pub const SIZE: usize = 256;
/// The 64-byte line each cursor owns.
pub const CACHE_LINE: usize = 64;
/// A cursor must stay below this (`xuq_client_submit` asserts
/// `scheduled_tail < 0xFFFFFFFFFFFE`, seed 000 §6).
pub const CURSOR_LIMIT: u64 = 0xFFFF_FFFF_FFFE;
/// Cursors start at 1 (seed 000 §1, xu-workers convention).
pub const CURSOR_START: u64 = 1;

const _: () = assert!(off::EXEC_HEAD % CACHE_LINE == 0);
const _: () = assert!(off::SCHEDULED_HEAD - off::EXEC_HEAD == CACHE_LINE);
const _: () = assert!(off::SCHEDULED_TAIL - off::SCHEDULED_HEAD == CACHE_LINE);
const _: () = assert!(off::SCHEDULED_TAIL + CACHE_LINE == SIZE);
