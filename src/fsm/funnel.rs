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
//! [`InvalidEvent`](super::InvalidEvent) of the table, for example `submit`
//! before `stage_and_doorbell`, or `wake_worker` before `trigger`.
//!
//! A schedule call walks the funnel through typed steps ([`Begun`] ->
//! [`SpaceChecked`] -> [`ItemTaken`] -> [`Doorbelled`] -> [`Submitted`] ->
//! [`Triggered`]): each step consumes the previous step's value and returns
//! the next (tracing the table's transition). The three steps that act,
//! [`ItemTaken::stage`], [`Doorbelled::submit`] and [`Submitted::trigger`],
//! take the action itself (staging and the doorbell, the ring's submit, its
//! trigger) and run it, so a wrong order does not compile; every failure
//! exit hands back what the call took (the item index) so the caller can
//! return it to its free list.
//!
//! Submitting before the doorbell does not compile:
//!
//! ```compile_fail,E0599
//! use xunds::fsm::{funnel::Begun, NoHook};
//! use xunds::wire::seq_id::SeqId;
//! let item = Begun::new(0).check_space(&mut NoHook).take_item(3, &mut NoHook);
//! let _ = item.submit(&mut NoHook, |_| Ok::<_, ()>(SeqId(1))); // no `submit` on ItemTaken
//! ```
//!
//! Nor does staging after the submit (the two swapped):
//!
//! ```compile_fail,E0599
//! use xunds::fsm::{funnel::Begun, NoHook};
//! use xunds::wire::seq_id::SeqId;
//! let item = Begun::new(0).check_space(&mut NoHook).take_item(3, &mut NoHook);
//! let (d, ()) = item.stage(&mut NoHook, |_, _| Ok::<_, ()>(())).unwrap();
//! let (s, _) = d.submit(&mut NoHook, |_| Ok::<_, ()>(SeqId(1))).unwrap();
//! let _ = s.stage(&mut NoHook, |_, _| Ok::<_, ()>(())); // no `stage` on Submitted
//! ```
//!
//! Waking the worker before the trigger does not compile:
//!
//! ```compile_fail,E0599
//! use xunds::fsm::{funnel::Begun, NoHook};
//! use xunds::wire::seq_id::SeqId;
//! let item = Begun::new(0).check_space(&mut NoHook).take_item(3, &mut NoHook);
//! let (d, ()) = item.stage(&mut NoHook, |_, _| Ok::<_, ()>(())).unwrap();
//! let (s, _) = d.submit(&mut NoHook, |_| Ok::<_, ()>(SeqId(1))).unwrap();
//! let _ = s.wake_worker(&mut NoHook); // no `wake_worker` on Submitted
//! ```
//!
//! Taking an item without checking for space does not compile:
//!
//! ```compile_fail,E0599
//! use xunds::fsm::{funnel::Begun, NoHook};
//! let _ = Begun::new(0).take_item(3, &mut NoHook); // no `take_item` on Begun
//! ```
//!
//! A step cannot be walked twice (each consumes its value):
//!
//! ```compile_fail,E0382
//! use xunds::fsm::{funnel::Begun, NoHook};
//! let s = Begun::new(0).check_space(&mut NoHook);
//! let _a = s.take_item(1, &mut NoHook);
//! let _b = s.take_item(2, &mut NoHook); // `s` was moved
//! ```
//!
//! The walk the compiler accepts:
//!
//! ```
//! use xunds::fsm::{funnel::Begun, Transition};
//! use xunds::wire::seq_id::SeqId;
//! let mut log: Vec<Transition> = Vec::new();
//! let item = Begun::new(0).check_space(&mut log).take_item(3, &mut log);
//! let (d, staged) = item.stage(&mut log, |idx, _| Ok::<_, ()>(idx * 10)).unwrap();
//! let (s, seq) = d.submit(&mut log, |_| Ok::<_, ()>(SeqId(7))).unwrap();
//! let done = s.trigger(&mut log, |_| Ok::<_, ()>(())).unwrap();
//! assert_eq!((staged, seq, done.wake_worker(&mut log)), (30, SeqId(7), 3));
//! assert_eq!(log.len(), 6);
//! ```

