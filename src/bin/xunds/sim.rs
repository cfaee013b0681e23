//! `xunds sim`: the seed swarm (`xunds::system::sim`), with a progress line
//! on a terminal, a text summary or one JSON object, and on a failure the
//! seed, the invariant, a shrunk case and the command that replays it.

use std::process::ExitCode;
use std::time::Duration;

use clap::builder::{PossibleValuesParser, TypedValueParser as _};
use serde::Serialize;
use xunds::system::faults::FaultSpec;
use xunds::system::job::ModelKind;
use xunds::system::sim::{self, CaseResult, SimCase, SimOptions, SwarmReport};

use crate::Progress;

/// Run many seeded deterministic simulations and check every run.
///
/// Each seed derives a whole configuration (cores, ring, models, arrival
/// pattern, timeout, a fault mix drawn from every fault kind, --recover) and
/// runs it on the deterministic runner; each run is checked for
/// conservation of executions, FIFO per XU, exactly-once completion,
/// bit-exact outputs, slab counters equal to the run's own, fresh records,
/// no state-machine violation, every item back in its pool, degraded XUs
/// refusing, no fd left open (with --jobs 1) and bounded waits. Stops at the
/// first failure, shrinks it and prints the command that replays it (exit
/// 1).
#[derive(clap::Args)]
pub struct Args {
    /// Seeds A to B, both included (`1..500`; `A..=B` too) [default: 1..100].
    #[arg(long, value_name = "A..B", value_parser = seed_range, conflicts_with = "seed")]
    seeds: Option<(u64, u64)>,
    /// One seed (with the overrides below: replay a printed case).
    #[arg(long, value_name = "S")]
    seed: Option<u64>,
    /// Executions per seed.
    #[arg(long, value_name = "N", default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    executions: u64,
    /// Threads running seeds [default: the CPUs available].
    #[arg(long, value_name = "J", value_parser = clap::value_parser!(u16).range(1..=256))]
    jobs: Option<u16>,
    /// Override: cores.
    #[arg(long, value_name = "C", requires = "seed", value_parser = clap::value_parser!(u8).range(1..=16))]
    cores: Option<u8>,
    /// Override: ring slots.
    #[arg(long, value_name = "R", requires = "seed", value_parser = clap::value_parser!(u32).range(1..=32))]
    ring: Option<u32>,
    /// Override: models per core.
    #[arg(long, value_name = "M", requires = "seed", value_parser = clap::value_parser!(u8).range(1..=64))]
    models: Option<u8>,
    /// Override: mlp or null.
    #[arg(long, value_name = "KIND", requires = "seed", value_parser = ModelKind::parse)]
    model: Option<ModelKind>,
    /// Override: the fault mix (`xunds run --help` has the language).
    #[arg(long, value_name = "SPEC", requires = "seed", value_parser = FaultSpec::parse)]
    faults: Option<FaultSpec>,
    /// Override: on or off.
    #[arg(long, value_name = "on|off", requires = "seed",
          value_parser = PossibleValuesParser::new(["on", "off"]).map(|s| s == "on"))]
    recover: Option<bool>,
    /// Override: the timeout in virtual ms.
    #[arg(long, value_name = "T", requires = "seed", value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    timeout_ms: Option<u64>,
    /// Override: `closed` or an open-loop rate in executions per virtual second
    /// (at least 1/3600: one an hour on average).
    #[arg(long, value_name = "closed|RATE", requires = "seed", value_parser = arrival)]
    arrival: Option<Arrival>,
    /// Do not shrink a failure.
    #[arg(long)]
    no_shrink: bool,
    /// Print one JSON object instead of the summary.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy)]
struct Arrival(Option<f64>);

fn arrival(s: &str) -> Result<Arrival, String> {
    if s == "closed" {
        return Ok(Arrival(None));
    }
    match s.parse::<f64>() {
        // The lower bound is the runner's (`JobConfig::check`, run on the
        // case before it starts: --arrival comes with --seed).
        Ok(r) if r.is_finite() && r > 0.0 => Ok(Arrival(Some(r))),
        _ => Err("expected closed or a positive rate".into()),
    }
}

fn seed_range(s: &str) -> Result<(u64, u64), String> {
    let pair = s.split_once("..=").or_else(|| s.split_once(".."));
    let (a, b) = pair.ok_or("expected A..B")?;
    let a: u64 = a.parse().map_err(|_| "bad A in A..B")?;
    let b: u64 = b.parse().map_err(|_| "bad B in A..B")?;
    if b < a {
        return Err("B must be >= A".into());
    }
    Ok((a, b))
}

impl Args {
    /// The case of `seed` with the overrides applied.
    fn case(&self, seed: u64) -> SimCase {
        let mut c = SimCase::derive(seed, self.executions);
        if let Some(v) = self.cores {
            c.set_cores(v);
        }
        c.ring = self.ring.unwrap_or(c.ring);
        c.models = self.models.unwrap_or(c.models);
        c.model = self.model.unwrap_or(c.model);
        c.faults = self.faults.clone().unwrap_or(c.faults);
        c.recover = self.recover.unwrap_or(c.recover);
        c.timeout_ms = self.timeout_ms.unwrap_or(c.timeout_ms);
        c.rate = self.arrival.map_or(c.rate, |a| a.0);
        c
    }
}

/// A shrunk failure: the case, its verdict, the runs it took.
type Shrunk = (SimCase, Option<sim::Violation>, u32);

