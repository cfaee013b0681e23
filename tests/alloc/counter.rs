//! `CountingAlloc` installed as this test binary's global allocator: it
//! counts, it counts per thread, and the groundwork's steady state (mailbox
//! push/pop, a deterministic runner step, an enabled trace) makes no heap
//! allocation.

use crate::counting_alloc;
use crate::runner_toys;

use counting_alloc::{
    count_thread, is_active, thread_stats, AllocScope, AllocStats, CountingAlloc,
};
use runner_toys::{ping_pong, Toy, Wait};
use std::alloc::{GlobalAlloc, Layout};
use xunds::actors::mailbox;
use xunds::actors::{Nanos, NullTrace, TraceEvent, TraceSink};
use xunds::system::runner::{DetConfig, DetRunner, Step};
use xunds::system::trace::{Trace, TraceHeader};

use crate::ALLOC;

#[test]
fn it_is_installed_and_counts() {
    assert!(is_active());
    let before = ALLOC.stats();
    let (v, used) = count_thread(|| std::hint::black_box(vec![7u8; 1000]));
    assert_eq!(v.len(), 1000);
    assert_eq!(used.allocs, 1);
    assert!(used.bytes >= 1000);
    drop(v);
    let after = ALLOC.stats();
    assert!(after.allocs > before.allocs);
    assert!(after.deallocs > before.deallocs);
}

#[test]
fn growth_is_counted_as_reallocation() {
    let scope = AllocScope::begin();
    let mut v: Vec<u64> = Vec::with_capacity(1);
    for i in 0..100 {
        v.push(std::hint::black_box(i));
    }
    let used = scope.end();
    assert_eq!(used.allocs, 1);
    assert!(used.reallocs >= 1);
    assert!(used.allocations() >= 2);
    assert!(used.bytes >= 800);
}

#[test]
fn pure_computation_allocates_nothing() {
    let (x, used) = count_thread(|| (0..1000u64).map(std::hint::black_box).sum::<u64>());
    assert_eq!(x, 499_500);
    assert_eq!(used.allocations(), 0);
}

#[test]
fn other_threads_do_not_leak_into_this_threads_scope() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let (s2, d2) = (stop.clone(), done.clone());
    let noisy = std::thread::spawn(move || {
        while !s2.load(Ordering::Relaxed) {
            std::hint::black_box(vec![1u8; 64]);
            d2.fetch_add(1, Ordering::Relaxed);
        }
    });
    while done.load(Ordering::Relaxed) == 0 {
        std::thread::yield_now();
    }
    let start = thread_stats();
    let ((), used) = count_thread(|| {
        // Measure while the other thread allocates a thousand times more.
        let from = done.load(Ordering::Relaxed);
        while done.load(Ordering::Relaxed) < from + 1000 {
            std::hint::spin_loop();
        }
    });
    stop.store(true, Ordering::Relaxed);
    noisy.join().unwrap();
    assert_eq!(used.allocations(), 0);
    assert_eq!(thread_stats().since(&start).allocs, 0);
}

#[test]
fn mailbox_steady_state_allocates_nothing() {
    let (mut tx, mut rx) = mailbox::bounded::<[u64; 4]>(8);
    let ((), used) = count_thread(|| {
        for i in 0..10_000u64 {
            tx.push([i; 4]).unwrap();
            if i % 3 == 0 {
                rx.drain(8, |v| assert!(v[0] < 10_000));
            }
            if tx.is_full() {
                assert!(rx.pop().is_some());
            }
        }
    });
    assert_eq!(used.allocations(), 0);
}

/// Run a ping-pong for `warmup` steps, then count the next `steps`.
fn det_steps_allocations(trace: &mut dyn TraceSink, warmup: u64, steps: u64) -> u64 {
    let mut r = DetRunner::new(DetConfig::new(21));
    let (a, b) = ping_pong(4, u64::MAX, Wait::Yield, false);
    r.add(Toy::Pinger(a));
    r.add(Toy::Ponger(b));
    for _ in 0..warmup {
        assert_ne!(r.step(trace).unwrap(), Step::Done);
    }
    let ((), used) = count_thread(|| {
        for _ in 0..steps {
            assert_ne!(r.step(trace).unwrap(), Step::Done);
        }
    });
    used.allocations()
}

#[test]
fn det_runner_steps_allocate_nothing_without_a_trace() {
    assert_eq!(det_steps_allocations(&mut NullTrace, 100, 10_000), 0);
}

#[test]
fn an_enabled_trace_allocates_nothing_per_event() {
    let header = TraceHeader::new(21, "toy=ping_pong");
    // Digest-only: the line buffer is preallocated.
    let mut t = Trace::digest_only(&header);
    assert_eq!(det_steps_allocations(&mut t, 100, 10_000), 0);
    assert!(t.lines() > 10_000);
    // In memory with enough room reserved up front.
    let mut t = Trace::in_memory(&header, 4 << 20);
    assert_eq!(det_steps_allocations(&mut t, 100, 10_000), 0);
    // A stream through a writer with a fixed buffer.
    let mut t = Trace::to_writer(&header, std::io::sink());
    assert_eq!(det_steps_allocations(&mut t, 100, 10_000), 0);
    // A single long event grows the line buffer once, then it is reused.
    let mut t = Trace::digest_only(&header);
    let long = "x".repeat(1000);
    t.begin(Nanos(0), "a");
    t.record(TraceEvent {
        kind: "msg",
        text: &long,
    });
    let ((), used) = count_thread(|| {
        for i in 0..1000 {
            t.begin(Nanos(i), "a");
            t.record(TraceEvent {
                kind: "msg",
                text: &long,
            });
        }
    });
    assert_eq!(used.allocations(), 0);
}

// The counter itself (moved here with it from the library).
#[test]
fn stats_arithmetic() {
    let a = AllocStats {
        allocs: 5,
        reallocs: 2,
        deallocs: 4,
        bytes: 100,
    };
    let b = AllocStats {
        allocs: 2,
        reallocs: 2,
        deallocs: 1,
        bytes: 40,
    };
    assert_eq!(a.allocations(), 7);
    assert_eq!(
        a.since(&b),
        AllocStats {
            allocs: 3,
            reallocs: 0,
            deallocs: 3,
            bytes: 60
        }
    );
    assert_eq!(b.since(&a).allocs, 0);
}

#[test]
fn a_local_instance_counts_its_own_calls() {
    // Not installed globally here: call it directly.
    let a = CountingAlloc::new();
    let layout = Layout::from_size_align(24, 8).unwrap();
    // SAFETY: a valid non-zero layout; the block is reallocated and
    // freed through the same allocator with matching layouts.
    unsafe {
        let p = a.alloc(layout);
        assert!(!p.is_null());
        let q = a.realloc(p, layout, 48);
        assert!(!q.is_null());
        a.dealloc(q, Layout::from_size_align(48, 8).unwrap());
    }
    assert_eq!(
        a.stats(),
        AllocStats {
            allocs: 1,
            reallocs: 1,
            deallocs: 1,
            bytes: 48
        }
    );
    assert!(is_active());
}
