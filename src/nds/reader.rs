//! The monitor's side of a slab (libnds `nds_check_header` /
//! `nds_read_*`, docs/abi.md §2.3, §2.4, §2.8): a [`Reader`] has no mutating method.
//!
//! libnrt's read-only gate (docs/abi.md §2.5: every counter writer returns `-EPERM` when
//! the instance belongs to another pid) is a run-time check a caller can get
//! wrong. Here it is a type: `Reader` has only `&self` methods that load, and
//! opened by path it sits on a [`ReadOnlySlab`] (mapped `PROT_READ`), which
//! does not implement [`SlabMut`](super::SlabMut) at all:
//!
//! ```compile_fail,E0599
//! # use xunds::nds::{Counter, Reader};
//! # use xunds::wire::nds::counters::NdCounter;
//! # fn f(r: &Reader) {
//! r.add(Counter::nd(NdCounter::AggNeffId), 1); // no such method
//! # }
//! ```
//!
//! ```compile_fail,E0599
//! # use xunds::nds::{ReadOnlySlab, SlabMut};
//! # fn f(s: &ReadOnlySlab) {
//! s.store_u64(8, 1, std::sync::atomic::Ordering::Relaxed); // not SlabMut
//! # }
//! ```
//!
//! Every read is bracketed by the header: it must be committed before (an
//! Acquire load, partner of the writer's Release commit) and still committed
//! after (an Acquire fence, then a re-load, partner of the Release fence in
//! [`Writer::release`](super::Writer::release)). A slab released in between is
//! reported as [`NdsError::Detached`] and nothing read across the release is
//! returned. A slab released and committed again in between (re-created in
//! place by a new writer) is not seen by the brackets: that one read may mix
//! the two lives (docs/abi.md §2.3).
#![forbid(unsafe_code)]

use core::sync::atomic::Ordering;
use core::time::Duration;
#[cfg(feature = "std")]
use std::path::Path;

use crate::wire::nds::counters::{NcCounter, NdCounter};
use crate::wire::nds::header::{self, HeaderState, HEADER_PROTO};
use crate::wire::nds::model::{self, ModelRecord};
use crate::wire::nds::process::{self, ProcessInfo, ProcessInfoExt};
use crate::wire::nds::region;
use crate::wire::WireError;

use super::index::{Counter, ModelSlot, CORES, NC_COUNTERS, ND_COUNTERS};
pub use super::record::Verdict;
use super::record::{self, RecordSpan, TornReason};
#[cfg(feature = "std")]
use super::slab::ReadOnlySlab;
use super::slab::{DefaultReadSlab, Slab};
use super::NdsError;

/// The header check's pause before its one retry (docs/abi.md §2.3: `usleep(500)`).
pub const HEADER_RETRY: Duration = Duration::from_micros(500);
/// The pause between record read attempts (docs/abi.md §2.8: `usleep(200)`).
pub const RECORD_RETRY: Duration = Duration::from_micros(record::READ_RETRY_US);

/// The largest record (the model record) bounds the stack copy buffer.
const MAX_RECORD: usize = model::RECORD_SIZE;
const _: () = assert!(process::PROCESS_INFO_SIZE <= MAX_RECORD);
const _: () = assert!(process::PROCESS_INFO_EXT_SIZE <= MAX_RECORD);

/// A record read's typed result (docs/abi.md §2.8 with the verdict made explicit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordRead<R> {
    /// A consistent copy whose hash matches its body.
    Fresh(R),
    /// The hash word was zero on the last attempt: not published (or being
    /// rewritten or deleted).
    Unpublished,
    /// Both attempts were torn; the stale last copy, never to be trusted as
    /// current.
    Torn(Stale<R>),
}

/// The stale copy a torn read hands back, with why it was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stale<R> {
    /// Why the copy was refused.
    pub reason: TornReason,
    /// The last copy, parsed as is (it may mix two versions).
    pub copy: R,
}

