//! Shared benchmark helpers: timing, thread pinning, ratio rows.

#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Pin the calling thread to `cpu` (best effort; ignored where not allowed).
pub fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes inside it;
    // sched_setaffinity reads it. Failure is ignored (best effort).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu % libc::CPU_SETSIZE as usize, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// The environment variable `name` parsed as a `T`, or `default` when it is
/// unset or does not parse (every group's size and rep knobs).
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Number of CPUs this process may use.
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Run `f` `reps` times and return the best (minimum) wall time.
pub fn best_of(reps: usize, mut f: impl FnMut() -> Duration) -> Duration {
    (0..reps).map(|_| f()).min().unwrap_or_default()
}

/// Time one call of `f`.
pub fn time(f: impl FnOnce()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

/// Print one row: name, per-op time, ops/s.
pub fn row(name: &str, ops: u64, d: Duration) {
    let ns = d.as_nanos() as f64 / ops.max(1) as f64;
    let mops = ops as f64 / d.as_secs_f64() / 1e6;
    println!("  {name:<44} {ns:>9.2} ns/op {mops:>9.2} Mop/s");
}

/// Print a ratio line: `ours` against `peer` as peer_time / our_time
/// (> 1.0 means ours is faster) and the target it is held to.
pub fn ratio(label: &str, ours: Duration, peer: Duration, target: &str) -> f64 {
    let r = peer.as_secs_f64() / ours.as_secs_f64();
    println!("  RATIO {label:<40} {r:>6.2}x  (target {target})");
    r
}

/// The host the numbers come from: the CPU model string, its family and
/// model (from `/proc/cpuinfo`; "unknown" elsewhere) and the CPUs this
/// process may use. Ratios depend on the host (cache-line transfer costs
/// differ between CPU families), so every group prints this above them.
pub fn host() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        info.lines()
            .find(|l| l.split(':').next().map(str::trim) == Some(name))
            .and_then(|l| l.split_once(':'))
            .map_or_else(|| "unknown".to_string(), |(_, v)| v.trim().to_string())
    };
    format!(
        "{} (family {}, model {}), {} CPUs",
        field("model name"),
        field("cpu family"),
        field("model"),
        cpus()
    )
}

/// Load average over the last minute (`/proc/loadavg`), to print next to
/// the numbers: on a shared machine the load says how much to trust them.
pub fn load1() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string())
}

/// Run `prod` on CPU 0 and `cons` on CPU 1; time from the first thread
/// leaving the start barrier to the last one finishing. The clocks are read
/// inside the two threads: on 2 cores a third (main) thread reading them
/// could be descheduled while both run.
pub fn two_threads(
    prod: impl FnOnce() + Send + 'static,
    cons: impl FnOnce() + Send + 'static,
) -> Duration {
    let go = Arc::new(std::sync::Barrier::new(2));
    let g2 = go.clone();
    let a = thread::spawn(move || {
        pin(0);
        go.wait();
        let t = Instant::now();
        prod();
        (t, Instant::now())
    });
    let b = thread::spawn(move || {
        pin(1);
        g2.wait();
        let t = Instant::now();
        cons();
        (t, Instant::now())
    });
    let (s1, e1) = a.join().unwrap();
    let (s2, e2) = b.join().unwrap();
    e1.max(e2) - s1.min(s2)
}

/// `m` round trips of a bare atomic ping-pong between CPU 0 and CPU 1:
/// each side waits for the other's value, then stores its own (the least a
/// hand-off each way needs).
pub fn ping_pong(m: u64) -> Duration {
    let ping = Arc::new(AtomicU64::new(0));
    let pong = Arc::new(AtomicU64::new(0));
    let (a, b) = (ping.clone(), pong.clone());
    two_threads(
        move || {
            for i in 1..=m {
                // Ordering: Release/Acquire pair with the other thread's
                // Acquire load / Release store.
                a.store(i, Ordering::Release);
                while b.load(Ordering::Acquire) != i {
                    std::hint::spin_loop();
                }
            }
        },
        move || {
            for i in 1..=m {
                // Ordering: pairs with the first thread's Release / Acquire.
                while ping.load(Ordering::Acquire) != i {
                    std::hint::spin_loop();
                }
                pong.store(i, Ordering::Release);
            }
        },
    )
}

/// What one cache-line round trip between CPU 0 and CPU 1 costs now: the
/// best of 3 [`ping_pong`]s of 20,000 round trips, in ns. The same CPU
/// model can read 100 ns (two vCPUs that share a cache) or 350 ns (two that
/// do not: a hypervisor moved one), and every cross-thread ratio follows
/// it, so every group prints it next to the host.
pub fn line_round_trip_ns() -> f64 {
    const M: u64 = 20_000;
    best_of(3, || ping_pong(M)).as_nanos() as f64 / M as f64
}

/// Measure the round trip again after a group and print it. A hypervisor
/// can move a vCPU mid-group (the same host reads 30-60, ~100 and 320-470
/// ns); when the two readings differ by more than 1.5x the group's
/// cross-thread rows may each have been taken on a different kind of pair,
/// and the line says so.
pub fn pair_after(before: f64) {
    let after = line_round_trip_ns();
    let moved = after > 1.5 * before || before > 1.5 * after;
    println!(
        "  CPU 0 <-> 1 line round trip at the end: {after:.0} ns{}",
        if moved {
            " (the pair changed during this group: its two-thread rows may mix kinds of pair)"
        } else {
            ""
        }
    );
}
