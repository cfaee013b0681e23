//! Cross-process tests of the NDS datastore on a real `MAP_SHARED` file: a
//! writer process (`nds_support::writer`: stress or counter adds) and this
//! test process as the reader (mapped `PROT_READ`).
//!
//! The records the stress writer publishes are self-checking: every byte is
//! a function of the version in `model_id`, so a torn copy that the reader
//! accepted as Fresh would fail `is_consistent` even if its FNV hash happened
//! to match.

use crate::nds_support;
use crate::nds_support::writer as stress;

use std::process::Stdio;
use std::time::Duration;

use nds_support::{live_stress_writer, live_writer, writer_process, xunds, Reaped, TempSlab};
use xunds::nds::record::{self, Attempt};
use xunds::nds::{Counter, ModelSlot, NdsError, Reader, RecordRead, RecordSpan, Snapshot};
use xunds::prng::SplitMix64;
use xunds::wire::nds::counters::NcCounter;
use xunds::wire::nds::fnv;
use xunds::wire::nds::model::ModelRecord;

/// What a reader saw, by verdict.
#[derive(Debug, Default)]
struct Tally {
    fresh: u64,
    unpublished: u64,
    torn: u64,
    /// Fresh but inconsistent: a torn record accepted. Must stay 0.
    torn_accepted: u64,
}

impl Tally {
    fn model(&mut self, r: &RecordRead<xunds::wire::nds::model::ModelRecord>) {
        match r {
            RecordRead::Fresh(m) => {
                self.fresh += 1;
                if !stress::is_consistent(m) {
                    self.torn_accepted += 1;
                }
            }
            RecordRead::Unpublished => self.unpublished += 1,
            RecordRead::Torn(_) => self.torn += 1,
        }
    }

    fn snapshot(&mut self, s: &Snapshot) {
        for (_, m) in &s.models {
            self.model(m);
        }
        match &s.process_info {
            RecordRead::Fresh(p) => {
                self.fresh += 1;
                if !stress::process_info_is_consistent(p) {
                    self.torn_accepted += 1;
                }
            }
            RecordRead::Unpublished => self.unpublished += 1,
            RecordRead::Torn(_) => self.torn += 1,
        }
        match &s.process_info_ext {
            RecordRead::Fresh(p) => {
                self.fresh += 1;
                if !stress::process_info_ext_is_consistent(p) {
                    self.torn_accepted += 1;
                }
            }
            RecordRead::Unpublished => self.unpublished += 1,
            RecordRead::Torn(_) => self.torn += 1,
        }
    }
}

#[test]
fn a_reader_process_never_accepts_a_torn_record_from_a_live_writer() {
    let slab = TempSlab::new("live");
    let mut writer = live_writer(slab.path(), true, 7);
    let reader = Reader::open(slab.path()).unwrap();
    let mut tally = Tally::default();
    for round in 0..3000 {
        // Mostly hammer a few slots the writer keeps rewriting; now and then
        // take a whole snapshot.
        if round % 100 == 0 {
            tally.snapshot(&reader.snapshot().unwrap());
        } else {
            let slot = ModelSlot::new(round % 6).unwrap();
            tally.model(&reader.model(slot).unwrap());
        }
    }
    // Single attempts, no retry: the protocol's stable-copy check alone must
    // never hand back a mix, whatever the hash says.
    let slab_ro = xunds::nds::ReadOnlySlab::open(slab.path()).unwrap();
    let (mut stable, mut changed, mut unpublished) = (0u64, 0u64, 0u64);
    let mut buf = [0u8; xunds::wire::nds::model::RECORD_SIZE];
    for i in 0..200_000usize {
        let span = RecordSpan::model(i % 6).unwrap();
        match record::copy_once(&slab_ro, span, &mut buf) {
            Attempt::Stable => {
                stable += 1;
                let m = ModelRecord::parse(&buf).unwrap();
                assert!(stress::is_consistent(&m), "stable copy is torn");
                assert_eq!(fnv::verify(&buf), fnv::HashState::Valid);
            }
            Attempt::Changed => changed += 1,
            Attempt::Unpublished => unpublished += 1,
        }
    }
    writer.kill().unwrap();
    writer.wait().unwrap();
    eprintln!("live writer: {tally:?}");
    eprintln!("single attempts: stable {stable} changed {changed} unpublished {unpublished}");
    assert_eq!(tally.torn_accepted, 0, "{tally:?}");
    assert!(
        tally.fresh > 0,
        "the reader saw nothing published: {tally:?}"
    );
}