impl<R> RecordRead<R> {
    /// The record if it is fresh.
    pub fn fresh(self) -> Option<R> {
        match self {
            RecordRead::Fresh(r) => Some(r),
            _ => None,
        }
    }

    /// `true` for a fresh record.
    pub fn is_fresh(&self) -> bool {
        matches!(self, RecordRead::Fresh(_))
    }

    /// `"fresh"`, `"unpublished"` or `"torn"` (the dump's `state`).
    pub fn state_name(&self) -> &'static str {
        match self {
            RecordRead::Fresh(_) => "fresh",
            RecordRead::Unpublished => "unpublished",
            RecordRead::Torn(_) => "torn",
        }
    }

    /// The record's fields whatever the verdict: the fresh record, the stale
    /// copy, or `None` when unpublished.
    pub fn any_copy(&self) -> Option<&R> {
        match self {
            RecordRead::Fresh(r) => Some(r),
            RecordRead::Torn(s) => Some(&s.copy),
            RecordRead::Unpublished => None,
        }
    }
}

/// Everything a monitor reads in one go, taken between two header checks:
/// if the slab is released during the snapshot the whole snapshot is refused
/// ([`NdsError::Detached`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The ND and NC counter words (docs/abi.md §2.4, §2.5).
    pub counters: Counters,
    /// The model slot bitmap (docs/abi.md §2.6).
    pub model_bitmap: u64,
    /// The process-info record.
    pub process_info: RecordRead<ProcessInfo>,
    /// The process-info-ext record.
    pub process_info_ext: RecordRead<ProcessInfoExt>,
    /// Model slots whose bitmap bit is set or whose hash word is non-zero,
    /// ascending.
    pub models: heapless::Vec<(ModelSlot, RecordRead<ModelRecord>), { super::MODEL_SLOTS }>,
}

/// The counter words of one [`Snapshot`], with the sums a monitor reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counters {
    /// The ND counter words (docs/abi.md §2.4).
    pub nd: [u64; ND_COUNTERS],
    /// Per core, its NC counter words (docs/abi.md §2.5).
    pub nc: [[u64; NC_COUNTERS]; CORES],
}

impl Counters {
    /// Every word zero: what a runtime's counters start from.
    pub const ZERO: Counters = Counters {
        nd: [0; ND_COUNTERS],
        nc: [[0; NC_COUNTERS]; CORES],
    };

    /// Core `core`'s counter `c` (0 past the last core).
    pub fn nc(&self, core: usize, c: NcCounter) -> u64 {
        self.nc.get(core).map_or(0, |row| row[c as usize])
    }

    /// Counter `c` summed over every core, saturating (the words are
    /// another process's).
    pub fn sum(&self, c: NcCounter) -> u64 {
        self.nc
            .iter()
            .fold(0u64, |a, row| a.saturating_add(row[c as usize]))
    }

    /// ND counter `c`.
    pub fn nd(&self, c: NdCounter) -> u64 {
        self.nd[c as usize]
    }

    /// The cores with any non-zero counter word: the cores a runtime uses.
    pub fn cores_in_use(&self) -> impl Iterator<Item = usize> + '_ {
        (0..CORES).filter(|c| self.nc[*c].iter().any(|v| *v != 0))
    }
}

/// Execution outcomes by their neuron-monitor name (`execution_summary`),
/// in its order.
pub const OUTCOMES: [(&str, NcCounter); 6] = [
    ("completed", NcCounter::InferCompleted),
    ("completed_with_err", NcCounter::InferCompletedWithErr),
    (
        "completed_with_num_err",
        NcCounter::InferCompletedWithNumErr,
    ),
    ("timed_out", NcCounter::InferTimedOut),
    ("incorrect_input", NcCounter::InferIncorrectInput),
    ("failed_to_queue", NcCounter::InferFailedToQueue),
];

