//! The Producer: the submit funnel (docs/abi.md §1.10, `fsm::funnel`) and
//! the workload driver of `xunds run`.
//!
//! [`Lane`] is one XU's producer side: its ring `Producer` (owner of
//! `scheduled_tail` / `scheduled_head`), its device [`Stager`], its work-item
//! free list and the mailbox the worker returns items through. The public
//! API keeps each lane behind a `Mutex` (the runtime's `submit_work_lock`) and
//! calls [`Lane::schedule`] on the caller's thread; [`ProducerActor`] calls
//! the same method from its `poll`. `schedule` never blocks and walks the
//! funnel in the ABI's order (docs/abi.md §1.10), always:
//!
//! 1. admit (`xu_health`): a degraded XU refuses with 101, one being reset
//!    with `NRT_QUEUE_FULL` (retry later);
//! 2. `check_space`: the ring has a free slot, else `NRT_QUEUE_FULL`;
//! 3. `take_item`: a work item from the pool (the input is written into the
//!    item's IO area and the 208-byte work item filled);
//! 4. `stage_and_doorbell`: the device request is staged and the doorbell
//!    rung (the device is woken);
//! 5. `submit`: the slot is written and `scheduled_tail` published;
//! 6. `trigger`: `scheduled_head` is published;
//! 7. `wake_worker`: the worker's has-work eventfd (only if it sleeps).
//!
//! A refusal before the doorbell changes nothing the device or the worker can
//! see (the item goes back to the free list) and counts
//! `INFER_FAILED_TO_QUEUE` through the NDS publisher. Refusal counts are
//! aggregated locally and sent as one message; when the publisher's mailbox
//! is full they stay aggregated and go with the next attempt (deadlock rule
//! R1: nothing is dropped, nothing blocks).

use std::sync::{Arc, Mutex, MutexGuard};

use super::lock;

use crate::actors::mailbox::{Receiver, Sender};
use crate::actors::publisher::PubStats;
use crate::actors::wake::Waker;
use crate::actors::work::{
    HealthCell, HealthViolation, HostSide, ItemPool, OutputBuf, PubMsg, ResidentModel,
};
use crate::actors::{msg, Actor, Cx, HalTap, Idle, Nanos, Progress, SlotTap};
use crate::device::memmap::reg;
use crate::device::memmap::MemMap;
use crate::device::sequencer::DramMemory;
use crate::device::staging::Stager;
use crate::fsm::funnel::{self, FunnelEvent};
use crate::fsm::step_traced;
use crate::fsm::xu_health::{self, XuHealth, XuHealthEvent, XuHealthState};
use crate::hal::eventfd::EventFd;
use crate::hal::{Hal, Ordering, RegionHandle};
use crate::ring::{Armed, StatusArc, TriggerError, XuQueue};
use crate::wire::seq_id::SeqId;
use crate::wire::status::NrtStatus;
use crate::wire::work_item::{Timespec, TpbExecutionInfo};

/// The ring handles the system uses: `exec_info` words over the byte-exact
/// mapped `xu_queue_t`.
pub type RingProducer = crate::ring::Producer<RingQueue>;
/// The worker's ring handle.
pub type RingWorker = crate::ring::Worker<RingQueue>;
/// The shared query side.
pub type RingQueue = crate::sync::Arc<XuQueue<u64>>;

/// One schedule call's arguments.
#[derive(Debug)]
pub struct Request<'a> {
    /// The model (must be resident on the lane's core).
    pub model: &'a Arc<ResidentModel>,
    /// The concatenated inputs (`model.input_len()` values).
    pub input: &'a [f32],
    /// The caller's status cell (the slot's `exec_status`).
    pub status: Option<StatusArc>,
    /// Where the worker copies the outputs.
    pub out: Option<Arc<OutputBuf>>,
    /// The expected-output index the worker checks, or `work::NO_EXPECT`.
    pub expect: u32,
    /// The caller's tag (kept in the work item).
    pub tag: u64,
}

crate::actors::stats::counters! {
    /// Counters of one lane (all schedule calls, whoever made them), kept
    /// under the lane's lock.
    pub struct LaneStats {
        /// Accepted (a seq_id was returned).
        pub accepted,
        /// Refused with `NRT_QUEUE_FULL`, or with `NRT_FAILURE` (a stage or
        /// submit failure: refused all the same, and counted as failed to
        /// queue).
        pub refused_full,
        /// Refused with `NRT_EXEC_UNIT_UNRECOVERABLE`.
        pub refused_unrecoverable,
    }
}

