//! The system builder: wires the device, one XU ring per core (the byte-exact
//! `xu_queue_t` in its own mapping), the work-item pools, every mailbox and
//! waker, and the four actors; and loads models onto every core.
//!
//! | queue | from -> to | kind | capacity | full means |
//! |---|---|---|---|---|
//! | XU ring (per core) | lane -> worker | `xu_queue_t` (docs/abi.md §1) | `ring_capacity` | `NRT_QUEUE_FULL` to the caller |
//! | item returns (per core) | worker -> lane | mailbox of `u16` | the pool size | never (there are only that many items) |
//! | counter reports (per core) | worker -> publisher | mailbox of [`PubMsg`] | `report_capacity` | kept by the worker (R1), which starts nothing new until it is delivered (R2) |
//! | refusal counts (per core) | lane -> publisher | mailbox of [`PubMsg`] | 64 | aggregated in the lane, sent with the next call |
//! | control | API callers -> publisher | `crossbeam_channel` (MPSC) | 1024 | the API call (load, unload) waits; never an actor |
//!
//! Every edge is request -> terminal: the publisher and the lane's return
//! drain emit nothing, the worker emits only toward them. The emits relation
//! is acyclic (R3), so filling every queue at once still drains
//! (`tests/system/e2e_deadlock.rs`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::actors::mailbox;
use crate::actors::producer::{Lane, LaneParts, ProducerActor, RingQueue, XuParts};
use crate::actors::publisher::{PubStats, PublisherActor, PublisherParts};
use crate::actors::sequencer::DeviceProxy;
use crate::actors::wake::Waker;
use crate::actors::work::{
    CoreModel, Expectations, HealthCell, ItemPool, ModelLoad, Models, PubMsg, ResidentModel,
};
use crate::actors::worker::{WorkerActor, WorkerParts};
use crate::actors::{Actor, Cx, HalTap, Idle, Nanos, Progress};
use crate::device::engine::{Executor, Limits};
use crate::device::memmap::{DeviceConfig, CORE_AREA};
use crate::device::model::{MemUsage, ModelBuilder};
use crate::device::staging::LoadedModel;
use crate::device::Device;
use crate::hal::mem::Mapping;
use crate::hal::Hal;
use crate::nds::{MappedSlab, Writer};
use crate::ring::{mapped_len, QueueConfig, XuQueue};
use crate::sim::tracer::TraceLog;
use crate::system::error::Error;
use crate::system::runner::{Seat, ThreadedRunner};
use crate::wire::nds::c_string;
use crate::wire::nds::model::{MemLocation, MemSlot, MemUsageInfo, ModelRecord};
use crate::wire::seq_id::XuId;

/// Where the datastore slab lives.
///
/// # Examples
///
/// ```
/// use xunds::system::{SlabTarget, SystemConfig};
///
/// let mut cfg = SystemConfig::new(1);
/// assert_eq!(cfg.slab, SlabTarget::Anonymous);
/// // Where `xunds nds dump` and `xunds monitor` can read it:
/// cfg.slab = SlabTarget::Path(format!("/dev/shm/my-agent-{}.nds", std::process::id()).into());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SlabTarget {
    /// A file, e.g. under `/dev/shm`: other processes can read it (`xunds
    /// nds dump`). Created, or a stale slab reused; refused while another
    /// writer holds it, or when it is an existing file that is not a slab
    /// ([`MappedSlab::create_with`]).
    Path(PathBuf),
    /// As [`SlabTarget::Path`], but an existing file that is not a slab is
    /// overwritten (`--force`); a live writer's slab is still refused.
    Overwrite(PathBuf),
    /// A file with no name ([`MappedSlab::unnamed`]): read back by this
    /// process only, and left nowhere however the process ends (`xunds
    /// sim`'s runs, `xunds replay`).
    Unnamed,
    /// An anonymous mapping (tests that only read back in-process).
    Anonymous,
}