/// Error classes by their neuron-monitor name (`error_summary`), in its
/// order.
pub const ERROR_CLASSES: [(&str, NcCounter); 6] = [
    ("generic", NcCounter::ErrGeneric),
    ("numerical", NcCounter::ErrNumerical),
    ("transient", NcCounter::ErrTransient),
    ("model", NcCounter::ErrModel),
    ("runtime", NcCounter::ErrRt),
    ("hardware", NcCounter::ErrHw),
];

/// A core's device memory by kind, by neuron-monitor's name
/// (`neuroncore_memory_usage`), in its order.
pub const CORE_MEMORY: [(&str, NcCounter); 5] = [
    ("constants", NcCounter::MemUsageConstantsDevice),
    ("model_code", NcCounter::MemUsageCodeDevice),
    (
        "model_shared_scratchpad",
        NcCounter::MemUsageScratchpadDevice,
    ),
    ("runtime_memory", NcCounter::MemUsageMiscDevice),
    ("tensors", NcCounter::MemUsageTensorsDevice),
];

/// Map a header word to the attach verdict (docs/abi.md §2.3).
pub(crate) fn header_verdict(word: u64) -> Result<(), NdsError> {
    match header::check(word) {
        HeaderState::Committed => Ok(()),
        HeaderState::Zero => Err(NdsError::NotCommitted),
        HeaderState::BadMagic => Err(NdsError::BadMagic { word }),
        HeaderState::BadVersion { version } => Err(NdsError::BadVersion { version }),
    }
}

/// A read-only handle on a committed slab.
///
/// # Examples
///
/// A monitor maps a live slab read-only (`PROT_READ`) and reads counters and
/// records; a record it reads is `Fresh` only when its hash verifies:
///
/// ```
/// use xunds::nds::{Counter, Reader, RecordRead, Writer};
/// use xunds::wire::nds::counters::NcCounter;
/// use xunds::wire::nds::model::ModelRecord;
///
/// let path = std::env::temp_dir().join(format!("xunds-doc-reader-{}.nds", std::process::id()));
/// let w = Writer::create(&path).unwrap();
/// let c = Counter::nc(1, NcCounter::InferenceCount).unwrap();
/// w.add(c, 7).unwrap();
/// let slot = w.commit_model(&ModelRecord { model_id: 9, ..ModelRecord::EMPTY }).unwrap();
///
/// let r = Reader::open(&path).unwrap();
/// assert_eq!(r.counter(c).unwrap(), 7);
/// match r.model(slot).unwrap() {
///     RecordRead::Fresh(m) => assert_eq!(m.model_id, 9),
///     other => panic!("{}", other.state_name()),
/// }
/// let snap = r.snapshot().unwrap();
/// assert_eq!(snap.counters.nc(1, NcCounter::InferenceCount), 7);
/// assert_eq!(snap.models.len(), 1);
/// # drop((r, w));
/// # std::fs::remove_file(&path).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct Reader<S: Slab = DefaultReadSlab> {
    slab: S,
    pause: fn(Duration),
}

#[cfg(feature = "std")]
impl Reader<ReadOnlySlab> {
    /// Map the slab file at `path` read-only (`PROT_READ`) and attach
    /// ([`Reader::attach`]).
    pub fn open(path: &Path) -> Result<Self, NdsError> {
        Self::attach(ReadOnlySlab::open(path)?)
    }
}

impl<S: Slab> Reader<S> {
    /// Attach to `slab` (`nds_open` + `nds_check_header`): refuse one shorter
    /// than 67,200 bytes (docs/abi.md §2.2); check the header, and if it is not committed,
    /// sleep 500 us and check once more (docs/abi.md §2.3). The refusal says what was
    /// wrong: [`NdsError::TooSmall`], [`NdsError::NotCommitted`],
    /// [`NdsError::BadMagic`] or [`NdsError::BadVersion`].
    #[cfg(feature = "std")]
    pub fn attach(slab: S) -> Result<Self, NdsError> {
        Self::attach_with_pause(slab, std::thread::sleep)
    }