/// What one XU's lane and worker are both built from.
pub struct XuParts<H: Hal> {
    /// The core (= XU index).
    pub core: u8,
    /// The HAL.
    pub hal: Arc<H>,
    /// The memory map.
    pub map: Arc<MemMap>,
    /// The core's work items.
    pub pool: Arc<ItemPool>,
    /// The XU's health.
    pub health: Arc<HealthCell>,
    /// The device proxy's doorbell waker.
    pub device_wake: Arc<Waker>,
    /// The worker's has-work waker (the lane wakes it after a trigger).
    pub has_work: Arc<Waker>,
    /// The NDS publisher's waker.
    pub pub_wake: Arc<Waker>,
    /// HAL trace forwarding (each step is preceded by the HAL operations
    /// it made).
    pub tap: HalTap,
    /// Record slot transitions (deterministic traced runs).
    pub trace_slots: bool,
}

impl<H: Hal> XuParts<H> {
    /// This core's register block.
    pub(crate) fn regs(&self) -> RegionHandle {
        self.map.cores[usize::from(self.core)].regs
    }

    /// Ask the device for this core's next reset step (`RESET_REQ` + 1:
    /// odd asks it to stop, even to re-initialise its NQ rings); a refused
    /// request is traced and `false`.
    pub(crate) fn request_reset(&self, cx: &mut Cx<'_>) -> bool {
        // Ordering: Release pairs with the device's Acquire load of
        // RESET_REQ in `Sequencer::poll_one`: what the caller did before
        // (the lane's last staging, the worker's last NQ read) is done
        // before the device acts on the request.
        let r = self
            .hal
            .fetch_add_u32(self.regs(), reg::RESET_REQ, 1, Ordering::Release);
        if let Err(e) = &r {
            msg!(cx, "xu={} reset request: {e}", self.core);
        }
        r.is_ok()
    }
}

/// Everything else a lane is built from.
pub struct LaneParts<H: Hal> {
    /// The ring's producer handle.
    pub ring: RingProducer,
    /// The core's stager.
    pub stager: Stager<H>,
    /// Items coming back from the worker.
    pub returns: Receiver<u16>,
    /// Refusal counts to the NDS publisher.
    pub to_pub: Sender<PubMsg>,
}

/// One XU's producer side.
pub struct Lane<H: Hal> {
    /// What the lane shares with the XU's worker.
    xu: XuParts<H>,
    /// What else the lane was built from (its ring, stager, mailboxes).
    p: LaneParts<H>,
    free: Vec<u16>,
    /// Refusals not yet handed to the publisher.
    pending: u32,
    corrupt_word: Option<fn(u64) -> u64>,
    inject: Option<FunnelEvent>,
    scratch: Vec<u8>,
    stats: LaneStats,
    slots: SlotTap,
    #[cfg(xunds_mutant = "degraded_accepts_one_more")]
    mutant_grace: bool,
}

debug_fields!([H: Hal] Lane<H>, |s| core = s.xu.core, free = s.free.len(); ..);

/// A lane's work-item pool as the lane's audit finds it once a run has
/// drained (`xunds sim` checks every item is free exactly once).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolAudit {
    /// Items in the pool.
    pub items: usize,
    /// Distinct items on the free list.
    pub free: usize,
    /// Items on the free list more than once (an item freed twice).
    pub duplicates: usize,
}

impl<H: Hal> Lane<H> {
    /// Take back every item the worker returned, then count the free list:
    /// once a run has drained, every item is free exactly once (`xunds sim`
    /// checks it).
    pub fn pool_audit(&mut self) -> PoolAudit {
        self.refill();
        let items = self.xu.pool.len();
        let mut distinct = self.free.clone();
        distinct.sort_unstable();
        distinct.dedup();
        distinct.retain(|&i| usize::from(i) < items);
        PoolAudit {
            items,
            free: distinct.len(),
            duplicates: self.free.len() - distinct.len(),
        }
    }

    /// Take back the items the worker returned.
    fn refill(&mut self) {
        let free = &mut self.free;
        self.p.returns.drain(usize::MAX, |i| free.push(i));
    }

    /// A lane with every work item free.
    pub fn new(xu: XuParts<H>, p: LaneParts<H>) -> Lane<H> {
        let n = xu.pool.len();
        Lane {
            free: (0..n as u16).rev().collect(),
            pending: 0,
            corrupt_word: None,
            inject: None,
            scratch: Vec::with_capacity(4096),
            stats: LaneStats::default(),
            slots: SlotTap::new(xu.trace_slots),
            xu,
            p,
            #[cfg(xunds_mutant = "degraded_accepts_one_more")]
            mutant_grace: false,
        }
    }

    /// The shared query side of the ring.
    pub fn queue(&self) -> &RingQueue {
        self.p.ring.queue()
    }

    /// The lane's counters.
    pub fn stats(&self) -> LaneStats {
        self.stats
    }

    /// Wake the publisher (it may sleep on reports pushed without a wake-up).
    pub fn wake_publisher(&self) {
        self.xu.pub_wake.wake();
    }

    /// Refusal counts not yet handed to the publisher.
    pub fn pending_refusals(&self) -> u32 {
        self.pending
    }

