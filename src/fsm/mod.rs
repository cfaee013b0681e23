//! Pure, table-driven state machines: a lifecycle written as data is checked
//! at every step, traced by one hook, and cannot drift from its documentation.
//!
//! `fsm` owns every lifecycle in xunds as data: an enum of states, an enum of
//! events and one list of rows, written once in a [`machine!`] invocation
//! that generates the enums, the transition function (a `match` over the
//! rows), the table and the trace names. Nothing here touches memory or
//! time. An illegal event is an [`InvalidEvent`] value, never a panic, and
//! every transition can be passed through a [`TransitionHook`] (the trace).
//! Machines: [`slot`] (XU ring slot FREE -> SUBMITTED -> TRIGGERED -> DONE ->
//! FREE), [`record`] (NDS record commit lifecycle), and the others the actors
//! need, each in its own module: [`funnel`] (the Producer's submit funnel),
//! [`worker`] (the Worker's cycle), [`proxy`] (the device proxy's cycle),
//! [`publisher`] (the NDS publisher's cycle), [`xu_health`] (Healthy ->
//! Degraded, and the reset back).
#![forbid(unsafe_code)]

pub mod funnel;
pub mod proxy;
pub mod publisher;
pub mod record;
pub mod slot;
pub mod worker;
pub mod xu_health;

use core::fmt;

/// One row of a transition table: in `from`, `event` leads to `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row<S, E> {
    /// Source state.
    pub from: S,
    /// Event.
    pub event: E,
    /// Target state.
    pub to: S,
}

/// A state machine described by a transition function and a table.
///
/// Implemented by [`machine!`] only: `transition` (a `match`, so the hot
/// paths compile to constants) and `TABLE` (the same relation as data, for
/// docs and diagrams) come from one list of rows.
pub trait Fsm: 'static {
    /// The state enum.
    type State: Copy + Eq + fmt::Debug + 'static;
    /// The event enum.
    type Event: Copy + Eq + fmt::Debug + 'static;
    /// Machine name used in traces and errors.
    const NAME: &'static str;
    /// Every legal transition.
    const TABLE: &'static [Row<Self::State, Self::Event>];
    /// Every state (for exhaustive table checks).
    const STATES: &'static [Self::State];
    /// Every event (for exhaustive table checks).
    const EVENTS: &'static [Self::Event];
    /// The transition function: `None` means illegal.
    fn transition(state: Self::State, event: Self::Event) -> Option<Self::State>;
    /// Stable name of a state (for traces).
    fn state_name(state: Self::State) -> &'static str;
    /// Stable name of an event (for traces).
    fn event_name(event: Self::Event) -> &'static str;
    /// A state's position in declaration order (for binary traces).
    fn state_code(state: Self::State) -> u8;
    /// An event's position in declaration order (for binary traces).
    fn event_code(event: Self::Event) -> u8;
}

/// An illegal event for the current state.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct InvalidEvent<S, E> {
    /// Machine name.
    pub machine: &'static str,
    /// The state the machine was in (unchanged).
    pub state: S,
    /// The refused event.
    pub event: E,
}

impl<S: fmt::Debug, E: fmt::Debug> fmt::Display for InvalidEvent<S, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: event {:?} is illegal in state {:?}",
            self.machine, self.event, self.state
        )
    }
}

impl<S: fmt::Debug, E: fmt::Debug> fmt::Debug for InvalidEvent<S, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl<S: fmt::Debug, E: fmt::Debug> core::error::Error for InvalidEvent<S, E> {}

/// One recorded transition, as the trace stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transition {
    /// Machine name.
    pub machine: &'static str,
    /// Instance id (slot index, record slot, actor id, ...).
    pub id: u64,
    /// Source state name.
    pub from: &'static str,
    /// Event name.
    pub event: &'static str,
    /// Target state name.
    pub to: &'static str,
    /// `from`, `event` and `to` as their variants' positions in
    /// declaration order ([`Fsm::state_code`], [`Fsm::event_code`]): what a
    /// binary trace digests instead of the names.
    pub codes: [u8; 3],
}

