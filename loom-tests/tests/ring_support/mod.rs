//! Loom-visible completion signals for the ring models: a [`Waitable`] and a
//! [`CompletionSink`] built on loom's `Mutex` + `Condvar` instead of eventfds.
//!
//! `wait` ignores its timeout and blocks until signalled, so a lost wake-up is
//! a deadlock that loom reports (that is how the `waiter_no_recheck` and
//! `advance_before_capture` mutants die). Handles: event `k` has raw handle
//! `k` (pooled use) and dup handle `DUP + k` (caller-owned use). The sink
//! refuses to close anything but a dup, and counts closes, so "exactly one
//! party closes each dup, the worker never closes a pooled handle" is checked.
#![allow(dead_code)]

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use loom::sync::{Condvar, Mutex};
use xunds::hal::eventfd::Wait;
use xunds::ring::waiter::WaitableFactory;
use xunds::ring::{CompletionSink, QueueConfig, Waitable};
use xunds::wire::seq_id::XuId;

pub const DUP: i32 = 1000;

/// `loom::model` with the preemption bound from `LOOM_MAX_PREEMPTIONS` (CI
/// sets it) and room for the yield-retry loops of three threads.
pub fn model<F: Fn() + Sync + Send + 'static>(f: F) {
    let mut b = loom::model::Builder::new();
    if std::env::var_os("LOOM_MAX_BRANCHES").is_none() {
        b.max_branches = 20_000;
    }
    b.check(f);
}
pub const XU: XuId = XuId::new(1, 2, 7);

/// A retry gate for models with three threads: a thread that must retry
/// (producer on Full, worker on empty) waits here instead of spinning with
/// `yield_now`, because several yield-spinning threads can starve each other
/// in loom's scheduler. Its first attempt is never gated, so loom still
/// places it anywhere. (`Notify` keeps a permit: no lost wake-ups.)
pub struct Gate(loom::sync::Notify);

impl Gate {
    pub fn new() -> Arc<Gate> {
        Arc::new(Gate(loom::sync::Notify::new()))
    }
    pub fn open(&self) {
        self.0.notify();
    }
    pub fn wait(&self) {
        self.0.wait();
    }
}

pub struct Ev {
    count: Mutex<u64>,
    cv: Condvar,
}

pub struct Registry {
    pub events: Vec<Ev>,
    next: AtomicUsize,
    pub worker_closes: AtomicUsize,
    pub waiter_closes: AtomicUsize,
    pub signals: AtomicUsize,
    pub dups: AtomicUsize,
    reserved: usize,
}

impl Registry {
    /// `n` events; the first `reserved` are for caller-owned use, the rest
    /// are handed to the pool in order.
    pub fn new(n: usize, reserved: usize) -> Arc<Registry> {
        Arc::new(Registry {
            events: (0..n)
                .map(|_| Ev {
                    count: Mutex::new(0),
                    cv: Condvar::new(),
                })
                .collect(),
            next: AtomicUsize::new(reserved),
            worker_closes: AtomicUsize::new(0),
            waiter_closes: AtomicUsize::new(0),
            signals: AtomicUsize::new(0),
            dups: AtomicUsize::new(0),
            reserved,
        })
    }

    pub fn event(self: &Arc<Self>, k: usize) -> LoomEvent {
        LoomEvent {
            id: k,
            reg: self.clone(),
        }
    }

    /// Pool events made so far.
    pub fn pool_made(&self) -> usize {
        self.next.load(Ordering::Relaxed) - self.reserved
    }

    /// Every dup closed exactly once (by the worker or by the waiter).
    pub fn assert_dups_closed_once(&self) {
        let closes =
            self.worker_closes.load(Ordering::Relaxed) + self.waiter_closes.load(Ordering::Relaxed);
        assert_eq!(
            closes,
            self.dups.load(Ordering::Relaxed),
            "each dup closed exactly once"
        );
    }

    fn signal(&self, k: usize) {
        let mut c = self.events[k].count.lock().unwrap();
        *c += 1;
        self.events[k].cv.notify_all();
    }

    /// A queue config whose worker signals and whose pool makes loom events.
    pub fn config(self: &Arc<Self>, capacity: u64) -> QueueConfig {
        let reg = self.clone();
        let factory: WaitableFactory = Arc::new(move || {
            let k = reg.next.fetch_add(1, Ordering::Relaxed);
            if k >= reg.events.len() {
                return Err(io::Error::other("model ran out of events"));
            }
            Ok(Box::new(reg.event(k)) as Box<dyn Waitable>)
        });
        QueueConfig::new(XU, capacity)
            .recheck(Duration::from_secs(3600))
            .signals(Arc::new(Sink(self.clone())), factory)
    }
}

pub struct LoomEvent {
    pub id: usize,
    reg: Arc<Registry>,
}

impl Waitable for LoomEvent {
    fn raw_handle(&self) -> i32 {
        self.id as i32
    }
    fn dup_handle(&self) -> io::Result<i32> {
        self.reg.dups.fetch_add(1, Ordering::Relaxed);
        Ok(DUP + self.id as i32)
    }
    fn close_handle(&self, fd: i32) {
        assert_eq!(fd, DUP + self.id as i32, "waiter closes only its own dup");
        self.reg.waiter_closes.fetch_add(1, Ordering::Relaxed);
    }
    fn wait(&self, _timeout: Duration) -> io::Result<Wait> {
        let ev = &self.reg.events[self.id];
        let mut c = ev.count.lock().unwrap();
        while *c == 0 {
            c = ev.cv.wait(c).unwrap();
        }
        let v = *c;
        *c = 0;
        Ok(Wait::Signalled(v))
    }
}

struct Sink(Arc<Registry>);

impl CompletionSink for Sink {
    fn signal(&self, fd: i32) -> Result<(), i32> {
        let k = if fd >= DUP { fd - DUP } else { fd };
        assert!(
            k >= 0 && (k as usize) < self.0.events.len(),
            "bad handle {fd}"
        );
        self.0.signals.fetch_add(1, Ordering::Relaxed);
        self.0.signal(k as usize);
        Ok(())
    }
    fn close(&self, fd: i32) {
        assert!(fd >= DUP, "the worker closed pooled handle {fd}");
        self.0.worker_closes.fetch_add(1, Ordering::Relaxed);
    }
}

/// The slot-reuse hand-off the capture and waiter models share: a worker
/// thread pops `cap + 1` items (`100 + k` in order, each must be exactly
/// that) while this thread submits item `100 + cap` as soon as a slot frees
/// (it reuses the first item's slot), triggers it, and waits for the worker.
/// Items `100..100 + cap` must already be submitted and triggered.
pub fn submit_last_while_worker_drains(
    p: &mut xunds::ring::Producer<loom::sync::Arc<xunds::ring::XuQueue<u64>>>,
    mut w: xunds::ring::Worker<loom::sync::Arc<xunds::ring::XuQueue<u64>>>,
    cap: u64,
) {
    let (space, work) = (Gate::new(), Gate::new());
    let (sp, wk) = (space.clone(), work.clone());
    let worker = loom::thread::spawn(move || {
        let mut n = 0u64;
        while n <= cap {
            match w.pop(xunds::wire::status::NrtStatus::SUCCESS) {
                Ok(pp) => {
                    assert_eq!(pp.item, 100 + n);
                    n += 1;
                    sp.open();
                }
                Err(xunds::ring::PopError::Empty) => wk.wait(),
                Err(e) => panic!("{e}"),
            }
        }
    });
    while p.submit(100 + cap, None).is_err() {
        space.wait();
    }
    p.trigger_next().unwrap();
    work.open();
    worker.join().unwrap();
}
