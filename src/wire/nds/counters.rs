//! The counter arrays (docs/abi.md §2.4) and their resolvers (docs/abi.md §2.5): indices as typed
//! enums with the names in docs/abi.md §2.4, the feature bits of ND counter 3,
//! the order-locked error-class block, and index -> byte offset.
//!
//! Counters are naturally aligned little-endian u64s with no hash; the
//! datastore protocol updates them atomically at the offsets computed here.
//!
//! | band | region | holds | element index |
//! |---|---|---|---|
//! | ND | `nd_counters` | 31 counters | `1 + i` |
//! | NC | `nc_counters` | cores 0-3, counters 0..=30 | `32 + core*31 + c` |
//! | EXT NC | `ext_nc_counters` | cores 0-3, counters 31..=94 | `6992 + core*64 + (c-31)` |
//! | EXT NC-data | `ext_nc_data` | cores 4-15, counters 0..=94 (+1 pad) | `7248 + (core-4)*96 + c` |
//!
//! Byte offset = element index * 8. One deliberate tightening of docs/abi.md §2.5: the
//! seed's pseudo-code bounds `counter_index` only for cores 4-15; for cores
//! 0-3 an index above 94 would run into the next core's EXT row (or, for core
//! 3, into the EXT NC-data band). [`nc_counter_off`] refuses a counter above 94
//! for every core.

use super::super::{below, WireError};
use super::region;
pub use super::region::{
    BASE_CORES, EXT_CORES, EXT_NC_COUNTER_COUNT, EXT_NC_DATA_COUNT, MAX_CORES, NC_COUNTER_COUNT,
    ND_COUNTER_COUNT, TOTAL_NC_COUNTER_COUNT,
};

/// `NDS_ND_COUNTER_LAST`: the named ND counters ([`NdCounter`]; 14 in 2.31).
pub const ND_COUNTER_NAMED: usize = NdCounter::ALL.len();
/// Named EXT NC counters ([`NcCounter`] from 31 on; 31..=40 in 2.31).
pub const EXT_NC_COUNTER_NAMED: usize = NcCounter::ALL.len() - NC_COUNTER_COUNT;

/// `BIT_INDEX_TEST_FEATURE` (neuron_ds.h:96).
pub const FEATURE_TEST: u32 = 0;
/// `BIT_INDEX_MULTICORE_FEATURE` (neuron_ds.h:97).
pub const FEATURE_MULTICORE: u32 = 1;

/// u64 element index of ND counter 0 (the header is element 0).
pub const ND_BASE_ELEM: usize = 1;
/// u64 element index of the NC band (`32 = 0x100 / 8`).
pub const NC_BASE_ELEM: usize = 32;
/// u64 element index of the EXT NC band (`6992 = 0xda80 / 8`).
pub const EXT_NC_BASE_ELEM: usize = 6992;
/// u64 element index of the EXT NC-data band (`7248 = 0xe280 / 8`).
pub const EXT_NC_DATA_BASE_ELEM: usize = 7248;

// docs/abi.md §2.5: the resolver constants are the region starts in u64 units.
const _: () = assert!(ND_BASE_ELEM * 8 == region::ND_COUNTERS_OFF);
const _: () = assert!(NC_BASE_ELEM * 8 == region::NC_COUNTERS_OFF);
const _: () = assert!(EXT_NC_BASE_ELEM * 8 == region::EXT_NC_COUNTERS_OFF);
const _: () = assert!(EXT_NC_DATA_BASE_ELEM * 8 == region::EXT_NC_DATA_OFF);
const _: () = assert!(TOTAL_NC_COUNTER_COUNT == 95 && EXT_NC_DATA_COUNT == 96);
const _: () = assert!((EXT_NC_DATA_COUNT * 8) % 64 == 0); // 768-byte stride
const _: () = assert!(EXT_CORES == 12);

