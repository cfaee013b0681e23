//! The NDS-publisher: the one actor that owns the datastore [`Writer`].
//!
//! On its first poll it publishes the process info (and its ext record), the
//! versions and the feature bits. It then applies, in arrival order, every
//! message from the workers (one per completed execution), the producer
//! lanes (aggregated refusal counts) and the control channel (model loads
//! and unloads from the public API, host memory of the system itself).
//!
//! Counter mapping (docs/design.md "Actors and the system"; the NC counters of
//! the message's core):
//!
//! | message | counters |
//! |---|---|
//! | every completion | `INFERENCE_COUNT` +1, `LATENCY_TOTAL` + host ns, `LATENCY_DEVICE` + device ns (1 cycle = 1 ns), `MAC_COUNT` + the response's `mac_count` (the request's MACs as the sequencer wrote them) |
//! | status `SUCCESS` | `INFER_COMPLETED` |
//! | status `TIMEOUT` | `INFER_TIMED_OUT` |
//! | status `EXEC_COMPLETED_WITH_NUM_ERR` | `INFER_COMPLETED_WITH_NUM_ERR` |
//! | any other status | `INFER_COMPLETED_WITH_ERR` |
//! | an error class k | `ERR_GENERIC + k` (the order-locked block 7..=12) |
//! | a DMA abort / an NQ overflow | EXT `HW_ERR_DMA_ABORT` / `ERR_SW_NQ_OVERFLOW` |
//! | refused schedule (queue full or 101) | `INFER_FAILED_TO_QUEUE` |
//! | model loaded on a core | a model record (`nc_index` = core, mem-usage grid), `MODEL_LOAD_COUNT` +1, `MEM_USAGE_*_DEVICE` + its device bytes; ND `MEM_USAGE_*_HOST` + its host bytes (once per model) |
//! | model unloaded | the record deleted, the memory counters decremented |
//!
//! Its inbound mailboxes are terminal (handling a message emits nothing), so
//! it drains them unconditionally (deadlock rule R2/R3); senders keep what a
//! full mailbox refuses (R1).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::actors::lock;
use crate::actors::mailbox::Receiver;
use crate::actors::wake::Waker;
use crate::actors::work::{Completion, ModelLoad, PubMsg};
use crate::actors::{msg, step_counted, Actor, Cx, Idle, Progress};
use crate::fsm::publisher::{PublisherCycle, PublisherEvent, PublisherState};
use crate::fsm::{Transition, TransitionHook};
use crate::nds::{Counter, ModelSlot, SlabMut, Writer};
use crate::wire::nds::counters::{Features, NcCounter, NdCounter};
use crate::wire::nds::process::{ProcessInfo, ProcessInfoExt, VersionInfo};
use crate::wire::nds::{c_string, counters};
use crate::wire::status::NrtStatus;
use crate::wire::work_item::InferResp;

/// The runtime version xunds reports (the ABIs it reimplements: libnrt 2.31).
pub const RUNTIME_VERSION: VersionInfo = VersionInfo {
    major: 2,
    minor: 31,
    build: 0,
};

/// Everything a publisher is built from.
pub struct PublisherParts<S: SlabMut> {
    /// The datastore writer (the header is committed).
    pub writer: Writer<S>,
    /// Number of cores.
    pub cores: u8,
    /// One mailbox per worker, then one per producer lane (drained in
    /// this order).
    pub inbound: Vec<Receiver<PubMsg>>,
    /// The control channel (API callers, any thread).
    pub control: crossbeam_channel::Receiver<PubMsg>,
    /// This publisher's waker.
    pub wake: Arc<Waker>,
    /// What it has applied (shared).
    pub stats: Arc<PubStats>,
    /// Trace the record lifecycle transitions.
    pub trace_records: bool,
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
    /// NDS errors (an update the slab refused; should stay 0).
    pub errors: AtomicU64,
    /// Events the publisher's state did not accept (should stay 0).
    pub fsm_violations: AtomicU64,
}

