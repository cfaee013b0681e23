//! The Worker: one per core (docs/abi.md §1.6, §1.8, §1.9; `fsm::worker`).
//!
//! It sleeps on its has-work eventfd when nothing is triggered (it never
//! spins), peeks the slot at `exec_head`, harvests the NQ records of that
//! execution with a deadline (submission time + the configured timeout, in
//! the runner's time: virtual in deterministic runs), then, in the ABI's
//! order: fills `infer_resp_t` in the work item (timings, status, device
//! times, MACs) and copies/checks the outputs, fixes the status, reports the
//! counter updates to the NDS publisher, returns the work item to the pool,
//! pops the slot (the ring writes the caller's status through `exec_status`
//! before it advances `exec_head`) and signals the waiter (the ring signals
//! a captured `mark_comp_efd` right after the advance).
//!
//! Status mapping (docs/design.md "Actors and the system"):
//!
//! | harvest | status | fatal (XU degraded) |
//! |---|---|---|
//! | every engine DONE | `SUCCESS` | no |
//! | engine error, class numerical | `EXEC_COMPLETED_WITH_NUM_ERR` (1003) | no |
//! | engine error, class hw | `HW_ERROR` (6) | yes |
//! | engine error, other class (generic, model, transient, runtime) | `EXEC_COMPLETED_WITH_ERR` (1004) | no |
//! | sequencer error (published without the event poke) | `EXEC_COMPLETED_WITH_ERR` (1004) | no |
//! | corrupt descriptor (DMA abort) | `EXEC_HW_ERR_DMA_ABORT` (1203) | yes |
//! | no records by the deadline | `TIMEOUT` (5) | yes |
//! | NQ overflow seen while harvesting | `EXEC_SW_NQ_OVERFLOW` (1204) for the next execution that times out (the one that lost its record) | yes, when seen |
//! | corrupt NQ record seen while harvesting | `HW_ERROR` (6) for the next execution that times out (the one whose record it was) | yes, when seen |
//! | aborted by the XU reset (the stopped device wrote no record for it) | `EXEC_UNIT_UNRECOVERABLE` (101), or the kept overflow/corrupt note's status | no |
//! | the work item is bad (`BadItem`, docs/design.md "Work items") | `INVALID_HANDLE` (3) or `INVALID` (2), whatever the harvest | as the harvest's |
//! | the response's HAL store or read-back fails, or it does not parse (`resp_failures`) | `FAILURE` (1) | no |
//!
//! The XU reset (`fsm::xu_health`): once the lane started it
//! (`Lane::begin_reset`; with `recover` the worker starts it itself as soon
//! as its XU is degraded, by any fault), the worker drives it from `poll`:
//! STOPPING, it keeps completing executions until the device acknowledges
//! the stop (`RESET_ACK`); DRAINING, every execution still in flight
//! completes, with its records if the device wrote them, else aborted now
//! (nothing more will come); drained, it asks the device to re-initialise
//! its NQ rings (RESETTING) and, on the acknowledgement, starts its
//! harvester over and steps the XU back to HEALTHY. Each execution
//! completes exactly once; the ring's seq_ids go on (a handle stays
//! answerable across a reset).
//!
//! An overflow or a corrupt record may show up while the worker still
//! harvests an earlier, healthy execution (the device runs ahead), so the
//! worker keeps it as a note until an execution times out: a dropped or
//! skipped record always leaves its execution incomplete, so that is the one.
//!
//! Counter reports never block the worker (deadlock rule): a report the
//! publisher's mailbox refuses is kept (R1) and retried first on the next
//! poll, and the worker starts no new execution while it keeps one (R2).

use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::actors::mailbox::Sender;
use crate::actors::pace::Pace;
use crate::actors::stats::{LatencyHist, StatusCounts};
use crate::actors::work::ResidentModel;
use crate::actors::work::{BadItem, Completion, Expectations, HostSide, Models, PubMsg, NO_EXPECT};
use crate::actors::{msg, step_counted, Actor, Cx, Idle, Nanos, Progress, SlotTap};
use crate::device::irq;
use crate::device::memmap::reg;
use crate::device::nq::{ExecCompletion, ExecStatus, HarvestError, Harvester};
use crate::device::sequencer::DramMemory;
use crate::fsm::worker::{WorkerCycle, WorkerEvent, WorkerState};
use crate::fsm::xu_health::{XuHealthEvent, XuHealthState};
use crate::hal::{Hal, Ordering};
use crate::ring::{PopError, Signal, SlotMismatch};
use crate::wire::nds::counters::NcCounter;
use crate::wire::nq::{ErrorClass, Source};
use crate::wire::seq_id::SeqId;
use crate::wire::status::NrtStatus;
use crate::wire::work_item::{InferResp, Timespec};

use super::lock;
use super::producer::{Lane, RingWorker, XuParts};

/// Everything else a worker is built from.
pub struct WorkerParts<H: Hal> {
    /// The ring's worker handle.
    pub ring: RingWorker,
    /// The core's NQ harvester.
    pub harvester: Harvester<H>,
    /// The loaded models (what a work item's `mod_ref` names).
    pub models: Arc<Models>,
    /// Items back to the producer lane.
    pub returns: Sender<u16>,
    /// Counter reports to the NDS publisher.
    pub to_pub: Sender<PubMsg>,
    /// Execution timeout (from submission).
    pub timeout: Nanos,
    /// Expected outputs by `WorkItem::expect`.
    pub expected: Arc<Expectations>,
    /// Keep the tag of every completion (tests: exactly-once checks), with
    /// room for this many preallocated.
    pub record_tags: Option<usize>,
}

