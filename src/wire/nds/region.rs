//! The NDS region map (docs/abi.md §2.2): ten contiguous rows from the header
//! at 0 to the end of the EXT NC-data band at 67,200 (0x10680), at the head of
//! a 262,144-byte slab whose tail this layout version leaves unused.
//!
//! The map owns its geometry: the rows are declared once, as the seed's hard
//! numbers ([`MAP_LAYOUT`]: each start and size, asserted contiguous), with
//! the band counts they are made of, and computed a second time as the
//! shared header's `#define` chain re-evaluated from the counts and the
//! record sizes ([`chain`]). Compile-time asserts tie the two together here;
//! each record module checks its own size against its row, so a wrong size
//! anywhere fails the build. The record and counter modules take their
//! offsets from here, never the reverse.
//!
//! The EXT section does not follow the running sum: it starts at
//! `NDS_ALIGN(NDS_EXT_OFFSET_OLD + NDS_EXT_SECTION_SIZE_OLD)` = 55,936, a
//! position computed from a frozen legacy geometry (the `_OLD` constants),
//! while its contents use the current counts (docs/abi.md §2.2, the paragraph on the `_OLD` constants).
//! The 11,348 bytes between the end of process-info-ext (44,588) and 55,936
//! are the `ext_pad` row: unused by this layout version.

use super::super::layout::Field;
use super::super::WireError;

/// `NEURON_DATASTORE_SIZE`: the kernel slab that holds the map (neuron_ds.h:17).
pub const SLAB_SIZE: usize = 262_144;
/// Model record slots (one bit each in the `model_bitmap` u64).
pub const MODEL_SLOTS: usize = 64;
/// `NDS_ND_COUNTER_COUNT`: 14 named + 17 reserved slots.
pub const ND_COUNTER_COUNT: usize = 31;
/// `NDS_NC_COUNTER_COUNT`: 31 named + 0 reserved slots per core.
pub const NC_COUNTER_COUNT: usize = 31;
/// `NDS_EXT_NC_COUNTER_COUNT`: EXT slots per core (counters 31..=94).
pub const EXT_NC_COUNTER_COUNT: usize = 64;
/// `NDS_TOTAL_NC_COUNTER_COUNT = 31 + 64`: counters per core.
pub const TOTAL_NC_COUNTER_COUNT: usize = NC_COUNTER_COUNT + EXT_NC_COUNTER_COUNT;
/// `NDS_EXT_NEURONCORE_NC_DATA_COUNT = 95 + 1`: u64s per extended core (one pad).
pub const EXT_NC_DATA_COUNT: usize = TOTAL_NC_COUNTER_COUNT + 1;
/// NeuronCores with a row in the ND/NC/EXT bands.
pub const MAX_CORES: usize = 16;
/// `NDS_MAX_NEURONCORE_COUNT`: cores 0-3 use the original band.
pub const BASE_CORES: usize = 4;
/// `NDS_EXT_MAX_NEURONCORE_COUNT`: cores 4-15 use the EXT NC-data band.
pub const EXT_CORES: usize = MAX_CORES - BASE_CORES;

