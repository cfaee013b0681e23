//! The model record (docs/abi.md §2.6): `nds_model_node_data_internal`, 672 B,
//! `{hash, node_info (284 B), mem_usage[2][12] (384 B)}`, one per slot at
//! `0x528 + slot * 672`, allocated through the u64 `model_bitmap` at 0x520.
//!
//! | record offset | field | size |
//! |---|---|---|
//! | +0x000 | `hash` | 4 |
//! | +0x004 | `node_info.model_id` | 4 |
//! | +0x008 | `node_info.model_node_id` | 4 |
//! | +0x00c | `node_info.name[256]` | 256 |
//! | +0x10c | `node_info.uuid[16]` | 16 |
//! | +0x11c | `node_info.nc_index` | 1 |
//! | +0x11d | `node_info.sg_index` | 1 |
//! | +0x11e | padding | 2 |
//! | +0x120 | `mem_usage[l][s]` at `0x120 + (l*12 + s)*16` | 384 |
//!
//! Each `nds_mem_usage_info` is `{size_t total_size; uint32_t chunk_count;}`
//! with a 4-byte tail pad (16 B). Encoding writes all padding as zero (the
//! producer builds a zeroed staging record); parsing ignores padding and does
//! not verify the hash: check the raw bytes with [`super::fnv::verify`] first.

#[cfg(feature = "std")]
use super::super::layout::annotated_dump;
use super::super::layout::{Block, Field};
use super::super::{le, need, WireError};
#[cfg(feature = "std")]
use super::c_str_lossy;
use super::region;
#[cfg(feature = "std")]
use std::borrow::Cow;

wire_block! {
    /// `nds_model_node_data_internal` with the mem-usage grid as one row
    /// (docs/abi.md §2.6, §2.10 "MODEL slot 5 record"; member names as docs/abi.md §2.10 prints
    /// them, the `node_info.` prefix dropped). [`LAYOUT`] expands the grid.
    pub RECORD_HEAD_LAYOUT: "nds_model_node_data_internal", RECORD_SIZE = 0x2a0, off {
        seed HASH "hash" = 0x000, 4;
        seed MODEL_ID "model_id" = 0x004, 4;
        seed MODEL_NODE_ID "model_node_id" = 0x008, 4;
        seed NAME "name" = 0x00c, 256;
        seed UUID "uuid" = 0x10c, 16;
        seed NC_INDEX "nc_index" = 0x11c, 1;
        seed SG_INDEX "sg_index" = 0x11d, 1;
        pad = 0x11e, 2;
        /// `mem_usage[2][12]`.
        seed MEM_USAGE "mem_usage" = 0x120, 384;
    }
}

wire_block! {
    /// Layout of `nds_model_node_info` (offsets relative to itself, i.e.
    /// record offset - 4).
    pub NODE_INFO_LAYOUT: "nds_model_node_info", NODE_INFO_SIZE = 284, node_off {
        seed "model_id" = 0x000, 4;
        seed "model_node_id" = 0x004, 4;
        seed "name" = 0x008, 256;
        seed "uuid" = 0x108, 16;
        seed "nc_index" = 0x118, 1;
        seed "sg_index" = 0x119, 1;
        pad = 0x11a, 2;
    }
}

wire_block! {
    /// Layout of `nds_mem_usage_info`.
    pub MEM_USAGE_LAYOUT: "nds_mem_usage_info", MEM_USAGE_INFO_SIZE = 16, mem_off {
        /// `size_t`.
        seed TOTAL_SIZE "total_size" = 0, 8;
        /// `uint32_t`.
        seed CHUNK_COUNT "chunk_count" = 8, 4;
        pad = 12, 4;
    }
}

/// Record offset of `node_info`.
pub const NODE_INFO_OFF: usize = off::MODEL_ID;
/// `sizeof(nds_model_node_mem_usage_info)`: the 2 x 12 grid.
pub const MEM_USAGE_SIZE: usize = RECORD_SIZE - MEM_USAGE_OFF;
/// Record offset of the mem-usage grid (288).
pub const MEM_USAGE_OFF: usize = off::MEM_USAGE;
/// `MODEL_MEM_USAGE_LOCATION_COUNT`: host and device.
pub const MEM_USAGE_LOCATIONS: usize = MemLocation::ALL.len();
/// `NDS_DMA_MEM_USAGE_SLOT_COUNT` (a frozen ABI width: "do not change").
pub const MEM_USAGE_SLOTS: usize = MemSlot::ALL.len();
/// Length of `node_info.name`.
pub const NAME_LEN: usize = 256;
/// Length of `node_info.uuid`.
pub const UUID_LEN: usize = 16;

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

