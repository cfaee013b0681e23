//! The mark-completion lock (`mark_comp_lock`, docs/abi.md §1.3, §1.9): it
//! serialises a waiter's re-check-and-install of `mark_comp_efd` with the
//! worker's capture-then-advance in pop.
//!
//! It lives beside the queue, never in the ABI header (the C lock is part of
//! the XU object, not of `xu_queue_t`). Pop takes it once per execution and
//! waiters take it rarely, so it is a **biased** (asymmetric Dekker) lock:
//!
//! - The worker (pop side) enters by storing `worker_busy = true`, a *light*
//!   fence, and loading `waiters`. If no waiter wants the lock it is in: two
//!   plain stores and a load, no locked instruction. If a waiter is around it
//!   backs out and queues on the `slow` compare-exchange lock like a waiter.
//! - A waiter announces itself (`waiters += 1`), issues a *heavy* fence, takes
//!   `slow`, then waits until `worker_busy` is false.
//!
//! Dekker's argument: the worker stores `worker_busy` then loads `waiters`;
//! the waiter stores `waiters` then loads `worker_busy`, each with a fence in
//! between, so at least one of them sees the other. With `membarrier(2)`
//! (`MEMBARRIER_CMD_PRIVATE_EXPEDITED`) the heavy fence forces a full barrier
//! on every running thread of the process, which lets the light fence be a
//! compiler fence only. Where membarrier is unavailable (and under loom) both
//! fences are `fence(SeqCst)`.

#[cfg(feature = "std")]
use crate::hal::os::membarrier;
use crate::sync::atomic::{fence, AtomicBool, AtomicU32, Ordering};

/// One value on its own cache line (the worker writes `worker_busy` on every
/// pop; it must not share a line with what the producer or waiters write).
#[derive(Debug)]
#[repr(align(64))]
struct Padded<T>(T);

/// The line the worker reads on every entry: the waiter count it must see
/// (Dekker) and, beside it, how many slots hold an installed handle.
#[derive(Debug)]
struct WaiterLine {
    /// Waiters that want or hold the lock.
    count: AtomicU32,
    /// Slots whose `mark_comp_efd` holds a handle a waiter installed and the
    /// worker has not captured yet. Changed only while holding the lock
    /// (install +1, uninstall -1, capture -k), so a holder reads the exact
    /// value; 0 means every triggered slot's `mark_comp_efd` is -1 and the
    /// worker's capture of it may be skipped.
    installed: AtomicU32,
}

/// The lock.
#[derive(Debug)]
pub(crate) struct MarkCompLock {
    /// The worker is inside its fast-path critical section.
    worker_busy: Padded<AtomicBool>,
    /// Waiters that want or hold the lock, and the installed-handle count.
    waiters: Padded<WaiterLine>,
    /// The compare-exchange lock waiters (and a worker that met one) share.
    slow: Padded<AtomicBool>,
    /// `membarrier` registered: the worker's fence may be a compiler fence.
    asym: bool,
}

/// Held while alive.
pub(crate) struct Guard<'a> {
    lock: &'a MarkCompLock,
    kind: Kind,
}

#[derive(Clone, Copy)]
enum Kind {
    WorkerFast,
    WorkerSlow,
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    Waiter,
}

impl MarkCompLock {
    pub(crate) fn new() -> Self {
        MarkCompLock {
            worker_busy: Padded(AtomicBool::new(false)),
            waiters: Padded(WaiterLine {
                count: AtomicU32::new(0),
                installed: AtomicU32::new(0),
            }),
            slow: Padded(AtomicBool::new(false)),
            asym: membarrier::available(),
        }
    }