wire_block! {
    /// The region map (docs/abi.md §2.2) as a block: every row's start and size,
    /// contiguous from 0 to `NDS_REQUIRED_SIZE` (0x10680; `nds_open` refuses
    /// a mapping of `<= 0x1067f` bytes). The start consts are re-exported
    /// here (`region::HEADER_OFF`, ...).
    pub MAP_LAYOUT: "nds region map", REQUIRED_SIZE = 67_200, map_off {
        /// `nds_header` (docs/abi.md §2.3).
        seed HEADER_OFF "header" = 0x0, 8;
        /// 31 x u64 per-NeuronDevice counters (docs/abi.md §2.4).
        seed ND_COUNTERS_OFF "nd_counters" = 0x8, 248;
        /// 4 cores x 31 x u64 (docs/abi.md §2.4).
        seed NC_COUNTERS_OFF "nc_counters" = 0x100, 992;
        /// `nds_process_info_internal` (docs/abi.md §2.7).
        seed PROCESS_INFO_OFF "process_info" = 0x4e0, 64;
        /// The u64 slot occupancy bitmap (docs/abi.md §2.6).
        seed MODEL_BITMAP_OFF "model_bitmap" = 0x520, 8;
        /// 64 x 672-byte `nds_model_node_data_internal` (docs/abi.md §2.6).
        seed MODEL_RECORDS_OFF "model_records" = 0x528, 43_008;
        /// `nds_process_info_ext_internal` (docs/abi.md §2.7).
        seed PROCESS_INFO_EXT_OFF "process_info_ext" = 0xad28, 260;
        /// The gap up to the EXT section, unused in this layout version.
        seed EXT_PAD_OFF "ext_pad" = 0xae2c, 11_348;
        /// Cores 0-3, counters 31..=94, 4 x 64 x u64 (docs/abi.md §2.4).
        seed EXT_NC_COUNTERS_OFF "ext_nc_counters" = 0xda80, 2048;
        /// Cores 4-15, counters 0..=94 + 1 pad, 12 x 96 x u64 (docs/abi.md §2.4).
        seed EXT_NC_DATA_OFF "ext_nc_data" = 0xe280, 9216;
    }
}

pub use map_off::{
    EXT_NC_COUNTERS_OFF, EXT_NC_DATA_OFF, EXT_PAD_OFF, HEADER_OFF, MODEL_BITMAP_OFF,
    MODEL_RECORDS_OFF, NC_COUNTERS_OFF, ND_COUNTERS_OFF, PROCESS_INFO_EXT_OFF, PROCESS_INFO_OFF,
};

/// The region map (docs/abi.md §2.2) in offset order.
pub const MAP: &[Field] = MAP_LAYOUT.fields;
/// The `nd_counters` row.
pub const ND_COUNTERS: Field = MAP[1];
/// The `nc_counters` row.
pub const NC_COUNTERS: Field = MAP[2];
/// The `model_records` row.
pub const MODEL_RECORDS: Field = MAP[5];
/// The `ext_nc_counters` row.
pub const EXT_NC_COUNTERS: Field = MAP[8];
/// The `ext_nc_data` row.
pub const EXT_NC_DATA: Field = MAP[9];
/// Bytes of one model record: the records region over the slots.
pub const MODEL_RECORD_SIZE: usize = MODEL_RECORDS.size / MODEL_SLOTS;

/// The shared header's region `#define` chain (neuron_driver_shared.h:392-430,
/// docs/abi.md §2.2, the chain as xunds re-evaluates it), re-evaluated from
/// the band counts and the records' `sizeof`s (which the record modules
/// assert their blocks have).
///
/// Names the seed prints are kept verbatim. The seed's tables with the
/// process-info/model macro names were lost, so those names
/// (`NDS_PROCESS_INFO_START`, `NDS_MODEL_NODE_MAP_START`, ...) are ours; only
/// their values are the seed's.
pub mod chain {

    /// `NDS_ALIGN(v) = v + (-v & 63)`: round up to a multiple of 64.
    pub const fn nds_align(v: usize) -> usize {
        v + (v.wrapping_neg() & 63)
    }

