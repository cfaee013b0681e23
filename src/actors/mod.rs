//! The actors: Producer, Worker, Device-sequencer-proxy and NDS-publisher.
//! Each is a plain struct owning its typed state machine and ring endpoints,
//! with a non-blocking `poll` that reports progress; actors never spawn
//! threads. Mailboxes are bounded SPSC rings ([`mailbox`], loom-checked).
//!
//! This module owns the vocabulary every actor shares, so that both runners
//! can drive any actor the same way:
//!
//! - [`Actor`]: `poll(&mut self, cx) -> Progress`, a name, an idle-wait hook
//!   ([`Idle`]) for the threaded runner and an optional timer
//!   ([`Actor::next_deadline`]) for the deterministic runner's virtual clock.
//!   A poll never blocks and never sleeps: waiting is the runner's job.
//! - [`Cx`]: what a poll gets from its runner: the current time ([`Nanos`],
//!   virtual or monotonic, never read from a global clock inside an actor),
//!   the actor's name and a trace sink. [`Cx`] is a
//!   [`TransitionHook`], so an actor steps its
//!   machines with `fsm::step_traced::<M>(state, event, id, cx)` and every
//!   transition lands in the trace.
//! - [`TraceSink`] / [`TraceEvent`]: the trace interface (a kind and a stable
//!   text per event), defined with the tracer in `crate::sim::events`. The
//!   file format lives in `crate::system::trace`.
//! - [`mailbox`]: the bounded SPSC mailbox (`push` gives the item back as
//!   [`mailbox::Full`] when the mailbox is full).
//!
//! The system's four actors:
//!
//! | actor | module | owns | sleeps on |
//! |---|---|---|---|
//! | Producer | [`producer`] | per XU a [`producer::Lane`]: ring producer, stager, work-item free list (the funnel, also called synchronously by the public API) and the workload driver | its own eventfd (armed completions) |
//! | Worker (one per core) | [`worker`] | ring worker, NQ harvester, the XU's health | has-work [`wake::Waker`], or the core's NQ interrupt while harvesting |
//! | Device-sequencer-proxy | [`sequencer`] | the simulated device's sequencer | the doorbell [`wake::Waker`] |
//! | NDS-publisher | [`publisher`] | the datastore writer | its [`wake::Waker`] |
//!
//! [`work`] holds what travels between them (work items, resident models,
//! publisher messages, the health cell), [`stats`] the allocation-free
//! latency histogram.
//!
//! ## The deadlock rule for paired bounded queues
//!
//! Stated in full in docs/design.md ("Actors and the system"). In short:
//! (R1) a poll never blocks; a push that finds the mailbox full keeps the
//! item (at most one kept item per outbound mailbox) and retries on a later
//! poll; (R2) an actor pops from an inbound mailbox only when it can keep
//! whatever that message makes it send; (R3) the "handling a message from
//! queue *q* may push to queue *q'*" relation is acyclic (requests one way,
//! replies that emit nothing the other). Under R1-R3 two actors whose
//! mailboxes toward each other are both full still drain.

pub mod mailbox;
pub mod pace;
pub mod producer;
pub mod publisher;
pub mod sequencer;
pub mod stats;
pub mod wake;
pub mod work;
pub mod worker;

use core::fmt;
use std::os::fd::RawFd;

use crate::fsm::slot::{SlotEvent, SlotFsm, SlotState};
use crate::fsm::{step_traced, Transition, TransitionHook};
pub use crate::sim::events::{Nanos, NullTrace, TraceEvent, TraceSink};
use crate::sim::tracer::TraceLog;

/// What one [`Actor::poll`] achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Progress {
    /// Something changed (a message moved, a state machine stepped). The
    /// runner polls again soon, and the deterministic runner resets its
    /// livelock guard.
    Made,
    /// Nothing to do right now. The threaded runner waits per [`Actor::idle`];
    /// the deterministic runner polls others or advances its clock.
    Idle,
    /// The actor is done and must not be polled again.
    Finished,
}

impl Progress {
    /// [`Made`](Progress::Made) when `made`, else [`Idle`](Progress::Idle).
    pub fn of(made: bool) -> Progress {
        if made {
            Progress::Made
        } else {
            Progress::Idle
        }
    }
}

/// How the threaded runner waits after a poll returned [`Progress::Idle`].
/// The deterministic runner never waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Idle {
    /// Spin-loop hint, then poll again (lowest latency, burns a core).
    #[cfg_attr(not(feature = "testkit"), allow(dead_code))]
    Spin,
    /// `thread::yield_now`, then poll again.
    Yield,
    /// Sleep until this non-blocking eventfd is readable (bounded by the
    /// runner's idle timeout and woken by a stop request). The runner reads
    /// the counter (resets it) before polling again, so whoever gives this
    /// actor work must publish the work first and signal the fd second, and
    /// the actor itself must not read the fd.
    Fd(RawFd),
}

/// The context of one poll: the time, the actor's name and the trace.
pub struct Cx<'a> {
    now: Nanos,
    actor: &'a str,
    tracing: bool,
    trace: &'a mut dyn TraceSink,
}

