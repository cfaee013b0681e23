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

use super::super::layout::{annotated_dump, Block, Field};
use super::super::{le, need, WireError};
use super::{c_str_lossy, region};
use std::borrow::Cow;

/// `sizeof(nds_model_node_data_internal)` (0x2a0).
pub const RECORD_SIZE: usize = 672;
/// `sizeof(nds_model_node_info)`.
pub const NODE_INFO_SIZE: usize = 284;
/// Record offset of `node_info`.
pub const NODE_INFO_OFF: usize = 4;
/// `sizeof(nds_model_node_mem_usage_info)`: the 2 x 12 grid.
pub const MEM_USAGE_SIZE: usize = 384;
/// Record offset of the mem-usage grid (288).
pub const MEM_USAGE_OFF: usize = 0x120;
/// `MODEL_MEM_USAGE_LOCATION_COUNT`: host and device.
pub const MEM_USAGE_LOCATIONS: usize = 2;
/// `NDS_DMA_MEM_USAGE_SLOT_COUNT` (a frozen ABI width: "do not change").
pub const MEM_USAGE_SLOTS: usize = 12;
/// `sizeof(nds_mem_usage_info)`.
pub const MEM_USAGE_INFO_SIZE: usize = 16;
/// Length of `node_info.name`.
pub const NAME_LEN: usize = 256;
/// Length of `node_info.uuid`.
pub const UUID_LEN: usize = 16;

/// Byte offsets inside the record (docs/abi.md §2.10 "MODEL slot 5 record").
pub mod off {
    /// `uint32_t hash`.
    pub const HASH: usize = 0x000;
    /// `node_info.model_id` (u32).
    pub const MODEL_ID: usize = 0x004;
    /// `node_info.model_node_id` (u32).
    pub const MODEL_NODE_ID: usize = 0x008;
    /// `node_info.name[256]`.
    pub const NAME: usize = 0x00c;
    /// `node_info.uuid[16]`.
    pub const UUID: usize = 0x10c;
    /// `node_info.nc_index` (u8).
    pub const NC_INDEX: usize = 0x11c;
    /// `node_info.sg_index` (u8), then 2 bytes of padding.
    pub const SG_INDEX: usize = 0x11d;
    /// `mem_usage[2][12]`.
    pub const MEM_USAGE: usize = super::MEM_USAGE_OFF;
}

/// Byte offsets inside `nds_mem_usage_info`.
pub mod mem_off {
    /// `size_t total_size`.
    pub const TOTAL_SIZE: usize = 0;
    /// `uint32_t chunk_count` (then a 4-byte tail pad).
    pub const CHUNK_COUNT: usize = 8;
}

named_index_enum! {
    /// The mem-usage grid's first index (`MODEL_MEM_USAGE_LOCATION`).
    pub enum MemLocation {
        Host = 0 => "HOST",
        Device = 1 => "DEVICE",
    }
}

