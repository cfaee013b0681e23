//! `xunds sim`: a seed swarm over the deterministic runner, in the manner of
//! a deterministic simulator (FoundationDB's simulation, TigerBeetle's VOPR):
//! each seed derives a whole configuration ([`SimCase::derive`]: cores,
//! ring, models, arrival pattern, timeout, a fault mix, `--recover`), runs it
//! with [`job::run`] in virtual time, and checks the run against the
//! invariants ([`check`], [`Invariant`]). A failure is shrunk by re-running
//! ([`shrink`]: fewer executions, cores, fault rules, simpler settings,
//! keeping the smallest case that still breaks the same invariant), and
//! [`SimCase::sim_args`] is the exact command line that replays it.
//!
//! A case is a pure function of its seed and its execution count, so the
//! same seed gives the same run (the deterministic runner's trace is a
//! function of the job's configuration).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::faults::{self, FaultSpec};
use super::job::{self, FsmViolations, JobConfig, JobReport, ModelKind};
use super::runner::RunError;
use super::Error;
use crate::actors::producer::{LaneStats, ProducerStats};
use crate::prng::SplitMix64;
use crate::wire::nds::counters::NcCounter;
use crate::wire::nq::ErrorClass;
use crate::wire::status::NrtStatus;

/// Every fault kind of the `--faults` language a case draws from (each
/// `error:CLASS` and `corrupt:WHAT` is a kind of its own).
pub const FAULT_KINDS: [&str; 12] = [
    "error:generic",
    "error:numerical",
    "error:model",
    "error:transient",
    "error:hw",
    "error:runtime",
    "timeout",
    "doorbell",
    "corrupt:len",
    "corrupt:ring_id",
    "corrupt:addr",
    "nq_overflow",
];

/// One simulated run: everything [`job::run`] needs, derived from a seed.
#[derive(Clone, Debug, PartialEq)]
pub struct SimCase {
    /// The seed (schedule, inputs, fault triggers; and this derivation).
    pub seed: u64,
    /// Executions.
    pub executions: u64,
    /// Cores (XUs), 1..=16.
    pub cores: u8,
    /// Ring slots per core, 1..=32.
    pub ring: u32,
    /// Model variants per core (`cores * models <= 64`).
    pub models: u8,
    /// The model kind.
    pub model: ModelKind,
    /// The fault mix (`none` included).
    pub faults: FaultSpec,
    /// `--recover`.
    pub recover: bool,
    /// Execution timeout (virtual ms).
    pub timeout_ms: u64,
    /// Open loop at this many executions per (virtual) second, Poisson
    /// arrivals with idle gaps; `None`: closed loop (bursts to a full ring).
    pub rate: Option<f64>,
}

impl SimCase {
    /// The case of `seed` with `executions` executions.
    pub fn derive(seed: u64, executions: u64) -> SimCase {
        // A stream of its own, so the case does not echo the run's draws.
        let mut r = SplitMix64::new(seed ^ 0x5EED_5173_0000_0000);
        let cores = 1 + r.below(16) as u8;
        // Half the cases a ring of at most 4 slots.
        let most = if r.chance(1, 2) { 4 } else { 32 };
        let ring = 1 + r.below(most) as u32;
        let models = 1 + r.below(u64::from((64 / cores).min(4))) as u8;
        let model = if r.chance(1, 3) {
            ModelKind::Null
        } else {
            ModelKind::Mlp
        };
        let timeout_ms = [1, 2, 2, 5][r.below(4) as usize];
        let rates = [20_000.0, 100_000.0, 500_000.0, 2_000_000.0];
        let rate = (!r.chance(1, 2)).then(|| rates[r.below(4) as usize]);
        let recover = r.chance(1, 2);
        let mut items: Vec<String> = Vec::new();
        if !r.chance(1, 4) {
            for _ in 0..1 + r.below(3) {
                let kind = FAULT_KINDS[r.below(FAULT_KINDS.len() as u64) as usize];
                if items.iter().any(|i| i.starts_with(&format!("{kind}@"))) {
                    continue;
                }
                // Eligible operations: about five NQ records, two doorbells
                // and six descriptors per execution.
                let ops = executions.max(1) * 5;
                let trigger = match r.below(8) {
                    0..=3 => format!("#{}", 1 + r.below(ops)),
                    4..=6 => format!("1/{}", ops / 2 + r.below(ops * 4)),
                    _ => format!("{}+", 1 + r.below(ops)),
                };
                let core = r
                    .chance(1, 3)
                    .then(|| format!("/core{}", r.below(u64::from(cores))));
                items.push(format!("{kind}@{trigger}{}", core.unwrap_or_default()));
            }
        }
        // Every item above is in the spec language: a refusal is a bug here,
        // and failing loudly keeps it from emptying the mix without a word.
        let faults = FaultSpec::parse(&items.join(",")).expect("a derived fault spec parses");
        SimCase {
            seed,
            executions,
            cores,
            ring,
            models,
            model,
            faults,
            recover,
            timeout_ms,
            rate,
        }
    }