/// Receives every transition that passes [`step_traced`].
pub trait TransitionHook {
    /// Called once per successful transition.
    fn on_transition(&mut self, t: Transition);
}

/// A hook that records nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHook;

impl TransitionHook for NoHook {
    #[inline]
    fn on_transition(&mut self, _t: Transition) {}
}

#[cfg(feature = "std")]
impl TransitionHook for Vec<Transition> {
    fn on_transition(&mut self, t: Transition) {
        self.push(t);
    }
}

/// Apply `event` to `state`.
#[inline]
pub fn step<M: Fsm>(
    state: M::State,
    event: M::Event,
) -> Result<M::State, InvalidEvent<M::State, M::Event>> {
    M::transition(state, event).ok_or(InvalidEvent {
        machine: M::NAME,
        state,
        event,
    })
}

/// Apply `event` to `state` for instance `id` and report it to `hook`.
#[inline]
pub fn step_traced<M: Fsm, H: TransitionHook + ?Sized>(
    state: M::State,
    event: M::Event,
    id: u64,
    hook: &mut H,
) -> Result<M::State, InvalidEvent<M::State, M::Event>> {
    let to = step::<M>(state, event)?;
    hook.on_transition(Transition {
        machine: M::NAME,
        id,
        from: M::state_name(state),
        event: M::event_name(event),
        to: M::state_name(to),
        codes: [
            M::state_code(state),
            M::event_code(event),
            M::state_code(to),
        ],
    });
    Ok(to)
}

/// Check that every state and every event of `M` takes part in at least one
/// row (a dead variant is a forgotten row or a stale variant). The function
/// and the table cannot disagree (one list of rows generates both, and a
/// duplicate row is an unreachable `match` arm, refused at compile time).
#[cfg(feature = "std")]
pub fn check_table<M: Fsm>() -> Result<(), String> {
    let name = M::NAME;
    if let Some(s) = M::STATES
        .iter()
        .find(|&&s| !M::TABLE.iter().any(|r| r.from == s || r.to == s))
    {
        return Err(format!("{name}: state {s:?} is in no row"));
    }
    if let Some(e) = M::EVENTS
        .iter()
        .find(|&&e| !M::TABLE.iter().any(|r| r.event == e))
    {
        return Err(format!("{name}: event {e:?} is in no row"));
    }
    Ok(())
}

