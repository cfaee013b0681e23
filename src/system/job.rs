//! The main job (`xunds run`) as a library function, so the command line,
//! the end-to-end tests, replay and the benchmark share one code path.
//!
//! [`run`] builds the system, loads `models` variants of the example MLP on
//! every one of `vncs` cores, and drives `executions` executions through the
//! whole pipeline (producer funnel, XU ring, device staging and doorbell,
//! sequencer and engines, NQ harvest, worker, NDS publisher). Every output
//! is checked against the CPU reference bit for bit. Then it reads the
//! per-core counters back through the read-only [`Reader`], over the run's
//! own mapping while it still holds the slab's writer's lock.
//!
//! - **Threaded** (default): one worker per core, the actors on threads as
//!   [`JobConfig::placement`] says (one per CPU, shared, by default), on
//!   [`LinuxHal`] (real `MAP_SHARED` mappings and eventfds), or
//!   `FaultInjector<LinuxHal>` when faults are asked for; times are host
//!   nanoseconds since start.
//! - **Deterministic**: one thread, `DetRunner` seeded with `seed`, a
//!   virtual clock, on `FaultInjector<Tracer<FakeHal>>` (the tracer keeps the
//!   protocol operations, not the engines' tensor words). Every state-machine
//!   transition and HAL operation goes to the trace (binary: no text is
//!   formatted), whose header carries everything [`JobConfig::from_header`]
//!   needs to run it again: the same seed gives the same event stream
//!   (`trace_xxh3`) and a byte-identical trace file. Without
//!   [`JobConfig::digest`] (`xunds sim`'s cases) there is no tracer and no
//!   stream: the same run, untraced.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::actors::producer::{Pacing, PoolAudit, ProducerActor, ProducerStats, Workload};
use crate::actors::stats::{LatencyHist, StatusCounts};
use crate::actors::work::Expectations;
use crate::actors::worker::WorkerStats;
use crate::actors::{lock, Cx, Nanos};
use crate::device::model::{null_model, MlpSpec, ModelBuilder};
use crate::fsm::xu_health::XuHealthState;
use crate::hal::linux::LinuxHal;
use crate::hal::Hal;
use crate::nds::Reader;
use crate::sim::fake::FakeHal;
use crate::sim::fault::FaultInjector;
use crate::sim::tracer::{TraceFilter, TraceLog, Tracer};
use crate::system::error::Error;
use crate::wire::nds::counters::NcCounter;
use crate::wire::nds::region::{ND_COUNTER_COUNT, TOTAL_NC_COUNTER_COUNT};
use crate::wire::status::NrtStatus;

use super::api::SystemReport;
use super::builder::{build, Built, Placement, SlabTarget, SysActor, SystemConfig};
use super::faults::FaultSpec;
use super::runner::{DetConfig, DetRunner, ThreadedConfig, ThreadedRunner};
use super::trace::{buffered, Trace, TraceDiff, TraceHeader};

