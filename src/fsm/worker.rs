//! The Worker's cycle for one XU (docs/abi.md §1.6, §1.8, §1.9).
//!
//! ```text
//! IDLE --sleep--> SLEEPING --wake--> IDLE
//! IDLE --peek--> CURRENT                      (acquire on scheduled_head)
//! CURRENT --exec_done|timed_out--> HARVESTED  (the final NQ record, or the deadline)
//! HARVESTED --fill_resp--> RESP_FILLED        (infer_resp_t: timings, status)
//! RESP_FILLED --write_status--> STATUS_WRITTEN (the caller's exec_status)
//! STATUS_WRITTEN --report_counters--> COUNTERS_REPORTED (to the NDS publisher)
//! COUNTERS_REPORTED --return_item--> ITEM_RETURNED (work item back to the pool)
//! ITEM_RETURNED --pop--> POPPED               (capture, then exec_head += 1)
//! POPPED --signal_waiter--> IDLE              (write(mark_comp_efd, 1) if any)
//! ```
//!
//! The order after the harvest is the seed's: the status is written before
//! completion is observable (docs/abi.md §4), the work item is
//! released after its last read (the counter step reads it) and before the
//! pop (docs/abi.md §1.6), and the waiter is signalled after `exec_head`
//! moved (docs/abi.md §1.8, §1.9 consumer ordering). Every other order is an
//! [`InvalidEvent`](super::InvalidEvent).
//!
//! There is no per-record step: the core's `Harvester` consumes the
//! non-final NQ records itself and hands the worker only an execution's end
//! (done, error or timeout), so the worker stays in `CURRENT` until then.

use super::{Fsm, Row};

/// Where the worker is in its cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WorkerState {
    /// Awake with no current execution.
    Idle,
    /// Waiting on the has-work eventfd.
    Sleeping,
    /// Peeked a triggered slot; harvesting its NQ records until it ends.
    Current,
    /// The execution ended (done record, or timeout).
    Harvested,
    /// `infer_resp_t` is filled.
    RespFilled,
    /// The caller's `exec_status` is written.
    StatusWritten,
    /// Counter updates handed to the NDS publisher.
    CountersReported,
    /// The work item is back in the pool.
    ItemReturned,
    /// `exec_head` advanced (slot captured first).
    Popped,
}

/// One step of the worker's cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WorkerEvent {
    /// Nothing triggered: go to sleep on the has-work eventfd.
    Sleep,
    /// The eventfd fired (or the wait timed out): look again.
    Wake,
    /// A triggered slot is visible.
    Peek,
    /// The final (done or error) NQ record of the current execution.
    ExecDone,
    /// The execution's deadline passed without a final record.
    TimedOut,
    /// Fill `infer_resp_t`.
    FillResp,
    /// Write the caller's status.
    WriteStatus,
    /// Report counter updates.
    ReportCounters,
    /// Return the work item to the pool.
    ReturnItem,
    /// Capture the slot, then advance `exec_head`.
    Pop,
    /// Signal the waiter's eventfd (a no-op step when there is none).
    SignalWaiter,
}

/// The worker cycle machine (named so it is not confused with the Worker actor).
#[derive(Clone, Copy, Debug)]
pub struct WorkerCycle;

use WorkerEvent as E;
use WorkerState as S;

const fn row(from: S, event: E, to: S) -> Row<S, E> {
    Row { from, event, to }
}