    /// `NDS_HEADER_START`.
    pub const NDS_HEADER_START: usize = 0;
    /// `NDS_HEADER_SIZE = sizeof(nds_header_t)`.
    pub const NDS_HEADER_SIZE: usize = 8;
    /// `NDS_ND_COUNTERS_START`.
    pub const NDS_ND_COUNTERS_START: usize = NDS_HEADER_START + NDS_HEADER_SIZE;
    /// `NDS_ND_COUNTERS_SIZE = NDS_ND_COUNTER_COUNT * sizeof(u64)`.
    pub const NDS_ND_COUNTERS_SIZE: usize = super::ND_COUNTER_COUNT * 8;
    /// `NDS_NEURONCORE_COUNTERS_START`.
    pub const NDS_NEURONCORE_COUNTERS_START: usize = NDS_ND_COUNTERS_START + NDS_ND_COUNTERS_SIZE;
    /// `NDS_NEURONCORE_COUNTERS_SIZE = NDS_NC_COUNTER_COUNT * NDS_MAX_NEURONCORE_COUNT * sizeof(u64)`.
    pub const NDS_NEURONCORE_COUNTERS_SIZE: usize = super::NC_COUNTER_COUNT * super::BASE_CORES * 8;
    /// Start of `nds_process_info_internal` (name ours).
    pub const NDS_PROCESS_INFO_START: usize =
        NDS_NEURONCORE_COUNTERS_START + NDS_NEURONCORE_COUNTERS_SIZE;
    /// Size of `nds_process_info_internal` (name ours).
    pub const NDS_PROCESS_INFO_SIZE: usize = 64;
    /// Start of the u64 model slot bitmap (name ours).
    pub const NDS_MODEL_NODE_MAP_START: usize = NDS_PROCESS_INFO_START + NDS_PROCESS_INFO_SIZE;
    /// Size of the model slot bitmap (name ours).
    pub const NDS_MODEL_NODE_MAP_SIZE: usize = 8;
    /// Start of the model records (name ours).
    pub const NDS_MODEL_NODE_START: usize = NDS_MODEL_NODE_MAP_START + NDS_MODEL_NODE_MAP_SIZE;
    /// `sizeof(nds_model_node_data_internal)` (name ours).
    pub const NDS_MODEL_NODE_RECORD_SIZE: usize = 672;
    /// Size of the 64 model records (name ours).
    pub const NDS_MODEL_NODE_SIZE: usize = super::MODEL_SLOTS * NDS_MODEL_NODE_RECORD_SIZE;
    /// Start of `nds_process_info_ext_internal` (name ours).
    pub const NDS_PROCESS_INFO_EXT_START: usize = NDS_MODEL_NODE_START + NDS_MODEL_NODE_SIZE;
    /// Size of `nds_process_info_ext_internal` (name ours).
    pub const NDS_PROCESS_INFO_EXT_SIZE: usize = 260;
    /// End of process-info-ext by the running sum; must equal
    /// [`NDS_EXT_OFFSET_OLD`] (docs/abi.md §2.2: "44588 == 44588").
    pub const NDS_PROCESS_INFO_EXT_END: usize =
        NDS_PROCESS_INFO_EXT_START + NDS_PROCESS_INFO_EXT_SIZE;

