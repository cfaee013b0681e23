//! Completion waiters (docs/abi.md §1.3, §1.8, §1.9 consumer pseudo-code).
//!
//! Two small traits keep the fd mechanics apart from the protocol so loom can
//! model them with a loom-visible signal instead of a real eventfd:
//!
//! - [`CompletionSink`] is the worker's side: `write(mark_comp_efd, 1)` on a
//!   raw handle captured from a slot, and `close` of a non-pooled handle after
//!   signalling ("fresh fd: signal-and-close; pooled: reuse", docs/abi.md §1.9).
//! - [`Waitable`] is the waiter's side: an event it can block on with a bound,
//!   and the handles it installs into a slot.
//!
//! **fd ownership (our decision, docs/design.md, "Decisions" (Ring)).** No fd is ever
//! closed while anyone may still read or write it:
//!
//! - A *caller-owned* event is never installed itself. The waiter installs a
//!   `dup` of it; from the moment the install lands under the mark-completion
//!   lock the slot owns that dup, the worker captures it at pop, signals it
//!   (the signal lands in the caller's eventfd, which shares the counter) and
//!   closes it. The caller's own fd stays open and is the one it reads. If the
//!   waiter removes its install (timeout) or never installs (completion seen
//!   under the lock) it closes the dup itself. Exactly one party closes it.
//! - A *pooled* event belongs to the queue's pool for the queue's whole life:
//!   nobody closes it while the queue lives, so a late signal can never hit a
//!   reused fd number. A waiter returns it to the free list only once nothing
//!   more can arrive: after it consumed the signal, or after it removed its
//!   install under the lock. If completion was observed but the signal did not
//!   arrive within one re-check interval (a failed write), the event is retired
//!   (kept open, never reused) instead.

use core::fmt;
use core::time::Duration;
#[cfg(feature = "std")]
use std::io;

#[cfg(feature = "std")]
use crate::hal::eventfd::{close_raw, dup_cloexec, signal_raw, EventFd, Wait};
use crate::wire::seq_id::SeqId;

/// A raw handle as a slot's `mark_comp_efd` holds it (an fd on Linux; the
/// same `int` as `std::os::fd::RawFd`).
pub type RawFd = i32;

/// The worker's side of completion signalling.
pub trait CompletionSink: Send + Sync {
    /// `write(fd, &1, 8)`; `Err(errno)` on failure.
    fn signal(&self, fd: RawFd) -> Result<(), i32>;
    /// Close a non-pooled handle the worker owns after signalling it.
    fn close(&self, fd: RawFd);
}

/// Real eventfds: `write(2)` and `close(2)`.
#[derive(Clone, Copy, Debug, Default)]
#[cfg(feature = "std")]
pub struct EventFdSink;

#[cfg(feature = "std")]
impl CompletionSink for EventFdSink {
    fn signal(&self, fd: RawFd) -> Result<(), i32> {
        signal_raw(fd, 1).map_err(|e| e.raw_os_error().unwrap_or(0))
    }

    fn close(&self, fd: RawFd) {
        // The worker owns `fd` (a dup installed by a waiter, see the module
        // docs); nobody else closes or reads it.
        close_raw(fd);
    }
}

/// The waiter's side: something to block on, and the handles a slot stores.
#[cfg(feature = "std")]
pub trait Waitable: Send + Sync {
    /// The handle itself (pooled use: the worker signals it, never closes it).
    fn raw_handle(&self) -> RawFd;
    /// A new handle onto the same event that the slot (then the worker) will
    /// own and close (caller-owned use).
    fn dup_handle(&self) -> io::Result<RawFd>;
    /// Close a handle from [`dup_handle`](Self::dup_handle) that never reached
    /// the worker.
    fn close_handle(&self, fd: RawFd);
    /// Block up to `timeout` for a signal and consume it.
    fn wait(&self, timeout: Duration) -> io::Result<Wait>;
}

#[cfg(feature = "std")]
impl Waitable for EventFd {
    fn raw_handle(&self) -> RawFd {
        self.raw()
    }

    fn dup_handle(&self) -> io::Result<RawFd> {
        dup_cloexec(self.raw())
    }

