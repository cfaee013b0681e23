//! The model record (docs/abi.md §2.6): `nds_model_node_data_internal`, 672 B,
//! `{hash, node_info (284 B), mem_usage[2][12] (384 B)}`, one per slot in the
//! region map's `model_records` row, allocated through the u64
//! `model_bitmap` before it. `node_info` is flattened into
//! [`ModelRecord`]; [`NODE_INFO_LAYOUT`] is its part of the record's layout.
//!
//! Each `nds_mem_usage_info` is `{size_t total_size; uint32_t chunk_count;}`
//! with a 4-byte tail pad (16 B). Encoding writes all padding as zero (the
//! producer builds a zeroed staging record); parsing ignores padding and does
//! not verify the hash: check the raw bytes with [`super::fnv::verify`] first.

use super::super::layout::{Block, Codec, Field};
use super::super::{below, WireError};
#[cfg(feature = "std")]
use super::c_str_lossy;
use super::region;
#[cfg(feature = "std")]
use std::borrow::Cow;

wire_block! {
    /// `nds_mem_usage_info`: one (location, slot) cell of the grid (16 B).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct MemUsageInfo: "nds_mem_usage_info", MEM_USAGE_INFO_SIZE = 16, MEM_USAGE_LAYOUT, mem_off {
        /// `size_t`: aggregated bytes.
        seed TOTAL_SIZE total_size: u64 = 0, 8;
        /// `uint32_t`: number of chunks.
        seed CHUNK_COUNT chunk_count: u32 = 8, 4;
        pad = 12, 4;
    }
}

/// The 2 x 12 mem-usage grid, `mem_usage[location][slot]`.
pub type MemUsage = [[MemUsageInfo; MEM_USAGE_SLOTS]; MEM_USAGE_LOCATIONS];

wire_block! {
    /// `nds_model_node_data_internal`: one model slot's record (672 B;
    /// docs/abi.md §2.6, §2.10 "MODEL slot 5 record"; member names as
    /// docs/abi.md §2.10 prints them, the `node_info.` prefix dropped).
    /// Parsing reads the hash, it does not verify it.
    ///
    /// # Examples
    ///
    /// ```
    /// use xunds::wire::nds::model::{MemLocation, MemSlot, ModelRecord};
    /// use xunds::wire::nds::{c_string, fnv};
    ///
    /// let mut r = ModelRecord { model_id: 7, name: c_string("mlp.neff"), ..ModelRecord::EMPTY };
    /// r.usage_mut(MemLocation::Device, MemSlot::Tensors).total_size = 4096;
    /// // What the producer publishes: the record with its FNV-1a hash at +0.
    /// let bytes = fnv::stamped(r.encode());
    /// assert_eq!(fnv::verify(&bytes), fnv::HashState::Valid);
    /// let back = ModelRecord::parse(&bytes).unwrap();
    /// assert_eq!((back.model_id, back.name_str().as_ref()), (7, "mlp.neff"));
    /// assert_eq!(back.usage(MemLocation::Device, MemSlot::Tensors).total_size, 4096);
    /// ```
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct ModelRecord: "nds_model_node_data_internal", RECORD_SIZE = 0x2a0, LAYOUT, off {
        /// FNV-1a-32 of the record with this word zeroed.
        seed HASH hash: u32 = 0x000, 4;
        /// `node_info.model_id`.
        seed MODEL_ID model_id: u32 = 0x004, 4;
        /// `node_info.model_node_id`.
        seed MODEL_NODE_ID model_node_id: u32 = 0x008, 4;
        /// `node_info.name[256]`: a NUL-padded C string.
        seed NAME name: [u8; NAME_LEN] = 0x00c, 256;
        /// `node_info.uuid[16]`.
        seed UUID uuid: [u8; UUID_LEN] = 0x10c, 16;
        /// `node_info.nc_index`.
        seed NC_INDEX nc_index: u8 = 0x11c, 1;
        /// `node_info.sg_index`.
        seed SG_INDEX sg_index: u8 = 0x11d, 1;
        pad = 0x11e, 2;
        /// `mem_usage[location][slot]` (`nds_model_node_mem_usage_info`).
        seed MEM_USAGE mem_usage: MemUsage = 0x120, 384;
    }
}

/// Record offset of `node_info`.
pub const NODE_INFO_OFF: usize = off::MODEL_ID;
/// `sizeof(nds_model_node_info)` (its 2-byte tail padding included).
pub const NODE_INFO_SIZE: usize = 284;
/// Record offset of the mem-usage grid (288).
pub const MEM_USAGE_OFF: usize = off::MEM_USAGE;
/// `sizeof(nds_model_node_mem_usage_info)`: the 2 x 12 grid.
pub const MEM_USAGE_SIZE: usize = RECORD_SIZE - MEM_USAGE_OFF;
/// `MODEL_MEM_USAGE_LOCATION_COUNT`: host and device.
pub const MEM_USAGE_LOCATIONS: usize = MemLocation::ALL.len();
/// `NDS_DMA_MEM_USAGE_SLOT_COUNT` (a frozen ABI width: "do not change").
pub const MEM_USAGE_SLOTS: usize = MemSlot::ALL.len();
/// Length of `node_info.name`.
pub const NAME_LEN: usize = 256;
/// Length of `node_info.uuid`.
pub const UUID_LEN: usize = 16;

