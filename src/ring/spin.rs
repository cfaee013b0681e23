//! A short busy wait measured on the CPU's own counter: the worker's
//! lockstep slip ([`super::queue`], `Worker::refresh`).
//!
//! A spin hint's cost is a property of the core: `PAUSE` takes about 10
//! cycles on Intel before Skylake and about 140 since, and 10 or 50 on AMD
//! parts by generation (docs/perf.md, "Measurements behind the design", with the sources and this
//! project's host's 69 TSC ticks). A wait counted in hints therefore lasts a
//! different time on every host, and where a hint is cheap the slip is too
//! short to let the producer get ahead. On x86_64 this wait reads the TSC
//! instead. Elsewhere, and under Miri, it counts hints (an ARM wait on
//! `CNTVCT_EL0` would be the same idea, unmeasured so far).

#[cfg(not(all(target_arch = "x86_64", not(miri))))]
pub(crate) use counted::slip_wait;
#[cfg(all(target_arch = "x86_64", not(miri)))]
pub(crate) use timed::slip_wait;

/// The TSC-timed wait.
#[cfg(all(target_arch = "x86_64", not(miri)))]
mod timed {
    /// The slip in TSC ticks: 1.58 us at the 2.6 GHz TSC of the host the
    /// slip was tuned on (where its 64 hints lasted 1.71 us), 1.0-2.0 us on
    /// 2-4 GHz parts. An invariant TSC runs at the nominal clock, and AMD
    /// parts do not report that clock, so the wait is given in ticks, not
    /// converted from a time.
    const SLIP_TICKS: u64 = 4_096;

    /// The most hints a timed wait spends, whatever its counter says: a
    /// counter that stalls cannot hold the worker longer. A running counter
    /// ends the wait long before (each pass reads it, ~20+ ticks).
    const MAX_TIMED_HINTS: u32 = 16_384;

    #[inline(always)]
    fn tsc() -> u64 {
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
    fn wait_on(mut now: impl FnMut() -> u64, wait: u64) -> u32 {
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

    #[cfg(all(test, not(loom), feature = "std"))]
    mod tests {
        use super::*;

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
}

/// The hint-counted wait, where there is no counter to read.
#[cfg(not(all(target_arch = "x86_64", not(miri))))]
mod counted {
    /// The wait in spin hints.
    const SLIP_HINTS: u32 = 64;

    /// Spin [`SLIP_HINTS`] hints. Returns the hints spent.
    #[inline]
    pub(crate) fn slip_wait() -> u32 {
        for _ in 0..SLIP_HINTS {
            crate::sync::spin_hint();
        }
        SLIP_HINTS
    }

    #[cfg(all(test, not(loom), feature = "std"))]
    mod tests {
        /// It spends its hints.
        #[test]
        fn slip_waits_on_the_counter() {
            assert_eq!(super::slip_wait(), super::SLIP_HINTS);
        }
    }
}
