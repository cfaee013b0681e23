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

use super::{step, Fsm, Row};
use crate::wire::status::NrtStatus;

/// The health of an XU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum XuHealthState {
    /// Schedules are accepted.
    Healthy,
    /// Unrecoverable: every schedule is refused with 101.
    Degraded,
}

/// What can happen to an XU's health.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum XuHealthEvent {
    /// A schedule call asks to be admitted.
    Schedule,
    /// An execution on this XU timed out.
    Timeout,
    /// The device reported a fatal error for this XU.
    FatalError,
    /// The XU was drained and reset: it may schedule again.
    Recover,
}

/// The XU health machine.
#[derive(Clone, Copy, Debug)]
pub struct XuHealth;

use XuHealthEvent as E;
use XuHealthState as S;

impl Fsm for XuHealth {
    type State = XuHealthState;
    type Event = XuHealthEvent;
    const NAME: &'static str = "xu_health";
    const TABLE: &'static [Row<S, E>] = &[
        Row {
            from: S::Healthy,
            event: E::Schedule,
            to: S::Healthy,
        },
        Row {
            from: S::Healthy,
            event: E::Timeout,
            to: S::Degraded,
        },
        Row {
            from: S::Healthy,
            event: E::FatalError,
            to: S::Degraded,
        },
        Row {
            from: S::Degraded,
            event: E::Timeout,
            to: S::Degraded,
        },
        Row {
            from: S::Degraded,
            event: E::FatalError,
            to: S::Degraded,
        },
        Row {
            from: S::Degraded,
            event: E::Recover,
            to: S::Healthy,
        },
    ];
    const STATES: &'static [S] = &[S::Healthy, S::Degraded];
    const EVENTS: &'static [E] = &[E::Schedule, E::Timeout, E::FatalError, E::Recover];

    fn transition(state: S, event: E) -> Option<S> {
        match (state, event) {
            (S::Healthy, E::Schedule) => Some(S::Healthy),
            (_, E::Timeout | E::FatalError) => Some(S::Degraded),
            (S::Degraded, E::Schedule) => None,
            (S::Degraded, E::Recover) => Some(S::Healthy),
            (S::Healthy, E::Recover) => None,
        }
    }

    fn state_name(state: S) -> &'static str {
        match state {
            S::Healthy => "HEALTHY",
            S::Degraded => "DEGRADED",
        }
    }

    fn event_name(event: E) -> &'static str {
        match event {
            E::Schedule => "schedule",
            E::Timeout => "timeout",
            E::FatalError => "fatal_error",
            E::Recover => "recover",
        }
    }
}

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
    fn table_and_function_agree() {
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
