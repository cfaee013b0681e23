//! `xunds run`: the main job (`xunds::system::job`), with a progress bar on a
//! terminal, a text summary or one JSON object.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::value_parser;
use indexmap::IndexMap;
use serde::Serialize;
use xunds::system::faults::FaultSpec;
use xunds::system::job::{self, JobConfig, JobReport, ModelKind};
use xunds::system::Placement;
use xunds::wire::nds::counters::{ErrorClass, NcCounter, NdCounter};

use crate::Progress;

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
    #[arg(long, value_name = "KIND", default_value = "mlp", value_parser = ModelKind::parse)]
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
    #[arg(long, value_name = "P", default_value = "shared", value_parser = Placement::parse, conflicts_with = "deterministic")]
    placement: Placement,
    /// Print one JSON object instead of the summary.
    #[arg(long)]
    json: bool,
    /// Show the progress line once the run has taken this long (tests).
    #[arg(long, value_name = "MS", default_value_t = 2000, hide = true)]
    progress_after_ms: u64,
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
        let all = self.duration.map_or(100_000, |_| job::MAX_EXECUTIONS);
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

pub fn main(args: Args) -> ExitCode {
    let cfg = args.config();
    if let Err(e) = cfg.check() {
        return crate::fail(2, "xunds run", e);
    }
    let fail = |e: &dyn std::fmt::Display| crate::fail(1, "xunds run", e);
    match &args.slab {
        Some(p) if p.is_dir() => {
            return fail(&format_args!("--slab {}: is a directory", p.display()))
        }
        Some(p) => {
            let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
            if let Some(d) = dir.filter(|d| !d.exists()) {
                let (p, d) = (p.display(), d.display());
                return fail(&format_args!("--slab {p}: no directory {d}"));
            }
        }
        // The default-named slabs of ended runs: the newest stay, the rest
        // go (`xunds nds clean` removes them all).
        None => crate::nds::prune_left_behind(),
    }
    // A progress line once the run has taken `--progress-after-ms`; a run
    // for a time shows its time.
    let mut progress = Progress::new(args.json, Duration::from_millis(args.progress_after_ms));
    let rep = job::run(&cfg, &mut |done, total| {
        progress.draw(|secs| {
            let done = done.min(total);
            let (frac, count) = match args.duration {
                Some(d) => (secs / d.as_secs_f64(), format!("{done} executions")),
                None => (done as f64 / total.max(1) as f64, format!("{done}/{total}")),
            };
            let frac = frac.clamp(0.0, 1.0);
            let filled = (frac * 40.0) as usize;
            let bar = format!("{}{}", "#".repeat(filled), "-".repeat(40 - filled));
            format!("[{bar}] {:3.0}% {count} {secs:.0} s", frac * 100.0)
        });
    });
    drop(progress);
    let rep = match rep {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    match args.json {
        true => crate::print_json(&run_json(&rep)),
        false => print!("{}", summary(&rep)),
    }
    let bad = [
        rep.outputs_wrong,
        rep.fifo_violations,
        rep.system.nds_errors,
        rep.fsm_violations.total(),
    ];
    if bad.iter().any(|n| *n > 0) {
        return fail(
            &"wrong outputs, FIFO violations, NDS errors or state-machine violations (see above)",
        );
    }
    ExitCode::SUCCESS
}

/// The `--json` document (keys in this order).
fn run_json(r: &JobReport) -> impl Serialize + '_ {
    let q = |x| r.latency.quantile(x);
    let v = r.fsm_violations;
    let cores = r.per_core.iter().map(|c| {
        let named = NcCounter::ALL.iter().map(|k| (k.name(), c.get(*k)));
        let named: IndexMap<_, _> = named.filter(|(_, v)| *v != 0).collect();
        (c.core.to_string(), named)
    });
    obj! {
        executions: r.executions,
        submitted: r.producer.attempts,
        completed_ok: r.completed_ok,
        completed_err: r.completed_err,
        refused_full: r.producer.refused_full,
        refused_unrecoverable: r.producer.refused_unrecoverable,
        timed_out: r.timed_out,
        // Times an XU came back to healthy (each reset).
        recoveries: r.recoveries,
        // Executions a reset aborted (completed with 101).
        aborted: r.aborted,
        outputs_checked: r.outputs_checked,
        outputs_wrong: r.outputs_wrong,
        exec_per_sec: (r.exec_per_sec * 10.0).round() / 10.0,
        latency_ns: obj! { p50: q(0.5), p99: q(0.99), p999: q(0.999), max: r.latency.max() },
        model: r.config.model.name(),
        // The open-loop rate asked for (null: closed loop).
        rate: r.config.rate,
        // How the actors were put on threads (null: deterministic).
        placement: (!r.config.deterministic).then(|| r.config.placement.name()),
        slab: r.slab.display().to_string(),
        vncs: r.config.vncs,
        models: r.config.models,
        deterministic: r.config.deterministic,
        faults: r.config.faults.text(),
        faults_injected: r.faults_injected,
        elapsed_s: r.elapsed.as_secs_f64(),
        // Events each kind of actor's state refused.
        fsm_violations: obj! {
            worker: v.worker,
            device_proxy: v.device_proxy,
            publisher: v.publisher,
        },
        // Outcomes by status name.
        by_status: r.by_status.iter().map(|(s, n)| (status_name(*s), *n)).collect::<IndexMap<_, _>>(),
        // Executions whose work item was bad, by kind (every kind listed).
        bad_items: r.bad_items.iter().copied().collect::<IndexMap<_, _>>(),
        // Per core: its non-zero NC counters by name.
        cores: cores.collect::<IndexMap<_, _>>(),
        #[serde(skip_serializing_if = "crate::is_null")]
        virtual_ns: r.virtual_ns,
        #[serde(skip_serializing_if = "crate::is_null")]
        trace_xxh3: r.trace_xxh3.as_deref(),
        #[serde(skip_serializing_if = "crate::is_null")]
        trace_lines: r.trace_lines,
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
    use NcCounter::*;
    let (c, p, v) = (&r.config, &r.producer, r.fsm_violations);
    let mode = match c.deterministic {
        true => "deterministic (virtual time)".to_string(),
        false => format!("threaded ({} placement)", c.placement.name()),
    };
    let arrival = c.rate.map_or("closed loop".into(), |x| {
        format!("open loop at {x} exec/s (Poisson)")
    });
    let (n, cores, models, model) = (r.executions, c.vncs, c.models, c.model.name());
    let (faults, rate, accepted) = (c.faults.text(), r.exec_per_sec, p.accepted);
    let q = |x| ms(r.latency.quantile(x));
    let (p50, p99, p999, max) = (q(0.5), q(0.99), q(0.999), ms(r.latency.max()));
    let (secs, checked, wrong) = (r.elapsed.as_secs_f64(), r.outputs_checked, r.outputs_wrong);
    let (worker, proxy, publisher) = (v.worker, v.device_proxy, v.publisher);
    let (calls, full, unrecoverable) = (p.attempts, p.refused_full, p.refused_unrecoverable);
    let (ok, err, timed_out) = (r.completed_ok, r.completed_err, r.timed_out);
    let mut s = format!(
        "xunds run: {n} executions, {cores} cores, {models} models ({model}), {mode}, {arrival}, faults: {faults}\n  \
         {rate:.0} executions/s ({accepted} accepted in {secs:.3} s wall)\n  \
         latency (response ts_end - ts_start): p50 {p50}  p99 {p99}  p999 {p999}  max {max}\n  \
         schedule calls {calls}: completed ok {ok}, completed with error {err} (timed out {timed_out}), refused queue-full {full}, refused unrecoverable {unrecoverable}\n  \
         outputs checked against the CPU reference: {checked} ({wrong} wrong)\n  \
         fsm_violations: worker {worker}, device proxy {proxy}, publisher {publisher}\n  outcomes by status:\n"
    );
    for (st, n) in &r.by_status {
        let name = format!("{} ({})", status_name(*st), st.code());
        let _ = writeln!(s, "    {name:<40} {n:>10}");
    }
    if r.faults_injected > 0 {
        let _ = writeln!(s, "  faults injected: {}", r.faults_injected);
    }
    if r.recoveries > 0 {
        let _ = writeln!(s, "  XU recoveries: {}", r.recoveries);
    }
    s.push_str("  per-core counters (read back through the read-only NDS reader):\n");
    let _ = write!(s, "    {:<28}", "counter");
    for c in &r.per_core {
        let _ = write!(s, " {:>14}", format!("core {}", c.core));
    }
    for k in [
        InferCompleted,
        InferCompletedWithErr,
        InferCompletedWithNumErr,
        InferTimedOut,
        InferFailedToQueue,
        InferenceCount,
        MacCount,
        LatencyTotal,
        LatencyDevice,
        ModelLoadCount,
    ] {
        let _ = write!(s, "\n    {:<28}", k.name());
        for c in &r.per_core {
            let _ = write!(s, " {:>14}", c.get(k));
        }
    }
    s.push('\n');
    // The error classes' counters, then the DMA-abort and NQ-overflow ones.
    let classes = ErrorClass::ALL.map(ErrorClass::counter).into_iter();
    let errs: Vec<String> = classes
        .chain([HwErrDmaAbort, ErrSwNqOverflow])
        .filter_map(|k| {
            let v: u64 = r.per_core.iter().map(|c| c.get(k)).sum();
            (v > 0).then(|| format!("{} {v}", k.name()))
        })
        .collect();
    if !errs.is_empty() {
        let _ = writeln!(s, "    error counters (all cores): {}", errs.join(", "));
    }
    let host = r.nd[NdCounter::MemUsageCodeHost as usize]
        + r.nd[NdCounter::MemUsageConstantsHost as usize];
    let (records, bytes, slab) = (r.model_records, r.record_device_bytes, r.slab.display());
    let _ = writeln!(
        s,
        "    LATENCY_* in ns (device ns at 1 cycle = 1 ns); model records: {records}; device bytes in records: {bytes}; host code+constants: {host}\n\
         \x20 slab: {slab}  (xunds nds dump {slab})"
    );
    if let Some(h) = &r.trace_xxh3 {
        let (lines, end) = (r.trace_lines.unwrap_or(0), r.virtual_ns.unwrap_or(0));
        let _ = writeln!(
            s,
            "  trace_xxh3: {h} (binary event stream; {lines} lines in the text view, virtual end {end} ns)"
        );
    }
    s
}