/// This command's flag for a job setting named by `xunds run`'s flag (the
/// same where they agree).
fn sim_flag(run_flag: &'static str) -> &'static str {
    match run_flag {
        "--vncs" => "--cores",
        "--rate" => "--arrival",
        same => same,
    }
}

pub fn main(args: Args) -> ExitCode {
    // --seeds, else the one --seed, else 1..100.
    let (first, last) = args.seeds.or(args.seed.map(|s| (s, s))).unwrap_or((1, 100));
    // Overrides come with `--seed`: a combination the runner refuses is the
    // user's mistake (exit 2), not an invariant the run broke.
    if let Some(seed) = args.seed {
        if let Err(e) = args.case(seed).job().check_named(sim_flag) {
            return crate::fail(2, "xunds sim", format_args!("--seed {seed}: {e}"));
        }
    }
    let cpus = || std::thread::available_parallelism().map_or(1, |n| n.get());
    let jobs = args.jobs.map(usize::from).unwrap_or_else(cpus);
    let opts = SimOptions {
        check_fds: jobs == 1,
        ..SimOptions::default()
    };
    let mut progress = Progress::new(args.json, Duration::ZERO);
    let rep = sim::swarm(first..=last, &|s| args.case(s), jobs, &opts, &mut |p| {
        progress.draw(|secs| {
            let (done, all, n) = (p.seeds_done, p.seeds, p.executions);
            let rate = n as f64 / secs.max(1e-9);
            format!("xunds sim: {done}/{all} seeds, {n} executions, {rate:.0} exec/s, {secs:.0} s ")
        });
    });
    drop(progress);
    let shrunk = rep.failure.as_ref().map(|f| {
        let inv = f.verdict.as_ref().err().map(|v| v.invariant);
        let Some(inv) = inv.filter(|_| !args.no_shrink) else {
            return (f.case.clone(), f.verdict.clone().err(), 0);
        };
        let with_fds = SimOptions {
            check_fds: true,
            ..opts.clone()
        };
        let (case, runs) = sim::shrink(&f.case, inv, &with_fds);
        let verdict = sim::run_case(&case, &opts).verdict.err();
        (case, verdict, runs)
    });
    match args.json {
        true => crate::print_json(&json(&rep, shrunk.as_ref())),
        false => print!("{}", summary(&rep, jobs, shrunk.as_ref())),
    }
    ExitCode::from(u8::from(rep.failure.is_some()))
}

fn json<'a>(rep: &'a SwarmReport, shrunk: Option<&'a Shrunk>) -> impl Serialize + 'a {
    let failure = rep.failure.as_ref().zip(shrunk).map(|(f, shrunk)| {
        let (small, verdict, _) = shrunk;
        let v = f.verdict.as_ref().err();
        obj! {
            seed: f.case.seed,
            invariant: v.map_or("", |v| v.invariant.name()),
            detail: v.map(|v| v.detail.clone()).unwrap_or_default(),
            shrunk: small.describe(),
            shrunk_invariant: verdict.as_ref().map(|v| v.invariant.name()),
            replay: format!("xunds sim {}", small.sim_args()),
            replay_run: format!("xunds run {}", small.run_args()),
        }
    });
    obj! {
        seeds: rep.seeds,
        executions: rep.executions,
        elapsed_s: rep.elapsed.as_secs_f64(),
        exec_per_sec: (rep.exec_per_sec() * 10.0).round() / 10.0,
        seeds_per_minute: (rep.seeds_per_minute() * 10.0).round() / 10.0,
        seeds_with_faults: rep.with_faults,
        faults_injected: rep.faults.iter().cloned().collect::<indexmap::IndexMap<_, _>>(),
        passed: rep.failure.is_none(),
        #[serde(skip_serializing_if = "crate::is_null")]
        failure: failure,
    }
}

fn summary(rep: &SwarmReport, jobs: usize, shrunk: Option<&Shrunk>) -> String {
    use std::fmt::Write as _;
    let (seeds, faulty, n) = (rep.seeds, rep.with_faults, rep.executions);
    let secs = rep.elapsed.as_secs_f64();
    let (rate, per_minute) = (rep.exec_per_sec(), rep.seeds_per_minute());
    let fired: Vec<String> = rep.faults.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let mut s = format!(
        "xunds sim: {seeds} seeds ({faulty} with faults), {n} simulated executions in {secs:.1} s on {jobs} threads\n  \
         {rate:.0} simulated executions/s, {per_minute:.0} seeds/minute\n  \
         faults injected by kind: {}\n",
        fired.join(", ")
    );
    let (Some(CaseResult { case, verdict, .. }), Some((small, then, runs))) =
        (&rep.failure, shrunk)
    else {
        s.push_str("  every invariant held\n");
        return s;
    };
    if let Err(v) = verdict {
        let _ = writeln!(s, "FAILED seed {}: invariant {v}", case.seed);
    }
    let (n, described) = (case.executions, case.describe());
    let _ = writeln!(s, "  case: {n} executions, {described}");
    let then = then
        .as_ref()
        .map_or(String::new(), |v| format!("\n    -> {v}"));
    let (n, described) = (small.executions, small.describe());
    let (sim, run) = (small.sim_args(), small.run_args());
    let _ = writeln!(
        s,
        "  shrunk ({runs} runs): {n} executions, {described}{then}\n  replay: xunds sim {sim}\n  trace:  xunds run {run} --trace sim.trace"
    );
    s
}
