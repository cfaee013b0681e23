//! The Producer: the submit funnel (docs/abi.md §1.10, `fsm::funnel`) and
//! the workload driver of `xunds run`.
//!
//! [`Lane`] is one XU's producer side: its ring `Producer` (owner of
//! `scheduled_tail` / `scheduled_head`), its device [`Stager`], its work-item
//! free list and the mailbox the worker returns items through. The public
//! API keeps each lane behind a `Mutex` (the runtime's `submit_work_lock`) and
//! calls [`Lane::schedule`] on the caller's thread; [`ProducerActor`] calls
//! the same method from its `poll`. `schedule` never blocks and walks the
//! funnel in the seed's order, always:
//!
//! 1. admit (`xu_health`): a degraded XU refuses with 101;
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

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::actors::mailbox::{Receiver, Sender};
use crate::actors::wake::Waker;
use crate::actors::work::{HealthCell, ItemPool, OutputBuf, PubMsg, ResidentModel};
use crate::actors::{Actor, Cx, HalTap, Idle, Progress};
use crate::device::memmap::MemMap;
use crate::device::sequencer::DramMemory;
use crate::device::staging::Stager;
use crate::fsm::funnel::{Funnel, FunnelEvent, FunnelState};
use crate::fsm::xu_health::{XuHealth, XuHealthEvent};
use crate::fsm::{step_traced, TransitionHook};
use crate::hal::eventfd::EventFd;
use crate::hal::Hal;
use crate::ring::queue::StatusArc;
use crate::ring::{Armed, MappedStorage, XuQueue};
use crate::wire::seq_id::SeqId;
use crate::wire::status::NrtStatus;
use crate::wire::work_item::{Timespec, TpbExecutionInfo};

/// The ring handles the system uses: `exec_info` words over the byte-exact
/// mapped `xu_queue_t`.
pub type RingProducer = crate::ring::Producer<u64, MappedStorage>;
/// The worker's ring handle.
pub type RingWorker = crate::ring::Worker<u64, MappedStorage>;
/// The shared query side.
pub type RingQueue = XuQueue<u64, MappedStorage>;

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

/// Counters of one lane (all schedule calls, whoever made them). On its
/// own cache line (written on every schedule; see `Waker`).
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct LaneStats {
    /// Accepted (a seq_id was returned).
    pub accepted: AtomicU64,
    /// Refused with `NRT_QUEUE_FULL`.
    pub refused_full: AtomicU64,
    /// Refused with `NRT_EXEC_UNIT_UNRECOVERABLE`.
    pub refused_unrecoverable: AtomicU64,
}

impl LaneStats {
    /// (accepted, refused_full, refused_unrecoverable).
    pub fn get(&self) -> (u64, u64, u64) {
        (
            self.accepted.load(Ordering::Relaxed),
            self.refused_full.load(Ordering::Relaxed),
            self.refused_unrecoverable.load(Ordering::Relaxed),
        )
    }
}

/// Everything a lane is built from.
pub struct LaneParts<H: Hal> {
    /// The core (= XU index).
    pub core: u8,
    /// The ring's producer handle.
    pub ring: RingProducer,
    /// The core's stager.
    pub stager: Stager<H>,
    /// The HAL (for the IO areas).
    pub hal: Arc<H>,
    /// The memory map.
    pub map: Arc<MemMap>,
    /// The core's work items.
    pub pool: Arc<ItemPool>,
    /// Items coming back from the worker.
    pub returns: Receiver<u16>,
    /// The worker's has-work waker.
    pub worker_wake: Arc<Waker>,
    /// The device proxy's doorbell waker.
    pub device_wake: Arc<Waker>,
    /// The XU's health.
    pub health: Arc<HealthCell>,
    /// Refusal counts to the NDS publisher.
    pub to_pub: Sender<PubMsg>,
    /// The publisher's waker.
    pub pub_wake: Arc<Waker>,
    /// Record slot transitions (deterministic traced runs).
    pub trace_slots: bool,
    /// HAL trace forwarding (each funnel step is preceded by the HAL
    /// operations it made).
    pub tap: HalTap,
}

