//! Loom: the waiter install race (docs/abi.md §1.3, §1.9). A waiter that is
//! not yet complete installs its handle into the slot under the
//! mark-completion lock, re-checking completion under that lock; pop (and
//! pop_burst) captures under the same lock. Whatever the interleaving, the waiter
//! returns (no lost wake-up), each dup is closed exactly once, and a pooled
//! event is never closed. Kills `waiter_no_recheck` (the waiter installs
//! after pop already captured -1, then blocks forever: loom reports the
//! deadlock; or, once the slot is reused, finds the next item's seq_id there).
//!
//! `race`: one item, capacity 2 (the three waiting modes, two threads).
//! `reuse`: capacity 1 with two items and capacity 2 with three items; the
//! waiter waits on item 1 while the producer reuses its slot for the last
//! item, so an install can meet the slot of the next item (three threads).
//! The `reuse` models run at LOOM_MAX_PREEMPTIONS=3 in `.ci/loom`.
#![cfg(loom)]

mod ring_support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use loom::thread;
use ring_support::Registry;
use xunds::ring::{PopError, WaitMode, Waited, XuQueue};
use xunds::wire::status::NrtStatus;

const LONG: Duration = Duration::from_secs(3600);

fn check_pool(reg: &Registry, q_counts: (usize, usize)) {
    assert_eq!(
        reg.worker_closes.load(Ordering::Relaxed),
        0,
        "pooled events are never closed"
    );
    assert_eq!(
        q_counts,
        (reg.pool_made(), 0),
        "a taken event is back in the pool, its signal consumed"
    );
}

fn race(pooled: bool, mode: WaitMode) {
    race_with(pooled, mode, false);
}

/// The same race with the worker popping through `pop_burst`, whose capture
/// of `mark_comp_efd` is skipped while no handle is installed anywhere.
fn race_with(pooled: bool, mode: WaitMode, burst: bool) {
    ring_support::model(move || {
        let reg = Registry::new(2, 1);
        let (mut p, mut w) = XuQueue::<u64>::owned(reg.config(2)).unwrap();
        let q = p.queue().clone();
        let s = p.submit(7, None).unwrap();
        p.trigger_next().unwrap();
        let worker = thread::spawn(move || loop {
            if burst {
                let mut signal = None;
                let n = w
                    .pop_burst(4, |_| NrtStatus::SUCCESS, |pp| signal = Some(pp.signal))
                    .unwrap();
                if n == 1 {
                    return signal.unwrap();
                }
            } else {
                match w.pop(NrtStatus::SUCCESS) {
                    Ok(pp) => return pp.signal,
                    Err(PopError::Empty) => {}
                    Err(e) => panic!("{e}"),
                }
            }
            thread::yield_now();
        });
        let r = if pooled {
            q.wait(s, mode, LONG).unwrap()
        } else {
            q.wait_on(s, mode, &reg.event(0), LONG).unwrap()
        };
        assert!(matches!(r, Waited::Completed { .. }), "{r:?}");
        let _signal = worker.join().unwrap();
        assert!(q.is_completed(s).unwrap());
        reg.assert_dups_closed_once();
        if pooled {
            check_pool(&reg, q.pool_counts());
        }
    });
}

/// Items 1..=cap are submitted and triggered up front; a waiter thread waits
/// on item 1 (Block); the worker pops all cap + 1 items; the producer (main)
/// submits item cap + 1 into item 1's slot as soon as it frees. The waiter
/// must return Completed (never a lost wake-up, never `SlotMismatch` from
/// installing into the reused slot). Three threads.
fn reuse(cap: u64, pooled: bool) {
    ring_support::model(move || {
        let reg = Registry::new(2, 1);
        let (mut p, w) = XuQueue::<u64>::owned(reg.config(cap)).unwrap();
        let q = p.queue().clone();
        let s1 = p.submit(100, None).unwrap();
        p.trigger_next().unwrap();
        for i in 1..cap {
            p.submit(100 + i, None).unwrap();
            p.trigger_next().unwrap();
        }
        let (q2, r2) = (q.clone(), reg.clone());
        let waiter = thread::spawn(move || {
            if pooled {
                q2.wait(s1, WaitMode::Block, LONG).unwrap()
            } else {
                q2.wait_on(s1, WaitMode::Block, &r2.event(0), LONG).unwrap()
            }
        });
        ring_support::submit_last_while_worker_drains(&mut p, w, cap);
        let r = waiter.join().unwrap();
        assert!(matches!(r, Waited::Completed { .. }), "{r:?}");
        assert!(q.is_completed(s1).unwrap());
        reg.assert_dups_closed_once();
        if pooled {
            check_pool(&reg, q.pool_counts());
        }
    });
}

#[test]
fn waiter_race_caller_fd_block() {
    race(false, WaitMode::Block);
}

#[test]
fn waiter_race_pooled_block() {
    race(true, WaitMode::Block);
}

#[test]
fn waiter_race_caller_fd_spin_then_block() {
    // A zero budget spins exactly one round (one re-check), then blocks: a
    // spin whose length depends on the wall clock would not be a bounded
    // model.
    race(
        false,
        WaitMode::SpinThenBlock {
            max: Duration::ZERO,
        },
    );
}

#[test]
fn waiter_reuse_cap1_two_items_caller_fd() {
    reuse(1, false);
}

#[test]
fn waiter_reuse_cap1_two_items_pooled() {
    reuse(1, true);
}

#[test]
fn waiter_reuse_cap2_three_items_caller_fd() {
    reuse(2, false);
}

#[test]
fn waiter_race_caller_fd_block_burst() {
    race_with(false, WaitMode::Block, true);
}

#[test]
fn waiter_race_pooled_block_burst() {
    race_with(true, WaitMode::Block, true);
}