// docs/abi.md §2.6: the record's composition; docs/abi.md §2.10: slot 5 at 0x1248 and
// mem_usage[1][3].chunk_count at record +0x218.
const _: () = assert!(MEM_USAGE_LOCATIONS == 2 && MEM_USAGE_SLOTS == 12);
const _: () = assert!(NODE_INFO_OFF + NODE_INFO_SIZE == MEM_USAGE_OFF);
const _: () =
    assert!(MEM_USAGE_LOCATIONS * MEM_USAGE_SLOTS * MEM_USAGE_INFO_SIZE == MEM_USAGE_SIZE);
const _: () = assert!(off::NAME + NAME_LEN == off::UUID);
const _: () = assert!(region::MODEL_RECORDS_OFF + 5 * RECORD_SIZE == 0x1248);
const _: () = assert!(
    mem_usage_off(MemLocation::Device, MemSlot::Scratchpad) + mem_off::CHUNK_COUNT == 0x218
);

#[cfg(target_pointer_width = "64")]
mod c_mirror {
    //! The C structs under C layout rules (compile-time check only).
    use super::{mem_off, off};
    use core::mem::{align_of, offset_of, size_of};

    #[allow(dead_code)]
    #[repr(C)]
    struct NdsMemUsageInfo {
        total_size: u64,
        chunk_count: u32,
    }
    #[allow(dead_code)]
    #[repr(C)]
    struct NdsModelNodeInfo {
        model_id: u32,
        model_node_id: u32,
        name: [u8; 256],
        uuid: [u8; 16],
        nc_index: u8,
        sg_index: u8,
    }
    #[allow(dead_code)]
    #[repr(C)]
    struct NdsModelNodeMemUsageInfo {
        mem_usage: [[NdsMemUsageInfo; 12]; 2],
    }
    #[allow(dead_code)]
    #[repr(C)]
    struct NdsModelNodeDataInternal {
        hash: u32,
        node_info: NdsModelNodeInfo,
        mem_usage: NdsModelNodeMemUsageInfo,
    }

    const _: () = assert!(size_of::<NdsMemUsageInfo>() == super::MEM_USAGE_INFO_SIZE);
    const _: () = assert!(offset_of!(NdsMemUsageInfo, total_size) == mem_off::TOTAL_SIZE);
    const _: () = assert!(offset_of!(NdsMemUsageInfo, chunk_count) == mem_off::CHUNK_COUNT);
    const _: () = assert!(size_of::<NdsModelNodeInfo>() == super::NODE_INFO_SIZE);
    const _: () = assert!(align_of::<NdsModelNodeInfo>() == 4);
    const _: () = assert!(size_of::<NdsModelNodeMemUsageInfo>() == super::MEM_USAGE_SIZE);
    const _: () = assert!(size_of::<NdsModelNodeDataInternal>() == super::RECORD_SIZE);
    const N: usize = offset_of!(NdsModelNodeDataInternal, node_info);
    const _: () = assert!(N == super::NODE_INFO_OFF);
    const _: () = assert!(offset_of!(NdsModelNodeDataInternal, hash) == off::HASH);
    const _: () = assert!(N + offset_of!(NdsModelNodeInfo, model_id) == off::MODEL_ID);
    const _: () = assert!(N + offset_of!(NdsModelNodeInfo, model_node_id) == off::MODEL_NODE_ID);
    const _: () = assert!(N + offset_of!(NdsModelNodeInfo, name) == off::NAME);
    const _: () = assert!(N + offset_of!(NdsModelNodeInfo, uuid) == off::UUID);
    const _: () = assert!(N + offset_of!(NdsModelNodeInfo, nc_index) == off::NC_INDEX);
    const _: () = assert!(N + offset_of!(NdsModelNodeInfo, sg_index) == off::SG_INDEX);
    const _: () = assert!(offset_of!(NdsModelNodeDataInternal, mem_usage) == off::MEM_USAGE);
}

