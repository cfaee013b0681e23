//! `udma_desc`: the 16-byte UDMA descriptor (SPEC-NOTES.md "UDMA descriptors").
//!
//! (The HAL issue completes this module; until then only the layout name and
//! size exist so `xunds layout` can list it.)

use super::layout::{Block, Field};

/// `sizeof(udma_desc)`.
pub const SIZE: usize = 16;

/// Layout of the M2S view (placeholder until the HAL issue lands the views).
pub const LAYOUT: Block = Block {
    name: "udma_desc",
    size: SIZE,
    fields: &[
        Field::seed("len_ctrl", 0, 4),
        Field::seed("meta_ctrl", 4, 4),
        Field::seed("buf_ptr", 8, 8),
    ],
};