/// What to run.
#[derive(Clone, Debug)]
pub struct JobConfig {
    /// Executions to run.
    pub executions: u64,
    /// Cores (XUs), 1..=16.
    pub vncs: u8,
    /// Models (variants of the example MLP with different weights), 1..=64
    /// with `vncs * models <= 64` (one NDS record per model and core).
    pub models: u8,
    /// Seeds the deterministic schedule, the fault injector and the inputs.
    pub seed: u64,
    /// Where the slab goes (`None`: `/dev/shm/xunds-<pid>.nds`, or the
    /// temporary directory without `/dev/shm`).
    pub slab: Option<PathBuf>,
    /// Put the slab in a file with no name instead
    /// ([`SlabTarget::Unnamed`]; `slab` and `force_slab` are not used): the
    /// run reads it back itself, no other process can, and nothing is left
    /// behind however the process ends (`xunds sim`'s runs, `xunds
    /// replay`).
    pub unnamed_slab: bool,
    /// One thread, virtual clock, trace.
    pub deterministic: bool,
    /// Write the deterministic trace here, as a binary file of checkpoints
    /// (else only its digest is kept; see [`super::trace`]). In a replay:
    /// the replay's text view, up to the first difference.
    pub trace: Option<PathBuf>,
    /// Faults to inject.
    pub faults: FaultSpec,
    /// Execution timeout from submission (`None`: 1 s threaded, 2 ms
    /// virtual in deterministic runs).
    pub timeout_ns: Option<u64>,
    /// XU ring slots per core (1..=32).
    pub ring: u32,
    /// Distinct inputs (outputs are checked against their references).
    pub inputs: u32,
    /// Keep every completion's tag (exactly-once checks in tests).
    pub record_tags: bool,
    /// Stop a threaded run that takes longer than this.
    pub max_wall: Option<Duration>,
    /// Threaded runs: give out no execution after this long (`xunds run
    /// --duration`); what was given out completes, and `executions` is then
    /// at most the count. A deterministic run has no wall clock and ignores
    /// it.
    pub duration: Option<Duration>,
    /// The model every execution runs (`xunds run --model`).
    pub model: ModelKind,
    /// Open loop: submit at this many executions per second, Poisson
    /// arrivals from `seed` (`xunds run --rate`); `None`: as fast as the
    /// rings take them (closed loop).
    pub rate: Option<f64>,
    /// Replay: compare the deterministic trace with this recorded one as it
    /// is produced, and stop at the first difference or at the recorded
    /// end ([`JobReport::replay`] holds the verdict; `trace`, when set,
    /// gets the replay's text view up to the first difference).
    pub replay: Option<PathBuf>,
    /// Take over `slab` even when it is an existing file that is not a slab
    /// (`--force`); a slab another live writer holds is refused regardless.
    pub force_slab: bool,
    /// Reset an XU as soon as it is degraded, by any fault, and hold
    /// executions for it meanwhile (`--recover`; `actors::worker` module
    /// docs).
    pub recover: bool,
    /// Deterministic runs: stop with a poll-budget error after this many
    /// runner polls (`None`: unbounded; `xunds sim` bounds every run).
    pub max_polls: Option<u64>,
    /// Threaded runs: how the actors are put on threads (`--placement`).
    pub placement: Placement,
    /// Deterministic runs: digest the event stream (`trace_xxh3`; needed by
    /// `trace` and `replay`). `xunds sim` turns it off: it checks
    /// invariants, not the stream, and the trace is about a quarter of a
    /// deterministic run's work. Tracing only observes, so the schedule,
    /// the virtual times and every outcome are the same either way.
    pub digest: bool,
}

wire_enum! {
    /// The model a job loads (`--models` variants of it), by the name
    /// `xunds run --model` takes.
    #[derive(Default)]
    pub enum ModelKind(usize) {
        /// The example MLP (batch 4, 16 -> 32 -> 8, row max; 3,072 MACs).
        #[default]
        Mlp = 0 => "mlp",
        /// The null model: one instruction, no MACs (`null_model`); measures
        /// the host path.
        Null = 1 => "null",
    }
}

impl ModelKind {
    /// `mlp` or `null`.
    pub fn parse(s: &str) -> Result<ModelKind, Error> {
        ModelKind::from_name(s).ok_or_else(|| {
            let names = ModelKind::ALL.map(ModelKind::name).join(" or ");
            bad(format!("unknown model {s:?} ({names})"))
        })
    }
}

impl Default for JobConfig {
    fn default() -> Self {
        JobConfig {
            executions: 100_000,
            vncs: 4,
            models: 2,
            seed: 1,
            slab: None,
            unnamed_slab: false,
            deterministic: false,
            trace: None,
            faults: FaultSpec::default(),
            timeout_ns: None,
            ring: 32,
            inputs: 16,
            record_tags: false,
            max_wall: None,
            duration: None,
            replay: None,
            force_slab: false,
            recover: false,
            model: ModelKind::Mlp,
            rate: None,
            max_polls: None,
            placement: Placement::Shared,
            digest: true,
        }
    }
}