    #[inline]
    fn light_fence(&self) {
        // Mutant (`.ci/loom` must kill it): the worker's side of the Dekker
        // handshake without its fence.
        #[cfg(xunds_mutant = "markcomp_no_fence")]
        return;
        #[allow(unreachable_code)]
        if self.asym {
            // Ordering: compiler-only SeqCst fence; pairs with the
            // `membarrier(PRIVATE_EXPEDITED)` in `heavy_fence`, which makes this
            // thread's program order act as a full barrier (Dekker on
            // worker_busy / waiters; the mark-completion lock of docs/abi.md §1.9).
            core::sync::atomic::compiler_fence(Ordering::SeqCst);
        } else {
            // Ordering: SeqCst fence; pairs with the SeqCst fence in
            // `heavy_fence` (Dekker: worker_busy store / waiters load).
            fence(Ordering::SeqCst);
        }
    }

    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    fn heavy_fence(&self) {
        // Mutant (`.ci/loom` must kill it): the waiter's side of the Dekker
        // handshake without its fence.
        #[cfg(xunds_mutant = "markcomp_no_waiter_fence")]
        return;
        #[allow(unreachable_code)]
        if self.asym {
            // The worker's side is a compiler fence only, so without the
            // barrier there is no Dekker pair: a fence of our own would not
            // do. Once registered, the call fails only for want of memory
            // (ENOMEM, transient): try again until it goes through.
            let mut spins = 0u32;
            while !membarrier::barrier() {
                backoff(&mut spins);
            }
        } else {
            // Ordering: SeqCst fence; pairs with the SeqCst fence in
            // `light_fence` (Dekker: waiters store / worker_busy load).
            fence(Ordering::SeqCst);
        }
    }

    fn lock_slow(&self) {
        // Mutant (`.ci/loom` must kill it): no compare-exchange lock, so a
        // waiter and a worker that met it are not kept apart.
        #[cfg(xunds_mutant = "markcomp_no_slow_lock")]
        return;
        #[allow(unreachable_code)]
        let mut spins = 0u32;
        // Ordering: Acquire on success; pairs with the Release stores of
        // `slow` in `Guard::drop`. A failed CAS writes nothing (unlike
        // `swap`), so spinners never reorder against the unlock store.
        while self
            .slow
            .0
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            backoff(&mut spins);
        }
    }

    /// The worker's entry (pop and pop_burst).
    #[inline]
    pub(crate) fn lock_worker(&self) -> Guard<'_> {
        self.worker_busy.0.store(true, Ordering::Relaxed);
        self.light_fence();
        // Ordering: Acquire; pairs with the Release decrement in a waiter's
        // `Guard::drop`, so its install is visible to our capture.
        if self.waiters.0.count.load(Ordering::Acquire) == 0 {
            return Guard {
                lock: self,
                kind: Kind::WorkerFast,
            };
        }
        // A waiter wants the lock: back out and queue on `slow`.
        // Ordering: Release; pairs with the waiter's Acquire load of
        // worker_busy (nothing of ours to publish yet, but keep the pair).
        self.worker_busy.0.store(false, Ordering::Release);
        self.lock_slow();
        Guard {
            lock: self,
            kind: Kind::WorkerSlow,
        }
    }

    /// A waiter's entry (install, uninstall).
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) fn lock_waiter(&self) -> Guard<'_> {
        self.waiters.0.count.fetch_add(1, Ordering::Relaxed);
        self.heavy_fence();
        self.lock_slow();
        let mut spins = 0u32;
        // Ordering: Acquire; pairs with the worker's Release store of
        // worker_busy = false, so its capture and exec_head advance happen
        // before our re-check.
        while self.worker_busy.0.load(Ordering::Acquire) {
            backoff(&mut spins);
        }
        Guard {
            lock: self,
            kind: Kind::Waiter,
        }
    }
}

impl Guard<'_> {
    /// `true` when some slot may hold an installed handle (see
    /// `WaiterLine::installed`). Relaxed: the lock this guard holds orders
    /// every change before this read (the changes are made under the lock).
    #[inline(always)]
    pub(crate) fn any_installed(&self) -> bool {
        self.lock.waiters.0.installed.load(Ordering::Relaxed) != 0
    }

    /// A waiter installed a handle into a slot (under this guard).
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) fn installed_one(&self) {
        // Relaxed: ordered by the lock (see `any_installed`).
        self.lock
            .waiters
            .0
            .installed
            .fetch_add(1, Ordering::Relaxed);
    }

    /// `k` installed handles left their slots: a waiter removed its own
    /// (k = 1) or the worker captured k (under this guard). Nothing to do
    /// for none (a burst that captured no handle).
    pub(crate) fn removed(&self, k: u32) {
        if k != 0 {
            // Relaxed: ordered by the lock (see `any_installed`).
            self.lock
                .waiters
                .0
                .installed
                .fetch_sub(k, Ordering::Relaxed);
        }
    }
}

