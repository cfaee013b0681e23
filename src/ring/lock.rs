//! The mark-completion lock (`mark_comp_lock`, docs/abi.md §1.3, §1.9): it
//! serialises a waiter's re-check-and-install of `mark_comp_efd` with the
//! worker's capture-then-advance in pop.
//!
//! It lives beside the queue, never in the ABI header (the C lock is part of
//! the XU object, not of `xu_queue_t`). Pop takes it once per execution and
//! waiters take it rarely, so it is a **biased** (asymmetric Dekker) lock:
//!
//! - The worker (pop side) enters by storing `worker_busy = true`, a *light*
//!   fence, and loading the waiters word. If no waiter wants the lock it is
//!   in: two plain stores and a load, no locked instruction. If a waiter is
//!   around it backs out, queues on the `slow` compare-exchange lock like a
//!   waiter, and once it holds that, sets `worker_busy` again and lets
//!   `slow` go: from there on it leaves as on the fast path.
//! - A waiter announces itself (the word's count += 1), issues a *heavy*
//!   fence, takes `slow`, then waits until `worker_busy` is false.
//!
//! Dekker's argument: the worker stores `worker_busy` then loads the count;
//! the waiter stores the count then loads `worker_busy`, each with a fence
//! in between, so at least one of them sees the other. With `membarrier(2)`
//! (`MEMBARRIER_CMD_PRIVATE_EXPEDITED`) the heavy fence forces a full barrier
//! on every running thread of the process, which lets the light fence be a
//! compiler fence only. Where membarrier is unavailable (and under loom) both
//! fences are `fence(SeqCst)`.
//!
//! The waiters word also counts the slots whose `mark_comp_efd` holds an
//! installed handle (its high half, changed only under the lock), so the
//! worker's one load tells it both whether a waiter is around and whether
//! any slot may hold a handle to capture.

#[cfg(feature = "std")]
use crate::hal::os::membarrier;
use crate::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};

/// One value on its own cache line (the worker writes `worker_busy` on every
/// pop; it must not share a line with what the producer or waiters write).
#[derive(Debug)]
#[repr(align(64))]
struct Padded<T>(T);

/// One waiter in the waiters word (its low half).
const WAITER: u64 = 1;
/// One installed handle in the waiters word (its high half).
const INSTALLED: u64 = 1 << 32;

/// The lock.
#[derive(Debug)]
pub(crate) struct MarkCompLock {
    /// The worker is inside its critical section.
    worker_busy: Padded<AtomicBool>,
    /// Waiters that want or hold the lock (low half) and slots holding an
    /// installed handle the worker has not captured yet (high half).
    waiters: Padded<AtomicU64>,
    /// The compare-exchange lock waiters (and a worker that met one) share.
    slow: Padded<AtomicBool>,
    /// `membarrier` registered: the worker's fence may be a compiler fence.
    asym: bool,
}

/// The worker's hold on the lock.
pub(crate) struct WorkerGuard<'a> {
    lock: &'a MarkCompLock,
    /// The waiters word as read on entry (its installed half counts).
    word: u64,
}

/// A waiter's hold on the lock.
pub(crate) struct WaiterGuard<'a> {
    lock: &'a MarkCompLock,
}

impl MarkCompLock {
    pub(crate) fn new() -> Self {
        MarkCompLock {
            worker_busy: Padded(AtomicBool::new(false)),
            waiters: Padded(AtomicU64::new(0)),
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
        if !self.asym {
            // Ordering: SeqCst fence; pairs with the SeqCst fence in
            // `heavy_fence` (Dekker: worker_busy store / count load).
            fence(Ordering::SeqCst);
        } else {
            // Ordering: compiler-only SeqCst fence; pairs with the
            // `membarrier(PRIVATE_EXPEDITED)` in `heavy_fence`, which makes this
            // thread's program order act as a full barrier (Dekker on
            // worker_busy / the waiter count; docs/abi.md §1.9 rule 4).
            core::sync::atomic::compiler_fence(Ordering::SeqCst);
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
            // `light_fence` (Dekker: count store / worker_busy load).
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
        // `slow` in `lock_worker` and `WaiterGuard::drop`. A failed CAS
        // writes nothing (unlike `swap`), so spinners never reorder against
        // the unlock store.
        while self
            .slow
            .0
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            backoff(&mut spins);
        }
    }

    /// The worker's entry (pop, discard).
    #[inline]
    pub(crate) fn lock_worker(&self) -> WorkerGuard<'_> {
        self.worker_busy.0.store(true, Ordering::Relaxed);
        self.light_fence();
        // Ordering: Acquire; pairs with the Release decrement in
        // `WaiterGuard::drop`, so a waiter's install is visible to our
        // capture.
        let w = self.waiters.0.load(Ordering::Acquire);
        if w % INSTALLED != 0 {
            return self.lock_worker_slow();
        }
        WorkerGuard {
            lock: self,
            word: w,
        }
    }

