//! The command line's contract: `--version` and every subcommand's `--help`
//! exit 0; bare `xunds` prints the usage and exits 2; every bad value or bad
//! combination of flags is refused before anything runs, with exit 2 and one
//! line naming the flag; the progress line shows only on a terminal.

use std::io::Read as _;
use std::os::fd::{FromRawFd as _, OwnedFd};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn xunds(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xunds"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run xunds")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A path under the temporary directory, unique to this process and test.
fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("xunds-cli-{}-{name}", std::process::id()))
}

#[test]
fn version_and_every_help_exit_0() {
    let out = xunds(&["--version"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).starts_with("xunds "), "{out:?}");
    for args in [
        &["--help"][..],
        &["help"],
        &["layout", "--help"],
        &["nds", "--help"],
        &["nds", "dump", "--help"],
        &["nds", "clean", "--help"],
        &["run", "--help"],
        &["run", "-h"],
        &["replay", "--help"],
    ] {
        let out = xunds(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        assert!(
            text(&out.stdout).contains("Usage: xunds"),
            "{args:?}: {out:?}"
        );
        assert!(out.stderr.is_empty(), "{args:?}: {out:?}");
    }
    // The help says what the flags are.
    let run = text(&xunds(&["run", "--help"]).stdout);
    for flag in [
        "--executions",
        "--vncs",
        "--faults",
        "--timeout-ms",
        "--ring",
        "--placement",
        "--json",
    ] {
        assert!(run.contains(flag), "{flag} missing in {run}");
    }
}

#[test]
fn bare_xunds_prints_the_usage_and_exits_2() {
    let out = xunds(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = text(&out.stderr);
    assert!(err.contains("Usage: xunds <COMMAND>"), "{err}");
    for cmd in ["layout", "nds", "run", "replay"] {
        assert!(err.contains(cmd), "{cmd} missing in {err}");
    }
    // The same for a command that needs a subcommand.
    let out = xunds(&["nds"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("dump"));
}

/// Exit 2, nothing on stdout, exactly one line on stderr containing every
/// one of `needles`.
fn refused(args: &[&str], needles: &[&str]) {
    check_refused(args, &xunds(args), needles);
}

/// [`refused`] for a command that may run forever when it is not refused:
/// killed (and failed) if it has not ended within a minute.
fn refused_in_time(args: &[&str], needles: &[&str]) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_xunds"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn xunds");
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?}: still running after a minute");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    check_refused(args, &child.wait_with_output().unwrap(), needles);
}

fn check_refused(args: &[&str], out: &Output, needles: &[&str]) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}: {out:?}");
    assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: {n:?} missing in {err}");
    }
}

#[test]
fn bad_values_are_one_line_naming_the_flag_with_exit_2() {
    refused(
        &["run", "--executions", "abc"],
        &["xunds run:", "--executions"],
    );
    refused(&["run", "--executions", "-1"], &["--executions"]);
    refused(&["run", "--executions"], &["--executions"]);
    refused(&["run", "--vncs", "17"], &["--vncs", "1..=16"]);
    refused(&["run", "--vncs", "0"], &["--vncs", "1..=16"]);
    refused(&["run", "--seed", "x"], &["--seed"]);
    refused(&["run", "--bogus"], &["'--bogus'"]);
    refused(&["layout", "--yaml"], &["xunds layout:", "'--yaml'"]);
    refused(&["run", "--faults", "nonsense"], &["--faults", "nonsense"]);
    refused(&["run", "--trace", "t.trace"], &["--deterministic"]);
    refused(
        &["run", "--placement", "everywhere"],
        &["--placement", "shared or per-actor"],
    );
    refused(&["nds", "dump"], &["xunds nds dump:", "<PATH>"]);
    refused(&["frobnicate"], &["frobnicate"]);
    // A combination the library's config check refuses is a usage error
    // too, in the same style.
    refused(
        &["run", "--vncs", "16", "--models", "5"],
        &["xunds run:", "--models", "64"],
    );
}