/// What a worker saw.
#[derive(Clone, Debug, Default)]
pub struct WorkerStats {
    /// Executions completed (popped).
    pub completed: u64,
    /// Outputs compared with the expected ones.
    pub outputs_checked: u64,
    /// Outputs that differed (bit for bit).
    pub outputs_wrong: u64,
    /// Peeked seq_ids that were not the previous one + 1 (FIFO per XU).
    pub fifo_violations: u64,
    /// Failed completion signals (`Popped::status() == NRT_FAILURE`).
    pub signal_failures: u64,
    /// Counter reports kept because the publisher's mailbox was full.
    pub kept_reports: u64,
    /// Completions by status (`SUCCESS` the ones that completed ok).
    pub by_status: StatusCounts,
    /// Completions by reported error class (index = class code).
    pub classes: [u64; 6],
    /// Completions that reported a DMA abort (EXT `HW_ERR_DMA_ABORT`).
    pub dma_aborts: u64,
    /// Completions that reported an NQ overflow (EXT `ERR_SW_NQ_OVERFLOW`).
    pub nq_overflows: u64,
    /// Times this worker brought its XU back to HEALTHY (each full reset).
    pub recoveries: u64,
    /// Executions aborted by a reset (the device was stopped before it
    /// wrote their records).
    pub aborted: u64,
    /// Sum of the reported MAC deltas.
    pub macs: u64,
    /// Sum of the reported device latencies (ns).
    pub device_ns: u64,
    /// Submission-to-completion latency (host ns; virtual in deterministic runs).
    pub latency: LatencyHist,
    /// Tags of completed items in completion order (when enabled).
    pub tags: Vec<u64>,
    /// Executions whose response the work item could not take or give
    /// back (a failed HAL store or load, or bytes that do not parse): each
    /// completes with `NRT_FAILURE`.
    pub resp_failures: u64,
    /// Executions whose work item was bad, by kind (`BadItem::index`).
    pub bad_items: [u64; BadItem::KINDS],
    /// Events the worker's state did not accept (counted, traced, the state
    /// kept: 0 unless something is wrong).
    pub fsm_violations: u64,
    /// Peeks the ring refused (a slot whose seq_id is not the one its cursor
    /// names: the ring's memory was overwritten), each counted once however
    /// many polls meet it; the first degrades the XU. 0 unless something
    /// wrote into the ring.
    pub ring_refusals: u64,
    /// Slots a reset's drain discarded because their seq_id was
    /// overwritten (each completes aborted, its caller's cell unwritten).
    pub discarded: u64,
    /// Executions submitted after this worker had degraded its XU (and
    /// before a recovery): 0, since a degraded XU refuses every schedule
    /// with 101. Exact in deterministic runs, where the submission's
    /// `ts_start` and the degradation are stamped by different polls of one
    /// virtual clock; `xunds sim` checks it.
    pub accepted_while_degraded: u64,
}

#[derive(Clone, Copy, Debug)]
enum Outcome {
    Done(ExecCompletion),
    TimedOut,
    Failed(NrtStatus),
    Aborted,
}

#[derive(Debug, Default)]
struct Current {
    seq: SeqId,
    /// The work item (`None`: the word named none).
    idx: Option<u16>,
    /// The item's host side, read once at `peek` (empty without an item):
    /// the request number, the expected output's index, the caller's tag
    /// and output buffer.
    side: HostSide,
    /// What the pop writes through the slot's `exec_status` (set by
    /// `complete`).
    status: NrtStatus,
    /// When the harvest gives up (`None`: nothing is harvested, or a
    /// timeout that saturates at MAX and so never ends).
    deadline: Option<Nanos>,
    /// The submission time, from the item's `ts_start`.
    ts_start: Timespec,
    /// The model the item's `mod_ref` names (an index into the worker's
    /// `known` models).
    model: Option<usize>,
    /// Why the item is not runnable (it still completes, with its status).
    bad: Option<BadItem>,
    /// The slot's seq_id was overwritten: the ring discards it instead of
    /// popping it (`complete_discarded`).
    discard: bool,
}

/// When a submission stamped `ts` happened on the runner's clock: never
/// later than `now` (a `ts_start` past now, or before the epoch, is not one
/// the schedule path wrote; a deadline from it could be out of reach).
fn submitted_at(ts: Timespec, now: Nanos) -> Nanos {
    u64::try_from(ts.as_nanos()).map_or(now, |t| Nanos(t).min(now))
}

/// This XU's lane, locked, when the worker resets its XU itself.
fn own_lane<H: Hal>(
    lanes: &Option<Arc<[Mutex<Lane<H>>]>>,
    core: u8,
) -> Option<MutexGuard<'_, Lane<H>>> {
    lanes.as_deref()?.get(usize::from(core)).map(lock)
}

/// One core's worker actor.
pub struct WorkerActor<H: Hal> {
    name: String,
    /// What the worker shares with the XU's lane.
    xu: XuParts<H>,
    /// What else the worker was built from (its ring, harvester,
    /// mailboxes, waker and settings).
    p: WorkerParts<H>,
    /// The models this worker has met, each looked up in `models` once (a
    /// model stays once loaded): no lock and no `Arc` clone per execution
    /// (each writes a line other threads read: the lock word every worker
    /// takes, the count beside the model's fields the producer reads).
    known: Vec<Arc<ResidentModel>>,
    /// `Models::removals` when `known` was last valid.
    known_removals: u64,
    /// The lanes, when this worker resets its XU as soon as it is
    /// degraded, whatever the fault (`xunds run --recover`; module docs):
    /// this XU's starts the reset.
    lanes: Option<Arc<[Mutex<Lane<H>>]>>,
    /// The device stopped for a reset: what it has not completed never
    /// will (DRAINING; this worker's own copy of the state, set and cleared
    /// by its own steps, so harvesting reads no shared word).
    draining: bool,
    slots: SlotTap,
    nq_fd: Option<RawFd>,
    state: WorkerState,
    cur: Option<Current>,
    kept: Option<PubMsg>,
    kept_return: Option<u16>,
    /// The peek refusal last counted (`ring_refusals`), until a peek
    /// succeeds again.
    refused: Option<PopError>,
    /// The ring's lockstep guard over this worker's peeks.
    pace: Pace,
    last_seq: Option<u64>,
    bytes: Vec<u8>,
    vals: Vec<f32>,
    stats: WorkerStats,
    /// Reports pushed since the publisher was last woken.
    pub_owed: u32,
    /// Idle polls in a row while an execution is on the device.
    idle_polls: u32,
    /// The NQ interrupt is armed and the NQ was looked at after arming:
    /// the runner may sleep on it.
    nq_armed: bool,
    /// An overflow or corrupt record seen while harvesting: the status and
    /// EXT counter for the next execution that times out (module docs).
    note: Option<(NrtStatus, Option<NcCounter>)>,
    /// When this worker degraded its XU (cleared by a recovery).
    degraded_at: Option<Nanos>,
}