/// How to build a system.
///
/// # Examples
///
/// The defaults for a core count, then what a caller usually changes:
///
/// ```
/// use std::time::Duration;
/// use xunds::hal::linux::LinuxHal;
/// use xunds::system::{Nanos, Placement, System, SystemConfig};
///
/// let mut cfg = SystemConfig::new(4);
/// assert_eq!((cfg.ring_capacity, cfg.wait_spin), (32, Duration::from_micros(200)));
/// cfg.ring_capacity = 8;
/// cfg.timeout = Nanos::from_millis(50);
/// cfg.wait_spin = Duration::ZERO; // block at once: give the CPU back
/// cfg.placement = Placement::PerActor;
/// let sys = System::start(LinuxHal::new(), cfg).unwrap();
/// assert_eq!(sys.cores(), 4);
/// sys.shutdown().unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct SystemConfig {
    /// NeuronCores (= XUs, one worker each), 1..=16.
    pub cores: u8,
    /// Slots per XU ring (= work items per core), 1..=32 (at most the
    /// device's request buffers; staging may still be busy for a moment
    /// while the ring has room, refused as `NRT_QUEUE_FULL` like a full
    /// ring: docs/design.md "Actors and the system").
    pub ring_capacity: u32,
    /// Execution timeout, counted from submission (runner time).
    pub timeout: Nanos,
    /// Device DRAM bytes (models and IO areas come out of it).
    pub dram_size: u64,
    /// The device's wait before a wrong ring id is a corrupt descriptor.
    pub ring_id_grace_ns: u64,
    /// The datastore.
    pub slab: SlabTarget,
    /// Worker -> publisher mailbox capacity.
    pub report_capacity: usize,
    /// Trace slot and record transitions (deterministic traced runs).
    pub trace_transitions: bool,
    /// Keep every completion's tag (tests), with this much room per worker.
    pub record_tags: Option<usize>,
    /// Expected outputs the workers check (`WorkItem::expect`).
    pub expected: Arc<Expectations>,
    /// Workers reset their XU as soon as it is degraded, by any fault
    /// (`xunds run --recover`; `actors::worker` module docs).
    pub recover: bool,
    /// How a threaded run puts the actors on threads.
    pub placement: Placement,
    /// How long [`System::wait`](super::api::System::wait) (and so
    /// `execute`) spins re-checking before it blocks on an eventfd, whose
    /// wake-up can cost more than a small execution (the `api_execute`
    /// bench group). Up to that long a waiting caller keeps its CPU busy
    /// (with a spin hint between re-checks); `Duration::ZERO` re-checks
    /// once, then blocks.
    pub wait_spin: Duration,
}

impl SystemConfig {
    /// Defaults for `cores` cores: ring 32, timeout 1 s, 16 MiB DRAM, an
    /// anonymous slab, waits that spin up to 200 us.
    pub fn new(cores: u8) -> SystemConfig {
        SystemConfig {
            cores,
            ring_capacity: 32,
            timeout: Nanos::from_millis(1000),
            dram_size: 16 << 20,
            ring_id_grace_ns: 1_000_000,
            slab: SlabTarget::Anonymous,
            report_capacity: 1024,
            trace_transitions: false,
            record_tags: None,
            expected: Arc::new(Expectations::default()),
            recover: false,
            placement: Placement::Shared,
            wait_spin: Duration::from_micros(200),
        }
    }

    /// The device configuration this system uses.
    pub fn device_config(&self) -> DeviceConfig {
        DeviceConfig {
            cores: self.cores,
            dram_size: self.dram_size,
            ring_len: 128,
            nq_len: 256,
            request_slots: 32,
            ring_id_grace_ns: self.ring_id_grace_ns,
        }
    }

    /// DRAM bytes that hold `models` copies of a model like `probe` per core
    /// (its shared load area, then one code variant and one IO area per work
    /// item), plus the per-core areas and some slack.
    pub fn dram_for(&self, probe: &crate::device::model::ModelImage, models: u64) -> u64 {
        let items = u64::from(self.ring_capacity);
        let per = probe.footprint()
            + items * (probe.mem.code + probe.mem.tensors)
            + (1 + 2 * items) * 128;
        let total = u64::from(self.cores) * (CORE_AREA + models * per) + (1 << 20);
        total.next_multiple_of(1 << 20)
    }
}