/// The hardening run's list of accepted nonsense: each is now refused.
#[test]
fn nonsense_the_hardening_run_found_is_refused() {
    // A fault rule for a core that does not exist.
    refused(
        &["run", "--vncs", "2", "--faults", "timeout@1/core3"],
        &["--faults", "core3", "--vncs 2"],
    );
    refused(
        &["run", "--vncs", "2", "--faults", "timeout@1/core99"],
        &["--faults", "core99"],
    );
    // A zero timeout.
    refused(
        &["run", "--timeout-ms", "0"],
        &["--timeout-ms", "at least 1"],
    );
    // A ring size past u32 names the range (not "--ring" alone).
    refused(&["run", "--ring", "4294967296"], &["--ring", "1..=32"]);
    refused(&["run", "--ring", "33"], &["--ring", "1..=32"]);
    // An unknown flag to replay is a flag, not a file name.
    refused(
        &["replay", "--bogus"],
        &["xunds replay:", "unexpected argument '--bogus'"],
    );
    // A directory given as a slab: a failure naming it (exit 1, as every
    // slab that cannot be used; `slab_problems_are_exit_1_everywhere`).
    let dir = std::env::temp_dir();
    let dir = dir.to_str().unwrap();
    failed(&["run", "--slab", dir], &["--slab", "is a directory"]);
    failed(&["nds", "dump", dir], &["is a directory"]);
}

/// The second hardening review's usage errors: each names the flag, in the
/// flag's unit, and a sim override the runner refuses is a usage error
/// (exit 2), not a failed invariant with a shrink and a replay (exit 1).
#[test]
fn usage_errors_name_the_flag_and_its_unit() {
    refused(
        &["run", "--timeout-ms", "99999999999"],
        &["--timeout-ms", "3600000", "an hour"],
    );
    refused_in_time(
        &["run", "--executions", "100000000000000"],
        &["xunds run:", "--executions must be <="],
    );
    refused(
        &[
            "sim",
            "--seed",
            "1",
            "--executions",
            "5",
            "--models",
            "64",
            "--cores",
            "16",
        ],
        &["xunds sim:", "--seed 1", "--models", "cores * models <= 64"],
    );
    // Over the cores the seed draws (16 for seed 1).
    refused(
        &["sim", "--seed", "1", "--executions", "5", "--models", "5"],
        &["xunds sim:", "--seed 1", "--models", "cores * models <= 64"],
    );
    refused(
        &[
            "sim",
            "--seed",
            "1",
            "--cores",
            "1",
            "--faults",
            "timeout@#1/core3",
        ],
        &["xunds sim:", "--faults", "core3", "--cores 1"],
    );
    // Flags that would be ignored are refused.
    refused(&["run", "--force"], &["--slab"]);
    refused(
        &["run", "--deterministic", "--placement", "per-actor"],
        &["--placement", "--deterministic"],
    );
    refused(&["monitor", "--count", "0"], &["--count"]);
    refused(
        &["monitor", "--once", "--count", "2"],
        &["--once", "--count"],
    );
    refused_in_time(&["monitor", "-q"], &["--prometheus"]);
}

/// Exit 1 and one line on stderr containing every one of `needles`
/// (stdout may hold a document that says the same).
fn failed(args: &[&str], needles: &[&str]) {
    let out = xunds(args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: {n:?} missing in {err}");
    }
}

