//! The worker's lockstep guard: a back-off policy over a ring
//! [`Worker`]'s polls, in the worker's loop rather than the ring's protocol
//! (the ring itself never waits; the ring benchmark's spinning workers go
//! through a [`Pace`] too).
//!
//! When a producer submits back to back and the worker keeps up, each
//! refresh after the worker ran dry finds a few new items, and every item
//! moves the slot's line and `scheduled_head`'s line between the two cores
//! (the worker's read, then the producer's next write to the same line):
//! both sides stall on every transfer instead of running ahead. After
//! [`LOCKSTEP_STREAK`] refreshes in a row that each follow an empty poll
//! and find at most [`LOCKSTEP_BATCH`] items, the worker stays off the
//! shared lines for a moment (the slip) so the producer gets whole lines
//! ahead. How many empty polls came before does not matter: where two cores
//! share no cache an empty poll hits the worker's own copy of the line
//! until the producer's store takes it back, so lockstep there shows
//! hundreds of them. A refresh that finds items without having run dry
//! (a worker busy elsewhere) counts nothing. A lone round trip looks like
//! lockstep, but its slip finds no batch: the next slip then waits for twice
//! the streak (docs/perf.md, "The ring: two regimes").
//!
//! The slip's wait: a spin hint's cost is a property of the core (`PAUSE`
//! takes about 10 cycles on Intel before Skylake and about 140 since, 10 or
//! 50 on AMD parts by generation; docs/perf.md), so a wait counted in hints
//! lasts a different time on every host. On x86_64 it reads the TSC
//! instead; elsewhere, and under Miri, it counts hints.
//!
//! ```
//! use xunds::actors::pace::Pace;
//! use xunds::ring::{RingMem, XuQueue};
//! use xunds::wire::seq_id::XuId;
//! use xunds::NrtStatus;
//!
//! let mut queue = XuQueue::<u64>::new(RingMem::owned(XuId::new(0, 0, 1), 8, 1).unwrap());
//! let (mut producer, mut worker) = queue.split();
//! let mut pace = Pace::new();
//! producer.submit(1, None).unwrap();
//! producer.trigger_next().unwrap();
//! assert_eq!(pace.pop(&mut worker, NrtStatus::SUCCESS).unwrap().item, 1);
//! assert!(pace.pop(&mut worker, NrtStatus::SUCCESS).is_err());
//! ```

use core::ops::Deref;

use crate::ring::{Payload, PopError, Popped, SlotView, StatusRef, Worker, XuQueue};
use crate::wire::status::NrtStatus;

/// Lockstep refreshes in a row after which the worker slips.
pub const LOCKSTEP_STREAK: u32 = 8;

/// The most new items a refresh that follows an empty poll may find and
/// still count as lockstep: fewer than a cache line's worth per slot line
/// transfer means the producer is not getting ahead.
pub const LOCKSTEP_BATCH: u64 = 32;

/// The most lockstep refreshes a worker whose slips kept finding no batch
/// waits before it tries one again.
const MAX_LOCKSTEP_STREAK: u32 = 1024;

/// The lockstep guard of one worker ([module docs](self)).
#[derive(Clone, Debug)]
pub struct Pace {
    /// Refreshes in a row that found at most [`LOCKSTEP_BATCH`] new items
    /// after an empty poll.
    streak: u32,
    /// The last refresh found the ring empty.
    ran_dry: bool,
    /// The streak that triggers a slip: [`LOCKSTEP_STREAK`], doubled (up to
    /// [`MAX_LOCKSTEP_STREAK`]) after each slip that found no batch.
    slip_after: u32,
}

impl Default for Pace {
    fn default() -> Self {
        Self::new()
    }
}

impl Pace {
    /// No streak yet.
    pub const fn new() -> Pace {
        Pace {
            streak: 0,
            ran_dry: false,
            slip_after: LOCKSTEP_STREAK,
        }
    }

    /// [`Worker::pop`], paced.
    #[cfg_attr(not(feature = "testkit"), allow(dead_code))]
    #[inline(always)]
    pub fn pop<T, C, Q>(
        &mut self,
        w: &mut Worker<Q>,
        status: NrtStatus,
    ) -> Result<Popped<T>, PopError>
    where
        T: Payload,
        C: StatusRef,
        Q: Deref<Target = XuQueue<T, C>>,
    {
        match self.poll(w) {
            0 => Err(PopError::Empty),
            _ => w.pop(status),
        }
    }

