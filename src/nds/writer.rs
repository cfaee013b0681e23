//! The publisher's side of a slab (libnds `nds_open` / `nds_commit_*` /
//! `nds_increment_*`, docs/abi.md §2.3-§2.8).
//!
//! One [`Writer`] owns the record-writing side of one slab: it lays out the
//! regions, commits the header, updates counters, and commits, updates and
//! deletes the self-describing records through the record protocol
//! ([`super::record`]) and the record lifecycle machine
//! ([`RecordFsm`](crate::fsm::record::RecordFsm)). The model bitmap and the record
//! states are guarded by a process-local mutex, as in the (docs/abi.md §2.6: the
//! `nds_instance_t` mutex is same-process only): one process writes records
//! into a slab. Counters are single atomic read-modify-writes and may be
//! updated from any number of threads and processes.
//!
//! Ownership of the slab's words (one writer per kind of word, and the
//! ordering each publish and observation uses):
//!
//! | words | writer | readers | publish ordering | observe ordering |
//! |---|---|---|---|---|
//! | header (+0) | `Writer::new` / `release` | every `Reader` read | Release store after the layout; `release`: store 0 then Release fence | Acquire load before, Acquire fence + re-load after each read |
//! | counters | any `Writer` (any process) | `Reader` | Relaxed `LOCK` RMW (no data hangs off a counter) | Relaxed load |
//! | model bitmap | `Writer` under its mutex | `Reader` (slot discovery) | Relaxed store (records carry their own hash protocol) | Relaxed load |
//! | records | `Writer` under its mutex | `Reader` | zero word 0 + Release fence, body, word 0 Release | word 0 Acquire, body, Acquire fence, word 0 again |
#![forbid(unsafe_code)]

use core::sync::atomic::Ordering;
#[cfg(feature = "std")]
use std::path::Path;

use crate::fsm::record::{self as fsm_record, RecordEvent, RecordState, Staged, Stamped};
use crate::fsm::TransitionHook;
use crate::sync::{Mutex, MutexGuard};
use crate::wire::nds::counters::{Features, NdCounter};
use crate::wire::nds::header::{self, HeaderState, HEADER_PROTO};
use crate::wire::nds::model::{self, ModelRecord};
use crate::wire::nds::process::{ProcessInfo, ProcessInfoExt, VersionInfo};
use crate::wire::nds::region;

use super::index::{Counter, ModelSlot};
use super::record::{self, RecordSpan};
use super::slab::require_size;
#[cfg(feature = "std")]
use super::slab::MappedSlab;
use super::slab::{DefaultSlab, SlabMut};
use super::{words, NdsError, MODEL_SLOTS, REQUIRED_SIZE};

/// Zero the map (everything past the header) at the widths its readers
/// load, so no store overlaps a load of another width (Rust's atomics allow
/// mixed sizes on the same bytes only between reads): 8-byte words, except
/// the process-info-ext record's last 4-byte word (a 260-byte record,
/// which `record::copy_once` ends with a 4-byte load), so the zeroing splits
/// at that record's end. Every other record is whole 8-byte words.
fn zero_map<S: SlabMut + ?Sized>(slab: &S) {
    const EXT: RecordSpan = RecordSpan::PROCESS_INFO_EXT;
    const SPLIT: usize = EXT.off() + EXT.len();
    const _: () = assert!(SPLIT % 8 == 4);
    const _: () = assert!(RecordSpan::PROCESS_INFO.len() % 8 == 0);
    const _: () = assert!(model::RECORD_SIZE % 8 == 0);
    words::zero(
        slab,
        region::ND_COUNTERS_OFF,
        SPLIT - region::ND_COUNTERS_OFF,
    );
    words::zero(slab, SPLIT, REQUIRED_SIZE - SPLIT);
}

/// Trace id of the process-info record (model slots use 0..=63).
pub const PROCESS_INFO_ID: u64 = 64;
/// Trace id of the process-info-ext record.
pub const PROCESS_INFO_EXT_ID: u64 = 65;