macro_rules! grid_names {
    ($($l:literal $s:literal),* $(,)?) => {
        [$([
            concat!("mem_usage[", $l, "][", $s, "].total_size"),
            concat!("mem_usage[", $l, "][", $s, "].chunk_count"),
        ],)*]
    };
}

const GRID_ELEMS: usize = MEM_USAGE_LOCATIONS * MEM_USAGE_SLOTS;
const GRID_NAMES: [[&str; 2]; GRID_ELEMS] = grid_names!(
    0 0, 0 1, 0 2, 0 3, 0 4, 0 5, 0 6, 0 7, 0 8, 0 9, 0 10, 0 11,
    1 0, 1 1, 1 2, 1 3, 1 4, 1 5, 1 6, 1 7, 1 8, 1 9, 1 10, 1 11,
);

/// The first `H` fields of `head` (the rows before the grid), then the
/// grid's 48 fields starting at `base`.
const fn with_grid<const N: usize>(head: &[Field], base: usize) -> [Field; N] {
    let h = N - 2 * GRID_ELEMS;
    let mut out = [Field::seed("", 0, 0); N];
    let mut i = 0;
    while i < h {
        out[i] = head[i];
        i += 1;
    }
    let mut e = 0;
    while e < GRID_ELEMS {
        let o = base + e * MEM_USAGE_INFO_SIZE;
        out[h + 2 * e] = Field::seed(GRID_NAMES[e][0], o + mem_off::TOTAL_SIZE, 8);
        out[h + 2 * e + 1] = Field::seed(GRID_NAMES[e][1], o + mem_off::CHUNK_COUNT, 4);
        e += 1;
    }
    out
}

const RECORD_FIELDS: [Field; 7 + 2 * GRID_ELEMS] =
    with_grid(RECORD_HEAD_LAYOUT.fields, MEM_USAGE_OFF);
const GRID_FIELDS: [Field; 2 * GRID_ELEMS] = with_grid(&[], 0);
// The head's eighth row is the grid that RECORD_FIELDS expands.
const _: () = assert!(RECORD_HEAD_LAYOUT.fields[7].offset == MEM_USAGE_OFF);

/// Layout of `nds_model_node_data_internal` (member names as docs/abi.md §2.10
/// prints them, the `node_info.` prefix dropped; the grid expanded).
pub const LAYOUT: Block = Block {
    name: "nds_model_node_data_internal",
    size: RECORD_SIZE,
    fields: &RECORD_FIELDS,
};

/// Layout of `nds_model_node_mem_usage_info` (the 2 x 12 grid alone).
pub const MEM_USAGE_GRID_LAYOUT: Block = Block {
    name: "nds_model_node_mem_usage_info",
    size: MEM_USAGE_SIZE,
    fields: &GRID_FIELDS,
};

const _: () = assert!(LAYOUT.is_well_formed() && MEM_USAGE_GRID_LAYOUT.is_well_formed());
// mem_usage[1][3].chunk_count sits at rec+0x218 in the descriptor too (docs/abi.md §2.10).
const _: () = assert!(RECORD_FIELDS[7 + 2 * 15 + 1].offset == 0x218);

/// `nds_mem_usage_info`: one (location, slot) cell of the grid (16 B).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MemUsageInfo {
    /// `total_size` (+0): aggregated bytes.
    pub total_size: u64,
    /// `chunk_count` (+8): number of chunks.
    pub chunk_count: u32,
}

impl MemUsageInfo {
    /// Parse the first 16 bytes of `bytes` (tail pad ignored).
    pub fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        need(MEM_USAGE_LAYOUT.name, bytes, MEM_USAGE_INFO_SIZE)?;
        Ok(Self {
            total_size: le::u64_at(bytes, mem_off::TOTAL_SIZE),
            chunk_count: le::u32_at(bytes, mem_off::CHUNK_COUNT),
        })
    }

    /// The 16 wire bytes (tail pad zero).
    pub fn encode(&self) -> [u8; MEM_USAGE_INFO_SIZE] {
        let mut b = [0u8; MEM_USAGE_INFO_SIZE];
        le::put_u64(&mut b, mem_off::TOTAL_SIZE, self.total_size);
        le::put_u32(&mut b, mem_off::CHUNK_COUNT, self.chunk_count);
        b
    }

    /// Write the encoding into the head of `buf` (`Truncated` if it is
    /// shorter than the block; bytes past the block are left alone).
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        super::emit_into(MEM_USAGE_LAYOUT.name, buf, &self.encode())
    }

    /// Annotated hex dump of the encoding.
    #[cfg(feature = "std")]
    pub fn dump(&self) -> String {
        annotated_dump(&MEM_USAGE_LAYOUT, &self.encode())
    }
}

