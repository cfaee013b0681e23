//! The two runners that drive the same actors: what runs in production is
//! what the seeded deterministic runs test.
//!
//! - [`ThreadedRunner`]: an OS thread per actor or per group of actors
//!   ([`Seat`]). After a round of polls without progress a thread waits as
//!   its actors ask ([`Idle`]): spin, yield, or sleep on their eventfds
//!   (bounded by [`ThreadedConfig::idle_timeout`] and woken by a stop
//!   request); a shared actor is also polled by other threads with nothing
//!   to do. Time is a [`MonotonicClock`] since start.
//! - [`DetRunner`]: one thread, no waiting. A seeded
//!   [`SplitMix64`] picks the next actor among the runnable ones; the
//!   virtual time advances by a fixed quantum per poll and, when every
//!   live actor has reported idle since the last progress, jumps to the
//!   earliest [`Actor::next_deadline`] (or by [`DetConfig::idle_jump`]). The
//!   same seed and the same actors give the same schedule, the same virtual
//!   times and so a byte-identical trace. A livelock guard turns "N polls in
//!   a row without progress" into [`RunError::Livelock`] instead of a hang.
//!
//! ## Stopping
//!
//! Actors added with `add` must finish ([`Progress::Finished`]); actors added
//! with `add_daemon` (workers, the device proxy, the publisher) run until
//! every non-daemon actor has finished, then they are stopped. The threaded
//! runner can also be stopped from outside ([`StopHandle`]), and it stops
//! every actor as soon as one panics, reporting [`RunError::ActorPanicked`].
//! The deterministic runner can stop on any predicate
//! ([`DetRunner::run_until`]).

use core::fmt;
use std::any::Any;
use std::io;
use std::os::fd::RawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, TryLockError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::actors::{Actor, Cx, Idle, Nanos, NullTrace, Progress, TraceEvent, TraceSink};
use crate::hal::eventfd::{poll_fds, poll_readable, pollin, readable, reset_raw, EventFd};
use crate::prng::SplitMix64;
use crate::ring::waiter::after;

/// The name runner events carry in the trace.
pub const RUNNER_NAME: &str = "runner";

error_enum! {
    /// Why a run did not complete.
    #[derive(Debug)]
    pub enum RunError {
        /// The deterministic runner polled `polls` times in a row without any
        /// actor making progress (livelock or deadlock).
        Livelock {
            /// Consecutive polls without progress.
            polls: u64,
            /// Virtual time when the guard fired.
            now: Nanos,
            /// Actors not finished at that point.
            waiting: Vec<String>,
        } => (
            "livelock: {polls} polls without progress at t={now} ns; waiting: {}",
            waiting.join(", ")
        ),
        /// The deterministic runner reached [`DetConfig::max_polls`].
        PollBudget {
            /// Polls done.
            polls: u64,
            /// Virtual time.
            now: Nanos,
        } => "poll budget of {polls} exhausted at t={now} ns",
        /// The threaded run passed [`ThreadedConfig::max_wall`].
        WallTimeout {
            /// The bound that passed.
            after: Duration,
        } => "threaded run still going after {after:?}; stopped",
        /// An actor panicked inside `poll`; the others were stopped.
        ActorPanicked {
            /// The actor's name.
            actor: String,
            /// The panic message (when it was a string).
            message: String,
            /// The time of the poll that panicked.
            now: Nanos,
        } => "actor {actor} panicked at t={now} ns: {message}",
        /// A thread could not be spawned (or the stop eventfd created).
        Spawn(#[source] io::Error) => "could not start the runner: {0}",
    }
}

fn panic_message(p: &(dyn Any + Send)) -> String {
    let text = p.downcast_ref::<&str>().copied();
    let text = text.or_else(|| p.downcast_ref::<String>().map(String::as_str));
    text.unwrap_or("non-string panic payload").to_string()
}

/// One actor in a runner, and what its polls did (both runners).
struct Member<A> {
    /// Its `add` index.
    index: usize,
    actor: A,
    daemon: bool,
    st: ActorStats,
    /// Returned [`Progress::Finished`] or panicked: not polled again.
    done: bool,
    /// The time its last poll was handed (a deadline after it is not yet
    /// seen: [`Wish::add`], [`DetRunner::step`]).
    polled_at: Nanos,
}

impl<A: Actor> Member<A> {
    fn new(index: usize, actor: A, daemon: bool) -> Member<A> {
        Member {
            index,
            st: ActorStats {
                name: actor.name().to_string(),
                ..ActorStats::default()
            },
            actor,
            daemon,
            done: false,
            polled_at: Nanos(0),
        }
    }

    /// Poll the actor once at `now`, counting the result; a panic is
    /// [`RunError::ActorPanicked`], and the member is done either way.
    fn poll(&mut self, now: Nanos, trace: &mut dyn TraceSink) -> Result<Progress, RunError> {
        self.polled_at = now;
        self.st.polls += 1;
        let progress = catch_unwind(AssertUnwindSafe(|| {
            self.actor.poll(&mut Cx::new(now, &self.st.name, trace))
        }))
        .map_err(|p| RunError::ActorPanicked {
            actor: self.st.name.clone(),
            message: panic_message(&*p),
            now,
        });
        match progress {
            Ok(Progress::Made) => self.st.progress += 1,
            Ok(Progress::Finished) => (self.st.finished, self.done) = (true, true),
            Ok(Progress::Idle) => {}
            Err(_) => self.done = true,
        }
        progress
    }
}

// ---------------------------------------------------------------------------
// Deterministic runner
// ---------------------------------------------------------------------------

/// Configuration of a [`DetRunner`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DetConfig {
    /// Seeds the scheduling PRNG.
    pub seed: u64,
    /// Virtual time added after every poll.
    pub quantum: Nanos,
    /// Virtual time jumped when every live actor is idle and none has a
    /// deadline ahead.
    pub idle_jump: Nanos,
    /// The livelock guard: error after this many polls in a row without
    /// progress.
    pub max_polls_without_progress: u64,
    /// Error after this many polls in total (`None`: unbounded).
    pub max_polls: Option<u64>,
}

impl DetConfig {
    /// Defaults: quantum 100 ns, idle jump 10 us, livelock after 100 000
    /// idle polls, no total budget.
    pub const fn new(seed: u64) -> DetConfig {
        DetConfig {
            seed,
            quantum: Nanos(100),
            idle_jump: Nanos(10_000),
            max_polls_without_progress: 100_000,
            max_polls: None,
        }
    }

    /// The runner part of a trace header's config
    /// (`quantum=100 idle_jump=10000 livelock=100000`).
    pub fn config_text(&self) -> String {
        format!(
            "quantum={} idle_jump={} livelock={}",
            self.quantum, self.idle_jump, self.max_polls_without_progress
        )
    }
}

/// Counters of a deterministic run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DetStats {
    /// Polls done.
    pub polls: u64,
    /// Polls that returned [`Progress::Made`] or [`Progress::Finished`].
    pub progress: u64,
    /// Clock jumps (rounds in which every live actor was idle).
    pub jumps: u64,
    /// The virtual time: a quantum more after every poll, jumped forward
    /// when nobody can make progress.
    pub now: Nanos,
}