use super::{step_traced, Fsm, TransitionHook};
use crate::wire::seq_id::SeqId;

super::machine! {
    /// The submit funnel machine.
    pub struct Funnel = "funnel";
    /// Where one schedule call is in the funnel.
    pub enum FunnelState {
        /// Between schedule calls.
        Idle = "IDLE",
        /// The XU ring has a free slot for this call.
        SpaceChecked = "SPACE_CHECKED",
        /// A work item was taken from the pool.
        ItemTaken = "ITEM_TAKEN",
        /// The device request is staged and its doorbell (tail-inc) published.
        Doorbelled = "DOORBELLED",
        /// The host slot is written and `scheduled_tail` published.
        Submitted = "SUBMITTED",
        /// `scheduled_head` is published: the worker may peek the slot.
        Triggered = "TRIGGERED",
    }
    /// One step of the funnel.
    pub enum FunnelEvent {
        /// The ring has space.
        CheckSpace = "check_space",
        /// The ring is full: refuse with `NRT_QUEUE_FULL`, nothing changed.
        QueueFull = "queue_full",
        /// Take a work item from the pool.
        TakeItem = "take_item",
        /// The pool is empty: refuse, nothing changed.
        PoolEmpty = "pool_empty",
        /// Stage the device request and ring the doorbell.
        StageAndDoorbell = "stage_and_doorbell",
        /// Staging failed: the item goes back to the pool; refuse.
        StageFailed = "stage_failed",
        /// Write the slot and publish `scheduled_tail` (`xuq_client_submit`).
        Submit = "submit",
        /// The ring refused the submit: the item goes back to the pool.
        SubmitFailed = "submit_failed",
        /// Publish `scheduled_head` (`xuq_client_trigger_next`).
        Trigger = "trigger",
        /// The ring refused the trigger: the item stays with its submitted
        /// slot (the next trigger publishes it; the worker returns it).
        TriggerFailed = "trigger_failed",
        /// Signal the worker's has-work eventfd.
        WakeWorker = "wake_worker",
    }
    rows {
        Idle + CheckSpace => SpaceChecked,
        Idle + QueueFull => Idle,
        SpaceChecked + TakeItem => ItemTaken,
        SpaceChecked + PoolEmpty => Idle,
        ItemTaken + StageAndDoorbell => Doorbelled,
        ItemTaken + StageFailed => Idle,
        Doorbelled + Submit => Submitted,
        Doorbelled + SubmitFailed => Idle,
        Submitted + Trigger => Triggered,
        Submitted + TriggerFailed => Idle,
        Triggered + WakeWorker => Idle,
    }
}

use FunnelEvent as E;
use FunnelState as S;

/// A schedule call on instance `id` (the core), holding work item `idx`
/// once it took one, at funnel state `AT` (a [`FunnelState`] code): one
/// type per state, named below, each offering only the table's rows out of
/// its state.
#[must_use]
#[derive(Debug)]
pub struct Call<const AT: u8> {
    id: u64,
    idx: u16,
}

/// A schedule call at the funnel's start (`IDLE`).
pub type Begun = Call<{ S::Idle as u8 }>;
/// The ring has a free slot for this call.
pub type SpaceChecked = Call<{ S::SpaceChecked as u8 }>;
/// Work item `idx` is this call's.
pub type ItemTaken = Call<{ S::ItemTaken as u8 }>;
/// The request is staged and its doorbell rung.
pub type Doorbelled = Call<{ S::Doorbelled as u8 }>;
/// The slot is written and `scheduled_tail` published.
pub type Submitted = Call<{ S::Submitted as u8 }>;
/// `scheduled_head` is published.
pub type Triggered = Call<{ S::Triggered as u8 }>;

