//! The Device-sequencer-proxy: the actor that plays the device. It wraps
//! [`Sequencer`] (a core's DMA engine, request execution on the engines, NQ
//! records) and polls it with the runner's time; it sleeps on a doorbell
//! waker that the producer lanes write after ringing a doorbell (only when
//! the proxy announced it sleeps, see [`Waker`]). The system runs one proxy
//! per core (the cores of a device are independent, so a threaded run
//! executes them in parallel).

use std::sync::Arc;

use crate::actors::wake::Waker;
use crate::actors::{msg, step_counted, Actor, Cx, HalTap, Idle, Nanos, Progress};
use crate::device::sequencer::{RequestExecutor, Sequencer};
use crate::fsm::proxy::{ProxyCycle, ProxyEvent, ProxyState};
use crate::hal::Hal;

crate::actors::stats::counters! {
    /// What the device did over a run.
    pub struct DeviceStats {
        /// Descriptor pairs copied.
        pub copies,
        /// Requests executed.
        pub executed,
        /// NQ records written.
        pub records,
        /// Faults reported (DMA faults, NQ overflows, sequencer errors).
        pub faults,
        /// Reset requests carried out (stops and NQ re-initialisations).
        pub resets,
        /// HAL errors of the device's own regions (a bug; should stay 0).
        pub errors,
        /// Doorbell eventfd writes that woke the proxy (`Waker::signals`):
        /// how often it actually slept while requests came in.
        pub doorbell_signals,
        /// Events the proxy's state did not accept (counted, traced, the
        /// proxy back to RUNNING; 0 unless something is wrong).
        pub fsm_violations,
    }
}

/// The device proxy actor.
pub struct DeviceProxy<H: Hal, X: RequestExecutor> {
    name: String,
    seq: Sequencer<H, X>,
    wake: Arc<Waker>,
    tap: HalTap,
    stats: DeviceStats,
    grace: Nanos,
    idle_since: Option<Nanos>,
    core: u8,
    /// Consecutive polls that found nothing (reset by progress).
    idle_polls: u32,
    state: ProxyState,
}

/// Idle polls the proxy yields through before it sleeps on the doorbell.
/// Requests come one execution time apart while the pipeline runs, so a
/// short yield keeps the proxy off the eventfd (the producer's write and
/// the wake-up would cost more than the wait); a proxy that stays idle
/// longer sleeps as before. While yielding it does not announce sleep, so
/// the producer's `wake` finds the flag clear and makes no system call.
const DOORBELL_YIELDS: u32 = 128;

debug_fields!([H: Hal, X: RequestExecutor] DeviceProxy<H, X>, |s| stats = s.stats; ..);

impl<H: Hal, X: RequestExecutor> DeviceProxy<H, X> {
    /// A proxy for `core` of `seq` (named `device<core>`), woken through
    /// `wake`. `grace` is the device's `ring_id_grace_ns`: while the proxy
    /// is idle it reports a deadline that far ahead, so a deterministic
    /// run's clock reaches the moment a wrong ring id turns into a corrupt
    /// descriptor before any later timeout.
    pub fn new(
        seq: Sequencer<H, X>,
        core: u8,
        wake: Arc<Waker>,
        tap: HalTap,
        grace: Nanos,
    ) -> Self {
        DeviceProxy {
            name: format!("device{core}"),
            seq,
            wake,
            tap,
            stats: DeviceStats::default(),
            grace,
            idle_since: None,
            core,
            idle_polls: 0,
            state: ProxyState::Running,
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> DeviceStats {
        DeviceStats {
            doorbell_signals: self.wake.signals(),
            ..self.stats
        }
    }

    /// Step the proxy's cycle (untraced: one step per poll). An event its
    /// state does not accept is counted, traced, and puts the proxy back to
    /// RUNNING (it polls the device again, the safe side).
    fn go(&mut self, e: ProxyEvent, cx: &mut Cx<'_>) {
        let v = &mut self.stats.fsm_violations;
        if !step_counted::<ProxyCycle>(&mut self.state, e, None, v, cx) {
            self.state = ProxyState::Running;
        }
    }

    /// Feed the cycle an event from outside its driver (tests of the
    /// violation path).
    #[doc(hidden)]
    #[cfg(any(test, feature = "testkit"))]
    pub fn inject_event(&mut self, e: ProxyEvent, cx: &mut Cx<'_>) {
        self.go(e, cx);
    }

    fn poll_device(&mut self, cx: &mut Cx<'_>) -> bool {
        match self.seq.poll_one(self.core, cx.now().as_u64()) {
            Ok(p) => {
                self.tap.drain(cx);
                let st = &mut self.stats;
                st.copies += u64::from(p.copies);
                st.executed += u64::from(p.executed);
                st.records += u64::from(p.records);
                st.faults += u64::from(p.faults);
                st.resets += u64::from(p.resets);
                if p.executed > 0 || p.faults > 0 {
                    msg!(
                        cx,
                        "device copies={} executed={} records={} faults={}",
                        p.copies,
                        p.executed,
                        p.records,
                        p.faults
                    );
                }
                p.made_progress()
            }
            Err(e) => {
                self.stats.errors += 1;
                msg!(cx, "device error: {e}");
                false
            }
        }
    }
}

impl<H: Hal, X: RequestExecutor> Actor for DeviceProxy<H, X> {
    fn name(&self) -> &str {
        &self.name
    }

    fn poll(&mut self, cx: &mut Cx<'_>) -> Progress {
        self.wake.awake();
        if self.state == ProxyState::Sleeping {
            self.go(ProxyEvent::Wake, cx);
        }
        let mut made = self.poll_device(cx);
        if made {
            self.go(ProxyEvent::Work, cx);
        } else {
            self.go(ProxyEvent::NoWork, cx);
            if self.idle_polls >= DOORBELL_YIELDS {
                // Announce sleep, then look once more (see `Waker`).
                self.wake.prepare_sleep();
                made = self.poll_device(cx);
                if made {
                    self.wake.awake();
                    self.go(ProxyEvent::Work, cx);
                } else {
                    self.go(ProxyEvent::Sleep, cx);
                }
            }
        }
        self.tap.drain(cx);
        if made {
            (self.idle_since, self.idle_polls) = (None, 0);
        } else {
            self.idle_since.get_or_insert(cx.now());
            self.idle_polls = self.idle_polls.saturating_add(1);
        }
        Progress::of(made)
    }

    fn idle(&self) -> Idle {
        // Asleep only once `poll` announced it (and looked once more).
        match self.state {
            ProxyState::Sleeping => Idle::Fd(self.wake.fd()),
            ProxyState::Running | ProxyState::Idling => Idle::Yield,
        }
    }

    fn next_deadline(&self) -> Option<Nanos> {
        // A descriptor with a wrong ring id is waited on for `grace` (time
        // passed to `poll`) before it is a fault.
        self.idle_since
            .map(|t| t.saturating_add(self.grace).saturating_add(Nanos(1)))
    }
}