/// The writer's books: what it believes about every record. Guarded by the
/// process-local mutex (docs/abi.md §2.6).
struct Books {
    /// Mirror of the slab's model bitmap (this writer is its only writer).
    bitmap: u64,
    models: [RecordState; MODEL_SLOTS],
    process_info: RecordState,
    process_info_ext: RecordState,
    /// Where transitions are traced; `None` skips building the trace.
    hook: Option<HookBox>,
}

/// Where a writer's transitions go ([`Writer::set_hook`] needs `std`).
#[cfg(feature = "std")]
type HookBox = Box<dyn TransitionHook + Send>;
#[cfg(not(feature = "std"))]
type HookBox = &'static mut (dyn TransitionHook + Send);

/// The publisher's handle on one slab.
///
/// # Examples
///
/// Lay out a slab, count, and publish, update and delete a model record
/// (a `HeapSlab` here; [`Writer::create`] makes a `/dev/shm` file that
/// monitors in other processes read):
///
/// ```
/// use xunds::nds::{Counter, HeapSlab, Writer};
/// use xunds::wire::nds::counters::NcCounter;
/// use xunds::wire::nds::model::ModelRecord;
///
/// let w = Writer::new(HeapSlab::zeroed()).unwrap();
/// let done = Counter::nc(0, NcCounter::InferCompleted).unwrap();
/// w.add(done, 3).unwrap();
/// assert_eq!(w.sub(done, 1).unwrap(), 3, "the old value");
///
/// let slot = w.commit_model(&ModelRecord { model_id: 42, ..ModelRecord::EMPTY }).unwrap();
/// let moved = ModelRecord { model_id: 42, nc_index: 1, ..ModelRecord::EMPTY };
/// w.update_model(slot, &moved).unwrap();
/// assert_eq!(w.live_models(), 1);
/// w.delete_model(slot).unwrap();
/// assert_eq!(w.live_models(), 0);
/// ```
pub struct Writer<S: SlabMut = DefaultSlab> {
    slab: S,
    books: Mutex<Books>,
}

impl<S: SlabMut> core::fmt::Debug for Writer<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Writer")
            .field("len", &self.slab.len())
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "std")]
impl Writer<MappedSlab> {
    /// Create the slab file at `path` (262,144 zero bytes, `MAP_SHARED`),
    /// lay it out and commit the header: `nds_open` for a fresh slab.
    pub fn create(path: &Path) -> Result<Self, NdsError> {
        Self::new(MappedSlab::create(path)?)
    }
}

impl<S: SlabMut> Writer<S> {
    /// Lay out the regions of `slab` and commit its header (docs/abi.md §2.3).
    ///
    /// Refuses a slab shorter than 67,200 bytes (docs/abi.md §2.2) and one whose header is
    /// already committed (another publisher owns it: see [`Writer::attach`]).
    pub fn new(slab: S) -> Result<Self, NdsError> {
        require_size(slab.len())?;
        // Ordering: Acquire, partner: a previous publisher's Release commit
        // below (docs/abi.md §2.3); only used to refuse a live slab.
        if header::check(slab.load_u64(region::HEADER_OFF, Ordering::Acquire))
            == HeaderState::Committed
        {
            return Err(NdsError::AlreadyCommitted);
        }
        // Lay out: every region of the map starts zero: counters 0, an empty
        // model bitmap, every record unpublished (hash word 0).
        zero_map(&slab);
        // Ordering: Release, partner: the Acquire header load in
        // `Reader::attach` and before every reader read (docs/abi.md §2.3,
        // `nds_commit_header` / `nds_check_header`): a reader that sees the
        // committed header sees the laid-out regions.
        slab.store_u64(region::HEADER_OFF, HEADER_PROTO, Ordering::Release);
        Ok(Self::adopt(slab))
    }

    /// Attach to a slab another `Writer` (possibly in another process, now
    /// gone or only counting) already committed, adopting its records: model
    /// slots with their bitmap bit set and records with a non-zero hash word
    /// count as published. No retry: the header must be committed.
    ///
    /// Records are written by one process per slab (docs/abi.md §2.6); counters
    /// may be updated through any number of attached writers.
    pub fn attach(slab: S) -> Result<Self, NdsError> {
        require_size(slab.len())?;
        // Ordering: Acquire, partner: the Release header commit in
        // `Writer::new` (docs/abi.md §2.3): the layout and everything published before
        // the commit is visible to the adoption below.
        let word = slab.load_u64(region::HEADER_OFF, Ordering::Acquire);
        super::reader::header_verdict(word)?;
        Ok(Self::adopt(slab))
    }

