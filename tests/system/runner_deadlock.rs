//! The deadlock rule for paired bounded queues (docs/design.md "Actors and
//! the system"): start with every mailbox full at once and both actors
//! holding a refused item; under rules R1-R3 the system drains without losing
//! or duplicating a message. A pair that breaks R3 (everything echoes) is
//! caught by the deterministic runner's livelock guard instead of hanging.

use crate::runner_toys;

use std::time::Duration;

use runner_toys::{echo_pair_all_full, ping_pong_all_full, Toy, Wait};
use xunds::actors::NullTrace;
use xunds::system::runner::{DetConfig, DetRunner, RunError, ThreadedConfig, ThreadedRunner};

fn check(actors: &[Toy], total: u64) {
    let p = actors[0].pinger();
    assert!(p.errors.is_empty(), "{:?}", p.errors);
    // Every reply arrived exactly once and in order (checked per message by
    // the pinger), and nothing is left anywhere.
    assert_eq!(p.received, total);
    assert_eq!(p.stash, None);
    assert!(p.rx.is_empty());
    let q = actors[1].ponger();
    assert_eq!(q.replied, total);
    assert_eq!(q.stash, None);
    assert!(q.rx.is_empty());
}

#[test]
fn full_mailboxes_drain_under_the_deterministic_runner() {
    for cap in [1usize, 2, 3] {
        for seed in 0..20 {
            let total = 2 * cap as u64 + 10;
            let (a, b) = ping_pong_all_full(cap, total, Wait::Yield);
            let mut cfg = DetConfig::new(seed);
            cfg.max_polls_without_progress = 1_000;
            let mut r = DetRunner::new(cfg);
            r.add(Toy::Pinger(a));
            r.add(Toy::Ponger(b));
            r.run(&mut NullTrace)
                .unwrap_or_else(|e| panic!("cap {cap} seed {seed}: {e}"));
            check(&r.into_actors(), total);
        }
    }
}

#[test]
fn full_mailboxes_drain_under_the_threaded_runner() {
    for (cap, wait) in [(1usize, Wait::Fd), (2, Wait::Yield), (2, Wait::Fd)] {
        let total = if cfg!(debug_assertions) {
            2_000
        } else {
            20_000
        };
        let (a, b) = ping_pong_all_full(cap, total, wait);
        let mut r = ThreadedRunner::new(ThreadedConfig {
            idle_timeout: Duration::from_millis(5),
            max_wall: Some(Duration::from_secs(120)),
        })
        .unwrap();
        r.add(Toy::Pinger(a));
        r.add(Toy::Ponger(b));
        let rep = r.run().unwrap();
        check(&rep.actors, total);
    }
}

#[test]
fn breaking_the_rule_is_caught_not_hung() {
    for cap in [1usize, 2] {
        let (a, b) = echo_pair_all_full(cap);
        let mut cfg = DetConfig::new(11);
        cfg.max_polls_without_progress = 500;
        let mut r = DetRunner::new(cfg);
        r.add(Toy::Echo(a));
        r.add(Toy::Echo(b));
        match r.run(&mut NullTrace) {
            Err(RunError::Livelock { polls: 500, .. }) => {}
            other => panic!("cap {cap}: expected a livelock, got {other:?}"),
        }
    }
}
