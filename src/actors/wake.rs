//! [`Waker`]: an eventfd an actor sleeps on, plus a "going to sleep" flag so
//! whoever hands it work writes the eventfd only when the actor may really
//! be asleep (one system call per sleep, not one per message).
//!
//! The protocol is the store-buffering (Dekker) shape, closed by two SeqCst
//! fences:
//!
//! | side | steps |
//! |---|---|
//! | sleeper (the actor, inside `poll`) | found nothing; [`Waker::prepare_sleep`] (flag := true, fence); look for work **again**; nothing: return `Idle` (the runner sleeps on [`Waker::fd`]); work: [`Waker::awake`] and do it |
//! | waker (any thread, after publishing the work with a Release store) | [`Waker::wake`]: fence; if the flag is set, clear it and write the eventfd |
//!
//! Either the sleeper's second look sees the work, or the waker's flag load
//! sees `true` (the two fences are totally ordered, so both loads cannot
//! read the old values): no lost wake-up. A spurious write only costs one
//! extra poll; the threaded runner bounds every sleep anyway
//! (`ThreadedConfig::idle_timeout`). The runner resets the eventfd after a
//! wake-up; the actor itself never reads it.
//!
//! # Loom
//!
//! The flag and the statistics counter are [`crate::sync`] atomics, so a
//! `--cfg loom` build checks the handshake (`loom-tests/tests/waker.rs`).
//! Loom cannot see an eventfd, so under `cfg(loom)` only, `wake` also
//! notifies a `loom::sync::Notify` right after the eventfd write and
//! `Waker::wait_signal` blocks on it: a lost wake-up is then a loom
//! deadlock. A normal build has no such field; its behaviour is unchanged.
//! The mutant `cfg(xunds_mutant = "waker_no_fence")` drops the waker-side
//! SeqCst fence (the half of the Dekker pair the argument needs from the
//! publisher); the model must fail with it (`.ci/loom` checks that it does).

use std::io;
use std::os::fd::RawFd;

use crate::hal::eventfd::EventFd;
use crate::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};

/// An actor's wake-up eventfd with a sleeping flag. On its own cache line:
/// the sleeper and every waker touch the flag, and a neighbour's hot word
/// sharing the line would make each of them pay for the other's stores.
#[derive(Debug)]
#[repr(align(64))]
pub struct Waker {
    efd: EventFd,
    sleeping: AtomicBool,
    signals: AtomicU64,
    /// Loom's view of the eventfd write (see the module docs, "Loom").
    #[cfg(loom)]
    notify: loom::sync::Notify,
}

impl Waker {
    /// A waker with a fresh non-blocking eventfd.
    pub fn new() -> io::Result<Waker> {
        Ok(Waker {
            efd: EventFd::new()?,
            sleeping: AtomicBool::new(false),
            signals: AtomicU64::new(0),
            #[cfg(loom)]
            notify: loom::sync::Notify::new(),
        })
    }

    /// The eventfd the runner sleeps on (`Idle::Fd`).
    pub fn fd(&self) -> RawFd {
        self.efd.raw()
    }

    /// The sleeper announces it is about to sleep. It must look for work
    /// once more after this call.
    #[inline]
    pub fn prepare_sleep(&self) {
        self.sleeping.store(true, Ordering::Relaxed);
        // Ordering: SeqCst fence between the flag store and the sleeper's
        // second look for work; pairs with the fence in `wake` (Dekker).
        fence(Ordering::SeqCst);
    }

    /// The sleeper is awake (found work, or starts a poll). Stores only when
    /// the flag is set: actors call this at the start of every poll, and an
    /// unconditional store would take the flag's line from the wakers (who
    /// load it after every hand-off) once per poll.
    #[inline]
    pub fn awake(&self) {
        if self.sleeping.load(Ordering::Relaxed) {
            self.sleeping.store(false, Ordering::Relaxed);
        }
    }

    /// After publishing work: write the eventfd if the sleeper may be asleep.
    /// Returns whether it wrote.
    #[inline]
    pub fn wake(&self) -> bool {
        // Ordering: SeqCst fence between the caller's publish of the work and
        // the flag load; pairs with the fence in `prepare_sleep` (Dekker).
        #[cfg(not(xunds_mutant = "waker_no_fence"))]
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::Relaxed) && self.sleeping.swap(false, Ordering::Relaxed) {
            self.signals.fetch_add(1, Ordering::Relaxed);
            // A failed write (counter overflow, impossible for +1 here) costs
            // at most one idle timeout: the runner re-polls anyway.
            let _ = self.efd.signal(1);
            #[cfg(loom)]
            self.notify.notify();
            return true;
        }
        false
    }

    /// Loom only: block until a `wake` signals (what the runner's sleep on
    /// [`Waker::fd`] does). A signal nobody waited for is kept, like the
    /// eventfd counter, and ends the next wait at once.
    #[cfg(loom)]
    pub fn wait_signal(&self) {
        self.notify.wait();
    }

    /// How many eventfd writes `wake` made (statistics).
    pub fn signals(&self) -> u64 {
        self.signals.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wakes_only_a_sleeper() {
        let w = Waker::new().unwrap();
        assert!(!w.wake());
        w.prepare_sleep();
        assert!(w.wake());
        assert_eq!(w.efd.try_read().unwrap(), 1);
        assert!(!w.wake(), "the flag is cleared by the first wake");
        w.prepare_sleep();
        w.awake();
        assert!(!w.wake());
        assert_eq!(w.signals(), 1);
    }
}