/// What every part of the system shares: the device, the lanes (behind
/// their submit locks), the query side of each ring, the control channel.
pub struct Shared<H: Hal> {
    /// The device.
    pub dev: Device<H>,
    /// One producer lane per XU, each behind its submit lock.
    pub lanes: Arc<[Mutex<Lane<H>>]>,
    /// The query side of each XU's ring.
    pub queues: Vec<RingQueue>,
    /// Each XU's health.
    pub healths: Vec<Arc<HealthCell>>,
    /// To the publisher (model loads, unloads).
    pub control: crossbeam_channel::Sender<PubMsg>,
    /// The publisher's waker.
    pub pub_wake: Arc<Waker>,
    /// What the publisher applied.
    pub pub_stats: Arc<PubStats>,
    /// The configuration.
    pub cfg: SystemConfig,
    /// The slab's path (when it is a file).
    pub slab_path: Option<PathBuf>,
    /// The publisher's slab mapping (a second handle: says whether the file
    /// shrank under it, [`crate::nds::Slab::shrunk`]).
    pub slab: MappedSlab,
    /// HAL trace forwarding (deterministic runs).
    pub tap: HalTap,
    /// The loaded models, by handle (what work items' `mod_ref` names).
    pub models: Arc<Models>,
    next_handle: AtomicU32,
}

/// The system's actors in one type, so both runners can drive them without
/// boxing and hand them back typed. (A handful of long-lived values: the
/// size difference between variants costs nothing worth a box per poll.)
#[allow(clippy::large_enum_variant)]
pub enum SysActor<H: Hal> {
    /// The workload driver.
    Producer(ProducerActor<H>),
    /// A core's worker.
    Worker(WorkerActor<H>),
    /// A device proxy (one per core).
    Device(DeviceProxy<H, Executor>),
    /// The NDS publisher.
    Publisher(PublisherActor<MappedSlab>),
}

/// `$body` with `$a` bound to whichever actor `$actor` holds (a match, so
/// each arm is a direct, inlinable call).
macro_rules! each {
    ($actor:expr, $a:ident => $body:expr) => {
        match $actor {
            SysActor::Producer($a) => $body,
            SysActor::Worker($a) => $body,
            SysActor::Device($a) => $body,
            SysActor::Publisher($a) => $body,
        }
    };
}

impl<H: Hal> Actor for SysActor<H> {
    fn name(&self) -> &str {
        each!(self, a => a.name())
    }

    fn poll(&mut self, cx: &mut Cx<'_>) -> Progress {
        each!(self, a => a.poll(cx))
    }

    fn idle(&self) -> Idle {
        each!(self, a => a.idle())
    }

    fn next_deadline(&self) -> Option<Nanos> {
        each!(self, a => a.next_deadline())
    }
}

wire_enum! {
    /// How a threaded run (`xunds run`, the public API) puts the system's
    /// actors on OS threads, by the name `--placement` takes.
    ///
    /// # Examples
    ///
    /// ```
    /// use xunds::system::Placement;
    ///
    /// assert_eq!(Placement::default(), Placement::Shared);
    /// assert_eq!(Placement::parse("per-actor").unwrap(), Placement::PerActor);
    /// assert!(Placement::parse("one-thread").is_err());
    /// ```
    #[derive(Default)]
    pub enum Placement(usize) {
        /// One thread per CPU, at most one per core plus one: the producer, the
        /// workers and the publisher take turns on the first; the device
        /// proxies are dealt round-robin over all of them, starting with the
        /// second, and shared (the runner's `Seat::Shared`): a thread whose own actors are
        /// idle polls a proxy that is not asleep, so the simulated device's
        /// work spreads over the CPUs whatever the model costs. On a host with
        /// fewer CPUs than actors this leaves no thread yielding to another
        /// one's work (docs/design.md, "Threads").
        #[default]
        Shared = 0 => "shared",
        /// One thread per actor: `2 * vncs + 2`.
        PerActor = 1 => "per-actor",
    }
}

impl Placement {
    /// `shared` or `per-actor`.
    pub fn parse(s: &str) -> Result<Placement, Error> {
        Placement::from_name(s).ok_or_else(|| {
            let names = Placement::ALL.map(Placement::name).join(" or ");
            Error::Other(format!("unknown placement {s:?} ({names})"))
        })
    }

