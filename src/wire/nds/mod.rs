//! Seed 004, the NDS wire format.
//!
//! (The wire-layer issue completes this module; until then the block list and
//! region map are empty placeholders so `xunds layout` compiles.)

use super::layout::{Block, Span};

/// Every NDS block layout (`nds_header`, records, `nds_mem_usage_info`).
pub const BLOCKS: &[Block] = &[];

/// The region map rows (seed 004 §1), in offset order.
pub const REGIONS: &[Span] = &[];