    /// Forward the HAL operations and slot transitions made since the last
    /// funnel step (so each step in a trace follows what it did).
    fn pre(&mut self, cx: &mut Cx<'_>) {
        self.xu.tap.drain(cx);
        self.slots.drain(cx);
    }

    /// Hand aggregated refusal counts to the publisher and wake it; keeps
    /// them when its mailbox is full (R1). Returns `true` when nothing is
    /// pending.
    pub fn flush(&mut self) -> bool {
        // A slot a failed trigger left submitted (`schedule`, step 6) is
        // published here at the latest, so the XU drains.
        if self.p.ring.untriggered() > 0 && self.trigger_pending().is_ok() {
            self.xu.has_work.wake();
        }
        let pending = self.pending != 0;
        let flushed = self.push_refusals();
        if pending && flushed {
            self.xu.pub_wake.wake();
        }
        flushed
    }

    /// [`flush`](Self::flush) without the wake-up: a refusal is not urgent
    /// (the publisher applies it with the next completion it is woken for,
    /// or within its bounded idle sleep; `quiesce` and the job's end wake
    /// it). Waking it on every queue-full refusal cost a wake-up, and often
    /// a rescheduling interrupt on the device's CPU, per refusal.
    fn push_refusals(&mut self) -> bool {
        let msg = PubMsg::Refused(self.xu.core, self.pending);
        let pushed = self.pending == 0 || self.p.to_pub.push(msg).is_ok();
        if pushed {
            self.pending = 0;
        }
        pushed
    }

    fn refuse(&mut self, status: NrtStatus) -> Result<SeqId, NrtStatus> {
        self.pending += 1;
        if status == NrtStatus::EXEC_UNIT_UNRECOVERABLE {
            self.stats.refused_unrecoverable += 1;
        } else {
            self.stats.refused_full += 1;
        }
        self.push_refusals();
        Err(status)
    }

