//! `xunds run`: the main job (`xunds::system::job`), with a progress bar on a
//! terminal, a text summary or one JSON object.

use std::io::{IsTerminal, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::value_parser;
use serde::Serialize;
use xunds::system::faults::FaultSpec;
use xunds::system::job::{self, JobConfig, JobReport, ModelKind};
use xunds::system::Placement;
use xunds::wire::nds::counters::{NcCounter, NdCounter};

use crate::Obj;

/// Run the main job on the simulated device.
///
/// Runs N executions of the example MLP (batch 4, 16 -> 32 -> 8, row max)
/// through the whole pipeline on a simulated device with V cores: producer
/// funnel, XU ring, device staging and doorbell, sequencer and engines, NQ
/// harvest, worker, NDS publisher. Every output is checked bit for bit
/// against the CPU reference; the per-core counters are read back through
/// the read-only NDS reader. The slab is left at --slab for `xunds nds dump`
/// and `xunds monitor` (other processes); a run without --slab first removes
/// the default-named slabs of ended runs but the 8 newest. A run that takes
/// longer than about two seconds shows a progress line when stderr is a
/// terminal (never with --json).
#[derive(clap::Args)]
#[command(after_help = FAULTS_HELP, allow_negative_numbers = true)]
pub struct Args {
    /// Executions to run [default: 100000, or with --duration as many as
    /// its time allows].
    #[arg(long, value_name = "N")]
    executions: Option<u64>,
    /// Run for this long (e.g. 30s, 5m; at most 24h), closed or open loop:
    /// no execution is given out after it and those in flight complete;
    /// with --executions, whichever ends first. Threaded runs only.
    #[arg(long, value_name = "D", allow_hyphen_values = true, value_parser = crate::parse_duration, conflicts_with = "deterministic")]
    duration: Option<Duration>,
    /// Cores (XUs), one worker each.
    #[arg(long, value_name = "V", default_value_t = 4, value_parser = value_parser!(u8).range(1..=16))]
    vncs: u8,
    /// Models: example-MLP variants with different weights (vncs * models <= 64).
    #[arg(long, value_name = "M", default_value_t = 2, value_parser = value_parser!(u8).range(1..=64))]
    models: u8,
    /// Seeds the deterministic schedule, the faults and the inputs.
    #[arg(long, value_name = "S", default_value_t = 1)]
    seed: u64,
    /// The datastore file [default: /dev/shm/xunds-<pid>.nds]; refused while
    /// another run writes it, or when it is an existing file that is not a
    /// slab.
    #[arg(long, value_name = "PATH")]
    slab: Option<PathBuf>,
    /// Overwrite --slab even when it is an existing file that is not a slab.
    #[arg(long, requires = "slab")]
    force: bool,
    /// Reset an XU as soon as it is degraded, whatever the fault (stop the
    /// device, complete or abort what is in flight, re-initialise its
    /// queues), so the run keeps executing on it; executions are held
    /// (not refused) meanwhile.
    #[arg(long)]
    recover: bool,
    /// One thread, seeded schedule, virtual clock, traced HAL; prints
    /// trace_xxh3, the XXH3-128 digest of the binary event stream (same
    /// seed -> same stream).
    #[arg(long)]
    deterministic: bool,
    /// Write the deterministic trace to FILE: compact binary checkpoints
    /// (compare: xunds replay FILE; text view: xunds replay FILE --print).
    #[arg(long, value_name = "FILE", requires = "deterministic")]
    trace: Option<PathBuf>,
    /// Inject device faults (below).
    #[arg(long, value_name = "SPEC", default_value = "none", value_parser = FaultSpec::parse)]
    faults: FaultSpec,
    /// Execution timeout from submission [default: 1000; 2 ms virtual when
    /// deterministic].
    #[arg(long, value_name = "T")]
    timeout_ms: Option<u64>,
    /// XU ring slots per core.
    #[arg(long, value_name = "R", default_value_t = 32, value_parser = value_parser!(u32).range(1..=32))]
    ring: u32,
    /// The model: mlp (the example MLP) or null (one instruction, no MACs:
    /// the host path alone).
    #[arg(long, value_name = "KIND", default_value = "mlp", value_parser = model_kind)]
    model: ModelKind,
    /// Open loop: R executions per second (at least 1/3600: one an hour on
    /// average), Poisson arrivals from --seed [default: closed loop, as fast
    /// as the rings allow].
    #[arg(long, value_name = "R")]
    rate: Option<f64>,
    /// Threads (threaded runs): shared (one per CPU; the producer, workers
    /// and publisher share the first, the device proxies are dealt over all
    /// of them and an idle thread polls a busy one) or per-actor (one
    /// thread per actor).
    #[arg(long, value_name = "P", default_value = "shared", value_parser = placement, conflicts_with = "deterministic")]
    placement: Placement,
    /// Print one JSON object instead of the summary.
    #[arg(long)]
    json: bool,
    /// Show the progress line once the run has taken this long (tests).
    #[arg(long, value_name = "MS", default_value_t = 2000, hide = true)]
    progress_after_ms: u64,
}

/// `--placement`: `shared` or `per-actor`.
fn placement(s: &str) -> Result<Placement, String> {
    Placement::parse(s).map_err(|e| e.to_string())
}

/// `--model`: `mlp` or `null`.
fn model_kind(s: &str) -> Result<ModelKind, String> {
    ModelKind::parse(s).map_err(|e| e.to_string())
}

const FAULTS_HELP: &str = "\
--faults SPEC: comma-separated KIND@TRIGGER[/coreN]
  KIND     error:CLASS       an engine's DONE record becomes an ERROR of CLASS
                             (generic|numerical|model|transient|hw|runtime):
                             status 1003 numerical, 6 hw (XU degraded), else 1004
           timeout           an NQ record is dropped: status 5, XU degraded
           doorbell          a doorbell is dropped: status 5, XU degraded
           corrupt:WHAT      a descriptor is corrupted (len|ring_id|addr):
                             status 1203 DMA abort, XU degraded
           nq_overflow       the device sees an NQ ring full and drops a record:
                             status 1204 NQ overflow (at the deadline), XU degraded
  TRIGGER  P or N/D          each eligible operation with probability P (0..1)
           #N                only the N-th eligible operation
           N+                every eligible operation from the N-th on
  /coreN   only core N (0..V-1)
  A degraded XU refuses every later schedule with 101 (NRT_EXEC_UNIT_UNRECOVERABLE)
  unless --recover resets it (every kind): executions in flight complete (the
  ones the stopped device never ran with 101), the device queues start over.
  example: --faults error:hw@0.001,timeout@0.0005,corrupt:ring_id@#400/core1";

impl Args {
    /// The job the flags describe.
    fn config(&self) -> JobConfig {
        let all = if self.duration.is_some() {
            job::MAX_EXECUTIONS
        } else {
            100_000
        };
        JobConfig {
            executions: self.executions.unwrap_or(all),
            duration: self.duration,
            vncs: self.vncs,
            models: self.models,
            seed: self.seed,
            slab: self.slab.clone(),
            deterministic: self.deterministic,
            trace: self.trace.clone(),
            faults: self.faults.clone(),
            timeout_ns: self.timeout_ms.map(|ms| ms.saturating_mul(1_000_000)),
            ring: self.ring,
            force_slab: self.force,
            recover: self.recover,
            model: self.model,
            rate: self.rate,
            placement: self.placement,
            ..JobConfig::default()
        }
    }
}

fn fail(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("xunds run: {e}");
    ExitCode::FAILURE
}

/// The progress line: on a terminal (stderr), for a text run, once the run
/// has taken `after`; at most ten redraws a second. A run for a time shows
/// its time.
struct Progress {
    on: bool,
    start: Instant,
    after: Duration,
    last: Option<Instant>,
    duration: Option<Duration>,
}

impl Progress {
    fn new(on: bool, after: Duration, duration: Option<Duration>) -> Progress {
        Progress {
            on,
            start: Instant::now(),
            after,
            last: None,
            duration,
        }
    }

    fn update(&mut self, done: u64, total: u64) {
        if !self.on || self.start.elapsed() < self.after {
            return;
        }
        if self
            .last
            .is_some_and(|t| t.elapsed() < Duration::from_millis(100))
        {
            return;
        }
        self.last = Some(Instant::now());
        let done = done.min(total);
        let secs = self.start.elapsed().as_secs_f64();
        let (frac, count) = match self.duration {
            Some(d) => (secs / d.as_secs_f64(), format!("{done} executions")),
            None => (done as f64 / total.max(1) as f64, format!("{done}/{total}")),
        };
        let frac = frac.clamp(0.0, 1.0);
        let filled = (frac * 40.0) as usize;
        eprint!(
            "\r[{}{}] {:3.0}% {count} {secs:.0} s",
            "#".repeat(filled),
            "-".repeat(40 - filled),
            frac * 100.0
        );
        let _ = std::io::stderr().flush();
    }

    /// Clear the line if it was drawn.
    fn finish(&self) {
        if self.last.is_some() {
            eprint!("\r{}\r", " ".repeat(79));
            let _ = std::io::stderr().flush();
        }
    }
}

pub fn main(args: Args) -> ExitCode {
    let cfg = args.config();
    if let Err(e) = cfg.check() {
        return crate::usage_error("xunds run", e);
    }
    if let Some(p) = &args.slab {
        let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
        if p.is_dir() {
            return fail(format!("--slab {}: is a directory", p.display()));
        }
        if let Some(d) = dir.filter(|d| !d.exists()) {
            return fail(format!(
                "--slab {}: no directory {}",
                p.display(),
                d.display()
            ));
        }
    }
    if args.slab.is_none() {
        // The default-named slabs of ended runs: the newest stay, the rest
        // go (`xunds nds clean` removes them all).
        let own = job::default_slab_path();
        if let Some(dir) = own.parent() {
            crate::nds::prune_left_behind(dir, crate::nds::KEEP_ENDED);
        }
    }
    let tty = std::io::stderr().is_terminal() && !args.json;
    let after = Duration::from_millis(args.progress_after_ms);
    let mut progress = Progress::new(tty, after, args.duration);
    let rep = job::run(&cfg, &mut |done, total| progress.update(done, total));
    progress.finish();
    let rep = match rep {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    if args.json {
        crate::print_json(&RunJson::new(&rep));
    } else {
        print!("{}", summary(&rep));
    }
    if rep.outputs_wrong > 0
        || rep.fifo_violations > 0
        || rep.nds_errors > 0
        || rep.fsm_violations.total() > 0
    {
        eprintln!(
            "xunds run: wrong outputs, FIFO violations, NDS errors or state-machine violations (see above)"
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// The `--json` document (keys in this order).
#[derive(Serialize)]
struct RunJson<'a> {
    executions: u64,
    submitted: u64,
    completed_ok: u64,
    completed_err: u64,
    refused_full: u64,
    refused_unrecoverable: u64,
    timed_out: u64,
    /// Times an XU came back to healthy (each reset).
    recoveries: u64,
    /// Executions a reset aborted (completed with 101).
    aborted: u64,
    outputs_checked: u64,
    outputs_wrong: u64,
    exec_per_sec: f64,
    latency_ns: Latency,
    model: &'static str,
    /// The open-loop rate asked for (null: closed loop).
    rate: Option<f64>,
    /// How the actors were put on threads (null: deterministic).
    placement: Option<&'static str>,
    slab: String,
    vncs: u8,
    models: u8,
    deterministic: bool,
    faults: &'a str,
    faults_injected: usize,
    elapsed_s: f64,
    /// Events each kind of actor's state refused.
    fsm_violations: FsmJson,
    /// Outcomes by status name.
    by_status: Obj<u64>,
    /// Executions whose work item was bad, by kind (every kind listed).
    bad_items: Obj<u64>,
    /// Per core: its non-zero NC counters by name.
    cores: Obj<Obj<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    virtual_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_xxh3: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_lines: Option<u64>,
}

#[derive(Serialize)]
struct FsmJson {
    worker: u64,
    device_proxy: u64,
    publisher: u64,
}

#[derive(Serialize)]
struct Latency {
    p50: u64,
    p99: u64,
    p999: u64,
    max: u64,
}

impl<'a> RunJson<'a> {
    fn new(r: &'a JobReport) -> Self {
        RunJson {
            executions: r.executions,
            submitted: r.submitted,
            completed_ok: r.completed_ok,
            completed_err: r.completed_err,
            refused_full: r.refused_full,
            refused_unrecoverable: r.refused_unrecoverable,
            timed_out: r.timed_out,
            recoveries: r.recoveries,
            aborted: r.aborted,
            outputs_checked: r.outputs_checked,
            outputs_wrong: r.outputs_wrong,
            exec_per_sec: (r.exec_per_sec * 10.0).round() / 10.0,
            latency_ns: Latency {
                p50: r.latency.quantile(0.5),
                p99: r.latency.quantile(0.99),
                p999: r.latency.quantile(0.999),
                max: r.latency.max(),
            },
            model: r.model.name(),
            rate: r.rate,
            placement: (!r.deterministic).then(|| r.placement.name()),
            slab: r.slab.display().to_string(),
            vncs: r.vncs,
            models: r.models,
            deterministic: r.deterministic,
            faults: r.faults.as_str(),
            faults_injected: r.faults_injected,
            elapsed_s: r.elapsed.as_secs_f64(),
            fsm_violations: FsmJson {
                worker: r.fsm_violations.worker,
                device_proxy: r.fsm_violations.device_proxy,
                publisher: r.fsm_violations.publisher,
            },
            by_status: r
                .by_status
                .iter()
                .map(|(s, n)| (status_name(*s), *n))
                .collect(),
            bad_items: r.bad_items.iter().map(|&(k, n)| (k, n)).collect(),
            cores: r
                .per_core
                .iter()
                .map(|c| {
                    let nonzero = NcCounter::ALL
                        .iter()
                        .map(|k| (k.name(), c.get(*k)))
                        .filter(|(_, v)| *v != 0)
                        .collect();
                    (c.core.to_string(), nonzero)
                })
                .collect(),
            virtual_ns: r.virtual_ns,
            trace_xxh3: r.trace_xxh3.as_deref(),
            trace_lines: r.trace_lines,
        }
    }
}

fn status_name(s: xunds::NrtStatus) -> String {
    s.name()
        .map(|n| format!("NRT_{n}"))
        .unwrap_or_else(|| format!("NRT_STATUS_{}", s.code()))
}

fn ms(ns: u64) -> String {
    if ns >= 10_000_000 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else {
        format!("{:.1} us", ns as f64 / 1e3)
    }
}

/// The text summary.
pub fn summary(r: &JobReport) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let mode = if r.deterministic {
        "deterministic (virtual time)".to_string()
    } else {
        format!("threaded ({} placement)", r.placement.name())
    };
    let _ = writeln!(
        s,
        "xunds run: {} executions, {} cores, {} models ({}), {mode}, {}, faults: {}",
        r.executions,
        r.vncs,
        r.models,
        r.model.name(),
        r.rate.map_or("closed loop".to_string(), |x| format!(
            "open loop at {x} exec/s (Poisson)"
        )),
        r.faults
    );
    let _ = writeln!(
        s,
        "  {:.0} executions/s ({} accepted in {:.3} s wall)",
        r.exec_per_sec,
        r.accepted,
        r.elapsed.as_secs_f64()
    );
    let _ = writeln!(
        s,
        "  latency (response ts_end - ts_start): p50 {}  p99 {}  p999 {}  max {}",
        ms(r.latency.quantile(0.5)),
        ms(r.latency.quantile(0.99)),
        ms(r.latency.quantile(0.999)),
        ms(r.latency.max())
    );
    let _ = writeln!(
        s,
        "  schedule calls {}: completed ok {}, completed with error {} (timed out {}), refused queue-full {}, refused unrecoverable {}",
        r.submitted, r.completed_ok, r.completed_err, r.timed_out, r.refused_full, r.refused_unrecoverable
    );
    let _ = writeln!(
        s,
        "  outputs checked against the CPU reference: {} ({} wrong)",
        r.outputs_checked, r.outputs_wrong
    );
    let v = r.fsm_violations;
    let _ = writeln!(
        s,
        "  fsm_violations: worker {}, device proxy {}, publisher {}",
        v.worker, v.device_proxy, v.publisher
    );
    let _ = writeln!(s, "  outcomes by status:");
    for (st, n) in &r.by_status {
        let _ = writeln!(
            s,
            "    {:<40} {n:>10}",
            format!("{} ({})", status_name(*st), st.code())
        );
    }
    if r.faults_injected > 0 {
        let _ = writeln!(s, "  faults injected: {}", r.faults_injected);
    }
    if r.recoveries > 0 {
        let _ = writeln!(s, "  XU recoveries: {}", r.recoveries);
    }
    let _ = writeln!(
        s,
        "  per-core counters (read back through the read-only NDS reader):"
    );
    let shown = [
        NcCounter::InferCompleted,
        NcCounter::InferCompletedWithErr,
        NcCounter::InferCompletedWithNumErr,
        NcCounter::InferTimedOut,
        NcCounter::InferFailedToQueue,
        NcCounter::InferenceCount,
        NcCounter::MacCount,
        NcCounter::LatencyTotal,
        NcCounter::LatencyDevice,
        NcCounter::ModelLoadCount,
    ];
    let _ = write!(s, "    {:<28}", "counter");
    for c in &r.per_core {
        let _ = write!(s, " {:>14}", format!("core {}", c.core));
    }
    let _ = writeln!(s);
    for k in shown {
        let _ = write!(s, "    {:<28}", k.name());
        for c in &r.per_core {
            let _ = write!(s, " {:>14}", c.get(k));
        }
        let _ = writeln!(s);
    }
    let errs: Vec<String> = NcCounter::ALL
        .iter()
        .filter(|k| {
            matches!(
                k,
                NcCounter::ErrGeneric
                    | NcCounter::ErrNumerical
                    | NcCounter::ErrModel
                    | NcCounter::ErrTransient
                    | NcCounter::ErrHw
                    | NcCounter::ErrRt
                    | NcCounter::HwErrDmaAbort
                    | NcCounter::ErrSwNqOverflow
            )
        })
        .filter_map(|k| {
            let v: u64 = r.per_core.iter().map(|c| c.get(*k)).sum();
            (v > 0).then(|| format!("{} {v}", k.name()))
        })
        .collect();
    if !errs.is_empty() {
        let _ = writeln!(s, "    error counters (all cores): {}", errs.join(", "));
    }
    let _ = writeln!(
        s,
        "    LATENCY_* in ns (device ns at 1 cycle = 1 ns); model records: {}; device bytes in records: {}; host code+constants: {}",
        r.model_records,
        r.record_device_bytes,
        r.nd[NdCounter::MemUsageCodeHost as usize] + r.nd[NdCounter::MemUsageConstantsHost as usize]
    );
    let _ = writeln!(
        s,
        "  slab: {}  (xunds nds dump {})",
        r.slab.display(),
        r.slab.display()
    );
    if let Some(h) = &r.trace_xxh3 {
        let _ = writeln!(
            s,
            "  trace_xxh3: {h} (binary event stream; {} lines in the text view, virtual end {} ns)",
            r.trace_lines.unwrap_or(0),
            r.virtual_ns.unwrap_or(0)
        );
    }
    s
}