debug_fields!(
    [H: Hal] WorkerActor<H>,
    |s| core = s.xu.core, state = s.state, completed = s.stats.completed; ..
);

/// Idle polls (each followed by a `yield`) a worker spends waiting for the
/// records of the execution on the device before it sleeps on the NQ
/// interrupt.
const HARVEST_YIELDS: u32 = 200;

/// Whether a status makes the XU unrecoverable, and through which event.
fn fatal(status: NrtStatus) -> Option<XuHealthEvent> {
    match status.code() {
        5 => Some(XuHealthEvent::Timeout),
        6 | 1200..=1205 => Some(XuHealthEvent::FatalError),
        _ => None,
    }
}

impl<H: Hal> WorkerActor<H> {
    /// A worker; with `lanes` it resets its XU itself (`recover`).
    pub fn new(
        xu: XuParts<H>,
        p: WorkerParts<H>,
        lanes: Option<Arc<[Mutex<Lane<H>>]>>,
    ) -> WorkerActor<H> {
        let nq_fd = xu.hal.event_fd(xu.map.cores[usize::from(xu.core)].nq_irq);
        let stats = WorkerStats {
            tags: Vec::with_capacity(p.record_tags.unwrap_or(0)),
            ..WorkerStats::default()
        };
        WorkerActor {
            name: format!("worker{}", xu.core),
            known: Vec::new(),
            known_removals: 0,
            lanes,
            draining: false,
            slots: SlotTap::new(xu.trace_slots),
            nq_fd,
            xu,
            p,
            state: WorkerState::Idle,
            cur: None,
            kept: None,
            kept_return: None,
            refused: None,
            pace: Pace::new(),
            last_seq: None,
            bytes: Vec::with_capacity(4096),
            vals: Vec::with_capacity(1024),
            stats,
            pub_owed: 0,
            idle_polls: 0,
            nq_armed: false,
            note: None,
            degraded_at: None,
        }
    }

    /// Whether this idle poll is one after which the runner sleeps on the
    /// NQ interrupt (an execution on the device, nothing kept, the yields
    /// spent, and an fd to sleep on): the interrupt must be armed first.
    fn wants_nq_sleep(&self) -> bool {
        self.state == WorkerState::Current
            && self.kept.is_none()
            && self.kept_return.is_none()
            && self.nq_fd.is_some()
            && self.idle_polls.saturating_add(1) >= HARVEST_YIELDS
    }

    /// What this worker saw.
    pub fn stats(&self) -> &WorkerStats {
        &self.stats
    }

    /// NQ records that matched no expected execution and were dropped (for
    /// example those of a request staged by a schedule call whose submit
    /// then failed).
    #[cfg(any(test, feature = "testkit"))]
    pub fn stray_records(&self) -> u64 {
        self.p.harvester.stray_records()
    }

    fn wake_publisher(&mut self) {
        self.pub_owed = 0;
        self.xu.pub_wake.wake();
    }

    /// Step the cycle, after the HAL operations made since the last step
    /// (so each step in a trace follows what it did). An event the state
    /// does not accept is counted (`fsm_violations`), traced, and leaves
    /// the state as it was (a state that matches what the worker holds: the
    /// safe one).
    fn step(&mut self, e: WorkerEvent, cx: &mut Cx<'_>) {
        self.xu.tap.drain(cx);
        self.step_drained(e, cx);
    }

    /// [`step`](Self::step) where no HAL operation can have been made since
    /// the HAL tap was last drained (the steps after the response is stored
    /// move mailboxes and the ring, neither of them HAL memory): the same
    /// trace without taking the HAL log's lock for nothing.
    fn step_drained(&mut self, e: WorkerEvent, cx: &mut Cx<'_>) {
        self.slots.drain(cx);
        let id = Some(u64::from(self.xu.core));
        step_counted::<WorkerCycle>(&mut self.state, e, id, &mut self.stats.fsm_violations, cx);
    }

    /// Feed the cycle an event from outside its driver (tests of the
    /// violation path: a refused event must be counted and change nothing).
    #[doc(hidden)]
    #[cfg(any(test, feature = "testkit"))]
    pub fn inject_event(&mut self, e: WorkerEvent, cx: &mut Cx<'_>) {
        self.step(e, cx);
    }

    /// Deliver the kept counter report (R1). `true` when one went.
    fn flush_kept(&mut self) -> bool {
        let Some(m) = self.kept.take() else {
            return false;
        };
        self.kept = self.p.to_pub.push(m).err().map(|full| full.0);
        if self.kept.is_none() {
            self.xu.pub_wake.wake();
        }
        self.kept.is_none()
    }