    /// The funnel (module docs). Never blocks. `Err` is the caller's status:
    /// `NRT_QUEUE_FULL`, `NRT_EXEC_UNIT_UNRECOVERABLE` (101), `NRT_INVALID`
    /// for a bad request (wrong input length, a model not on this core), or
    /// `NRT_FAILURE` for an internal error before the slot was published
    /// (counted as failed to queue; a failed trigger is not one: the slot
    /// is published later and the caller gets its handle). Each step
    /// consumes the previous one's typed value (`fsm::funnel`); every
    /// failure exit returns the item it took to the free list.
    pub fn schedule(&mut self, req: Request<'_>, cx: &mut Cx<'_>) -> Result<SeqId, NrtStatus> {
        let core = self.xu.core;
        let Some(cm) = req.model.per_core.get(usize::from(core)) else {
            return Err(NrtStatus::INVALID);
        };
        if req.input.len() != req.model.input_len() || cm.variants.len() < self.xu.pool.len() {
            return Err(NrtStatus::INVALID);
        }
        // 1. Admit: a degraded XU is unrecoverable (101); one being reset
        // is full for now.
        let health = self.xu.health.state();
        // Mutant (`xunds sim` must find it): a degraded XU accepts one more
        // schedule.
        #[cfg(xunds_mutant = "degraded_accepts_one_more")]
        let health = match health {
            crate::fsm::xu_health::XuHealthState::Degraded if !self.mutant_grace => {
                self.mutant_grace = true;
                crate::fsm::xu_health::XuHealthState::Healthy
            }
            h => h,
        };
        if let Err(e) =
            step_traced::<XuHealth, _>(health, XuHealthEvent::Schedule, u64::from(core), cx)
        {
            return self.refuse(xu_health::refusal(e.state));
        }
        let call = funnel::Begun::new(u64::from(core));
        // 2. check_space.
        self.pre(cx);
        if !self.p.ring.has_space() {
            call.queue_full(cx);
            return self.refuse(NrtStatus::QUEUE_FULL);
        }
        let call = call.check_space(cx);
        // 3. take_item (refill the free list from the worker's returns).
        self.refill();
        let Some(idx) = self.free.pop() else {
            call.pool_empty(cx);
            return self.refuse(NrtStatus::QUEUE_FULL);
        };
        let call = call.take_item(idx, cx);
        let i = usize::from(idx);
        let io = cm.io_pa[i];
        // The input into the item's IO area, then the 208-byte work item
        // into the mapped item region (docs/abi.md §1.6).
        let mem = DramMemory::new(&*self.xu.hal, &self.xu.map);
        let mut rest = req.input.iter();
        let mut wrote = true;
        for t in &req.model.inputs {
            self.scratch.clear();
            let now = rest.by_ref().take(t.elems as usize);
            self.scratch.extend(now.flat_map(|v| v.to_le_bytes()));
            wrote &= mem.write_bytes(io + t.offset, &self.scratch).is_ok();
        }
        let mut info =
            TpbExecutionInfo::execute(u64::from(req.model.handle), idx as u64, u32::from(core));
        info.resp.ts_start = Timespec::from_nanos(cx.now().as_u64());
        info.resp.device_tpb_idx = u16::from(core);
        wrote &= self.xu.pool.write(&*self.xu.hal, idx, &info).is_ok();
        // 4. stage_and_doorbell (refused: the item goes back).
        let inject = self.inject.take();
        let staged = call.stage(cx, |_, cx| {
            let staged = if wrote && inject != Some(FunnelEvent::StageFailed) {
                self.p.stager.stage_and_doorbell(&cm.variants[i], 0).ok()
            } else {
                None
            };
            self.pre(cx);
            staged.ok_or(())
        });
        let (call, staged) = match staged {
            Ok(s) => s,
            Err((idx, ())) => {
                self.free.push(idx);
                return self.refuse(if wrote {
                    NrtStatus::QUEUE_FULL
                } else {
                    NrtStatus::FAILURE
                });
            }
        };
        self.xu.device_wake.wake();
        // 5. submit (cannot be refused for space: checked above, and this
        // lane is the ring's only producer).
        // The `exec_info` word: the item's address, unless a test armed a
        // replacement (`corrupt_next_word`, `testkit`).
        let word = self.xu.pool.word(idx);
        let word = self.corrupt_word.take().map_or(word, |f| f(word));
        let submitted = call.submit(cx, |cx| {
            let r = match inject {
                Some(FunnelEvent::SubmitFailed) => Err("injected".to_string()),
                _ => self
                    .p
                    .ring
                    .submit(word, req.status)
                    .map_err(|e| e.error.to_string()),
            };
            if let Ok(seq) = r {
                self.slots.submitted(seq.seq_num());
            }
            self.slots.drain(cx); // the ring only: nothing for the HAL tap
            r
        });
        let (call, seq) = match submitted {
            Ok(s) => s,
            Err((idx, e)) => {
                // The request was staged and doorbelled: the device runs it
                // and the worker drops its records as stray; the caller's
                // call failed to queue (counted, like every refusal).
                msg!(cx, "submit failed after the doorbell: {e}");
                self.free.push(idx);
                return self.refuse(NrtStatus::FAILURE);
            }
        };
        // The item's host side, in one lock: the worker reads it only after
        // it peeked the slot, which the trigger below publishes (a slot a
        // failed trigger left submitted is published later, still after
        // this).
        *self.xu.pool.side(idx) = HostSide {
            exec_id: staged.exec_id,
            engines: staged.engines,
            expect: req.expect,
            out: req.out,
            tag: req.tag,
            seq: seq.0,
        };
        // 6. trigger: every submitted slot, so one an earlier trigger
        // failure left behind is published before (not instead of) ours.
        let triggered = call.trigger(cx, |cx| {
            let r = match inject {
                Some(FunnelEvent::TriggerFailed) => Err("injected".to_string()),
                _ => self.trigger_pending().map_err(|e| e.to_string()),
            };
            self.slots.drain(cx); // the ring only: nothing for the HAL tap
            r
        });
        match triggered {
            // 7. wake the worker.
            Ok(call) => {
                self.xu.has_work.wake();
                call.wake_worker(cx);
                self.slots.drain(cx);
                let (seq_id, exec_id) = (seq.0, staged.exec_id);
                let (model, switch) = (req.model.handle, u8::from(staged.model_switch));
                msg!(
                    cx,
                    "scheduled xu={core} seq={seq_id:#x} exec_id={exec_id} item={idx} model={model} switch={switch}"
                );
            }
            Err((idx, e)) => {
                // Unreachable but for injection (this lane just submitted
                // and is the ring's only producer). The slot stays
                // submitted and holds the item: it will run (the flush
                // below, or the next trigger, publishes it) and the worker
                // returns the item once it ran (pushing it here too would
                // hand it out twice). So the caller gets its handle and,
                // at completion, its real result.
                msg!(cx, "trigger failed after the submit: {e}");
                msg!(cx, "item {idx} stays with its slot");
            }
        }
        self.stats.accepted += 1;
        self.flush();
        Ok(seq)
    }

    /// The XU's health (shared with its worker).
    pub fn health(&self) -> &Arc<HealthCell> {
        &self.xu.health
    }

