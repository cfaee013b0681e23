//! Loom: the waiter install race (seed 000 §1 QUIRK, §6). A waiter that is
//! not yet complete installs its handle into the slot under the
//! mark-completion lock, re-checking completion under that lock; pop (and
//! pop_burst) captures under the same lock. Whatever the interleaving, the waiter
//! returns (no lost wake-up), each dup is closed exactly once, and a pooled
//! event is never closed. Kills `waiter_no_recheck` (the waiter installs
//! after pop already captured -1, then blocks forever: loom reports the
//! deadlock).
#![cfg(loom)]

mod ring_support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use loom::thread;
use ring_support::Registry;
use xunds::ring::{OwnedStorage, WaitMode, Waited, XuQueue};
use xunds::wire::status::NrtStatus;

const LONG: Duration = Duration::from_secs(3600);

fn race(pooled: bool, mode: WaitMode) {
    race_with(pooled, mode, false);
}

/// The same race with the worker popping through `pop_burst`, whose capture
/// of `mark_comp_efd` is skipped while no handle is installed anywhere.
fn race_with(pooled: bool, mode: WaitMode, burst: bool) {
    ring_support::model(move || {
        let reg = Registry::new(2, 1);
        let (mut p, mut w) = XuQueue::<u64, OwnedStorage>::owned(reg.config(2)).unwrap();
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
            } else if let Some(pp) = w.pop(NrtStatus::SUCCESS).unwrap() {
                return pp.signal;
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
            assert_eq!(
                reg.worker_closes.load(Ordering::Relaxed),
                0,
                "pooled events are never closed"
            );
            assert_eq!(
                q.pool_counts(),
                (reg.pool_made(), 0),
                "a taken event is back in the pool, its signal consumed"
            );
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
    race(false, WaitMode::SpinThenBlock { spins: 1 });
}

#[test]
fn waiter_race_caller_fd_block_burst() {
    race_with(false, WaitMode::Block, true);
}

#[test]
fn waiter_race_pooled_block_burst() {
    race_with(true, WaitMode::Block, true);
}
