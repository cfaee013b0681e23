//! Loom: the worker captures the slot (mark_comp_efd, efd_from_pool,
//! exec_info) before it advances exec_head (docs/abi.md §1.9 "consumer captures,
//! then advances"): the instant exec_head moves, the producer may reuse the
//! slot and write -1 / the next item over it. Capacity 1 with two items and
//! capacity 2 with three items (the last item reuses the first one's slot).
//! Every model here is a slot-reuse model (`reuse` in its name: `.ci/loom`
//! runs them at LOOM_MAX_PREEMPTIONS=3). Kills `advance_before_capture`.
#![cfg(loom)]

mod ring_support;

use std::time::Duration;

use loom::thread;
use ring_support::Registry;
use xunds::ring::{PopError, WaitMode, Waited, XuQueue};
use xunds::wire::status::NrtStatus;

/// Items 1..=cap are submitted and triggered up front; the producer thread
/// reuses slot 0 for item cap + 1 as soon as exec_head moves; the worker
/// (main thread) must still hand back every item in order. Two threads.
fn items(cap: u64) {
    ring_support::model(move || {
        let reg = Registry::new(1, 0);
        let (mut p, mut w) = XuQueue::<u64>::owned(reg.config(cap)).unwrap();
        for i in 0..cap {
            p.submit(100 + i, None).unwrap();
            p.trigger_next().unwrap();
        }
        let prod = thread::spawn(move || {
            while p.submit(100 + cap, None).is_err() {
                thread::yield_now();
            }
            p.trigger_next().unwrap();
        });
        for i in 0..=cap {
            loop {
                match w.pop(NrtStatus::SUCCESS) {
                    Ok(pp) => {
                        assert_eq!(pp.seq.seq_num(), i + 1);
                        assert_eq!(pp.item, 100 + i, "captured the item of this slot");
                        break;
                    }
                    Err(PopError::Empty) => {}
                    Err(e) => panic!("consistent slot: {e}"),
                }
                thread::yield_now();
            }
        }
        prod.join().unwrap();
    });
}

/// A waiter blocked on item 1 must be signalled even though the producer
/// overwrites mark_comp_efd with -1 for item cap + 1 (same slot) right after
/// exec_head moves. Three threads (producer = main, waiter, worker).
fn waiter(cap: u64) {
    ring_support::model(move || {
        let reg = Registry::new(1, 1);
        let (mut p, w) = XuQueue::<u64>::owned(reg.config(cap)).unwrap();
        let q = p.queue().clone();
        let s1 = p.submit(100, None).unwrap();
        p.trigger_next().unwrap();
        for i in 1..cap {
            p.submit(100 + i, None).unwrap();
            p.trigger_next().unwrap();
        }
        let ev = reg.event(0);
        let waiter = thread::spawn(move || {
            q.wait_on(s1, WaitMode::Block, &ev, Duration::from_secs(3600))
                .unwrap()
        });
        ring_support::submit_last_while_worker_drains(&mut p, w, cap);
        assert!(matches!(waiter.join().unwrap(), Waited::Completed { .. }));
        reg.assert_dups_closed_once();
    });
}

#[test]
fn capture_reuse_cap1_two_items() {
    items(1);
}

#[test]
fn capture_reuse_cap2_three_items() {
    items(2);
}

#[test]
fn capture_reuse_cap1_two_items_waiter() {
    waiter(1);
}

#[test]
fn capture_reuse_cap2_three_items_waiter() {
    waiter(2);
}
