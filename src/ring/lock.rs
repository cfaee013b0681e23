//! The mark-completion lock (`mark_comp_lock`, seed 000 §1 QUIRK, §6): a tiny
//! spin lock that serialises a waiter's install of `mark_comp_efd` with the
//! worker's capture-then-advance in pop.
//!
//! It lives beside the queue, never in the ABI header (the C lock is part of
//! the XU object, not of `xu_queue_t`). A spin lock rather than a futex mutex
//! because pop takes it once per execution and the critical sections are a
//! handful of loads and stores: uncontended it costs one compare-exchange and a
//! plain store. Contended holders are short, so the spinner backs off with
//! `yield_now` after a few rounds (and under loom `spin_hint` is a yield).

use crate::sync::atomic::{AtomicBool, Ordering};

/// The lock word.
#[derive(Debug)]
pub(crate) struct MarkCompLock {
    locked: AtomicBool,
}

/// Held while alive.
pub(crate) struct Guard<'a> {
    lock: &'a MarkCompLock,
}

impl MarkCompLock {
    pub(crate) fn new() -> Self {
        MarkCompLock {
            locked: AtomicBool::new(false),
        }
    }

    #[inline]
    pub(crate) fn lock(&self) -> Guard<'_> {
        let mut spins = 0u32;
        loop {
            // Ordering: Acquire on success; pairs with the Release in
            // `Guard::drop`, so the previous holder's slot writes (install /
            // capture) and its exec_head advance are visible inside this
            // critical section. A failed CAS writes nothing (unlike `swap`),
            // so spinners never reorder against the unlock store.
            if self
                .locked
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return Guard { lock: self };
            }
            // Back off: a few spin hints, then yields.
            spins += 1;
            if spins < 64 {
                crate::sync::spin_hint();
            } else {
                crate::sync::thread::yield_now();
            }
        }
    }
}

impl Drop for Guard<'_> {
    #[inline]
    fn drop(&mut self) {
        // Ordering: Release; pairs with the Acquire swap in `lock`.
        self.lock.locked.store(false, Ordering::Release);
    }
}
