//! No process dies of a signal because another shrank its slab, and one
//! writer per slab, across processes: `xunds nds dump` racing a file that is
//! truncated and regrown under it, `xunds run` whose slab is truncated
//! under it, a second `xunds run` on a live slab, a file that is not a slab.

use crate::nds_support;

use std::os::unix::fs::FileExt;
use std::os::unix::process::ExitStatusExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nds_support::{xunds, TempSlab};
use xunds::nds::{Counter, Writer, SLAB_SIZE};
use xunds::wire::nds::counters::NcCounter;

/// `xunds run --executions N --vncs 1 --models 1 --slab PATH`, plus `extra`.
fn run_on(path: &str, executions: &str, extra: &[&str]) -> std::process::Command {
    let mut c = xunds([
        "run",
        "--executions",
        executions,
        "--vncs",
        "1",
        "--models",
        "1",
        "--slab",
        path,
    ]);
    c.args(extra);
    c
}

/// "exit N" or "killed by signal S".
fn how(st: &std::process::ExitStatus) -> String {
    match (st.code(), st.signal()) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => "?".into(),
    }
}

#[test]
fn nds_dump_racing_truncation_never_dies_of_a_signal() {
    const DUMPS: usize = 150;
    let slab = TempSlab::new("trunc-dump");
    let w = Writer::create(slab.path()).unwrap();
    let c = Counter::nc(0, NcCounter::InferCompleted).unwrap();
    w.add(c, 41).unwrap();
    // A committed slab's bytes, to put back after each cut.
    let image = std::fs::read(slab.path()).unwrap();
    drop(w.release());
    let stop = Arc::new(AtomicBool::new(false));
    let cutter = {
        let (stop, path) = (stop.clone(), slab.path().to_path_buf());
        std::thread::spawn(move || {
            let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            let mut cuts = 0u64;
            // Ordering: Relaxed: a stop flag, nothing else rides on it.
            while !stop.load(Ordering::Relaxed) {
                f.set_len(0).unwrap();
                cuts += 1;
                std::thread::sleep(Duration::from_micros(300));
                f.write_all_at(&image, 0).unwrap();
                std::thread::sleep(Duration::from_micros(700));
            }
            cuts
        })
    };
    let (mut ok, mut refused) = (0, 0);
    for i in 0..DUMPS {
        let out = xunds(["nds", "dump", &slab.path().display().to_string()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        match out.status.code() {
            Some(0) => ok += 1,
            Some(1) => {
                assert!(err.contains("nds: "), "dump {i}: no message: {err}");
                refused += 1;
            }
            _ => panic!("dump {i}: {} ({err})", how(&out.status)),
        }
    }
    // Ordering: Relaxed, as above.
    stop.store(true, Ordering::Relaxed);
    let cuts = cutter.join().unwrap();
    eprintln!("{DUMPS} dumps under {cuts} truncations: {ok} read a whole slab, {refused} refused");
    assert!(
        ok > 0 && refused > 0,
        "the race was not exercised: {ok} ok, {refused} refused"
    );
}

#[test]
fn a_run_whose_slab_is_truncated_under_it_reports_it_and_does_not_die() {
    let slab = TempSlab::new("trunc-run");
    let mut child = run_on(&slab.path().display().to_string(), "100000000", &[])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the slab to be committed, then cut it a few times.
    let t0 = Instant::now();
    while std::fs::metadata(slab.path()).map_or(true, |m| m.len() != SLAB_SIZE as u64) {
        assert!(t0.elapsed() < Duration::from_secs(30), "no slab appeared");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(200));
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(slab.path())
        .unwrap();
    for _ in 0..20 {
        f.set_len(0).unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
    // The writer regrows its slab at its next store (allow for a loaded
    // machine), and is still running (before: dead of SIGBUS, exit 135).
    let t0 = Instant::now();
    while std::fs::metadata(slab.path()).unwrap().len() != SLAB_SIZE as u64
        && t0.elapsed() < Duration::from_secs(10)
        && child.try_wait().unwrap().is_none()
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    let alive = child.try_wait().unwrap();
    assert!(alive.is_none(), "the run ended: {}", how(&alive.unwrap()));
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let st = child.wait().unwrap();
    assert_eq!(st.signal(), Some(libc::SIGTERM), "{}", how(&st));
    assert_eq!(
        std::fs::metadata(slab.path()).unwrap().len(),
        SLAB_SIZE as u64,
        "the writer regrew its slab"
    );
}

#[test]
fn a_short_run_whose_slab_was_cut_exits_1_with_a_message() {
    let slab = TempSlab::new("trunc-run-short");
    let path = slab.path().display().to_string();
    let child = run_on(&path, "400000", &[])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while std::fs::metadata(slab.path()).map_or(true, |m| m.len() != SLAB_SIZE as u64) {
        assert!(t0.elapsed() < Duration::from_secs(30), "no slab appeared");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(100));
    std::fs::OpenOptions::new()
        .write(true)
        .open(slab.path())
        .unwrap()
        .set_len(0)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{} {err}", how(&out.status));
    assert!(err.contains("truncated"), "{err}");
}

#[test]
fn a_second_writer_is_refused_naming_the_first() {
    let slab = TempSlab::new("two-writers");
    let path = slab.path().display().to_string();
    let w = Writer::create(slab.path()).unwrap();
    let out = run_on(&path, "10", &[]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("pid {}", std::process::id())),
        "{err}"
    );
    // Readers need no lock.
    let out = xunds(["nds", "dump", &path]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    // Gone, its slab is stale and reused.
    drop(w);
    let out = run_on(&path, "10", &[]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_file_that_is_not_a_slab_is_not_overwritten_without_force() {
    let f = TempSlab::new("not-a-slab");
    let path = f.path().display().to_string();
    std::fs::write(f.path(), b"important\n").unwrap();
    let run = |force: bool| {
        let extra: &[&str] = if force { &["--force"] } else { &[] };
        run_on(&path, "10", extra).output().unwrap()
    };
    let out = run(false);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("not a slab"), "{err}");
    assert_eq!(std::fs::read(f.path()).unwrap(), b"important\n");
    let out = run(true);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::metadata(f.path()).unwrap().len(), SLAB_SIZE as u64);
}