    /// A peek found a slot (or a reset's drain takes the one refused): the
    /// refusal is over, and the cycle wakes (if asleep) and peeks.
    fn peeked(&mut self, cx: &mut Cx<'_>) {
        self.refused = None;
        if self.state == WorkerState::Sleeping {
            self.step(WorkerEvent::Wake, cx);
        }
        self.step(WorkerEvent::Peek, cx);
    }

    /// Peek the next triggered slot and start harvesting it. `false` when
    /// nothing is triggered (after announcing sleep and looking again).
    fn start_next(&mut self, cx: &mut Cx<'_>) -> bool {
        let (seq, word) = match self.pace.peek(&mut self.p.ring) {
            Ok(v) => (v.seq, v.exec_info),
            Err(PopError::Empty) => {
                if self.state == WorkerState::Idle {
                    self.step(WorkerEvent::Sleep, cx);
                }
                if self.pub_owed > 0 {
                    self.wake_publisher();
                }
                self.xu.has_work.prepare_sleep();
                if self.p.ring.available() == 0 {
                    return false;
                }
                self.xu.has_work.awake();
                return true; // look again on the next round
            }
            Err(e) => {
                // The slot at the head is not the one the cursors name (its
                // seq_id was overwritten): nothing on this ring can be
                // popped until a reset re-initialises it. Counted and traced
                // once per refusal (every poll meets the same one), and the
                // XU degrades, so schedules are refused at once instead of
                // queueing behind it.
                if self.refused.as_ref() != Some(&e) {
                    self.stats.ring_refusals += 1;
                    let xu = self.xu.core;
                    cx.event("ring_refusal", format_args!("xu={xu} peek: {e}"));
                    self.refused = Some(e);
                    if self.xu.health.state() == XuHealthState::Healthy {
                        self.degrade(XuHealthEvent::FatalError, false, cx);
                    }
                }
                // A reset's drain: the device has stopped, so the slot can go.
                // Otherwise nothing can be done here until a reset starts:
                // announce sleep, so that its wake-up is not lost (the look
                // once more is `idle`, which yields once a reset runs).
                return match e {
                    PopError::Mismatch(SlotMismatch { expected, .. }) if self.draining => {
                        self.complete_discarded(expected, cx)
                    }
                    _ => {
                        self.xu.has_work.prepare_sleep();
                        false
                    }
                };
            }
        };
        self.peeked(cx);
        let in_order = self.last_seq.is_none_or(|prev| seq.seq_num() == prev + 1);
        self.stats.fifo_violations += u64::from(!in_order);
        self.last_seq = Some(seq.seq_num());
        let now = cx.now();
        let (idx, word_bad) = match self.xu.pool.index_of(word) {
            Ok(idx) => (idx, None),
            // A word that names no item: the item the lane submitted under
            // this seq_id (the side table knows it) still completes, with
            // the word's status, and goes back to the pool.
            Err(bad) => match self.xu.pool.find_seq(seq.0) {
                Some(idx) => (idx, Some(bad)),
                None => return self.complete_foreign(seq, word, bad, cx),
            },
        };
        let side = self.xu.pool.take_side(idx);
        // Every decision the ABI has a field for comes from the item's bytes
        // (the HAL tap was drained by the `peek` step: nothing since).
        let checked = match word_bad {
            Some(bad) => Err(bad),
            None => self
                .xu
                .pool
                .load(&*self.xu.hal, idx, self.xu.core)
                .and_then(|info| {
                    let m = self.model_index(info.mod_ref);
                    Ok((info, m.ok_or(BadItem::UnknownModRef(info.mod_ref))?))
                }),
        };
        self.xu.tap.drain(cx);
        let (ts_start, model, bad) = match checked {
            Ok((info, m)) => (info.resp.ts_start, Some(m), None),
            Err(bad) => {
                let at = self.xu.pool.relative(word);
                msg!(
                    cx,
                    "seq={:#x} exec_info=items{at:+#x} item={idx}: {bad:?}",
                    seq.0
                );
                (Timespec::from_nanos(now.as_u64()), None, Some(bad))
            }
        };
        // The request was staged and doorbelled all the same: harvest it.
        // The deadline runs from the submission (a bad item's `ts_start`
        // is now: its own is not trusted), never from later than now.
        let from = submitted_at(ts_start, now);
        let deadline = from.saturating_add(self.p.timeout);
        // Mutant (`xunds sim` must find it): the execution on work item 0,
        // where the pool wraps, gets twice its timeout.
        #[cfg(xunds_mutant = "deadline_late_at_wrap")]
        let deadline = if idx == 0 {
            deadline.saturating_add(self.p.timeout)
        } else {
            deadline
        };
        self.stats.accepted_while_degraded += u64::from(self.degraded_at.is_some_and(|d| from > d));
        self.p
            .harvester
            .expect(side.exec_id, side.engines, deadline.as_u64());
        self.cur = Some(Current {
            seq,
            idx: Some(idx),
            side,
            deadline: Some(deadline).filter(|&d| d != Nanos::MAX),
            ts_start,
            model,
            bad,
            ..Current::default()
        });
        true
    }

    /// The index in `known` of the model `mod_ref` names, looked up in the
    /// loaded models the first time; `None` unless it is resident on this
    /// core.
    fn model_index(&mut self, mod_ref: u64) -> Option<usize> {
        // An unload since the cache was filled: it may hold the unloaded
        // model, whose executions must now be refused (INVALID_HANDLE).
        // Called between executions only: no `Current` holds an index.
        let removals = self.p.models.removals();
        if removals != self.known_removals {
            debug_assert!(self.cur.as_ref().is_none_or(|c| c.model.is_none()));
            self.known.clear();
            self.known_removals = removals;
        }
        let named = |m: &Arc<ResidentModel>| u64::from(m.handle) == mod_ref;
        let i = match self.known.iter().position(named) {
            Some(i) => i,
            None => {
                self.known.push(self.p.models.get(mod_ref)?);
                self.known.len() - 1
            }
        };
        (self.known[i].per_core.len() > usize::from(self.xu.core)).then_some(i)
    }