/// Most executions a job takes (about a day at today's rates; a trace
/// header claiming more is refused).
pub const MAX_EXECUTIONS: u64 = 1 << 40;
/// Most distinct inputs (each has its reference output computed up front).
pub const MAX_INPUTS: u32 = 4096;
/// Longest execution timeout: one hour.
pub const MAX_TIMEOUT_NS: u64 = 3_600_000_000_000;
/// Lowest open-loop rate, in executions per second: one an hour on average
/// (a mean gap between arrivals of at most an hour, like the longest
/// timeout). A rate far below it draws gaps past the end of the nanosecond
/// time range: at 1e-300 the first arrival saturated to `u64::MAX` ns and a
/// threaded run never ended.
pub const MIN_RATE: f64 = 1.0 / 3600.0;

/// The deterministic device's grace before a wrong ring id is corrupt
/// (virtual ns).
const DET_GRACE_NS: u64 = 20_000;

/// An I/O error on `path`, naming it ("No such file or directory" alone
/// does not say which of a run's files).
fn at(path: &Path) -> impl Fn(std::io::Error) -> std::io::Error + '_ {
    move |e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

fn bad(what: impl Into<String>) -> Error {
    Error::Other(what.into())
}

impl JobConfig {
    /// The timeout in force.
    pub fn timeout(&self) -> Nanos {
        Nanos(self.timeout_ns.unwrap_or(if self.deterministic {
            2_000_000
        } else {
            1_000_000_000
        }))
    }

    /// The runner configuration of a deterministic run.
    pub fn det_config(&self) -> DetConfig {
        DetConfig {
            max_polls: self.max_polls,
            ..DetConfig::new(self.seed)
        }
    }

    /// The trace header's config tokens (everything replay needs).
    pub fn header_config(&self) -> String {
        // The model only when not the default, so MLP traces keep their
        // bytes; the open-loop rate and recovery only when set, likewise.
        let model = match self.model {
            ModelKind::Mlp => String::new(),
            other => format!(" model={}", other.name()),
        };
        let rate = self.rate.map(|r| format!(" rate={r}")).unwrap_or_default();
        format!(
            "mode=deterministic executions={} vncs={} models={} ring={} inputs={} timeout_ns={} faults={} grace_ns={DET_GRACE_NS}{model}{rate} {}{}",
            self.executions,
            self.vncs,
            self.models,
            self.ring,
            self.inputs,
            self.timeout().as_u64(),
            self.faults.text(),
            self.det_config().config_text(),
            if self.recover { " recover=1" } else { "" }
        )
    }

    /// Rebuild a deterministic job from a trace header.
    pub fn from_header(h: &TraceHeader) -> Result<JobConfig, Error> {
        if h.config_value("mode") != Some("deterministic") {
            return Err(bad("the trace is not of a deterministic xunds run"));
        }
        fn num<T: std::str::FromStr>(h: &TraceHeader, k: &str) -> Result<T, Error> {
            let v = h.config_value(k).and_then(|v| v.parse().ok());
            v.ok_or_else(|| bad(format!("trace header: missing or bad {k}")))
        }
        let faults = FaultSpec::parse(h.config_value("faults").unwrap_or("none"))
            .map_err(|e| bad(format!("trace header: {e}")))?;
        let cfg = JobConfig {
            executions: num(h, "executions")?,
            vncs: num(h, "vncs")?,
            models: num(h, "models")?,
            seed: h.seed,
            deterministic: true,
            faults,
            timeout_ns: Some(num(h, "timeout_ns")?),
            ring: num(h, "ring")?,
            inputs: num(h, "inputs")?,
            recover: h.config_value("recover") == Some("1"),
            model: h
                .config_value("model")
                .map_or(Ok(ModelKind::Mlp), ModelKind::parse)?,
            rate: h.config_value("rate").map(|_| num(h, "rate")).transpose()?,
            ..JobConfig::default()
        };
        if cfg.header_config() != h.config {
            return Err(bad(
                "trace header: this build would write another config line (different runner defaults?)",
            ));
        }
        Ok(cfg)
    }

