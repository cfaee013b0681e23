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
/// every (state, event) pair. Returns the first disagreement.
pub fn check_table<M: Fsm>() -> Result<(), String> {
    for &s in M::STATES {
        for &e in M::EVENTS {
            let by_fn = M::transition(s, e);
            let rows: Vec<_> = M::TABLE
                .iter()
                .filter(|r| r.from == s && r.event == e)
                .collect();
            if rows.len() > 1 {
                return Err(format!("{}: duplicate rows for {s:?}/{e:?}", M::NAME));
            }
            let by_table = rows.first().map(|r| r.to);
            if by_fn != by_table {
                return Err(format!(
                    "{}: {s:?}/{e:?}: function says {by_fn:?}, table says {by_table:?}",
                    M::NAME
                ));
            }
        }
    }
    Ok(())
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