    /// [`Worker::peek`], paced.
    #[inline]
    pub fn peek<'w, T, C, Q>(&mut self, w: &'w mut Worker<Q>) -> Result<SlotView<'w, T>, PopError>
    where
        T: Payload,
        C: StatusRef,
        Q: Deref<Target = XuQueue<T, C>>,
    {
        match self.poll(w) {
            0 => Err(PopError::Empty),
            _ => w.peek(),
        }
    }

    /// Before a poll of `w`: make the refresh its next pop or peek would
    /// make (its cache says empty) and count it, slipping at a streak.
    /// Returns the items ready: at 0 the caller reports empty without
    /// polling, so each empty poll reads the producer's cursor once and
    /// every refresh that finds items is one this guard counted.
    #[inline(always)]
    pub fn poll(&mut self, w: &mut impl Polled) -> u64 {
        if w.ready() == 0 {
            let fresh = w.refresh();
            self.observe(fresh, w);
        }
        w.ready()
    }

    /// A refresh of `w` found `fresh` items: count it, slipping at a streak
    /// (for a consumer that refreshes on its own; [`poll`](Self::poll)
    /// does both).
    #[inline]
    pub fn observe(&mut self, fresh: u64, w: &mut impl Polled) {
        if fresh == 0 {
            self.ran_dry = true;
            return;
        }
        let ran_dry = core::mem::take(&mut self.ran_dry);
        if fresh > LOCKSTEP_BATCH {
            self.streak = 0;
            return;
        }
        if !ran_dry {
            // Came back from other work and found items waiting: a busy
            // worker, not one spinning on the producer's lines.
            return;
        }
        self.streak += 1;
        if self.streak >= self.slip_after {
            self.streak = 0;
            self.slip(w);
        }
    }

    /// Stay off the shared lines for a moment, then refresh.
    #[cold]
    #[inline(never)]
    fn slip(&mut self, w: &mut impl Polled) {
        slip_wait();
        // A batch after the wait: the producer streams and got whole lines
        // ahead, so slip again at the next sign of lockstep. No batch: the
        // producer was waiting for us (a round trip) and the slip only
        // delayed it, so wait twice as long before the next one (without
        // the doubling the round trip read 2.5-2.7x of ping-pong instead of
        // about 1x; docs/perf.md).
        self.slip_after = if w.refresh() > LOCKSTEP_BATCH {
            LOCKSTEP_STREAK
        } else {
            (self.slip_after * 2).min(MAX_LOCKSTEP_STREAK)
        };
    }
}

/// A consumer whose polls a [`Pace`] watches: [`Worker`], or a benchmark's
/// peer ring.
pub trait Polled {
    /// Items its last look at the producer's cursor found and it has not
    /// taken yet (no memory read).
    fn ready(&self) -> u64;
    /// Look at the producer's cursor again; the items found.
    fn refresh(&mut self) -> u64;
}

impl<T, C, Q> Polled for Worker<Q>
where
    T: Payload,
    C: StatusRef,
    Q: Deref<Target = XuQueue<T, C>>,
{
    #[inline(always)]
    fn ready(&self) -> u64 {
        Worker::ready(self)
    }
    #[inline]
    fn refresh(&mut self) -> u64 {
        Worker::refresh(self)
    }
}

#[cfg(not(all(target_arch = "x86_64", not(miri))))]
use counted::slip_wait;
#[cfg(all(target_arch = "x86_64", not(miri)))]
use timed::slip_wait;

/// The TSC-timed wait.
#[cfg(all(target_arch = "x86_64", not(miri)))]
mod timed {
    /// The slip in TSC ticks: 1.58 us at the 2.6 GHz TSC of the host the
    /// slip was tuned on (where its 64 hints lasted 1.71 us), 1.0-2.0 us on
    /// 2-4 GHz parts. An invariant TSC runs at the nominal clock, and AMD
    /// parts do not report that clock, so the wait is given in ticks, not
    /// converted from a time.
    pub(super) const SLIP_TICKS: u64 = 4_096;

    /// The most hints a timed wait spends, whatever its counter says: a
    /// counter that stalls cannot hold the worker longer. A running counter
    /// ends the wait long before (each pass reads it, ~20+ ticks).
    pub(super) const MAX_TIMED_HINTS: u32 = 16_384;

    #[inline(always)]
    pub(super) fn tsc() -> u64 {
        // SAFETY: RDTSC reads a counter; it has no memory effects and every
        // x86_64 CPU implements it.
        unsafe { core::arch::x86_64::_rdtsc() }
    }

    /// Spin for the slip's time. Returns the hints spent.
    #[inline]
    pub(crate) fn slip_wait() -> u32 {
        wait_on(tsc, SLIP_TICKS)
    }

    /// Spin until `now()` has moved `wait` ticks past its first reading, or
    /// for [`MAX_TIMED_HINTS`] hints. Returns the hints spent.
    #[inline]
    pub(super) fn wait_on(mut now: impl FnMut() -> u64, wait: u64) -> u32 {
        let start = now();
        let mut hints = 0;
        // `wrapping_sub`: a reading behind the first (a migration between
        // unsynchronised counters) reads as a huge elapsed time and ends the
        // wait.
        while hints < MAX_TIMED_HINTS && now().wrapping_sub(start) < wait {
            crate::sync::spin_hint();
            hints += 1;
        }
        hints
    }
}