impl Fsm for WorkerCycle {
    type State = WorkerState;
    type Event = WorkerEvent;
    const NAME: &'static str = "worker";
    const TABLE: &'static [Row<S, E>] = &[
        row(S::Idle, E::Sleep, S::Sleeping),
        row(S::Sleeping, E::Wake, S::Idle),
        row(S::Idle, E::Peek, S::Current),
        row(S::Current, E::ExecDone, S::Harvested),
        row(S::Current, E::TimedOut, S::Harvested),
        row(S::Harvested, E::FillResp, S::RespFilled),
        row(S::RespFilled, E::WriteStatus, S::StatusWritten),
        row(S::StatusWritten, E::ReportCounters, S::CountersReported),
        row(S::CountersReported, E::ReturnItem, S::ItemReturned),
        row(S::ItemReturned, E::Pop, S::Popped),
        row(S::Popped, E::SignalWaiter, S::Idle),
    ];
    const STATES: &'static [S] = &[
        S::Idle,
        S::Sleeping,
        S::Current,
        S::Harvested,
        S::RespFilled,
        S::StatusWritten,
        S::CountersReported,
        S::ItemReturned,
        S::Popped,
    ];
    const EVENTS: &'static [E] = &[
        E::Sleep,
        E::Wake,
        E::Peek,
        E::ExecDone,
        E::TimedOut,
        E::FillResp,
        E::WriteStatus,
        E::ReportCounters,
        E::ReturnItem,
        E::Pop,
        E::SignalWaiter,
    ];

    fn transition(state: S, event: E) -> Option<S> {
        match (state, event) {
            (S::Idle, E::Sleep) => Some(S::Sleeping),
            (S::Sleeping, E::Wake) => Some(S::Idle),
            (S::Idle, E::Peek) => Some(S::Current),
            (S::Current, E::ExecDone | E::TimedOut) => Some(S::Harvested),
            (S::Harvested, E::FillResp) => Some(S::RespFilled),
            (S::RespFilled, E::WriteStatus) => Some(S::StatusWritten),
            (S::StatusWritten, E::ReportCounters) => Some(S::CountersReported),
            (S::CountersReported, E::ReturnItem) => Some(S::ItemReturned),
            (S::ItemReturned, E::Pop) => Some(S::Popped),
            (S::Popped, E::SignalWaiter) => Some(S::Idle),
            _ => None,
        }
    }

    fn state_name(state: S) -> &'static str {
        match state {
            S::Idle => "IDLE",
            S::Sleeping => "SLEEPING",
            S::Current => "CURRENT",
            S::Harvested => "HARVESTED",
            S::RespFilled => "RESP_FILLED",
            S::StatusWritten => "STATUS_WRITTEN",
            S::CountersReported => "COUNTERS_REPORTED",
            S::ItemReturned => "ITEM_RETURNED",
            S::Popped => "POPPED",
        }
    }

    fn event_name(event: E) -> &'static str {
        match event {
            E::Sleep => "sleep",
            E::Wake => "wake",
            E::Peek => "peek",
            E::ExecDone => "exec_done",
            E::TimedOut => "timed_out",
            E::FillResp => "fill_resp",
            E::WriteStatus => "write_status",
            E::ReportCounters => "report_counters",
            E::ReturnItem => "return_item",
            E::Pop => "pop",
            E::SignalWaiter => "signal_waiter",
        }
    }
}

/// The completion steps after the harvest, in the only legal order.
pub const COMPLETION: [WorkerEvent; 6] = [
    E::FillResp,
    E::WriteStatus,
    E::ReportCounters,
    E::ReturnItem,
    E::Pop,
    E::SignalWaiter,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsm::{check_table, render_table, step};

    #[test]
    fn table_and_function_agree() {
        check_table::<WorkerCycle>().unwrap();
    }

    #[test]
    #[cfg_attr(miri, ignore = "insta reads the snapshot file (Miri isolation)")]
    fn table_snapshot() {
        insta::assert_snapshot!(render_table::<WorkerCycle>());
    }

    fn run(events: &[WorkerEvent]) -> Result<WorkerState, (usize, WorkerState)> {
        let mut s = S::Idle;
        for (i, e) in events.iter().enumerate() {
            s = step::<WorkerCycle>(s, *e).map_err(|err| (i, err.state))?;
        }
        Ok(s)
    }

    #[test]
    fn full_cycles_return_to_idle() {
        let mut ev = vec![E::Sleep, E::Wake, E::Peek, E::ExecDone];
        ev.extend(COMPLETION);
        ev.extend([E::Peek, E::ExecDone]);
        ev.extend(COMPLETION);
        ev.extend([E::Peek, E::TimedOut]);
        ev.extend(COMPLETION);
        assert_eq!(run(&ev), Ok(S::Idle));
    }

    #[test]
    fn completion_steps_only_in_seed_order() {
        // Swapping any two adjacent completion steps is refused.
        for i in 0..COMPLETION.len() - 1 {
            let mut c = COMPLETION;
            c.swap(i, i + 1);
            let mut ev = vec![E::Peek, E::ExecDone];
            ev.extend(c);
            assert_eq!(run(&ev).unwrap_err().0, 2 + i, "{c:?}");
        }
        // Popping before the item is returned (use-after-free, docs/abi.md §1.6
        // QUIRK) and signalling before the pop (docs/abi.md §1.9) are refused.
        assert!(step::<WorkerCycle>(S::CountersReported, E::Pop).is_err());
        assert!(step::<WorkerCycle>(S::ItemReturned, E::SignalWaiter).is_err());
        // No execution end without a peeked slot; no sleeping mid-execution.
        assert!(step::<WorkerCycle>(S::Idle, E::ExecDone).is_err());
        assert!(step::<WorkerCycle>(S::Idle, E::TimedOut).is_err());
        assert!(step::<WorkerCycle>(S::Current, E::Sleep).is_err());
        assert!(step::<WorkerCycle>(S::Sleeping, E::Peek).is_err());
    }
}