    /// The deterministic job of this case, its slab a file with no name
    /// (nothing to remove after it, nothing left when the swarm is
    /// interrupted).
    pub fn job(&self) -> JobConfig {
        JobConfig {
            executions: self.executions,
            vncs: self.cores,
            models: self.models,
            seed: self.seed,
            unnamed_slab: true,
            deterministic: true,
            faults: self.faults.clone(),
            timeout_ns: Some(self.timeout_ms * 1_000_000),
            ring: self.ring,
            record_tags: true,
            model: self.model,
            rate: self.rate,
            recover: self.recover,
            // Far above any run's need (a few hundred polls per execution),
            // so a run that stops making progress ends.
            max_polls: Some(20_000 * (self.executions + 100)),
            // The invariants need no event stream; the replay command
            // (`sim_args`) digests it, and gets the same run.
            digest: false,
            ..JobConfig::default()
        }
    }

    /// The case on `cores` cores: as many models as that many cores hold,
    /// and only the fault rules of cores that remain.
    pub fn set_cores(&mut self, cores: u8) {
        self.cores = cores;
        self.models = self.models.min(64 / cores);
        self.faults
            .rules
            .retain(|r| r.core.is_none_or(|k| k < cores));
    }

    /// The `xunds sim` arguments that replay exactly this case.
    pub fn sim_args(&self) -> String {
        format!(
            "{} --recover {} --timeout-ms {} --arrival {}",
            self.shared_args("--cores"),
            if self.recover { "on" } else { "off" },
            self.timeout_ms,
            self.rate.map_or("closed".to_string(), |r| r.to_string())
        )
    }

    /// The `xunds run --deterministic` arguments of the same run (its trace
    /// with `--trace FILE`; `xunds run` checks outputs, FIFO, NDS errors and
    /// state-machine violations, not every invariant of [`check`]).
    pub fn run_args(&self) -> String {
        format!(
            "--deterministic {}{} --timeout-ms {}{}",
            self.shared_args("--vncs"),
            if self.recover { " --recover" } else { "" },
            self.timeout_ms,
            self.rate.map_or(String::new(), |r| format!(" --rate {r}"))
        )
    }

    /// The arguments both commands spell alike (the cores flag aside).
    fn shared_args(&self, cores_flag: &str) -> String {
        format!(
            "--seed {} --executions {} {cores_flag} {} --ring {} --models {} --model {} --faults {}",
            self.seed,
            self.executions,
            self.cores,
            self.ring,
            self.models,
            self.model.name(),
            self.faults.text(),
        )
    }

    /// One line: the configuration (no seed, no executions).
    pub fn describe(&self) -> String {
        let arrival = self
            .rate
            .map_or("closed loop".into(), |r| format!("open loop {r} exec/s"));
        format!(
            "{} cores, ring {}, {} x {}, {arrival}, timeout {} ms, faults {}, recover {}",
            self.cores,
            self.ring,
            self.models,
            self.model.name(),
            self.timeout_ms,
            self.faults.text(),
            if self.recover { "on" } else { "off" }
        )
    }
}