impl PubStats {
    /// (completions, refusals) applied so far.
    pub fn applied(&self) -> (u64, u64) {
        // Ordering: Acquire pairs with the publisher's Release stores: the
        // counter updates behind these numbers are in the slab (docs/abi.md
        // §2.4).
        let (c, r) = (&self.completions, &self.refusals);
        (c.load(Ordering::Acquire), r.load(Ordering::Acquire))
    }
}

/// Record transitions from the writer's hook, drained into the trace.
#[derive(Clone, Default)]
struct SharedTransitions(Arc<Mutex<Vec<Transition>>>);

impl TransitionHook for SharedTransitions {
    fn on_transition(&mut self, t: Transition) {
        lock(&self.0).push(t);
    }
}

/// The writer and what the publisher knows (apart from its mailboxes).
struct Books<S: SlabMut> {
    writer: Writer<S>,
    /// Number of cores.
    cores: u8,
    /// (model handle, core, slot) of every live record.
    records: Vec<(u32, u8, ModelSlot)>,
    /// What it has applied, shared (only the publisher writes it,
    /// [`publish`]).
    stats: Arc<PubStats>,
    /// Completions applied whose counter increments are still deferred
    /// (published with them, by [`Books::flush`]).
    deferred: u64,
    last_error: Option<String>,
    /// Where the publisher is (`fsm::publisher`).
    state: PublisherState,
    /// Events its state did not accept.
    fsm_violations: u64,
    /// Per core, the completion counters' increments not yet in the slab
    /// (by NC counter index) and a bit per index that has one: a drained
    /// batch of completions updates each counter once ([`Books::flush`],
    /// before the applied counts are published), not once per message.
    pending: Vec<([u64; NC_NAMED], u64)>,
}

/// Add `n` to one of the shared applied counts (only the publisher writes
/// them: a load and a store, no locked read-modify-write).
fn publish(count: &AtomicU64, n: u64) {
    // Ordering: Release pairs with the Acquire loads in `PubStats::applied`
    // (and the API's): the slab updates behind the count are done
    // (docs/abi.md §2.4).
    count.store(count.load(Ordering::Relaxed) + n, Ordering::Release);
}

/// The named NC counters (indices `0..=HW_ERR_REPAIRABLE_HBM_UE`).
const NC_NAMED: usize = NcCounter::HwErrRepairableHbmUe as usize + 1;
const _: () = assert!(NC_NAMED <= 64, "one dirty bit per counter");

impl<S: SlabMut> Books<S> {
    /// Counter `c` of `core`, when the system has that core.
    fn nc(&self, core: u8, c: NcCounter) -> Option<Counter> {
        Counter::nc(core.into(), c)
            .ok()
            .filter(|_| core < self.cores)
    }

    fn add(&mut self, core: u8, c: NcCounter, v: u64) {
        if v == 0 {
            return;
        }
        match self.nc(core, c) {
            Some(k) => self.change(k, c.name(), v, false),
            None => self.fail(format!("core {core} has no counter {}", c.name())),
        }
    }

    /// [`add`](Self::add) at the next [`flush`](Self::flush) (counter
    /// increments commute: the slab ends up the same).
    fn defer(&mut self, core: u8, c: NcCounter, v: u64) {
        let i = c as usize;
        match self.pending.get_mut(usize::from(core)) {
            Some((sums, dirty)) if i < NC_NAMED => {
                sums[i] = sums[i].wrapping_add(v);
                *dirty |= 1 << i;
            }
            _ => self.add(core, c, v),
        }
    }

