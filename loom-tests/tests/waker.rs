//! Loom model of the actor wake-up handshake (`xunds::actors::wake::Waker`):
//! an actor that found no work announces it sleeps
//! ([`Waker::prepare_sleep`]), looks for work once more, and only then sleeps;
//! whoever publishes work calls [`Waker::wake`], which writes the eventfd only
//! when the sleep flag is set. The property is "no lost wake-up": work
//! published before or concurrently with the sleeper's decision to sleep is
//! either seen by its second look, or followed by a signal.
//!
//! Under `--cfg loom` the eventfd write is mirrored by a `loom::sync::Notify`
//! and [`Waker::wait_signal`] blocks on it (see the `wake` module docs), so a
//! lost wake-up shows as a loom deadlock (the sleeper waits for a signal
//! nobody will send) in `sleeps_until_all_work_seen`, and as the assertion
//! "lost wake-up" in `one_message_is_seen_or_signalled`.
//!
//! The mutant `xunds_mutant="waker_no_fence"` (no SeqCst fence between the
//! publish and the flag load in `wake`) must make these models fail
//! (`.ci/loom` checks that it does).
#![cfg(loom)]

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use xunds::actors::wake::Waker;

/// The sleeper's two looks, as the actors' `poll` does them: look; nothing:
/// `prepare_sleep`, look again; nothing: sleep. Returns the work count seen,
/// or `None` when it decided to sleep.
fn poll_once(w: &Waker, work: &AtomicUsize, seen: usize) -> Option<usize> {
    w.awake();
    // Ordering: Acquire; pairs with the publisher's Release store (the work
    // itself; the Waker adds no ordering for the payload). The handshake is
    // ours: docs/abi.md §1.9 wakes the worker with a has_work_efd write.
    let n = work.load(Ordering::Acquire);
    if n > seen {
        return Some(n);
    }
    w.prepare_sleep();
    // Ordering: Acquire; as above (the second look, after the SeqCst fence
    // in `Waker::prepare_sleep`; docs/abi.md §1.9 has_work_efd).
    let n = work.load(Ordering::Acquire);
    if n > seen {
        w.awake();
        return Some(n);
    }
    None
}

/// One message, one publisher, one sleeper that looks twice and then
/// decides: if it sleeps, the publisher's `wake` must have signalled.
#[test]
fn one_message_is_seen_or_signalled() {
    loom::model(|| {
        let w = Arc::new(Waker::new().unwrap());
        let work = Arc::new(AtomicUsize::new(0));
        let publisher = {
            let (w, work) = (w.clone(), work.clone());
            thread::spawn(move || {
                // Ordering: Release; pairs with the sleeper's Acquire loads
                // in `poll_once` (docs/abi.md §1.9: work before the wake-up).
                work.store(1, Ordering::Release);
                w.wake()
            })
        };
        let slept = poll_once(&w, &work, 0).is_none();
        let signalled = publisher.join().unwrap();
        if slept {
            assert!(
                signalled && w.signals() == 1,
                "lost wake-up: the sleeper slept and wake() did not signal"
            );
        }
    });
}

/// Two messages published one after the other, each followed by `wake`;
/// the sleeper loops (poll; on `None` block in `wait_signal`) until it has
/// seen both. A lost wake-up leaves it blocked forever: loom reports a
/// deadlock. Repeated sleeps exercise a stale flag from an earlier round.
#[test]
fn sleeps_until_all_work_seen() {
    const N: usize = 2;
    loom::model(|| {
        let w = Arc::new(Waker::new().unwrap());
        let work = Arc::new(AtomicUsize::new(0));
        let publisher = {
            let (w, work) = (w.clone(), work.clone());
            thread::spawn(move || {
                for i in 1..=N {
                    // Ordering: Release; pairs with the sleeper's Acquire loads
                    // in `poll_once` (docs/abi.md §1.9: work before the wake-up).
                    work.store(i, Ordering::Release);
                    w.wake();
                }
            })
        };
        let mut seen = 0;
        while seen < N {
            match poll_once(&w, &work, seen) {
                Some(n) => seen = n,
                None => w.wait_signal(),
            }
        }
        publisher.join().unwrap();
        assert!(w.signals() <= N as u64, "at most one signal per wake");
    });
}
