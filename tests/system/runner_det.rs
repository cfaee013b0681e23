//! The deterministic runner: same seed, same trace bytes; another seed,
//! another schedule; the virtual clock; the livelock guard; panics.

use crate::runner_toys;

use runner_toys::{echo_pair_all_full, ping_pong, Timer, Toy, Wait};
use xunds::actors::{Nanos, NullTrace, Progress};
use xunds::system::runner::{DetConfig, DetRunner, RunError, Step};
use xunds::system::trace::{diff_bytes, diff_files, Trace, TraceDiff, TraceHeader};
use xxhash_rust::xxh3::xxh3_128;

/// One ping-pong run under `seed`; returns the trace bytes.
fn ping_pong_trace(seed: u64, cap: usize, total: u64) -> Vec<u8> {
    let cfg = DetConfig::new(seed);
    let header = TraceHeader::new(
        seed,
        format!(
            "toy=ping_pong cap={cap} total={total} {}",
            cfg.config_text()
        ),
    );
    let mut trace = Trace::in_memory(&header, 1 << 16);
    let mut r = DetRunner::new(cfg);
    let (a, b) = ping_pong(cap, total, Wait::Yield, false);
    r.add(Toy::Pinger(a));
    r.add(Toy::Ponger(b));
    let st = r.run(&mut trace).unwrap();
    assert!(r.is_done());
    assert!(st.progress > 0);
    let actors = r.into_actors();
    assert_eq!(actors[0].pinger().received, total);
    assert!(actors[0].pinger().errors.is_empty());
    assert_eq!(actors[1].ponger().replied, total);
    let s = trace.finish().unwrap();
    let bytes = s.memory.unwrap();
    assert_eq!(s.digest, xxh3_128(&bytes).to_be_bytes());
    bytes
}

#[test]
fn same_seed_gives_a_byte_identical_trace() {
    for seed in [0, 1, 0xDEAD_BEEF] {
        let a = ping_pong_trace(seed, 2, 200);
        let b = ping_pong_trace(seed, 2, 200);
        assert_eq!(
            diff_bytes(&a, &b),
            TraceDiff::Identical {
                lines: a.iter().filter(|&&c| c == b'\n').count() as u64
            }
        );
    }
}

#[test]
fn another_seed_gives_another_schedule() {
    let a = ping_pong_trace(1, 2, 200);
    let b = ping_pong_trace(2, 2, 200);
    match diff_bytes(&a, &b) {
        // The headers already differ (seed), so compare the bodies too.
        TraceDiff::Differs { line: 1, .. } => {}
        d => panic!("expected the header to differ, got {d}"),
    }
    let body = |t: &[u8]| t.splitn(2, |&c| c == b'\n').nth(1).unwrap().to_vec();
    assert!(!diff_bytes(&body(&a), &body(&b)).is_identical());
    // Across several seeds the schedules spread out.
    let mut digests: Vec<_> = (10..18)
        .map(|s| xxh3_128(&body(&ping_pong_trace(s, 2, 200))).to_be_bytes())
        .collect();
    digests.sort();
    digests.dedup();
    assert!(
        digests.len() >= 6,
        "only {} distinct schedules",
        digests.len()
    );
}

/// The trace format, pinned: a tiny run with capacity 1.
#[test]
fn tiny_trace_snapshot() {
    let t = ping_pong_trace(7, 1, 3);
    insta::assert_snapshot!(String::from_utf8(t).unwrap());
}