#[inline]
fn backoff(spins: &mut u32) {
    *spins += 1;
    #[cfg(any(loom, feature = "std"))]
    if *spins < 64 {
        crate::sync::spin_hint();
    } else {
        crate::sync::thread::yield_now();
    }
    #[cfg(not(any(loom, feature = "std")))]
    crate::sync::spin_hint();
}

impl Drop for Guard<'_> {
    #[inline]
    fn drop(&mut self) {
        match self.kind {
            // Ordering: Release; pairs with the Acquire load of worker_busy in
            // `lock_waiter`: our capture and advance happen-before its
            // critical section.
            Kind::WorkerFast => self.lock.worker_busy.0.store(false, Ordering::Release),
            // Ordering: Release; pairs with the Acquire CAS in `lock_slow`.
            Kind::WorkerSlow => self.lock.slow.0.store(false, Ordering::Release),
            Kind::Waiter => {
                // Ordering: Release; pairs with the Acquire CAS in `lock_slow`.
                self.lock.slow.0.store(false, Ordering::Release);
                // Ordering: Release; pairs with the Acquire load of `waiters`
                // in `lock_worker`: our install happens-before its capture.
                self.lock.waiters.0.count.fetch_sub(1, Ordering::Release);
            }
        }
    }
}

/// Without `std` there is no system call layer: both fences are
/// `fence(SeqCst)`.
#[cfg(not(feature = "std"))]
mod membarrier {
    pub(super) fn available() -> bool {
        false
    }
    #[allow(dead_code)]
    pub(super) fn barrier() -> bool {
        false
    }
}

#[cfg(all(test, feature = "std", not(loom)))]
mod tests {
    use super::*;
    use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
    use std::sync::Arc;
    use std::time::Duration;

    /// Long enough for a thread that is not kept out to get in.
    const SHUT_OUT: Duration = Duration::from_millis(200);
    /// A bound on "gets in once the holder leaves".
    const GETS_IN: Duration = Duration::from_secs(10);

    #[derive(Clone, Copy, Debug)]
    enum Side {
        Worker,
        Waiter,
    }

    fn enter(lock: &MarkCompLock, side: Side) -> Guard<'_> {
        match side {
            Side::Worker => lock.lock_worker(),
            Side::Waiter => lock.lock_waiter(),
        }
    }

    /// A thread that takes the lock as `side`, reports it is in, and leaves.
    /// Not joined: a thread the lock keeps out forever (a mutant) must fail
    /// the test, not hang it.
    fn comer(lock: &Arc<MarkCompLock>, side: Side) -> Receiver<()> {
        let (tx, rx) = mpsc::channel();
        let lock = lock.clone();
        std::thread::spawn(move || {
            let g = enter(&lock, side);
            let _ = tx.send(());
            drop(g);
        });
        rx
    }

    /// Mutual exclusion (docs/abi.md §1.9: a waiter's re-check-and-install
    /// and the worker's capture-then-advance never overlap): while one side
    /// holds the lock, the other side (and a second waiter) is kept out, and
    /// gets in once the holder drops its guard; afterwards the lock is free
    /// for both sides again. Mutants: `lock_slow` -> `()` (waiters and a
    /// worker that met one are not kept out), `lock_worker`'s `== 0` ->
    /// `!= 0` (the worker takes its fast path while a waiter is inside),
    /// `Guard::drop` -> `()` (the lock is never left), and `backoff`'s
    /// `+=` -> `-=` (the spin count underflows on the first wait).
    #[test]
    fn a_held_lock_keeps_the_other_side_out_until_dropped() {
        let lock = Arc::new(MarkCompLock::new());
        for (holder, side) in [
            (Side::Waiter, Side::Worker),
            (Side::Waiter, Side::Waiter),
            (Side::Worker, Side::Waiter),
        ] {
            let held = enter(&lock, holder);
            let rx = comer(&lock, side);
            assert_eq!(
                rx.recv_timeout(SHUT_OUT),
                Err(RecvTimeoutError::Timeout),
                "a {side:?} got in while a {holder:?} held the lock"
            );
            drop(held);
            rx.recv_timeout(GETS_IN)
                .unwrap_or_else(|e| panic!("a {side:?} after the {holder:?} left: {e}"));
            for side in [Side::Worker, Side::Waiter] {
                comer(&lock, side)
                    .recv_timeout(GETS_IN)
                    .unwrap_or_else(|e| panic!("a {side:?} into the free lock: {e}"));
            }
        }
    }
}
