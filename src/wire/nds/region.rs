//! The NDS region map (docs/abi.md §2.2): ten contiguous rows from the header
//! at 0 to the end of the EXT NC-data band at 67,200 (0x10680), at the head of
//! a 262,144-byte slab whose tail this layout version leaves unused.
//!
//! The starts are written three times: as hard numbers (the seed's verified
//! values, [`HEADER_OFF`] ...), as the shared header's `#define` chain
//! re-evaluated from the block sizes ([`chain`]), and as the region table
//! ([`MAP`]). Compile-time asserts tie the three together, so a wrong size in
//! any block module fails the build here.
//!
//! The EXT section does not follow the running sum: it starts at
//! `NDS_ALIGN(NDS_EXT_OFFSET_OLD + NDS_EXT_SECTION_SIZE_OLD)` = 55,936, a
//! position computed from a frozen legacy geometry (the `_OLD` constants),
//! while its contents use the current counts (docs/abi.md §2.2 "The EXT alignment hinge").
//! The 11,348 bytes between the end of process-info-ext (44,588) and 55,936
//! are the `ext_pad` row: unused by this layout version.

use super::super::layout::Span;
use super::super::WireError;
use super::{counters, header, model, process};

/// `NEURON_DATASTORE_SIZE`: the kernel slab that holds the map (neuron_ds.h:17).
pub const SLAB_SIZE: usize = 262_144;
/// `NDS_REQUIRED_SIZE`: bytes the map occupies (0x10680); `nds_open` refuses a
/// mapping of `<= 0x1067f` bytes.
pub const REQUIRED_SIZE: usize = 67_200;
/// Model record slots (one bit each in the `model_bitmap` u64).
pub const MODEL_SLOTS: usize = 64;

/// `header`: `nds_header` (docs/abi.md §2.3).
pub const HEADER_OFF: usize = 0;
/// `nd_counters`: 31 x u64 per-NeuronDevice counters (docs/abi.md §2.4).
pub const ND_COUNTERS_OFF: usize = 0x8;
/// `nc_counters`: 4 cores x 31 x u64 (docs/abi.md §2.4).
pub const NC_COUNTERS_OFF: usize = 0x100;
/// `process_info`: `nds_process_info_internal`, 64 B (docs/abi.md §2.7).
pub const PROCESS_INFO_OFF: usize = 0x4e0;
/// `model_bitmap`: the u64 slot occupancy bitmap (docs/abi.md §2.6).
pub const MODEL_BITMAP_OFF: usize = 0x520;
/// `model_records`: 64 x 672-byte `nds_model_node_data_internal` (docs/abi.md §2.6).
pub const MODEL_RECORDS_OFF: usize = 0x528;
/// `process_info_ext`: `nds_process_info_ext_internal`, 260 B (docs/abi.md §2.7).
pub const PROCESS_INFO_EXT_OFF: usize = 0xad28;
/// `ext_pad`: the unused gap between process-info-ext and the EXT section.
pub const EXT_PAD_OFF: usize = 0xae2c;
/// `ext_nc_counters`: cores 0-3, counters 31..=94, 4 x 64 x u64 (docs/abi.md §2.4).
pub const EXT_NC_COUNTERS_OFF: usize = 0xda80;
/// `ext_nc_data`: cores 4-15, counters 0..=94 + 1 pad, 12 x 96 x u64 (docs/abi.md §2.4).
pub const EXT_NC_DATA_OFF: usize = 0xe280;

/// Size of the `header` row.
pub const HEADER_SIZE: usize = header::SIZE;
/// Size of the `nd_counters` row.
pub const ND_COUNTERS_SIZE: usize = counters::ND_COUNTER_COUNT * 8;
/// Size of the `nc_counters` row.
pub const NC_COUNTERS_SIZE: usize = counters::BASE_CORES * counters::NC_COUNTER_COUNT * 8;
/// Size of the `process_info` row.
pub const PROCESS_INFO_SIZE: usize = process::PROCESS_INFO_SIZE;
/// Size of the `model_bitmap` row.
pub const MODEL_BITMAP_SIZE: usize = 8;
/// Size of the `model_records` row.
pub const MODEL_RECORDS_SIZE: usize = MODEL_SLOTS * model::RECORD_SIZE;
/// Size of the `process_info_ext` row.
pub const PROCESS_INFO_EXT_SIZE: usize = process::PROCESS_INFO_EXT_SIZE;
/// Size of the `ext_pad` row.
pub const EXT_PAD_SIZE: usize = EXT_NC_COUNTERS_OFF - EXT_PAD_OFF;
/// Size of the `ext_nc_counters` row.
pub const EXT_NC_COUNTERS_SIZE: usize = counters::BASE_CORES * counters::EXT_NC_COUNTER_COUNT * 8;
/// Size of the `ext_nc_data` row.
pub const EXT_NC_DATA_SIZE: usize = counters::EXT_CORES * counters::EXT_NC_DATA_COUNT * 8;