#[test]
fn a_writer_killed_at_random_points_leaves_only_fresh_unpublished_or_torn() {
    const ROUNDS: u64 = 200;
    let slab = TempSlab::new("sigkill");
    let mut rng = SplitMix64::new(0x5167_6b11);
    let mut tally = Tally::default();
    for round in 0..ROUNDS {
        // Round 0 creates the slab; later rounds adopt whatever the killed
        // writer left (records mid-update included) and carry on.
        let mut writer = live_writer(slab.path(), round == 0, round + 1);
        std::thread::sleep(Duration::from_micros(rng.below(1500)));
        writer.kill().unwrap(); // SIGKILL
        writer.wait().unwrap();
        let reader = Reader::open(slab.path()).unwrap();
        tally.snapshot(&reader.snapshot().unwrap());
    }
    eprintln!("{ROUNDS} SIGKILL rounds: {tally:?}");
    assert_eq!(tally.torn_accepted, 0, "{tally:?}");
    assert!(tally.fresh > 0, "{tally:?}");
}

#[test]
fn two_processes_adding_one_a_million_times_each_end_at_two_million() {
    const TIMES: u64 = 1_000_000;
    let slab = TempSlab::new("counters");
    let w = xunds::nds::Writer::create(slab.path()).unwrap();
    let c = Counter::nc(5, NcCounter::InferCompleted).unwrap();
    let spawn = || {
        let job = format!("add 5 {} {TIMES}", NcCounter::InferCompleted.index());
        writer_process(&job, slab.path())
            .spawn()
            .expect("spawn a counter writer")
    };
    let (mut a, mut b) = (spawn(), spawn());
    assert!(a.wait().unwrap().success());
    assert!(b.wait().unwrap().success());
    let reader = Reader::open(slab.path()).unwrap();
    assert_eq!(reader.counter(c).unwrap(), 2 * TIMES);
    // Released by its publisher, the slab reads as detached.
    drop(w.release());
    assert!(matches!(reader.counter(c), Err(NdsError::Detached)));
}