    /// Complete a slot whose `exec_info` names no item and that no item was
    /// submitted under: nothing staged, nothing to harvest or return.
    fn complete_foreign(&mut self, seq: SeqId, word: u64, bad: BadItem, cx: &mut Cx<'_>) -> bool {
        let at = self.xu.pool.relative(word);
        msg!(
            cx,
            "seq={:#x}: exec_info items{at:+#x}: {bad:?}, no item",
            seq.0
        );
        self.cur = Some(Current {
            seq,
            ts_start: Timespec::from_nanos(cx.now().as_u64()),
            bad: Some(bad),
            ..Current::default()
        });
        self.complete(Outcome::Failed(bad.status()), cx);
        true
    }

    /// DRAINING, with the slot at the head refused by the peek (its seq_id
    /// was overwritten): the device has stopped, so nothing more will come
    /// for it. Its execution completes aborted, on the item the lane
    /// submitted under that seq_id (the pool's side table: none of the
    /// slot's words is trusted), and the ring discards the slot
    /// (`Worker::discard`): no status reaches the caller's cell, and the
    /// drain goes on to the slots behind it.
    fn complete_discarded(&mut self, seq: SeqId, cx: &mut Cx<'_>) -> bool {
        self.peeked(cx);
        self.last_seq = Some(seq.seq_num());
        let idx = self.xu.pool.find_seq(seq.0);
        let side = idx.map(|i| self.xu.pool.take_side(i)).unwrap_or_default();
        // The submission time from the item (the pool's memory, not the
        // ring's), bounded by now as for any item; now without one.
        let now = cx.now();
        let from = idx
            .and_then(|i| self.xu.pool.load(&*self.xu.hal, i, self.xu.core).ok())
            .map_or(now, |info| submitted_at(info.resp.ts_start, now));
        self.xu.tap.drain(cx);
        self.stats.discarded += 1;
        let xu = self.xu.core;
        msg!(cx, "xu={xu} seq={:#x}: slot discarded, item {idx:?}", seq.0);
        self.cur = Some(Current {
            seq,
            idx,
            side,
            ts_start: Timespec::from_nanos(from.as_u64()),
            discard: true,
            ..Current::default()
        });
        self.complete(Outcome::Aborted, cx);
        true
    }

    /// Stop expecting execution `id`'s records: it ends as `outcome`.
    fn abandon(&mut self, id: u32, outcome: Outcome) -> Outcome {
        let expected = self.p.harvester.abandon(id);
        debug_assert!(expected, "exec {id} was not expected");
        outcome
    }

    /// Harvest until the current execution ends (`Some`) or nothing more is
    /// available now (`None`).
    fn harvest(&mut self, cx: &mut Cx<'_>) -> Option<Outcome> {
        let now = cx.now().as_u64();
        let cur_id = self.cur.as_ref().map(|c| c.side.exec_id)?;
        loop {
            match self.p.harvester.poll(now) {
                Ok(None) if self.draining => return Some(self.abandon(cur_id, Outcome::Aborted)),
                Ok(None) => return None,
                Ok(Some(Ok(c))) if c.exec_id == cur_id => return Some(Outcome::Done(c)),
                Ok(Some(Err(HarvestError::Timeout { exec_id, .. }))) if exec_id == cur_id => {
                    return Some(Outcome::TimedOut)
                }
                Ok(Some(Ok(c))) => msg!(cx, "stray completion exec_id={}", c.exec_id),
                Ok(Some(Err(HarvestError::Timeout { exec_id, .. }))) => {
                    msg!(cx, "stray timeout exec_id={exec_id}");
                }
                Ok(Some(Err(e))) => {
                    let ext = match e {
                        HarvestError::Overflow { .. } => Some(NcCounter::ErrSwNqOverflow),
                        _ => None,
                    };
                    let status = e.suggested_status();
                    msg!(cx, "xu={} harvest: {e}", self.xu.core);
                    self.note.get_or_insert((status, ext));
                    self.degrade(XuHealthEvent::FatalError, false, cx);
                }
                Err(e) => {
                    // The execution completes failed here: stop expecting
                    // it, or its entry stays ahead of the next one's (and a
                    // reset's drain, waiting for no entry, never ends).
                    msg!(cx, "xu={} harvest: {e}", self.xu.core);
                    return Some(self.abandon(cur_id, Outcome::Failed(NrtStatus::HW_ERROR)));
                }
            }
        }
    }

