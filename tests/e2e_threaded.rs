//! The whole pipeline on threads (one per actor, one worker per core) over
//! real mappings: 10^5 executions on 4 cores (10^4 in debug builds).
//! Conservation, FIFO per XU, exactly-once completion, every output checked
//! against the CPU reference, and every counter exact in the slab as the
//! read-only reader sees it.

mod common;

use std::time::Duration;

use xunds::system::job::{self, JobConfig};

#[test]
fn hundred_thousand_executions_over_four_cores() {
    let n = if cfg!(debug_assertions) {
        10_000
    } else {
        100_000
    };
    let slab = common::slab("threaded");
    let cfg = JobConfig {
        executions: n,
        vncs: 4,
        models: 2,
        slab: Some(slab.clone()),
        record_tags: true,
        // Generous: a loaded CI machine must not turn a slow execution into
        // a timeout.
        timeout_ns: Some(10_000_000_000),
        max_wall: Some(Duration::from_secs(300)),
        ..JobConfig::default()
    };
    let r = job::run(&cfg, &mut |_, _| {}).unwrap();
    assert_eq!(r.completed_ok, n, "{r:#?}");
    assert_eq!(r.completed_err, 0);
    common::check_counters(&r, 32);
    // Exactly once: every execution's tag completed once, on one XU, and
    // each XU completed its tags in submission order (FIFO).
    let mut all: Vec<u64> = Vec::with_capacity(n as usize);
    for w in &r.workers {
        assert!(w.tags.windows(2).all(|p| p[0] < p[1]), "FIFO per XU");
        all.extend_from_slice(&w.tags);
    }
    all.sort_unstable();
    assert_eq!(all.len() as u64, n);
    assert!(all.iter().enumerate().all(|(i, &t)| t == i as u64));
    // Every core did its share.
    for (c, w) in r.workers.iter().enumerate() {
        assert!(
            w.completed > n / 8,
            "core {c} completed only {}",
            w.completed
        );
    }
    let _ = std::fs::remove_file(slab);
}