    /// Apply every deferred increment to the slab, then publish the
    /// completions they belong to.
    fn flush(&mut self) {
        for core in 0..self.pending.len() {
            let mut dirty = core::mem::take(&mut self.pending[core].1);
            while dirty != 0 {
                let i = dirty.trailing_zeros() as usize;
                dirty &= dirty - 1;
                let v = core::mem::take(&mut self.pending[core].0[i]);
                if let Some(c) = NcCounter::from_index(i as u32) {
                    self.add(core as u8, c, v);
                }
            }
        }
        publish(&self.stats.completions, core::mem::take(&mut self.deferred));
    }

    /// Add `v` to (or, `sub`, take it from) counter `k`, named `name`.
    fn change(&mut self, k: Counter, name: &str, v: u64, sub: bool) {
        if v == 0 {
            return;
        }
        let r = if sub {
            self.writer.sub(k, v)
        } else {
            self.writer.add(k, v)
        };
        if let Err(e) = r {
            self.fail(format!("{name}: {e}"));
        }
    }

    fn fail(&mut self, why: String) {
        publish(&self.stats.errors, 1);
        self.last_error = Some(why);
    }

    /// Add (or, `sub`, take) a model's memory on its core: the NC
    /// `MEM_USAGE_*_DEVICE` and the ND `MEM_USAGE_*_HOST` counters, each a
    /// run of four in the NDS slot order of
    /// [`MemUsage::as_array`](crate::device::model::MemUsage::as_array).
    fn model_mem(&mut self, m: &ModelLoad, sub: bool) {
        for (k, v) in (0..).zip(m.device.as_array()) {
            let c = NcCounter::from_index(NcCounter::MemUsageCodeDevice as u32 + k);
            if let Some((c, n)) = c.and_then(|c| Some((c, self.nc(m.core, c)?))) {
                self.change(n, c.name(), v, sub);
            }
        }
        for (k, v) in (0..).zip(m.host.as_array()) {
            if let Some(c) = NdCounter::host_memory(k) {
                self.change(Counter::nd(c), c.name(), v, sub);
            }
        }
    }

    /// Apply one completion: every counter comes from the parsed
    /// `infer_resp_t` bytes (the record), the EXT counter from the message.
    fn completed(&mut self, c: &Completion) {
        let core = c.core;
        let r = match InferResp::parse(&c.resp) {
            Ok(r) => r,
            Err(e) => {
                self.fail(format!("core {core}: completion response: {e}"));
                return;
            }
        };
        self.defer(core, NcCounter::InferenceCount, 1);
        self.defer(core, NcCounter::LatencyTotal, r.latency_total_ns());
        self.defer(core, NcCounter::LatencyDevice, r.latency_device_ns());
        self.defer(core, NcCounter::MacCount, r.mac_count);
        let outcome = match r.status {
            NrtStatus::SUCCESS => NcCounter::InferCompleted,
            NrtStatus::TIMEOUT => NcCounter::InferTimedOut,
            NrtStatus::EXEC_COMPLETED_WITH_NUM_ERR => NcCounter::InferCompletedWithNumErr,
            _ => NcCounter::InferCompletedWithErr,
        };
        self.defer(core, outcome, 1);
        if let Some(class) = r.err_class {
            // One enum for NQ classes and counters: the mapping is total.
            let counter = class.counter();
            // Mutant (`xunds sim` must find it): transient errors are
            // published to their neighbour's counter.
            #[cfg(xunds_mutant = "class_to_neighbour")]
            let counter = match class {
                crate::wire::nq::ErrorClass::Transient => crate::wire::nq::ErrorClass::Hw.counter(),
                _ => counter,
            };
            self.defer(core, counter, 1);
        }
        if let Some(ext) = c.ext {
            self.defer(core, ext, 1);
        }
        self.deferred += 1;
    }

    /// A model loaded on its core: its record committed, its memory counted.
    fn load(&mut self, m: &ModelLoad, cx: &mut Cx<'_>) {
        let (handle, core) = (m.handle, m.core);
        msg!(cx, "model {handle} loaded on core {core}");
        match self.writer.commit_model(&m.record) {
            Ok(slot) => self.records.push((handle, core, slot)),
            Err(e) => self.fail(format!("commit model {handle} core {core}: {e}")),
        }
        self.add(core, NcCounter::ModelLoadCount, 1);
        self.model_mem(m, false);
    }

