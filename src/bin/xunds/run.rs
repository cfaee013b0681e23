//! `xunds run`: the main job (`xunds::system::job`), with a progress bar on a
//! terminal, a text summary or one JSON object.

use std::io::{IsTerminal, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use xunds::system::faults::FaultSpec;
use xunds::system::job::{self, JobConfig, JobReport};
use xunds::wire::nds::counters::{NcCounter, NdCounter};

use crate::json::Json;

pub const HELP: &str = "\
usage: xunds run [flags]

Runs N executions of the example MLP (batch 4, 16 -> 32 -> 8, row max) through
the whole pipeline on a simulated device with V cores: producer funnel, XU ring
(seed 000), device staging and doorbell, sequencer and engines, NQ harvest,
worker, NDS publisher (seed 004). Every output is checked bit for bit against
the CPU reference; the per-core counters are read back through the read-only
NDS reader. The slab is left at --slab for `xunds nds dump` (another process).

flags:
  --executions N     executions to run (default 100000)
  --vncs V           cores / XUs, one worker each (default 4; 1..=16)
  --models M         models: example-MLP variants with different weights
                     (default 2; vncs * models <= 64)
  --seed S           seeds the deterministic schedule, faults and inputs (default 1)
  --slab PATH        the datastore file (default /dev/shm/xunds-<pid>.nds);
                     refused while another run writes it, or when it is an
                     existing file that is not a slab
  --force            overwrite --slab even when it is not a slab
  --deterministic    one thread, seeded schedule, virtual clock, traced HAL;
                     prints trace_sha256 (same seed -> same trace, byte for byte)
  --trace FILE       write the deterministic trace to FILE (replay: xunds replay FILE)
  --faults SPEC      inject device faults (below)
  --timeout-ms T     execution timeout from submission (default 1000; 2 ms
                     virtual when deterministic)
  --ring R           XU ring slots per core (default 32; 1..=32)
  --recover          recover XUs degraded with their queues intact (below)
  --json             print one JSON object instead of the summary

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
  A degraded XU refuses every later schedule with 101 (NRT_EXEC_UNIT_UNRECOVERABLE)
  unless --recover: an XU degraded by a device-reported error (error:hw) is then
  brought back once it has drained, and the run keeps executing on it.
  example: --faults error:hw@0.001,timeout@0.0005,corrupt:ring_id@#400/core1";

fn fail(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("xunds run: {e}");
    ExitCode::FAILURE
}

fn parse(args: &[String]) -> Result<(JobConfig, bool), String> {
    let mut cfg = JobConfig::default();
    let mut json = false;
    let mut it = args.iter().map(String::as_str);
    let num = |flag: &str, v: Option<&str>| -> Result<u64, String> {
        v.ok_or_else(|| format!("{flag} needs a value"))?
            .parse::<u64>()
            .map_err(|_| format!("{flag}: not a number"))
    };
    while let Some(a) = it.next() {
        match a {
            "--executions" => cfg.executions = num(a, it.next())?,
            "--vncs" => {
                cfg.vncs = u8::try_from(num(a, it.next())?).map_err(|_| "--vncs: 1..=16")?
            }
            "--models" => {
                cfg.models = u8::try_from(num(a, it.next())?).map_err(|_| "--models: too many")?
            }
            "--seed" => cfg.seed = num(a, it.next())?,
            "--ring" => cfg.ring = u32::try_from(num(a, it.next())?).map_err(|_| "--ring")?,
            "--timeout-ms" => cfg.timeout_ns = Some(num(a, it.next())?.saturating_mul(1_000_000)),
            "--slab" => cfg.slab = Some(PathBuf::from(it.next().ok_or("--slab needs a path")?)),
            "--trace" => cfg.trace = Some(PathBuf::from(it.next().ok_or("--trace needs a path")?)),
            "--faults" => {
                cfg.faults = FaultSpec::parse(it.next().ok_or("--faults needs a spec")?)
                    .map_err(|e| e.to_string())?
            }
            "--deterministic" => cfg.deterministic = true,
            "--force" => cfg.force_slab = true,
            "--recover" => cfg.recover = true,
            "--json" => json = true,
            other => return Err(format!("unknown flag {other:?}")),
        }
    }
    if cfg.trace.is_some() && !cfg.deterministic {
        return Err("--trace needs --deterministic".into());
    }
    Ok((cfg, json))
}

pub fn main(args: &[String]) -> ExitCode {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{HELP}");
        return ExitCode::SUCCESS;
    }
    let (cfg, json) = match parse(args) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("xunds run: {e}\n\n{HELP}");
            return ExitCode::from(2);
        }
    };
    let tty = std::io::stderr().is_terminal();
    let mut last = Instant::now() - Duration::from_secs(1);
    let mut bar = |done: u64, total: u64| {
        if !tty || last.elapsed() < Duration::from_millis(100) {
            return;
        }
        last = Instant::now();
        let width = 40u64;
        let filled = (done.min(total) * width)
            .checked_div(total)
            .unwrap_or(width);
        let pct = (done.min(total) * 100).checked_div(total).unwrap_or(100);
        eprint!(
            "\r[{}{}] {pct:3}% {done}/{total}",
            "#".repeat(filled as usize),
            "-".repeat((width - filled) as usize)
        );
        let _ = std::io::stderr().flush();
    };
    let rep = job::run(&cfg, &mut bar);
    if tty {
        eprint!("\r{}\r", " ".repeat(72));
    }
    let rep = match rep {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    if json {
        println!("{}", to_json(&rep).render());
    } else {
        print!("{}", summary(&rep));
    }
    if rep.outputs_wrong > 0 || rep.fifo_violations > 0 || rep.nds_errors > 0 {
        eprintln!("xunds run: wrong outputs, FIFO violations or NDS errors (see above)");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// The JSON document (keys in a fixed order).
pub fn to_json(r: &JobReport) -> Json {
    let mut j = Json::obj()
        .with("executions", r.executions)
        .with("submitted", r.submitted)
        .with("completed_ok", r.completed_ok)
        .with("completed_err", r.completed_err)
        .with("refused_full", r.refused_full)
        .with("refused_unrecoverable", r.refused_unrecoverable)
        .with("timed_out", r.timed_out)
        .with("recoveries", r.recoveries)
        .with("outputs_checked", r.outputs_checked)
        .with("outputs_wrong", r.outputs_wrong)
        .with("exec_per_sec", (r.exec_per_sec * 10.0).round() / 10.0)
        .with(
            "latency_ns",
            Json::obj()
                .with("p50", r.latency.quantile(0.5))
                .with("p99", r.latency.quantile(0.99))
                .with("max", r.latency.max()),
        )
        .with("slab", r.slab.display().to_string())
        .with("vncs", r.vncs)
        .with("models", r.models)
        .with("deterministic", r.deterministic)
        .with("faults", r.faults.as_str())
        .with("faults_injected", r.faults_injected)
        .with("elapsed_s", r.elapsed.as_secs_f64());
    let mut st = Json::obj();
    for (s, n) in &r.by_status {
        st.push(&status_name(*s), *n);
    }
    j.push("by_status", st);
    let mut cores = Json::obj();
    for c in &r.per_core {
        let mut o = Json::obj();
        for k in NcCounter::ALL {
            let v = c.get(*k);
            if v != 0 {
                o.push(k.name(), v);
            }
        }
        cores.push(&c.core.to_string(), o);
    }
    j.push("cores", cores);
    if let Some(v) = r.virtual_ns {
        j.push("virtual_ns", v);
    }
    if let Some(h) = &r.trace_sha256 {
        j.push("trace_sha256", h.as_str());
    }
    if let Some(n) = r.trace_lines {
        j.push("trace_lines", n);
    }
    j
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
        "deterministic (virtual time)"
    } else {
        "threaded"
    };
    let _ = writeln!(
        s,
        "xunds run: {} executions, {} cores, {} models, {mode}, faults: {}",
        r.executions, r.vncs, r.models, r.faults
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
        "  latency (submit -> completion): p50 {}  p99 {}  max {}",
        ms(r.latency.quantile(0.5)),
        ms(r.latency.quantile(0.99)),
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
    if let Some(h) = &r.trace_sha256 {
        let _ = writeln!(
            s,
            "  trace_sha256: {h} ({} lines, virtual end {} ns)",
            r.trace_lines.unwrap_or(0),
            r.virtual_ns.unwrap_or(0)
        );
    }
    s
}
