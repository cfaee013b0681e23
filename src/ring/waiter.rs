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

use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::hal::eventfd::{close_raw, dup_cloexec, signal_raw, EventFd, Wait};
use crate::sync::atomic::Ordering::{Acquire, Relaxed};
use crate::wire::exec_slot::{off::MARK_COMP_EFD, off::SEQ_ID, NO_EFD};
use crate::wire::seq_id::SeqId;

use super::error::{SlotMismatch, WaitError};
use super::mem::{handle_fields, handle_word};
use super::payload::Payload;
use super::queue::XuQueue;
use super::status::StatusRef;
use crate::wire::xu_queue::off::SCHEDULED_TAIL;

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

/// How a waiter waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitMode {
    /// Check once (`is_completed`) and return.
    Poll,
    /// Spin re-checking for up to `max` (and never past the wait's
    /// timeout; at least one re-check, so a zero `max` is exactly one),
    /// then block. A time, not a count of spin hints: a hint's
    /// cost differs tenfold between cores (docs/perf.md).
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

/// What a queue's waiters share: the worker's sink and the pool of events
/// (`efd_from_pool = true`).
pub(crate) struct Waits {
    pub(crate) sink: Arc<dyn CompletionSink>,
    /// Events no signal is pending for.
    free: Mutex<Vec<Box<dyn Waitable>>>,
    /// Events a signal may still reach: kept open, never reused.
    retired: Mutex<Vec<Box<dyn Waitable>>>,
    make: WaitableFactory,
    recheck: Duration,
}

impl Default for Waits {
    fn default() -> Self {
        Waits::new(
            Arc::new(EventFdSink),
            eventfd_factory(),
            Duration::from_millis(10),
        )
    }
}

impl Waits {
    pub(crate) fn new(
        sink: Arc<dyn CompletionSink>,
        make: WaitableFactory,
        recheck: Duration,
    ) -> Self {
        Waits {
            sink,
            free: Mutex::new(Vec::new()),
            retired: Mutex::new(Vec::new()),
            make,
            recheck,
        }
    }

    fn take(&self) -> io::Result<Box<dyn Waitable>> {
        let got = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop();
        got.map_or_else(|| (self.make)(), Ok)
    }
}

/// `now + d`, or a time no wait reaches when that overflows (a timeout of
/// `Duration::MAX` waits for good instead of panicking).
pub(crate) fn after(now: Instant, d: Duration) -> Instant {
    now.checked_add(d)
        .unwrap_or_else(|| now + Duration::from_secs(u64::from(u32::MAX)))
}

/// What became of a waiter's handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    /// Never reached the worker (or was taken back): no signal can come.
    Idle,
    /// Its one signal was consumed: nothing more can come.
    Consumed,
    /// Completion seen, signal not (yet) seen: it may still arrive.
    MaybePending,
}

/// Waiters: blocking and explicit-async completion on eventfds.
impl<T: Payload, C: StatusRef> XuQueue<T, C> {
    /// (free, retired) pooled events; for tests and diagnostics.
    pub fn pool_counts(&self) -> (usize, usize) {
        let len = |m: &Mutex<Vec<_>>| m.lock().unwrap_or_else(|e| e.into_inner()).len();
        (len(&self.waits.free), len(&self.waits.retired))
    }

    /// Foreign XU first, then "issued by this queue".
    fn check_handle(&self, seq: SeqId) -> Result<(), WaitError> {
        self.check_xu(seq)?;
        // Ordering: Acquire; pairs with submit's Release of scheduled_tail,
        // so the slot body of `seq` is visible to the install.
        if seq.seq_num() >= self.mem.load(SCHEDULED_TAIL, Acquire) {
            return Err(WaitError::NotSubmitted { seq });
        }
        Ok(())
    }

    /// Install `fd` for `seq` under the mark-completion lock, re-checking
    /// completion first (docs/abi.md §1.3, §1.9 rule 4; the
    /// `waiter_no_recheck` mutant skips it).
    fn install(&self, seq: SeqId, fd: i32, from_pool: bool) -> Result<Armed, WaitError> {
        let lock = self.lock.lock_waiter();
        #[cfg(not(xunds_mutant = "waiter_no_recheck"))]
        if self.done(seq) {
            return Ok(Armed::AlreadyComplete);
        }
        let slot = self.slot(seq.seq_num());
        let found = slot.load_u64(SEQ_ID, Relaxed);
        if found != seq.0 {
            return Err(SlotMismatch {
                expected: seq,
                found,
            }
            .into());
        }
        if handle_fields(slot.load_u64(MARK_COMP_EFD, Relaxed)).0 != NO_EFD {
            return Err(WaitError::AlreadyWaiting { seq });
        }
        // Relaxed: the lock orders this store before pop's capture (pop
        // takes the same lock), and pop has not captured yet (not done).
        slot.store_u64(MARK_COMP_EFD, handle_word(fd, from_pool), Relaxed);
        lock.installed_one();
        Ok(Armed::Installed)
    }