impl<const AT: u8> Call<AT> {
    /// Trace `e` out of this call's state (legal by construction: the types
    /// only offer the table's rows) and move to state `TO`.
    fn go<const TO: u8, H: TransitionHook + ?Sized>(self, e: E, hook: &mut H) -> Call<TO> {
        let _ = step_traced::<Funnel, H>(Funnel::STATES[AT as usize], e, self.id, hook);
        Call {
            id: self.id,
            idx: self.idx,
        }
    }

    /// Run `act`: on success trace `ok` and move on with its value; on
    /// failure trace `fail` (back to `IDLE`) and hand the item's index back
    /// with the error.
    fn act<const TO: u8, V, X, H: TransitionHook + ?Sized>(
        self,
        hook: &mut H,
        (ok, fail): (E, E),
        act: impl FnOnce(u16, &mut H) -> Result<V, X>,
    ) -> Result<(Call<TO>, V), (u16, X)> {
        match act(self.idx, hook) {
            Ok(v) => Ok((self.go(ok, hook), v)),
            Err(e) => Err((self.go::<{ S::Idle as u8 }, H>(fail, hook).idx, e)),
        }
    }
}

impl Begun {
    /// Start a call on instance `id`.
    pub fn new(id: u64) -> Begun {
        Call { id, idx: 0 }
    }

    /// `check_space` succeeded.
    pub fn check_space<H: TransitionHook + ?Sized>(self, hook: &mut H) -> SpaceChecked {
        self.go(E::CheckSpace, hook)
    }

    /// The ring is full: the call ends, nothing taken.
    pub fn queue_full<H: TransitionHook + ?Sized>(self, hook: &mut H) {
        let _: Begun = self.go(E::QueueFull, hook);
    }
}

impl SpaceChecked {
    /// Item `idx` was taken from the free list.
    pub fn take_item<H: TransitionHook + ?Sized>(self, idx: u16, hook: &mut H) -> ItemTaken {
        Call { idx, ..self }.go(E::TakeItem, hook)
    }

    /// The pool is empty: the call ends, nothing taken.
    pub fn pool_empty<H: TransitionHook + ?Sized>(self, hook: &mut H) {
        let _: Begun = self.go(E::PoolEmpty, hook);
    }
}

impl ItemTaken {
    /// `stage_and_doorbell`: `stage(idx, hook)` stages the device request
    /// for the item and publishes its doorbell (tracing what it did into
    /// `hook` before this step's transition). On failure the call ends and
    /// the item's index comes back with the error (`stage_failed`).
    pub fn stage<V, X, H: TransitionHook + ?Sized>(
        self,
        hook: &mut H,
        stage: impl FnOnce(u16, &mut H) -> Result<V, X>,
    ) -> Result<(Doorbelled, V), (u16, X)> {
        self.act(hook, (E::StageAndDoorbell, E::StageFailed), stage)
    }
}

impl Doorbelled {
    /// `submit`: `submit(hook)` writes the ring slot and publishes
    /// `scheduled_tail`, giving the seq_id. On failure the call ends and the
    /// item's index comes back with the error (`submit_failed`).
    pub fn submit<X, H: TransitionHook + ?Sized>(
        self,
        hook: &mut H,
        submit: impl FnOnce(&mut H) -> Result<SeqId, X>,
    ) -> Result<(Submitted, SeqId), (u16, X)> {
        self.act(hook, (E::Submit, E::SubmitFailed), |_, h| submit(h))
    }
}

impl Submitted {
    /// `trigger`: `trigger(hook)` publishes `scheduled_head`. On failure
    /// the call ends (`trigger_failed`) with the item's index, which is
    /// not the caller's to return: the submitted slot holds the item, and
    /// the worker returns it once a later trigger published the slot.
    pub fn trigger<X, H: TransitionHook + ?Sized>(
        self,
        hook: &mut H,
        trigger: impl FnOnce(&mut H) -> Result<(), X>,
    ) -> Result<Triggered, (u16, X)> {
        let r = self.act(hook, (E::Trigger, E::TriggerFailed), |_, h| trigger(h));
        r.map(|(t, ())| t)
    }
}