    /// [`Reader::attach`] with `pause` instead of `thread::sleep` for the
    /// header and record retries (deterministic tests, fuzzing).
    pub fn attach_with_pause(slab: S, pause: fn(Duration)) -> Result<Self, NdsError> {
        super::slab::require_size(slab.len())?;
        let reader = Reader { slab, pause };
        let mut word = reader.header_word();
        if word != HEADER_PROTO {
            (reader.pause)(HEADER_RETRY);
            word = reader.header_word();
        }
        // A shrunk file voids the header word too.
        if reader.slab.shrunk() {
            return Err(NdsError::Shrunk);
        }
        header_verdict(word)?;
        Ok(reader)
    }

    fn header_word(&self) -> u64 {
        // Ordering: Acquire, partner: the Release header commit in
        // `Writer::new` (docs/abi.md §2.3): the laid-out regions are visible.
        self.slab.load_u64(region::HEADER_OFF, Ordering::Acquire)
    }

    /// The header's state right now (no retry).
    pub fn header(&self) -> HeaderState {
        header::check(self.header_word())
    }

    /// `true` while the header is committed.
    pub fn is_attached(&self) -> bool {
        self.header_word() == HEADER_PROTO
    }

    /// Run `f` between two header checks: committed before, still committed
    /// after; otherwise [`NdsError::Detached`] and `f`'s result is dropped.
    /// A file that shrank under the mapping at any point is
    /// [`NdsError::Shrunk`], whatever was read.
    fn bracketed<T>(&self, f: impl FnOnce(&S) -> T) -> Result<T, NdsError> {
        let before = self.header_word();
        let out = (before == HEADER_PROTO).then(|| f(&self.slab));
        // Ordering: Acquire fence (docs/abi.md §2.3 header gate), partner: the Release fence in
        // `Writer::release` after it zeroes the header: if `f` saw any word
        // the release zeroed, the re-load below sees the zero header.
        self.slab.fence(Ordering::Acquire);
        let after = self.slab.load_u64(region::HEADER_OFF, Ordering::Relaxed);
        // A fault absorbed anywhere above (a load past the shrunk end read
        // zero) voids whatever was read, header checks included.
        if self.slab.shrunk() {
            return Err(NdsError::Shrunk);
        }
        out.filter(|_| after == HEADER_PROTO)
            .ok_or(NdsError::Detached)
    }

    /// Read counter `c` (a plain 8-byte load, docs/abi.md §2.4).
    pub fn counter(&self, c: Counter) -> Result<u64, NdsError> {
        self.bracketed(|s| s.load_u64(c.offset(), Ordering::Relaxed))
    }

    /// The model slot bitmap (docs/abi.md §2.6).
    pub fn model_bitmap(&self) -> Result<u64, NdsError> {
        self.bracketed(|s| s.load_u64(region::MODEL_BITMAP_OFF, Ordering::Relaxed))
    }

    /// Read model slot `slot`'s record (docs/abi.md §2.8).
    pub fn model(&self, slot: ModelSlot) -> Result<RecordRead<ModelRecord>, NdsError> {
        let span = RecordSpan::model(slot.index())?;
        self.bracketed(|s| self.read_record(s, span, ModelRecord::parse))?
    }

    /// Read the process-info record (docs/abi.md §2.7, §2.8).
    pub fn process_info(&self) -> Result<RecordRead<ProcessInfo>, NdsError> {
        self.bracketed(|s| self.read_record(s, RecordSpan::PROCESS_INFO, ProcessInfo::parse))?
    }

    /// Read the process-info-ext record (docs/abi.md §2.7, §2.8).
    pub fn process_info_ext(&self) -> Result<RecordRead<ProcessInfoExt>, NdsError> {
        let span = RecordSpan::PROCESS_INFO_EXT;
        self.bracketed(|s| self.read_record(s, span, ProcessInfoExt::parse))?
    }