    /// Add `actors` to `r`, each on its seat (every actor but a producer a
    /// daemon), on a host with the CPUs `available_parallelism` reports.
    pub fn place<H: Hal + 'static>(
        self,
        vncs: u8,
        r: &mut ThreadedRunner<SysActor<H>>,
        actors: impl IntoIterator<Item = SysActor<H>>,
    ) {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = cpus.clamp(1, usize::from(vncs) + 1) as u32;
        let mut dealt = 0u32;
        for a in actors {
            let seat = match (self, &a) {
                (Placement::PerActor, _) => Seat::Own,
                (Placement::Shared, SysActor::Device(_)) => {
                    dealt += 1;
                    Seat::Shared(dealt % threads)
                }
                (Placement::Shared, _) => Seat::Group(0),
            };
            let daemon = !matches!(a, SysActor::Producer(_));
            r.add_to(seat, a, daemon);
        }
    }
}

/// A built system: the shared part and the daemon actors (one worker per
/// core, then one device proxy per core, then the publisher), not yet
/// running.
pub struct Built<H: Hal> {
    /// Shared by the API, the producer actor and the daemons.
    pub shared: Arc<Shared<H>>,
    /// The daemons, in that order.
    pub daemons: Vec<SysActor<H>>,
}

fn err(what: &str, e: impl core::fmt::Display) -> Error {
    Error::Other(format!("{what}: {e}"))
}

/// Build a system on `hal` (`log`: the HAL tracer's log, for deterministic
/// traced runs).
pub fn build<H: Hal>(hal: H, cfg: SystemConfig, log: Option<TraceLog>) -> Result<Built<H>, Error> {
    // A request's MAC count lives in its request buffer slot until the
    // worker read it: no more requests in flight per core than slots.
    let slots = cfg.device_config().request_slots;
    if !(1..=slots).contains(&cfg.ring_capacity) {
        return Err(Error::Other(format!(
            "ring capacity {} (must be 1..={slots}, the device's request buffers)",
            cfg.ring_capacity
        )));
    }
    // A zero timeout expires every execution at once and degrades every XU
    // (the run's own check refuses it as --timeout-ms 0).
    if cfg.timeout == Nanos(0) {
        return Err(Error::Other(
            "the execution timeout must be at least 1 ns".into(),
        ));
    }
    // Each core's work items: a host region the HAL maps (docs/design.md
    // "Work items"), mapped before the device's regions.
    let mut hal = hal;
    let cap = cfg.ring_capacity as usize;
    let pools = (0..cfg.cores)
        .map(|core| ItemPool::new(&mut hal, core, cap).map(Arc::new))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| err("work items", e))?;
    let models = Arc::new(Models::default());
    let dev = Device::new(hal, cfg.device_config()).map_err(|e| err("device", e))?;
    let (slab, slab_path) = match &cfg.slab {
        SlabTarget::Path(p) | SlabTarget::Overwrite(p) => (
            MappedSlab::create_with(p, matches!(cfg.slab, SlabTarget::Overwrite(_)))
                .map_err(|e| err(&format!("slab {}", p.display()), e))?,
            Some(p.clone()),
        ),
        SlabTarget::Unnamed => (MappedSlab::unnamed().map_err(|e| err("slab", e))?, None),
        SlabTarget::Anonymous => (MappedSlab::anonymous().map_err(|e| err("slab", e))?, None),
    };
    let slab_handle = slab.clone();
    let writer = Writer::new(slab).map_err(|e| err("slab", e))?;
    let tap = HalTap::new(log);
    let pub_wake = Arc::new(Waker::new()?);
    let pub_stats = Arc::new(PubStats::default());
    let (control, control_rx) = crossbeam_channel::bounded(1024);
    // Per core: its lane, its worker, the waker of its device proxy and the
    // publisher's two mailboxes from it.
    let (mut lanes, mut workers, mut devices) = (Vec::new(), Vec::new(), Vec::new());
    let (mut from_workers, mut from_lanes) = (Vec::new(), Vec::new());
    for (core, pool) in (0..cfg.cores).zip(&pools) {
        let map = Mapping::anonymous(mapped_len(u64::from(cfg.ring_capacity)))?;
        let qcfg = QueueConfig::new(XuId::new(0, 0, core), u64::from(cfg.ring_capacity));
        // SAFETY: the mapping is fresh and anonymous; only this queue ever
        // writes it (the region moves into the queue's storage).
        let (rp, rw) = unsafe { XuQueue::<u64>::mapped(map.into_region(), qcfg) }
            .map_err(|e| err("xu ring", e))?;
        let (ret_tx, ret_rx) = mailbox::bounded::<u16>(cap);
        let (rep_tx, rep_rx) = mailbox::bounded::<PubMsg>(cfg.report_capacity.max(1));
        let (ref_tx, ref_rx) = mailbox::bounded::<PubMsg>(64);
        from_workers.push(rep_rx);
        from_lanes.push(ref_rx);
        let has_work = Arc::new(Waker::new()?);
        let device_wake = Arc::new(Waker::new()?);
        let health = Arc::new(HealthCell::new());
        let xu = || XuParts {
            core,
            hal: Arc::clone(dev.hal()),
            map: Arc::clone(dev.map()),
            pool: Arc::clone(pool),
            health: Arc::clone(&health),
            device_wake: Arc::clone(&device_wake),
            has_work: Arc::clone(&has_work),
            pub_wake: Arc::clone(&pub_wake),
            tap: tap.clone(),
            trace_slots: cfg.trace_transitions,
        };
        lanes.push(Lane::new(
            xu(),
            LaneParts {
                ring: rp,
                stager: dev.stager(core).map_err(|e| err("device", e))?,
                returns: ret_rx,
                to_pub: ref_tx,
            },
        ));
        let parts = WorkerParts {
            ring: rw,
            harvester: dev.harvester(core).map_err(|e| err("device", e))?,
            models: Arc::clone(&models),
            returns: ret_tx,
            to_pub: rep_tx,
            timeout: cfg.timeout,
            expected: Arc::clone(&cfg.expected),
            record_tags: cfg.record_tags,
        };
        workers.push((xu(), parts));
        let seq = dev.sequencer(Executor::new(Limits::DEFAULT));
        let grace = Nanos(cfg.ring_id_grace_ns);
        let proxy = DeviceProxy::new(seq, core, device_wake, tap.clone(), grace);
        devices.push(SysActor::Device(proxy));
    }
    let queues = lanes.iter().map(|l| l.queue().clone()).collect();
    let healths = lanes.iter().map(|l| Arc::clone(l.health())).collect();
    let lanes: Arc<[Mutex<Lane<H>>]> = lanes.into_iter().map(Mutex::new).collect();
    // With `recover`, each worker starts its XU's reset through its lane.
    let resets = cfg.recover.then_some(&lanes);
    let workers = workers
        .into_iter()
        .map(|(xu, parts)| SysActor::Worker(WorkerActor::new(xu, parts, resets.cloned())));
    let mut daemons: Vec<_> = workers.chain(devices).collect();
    daemons.push(SysActor::Publisher(PublisherActor::new(PublisherParts {
        writer,
        cores: cfg.cores,
        inbound: from_workers.into_iter().chain(from_lanes).collect(),
        control: control_rx,
        wake: Arc::clone(&pub_wake),
        stats: Arc::clone(&pub_stats),
        trace_records: cfg.trace_transitions,
    })));
    // The system's own host memory: work items and rings.
    let misc = u64::from(cfg.cores) * mapped_len(u64::from(cfg.ring_capacity)) as u64
        + pools.iter().map(|p| p.host_bytes()).sum::<u64>();
    let _ = control.try_send(PubMsg::HostMisc(misc));
    let shared = Arc::new(Shared {
        dev,
        queues,
        healths,
        lanes,
        control,
        pub_wake,
        pub_stats,
        cfg,
        slab_path,
        slab: slab_handle,
        tap,
        models,
        next_handle: AtomicU32::new(1),
    });
    Ok(Built { shared, daemons })
}

