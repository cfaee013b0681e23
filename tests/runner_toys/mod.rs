//! Toy actors for the runner tests: a request/reply pair over two bounded
//! mailboxes that follows the deadlock rule (docs/design.md "Actors and the
//! system"), and an echo pair that breaks it.
#![allow(dead_code)]

use std::sync::Arc;

use xunds::actors::mailbox::{self, Full, Receiver, Sender};
use xunds::actors::{Actor, Cx, Idle, Nanos, Progress};
use xunds::hal::eventfd::EventFd;

/// How a toy waits in the threaded runner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    Spin,
    Yield,
    Fd,
}

/// An actor's own has-work eventfd and its peer's.
#[derive(Clone)]
pub struct Wake {
    pub own: Arc<EventFd>,
    pub peer: Arc<EventFd>,
}

fn idle_of(wait: Wait, wake: &Option<Wake>) -> Idle {
    match (wait, wake) {
        (Wait::Spin, _) => Idle::Spin,
        (Wait::Fd, Some(w)) => Idle::Fd(w.own.raw()),
        _ => Idle::Yield,
    }
}

fn signal_peer(wake: &Option<Wake>) {
    if let Some(w) = wake {
        w.peer.signal(1).expect("signal peer eventfd");
    }
}

/// Sends requests `0..total` to the ponger and checks the replies arrive
/// once each, in order. Replies emit nothing, so it drains them on every
/// poll whatever its own outbound state (rule R3's terminal edge).
pub struct Pinger {
    pub name: String,
    pub tx: Sender<u64>,
    pub rx: Receiver<u64>,
    pub total: u64,
    pub next: u64,
    pub received: u64,
    /// The request a full mailbox gave back (rule R1).
    pub stash: Option<u64>,
    pub errors: Vec<String>,
    pub wait: Wait,
    pub wake: Option<Wake>,
}

impl Actor for Pinger {
    fn name(&self) -> &str {
        &self.name
    }

    fn poll(&mut self, cx: &mut Cx<'_>) -> Progress {
        let mut made = false;
        while let Some(v) = self.rx.pop() {
            if v != self.received {
                self.errors
                    .push(format!("reply {v} arrived when {} was due", self.received));
            }
            self.received += 1;
            cx.event("msg", format_args!("recv pong {v}"));
            made = true;
        }
        loop {
            let v = match self.stash.take() {
                Some(v) => v,
                None if self.next < self.total => {
                    self.next += 1;
                    self.next - 1
                }
                None => break,
            };
            match self.tx.push(v) {
                Ok(()) => {
                    cx.event("msg", format_args!("send ping {v}"));
                    signal_peer(&self.wake);
                    made = true;
                }
                Err(Full(v)) => {
                    self.stash = Some(v);
                    break;
                }
            }
        }
        if self.received == self.total {
            Progress::Finished
        } else if made {
            Progress::Made
        } else {
            Progress::Idle
        }
    }

    fn idle(&self) -> Idle {
        idle_of(self.wait, &self.wake)
    }
}

/// Replies to every request. It pops a request only when the reply has
/// somewhere to go (its stash is empty: rule R2). Finishes after `total`
/// replies when given, else runs as a daemon.
pub struct Ponger {
    pub name: String,
    pub rx: Receiver<u64>,
    pub tx: Sender<u64>,
    pub replied: u64,
    pub total: Option<u64>,
    pub stash: Option<u64>,
    pub wait: Wait,
    pub wake: Option<Wake>,
    /// Panic when asked to reply to this request (for panic tests).
    pub panic_on: Option<u64>,
}

impl Actor for Ponger {
    fn name(&self) -> &str {
        &self.name
    }

    fn poll(&mut self, cx: &mut Cx<'_>) -> Progress {
        let mut made = false;
        loop {
            if let Some(v) = self.stash.take() {
                match self.tx.push(v) {
                    Ok(()) => {
                        self.replied += 1;
                        cx.event("msg", format_args!("send pong {v}"));
                        signal_peer(&self.wake);
                        made = true;
                    }
                    Err(Full(v)) => {
                        self.stash = Some(v);
                        break;
                    }
                }
            }
            match self.rx.pop() {
                Some(v) => {
                    if Some(v) == self.panic_on {
                        panic!("ponger told to fail on {v}");
                    }
                    cx.event("msg", format_args!("recv ping {v}"));
                    self.stash = Some(v);
                    made = true;
                }
                None => break,
            }
        }
        if Some(self.replied) == self.total {
            Progress::Finished
        } else if made {
            Progress::Made
        } else {
            Progress::Idle
        }
    }

    fn idle(&self) -> Idle {
        idle_of(self.wait, &self.wake)
    }
}

/// A pinger/ponger pair over two mailboxes of `cap`; the ponger finishes
/// after `total` replies unless `daemon`.
pub fn ping_pong(cap: usize, total: u64, wait: Wait, daemon: bool) -> (Pinger, Ponger) {
    let (ping_tx, ping_rx) = mailbox::bounded(cap);
    let (pong_tx, pong_rx) = mailbox::bounded(cap);
    let (wa, wb) = if wait == Wait::Fd {
        let a = Arc::new(EventFd::new().unwrap());
        let b = Arc::new(EventFd::new().unwrap());
        (
            Some(Wake {
                own: a.clone(),
                peer: b.clone(),
            }),
            Some(Wake { own: b, peer: a }),
        )
    } else {
        (None, None)
    };
    (
        Pinger {
            name: "pinger".into(),
            tx: ping_tx,
            rx: pong_rx,
            total,
            next: 0,
            received: 0,
            stash: None,
            errors: Vec::new(),
            wait,
            wake: wa,
        },
        Ponger {
            name: "ponger".into(),
            rx: ping_rx,
            tx: pong_tx,
            replied: 0,
            total: (!daemon).then_some(total),
            stash: None,
            wait,
            wake: wb,
            panic_on: None,
        },
    )
}