/// What one [`DetRunner::step`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Actor `actor` was polled with this result.
    Polled {
        /// Index returned by `add`/`add_daemon`.
        actor: usize,
        /// The poll's result.
        progress: Progress,
    },
    /// Every non-daemon actor has finished (or every actor has); nothing
    /// was polled.
    Done,
}

/// The deterministic single-thread runner.
pub struct DetRunner<A = Box<dyn Actor>> {
    cfg: DetConfig,
    rng: SplitMix64,
    slots: Vec<Member<A>>,
    /// The actors not finished, in `add` order.
    live: Vec<usize>,
    /// How many of them are not daemons, and how many non-daemons there
    /// are ([`DetRunner::is_done`] in O(1)).
    live_non_daemons: usize,
    non_daemons: usize,
    /// The pickable actors, in `add` order: the live ones that have not
    /// reported idle since the last progress by anyone (or the last jump).
    /// Kept up to date by each step (an idle poll removes its actor,
    /// progress or a jump makes every live actor pickable again) rather
    /// than rebuilt: a slot holds a whole actor (kilobytes), and a 16-core
    /// `xunds sim` case spent half its time rescanning the slots' flags.
    runnable: Vec<usize>,
    /// The counters and the virtual time.
    stats: DetStats,
    no_progress: u64,
    started: bool,
}

// By hand, not derived: a derive would ask `A: Debug` (actors are not) and
// print every actor whole; the runners show their counts.
debug_fields!([A] DetRunner<A>, |s| cfg = s.cfg, actors = s.slots.len(), stats = s.stats);

/// Record a runner event (`kind` `run`) at `now`.
fn trace_runner(trace: &mut dyn TraceSink, now: Nanos, args: fmt::Arguments<'_>) {
    if trace.enabled() {
        trace.begin(now, RUNNER_NAME);
        trace.record(TraceEvent {
            kind: "run",
            text: &args,
        });
    }
}

impl<A: Actor> DetRunner<A> {
    /// An empty runner.
    pub fn new(cfg: DetConfig) -> DetRunner<A> {
        DetRunner {
            cfg,
            rng: SplitMix64::new(cfg.seed),
            slots: Vec::new(),
            live: Vec::new(),
            live_non_daemons: 0,
            non_daemons: 0,
            runnable: Vec::new(),
            stats: DetStats::default(),
            no_progress: 0,
            started: false,
        }
    }

    fn push(&mut self, actor: A, daemon: bool) -> usize {
        let i = self.slots.len();
        self.slots.push(Member::new(i, actor, daemon));
        self.live.push(i);
        // Not idle: pickable at once.
        self.runnable.push(i);
        if !daemon {
            self.non_daemons += 1;
            self.live_non_daemons += 1;
        }
        i
    }

    /// Add an actor that must finish; returns its index.
    pub fn add(&mut self, actor: A) -> usize {
        self.push(actor, false)
    }

    /// Add a daemon: it is not waited for, and is simply no longer polled
    /// once every non-daemon actor has finished.
    pub fn add_daemon(&mut self, actor: A) -> usize {
        self.push(actor, true)
    }

    /// The virtual time.
    pub fn now(&self) -> Nanos {
        self.stats.now
    }

    /// Counters so far.
    pub fn stats(&self) -> DetStats {
        self.stats
    }

    /// Whether actor `i` has finished.
    #[cfg(any(test, feature = "testkit"))]
    pub fn is_finished(&self, i: usize) -> bool {
        self.slots[i].done
    }

    /// The actors, in `add` order.
    pub fn into_actors(self) -> Vec<A> {
        self.slots.into_iter().map(|s| s.actor).collect()
    }

    /// `true` when every non-daemon actor has finished (and there is at
    /// least one), or when every actor has.
    pub fn is_done(&self) -> bool {
        self.live.is_empty() || (self.non_daemons > 0 && self.live_non_daemons == 0)
    }

    /// Actor `i` finished (or panicked): never polled again, so this runs
    /// once for it.
    fn finish(&mut self, i: usize) {
        self.live.retain(|&j| j != i);
        self.runnable.retain(|&j| j != i);
        if !self.slots[i].daemon {
            self.live_non_daemons -= 1;
        }
    }

    /// Poll one actor (jumping the clock first if every live actor is idle).
    pub fn step(&mut self, trace: &mut dyn TraceSink) -> Result<Step, RunError> {
        let now = self.stats.now;
        if !self.started {
            self.started = true;
            let daemon = |s: &Member<A>| if s.daemon { "(daemon)" } else { "" };
            let names: Vec<String> = self
                .slots
                .iter()
                .map(|s| format!("{}{}", s.st.name, daemon(s)))
                .collect();
            let (seed, names) = (self.cfg.seed, names.join(","));
            trace_runner(trace, now, format_args!("start seed={seed} actors={names}"));
        }
        if self.is_done() {
            return Ok(Step::Done);
        }
        if self.runnable.is_empty() {
            // A deadline the clock's ticks passed while its actor was idle
            // (not polled since) is due now: poll that actor before any jump.
            for &i in &self.live {
                let s = &self.slots[i];
                let missed = |d: Nanos| d <= now && d > s.polled_at;
                if s.actor.next_deadline().is_some_and(missed) {
                    self.runnable.push(i);
                }
            }
        }
        if self.runnable.is_empty() {
            // Nobody can make progress at this time: jump to the earliest
            // deadline ahead, or by the idle jump.
            let target = self
                .live
                .iter()
                .filter_map(|&i| self.slots[i].actor.next_deadline())
                .filter(|&d| d > now)
                .min()
                .unwrap_or_else(|| now.saturating_add(self.cfg.idle_jump));
            // Ahead of `now` (or `now` itself, saturated): never back.
            self.stats.now = target;
            self.stats.jumps += 1;
            trace_runner(trace, now, format_args!("jump to={target}"));
            self.runnable.clone_from(&self.live);
        }
        let k = self.rng.below(self.runnable.len() as u64) as usize;
        let i = self.runnable[k];
        let now = self.stats.now;
        let polled = self.slots[i].poll(now, trace);
        self.stats.now = now.saturating_add(self.cfg.quantum);
        self.stats.polls += 1;
        let progress = polled.inspect_err(|_| self.finish(i))?;
        match progress {
            Progress::Made => self.progressed(),
            Progress::Finished => {
                self.finish(i);
                self.progressed();
                let name = self.slots[i].st.name.as_str();
                trace_runner(trace, now, format_args!("finished {name}"));
            }
            Progress::Idle => {
                self.runnable.remove(k);
                self.no_progress += 1;
                if self.no_progress >= self.cfg.max_polls_without_progress {
                    let waiting = self.live.iter().map(|&i| &self.slots[i].st.name);
                    return Err(RunError::Livelock {
                        polls: self.no_progress,
                        now: self.stats.now,
                        waiting: waiting.cloned().collect(),
                    });
                }
            }
        }
        if let Some(max) = self.cfg.max_polls {
            if self.stats.polls >= max && !self.is_done() {
                return Err(RunError::PollBudget {
                    polls: self.stats.polls,
                    now: self.stats.now,
                });
            }
        }
        Ok(Step::Polled { actor: i, progress })
    }