impl Triggered {
    /// The worker is woken: the call ends; the item is the worker's now
    /// (its index, for the caller's log).
    pub fn wake_worker<H: TransitionHook + ?Sized>(self, hook: &mut H) -> u16 {
        let idx = self.idx;
        let _: Begun = self.go(E::WakeWorker, hook);
        idx
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsm::{check_table, render_table, step, NoHook as NoLog, Transition};

    /// The events of one successful schedule call, in the only legal order.
    const HAPPY_PATH: [FunnelEvent; 6] = [
        E::CheckSpace,
        E::TakeItem,
        E::StageAndDoorbell,
        E::Submit,
        E::Trigger,
        E::WakeWorker,
    ];

    #[test]
    fn every_state_and_event_is_in_a_row() {
        check_table::<Funnel>().unwrap();
    }

    #[test]
    #[cfg_attr(miri, ignore = "insta reads the snapshot file (Miri isolation)")]
    fn table_snapshot() {
        insta::assert_snapshot!(render_table::<Funnel>());
    }

    /// The typed walk traces exactly the table's happy path, runs each
    /// step's action once, in order, and each failure exit hands the item
    /// back and ends in IDLE.
    #[test]
    fn typed_steps_trace_the_table() {
        let mut log: Vec<Transition> = Vec::new();
        let mut ran = Vec::new();
        let item = Begun::new(4).check_space(&mut log).take_item(9, &mut log);
        let (d, ()) = item
            .stage(&mut log, |idx, _| {
                ran.push(("stage", idx));
                Ok::<_, ()>(())
            })
            .unwrap();
        let (s, seq) = d
            .submit(&mut log, |_| {
                ran.push(("submit", 0));
                Ok::<_, ()>(SeqId(5))
            })
            .unwrap();
        let t = s
            .trigger(&mut log, |_| {
                ran.push(("trigger", 0));
                Ok::<_, ()>(())
            })
            .unwrap();
        assert_eq!((t.wake_worker(&mut log), seq), (9, SeqId(5)));
        assert_eq!(ran, [("stage", 9), ("submit", 0), ("trigger", 0)]);
        let names: Vec<_> = log.iter().map(|t| t.event).collect();
        assert_eq!(
            names,
            [
                "check_space",
                "take_item",
                "stage_and_doorbell",
                "submit",
                "trigger",
                "wake_worker"
            ]
        );
        assert!(log.iter().all(|t| t.id == 4));
        assert_eq!(log.last().unwrap().to, "IDLE");
        let mut log: Vec<Transition> = Vec::new();
        let t = || {
            Begun::new(0)
                .check_space(&mut NoLog)
                .take_item(5, &mut NoLog)
        };
        let staged = |log: &mut Vec<Transition>| t().stage(log, |_, _| Ok::<_, ()>(())).unwrap().0;
        let submitted = |log: &mut Vec<Transition>| {
            staged(log)
                .submit(log, |_| Ok::<_, ()>(SeqId(1)))
                .unwrap()
                .0
        };
        assert_eq!(
            t().stage(&mut log, |_, _| Err::<(), _>("no")).unwrap_err(),
            (5, "no")
        );
        let e = staged(&mut log).submit(&mut log, |_| Err::<SeqId, _>("full"));
        assert_eq!(e.unwrap_err(), (5, "full"));
        let e = submitted(&mut log).trigger(&mut log, |_| Err::<(), _>("none"));
        assert_eq!(e.unwrap_err(), (5, "none"));
        let exits: Vec<_> = log
            .iter()
            .filter(|t| t.to == "IDLE")
            .map(|t| (t.from, t.event))
            .collect();
        assert_eq!(
            exits,
            [
                ("ITEM_TAKEN", "stage_failed"),
                ("DOORBELLED", "submit_failed"),
                ("SUBMITTED", "trigger_failed")
            ]
        );
    }

    #[test]
    fn happy_path_returns_to_idle() {
        let mut s = S::Idle;
        for e in HAPPY_PATH {
            s = step::<Funnel>(s, e).unwrap();
        }
        assert_eq!(s, S::Idle);
    }

    /// Every permutation of the six funnel steps other than the ABI's order
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