    /// A writer whose books are what `slab` holds (all free on a slab just
    /// laid out).
    fn adopt(slab: S) -> Self {
        let bitmap = slab.load_u64(region::MODEL_BITMAP_OFF, Ordering::Relaxed);
        let state = |live: bool| match live {
            true => RecordState::Published,
            false => RecordState::Free,
        };
        let books = Books {
            bitmap,
            models: core::array::from_fn(|i| state(bitmap >> i & 1 != 0)),
            process_info: state(record::hashed(&slab, RecordSpan::PROCESS_INFO)),
            process_info_ext: state(record::hashed(&slab, RecordSpan::PROCESS_INFO_EXT)),
            hook: None,
        };
        Writer {
            slab,
            books: Mutex::new(books),
        }
    }

    /// Release the slab as the kernel does when the producer goes away: the
    /// header goes back to zero first (readers report Detached), then every
    /// region is zeroed. Returns the slab.
    pub fn release(self) -> S {
        self.slab
            .store_u64(region::HEADER_OFF, 0, Ordering::Relaxed);
        // Ordering: Release fence (docs/abi.md §2.3 header), partner: the Acquire fence a reader runs
        // before re-checking the header after each read: a reader that saw
        // any of the zeroing below re-loads a zero header and reports
        // Detached instead of mixing the two lives of the slab.
        self.slab.fence(Ordering::Release);
        zero_map(&self.slab);
        self.slab
    }

    /// The slab (for building a same-process reader, e.g.
    /// `MappedSlab::read_only`).
    pub fn slab(&self) -> &S {
        &self.slab
    }

    /// Install the hook every record transition is reported to (a trace).
    #[cfg(feature = "std")]
    pub fn set_hook(&self, hook: Box<dyn TransitionHook + Send>) {
        self.lock().hook = Some(hook);
    }

    /// The lifecycle state of model slot `slot` as this writer's books have it.
    pub fn model_state(&self, slot: ModelSlot) -> RecordState {
        self.lock().models[slot.index()]
    }

    /// The number of live model records.
    pub fn live_models(&self) -> u32 {
        self.lock().bitmap.count_ones()
    }