wire_enum! {
    /// ND (per-NeuronDevice) counter indices, `nd_counters` (docs/abi.md §2.4).
    /// Indices 14..=30 are reserved headroom.
    pub enum NdCounter(u32) {
        RuntimeVersion = 0 => "RUNTIME_VERSION",
        FrameworkVersion = 1 => "FRAMEWORK_VERSION",
        FalVersion = 2 => "FAL_VERSION",
        FeatureBitmap = 3 => "FEATURE_BITMAP",
        MinNeffVersion = 4 => "MIN_NEFF_VERSION",
        MaxNeffVersion = 5 => "MAX_NEFF_VERSION",
        MemUsageCodeHost = 6 => "MEM_USAGE_CODE_HOST",
        MemUsageTensorsHost = 7 => "MEM_USAGE_TENSORS_HOST",
        MemUsageConstantsHost = 8 => "MEM_USAGE_CONSTANTS_HOST",
        MemUsageScratchpadHost = 9 => "MEM_USAGE_SCRATCHPAD_HOST",
        MemUsageMiscHost = 10 => "MEM_USAGE_MISC_HOST",
        DynamicSysfsMetricBitmap = 11 => "DYNAMIC_SYSFS_METRIC_BITMAP",
        DeviceClusterId = 12 => "DEVICE_CLUSTER_ID",
        AggNeffId = 13 => "AGG_NEFF_ID",
    }
}

wire_enum! {
    /// NC (per-NeuronCore) counter indices: 0..=30 in the original band,
    /// 31..=40 the named EXT counters (41..=94 reserved) (docs/abi.md §2.4).
    pub enum NcCounter(u32) {
        TimeInUse = 0 => "TIME_IN_USE",
        InferCompleted = 1 => "INFER_COMPLETED",
        InferCompletedWithErr = 2 => "INFER_COMPLETED_WITH_ERR",
        InferCompletedWithNumErr = 3 => "INFER_COMPLETED_WITH_NUM_ERR",
        InferTimedOut = 4 => "INFER_TIMED_OUT",
        InferIncorrectInput = 5 => "INFER_INCORRECT_INPUT",
        InferFailedToQueue = 6 => "INFER_FAILED_TO_QUEUE",
        ErrGeneric = 7 => "ERR_GENERIC",
        ErrNumerical = 8 => "ERR_NUMERICAL",
        ErrModel = 9 => "ERR_MODEL",
        ErrTransient = 10 => "ERR_TRANSIENT",
        ErrHw = 11 => "ERR_HW",
        ErrRt = 12 => "ERR_RT",
        LatencyDevice = 13 => "LATENCY_DEVICE",
        LatencyTotal = 14 => "LATENCY_TOTAL",
        NcTime = 15 => "NC_TIME",
        GenericFail = 16 => "GENERIC_FAIL",
        ErrResource = 17 => "ERR_RESOURCE",
        ErrResourceNc = 18 => "ERR_RESOURCE_NC",
        ErrInvalid = 19 => "ERR_INVALID",
        ErrUnsupportedNeffVersion = 20 => "ERR_UNSUPPORTED_NEFF_VERSION",
        CcTime = 21 => "CC_TIME",
        MemUsageCodeDevice = 22 => "MEM_USAGE_CODE_DEVICE",
        MemUsageTensorsDevice = 23 => "MEM_USAGE_TENSORS_DEVICE",
        MemUsageConstantsDevice = 24 => "MEM_USAGE_CONSTANTS_DEVICE",
        MemUsageScratchpadDevice = 25 => "MEM_USAGE_SCRATCHPAD_DEVICE",
        MemUsageMiscDevice = 26 => "MEM_USAGE_MISC_DEVICE",
        ModelLoadCount = 27 => "MODEL_LOAD_COUNT",
        InferenceCount = 28 => "INFERENCE_COUNT",
        MacCount = 29 => "MAC_COUNT",
        Oob = 30 => "OOB",
        HwErrCollectives = 31 => "HW_ERR_COLLECTIVES",
        HwErrHbmUe = 32 => "HW_ERR_HBM_UE",
        HwErrNcUe = 33 => "HW_ERR_NC_UE",
        HwErrDmaAbort = 34 => "HW_ERR_DMA_ABORT",
        ErrSwNqOverflow = 35 => "ERR_SW_NQ_OVERFLOW",
        ErrSwSemaphoreError = 36 => "ERR_SW_SEMAPHORE_ERROR",
        ErrSwEventError = 37 => "ERR_SW_EVENT_ERROR",
        ErrSwPsumCollision = 38 => "ERR_SW_PSUM_COLLISION",
        ErrSwSequencerFatal = 39 => "ERR_SW_SEQUENCER_FATAL",
        HwErrRepairableHbmUe = 40 => "HW_ERR_REPAIRABLE_HBM_UE",
    }
}