    /// Start the full reset of this XU (`xu_health`: `reset`, to STOPPING):
    /// from now on every schedule is refused (`NRT_QUEUE_FULL`) until the XU
    /// is HEALTHY again; slots a failed trigger left submitted are published
    /// (so the worker drains them); the stager starts over (it stages
    /// nothing until then); the device is asked to stop (`RESET_REQ`, odd)
    /// and the worker, which drives the rest, is woken. Called with the
    /// lane's lock held (this is `&mut self`), so no schedule call is
    /// between its admission and its trigger. Refused (a value) when the
    /// XU is already being reset.
    pub fn begin_reset(&mut self, cx: &mut Cx<'_>) -> Result<(), HealthViolation> {
        // Refused before anything moves when the state does not take it.
        crate::fsm::step::<XuHealth>(self.xu.health.state(), XuHealthEvent::Reset)?;
        let core = self.xu.core;
        if self.p.ring.untriggered() > 0 && self.trigger_pending().is_err() {
            msg!(cx, "xu={core} reset: trigger refused");
        }
        self.xu.health.step(XuHealthEvent::Reset, core, cx)?;
        if self.p.stager.reset().is_err() {
            msg!(cx, "xu={core} reset: no stager");
        }
        self.xu.request_reset(cx);
        self.xu.tap.drain(cx);
        self.xu.device_wake.wake();
        self.xu.has_work.wake();
        msg!(cx, "xu={core} reset: stop requested");
        Ok(())
    }

    /// Publish `scheduled_head` over every submitted, untriggered slot.
    fn trigger_pending(&mut self) -> Result<(), TriggerError> {
        match self.p.ring.untriggered() {
            0 => Ok(()),
            n => {
                let last = self.p.ring.trigger_burst(n)?.seq_num();
                self.slots.triggered(last + 1 - n..last + 1);
                Ok(())
            }
        }
    }

    /// Fault injection for tests: the next schedule call fails at `at`
    /// (`StageFailed`, `SubmitFailed` or `TriggerFailed`; others are
    /// ignored), so each failure exit can be driven through the lane.
    #[doc(hidden)]
    #[cfg(any(test, feature = "testkit"))]
    pub fn fail_next(&mut self, at: FunnelEvent) {
        self.inject = Some(at);
    }

    /// Fault injection for tests: the next accepted schedule call puts
    /// `f(address of its item)` into the slot's `exec_info` instead of the
    /// address (an address outside the region, or off-stride).
    #[doc(hidden)]
    #[cfg(any(test, feature = "testkit"))]
    pub fn corrupt_next_word(&mut self, f: fn(u64) -> u64) {
        self.corrupt_word = Some(f);
    }

    /// Free work items the lane holds right now (refilled from the
    /// worker's returns first): the pool is whole when this equals its size.
    #[cfg(any(test, feature = "testkit"))]
    pub fn free_items(&mut self) -> usize {
        self.refill();
        self.free.len()
    }

    /// The core's stager (its request buffers are the staging slots:
    /// [`Stager::in_flight`] of them are taken).
    #[cfg(any(test, feature = "testkit"))]
    pub fn stager(&self) -> &Stager<H> {
        &self.p.stager
    }

    /// The core's work items (the mapped region and the side table).
    #[cfg(any(test, feature = "testkit"))]
    pub fn pool(&self) -> &Arc<ItemPool> {
        &self.xu.pool
    }
}

/// What `xunds run` executes: `executions` schedule calls of the loaded
/// models over a fixed set of inputs, as fast as the rings take them or at
/// the arrivals of `pacing`, until `until`.
#[derive(Clone, Debug)]
pub struct Workload {
    /// Executions to run.
    pub executions: u64,
    /// The resident models (execution `i` runs model `i % models.len()`).
    pub models: Vec<Arc<ResidentModel>>,
    /// The distinct inputs (execution `i` uses input
    /// `(i / models.len()) % inputs.len()`).
    pub inputs: Arc<Vec<Vec<f32>>>,
    /// Open-loop arrivals: each execution is submitted once due (`None`:
    /// closed loop).
    pub pacing: Option<Pacing>,
    /// No execution is given out from this time on (runner time): the work
    /// ends with the executions given out by then, which complete as usual
    /// (`xunds run --duration`).
    pub until: Option<Nanos>,
}

impl Workload {
    /// The expected-output index of (model index, input index).
    fn expect_index(&self, model: usize, input: usize) -> u32 {
        (model * self.inputs.len() + input) as u32
    }

    /// (model index, input index) of execution `i`.
    pub fn pick(&self, i: u64) -> (usize, usize) {
        let (m, n) = (self.models.len() as u64, self.inputs.len() as u64);
        ((i % m) as usize, ((i / m) % n) as usize)
    }
}

crate::actors::stats::counters! {
    /// The producer actor's counters.
    pub struct ProducerStats {
        /// Schedule calls made.
        pub attempts,
        /// Accepted.
        pub accepted,
        /// Refused with `NRT_QUEUE_FULL` (the execution was retried).
        pub refused_full,
        /// Refused with 101 (the execution was given up).
        pub refused_unrecoverable,
        /// Refused with another status (the execution was given up).
        pub failed,
        /// Back-offs armed on a completion fd.
        pub backoffs,
    }
}

