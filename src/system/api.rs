//! The public API, mirroring the runtime's async API (docs/abi.md §4 "The
//! public async API our surface mirrors"):
//!
//! | call | runtime | what it does |
//! |---|---|---|
//! | [`System::load_model`] / [`System::load_mlp`] | `nrt_load` | link and load the model on every core, one NDS record per core |
//! | [`System::unload_model`] | `nrt_unload` | delete the records, decrement the memory counters |
//! | [`System::schedule`] | `nrta_schedule` | the producer funnel on the caller's thread under the XU's submit lock; a `SeqId`, or `NRT_QUEUE_FULL` / 101; never waits for the device or for ring space (the lock only: other schedulers, a reset or `quiesce`'s flush may hold it a moment) |
//! | [`System::is_completed`] | `nrta_is_completed` | `seq <= last_completed` for the handle's XU |
//! | [`System::last_completed`] | `nrta_get_last_completed` | `(exec_head - 1) \| xu_id << 48` |
//! | [`System::arm`] | completion fd (caller-owned eventfd) | installs a dup of the caller's eventfd; the worker signals it at completion |
//! | [`System::wait`] | completion fd (runtime-pooled eventfd) | re-checks for up to `SystemConfig::wait_spin`, then blocks on a pooled eventfd (`efd_from_pool`) |
//! | [`System::execute`] | `nrt_execute` | schedule + wait + the outputs |
//! | [`System::reset`] | `nrt_unload` + `nrt_load` of the XU | drain the XU, re-initialise its queues, back to healthy |
//!
//! Statuses are [`NrtStatus`] values with their C names (`status.name()`).
//! A timeout or a fatal device error degrades the XU: every later schedule on
//! it returns `NRT_EXEC_UNIT_UNRECOVERABLE` (101) until [`System::reset`]
//! (or, for a fault its queues survived, [`System::recover`]) brings it
//! back; while a reset runs, schedules get `NRT_QUEUE_FULL` (retry later).
//!
//! [`System::start`] runs the workers, the device proxies and the NDS
//! publisher on the threaded runner's threads, placed as
//! [`SystemConfig::placement`] says; the caller's threads are the
//! producers. [`System::shutdown`] waits until everything
//! in flight has completed and the slab agrees with it, then stops them.
//!
//! ```
//! use xunds::hal::linux::LinuxHal;
//! use xunds::system::{MlpSpec, System, SystemConfig};
//! use std::time::Duration;
//!
//! let sys = System::start(LinuxHal::new(), SystemConfig::new(2)).unwrap();
//! let model = sys.load_mlp(&MlpSpec::EXAMPLE, "mlp").unwrap();
//! let x = MlpSpec::EXAMPLE.example_input(1);
//! let done = sys.execute(0, &model, &x, Duration::from_secs(5)).unwrap();
//! assert_eq!(done.status.name(), Some("SUCCESS"));
//! assert_eq!(done.outputs, model.reference(&x));
//! sys.shutdown().unwrap();
//! ```

use std::path::Path;
use std::sync::{atomic, Arc, MutexGuard};
use std::time::{Duration, Instant};

use crate::actors::lock;
use crate::actors::producer::{
    publisher_caught_up, Lane, LaneStats, ProducerStats, Request, RingQueue,
};
use crate::actors::sequencer::DeviceStats;
use crate::actors::work::{OutputBuf, RecoverError, ResidentModel, NO_EXPECT};
use crate::actors::worker::WorkerStats;
use crate::actors::{Cx, Nanos, NullTrace};
use crate::device::model::{MlpSpec, ModelBuilder};
use crate::hal::eventfd::EventFd;
use crate::hal::Hal;
use crate::ring::waiter::after;
use crate::ring::StatusArc;
use crate::ring::{Armed, StatusCell, WaitMode, Waited};
use crate::system::error::Error;
use crate::wire::seq_id::SeqId;
use crate::wire::status::NrtStatus;
use crate::wire::work_item::InferResp;

use super::builder::{build, Built, Shared, SysActor, SystemConfig};
use super::runner::{MonotonicClock, Running, ThreadedConfig, ThreadedRunner};

/// How often a blocked [`System::wait`] looks whether the daemons stopped.
pub const STOP_CHECK: Duration = Duration::from_millis(100);