/// The error classes, order-locked to NC counters 7..=12 (`index =
/// ERR_GENERIC + class`, docs/abi.md §2.4). One enum serves the device's NQ records
/// and the counters: [`crate::wire::nq::ErrorClass`].
pub use crate::wire::nq::ErrorClass;

// The named counters are numbered densely from 0 and fit their bands; the
// base NC band (31) is fully named.
const _: () = assert!(NdCounter::ALL[ND_COUNTER_NAMED - 1] as usize + 1 == ND_COUNTER_NAMED);
const _: () = assert!(ND_COUNTER_NAMED <= ND_COUNTER_COUNT);
const _: () = assert!(NcCounter::Oob as usize + 1 == NC_COUNTER_COUNT);
const _: () =
    assert!(NcCounter::ALL[NcCounter::ALL.len() - 1] as usize + 1 == NcCounter::ALL.len());
const _: () = assert!(EXT_NC_COUNTER_NAMED <= EXT_NC_COUNTER_COUNT);
// docs/abi.md §2.4: the error block is order-locked at 7..=12.
const _: () = assert!(NcCounter::ErrGeneric as u8 == 7 && NcCounter::ErrRt as u8 == 12);
const _: () =
    assert!(NcCounter::ErrGeneric as u8 + ErrorClass::Runtime as u8 == NcCounter::ErrRt as u8);

impl NdCounter {
    /// Byte offset of this counter in the slab (`8 + 8 * index`).
    pub const fn off(self) -> usize {
        (ND_BASE_ELEM + self as usize) * 8
    }

    /// The `MEM_USAGE_*_HOST` counter of host-memory slot `slot`: code,
    /// tensors, constants, scratchpad, misc, the model record's slot order
    /// (`model::MemSlot`); `None` past misc.
    pub const fn host_memory(slot: u32) -> Option<NdCounter> {
        const FIRST: u32 = NdCounter::MemUsageCodeHost as u32;
        if slot <= NdCounter::MemUsageMiscHost as u32 - FIRST {
            NdCounter::from_index(FIRST + slot)
        } else {
            None
        }
    }
}

impl NcCounter {
    /// Byte offset of this counter for NeuronCore `core` ([`nc_counter_off`]).
    pub const fn off(self, core: u32) -> Result<usize, WireError> {
        nc_counter_off(core, self.index())
    }
}

impl ErrorClass {
    /// The NC counter this class is tallied in (`ERR_GENERIC + class`).
    pub const fn counter(self) -> NcCounter {
        match NcCounter::from_u8(NcCounter::ErrGeneric as u8 + self as u8) {
            Some(c) => c,
            None => unreachable!(),
        }
    }
}

// Every class lands in the order-locked block `ERR_GENERIC..=ERR_RT`.
const _: () = {
    let mut i = 0;
    while i < ErrorClass::ALL.len() {
        let c = ErrorClass::ALL[i].counter() as u8;
        assert!(c >= NcCounter::ErrGeneric as u8 && c <= NcCounter::ErrRt as u8);
        i += 1;
    }
};

bitflags::bitflags! {
    /// The `FEATURE_BITMAP` ND counter (index 3), written with OR, never ADD
    /// (docs/abi.md §2.4). Unknown bits are kept.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Features: u64 {
        /// Bit [`FEATURE_TEST`].
        const TEST = 1 << FEATURE_TEST;
        /// Bit [`FEATURE_MULTICORE`].
        const MULTICORE = 1 << FEATURE_MULTICORE;
        // Other bits survive a round trip.
        const _ = !0;
    }
}