named_index_enum! {
    /// The mem-usage grid's second index: the 12 DMA mem-usage slots. Only
    /// 0..=4 are named by the public header; 5..=11 are reserved/aggregated.
    pub enum MemSlot {
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

const _: () = assert!(MemLocation::Device as usize + 1 == MEM_USAGE_LOCATIONS);
const _: () = assert!(MemSlot::Reserved11 as usize + 1 == MEM_USAGE_SLOTS);
// docs/abi.md §2.6: sizes and the record's composition.
const _: () = assert!(RECORD_SIZE == 0x2a0);
const _: () = assert!(NODE_INFO_OFF + NODE_INFO_SIZE == MEM_USAGE_OFF);
const _: () = assert!(MEM_USAGE_OFF == 288);
const _: () =
    assert!(MEM_USAGE_LOCATIONS * MEM_USAGE_SLOTS * MEM_USAGE_INFO_SIZE == MEM_USAGE_SIZE);
const _: () = assert!(4 + NODE_INFO_SIZE + MEM_USAGE_SIZE == RECORD_SIZE);
// docs/abi.md §2.10: slot 5 at 0x1248 and its field offsets.
const _: () = assert!(region::MODEL_RECORDS_OFF + 5 * RECORD_SIZE == 0x1248);
const _: () = assert!(off::MODEL_ID == 0x004 && off::MODEL_NODE_ID == 0x008);
const _: () = assert!(off::NAME == 0x00c && off::UUID == 0x10c);
const _: () = assert!(off::NAME + NAME_LEN == off::UUID);
const _: () = assert!(off::NC_INDEX == 0x11c && off::SG_INDEX == 0x11d);
const _: () = assert!(
    mem_usage_off(MemLocation::Device, MemSlot::Scratchpad) + mem_off::CHUNK_COUNT == 0x218
);
const _: () = assert!(
    mem_usage_off(MemLocation::Device, MemSlot::Reserved11) + MEM_USAGE_INFO_SIZE == RECORD_SIZE
);
const _: () = assert!(region::MODEL_RECORDS_SIZE == 43_008);

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

/// Layout of `nds_mem_usage_info`.
pub const MEM_USAGE_LAYOUT: Block = Block {
    name: "nds_mem_usage_info",
    size: MEM_USAGE_INFO_SIZE,
    fields: &[
        Field::seed("total_size", mem_off::TOTAL_SIZE, 8),
        Field::seed("chunk_count", mem_off::CHUNK_COUNT, 4),
    ],
};

/// Layout of `nds_model_node_info` (offsets relative to itself, i.e. record
/// offset - 4).
pub const NODE_INFO_LAYOUT: Block = Block {
    name: "nds_model_node_info",
    size: NODE_INFO_SIZE,
    fields: &[
        Field::seed("model_id", off::MODEL_ID - NODE_INFO_OFF, 4),
        Field::seed("model_node_id", off::MODEL_NODE_ID - NODE_INFO_OFF, 4),
        Field::seed("name", off::NAME - NODE_INFO_OFF, NAME_LEN),
        Field::seed("uuid", off::UUID - NODE_INFO_OFF, UUID_LEN),
        Field::seed("nc_index", off::NC_INDEX - NODE_INFO_OFF, 1),
        Field::seed("sg_index", off::SG_INDEX - NODE_INFO_OFF, 1),
    ],
};

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

/// The grid's 48 fields starting at `base`, appended after `head`.
const fn with_grid<const H: usize, const N: usize>(head: [Field; H], base: usize) -> [Field; N] {
    assert!(N == H + 2 * GRID_ELEMS);
    let mut out = [Field::seed("", 0, 0); N];
    let mut i = 0;
    while i < H {
        out[i] = head[i];
        i += 1;
    }
    let mut e = 0;
    while e < GRID_ELEMS {
        let o = base + e * MEM_USAGE_INFO_SIZE;
        out[H + 2 * e] = Field::seed(GRID_NAMES[e][0], o + mem_off::TOTAL_SIZE, 8);
        out[H + 2 * e + 1] = Field::seed(GRID_NAMES[e][1], o + mem_off::CHUNK_COUNT, 4);
        e += 1;
    }
    out
}

const RECORD_HEAD: [Field; 7] = [
    Field::seed("hash", off::HASH, 4),
    Field::seed("model_id", off::MODEL_ID, 4),
    Field::seed("model_node_id", off::MODEL_NODE_ID, 4),
    Field::seed("name", off::NAME, NAME_LEN),
    Field::seed("uuid", off::UUID, UUID_LEN),
    Field::seed("nc_index", off::NC_INDEX, 1),
    Field::seed("sg_index", off::SG_INDEX, 1),
];
const RECORD_FIELDS: [Field; 7 + 2 * GRID_ELEMS] = with_grid(RECORD_HEAD, MEM_USAGE_OFF);
const GRID_FIELDS: [Field; 2 * GRID_ELEMS] = with_grid([], 0);

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

const _: () = assert!(LAYOUT.is_well_formed());
const _: () = assert!(NODE_INFO_LAYOUT.is_well_formed());
const _: () = assert!(MEM_USAGE_GRID_LAYOUT.is_well_formed());
const _: () = assert!(MEM_USAGE_LAYOUT.is_well_formed());
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
                let o = mem_usage_off(*loc, *slot);
                r.mem_usage[*loc as usize][*slot as usize] = MemUsageInfo::parse(&bytes[o..])?;
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
                let o = mem_usage_off(*loc, *slot);
                let cell = self.mem_usage[*loc as usize][*slot as usize].encode();
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