impl<H: Hal> Shared<H> {
    /// Load a model onto every core (module docs of `actors::work`: one
    /// shared load area per core, one code variant and one IO area per work
    /// item) and tell the publisher (one record per core). Runs on the
    /// caller's thread; only the control-channel send may wait.
    pub fn load_model(&self, b: &ModelBuilder, name: &str) -> Result<Arc<ResidentModel>, Error> {
        let dev = &self.dev;
        let items = self.cfg.ring_capacity as usize;
        let dram = crate::device::memmap::DRAM_BASE;
        let link = |load: u64, io: u64| b.link(load, io).map_err(|e| err("link", e));
        let load = |e| err("load", e);
        let probe = link(dram, dram)?;
        let handle = self.next_handle.fetch_add(1, Ordering::Relaxed);
        let mut per_core = Vec::with_capacity(usize::from(self.cfg.cores));
        let mut image0 = None;
        for _core in 0..self.cfg.cores {
            let base = dev.alloc(probe.footprint(), 64).map_err(load)?;
            let io_pa = (0..items)
                .map(|_| dev.alloc(probe.mem.tensors.max(64), 64).map(|a| a.pa()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(load)?;
            // The first variant fills the shared load area; each other one
            // is its own copy of the code (linked to its IO area), under
            // the first one's id.
            let first = link(base.pa(), io_pa[0])?;
            let loaded = dev.load_model(base, &first.bytes, first.blocks);
            let mut variants = vec![loaded.map_err(load)?];
            image0.get_or_insert(first);
            for &io in &io_pa[1..] {
                let img = link(base.pa(), io)?;
                let code_len = img.mem.code;
                let code = dev.alloc(code_len.max(64), 64).map_err(load)?;
                let lm = dev
                    .load_model(code, &img.bytes[..code_len as usize], img.blocks)
                    .map_err(load)?;
                variants.push(LoadedModel {
                    id: variants[0].id,
                    ib: lm.ib,
                });
            }
            let n = items as u64;
            per_core.push(CoreModel {
                variants,
                io_pa,
                device: MemUsage {
                    code: probe.mem.code * n,
                    tensors: probe.mem.tensors * n,
                    constants: probe.mem.constants,
                    scratchpad: probe.mem.scratchpad,
                },
            });
        }
        let image = image0.ok_or_else(|| Error::Other("no cores".into()))?;
        let model = Arc::new(ResidentModel::new(handle, name, image, per_core));
        self.send_models(&model, PubMsg::ModelLoaded)?;
        self.models.insert(Arc::clone(&model));
        Ok(model)
    }

    /// Forget a model: its records are deleted and its memory counters
    /// decremented. Executions in flight keep it alive until they complete;
    /// its device memory is not reused (the heap never frees).
    pub fn unload_model(&self, model: &ResidentModel) -> Result<(), Error> {
        if !self.models.remove(model.handle) {
            let handle = model.handle;
            return Err(Error::Other(format!("model {handle} is not loaded")));
        }
        self.send_models(model, PubMsg::ModelUnloaded)
    }

    /// Send the publisher `msg` of `model` on each core (its host memory
    /// counted once, on core 0's) and wake it.
    fn send_models(
        &self,
        model: &ResidentModel,
        msg: fn(Box<ModelLoad>) -> PubMsg,
    ) -> Result<(), Error> {
        for (core, cm) in model.per_core.iter().enumerate() {
            let load = ModelLoad {
                handle: model.handle,
                core: core as u8,
                record: model_record(model, core as u8, cm),
                device: cm.device,
                host: if core == 0 {
                    model.host
                } else {
                    MemUsage::default()
                },
            };
            self.control
                .send(msg(Box::new(load)))
                .map_err(|_| Error::Other("the publisher is gone".into()))?;
        }
        self.pub_wake.wake();
        Ok(())
    }
}

/// The NDS record of `model` on `core`, with its mem-usage grid.
pub fn model_record(model: &ResidentModel, core: u8, cm: &CoreModel) -> ModelRecord {
    let mut r = ModelRecord {
        model_id: model.handle,
        model_node_id: 0,
        name: c_string(&model.name),
        nc_index: core,
        sg_index: 0,
        ..ModelRecord::EMPTY
    };
    r.uuid[..4].copy_from_slice(&model.handle.to_le_bytes());
    r.uuid[4] = core;
    r.uuid[8..].copy_from_slice(b"xunds\0\0\0");
    let cell = |total_size: u64, chunk_count: u32| MemUsageInfo {
        total_size,
        chunk_count: if total_size == 0 { 0 } else { chunk_count },
    };
    let items = cm.io_pa.len() as u32;
    let h = MemLocation::Host as usize;
    let d = MemLocation::Device as usize;
    r.mem_usage[h][MemSlot::Code as usize] = cell(model.host.code, 1);
    r.mem_usage[h][MemSlot::Constants as usize] = cell(model.host.constants, 1);
    r.mem_usage[d][MemSlot::Code as usize] = cell(cm.device.code, items);
    r.mem_usage[d][MemSlot::Tensors as usize] = cell(cm.device.tensors, items);
    r.mem_usage[d][MemSlot::Constants as usize] = cell(cm.device.constants, 1);
    r.mem_usage[d][MemSlot::Scratchpad as usize] = cell(cm.device.scratchpad, 1);
    r
}