    fn progressed(&mut self) {
        self.stats.progress += 1;
        self.no_progress = 0;
        self.runnable.clone_from(&self.live);
    }

    /// Run until [`DetRunner::is_done`].
    #[cfg(any(test, feature = "testkit"))]
    pub fn run(&mut self, trace: &mut dyn TraceSink) -> Result<DetStats, RunError> {
        self.run_until(trace, |_| false)
    }

    /// Run until done or until `stop` (checked before every step) says so.
    pub fn run_until(
        &mut self,
        trace: &mut dyn TraceSink,
        mut stop: impl FnMut(&Self) -> bool,
    ) -> Result<DetStats, RunError> {
        while !stop(self) {
            if self.step(trace)? == Step::Done {
                break;
            }
        }
        Ok(self.stats())
    }
}

// ---------------------------------------------------------------------------
// Threaded runner
// ---------------------------------------------------------------------------

/// Configuration of a [`ThreadedRunner`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadedConfig {
    /// Longest single sleep of an [`Idle::Fd`] actor before it is polled
    /// again (a lost wake-up costs at most this).
    pub idle_timeout: Duration,
    /// Stop everything and fail with [`RunError::WallTimeout`] if the run is
    /// still going after this long (`None`: no bound).
    pub max_wall: Option<Duration>,
}

impl Default for ThreadedConfig {
    fn default() -> Self {
        ThreadedConfig {
            idle_timeout: Duration::from_millis(10),
            max_wall: None,
        }
    }
}

/// On its own cache line: every actor thread loads the flag on every poll,
/// so a hot neighbour would turn those loads into misses.
#[repr(align(64))]
#[derive(Debug)]
struct StopInner {
    flag: AtomicBool,
    /// Signalled once by `stop` and never read, so it stays readable and
    /// wakes every thread sleeping in `poll(2)` on it.
    efd: EventFd,
}

/// Stops a threaded run from anywhere. Cheap to clone.
#[derive(Clone, Debug)]
pub struct StopHandle(Arc<StopInner>);

impl StopHandle {
    fn new() -> io::Result<StopHandle> {
        Ok(StopHandle(Arc::new(StopInner {
            flag: AtomicBool::new(false),
            efd: EventFd::new()?,
        })))
    }

    /// Ask every actor thread to return after its current poll.
    pub fn stop(&self) {
        // Ordering: Release pairs with the Acquire load in `is_stopped`:
        // whatever the stopper did before (e.g. recording results) is visible
        // to a thread that sees the flag.
        self.0.flag.store(true, Ordering::Release);
        // Wakes sleepers; failure (counter overflow) is impossible for one
        // write of 1 and would only cost one idle timeout.
        let _ = self.0.efd.signal(1);
    }

    /// Whether [`StopHandle::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        // Ordering: Acquire pairs with the Release store in `stop`.
        self.0.flag.load(Ordering::Acquire)
    }

    /// Sleep until the run is stopped or `timeout` passes; returns
    /// [`StopHandle::is_stopped`]. For a caller that
    /// shows progress while a run goes on: it wakes at once on the stop.
    pub fn wait(&self, timeout: Duration) -> bool {
        if !self.is_stopped() {
            // The eventfd is never reset, so it stays readable once stopped.
            poll_readable([self.fd()], timeout);
        }
        self.is_stopped()
    }

    fn fd(&self) -> RawFd {
        self.0.efd.raw()
    }
}

/// Sleep until one of the fds in `pfd` (built with [`pollin`]) or `stop_fd`
/// is readable or `timeout` passes, then reset the eventfd counters of the
/// ones that fired (never `stop_fd`'s).
fn wait_fds(pfd: &mut Vec<libc::pollfd>, stop_fd: RawFd, timeout: Duration) {
    let n = pfd.len();
    pfd.push(pollin(stop_fd));
    // At least SLEEP_MIN, so a zero timeout does not become a busy poll.
    if poll_fds(pfd, timeout.max(SLEEP_MIN)) {
        for p in &pfd[..n] {
            if readable(p) {
                reset_raw(p.fd);
            }
        }
    }
    pfd.clear();
}

/// Per-actor counters of a threaded run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ActorStats {
    /// The actor's name.
    pub name: String,
    /// Polls done.
    pub polls: u64,
    /// Polls that returned [`Progress::Made`].
    pub progress: u64,
    /// Rounds of its thread that ended in a wait (spin, yield or sleep)
    /// with this actor idle.
    pub idle_waits: u64,
    /// `true` if the actor returned [`Progress::Finished`] (as opposed to
    /// being stopped).
    pub finished: bool,
}

/// The outcome of a threaded run.
pub struct ThreadedReport<A> {
    /// The actors, in `add` order, as they ended.
    pub actors: Vec<A>,
    /// Their counters, same order.
    pub stats: Vec<ActorStats>,
    /// Wall time from start until the last non-daemon actor finished (when
    /// the run was stopped instead, or had none: until the join).
    pub elapsed: Duration,
}

debug_fields!([A] ThreadedReport<A>, |s| stats = s.stats, elapsed = s.elapsed; ..);

/// The threaded runner's clock: nanoseconds since the runner started
/// (actors only see it as [`Cx::now`]).
#[derive(Clone, Copy, Debug)]
pub struct MonotonicClock {
    origin: Instant,
}

impl MonotonicClock {
    /// A clock whose zero is now.
    pub fn start() -> MonotonicClock {
        MonotonicClock {
            origin: Instant::now(),
        }
    }

    /// Nanoseconds since [`MonotonicClock::start`] (saturating).
    pub fn now(&self) -> Nanos {
        Nanos(u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }
}

#[derive(Debug)]
struct ThreadShared {
    stop: StopHandle,
    /// Non-daemon actors not finished yet; the one that takes it to zero
    /// stops the daemons.
    remaining: AtomicUsize,
    clock: MonotonicClock,
    /// When the last non-daemon actor finished: the end of the run proper,
    /// whenever the caller gets round to joining.
    ended: OnceLock<Instant>,
}

/// Where a [`ThreadedRunner`] actor runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seat {
    /// A thread of its own.
    Own,
    /// The thread of this group, with the group's other actors.
    Group(u32),
    /// The thread of this group, and any other thread with time to spare
    /// ([`ThreadedRunner::add_to`]).
    Shared(u32),
}

impl Seat {
    fn group(self) -> Option<u32> {
        match self {
            Seat::Own => None,
            Seat::Group(g) | Seat::Shared(g) => Some(g),
        }
    }
}

/// The threaded runner: one thread per actor, or per group of actors
/// ([`ThreadedRunner::add_to`]).
pub struct ThreadedRunner<A> {
    cfg: ThreadedConfig,
    /// Each actor, and where it runs.
    actors: Vec<(Member<A>, Seat)>,
    stop: StopHandle,
    clock: Option<MonotonicClock>,
}