/// The pair in the state where every mailbox is full at once and both
/// actors hold a refused item: pong mailbox = replies `0..cap`, ponger stash
/// = reply `cap`, ping mailbox = requests `cap+1..=2cap`, pinger stash =
/// request `2cap+1`. Everything is consistent with a real history (the
/// pinger sent `0..=2cap+1`, the ponger took `0..=cap`).
pub fn ping_pong_all_full(cap: usize, total: u64, wait: Wait) -> (Pinger, Ponger) {
    let c = cap as u64;
    assert!(total > 2 * c + 1);
    let (mut a, mut b) = ping_pong(cap, total, wait, false);
    for v in 0..c {
        b.tx.push(v).unwrap();
    }
    b.stash = Some(c);
    b.replied = c;
    for v in c + 1..=2 * c {
        a.tx.push(v).unwrap();
    }
    a.stash = Some(2 * c + 1);
    a.next = 2 * c + 2;
    assert!(a.tx.is_full() && b.tx.is_full());
    (a, b)
}

/// Breaks rule R3: every message it receives is sent back to the peer (the
/// emits relation is a cycle). Otherwise it follows R1 and R2.
pub struct Echo {
    pub name: String,
    pub rx: Receiver<u64>,
    pub tx: Sender<u64>,
    pub stash: Option<u64>,
    pub hops: u64,
}

impl Actor for Echo {
    fn name(&self) -> &str {
        &self.name
    }

    fn poll(&mut self, cx: &mut Cx<'_>) -> Progress {
        let mut made = false;
        loop {
            if let Some(v) = self.stash.take() {
                if let Err(Full(v)) = self.tx.push(v) {
                    self.stash = Some(v);
                    break;
                }
                made = true;
            }
            match self.rx.pop() {
                Some(v) => {
                    self.hops += 1;
                    cx.event("msg", format_args!("echo {v}"));
                    self.stash = Some(v);
                    made = true;
                }
                None => break,
            }
        }
        if made {
            Progress::Made
        } else {
            Progress::Idle
        }
    }
}

/// Two echo actors with both mailboxes full and both stashes taken.
pub fn echo_pair_all_full(cap: usize) -> (Echo, Echo) {
    let (ab_tx, ab_rx) = mailbox::bounded(cap);
    let (ba_tx, ba_rx) = mailbox::bounded(cap);
    let mut a = Echo {
        name: "echo_a".into(),
        rx: ba_rx,
        tx: ab_tx,
        stash: Some(1000),
        hops: 0,
    };
    let mut b = Echo {
        name: "echo_b".into(),
        rx: ab_rx,
        tx: ba_tx,
        stash: Some(2000),
        hops: 0,
    };
    for v in 0..cap as u64 {
        a.tx.push(v).unwrap();
        b.tx.push(100 + v).unwrap();
    }
    (a, b)
}

/// Idle until its deadline, then finishes (for virtual-clock jumps).
pub struct Timer {
    pub name: String,
    pub deadline: Nanos,
    pub fired_at: Option<Nanos>,
}

impl Actor for Timer {
    fn name(&self) -> &str {
        &self.name
    }

    fn poll(&mut self, cx: &mut Cx<'_>) -> Progress {
        if cx.now() >= self.deadline {
            self.fired_at = Some(cx.now());
            cx.event("timer", format_args!("fired"));
            Progress::Finished
        } else {
            Progress::Idle
        }
    }

    fn next_deadline(&self) -> Option<Nanos> {
        Some(self.deadline)
    }
}

/// Any toy, so a runner holds them in one typed `Vec` and the test can look
/// at their final state.
pub enum Toy {
    Pinger(Pinger),
    Ponger(Ponger),
    Echo(Echo),
    Timer(Timer),
}

impl Toy {
    fn inner(&self) -> &dyn Actor {
        match self {
            Toy::Pinger(a) => a,
            Toy::Ponger(a) => a,
            Toy::Echo(a) => a,
            Toy::Timer(a) => a,
        }
    }

    fn inner_mut(&mut self) -> &mut dyn Actor {
        match self {
            Toy::Pinger(a) => a,
            Toy::Ponger(a) => a,
            Toy::Echo(a) => a,
            Toy::Timer(a) => a,
        }
    }

    pub fn pinger(&self) -> &Pinger {
        match self {
            Toy::Pinger(a) => a,
            _ => panic!("not a pinger"),
        }
    }

    pub fn ponger(&self) -> &Ponger {
        match self {
            Toy::Ponger(a) => a,
            _ => panic!("not a ponger"),
        }
    }

    pub fn timer(&self) -> &Timer {
        match self {
            Toy::Timer(a) => a,
            _ => panic!("not a timer"),
        }
    }
}

impl Actor for Toy {
    fn name(&self) -> &str {
        self.inner().name()
    }
    fn poll(&mut self, cx: &mut Cx<'_>) -> Progress {
        self.inner_mut().poll(cx)
    }
    fn idle(&self) -> Idle {
        self.inner().idle()
    }
    fn next_deadline(&self) -> Option<Nanos> {
        self.inner().next_deadline()
    }
}
