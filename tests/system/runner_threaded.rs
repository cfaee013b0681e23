//! The threaded runner: round trips under every idle strategy, daemons,
//! external stop, panics and the wall bound.

use crate::runner_toys;

use std::time::Duration;

use runner_toys::{ping_pong, Toy, Wait};
use xunds::actors::{Actor, Cx, Progress};
use xunds::system::runner::{RunError, ThreadedConfig, ThreadedRunner};

fn cfg() -> ThreadedConfig {
    ThreadedConfig {
        idle_timeout: Duration::from_millis(5),
        // Generous: a failure shows up as an error, not a hung CI job.
        max_wall: Some(Duration::from_secs(120)),
    }
}

fn round_trips(cap: usize, total: u64, wait: Wait, daemon: bool) {
    let mut r = ThreadedRunner::new(cfg()).unwrap();
    let (a, b) = ping_pong(cap, total, wait, daemon);
    r.add(Toy::Pinger(a));
    if daemon {
        r.add_daemon(Toy::Ponger(b));
    } else {
        r.add(Toy::Ponger(b));
    }
    let rep = r.run().unwrap();
    let p = rep.actors[0].pinger();
    assert!(
        p.errors.is_empty(),
        "{:?}",
        &p.errors[..p.errors.len().min(5)]
    );
    assert_eq!(p.received, total);
    assert_eq!(rep.actors[1].ponger().replied, total);
    assert!(rep.stats[0].finished);
    assert_eq!(rep.stats[1].finished, !daemon);
    assert_eq!(rep.stats[0].name, "pinger");
}

fn scaled(n: u64) -> u64 {
    if cfg!(miri) {
        n / 1000
    } else if cfg!(debug_assertions) {
        n / 10
    } else {
        n
    }
}

#[test]
fn round_trips_with_eventfd_sleep() {
    round_trips(8, scaled(50_000), Wait::Fd, false);
    round_trips(1, scaled(10_000), Wait::Fd, true);
}

#[test]
fn round_trips_with_yield() {
    round_trips(4, scaled(50_000), Wait::Yield, true);
}

#[test]
fn round_trips_with_spin() {
    round_trips(2, scaled(5_000), Wait::Spin, false);
}

#[test]
fn a_panic_stops_everyone_and_names_the_actor() {
    let mut r = ThreadedRunner::new(cfg()).unwrap();
    let (a, mut b) = ping_pong(2, 1_000, Wait::Fd, true);
    b.panic_on = Some(100);
    r.add(Toy::Pinger(a));
    r.add_daemon(Toy::Ponger(b));
    match r.run() {
        Err(RunError::ActorPanicked { actor, message, .. }) => {
            assert_eq!(actor, "ponger");
            assert_eq!(message, "ponger told to fail on 100");
        }
        other => panic!("expected a panic error, got {other:?}"),
    }
}

#[test]
fn external_stop_ends_a_daemon_only_run() {
    let mut r = ThreadedRunner::new(cfg()).unwrap();
    let (a, b) = ping_pong(2, u64::MAX, Wait::Fd, true);
    // Both as daemons: nothing ever finishes by itself.
    r.add_daemon(Toy::Pinger(a));
    r.add_daemon(Toy::Ponger(b));
    let stop = r.stop_handle();
    let running = r.start().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert!(!stop.is_stopped());
    stop.stop();
    let rep = running.join().unwrap();
    assert!(rep.stats.iter().all(|s| !s.finished));
    // They did talk before being stopped.
    assert!(rep.actors[0].pinger().received > 0);
    assert!(rep.actors[0].pinger().errors.is_empty());
}

/// Never finishes and never makes progress.
struct Stuck;

impl Actor for Stuck {
    fn name(&self) -> &str {
        "stuck"
    }
    fn poll(&mut self, _cx: &mut Cx<'_>) -> Progress {
        Progress::Idle
    }
}

#[test]
fn the_wall_bound_turns_a_hang_into_an_error() {
    let mut r: ThreadedRunner<Box<dyn Actor + Send>> = ThreadedRunner::new(ThreadedConfig {
        idle_timeout: Duration::from_millis(5),
        max_wall: Some(Duration::from_millis(100)),
    })
    .unwrap();
    r.add(Box::new(Stuck));
    match r.run() {
        Err(RunError::WallTimeout { after }) => assert_eq!(after, Duration::from_millis(100)),
        other => panic!("expected a wall timeout, got {other:?}"),
    }
}

#[test]
fn an_empty_runner_ends_at_once() {
    let r: ThreadedRunner<Box<dyn Actor + Send>> = ThreadedRunner::new(ThreadedConfig {
        idle_timeout: Duration::from_millis(5),
        max_wall: Some(Duration::from_secs(60)),
    })
    .unwrap();
    let rep = r.run().unwrap();
    assert!(rep.actors.is_empty());
}