    fn close_handle(&self, fd: RawFd) {
        // `fd` came from `dup_handle` and never reached the worker, so the
        // waiter is its only owner.
        close_raw(fd);
    }

    fn wait(&self, timeout: Duration) -> io::Result<Wait> {
        EventFd::wait(self, timeout)
    }
}

/// Makes a new pooled event when the pool is empty.
#[cfg(feature = "std")]
pub type WaitableFactory = std::sync::Arc<dyn Fn() -> io::Result<Box<dyn Waitable>> + Send + Sync>;

/// The default factory: a non-blocking eventfd.
#[cfg(feature = "std")]
pub fn eventfd_factory() -> WaitableFactory {
    std::sync::Arc::new(|| Ok(Box::new(EventFd::new()?) as Box<dyn Waitable>))
}

/// How a waiter waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitMode {
    /// Check once (`is_completed`) and return.
    Poll,
    /// Spin re-checking for up to `max` (and never past the wait's
    /// timeout; at least one re-check, so a zero `max` is exactly one),
    /// then block. A time, not a count of spin hints: a hint's
    /// cost differs tenfold between cores (docs/perf.md, "Measurements behind the design").
    SpinThenBlock {
        /// How long to spin before blocking.
        max: Duration,
    },
    /// Block on an eventfd right away.
    Block,
}

/// What a wait saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waited {
    /// The handle is complete; `wakeups` eventfd signals were consumed on the
    /// way (0 when completion was seen by polling, spinning or the re-check).
    Completed {
        /// eventfd wake-ups consumed.
        wakeups: u32,
    },
    /// [`WaitMode::Poll`] and not complete yet.
    Pending,
    /// The bound passed; the waiter's install was removed again.
    TimedOut,
}

/// What [`crate::ring::XuQueue::arm`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Armed {
    /// Already complete: nothing installed, no signal will come.
    AlreadyComplete,
    /// A dup of the caller's event is in the slot; the worker signals and
    /// closes it at pop.
    Installed,
}

/// A failed completion signal (docs/abi.md §1.9): the completion itself is
/// already published, only the wake-up was lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignalError {
    /// The completed request.
    pub seq: SeqId,
    /// `errno` of the failed `write`.
    pub errno: i32,
}

impl fmt::Display for SignalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The seed's log line, verbatim (docs/abi.md §1.9 consumer pseudo-code).
        write!(
            f,
            "Failed to signal completion event for request 0x{:x}. errno: {}",
            self.seq.0, self.errno
        )
    }
}

impl core::error::Error for SignalError {}

/// The queue's pool of events (`efd_from_pool = true`).
#[cfg(feature = "std")]
pub(crate) struct Pool {
    free: crate::sync::Mutex<Vec<Box<dyn Waitable>>>,
    retired: crate::sync::Mutex<Vec<Box<dyn Waitable>>>,
    make: WaitableFactory,
}

#[cfg(feature = "std")]
impl Pool {
    pub(crate) fn new(make: WaitableFactory) -> Self {
        Pool {
            free: crate::sync::Mutex::new(Vec::new()),
            retired: crate::sync::Mutex::new(Vec::new()),
            make,
        }
    }

    pub(crate) fn take(&self) -> io::Result<Box<dyn Waitable>> {
        let got = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match got {
            Some(w) => Ok(w),
            None => (self.make)(),
        }
    }

    /// Back to the free list: no signal for it is pending.
    pub(crate) fn give_back(&self, w: Box<dyn Waitable>) {
        self.free.lock().unwrap_or_else(|e| e.into_inner()).push(w);
    }

    /// A signal may still arrive: keep it open, never reuse it.
    pub(crate) fn retire(&self, w: Box<dyn Waitable>) {
        self.retired
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(w);
    }

    /// (free, retired) counts, for tests.
    pub(crate) fn counts(&self) -> (usize, usize) {
        (
            self.free.lock().unwrap_or_else(|e| e.into_inner()).len(),
            self.retired.lock().unwrap_or_else(|e| e.into_inner()).len(),
        )
    }
}