    /// Refuse a configuration out of range (what [`run`] checks first; the
    /// command line calls it to report a bad combination of flags as a usage
    /// error before anything starts), naming each setting by `xunds run`'s
    /// flag.
    pub fn check(&self) -> Result<(), Error> {
        self.check_named(|flag| flag)
    }

    /// [`check`](Self::check), its refusal naming each setting by
    /// `name(run_flag)` (`xunds sim`'s flags; `inputs` has no flag).
    pub fn check_named(&self, name: fn(&'static str) -> &'static str) -> Result<(), Error> {
        let (vncs, models) = (name("--vncs"), name("--models"));
        let (timeout, rate) = (name("--timeout-ms"), name("--rate"));
        let mut cores = self.faults.rules.iter().filter_map(|r| r.core);
        let missing_core = cores.find(|&c| c >= self.vncs);
        let why = if !(1..=16).contains(&self.vncs) {
            format!("{vncs} must be 1..=16")
        } else if self.models == 0 || u32::from(self.vncs) * u32::from(self.models) > 64 {
            let noun = |f: &'static str| f.trim_start_matches('-');
            format!(
                "{models} must be >= 1 with {} * {} <= 64 (one NDS record per model and core)",
                noun(vncs),
                noun(models)
            )
        } else if !(1..=32).contains(&self.ring) {
            format!("{} must be 1..=32", name("--ring"))
        } else if !(1..=MAX_INPUTS).contains(&self.inputs) {
            format!("{} must be 1..={MAX_INPUTS}", name("inputs"))
        } else if self.executions > MAX_EXECUTIONS {
            format!("{} must be <= {MAX_EXECUTIONS}", name("--executions"))
        } else if self.timeout_ns == Some(0) {
            format!("{timeout} must be at least 1 (a zero timeout expires every execution)")
        } else if self.timeout_ns > Some(MAX_TIMEOUT_NS) {
            format!(
                "{timeout} must be at least 1 and at most {} ms (an hour)",
                MAX_TIMEOUT_NS / 1_000_000
            )
        } else if let Some(c) = missing_core {
            format!(
                "{}: core{c} does not exist ({vncs} {} gives cores 0..={})",
                name("--faults"),
                self.vncs,
                self.vncs - 1
            )
        } else if !self.digest && (self.trace.is_some() || self.replay.is_some()) {
            "a trace file or a replay needs the event stream: keep the digest on".into()
        } else if self.rate.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
            format!("{rate} must be a positive number of executions per second")
        } else if self.rate.is_some_and(|r| r < MIN_RATE) {
            format!(
                "{rate} must be at least 1/3600 = {MIN_RATE} executions per second \
                 (a mean gap between arrivals of at most an hour)"
            )
        } else {
            return Ok(());
        };
        Err(bad(why))
    }
}

/// The default slab path: `/dev/shm/xunds-<pid>.nds` (or the temporary
/// directory).
pub fn default_slab_path() -> PathBuf {
    let shm = Some(Path::new("/dev/shm")).filter(|d| d.is_dir());
    let dir = shm.map_or_else(std::env::temp_dir, Path::to_path_buf);
    dir.join(format!("xunds-{}.nds", std::process::id()))
}

/// One core's counters as the read-only reader sees them after the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreCounters {
    /// The core.
    pub core: u8,
    /// Its NC counter words (base and extended) by index.
    pub nc: [u64; TOTAL_NC_COUNTER_COUNT],
}

impl CoreCounters {
    /// One counter.
    pub fn get(&self, c: NcCounter) -> u64 {
        self.nc[c as usize]
    }
}