    /// `NDS_EXT_OFFSET_OLD = 44588`, hard-coded in the header ("easier than to
    /// move all the structs here and sizeof them", L406).
    pub const NDS_EXT_OFFSET_OLD: usize = 44_588;
    /// `NDS_EXT_NC_COUNTER_COUNT_OLD = 65` (previous geometry; start offset only).
    pub const NDS_EXT_NC_COUNTER_COUNT_OLD: usize = 65;
    /// `NDS_TOTAL_NC_COUNTER_COUNT_OLD = 96` (previous geometry; start offset only).
    pub const NDS_TOTAL_NC_COUNTER_COUNT_OLD: usize = 96;
    /// `NDS_EXT_NEURONCORE_COUNTERS_SIZE_OLD = 65 * 4 * 8 = 2080`.
    pub const NDS_EXT_NEURONCORE_COUNTERS_SIZE_OLD: usize =
        NDS_EXT_NC_COUNTER_COUNT_OLD * super::BASE_CORES * 8;
    /// `NDS_EXT_NEURONCORE_NC_DATA_SIZE_OLD = 96 * 12 * 8 = 9216`.
    pub const NDS_EXT_NEURONCORE_NC_DATA_SIZE_OLD: usize =
        NDS_TOTAL_NC_COUNTER_COUNT_OLD * super::EXT_CORES * 8;
    /// `NDS_EXT_SECTION_SIZE_OLD = 2080 + 9216 = 11296`.
    pub const NDS_EXT_SECTION_SIZE_OLD: usize =
        NDS_EXT_NEURONCORE_COUNTERS_SIZE_OLD + NDS_EXT_NEURONCORE_NC_DATA_SIZE_OLD;
    /// `NDS_EXT_OFFSET = NDS_ALIGN(44588 + 11296) = NDS_ALIGN(55884) = 55936`.
    pub const NDS_EXT_OFFSET: usize = nds_align(NDS_EXT_OFFSET_OLD + NDS_EXT_SECTION_SIZE_OLD);
    /// `NDS_EXT_NEURONCORE_COUNTERS_START = NDS_EXT_OFFSET`.
    pub const NDS_EXT_NEURONCORE_COUNTERS_START: usize = NDS_EXT_OFFSET;
    /// `NDS_EXT_NEURONCORE_COUNTERS_SIZE = 64 * 4 * 8 = 2048` (current count).
    pub const NDS_EXT_NEURONCORE_COUNTERS_SIZE: usize =
        super::EXT_NC_COUNTER_COUNT * super::BASE_CORES * 8;
    /// `NDS_EXT_NEURONCORE_NC_DATA_START = NDS_ALIGN(55936 + 2048) = 57984`.
    pub const NDS_EXT_NEURONCORE_NC_DATA_START: usize =
        nds_align(NDS_EXT_NEURONCORE_COUNTERS_START + NDS_EXT_NEURONCORE_COUNTERS_SIZE);
    /// `NDS_EXT_NEURONCORE_NC_DATA_COUNT = 95 + 1` (the +1 is a per-core pad).
    pub const NDS_EXT_NEURONCORE_NC_DATA_COUNT: usize = super::TOTAL_NC_COUNTER_COUNT + 1;
    /// `NDS_EXT_NEURONCORE_NC_DATA_SIZE = 12 * 96 * 8 = 9216`.
    pub const NDS_EXT_NEURONCORE_NC_DATA_SIZE: usize =
        super::EXT_CORES * NDS_EXT_NEURONCORE_NC_DATA_COUNT * 8;
    /// `NDS_REQUIRED_SIZE`: the end of the EXT NC-data band.
    pub const NDS_REQUIRED_SIZE: usize =
        NDS_EXT_NEURONCORE_NC_DATA_START + NDS_EXT_NEURONCORE_NC_DATA_SIZE;

    // docs/abi.md §2.2: the intermediate values the seed prints that are
    // no row of the map (the rows' starts and sizes are checked against
    // the chain below).
    const _: () = assert!(NDS_EXT_NEURONCORE_COUNTERS_SIZE_OLD == 2080);
    const _: () = assert!(NDS_EXT_NEURONCORE_NC_DATA_SIZE_OLD == 9216);
    const _: () = assert!(NDS_EXT_SECTION_SIZE_OLD == 11_296);
    const _: () = assert!(NDS_EXT_OFFSET_OLD + NDS_EXT_SECTION_SIZE_OLD == 55_884);
    // NDS_ALIGN itself.
    const _: () = assert!(nds_align(0) == 0 && nds_align(1) == 64 && nds_align(64) == 64);
    const _: () = assert!(nds_align(55_884) == 55_936 && nds_align(57_984) == 57_984);
}

