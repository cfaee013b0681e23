//! `xuq_exec_info_t` (seed 000 §1, §7 item 2): one 32-byte ring slot.
//!
//! (The wire-layer issue completes this module: typed view, parse/emit, dump.)

/// Byte offsets of the `xuq_exec_info_t` fields (seed 000 §7 item 2).
pub mod off {
    /// `seq_id_t seq_id` (8 bytes).
    pub const SEQ_ID: usize = 0x00;
    /// `NRT_STATUS *exec_status` (8-byte pointer).
    pub const EXEC_STATUS: usize = 0x08;
    /// `int mark_comp_efd` (4 bytes, -1 = no waiter).
    pub const MARK_COMP_EFD: usize = 0x10;
    /// `bool efd_from_pool` (1 byte; +0x15..+0x17 is padding).
    pub const EFD_FROM_POOL: usize = 0x14;
    /// `void *exec_info` (8-byte pointer to the work item).
    pub const EXEC_INFO: usize = 0x18;
}

/// `sizeof(xuq_exec_info_t)`.
pub const SIZE: usize = 32;
/// The "no waiter yet" sentinel for `mark_comp_efd` (seed 000 §1 QUIRK).
pub const NO_EFD: i32 = -1;

const _: () = assert!(off::EXEC_INFO + 8 == SIZE);