/// `xunds nds clean` removes a default-named slab only when it is a slab and
/// its writer has exited: a live writer's slab, a file that is not a slab
/// and a slab under another name stay, and `--dry-run` removes nothing.
#[test]
fn clean_removes_only_the_slabs_whose_writer_exited() {
    let dir = std::env::temp_dir().join(format!("xunds-clean-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).unwrap();
    // Default names of processes that have exited (`true`, waited for), and
    // one of a running process (this test's).
    let exited = || {
        let mut c = std::process::Command::new("true").spawn().unwrap();
        c.wait().unwrap();
        dir.join(format!("xunds-{}.nds", c.id()))
    };
    let (live, dead, junk, sized, other, running) = (
        exited(),
        exited(),
        exited(),
        exited(),
        dir.join("kept-by-name.nds"),
        dir.join(format!("xunds-{}.nds", std::process::id())),
    );
    // A live writer on a file whose name's process has exited: its lock
    // keeps it.
    let mut writer = live_stress_writer(&live);
    let done = writer_process("stress 1 1 20", &dead).status().unwrap();
    assert!(done.success());
    std::fs::copy(&dead, &other).unwrap();
    // A link to a slab: a link is not removed, nor is what it names.
    let link = exited();
    std::os::unix::fs::symlink(&other, &link).unwrap();
    // A slab no one writes, named for a running process: a live process
    // keeps the files named for it.
    std::fs::copy(&dead, &running).unwrap();
    std::fs::write(&junk, b"not a slab").unwrap();
    // A slab's size, not its header.
    std::fs::write(&sized, vec![0xAB; xunds::nds::SLAB_SIZE]).unwrap();
    let clean = |extra: &[&str]| {
        let out = xunds(["nds", "clean", "--dir"])
            .arg(&dir)
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let out = clean(&["--dry-run"]);
    assert!(
        out.contains(&format!("would remove {}", dead.display())),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "kept {}: process {} writes it",
            live.display(),
            writer.id()
        )),
        "{out}"
    );
    assert!(out.contains(&format!("kept {}:", junk.display())), "{out}");
    assert!(
        out.contains(&format!("kept {}: not a slab", sized.display())),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "kept {}: process {} is running",
            running.display(),
            std::process::id()
        )),
        "{out}"
    );
    assert!(out.contains(&format!("kept {}:", link.display())), "{out}");
    assert!(out.ends_with("1 would be removed, 5 kept\n"), "{out}");
    assert!(dead.exists() && live.exists() && junk.exists() && other.exists());
    let out = clean(&[]);
    assert!(
        out.contains(&format!("removed {}", dead.display())),
        "{out}"
    );
    assert!(out.ends_with("1 removed, 5 kept\n"), "{out}");
    assert!(!dead.exists());
    assert!(live.exists() && junk.exists() && sized.exists() && other.exists());
    // The writer's exit frees its lock, and with it the file.
    writer.kill().unwrap();
    writer.wait().unwrap();
    let out = clean(&[]);
    assert!(
        out.contains(&format!("removed {}", live.display())),
        "{out}"
    );
    assert!(out.ends_with("1 removed, 4 kept\n"), "{out}");
    assert!(!live.exists() && junk.exists() && sized.exists() && other.exists());
    assert!(running.exists() && link.symlink_metadata().is_ok());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `xunds nds clean` holds a slab's lock while it checks and removes the
/// file, but it is no writer: a run that starts on that path meanwhile
/// waits the lock out and then writes a new file there. It was refused as
/// "another writer (pid N)", N the clean process.
#[test]
fn a_run_that_starts_during_clean_waits_it_out() {
    use std::os::unix::fs::MetadataExt as _;
    let dir = std::env::temp_dir().join(format!("xunds-clean-run-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).unwrap();
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    let slab = dir.join(format!("xunds-{}.nds", gone.id()));
    let made = writer_process("stress 1 1 20", &slab).status().unwrap();
    assert!(made.success());
    let ino = format!(":{}", std::fs::metadata(&slab).unwrap().ino());
    let mut clean = Reaped(
        xunds(["nds", "clean", "--hold-ms", "400", "--dir"])
            .arg(&dir)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Once clean holds its lock on the file.
    let t0 = std::time::Instant::now();
    while !std::fs::read_to_string("/proc/locks")
        .unwrap()
        .lines()
        .any(|l| {
            l.split_whitespace()
                .nth(5)
                .is_some_and(|f| f.ends_with(&ino))
        })
    {
        assert!(t0.elapsed() < Duration::from_secs(20), "clean never locked");
        std::thread::sleep(Duration::from_millis(2));
    }
    let run = xunds(["run", "--deterministic", "--executions", "50", "--slab"])
        .arg(&slab)
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    let mut said = String::new();
    std::io::Read::read_to_string(&mut clean.stdout.take().unwrap(), &mut said).unwrap();
    assert!(clean.wait().unwrap().success(), "{said}");
    assert!(
        said.contains(&format!("removed {}", slab.display())),
        "{said}"
    );
    // What the path names now is the run's slab.
    let reader = Reader::open(&slab).unwrap();
    let completed: u64 = (0..4)
        .map(|core| {
            let c = Counter::nc(core, NcCounter::InferCompleted).unwrap();
            reader.counter(c).unwrap()
        })
        .sum();
    assert_eq!(completed, 50);
    std::fs::remove_dir_all(&dir).unwrap();
}