/// The hint-counted wait, where there is no counter to read.
#[cfg(not(all(target_arch = "x86_64", not(miri))))]
mod counted {
    /// The wait in spin hints.
    pub(super) const SLIP_HINTS: u32 = 64;

    /// Spin [`SLIP_HINTS`] hints. Returns the hints spent.
    #[inline]
    pub(crate) fn slip_wait() -> u32 {
        for _ in 0..SLIP_HINTS {
            crate::sync::spin_hint();
        }
        SLIP_HINTS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring::QueueConfig;
    use crate::wire::seq_id::XuId;

    /// Refreshes that follow an empty poll and find a few items count toward
    /// a slip however many empty polls came first; a slip that finds no
    /// batch doubles the streak before the next one and a slip that finds
    /// one ends the back-off; a refresh finding more than `LOCKSTEP_BATCH`
    /// items resets the count, and one that finds items without having run
    /// dry (a busy worker) leaves it alone.
    #[test]
    fn lockstep_refreshes_slip_and_lone_items_back_off() {
        let (mut p, mut w) =
            XuQueue::<u64>::owned(QueueConfig::new(XuId::new(0, 1, 2), 1024)).unwrap();
        let mut pace = Pace::new();
        let ok = NrtStatus::SUCCESS;
        // `empties` empty polls, then `n` items submitted and popped.
        let mut feed = |pace: &mut Pace, empties: usize, n: u64| {
            for _ in 0..empties {
                assert!(pace.pop(&mut w, ok).is_err());
            }
            for _ in 0..n {
                p.submit(0, None).unwrap();
                p.trigger_next().unwrap();
            }
            for _ in 0..n {
                assert!(pace.pop(&mut w, ok).is_ok());
            }
        };
        for k in 1..LOCKSTEP_STREAK {
            feed(&mut pace, 100, 1);
            assert_eq!(
                pace.streak, k,
                "a lone item after 100 empty polls is lockstep"
            );
        }
        // The streak's last refresh slips; nothing arrives during the slip
        // (one thread), so the next slip waits twice as long.
        feed(&mut pace, 1, LOCKSTEP_BATCH);
        assert_eq!((pace.streak, pace.slip_after), (0, 2 * LOCKSTEP_STREAK));
        feed(&mut pace, 1, 2);
        assert_eq!(pace.streak, 1);
        feed(&mut pace, 1, LOCKSTEP_BATCH + 1);
        assert_eq!(pace.streak, 0, "a batch is not lockstep");
        feed(&mut pace, 1, 1);
        feed(&mut pace, 0, 1);
        assert_eq!(
            pace.streak, 1,
            "items found without running dry count nothing"
        );
        // A whole doubled streak of lone items slips again and doubles again.
        for _ in 1..2 * LOCKSTEP_STREAK {
            feed(&mut pace, 3, 1);
        }
        assert_eq!((pace.streak, pace.slip_after), (0, 4 * LOCKSTEP_STREAK));
        // A slip that finds a batch (the producer got ahead while the worker
        // stayed off its lines) ends the back-off.
        for _ in 0..=LOCKSTEP_BATCH {
            p.submit(0, None).unwrap();
            p.trigger_next().unwrap();
        }
        pace.slip(&mut w);
        assert_eq!(
            pace.slip_after, LOCKSTEP_STREAK,
            "a slip that finds a batch"
        );
    }

    #[cfg(all(target_arch = "x86_64", not(miri), not(loom), feature = "std"))]
    mod timed {
        use super::super::timed::*;

        /// The slip lasts its ticks, and a running counter, not the hint
        /// bound, ends it.
        #[test]
        fn slip_waits_on_the_counter() {
            let start = tsc();
            let hints = slip_wait();
            let spent = tsc().wrapping_sub(start);
            assert!(spent >= SLIP_TICKS, "{spent} ticks < {SLIP_TICKS}");
            assert!(hints < MAX_TIMED_HINTS, "ended by the hint bound");
        }

        /// A stalled counter ends the wait at the hint bound; one that steps
        /// ends it once it has moved `wait` ticks (one hint per tick here);
        /// one that jumps backwards ends it at once.
        #[test]
        fn timed_wait_is_bounded() {
            assert_eq!(wait_on(|| 7, 100), MAX_TIMED_HINTS);
            let mut t = 0u64;
            let step = || {
                t += 1;
                t
            };
            assert_eq!(wait_on(step, 100), 99);
            let mut back = [1_000u64, 5].into_iter();
            assert_eq!(wait_on(|| back.next().unwrap_or(0), 100), 0);
        }
    }

    #[cfg(all(
        not(all(target_arch = "x86_64", not(miri))),
        not(loom),
        feature = "std"
    ))]
    mod counted {
        use super::super::counted::*;
        /// It spends its hints.
        #[test]
        fn slip_waits_on_the_counter() {
            assert_eq!(slip_wait(), SLIP_HINTS);
        }
    }
}