/// One XU's producer side.
pub struct Lane<H: Hal> {
    core: u8,
    ring: RingProducer,
    stager: Stager<H>,
    hal: Arc<H>,
    map: Arc<MemMap>,
    pool: Arc<ItemPool>,
    free: Vec<u16>,
    returns: Receiver<u16>,
    worker_wake: Arc<Waker>,
    device_wake: Arc<Waker>,
    health: Arc<HealthCell>,
    to_pub: Sender<PubMsg>,
    pub_wake: Arc<Waker>,
    pending_full: u32,
    pending_unrecoverable: u32,
    funnel: FunnelState,
    scratch: Vec<u8>,
    stats: Arc<LaneStats>,
    trace_slots: bool,
    tap: HalTap,
}

impl<H: Hal> core::fmt::Debug for Lane<H> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Lane")
            .field("core", &self.core)
            .field("free", &self.free.len())
            .field("funnel", &self.funnel)
            .finish_non_exhaustive()
    }
}

impl<H: Hal> Lane<H> {
    /// A lane with every work item free.
    pub fn new(p: LaneParts<H>) -> Lane<H> {
        let n = p.pool.len();
        let mut ring = p.ring;
        ring.trace(p.trace_slots);
        Lane {
            core: p.core,
            ring,
            stager: p.stager,
            hal: p.hal,
            map: p.map,
            free: (0..n as u16).rev().collect(),
            pool: p.pool,
            returns: p.returns,
            worker_wake: p.worker_wake,
            device_wake: p.device_wake,
            health: p.health,
            to_pub: p.to_pub,
            pub_wake: p.pub_wake,
            pending_full: 0,
            pending_unrecoverable: 0,
            funnel: FunnelState::Idle,
            scratch: Vec::with_capacity(4096),
            stats: Arc::new(LaneStats::default()),
            trace_slots: p.trace_slots,
            tap: p.tap,
        }
    }

    /// The core.
    pub fn core(&self) -> u8 {
        self.core
    }

    /// The shared query side of the ring.
    pub fn queue(&self) -> &RingQueue {
        self.ring.queue()
    }

    /// The lane's counters (shared).
    pub fn stats(&self) -> Arc<LaneStats> {
        Arc::clone(&self.stats)
    }

    /// Wake the publisher (it may sleep on reports pushed without a wake-up).
    pub fn wake_publisher(&self) {
        self.pub_wake.wake();
    }

    /// Refusal counts not yet handed to the publisher.
    pub fn pending_refusals(&self) -> u32 {
        self.pending_full + self.pending_unrecoverable
    }

    fn step(&mut self, e: FunnelEvent, cx: &mut Cx<'_>) {
        self.tap.drain(cx);
        self.slot_trace(cx);
        // The funnel is driven only by this function in the seed's order; an
        // illegal step would be a bug here, and it leaves the state as is.
        if let Ok(s) = step_traced::<Funnel, _>(self.funnel, e, u64::from(self.core), cx) {
            self.funnel = s;
        }
    }

    fn slot_trace(&mut self, cx: &mut Cx<'_>) {
        if self.trace_slots {
            for t in self.ring.take_trace() {
                cx.on_transition(t);
            }
        }
    }

    /// Hand aggregated refusal counts to the publisher and wake it; keeps
    /// them when its mailbox is full (R1). Returns `true` when nothing is
    /// pending.
    pub fn flush(&mut self) -> bool {
        let pending = self.pending_refusals() != 0;
        let flushed = self.push_refusals();
        if pending && flushed {
            self.pub_wake.wake();
        }
        flushed
    }