/// A model loaded on every core of one [`System`] (the one that loaded it:
/// another system refuses it, whatever its number).
///
/// # Examples
///
/// ```
/// use xunds::hal::linux::LinuxHal;
/// use xunds::system::{MlpSpec, System, SystemConfig};
///
/// let sys = System::start(LinuxHal::new(), SystemConfig::new(1)).unwrap();
/// let m = sys.load_mlp(&MlpSpec::EXAMPLE, "mlp").unwrap();
/// assert_eq!((m.name(), m.input_len(), m.macs()), ("mlp", 64, 3072));
/// let x = MlpSpec::EXAMPLE.example_input(7);
/// assert_eq!(m.reference(&x).len(), m.output_len());
/// sys.unload_model(m).unwrap();
/// sys.shutdown().unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct ModelHandle(Arc<ResidentModel>, SystemId);

/// Which [`System`] of this process: handles carry it, so a model handle of
/// one system is never taken for the same-numbered model of another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SystemId(u64);

impl SystemId {
    fn next() -> SystemId {
        static NEXT: atomic::AtomicU64 = atomic::AtomicU64::new(1);
        // Relaxed: a unique number is all it needs to be.
        SystemId(NEXT.fetch_add(1, atomic::Ordering::Relaxed))
    }
}

impl ModelHandle {
    /// The handle number (the NDS records' `model_id`).
    pub fn id(&self) -> u32 {
        self.0.handle
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// Input values per execution.
    pub fn input_len(&self) -> usize {
        self.0.input_len()
    }

    /// Output values per execution.
    pub fn output_len(&self) -> usize {
        self.0.output_len()
    }

    /// The CPU reference outputs for `input`.
    pub fn reference(&self, input: &[f32]) -> Vec<f32> {
        self.0.image.reference(input)
    }

    /// MACs per execution.
    pub fn macs(&self) -> u64 {
        self.0.image.macs
    }
}

/// Optional outputs of a schedule call.
///
/// # Examples
///
/// Schedule without blocking, then read the status and the outputs once
/// the execution has completed:
///
/// ```
/// use std::time::Duration;
/// use xunds::hal::linux::LinuxHal;
/// use xunds::system::{MlpSpec, ScheduleOpts, System, SystemConfig};
/// use xunds::NrtStatus;
///
/// let sys = System::start(LinuxHal::new(), SystemConfig::new(1)).unwrap();
/// let m = sys.load_mlp(&MlpSpec::EXAMPLE, "mlp").unwrap();
/// let x = MlpSpec::EXAMPLE.example_input(1);
/// let opts = ScheduleOpts::for_model(&m);
/// let (status, out) = (opts.status.clone().unwrap(), opts.out.clone().unwrap());
/// let seq = sys.schedule(0, &m, &x, opts).unwrap();
/// sys.wait(seq, Duration::from_secs(10)).unwrap();
/// assert!(sys.is_completed(seq).unwrap());
/// assert_eq!(status.get(), Some(NrtStatus::SUCCESS));
/// assert_eq!(out.to_vec(), m.reference(&x));
/// assert_eq!(out.response().unwrap().mac_count, 3072);
///
/// // Without a status cell or output buffer only completion is observable.
/// let seq = sys.schedule(0, &m, &x, ScheduleOpts::default()).unwrap();
/// sys.wait(seq, Duration::from_secs(10)).unwrap();
/// sys.shutdown().unwrap();
/// ```
#[derive(Clone, Debug, Default)]
pub struct ScheduleOpts {
    /// The status cell the worker writes before completion is observable.
    pub status: Option<StatusArc>,
    /// Where the worker copies the outputs.
    pub out: Option<Arc<OutputBuf>>,
}

impl ScheduleOpts {
    /// A fresh status cell and output buffer for `model`.
    pub fn for_model(model: &ModelHandle) -> ScheduleOpts {
        ScheduleOpts {
            status: Some(Arc::new(StatusCell::new())),
            out: Some(Arc::new(OutputBuf::new(model.output_len()))),
        }
    }
}

/// A finished blocking execution.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use xunds::hal::linux::LinuxHal;
/// use xunds::system::{MlpSpec, System, SystemConfig};
/// use xunds::NrtStatus;
///
/// let sys = System::start(LinuxHal::new(), SystemConfig::new(1)).unwrap();
/// let m = sys.load_mlp(&MlpSpec::EXAMPLE, "mlp").unwrap();
/// let x = MlpSpec::EXAMPLE.example_input(3);
/// let e = sys.execute(0, &m, &x, Duration::from_secs(10)).unwrap();
/// assert_eq!(e.status, NrtStatus::SUCCESS);
/// assert_eq!(e.seq.xu_id(), sys.last_completed(0).unwrap().xu_id());
/// assert!(e.response.ts_end >= e.response.ts_start);
/// assert_eq!(e.outputs, m.reference(&x));
/// sys.shutdown().unwrap();
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Execution {
    /// Its handle.
    pub seq: SeqId,
    /// Its status (the slot's `exec_status`, as the caller saw it).
    pub status: NrtStatus,
    /// Its outputs (meaningful when `status` is `SUCCESS`).
    pub outputs: Vec<f32>,
    /// Its `infer_resp_t`, parsed from the bytes the worker wrote into the
    /// work item: `ts_start`, `ts_end`, `device_start_ns`, `device_end_ns`,
    /// `mac_count`, `status`, `err_class`, `nq_records` (docs/abi.md §1.7).
    pub response: InferResp,
}

/// What a system did, when it is shut down.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use xunds::hal::linux::LinuxHal;
/// use xunds::system::{MlpSpec, System, SystemConfig};
///
/// let sys = System::start(LinuxHal::new(), SystemConfig::new(2)).unwrap();
/// let m = sys.load_mlp(&MlpSpec::EXAMPLE, "mlp").unwrap();
/// let x = MlpSpec::EXAMPLE.example_input(1);
/// for xu in [0, 1, 1] {
///     sys.execute(xu, &m, &x, Duration::from_secs(10)).unwrap();
/// }
/// let report = sys.shutdown().unwrap();
/// assert_eq!(report.workers.len(), 2);
/// assert_eq!(report.lanes[1].accepted, 2, "two accepted on XU 1");
/// assert_eq!(report.device.executed, 3);
/// assert_eq!((report.nds_errors, report.publisher_fsm_violations), (0, 0));
/// ```
#[derive(Clone, Debug, Default)]
pub struct SystemReport {
    /// Per worker (core order).
    pub workers: Vec<WorkerStats>,
    /// The device proxies (summed).
    pub device: DeviceStats,
    /// Per lane (core order).
    pub lanes: Vec<LaneStats>,
    /// NDS updates the slab refused (0 unless something is wrong).
    pub nds_errors: u64,
    /// Events the publisher's state did not accept (0 unless something is
    /// wrong; the workers' and device proxies' are in their stats).
    pub publisher_fsm_violations: u64,
}

/// A running system driven through the public API.
///
/// # Examples
///
/// Two cores, a slab other processes can read, the example MLP on both:
///
/// ```
/// use std::time::Duration;
/// use xunds::hal::linux::LinuxHal;
/// use xunds::nds::{Counter, Reader};
/// use xunds::system::{MlpSpec, SlabTarget, System, SystemConfig};
/// use xunds::wire::nds::counters::NcCounter;
///
/// let path = std::env::temp_dir().join(format!("xunds-doc-system-{}.nds", std::process::id()));
/// let mut cfg = SystemConfig::new(2);
/// cfg.slab = SlabTarget::Path(path.clone());
/// let sys = System::start(LinuxHal::new(), cfg).unwrap();
/// assert_eq!(sys.cores(), 2);
/// let m = sys.load_mlp(&MlpSpec::EXAMPLE, "mlp").unwrap();
/// let e = sys.execute(1, &m, &MlpSpec::EXAMPLE.example_input(1), Duration::from_secs(10)).unwrap();
/// assert_eq!(e.status.name(), Some("SUCCESS"));
///
/// assert!(sys.quiesce(Duration::from_secs(10)), "the slab agrees with what ran");
/// let r = Reader::open(sys.slab_path().unwrap()).unwrap();
/// assert_eq!(r.counter(Counter::nc(1, NcCounter::InferCompleted).unwrap()).unwrap(), 1);
/// sys.shutdown().unwrap();
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub struct System<H: Hal + 'static> {
    /// Dropped first: a system dropped without [`System::shutdown`] stops
    /// its daemons and waits for them.
    running: Running<SysActor<H>>,
    id: SystemId,
    shared: Arc<Shared<H>>,
    clock: MonotonicClock,
}