/// The `header` row.
pub const HEADER: Span = Span::new("header", HEADER_OFF, HEADER_SIZE);
/// The `nd_counters` row.
pub const ND_COUNTERS: Span = Span::new("nd_counters", ND_COUNTERS_OFF, ND_COUNTERS_SIZE);
/// The `nc_counters` row.
pub const NC_COUNTERS: Span = Span::new("nc_counters", NC_COUNTERS_OFF, NC_COUNTERS_SIZE);
/// The `process_info` row.
pub const PROCESS_INFO: Span = Span::new("process_info", PROCESS_INFO_OFF, PROCESS_INFO_SIZE);
/// The `model_bitmap` row.
pub const MODEL_BITMAP: Span = Span::new("model_bitmap", MODEL_BITMAP_OFF, MODEL_BITMAP_SIZE);
/// The `model_records` row.
pub const MODEL_RECORDS: Span = Span::new("model_records", MODEL_RECORDS_OFF, MODEL_RECORDS_SIZE);
/// The `process_info_ext` row.
pub const PROCESS_INFO_EXT: Span = Span::new(
    "process_info_ext",
    PROCESS_INFO_EXT_OFF,
    PROCESS_INFO_EXT_SIZE,
);
/// The `ext_pad` row (unused in this layout version).
pub const EXT_PAD: Span = Span::new("ext_pad", EXT_PAD_OFF, EXT_PAD_SIZE);
/// The `ext_nc_counters` row.
pub const EXT_NC_COUNTERS: Span =
    Span::new("ext_nc_counters", EXT_NC_COUNTERS_OFF, EXT_NC_COUNTERS_SIZE);
/// The `ext_nc_data` row.
pub const EXT_NC_DATA: Span = Span::new("ext_nc_data", EXT_NC_DATA_OFF, EXT_NC_DATA_SIZE);

/// The region map (docs/abi.md §2.2) in offset order.
pub const MAP: [Span; 10] = [
    HEADER,
    ND_COUNTERS,
    NC_COUNTERS,
    PROCESS_INFO,
    MODEL_BITMAP,
    MODEL_RECORDS,
    PROCESS_INFO_EXT,
    EXT_PAD,
    EXT_NC_COUNTERS,
    EXT_NC_DATA,
];

/// The shared header's region `#define` chain (neuron_driver_shared.h:392-430,
/// docs/abi.md §2.2 "The macro chain"), re-evaluated from the block sizes.
///
/// Names the seed prints are kept verbatim. The seed's tables with the
/// process-info/model macro names were lost, so those names
/// (`NDS_PROCESS_INFO_START`, `NDS_MODEL_NODE_MAP_START`, ...) are ours; only
/// their values are the seed's.
pub mod chain {
    use super::super::{counters, header, model, process};

    /// `NDS_ALIGN(v) = v + (-v & 63)`: round up to a multiple of 64.
    pub const fn nds_align(v: usize) -> usize {
        v + (v.wrapping_neg() & 63)
    }

