//! The one concurrency shim (tokio's `loom` pattern).
//!
//! Protocol code that loom must see ([`crate::ring`] with owned storage, the
//! NDS record protocol over heap words, the loom mailbox) imports its atomics,
//! `Arc`, `Mutex` and `thread` from here and nowhere else. A normal build gets
//! `std`; a build with `RUSTFLAGS="--cfg loom"` gets `loom`'s checked versions.
//! Loom atomics never live inside ABI memory: mapped memory is reached through
//! [`crate::hal::mem`] with `std` atomics created by `from_ptr`.

#[cfg(not(loom))]
mod imp {
    pub use std::sync::atomic;
    pub use std::sync::{Arc, Mutex, MutexGuard};
    pub use std::thread;

    /// Spin-loop hint; under loom this is a `yield_now` so models terminate.
    #[inline]
    pub fn spin_hint() {
        std::hint::spin_loop();
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