/// Define a state machine once: its state and event enums (each variant with
/// its trace name), and its rows `FROM + EVENT => TO`. Generates the enums,
/// the machine type and its [`Fsm`] impl: the transition function is a
/// `match` with one arm per row, `TABLE` the same rows as data, `STATES` and
/// `EVENTS` every variant, and the names.
///
/// ```
/// xunds::fsm::machine! {
///     /// A door.
///     pub struct Door = "door";
///     /// Its states.
///     pub enum DoorState { Shut = "SHUT", Open = "OPEN" }
///     /// Its events.
///     pub enum DoorEvent { Push = "push", Pull = "pull" }
///     rows {
///         Shut + Push => Open,
///         Open + Pull => Shut,
///     }
/// }
/// use xunds::fsm::{step, Fsm};
/// assert_eq!(step::<Door>(DoorState::Shut, DoorEvent::Push), Ok(DoorState::Open));
/// assert!(step::<Door>(DoorState::Shut, DoorEvent::Pull).is_err());
/// assert_eq!(Door::TABLE.len(), 2);
/// assert_eq!(Door::state_name(DoorState::Open), "OPEN");
/// ```
#[macro_export]
macro_rules! machine {
    (
        $(#[$mm:meta])* $mv:vis struct $M:ident = $name:literal;
        $(#[$sm:meta])* $sv:vis enum $S:ident {
            $( $(#[$sdm:meta])* $s:ident = $sn:literal ),+ $(,)?
        }
        $(#[$em:meta])* $ev:vis enum $E:ident {
            $( $(#[$edm:meta])* $e:ident = $en:literal ),+ $(,)?
        }
        rows { $( $from:ident + $event:ident => $to:ident ),+ $(,)? }
    ) => {
        $(#[$sm])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $sv enum $S { $( $(#[$sdm])* $s ),+ }

        $(#[$em])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $ev enum $E { $( $(#[$edm])* $e ),+ }

        $(#[$mm])*
        #[derive(Clone, Copy, Debug)]
        $mv struct $M;

        impl $crate::fsm::Fsm for $M {
            type State = $S;
            type Event = $E;
            const NAME: &'static str = $name;
            const TABLE: &'static [$crate::fsm::Row<$S, $E>] = &[
                $( $crate::fsm::Row { from: $S::$from, event: $E::$event, to: $S::$to } ),+
            ];
            const STATES: &'static [$S] = &[ $( $S::$s ),+ ];
            const EVENTS: &'static [$E] = &[ $( $E::$e ),+ ];

            #[inline]
            #[deny(unreachable_patterns)] // a duplicate row does not compile
            fn transition(state: $S, event: $E) -> Option<$S> {
                match (state, event) {
                    $( ($S::$from, $E::$event) => Some($S::$to), )+
                    #[allow(unreachable_patterns)]
                    _ => None,
                }
            }

            fn state_name(state: $S) -> &'static str {
                match state { $( $S::$s => $sn ),+ }
            }

            fn event_name(event: $E) -> &'static str {
                match event { $( $E::$e => $en ),+ }
            }

            #[inline]
            fn state_code(state: $S) -> u8 {
                state as u8
            }

            #[inline]
            fn event_code(event: $E) -> u8 {
                event as u8
            }
        }
    };
}
pub use machine;

/// Render a machine's table as a Graphviz-free text diagram (for docs and
/// snapshots): one `FROM --event--> TO` line per row.
#[cfg(feature = "std")]
pub fn render_table<M: Fsm>() -> String {
    let row = |r: &Row<M::State, M::Event>| {
        let (from, to) = (M::state_name(r.from), M::state_name(r.to));
        format!("{from} --{}--> {to}\n", M::event_name(r.event))
    };
    M::TABLE.iter().map(row).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::fsm::machine! {
        /// A sound toy.
        struct Good = "Good";
        enum S { A = "s", B = "s", C = "c" }
        enum E { Go = "e", Back = "e", Stay = "stay" }
        rows {
            A + Go => B,
            B + Back => A,
            C + Stay => C,
        }
    }

    crate::fsm::machine! {
        /// A machine with a dead state (`Z`) and a dead event (`Nop`).
        struct Dead = "Dead";
        enum DS { X = "x", Y = "y", Z = "z" }
        enum DE { Go = "go", Nop = "nop" }
        rows {
            X + Go => Y,
        }
    }

    crate::fsm::machine! {
        /// Only a dead event.
        struct DeadEv = "DeadEv";
        enum FS { X = "x", Y = "y" }
        enum FE { Go = "go", Nop = "nop" }
        rows {
            X + Go => Y,
        }
    }

    #[test]
    fn check_table_accepts_a_sound_machine_and_names_each_defect() {
        assert_eq!(check_table::<Good>(), Ok(()));
        assert!(check_table::<Dead>()
            .unwrap_err()
            .contains("Z is in no row"));
        assert!(check_table::<DeadEv>()
            .unwrap_err()
            .contains("Nop is in no row"));
        assert_eq!(Good::TABLE.len(), 3);
        assert_eq!(Good::STATES, &[S::A, S::B, S::C]);
    }

    #[test]
    fn illegal_events_are_values_and_traced_steps_report_once() {
        assert_eq!(step::<Good>(S::A, E::Go), Ok(S::B));
        let e = step::<Good>(S::A, E::Back).unwrap_err();
        assert_eq!((e.machine, e.state, e.event), ("Good", S::A, E::Back));
        assert!(e.to_string().contains("illegal"));
        let mut log: Vec<Transition> = Vec::new();
        assert_eq!(step_traced::<Good, _>(S::B, E::Back, 9, &mut log), Ok(S::A));
        assert!(step_traced::<Good, _>(S::A, E::Back, 9, &mut log).is_err());
        assert_eq!(log.len(), 1, "a refused event is not traced");
        assert_eq!(log[0].id, 9);
        assert_eq!(
            render_table::<Good>(),
            "s --e--> s\ns --e--> s\nc --stay--> c\n"
        );
    }
}
