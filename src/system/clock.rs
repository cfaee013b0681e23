//! The two clocks a runner hands its actors (as [`Nanos`] in
//! [`crate::actors::Cx`]): a virtual clock for deterministic runs and a
//! monotonic wall clock for threaded runs. Actors never read either
//! directly.

use std::time::Instant;

use crate::sim::events::Nanos;

/// The deterministic runner's clock: it advances by a fixed quantum per poll
/// and jumps forward when nobody can make progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VirtualClock {
    now: Nanos,
    quantum: Nanos,
}

impl VirtualClock {
    /// A clock at zero that advances `quantum` per poll.
    pub const fn new(quantum: Nanos) -> VirtualClock {
        VirtualClock {
            now: Nanos::ZERO,
            quantum,
        }
    }

    /// The current virtual time.
    pub const fn now(&self) -> Nanos {
        self.now
    }

    /// Advance by one quantum (after a poll).
    pub fn tick(&mut self) {
        self.now = self.now.saturating_add(self.quantum);
    }

    /// Jump forward to `t`; a time in the past is ignored (the clock is
    /// monotone). Returns the new time.
    pub fn jump_to(&mut self, t: Nanos) -> Nanos {
        if t > self.now {
            self.now = t;
        }
        self.now
    }
}

/// The threaded runner's clock: nanoseconds since the runner started.
#[derive(Clone, Copy, Debug)]
pub struct MonotonicClock {
    origin: Instant,
}

impl MonotonicClock {
    /// A clock whose zero is now.
    pub fn start() -> MonotonicClock {
        MonotonicClock {
            origin: Instant::now(),
        }
    }

    /// Nanoseconds since [`MonotonicClock::start`] (saturating).
    pub fn now(&self) -> Nanos {
        Nanos(u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_clock_ticks_and_only_jumps_forward() {
        let mut c = VirtualClock::new(Nanos(100));
        assert_eq!(c.now(), Nanos(0));
        c.tick();
        c.tick();
        assert_eq!(c.now(), Nanos(200));
        assert_eq!(c.jump_to(Nanos(50)), Nanos(200));
        assert_eq!(c.jump_to(Nanos(5_000)), Nanos(5_000));
    }

    #[test]
    fn monotonic_clock_does_not_go_back() {
        let c = MonotonicClock::start();
        let a = c.now();
        let b = c.now();
        assert!(b >= a);
    }
}