    fn lock(&self) -> MutexGuard<'_, Books> {
        // A panic while holding the lock cannot leave the books torn (every
        // state change is one assignment), so a poisoned lock is still good.
        self.books.lock().unwrap_or_else(|e| e.into_inner())
    }

    // ---- counters (docs/abi.md §2.4, §2.5) ----

    /// The word of counter `c` for anything but OR: `FEATURE_BITMAP` is
    /// `EINVAL` (it is written only with OR).
    #[inline]
    fn arith(c: Counter) -> Result<usize, NdsError> {
        match c.is_feature_bitmap() {
            true => Err(NdsError::OrOnly(NdCounter::FeatureBitmap)),
            false => Ok(c.offset()),
        }
    }

    /// Add `v` (wrapping, `LOCK ADD`) to counter `c`; returns the old value.
    /// `FEATURE_BITMAP` is `EINVAL`.
    #[inline]
    pub fn add(&self, c: Counter, v: u64) -> Result<u64, NdsError> {
        // Relaxed: a counter publishes nothing else; readers use a plain
        // 8-byte load (docs/abi.md §2.4), and the RMW is atomic across processes.
        Ok(self
            .slab
            .fetch_add_u64(Self::arith(c)?, v, Ordering::Relaxed))
    }

    /// Subtract `v` (wrapping: adding its two's complement) from counter
    /// `c`; returns the old value. `FEATURE_BITMAP` is `EINVAL`.
    #[inline]
    pub fn sub(&self, c: Counter, v: u64) -> Result<u64, NdsError> {
        self.add(c, v.wrapping_neg())
    }

    /// Set counter `c` to `v` (one 8-byte atomic store). `FEATURE_BITMAP` is
    /// `EINVAL`.
    #[inline]
    pub fn set(&self, c: Counter, v: u64) -> Result<(), NdsError> {
        self.slab.store_u64(Self::arith(c)?, v, Ordering::Relaxed);
        Ok(())
    }

    /// OR `bits` into counter `c` (`LOCK OR`, docs/abi.md §2.4
    /// `nds_or_nd_counter`); returns the old value. Allowed on every counter.
    #[inline]
    pub fn or(&self, c: Counter, bits: u64) -> u64 {
        self.slab.fetch_or_u64(c.offset(), bits, Ordering::Relaxed)
    }

    /// OR feature bits into `FEATURE_BITMAP` (ND 3); returns the old bits.
    pub fn set_features(&self, f: Features) -> Features {
        Features::from_bits_retain(self.or(Counter::nd(NdCounter::FeatureBitmap), f.bits()))
    }

    /// Publish the runtime, framework and FAL versions as the packed ND
    /// counter words 0..=2 (docs/abi.md §2.4 packing). docs/abi.md §2.7: the
    /// producer publishes the same triples in the process-info record too
    /// ([`Writer::publish_process_info`]).
    pub fn set_versions(&self, runtime: VersionInfo, framework: VersionInfo, fal: VersionInfo) {
        for (c, v) in [
            (NdCounter::RuntimeVersion, runtime),
            (NdCounter::FrameworkVersion, framework),
            (NdCounter::FalVersion, fal),
        ] {
            // Relaxed: see `add`.
            self.slab
                .store_u64(Counter::nd(c).offset(), v.packed(), Ordering::Relaxed);
        }
    }

    // ---- records (docs/abi.md §2.6-§2.8) ----

    /// Commit `r` into the first free model slot (`nds_commit_model_node_info`):
    /// take the slot and set its bitmap bit, build the record privately,
    /// publish it (its hash folded as the body is copied, stored last). `r.hash` is ignored. The 65th live record is
    /// `ENOSPC`.
    pub fn commit_model(&self, r: &ModelRecord) -> Result<ModelSlot, NdsError> {
        let mut books = self.lock();
        let index = model::first_free_slot(books.bitmap).ok_or(NdsError::NoSpace)?;
        let slot = ModelSlot::new(index)?;
        let span = RecordSpan::model(index)?;
        let mut staged = r.encode();
        let b = &mut *books;
        let record = Staged::stage(&mut b.models[index], index as u64, dyn_hook(&mut b.hook))?;
        b.bitmap |= slot.bit();
        // Relaxed: the bitmap only tells readers where to look; each record
        // carries its own publish protocol (docs/abi.md §2.6 marks the bit, then
        // copies the record).
        self.slab
            .store_u64(region::MODEL_BITMAP_OFF, b.bitmap, Ordering::Relaxed);
        let record = record.stamp(dyn_hook(&mut b.hook))?;
        self.write_record(record, dyn_hook(&mut b.hook), span, &mut staged)?;
        Ok(slot)
    }

    /// Update the published record in `slot` in place: the slab's hash word
    /// goes to zero, the body is rewritten, the new hash is stored last.
    /// `EINVAL` when the slot is not published.
    pub fn update_model(&self, slot: ModelSlot, r: &ModelRecord) -> Result<(), NdsError> {
        let span = RecordSpan::model(slot.index())?;
        let mut staged = r.encode();
        let mut books = self.lock();
        let b = &mut *books;
        let record = Stamped::begin_update(
            &mut b.models[slot.index()],
            slot.index() as u64,
            dyn_hook(&mut b.hook),
        )?;
        self.write_record(record, dyn_hook(&mut b.hook), span, &mut staged)
    }

    /// Delete the record in `slot` (`nds_delete_model_node_info`): zero the
    /// record (hash word first), then clear its bitmap bit. `EINVAL` when the
    /// slot is not published.
    pub fn delete_model(&self, slot: ModelSlot) -> Result<(), NdsError> {
        let span = RecordSpan::model(slot.index())?;
        let mut books = self.lock();
        let b = &mut *books;
        let id = slot.index() as u64;
        let state = &mut b.models[slot.index()];
        fsm_record::go(state, RecordEvent::Delete, id, dyn_hook(&mut b.hook))?;
        record::erase(&self.slab, span);
        fsm_record::go(state, RecordEvent::Reclaim, id, dyn_hook(&mut b.hook))?;
        b.bitmap &= !slot.bit();
        // Relaxed: see `commit_model`.
        self.slab
            .store_u64(region::MODEL_BITMAP_OFF, b.bitmap, Ordering::Relaxed);
        Ok(())
    }

    /// Publish (first time) or update (afterwards) the process-info record
    /// (docs/abi.md §2.7, `nds_commit_generic_obj`). `p.hash` is ignored.
    pub fn publish_process_info(&self, p: &ProcessInfo) -> Result<(), NdsError> {
        self.publish_generic(PROCESS_INFO_ID, &mut p.encode())
    }

    /// Publish or update the process-info-ext record (docs/abi.md §2.7).
    /// `p.hash` is ignored.
    pub fn publish_process_info_ext(&self, p: &ProcessInfoExt) -> Result<(), NdsError> {
        self.publish_generic(PROCESS_INFO_EXT_ID, &mut p.encode())
    }

    /// `nds_commit_generic_obj`: commit the process-info record `id` if it
    /// is free, else update it in place.
    fn publish_generic(&self, id: u64, staged: &mut [u8]) -> Result<(), NdsError> {
        let mut books = self.lock();
        let b = &mut *books;
        let (state, span) = match id {
            PROCESS_INFO_ID => (&mut b.process_info, RecordSpan::PROCESS_INFO),
            _ => (&mut b.process_info_ext, RecordSpan::PROCESS_INFO_EXT),
        };
        let record = if *state == RecordState::Free {
            Staged::stage(state, id, dyn_hook(&mut b.hook))?.stamp(dyn_hook(&mut b.hook))?
        } else {
            Stamped::begin_update(state, id, dyn_hook(&mut b.hook))?
        };
        self.write_record(record, dyn_hook(&mut b.hook), span, staged)
    }

    /// Write a record this call stamped (or began updating): the lifecycle
    /// check came before any byte of the slab changed; then the record
    /// protocol (invalidate, body, hash word last; invalidating a
    /// never-published record too makes a slot left dirty by a crashed
    /// writer safe to reuse), then Publish.
    fn write_record(
        &self,
        record: Stamped<'_>,
        hook: Option<&mut dyn TransitionHook>,
        span: RecordSpan,
        staged: &mut [u8],
    ) -> Result<(), NdsError> {
        record::invalidate(&self.slab, span);
        record::stamp_and_publish(&self.slab, span, staged);
        Ok(record.publish(hook)?)
    }
}

