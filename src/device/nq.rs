//! Notification-queue rings (docs/abi.md §1.13; the entry
//! format is ours, [`crate::wire::nq`]).
//!
//! Each core has one NQ ring per engine. The device writes 16-byte records
//! with [`NqWriter`], stamping a phase bit that starts at 1 and flips each
//! time the writer wraps, so a zeroed or stale slot never looks written. The
//! worker reads with [`NqReader`] (or the per-core [`Harvester`], which groups
//! the records of one execution) and publishes how far it has read in the
//! core's `NQ_HEAD[engine]` register, so the writer can tell a full ring: a
//! record that does not fit is dropped and counted in `NQ_OVERFLOWS` (an NQ
//! overflow, reported to the worker as an error, never a silent hang).
//!
//! | cursor | writer | readers | publish | observe |
//! |---|---|---|---|---|
//! | NQ slot | device | worker | `write_nq`: phase half last, release | `read_nq`: acquire |
//! | `NQ_HEAD[e]` | worker | device | store release | load acquire |
//! | `NQ_OVERFLOWS` | device | worker | fetch_add release | load acquire |

use std::collections::VecDeque;
use std::sync::Arc;

use crate::hal::{Hal, HalError, Ordering, RegionHandle};
use crate::wire::nq::{self, ErrorClass, Kind, NqEntry, NqError, Source};
use crate::wire::status::NrtStatus;

use super::dma::Lap;
use super::memmap::{reg, MemMap, UnitError};

/// One side's position in one engine's NQ ring of a core: a [`Lap`] whose
/// mark is the phase it expects (1 on the first lap, flipped at each wrap);
/// its count is what `NQ_HEAD` publishes.
#[derive(Clone, Copy, Debug)]
struct Side {
    ring: RegionHandle,
    regs: RegionHandle,
    engine: u8,
    lap: Lap<bool>,
}

impl Side {
    /// Every engine's side of `core`'s rings, each at its start, or
    /// [`UnitError`] for a core the device does not have.
    fn all(map: &MemMap, core: u8) -> Result<[Side; nq::ENGINES as usize], UnitError> {
        let r = map.core(core)?;
        Ok(core::array::from_fn(|e| Side {
            ring: r.nq[e],
            regs: r.regs,
            engine: e as u8,
            lap: Lap::new(map.config.nq_len, true),
        }))
    }

    /// At the start of `engine`'s ring of `core`, or [`UnitError`] for a core
    /// or engine the device does not have.
    #[cfg(any(test, feature = "testkit"))]
    fn new(map: &MemMap, core: u8, engine: u8) -> Result<Side, UnitError> {
        let sides = Side::all(map, core)?;
        let engines = nq::ENGINES;
        let side = sides.get(usize::from(engine)).copied();
        side.ok_or(UnitError::Engine { engine, engines })
    }

    /// This engine's `NQ_HEAD` register.
    fn head_reg(&self) -> usize {
        reg::NQ_HEAD + 4 * usize::from(self.engine)
    }
}

/// The writer of one NQ ring (device side).
#[derive(Clone, Copy, Debug)]
pub struct NqWriter(Side);

/// A record the writer had to drop because the ring was full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overflow {
    /// The engine ring.
    pub engine: u8,
    /// The dropped record's execution.
    pub exec_id: u32,
}

impl NqWriter {
    /// The writer for `engine` of `core`, or [`UnitError`] for a core or
    /// engine `map` does not have.
    #[cfg(any(test, feature = "testkit"))]
    pub fn new(map: &MemMap, core: u8, engine: u8) -> Result<NqWriter, UnitError> {
        Side::new(map, core, engine).map(NqWriter)
    }

    /// The writers of every engine of `core` (the sequencer's), or `None`
    /// for a core `map` does not have.
    pub(crate) fn for_core(map: &MemMap, core: u8) -> Option<[NqWriter; nq::ENGINES as usize]> {
        Some(Side::all(map, core).ok()?.map(NqWriter))
    }

