//! The Producer's submit funnel (docs/abi.md §1.10, §1.9).
//!
//! One schedule call walks the funnel in exactly this order:
//!
//! 1. `check_space`: the XU ring has a free slot (`scheduled_tail -
//!    exec_head < capacity`), else `queue_full` refuses the call with
//!    `NRT_QUEUE_FULL` and changes nothing;
//! 2. `take_item`: a work item (`tpb_execution_info_t`, docs/abi.md §1.6) comes out
//!    of the preallocated pool, else `pool_empty` refuses the call;
//! 3. `stage_and_doorbell`: the 52-byte device request and its trailer are
//!    staged and the tail-increment descriptor is published (docs/abi.md §1.5
//!    GOTCHA), else `stage_failed` returns the item to the pool and refuses;
//! 4. `submit`: the host slot is written and `scheduled_tail` published;
//! 5. `trigger`: `scheduled_head` is published (the slot becomes visible to
//!    the worker);
//! 6. `wake_worker`: `write(has_work_efd, 1)`.
//!
//! "The device must already be executing before the worker is told to
//! harvest it" (docs/abi.md §1.10): any other order is an
//! [`InvalidEvent`](super::InvalidEvent), for example `submit` before
//! `stage_and_doorbell`, or `wake_worker` before `trigger`.

use super::{Fsm, Row};

/// Where one schedule call is in the funnel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FunnelState {
    /// Between schedule calls.
    Idle,
    /// The XU ring has a free slot for this call.
    SpaceChecked,
    /// A work item was taken from the pool.
    ItemTaken,
    /// The device request is staged and its doorbell (tail-inc) published.
    Doorbelled,
    /// The host slot is written and `scheduled_tail` published.
    Submitted,
    /// `scheduled_head` is published: the worker may peek the slot.
    Triggered,
}

/// One step of the funnel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FunnelEvent {
    /// The ring has space.
    CheckSpace,
    /// The ring is full: refuse with `NRT_QUEUE_FULL`, nothing changed.
    QueueFull,
    /// Take a work item from the pool.
    TakeItem,
    /// The pool is empty: refuse, nothing changed.
    PoolEmpty,
    /// Stage the device request and ring the doorbell.
    StageAndDoorbell,
    /// Staging failed: the item goes back to the pool; refuse.
    StageFailed,
    /// Write the slot and publish `scheduled_tail` (`xuq_client_submit`).
    Submit,
    /// Publish `scheduled_head` (`xuq_client_trigger_next`).
    Trigger,
    /// Signal the worker's has-work eventfd.
    WakeWorker,
}

/// The submit funnel machine.
#[derive(Clone, Copy, Debug)]
pub struct Funnel;

use FunnelEvent as E;
use FunnelState as S;

impl Fsm for Funnel {
    type State = FunnelState;
    type Event = FunnelEvent;
    const NAME: &'static str = "funnel";
    const TABLE: &'static [Row<S, E>] = &[
        Row {
            from: S::Idle,
            event: E::CheckSpace,
            to: S::SpaceChecked,
        },
        Row {
            from: S::Idle,
            event: E::QueueFull,
            to: S::Idle,
        },
        Row {
            from: S::SpaceChecked,
            event: E::TakeItem,
            to: S::ItemTaken,
        },
        Row {
            from: S::SpaceChecked,
            event: E::PoolEmpty,
            to: S::Idle,
        },
        Row {
            from: S::ItemTaken,
            event: E::StageAndDoorbell,
            to: S::Doorbelled,
        },
        Row {
            from: S::ItemTaken,
            event: E::StageFailed,
            to: S::Idle,
        },
        Row {
            from: S::Doorbelled,
            event: E::Submit,
            to: S::Submitted,
        },
        Row {
            from: S::Submitted,
            event: E::Trigger,
            to: S::Triggered,
        },
        Row {
            from: S::Triggered,
            event: E::WakeWorker,
            to: S::Idle,
        },
    ];
    const STATES: &'static [S] = &[
        S::Idle,
        S::SpaceChecked,
        S::ItemTaken,
        S::Doorbelled,
        S::Submitted,
        S::Triggered,
    ];
    const EVENTS: &'static [E] = &[
        E::CheckSpace,
        E::QueueFull,
        E::TakeItem,
        E::PoolEmpty,
        E::StageAndDoorbell,
        E::StageFailed,
        E::Submit,
        E::Trigger,
        E::WakeWorker,
    ];

    fn transition(state: S, event: E) -> Option<S> {
        match (state, event) {
            (S::Idle, E::CheckSpace) => Some(S::SpaceChecked),
            (S::Idle, E::QueueFull) => Some(S::Idle),
            (S::SpaceChecked, E::TakeItem) => Some(S::ItemTaken),
            (S::SpaceChecked, E::PoolEmpty) => Some(S::Idle),
            (S::ItemTaken, E::StageAndDoorbell) => Some(S::Doorbelled),
            (S::ItemTaken, E::StageFailed) => Some(S::Idle),
            (S::Doorbelled, E::Submit) => Some(S::Submitted),
            (S::Submitted, E::Trigger) => Some(S::Triggered),
            (S::Triggered, E::WakeWorker) => Some(S::Idle),
            _ => None,
        }
    }

    fn state_name(state: S) -> &'static str {
        match state {
            S::Idle => "IDLE",
            S::SpaceChecked => "SPACE_CHECKED",
            S::ItemTaken => "ITEM_TAKEN",
            S::Doorbelled => "DOORBELLED",
            S::Submitted => "SUBMITTED",
            S::Triggered => "TRIGGERED",
        }
    }

    fn event_name(event: E) -> &'static str {
        match event {
            E::CheckSpace => "check_space",
            E::QueueFull => "queue_full",
            E::TakeItem => "take_item",
            E::PoolEmpty => "pool_empty",
            E::StageAndDoorbell => "stage_and_doorbell",
            E::StageFailed => "stage_failed",
            E::Submit => "submit",
            E::Trigger => "trigger",
            E::WakeWorker => "wake_worker",
        }
    }
}