/// What a run did.
#[derive(Clone, Debug)]
pub struct JobReport {
    /// The job that ran.
    pub config: JobConfig,
    /// Executions asked for (a run for a time: those its time gave out).
    pub executions: u64,
    /// The producer's counters: its schedule calls (`attempts` =
    /// `completed_ok + completed_err + refused_full + refused_unrecoverable
    /// + failed`), accepted, and refused by kind.
    pub producer: ProducerStats,
    /// What the system's actors did (per worker, the device proxies, per
    /// lane, NDS errors).
    pub system: SystemReport,
    /// Completed with `SUCCESS`.
    pub completed_ok: u64,
    /// Completed with any other status (timeouts included).
    pub completed_err: u64,
    /// Completed with `TIMEOUT`.
    pub timed_out: u64,
    /// Times an XU was reset back to healthy (`--recover`).
    pub recoveries: u64,
    /// Executions a reset aborted (completed with 101).
    pub aborted: u64,
    /// Executions whose work item was bad, by kind name (every kind).
    pub bad_items: Vec<(&'static str, u64)>,
    /// Outputs compared with the CPU reference.
    pub outputs_checked: u64,
    /// Outputs that differed.
    pub outputs_wrong: u64,
    /// Completions out of FIFO order on their XU.
    pub fifo_violations: u64,
    /// Completions by status.
    pub by_status: Vec<(NrtStatus, u64)>,
    /// Submission-to-completion latency (ns; virtual when deterministic).
    pub latency: LatencyHist,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// Accepted executions per second of wall time.
    pub exec_per_sec: f64,
    /// The virtual time at the end (deterministic runs).
    pub virtual_ns: Option<u64>,
    /// Per core, read back through the read-only reader.
    pub per_core: Vec<CoreCounters>,
    /// The ND counter words (14 named, then reserved), read back.
    pub nd: [u64; ND_COUNTER_COUNT],
    /// Fresh model records in the slab.
    pub model_records: usize,
    /// Sum of the device mem-usage cells over every fresh model record.
    pub record_device_bytes: u64,
    /// The slab file (empty for [`JobConfig::unnamed_slab`]).
    pub slab: PathBuf,
    /// XXH3-128 of the binary event stream, in hex (deterministic runs
    /// with the `trace-digest` feature; [`super::trace`]).
    pub trace_xxh3: Option<String>,
    /// Lines of the trace's text view: its events plus the header
    /// (deterministic runs).
    pub trace_lines: Option<u64>,
    /// How the trace compared with the recording ([`JobConfig::replay`]).
    pub replay: Option<TraceDiff>,
    /// Faults the injector applied.
    pub faults_injected: usize,
    /// Faults applied per rule of the spec (same order as its rules).
    pub faults_by_rule: Vec<u64>,
    /// Per lane (core order): its work-item pool after the run.
    pub pools: Vec<PoolAudit>,
    /// Per XU: degraded (unrecoverable) at the end.
    pub degraded: Vec<bool>,
    /// Events an actor's state did not accept, per actor kind (0 in every
    /// run without injected corruption).
    pub fsm_violations: FsmViolations,
}

/// Events each kind of event-driven actor refused (counted, traced; the
/// actor back in a safe state).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FsmViolations {
    /// The workers (summed).
    pub worker: u64,
    /// The device proxies (summed).
    pub device_proxy: u64,
    /// The NDS publisher.
    pub publisher: u64,
}

impl FsmViolations {
    /// All of them.
    pub fn total(&self) -> u64 {
        self.worker + self.device_proxy + self.publisher
    }
}

/// The parts of a job that do not depend on the HAL.
struct Prepared {
    builders: Vec<ModelBuilder>,
    inputs: Vec<Vec<f32>>,
    sys: SystemConfig,
}