    /// `NDS_HEADER_START`.
    pub const NDS_HEADER_START: usize = 0;
    /// `NDS_HEADER_SIZE = sizeof(nds_header_t)`.
    pub const NDS_HEADER_SIZE: usize = header::SIZE;
    /// `NDS_ND_COUNTERS_START`.
    pub const NDS_ND_COUNTERS_START: usize = NDS_HEADER_START + NDS_HEADER_SIZE;
    /// `NDS_ND_COUNTERS_SIZE = NDS_ND_COUNTER_COUNT * sizeof(u64)`.
    pub const NDS_ND_COUNTERS_SIZE: usize = counters::ND_COUNTER_COUNT * 8;
    /// `NDS_NEURONCORE_COUNTERS_START`.
    pub const NDS_NEURONCORE_COUNTERS_START: usize = NDS_ND_COUNTERS_START + NDS_ND_COUNTERS_SIZE;
    /// `NDS_NEURONCORE_COUNTERS_SIZE = NDS_NC_COUNTER_COUNT * NDS_MAX_NEURONCORE_COUNT * sizeof(u64)`.
    pub const NDS_NEURONCORE_COUNTERS_SIZE: usize =
        counters::NC_COUNTER_COUNT * counters::BASE_CORES * 8;
    /// Start of `nds_process_info_internal` (name ours).
    pub const NDS_PROCESS_INFO_START: usize =
        NDS_NEURONCORE_COUNTERS_START + NDS_NEURONCORE_COUNTERS_SIZE;
    /// Size of `nds_process_info_internal` (name ours).
    pub const NDS_PROCESS_INFO_SIZE: usize = process::PROCESS_INFO_SIZE;
    /// Start of the u64 model slot bitmap (name ours).
    pub const NDS_MODEL_NODE_MAP_START: usize = NDS_PROCESS_INFO_START + NDS_PROCESS_INFO_SIZE;
    /// Size of the model slot bitmap (name ours).
    pub const NDS_MODEL_NODE_MAP_SIZE: usize = 8;
    /// Start of the model records (name ours).
    pub const NDS_MODEL_NODE_START: usize = NDS_MODEL_NODE_MAP_START + NDS_MODEL_NODE_MAP_SIZE;
    /// Size of the 64 model records (name ours).
    pub const NDS_MODEL_NODE_SIZE: usize = super::MODEL_SLOTS * model::RECORD_SIZE;
    /// Start of `nds_process_info_ext_internal` (name ours).
    pub const NDS_PROCESS_INFO_EXT_START: usize = NDS_MODEL_NODE_START + NDS_MODEL_NODE_SIZE;
    /// Size of `nds_process_info_ext_internal` (name ours).
    pub const NDS_PROCESS_INFO_EXT_SIZE: usize = process::PROCESS_INFO_EXT_SIZE;
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
        NDS_EXT_NC_COUNTER_COUNT_OLD * counters::BASE_CORES * 8;
    /// `NDS_EXT_NEURONCORE_NC_DATA_SIZE_OLD = 96 * 12 * 8 = 9216`.
    pub const NDS_EXT_NEURONCORE_NC_DATA_SIZE_OLD: usize =
        NDS_TOTAL_NC_COUNTER_COUNT_OLD * counters::EXT_CORES * 8;
    /// `NDS_EXT_SECTION_SIZE_OLD = 2080 + 9216 = 11296`.
    pub const NDS_EXT_SECTION_SIZE_OLD: usize =
        NDS_EXT_NEURONCORE_COUNTERS_SIZE_OLD + NDS_EXT_NEURONCORE_NC_DATA_SIZE_OLD;
    /// `NDS_EXT_OFFSET = NDS_ALIGN(44588 + 11296) = NDS_ALIGN(55884) = 55936`.
    pub const NDS_EXT_OFFSET: usize = nds_align(NDS_EXT_OFFSET_OLD + NDS_EXT_SECTION_SIZE_OLD);
    /// `NDS_EXT_NEURONCORE_COUNTERS_START = NDS_EXT_OFFSET`.
    pub const NDS_EXT_NEURONCORE_COUNTERS_START: usize = NDS_EXT_OFFSET;
    /// `NDS_EXT_NEURONCORE_COUNTERS_SIZE = 64 * 4 * 8 = 2048` (current count).
    pub const NDS_EXT_NEURONCORE_COUNTERS_SIZE: usize =
        counters::EXT_NC_COUNTER_COUNT * counters::BASE_CORES * 8;
    /// `NDS_EXT_NEURONCORE_NC_DATA_START = NDS_ALIGN(55936 + 2048) = 57984`.
    pub const NDS_EXT_NEURONCORE_NC_DATA_START: usize =
        nds_align(NDS_EXT_NEURONCORE_COUNTERS_START + NDS_EXT_NEURONCORE_COUNTERS_SIZE);
    /// `NDS_EXT_NEURONCORE_NC_DATA_COUNT = 95 + 1` (the +1 is a per-core pad).
    pub const NDS_EXT_NEURONCORE_NC_DATA_COUNT: usize = counters::TOTAL_NC_COUNTER_COUNT + 1;
    /// `NDS_EXT_NEURONCORE_NC_DATA_SIZE = 12 * 96 * 8 = 9216`.
    pub const NDS_EXT_NEURONCORE_NC_DATA_SIZE: usize =
        counters::EXT_CORES * NDS_EXT_NEURONCORE_NC_DATA_COUNT * 8;
    /// `NDS_REQUIRED_SIZE`: the end of the EXT NC-data band.
    pub const NDS_REQUIRED_SIZE: usize =
        NDS_EXT_NEURONCORE_NC_DATA_START + NDS_EXT_NEURONCORE_NC_DATA_SIZE;