debug_fields!([H: Hal + 'static] System<H>, |s| cores = s.shared.cfg.cores; ..);

impl<H: Hal + 'static> System<H> {
    /// Build the system on `hal` and start its daemons (the workers, the
    /// device proxies and the publisher) on threads as `cfg.placement`
    /// says.
    pub fn start(hal: H, cfg: SystemConfig) -> Result<System<H>, Error> {
        let Built { shared, daemons } = build(hal, cfg, None)?;
        let mut r = ThreadedRunner::new(ThreadedConfig::default())?;
        let clock = MonotonicClock::start();
        r.set_clock(clock);
        let cfg = &shared.cfg;
        cfg.placement.place(cfg.cores, &mut r, daemons);
        let running = r.start()?;
        Ok(System {
            id: SystemId::next(),
            shared,
            clock,
            running,
        })
    }

    /// Number of XUs (cores).
    pub fn cores(&self) -> u8 {
        self.shared.cfg.cores
    }

    /// The system's time (the runner's clock).
    pub fn now(&self) -> Nanos {
        self.clock.now()
    }

    /// The slab file, when the system writes one.
    pub fn slab_path(&self) -> Option<&Path> {
        self.shared.slab_path.as_deref()
    }

    /// Load a model built by `builder` on every core.
    pub fn load_model(&self, builder: &ModelBuilder, name: &str) -> Result<ModelHandle, Error> {
        self.live()?;
        Ok(ModelHandle(self.shared.load_model(builder, name)?, self.id))
    }

    /// Load an MLP.
    pub fn load_mlp(&self, spec: &MlpSpec, name: &str) -> Result<ModelHandle, Error> {
        let b = spec
            .builder()
            .map_err(|e| Error::Other(format!("model: {e}")))?;
        self.load_model(&b, name)
    }

    /// Unload a model: its records go, and its handle resolves no more (an
    /// execution of it the worker has not picked up yet, or scheduled
    /// through a clone of the handle later, completes with
    /// `NRT_INVALID_HANDLE`; one already picked up finishes normally).
    /// Unloading it twice, or a model another system loaded, is an error.
    pub fn unload_model(&self, model: ModelHandle) -> Result<(), Error> {
        self.own(&model)
            .map_err(|s| Error::status_with(s, "the model was loaded by another system"))?;
        self.live()?;
        self.shared.unload_model(&model.0)
    }

    /// `NRT_INVALID_HANDLE` unless this system loaded `model`: a handle of
    /// another system numbers its own models and addresses its own device
    /// memory (its input would land in this system's memory at that
    /// system's addresses).
    fn own(&self, model: &ModelHandle) -> Result<(), NrtStatus> {
        (model.1 == self.id)
            .then_some(())
            .ok_or(NrtStatus::INVALID_HANDLE)
    }

    fn lane(&self, xu: u8) -> Result<MutexGuard<'_, Lane<H>>, NrtStatus> {
        let lane = self.shared.lanes.get(usize::from(xu));
        lane.map(lock).ok_or(NrtStatus::INVALID)
    }

    /// Schedule one execution of `model` on XU `xu`: a `SeqId`, or the
    /// refusal (`NRT_QUEUE_FULL`, 101, `NRT_INVALID`; `NRT_INVALID_HANDLE`
    /// for a model another system loaded). Never waits for the
    /// device or for ring space; it takes the XU's submit lock, which other
    /// schedulers, a reset and `quiesce`'s flush hold for a moment.
    pub fn schedule(
        &self,
        xu: u8,
        model: &ModelHandle,
        input: &[f32],
        opts: ScheduleOpts,
    ) -> Result<SeqId, NrtStatus> {
        self.own(model)?;
        self.running()?;
        let mut lane = self.lane(xu)?;
        lane.schedule(
            Request {
                model: &model.0,
                input,
                status: opts.status,
                out: opts.out,
                expect: NO_EXPECT,
                tag: 0,
            },
            &mut Cx::new(self.now(), "api", &mut NullTrace),
        )
    }

    fn queue_of(&self, seq: SeqId) -> Result<&RingQueue, NrtStatus> {
        let q = self.shared.queues.get(usize::from(seq.vnc_id()));
        q.filter(|q| q.xu() == seq.xu_id())
            .ok_or(NrtStatus::INVALID_HANDLE)
    }

    /// Whether `seq` has completed (its status is then readable).
    pub fn is_completed(&self, seq: SeqId) -> Result<bool, NrtStatus> {
        self.queue_of(seq)?
            .is_completed(seq)
            .map_err(|e| e.status())
    }

    /// The newest completed handle of XU `xu`.
    pub fn last_completed(&self, xu: u8) -> Result<SeqId, NrtStatus> {
        let q = self.shared.queues.get(usize::from(xu));
        q.map(|q| q.last_completed()).ok_or(NrtStatus::INVALID)
    }

    /// Bring XU `xu` back after a fault its queues survived (a hardware
    /// error the device reported in its own record), without a reset:
    /// refused while executions are still in flight on it (wait for them
    /// first), and when the fault lost a record, doorbell or descriptor
    /// ([`RecoverError::QueuesLost`]: use [`System::reset`]). A healthy XU
    /// is [`RecoverError::NotDegraded`]. Schedules are accepted again after.
    pub fn recover(&self, xu: u8) -> Result<(), RecoverError> {
        let x = usize::from(xu);
        let (Some(q), Some(h)) = (self.shared.queues.get(x), self.shared.healths.get(x)) else {
            return Err(RecoverError::NoSuchXu);
        };
        match q.in_flight() {
            n if n > 0 && h.recoverable() => Err(RecoverError::InFlight(n)),
            _ => h.recover(xu, &mut crate::fsm::NoHook),
        }
    }

    /// Reset XU `xu` (the runtime's unload and reload of the unit), whatever
    /// degraded it (a lost NQ record or doorbell, a DMA abort, an NQ
    /// overflow, a timeout, a hardware error) or a healthy one: schedules
    /// are refused with `NRT_QUEUE_FULL` from now on; the device is stopped
    /// and discards what it has queued; every execution in flight completes
    /// exactly once (with its records if the device wrote them, else
    /// aborted with `NRT_EXEC_UNIT_UNRECOVERABLE`); then the device's NQ
    /// rings, its descriptor rings and the staging slots start over and the
    /// XU is HEALTHY again (`fsm::xu_health`). Waits up to `timeout` for
    /// that ([`RecoverError::TimedOut`] if it has not happened yet: the
    /// reset goes on). [`RecoverError::Resetting`] when a reset already
    /// runs.
    pub fn reset(&self, xu: u8, timeout: Duration) -> Result<(), RecoverError> {
        let h = self.shared.healths.get(usize::from(xu));
        let h = h.ok_or(RecoverError::NoSuchXu)?;
        let mut lane = self.lane(xu).map_err(|_| RecoverError::NoSuchXu)?;
        lane.begin_reset(&mut Cx::new(self.now(), "api", &mut NullTrace))
            .map_err(|_| RecoverError::Resetting)?;
        drop(lane);
        let deadline = after(Instant::now(), timeout);
        while h.state() != crate::fsm::xu_health::XuHealthState::Healthy {
            if self.running().is_err() {
                return Err(RecoverError::Stopped);
            }
            if Instant::now() >= deadline {
                return Err(RecoverError::TimedOut);
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        Ok(())
    }

    /// Completion by fd (caller-owned): the worker signals `ev` when `seq`
    /// completes (`Installed`), or nothing is installed because it already
    /// has (`AlreadyComplete`).
    pub fn arm(&self, seq: SeqId, ev: &EventFd) -> Result<Armed, NrtStatus> {
        self.queue_of(seq)?.arm(seq, ev).map_err(|e| e.status())
    }

    /// Wait until `seq` completes or `timeout` passes: re-check for up to
    /// [`SystemConfig::wait_spin`], then block on a pooled eventfd, looking
    /// at the daemons every [`STOP_CHECK`]: `NRT_FAILURE` once they have
    /// stopped (nothing would ever complete it).
    pub fn wait(&self, seq: SeqId, timeout: Duration) -> Result<Waited, NrtStatus> {
        let q = self.queue_of(seq)?;
        let mode = WaitMode::SpinThenBlock {
            max: self.shared.cfg.wait_spin,
        };
        // The first slice is the whole wait of every execution that
        // completes within STOP_CHECK: no clock read or stop check before it,
        // and a completion is reported whatever happened to the daemons.
        let mut deadline = None;
        loop {
            let left = deadline.map_or(timeout, |d: Instant| {
                d.saturating_duration_since(Instant::now())
            });
            match q.wait(seq, mode, left.min(STOP_CHECK)) {
                Ok(Waited::TimedOut) if left > STOP_CHECK => {
                    self.running()?;
                    deadline.get_or_insert_with(|| after(Instant::now(), left - STOP_CHECK));
                }
                r => return r.map_err(|e| e.status()),
            }
        }
    }

    /// `NRT_FAILURE` once the daemons have stopped (one panicked, and the
    /// runner stopped the rest): no execution can complete any more.
    fn running(&self) -> Result<(), NrtStatus> {
        (!self.running.stop_handle().is_stopped())
            .then_some(())
            .ok_or(NrtStatus::FAILURE)
    }

    /// [`running`](Self::running) as the API's error.
    fn live(&self) -> Result<(), Error> {
        self.running()
            .map_err(|s| Error::status_with(s, "the system's daemons have stopped"))
    }

    /// Stop the daemons as a panicking actor does (tests of what the API
    /// does then).
    #[doc(hidden)]
    #[cfg(any(test, feature = "testkit"))]
    pub fn stop_daemons(&self) {
        self.running.stop_handle().stop();
    }

    /// Schedule, wait, and return the status and outputs. A full queue is
    /// retried until `timeout`.
    pub fn execute(
        &self,
        xu: u8,
        model: &ModelHandle,
        input: &[f32],
        timeout: Duration,
    ) -> Result<Execution, NrtStatus> {
        let deadline = after(Instant::now(), timeout);
        let opts = ScheduleOpts::for_model(model);
        let (status, out) = (opts.status.clone(), opts.out.clone());
        let seq = loop {
            match self.schedule(xu, model, input, opts.clone()) {
                Ok(seq) => break seq,
                Err(NrtStatus::QUEUE_FULL) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_micros(50));
                }
                Err(e) => return Err(e),
            }
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let Waited::Completed { .. } = self.wait(seq, left)? else {
            return Err(NrtStatus::TIMEOUT);
        };
        let out = out.ok_or(NrtStatus::FAILURE)?;
        let response = out.response().map_err(|_| NrtStatus::FAILURE)?;
        Ok(Execution {
            seq,
            // The cell, written through the ring slot; a slot a reset had to
            // discard (its words overwritten) wrote none, and the response
            // in the output buffer still says what happened.
            status: status.and_then(|s| s.get()).unwrap_or(response.status),
            outputs: out.to_vec(),
            response,
        })
    }

    /// Wait until every XU is drained and the publisher has applied every
    /// outcome (so the slab agrees with everything scheduled so far).
    /// `false` if `timeout` passed first.
    pub fn quiesce(&self, timeout: Duration) -> bool {
        let deadline = after(Instant::now(), timeout);
        loop {
            if self.running().is_err() {
                return false;
            }
            let drained = self.shared.queues.iter().all(|q| q.in_flight() == 0);
            let caught_up = publisher_caught_up(&self.shared.lanes, &self.shared.pub_stats);
            if drained && caught_up && self.shared.control.is_empty() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            self.shared.pub_wake.wake();
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Quiesce (up to 30 s), stop the daemons and report what they did.
    pub fn shutdown(self) -> Result<SystemReport, Error> {
        let stopped = self.running().is_err();
        let quiet = self.quiesce(Duration::from_secs(30));
        self.running.stop_handle().stop();
        let rep = self.running.join()?;
        if !quiet {
            return Err(Error::Other(if stopped {
                "shutdown: the daemons had stopped before it (one panicked?): what was in flight is lost".into()
            } else {
                "shutdown: executions still in flight after 30 s".into()
            }));
        }
        Ok(SystemReport::collect(&self.shared, rep.actors).0)
    }
}

impl SystemReport {
    /// What the system's actors did, once their run has ended, and the
    /// producer's counters when one was among them (`xunds run`'s).
    pub(crate) fn collect<H: Hal>(
        shared: &Shared<H>,
        actors: Vec<SysActor<H>>,
    ) -> (SystemReport, ProducerStats) {
        let mut producer = ProducerStats::default();
        let mut workers = Vec::new();
        let mut device = DeviceStats::default();
        for a in actors {
            match a {
                SysActor::Producer(p) => producer = p.stats(),
                SysActor::Worker(w) => workers.push(w.stats().clone()),
                SysActor::Device(d) => device.merge(&d.stats()),
                SysActor::Publisher(_) => {}
            }
        }
        let pub_stats = &shared.pub_stats;
        let report = SystemReport {
            workers,
            device,
            lanes: shared.lanes.iter().map(|l| lock(l).stats()).collect(),
            // Ordering: Acquire; pairs with the publisher's Release store of
            // `errors` (read once its run has ended).
            nds_errors: pub_stats.errors.load(atomic::Ordering::Acquire),
            publisher_fsm_violations: pub_stats.fsm_violations.load(atomic::Ordering::Relaxed),
        };
        (report, producer)
    }
}
