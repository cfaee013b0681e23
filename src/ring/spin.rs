//! A short busy wait measured on the CPU's own counter: the worker's
//! lockstep slip ([`super::queue`], `Worker::refresh`).
//!
//! A spin hint's cost differs by an order of magnitude between cores
//! (`PAUSE`: about 10 cycles on Intel before Skylake and 140 since, 10 or 50
//! on AMD parts by their generation, 69 TSC ticks on the Zen 4 host
//! docs/perf.md measures), so a wait counted in hints lasts a different time
//! on every host, and where a hint is cheap the slip is too short to let the
//! producer get ahead (docs/perf.md, session 12). This wait reads a
//! free-running counter instead: the TSC on x86_64, `CNTVCT_EL0` on aarch64.
//! Elsewhere, and under Miri, it counts hints.

/// How long a slip lasts: 1.6 us, what [`SLIP_HINTS`] hints last on the
/// Zen 4 host the slip was measured on.
#[cfg(all(target_arch = "aarch64", not(miri)))]
const SLIP_NS: u64 = 1_600;

/// The slip in TSC ticks. The TSC runs at the processor's nominal clock
/// (2.6 GHz on the host above: 1.6 us; 1.0-2.0 us on 2-4 GHz parts). Its
/// frequency is not architecturally readable on AMD, so the wait is given in
/// ticks rather than converted from [`SLIP_NS`].
#[cfg(all(target_arch = "x86_64", not(miri)))]
const SLIP_TICKS: u64 = 4_096;

/// The wait in spin hints where there is no counter to read.
const SLIP_HINTS: u32 = 64;

/// The bound on a timed wait's hints: 256x what a wait of [`SLIP_HINTS`]
/// spends, so a running counter always ends the wait first, even where a
/// hint costs a nanosecond.
#[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), not(miri)))]
const MAX_TIMED_HINTS: u32 = 256 * SLIP_HINTS;

#[cfg(all(target_arch = "x86_64", not(miri)))]
#[inline(always)]
fn ticks() -> u64 {
    // SAFETY: RDTSC reads a counter; it has no memory effects and every
    // x86_64 CPU implements it.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
#[inline(always)]
fn slip_ticks() -> u64 {
    SLIP_TICKS
}

#[cfg(all(target_arch = "aarch64", not(miri)))]
#[inline(always)]
fn ticks() -> u64 {
    let v: u64;
    // SAFETY: reads the virtual count register, which Linux and bare-metal
    // EL1 code may read; no memory is touched.
    unsafe {
        core::arch::asm!("mrs {}, cntvct_el0", out(reg) v, options(nomem, nostack, preserves_flags))
    };
    v
}

#[cfg(all(target_arch = "aarch64", not(miri)))]
#[inline(always)]
fn slip_ticks() -> u64 {
    let hz: u64;
    // SAFETY: reads the counter's frequency register; no memory is touched.
    unsafe {
        core::arch::asm!("mrs {}, cntfrq_el0", out(reg) hz, options(nomem, nostack, preserves_flags))
    };
    // At least one tick, so a zero frequency register still waits.
    (hz * SLIP_NS / 1_000_000_000).max(1)
}

/// Spin for the slip's time (or [`SLIP_HINTS`] hints without a counter).
/// Returns the hints spent.
#[cold]
#[inline(never)]
pub(crate) fn slip_wait() -> u32 {
    #[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), not(miri)))]
    {
        let (start, wait) = (ticks(), slip_ticks());
        let mut hints = 0;
        // `wrapping_sub`: a counter read on another core that is behind the
        // first (a migration between unsynchronised counters) reads as a
        // huge elapsed time and ends the wait.
        while hints < MAX_TIMED_HINTS && ticks().wrapping_sub(start) < wait {
            crate::sync::spin_hint();
            hints += 1;
        }
        hints
    }
    #[cfg(not(all(any(target_arch = "x86_64", target_arch = "aarch64"), not(miri))))]
    {
        for _ in 0..SLIP_HINTS {
            crate::sync::spin_hint();
        }
        SLIP_HINTS
    }
}

#[cfg(all(test, not(loom), feature = "std"))]
mod tests {
    use super::*;

    /// The wait lasts about its time, whatever a hint costs: at least the
    /// slip's ticks (or hints) pass, and the hint bound is never what ends
    /// it on a running counter.
    #[test]
    fn slip_waits_on_the_counter() {
        #[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), not(miri)))]
        {
            // On x86_64 the length is the constant itself, so a mutant of
            // `slip_ticks` cannot move both sides of the check.
            #[cfg(target_arch = "x86_64")]
            let want = SLIP_TICKS;
            #[cfg(target_arch = "aarch64")]
            let want = slip_ticks();
            let start = ticks();
            let hints = slip_wait();
            let spent = ticks().wrapping_sub(start);
            assert!(spent >= want, "{spent} ticks < {want}");
            assert!(hints < MAX_TIMED_HINTS, "ended by the hint bound");
        }
        #[cfg(not(all(any(target_arch = "x86_64", target_arch = "aarch64"), not(miri))))]
        assert_eq!(slip_wait(), SLIP_HINTS);
    }
}
