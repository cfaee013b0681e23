//! The events completion travels on (docs/abi.md §1.3, §1.9 consumer
//! pseudo-code): what the worker signals and what a waiter blocks on.
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

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::hal::eventfd::{close_raw, dup_cloexec, signal_raw, EventFd, Wait};
use crate::wire::seq_id::XuId;
use crate::wire::xu_queue::CURSOR_START;

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
pub struct EventFdSink;

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
pub type WaitableFactory = Arc<dyn Fn() -> io::Result<Box<dyn Waitable>> + Send + Sync>;

/// The default factory: a non-blocking eventfd.
pub fn eventfd_factory() -> WaitableFactory {
    Arc::new(|| Ok(Box::new(EventFd::new()?) as Box<dyn Waitable>))
}

/// What a queue's waiters share: the configuration they wait by (the
/// worker's sink, the pool's factory, the re-check interval) and the pool of
/// events (`efd_from_pool = true`).
pub(crate) struct Waits {
    pub(crate) cfg: QueueConfig,
    /// Events no signal is pending for.
    pub(crate) free: Mutex<Vec<Box<dyn Waitable>>>,
    /// Events a signal may still reach: kept open, never reused.
    pub(crate) retired: Mutex<Vec<Box<dyn Waitable>>>,
}

impl Waits {
    pub(crate) fn new(cfg: QueueConfig) -> Self {
        Waits {
            cfg,
            free: Mutex::default(),
            retired: Mutex::default(),
        }
    }

    /// A free pooled event, or a new one.
    pub(crate) fn take(&self) -> io::Result<Box<dyn Waitable>> {
        let got = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop();
        got.map_or_else(|| (self.cfg.pool_factory)(), Ok)
    }
}

/// How to build a queue (`std`): where its cursors start and how its
/// waiters wait.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use xunds::ring::{QueueConfig, WaitMode, Waited, XuQueue};
/// use xunds::wire::seq_id::XuId;
/// use xunds::NrtStatus;
///
/// let cfg = QueueConfig::new(XuId::new(0, 0, 1), 8).recheck(Duration::from_millis(1));
/// let (mut producer, mut worker) = XuQueue::<u64>::owned(cfg)?;
/// let queue = producer.queue().clone();
/// let seq = producer.submit(1, None)?;
/// producer.trigger_next()?;
/// assert_eq!(queue.wait(seq, WaitMode::Poll, Duration::ZERO)?, Waited::Pending);
/// let waiter = std::thread::spawn(move || queue.wait(seq, WaitMode::Block, Duration::from_secs(10)));
/// worker.pop(NrtStatus::SUCCESS)?;
/// assert!(matches!(waiter.join().unwrap()?, Waited::Completed { .. }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct QueueConfig {
    /// The XU this queue serves (the high 16 bits of every seq_id,
    /// docs/abi.md §1.4).
    pub xu: XuId,
    /// Number of 32-byte slots (any value >= 1; powers of two index by mask).
    pub capacity: u64,
    /// First cursor value (1 in the ABI; tests start near the 48-bit limit).
    pub start: u64,
    /// Longest single block of a waiter before it re-checks `last_completed`.
    pub recheck: Duration,
    /// How the worker signals and closes captured handles.
    pub sink: std::sync::Arc<dyn CompletionSink>,
    /// How the pool makes a new event.
    pub pool_factory: WaitableFactory,
}

impl QueueConfig {
    /// Defaults: cursors at 1, 10 ms re-check, real eventfds.
    pub fn new(xu: XuId, capacity: u64) -> Self {
        QueueConfig {
            xu,
            capacity,
            start: CURSOR_START,
            recheck: Duration::from_millis(10),
            sink: std::sync::Arc::new(EventFdSink),
            pool_factory: eventfd_factory(),
        }
    }

    /// Start every cursor at `start` instead of 1.
    pub fn start_at(mut self, start: u64) -> Self {
        self.start = start;
        self
    }

    /// Set the waiters' re-check interval.
    pub fn recheck(mut self, d: Duration) -> Self {
        self.recheck = d;
        self
    }

    /// Use another signalling backend (loom models, fault injection).
    pub fn signals(
        mut self,
        sink: std::sync::Arc<dyn CompletionSink>,
        pool_factory: WaitableFactory,
    ) -> Self {
        self.sink = sink;
        self.pool_factory = pool_factory;
        self
    }
}

impl core::fmt::Debug for QueueConfig {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QueueConfig")
            .field("xu", &self.xu)
            .field("capacity", &self.capacity)
            .field("start", &self.start)
            .field("recheck", &self.recheck)
            .finish_non_exhaustive()
    }
}