/// The NC counter for error class `class` (`ERR_GENERIC + class`, docs/abi.md §2.4): class
/// 0..=5 maps to counters 7..=12; anything else is out of range.
pub fn error_class_counter(class: u8) -> Result<NcCounter, WireError> {
    let c = below("error class", class as u64, ErrorClass::ALL.len())?;
    Ok(ErrorClass::ALL[c].counter())
}

/// Byte offset of ND counter `index` (`index <= 30` -> `8 + 8 * index`, docs/abi.md §2.5).
pub const fn nd_counter_off(index: u32) -> Result<usize, WireError> {
    match below("nd counter", index as u64, ND_COUNTER_COUNT) {
        Ok(i) => Ok((ND_BASE_ELEM + i) * 8),
        Err(e) => Err(e),
    }
}

/// Byte offset of NC counter `counter` of NeuronCore `core`: the three-band
/// dispatch of docs/abi.md §2.5 (`nds_*_nc_counter` @0x507220, kernel
/// `get_neuroncore_counter_value`), as the u64 element index the seed's
/// pseudo-code computes, times 8. Refuses `core > 15` and `counter > 94` for
/// every core (see the module doc).
pub const fn nc_counter_off(core: u32, counter: u32) -> Result<usize, WireError> {
    let (pnc, c) = match (
        below("nc core", core as u64, MAX_CORES),
        below("nc counter", counter as u64, TOTAL_NC_COUNTER_COUNT),
    ) {
        (Ok(pnc), Ok(c)) => (pnc, c),
        (Err(e), _) | (_, Err(e)) => return Err(e),
    };
    let elem = if pnc >= BASE_CORES {
        EXT_NC_DATA_BASE_ELEM + (pnc - BASE_CORES) * EXT_NC_DATA_COUNT + c
    } else if c < NC_COUNTER_COUNT {
        NC_BASE_ELEM + pnc * NC_COUNTER_COUNT + c
    } else {
        EXT_NC_BASE_ELEM + pnc * EXT_NC_COUNTER_COUNT + (c - NC_COUNTER_COUNT)
    };
    Ok(elem * 8)
}

/// `true` when `r` resolved to `off` (for the compile-time checks below).
const fn is(r: Result<usize, WireError>, off: usize) -> bool {
    matches!(r, Ok(o) if o == off)
}

// docs/abi.md §2.10, the worked byte-layout examples, resolved at compile time:
// FEATURE_BITMAP at base+0x020; core 2 INFER_COMPLETED at element 95
// (0x2f8); core 1 HW_ERR_HBM_UE at element 7057 (0xdc88); core 7 MAC_COUNT
// at element 7565 (0xec68).
const _: () = assert!(is(nd_counter_off(NdCounter::FeatureBitmap.index()), 0x020));
const _: () = assert!(is(
    nc_counter_off(2, NcCounter::InferCompleted.index()),
    0x2f8
));
const _: () = assert!(is(nc_counter_off(1, NcCounter::HwErrHbmUe.index()), 0xdc88));
const _: () = assert!(is(nc_counter_off(7, NcCounter::MacCount.index()), 0xec68));
// docs/abi.md §2.5: the band edges, and the refusals (pnc > 15, counter > 94, ND > 30).
const _: () =
    assert!(is(nc_counter_off(0, 0), 0x100) && is(nc_counter_off(3, 30), 0x100 + 123 * 8));