    /// Everything after the harvest, in the ABI's order (`fsm::worker`).
    fn complete(&mut self, outcome: Outcome, cx: &mut Cx<'_>) {
        let Some(mut cur) = self.cur.take() else {
            return;
        };
        let now = cx.now();
        let (mut status, event, done) = match outcome {
            Outcome::Done(c) => (c.suggested_status(), WorkerEvent::ExecDone, Some(c)),
            Outcome::TimedOut => (NrtStatus::TIMEOUT, WorkerEvent::TimedOut, None),
            Outcome::Failed(s) => (s, WorkerEvent::TimedOut, None),
            Outcome::Aborted => (
                NrtStatus::EXEC_UNIT_UNRECOVERABLE,
                WorkerEvent::Aborted,
                None,
            ),
        };
        // An error record's class, and whether the DMA wrote it (an abort).
        let (mut class, dma) = match done.map(|c| c.status) {
            Some(ExecStatus::Error { class, source, .. }) => {
                (Some(class), Some(source == Source::Dma))
            }
            _ => (None, None),
        };
        let mut ext = (dma == Some(true)).then_some(NcCounter::HwErrDmaAbort);
        self.stats.aborted += u64::from(matches!(outcome, Outcome::Aborted));
        if matches!(outcome, Outcome::TimedOut | Outcome::Aborted) {
            if let Some((s, e)) = self.note.take() {
                status = s;
                ext = e.or(ext);
                if s == NrtStatus::HW_ERROR {
                    class = Some(ErrorClass::Hw);
                }
            }
        }
        // What the device did decides the XU's health and the device's
        // counters (a DMA abort, an NQ overflow), whatever the item was.
        let device_status = status;
        if let Some(bad) = cur.bad {
            // The item decides what the caller sees: its execution completes
            // with the bad item's status whatever the device did with the
            // staged request.
            status = bad.status();
            class = None;
            self.stats.bad_items[bad.index()] += 1;
        }
        self.step(event, cx);
        if let Some(ev) = fatal(device_status) {
            // A hardware error the device reported in its own record (not a
            // DMA abort): every queue is in step, so the XU may come back.
            let intact = device_status == NrtStatus::HW_ERROR && dma == Some(false);
            self.degrade(ev, intact, cx);
        }
        // MACs: what the sequencer reported for this request (written before
        // its NQ records, whose Acquire the harvest did); none without them.
        let (macs, dev_start, dev_cycles, records) = done.map_or((0, 0, 0, 0), |c| {
            let at = self.xu.map.request_macs_off(self.xu.core, cur.side.exec_id) as usize;
            let macs = self
                .xu
                .hal
                .load_u64(self.xu.map.dram, at, Ordering::Relaxed);
            let dev: (u64, u64) = (c.start_cycle.into(), c.device_cycles().into());
            (macs.unwrap_or(0), dev.0, dev.1, c.reported.count_ones())
        });

        // fill_resp: outputs (a good item's only: SUCCESS is the device's
        // and the item's word), then infer_resp_t in the work item.
        let mut num_outputs = 0;
        let out = cur.side.out.take();
        if let (NrtStatus::SUCCESS, Some(m), Some(idx)) = (status, cur.model, cur.idx) {
            let model = &self.known[m];
            let io = model.per_core[usize::from(self.xu.core)].io_pa[usize::from(idx)];
            let mem = DramMemory::new(&*self.xu.hal, &self.xu.map);
            self.vals.clear();
            for t in &model.outputs {
                self.bytes.clear();
                self.bytes.resize(t.elems as usize * 4, 0);
                if mem.read_bytes(io + t.offset, &mut self.bytes).is_err() {
                    status = NrtStatus::HW_ERROR;
                    break;
                }
                num_outputs += 1;
                let vals = self.bytes.chunks_exact(4);
                self.vals
                    .extend(vals.map(|w| f32::from_le_bytes(w.try_into().unwrap_or_default())));
            }
            if status == NrtStatus::SUCCESS {
                if let Some(out) = &out {
                    for (i, v) in self.vals.iter().enumerate() {
                        out.store(i, *v);
                    }
                }
                if cur.side.expect != NO_EXPECT {
                    self.stats.outputs_checked += 1;
                    let want = self.p.expected.outputs.get(cur.side.expect as usize);
                    let got = self.vals.iter().map(|x| x.to_bits());
                    let same = want.is_some_and(|w| w.iter().map(|x| x.to_bits()).eq(got));
                    self.stats.outputs_wrong += u64::from(!same);
                }
            }
        }
        // The runner reads its clock once per poll: a submission picked up in
        // the same poll can be stamped later than that; a completion is never
        // stamped before its submission.
        let ts_end = Timespec::from_nanos(now.as_u64()).max(cur.ts_start);
        let resp = InferResp {
            status,
            err_class: class,
            nq_errors: u32::from(class.is_some()),
            nq_records: records,
            ts_start: cur.ts_start,
            ts_end,
            device_start_ns: dev_start,
            device_end_ns: dev_start + dev_cycles,
            mac_count: macs,
            num_outputs,
            device_tpb_idx: u16::from(self.xu.core),
            ..InferResp::default()
        };
        // The response is the record: stored into the item (two runs),
        // read back, and everything after (the caller's copy, the counters,
        // the latency) parses those bytes. (The HAL operations since the
        // last step, the MACs and outputs read, are drained with the
        // response's: no trace event comes between them.)
        let stored = match cur.idx {
            Some(idx) => self
                .xu
                .pool
                .store_resp(&*self.xu.hal, idx, &resp, cur.bad.is_some())
                .map_err(|e| e.to_string())
                .and_then(|b| {
                    InferResp::parse(&b)
                        .map(|p| (b, p))
                        .map_err(|e| format!("read back: {e}"))
                }),
            None => Ok((resp.encode(), resp)),
        };
        self.xu.tap.drain(cx);
        // A response the item does not hold (its store or read-back failed,
        // or what came back does not parse) is no record: the execution
        // completes with `NRT_FAILURE` (a host operation failed, as a failed
        // completion signal does, docs/abi.md §1.8; the device and its
        // queues are fine, so the XU stays healthy), counted and traced, and
        // that response is what the caller and the counters see.
        let (bytes, parsed) = stored.unwrap_or_else(|e| {
            self.stats.resp_failures += 1;
            cx.event(
                "resp_failure",
                format_args!("xu={} seq={:#x}: response: {e}", self.xu.core, cur.seq.0),
            );
            let failed = InferResp {
                status: NrtStatus::FAILURE,
                ..resp
            };
            (failed.encode(), failed)
        });
        if let Some(out) = out {
            out.store_resp(&bytes);
        }
        if self.p.record_tags.is_some() && cur.idx.is_some() {
            self.stats.tags.push(cur.side.tag);
        }
        cur.model = None;
        self.step_drained(WorkerEvent::FillResp, cx);
        // write_status: fixed here and in infer_resp_t; the ring writes it
        // through the slot's exec_status inside `pop`, before exec_head moves.
        let status = parsed.status;
        cur.status = status;
        let (seq, exec_id, idx) = (cur.seq, cur.side.exec_id, cur.idx);
        self.cur = Some(cur);
        self.step_drained(WorkerEvent::WriteStatus, cx);
        // report_counters (R1: keep it if the mailbox is full).
        let msg = PubMsg::Completed(Completion {
            core: self.xu.core,
            resp: bytes,
            ext,
        });
        match self.p.to_pub.push(msg) {
            Ok(()) => {
                // Wake the publisher only when its mailbox may be filling
                // up (half of it pushed since the last wake-up: counted
                // here, not read from the receiver's cursor, a line the
                // publisher writes); the rest is flushed when this worker
                // runs out of work (it needs the counters timely only then).
                self.pub_owed += 1;
                if self.pub_owed as usize >= self.p.to_pub.capacity() / 2 {
                    self.wake_publisher();
                }
            }
            Err(full) => {
                self.kept = Some(full.0);
                self.stats.kept_reports += 1;
            }
        }
        self.step_drained(WorkerEvent::ReportCounters, cx);
        let (macs, dev_ns) = (parsed.mac_count, parsed.latency_device_ns());
        let st = &mut self.stats;
        st.by_status.add(status, 1);
        if let Some(c) = parsed.err_class {
            st.classes[c as usize] += 1;
        }
        st.dma_aborts += u64::from(ext == Some(NcCounter::HwErrDmaAbort));
        st.nq_overflows += u64::from(ext == Some(NcCounter::ErrSwNqOverflow));
        // Wrapping, as the slab's MAC_COUNT adds it: the word is device
        // memory an engine may have written anything into.
        st.macs = st.macs.wrapping_add(macs);
        st.device_ns += dev_ns;
        st.latency.record(parsed.latency_total_ns());
        msg!(
            cx,
            "completed xu={} seq={:#x} exec_id={exec_id} status={status} macs={macs} device_ns={dev_ns}",
            self.xu.core,
            seq.0
        );
        // Mutant (`xunds sim` must find it): a timed-out execution's item is
        // returned twice.
        #[cfg(xunds_mutant = "timeout_double_free")]
        if let (NrtStatus::TIMEOUT, Some(i)) = (status, idx) {
            let _ = self.p.returns.push(i);
        }
        self.kept_return = idx;
        self.finish_cycle(cx);
    }

