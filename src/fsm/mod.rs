//! Pure, table-driven state machines (STYLE.md practice 9).
//!
//! `fsm` owns every lifecycle in xunds as data: an enum of states, an enum of
//! events, one transition function and a table. Nothing here touches memory
//! or time. An illegal event is an [`InvalidEvent`] value, never a panic, and
//! every transition can be passed through a [`TransitionHook`] (the trace).
//! Machines: [`slot`] (XU ring slot FREE -> SUBMITTED -> TRIGGERED -> DONE ->
//! FREE), [`record`] (NDS record commit lifecycle), and the others the actors
//! need, each in its own module: [`funnel`] (the Producer's submit funnel),
//! [`worker`] (the Worker's cycle), [`xu_health`] (Healthy -> Degraded).
#![forbid(unsafe_code)]

pub mod funnel;
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
/// `transition` is the one transition function (a `match`, so the hot paths
/// compile to constants); `TABLE` is the same relation as data, for docs,
/// diagrams and the [`check_table`] test that proves the two agree.
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

impl<S: fmt::Debug, E: fmt::Debug> std::error::Error for InvalidEvent<S, E> {}

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
    });
    Ok(to)
}

/// Check that `M::transition` and `M::TABLE` describe the same relation over
/// every (state, event) pair, and that the lists the check iterates are
/// sound: `STATES` and `EVENTS` have no duplicates, every state and event a
/// row names is listed (otherwise its pairs would never be compared), and
/// every listed state and event takes part in at least one row (a dead entry
/// is a forgotten row or a stale variant). Returns the first problem found.
pub fn check_table<M: Fsm>() -> Result<(), String> {
    let name = M::NAME;
    if let Some(s) = first_duplicate(M::STATES) {
        return Err(format!("{name}: state {s:?} listed twice in STATES"));
    }
    if let Some(e) = first_duplicate(M::EVENTS) {
        return Err(format!("{name}: event {e:?} listed twice in EVENTS"));
    }
    for r in M::TABLE {
        for s in [r.from, r.to] {
            if !M::STATES.contains(&s) {
                return Err(format!(
                    "{name}: row {r:?} names state {s:?}, not in STATES"
                ));
            }
        }
        if !M::EVENTS.contains(&r.event) {
            return Err(format!(
                "{name}: row {r:?} names event {:?}, not in EVENTS",
                r.event
            ));
        }
    }
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
    for &s in M::STATES {
        for &e in M::EVENTS {
            let by_fn = M::transition(s, e);
            let rows: Vec<_> = M::TABLE
                .iter()
                .filter(|r| r.from == s && r.event == e)
                .collect();
            if rows.len() > 1 {
                return Err(format!("{name}: duplicate rows for {s:?}/{e:?}"));
            }
            let by_table = rows.first().map(|r| r.to);
            if by_fn != by_table {
                return Err(format!(
                    "{name}: {s:?}/{e:?}: function says {by_fn:?}, table says {by_table:?}"
                ));
            }
        }
    }
    Ok(())
}

fn first_duplicate<T: PartialEq>(items: &[T]) -> Option<&T> {
    items
        .iter()
        .enumerate()
        .find(|(i, x)| items[..*i].contains(x))
        .map(|(_, x)| x)
}

/// Render a machine's table as a Graphviz-free text diagram (for docs and
/// snapshots): one `FROM --event--> TO` line per row.
pub fn render_table<M: Fsm>() -> String {
    let mut s = String::new();
    for r in M::TABLE {
        s.push_str(&format!(
            "{} --{}--> {}\n",
            M::state_name(r.from),
            M::event_name(r.event),
            M::state_name(r.to)
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum S {
        A,
        B,
        C,
    }
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum E {
        Go,
        Back,
    }

    /// A toy machine whose lists and table each test below breaks in one
    /// way; `check_table` must name the break.
    macro_rules! machine {
        ($name:ident, states: $states:expr, events: $events:expr, table: $table:expr,
         transition: $tr:expr) => {
            struct $name;
            impl Fsm for $name {
                type State = S;
                type Event = E;
                const NAME: &'static str = stringify!($name);
                const TABLE: &'static [Row<S, E>] = $table;
                const STATES: &'static [S] = $states;
                const EVENTS: &'static [E] = $events;
                fn transition(s: S, e: E) -> Option<S> {
                    let f: fn(S, E) -> Option<S> = $tr;
                    f(s, e)
                }
                fn state_name(_: S) -> &'static str {
                    "s"
                }
                fn event_name(_: E) -> &'static str {
                    "e"
                }
            }
        };
    }

    const GO: Row<S, E> = Row {
        from: S::A,
        event: E::Go,
        to: S::B,
    };
    const BACK: Row<S, E> = Row {
        from: S::B,
        event: E::Back,
        to: S::A,
    };
    fn good(s: S, e: E) -> Option<S> {
        match (s, e) {
            (S::A, E::Go) => Some(S::B),
            (S::B, E::Back) => Some(S::A),
            _ => None,
        }
    }

    machine!(Good, states: &[S::A, S::B], events: &[E::Go, E::Back],
        table: &[GO, BACK], transition: good);
    machine!(Disagrees, states: &[S::A, S::B], events: &[E::Go, E::Back],
        table: &[GO, BACK], transition: |s, e| good(s, e).or(Some(S::A)));
    machine!(DupState, states: &[S::A, S::B, S::A], events: &[E::Go, E::Back],
        table: &[GO, BACK], transition: good);
    machine!(Unlisted, states: &[S::A], events: &[E::Go, E::Back],
        table: &[GO, BACK], transition: good);
    machine!(DeadState, states: &[S::A, S::B, S::C], events: &[E::Go, E::Back],
        table: &[GO, BACK], transition: good);
    machine!(DeadEvent, states: &[S::A, S::B], events: &[E::Go, E::Back],
        table: &[GO], transition: |s, e| if e == E::Go { good(s, e) } else { None });
    machine!(DupRow, states: &[S::A, S::B], events: &[E::Go, E::Back],
        table: &[GO, BACK, GO], transition: good);

    #[test]
    fn check_table_accepts_a_sound_machine_and_names_each_defect() {
        assert_eq!(check_table::<Good>(), Ok(()));
        let err = |r: Result<(), String>| r.unwrap_err();
        assert!(err(check_table::<Disagrees>()).contains("function says"));
        assert!(err(check_table::<DupState>()).contains("listed twice"));
        assert!(err(check_table::<Unlisted>()).contains("not in STATES"));
        assert!(err(check_table::<DeadState>()).contains("C is in no row"));
        assert!(err(check_table::<DeadEvent>()).contains("Back is in no row"));
        assert!(err(check_table::<DupRow>()).contains("duplicate rows"));
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
        assert_eq!(render_table::<Good>(), "s --e--> s\ns --e--> s\n");
    }
}
