//! Typed, checked indices into a slab: counter words and model slots.
//!
//! A [`Counter`] is resolved once (docs/abi.md §2.4-§2.5 three-band addressing, via
//! [`crate::wire::nds::counters`]) and then used for any number of updates or
//! reads, so the hot path is one atomic instruction. A [`ModelSlot`] is a
//! model record slot 0..=63 (docs/abi.md §2.6). Out-of-range indices are
//! [`NdsError::Invalid`] (`EINVAL`, errno 22), as in libnrt's accessors.
#![forbid(unsafe_code)]

use core::fmt;

use crate::wire::nds::counters::{self, NcCounter, NdCounter};
use crate::wire::nds::region;

use super::NdsError;

/// What a [`Counter`] counts: the ND band index, or an NC (core, index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CounterId {
    /// Per-NeuronDevice counter `index` (0..=30) at 0x8 + 8 * index.
    Nd {
        /// ND index.
        index: u8,
    },
    /// Per-NeuronCore counter `index` (0..=94) of `core` (0..=15), in one of
    /// the three bands (0x100, 0xda80, 0xe280).
    Nc {
        /// NeuronCore 0..=15.
        core: u8,
        /// Counter index 0..=94 (31..=94 are the EXT counters).
        index: u8,
    },
}

/// A resolved counter word: its byte offset in the slab and what it is.
///
/// # Examples
///
/// Resolved once, then each update is one atomic instruction; the offsets
/// are docs/abi.md §2.10's worked examples:
///
/// ```
/// use xunds::nds::Counter;
/// use xunds::wire::nds::counters::{NcCounter, NdCounter};
///
/// assert_eq!(Counter::nd(NdCounter::FeatureBitmap).offset(), 0x020);
/// assert_eq!(Counter::nc(2, NcCounter::InferCompleted).unwrap().offset(), 0x2f8);
/// assert!(Counter::nc(16, NcCounter::InferCompleted).is_err(), "cores are 0..=15");
/// assert!(Counter::nc_index(0, 95).is_err(), "counters are 0..=94");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Counter {
    off: u32,
    id: CounterId,
}

impl Counter {
    /// A named ND counter (infallible).
    pub const fn nd(c: NdCounter) -> Counter {
        Counter {
            off: c.off() as u32,
            id: CounterId::Nd { index: c as u8 },
        }
    }

    /// ND counter by raw index 0..=30 (14..=30 are reserved but addressable,
    /// as in `nds_increment_nd_counter`); anything else is `EINVAL`.
    pub fn nd_index(index: u32) -> Result<Counter, NdsError> {
        let off = counters::nd_counter_off(index)?;
        Ok(Counter {
            off: off as u32,
            id: CounterId::Nd { index: index as u8 },
        })
    }

    /// A named NC or EXT counter of `core` (0..=15); a core outside that is
    /// `EINVAL`.
    pub fn nc(core: u32, c: NcCounter) -> Result<Counter, NdsError> {
        Self::nc_index(core, c.index())
    }

    /// NC counter by raw (core, index): cores 0..=15, indices 0..=94
    /// (docs/abi.md §2.5); anything else is `EINVAL`.
    pub fn nc_index(core: u32, index: u32) -> Result<Counter, NdsError> {
        let off = counters::nc_counter_off(core, index)?;
        Ok(Counter {
            off: off as u32,
            id: CounterId::Nc {
                core: core as u8,
                index: index as u8,
            },
        })
    }

    /// Byte offset of the counter word in the slab.
    #[inline(always)]
    pub const fn offset(self) -> usize {
        self.off as usize
    }

    /// What this counter is.
    pub const fn id(self) -> CounterId {
        self.id
    }

    /// `true` for ND counter 3, `FEATURE_BITMAP`, written only with OR (docs/abi.md §2.4).
    #[inline(always)]
    pub const fn is_feature_bitmap(self) -> bool {
        self.off as usize == NdCounter::FeatureBitmap.off()
    }

    /// The counter's C name, or `RESERVED_<index>` for an unnamed index.
    pub fn name(self) -> CounterName {
        let (CounterId::Nd { index } | CounterId::Nc { index, .. }) = self.id;
        let name = match self.id {
            CounterId::Nd { .. } => NdCounter::from_index(index.into()).map(NdCounter::name),
            CounterId::Nc { .. } => NcCounter::from_index(index.into()).map(NcCounter::name),
        };
        name.map_or(CounterName::Reserved(index), CounterName::Named)
    }
}