/// The books' hook as the lifecycle steps take it.
fn dyn_hook(h: &mut Option<HookBox>) -> Option<&mut dyn TransitionHook> {
    h.as_deref_mut().map(|h| h as &mut dyn TransitionHook)
}

#[cfg(not(loom))]
#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsm::Transition;
    use crate::nds::{HeapSlab, Slab};
    use crate::wire::nds::counters::NcCounter;
    use std::sync::{Arc, Mutex as StdMutex};

    // Field by field, not a struct expression with a base: cargo-mutants
    // 27 did not apply `.cargo/mutants.toml`'s `tests::` exclusion to the
    // "delete field" mutants of such an expression here, which every full
    // run then reported as missed.
    fn model(id: u32) -> ModelRecord {
        let mut m = ModelRecord::EMPTY;
        m.model_id = id;
        m.model_node_id = id * 10;
        m
    }

    struct Shared(Arc<StdMutex<Vec<Transition>>>);
    impl TransitionHook for Shared {
        fn on_transition(&mut self, t: Transition) {
            self.0.lock().unwrap().push(t);
        }
    }

    /// A slab that records the width of every access by address.
    struct WidthLog(HeapSlab, StdMutex<std::collections::BTreeMap<usize, u8>>);
    impl WidthLog {
        fn log(&self, off: usize, width: u8) {
            // Each 4-byte word the access covers, with the access's width
            // (4 or 8); a word seen at both widths keeps 12.
            let mut m = self.1.lock().unwrap();
            for w in (off..off + usize::from(width)).step_by(4) {
                *m.entry(w).or_insert(0) |= width;
            }
        }
    }
    impl Slab for WidthLog {
        fn len(&self) -> usize {
            self.0.len()
        }
        fn load_u64(&self, off: usize, order: Ordering) -> u64 {
            self.log(off, 8);
            self.0.load_u64(off, order)
        }
        fn load_u32(&self, off: usize, order: Ordering) -> u32 {
            self.log(off, 4);
            self.0.load_u32(off, order)
        }
        fn fence(&self, order: Ordering) {
            self.0.fence(order)
        }
        fn shrunk(&self) -> bool {
            false
        }
    }
    impl SlabMut for WidthLog {
        fn store_u64(&self, off: usize, v: u64, order: Ordering) {
            self.log(off, 8);
            self.0.store_u64(off, v, order)
        }
        fn store_u32(&self, off: usize, v: u32, order: Ordering) {
            self.log(off, 4);
            self.0.store_u32(off, v, order)
        }
        fn fetch_add_u64(&self, off: usize, v: u64, order: Ordering) -> u64 {
            self.log(off, 8);
            self.0.fetch_add_u64(off, v, order)
        }
        fn fetch_or_u64(&self, off: usize, v: u64, order: Ordering) -> u64 {
            self.log(off, 8);
            self.0.fetch_or_u64(off, v, order)
        }
    }

    /// Every byte of the map is accessed at one width by the writer and the
    /// reader alike, over a whole life (lay out, records, counters, a
    /// snapshot, a re-attach, a release): Rust's atomics allow accesses of
    /// different sizes to the same bytes only when none is a write, and a
    /// reader in another thread may race any of these. (The live checks
    /// loaded the 8-byte hash word as 4 bytes, and the layout and release
    /// zeroed the process-info-ext record's 4-byte last word as half of an
    /// 8-byte one.)
    #[test]
    fn every_word_is_accessed_at_one_width() {
        let slab = Arc::new(WidthLog(
            HeapSlab::zeroed(),
            StdMutex::new(Default::default()),
        ));
        let w = Writer::new(slab.clone()).unwrap();
        w.publish_process_info(&ProcessInfo::default()).unwrap();
        w.publish_process_info_ext(&ProcessInfoExt::default())
            .unwrap();
        let s = w.commit_model(&model(1)).unwrap();
        w.update_model(s, &model(2)).unwrap();
        w.add(Counter::nc(0, NcCounter::InferenceCount).unwrap(), 1)
            .unwrap();
        crate::nds::Reader::attach(slab.clone())
            .unwrap()
            .snapshot()
            .unwrap();
        drop(w);
        let w = Writer::attach(slab.clone()).unwrap();
        w.delete_model(s).unwrap();
        let _ = w.release();
        let mixed: Vec<String> = slab
            .1
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, &w)| w == 12)
            .map(|(off, _)| format!("{off:#x}"))
            .collect();
        assert!(
            mixed.is_empty(),
            "4-byte words also accessed as 8: {mixed:?}"
        );
    }

    #[test]
    fn new_lays_out_then_commits_and_refuses_a_live_slab() {
        let slab = Arc::new(HeapSlab::zeroed());
        slab.store_u64(0x100, 77, Ordering::Relaxed); // junk from before
        let w = Writer::new(slab.clone()).unwrap();
        assert_eq!(slab.load_u64(0, Ordering::Relaxed), HEADER_PROTO);
        assert_eq!(slab.load_u64(0x100, Ordering::Relaxed), 0, "laid out");
        assert!(matches!(
            Writer::new(slab.clone()),
            Err(NdsError::AlreadyCommitted)
        ));
        let s = w.release();
        assert_eq!(s.load_u64(0, Ordering::Relaxed), 0);
        assert!(
            Writer::new(s).is_ok(),
            "a released slab can be laid out again"
        );
        assert!(matches!(
            Writer::new(HeapSlab::new(REQUIRED_SIZE - 8)),
            Err(NdsError::TooSmall { len }) if len == REQUIRED_SIZE - 8
        ));
    }

    #[test]
    fn counters_add_sub_set_or_and_the_feature_bitmap_gate() {
        let w = Writer::new(HeapSlab::zeroed()).unwrap();
        let c = Counter::nc(9, NcCounter::InferCompleted).unwrap();
        assert_eq!(w.add(c, 5).unwrap(), 0);
        assert_eq!(w.sub(c, 2).unwrap(), 5);
        assert_eq!(w.slab().load_u64(c.offset(), Ordering::Relaxed), 3);
        w.set(c, 100).unwrap();
        assert_eq!(w.or(c, 1), 100);
        assert_eq!(w.slab().load_u64(c.offset(), Ordering::Relaxed), 101);
        let fb = Counter::nd(NdCounter::FeatureBitmap);
        for e in [
            w.add(fb, 1).unwrap_err(),
            w.sub(fb, 1).unwrap_err(),
            w.set(fb, 1).unwrap_err(),
        ] {
            assert!(matches!(e, NdsError::OrOnly(NdCounter::FeatureBitmap)));
            assert_eq!(e.errno(), 22);
        }
        assert_eq!(w.set_features(Features::MULTICORE), Features::empty());
        assert_eq!(w.set_features(Features::TEST), Features::MULTICORE);
        assert_eq!(w.slab().load_u64(0x20, Ordering::Relaxed), 0b11);
    }

    #[test]
    fn sixty_five_models_is_enospc_and_slots_are_reused_first_free() {
        let w = Writer::new(HeapSlab::zeroed()).unwrap();
        for i in 0..64 {
            assert_eq!(w.commit_model(&model(i)).unwrap().index(), i as usize);
        }
        let e = w.commit_model(&model(64)).unwrap_err();
        assert!(matches!(e, NdsError::NoSpace));
        assert_eq!(e.errno(), 28);
        assert_eq!(w.live_models(), 64);
        assert_eq!(
            w.slab()
                .load_u64(region::MODEL_BITMAP_OFF, Ordering::Relaxed),
            u64::MAX
        );
        w.delete_model(ModelSlot::new(40).unwrap()).unwrap();
        w.delete_model(ModelSlot::new(3).unwrap()).unwrap();
        assert_eq!(w.commit_model(&model(100)).unwrap().index(), 3);
        assert_eq!(w.commit_model(&model(101)).unwrap().index(), 40);
        assert!(matches!(
            w.commit_model(&model(102)),
            Err(NdsError::NoSpace)
        ));
    }

    #[test]
    fn update_and_delete_go_through_the_lifecycle() {
        let w = Writer::new(HeapSlab::zeroed()).unwrap();
        let trace = Arc::new(StdMutex::new(Vec::new()));
        w.set_hook(Box::new(Shared(trace.clone())));
        let s = w.commit_model(&model(1)).unwrap();
        assert_eq!(w.model_state(s), RecordState::Published);
        w.update_model(s, &model(2)).unwrap();
        w.delete_model(s).unwrap();
        assert_eq!(w.model_state(s), RecordState::Free);
        let span = RecordSpan::model(s.index()).unwrap();
        let mut all = vec![0xffu8; span.len()];
        words::copy_out(w.slab(), span.off(), &mut all);
        assert!(all.iter().all(|&b| b == 0), "delete zeroes the record");
        // Update or delete of a free slot is refused before any byte moves.
        for e in [
            w.update_model(s, &model(3)).unwrap_err(),
            w.delete_model(s).unwrap_err(),
        ] {
            assert!(matches!(e, NdsError::Lifecycle(_)), "{e}");
            assert_eq!(e.errno(), 22);
        }
        let names: Vec<String> = trace
            .lock()
            .unwrap()
            .iter()
            .map(|t| format!("{}>{}", t.event, t.to))
            .collect();
        assert_eq!(
            names,
            [
                "stage>STAGED",
                "stamp>STAMPED",
                "publish>PUBLISHED",
                "begin_update>UPDATING",
                "publish>PUBLISHED",
                "delete>DELETED",
                "reclaim>FREE"
            ]
        );
    }

    #[test]
    fn handles_are_send_and_sync_and_versions_pack() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Writer<MappedSlab>>();
        send_sync::<Writer<Arc<HeapSlab>>>();
        send_sync::<crate::nds::Reader>();
        let w = Writer::new(HeapSlab::zeroed()).unwrap();
        let v = |major, minor, build| VersionInfo {
            major,
            minor,
            build,
        };
        w.set_versions(v(2, 31, 24), v(2, 1, 0), v(1, 0, 7));
        let word = |c: NdCounter| {
            w.slab()
                .load_u64(Counter::nd(c).offset(), Ordering::Relaxed)
        };
        assert_eq!(word(NdCounter::RuntimeVersion), 2 << 40 | 31 << 32 | 24);
        assert_eq!(word(NdCounter::FrameworkVersion), 2 << 40 | 1 << 32);
        assert_eq!(word(NdCounter::FalVersion), 1 << 40 | 7);
    }

    #[test]
    fn attach_adopts_published_records() {
        let slab = Arc::new(HeapSlab::zeroed());
        assert!(matches!(
            Writer::attach(slab.clone()),
            Err(NdsError::NotCommitted)
        ));
        let w = Writer::new(slab.clone()).unwrap();
        let s = w.commit_model(&model(1)).unwrap();
        w.publish_process_info(&ProcessInfo::default()).unwrap();
        drop(w);
        let w2 = Writer::attach(slab).unwrap();
        assert_eq!(w2.model_state(s), RecordState::Published);
        assert_eq!(w2.live_models(), 1);
        w2.update_model(s, &model(5)).unwrap();
        // The published process info is adopted (updated in place); the
        // ext record, never published, is not (committed from FREE).
        let seen = Arc::new(StdMutex::new(Vec::new()));
        w2.set_hook(Box::new(Shared(seen.clone())));
        w2.publish_process_info(&ProcessInfo::default()).unwrap();
        assert_eq!(seen.lock().unwrap()[0].from, "PUBLISHED");
        seen.lock().unwrap().clear();
        w2.publish_process_info_ext(&ProcessInfoExt::default())
            .unwrap();
        assert_eq!(seen.lock().unwrap()[0].from, "FREE");
        assert_eq!(w2.commit_model(&model(2)).unwrap().index(), 1);
    }

    #[test]
    fn attach_needs_the_whole_region_map_and_no_more() {
        assert!(matches!(
            Writer::attach(HeapSlab::new(REQUIRED_SIZE - 8)),
            Err(NdsError::TooSmall { .. })
        ));
        // Exactly the region map: big enough (not committed, here).
        assert!(matches!(
            Writer::attach(HeapSlab::new(REQUIRED_SIZE)),
            Err(NdsError::NotCommitted)
        ));
    }

    /// `release` zeroes the whole region map and nothing past it.
    #[test]
    fn release_zeroes_the_region_map_only() {
        let slab = Arc::new(HeapSlab::zeroed());
        let w = Writer::new(slab.clone()).unwrap();
        w.add(Counter::nc(3, NcCounter::InferCompleted).unwrap(), 7)
            .unwrap();
        w.commit_model(&model(1)).unwrap();
        w.publish_process_info(&ProcessInfo::default()).unwrap();
        // Whatever the map holds (here: every word non-zero past the header).
        for off in (region::ND_COUNTERS_OFF..REQUIRED_SIZE).step_by(8) {
            slab.store_u64(off, u64::MAX, Ordering::Relaxed);
        }
        let past = REQUIRED_SIZE.next_multiple_of(8);
        slab.store_u64(past, 0x5a5a, Ordering::Relaxed);
        drop(w.release());
        for off in (0..REQUIRED_SIZE).step_by(8) {
            assert_eq!(slab.load_u64(off, Ordering::Relaxed), 0, "word at {off}");
        }
        assert_eq!(slab.load_u64(past, Ordering::Relaxed), 0x5a5a);
    }
}
