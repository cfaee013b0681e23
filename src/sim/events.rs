//! The run's event vocabulary, shared by the tracer, the actors and the
//! trace file: the time stamp ([`Nanos`]), one event ([`TraceEvent`]), where
//! events go ([`TraceSink`], [`NullTrace`]) and a transition's text
//! ([`TransitionText`]). It sits with the tracer so the HAL's operations,
//! the actors' events and the file's encoding are one stream below the
//! actors.

use core::fmt;

use crate::fsm::Transition;
use crate::sim::tracer::{show, Encoded, Namer, TraceOp};

/// A time in nanoseconds: virtual (deterministic runner) or since the
/// runner started (threaded runner). Actors receive it in `Cx`; they never
/// read a clock themselves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nanos(pub u64);

impl Nanos {
    /// Time zero.
    pub const ZERO: Nanos = Nanos(0);
    /// The largest representable time.
    pub const MAX: Nanos = Nanos(u64::MAX);

    /// `us` microseconds.
    pub const fn from_micros(us: u64) -> Nanos {
        Nanos(us.saturating_mul(1_000))
    }

    /// `ms` milliseconds.
    pub const fn from_millis(ms: u64) -> Nanos {
        Nanos(ms.saturating_mul(1_000_000))
    }

    /// The raw nanosecond count.
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// `self + d`, saturating at [`Nanos::MAX`].
    pub const fn saturating_add(self, d: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(d.0))
    }

    /// `self - earlier`, or zero when `earlier` is later.
    pub const fn saturating_sub(self, earlier: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(earlier.0))
    }
}

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// One trace record as an actor, the HAL tracer or a runner hands it over:
/// a kind (`fsm`, `hal`, `msg`, `run`, ...) and a stable, single-line text.
/// The text is formatted only if the sink is enabled, straight into the
/// sink's preallocated line buffer.
#[derive(Clone, Copy)]
pub struct TraceEvent<'a> {
    /// Short lower-case kind tag; a stable part of the trace format.
    pub kind: &'static str,
    /// The event text. It must not depend on addresses, wall time or hash
    /// seeds (the same seed must give byte-identical traces); newlines are
    /// escaped by the sink.
    pub text: &'a dyn fmt::Display,
}

impl fmt::Debug for TraceEvent<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TraceEvent({} {})", self.kind, self.text)
    }
}

/// Where trace events go. Implemented by `crate::system::trace::Trace` (the
/// file format) and [`NullTrace`] (discard).
///
/// A runner calls [`begin`](Self::begin) before each poll with the time and
/// the polled actor; the events up to the next `begin` are that actor's at
/// that time, so an event carries neither.
pub trait TraceSink {
    /// `false` when records are discarded; callers skip formatting then.
    fn enabled(&self) -> bool;
    /// The events that follow are `actor`'s, at `now`.
    fn begin(&mut self, now: Nanos, actor: &str);
    /// Record `event`.
    fn record(&mut self, event: TraceEvent<'_>);
    /// Record a HAL operation (kind `hal`). The default records its text;
    /// a binary sink encodes the operation instead and formats nothing.
    /// `names` labels the regions (the device's memory map; `None`: raw
    /// offsets).
    fn record_hal(&mut self, op: &TraceOp, names: Option<Namer>) {
        let text = show(op, names);
        self.record(TraceEvent {
            kind: "hal",
            text: &text,
        });
    }
    /// Record HAL operations already encoded in the binary event stream (an
    /// encoding `TraceLog`, see `crate::sim::tracer::TraceLog::encoding`),
    /// one `hal` event each. Only a binary trace without a text view takes
    /// them (the default panics: an encoding log carries no text); the
    /// simulator attaches an encoding log only to such a trace.
    fn record_hal_encoded(&mut self, ops: &Encoded) {
        let _ = ops;
        panic!("this trace sink renders text and cannot take encoded HAL operations");
    }
    /// Record a state-machine transition (kind `fsm`). The default records
    /// its [`TransitionText`]; a binary sink encodes the names instead.
    fn record_fsm(&mut self, t: Transition) {
        let text = TransitionText(t);
        self.record(TraceEvent {
            kind: "fsm",
            text: &text,
        });
    }
}

/// A sink that discards everything (tracing off).
#[derive(Clone, Copy, Debug, Default)]
pub struct NullTrace;

impl TraceSink for NullTrace {
    #[inline]
    fn enabled(&self) -> bool {
        false
    }
    #[inline]
    fn begin(&mut self, _now: Nanos, _actor: &str) {}
    #[inline]
    fn record(&mut self, _event: TraceEvent<'_>) {}
}

/// The trace text of a state-machine transition:
/// `<machine>#<id> <FROM> --<event>--> <TO>` (the arrow of
/// [`crate::fsm::render_table`]).
#[derive(Clone, Copy, Debug)]
pub struct TransitionText(pub Transition);

impl fmt::Display for TransitionText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.0;
        write!(
            f,
            "{}#{} {} --{}--> {}",
            t.machine, t.id, t.from, t.event, t.to
        )
    }
}