wire_enum! {
    /// The invariants a run is checked against, by the name printed in
    /// reports.
    pub enum Invariant(usize) {
        /// The run itself failed (an error other than a bound).
        Run = 0 => "run",
        /// Every wait is bounded: no livelock, no poll budget exhausted, every
        /// completion within its timeout (plus the run's slack).
        BoundedWait = 1 => "bounded_wait",
        /// Conservation of executions: every schedule call accounted for as
        /// accepted, refused queue-full or refused 101, and every accepted one
        /// completed.
        Conservation = 2 => "conservation",
        /// FIFO per XU.
        Fifo = 3 => "fifo",
        /// Exactly-once completion: each accepted execution's tag once.
        ExactlyOnce = 4 => "exactly_once",
        /// Outputs bit-exact against the CPU reference.
        Outputs = 5 => "outputs",
        /// Every counter equal between the run's own truth (worker and lane
        /// statistics) and the slab read back through the NDS reader.
        Counters = 6 => "counters",
        /// Every model record fresh (no torn record accepted), no NDS update
        /// refused.
        Records = 7 => "records",
        /// No state-machine violation.
        Fsm = 8 => "fsm",
        /// Every work item back in its pool exactly once.
        ItemPool = 9 => "item_pool",
        /// A degraded XU refuses every later schedule (until recovered).
        DegradedRefuses = 10 => "degraded_refuses",
        /// No file descriptor left open.
        Fds = 11 => "fds",
        /// An extra check given by the caller ([`SimOptions::hook`]).
        Hook = 12 => "hook",
    }
}

/// A broken invariant and what was seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Which.
    pub invariant: Invariant,
    /// What was seen.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.invariant, self.detail)
    }
}

fn broke(invariant: Invariant, detail: String) -> Result<(), Violation> {
    Err(Violation { invariant, detail })
}

/// `return` a [`Violation`] of `invariant`, its detail formatted, when
/// `cond` holds.
macro_rules! fail_if {
    ($cond:expr, $invariant:expr, $($detail:tt)+) => {
        if $cond {
            return broke($invariant, format!($($detail)+));
        }
    };
}