impl<'a> Cx<'a> {
    /// A context for one poll of `actor` at `now`, tracing into `trace`
    /// (which is told so: [`TraceSink::begin`]).
    pub fn new(now: Nanos, actor: &'a str, trace: &'a mut dyn TraceSink) -> Cx<'a> {
        let tracing = trace.enabled();
        if tracing {
            trace.begin(now, actor);
        }
        Cx {
            now,
            actor,
            tracing,
            trace,
        }
    }

    /// The time of this poll.
    #[inline]
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Whether trace records are kept (skip building expensive texts if not).
    #[inline]
    #[cfg(any(test, feature = "testkit"))]
    pub fn tracing(&self) -> bool {
        self.tracing
    }

    /// Record an event of `kind` whose text is `args`
    /// (`cx.event("msg", format_args!("send ping {n}"))`); `args` is only
    /// formatted when tracing is on.
    #[inline]
    pub fn event(&mut self, kind: &'static str, args: fmt::Arguments<'_>) {
        if self.tracing {
            self.trace.record(TraceEvent { kind, text: &args });
        }
    }
}

/// `msg!(cx, "send ping {n}")`: an actor's note in the trace (kind `msg`),
/// formatted only when tracing is on ([`Cx::event`]).
macro_rules! msg {
    ($cx:expr, $($fmt:tt)+) => {
        $cx.event("msg", format_args!($($fmt)+))
    };
}
pub(crate) use msg;

/// Step `M` from `*state` on `event` (traced as `<machine>#<id>` when `id`
/// is given): `true` with `*state` moved on, or, for an event the state does
/// not accept, `false` with the refusal counted in `violations`, traced
/// (`fsm_violation`) and the state kept. Every actor's cycle steps through
/// it, so a refused event is never a panic and never ignored.
pub(crate) fn step_counted<M: crate::fsm::Fsm>(
    state: &mut M::State,
    event: M::Event,
    id: Option<u64>,
    violations: &mut u64,
    cx: &mut Cx<'_>,
) -> bool
where
    crate::fsm::InvalidEvent<M::State, M::Event>: fmt::Display,
{
    let r = match id {
        Some(id) => crate::fsm::step_traced::<M, _>(*state, event, id, cx),
        None => crate::fsm::step::<M>(*state, event),
    };
    let r = r.map(|s| *state = s);
    cx.counted(violations, r)
}

impl Cx<'_> {
    /// Count (in `violations`) and trace (`fsm_violation`) an event a state
    /// machine did not accept.
    pub(crate) fn refused(&mut self, violations: &mut u64, why: impl fmt::Display) {
        *violations += 1;
        self.event("fsm_violation", format_args!("{why}"));
    }

    /// `true` for `Ok`; an `Err` (an event a state machine did not accept)
    /// is [`refused`](Self::refused) and `false`.
    pub(crate) fn counted<T, E: fmt::Display>(
        &mut self,
        violations: &mut u64,
        r: Result<T, E>,
    ) -> bool {
        r.map_err(|e| self.refused(violations, e)).is_ok()
    }
}

debug_fields!([] Cx<'_>, |s| now = s.now, actor = s.actor, tracing = s.tracing);

impl TransitionHook for Cx<'_> {
    #[inline]
    fn on_transition(&mut self, t: Transition) {
        if self.tracing {
            self.trace.record_fsm(t);
        }
    }
}

/// Forwards the HAL tracer's records to the run's trace as `hal` events,
/// attributed to the actor whose poll made them (deterministic runs: one
/// thread, so the log's order is the operations' order). Without a log
/// (threaded runs) it does nothing.
#[derive(Clone, Debug, Default)]
pub struct HalTap {
    log: Option<TraceLog>,
}

impl HalTap {
    /// A tap on `log` (`None`: off).
    pub fn new(log: Option<TraceLog>) -> HalTap {
        HalTap { log }
    }

    /// Move every record so far into `cx`'s trace.
    pub fn drain(&self, cx: &mut Cx<'_>) {
        let Some(log) = &self.log else { return };
        let tracing = cx.tracing;
        if log.drain_encoded(|e| {
            if tracing {
                cx.trace.record_hal_encoded(e);
            }
        }) {
            return;
        }
        log.drain_each(|r| {
            if cx.tracing {
                cx.trace
                    .record_hal(&r.op, Some(crate::device::memmap::trace_names));
            }
        });
    }
}

/// The slot transitions (`fsm::slot`) of the ring operations an actor made,
/// for the run's trace: the actor reports each operation right after it,
/// and [`drain`](Self::drain) hands the transitions to the trace where the
/// actor wants them. The ring records nothing itself (a trace is a policy
/// around the protocol, not part of it). Off, it does nothing.
#[derive(Debug, Default)]
pub(crate) struct SlotTap {
    on: bool,
    buf: Vec<Transition>,
}

impl SlotTap {
    /// A tap that records when `on`.
    pub(crate) fn new(on: bool) -> SlotTap {
        SlotTap {
            on,
            buf: Vec::new(),
        }
    }