    /// Free slots: the ring length minus records written and not yet
    /// consumed by the worker (per its `NQ_HEAD` register).
    #[cfg(any(test, feature = "testkit"))]
    pub fn free<H: Hal + ?Sized>(&self, hal: &H) -> Result<u32, HalError> {
        let l = &self.0;
        // Ordering: Acquire pairs with `NqReader::poll`'s Release store of
        // NQ_HEAD (docs/abi.md §1.13; the head register is
        // ours).
        let head = hal.load_u32(l.regs, l.head_reg(), Ordering::Acquire)?;
        Ok(l.lap.len.saturating_sub(l.lap.count.wrapping_sub(head)))
    }

    /// Write `entry` (its phase is replaced by the ring's current phase).
    /// A full ring drops the record, counts it in `NQ_OVERFLOWS` and returns
    /// [`Overflow`].
    pub fn push<H: Hal + ?Sized>(
        &mut self,
        hal: &H,
        mut entry: NqEntry,
    ) -> Result<Result<(), Overflow>, HalError> {
        let l = &mut self.0;
        // Ordering: Acquire pairs with `NqReader::poll`'s Release store of
        // NQ_HEAD after it read the slots: they may be overwritten
        // (docs/abi.md §1.13).
        let head = hal.load_u32(l.regs, l.head_reg(), Ordering::Acquire)?;
        if l.lap.count.wrapping_sub(head) >= l.lap.len {
            // Ordering: Release pairs with `Harvester::poll`'s Acquire load
            // of NQ_OVERFLOWS, which then reports the overflow (ours: the
            // EXEC_SW_NQ_OVERFLOW path, docs/abi.md §3 status table).
            hal.fetch_add_u32(l.regs, reg::NQ_OVERFLOWS, 1, Ordering::Release)?;
            let (engine, exec_id) = (l.engine, entry.exec_id);
            return Ok(Err(Overflow { engine, exec_id }));
        }
        entry.engine = l.engine;
        entry.phase = l.lap.mark;
        let bytes = entry.encode().map_err(|_| HalError::BadHandle)?;
        hal.write_nq(l.ring, l.lap.index, &bytes)?;
        l.lap.advance(|phase| !phase);
        Ok(Ok(()))
    }
}

error_enum! {
    /// A record the reader could not use.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum NqReadError {
        /// A slot with the expected phase did not decode; it was skipped.
        Corrupt {
            /// The engine ring.
            engine: u8,
            /// The slot.
            index: u32,
            /// The decoder's error.
            err: NqError,
        } => ("NQ ring {}[{index}]: {err}", nq::engine_name(*engine)),
        /// The HAL refused the access.
        Hal(#[from] HalError) => "{0}",
    }
}

/// The reader of one NQ ring (worker side).
#[derive(Clone, Copy, Debug)]
pub struct NqReader(Side);

impl NqReader {
    /// The reader for `engine` of `core`, or [`UnitError`] for a core or
    /// engine `map` does not have.
    #[cfg(any(test, feature = "testkit"))]
    pub fn new(map: &MemMap, core: u8, engine: u8) -> Result<NqReader, UnitError> {
        Side::new(map, core, engine).map(NqReader)
    }

    /// The next record, if the slot at the head carries the expected phase.
    /// A slot with the expected phase that does not decode is skipped and
    /// reported, so one bad record cannot wedge the ring.
    pub fn poll<H: Hal + ?Sized>(&mut self, hal: &H) -> Result<Option<NqEntry>, NqReadError> {
        let l = &mut self.0;
        let bytes = hal.read_nq(l.ring, l.lap.index)?;
        let w = nq::PHASE_WORD;
        let word = u32::from_le_bytes([bytes[w], bytes[w + 1], bytes[w + 2], bytes[w + 3]]);
        if NqEntry::phase_of_word(word) != l.lap.mark {
            return Ok(None);
        }
        let index = l.lap.index;
        let res = NqEntry::decode(&bytes);
        l.lap.advance(|phase| !phase);
        // Ordering: Release pairs with the Acquire loads of NQ_HEAD in
        // `NqWriter::push`/`free`: the slot has been read and may be reused
        // (docs/abi.md §1.13).
        hal.store_u32(l.regs, l.head_reg(), l.lap.count, Ordering::Release)?;
        match res {
            Ok(e) => Ok(Some(e)),
            Err(err) => Err(NqReadError::Corrupt {
                engine: l.engine,
                index,
                err,
            }),
        }
    }
}

