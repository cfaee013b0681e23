//! The health of one XU and its reset (docs/abi.md §4 "The public async API
//! our surface mirrors").
//!
//! ```text
//! HEALTHY --schedule--> HEALTHY
//! HEALTHY --timeout|fatal_error--> DEGRADED
//! DEGRADED --timeout|fatal_error--> DEGRADED
//! DEGRADED --recover--> HEALTHY
//! HEALTHY|DEGRADED --reset--> STOPPING
//! STOPPING --timeout|fatal_error--> STOPPING
//! STOPPING --device_stopped--> DRAINING
//! DRAINING --timeout|fatal_error--> DRAINING
//! DRAINING --drained--> RESETTING
//! RESETTING --device_reset--> HEALTHY
//! ```
//!
//! After a timeout or a fatal device error the XU is unrecoverable until it
//! is brought back: `recover` (a fault the device reported in its own
//! record, queues in step, once drained) or the full reset, the runtime's
//! unload and reload: `reset` (the XU's worker asks the device to stop and
//! discard what it has queued), `device_stopped` (the device acknowledged:
//! every record it will ever write for the old requests is readable, so
//! whatever has not completed is aborted), `drained` (nothing in flight:
//! the device is asked to re-initialise its NQ rings), `device_reset` (done:
//! the ring, the descriptor rings, the NQ rings and the staging slots start
//! over in step). See `actors::work::HealthCell` and `actors::worker`.
//!
//! `schedule` is accepted only in `HEALTHY`. [`refusal`] gives the status a
//! refused `schedule` gets: `NRT_EXEC_UNIT_UNRECOVERABLE` (101) in
//! `DEGRADED`, `NRT_QUEUE_FULL` (retry later) while a reset runs. Executions
//! already in flight keep completing (with their own statuses), so further
//! timeouts or errors while degraded, stopping or draining are legal and
//! change nothing; one during `RESETTING` (nothing is in flight then) is
//! refused, a counted violation.

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
        /// A reset asked the device to stop: in-flight work still completes.
        Stopping = "STOPPING",
        /// The device stopped: what is in flight completes or is aborted.
        Draining = "DRAINING",
        /// Nothing in flight: the device re-initialises its queues.
        Resetting = "RESETTING",
    }
    /// What can happen to an XU's health.
    pub enum XuHealthEvent {
        /// A schedule call asks to be admitted.
        Schedule = "schedule",
        /// An execution on this XU timed out.
        Timeout = "timeout",
        /// The device reported a fatal error for this XU.
        FatalError = "fatal_error",
        /// The XU was drained after a fault its queues survived: it may
        /// schedule again.
        Recover = "recover",
        /// A full reset was asked for.
        Reset = "reset",
        /// The device acknowledged the stop.
        DeviceStopped = "device_stopped",
        /// Every execution in flight has completed.
        Drained = "drained",
        /// The device re-initialised its queues.
        DeviceReset = "device_reset",
    }
    rows {
        Healthy + Schedule => Healthy,
        Healthy + Timeout => Degraded,
        Healthy + FatalError => Degraded,
        Degraded + Timeout => Degraded,
        Degraded + FatalError => Degraded,
        Degraded + Recover => Healthy,
        Healthy + Reset => Stopping,
        Degraded + Reset => Stopping,
        Stopping + Timeout => Stopping,
        Stopping + FatalError => Stopping,
        Stopping + DeviceStopped => Draining,
        Draining + Timeout => Draining,
        Draining + FatalError => Draining,
        Draining + Drained => Resetting,
        Resetting + DeviceReset => Healthy,
    }
}

/// The status a schedule call refused in `state` gets: a degraded XU
/// refuses with `NRT_EXEC_UNIT_UNRECOVERABLE` (101), one being reset with
/// `NRT_QUEUE_FULL` (the reset ends by itself: retry later).
pub const fn refusal(state: XuHealthState) -> NrtStatus {
    match state {
        XuHealthState::Healthy | XuHealthState::Degraded => NrtStatus::EXEC_UNIT_UNRECOVERABLE,
        XuHealthState::Stopping | XuHealthState::Draining | XuHealthState::Resetting => {
            NrtStatus::QUEUE_FULL
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsm::{check_table, render_table, step};
    use XuHealthEvent as E;
    use XuHealthState as S;

    /// Admit a schedule call as the lane does: `Ok` when healthy, else
    /// the status the caller gets.
    fn admit(state: XuHealthState) -> Result<XuHealthState, NrtStatus> {
        step::<XuHealth>(state, E::Schedule).map_err(|e| refusal(e.state))
    }

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

    /// The reset walks STOPPING -> DRAINING -> RESETTING -> HEALTHY; a
    /// schedule meanwhile is a transient refusal (QUEUE_FULL), and an event
    /// a state does not accept is an error value (the caller counts it).
    #[test]
    fn reset_walks_its_states_and_refuses_the_rest() {
        for from in [S::Healthy, S::Degraded] {
            let mut s = step::<XuHealth>(from, E::Reset).unwrap();
            assert_eq!(s, S::Stopping);
            for (e, to) in [
                (E::Timeout, S::Stopping),
                (E::DeviceStopped, S::Draining),
                (E::FatalError, S::Draining),
                (E::Drained, S::Resetting),
                (E::DeviceReset, S::Healthy),
            ] {
                if s != S::Healthy {
                    assert_eq!(admit(s), Err(NrtStatus::QUEUE_FULL), "{s:?}");
                }
                s = step::<XuHealth>(s, e).unwrap();
                assert_eq!(s, to);
            }
        }
        for (s, e) in [
            (S::Resetting, E::Timeout),
            (S::Resetting, E::Reset),
            (S::Stopping, E::Reset),
            (S::Stopping, E::Drained),
            (S::Draining, E::DeviceReset),
            (S::Healthy, E::DeviceStopped),
            (S::Degraded, E::Drained),
        ] {
            let err = step::<XuHealth>(s, e).unwrap_err();
            assert_eq!((err.state, err.event), (s, e));
        }
    }
}