    fn step(&mut self, c: u64, from: SlotState, e: SlotEvent) {
        if self.on {
            // The cursors just moved this way, so the row is legal.
            let _ = step_traced::<SlotFsm, _>(from, e, c, &mut self.buf);
        }
    }

    /// A submit of cursor `c`: FREE -> SUBMITTED.
    pub(crate) fn submitted(&mut self, c: u64) {
        self.step(c, SlotState::Free, SlotEvent::Submit);
    }

    /// A trigger of `cursors`: SUBMITTED -> TRIGGERED each.
    pub(crate) fn triggered(&mut self, cursors: core::ops::Range<u64>) {
        for c in cursors {
            self.step(c, SlotState::Submitted, SlotEvent::Trigger);
        }
    }

    /// A pop (or discard) of cursor `c`: TRIGGERED -> DONE -> FREE.
    pub(crate) fn popped(&mut self, c: u64) {
        self.step(c, SlotState::Triggered, SlotEvent::Complete);
        self.step(c, SlotState::Done, SlotEvent::Reclaim);
    }

    /// Move the recorded transitions into `cx`'s trace.
    pub(crate) fn drain(&mut self, cx: &mut Cx<'_>) {
        for t in self.buf.drain(..) {
            cx.on_transition(t);
        }
    }
}

/// An actor: a plain struct with a non-blocking poll. Actors never spawn
/// threads and never block; the runners (`crate::system::runner`) decide
/// on which thread and in which order they run.
pub trait Actor {
    /// A stable name, unique within one system (used in traces and errors).
    fn name(&self) -> &str;

    /// Do a bounded amount of work without blocking and report it.
    fn poll(&mut self, cx: &mut Cx<'_>) -> Progress;

    /// How the threaded runner should wait after [`Progress::Idle`].
    fn idle(&self) -> Idle {
        Idle::Yield
    }

    /// The earliest time at which this actor has something to do even if no
    /// message arrives (a timeout). The deterministic runner jumps its
    /// virtual clock straight there when every actor is idle; the threaded
    /// runner sleeps on fds no longer than until then.
    fn next_deadline(&self) -> Option<Nanos> {
        None
    }
}

/// A boxed actor (the runners' `Box<dyn Actor>`) forwards to its actor.
impl<A: Actor + ?Sized> Actor for Box<A> {
    forward!(self => (**self);
        fn name(&self) -> &str;
        fn poll(&mut self, cx: &mut Cx<'_>) -> Progress;
        fn idle(&self) -> Idle;
        fn next_deadline(&self) -> Option<Nanos>;
    );
}

/// Lock `m`, whether or not a thread panicked while holding it: the lanes,
/// returns and books behind these locks stay consistent between calls, so a
/// panicked actor's partner keeps going.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink that keeps formatted lines, for these tests.
    #[derive(Default)]
    struct Lines(Vec<String>, bool, String);

    impl TraceSink for Lines {
        fn enabled(&self) -> bool {
            !self.1
        }
        fn begin(&mut self, now: Nanos, actor: &str) {
            self.2 = format!("{now} {actor}");
        }
        fn record(&mut self, e: TraceEvent<'_>) {
            self.0.push(format!("{} {} {}", self.2, e.kind, e.text));
        }
    }

    crate::fsm::machine! {
        /// A toy.
        struct M = "toy";
        enum S { A = "A", B = "B" }
        enum E { Go = "go" }
        rows {
            A + Go => B,
        }
    }

    #[test]
    fn cx_traces_transitions_and_events() {
        let mut sink = Lines::default();
        let mut cx = Cx::new(Nanos(42), "toy0", &mut sink);
        let s = crate::fsm::step_traced::<M, _>(S::A, E::Go, 7, &mut cx).unwrap();
        assert_eq!(s, S::B);
        assert!(crate::fsm::step_traced::<M, _>(s, E::Go, 7, &mut cx).is_err());
        cx.event("msg", format_args!("send {}", 3));
        assert_eq!(
            sink.0,
            ["42 toy0 fsm toy#7 A --go--> B", "42 toy0 msg send 3"]
        );
    }

    #[test]
    fn disabled_sink_skips_formatting() {
        struct Bomb;
        impl fmt::Display for Bomb {
            fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
                panic!("formatted while tracing is off")
            }
        }
        let mut sink = Lines(Vec::new(), true, String::new());
        let mut cx = Cx::new(Nanos(1), "a", &mut sink);
        assert!(!cx.tracing());
        cx.event("msg", format_args!("{}", Bomb));
        assert!(sink.0.is_empty());
    }

    #[test]
    fn nanos_arithmetic_saturates() {
        assert_eq!(Nanos::from_micros(3), Nanos(3_000));
        assert_eq!(Nanos::from_millis(2), Nanos(2_000_000));
        assert_eq!(Nanos::MAX.saturating_add(Nanos(1)), Nanos::MAX);
        assert_eq!(Nanos(1).saturating_sub(Nanos(5)), Nanos::ZERO);
        assert_eq!(Nanos(5).to_string(), "5");
    }
}