/// Check a finished run of `case` against every invariant but the fd count
/// (which needs the process's fds before the run: [`run_case`]).
pub fn check(case: &SimCase, r: &JobReport) -> Result<(), Violation> {
    use Invariant::*;
    let workers = &r.system.workers;
    let ProducerStats {
        attempts,
        accepted,
        refused_full: full,
        refused_unrecoverable: unrec,
        failed,
        ..
    } = r.producer;
    let (ok, err, executions) = (r.completed_ok, r.completed_err, case.executions);
    // Conservation.
    fail_if!(
        attempts != accepted + full + unrec + failed,
        Conservation,
        "schedule calls {attempts} != accepted {accepted} + refused full {full} + refused 101 {unrec} + failed {failed}"
    );
    fail_if!(
        failed != 0,
        Conservation,
        "{failed} schedule calls refused with neither NRT_QUEUE_FULL nor 101"
    );
    fail_if!(
        accepted + unrec != executions,
        Conservation,
        "executions {executions} != accepted {accepted} + given up (101) {unrec}"
    );
    fail_if!(
        ok + err != accepted,
        Conservation,
        "accepted {accepted} != completed ok {ok} + completed with error {err}"
    );
    let mut lanes = LaneStats::default();
    r.system.lanes.iter().for_each(|l| lanes.merge(l));
    let producer = LaneStats {
        accepted,
        refused_full: full,
        refused_unrecoverable: unrec,
    };
    fail_if!(
        lanes != producer,
        Conservation,
        "lanes {lanes:?} != the producer's {producer:?}"
    );
    // FIFO.
    let fifo = r.fifo_violations;
    fail_if!(fifo != 0, Fifo, "{fifo} completions out of order");
    // Exactly once.
    let mut tags: Vec<u64> = workers.iter().flat_map(|w| &w.tags).copied().collect();
    tags.sort_unstable();
    if let Some(w) = tags.windows(2).find(|w| w[0] == w[1]) {
        return broke(ExactlyOnce, format!("execution {} completed twice", w[0]));
    }
    let distinct = tags.len();
    fail_if!(
        distinct as u64 != accepted,
        ExactlyOnce,
        "{distinct} distinct executions completed, {accepted} accepted"
    );
    if let Some(t) = tags.iter().find(|&&t| t >= executions) {
        return broke(
            ExactlyOnce,
            format!("completed execution {t} was never scheduled"),
        );
    }
    // Outputs.
    let (checked, wrong) = (r.outputs_checked, r.outputs_wrong);
    fail_if!(
        wrong != 0 || checked != ok,
        Outputs,
        "{wrong} outputs wrong; {checked} checked of {ok} completed ok"
    );
    // State machines (before the counters: a violation explains them).
    let bad_items: u64 = workers.iter().flat_map(|w| w.bad_items).sum();
    let signals: u64 = workers
        .iter()
        .map(|w| w.signal_failures + w.resp_failures)
        .sum();
    let FsmViolations {
        worker,
        device_proxy,
        publisher,
    } = r.fsm_violations;
    fail_if!(
        r.fsm_violations.total() != 0 || bad_items != 0 || signals != 0,
        Fsm,
        "fsm_violations worker {worker} device proxy {device_proxy} publisher {publisher}; bad work items {bad_items}; failed completion signals or responses {signals}"
    );
    // Records.
    let want = usize::from(case.cores) * usize::from(case.models);
    let (records, nds_errors) = (r.model_records, r.system.nds_errors);
    fail_if!(
        nds_errors != 0 || records != want,
        Records,
        "{records} fresh model records of {want}; {nds_errors} NDS updates refused"
    );
    // Counters: each core's slab counters against its worker and lane.
    let (lanes, cores) = (r.system.lanes.len(), r.per_core.len());
    fail_if!(
        workers.len() != cores || lanes != cores,
        Counters,
        "{} workers, {lanes} lanes, {cores} cores read back",
        workers.len()
    );
    for ((c, w), l) in r.per_core.iter().zip(workers).zip(&r.system.lanes) {
        let ok = w.by_status.get(NrtStatus::SUCCESS);
        let num = w.by_status.get(NrtStatus::EXEC_COMPLETED_WITH_NUM_ERR);
        let timeouts = w.by_status.get(NrtStatus::TIMEOUT);
        let total = w.by_status.total();
        let other = total.saturating_sub(ok + timeouts + num);
        let mut want: Vec<(NcCounter, u64)> = vec![
            (NcCounter::InferCompleted, ok),
            (NcCounter::InferTimedOut, timeouts),
            (NcCounter::InferCompletedWithNumErr, num),
            (NcCounter::InferCompletedWithErr, other),
            (NcCounter::InferenceCount, w.completed),
            (NcCounter::MacCount, w.macs),
            (NcCounter::LatencyDevice, w.device_ns),
            (NcCounter::HwErrDmaAbort, w.dma_aborts),
            (NcCounter::ErrSwNqOverflow, w.nq_overflows),
            (
                NcCounter::InferFailedToQueue,
                l.refused_full + l.refused_unrecoverable,
            ),
            (NcCounter::ModelLoadCount, u64::from(case.models)),
        ];
        want.extend(ErrorClass::ALL.map(|class| (class.counter(), w.classes[class as usize])));
        let (core, completed) = (c.core, w.completed);
        fail_if!(
            total != completed,
            Counters,
            "core {core}: {total} completions by status vs {completed} completed"
        );
        for (k, v) in want {
            let (name, slab) = (k.name(), c.get(k));
            fail_if!(
                slab != v,
                Counters,
                "core {core}: {name} is {slab} in the slab, {v} in the run"
            );
        }
    }
    // Item pools.
    for (core, a) in r.pools.iter().enumerate() {
        let (free, items, twice) = (a.free, a.items, a.duplicates);
        fail_if!(
            twice != 0 || free != items,
            ItemPool,
            "core {core}: {free} of {items} items free, {twice} freed twice"
        );
    }
    // Degraded XUs refuse.
    for (core, w) in workers.iter().enumerate() {
        let n = w.accepted_while_degraded;
        fail_if!(
            n != 0,
            DegradedRefuses,
            "core {core}: {n} executions accepted after the XU degraded"
        );
    }
    // Bounded waits: every completion within its timeout.
    // A timed-out execution completes once the worker reaches it after its
    // deadline (the ones ahead of it on the ring first): half a timeout of
    // slack.
    let (max, timeout_ms) = (r.latency.max(), case.timeout_ms);
    fail_if!(
        max > timeout_ms * 1_500_000,
        BoundedWait,
        "an execution completed {max} ns after submission (timeout {timeout_ms} ms)"
    );
    Ok(())
}