    /// The verified copy of the record at `span` into `out`
    /// (`out.len() == span.len()`), without parsing: the docs/abi.md §2.8 read with
    /// its typed verdict. `out` holds the fresh record, or the stale copy
    /// when the verdict is Torn. For monitors that forward raw records.
    ///
    /// # Panics
    /// If `out.len() != span.len()` (a caller bug).
    pub fn record_bytes(&self, span: RecordSpan, out: &mut [u8]) -> Result<Verdict, NdsError> {
        let pause = self.pause;
        self.bracketed(|s| record::read(s, span, out, || pause(RECORD_RETRY)))
    }

    /// Everything at once, between two header checks.
    pub fn snapshot(&self) -> Result<Snapshot, NdsError> {
        self.bracketed(|s| -> Result<Snapshot, NdsError> {
            let mut counters = Counters::ZERO;
            for (i, v) in counters.nd.iter_mut().enumerate() {
                *v = s.load_u64(Counter::nd_index(i as u32)?.offset(), Ordering::Relaxed);
            }
            for (core, row) in counters.nc.iter_mut().enumerate() {
                for (i, v) in row.iter_mut().enumerate() {
                    let c = Counter::nc_index(core as u32, i as u32)?;
                    *v = s.load_u64(c.offset(), Ordering::Relaxed);
                }
            }
            let model_bitmap = s.load_u64(region::MODEL_BITMAP_OFF, Ordering::Relaxed);
            let mut models = heapless::Vec::new();
            for slot in ModelSlot::all() {
                let span = RecordSpan::model(slot.index())?;
                let hashed = super::record::hashed(s, span);
                if model_bitmap & slot.bit() != 0 || hashed {
                    // At most one entry per slot: `ModelSlot::all()` yields each once.
                    let _ = models.push((slot, self.read_record(s, span, ModelRecord::parse)?));
                }
            }
            Ok(Snapshot {
                counters,
                model_bitmap,
                process_info: self.read_record(s, RecordSpan::PROCESS_INFO, ProcessInfo::parse)?,
                process_info_ext: self.read_record(
                    s,
                    RecordSpan::PROCESS_INFO_EXT,
                    ProcessInfoExt::parse,
                )?,
                models,
            })
        })?
    }

    /// The docs/abi.md §2.8 read of the record at `span`, its copy parsed
    /// with `parse`.
    fn read_record<R>(
        &self,
        slab: &S,
        span: RecordSpan,
        parse: fn(&[u8]) -> Result<R, WireError>,
    ) -> Result<RecordRead<R>, NdsError> {
        let mut buf = [0u8; MAX_RECORD];
        let out = &mut buf[..span.len()];
        let pause = self.pause;
        Ok(
            match record::read(slab, span, out, || pause(RECORD_RETRY)) {
                Verdict::Fresh => RecordRead::Fresh(parse(out)?),
                Verdict::Unpublished => RecordRead::Unpublished,
                Verdict::Torn(reason) => RecordRead::Torn(Stale {
                    reason,
                    copy: parse(out)?,
                }),
            },
        )
    }
}

#[cfg(not(loom))]
#[cfg(test)]
mod tests {
    use super::*;
    use crate::nds::{HeapSlab, SlabMut, Writer, REQUIRED_SIZE};
    use crate::wire::nds::counters::{NcCounter, NdCounter};
    use crate::wire::nds::header::Header;
    use std::sync::Arc;

    fn no_pause(_: Duration) {}

