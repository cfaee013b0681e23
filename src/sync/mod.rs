//! The one concurrency shim (tokio's `loom` pattern).
//!
//! Protocol code that loom must see ([`crate::ring`] with owned storage, the
//! NDS record protocol over heap words, the loom mailbox) imports its atomics,
//! `Arc`, `Mutex` and `thread` from here and nowhere else. A normal build gets
//! `core`'s atomics (and, with the `std` feature, `std`'s `Arc`, `Mutex` and
//! `thread`); a build with `RUSTFLAGS="--cfg loom"` gets `loom`'s checked versions.
//! Loom atomics never live inside ABI memory: memory reached by address (a
//! mapping, a static block, caller memory) is read and written through
//! [`word::Words`], `core` atomics created by `from_ptr`, whose heap blocks
//! are loom's atomics under loom.

pub mod word;

#[cfg(not(loom))]
mod imp {
    #[cfg(not(feature = "std"))]
    pub use super::spin::{Mutex, MutexGuard};
    pub use core::sync::atomic;
    #[cfg(feature = "std")]
    pub use std::sync::{Arc, Mutex, MutexGuard};
    #[cfg(feature = "std")]
    pub use std::thread;

    /// Spin-loop hint; under loom this is a `yield_now` so models terminate.
    #[inline]
    pub fn spin_hint() {
        core::hint::spin_loop();
    }
}

#[cfg(loom)]
mod imp {
    pub use loom::sync::atomic;
    pub use loom::sync::{Arc, Mutex, MutexGuard};
    pub use loom::thread;

    /// Spin-loop hint; under loom this is a `yield_now` so models terminate.
    #[inline]
    pub fn spin_hint() {
        loom::thread::yield_now();
    }
}

pub use imp::*;

/// Without `std`: a spin lock for the few short critical sections of the
/// core (the NDS writer's books). It must not be taken from an interrupt
/// handler that may preempt its holder (it would spin forever).
#[cfg(all(not(loom), not(feature = "std")))]
mod spin {
    use core::cell::UnsafeCell;
    use core::ops::{Deref, DerefMut};
    use core::sync::atomic::{AtomicBool, Ordering};

    /// A spin lock around a `T`.
    #[derive(Debug, Default)]
    pub struct Mutex<T> {
        held: AtomicBool,
        value: UnsafeCell<T>,
    }

    // SAFETY: the value is reached only through a guard, and one guard
    // exists at a time (the `held` flag), so sharing the lock shares `T`
    // between threads one at a time: `T: Send` is enough, as for std's Mutex.
    unsafe impl<T: Send> Sync for Mutex<T> {}

    impl<T> Mutex<T> {
        /// An unlocked lock.
        pub const fn new(value: T) -> Self {
            Mutex {
                held: AtomicBool::new(false),
                value: UnsafeCell::new(value),
            }
        }

        /// Spin until the lock is ours. Never `Err` (a spin lock is not
        /// poisoned); the `Result` is std's signature.
        pub fn lock(&self) -> Result<MutexGuard<'_, T>, PoisonError<MutexGuard<'_, T>>> {
            // Ordering: Acquire on success; pairs with the Release store in
            // the guard's drop, so the last holder's writes are visible.
            while self
                .held
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                core::hint::spin_loop();
            }
            Ok(MutexGuard(self))
        }
    }

    /// The error a spin lock never returns (std's `PoisonError` shape).
    #[derive(Debug)]
    pub struct PoisonError<G>(G, core::convert::Infallible);

    impl<G> PoisonError<G> {
        /// The guard.
        pub fn into_inner(self) -> G {
            match self.1 {}
        }
    }

    /// Held while alive.
    #[derive(Debug)]
    pub struct MutexGuard<'a, T>(&'a Mutex<T>);

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            // SAFETY: this guard is the one holder (`lock`), so no `&mut T`
            // exists elsewhere while the borrow lives.
            unsafe { &*self.0.value.get() }
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            // SAFETY: as in `deref`, and `&mut self` makes the borrow unique.
            unsafe { &mut *self.0.value.get() }
        }
    }

    impl<T> Drop for MutexGuard<'_, T> {
        fn drop(&mut self) {
            // Ordering: Release; pairs with the Acquire exchange in `lock`.
            self.0.held.store(false, Ordering::Release);
        }
    }
}