#[test]
fn trace_files_replay_identically() {
    let dir = std::env::temp_dir().join(format!("xunds-runner-det-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |seed: u64, path: &std::path::Path| {
        let header = TraceHeader::new(seed, "toy=ping_pong cap=1 total=50");
        let mut trace = Trace::create(&header, path).unwrap();
        let mut r = DetRunner::new(DetConfig::new(seed));
        let (a, b) = ping_pong(1, 50, Wait::Yield, false);
        r.add(Toy::Pinger(a));
        r.add(Toy::Ponger(b));
        r.run(&mut trace).unwrap();
        trace.finish().unwrap()
    };
    let (p1, p2, p3) = (
        dir.join("1.trace"),
        dir.join("2.trace"),
        dir.join("3.trace"),
    );
    let s1 = run(5, &p1);
    let s2 = run(5, &p2);
    assert_eq!(s1.digest, s2.digest);
    assert!(diff_files(&p1, &p2).unwrap().is_identical());
    // Replay reads the seed back from the header.
    let mut rd = std::io::BufReader::new(std::fs::File::open(&p1).unwrap());
    let h = TraceHeader::read(&mut rd).unwrap();
    assert_eq!(h.seed, 5);
    assert_eq!(h.config_value("total"), Some("50"));
    // A different seed, written under the same header, differs past line 1.
    let header = TraceHeader::new(5, "toy=ping_pong cap=1 total=50");
    let mut trace = Trace::create(&header, &p3).unwrap();
    let mut r = DetRunner::new(DetConfig::new(6));
    let (a, b) = ping_pong(1, 50, Wait::Yield, false);
    r.add(Toy::Pinger(a));
    r.add(Toy::Ponger(b));
    r.run(&mut trace).unwrap();
    trace.finish().unwrap();
    match diff_files(&p1, &p3).unwrap() {
        TraceDiff::Differs {
            line,
            expected: Some(_),
            actual: Some(_),
        } => assert!(line > 1),
        d => panic!("{d:?}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn clock_jumps_straight_to_the_next_deadline() {
    let mut r = DetRunner::new(DetConfig::new(3));
    r.add(Toy::Timer(Timer {
        name: "t1".into(),
        deadline: Nanos::from_millis(5),
        fired_at: None,
    }));
    r.add(Toy::Timer(Timer {
        name: "t2".into(),
        deadline: Nanos::from_millis(2),
        fired_at: None,
    }));
    let st = r.run(&mut NullTrace).unwrap();
    // Two jumps (to 2 ms, then to 5 ms), each after both timers were idle.
    assert_eq!(st.jumps, 2);
    let actors = r.into_actors();
    assert_eq!(actors[1].timer().fired_at, Some(Nanos::from_millis(2)));
    assert_eq!(actors[0].timer().fired_at, Some(Nanos::from_millis(5)));
}

#[test]
fn virtual_time_advances_a_quantum_per_poll() {
    let mut cfg = DetConfig::new(9);
    cfg.quantum = Nanos(250);
    let mut r = DetRunner::new(cfg);
    let (a, b) = ping_pong(4, 100, Wait::Yield, false);
    r.add(Toy::Pinger(a));
    r.add(Toy::Ponger(b));
    let st = r.run(&mut NullTrace).unwrap();
    // Nobody idles for long in a ping-pong, so no jumps were needed.
    assert_eq!(st.jumps, 0);
    assert_eq!(st.now, Nanos(250 * st.polls));
}

#[test]
fn livelock_guard_reports_instead_of_hanging() {
    let mut cfg = DetConfig::new(4);
    cfg.max_polls_without_progress = 1_000;
    let mut r = DetRunner::new(cfg);
    let (a, b) = echo_pair_all_full(2);
    r.add(Toy::Echo(a));
    r.add(Toy::Echo(b));
    match r.run(&mut NullTrace) {
        Err(RunError::Livelock { polls, waiting, .. }) => {
            assert_eq!(polls, 1_000);
            assert_eq!(waiting, ["echo_a", "echo_b"]);
        }
        other => panic!("expected a livelock, got {other:?}"),
    }
}

#[test]
fn poll_budget_is_an_error() {
    let mut cfg = DetConfig::new(4);
    cfg.max_polls = Some(10);
    let mut r = DetRunner::new(cfg);
    let (a, b) = ping_pong(1, 1_000, Wait::Yield, false);
    r.add(Toy::Pinger(a));
    r.add(Toy::Ponger(b));
    let e = r.run(&mut NullTrace).unwrap_err();
    assert!(matches!(e, RunError::PollBudget { polls: 10, .. }), "{e}");
}

#[test]
fn a_panicking_actor_is_an_error_with_its_name() {
    let mut r = DetRunner::new(DetConfig::new(4));
    let (a, mut b) = ping_pong(2, 10, Wait::Yield, false);
    b.panic_on = Some(3);
    r.add(Toy::Pinger(a));
    r.add(Toy::Ponger(b));
    match r.run(&mut NullTrace) {
        Err(RunError::ActorPanicked { actor, message, .. }) => {
            assert_eq!(actor, "ponger");
            assert_eq!(message, "ponger told to fail on 3");
        }
        other => panic!("expected a panic error, got {other:?}"),
    }
    // The panicked actor is never polled again.
    assert!(r.is_finished(1));
}

#[test]
fn daemons_are_not_waited_for() {
    let mut r = DetRunner::new(DetConfig::new(8));
    let (a, b) = ping_pong(2, 30, Wait::Yield, true);
    r.add(Toy::Pinger(a));
    r.add_daemon(Toy::Ponger(b));
    r.run(&mut NullTrace).unwrap();
    assert!(r.is_finished(0));
    assert!(!r.is_finished(1));
    assert_eq!(r.step(&mut NullTrace).unwrap(), Step::Done);
}

#[test]
fn step_reports_each_poll() {
    let mut r = DetRunner::new(DetConfig::new(1));
    let (a, b) = ping_pong(1, 1, Wait::Yield, false);
    r.add(Toy::Pinger(a));
    r.add(Toy::Ponger(b));
    let mut polls = 0;
    loop {
        match r.step(&mut NullTrace).unwrap() {
            Step::Done => break,
            Step::Polled { actor, progress } => {
                assert!(actor < 2);
                assert!(matches!(
                    progress,
                    Progress::Made | Progress::Idle | Progress::Finished
                ));
                polls += 1;
            }
        }
    }
    assert_eq!(polls, r.stats().polls);
}