/// Check the job, then build its models, inputs and system configuration.
fn prepare(cfg: &JobConfig) -> Result<Prepared, Error> {
    cfg.check()?;
    let builders = (0..u64::from(cfg.models))
        .map(|m| match cfg.model {
            ModelKind::Mlp => MlpSpec {
                seed: MlpSpec::EXAMPLE.seed.wrapping_add(m),
                ..MlpSpec::EXAMPLE
            }
            .builder(),
            ModelKind::Null => null_model(),
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("model: {e}")))?;
    let base = crate::device::memmap::DRAM_BASE;
    let images = builders
        .iter()
        .map(|b| b.link(base, base))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("link: {e}")))?;
    let inputs: Vec<Vec<f32>> = (0..u64::from(cfg.inputs))
        .map(|k| {
            let seed = cfg.seed.wrapping_mul(1000).wrapping_add(k);
            match cfg.model {
                ModelKind::Mlp => MlpSpec::EXAMPLE.example_input(seed),
                ModelKind::Null => vec![(seed % 1024) as f32],
            }
        })
        .collect();
    let mut expected = Expectations::default();
    for img in &images {
        expected
            .outputs
            .extend(inputs.iter().map(|x| img.reference(x)));
    }
    let slab = cfg.slab.clone().unwrap_or_else(default_slab_path);
    let mut sys = SystemConfig {
        ring_capacity: cfg.ring,
        timeout: cfg.timeout(),
        slab: match (cfg.unnamed_slab, cfg.force_slab) {
            (true, _) => SlabTarget::Unnamed,
            (false, true) => SlabTarget::Overwrite(slab),
            (false, false) => SlabTarget::Path(slab),
        },
        expected: Arc::new(expected),
        trace_transitions: cfg.deterministic && cfg.digest,
        recover: cfg.recover,
        placement: cfg.placement,
        record_tags: cfg
            .record_tags
            .then(|| cfg.executions.min(1 << 24) as usize),
        ..SystemConfig::new(cfg.vncs)
    };
    sys.dram_size = sys.dram_for(&images[0], u64::from(cfg.models));
    if cfg.deterministic {
        sys.ring_id_grace_ns = DET_GRACE_NS;
    }
    Ok(Prepared {
        builders,
        inputs,
        sys,
    })
}

/// Refuse a deterministic run whose trace files cannot be opened, touching
/// neither: the recorded trace opened for reading, the one to write opened
/// for writing without truncation (and removed again when this made it).
/// [`open_trace`] opens them for the run once the system is built, so a
/// setup that fails leaves an earlier trace at `--trace` as it was.
fn check_trace_paths(cfg: &JobConfig) -> Result<(), Error> {
    if !cfg.deterministic {
        return Ok(());
    }
    if let Some(recorded) = &cfg.replay {
        super::trace::open_recorded(recorded).map_err(at(recorded))?;
    }
    if let Some(path) = &cfg.trace {
        let existed = std::fs::symlink_metadata(path).is_ok();
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(at(path))?;
        if !existed {
            let _ = std::fs::remove_file(path);
        }
    }
    Ok(())
}

/// The deterministic run's trace: comparing against `--replay`'s file
/// (keeping a copy at `--trace`), written to `--trace`, a digest only, or
/// nothing.
fn open_trace(cfg: &JobConfig) -> Result<Trace, Error> {
    let header = TraceHeader::new(cfg.seed, cfg.header_config());
    Ok(match (&cfg.replay, &cfg.trace) {
        (Some(recorded), kept) => {
            let recorded = std::io::BufReader::new(
                super::trace::open_recorded(recorded).map_err(at(recorded))?,
            );
            let kept: Option<Box<dyn std::io::Write + Send>> = match kept {
                Some(p) => Some(Box::new(buffered(p).map_err(at(p))?)),
                None => None,
            };
            Trace::comparing(&header, recorded, kept)
        }
        (None, Some(path)) => Trace::create_binary(&header, path).map_err(at(path))?,
        (None, None) if cfg.digest => Trace::digest_only(&header),
        (None, None) => Trace::disabled(),
    })
}