    #[test]
    fn attach_refusals_say_what_was_wrong() {
        let r = Reader::attach_with_pause(HeapSlab::new(REQUIRED_SIZE - 8), no_pause);
        assert!(matches!(r, Err(NdsError::TooSmall { .. })));
        let s = HeapSlab::zeroed();
        assert!(matches!(
            Reader::attach_with_pause(&s, no_pause),
            Err(NdsError::NotCommitted)
        ));
        s.store_u64(0, 0x1122_3344_5566_7788, Ordering::Relaxed);
        assert!(matches!(
            Reader::attach_with_pause(&s, no_pause),
            Err(NdsError::BadMagic {
                word: 0x1122_3344_5566_7788
            })
        ));
        let v2 = Header {
            magic: *b"nds\0",
            version: 100_001,
        };
        s.store_u64(0, v2.to_word(), Ordering::Relaxed);
        let e = Reader::attach_with_pause(&s, no_pause).unwrap_err();
        assert!(matches!(e, NdsError::BadVersion { version: 100_001 }));
        assert_eq!(e.errno(), 22);
        s.store_u64(0, HEADER_PROTO, Ordering::Relaxed);
        assert!(Reader::attach_with_pause(&s, no_pause).is_ok());
    }

    /// `Reader::attach`'s pause really waits: the header retry's window
    /// (docs/abi.md §2.3) and the record retry's back-off are time, not a
    /// spin.
    #[test]
    fn the_default_pause_sleeps() {
        let t = std::time::Instant::now();
        let e = Reader::attach(HeapSlab::zeroed()).unwrap_err();
        assert!(matches!(e, NdsError::NotCommitted));
        assert!(t.elapsed() >= HEADER_RETRY);
    }

    #[test]
    fn header_retry_sees_a_late_commit() {
        // The pause is where the producer commits (docs/abi.md §2.3's window
        // between mmap and nds_commit_header).
        static SLAB: std::sync::OnceLock<HeapSlab> = std::sync::OnceLock::new();
        let s = SLAB.get_or_init(HeapSlab::zeroed);
        fn commit_during_pause(d: Duration) {
            assert_eq!(d, HEADER_RETRY);
            // Ordering: Release, partner: the Acquire header load of the
            // retry in `Reader::attach_with_pause` (docs/abi.md §2.3).
            SLAB.get()
                .unwrap()
                .store_u64(0, HEADER_PROTO, Ordering::Release);
        }
        let r = Reader::attach_with_pause(s, commit_during_pause).unwrap();
        assert!(r.is_attached());
    }

    #[test]
    fn release_is_detached_not_zero() {
        let slab = Arc::new(HeapSlab::zeroed());
        let w = Writer::new(slab.clone()).unwrap();
        let c = Counter::nc(0, NcCounter::InferCompleted).unwrap();
        w.add(c, 3).unwrap();
        let s = w.commit_model(&ModelRecord::EMPTY).unwrap();
        let r = Reader::attach_with_pause(slab.clone(), no_pause).unwrap();
        assert!(r.is_attached());
        assert_eq!(r.counter(c).unwrap(), 3);
        assert!(r.model(s).unwrap().is_fresh());
        let _slab = w.release();
        assert!(matches!(r.counter(c), Err(NdsError::Detached)));
        assert!(matches!(r.model(s), Err(NdsError::Detached)));
        assert!(matches!(r.snapshot(), Err(NdsError::Detached)));
        assert_eq!(r.header(), HeaderState::Zero);
        assert!(!r.is_attached());
    }

