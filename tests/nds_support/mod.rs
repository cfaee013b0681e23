//! Shared helpers for the `nds` and `cli` test binaries: slab files that clean up
//! after themselves, the `xunds` binary, and this test binary as a second
//! process writing a slab ([`writer`]).
#![allow(dead_code)]

pub mod writer;

use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

/// A slab file path under `/dev/shm` (or the temp dir), removed on drop.
pub struct TempSlab(PathBuf);

impl TempSlab {
    /// A fresh, unique path for test `name` (the file is not created).
    pub fn new(name: &str) -> TempSlab {
        let dir = Path::new("/dev/shm");
        let dir = if dir.is_dir() {
            dir.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        sweep_dead(&dir);
        let p = dir.join(format!("xunds-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_file(&p);
        TempSlab(p)
    }

    /// The path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

/// Remove the slab files of test processes that died without running
/// `Drop` (killed, e.g. by a timeout): `xunds-test-<name>-<pid>` whose pid
/// is gone. So no run of the suite leaves files in /dev/shm behind.
fn sweep_dead(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name.strip_prefix("xunds-test-") else {
            continue;
        };
        let Some(pid) = rest.rsplit('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

impl Drop for TempSlab {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `xunds <args>` as a command (the binary cargo built for this test run).
pub fn xunds<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let mut c = Command::new(env!("CARGO_BIN_EXE_xunds"));
    c.args(args);
    c
}

/// The address in `xunds monitor --prometheus`'s first stderr line
/// (`... serving http://ADDR/metrics`).
pub fn serving_addr(line: &str) -> String {
    line.trim()
        .split("http://")
        .nth(1)
        .and_then(|s| s.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("not the serving line: {line}"))
        .to_string()
}

/// A reader pause that does not sleep (deterministic single-process tests).
pub fn no_pause(_: std::time::Duration) {}

/// A child process killed and reaped when dropped: a test that fails while
/// a stress writer runs must not leave it behind (it would keep the test
/// harness's output pipe open, and CI waiting, until its time limit).
pub struct Reaped(pub Child);

impl Deref for Reaped {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl DerefMut for Reaped {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        // Already reaped after a test's own kill + wait: both fail harmlessly.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The environment variables that carry a writer process's job and slab.
const JOB: &str = "XUNDS_TEST_WRITER_JOB";
const SLAB: &str = "XUNDS_TEST_WRITER_SLAB";

/// Not a test: the body of the process [`writer_process`] starts (this test
/// binary run again, filtered to this one test). Ignored, so the suite
/// skips it; run without a job it does nothing.
#[test]
#[ignore = "the second process of the cross-process tests"]
fn nds_writer_process() {
    if let (Ok(job), Ok(slab)) = (std::env::var(JOB), std::env::var(SLAB)) {
        if let Err(e) = writer::run(&job, Path::new(&slab)) {
            panic!("writer {job:?} on {slab}: {e}");
        }
    }
}

/// A second process that runs `job` ([`writer::run`]) on `path`: this test
/// binary again, as its ignored `nds_writer_process` test. It exits 0 when
/// the job ends well. Its stdout (the harness's lines) goes nowhere unless
/// the caller pipes it.
pub fn writer_process(job: &str, path: &Path) -> Command {
    let mut c = Command::new(std::env::current_exe().expect("the test binary's path"));
    c.args(["--exact", "nds_support::nds_writer_process", "--ignored"])
        .args(["--nocapture", "--quiet", "--test-threads", "1"])
        .env(JOB, job)
        .env(SLAB, path)
        .stdout(std::process::Stdio::null());
    c
}

/// A stress writer on `path` (created when `create`), returned once it has
/// printed `ready` (the slab laid out, its writer's lock held); it runs until
/// dropped.
pub fn live_writer(path: &Path, create: bool, seed: u64) -> Reaped {
    use std::io::BufRead as _;
    let job = format!("stress {} {seed} 0", u8::from(create));
    let mut w = Reaped(
        writer_process(&job, path)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn a writer process"),
    );
    // The harness prints its own lines first.
    let out = std::io::BufReader::new(w.stdout.take().expect("piped stdout"));
    let ready = out
        .lines()
        .map_while(Result::ok)
        .any(|l| l.trim() == "ready");
    assert!(ready, "the writer process did not start");
    w
}

/// [`live_writer`] creating the slab at `path`.
pub fn live_stress_writer(path: &Path) -> Reaped {
    live_writer(path, true, 1)
}