    /// [`flush`](Self::flush) without the wake-up: a refusal is not urgent
    /// (the publisher applies it with the next completion it is woken for,
    /// or within its bounded idle sleep; `quiesce` and the job's end wake
    /// it). Waking it on every queue-full refusal cost a wake-up, and often
    /// a rescheduling interrupt on the device's CPU, per refusal.
    fn push_refusals(&mut self) -> bool {
        if self.pending_full == 0 && self.pending_unrecoverable == 0 {
            return true;
        }
        let msg = PubMsg::Refused {
            core: self.core,
            full: self.pending_full,
            unrecoverable: self.pending_unrecoverable,
        };
        if self.to_pub.push(msg).is_ok() {
            self.pending_full = 0;
            self.pending_unrecoverable = 0;
            true
        } else {
            false
        }
    }

    fn refuse(&mut self, status: NrtStatus) -> Result<SeqId, NrtStatus> {
        if status == NrtStatus::EXEC_UNIT_UNRECOVERABLE {
            self.pending_unrecoverable += 1;
            self.stats
                .refused_unrecoverable
                .fetch_add(1, Ordering::Relaxed);
        } else {
            self.pending_full += 1;
            self.stats.refused_full.fetch_add(1, Ordering::Relaxed);
        }
        self.push_refusals();
        Err(status)
    }

    /// The funnel (module docs). Never blocks. `Err` is the caller's status:
    /// `NRT_QUEUE_FULL`, `NRT_EXEC_UNIT_UNRECOVERABLE` (101), `NRT_INVALID`
    /// for a bad request (wrong input length, a model not on this core), or
    /// `NRT_FAILURE` for an internal error after the doorbell.
    pub fn schedule(&mut self, req: Request<'_>, cx: &mut Cx<'_>) -> Result<SeqId, NrtStatus> {
        let core = self.core;
        let Some(cm) = req.model.per_core.get(usize::from(core)) else {
            return Err(NrtStatus::INVALID);
        };
        if req.input.len() != req.model.input_len() || cm.variants.len() < self.pool.len() {
            return Err(NrtStatus::INVALID);
        }
        // 1. Admit: a degraded XU is unrecoverable (101).
        if step_traced::<XuHealth, _>(
            self.health.state(),
            XuHealthEvent::Schedule,
            u64::from(core),
            cx,
        )
        .is_err()
        {
            return self.refuse(NrtStatus::EXEC_UNIT_UNRECOVERABLE);
        }
        // 2. check_space.
        if !self.ring.has_space() {
            self.step(FunnelEvent::QueueFull, cx);
            return self.refuse(NrtStatus::QUEUE_FULL);
        }
        self.step(FunnelEvent::CheckSpace, cx);
        // 3. take_item (refill the free list from the worker's returns).
        let free = &mut self.free;
        self.returns.drain(usize::MAX, |i| free.push(i));
        let Some(idx) = self.free.pop() else {
            self.step(FunnelEvent::PoolEmpty, cx);
            return self.refuse(NrtStatus::QUEUE_FULL);
        };
        self.step(FunnelEvent::TakeItem, cx);
        let i = usize::from(idx);
        let io = cm.io_pa[i];
        // The input into the item's IO area, then the work item itself.
        let mem = DramMemory::new(&*self.hal, &self.map);
        let mut rest = req.input;
        let mut wrote = true;
        for t in &req.model.inputs {
            let (now, later) = rest.split_at(t.elems as usize);
            rest = later;
            self.scratch.clear();
            for v in now {
                self.scratch.extend_from_slice(&v.to_bits().to_le_bytes());
            }
            wrote &= mem.write_bytes(io + t.offset, &self.scratch).is_ok();
        }
        let mut item = self.pool.lock(idx);
        let mut info =
            TpbExecutionInfo::execute(u64::from(req.model.handle), idx as u64, u32::from(core));
        info.resp.ts_start = Timespec::from_nanos(cx.now().as_u64());
        info.resp.device_tpb_idx = u16::from(core);
        // The buffer is exactly `work_item::SIZE` bytes: emit cannot fail.
        let _ = info.emit(&mut item.info);
        item.submitted = cx.now();
        item.expect = req.expect;
        item.tag = req.tag;
        // 4. stage_and_doorbell.
        let staged = if wrote {
            self.stager.stage_and_doorbell(&cm.variants[i], 0).ok()
        } else {
            None
        };
        let Some(staged) = staged else {
            drop(item);
            self.free.push(idx);
            self.step(FunnelEvent::StageFailed, cx);
            return self.refuse(if wrote {
                NrtStatus::QUEUE_FULL
            } else {
                NrtStatus::FAILURE
            });
        };
        item.exec_id = staged.exec_id;
        item.engines = staged.engines;
        item.model = Some(Arc::clone(req.model));
        item.out = req.out;
        drop(item);
        self.step(FunnelEvent::StageAndDoorbell, cx);
        self.device_wake.wake();
        // 5. submit (cannot be refused for space: checked above, and this
        // lane is the ring's only producer).
        let seq = match self.ring.submit(self.pool.word(idx), req.status) {
            Ok(seq) => seq,
            Err(e) => {
                cx.event(
                    "msg",
                    format_args!("submit failed after the doorbell: {}", e.error),
                );
                return Err(NrtStatus::FAILURE);
            }
        };
        self.step(FunnelEvent::Submit, cx);
        // 6. trigger.
        if self.ring.trigger_next().is_err() {
            return Err(NrtStatus::FAILURE);
        }
        self.step(FunnelEvent::Trigger, cx);
        // 7. wake the worker.
        self.worker_wake.wake();
        self.step(FunnelEvent::WakeWorker, cx);
        self.slot_trace(cx);
        cx.event(
            "msg",
            format_args!(
                "scheduled xu={core} seq={:#x} exec_id={} item={idx} model={} switch={}",
                seq.0, staged.exec_id, req.model.handle, staged.model_switch as u8
            ),
        );
        self.stats.accepted.fetch_add(1, Ordering::Relaxed);
        self.flush();
        Ok(seq)
    }
}