/// Layout of `nds_model_node_info`: the record's `node_info` rows, offsets
/// relative to it (record offset - 4).
pub const NODE_INFO_LAYOUT: Block = Block {
    name: "nds_model_node_info",
    size: NODE_INFO_SIZE,
    fields: &LAYOUT.part::<6>(NODE_INFO_OFF),
};

/// Layout of `nds_model_node_mem_usage_info` (the 2 x 12 grid alone).
pub const MEM_USAGE_GRID_LAYOUT: Block = Block {
    name: "nds_model_node_mem_usage_info",
    size: MEM_USAGE_SIZE,
    fields: &LAYOUT.part::<{ 2 * GRID_ELEMS }>(MEM_USAGE_OFF),
};

wire_enum! {
    /// The mem-usage grid's first index (`MODEL_MEM_USAGE_LOCATION`).
    pub enum MemLocation(u32) {
        Host = 0 => "HOST",
        Device = 1 => "DEVICE",
    }
}

wire_enum! {
    /// The mem-usage grid's second index: the 12 DMA mem-usage slots. Only
    /// 0..=4 are named by the public header; 5..=11 are reserved/aggregated.
    pub enum MemSlot(u32) {
        Code = 0 => "CODE",
        Tensors = 1 => "TENSORS",
        Constants = 2 => "CONSTANTS",
        Scratchpad = 3 => "SCRATCHPAD",
        Misc = 4 => "MISC",
        Reserved5 = 5 => "RESERVED_5",
        Reserved6 = 6 => "RESERVED_6",
        Reserved7 = 7 => "RESERVED_7",
        Reserved8 = 8 => "RESERVED_8",
        Reserved9 = 9 => "RESERVED_9",
        Reserved10 = 10 => "RESERVED_10",
        Reserved11 = 11 => "RESERVED_11",
    }
}

/// Record offset of `mem_usage[loc][slot]`: `0x120 + (loc*12 + slot)*16`.
pub const fn mem_usage_off(loc: MemLocation, slot: MemSlot) -> usize {
    MEM_USAGE_OFF + (loc as usize * MEM_USAGE_SLOTS + slot as usize) * MEM_USAGE_INFO_SIZE
}

// docs/abi.md §2.6: the record's composition and its region row;
// docs/abi.md §2.10: slot 5 at 0x1248 and mem_usage[1][3].chunk_count at
// record +0x218.
const _: () = assert!(MEM_USAGE_LOCATIONS == 2 && MEM_USAGE_SLOTS == 12);
const _: () = assert!(NODE_INFO_OFF + NODE_INFO_SIZE == MEM_USAGE_OFF);
const _: () = assert!(RECORD_SIZE == region::MODEL_RECORD_SIZE);
const _: () = assert!(region::MODEL_RECORDS_OFF + 5 * RECORD_SIZE == 0x1248);
const _: () = assert!(
    mem_usage_off(MemLocation::Device, MemSlot::Scratchpad) + mem_off::CHUNK_COUNT == 0x218
);
const _: () = assert!(LAYOUT.fields[7 + 2 * 15 + 1].offset == 0x218);
const _: () = assert!(NODE_INFO_LAYOUT.is_well_formed() && MEM_USAGE_GRID_LAYOUT.is_well_formed());

macro_rules! grid_names {
    ($($l:literal $s:literal),* $(,)?) => {
        [$([
            concat!("[", $l, "][", $s, "].total_size"),
            concat!("[", $l, "][", $s, "].chunk_count"),
        ],)*]
    };
}

const GRID_ELEMS: usize = MEM_USAGE_LOCATIONS * MEM_USAGE_SLOTS;
const GRID_NAMES: [[&str; 2]; GRID_ELEMS] = grid_names!(
    0 0, 0 1, 0 2, 0 3, 0 4, 0 5, 0 6, 0 7, 0 8, 0 9, 0 10, 0 11,
    1 0, 1 1, 1 2, 1 3, 1 4, 1 5, 1 6, 1 7, 1 8, 1 9, 1 10, 1 11,
);

/// The grid's rows: each cell's two fields, `[l][s].total_size` and
/// `[l][s].chunk_count`.
const GRID_ROWS: [Field; 2 * GRID_ELEMS] = {
    let mut out = [Field::seed("", 0, 0); 2 * GRID_ELEMS];
    let mut e = 0;
    while e < GRID_ELEMS {
        let o = e * MEM_USAGE_INFO_SIZE;
        out[2 * e] = Field::seed(GRID_NAMES[e][0], o + mem_off::TOTAL_SIZE, 8);
        out[2 * e + 1] = Field::seed(GRID_NAMES[e][1], o + mem_off::CHUNK_COUNT, 4);
        e += 1;
    }
    out
};