/// Open-loop arrivals (`xunds run --rate R`): execution `i` is due at the
/// `i`-th arrival of a Poisson process of `R` per second (exponential gaps
/// drawn from a seeded [`SplitMix64`](crate::prng::SplitMix64)), counted
/// from the producer's first poll. A paced producer submits an execution
/// only once it is due, so the latency it sees is the system's, not the
/// queueing of a closed loop that keeps every ring full.
#[derive(Clone, Debug)]
pub struct Pacing {
    /// Arrivals per nanosecond.
    per_ns: f64,
    rng: crate::prng::SplitMix64,
    /// The first poll's time.
    start: Option<Nanos>,
    /// When the next execution is due, in ns after `start`.
    due_ns: u64,
}

impl Pacing {
    /// Poisson arrivals at `rate` per second (> 0), gaps drawn from `seed`.
    pub fn poisson(rate: f64, seed: u64) -> Pacing {
        let mut p = Pacing {
            per_ns: rate / 1e9,
            rng: crate::prng::SplitMix64::new(seed),
            start: None,
            due_ns: 0,
        };
        p.due_ns = p.gap_ns();
        p
    }

    /// One exponential gap: `-ln(1 - u) / rate` with `u` uniform in [0, 1).
    fn gap_ns(&mut self) -> u64 {
        let u = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        (-(1.0 - u).ln() / self.per_ns) as u64
    }

    /// Is the next execution due at `now`?
    fn due(&mut self, now: Nanos) -> bool {
        let start = *self.start.get_or_insert(now);
        now.as_u64().saturating_sub(start.as_u64()) >= self.due_ns
    }

    /// The next execution's arrival.
    fn advance(&mut self) {
        self.due_ns = self.due_ns.saturating_add(self.gap_ns());
    }

    /// When the next execution is due, once the first poll has fixed the
    /// start (`None` before it). The deterministic runner jumps its virtual
    /// clock here when every actor is idle: without it the clock crept
    /// forward one idle jump at a time and the runner's livelock guard
    /// fired on the idle gaps of a low rate.
    fn next_arrival(&self) -> Option<Nanos> {
        let start = self.start?;
        Some(start.saturating_add(Nanos(self.due_ns)))
    }
}

/// The workload driver of `xunds run`: a greedy client. It schedules
/// round-robin over the healthy XUs; on `NRT_QUEUE_FULL` it retries the same
/// execution on the next XU and backs off from the full one until half of
/// its queue has drained; on 101 it gives the execution up. A back-off
/// first polls (yielding between polls) for [`PARK_AFTER`]; only one that
/// lasts longer arms that completion on the producer's own eventfd through
/// the ring's explicit-async API, and the producer sleeps on it when every
/// live XU is backing off. It does not call an XU that is not healthy: it
/// holds the execution (routes it to another XU, or waits) while an XU is
/// being reset, or degraded with `recover` on (its worker resets it); only
/// when every XU is degraded for good does it make the calls, each refused
/// with 101, honestly.
/// It finishes when every execution is accounted for, every XU is drained
/// and the publisher has applied every outcome.
pub struct ProducerActor<H: Hal> {
    lanes: Arc<[Mutex<Lane<H>>]>,
    queues: Vec<RingQueue>,
    work: Workload,
    next: u64,
    rr: usize,
    backoff: Vec<Option<Backoff>>,
    healths: Vec<Arc<HealthCell>>,
    /// Degraded XUs come back (their workers reset them): hold, not 101.
    recover: bool,
    /// The last poll held executions for XUs being reset.
    holding: bool,
    end_armed: bool,
    efd: EventFd,
    pub_stats: Arc<PubStats>,
    stats: ProducerStats,
    finished: bool,
    tap: HalTap,
}

/// Schedule calls one poll makes at most.
const BATCH: usize = 16;

/// How long a back-off polls before it parks on the eventfd. Arming takes
/// the waiter side of the ring's mark-completion lock, whose heavy fence
/// (`membarrier`, an interrupt to every CPU running one of our threads)
/// cost 12-77 us per call on a 2-vCPU VM (docs/perf.md, "Measurements behind
/// the design"):
/// more than the whole back-off (half a ring of executions, about 20 us
/// with the null model), once every 16-26 executions. Polling first and
/// parking only after about the cost of parking is the classic
/// spin-then-park rule; the mark-completion lock stays biased for the
/// worker's per-pop entry.
pub const PARK_AFTER: Nanos = Nanos::from_micros(50);

/// One XU the producer is backing off from: the completion it waits for,
/// and either when the back-off started (polling) or that it is armed.
#[derive(Clone, Copy, Debug)]
struct Backoff {
    target: SeqId,
    /// `None` once armed on the eventfd.
    polling_since: Option<Nanos>,
}

debug_fields!([H: Hal] ProducerActor<H>, |s| next = s.next, stats = s.stats; ..);