    /// A waiter wants the lock: back out, queue on `slow` like a waiter,
    /// then hold `worker_busy` again and let `slow` go.
    #[cold]
    #[inline(never)]
    fn lock_worker_slow(&self) -> WorkerGuard<'_> {
        // Ordering: Release; pairs with the waiter's Acquire load of
        // worker_busy (nothing of ours to publish yet, but keep the pair).
        self.worker_busy.0.store(false, Ordering::Release);
        self.lock_slow();
        // Holding `slow`, no waiter is inside or between its `slow` and its
        // `worker_busy` check; the next one to take `slow` sees this store
        // through the Release below and waits for our guard's drop.
        self.worker_busy.0.store(true, Ordering::Relaxed);
        let word = self.waiters.0.load(Ordering::Relaxed);
        // Ordering: Release; pairs with the Acquire CAS in `lock_slow`.
        self.slow.0.store(false, Ordering::Release);
        WorkerGuard { lock: self, word }
    }

    /// A waiter's entry (install, uninstall).
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) fn lock_waiter(&self) -> WaiterGuard<'_> {
        self.waiters.0.fetch_add(WAITER, Ordering::Relaxed);
        self.heavy_fence();
        self.lock_slow();
        let mut spins = 0u32;
        // Ordering: Acquire; pairs with the worker's Release store of
        // worker_busy = false, so its capture and exec_head advance happen
        // before our re-check.
        while self.worker_busy.0.load(Ordering::Acquire) {
            backoff(&mut spins);
        }
        WaiterGuard { lock: self }
    }
}

impl WorkerGuard<'_> {
    /// `true` when some slot may hold an installed handle (the count is
    /// changed only under the lock, so the value read on entry holds while
    /// this guard does).
    #[inline(always)]
    pub(crate) fn any_installed(&self) -> bool {
        self.word >= INSTALLED
    }

    /// The worker captured an installed handle (under this guard).
    pub(crate) fn removed(&self) {
        // Relaxed: ordered by the lock, as every change of the count.
        self.lock.waiters.0.fetch_sub(INSTALLED, Ordering::Relaxed);
    }
}

impl Drop for WorkerGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        // Ordering: Release; pairs with the Acquire load of worker_busy in
        // `lock_waiter`: our capture and advance happen-before its critical
        // section.
        self.lock.worker_busy.0.store(false, Ordering::Release);
    }
}

#[cfg_attr(not(feature = "std"), allow(dead_code))]
impl WaiterGuard<'_> {
    /// A waiter installed a handle into a slot (under this guard).
    pub(crate) fn installed_one(&self) {
        // Relaxed: ordered by the lock (see `WorkerGuard::any_installed`).
        self.lock.waiters.0.fetch_add(INSTALLED, Ordering::Relaxed);
    }

    /// A waiter took its own handle out of a slot (under this guard).
    pub(crate) fn removed_one(&self) {
        // Relaxed: ordered by the lock.
        self.lock.waiters.0.fetch_sub(INSTALLED, Ordering::Relaxed);
    }
}

impl Drop for WaiterGuard<'_> {
    fn drop(&mut self) {
        // Ordering: Release; pairs with the Acquire CAS in `lock_slow`.
        self.lock.slow.0.store(false, Ordering::Release);
        // Ordering: Release; pairs with the Acquire load of the waiters word
        // in `lock_worker`: our install happens-before its capture.
        self.lock.waiters.0.fetch_sub(WAITER, Ordering::Release);
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

#[cfg(test)]
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

    /// Either side's guard, held until dropped.
    #[allow(dead_code)]
    enum Held<'a> {
        Worker(WorkerGuard<'a>),
        Waiter(WaiterGuard<'a>),
    }

    fn enter(lock: &MarkCompLock, side: Side) -> Held<'_> {
        match side {
            Side::Worker => Held::Worker(lock.lock_worker()),
            Side::Waiter => Held::Waiter(lock.lock_waiter()),
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
