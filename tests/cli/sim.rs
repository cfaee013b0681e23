//! `xunds sim`: a small swarm passes and prints its summary; a failure
//! (injected through the test-only hook) shrinks to a smaller case; the
//! printed replay reproduces the run.

use std::os::unix::process::CommandExt as _;
use std::process::Command;

use xunds::system::job::{self, JobReport};
use xunds::system::sim::{self, Invariant, SimCase, SimOptions, Violation};

fn xunds(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_xunds"))
        .args(args)
        .output()
        .expect("run xunds");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_swarm_passes_and_prints_its_summary() {
    let (ok, out, err) = xunds(&[
        "sim",
        "--seeds",
        "1..30",
        "--executions",
        "300",
        "--jobs",
        "2",
    ]);
    assert!(ok, "{out}\n{err}");
    assert!(out.starts_with("xunds sim: 30 seeds ("), "{out}");
    assert!(out.contains("simulated executions/s"), "{out}");
    assert!(out.contains("seeds/minute"), "{out}");
    assert!(
        out.contains("faults injected by kind: error:generic"),
        "{out}"
    );
    assert!(out.contains("every invariant held"), "{out}");
    // Piped: no progress line.
    assert!(err.is_empty(), "{err}");
    let (ok, out, _) = xunds(&["sim", "--seeds", "1..3", "--executions", "50", "--json"]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["seeds"], 3);
    assert_eq!(v["passed"], true);
    assert!(v["executions"].as_u64().unwrap() > 0);
}

/// A mutant-like failure: any execution that completed with an error.
fn no_errors(_: &SimCase, r: &JobReport) -> Result<(), Violation> {
    if r.completed_err > 0 {
        return Err(Violation {
            invariant: Invariant::Hook,
            detail: format!("{} executions completed with an error", r.completed_err),
        });
    }
    Ok(())
}

/// The first seed in 1..=200 whose case fails the hook.
fn failing_case(opts: &SimOptions, executions: u64) -> SimCase {
    (1..=200)
        .map(|s| SimCase::derive(s, executions))
        .filter(|c| c.cores > 1 && c.faults.rules.len() > 1)
        .find(|c| sim::run_case(c, opts).verdict.is_err())
        .expect("a seed with faults that make an execution fail")
}

#[test]
fn a_failure_shrinks_and_its_replay_reproduces_it() {
    let opts = SimOptions {
        hook: Some(no_errors),
        ..SimOptions::default()
    };
    let case = failing_case(&opts, 400);
    let (small, runs) = sim::shrink(&case, Invariant::Hook, &opts);
    assert!(runs > 0);
    assert!(
        small.executions < case.executions,
        "{small:?} from {case:?}"
    );
    assert!(small.cores <= case.cores && small.faults.rules.len() <= case.faults.rules.len());
    assert!(
        small.cores < case.cores || small.faults.rules.len() < case.faults.rules.len(),
        "fewer cores or faults: {small:?} from {case:?}"
    );
    let v = sim::run_case(&small, &opts).verdict.unwrap_err();
    assert_eq!(v.invariant, Invariant::Hook);
    // The printed `xunds sim` replay runs exactly that case: the same
    // simulated executions; every built-in invariant holds.
    let args: Vec<String> = small.sim_args().split(' ').map(String::from).collect();
    let mut argv = vec!["sim".to_string()];
    argv.extend(args);
    argv.push("--json".into());
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let (ok, out, err) = xunds(&argv);
    assert!(ok, "{out}\n{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let dir = std::env::temp_dir();
    // The sim runs a case untraced; digested, it is the same run.
    let traced = |c: job::JobConfig| job::JobConfig { digest: true, ..c };
    let mine = job::run(&traced(small.job()), &mut |_, _| {}).unwrap();
    assert_eq!(v["executions"].as_u64(), Some(mine.producer.accepted));
    // The `xunds run --deterministic` form gives the same trace and the
    // same failure (an execution with an error).
    let slab = dir.join(format!("xunds-test-sim-run-{}.nds", std::process::id()));
    let mut argv = vec!["run".to_string()];
    argv.extend(small.run_args().split(' ').map(String::from));
    argv.extend(["--json".into(), "--slab".into(), slab.display().to_string()]);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let (_, out, err) = xunds(&argv);
    let _ = std::fs::remove_file(&slab);
    let v: serde_json::Value =
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    assert_eq!(v["trace_xxh3"].as_str(), mine.trace_xxh3.as_deref());
    assert!(v["completed_err"].as_u64().unwrap() > 0);
    let again = job::run(&traced(small.job()), &mut |_, _| {}).unwrap();
    assert_eq!(again.trace_xxh3, mine.trace_xxh3);
}

/// What a run's report says apart from wall time and the trace's own
/// figures.
fn outcome(r: &JobReport) -> String {
    let mut r = r.clone();
    r.elapsed = std::time::Duration::ZERO;
    r.exec_per_sec = 0.0;
    r.trace_xxh3 = None;
    r.trace_lines = None;
    // The job differs in the digest only: what is compared is what it did.
    r.config.digest = false;
    format!("{r:#?}")
}

/// Tracing only observes: a case run as the sim runs it (no digest, no
/// tracer in the HAL) and the same case digested (as its printed replay
/// runs it) have the same schedule, virtual times, outcomes, counters and
/// completion order, for cases with every kind of fault.
#[test]
fn an_untraced_run_is_the_same_run() {
    let mut faulted = 0;
    for seed in 1..=12 {
        let case = SimCase::derive(seed, 400);
        faulted += usize::from(!case.faults.rules.is_empty());
        let bare = job::run(&case.job(), &mut |_, _| {}).unwrap();
        let traced = job::JobConfig {
            digest: true,
            ..case.job()
        };
        let full = job::run(&traced, &mut |_, _| {}).unwrap();
        assert_eq!(bare.trace_xxh3, None, "seed {seed}: no digest");
        assert!(full.trace_xxh3.is_some(), "seed {seed}");
        assert!(bare.virtual_ns.is_some_and(|v| v > 0));
        assert_eq!(outcome(&bare), outcome(&full), "seed {seed}");
    }
    assert!(faulted >= 6, "the seeds cover faulted cases ({faulted})");
}

/// A swarm interrupted by SIGINT or SIGTERM leaves no slab behind: each
/// run's slab is a file with no name, so nothing needs removing however
/// the process ends. Named `xunds-sim-<pid>-*.nds` files in /dev/shm were
/// left by the runs in flight (nothing removes them later).
#[test]
fn an_interrupted_swarm_leaves_no_slab() {
    let dirs = [std::path::PathBuf::from("/dev/shm"), std::env::temp_dir()];
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_xunds"));
        cmd.args(["sim", "--seeds", "1..100000", "--executions", "5000"])
            .args(["--jobs", "2"])
            .stdout(std::process::Stdio::null());
        // The signal's default action in the child, whatever this process
        // inherited: a shell's background job ignores SIGINT, and an
        // ignored disposition survives exec.
        // SAFETY: `signal` is async-signal-safe, as `pre_exec` requires.
        unsafe {
            cmd.pre_exec(move || {
                libc::signal(signal, libc::SIG_DFL);
                Ok(())
            })
        };
        let mut child = cmd.spawn().expect("run xunds sim");
        // Well into the swarm: runs in flight on both threads.
        std::thread::sleep(std::time::Duration::from_millis(700));
        // SAFETY: a signal to the child this test spawned and has not reaped.
        unsafe { libc::kill(child.id() as i32, signal) };
        let st = child.wait().unwrap();
        assert!(!st.success());
        let prefix = format!("xunds-sim-{}-", child.id());
        let left: Vec<_> = dirs
            .iter()
            .filter_map(|d| std::fs::read_dir(d).ok())
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .map(|e| e.path())
            .collect();
        for p in &left {
            let _ = std::fs::remove_file(p);
        }
        assert!(left.is_empty(), "signal {signal} left {left:?}");
    }
}