    /// A model unloaded from its core: its record deleted, its memory
    /// taken back.
    fn unload(&mut self, m: &ModelLoad, cx: &mut Cx<'_>) {
        let (handle, core) = (m.handle, m.core);
        msg!(cx, "model {handle} unloaded from core {core}");
        let key = (handle, core);
        let found = self.records.iter().position(|r| (r.0, r.1) == key);
        match found {
            Some(i) => {
                let (_, _, slot) = self.records.swap_remove(i);
                if let Err(e) = self.writer.delete_model(slot) {
                    self.fail(format!("delete model {handle} core {core}: {e}"));
                }
            }
            // An unload the publisher's books do not accept: no record of
            // that model on that core was committed.
            None => cx.refused(
                &mut self.fsm_violations,
                format_args!(
                    "publisher: unload of model {handle} core {core} without a committed record"
                ),
            ),
        }
        self.model_mem(m, true);
    }

    /// Step the publisher's cycle (untraced: one step per message). An
    /// event its state does not accept is counted, traced, and leaves the
    /// state as it was.
    fn go(&mut self, e: PublisherEvent, cx: &mut Cx<'_>) -> bool {
        step_counted::<PublisherCycle>(&mut self.state, e, None, &mut self.fsm_violations, cx)
    }

    fn apply(&mut self, m: PubMsg, cx: &mut Cx<'_>) {
        let event = match m {
            PubMsg::ModelUnloaded(_) => PublisherEvent::Unload,
            _ => PublisherEvent::Apply,
        };
        // Refused only before the start (never: `poll` starts first). The
        // message is applied all the same: nothing reported may be lost.
        let _accepted = self.go(event, cx);
        match m {
            PubMsg::Completed(c) => self.completed(&c),
            PubMsg::Refused(core, n) => {
                self.add(core, NcCounter::InferFailedToQueue, n.into());
                publish(&self.stats.refusals, n.into());
            }
            PubMsg::ModelLoaded(m) => self.load(&m, cx),
            PubMsg::ModelUnloaded(m) => self.unload(&m, cx),
            PubMsg::HostMisc(bytes) => {
                let c = NdCounter::MemUsageMiscHost;
                self.change(Counter::nd(c), c.name(), bytes, false);
            }
        }
    }
}

/// The NDS-publisher actor.
pub struct PublisherActor<S: SlabMut> {
    books: Books<S>,
    inbound: Vec<Receiver<PubMsg>>,
    control: crossbeam_channel::Receiver<PubMsg>,
    wake: Arc<Waker>,
    hook: Option<SharedTransitions>,
    reported_errors: u64,
}

debug_fields!([S: SlabMut] PublisherActor<S>, |s| stats = s.books.stats; ..);

/// Messages drained from one mailbox per poll (bounded work per poll).
const DRAIN: usize = 256;

impl<S: SlabMut> PublisherActor<S> {
    /// A publisher over `p.writer`.
    pub fn new(p: PublisherParts<S>) -> PublisherActor<S> {
        let hook = p.trace_records.then(SharedTransitions::default);
        if let Some(h) = &hook {
            p.writer.set_hook(Box::new(h.clone()));
        }
        PublisherActor {
            books: Books {
                writer: p.writer,
                cores: p.cores,
                records: Vec::with_capacity(crate::nds::MODEL_SLOTS),
                stats: p.stats,
                deferred: 0,
                last_error: None,
                state: PublisherState::Starting,
                fsm_violations: 0,
                pending: vec![([0; NC_NAMED], 0); usize::from(p.cores)],
            },
            inbound: p.inbound,
            control: p.control,
            wake: p.wake,
            hook,
            reported_errors: 0,
        }
    }