/// A bit mask of engines (bit i = engine i: PE, ACT, POOL, DVE, SP).
pub type EngineMask = u8;

/// How an execution ended, per its NQ records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecStatus {
    /// Every expected engine reported DONE.
    Done,
    /// The first error record seen.
    Error {
        /// The error class.
        class: ErrorClass,
        /// Who raised it (engine, DMA, sequencer).
        source: Source,
        /// The engine ring it arrived on.
        engine: u8,
    },
}

/// One execution's completion, assembled from its NQ records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExecCompletion {
    /// The per-core request number (as staging returned it).
    pub exec_id: u32,
    /// Done or the error.
    pub status: ExecStatus,
    /// Earliest start cycle among its records (low 32 bits).
    pub start_cycle: u32,
    /// Latest end cycle among its records (low 32 bits).
    pub end_cycle: u32,
    /// Engines that reported.
    pub reported: EngineMask,
}

impl ExecCompletion {
    /// Device latency in cycles (`end - start`, wrapping).
    pub const fn device_cycles(&self) -> u32 {
        self.end_cycle.wrapping_sub(self.start_cycle)
    }

    /// The status this completion suggests for the caller (the worker owns
    /// the final mapping): SUCCESS; a DMA abort is `EXEC_HW_ERR_DMA_ABORT`;
    /// a numerical error `EXEC_COMPLETED_WITH_NUM_ERR`; a hardware error
    /// `HW_ERROR`; any other class `EXEC_COMPLETED_WITH_ERR`.
    pub const fn suggested_status(&self) -> NrtStatus {
        match self.status {
            ExecStatus::Done => NrtStatus::SUCCESS,
            ExecStatus::Error { class, source, .. } => match (source, class) {
                (Source::Dma, _) => NrtStatus::EXEC_HW_ERR_DMA_ABORT,
                (_, ErrorClass::Numerical) => NrtStatus::EXEC_COMPLETED_WITH_NUM_ERR,
                (_, ErrorClass::Hw) => NrtStatus::HW_ERROR,
                _ => NrtStatus::EXEC_COMPLETED_WITH_ERR,
            },
        }
    }
}