    #[test]
    fn snapshot_reads_everything() {
        let slab = Arc::new(HeapSlab::zeroed());
        let w = Writer::new(slab.clone()).unwrap();
        w.add(Counter::nd(NdCounter::AggNeffId), 9).unwrap();
        w.add(Counter::nc(15, NcCounter::Oob).unwrap(), 2).unwrap();
        w.add(Counter::nc(3, NcCounter::HwErrNcUe).unwrap(), 4)
            .unwrap();
        w.commit_model(&ModelRecord::EMPTY).unwrap();
        let s1 = w
            .commit_model(&ModelRecord {
                model_id: 5,
                ..ModelRecord::EMPTY
            })
            .unwrap();
        w.delete_model(ModelSlot::new(0).unwrap()).unwrap();
        let r = Reader::attach_with_pause(slab, no_pause).unwrap();
        let snap = r.snapshot().unwrap();
        assert_eq!(snap.counters.nd[13], 9);
        assert_eq!(snap.counters.nc[15][30], 2);
        assert_eq!(snap.counters.nc[3][33], 4);
        assert_eq!(snap.model_bitmap, 0b10);
        assert_eq!(snap.models.len(), 1);
        assert_eq!(snap.models[0].0, s1);
        assert_eq!(snap.models[0].1.clone().fresh().unwrap().model_id, 5);
        assert_eq!(snap.process_info, RecordRead::Unpublished);
    }

    /// The bitmap is read from the slab (mutant: `model_bitmap` -> a
    /// constant), and a snapshot shows every slot with its bitmap bit *or*
    /// its hash set, as design.md says (mutant: `||` -> `&&`): a record
    /// still published after its bit was cleared, and a bit set before its
    /// record was published.
    #[test]
    fn bitmap_and_half_published_slots_are_visible() {
        let slab = Arc::new(HeapSlab::zeroed());
        let w = Writer::new(slab.clone()).unwrap();
        let r = Reader::attach_with_pause(slab.clone(), no_pause).unwrap();
        assert_eq!(r.model_bitmap().unwrap(), 0);
        let s0 = w.commit_model(&ModelRecord::EMPTY).unwrap();
        let s1 = w
            .commit_model(&ModelRecord {
                model_id: 7,
                ..ModelRecord::EMPTY
            })
            .unwrap();
        assert_eq!(r.model_bitmap().unwrap(), s0.bit() | s1.bit());
        // Slot 1: hash only; slot 2: bit only.
        let s2 = ModelSlot::new(2).unwrap();
        slab.store_u64(
            region::MODEL_BITMAP_OFF,
            s0.bit() | s2.bit(),
            Ordering::Relaxed,
        );
        assert_eq!(r.model_bitmap().unwrap(), 0b101);
        let snap = r.snapshot().unwrap();
        let slots: Vec<ModelSlot> = snap.models.iter().map(|m| m.0).collect();
        assert_eq!(slots, vec![s0, s1, s2]);
        assert_eq!(snap.models[1].1.clone().fresh().unwrap().model_id, 7);
        assert_eq!(snap.models[2].1, RecordRead::Unpublished);
    }

    /// Only a fresh read is fresh (mutant: `is_fresh` -> `true`, found by
    /// the first `.ci/mutants` shard).
    #[test]
    fn only_a_fresh_read_is_fresh() {
        assert!(!RecordRead::<ModelRecord>::Unpublished.is_fresh());
        assert!(RecordRead::Fresh(ModelRecord::EMPTY).is_fresh());
    }

    #[test]
    fn torn_records_come_back_stale_not_fresh() {
        let slab = Arc::new(HeapSlab::zeroed());
        let w = Writer::new(slab.clone()).unwrap();
        let s = w
            .commit_model(&ModelRecord {
                model_id: 1,
                ..ModelRecord::EMPTY
            })
            .unwrap();
        // Flip one body byte behind the protocol's back (a foreign writer's
        // torn memcpy looks the same).
        let off = RecordSpan::model(s.index()).unwrap().off() + 0x100;
        let v = slab.load_u64(off, Ordering::Relaxed);
        slab.store_u64(off, v ^ 0x100, Ordering::Relaxed);
        let r = Reader::attach_with_pause(slab, no_pause).unwrap();
        match r.model(s).unwrap() {
            RecordRead::Torn(stale) => {
                assert!(matches!(stale.reason, TornReason::Mismatch { .. }));
                assert_eq!(stale.copy.model_id, 1);
            }
            other => panic!("accepted a torn record: {other:?}"),
        }
    }
}