/// Run the job on `hal`; `injected(hal)`: the faults it applied per rule of
/// the plan (none for a HAL without an injector).
fn execute<H: Hal + 'static>(
    hal: H,
    injected: fn(&H) -> Vec<u64>,
    log: Option<TraceLog>,
    cfg: &JobConfig,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<JobReport, Error> {
    let p = prepare(cfg)?;
    // Before the system: a run that cannot open its trace files stops
    // before it creates its slab (which would be left behind).
    check_trace_paths(cfg)?;
    let Built { shared, daemons } = build(hal, p.sys, log)?;
    let models = p
        .builders
        .iter()
        .enumerate()
        .map(|(m, b)| shared.load_model(b, &format!("{}{m}", cfg.model.name())))
        .collect::<Result<_, _>>()?;
    // A deterministic run has no wall clock: it ignores the duration.
    let until = cfg.duration.filter(|_| !cfg.deterministic);
    let work = Workload {
        executions: cfg.executions,
        models,
        inputs: Arc::new(p.inputs),
        pacing: cfg.rate.map(|rate| Pacing::poisson(rate, cfg.seed)),
        until: until.map(|d| Nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))),
    };
    let (lanes, applied) = (Arc::clone(&shared.lanes), Arc::clone(&shared.pub_stats));
    let producer =
        ProducerActor::new(lanes, work, applied, shared.tap.clone())?.recovering(cfg.recover);
    let done = || {
        let (c, _) = shared.pub_stats.applied();
        let lanes = shared.lanes.iter().map(|l| lock(l).stats());
        c + lanes.map(|s| s.refused_unrecoverable).sum::<u64>()
    };
    // What the run leaves: its wall time, its actors, and for a
    // deterministic run its virtual end and the trace's summary.
    let (elapsed, actors, virtual_ns, summary);
    if cfg.deterministic {
        let mut trace = open_trace(cfg)?;
        let differs = trace.stop_flag();
        // The setup's HAL operations (mapping, model loads).
        shared
            .tap
            .drain(&mut Cx::new(Nanos::ZERO, "setup", &mut trace));
        let mut r: DetRunner<SysActor<H>> = DetRunner::new(cfg.det_config());
        r.add(SysActor::Producer(producer));
        for d in daemons {
            r.add_daemon(d);
        }
        let t0 = Instant::now();
        let mut n = 0u64;
        r.run_until(&mut trace, |_| {
            // Ordering: Relaxed: set by the comparing trace on this thread.
            if differs
                .as_ref()
                .is_some_and(|d| d.load(std::sync::atomic::Ordering::Relaxed))
            {
                return true;
            }
            n += 1;
            if n % 16_384 == 0 {
                progress(done(), cfg.executions);
            }
            false
        })?;
        elapsed = t0.elapsed();
        virtual_ns = Some(r.now().as_u64());
        summary = Some(trace.finish()?).filter(|_| cfg.digest);
        actors = r.into_actors();
    } else {
        let mut r = ThreadedRunner::new(ThreadedConfig {
            max_wall: cfg.max_wall,
            ..ThreadedConfig::default()
        })?;
        let all = std::iter::once(SysActor::Producer(producer)).chain(daemons);
        cfg.placement.place(cfg.vncs, &mut r, all);
        let running = r.start()?;
        let stop = running.stop_handle();
        // Show progress every 50 ms; the stop ends the wait at once. Up to
        // the wall bound: past it, `join` stops the run and says so.
        while !running.over() {
            progress(done(), cfg.executions);
            stop.wait(Duration::from_millis(50));
        }
        let rep = running.join()?;
        (elapsed, actors, virtual_ns, summary) = (rep.elapsed, rep.actors, None, None);
    }
    progress(done(), cfg.executions);
    // Read back through this run's own mapping while its writer's lock is
    // held (`shared` keeps it): by path, once the lock is gone, the file
    // could be another writer's or removed (`xunds nds clean`).
    let read_back = Reader::attach(shared.slab.read_only()).and_then(|r| r.snapshot());
    let slab = shared.slab_path.clone().unwrap_or_default();
    if crate::nds::Slab::shrunk(&shared.slab) {
        return Err(bad(format!(
            "the slab {} was truncated by another process during the run: the counters it held are lost",
            slab.display()
        )));
    }
    let snap = read_back.map_err(|e| bad(format!("reading the slab back: {e}")))?;
    let (system, producer) = SystemReport::collect(&shared, actors);
    let (mut latency, mut by_status) = (LatencyHist::default(), StatusCounts::default());
    for w in &system.workers {
        latency.merge(&w.latency);
        by_status.merge(&w.by_status);
    }
    let per_core = (0..cfg.vncs)
        .map(|core| CoreCounters {
            core,
            nc: snap.counters.nc[usize::from(core)],
        })
        .collect();
    let records = snap.models.into_iter();
    let fresh: Vec<_> = records.filter_map(|(_, r)| r.fresh()).collect();
    let device_bytes = fresh.iter().flat_map(|m| m.mem_usage[1].iter());
    let workers = &system.workers;
    let sum = |f: fn(&WorkerStats) -> u64| workers.iter().map(f).sum();
    let faults_by_rule = injected(shared.dev.hal());
    Ok(JobReport {
        config: cfg.clone(),
        // A run for a time gave out what its time allowed.
        executions: match cfg.duration {
            Some(_) => producer.accepted + producer.refused_unrecoverable + producer.failed,
            None => cfg.executions,
        },
        completed_ok: by_status.get(NrtStatus::SUCCESS),
        completed_err: by_status.total() - by_status.get(NrtStatus::SUCCESS),
        timed_out: by_status.get(NrtStatus::TIMEOUT),
        recoveries: sum(|w| w.recoveries),
        aborted: sum(|w| w.aborted),
        bad_items: crate::actors::work::BadItem::NAMES
            .iter()
            .enumerate()
            .map(|(i, name)| (*name, workers.iter().map(|w| w.bad_items[i]).sum()))
            .collect(),
        outputs_checked: sum(|w| w.outputs_checked),
        outputs_wrong: sum(|w| w.outputs_wrong),
        fifo_violations: sum(|w| w.fifo_violations),
        by_status: by_status.sorted(),
        latency,
        elapsed,
        exec_per_sec: producer.accepted as f64 / elapsed.as_secs_f64().max(1e-9),
        virtual_ns,
        per_core,
        nd: snap.counters.nd,
        model_records: fresh.len(),
        record_device_bytes: device_bytes.map(|c| c.total_size).sum(),
        slab,
        #[cfg(feature = "trace-digest")]
        trace_xxh3: summary.as_ref().map(|s| s.digest_hex()),
        #[cfg(not(feature = "trace-digest"))]
        trace_xxh3: None,
        trace_lines: summary.as_ref().map(|s| s.lines),
        replay: summary.and_then(|s| s.replay),
        faults_injected: faults_by_rule.iter().sum::<u64>() as usize,
        faults_by_rule,
        pools: shared.lanes.iter().map(|l| lock(l).pool_audit()).collect(),
        degraded: shared
            .healths
            .iter()
            .map(|h| h.state() == XuHealthState::Degraded)
            .collect(),
        fsm_violations: FsmViolations {
            worker: sum(|w| w.fsm_violations),
            device_proxy: system.device.fsm_violations,
            publisher: system.publisher_fsm_violations,
        },
        producer,
        system,
    })
}