const _: () = assert!(is(nc_counter_off(0, 31), 0xda80) && is(nc_counter_off(4, 0), 0xe280));
const _: () = assert!(is(nc_counter_off(15, 94), 0xe280 + (11 * 96 + 94) * 8));
const _: () = assert!(nc_counter_off(16, 0).is_err() && nc_counter_off(4, 95).is_err());
const _: () = assert!(nd_counter_off(30).is_ok() && nd_counter_off(31).is_err());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_memory_slots_name_the_five_host_counters_in_order() {
        let named: Vec<_> = (0..6).map(NdCounter::host_memory).collect();
        use NdCounter::*;
        let host = [
            MemUsageCodeHost,
            MemUsageTensorsHost,
            MemUsageConstantsHost,
            MemUsageScratchpadHost,
            MemUsageMiscHost,
        ];
        assert_eq!(named[..5], host.map(Some));
        assert_eq!(named[5], None, "past misc");
    }

    #[test]
    fn enums_round_trip() {
        assert_eq!(NdCounter::ALL.len(), ND_COUNTER_NAMED);
        assert_eq!(
            NcCounter::ALL.len(),
            NC_COUNTER_COUNT + EXT_NC_COUNTER_NAMED
        );
        for (i, c) in NdCounter::ALL.iter().enumerate() {
            assert_eq!(c.index() as usize, i);
            assert_eq!(NdCounter::from_index(c.index()), Some(*c));
            assert_eq!(NdCounter::from_name(c.name()), Some(*c));
        }
        for (i, c) in NcCounter::ALL.iter().enumerate() {
            assert_eq!(c.index() as usize, i);
            assert_eq!(NcCounter::from_index(c.index()), Some(*c));
            assert_eq!(NcCounter::from_name(c.name()), Some(*c));
        }
        assert_eq!(NdCounter::from_index(14), None);
        assert_eq!(NcCounter::from_index(41), None);
        assert_eq!(NcCounter::from_name("NOPE"), None);
        assert_eq!(NcCounter::MacCount.to_string(), "MAC_COUNT");
    }

    #[test]
    fn error_classes_are_order_locked() {
        for class in 0..=5u8 {
            let c = error_class_counter(class).unwrap();
            assert_eq!(c.index(), 7 + u32::from(class));
        }
        assert_eq!(error_class_counter(1), Ok(NcCounter::ErrNumerical));
        assert_eq!(error_class_counter(5), Ok(NcCounter::ErrRt));
        assert!(matches!(
            error_class_counter(6),
            Err(WireError::OutOfRange { limit: 6, .. })
        ));
    }

    #[test]
    fn features_keep_unknown_bits() {
        let f = Features::from_bits_retain(0b1011);
        assert!(f.contains(Features::TEST | Features::MULTICORE));
        assert_eq!(f.bits(), 0b1011);
        assert_eq!(Features::MULTICORE.bits(), 2);
    }

    #[test]
    fn resolver_edges() {
        assert_eq!(nd_counter_off(0), Ok(8));
        assert_eq!(nd_counter_off(30), Ok(8 + 30 * 8));
        assert!(nd_counter_off(31).is_err());
        assert_eq!(nc_counter_off(0, 0), Ok(0x100));
        assert_eq!(nc_counter_off(3, 30), Ok(0x100 + (3 * 31 + 30) * 8));
        assert_eq!(nc_counter_off(0, 31), Ok(0xda80));
        assert_eq!(nc_counter_off(3, 94), Ok(0xda80 + (3 * 64 + 63) * 8));
        assert_eq!(nc_counter_off(4, 0), Ok(0xe280));
        assert_eq!(nc_counter_off(15, 94), Ok(0xe280 + (11 * 96 + 94) * 8));
        assert!(matches!(
            nc_counter_off(16, 0),
            Err(WireError::OutOfRange {
                what: "nc core",
                ..
            })
        ));
        // The seed leaves counter unbounded for cores 0-3; we refuse it.
        assert!(matches!(
            nc_counter_off(0, 95),
            Err(WireError::OutOfRange {
                what: "nc counter",
                limit: 95,
                ..
            })
        ));
        assert!(nc_counter_off(4, 95).is_err());
        assert_eq!(NdCounter::FeatureBitmap.off(), 0x20);
        assert_eq!(NcCounter::HwErrHbmUe.off(1), Ok(0xdc88));
    }
}
