//! XU ring slot lifecycle FREE -> SUBMITTED -> TRIGGERED -> DONE -> FREE
//! (docs/abi.md §1.2 "the slot lifecycle, byte view", docs/abi.md §1.9).
//!
//! The ring keeps no per-slot state word: a slot's state is a function of the
//! three cursors (`[exec_head, scheduled_head)` is TRIGGERED,
//! `[scheduled_head, scheduled_tail)` is SUBMITTED, the rest is FREE) plus the
//! worker's own "status written" step (DONE). Every cursor move in
//! [`crate::ring`] first derives the slot's state and asks this machine for the
//! transition, so an illegal move (trigger past the tail, pop of an untriggered
//! slot, a second submit into an occupied slot) is an [`InvalidEvent`] value.
//!
//! | from | event | to | who |
//! |---|---|---|---|
//! | FREE | Submit | SUBMITTED | producer: body written, `scheduled_tail` published |
//! | SUBMITTED | Trigger | TRIGGERED | producer: `scheduled_head` published (release to the worker) |
//! | TRIGGERED | Complete | DONE | worker: status written through `exec_status` |
//! | DONE | Reclaim | FREE | worker: slot captured, `exec_head` advanced |
//!
//! [`InvalidEvent`]: crate::fsm::InvalidEvent

super::machine! {
    /// The slot lifecycle machine.
    pub struct SlotFsm = "xu_slot";
    /// Where one ring slot is in its life.
    pub enum SlotState {
        /// In the producer's free region (`index >= scheduled_tail` or reclaimed).
        Free = "FREE",
        /// Body written and `scheduled_tail` published; not yet visible to the worker.
        Submitted = "SUBMITTED",
        /// `scheduled_head` published past it: the worker may read it.
        Triggered = "TRIGGERED",
        /// The worker wrote the status; completion not yet published.
        Done = "DONE",
    }
    /// What can happen to a slot.
    pub enum SlotEvent {
        /// `xuq_client_submit`: write the body, publish `scheduled_tail`.
        Submit = "submit",
        /// `xuq_client_trigger_next`: publish `scheduled_head`.
        Trigger = "trigger",
        /// The worker finished the execution and wrote its status.
        Complete = "complete",
        /// `xuq_worker_pop_current_exec`: capture, then advance `exec_head`.
        Reclaim = "reclaim",
    }
    rows {
        Free + Submit => Submitted,
        Submitted + Trigger => Triggered,
        Triggered + Complete => Done,
        Done + Reclaim => Free,
    }
}

/// The state of the slot holding cursor value `seq_num`, derived from the
/// three cursors (docs/abi.md §1.2: the cursor regions). `exec_head <=
/// scheduled_head <= scheduled_tail` is the ring invariant; DONE is never
/// derived (it exists only inside the worker between status write and
/// reclaim).
#[inline]
pub fn derive(seq_num: u64, exec_head: u64, scheduled_head: u64, scheduled_tail: u64) -> SlotState {
    if seq_num < exec_head || seq_num >= scheduled_tail {
        SlotState::Free
    } else if seq_num < scheduled_head {
        SlotState::Triggered
    } else {
        SlotState::Submitted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsm::{check_table, render_table, step, step_traced, Transition};

    #[test]
    fn every_state_and_event_is_in_a_row() {
        check_table::<SlotFsm>().unwrap();
    }

    #[test]
    fn full_cycle_and_illegal_events() {
        let mut trace: Vec<Transition> = Vec::new();
        let mut s = SlotState::Free;
        for e in [
            SlotEvent::Submit,
            SlotEvent::Trigger,
            SlotEvent::Complete,
            SlotEvent::Reclaim,
        ] {
            s = step_traced::<SlotFsm, _>(s, e, 3, &mut trace).unwrap();
        }
        assert_eq!(s, SlotState::Free);
        assert_eq!(trace.len(), 4);
        assert_eq!(trace[1].from, "SUBMITTED");
        assert_eq!(trace[1].to, "TRIGGERED");
        let e = step::<SlotFsm>(SlotState::Free, SlotEvent::Trigger).unwrap_err();
        assert_eq!(e.state, SlotState::Free);
        assert_eq!(e.event, SlotEvent::Trigger);
        assert!(step::<SlotFsm>(SlotState::Submitted, SlotEvent::Submit).is_err());
        assert!(step::<SlotFsm>(SlotState::Triggered, SlotEvent::Reclaim).is_err());
        assert_eq!(
            render_table::<SlotFsm>(),
            "FREE --submit--> SUBMITTED\nSUBMITTED --trigger--> TRIGGERED\n\
             TRIGGERED --complete--> DONE\nDONE --reclaim--> FREE\n"
        );
    }

    #[test]
    fn derived_regions() {
        // exec_head = 3, scheduled_head = 5, scheduled_tail = 7
        let d = |n| derive(n, 3, 5, 7);
        assert_eq!(d(2), SlotState::Free);
        assert_eq!(d(3), SlotState::Triggered);
        assert_eq!(d(4), SlotState::Triggered);
        assert_eq!(d(5), SlotState::Submitted);
        assert_eq!(d(6), SlotState::Submitted);
        assert_eq!(d(7), SlotState::Free);
    }
}