    /// return_item, pop, signal_waiter. `false` while the return is refused
    /// (the pool's mailbox is sized so that it never is). The caller has
    /// drained the HAL tap (these steps make no HAL operation).
    fn finish_cycle(&mut self, cx: &mut Cx<'_>) -> bool {
        if let Some(idx) = self.kept_return.take() {
            if let Err(full) = self.p.returns.push(idx) {
                self.kept_return = Some(full.0);
                return false;
            }
        }
        self.step_drained(WorkerEvent::ReturnItem, cx);
        let Some(cur) = self.cur.take() else {
            return true;
        };
        let popped = if cur.discard {
            let seq = self.p.ring.discard().ok();
            seq.map(|seq| (seq, Signal::NoWaiter))
        } else {
            self.p.ring.pop(cur.status).ok().map(|p| (p.seq, p.signal))
        };
        match popped {
            Some((seq, signal)) => {
                self.slots.popped(seq.seq_num());
                self.stats.fifo_violations += u64::from(seq != cur.seq);
                self.step_drained(WorkerEvent::Pop, cx);
                if let Signal::Failed(_) = signal {
                    self.stats.signal_failures += 1;
                    msg!(cx, "{signal:?}");
                }
                self.step_drained(WorkerEvent::SignalWaiter, cx);
            }
            None => {
                // The ring refused the pop: counted and traced
                // like any refused event; the worker goes back to IDLE (the
                // slot is not its to retry).
                cx.refused(
                    &mut self.stats.fsm_violations,
                    format_args!("pop of seq={:#x} refused", cur.seq.0),
                );
                self.state = WorkerState::Idle;
            }
        }
        self.stats.completed += 1;
        self.slots.drain(cx);
        true
    }
}

impl<H: Hal> WorkerActor<H> {
    /// Degrade the XU (`intact`: the fault left every queue in step). An
    /// event its state does not accept is counted and traced. With
    /// `recover`, under the lane's lock, the reset starts in the same
    /// critical section: no schedule call ever sees the XU DEGRADED (it
    /// would be refused with 101 and its execution given up).
    fn degrade(&mut self, ev: XuHealthEvent, intact: bool, cx: &mut Cx<'_>) {
        let mut lane = own_lane(&self.lanes, self.xu.core);
        let r = self.xu.health.degrade(ev, intact, self.xu.core, cx);
        if matches!(r, Ok(true)) {
            self.degraded_at = Some(cx.now());
        }
        let r = match (r, lane.as_mut()) {
            (Ok(_), Some(l)) if self.xu.health.state() == XuHealthState::Degraded => {
                l.begin_reset(cx).map(drop)
            }
            (r, _) => r.map(drop),
        };
        drop(lane);
        cx.counted(&mut self.stats.fsm_violations, r);
    }

    /// Feed the XU's health an event through the worker's own path (tests
    /// of the violation path: a refused event is counted and changes
    /// nothing).
    #[cfg(any(test, feature = "testkit"))]
    #[doc(hidden)]
    pub fn inject_health_event(&mut self, e: XuHealthEvent, cx: &mut Cx<'_>) {
        match e {
            XuHealthEvent::Timeout | XuHealthEvent::FatalError => self.degrade(e, false, cx),
            _ => _ = self.reset_step(e, cx),
        }
    }