/// The events of one successful schedule call, in the only legal order.
pub const HAPPY_PATH: [FunnelEvent; 6] = [
    E::CheckSpace,
    E::TakeItem,
    E::StageAndDoorbell,
    E::Submit,
    E::Trigger,
    E::WakeWorker,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsm::{check_table, render_table, step};

    #[test]
    fn table_and_function_agree() {
        check_table::<Funnel>().unwrap();
    }

    #[test]
    #[cfg_attr(miri, ignore = "insta reads the snapshot file (Miri isolation)")]
    fn table_snapshot() {
        insta::assert_snapshot!(render_table::<Funnel>());
    }

    #[test]
    fn happy_path_returns_to_idle() {
        let mut s = S::Idle;
        for e in HAPPY_PATH {
            s = step::<Funnel>(s, e).unwrap();
        }
        assert_eq!(s, S::Idle);
    }

    /// Every permutation of the six funnel steps other than the seed's order
    /// is refused at its first out-of-order step (docs/abi.md §1.10).
    #[test]
    fn every_other_order_is_invalid() {
        fn permute(k: usize, v: &mut [FunnelEvent; 6], out: &mut Vec<[FunnelEvent; 6]>) {
            if k == v.len() {
                out.push(*v);
                return;
            }
            for i in k..v.len() {
                v.swap(k, i);
                permute(k + 1, v, out);
                v.swap(k, i);
            }
        }
        let mut all = Vec::new();
        permute(0, &mut HAPPY_PATH.clone(), &mut all);
        assert_eq!(all.len(), 720);
        for order in all {
            let mut s = S::Idle;
            let mut refused = None;
            for (i, e) in order.iter().enumerate() {
                match step::<Funnel>(s, *e) {
                    Ok(n) => s = n,
                    Err(err) => {
                        assert_eq!(err.state, s);
                        assert_eq!(err.event, *e);
                        refused = Some(i);
                        break;
                    }
                }
            }
            if order == HAPPY_PATH {
                assert_eq!(refused, None);
            } else {
                let first_wrong = order.iter().zip(HAPPY_PATH).position(|(a, b)| *a != b);
                assert_eq!(refused, first_wrong, "{order:?}");
            }
        }
    }

    #[test]
    fn refusals_change_nothing_and_return_to_idle() {
        assert_eq!(step::<Funnel>(S::Idle, E::QueueFull), Ok(S::Idle));
        assert_eq!(step::<Funnel>(S::SpaceChecked, E::PoolEmpty), Ok(S::Idle));
        assert_eq!(step::<Funnel>(S::ItemTaken, E::StageFailed), Ok(S::Idle));
        // Once the doorbell rang the call can no longer be refused.
        for s in [S::Doorbelled, S::Submitted, S::Triggered] {
            for e in [E::QueueFull, E::PoolEmpty, E::StageFailed] {
                assert!(step::<Funnel>(s, e).is_err());
            }
        }
    }
}