/// Counters the publisher keeps for whoever waits for it (the producer
/// actor's end condition, the API's `quiesce`, progress bars). On its own
/// cache line (written on every report applied).
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct PubStats {
    /// Completion messages applied to the slab.
    pub completions: AtomicU64,
    /// Refused schedule calls applied (`INFER_FAILED_TO_QUEUE`).
    pub refusals: AtomicU64,
    /// Model records committed.
    pub models_committed: AtomicU64,
    /// NDS errors (an update the slab refused; should stay 0).
    pub errors: AtomicU64,
}

impl PubStats {
    /// (completions, refusals) applied so far.
    pub fn applied(&self) -> (u64, u64) {
        // Ordering: Acquire pairs with the publisher's Release stores: the
        // counter updates behind these numbers are in the slab.
        (
            self.completions.load(Ordering::Acquire),
            self.refusals.load(Ordering::Acquire),
        )
    }
}

/// What `xunds run` executes: `executions` schedule calls of the loaded
/// models over a fixed set of inputs.
#[derive(Clone, Debug)]
pub struct Workload {
    /// Executions to run.
    pub executions: u64,
    /// The resident models (execution `i` runs model `i % models.len()`).
    pub models: Vec<Arc<ResidentModel>>,
    /// The distinct inputs (execution `i` uses input
    /// `(i / models.len()) % inputs.len()`).
    pub inputs: Arc<Vec<Vec<f32>>>,
}

impl Workload {
    /// The expected-output index of (model index, input index).
    pub fn expect_index(&self, model: usize, input: usize) -> u32 {
        (model * self.inputs.len() + input) as u32
    }

    /// (model index, input index) of execution `i`.
    pub fn pick(&self, i: u64) -> (usize, usize) {
        let m = self.models.len() as u64;
        (
            (i % m) as usize,
            ((i / m) % self.inputs.len() as u64) as usize,
        )
    }
}