    // docs/abi.md §2.2: the intermediate values the seed prints.
    const _: () = assert!(NDS_ND_COUNTERS_SIZE == 248);
    const _: () = assert!(NDS_NEURONCORE_COUNTERS_SIZE == 992);
    const _: () = assert!(NDS_PROCESS_INFO_EXT_END == NDS_EXT_OFFSET_OLD);
    const _: () = assert!(NDS_EXT_NEURONCORE_COUNTERS_SIZE_OLD == 2080);
    const _: () = assert!(NDS_EXT_NEURONCORE_NC_DATA_SIZE_OLD == 9216);
    const _: () = assert!(NDS_EXT_SECTION_SIZE_OLD == 11_296);
    const _: () = assert!(NDS_EXT_OFFSET_OLD + NDS_EXT_SECTION_SIZE_OLD == 55_884);
    const _: () = assert!(NDS_EXT_OFFSET == 55_936);
    const _: () = assert!(NDS_EXT_NEURONCORE_COUNTERS_SIZE == 2048);
    const _: () = assert!(NDS_EXT_NEURONCORE_NC_DATA_START == 57_984);
    const _: () = assert!(NDS_EXT_NEURONCORE_NC_DATA_COUNT == 96);
    const _: () = assert!(NDS_EXT_NEURONCORE_NC_DATA_SIZE == 9216);
    const _: () = assert!(NDS_REQUIRED_SIZE == 67_200);
    // NDS_ALIGN itself.
    const _: () = assert!(nds_align(0) == 0 && nds_align(1) == 64 && nds_align(64) == 64);
    const _: () = assert!(nds_align(55_884) == 55_936 && nds_align(57_984) == 57_984);
}

// Every hard-coded start equals the macro chain (docs/abi.md §2.2 three-way agreement).
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
const _: () = assert!(REQUIRED_SIZE == 0x10680);
const _: () = assert!(SLAB_SIZE == 0x40000 && REQUIRED_SIZE <= SLAB_SIZE);
const _: () = assert!(EXT_PAD_SIZE == 11_348);
const _: () = assert!(MODEL_SLOTS == u64::BITS as usize);
// The u64 regions are naturally aligned (docs/abi.md §2.4: plain aligned 8-byte loads).
const _: () = assert!(ND_COUNTERS_OFF % 8 == 0 && NC_COUNTERS_OFF % 8 == 0);
const _: () = assert!(MODEL_BITMAP_OFF % 8 == 0);
const _: () = assert!(EXT_NC_COUNTERS_OFF % 64 == 0 && EXT_NC_DATA_OFF % 64 == 0);
// The map is contiguous, in order, and sums to NDS_REQUIRED_SIZE.
const _: () = assert!(map_is_contiguous(&MAP));

const fn map_is_contiguous(map: &[Span]) -> bool {
    let mut i = 0;
    let mut end = 0;
    while i < map.len() {
        if map[i].offset != end || map[i].size == 0 {
            return false;
        }
        end += map[i].size;
        i += 1;
    }
    end == REQUIRED_SIZE
}

/// Byte offset of model slot `slot`'s record: `0x528 + slot * 672` (docs/abi.md §2.6).
pub fn model_record_off(slot: usize) -> Result<usize, WireError> {
    if slot < MODEL_SLOTS {
        Ok(MODEL_RECORDS_OFF + slot * model::RECORD_SIZE)
    } else {
        Err(WireError::OutOfRange {
            what: "model slot",
            value: slot as u64,
            limit: MODEL_SLOTS as u64,
        })
    }
}

/// The region-map row holding byte `off`, or `None` past [`REQUIRED_SIZE`].
pub fn region_at(off: usize) -> Option<&'static Span> {
    MAP.iter()
        .find(|s| off >= s.offset && off < s.offset + s.size)
}

/// Refuse a mapping too small for the map, as `nds_open` does (it requires
/// at least 0x10680 bytes).
pub fn check_mapping_len(len: usize) -> Result<(), WireError> {
    if len < REQUIRED_SIZE {
        Err(WireError::Truncated {
            block: "nds region map",
            need: REQUIRED_SIZE,
            got: len,
        })
    } else {
        Ok(())
    }
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

    #[test]
    fn mapping_len_gate() {
        assert!(check_mapping_len(0x1067f).is_err());
        assert!(check_mapping_len(0x10680).is_ok());
        assert!(check_mapping_len(SLAB_SIZE).is_ok());
    }
}