    /// The writer (for a final read-back through its own mapping).
    #[cfg(any(test, feature = "testkit"))]
    pub fn writer(&self) -> &Writer<S> {
        &self.books.writer
    }

    fn start(&mut self, cx: &mut Cx<'_>) {
        let w = &self.books.writer;
        let none = VersionInfo::default();
        w.set_versions(RUNTIME_VERSION, none, none);
        let mut f = Features::empty();
        f.set(Features::MULTICORE, self.books.cores > 1);
        w.set_features(f);
        // The tag in full in the ext record (256 bytes), cut to 31 bytes in
        // the process-info record.
        let tag = process_tag();
        let info = ProcessInfo {
            tag: c_string(&tag),
            runtime_version: RUNTIME_VERSION,
            ..ProcessInfo::default()
        };
        let r1 = w.publish_process_info(&info);
        let ext = ProcessInfoExt {
            hash: 0,
            tag: c_string(&tag),
        };
        let r2 = w.publish_process_info_ext(&ext);
        for (what, r) in [("process info", r1), ("process info ext", r2)] {
            if let Err(e) = r {
                self.books.fail(format!("{what}: {e}"));
            }
        }
        let (cores, n) = (self.books.cores, counters::NC_COUNTER_COUNT);
        msg!(cx, "process info published cores={cores} counters/core={n}");
    }

    fn drain_all(&mut self, cx: &mut Cx<'_>) -> bool {
        let mut n = 0;
        let books = &mut self.books;
        for m in self.control.try_iter().take(DRAIN) {
            books.apply(m, cx);
            n += 1;
        }
        for r in &mut self.inbound {
            n += r.drain(DRAIN, |m| books.apply(m, cx));
        }
        // Into the slab before the applied counts are published (nothing
        // is deferred when nothing was drained: an idle poll skips it).
        if n > 0 {
            self.books.flush();
        }
        n > 0
    }

    fn trace_records(&mut self, cx: &mut Cx<'_>) {
        if let Some(h) = &self.hook {
            let ts = core::mem::take(&mut *lock(&h.0));
            for t in ts {
                cx.on_transition(t);
            }
        }
    }
}

impl<S: SlabMut + Send> Actor for PublisherActor<S> {
    fn name(&self) -> &str {
        "publisher"
    }

    fn poll(&mut self, cx: &mut Cx<'_>) -> Progress {
        self.wake.awake();
        let mut made = match self.books.state {
            PublisherState::Starting => {
                self.start(cx);
                self.books.go(PublisherEvent::Start, cx);
                true
            }
            PublisherState::Running => false,
        };
        made |= self.drain_all(cx);
        if !made {
            self.wake.prepare_sleep();
            if !self.control.is_empty() || self.inbound.iter().any(|r| !r.is_empty()) {
                self.wake.awake();
                made = self.drain_all(cx);
            }
        }
        let errors = self.books.stats.errors.load(Ordering::Relaxed);
        if errors > self.reported_errors {
            self.reported_errors = errors;
            let why = self.books.last_error.clone().unwrap_or_default();
            msg!(cx, "nds error: {why}");
        }
        // Ordering: Release pairs with the Acquire loads in
        // `PubStats::applied`, as in `publish` (docs/abi.md §2.4).
        self.books
            .stats
            .fsm_violations
            .store(self.books.fsm_violations, Ordering::Release);
        self.trace_records(cx);
        Progress::of(made)
    }

    fn idle(&self) -> Idle {
        Idle::Fd(self.wake.fd())
    }
}

/// The process's tag as the Neuron runtime publishes it (monitors select
/// runtimes by it): `NEURON_PROCESS_TAG` when set, else the pid as a
/// string.
fn process_tag() -> String {
    std::env::var("NEURON_PROCESS_TAG")
        .ok()
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| std::process::id().to_string())
}