/// The grid, cell by cell in `[location][slot]` order.
impl Codec for MemUsage {
    const SIZE: usize = GRID_ELEMS * MEM_USAGE_INFO_SIZE;
    const ALIGN: usize = MemUsageInfo::ALIGN;
    const ROWS: &'static [Field] = &GRID_ROWS;
    fn put(&self, b: &mut [u8]) {
        let cells = self.iter().flatten();
        for (c, d) in cells.zip(b.chunks_exact_mut(MEM_USAGE_INFO_SIZE)) {
            c.put(d);
        }
    }
    fn get(b: &[u8]) -> Result<Self, usize> {
        let mut out = ModelRecord::EMPTY.mem_usage;
        let cells = out.iter_mut().flatten();
        for (c, s) in cells.zip(b.chunks_exact(MEM_USAGE_INFO_SIZE)) {
            *c = MemUsageInfo::get(s)?;
        }
        Ok(out)
    }
}

impl Default for ModelRecord {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl ModelRecord {
    /// The all-zero record (what a deleted or never-used slot holds).
    pub const EMPTY: Self = Self {
        hash: 0,
        model_id: 0,
        model_node_id: 0,
        name: [0; NAME_LEN],
        uuid: [0; UUID_LEN],
        nc_index: 0,
        sg_index: 0,
        mem_usage: [[MemUsageInfo {
            total_size: 0,
            chunk_count: 0,
        }; MEM_USAGE_SLOTS]; MEM_USAGE_LOCATIONS],
    };

    /// The model name up to its NUL, lossy.
    #[cfg(feature = "std")]
    pub fn name_str(&self) -> Cow<'_, str> {
        c_str_lossy(&self.name)
    }

    /// The cell `mem_usage[loc][slot]`.
    pub const fn usage(&self, loc: MemLocation, slot: MemSlot) -> MemUsageInfo {
        self.mem_usage[loc as usize][slot as usize]
    }

    /// A mutable reference to the cell `mem_usage[loc][slot]`.
    pub fn usage_mut(&mut self, loc: MemLocation, slot: MemSlot) -> &mut MemUsageInfo {
        &mut self.mem_usage[loc as usize][slot as usize]
    }
}

/// The first free slot of the `model_bitmap` word (`nds_get_empty_map_slot`
/// @0x508100: first clear bit), or `None` when all 64 are taken (the caller
/// maps that to `-ENOSPC`).
pub const fn first_free_slot(bitmap: u64) -> Option<usize> {
    if bitmap == u64::MAX {
        None
    } else {
        Some(bitmap.trailing_ones() as usize)
    }
}

/// The `model_bitmap` bit of `slot` (`nds_mark_map_slot` @0x508130).
pub fn slot_bit(slot: usize) -> Result<u64, WireError> {
    Ok(1u64 << below("model slot", slot as u64, region::MODEL_SLOTS)?)
}

#[cfg(test)]
mod tests {
    use super::super::fnv;
    use super::*;

    #[test]
    fn grid_offsets() {
        assert_eq!(mem_usage_off(MemLocation::Host, MemSlot::Code), 0x120);
        assert_eq!(
            mem_usage_off(MemLocation::Host, MemSlot::Reserved11),
            0x120 + 11 * 16
        );
        assert_eq!(
            mem_usage_off(MemLocation::Device, MemSlot::Code),
            0x120 + 12 * 16
        );
        assert_eq!(
            LAYOUT
                .field("mem_usage[1][3].chunk_count")
                .map(|f| f.offset),
            Some(0x218)
        );
        assert_eq!(
            MEM_USAGE_GRID_LAYOUT
                .field("mem_usage[1][11].total_size")
                .map(|f| f.offset),
            Some(23 * 16)
        );
    }

    #[test]
    fn padding_is_zero_on_encode_and_ignored_on_parse() {
        let mut r = ModelRecord::EMPTY;
        r.sg_index = 9;
        r.usage_mut(MemLocation::Device, MemSlot::Misc).chunk_count = u32::MAX;
        let mut b = r.encode();
        assert_eq!(&b[0x11e..0x120], &[0, 0]);
        let o = mem_usage_off(MemLocation::Device, MemSlot::Misc);
        assert_eq!(&b[o + 12..o + 16], &[0; 4]);
        b[0x11e] = 0xaa;
        b[o + 13] = 0xbb;
        assert_eq!(ModelRecord::parse(&b), Ok(r));
        assert_eq!(
            fnv::verify(&fnv::stamped(r.encode())),
            fnv::HashState::Valid
        );
    }

    #[test]
    fn bitmap_slots() {
        assert_eq!(first_free_slot(0), Some(0));
        assert_eq!(first_free_slot(0b1011), Some(2));
        assert_eq!(first_free_slot(u64::MAX >> 1), Some(63));
        assert_eq!(first_free_slot(u64::MAX), None);
        assert_eq!(slot_bit(63), Ok(1 << 63));
        assert!(slot_bit(64).is_err());
    }
}