/// Run a job (module docs). `progress(done, total)` is called now and then.
pub fn run(cfg: &JobConfig, progress: &mut dyn FnMut(u64, u64)) -> Result<JobReport, Error> {
    if !cfg.deterministic && cfg.faults.is_empty() {
        execute(LinuxHal::new(), |_| Vec::new(), None, cfg, progress)
    } else if !cfg.deterministic {
        injecting(LinuxHal::new(), None, cfg, progress)
    } else if !cfg.digest {
        // Nothing observes the HAL: no tracer in the stack.
        injecting(FakeHal::one_thread(), None, cfg, progress)
    } else {
        // Without a text view (no replay to compare with), the tracer's log
        // keeps only the operations' encodings in the binary stream.
        let (hal, filter) = (FakeHal::one_thread(), TraceFilter::Protocol);
        let tracer = if cfg.replay.is_none() {
            Tracer::with_log(hal, filter, TraceLog::encoding())
        } else {
            Tracer::with_filter(hal, filter)
        };
        let log = Some(tracer.log());
        injecting(tracer, log, cfg, progress)
    }
}

/// [`execute`] on `hal` behind the job's seeded fault injector.
fn injecting<H: Hal + 'static>(
    hal: H,
    log: Option<TraceLog>,
    cfg: &JobConfig,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<JobReport, Error> {
    let hal = FaultInjector::new(hal, cfg.faults.plan(cfg.seed));
    execute(hal, FaultInjector::injected_by_rule, log, cfg, progress)
}
