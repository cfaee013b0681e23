//! The deterministic runner against the threaded one, in the same run: the
//! default workload of `xunds run` (4 cores, 2 models, the example MLP),
//! once as `xunds run --deterministic` (one thread, virtual clock, every
//! protocol operation and transition digested as a binary event stream:
//! `trace_xxh3`) and once threaded (shared threads, one per CPU, on real
//! mappings). The ratio is the deterministic run's executions/s over the
//! threaded run's. A third row writes the binary trace file as well and
//! prints its size per execution; a fourth runs untraced, as `xunds sim`
//! runs its cases (no digest, no tracer in the HAL). The last runs one untraced
//! deterministic run per CPU at once, as a seed swarm does: the machine's
//! deterministic throughput against the threaded run's on the same CPUs
//! (target 1.0x: `xunds sim` finds bugs at the threaded speed or better).
//! One deterministic run alone has one thread against the threaded run's
//! every CPU; its rows are informational.
//!
//! `XUNDS_DET_N` sets the executions (default 20 000), `XUNDS_DET_REPS` the
//! best-of count (default 3).

use std::time::Duration;

use xunds::system::job::{self, JobConfig};

use crate::harness::{best_of, cpus, env_or, ratio, row};

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = job::default_slab_path()
        .parent()
        .map_or_else(std::env::temp_dir, |d| d.to_path_buf());
    dir.join(format!("xunds-bench-det-{}-{name}", std::process::id()))
}

/// One run of the default workload: its wall time (the run proper) and the
/// trace file's size when one is written.
fn run(n: u64, deterministic: bool, trace: Trace) -> (Duration, u64) {
    run_seed(n, deterministic, trace, 1, "")
}

/// What a deterministic run does with its event stream.
#[derive(Clone, Copy, PartialEq)]
enum Trace {
    /// Digest it (`xunds run --deterministic`).
    Digest,
    /// Digest it and write the binary trace file (`--trace FILE`).
    File,
    /// Nothing: no digest, no tracer (`xunds sim`'s cases).
    Off,
}

fn run_seed(n: u64, deterministic: bool, trace: Trace, seed: u64, tag: &str) -> (Duration, u64) {
    let path = tmp(&format!("trace{tag}"));
    let cfg = JobConfig {
        executions: n,
        deterministic,
        seed,
        trace: (trace == Trace::File).then(|| path.clone()),
        digest: trace != Trace::Off,
        slab: Some(tmp(&format!("nds{tag}"))),
        ..JobConfig::default()
    };
    let r = job::run(&cfg, &mut |_, _| {}).expect("job");
    assert_eq!(r.completed_ok, n);
    assert_eq!(r.outputs_wrong, 0);
    let _ = std::fs::remove_file(&r.slab);
    let size = std::fs::metadata(&path).map_or(0, |m| m.len());
    let _ = std::fs::remove_file(&path);
    (r.elapsed, size)
}

pub fn det_vs_threaded() {
    let n: u64 = env_or("XUNDS_DET_N", 20_000);
    let reps: usize = env_or("XUNDS_DET_REPS", 3);
    println!("  default workload (4 cores, 2 models, mlp), {n} executions, best of {reps}");
    let threaded = best_of(reps, || run(n, false, Trace::Digest).0);
    let det = best_of(reps, || run(n, true, Trace::Digest).0);
    let mut size = 0;
    let det_file = best_of(reps, || {
        let (d, s) = run(n, true, Trace::File);
        size = s;
        d
    });
    let untraced = best_of(reps, || run(n, true, Trace::Off).0);
    row("threaded run (per execution)", n, threaded);
    row("deterministic run, digest only", n, det);
    row("deterministic run, binary trace file", n, det_file);
    row("deterministic run, untraced (xunds sim)", n, untraced);
    println!(
        "  trace file: {size} bytes, {:.1} bytes per execution",
        size as f64 / n as f64
    );
    // One deterministic thread against a threaded run with every CPU:
    // informational (on 2 CPUs its bound is about 0.5x, docs/perf.md). The
    // target is the swarm row below: the same CPUs on both sides.
    ratio(
        "deterministic / threaded exec/s",
        det,
        threaded,
        "informational",
    );
    ratio(
        "untraced deterministic / threaded exec/s",
        untraced,
        threaded,
        "informational",
    );
    // A seed swarm (`xunds sim --jobs J`) runs one deterministic run per
    // CPU: the machine's deterministic exec/s against the threaded run's,
    // which also has every CPU.
    let jobs = cpus();
    // The runs proper overlap: the longest of them is the swarm's time.
    let swarm = best_of(reps, || {
        std::thread::scope(|s| {
            let runs: Vec<_> = (0..jobs)
                .map(|j| {
                    s.spawn(move || run_seed(n, true, Trace::Off, 1 + j as u64, &format!("-{j}")).0)
                })
                .collect();
            runs.into_iter()
                .map(|r| r.join().expect("run"))
                .max()
                .unwrap_or_default()
        })
    });
    let per_exec = swarm / jobs as u32;
    row(
        &format!("untraced deterministic, {jobs} runs at once (per exec.)"),
        n,
        per_exec,
    );
    ratio(
        &format!("{jobs} untraced det. runs / threaded exec/s"),
        per_exec,
        threaded,
        ">= 1.0x",
    );
    // Whether the runs had a CPU each: the slowest run among `jobs` at once
    // (seeds 1..=jobs) against seed 1's run alone. The runs share nothing,
    // so a factor well above 1.0 is the machine (vCPUs that are SMT
    // siblings of one core, or a hypervisor that does not run both at
    // once), not the runner; the swarm row reads low by the same factor.
    // Seeds differ a little in work, so on separate CPUs it reads about
    // 1.0, not exactly.
    println!(
        "  one run among {jobs} at once / one run alone (time): {:.2}x  (1.0 when each run has a CPU to itself)",
        swarm.as_secs_f64() / untraced.as_secs_f64()
    );
}