/// A counter's display name: the C name, or `RESERVED_<index>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CounterName {
    /// A named counter (docs/abi.md §2.4 spelling).
    Named(&'static str),
    /// A reserved index (ND 14..=30, NC 41..=94).
    Reserved(u8),
}

impl fmt::Display for CounterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CounterName::Named(n) => f.write_str(n),
            CounterName::Reserved(i) => write!(f, "RESERVED_{i}"),
        }
    }
}

/// Number of ND counter words (docs/abi.md §2.4: 31, 14 named + 17 reserved).
pub const ND_COUNTERS: usize = counters::ND_COUNTER_COUNT;
/// Number of NeuronCores (docs/abi.md §2.5: 0..=15).
pub const CORES: usize = counters::MAX_CORES;
/// Counters per NeuronCore (docs/abi.md §2.5: 0..=94).
pub const NC_COUNTERS: usize = counters::TOTAL_NC_COUNTER_COUNT;

/// A model record slot, 0..=63 (docs/abi.md §2.6).
///
/// # Examples
///
/// ```
/// use xunds::nds::ModelSlot;
///
/// let s = ModelSlot::new(5).unwrap();
/// assert_eq!((s.index(), s.bit()), (5, 1 << 5));
/// assert!(ModelSlot::new(64).is_err());
/// assert_eq!(ModelSlot::all().count(), 64);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModelSlot(u8);

impl ModelSlot {
    /// Slot `index`, or `EINVAL` past 63.
    pub fn new(index: usize) -> Result<ModelSlot, NdsError> {
        crate::wire::nds::model::slot_bit(index)?;
        Ok(ModelSlot(index as u8))
    }

    /// The slot index 0..=63.
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// The slot's bit in the model bitmap.
    pub const fn bit(self) -> u64 {
        1u64 << self.0
    }

    /// Every slot, ascending.
    pub fn all() -> impl Iterator<Item = ModelSlot> {
        (0..region::MODEL_SLOTS as u8).map(ModelSlot)
    }
}

impl fmt::Display for ModelSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

const _: () = assert!(region::MODEL_SLOTS == 64);
const _: () = assert!(NC_COUNTERS == 95 && CORES == 16 && ND_COUNTERS == 31);
// docs/abi.md §2.10 worked examples.
const _: () = assert!(Counter::nd(NdCounter::FeatureBitmap).offset() == 0x20);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_worked_examples() {
        // docs/abi.md §2.10.
        assert_eq!(
            Counter::nc(2, NcCounter::InferCompleted).unwrap().offset(),
            0x2f8
        );
        assert_eq!(
            Counter::nc(1, NcCounter::HwErrHbmUe).unwrap().offset(),
            0xdc88
        );
        assert_eq!(
            Counter::nc(7, NcCounter::MacCount).unwrap().offset(),
            0xec68
        );
        assert!(Counter::nd(NdCounter::FeatureBitmap).is_feature_bitmap());
        assert!(!Counter::nd_index(4).unwrap().is_feature_bitmap());
    }

    #[test]
    fn out_of_range_is_einval() {
        for e in [
            Counter::nd_index(31).unwrap_err(),
            Counter::nc_index(16, 0).unwrap_err(),
            Counter::nc_index(0, 95).unwrap_err(),
            Counter::nc(16, NcCounter::Oob).unwrap_err(),
            ModelSlot::new(64).unwrap_err(),
        ] {
            assert_eq!(e.errno(), 22, "{e}");
        }
    }

    #[test]
    fn names() {
        assert_eq!(
            Counter::nd(NdCounter::FeatureBitmap).name().to_string(),
            "FEATURE_BITMAP"
        );
        assert_eq!(
            Counter::nd_index(20).unwrap().name().to_string(),
            "RESERVED_20"
        );
        assert_eq!(
            Counter::nc_index(9, 40).unwrap().name().to_string(),
            "HW_ERR_REPAIRABLE_HBM_UE"
        );
        assert_eq!(
            Counter::nc_index(0, 41).unwrap().name().to_string(),
            "RESERVED_41"
        );
        assert_eq!(ModelSlot::all().count(), 64);
        assert_eq!(ModelSlot::new(63).unwrap().bit(), 1 << 63);
    }
}