// Every start and size equals the macro chain (docs/abi.md §2.2 three-way agreement:
// the literal rows above, the chain, the block sizes the chain sums).
const _: () = assert!(HEADER_OFF == chain::NDS_HEADER_START);
const _: () = assert!(ND_COUNTERS_OFF == chain::NDS_ND_COUNTERS_START);
const _: () = assert!(NC_COUNTERS_OFF == chain::NDS_NEURONCORE_COUNTERS_START);
const _: () = assert!(PROCESS_INFO_OFF == chain::NDS_PROCESS_INFO_START);
const _: () = assert!(MODEL_BITMAP_OFF == chain::NDS_MODEL_NODE_MAP_START);
const _: () = assert!(MODEL_RECORDS_OFF == chain::NDS_MODEL_NODE_START);
const _: () = assert!(PROCESS_INFO_EXT_OFF == chain::NDS_PROCESS_INFO_EXT_START);
const _: () = assert!(EXT_PAD_OFF == chain::NDS_PROCESS_INFO_EXT_END);
const _: () = assert!(EXT_PAD_OFF == chain::NDS_EXT_OFFSET_OLD);
const _: () = assert!(EXT_NC_COUNTERS_OFF == chain::NDS_EXT_NEURONCORE_COUNTERS_START);
const _: () = assert!(EXT_NC_DATA_OFF == chain::NDS_EXT_NEURONCORE_NC_DATA_START);
const _: () = assert!(REQUIRED_SIZE == chain::NDS_REQUIRED_SIZE);
const _: () = assert!(MAP[0].size == chain::NDS_HEADER_SIZE);
const _: () = assert!(ND_COUNTERS.size == chain::NDS_ND_COUNTERS_SIZE);
const _: () = assert!(NC_COUNTERS.size == chain::NDS_NEURONCORE_COUNTERS_SIZE);
const _: () = assert!(MAP[3].size == chain::NDS_PROCESS_INFO_SIZE);
const _: () = assert!(MAP[4].size == chain::NDS_MODEL_NODE_MAP_SIZE);
const _: () = assert!(MODEL_RECORDS.size == chain::NDS_MODEL_NODE_SIZE);
const _: () = assert!(MODEL_RECORD_SIZE == chain::NDS_MODEL_NODE_RECORD_SIZE);
const _: () = assert!(MAP[6].size == chain::NDS_PROCESS_INFO_EXT_SIZE);
const _: () = assert!(EXT_NC_COUNTERS.size == chain::NDS_EXT_NEURONCORE_COUNTERS_SIZE);
const _: () = assert!(EXT_NC_DATA.size == chain::NDS_EXT_NEURONCORE_NC_DATA_SIZE);
const _: () = assert!(SLAB_SIZE == 0x40000 && REQUIRED_SIZE <= SLAB_SIZE);
const _: () = assert!(MODEL_SLOTS == u64::BITS as usize);
// The u64 regions are naturally aligned (docs/abi.md §2.4: plain aligned 8-byte loads).
const _: () = assert!(ND_COUNTERS_OFF % 8 == 0 && NC_COUNTERS_OFF % 8 == 0);
const _: () = assert!(MODEL_BITMAP_OFF % 8 == 0);
const _: () = assert!(EXT_NC_COUNTERS_OFF % 64 == 0 && EXT_NC_DATA_OFF % 64 == 0);

/// Byte offset of model slot `slot`'s record: `0x528 + slot * 672` (docs/abi.md §2.6).
pub fn model_record_off(slot: usize) -> Result<usize, WireError> {
    let slot = super::super::below("model slot", slot as u64, MODEL_SLOTS)?;
    Ok(MODEL_RECORDS_OFF + slot * MODEL_RECORD_SIZE)
}

/// The region-map row holding byte `off`, or `None` past [`REQUIRED_SIZE`].
pub fn region_at(off: usize) -> Option<&'static Field> {
    MAP.iter()
        .find(|s| off >= s.offset && off < s.offset + s.size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_record_offsets() {
        assert_eq!(model_record_off(0), Ok(0x528));
        assert_eq!(model_record_off(5), Ok(0x1248));
        assert_eq!(model_record_off(63), Ok(0xad28 - 672));
        assert!(matches!(
            model_record_off(64),
            Err(WireError::OutOfRange { limit: 64, .. })
        ));
        assert!(model_record_off(usize::MAX).is_err());
    }

    #[test]
    fn region_lookup() {
        assert_eq!(region_at(0).map(|s| s.name), Some("header"));
        assert_eq!(region_at(0x20).map(|s| s.name), Some("nd_counters"));
        assert_eq!(region_at(0xae2c).map(|s| s.name), Some("ext_pad"));
        assert_eq!(region_at(0xda7f).map(|s| s.name), Some("ext_pad"));
        assert_eq!(region_at(0xda80).map(|s| s.name), Some("ext_nc_counters"));
        assert_eq!(
            region_at(REQUIRED_SIZE - 1).map(|s| s.name),
            Some("ext_nc_data")
        );
        assert_eq!(region_at(REQUIRED_SIZE), None);
    }
}