error_enum! {
    /// Why the harvester could not complete an execution normally. Each maps to
    /// a status for the worker (see `docs/design.md`, "The HAL and the simulated
    /// device").
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum HarvestError {
        /// No complete set of records before the deadline (a device that never
        /// completes, a lost doorbell): `NRT_TIMEOUT`.
        Timeout {
            /// The execution.
            exec_id: u32,
            /// Engines that did report.
            reported: EngineMask,
        } => "execution {exec_id} timed out (engines reported: {reported:#07b})",
        /// The device dropped records because a ring was full (`EXEC_SW_NQ_OVERFLOW`).
        Overflow {
            /// Records dropped so far on this core.
            dropped: u32,
        } => "NQ overflow: the device dropped {dropped} record(s)",
        /// A record did not decode (skipped).
        Corrupt(#[source] NqReadError) => "corrupt NQ record: {0}",
    }
}

impl HarvestError {
    /// The status this error suggests: `TIMEOUT`, `EXEC_SW_NQ_OVERFLOW`, or
    /// `HW_ERROR` for a corrupt record.
    pub const fn suggested_status(&self) -> NrtStatus {
        match self {
            HarvestError::Timeout { .. } => NrtStatus::TIMEOUT,
            HarvestError::Overflow { .. } => NrtStatus::EXEC_SW_NQ_OVERFLOW,
            HarvestError::Corrupt(_) => NrtStatus::HW_ERROR,
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Pending {
    exec_id: u32,
    expect: EngineMask,
    deadline: u64,
    got: EngineMask,
    error: Option<ExecStatus>,
    error_end: u32,
    /// A DMA or sequencer error: the only record this execution will get.
    terminal: bool,
    start: Option<u32>,
    end: u32,
}

impl Pending {
    /// Take in one of the execution's records.
    fn add(&mut self, rec: &NqEntry) {
        self.got |= 1 << rec.engine;
        if self
            .start
            .is_none_or(|s| (rec.start_cycle.wrapping_sub(s) as i32) < 0)
        {
            self.start = Some(rec.start_cycle);
        }
        if self.got == 1 << rec.engine || (rec.end_cycle.wrapping_sub(self.end) as i32) > 0 {
            self.end = rec.end_cycle;
        }
        if let Kind::Error(class) = rec.kind {
            // The root cause is the error that happened first in device time
            // (a RAISE on one engine starves the others into a later
            // deadlock error); ties go to the lower engine index.
            let earlier = match self.error {
                Some(ExecStatus::Error { engine, .. }) => {
                    let d = rec.end_cycle.wrapping_sub(self.error_end) as i32;
                    d < 0 || (d == 0 && rec.engine < engine)
                }
                _ => true,
            };
            if earlier {
                self.error = Some(ExecStatus::Error {
                    class,
                    source: rec.source,
                    engine: rec.engine,
                });
                self.error_end = rec.end_cycle;
            }
            if rec.source != Source::Engine {
                self.terminal = true;
            }
        }
    }
}

/// The worker's view of one core's NQ rings: it reads all five rings and
/// groups records by execution, in staging order.
pub struct Harvester<H> {
    hal: Arc<H>,
    readers: [NqReader; nq::ENGINES as usize],
    regs: RegionHandle,
    pending: VecDeque<Pending>,
    /// Records of executions not expected yet (the device may finish before
    /// the worker learns of the execution: docs/abi.md §1.9 publishes to the
    /// device first), per engine in the order they came: the device writes
    /// an engine's records in execution order. At most a ring's worth each.
    early: [VecDeque<NqEntry>; nq::ENGINES as usize],
    early_cap: usize,
    last_expected: u32,
    overflows_seen: u32,
    stray: u64,
}

debug_fields!(
    [H] Harvester<H>,
    |s| pending = s.pending.len(),
    early = s.early.iter().map(VecDeque::len).sum::<usize>(),
    stray = s.stray
);

/// Outcome of one [`Harvester::poll`].
pub type Harvest = Result<ExecCompletion, HarvestError>;

impl<H: Hal> Harvester<H> {
    /// The harvester for `core`, or [`UnitError::Core`] for a core `map`
    /// does not have.
    pub fn new(hal: Arc<H>, map: &MemMap, core: u8) -> Result<Harvester<H>, UnitError> {
        Ok(Harvester {
            hal,
            readers: Side::all(map, core)?.map(NqReader),
            regs: map.core(core)?.regs,
            pending: VecDeque::new(),
            early: Default::default(),
            early_cap: map.config.nq_len as usize,
            last_expected: 0,
            overflows_seen: 0,
            stray: 0,
        })
    }

    /// Expect execution `exec_id` with records from the engines in `engines`,
    /// completing by `deadline` (host nanoseconds, compared with `poll`'s `now`).
    pub fn expect(&mut self, exec_id: u32, engines: EngineMask, deadline: u64) {
        let mut p = Pending {
            exec_id,
            expect: engines,
            deadline,
            ..Pending::default()
        };
        self.last_expected = exec_id;
        // Early records matched no pending execution when they came, and
        // only `exec_id` has been added since: absorb its records and count
        // those behind it as strays (as `absorb` would). An engine's records
        // come in execution order, so they are at the front of its queue: a
        // few compares, where scanning one queue of every engine's records
        // cost ~1,300 instructions per execution with 16 in flight. A record
        // a device wrote out of that order waits behind the one before it,
        // and its execution times out as if the record had been dropped.
        let not_ahead = |r: &NqEntry| r.exec_id.wrapping_sub(exec_id) as i32 <= 0;
        for early in &mut self.early {
            while let Some(rec) = early.front().copied().filter(not_ahead) {
                early.pop_front();
                if rec.exec_id == exec_id {
                    p.add(&rec);
                } else {
                    self.stray += 1;
                }
            }
        }
        self.pending.push_back(p);
    }

    /// Start over after the device re-initialised the core's NQ rings (the
    /// XU reset): readers at slot 0, phase 1; nothing expected, nothing
    /// early; overflow count 0 (the device zeroed `NQ_OVERFLOWS`). Stray
    /// counts are kept (they are totals).
    pub fn reset(&mut self) {
        for r in &mut self.readers {
            r.0.lap = Lap::new(r.0.lap.len, true);
        }
        self.pending.clear();
        self.early.iter_mut().for_each(VecDeque::clear);
        self.last_expected = 0;
        self.overflows_seen = 0;
    }

    /// Give up expecting `exec_id` (the XU reset: the stopped device will
    /// write no more records for it; or the harvest failed on it). `false`
    /// when it was not expected. By id, not the oldest: an entry another
    /// path left behind must not be taken for this one.
    pub fn abandon(&mut self, exec_id: u32) -> bool {
        match self.pending.iter().position(|p| p.exec_id == exec_id) {
            Some(i) => self.pending.remove(i).is_some(),
            None => false,
        }
    }

    /// Executions expected and not yet returned.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// Records that matched no expected execution (for example the rest of
    /// an execution already completed with an error) and were dropped.
    #[cfg(any(test, feature = "testkit"))]
    pub fn stray_records(&self) -> u64 {
        self.stray
    }

    /// Read every available record, then return the oldest execution if it
    /// is complete (every expected engine reported; or a DMA or sequencer
    /// error record arrived, which is the only record such an execution
    /// gets), timed out (`now >= deadline`), or an overflow/corrupt-record
    /// error. With several engine errors, the status is the one that
    /// happened first in device time.
    /// Call again until it returns `None`.
    pub fn poll(&mut self, now: u64) -> Result<Option<Harvest>, HalError> {
        // The HAL is borrowed per call, never cloned: an `Arc` clone writes
        // the count on the line every thread reads the HAL's table from.
        for e in 0..self.readers.len() {
            loop {
                match self.readers[e].poll(&*self.hal) {
                    Ok(Some(rec)) => self.absorb(rec),
                    Ok(None) => break,
                    Err(NqReadError::Hal(h)) => return Err(h),
                    Err(err) => return Ok(Some(Err(HarvestError::Corrupt(err)))),
                }
            }
        }
        // Ordering: Acquire pairs with `NqWriter::push`'s Release fetch_add
        // of NQ_OVERFLOWS (docs/abi.md §3 status table: EXEC_SW_NQ_OVERFLOW).
        let overflows = self
            .hal
            .load_u32(self.regs, reg::NQ_OVERFLOWS, Ordering::Acquire)?;
        if overflows != self.overflows_seen {
            self.overflows_seen = overflows;
            return Ok(Some(Err(HarvestError::Overflow { dropped: overflows })));
        }
        let Some(front) = self.pending.front().copied() else {
            return Ok(None);
        };
        let complete = front.terminal || front.got & front.expect == front.expect;
        if complete {
            self.pending.pop_front();
            return Ok(Some(Ok(ExecCompletion {
                exec_id: front.exec_id,
                status: front.error.unwrap_or(ExecStatus::Done),
                start_cycle: front.start.unwrap_or(front.end),
                end_cycle: front.end,
                reported: front.got,
            })));
        }
        if now >= front.deadline {
            self.pending.pop_front();
            return Ok(Some(Err(HarvestError::Timeout {
                exec_id: front.exec_id,
                reported: front.got,
            })));
        }
        Ok(None)
    }

    fn absorb(&mut self, rec: NqEntry) {
        if let Some(p) = self.pending.iter_mut().find(|p| p.exec_id == rec.exec_id) {
            return p.add(&rec);
        }
        // Ahead of the last expected execution (wrapping): keep it for
        // `expect`; behind it: the rest of an execution already returned.
        let ahead = (rec.exec_id.wrapping_sub(self.last_expected) as i32) > 0;
        let cap = self.early_cap;
        match self.early.get_mut(usize::from(rec.engine)) {
            Some(early) if ahead && early.len() < cap => early.push_back(rec),
            _ => self.stray += 1,
        }
    }
}