    /// Remove our install unless pop captured it already. `true` = removed.
    fn uninstall(&self, seq: SeqId) -> bool {
        let lock = self.lock.lock_waiter();
        if self.done(seq) {
            return false;
        }
        let slot = self.slot(seq.seq_num());
        if handle_fields(slot.load_u64(MARK_COMP_EFD, Relaxed)).0 != NO_EFD {
            lock.removed_one();
        }
        slot.store_u64(MARK_COMP_EFD, handle_word(NO_EFD, false), Relaxed);
        true
    }

    /// Explicit-async completion by fd: install a dup of `ev` for `seq`; the
    /// worker signals and closes the dup at pop. `AlreadyComplete` installs
    /// nothing.
    pub fn arm(&self, seq: SeqId, ev: &dyn Waitable) -> Result<Armed, WaitError> {
        self.check_handle(seq)?;
        if self.done(seq) {
            return Ok(Armed::AlreadyComplete);
        }
        let dup = ev.dup_handle()?;
        let r = self.install(seq, dup, false);
        if !matches!(r, Ok(Armed::Installed)) {
            ev.close_handle(dup);
        }
        r
    }

    /// Wait for `seq` using a pooled event (`efd_from_pool = true`).
    pub fn wait(&self, seq: SeqId, mode: WaitMode, timeout: Duration) -> Result<Waited, WaitError> {
        self.wait_impl(seq, mode, None, timeout)
    }

    /// Wait for `seq` on a caller-owned event (a dup of it is installed).
    pub fn wait_on(
        &self,
        seq: SeqId,
        mode: WaitMode,
        ev: &dyn Waitable,
        timeout: Duration,
    ) -> Result<Waited, WaitError> {
        self.wait_impl(seq, mode, Some(ev), timeout)
    }

    fn wait_impl(
        &self,
        seq: SeqId,
        mode: WaitMode,
        own: Option<&dyn Waitable>,
        timeout: Duration,
    ) -> Result<Waited, WaitError> {
        self.check_handle(seq)?;
        if self.done(seq) {
            return Ok(Waited::Completed { wakeups: 0 });
        }
        if mode == WaitMode::Poll {
            return Ok(Waited::Pending);
        }
        let now = Instant::now();
        let deadline = after(now, timeout);
        if let WaitMode::SpinThenBlock { max } = mode {
            let end = after(now, max).min(deadline);
            loop {
                crate::sync::spin_hint();
                if self.done(seq) {
                    return Ok(Waited::Completed { wakeups: 0 });
                }
                if Instant::now() >= end {
                    break;
                }
            }
        }
        let Some(own) = own else {
            // A pooled event: back to the pool once nothing more can arrive.
            let pooled = self.waits.take()?;
            let (result, fate) = self.block(seq, pooled.as_ref(), false, deadline);
            let to = match fate {
                Fate::Idle | Fate::Consumed => &self.waits.free,
                Fate::MaybePending => &self.waits.retired,
            };
            to.lock().unwrap_or_else(|e| e.into_inner()).push(pooled);
            return result;
        };
        self.block(seq, own, true, deadline).0
    }

    /// Install a handle onto `ev` (a dup when `dup`, else `ev`'s own pooled
    /// handle) and block until completion or `deadline`. Closes the dup on
    /// every path where the worker did not get it; says what became of a
    /// pooled handle.
    fn block(
        &self,
        seq: SeqId,
        ev: &dyn Waitable,
        dup: bool,
        deadline: Instant,
    ) -> (Result<Waited, WaitError>, Fate) {
        let fd = if dup {
            match ev.dup_handle() {
                Ok(fd) => fd,
                Err(e) => return (Err(e.into()), Fate::Idle),
            }
        } else {
            ev.raw_handle()
        };
        let close_dup = || {
            if dup {
                ev.close_handle(fd);
            }
        };
        match self.install(seq, fd, !dup) {
            Ok(Armed::Installed) => {}
            Ok(Armed::AlreadyComplete) => {
                close_dup();
                return (Ok(Waited::Completed { wakeups: 0 }), Fate::Idle);
            }
            Err(e) => {
                close_dup();
                return (Err(e), Fate::Idle);
            }
        }
        // Installed: the slot owns the handle until pop captures it.
        let mut wakeups = 0u32;
        loop {
            let slice = deadline
                .saturating_duration_since(Instant::now())
                .min(self.waits.recheck);
            // A broken wait still ends bounded: the re-check and the
            // deadline below.
            if let Ok(Wait::Signalled(_)) = ev.wait(slice) {
                wakeups += 1;
            }
            if self.done(seq) {
                if wakeups == 0 {
                    // Completion seen before the signal: pop captured our
                    // handle before advancing, so exactly one write is on
                    // its way (or failed). Give it one re-check interval.
                    if let Ok(Wait::Signalled(_)) = ev.wait(self.waits.recheck) {
                        wakeups += 1;
                    }
                }
                let fate = if wakeups > 0 {
                    Fate::Consumed
                } else {
                    Fate::MaybePending
                };
                // A dup went to the worker, which closes it.
                return (Ok(Waited::Completed { wakeups }), fate);
            }
            // If pop captured it meanwhile, uninstall refuses and the next
            // round sees completion.
            if Instant::now() >= deadline && self.uninstall(seq) {
                close_dup();
                return (Ok(Waited::TimedOut), Fate::Idle);
            }
        }
    }
}