/// The producer actor's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProducerStats {
    /// Schedule calls made.
    pub attempts: u64,
    /// Accepted.
    pub accepted: u64,
    /// Refused with `NRT_QUEUE_FULL` (the execution was retried).
    pub refused_full: u64,
    /// Refused with 101 (the execution was given up).
    pub refused_unrecoverable: u64,
    /// Refused with another status (the execution was given up).
    pub failed: u64,
    /// Back-offs armed on a completion fd.
    pub backoffs: u64,
}

/// The workload driver of `xunds run`: a greedy client. It schedules
/// round-robin over the XUs; on `NRT_QUEUE_FULL` it retries the same
/// execution on the next XU and backs off from the full one until half of
/// its queue has drained (it arms that completion on its own eventfd through
/// the ring's explicit-async API and sleeps on it when every live XU is
/// backing off); on 101 it gives the execution up and stops using that XU.
/// It finishes when every execution is accounted for, every XU is drained
/// and the publisher has applied every outcome.
pub struct ProducerActor<H: Hal> {
    name: String,
    lanes: Arc<[Mutex<Lane<H>>]>,
    queues: Vec<RingQueue>,
    work: Workload,
    next: u64,
    rr: usize,
    backoff: Vec<Option<SeqId>>,
    dead: Vec<bool>,
    end_armed: bool,
    efd: EventFd,
    pub_stats: Arc<PubStats>,
    stats: ProducerStats,
    batch: usize,
    finished: bool,
    tap: HalTap,
}