/// `nds_model_node_data_internal`: one model slot's record (672 B).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ModelRecord {
    /// `hash` (+0): FNV-1a-32 of the record with this word zeroed.
    pub hash: u32,
    /// `node_info.model_id` (+4).
    pub model_id: u32,
    /// `node_info.model_node_id` (+8).
    pub model_node_id: u32,
    /// `node_info.name[256]` (+0xc): a NUL-padded C string.
    pub name: [u8; NAME_LEN],
    /// `node_info.uuid[16]` (+0x10c).
    pub uuid: [u8; UUID_LEN],
    /// `node_info.nc_index` (+0x11c).
    pub nc_index: u8,
    /// `node_info.sg_index` (+0x11d).
    pub sg_index: u8,
    /// `mem_usage[location][slot]` (+0x120).
    pub mem_usage: [[MemUsageInfo; MEM_USAGE_SLOTS]; MEM_USAGE_LOCATIONS],
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

    /// Parse the first 672 bytes of `bytes` (the hash is read, not verified).
    pub fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        need(LAYOUT.name, bytes, RECORD_SIZE)?;
        let mut r = Self::EMPTY;
        r.hash = le::u32_at(bytes, off::HASH);
        r.model_id = le::u32_at(bytes, off::MODEL_ID);
        r.model_node_id = le::u32_at(bytes, off::MODEL_NODE_ID);
        r.name
            .copy_from_slice(&bytes[off::NAME..off::NAME + NAME_LEN]);
        r.uuid
            .copy_from_slice(&bytes[off::UUID..off::UUID + UUID_LEN]);
        r.nc_index = bytes[off::NC_INDEX];
        r.sg_index = bytes[off::SG_INDEX];
        for loc in MemLocation::ALL {
            for slot in MemSlot::ALL {
                let o = mem_usage_off(loc, slot);
                r.mem_usage[loc as usize][slot as usize] = MemUsageInfo::parse(&bytes[o..])?;
            }
        }
        Ok(r)
    }

    /// The 672 wire bytes, with `hash` written as given and padding zero.
    pub fn encode(&self) -> [u8; RECORD_SIZE] {
        let mut b = [0u8; RECORD_SIZE];
        le::put_u32(&mut b, off::HASH, self.hash);
        le::put_u32(&mut b, off::MODEL_ID, self.model_id);
        le::put_u32(&mut b, off::MODEL_NODE_ID, self.model_node_id);
        b[off::NAME..off::NAME + NAME_LEN].copy_from_slice(&self.name);
        b[off::UUID..off::UUID + UUID_LEN].copy_from_slice(&self.uuid);
        b[off::NC_INDEX] = self.nc_index;
        b[off::SG_INDEX] = self.sg_index;
        for loc in MemLocation::ALL {
            for slot in MemSlot::ALL {
                let o = mem_usage_off(loc, slot);
                let cell = self.mem_usage[loc as usize][slot as usize].encode();
                b[o..o + MEM_USAGE_INFO_SIZE].copy_from_slice(&cell);
            }
        }
        b
    }

    /// The 672 wire bytes with the hash stamped (`hash` ignored), as
    /// `nds_commit_model_node_info` builds its staging record.
    pub fn encode_stamped(&self) -> [u8; RECORD_SIZE] {
        let mut b = self.encode();
        super::fnv::stamp(&mut b);
        b
    }

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

    /// Write the encoding into the head of `buf` (`Truncated` if it is
    /// shorter than the block; bytes past the block are left alone).
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        super::emit_into(LAYOUT.name, buf, &self.encode())
    }

    /// Annotated hex dump of the encoding.
    #[cfg(feature = "std")]
    pub fn dump(&self) -> String {
        annotated_dump(&LAYOUT, &self.encode())
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
    if slot < region::MODEL_SLOTS {
        Ok(1u64 << slot)
    } else {
        Err(WireError::OutOfRange {
            what: "model slot",
            value: slot as u64,
            limit: region::MODEL_SLOTS as u64,
        })
    }
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
        assert_eq!(fnv::verify(&r.encode_stamped()), fnv::HashState::Valid);
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
