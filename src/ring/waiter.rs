//! Completion waiters (docs/abi.md §1.3, §1.8, §1.9 consumer pseudo-code):
//! `wait` (a pooled event), `wait_on` (the caller's), `arm` (install and
//! return, for explicit async). The events they block on and the sink the
//! worker signals through are in [`events`](super::events), re-exported here.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::hal::eventfd::Wait;
use crate::sync::atomic::Ordering::{Acquire, Relaxed};
use crate::wire::exec_slot::{off::MARK_COMP_EFD, NO_EFD};
use crate::wire::seq_id::SeqId;

pub use super::events::{
    eventfd_factory, CompletionSink, EventFdSink, RawFd, Waitable, WaitableFactory,
};

use super::error::WaitError;
use super::mem::{handle_fields, handle_word};
use super::payload::Payload;
use super::queue::XuQueue;
use super::status::StatusRef;
use crate::wire::xu_queue::off::SCHEDULED_TAIL;

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

/// `now + d`, or a time no wait reaches when that overflows (a timeout of
/// `Duration::MAX` waits for good instead of panicking).
pub(crate) fn after(now: Instant, d: Duration) -> Instant {
    now.checked_add(d)
        .unwrap_or_else(|| now + Duration::from_secs(u64::from(u32::MAX)))
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

    /// Install a handle onto `ev` for `seq` under the mark-completion lock,
    /// re-checking completion first (docs/abi.md §1.3, §1.9 rule 4; the
    /// `waiter_no_recheck` mutant skips it): a dup when `dup`, closed again
    /// unless installed, else `ev`'s own pooled handle. Returns the handle.
    fn install(&self, seq: SeqId, ev: &dyn Waitable, dup: bool) -> Result<(Armed, i32), WaitError> {
        let fd = if dup {
            ev.dup_handle()?
        } else {
            ev.raw_handle()
        };
        let r = self.install_fd(seq, fd, !dup);
        if dup && !matches!(r, Ok(Armed::Installed)) {
            ev.close_handle(fd);
        }
        Ok((r?, fd))
    }

    /// [`install`](Self::install)'s locked part: `fd` into `seq`'s slot.
    fn install_fd(&self, seq: SeqId, fd: i32, from_pool: bool) -> Result<Armed, WaitError> {
        let lock = self.lock.lock_waiter();
        #[cfg(not(xunds_mutant = "waiter_no_recheck"))]
        if self.done(seq) {
            return Ok(Armed::AlreadyComplete);
        }
        // `seq` is this XU's (`check_handle`): its slot must hold it.
        let (slot, _) = self.checked(seq.seq_num())?;
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
        Ok(self.install(seq, ev, true)?.0)
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
            let (result, pending) = self.block(seq, pooled.as_ref(), false, deadline);
            let to = if pending {
                &self.waits.retired
            } else {
                &self.waits.free
            };
            to.lock().unwrap_or_else(|e| e.into_inner()).push(pooled);
            return result;
        };
        self.block(seq, own, true, deadline).0
    }

    /// Install a handle onto `ev` (a dup when `dup`, else `ev`'s own pooled
    /// handle) and block until completion or `deadline`. Closes the dup on
    /// every path where the worker did not get it. The `bool` says whether
    /// a signal may still arrive on the handle: completion was seen, its
    /// signal not (yet); `false` when the handle never reached the worker,
    /// was taken back, or its one signal was consumed.
    fn block(
        &self,
        seq: SeqId,
        ev: &dyn Waitable,
        dup: bool,
        deadline: Instant,
    ) -> (Result<Waited, WaitError>, bool) {
        let fd = match self.install(seq, ev, dup) {
            Ok((Armed::Installed, fd)) => fd,
            Ok((Armed::AlreadyComplete, _)) => {
                return (Ok(Waited::Completed { wakeups: 0 }), false)
            }
            Err(e) => return (Err(e), false),
        };
        // Installed: the slot owns the handle until pop captures it.
        let mut wakeups = 0u32;
        loop {
            let slice = deadline
                .saturating_duration_since(Instant::now())
                .min(self.waits.cfg.recheck);
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
                    if let Ok(Wait::Signalled(_)) = ev.wait(self.waits.cfg.recheck) {
                        wakeups += 1;
                    }
                }
                // A dup went to the worker, which closes it.
                return (Ok(Waited::Completed { wakeups }), wakeups == 0);
            }
            // If pop captured it meanwhile, uninstall refuses and the next
            // round sees completion.
            if Instant::now() >= deadline && self.uninstall(seq) {
                if dup {
                    ev.close_handle(fd);
                }
                return (Ok(Waited::TimedOut), false);
            }
        }
    }
}