    /// One reset step (`xu_health`), traced; a refused one is counted.
    fn reset_step(&mut self, e: XuHealthEvent, cx: &mut Cx<'_>) -> bool {
        let r = self.xu.health.step(e, self.xu.core, cx);
        cx.counted(&mut self.stats.fsm_violations, r)
    }

    /// The device acknowledged this core's last reset request
    /// (`RESET_ACK == RESET_REQ`), a stop (odd) when `stop`, else a
    /// re-initialisation (even).
    fn reset_acked(&self, stop: bool) -> bool {
        let hal = &*self.xu.hal;
        let Ok(req) = hal.load_u32(self.xu.regs(), reg::RESET_REQ, Ordering::Relaxed) else {
            return false;
        };
        // Ordering: Acquire pairs with the device's Release store of
        // RESET_ACK in `Sequencer::reset`: after a stop every record the
        // device wrote is readable; after a re-initialisation the NQ rings
        // are zeroed.
        let ack = hal.load_u32(self.xu.regs(), reg::RESET_ACK, Ordering::Acquire);
        ack.is_ok_and(|ack| ack == req && (req % 2 == 1) == stop)
    }

    /// Nothing of this XU is in flight: no current execution, nothing on
    /// its ring, nothing expected from the device.
    fn drained(&self) -> bool {
        self.cur.is_none()
            && matches!(self.state, WorkerState::Idle | WorkerState::Sleeping)
            && self.p.ring.queue().in_flight() == 0
            && self.p.harvester.in_flight() == 0
    }

    /// Drive the XU's reset (module docs). `true` when a step was taken.
    fn drive_reset(&mut self, cx: &mut Cx<'_>) -> bool {
        match self.xu.health.state() {
            XuHealthState::Healthy => {
                // Brought back from outside (`System::recover`).
                self.degraded_at = None;
                false
            }
            XuHealthState::Degraded => {
                let begun = own_lane(&self.lanes, self.xu.core).map(|mut l| l.begin_reset(cx));
                begun.is_some_and(|r| cx.counted(&mut self.stats.fsm_violations, r))
            }
            XuHealthState::Stopping if self.reset_acked(true) => {
                self.draining = true;
                self.reset_step(XuHealthEvent::DeviceStopped, cx)
            }
            XuHealthState::Draining if self.drained() => {
                if !self.xu.request_reset(cx) {
                    return false;
                }
                self.xu.device_wake.wake();
                self.reset_step(XuHealthEvent::Drained, cx)
            }
            XuHealthState::Resetting if self.reset_acked(false) => {
                self.p.harvester.reset();
                self.note = None;
                self.draining = false;
                if self.reset_step(XuHealthEvent::DeviceReset, cx) {
                    self.degraded_at = None;
                    self.stats.recoveries += 1;
                    msg!(cx, "xu={} reset done", self.xu.core);
                }
                true
            }
            // Waiting for the device (or, DRAINING, for the executions in
            // flight).
            XuHealthState::Stopping | XuHealthState::Draining | XuHealthState::Resetting => false,
        }
    }
}

impl<H: Hal> Actor for WorkerActor<H> {
    fn name(&self) -> &str {
        &self.name
    }

    fn poll(&mut self, cx: &mut Cx<'_>) -> Progress {
        self.xu.has_work.awake();
        let mut made = self.drive_reset(cx);
        made |= self.flush_kept();
        for _ in 0..64 {
            match self.state {
                WorkerState::Idle | WorkerState::Sleeping => {
                    // R2: start nothing new while a report is kept.
                    if self.kept.is_some() || !self.start_next(cx) {
                        break;
                    }
                    made = true;
                }
                WorkerState::Current => match self.harvest(cx) {
                    Some(outcome) => {
                        self.complete(outcome, cx);
                        made = true;
                    }
                    None => break,
                },
                WorkerState::CountersReported => {
                    // `finish_cycle` steps without draining the HAL tap.
                    self.xu.tap.drain(cx);
                    if !self.finish_cycle(cx) {
                        break;
                    }
                    made = true;
                }
                // The remaining states are passed through inside `complete`.
                _ => break,
            }
        }
        self.nq_armed = false;
        if !made && self.wants_nq_sleep() {
            // About to sleep on the NQ interrupt: arm it, then look once
            // more (device::irq). A failed arm means no sleep: keep yielding.
            self.nq_armed = irq::arm(&*self.xu.hal, self.xu.regs()).is_ok();
            if self.nq_armed {
                if let Some(outcome) = self.harvest(cx) {
                    self.complete(outcome, cx);
                    made = true;
                    self.nq_armed = false;
                }
            }
        }
        self.xu.tap.drain(cx);
        self.idle_polls = if made {
            0
        } else {
            self.idle_polls.saturating_add(1)
        };
        Progress::of(made)
    }

    fn idle(&self) -> Idle {
        match self.state {
            _ if self.kept.is_some() || self.kept_return.is_some() => Idle::Yield,
            // Waiting for the device to acknowledge a reset step: no fd
            // says when (the NQ interrupt does, if armed).
            _ if matches!(
                self.xu.health.state(),
                XuHealthState::Stopping | XuHealthState::Draining | XuHealthState::Resetting
            ) && !self.nq_armed =>
            {
                Idle::Yield
            }
            // An execution is on the device: its records come within one
            // execution time, so yield a while before sleeping on the NQ
            // interrupt (a sleep and wake-up per execution would cost more
            // than the wait).
            WorkerState::Current if self.nq_armed => self.nq_fd.map_or(Idle::Yield, Idle::Fd),
            WorkerState::Current => Idle::Yield,
            _ => Idle::Fd(self.xu.has_work.fd()),
        }
    }

    fn next_deadline(&self) -> Option<Nanos> {
        self.cur.as_ref().and_then(|c| c.deadline)
    }
}