/// An extra invariant the caller adds (tests inject failures with it).
pub type Hook = fn(&SimCase, &JobReport) -> Result<(), Violation>;

/// How cases are run.
#[derive(Clone, Debug)]
pub struct SimOptions {
    /// Count this process's open fds before and after each run (only
    /// meaningful when runs do not overlap).
    pub check_fds: bool,
    /// An extra check.
    pub hook: Option<Hook>,
}

/// Fds checked, no extra check.
impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            check_fds: true,
            hook: None,
        }
    }
}

/// What one case did.
#[derive(Clone, Debug)]
pub struct CaseResult {
    /// The case.
    pub case: SimCase,
    /// Executions accepted (simulated).
    pub executions: u64,
    /// Faults injected, by kind (a [`FAULT_KINDS`] name).
    pub faults: Vec<(String, u64)>,
    /// The verdict.
    pub verdict: Result<(), Violation>,
}

/// Open fds of this process (`/proc/self/fd`), `None` where unreadable.
pub fn open_fds() -> Option<usize> {
    // The directory handle itself is one entry while it is read.
    let dir = std::fs::read_dir("/proc/self/fd").ok();
    dir.map(|d| d.count().saturating_sub(1))
}

/// Run one case and check it.
pub fn run_case(case: &SimCase, opts: &SimOptions) -> CaseResult {
    let before = if opts.check_fds { open_fds() } else { None };
    let rep = job::run(&case.job(), &mut |_, _| {});
    let after = if opts.check_fds { open_fds() } else { None };
    let (executions, faults, verdict) = match rep {
        Err(e @ Error::Run(RunError::Livelock { .. } | RunError::PollBudget { .. })) => {
            (0, Vec::new(), broke(Invariant::BoundedWait, e.to_string()))
        }
        Err(e) => (0, Vec::new(), broke(Invariant::Run, e.to_string())),
        Ok(rep) => {
            let faults = case
                .faults
                .rules
                .iter()
                .zip(&rep.faults_by_rule)
                .map(|(rule, n)| (faults::kind_name(rule.fault), *n))
                .collect();
            let fds = match (before, after) {
                (Some(b), Some(a)) if a > b => broke(
                    Invariant::Fds,
                    format!("{b} fds open before the run, {a} after"),
                ),
                _ => Ok(()),
            };
            let verdict = check(case, &rep)
                .and(fds)
                .and_then(|()| opts.hook.map_or(Ok(()), |hook| hook(case, &rep)));
            (rep.producer.accepted, faults, verdict)
        }
    };
    CaseResult {
        case: case.clone(),
        executions,
        faults,
        verdict,
    }
}

fn fails(case: &SimCase, invariant: Invariant, opts: &SimOptions, runs: &mut u32) -> bool {
    *runs += 1;
    matches!(run_case(case, opts).verdict, Err(v) if v.invariant == invariant)
}

/// Most re-runs [`shrink`] makes.
pub const SHRINK_RUNS: u32 = 120;

/// Shrink a failing case: the smallest case found that still breaks
/// `invariant`, and the number of runs it took. Bisects the executions,
/// then tries fewer cores, drops fault rules one at a time, and tries the
/// simpler setting of everything else (ring, models, closed loop, recover
/// off), keeping each change that still fails.
pub fn shrink(case: &SimCase, invariant: Invariant, opts: &SimOptions) -> (SimCase, u32) {
    let mut best = case.clone();
    let mut runs = 0u32;
    // Executions: bisect (the lowest count found failing).
    let (mut lo, mut hi) = (1u64, best.executions);
    while lo < hi && runs < SHRINK_RUNS {
        let mid = lo + (hi - lo) / 2;
        let c = SimCase {
            executions: mid,
            ..best.clone()
        };
        if fails(&c, invariant, opts, &mut runs) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    best.executions = hi;
    // Then each simplification in turn, kept when it still fails.
    while runs < SHRINK_RUNS {
        let mut tries: Vec<SimCase> = Vec::new();
        let mut try_with = |change: &dyn Fn(&mut SimCase)| {
            let mut c = best.clone();
            change(&mut c);
            if c != best {
                tries.push(c);
            }
        };
        // Fewer cores (the fault rules on the cores dropped go too).
        for cores in 1..best.cores {
            try_with(&|c| c.set_cores(cores));
        }
        for i in 0..best.faults.rules.len() {
            try_with(&|c| _ = c.faults.rules.remove(i));
        }
        try_with(&|c| c.models = 1);
        try_with(&|c| c.rate = None);
        try_with(&|c| c.recover = false);
        try_with(&|c| c.ring = 1);
        let found = tries
            .into_iter()
            .find(|c| runs < SHRINK_RUNS && fails(c, invariant, opts, &mut runs));
        let Some(c) = found else { break };
        best = c;
    }
    (best, runs)
}

/// A swarm's progress, handed to the caller's callback now and then.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Seeds done.
    pub seeds_done: u64,
    /// Seeds in the range (`u64::MAX` for all 2^64).
    pub seeds: u64,
    /// Executions simulated so far.
    pub executions: u64,
}

