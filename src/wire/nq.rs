//! `nq_entry`: our 16-byte notification-queue record (SPEC-NOTES.md
//! "Notification queues": the format is not public, so it is ours).
//!
//! (The HAL issue completes this module.)

use super::layout::Block;

/// `sizeof(nq_entry)`.
pub const SIZE: usize = 16;

/// Layout (placeholder until the HAL issue defines the fields).
pub const LAYOUT: Block = Block {
    name: "nq_entry",
    size: SIZE,
    fields: &[],
};