debug_fields!([A] ThreadedRunner<A>, |s| cfg = s.cfg, actors = s.actors.len());

impl<A: Actor + Send + 'static> ThreadedRunner<A> {
    /// An empty runner (creates the stop eventfd).
    pub fn new(cfg: ThreadedConfig) -> Result<ThreadedRunner<A>, RunError> {
        Ok(ThreadedRunner {
            cfg,
            actors: Vec::new(),
            stop: StopHandle::new().map_err(RunError::Spawn)?,
            clock: None,
        })
    }

    /// Hand the actors this clock's time instead of one started by
    /// [`ThreadedRunner::start`] (so code outside the actors, e.g. the public
    /// API's schedule on a caller's thread, stamps times on the same base).
    pub fn set_clock(&mut self, clock: MonotonicClock) {
        self.clock = Some(clock);
    }

    /// Add an actor that must finish, on a thread of its own; returns its
    /// index.
    #[cfg(any(test, feature = "testkit"))]
    pub fn add(&mut self, actor: A) -> usize {
        self.add_to(Seat::Own, actor, false)
    }

    /// Add a daemon, stopped once every non-daemon actor has finished, on a
    /// thread of its own.
    #[cfg(any(test, feature = "testkit"))]
    pub fn add_daemon(&mut self, actor: A) -> usize {
        self.add_to(Seat::Own, actor, true)
    }

    /// Add an actor (a daemon if `daemon`) where `seat` says. The actors of
    /// one group share one thread, which polls them in `add` order, round
    /// after round, and waits only when a whole round made no progress (as
    /// the least sleepy of them asks: spin, else yield, else sleep on all
    /// their fds at once). A [`Seat::Shared`] actor is also polled by the
    /// other threads after one of their rounds made no progress, while it
    /// is not asleep on its fd: a thread with time to spare lends it to the
    /// busiest actors, so the load spreads over the threads without anyone
    /// guessing each actor's cost. Fewer threads than actors keeps a host
    /// with few CPUs from spending them on yields and wake-ups.
    pub fn add_to(&mut self, seat: Seat, actor: A, daemon: bool) -> usize {
        let index = self.actors.len();
        self.actors.push((Member::new(index, actor, daemon), seat));
        index
    }

    /// A handle that stops the run (usable before and after `start`).
    #[cfg(any(test, feature = "testkit"))]
    pub fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }

    /// Spawn one thread per actor or group (named `xunds-<first actor>`).
    pub fn start(self) -> Result<Running<A>, RunError> {
        let started = Instant::now();
        let non_daemons = self.actors.iter().filter(|(m, _)| !m.daemon).count();
        let shared = Arc::new(ThreadShared {
            stop: self.stop.clone(),
            remaining: AtomicUsize::new(non_daemons),
            clock: self.clock.unwrap_or_else(MonotonicClock::start),
            ended: OnceLock::new(),
        });
        if self.actors.is_empty() {
            // Nothing will ever call stop: the run is over before it starts.
            self.stop.stop();
        }
        // Each thread's members, in `add` order; threads in order of their
        // first actor. Every member sits in a mutex; a shared one's is
        // reached by every thread: its own thread polls it as its other
        // members, the others only when they have time (`try_lock`, never
        // waiting). Nobody else reaches the others' locks.
        let mut groups: Vec<(Option<u32>, String, Vec<MemberLock<A>>)> = Vec::new();
        let mut shared_all: Vec<(Option<u32>, MemberLock<A>)> = Vec::new();
        for (member, seat) in self.actors {
            let name = member.st.name.clone();
            let m = Arc::new(Mutex::new(member));
            if let Seat::Shared(_) = seat {
                shared_all.push((seat.group(), m.clone()));
            }
            let group = seat.group();
            let same = |g: &Option<u32>| group.is_some() && *g == group;
            match groups.iter_mut().find(|(g, ..)| same(g)) {
                Some((.., members)) => members.push(m),
                None => groups.push((group, name, vec![m])),
            }
        }
        // Dropped on a spawn failure: stops and joins the threads started.
        let mut running = Running {
            threads: Vec::with_capacity(groups.len()),
            started,
            max_wall: self.cfg.max_wall,
            shared,
        };
        for (group, name, members) in groups {
            let other = |g: &Option<u32>| group.is_none() || *g != group;
            let helps = shared_all.iter().filter(|(g, _)| other(g));
            let helps: Vec<_> = helps.map(|(_, m)| m.clone()).collect();
            let sh = running.shared.clone();
            let cfg = self.cfg;
            let spawned = thread::Builder::new()
                .name(format!("xunds-{name}"))
                .spawn(move || {
                    // A panic outside an actor's `poll` (its `idle`, a
                    // shared member's lock) ends this thread: stop the
                    // others too, as a panic inside `poll` does, then let
                    // the panic reach `join`.
                    catch_unwind(AssertUnwindSafe(|| group_thread(members, helps, &sh, cfg)))
                        .unwrap_or_else(|p| {
                            sh.stop.stop();
                            std::panic::resume_unwind(p)
                        })
                })
                .map_err(RunError::Spawn)?;
            running.threads.push((name, spawned));
        }
        Ok(running)
    }

    /// Start, then [`Running::join`]: returns when every non-daemon actor
    /// has finished (or on a stop request, a panic or the wall bound).
    #[cfg(any(test, feature = "testkit"))]
    pub fn run(self) -> Result<ThreadedReport<A>, RunError> {
        self.start()?.join()
    }
}

/// A member: its own thread reaches it, and for a [`Seat::Shared`] one the
/// other threads too.
type MemberLock<A> = Arc<Mutex<Member<A>>>;

