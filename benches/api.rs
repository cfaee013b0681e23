//! `api_execute`: the synchronous public API's latency. `System::execute`
//! (schedule, then `System::wait`) on one core with the example MLP, with
//! the default wait (spin up to `SystemConfig::wait_spin`, then block on an
//! eventfd) and with a wait that blocks at once (`wait_spin` zero), the two
//! taking turns rep by rep; the peer is a raw eventfd ping-pong between two
//! threads (`n / 2` round trips, timed per round trip: two blocked wake-ups),
//! what blocking costs on this host.
//!
//! `XUNDS_API_N` sets the calls per rep (default 20 000, at least 2),
//! `XUNDS_API_REPS` the reps (default 3, at least 1); each row is the rep
//! with the lowest mean.

use std::sync::Arc;
use std::time::{Duration, Instant};

use xunds::hal::eventfd::{EventFd, Wait};
use xunds::hal::linux::LinuxHal;
use xunds::system::{MlpSpec, System, SystemConfig};
use xunds::NrtStatus;

use crate::harness::{env_or, ratio, two_threads};

/// One rep: `n` calls of `execute` on a fresh system whose wait spins up to
/// `spin`. Returns (mean, p50, p99) per call.
fn execute_rep(n: usize, spin: Duration) -> (Duration, Duration, Duration) {
    let mut cfg = SystemConfig::new(1);
    cfg.wait_spin = spin;
    let sys = System::start(LinuxHal::new(), cfg).expect("system");
    let spec = MlpSpec::EXAMPLE;
    let model = sys.load_mlp(&spec, "mlp").expect("model");
    let input = spec.example_input(1);
    let call = || {
        let e = sys
            .execute(0, &model, &input, Duration::from_secs(10))
            .expect("execute");
        assert_eq!(e.status, NrtStatus::SUCCESS);
    };
    for _ in 0..n / 10 {
        call();
    }
    let mut lat = Vec::with_capacity(n);
    let t = Instant::now();
    for _ in 0..n {
        let s = Instant::now();
        call();
        lat.push(s.elapsed());
    }
    let mean = t.elapsed() / n as u32;
    lat.sort_unstable();
    (mean, lat[n / 2], lat[(n * 99).div_ceil(100) - 1])
}

/// `m` round trips of two threads on CPU 0 and CPU 1 that each block on
/// their own eventfd until the other signals it. Mean per round trip.
fn eventfd_ping_pong(m: u64) -> Duration {
    let (a, b) = (
        Arc::new(EventFd::new().expect("eventfd")),
        Arc::new(EventFd::new().expect("eventfd")),
    );
    let (a2, b2) = (a.clone(), b.clone());
    let far = Duration::from_secs(10);
    let d = two_threads(
        move || {
            for _ in 0..m {
                a.signal(1).expect("signal");
                assert!(matches!(b.wait(far), Ok(Wait::Signalled(_))));
            }
        },
        move || {
            for _ in 0..m {
                assert!(matches!(a2.wait(far), Ok(Wait::Signalled(_))));
                b2.signal(1).expect("signal");
            }
        },
    );
    d / m as u32
}

pub fn execute() {
    let n = env_or::<usize>("XUNDS_API_N", 20_000).max(2);
    let reps = env_or::<u64>("XUNDS_API_REPS", 3).max(1);
    let spin = SystemConfig::new(1).wait_spin;
    println!(
        "  {n} calls of System::execute per rep, 1 core, example MLP, best of {reps} (by mean)"
    );
    let mut best = [(Duration::MAX, Duration::ZERO, Duration::ZERO); 2];
    for _ in 0..reps {
        for (b, s) in best.iter_mut().zip([spin, Duration::ZERO]) {
            let r = execute_rep(n, s);
            if r.0 < b.0 {
                *b = r;
            }
        }
    }
    let pp = (0..reps)
        .map(|_| eventfd_ping_pong(n as u64 / 2))
        .min()
        .unwrap_or_default();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    for ((mean, p50, p99), name) in best.iter().zip([
        format!("execute, spin up to {} us then block", spin.as_micros()),
        "execute, block at once (wait_spin 0)".to_string(),
    ]) {
        println!(
            "  {name:<44} mean {:>7.1} us  p50 {:>7.1} us  p99 {:>7.1} us",
            us(*mean),
            us(*p50),
            us(*p99)
        );
    }
    println!(
        "  {:<44} mean {:>7.1} us",
        "raw eventfd ping-pong, blocking both ways",
        us(pp)
    );
    ratio(
        "execute, spin vs block at once (mean time)",
        best[0].0,
        best[1].0,
        "informational",
    );
    ratio(
        "execute (default) vs eventfd ping-pong",
        best[0].0,
        pp,
        "informational",
    );
}
