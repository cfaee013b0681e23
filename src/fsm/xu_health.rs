//! The health of one XU (docs/abi.md §4 "The public async API our
//! surface mirrors").
//!
//! ```text
//! HEALTHY --schedule--> HEALTHY
//! HEALTHY --timeout|fatal_error--> DEGRADED
//! DEGRADED --timeout|fatal_error--> DEGRADED
//! DEGRADED --recover--> HEALTHY
//! ```
//!
//! After a timeout or a fatal device error the XU is unrecoverable until it
//! is explicitly recovered (`recover`: the runtime's reset, once the XU has
//! drained, see `actors::work::HealthCell::recover`), and `schedule` in
//! `DEGRADED` is an
//! [`InvalidEvent`](super::InvalidEvent) that [`admit`] maps to
//! `NRT_EXEC_UNIT_UNRECOVERABLE` (101). Executions already in flight keep
//! completing (with their own statuses), so further timeouts or errors while
//! degraded are legal and change nothing.

use super::step;
use crate::wire::status::NrtStatus;

super::machine! {
    /// The XU health machine.
    pub struct XuHealth = "xu_health";
    /// The health of an XU.
    pub enum XuHealthState {
        /// Schedules are accepted.
        Healthy = "HEALTHY",
        /// Unrecoverable: every schedule is refused with 101.
        Degraded = "DEGRADED",
    }
    /// What can happen to an XU's health.
    pub enum XuHealthEvent {
        /// A schedule call asks to be admitted.
        Schedule = "schedule",
        /// An execution on this XU timed out.
        Timeout = "timeout",
        /// The device reported a fatal error for this XU.
        FatalError = "fatal_error",
        /// The XU was drained and reset: it may schedule again.
        Recover = "recover",
    }
    rows {
        Healthy + Schedule => Healthy,
        Healthy + Timeout => Degraded,
        Healthy + FatalError => Degraded,
        Degraded + Timeout => Degraded,
        Degraded + FatalError => Degraded,
        Degraded + Recover => Healthy,
    }
}

use XuHealthEvent as E;
#[cfg(test)]
use XuHealthState as S;

/// Admit a schedule call: `Ok` when healthy, else the status the caller gets,
/// `NRT_EXEC_UNIT_UNRECOVERABLE` (101).
pub fn admit(state: XuHealthState) -> Result<XuHealthState, NrtStatus> {
    step::<XuHealth>(state, E::Schedule).map_err(|_| NrtStatus::EXEC_UNIT_UNRECOVERABLE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsm::{check_table, render_table};

    #[test]
    fn every_state_and_event_is_in_a_row() {
        check_table::<XuHealth>().unwrap();
    }

    #[test]
    #[cfg_attr(miri, ignore = "insta reads the snapshot file (Miri isolation)")]
    fn table_snapshot() {
        insta::assert_snapshot!(render_table::<XuHealth>());
    }

    #[test]
    fn degraded_refuses_every_schedule_with_101() {
        assert_eq!(admit(S::Healthy), Ok(S::Healthy));
        for e in [E::Timeout, E::FatalError] {
            let d = step::<XuHealth>(S::Healthy, e).unwrap();
            assert_eq!(d, S::Degraded);
            for _ in 0..3 {
                let err = admit(d).unwrap_err();
                assert_eq!(err, NrtStatus::EXEC_UNIT_UNRECOVERABLE);
                assert_eq!(err.code(), 101);
            }
            // Further failures keep it degraded; only a recovery ends it.
            assert_eq!(step::<XuHealth>(d, E::Timeout), Ok(S::Degraded));
            assert_eq!(step::<XuHealth>(d, E::FatalError), Ok(S::Degraded));
            assert_eq!(step::<XuHealth>(d, E::Recover), Ok(S::Healthy));
            assert!(step::<XuHealth>(S::Healthy, E::Recover).is_err());
        }
    }
}