/// A member's lock, or `None` while another thread polls it (a shared one).
fn try_member<A>(m: &Mutex<Member<A>>) -> Option<MutexGuard<'_, Member<A>>> {
    match m.try_lock() {
        Ok(g) => Some(g),
        // A panic inside `poll` is caught under the lock, so a poisoned
        // member is still consistent.
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

type ThreadResult<A> = Result<Vec<MemberLock<A>>, RunError>;

/// Poll `m` once (unless finished): whether it made progress (or
/// finished). A panic stops the run, and the member is never polled again.
/// The last non-daemon actor to finish ends the run and stops the daemons.
fn poll_member<A: Actor>(m: &mut Member<A>, sh: &ThreadShared) -> Result<bool, RunError> {
    if m.done {
        return Ok(false);
    }
    let progress = m
        .poll(sh.clock.now(), &mut NullTrace)
        .inspect_err(|_| sh.stop.stop())?;
    // Ordering: AcqRel: the Release half publishes this actor's work to the
    // thread that sees the count reach zero; its Acquire half makes every
    // other finisher's work visible to the one that stops the daemons.
    if progress == Progress::Finished
        && !m.daemon
        && sh.remaining.fetch_sub(1, Ordering::AcqRel) == 1
    {
        // Before the stop, so whoever sees the stop also sees the end time.
        let _ = sh.ended.set(Instant::now());
        sh.stop.stop();
    }
    Ok(progress != Progress::Idle)
}

/// How a thread waits after a round without progress: the least sleepy
/// of its members' wishes.
#[derive(Default)]
struct Wish {
    spin: bool,
    yield_: bool,
    /// The earliest of the members' [`Actor::next_deadline`]s that came
    /// after their last poll (one at or before it was there at that poll,
    /// which made no progress: it says nothing more). One that has passed
    /// since is due now: no sleep.
    due: Option<Nanos>,
    now: Nanos,
}

impl Wish {
    fn add<A: Actor>(&mut self, m: &mut Member<A>, pfd: &mut Vec<libc::pollfd>) {
        if m.done {
            return;
        }
        m.st.idle_waits += 1;
        match m.actor.idle() {
            Idle::Spin => self.spin = true,
            Idle::Yield => self.yield_ = true,
            Idle::Fd(fd) => pfd.push(pollin(fd)),
        }
        if let Some(d) = m.actor.next_deadline().filter(|&d| d > m.polled_at) {
            self.due = Some(self.due.map_or(d, |e| e.min(d)));
        }
    }

    /// How long the members may sleep on their fds: until the earliest
    /// deadline, at most `idle`; `None` when a deadline is too close to
    /// sleep for ([`SLEEP_MIN`]) or already passed: yield instead.
    fn sleep(&self, idle: Duration) -> Option<Duration> {
        let Some(d) = self.due else { return Some(idle) };
        let left = Duration::from_nanos(d.as_u64().saturating_sub(self.now.as_u64()));
        (left >= SLEEP_MIN).then_some(left.min(idle))
    }
}

/// The shortest sleep on fds worth its wake-up: a deadline closer than
/// this is waited for by yielding (the timer's own slack is about 50 us).
const SLEEP_MIN: Duration = Duration::from_micros(100);

/// A runner thread: poll each unfinished member of its own in turn until
/// all are finished or the run is stopped; after a round without progress,
/// lend a round to the other threads' shared members, and if that made no
/// progress either, wait as its members ask (see
/// [`ThreadedRunner::add_to`]).
fn group_thread<A: Actor>(
    members: Vec<MemberLock<A>>,
    helps: Vec<MemberLock<A>>,
    sh: &ThreadShared,
    cfg: ThreadedConfig,
) -> ThreadResult<A> {
    let mut pfd = Vec::with_capacity(members.len() + 1);
    while !sh.stop.is_stopped() {
        // Unfinished members, whoever finished them (a shared one may be
        // finished by another thread).
        let (mut made, mut live) = (false, 0usize);
        for m in &members {
            // A member another thread is polling: nothing done here (the
            // wait below yields rather than sleeps for it).
            let Some(mut g) = try_member(m) else {
                live += 1;
                continue;
            };
            made |= poll_member(&mut g, sh)?;
            live += usize::from(!g.done);
        }
        if live == 0 {
            break;
        }
        if made {
            continue;
        }
        for m in &helps {
            if sh.stop.is_stopped() {
                break;
            }
            let Some(mut g) = try_member(m) else { continue };
            // An actor asleep on its fd is its own thread's to wake.
            if !g.done && !matches!(g.actor.idle(), Idle::Fd(_)) {
                made |= poll_member(&mut g, sh)?;
            }
        }
        if made {
            continue;
        }
        // A whole round idle: wait as the least sleepy member asks.
        let mut wish = Wish {
            now: sh.clock.now(),
            ..Wish::default()
        };
        for m in &members {
            match try_member(m) {
                Some(mut g) => wish.add(&mut g, &mut pfd),
                None => wish.yield_ = true,
            }
        }
        match wish.sleep(cfg.idle_timeout) {
            Some(t) if !wish.spin && !wish.yield_ => wait_fds(&mut pfd, sh.stop.fd(), t),
            _ if wish.spin => std::hint::spin_loop(),
            _ => thread::yield_now(),
        }
        pfd.clear();
    }
    Ok(members)
}

/// The longest sleep of [`Running::join`] between looks at the wall bound.
const WALL_CHECK: Duration = Duration::from_millis(100);

/// A threaded run in progress.
pub struct Running<A> {
    threads: Vec<(String, JoinHandle<ThreadResult<A>>)>,
    started: Instant,
    max_wall: Option<Duration>,
    shared: Arc<ThreadShared>,
}

/// A run dropped without [`Running::join`] (an early return or a panic
/// between `start` and `join`) stops its threads and waits for them, so
/// none runs on detached, holding its fds, mappings and the slab's lock.
impl<A> Drop for Running<A> {
    fn drop(&mut self) {
        self.shared.stop.stop();
        for (_, h) in self.threads.drain(..) {
            let _ = h.join();
        }
    }
}

debug_fields!([A] Running<A>, |s| threads = s.threads.len(), stopped = s.shared.stop.is_stopped());

impl<A> Running<A> {
    /// The handle that stops the run (clone it to keep one).
    pub fn stop_handle(&self) -> &StopHandle {
        &self.shared.stop
    }

    /// When the wall bound passes (saturating: `max_wall` may be
    /// `Duration::MAX`, no bound).
    fn wall_deadline(&self) -> Option<Instant> {
        self.max_wall.map(|m| after(self.started, m))
    }

    /// `true` once the run has stopped or passed its wall bound: a caller
    /// that shows progress until then calls [`join`](Self::join) next,
    /// which stops a run past its bound and says so.
    pub fn over(&self) -> bool {
        self.shared.stop.is_stopped() || self.wall_deadline().is_some_and(|d| Instant::now() >= d)
    }

    /// Wait for every thread. Returns the actors and their counters, or the
    /// first error (a panic, or the wall bound).
    pub fn join(mut self) -> Result<ThreadedReport<A>, RunError> {
        let stop = self.shared.stop.clone();
        if let Some(deadline) = self.wall_deadline() {
            let left = || deadline.saturating_duration_since(Instant::now());
            while !stop.wait(left().min(WALL_CHECK)) && !left().is_zero() {}
        }
        // Not stopped by now: the wall bound passed.
        let timed_out = self.max_wall.filter(|_| !stop.is_stopped());
        if timed_out.is_some() {
            stop.stop();
        }
        // Every thread, then the first error in thread order.
        let joined: Vec<ThreadResult<A>> = (std::mem::take(&mut self.threads).into_iter())
            .map(|(name, h)| {
                // A panic outside `poll` (in `idle` or `name`).
                h.join().unwrap_or_else(|p| {
                    Err(RunError::ActorPanicked {
                        actor: name,
                        message: panic_message(&*p),
                        now: Nanos::ZERO,
                    })
                })
            })
            .collect();
        let threads = joined.into_iter().collect::<Result<Vec<_>, _>>()?;
        if let Some(after) = timed_out {
            return Err(RunError::WallTimeout { after });
        }
        // Every thread has ended, so each shared member's other handles
        // are gone.
        let mut members: Vec<Member<A>> = threads
            .into_iter()
            .flatten()
            .map(|m| {
                Arc::into_inner(m)
                    .expect("every runner thread has ended: no other handle")
                    .into_inner()
                    .unwrap_or_else(PoisonError::into_inner)
            })
            .collect();
        members.sort_by_key(|m| m.index);
        let (actors, stats) = members.into_iter().map(|m| (m.actor, m.st)).unzip();
        // The run proper ends when its last non-daemon actor finishes,
        // not when the caller joins (it may have been asleep).
        let end = *self.shared.ended.get_or_init(Instant::now);
        Ok(ThreadedReport {
            actors,
            stats,
            elapsed: end.saturating_duration_since(self.started),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts down, reporting idle every other poll.
    struct Countdown {
        name: &'static str,
        left: u32,
        flip: bool,
    }

    impl Actor for Countdown {
        fn name(&self) -> &str {
            self.name
        }
        fn poll(&mut self, cx: &mut Cx<'_>) -> Progress {
            if self.left == 0 {
                return Progress::Finished;
            }
            self.flip = !self.flip;
            if self.flip {
                return Progress::Idle;
            }
            self.left -= 1;
            cx.event("msg", format_args!("left {}", self.left));
            Progress::Made
        }
    }

    #[test]
    fn det_runner_finishes_and_counts() {
        let mut r: DetRunner<Countdown> = DetRunner::new(DetConfig::new(1));
        r.add(Countdown {
            name: "a",
            left: 5,
            flip: false,
        });
        r.add(Countdown {
            name: "b",
            left: 3,
            flip: false,
        });
        let st = r.run(&mut NullTrace).unwrap();
        assert!(r.is_done());
        assert_eq!(st.progress, 5 + 3 + 2);
        assert_eq!(
            st.now,
            Nanos(st.polls * 100 + st.jumps * 10_000).max(st.now)
        );
        assert_eq!(r.step(&mut NullTrace).unwrap(), Step::Done);
    }

    /// Idle until its deadline, then finished; records when it saw it.
    struct Timer {
        deadline: Option<Nanos>,
        fired: std::sync::Arc<std::sync::Mutex<Option<Nanos>>>,
    }

    impl Actor for Timer {
        fn name(&self) -> &str {
            "timer"
        }
        fn poll(&mut self, cx: &mut Cx<'_>) -> Progress {
            match self.deadline {
                Some(d) if cx.now() >= d => {
                    *self.fired.lock().unwrap() = Some(cx.now());
                    Progress::Finished
                }
                _ => Progress::Idle,
            }
        }
        fn next_deadline(&self) -> Option<Nanos> {
            self.deadline
        }
    }

    /// A deadline the clock's ticks pass while its actor is idle is due at
    /// once: the jump that follows must not skip it for the idle jump (it
    /// did: a timed-out execution was seen up to a whole timeout late, which
    /// `xunds sim` reported as a broken bounded wait, seed 422).
    #[test]
    fn det_runner_polls_a_deadline_the_ticks_passed_before_jumping() {
        let fired = std::sync::Arc::new(std::sync::Mutex::new(None));
        let mut r: DetRunner<Timer> = DetRunner::new(DetConfig::new(3));
        r.add(Timer {
            deadline: Some(Nanos(150)),
            fired: fired.clone(),
        });
        for _ in 0..3 {
            r.add_daemon(Timer {
                deadline: None,
                fired: std::sync::Arc::default(),
            });
        }
        r.run(&mut NullTrace).unwrap();
        let at = fired.lock().unwrap().expect("the timer fired");
        assert!(
            at < Nanos(150 + 1_000),
            "the deadline at 150 ns was seen at {at} (the idle jump is 10 us)"
        );
    }

    #[test]
    fn det_runner_with_only_daemons_needs_a_stop_predicate() {
        let mut r: DetRunner<Countdown> = DetRunner::new(DetConfig::new(2));
        r.add_daemon(Countdown {
            name: "d",
            left: u32::MAX,
            flip: false,
        });
        let st = r
            .run_until(&mut NullTrace, |r| r.stats().polls >= 50)
            .unwrap();
        assert_eq!(st.polls, 50);
        assert!(!r.is_done());
    }

    #[test]
    fn threaded_runner_stops_daemons_when_the_rest_finish() {
        let mut r = ThreadedRunner::new(ThreadedConfig {
            max_wall: Some(Duration::from_secs(60)),
            ..ThreadedConfig::default()
        })
        .unwrap();
        r.add(Countdown {
            name: "a",
            left: 100,
            flip: false,
        });
        r.add_daemon(Countdown {
            name: "d",
            left: u32::MAX,
            flip: false,
        });
        let rep = r.run().unwrap();
        assert_eq!(rep.actors[0].left, 0);
        assert!(rep.stats[0].finished);
        assert!(!rep.stats[1].finished);
        assert_eq!(rep.stats[0].progress, 100);
    }

    /// Counts its polls, never finishes.
    struct Ticker(Arc<std::sync::atomic::AtomicU64>);

    impl Actor for Ticker {
        fn name(&self) -> &str {
            "ticker"
        }
        fn poll(&mut self, _: &mut Cx<'_>) -> Progress {
            self.0.fetch_add(1, Ordering::Relaxed);
            Progress::Made
        }
    }

    /// An actor whose `idle` panics (after an idle poll) on its own thread,
    /// or one that never finishes.
    struct Moody(bool);

    impl Actor for Moody {
        fn name(&self) -> &str {
            if self.0 {
                "panics-in-idle"
            } else {
                "forever"
            }
        }
        fn poll(&mut self, _: &mut Cx<'_>) -> Progress {
            if self.0 {
                Progress::Idle
            } else {
                Progress::Made
            }
        }
        fn idle(&self) -> Idle {
            assert!(!self.0, "idle panicked");
            Idle::Yield
        }
    }

    /// A panic in an actor's `idle` (outside `poll`) stops the run as one in
    /// `poll` does, and is reported: the other threads went on, and a run
    /// with an actor that never finishes never ended.
    #[test]
    fn a_panic_in_idle_stops_the_run() {
        let (tx, rx) = std::sync::mpsc::channel();
        thread::spawn(move || {
            let mut r = ThreadedRunner::new(ThreadedConfig::default()).unwrap();
            r.add(Moody(true));
            r.add(Moody(false));
            let _ = tx.send(r.run().err().map(|e| e.to_string()));
        });
        let err = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the run ended");
        let err = err.expect("an error");
        assert!(err.contains("panics-in-idle"), "{err}");
    }

    /// A run dropped without `join` stops and joins its threads: nothing
    /// polls its actors after the drop. They ran on, detached, with their
    /// fds and mappings.
    #[test]
    fn a_run_dropped_without_join_stops_its_threads() {
        let polls = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let mut r = ThreadedRunner::new(ThreadedConfig::default()).unwrap();
        r.add(Ticker(Arc::clone(&polls)));
        let running = r.start().unwrap();
        while polls.load(Ordering::Relaxed) == 0 {
            thread::yield_now();
        }
        drop(running);
        let after = polls.load(Ordering::Relaxed);
        thread::sleep(Duration::from_millis(50));
        assert_eq!(
            polls.load(Ordering::Relaxed),
            after,
            "polled after the drop"
        );
    }

    /// Asleep on an fd nobody writes until its deadline, then finished.
    struct Alarm {
        at: Nanos,
        fd: EventFd,
    }

    impl Alarm {
        fn at(ms: u64) -> Alarm {
            Alarm {
                at: Nanos::from_millis(ms),
                fd: EventFd::new().unwrap(),
            }
        }
    }

    impl Actor for Alarm {
        fn name(&self) -> &str {
            "alarm"
        }
        fn poll(&mut self, cx: &mut Cx<'_>) -> Progress {
            if cx.now() >= self.at {
                Progress::Finished
            } else {
                Progress::Idle
            }
        }
        fn idle(&self) -> Idle {
            Idle::Fd(self.fd.raw())
        }
        fn next_deadline(&self) -> Option<Nanos> {
            Some(self.at)
        }
    }

    /// A thread that would sleep for ten minutes on its fds, its run
    /// bounded at 5 s.
    fn sleepy_runner() -> ThreadedRunner<Box<dyn Actor + Send>> {
        ThreadedRunner::new(ThreadedConfig {
            idle_timeout: Duration::from_secs(600),
            max_wall: Some(Duration::from_secs(5)),
        })
        .unwrap()
    }

    /// Asleep on an fd nobody writes, with a deadline: the threaded runner
    /// sleeps until the deadline, not for its whole idle timeout, and not in
    /// a yield loop (how a paced producer waits for its next arrival: a
    /// yield loop would burn a whole core between arrivals).
    #[test]
    fn threaded_runner_sleeps_until_a_deadline() {
        let mut r = sleepy_runner();
        r.add(Box::new(Alarm::at(20)));
        let rep = r
            .run()
            .expect("woken at the deadline, not at the idle timeout");
        assert!(rep.stats[0].finished);
        assert!(
            rep.stats[0].polls <= 10,
            "{} polls: a yield loop",
            rep.stats[0].polls
        );
    }

    /// A deadline that passes while the rest of its thread's round runs
    /// (after the alarm's idle poll, during a slow member's) is due at
    /// once: the thread does not sleep past it.
    #[test]
    fn a_deadline_passed_during_the_round_is_not_slept_through() {
        /// Idle, each poll taking 30 ms; sleeps on an fd nobody writes.
        struct Slow(EventFd);
        impl Actor for Slow {
            fn name(&self) -> &str {
                "slow"
            }
            fn poll(&mut self, _: &mut Cx<'_>) -> Progress {
                thread::sleep(Duration::from_millis(30));
                Progress::Idle
            }
            fn idle(&self) -> Idle {
                Idle::Fd(self.0.raw())
            }
        }
        let mut r = sleepy_runner();
        r.add_to(Seat::Group(0), Box::new(Alarm::at(10)), false);
        r.add_to(
            Seat::Group(0),
            Box::new(Slow(EventFd::new().unwrap())),
            true,
        );
        let rep = r.run().expect("the alarm's deadline passed in the round");
        assert!(rep.stats[0].finished);
    }

    /// A wall bound of `Duration::MAX` means no bound: the run ends when its
    /// actors do (the deadline saturates; `started + max` panicked).
    #[test]
    fn threaded_runner_takes_an_unbounded_wall() {
        let mut r = ThreadedRunner::new(ThreadedConfig {
            max_wall: Some(Duration::MAX),
            ..ThreadedConfig::default()
        })
        .unwrap();
        r.add(Countdown {
            name: "a",
            left: 10,
            flip: false,
        });
        let rep = r.run().unwrap();
        assert!(rep.stats[0].finished);
    }

    /// `elapsed` is the run proper: it ends when the last non-daemon actor
    /// finishes, not when a caller that was busy (or asleep) gets round to
    /// joining. (Counting the caller's sleep would quantise the exec/s of
    /// `xunds run` to its 50 ms progress interval.)
    #[test]
    fn threaded_elapsed_ends_when_the_last_actor_finishes_not_at_join() {
        let mut r = ThreadedRunner::new(ThreadedConfig::default()).unwrap();
        r.add(Countdown {
            name: "a",
            left: 10,
            flip: false,
        });
        r.add_daemon(Countdown {
            name: "d",
            left: u32::MAX,
            flip: false,
        });
        let t0 = Instant::now();
        let running = r.start().unwrap();
        let stop = running.stop_handle();
        while !stop.wait(Duration::from_secs(60)) {}
        // The end time is recorded before the stop, so it is no later than
        // this moment.
        let seen_stopped = t0.elapsed();
        std::thread::sleep(Duration::from_millis(300));
        let rep = running.join().unwrap();
        assert!(rep.stats[0].finished);
        assert!(
            rep.elapsed <= seen_stopped,
            "elapsed {:?} includes the caller's sleep (stop seen after {:?})",
            rep.elapsed,
            seen_stopped
        );
    }

    /// Records which threads polled it; `Made` until it has made `left`
    /// polls and (if `want_threads`) been polled by that many threads.
    struct Spread {
        name: &'static str,
        left: u32,
        want_threads: usize,
        seen: Vec<thread::ThreadId>,
        /// What `idle` asks for.
        idle: Idle,
    }

    impl Spread {
        fn new(name: &'static str, left: u32, want_threads: usize, idle: Idle) -> Spread {
            Spread {
                name,
                left,
                want_threads,
                seen: Vec::new(),
                idle,
            }
        }
    }

    impl Actor for Spread {
        fn name(&self) -> &str {
            self.name
        }
        fn poll(&mut self, _: &mut Cx<'_>) -> Progress {
            let me = thread::current().id();
            if !self.seen.contains(&me) {
                self.seen.push(me);
            }
            if self.left == 0 && self.seen.len() >= self.want_threads {
                return Progress::Finished;
            }
            if self.left == 0 {
                return Progress::Idle;
            }
            self.left -= 1;
            Progress::Made
        }
        fn idle(&self) -> Idle {
            self.idle
        }
    }

    fn bounded() -> ThreadedRunner<Spread> {
        ThreadedRunner::new(ThreadedConfig {
            max_wall: Some(Duration::from_secs(60)),
            ..ThreadedConfig::default()
        })
        .unwrap()
    }

    /// A group's actors share one thread (a daemon included), all finish,
    /// and the report keeps `add` order.
    #[test]
    fn a_group_runs_its_actors_on_one_thread() {
        let mut r = bounded();
        r.add_to(Seat::Group(7), Spread::new("a", 50, 1, Idle::Yield), false);
        r.add(Spread::new("own", 5, 1, Idle::Yield));
        r.add_to(Seat::Group(7), Spread::new("b", 80, 1, Idle::Yield), false);
        r.add_to(
            Seat::Group(7),
            Spread::new("d", u32::MAX, 1, Idle::Yield),
            true,
        );
        let rep = r.run().unwrap();
        let names: Vec<_> = rep.stats.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "own", "b", "d"]);
        let [a, own, b, d] = &rep.actors[..] else {
            panic!("four actors")
        };
        assert_eq!(a.seen.len(), 1);
        assert_eq!(a.seen, b.seen, "one thread for the group");
        assert_eq!(a.seen, d.seen, "the daemon too");
        assert_ne!(a.seen, own.seen, "a thread of its own");
        assert!(rep.stats[0].finished && rep.stats[2].finished);
        assert!(!rep.stats[3].finished, "the daemon is stopped");
        assert_eq!((rep.stats[0].progress, rep.stats[2].progress), (50, 80));
    }

    /// A shared actor is polled by another thread whose own actors are
    /// idle. (It cannot finish until two threads have polled it: without
    /// the help the run hits its wall bound.)
    #[test]
    fn an_idle_thread_polls_a_shared_actor() {
        let mut r = bounded();
        r.add_to(
            Seat::Group(0),
            Spread::new("idler", 0, 9, Idle::Yield),
            true,
        );
        r.add_to(
            Seat::Shared(1),
            Spread::new("busy", 1000, 2, Idle::Yield),
            false,
        );
        let rep = r.run().unwrap();
        let (idler, busy) = (&rep.actors[0], &rep.actors[1]);
        assert_eq!(busy.seen.len(), 2, "polled by both threads");
        assert!(busy.seen.contains(&idler.seen[0]));
        assert!(rep.stats[1].finished);
    }

    /// A shared actor that asked to sleep on its fd is left to its own
    /// thread: no other thread polls it, however idle.
    #[test]
    fn an_asleep_shared_actor_is_not_polled_by_others() {
        // The run lasts until the idler's thread has had many idle rounds
        // (each one a chance to lend itself to the sleeper); a loaded host
        // gives fewer per millisecond, so a short run is tried again longer.
        let mut ms = 30;
        loop {
            let fd = EventFd::new().unwrap();
            let mut r = bounded();
            r.add_to(
                Seat::Group(0),
                Spread::new("idler", 0, 9, Idle::Yield),
                true,
            );
            r.add_to(
                Seat::Shared(1),
                Spread::new("sleeper", 0, 9, Idle::Fd(fd.raw())),
                true,
            );
            // Daemons only: the run lasts until stopped.
            let running = r.start().unwrap();
            thread::sleep(Duration::from_millis(ms));
            running.stop_handle().stop();
            let rep = running.join().unwrap();
            let (idler, sleeper) = (&rep.actors[0], &rep.actors[1]);
            assert!(rep.stats[1].polls >= 1);
            assert_eq!(sleeper.seen.len(), 1, "only its own thread");
            assert_ne!(sleeper.seen[0], idler.seen[0]);
            if rep.stats[0].idle_waits >= 10 {
                break;
            }
            assert!(ms < 4000, "the idler's thread was never idle 10 times");
            ms *= 4;
        }
    }

    /// Panics on its `at`-th poll; counts polls after that.
    struct Boom {
        polls: u32,
        at: u32,
        after: Arc<AtomicUsize>,
    }

    impl Actor for Boom {
        fn name(&self) -> &str {
            "boom"
        }
        fn poll(&mut self, _: &mut Cx<'_>) -> Progress {
            self.polls += 1;
            if self.polls > self.at {
                self.after.fetch_add(1, Ordering::Relaxed);
            }
            if self.polls == self.at {
                panic!("boom");
            }
            Progress::Made
        }
    }

    /// A member that panicked is never polled again (by its own thread or
    /// by one lending a hand before it sees the stop): the stop is
    /// requested and the member is finished for good.
    #[test]
    fn a_member_that_panicked_is_not_polled_again() {
        let after = Arc::new(AtomicUsize::new(0));
        let sh = ThreadShared {
            stop: StopHandle::new().unwrap(),
            remaining: AtomicUsize::new(1),
            clock: MonotonicClock::start(),
            ended: OnceLock::new(),
        };
        let mut m = Member {
            index: 0,
            actor: Boom {
                polls: 0,
                at: 1,
                after: after.clone(),
            },
            daemon: false,
            st: ActorStats::default(),
            done: false,
            polled_at: Nanos(0),
        };
        match poll_member(&mut m, &sh) {
            Err(RunError::ActorPanicked { .. }) => {}
            other => panic!("expected the panic, got {other:?}"),
        }
        assert!(sh.stop.is_stopped());
        assert!(!poll_member(&mut m, &sh).unwrap());
        assert_eq!(after.load(Ordering::Relaxed), 0, "polled after its panic");
        assert_eq!((m.actor.polls, m.st.polls), (1, 1));
        assert!(!m.st.finished, "a panic is not a finish");
    }

    /// A run whose shared actor panics while another thread lends a hand
    /// reports that panic, and nothing polled the actor after it.
    #[test]
    fn a_shared_actor_that_panicked_is_reported() {
        let after = Arc::new(AtomicUsize::new(0));
        let mut r: ThreadedRunner<Box<dyn Actor + Send>> = ThreadedRunner::new(ThreadedConfig {
            max_wall: Some(Duration::from_secs(60)),
            ..ThreadedConfig::default()
        })
        .unwrap();
        r.add_to(
            Seat::Group(0),
            Box::new(Spread::new("idler", 0, 9, Idle::Yield)),
            true,
        );
        r.add_to(
            Seat::Shared(1),
            Box::new(Boom {
                polls: 0,
                at: 200,
                after: after.clone(),
            }),
            false,
        );
        match r.run() {
            Err(RunError::ActorPanicked { actor, .. }) => assert_eq!(actor, "boom"),
            other => panic!("expected the panic, got {other:?}"),
        }
        assert_eq!(after.load(Ordering::Relaxed), 0, "polled after its panic");
    }

    #[test]
    fn monotonic_clock_does_not_go_back() {
        let c = MonotonicClock::start();
        let a = c.now();
        let b = c.now();
        assert!(b >= a);
    }

    #[test]
    fn stop_handle_wait_times_out_then_sees_the_stop() {
        let h = StopHandle::new().unwrap();
        assert!(!h.wait(Duration::from_millis(1)));
        h.stop();
        assert!(
            h.wait(Duration::from_secs(60)),
            "returns at once when stopped"
        );
    }

    #[test]
    fn wait_fds_returns_on_signal_and_resets_the_counter() {
        let work = EventFd::new().unwrap();
        let stop = EventFd::new().unwrap();
        let mut pfd = vec![pollin(work.raw())];
        work.signal(3).unwrap();
        wait_fds(&mut pfd, stop.raw(), Duration::from_secs(30));
        assert_eq!(work.try_read().unwrap(), 0);
        assert!(pfd.is_empty(), "the list is cleared for the next wait");
        // The stop fd wakes the wait without touching the work fd.
        pfd.push(pollin(work.raw()));
        stop.signal(1).unwrap();
        wait_fds(&mut pfd, stop.raw(), Duration::from_secs(30));
        assert_eq!(stop.try_read().unwrap(), 1);
    }
}
