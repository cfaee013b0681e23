//! The Worker's cycle for one XU (docs/abi.md §1.6, §1.8, §1.9).
//!
//! ```text
//! IDLE --sleep--> SLEEPING --wake--> IDLE
//! IDLE --peek--> CURRENT                      (acquire on scheduled_head)
//! CURRENT --exec_done|timed_out|aborted--> HARVESTED  (the final NQ record, the deadline, or a reset)
//! HARVESTED --fill_resp--> RESP_FILLED        (infer_resp_t: timings, status)
//! RESP_FILLED --write_status--> STATUS_WRITTEN (the caller's exec_status)
//! STATUS_WRITTEN --report_counters--> COUNTERS_REPORTED (to the NDS publisher)
//! COUNTERS_REPORTED --return_item--> ITEM_RETURNED (work item back to the pool)
//! ITEM_RETURNED --pop--> POPPED               (capture, then exec_head += 1)
//! POPPED --signal_waiter--> IDLE              (write(mark_comp_efd, 1) if any)
//! ```
//!
//! The order after the harvest is the ABI's: the status is written before
//! completion is observable (docs/abi.md §4), the work item is
//! released after its last read (the counter step reads it) and before the
//! pop (docs/abi.md §1.6), and the waiter is signalled after `exec_head`
//! moved (docs/abi.md §1.8, §1.9 consumer ordering). Every other order is an
//! [`InvalidEvent`](super::InvalidEvent).
//!
//! There is no per-record step: the core's `Harvester` consumes the
//! non-final NQ records itself and hands the worker only an execution's end
//! (done, error or timeout), so the worker stays in `CURRENT` until then.

super::machine! {
    /// The worker cycle machine (named so it is not confused with the Worker actor).
    pub struct WorkerCycle = "worker";
    /// Where the worker is in its cycle.
    pub enum WorkerState {
        /// Awake with no current execution.
        Idle = "IDLE",
        /// Waiting on the has-work eventfd.
        Sleeping = "SLEEPING",
        /// Peeked a triggered slot; harvesting its NQ records until it ends.
        Current = "CURRENT",
        /// The execution ended (done record, or timeout).
        Harvested = "HARVESTED",
        /// `infer_resp_t` is filled.
        RespFilled = "RESP_FILLED",
        /// The caller's `exec_status` is written.
        StatusWritten = "STATUS_WRITTEN",
        /// Counter updates handed to the NDS publisher.
        CountersReported = "COUNTERS_REPORTED",
        /// The work item is back in the pool.
        ItemReturned = "ITEM_RETURNED",
        /// `exec_head` advanced (slot captured first).
        Popped = "POPPED",
    }
    /// One step of the worker's cycle.
    pub enum WorkerEvent {
        /// Nothing triggered: go to sleep on the has-work eventfd.
        Sleep = "sleep",
        /// The eventfd fired (or the wait timed out): look again.
        Wake = "wake",
        /// A triggered slot is visible.
        Peek = "peek",
        /// The final (done or error) NQ record of the current execution.
        ExecDone = "exec_done",
        /// The execution's deadline passed without a final record.
        TimedOut = "timed_out",
        /// The XU is being reset and the stopped device will write no more
        /// records for the execution: it ends now.
        Aborted = "aborted",
        /// Fill `infer_resp_t`.
        FillResp = "fill_resp",
        /// Write the caller's status.
        WriteStatus = "write_status",
        /// Report counter updates.
        ReportCounters = "report_counters",
        /// Return the work item to the pool.
        ReturnItem = "return_item",
        /// Capture the slot, then advance `exec_head`.
        Pop = "pop",
        /// Signal the waiter's eventfd (a no-op step when there is none).
        SignalWaiter = "signal_waiter",
    }
    rows {
        Idle + Sleep => Sleeping,
        Sleeping + Wake => Idle,
        Idle + Peek => Current,
        Current + ExecDone => Harvested,
        Current + TimedOut => Harvested,
        Current + Aborted => Harvested,
        Harvested + FillResp => RespFilled,
        RespFilled + WriteStatus => StatusWritten,
        StatusWritten + ReportCounters => CountersReported,
        CountersReported + ReturnItem => ItemReturned,
        ItemReturned + Pop => Popped,
        Popped + SignalWaiter => Idle,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsm::{check_table, render_table, step};
    use WorkerEvent as E;
    use WorkerState as S;

    /// The completion steps after the harvest, in the only legal order.
    const COMPLETION: [WorkerEvent; 6] = [
        E::FillResp,
        E::WriteStatus,
        E::ReportCounters,
        E::ReturnItem,
        E::Pop,
        E::SignalWaiter,
    ];

    #[test]
    fn every_state_and_event_is_in_a_row() {
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