impl<H: Hal> ProducerActor<H> {
    /// A driver for `work` over `lanes`.
    pub fn new(
        lanes: Arc<[Mutex<Lane<H>>]>,
        work: Workload,
        pub_stats: Arc<PubStats>,
        tap: HalTap,
    ) -> std::io::Result<ProducerActor<H>> {
        let queues: Vec<RingQueue> = lanes.iter().map(|l| lock(l).queue().clone()).collect();
        let healths = lanes.iter().map(|l| Arc::clone(lock(l).health())).collect();
        let n = queues.len();
        Ok(ProducerActor {
            lanes,
            queues,
            work,
            next: 0,
            rr: 0,
            backoff: vec![None; n],
            healths,
            recover: false,
            holding: false,
            end_armed: false,
            efd: EventFd::new()?,
            pub_stats,
            stats: ProducerStats::default(),
            finished: false,
            tap,
        })
    }

    /// Degraded XUs will be reset by their workers (`xunds run --recover`):
    /// hold executions for them instead of calling them.
    pub fn recovering(mut self, recover: bool) -> Self {
        self.recover = recover;
        self
    }

    /// Execution `next` is accounted for (accepted or given up): move on,
    /// and to the next arrival when paced.
    fn advance(&mut self) {
        self.next += 1;
        if let Some(p) = self.work.pacing.as_mut() {
            p.advance();
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> ProducerStats {
        self.stats
    }

    /// The next XU to try: round-robin over healthy XUs that are not
    /// backing off. `None` (hold) when there is none but one will be back
    /// (backing off, being reset, or degraded with `recover`); when every
    /// XU is degraded for good, any XU (each call is refused with 101).
    fn pick_core(&mut self) -> Option<usize> {
        let n = self.queues.len();
        let found = (0..n).map(|k| (self.rr + k) % n).find(|&c| {
            self.backoff[c].is_none() && self.healths[c].state() == XuHealthState::Healthy
        });
        self.holding = false;
        if found.is_some() {
            return found;
        }
        let (mut live, mut resetting) = (false, false);
        for h in &self.healths {
            match h.state() {
                XuHealthState::Healthy => live = true,
                XuHealthState::Degraded => resetting |= self.recover,
                _ => resetting = true,
            }
        }
        // Backing off from every healthy XU: sleep on the armed completion
        // (unless an XU is being reset: no fd says when it is back).
        self.holding = resetting;
        (!live && !resetting).then_some(self.rr % n)
    }

    /// Back off from `c` until half its queue has drained: poll for that
    /// completion first ([`PARK_AFTER`]; `park` arms it later).
    fn back_off(&mut self, c: usize, cx: &mut Cx<'_>) {
        let q = &self.queues[c];
        let ahead = (q.capacity() / 2).max(1);
        let target_num = (q.last_completed().seq_num() + ahead).min(q.last_submitted().seq_num());
        self.backoff[c] = Some(Backoff {
            target: SeqId::from_cursor(target_num, q.xu()),
            polling_since: Some(cx.now()),
        });
    }

    /// Arm the completion of every back-off that has polled for
    /// [`PARK_AFTER`]; one found already complete ends its back-off
    /// (`true`: something changed).
    fn park(&mut self, cx: &mut Cx<'_>) -> bool {
        let mut made = false;
        for (c, slot) in self.backoff.iter_mut().enumerate() {
            let Some(b) = slot else { continue };
            match b.polling_since {
                Some(since) if cx.now().saturating_sub(since) >= PARK_AFTER => {}
                _ => continue,
            }
            match self.queues[c].arm(b.target, &self.efd) {
                Ok(Armed::Installed) => {
                    b.polling_since = None;
                    self.stats.backoffs += 1;
                    let seq = b.target.0;
                    msg!(cx, "back off xu={c} until seq={seq:#x}");
                }
                // Already complete (or the slot has another waiter): retry now.
                Ok(Armed::AlreadyComplete) | Err(_) => {
                    *slot = None;
                    made = true;
                }
            }
        }
        made
    }

    /// Some back-off is still polling (not armed): the runner must not
    /// sleep on the eventfd.
    fn polling(&self) -> bool {
        self.backoff
            .iter()
            .any(|b| b.is_some_and(|b| b.polling_since.is_some()))
    }

    /// The end condition: every execution handed out, every XU drained,
    /// every refusal count flushed, and the publisher caught up.
    fn try_finish(&mut self, cx: &mut Cx<'_>) -> bool {
        if self.queues.iter().any(|q| q.in_flight() > 0) {
            if !self.end_armed {
                // Be woken by the last completion of each XU.
                for q in self.queues.iter().filter(|q| q.in_flight() > 0) {
                    let _ = q.arm(q.last_submitted(), &self.efd);
                }
                self.end_armed = true;
            }
            return false;
        }
        if !publisher_caught_up(&self.lanes, &self.pub_stats) {
            // Refusals are pushed without a wake-up (`Lane::push_refusals`):
            // make sure the publisher is not asleep on what is left.
            if let Some(l) = self.lanes.first() {
                lock(l).wake_publisher();
            }
            return false;
        }
        msg!(
            cx,
            "workload done: accepted={} refused_full={} refused_unrecoverable={} failed={}",
            self.stats.accepted,
            self.stats.refused_full,
            self.stats.refused_unrecoverable,
            self.stats.failed
        );
        true
    }
}

/// Flush every lane's refusal counts, then check that the publisher has
/// applied a completion for every accepted call and every refusal (the
/// producer actor's end condition and the API's `quiesce`).
pub fn publisher_caught_up<H: Hal>(lanes: &[Mutex<Lane<H>>], applied: &PubStats) -> bool {
    let (mut flushed, mut accepted, mut refused) = (true, 0, 0);
    for l in lanes {
        let mut l = lock(l);
        flushed &= l.flush();
        accepted += l.stats.accepted;
        refused += l.stats.refused_full + l.stats.refused_unrecoverable;
    }
    let (completions, refusals) = applied.applied();
    flushed && completions >= accepted && refusals >= refused
}

impl<H: Hal> Actor for ProducerActor<H> {
    fn name(&self) -> &str {
        "producer"
    }

    fn poll(&mut self, cx: &mut Cx<'_>) -> Progress {
        if self.finished {
            return Progress::Finished;
        }
        if self.work.until.is_some_and(|t| cx.now() >= t) {
            self.work.executions = self.work.executions.min(self.next);
        }
        let mut made = false;
        for (b, q) in self.backoff.iter_mut().zip(&self.queues) {
            if b.is_some_and(|b| q.is_completed(b.target).unwrap_or(true)) {
                *b = None;
                made = true;
            }
        }
        // The lane last scheduled on stays locked while the batch keeps
        // scheduling on it (one lock per run of calls to the same XU, not
        // one per call; at most one lane is held, and it is released
        // before another is locked and before the loop ends).
        let lanes = Arc::clone(&self.lanes);
        let mut held: Option<(usize, MutexGuard<'_, Lane<H>>)> = None;
        for _ in 0..BATCH {
            if self.next >= self.work.executions {
                break;
            }
            if self.work.pacing.as_mut().is_some_and(|p| !p.due(cx.now())) {
                break;
            }
            let Some(c) = self.pick_core() else { break };
            let (m, k) = self.work.pick(self.next);
            // Borrowed, not cloned: an `Arc` clone per execution writes the
            // model's count, which the worker also writes (a cache line
            // moving between the two threads for nothing).
            let req = Request {
                model: &self.work.models[m],
                input: &self.work.inputs[k],
                status: None,
                out: None,
                expect: self.work.expect_index(m, k),
                tag: self.next,
            };
            self.stats.attempts += 1;
            let lane = match &mut held {
                Some((h, lane)) if *h == c => lane,
                _ => {
                    held = None;
                    &mut held.insert((c, lock(&lanes[c]))).1
                }
            };
            let r = lane.schedule(req, cx);
            made = true;
            self.rr = (c + 1) % self.queues.len();
            let st = &mut self.stats;
            *match r {
                Ok(_) => &mut st.accepted,
                Err(NrtStatus::QUEUE_FULL) => &mut st.refused_full,
                Err(NrtStatus::EXEC_UNIT_UNRECOVERABLE) => &mut st.refused_unrecoverable,
                Err(_) => &mut st.failed,
            } += 1;
            // A full XU: the same execution goes to the next one.
            if r == Err(NrtStatus::QUEUE_FULL) {
                self.back_off(c, cx);
            } else {
                self.advance();
            }
        }
        drop(held);
        if self.next >= self.work.executions && self.try_finish(cx) {
            self.finished = true;
            self.tap.drain(cx);
            return Progress::Finished;
        }
        if !made {
            made = self.park(cx);
        }
        self.tap.drain(cx);
        Progress::of(made)
    }

    fn idle(&self) -> Idle {
        // The last phase (waiting for the XUs to drain and the publisher to
        // catch up) is short: poll it rather than sleep a whole idle timeout
        // on an fd nobody may write. Holding for an XU that comes back from
        // a reset: no fd says when. A back-off polls before it parks
        // (`PARK_AFTER`).
        if self.next >= self.work.executions || self.holding || self.polling() {
            Idle::Yield
        } else {
            Idle::Fd(self.efd.raw())
        }
    }

    fn next_deadline(&self) -> Option<Nanos> {
        // Open loop with executions left: the next arrival is due then even
        // if no message comes; so is the end of a run's time. A saturated arrival (past the end of time) is
        // no deadline, as for the worker's infinite timeout.
        if self.finished || self.next >= self.work.executions {
            return None;
        }
        let arrival = self.work.pacing.as_ref().and_then(Pacing::next_arrival);
        let d = [arrival, self.work.until].into_iter().flatten().min();
        d.filter(|&d| d != Nanos::MAX)
    }
}