/// What a swarm did.
#[derive(Clone, Debug)]
pub struct SwarmReport {
    /// Seeds run.
    pub seeds: u64,
    /// Executions simulated (accepted).
    pub executions: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// Faults injected by kind, in [`FAULT_KINDS`] order (kinds that
    /// never fired included, with 0).
    pub faults: Vec<(String, u64)>,
    /// Cases with faults, and without.
    pub with_faults: u64,
    /// The first failing seed's result (the lowest seed that failed), if
    /// any. The swarm stops at the first failure.
    pub failure: Option<CaseResult>,
}

impl SwarmReport {
    /// Simulated executions per second of wall time.
    pub fn exec_per_sec(&self) -> f64 {
        self.executions as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Seeds per minute of wall time.
    pub fn seeds_per_minute(&self) -> f64 {
        self.seeds as f64 * 60.0 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Run the cases `cases(seed)` for `seeds` on `jobs` threads, stopping at
/// the first failure (the seeds below it all finish, so the failure
/// reported is the lowest failing seed whatever `jobs`). `progress` is
/// called on the calling thread about ten times a second.
pub fn swarm(
    seeds: std::ops::RangeInclusive<u64>,
    cases: &(dyn Fn(u64) -> SimCase + Sync),
    jobs: usize,
    opts: &SimOptions,
    progress: &mut dyn FnMut(Progress),
) -> SwarmReport {
    let t0 = Instant::now();
    let (first, last) = (*seeds.start(), *seeds.end());
    // The range's seeds are `first + k` for `k <= span`; counted through
    // `span`, not `last - first + 1`, which wraps to 0 for all 2^64 seeds.
    let span = last.checked_sub(first);
    let total = span.map_or(0, |s| s.saturating_add(1));
    let (next, done, execs) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let stop = AtomicBool::new(false);
    let results: Mutex<(BTreeMap<String, u64>, u64, Vec<CaseResult>)> = Mutex::default();
    std::thread::scope(|s| {
        let threads: Vec<_> = (0..jobs.max(1))
            .map(|_| {
                s.spawn(|| {
                    // Ordering: Relaxed throughout: counters and a stop hint;
                    // the results go through the mutex and the scope's join.
                    while !stop.load(Ordering::Relaxed) {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        if span.is_none_or(|span| k > span) {
                            break;
                        }
                        let res = run_case(&cases(first + k), opts);
                        execs.fetch_add(res.executions, Ordering::Relaxed);
                        done.fetch_add(1, Ordering::Relaxed);
                        let mut g = results.lock().unwrap_or_else(|p| p.into_inner());
                        for (kind, n) in &res.faults {
                            *g.0.entry(kind.clone()).or_insert(0) += n;
                        }
                        g.1 += u64::from(!res.case.faults.is_empty());
                        if res.verdict.is_err() {
                            stop.store(true, Ordering::Relaxed);
                            g.2.push(res);
                        }
                    }
                })
            })
            .collect();
        // Until every thread has ended, however: one whose case panicked
        // is finished too (the scope then passes the panic on).
        while !threads.iter().all(|t| t.is_finished()) {
            progress(Progress {
                seeds_done: done.load(Ordering::Relaxed),
                seeds: total,
                executions: execs.load(Ordering::Relaxed),
            });
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let (by_kind, with_faults, failures) = results.into_inner().unwrap_or_else(|p| p.into_inner());
    SwarmReport {
        seeds: done.load(Ordering::Relaxed),
        executions: execs.load(Ordering::Relaxed),
        elapsed: t0.elapsed(),
        faults: FAULT_KINDS
            .iter()
            .map(|k| (k.to_string(), by_kind.get(*k).copied().unwrap_or(0)))
            .collect(),
        with_faults,
        failure: failures.into_iter().min_by_key(|r| r.case.seed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A case that panics ends the swarm with its panic, rather than leaving
    /// the progress loop waiting for the panicked thread's count for good.
    #[test]
    fn a_panicking_case_ends_the_swarm() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(|| {
                let boom = |_: u64| -> SimCase { panic!("a case that panics") };
                swarm(1..=1, &boom, 1, &SimOptions::default(), &mut |_| {})
            });
            let _ = tx.send(r.is_err());
        });
        let panicked = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the swarm ended within a minute");
        assert!(panicked, "the case's panic reached the caller");
    }

    /// All 2^64 seeds are a range like any other: the swarm runs them (here
    /// up to the first, which fails at once), where counting them as
    /// `last - first + 1` wrapped to none and passed. Mutant: the count back
    /// to `last - first + 1`.
    #[test]
    fn the_whole_seed_range_runs_seeds() {
        let invalid = |seed| SimCase {
            cores: 16,
            models: 64,
            ..SimCase::derive(seed, 1)
        };
        let mut seen = 0;
        let rep = swarm(
            0..=u64::MAX,
            &invalid,
            1,
            &SimOptions::default(),
            &mut |p| seen = p.seeds,
        );
        assert_eq!(rep.seeds, 1, "the first seed ran and stopped the swarm");
        assert_eq!(rep.failure.map(|f| f.case.seed), Some(0));
        assert!(
            seen == 0 || seen == u64::MAX,
            "progress counted {seen} seeds"
        );
    }

    /// The lanes' counters add up to the producer's: a run passes, and the
    /// same report with one lane counting an execution more is a
    /// conservation violation naming both sides.
    #[test]
    fn lanes_that_count_more_than_the_producer_break_conservation() {
        let case = SimCase::derive(1, 50);
        let mut r = job::run(&case.job(), &mut |_, _| {}).expect("the case runs");
        assert_eq!(check(&case, &r), Ok(()));
        r.system.lanes[0].accepted += 1;
        let v = check(&case, &r).expect_err("a lane counts one more");
        assert_eq!(v.invariant, Invariant::Conservation, "{v}");
        assert!(v.detail.starts_with("lanes LaneStats {"), "{v}");
    }

    #[test]
    fn cases_are_a_function_of_the_seed_and_stay_in_range() {
        let mut kinds = std::collections::BTreeSet::new();
        let (mut none, mut chance_on_a_core) = (0, 0);
        for seed in 1..=400 {
            let c = SimCase::derive(seed, 2000);
            assert_eq!(c, SimCase::derive(seed, 2000));
            assert!((1..=16).contains(&c.cores) && (1..=32).contains(&c.ring));
            assert!(c.models >= 1 && u32::from(c.cores) * u32::from(c.models) <= 64);
            assert!(c.job().check().is_ok(), "{c:?}");
            // The text of the fault mix parses back to it.
            assert_eq!(FaultSpec::parse(&c.faults.text()).unwrap(), c.faults);
            none += u32::from(c.faults.is_empty());
            chance_on_a_core += c
                .faults
                .rules
                .iter()
                .filter(|r| {
                    matches!(r.trigger, crate::sim::fault::Trigger::Chance { .. })
                        && r.core.is_some()
                })
                .count();
            for r in &c.faults.rules {
                kinds.insert(faults::kind_name(r.fault));
            }
        }
        // A quarter of the cases draw no faults; more would mean that some
        // derived specs fail to parse (a probability on one core, say) and
        // their rules never run.
        assert!(none > 0 && none < 120, "{none} of 400 cases without faults");
        assert!(chance_on_a_core > 0, "a probability on one core is drawn");
        assert_eq!(
            kinds.len(),
            FAULT_KINDS.len(),
            "every kind drawn: {kinds:?}"
        );
    }
}