/// A slab that cannot be used is the same failure, exit 1 with one line
/// naming it, in `nds dump`, `monitor --once` and `run`: missing, a
/// directory, not a slab, in a directory that does not exist; `monitor
/// --once` prints its document too, the reason in it as well.
#[test]
fn slab_problems_are_exit_1_everywhere() {
    let dir = tmp("slab-problems");
    std::fs::create_dir_all(&dir).unwrap();
    let junk = dir.join("junk.nds");
    std::fs::write(&junk, b"not a slab").unwrap();
    let missing = dir.join("missing.nds");
    let nowhere = dir.join("no-such-dir").join("x.nds");
    let (d, j, m, n) = (
        dir.to_str().unwrap(),
        junk.to_str().unwrap(),
        missing.to_str().unwrap(),
        nowhere.to_str().unwrap(),
    );
    for (path, why) in [(d, "is a directory"), (j, "too small"), (m, "No such file")] {
        failed(&["nds", "dump", path], &["xunds nds dump:", path, why]);
        failed(&["monitor", "--once", path], &["xunds monitor:", path, why]);
    }
    failed(
        &["monitor", "--once", n],
        &["xunds monitor:", n, "No such file"],
    );
    let run = |p| vec!["run", "--executions", "5", "--slab", p];
    failed(&run(d), &["xunds run:", d, "is a directory"]);
    failed(&run(j), &["xunds run:", j, "not a slab"]);
    failed(&run(n), &["xunds run:", n, "no directory"]);
    // A directory to scan that is missing: the same, one line.
    let gone = dir.join("gone");
    let g = gone.to_str().unwrap();
    failed(
        &["monitor", "--once", "--dir", g],
        &["xunds monitor:", "--dir", g],
    );
    failed(&["nds", "clean", "--dir", g], &["xunds nds clean:", g]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Periods and durations: negative, zero, malformed or too long, each is
/// one line naming the flag and what is wrong (exit 2); `--period -1s` is
/// a negative period, not an unknown flag `-1`.
#[test]
fn bad_periods_and_durations_say_what_is_wrong() {
    for cmd in [
        &["monitor", "--once"][..],
        &["top"],
        &["run", "--executions", "5"],
    ] {
        let flag = if cmd[0] == "run" {
            "--duration"
        } else {
            "--period"
        };
        for (v, why) in [
            ("-1s", "must be positive"),
            ("0", "must be positive"),
            ("5 parsecs", "unknown unit"),
            ("soon", "not a duration"),
            ("25h", "at most 24h"),
        ] {
            let mut args = cmd.to_vec();
            args.extend([flag, v]);
            refused(&args, &[flag, why]);
        }
    }
}

/// An open-loop rate whose mean gap is longer than an hour is a usage error
/// naming the flag and the bound, for `xunds run --rate` (threaded or
/// deterministic) and `xunds sim --arrival`. A threaded run at 1e-300 never
/// ended: its first gap in nanoseconds saturated to `u64::MAX`.
#[test]
fn a_rate_below_one_an_hour_is_refused() {
    for rate in ["1e-300", "0.0001", "0.0002", "0.00027"] {
        refused_in_time(
            &["run", "--executions", "3", "--rate", rate],
            &["xunds run:", "--rate", "1/3600", "an hour"],
        );
        refused_in_time(
            &[
                "run",
                "--deterministic",
                "--executions",
                "3",
                "--rate",
                rate,
            ],
            &["xunds run:", "--rate", "1/3600"],
        );
        refused_in_time(
            &["sim", "--seed", "1", "--executions", "3", "--arrival", rate],
            &["xunds sim:", "--arrival", "1/3600", "an hour"],
        );
    }
}

/// A deterministic open-loop run at a low rate jumps its virtual clock to
/// each arrival: it completes every execution, and its trace grows with the
/// executions, not with the idle time between them. It failed with a
/// livelock (100 000 idle polls, about 0.2 s of virtual time) before the
/// first arrival at 10 per second; at 200 per second 50 executions made a
/// trace of about 600 000 lines. `xunds sim` with a low `--arrival`
/// reported the same livelock as a broken invariant.
#[test]
fn a_low_rate_deterministic_run_completes_with_a_short_trace() {
    let slab = tmp("low-rate.nds");
    let slab_s = slab.to_str().unwrap();
    let run = |rate: Option<&str>| {
        let mut args = vec![
            "run",
            "--deterministic",
            "--executions",
            "5",
            "--json",
            "--slab",
            slab_s,
        ];
        if let Some(r) = rate {
            args.extend(["--rate", r]);
        }
        let out = xunds(&args);
        assert_eq!(out.status.code(), Some(0), "{rate:?}: {out:?}");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let field = |k: &str| doc[k].as_u64().unwrap_or_else(|| panic!("{k} in {doc}"));
        assert_eq!(field("executions"), 5, "{doc}");
        assert_eq!(field("completed_ok"), 5, "{doc}");
        (
            field("trace_lines"),
            field("virtual_ns"),
            doc["trace_xxh3"].clone(),
        )
    };
    let (closed_lines, _, _) = run(None);
    for rate in ["10", "1"] {
        let (lines, virtual_ns, digest) = run(Some(rate));
        // Five arrivals at 1 or 10 per second span tens of milliseconds of
        // virtual time at least (and did not end early).
        assert!(virtual_ns > 10_000_000, "rate {rate}: {virtual_ns} ns");
        // A few lines per arrival (the jumps and the wake-ups) on top of
        // the closed-loop run's.
        assert!(
            lines < 2 * closed_lines,
            "rate {rate}: {lines} lines, closed loop {closed_lines}"
        );
        // The same seed gives the same run.
        assert_eq!(run(Some(rate)).2, digest, "rate {rate}");
    }
    let _ = std::fs::remove_file(&slab);
    let out = xunds(&["sim", "--seed", "1", "--arrival", "1", "--executions", "5"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

/// `xunds top` without a terminal (here: stdin null, stdout a pipe) says so
/// in one line with exit 2, instead of panicking inside the terminal
/// library and writing escape codes to the pipe.
#[test]
fn top_without_a_terminal_says_so() {
    let slab = std::env::temp_dir().join("xunds-top-no-terminal.nds");
    refused(
        &["top", slab.to_str().unwrap()],
        &["xunds top:", "needs a terminal"],
    );
}

/// A file the run or the replay cannot open or read is named in the error.
#[test]
fn io_errors_name_the_file() {
    let dir = std::env::temp_dir();
    let missing = dir.join("xunds-no-such-dir").join("x.trace");
    let missing = missing.to_str().unwrap();
    let dir = dir.to_str().unwrap();
    let trace_to = |p| vec!["run", "--executions", "5", "--deterministic", "--trace", p];
    for (args, path) in [
        (trace_to(missing), missing),
        (trace_to(dir), dir),
        (vec!["replay", dir], dir),
    ] {
        let child = Command::new(env!("CARGO_BIN_EXE_xunds"))
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run xunds");
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {err}");
        assert!(err.contains(path), "{args:?}: {path} missing in {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err}");
        // A run that stops on its trace file creates no slab (it would be
        // left in /dev/shm for good).
        let slab =
            xunds::system::job::default_slab_path().with_file_name(format!("xunds-{pid}.nds"));
        assert!(!slab.exists(), "{args:?} left {}", slab.display());
    }
}

/// A run whose setup fails after its trace paths were checked (the slab
/// refused) leaves an earlier trace at `--trace` as it was.
#[test]
fn a_run_refused_at_setup_leaves_an_earlier_trace_alone() {
    let (trace, slab) = (tmp("kept.trace"), tmp("not-a-slab.nds"));
    std::fs::write(&trace, b"an earlier trace").unwrap();
    std::fs::write(&slab, b"hello").unwrap();
    let out = xunds(&[
        "run",
        "--executions",
        "5",
        "--deterministic",
        "--trace",
        trace.to_str().unwrap(),
        "--slab",
        slab.to_str().unwrap(),
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("not a slab"), "{err}");
    assert_eq!(std::fs::read(&trace).unwrap(), b"an earlier trace");
    std::fs::remove_file(&trace).unwrap();
    std::fs::remove_file(&slab).unwrap();
}

/// A short deterministic run whose stderr is `stderr`.
fn short_run(slab: &str, extra: &[&str], stderr: Stdio) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_xunds"))
        .args([
            "run",
            "--deterministic",
            "--executions",
            "20",
            "--vncs",
            "1",
            "--models",
            "1",
            "--slab",
            slab,
        ])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("spawn xunds")
}

#[test]
fn no_progress_line_when_piped() {
    // The progress line would be due at once (threshold 0): piped, nothing.
    let slab = tmp("piped.nds");
    let slab_s = slab.to_str().unwrap();
    for extra in [
        &["--progress-after-ms", "0"][..],
        &["--progress-after-ms", "0", "--json"],
    ] {
        let out = short_run(slab_s, extra, Stdio::piped())
            .wait_with_output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert!(out.stderr.is_empty(), "{extra:?}: {}", text(&out.stderr));
        assert!(!out.stdout.is_empty());
    }
    let _ = std::fs::remove_file(slab);
}

/// What a run writes to its stderr when that is a terminal (a pty).
fn stderr_on_a_terminal(extra: &[&str]) -> String {
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes two descriptors into the locals; the name,
    // termios and winsize arguments may be null.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned by nobody else.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let slab = tmp(&format!("tty-{}.nds", extra.len()));
    let child = short_run(slab.to_str().unwrap(), extra, Stdio::from(slave));
    // The child holds the only slave descriptor now: reading the master
    // ends (EIO) when it exits.
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let mut seen = Vec::new();
    let _ = std::fs::File::from(master).read_to_end(&mut seen);
    let _ = std::fs::remove_file(slab);
    text(&seen)
}

#[test]
fn progress_line_on_a_terminal_only_for_long_text_runs() {
    // Past the threshold (0 here): the bar, then cleared.
    let shown = stderr_on_a_terminal(&["--progress-after-ms", "0"]);
    assert!(shown.contains("20/20"), "{shown:?}");
    assert!(shown.contains("100%"), "{shown:?}");
    // A short run under the default threshold (two seconds): nothing.
    assert_eq!(stderr_on_a_terminal(&[]), "");
    // --json: nothing, whatever the time.
    assert_eq!(
        stderr_on_a_terminal(&["--progress-after-ms", "0", "--json"]),
        ""
    );
}

/// A run without `--slab` removes the default-named slabs of ended runs
/// but the 8 most recently modified, so they do not pile up in /dev/shm
/// (256 KiB each) between two `xunds nds clean`.
#[test]
fn a_default_run_keeps_the_eight_newest_ended_slabs() {
    let shm = std::path::Path::new("/dev/shm");
    if !shm.is_dir() {
        eprintln!("no /dev/shm: skipped");
        return;
    }
    // Names no process can hold: pids past the kernel's largest.
    let pid_max: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Newer than any real run's, so they are the newest ended slabs.
    let future = std::time::SystemTime::now() + std::time::Duration::from_secs(86_400);
    let ours: Vec<PathBuf> = (0..12u32)
        .map(|i| {
            let p = shm.join(format!("xunds-{}.nds", pid_max + i));
            std::fs::write(&p, vec![0u8; 256 * 1024]).unwrap();
            let f = std::fs::File::options().write(true).open(&p).unwrap();
            f.set_modified(future + std::time::Duration::from_secs(u64::from(i)))
                .unwrap();
            p
        })
        .collect();
    let out = xunds(&["run", "--executions", "5", "--vncs", "1", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let own = PathBuf::from(doc["slab"].as_str().unwrap());
    let kept: Vec<bool> = ours.iter().map(|p| p.exists()).collect();
    for p in ours.iter().chain([&own]) {
        let _ = std::fs::remove_file(p);
    }
    let mut want = vec![false; 4];
    want.extend([true; 8]);
    assert_eq!(kept, want, "the 4 oldest go, the 8 newest stay");
}