impl<H: Hal> core::fmt::Debug for ProducerActor<H> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ProducerActor")
            .field("next", &self.next)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl<H: Hal> ProducerActor<H> {
    /// A driver for `work` over `lanes`.
    pub fn new(
        lanes: Arc<[Mutex<Lane<H>>]>,
        work: Workload,
        pub_stats: Arc<PubStats>,
        tap: HalTap,
    ) -> std::io::Result<ProducerActor<H>> {
        let queues: Vec<RingQueue> = lanes.iter().map(|l| lock(l).queue().clone()).collect();
        let n = queues.len();
        Ok(ProducerActor {
            name: "producer".to_string(),
            lanes,
            queues,
            work,
            next: 0,
            rr: 0,
            backoff: vec![None; n],
            dead: vec![false; n],
            end_armed: false,
            efd: EventFd::new()?,
            pub_stats,
            stats: ProducerStats::default(),
            batch: 16,
            finished: false,
            tap,
        })
    }

    /// Counters so far.
    pub fn stats(&self) -> ProducerStats {
        self.stats
    }

    /// Executions handed out so far (accepted or given up).
    pub fn done(&self) -> u64 {
        self.next
    }

    /// The next XU to try: round-robin over live XUs that are not backing
    /// off; when every XU is dead, any XU (each call is refused with 101).
    fn pick_core(&self) -> Option<usize> {
        let n = self.queues.len();
        let all_dead = self.dead.iter().all(|&d| d);
        (0..n)
            .map(|k| (self.rr + k) % n)
            .find(|&c| all_dead || (!self.dead[c] && self.backoff[c].is_none()))
    }

    /// Arm a completion half a queue ahead on `c` and back off from it.
    fn back_off(&mut self, c: usize, cx: &mut Cx<'_>) {
        let q = &self.queues[c];
        let last = q.last_completed();
        let ahead = (q.capacity() / 2).max(1);
        let target_num = (last.seq_num() + ahead).min(q.last_submitted().seq_num());
        let target = SeqId::from_cursor(target_num, q.xu());
        match q.arm(target, &self.efd) {
            Ok(Armed::Installed) => {
                self.backoff[c] = Some(target);
                self.stats.backoffs += 1;
                cx.event(
                    "msg",
                    format_args!("back off xu={c} until seq={:#x}", target.0),
                );
            }
            // Already complete (or the slot has another waiter): retry soon.
            Ok(Armed::AlreadyComplete) | Err(_) => {}
        }
    }

    fn all_drained(&self) -> bool {
        self.queues.iter().all(|q| q.in_flight() == 0)
    }

    /// The end condition: every execution handed out, every XU drained,
    /// every refusal count flushed, and the publisher caught up.
    fn try_finish(&mut self, cx: &mut Cx<'_>) -> bool {
        if !self.all_drained() {
            if !self.end_armed {
                // Be woken by the last completion of each XU.
                for q in &self.queues {
                    if q.in_flight() > 0 {
                        let _ = q.arm(q.last_submitted(), &self.efd);
                    }
                }
                self.end_armed = true;
            }
            return false;
        }
        let mut flushed = true;
        for l in self.lanes.iter() {
            flushed &= lock(l).flush();
        }
        let (completions, refusals) = self.pub_stats.applied();
        let (mut accepted, mut refused) = (0, 0);
        for l in self.lanes.iter() {
            let (a, f, u) = lock(l).stats().get();
            accepted += a;
            refused += f + u;
        }
        if !flushed || completions < accepted || refusals < refused {
            // Refusals are pushed without a wake-up (`Lane::push_refusals`):
            // make sure the publisher is not asleep on what is left.
            if let Some(l) = self.lanes.first() {
                lock(l).wake_publisher();
            }
            return false;
        }
        cx.event(
            "msg",
            format_args!(
                "workload done: accepted={} refused_full={} refused_unrecoverable={} failed={}",
                self.stats.accepted,
                self.stats.refused_full,
                self.stats.refused_unrecoverable,
                self.stats.failed
            ),
        );
        true
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<H: Hal> Actor for ProducerActor<H> {
    fn name(&self) -> &str {
        &self.name
    }

    fn poll(&mut self, cx: &mut Cx<'_>) -> Progress {
        if self.finished {
            return Progress::Finished;
        }
        let mut made = false;
        for c in 0..self.backoff.len() {
            if let Some(t) = self.backoff[c] {
                if self.queues[c].is_completed(t).unwrap_or(true) {
                    self.backoff[c] = None;
                    made = true;
                }
            }
        }
        for _ in 0..self.batch {
            if self.next >= self.work.executions {
                break;
            }
            let Some(c) = self.pick_core() else { break };
            let (m, k) = self.work.pick(self.next);
            let model = Arc::clone(&self.work.models[m]);
            let inputs = Arc::clone(&self.work.inputs);
            let req = Request {
                model: &model,
                input: &inputs[k],
                status: None,
                out: None,
                expect: self.work.expect_index(m, k),
                tag: self.next,
            };
            self.stats.attempts += 1;
            let r = lock(&self.lanes[c]).schedule(req, cx);
            made = true;
            self.rr = (c + 1) % self.queues.len();
            match r {
                Ok(_) => {
                    self.stats.accepted += 1;
                    self.next += 1;
                }
                Err(NrtStatus::QUEUE_FULL) => {
                    self.stats.refused_full += 1;
                    self.back_off(c, cx);
                }
                Err(NrtStatus::EXEC_UNIT_UNRECOVERABLE) => {
                    self.stats.refused_unrecoverable += 1;
                    self.dead[c] = true;
                    self.next += 1;
                }
                Err(_) => {
                    self.stats.failed += 1;
                    self.next += 1;
                }
            }
        }
        if self.next >= self.work.executions && self.try_finish(cx) {
            self.finished = true;
            self.tap.drain(cx);
            return Progress::Finished;
        }
        self.tap.drain(cx);
        if made {
            Progress::Made
        } else {
            Progress::Idle
        }
    }

    fn idle(&self) -> Idle {
        if self.next >= self.work.executions {
            // The last phase (waiting for the XUs to drain and the publisher
            // to catch up) is short: poll it rather than sleep a whole idle
            // timeout on an fd nobody may write.
            Idle::Yield
        } else {
            Idle::Fd(self.fd())
        }
    }
}

impl<H: Hal> ProducerActor<H> {
    fn fd(&self) -> RawFd {
        self.efd.raw()
    }
}
