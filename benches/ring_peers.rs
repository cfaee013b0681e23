//! The ring benchmark's peers: our protocol as the C original runs its
//! cursors (docs/abi.md §1.9), every cursor move a SeqCst `fetch_add` (the
//! binary's `LOCK XADD`) and every cursor load SeqCst. `CACHED = true` keeps
//! our cached remote cursors (the "same ring, SeqCst cursors" row);
//! `CACHED = false` reads the other side's cursor on every call, as
//! `xuq_client_submit` and the peek do (the "C original" row).
//!
//! Everything else is the work our ring does per item, so the ratio shows
//! the cursors' cost: 32-byte slots each cursor on its own line, the body's
//! four words, the seq_id check, the status word, the completion lock's
//! fast path (the worker's busy flag around a compiler fence, the waiter
//! count, the installed-handle count) and the `exec_info` capture.

use std::sync::atomic::{compiler_fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use xunds::actors::pace::{Pace, Polled};

const SEQCST: Ordering = Ordering::SeqCst;
const RLX: Ordering = Ordering::Relaxed;

#[repr(align(64))]
struct Line<T>(T);

#[repr(C, align(32))]
struct Slot([AtomicU64; 4]);

struct Shared {
    exec_head: Line<AtomicU64>,
    sched_head: Line<AtomicU64>,
    tail: Line<AtomicU64>,
    worker_busy: Line<AtomicBool>,
    waiters: Line<(AtomicU32, AtomicU32)>,
    slots: Box<[Slot]>,
    mask: u64,
    xu_bits: u64,
}

/// The producer of a peer ring.
pub struct PeerProducer<const CACHED: bool> {
    sh: Arc<Shared>,
    exec: u64,
}

/// The worker of a peer ring.
pub struct PeerWorker<const CACHED: bool> {
    sh: Arc<Shared>,
    head: u64,
    seen: u64,
}

/// A peer ring of `cap` (a power of two) slots for XU `xu`, cursors at 1.
pub fn ring<const CACHED: bool>(cap: u64, xu: u16) -> (PeerProducer<CACHED>, PeerWorker<CACHED>) {
    assert!(cap.is_power_of_two());
    let sh = Arc::new(Shared {
        exec_head: Line(AtomicU64::new(1)),
        sched_head: Line(AtomicU64::new(1)),
        tail: Line(AtomicU64::new(1)),
        worker_busy: Line(AtomicBool::new(false)),
        waiters: Line((AtomicU32::new(0), AtomicU32::new(0))),
        slots: (0..cap)
            .map(|_| Slot([0, 0, 0, 0].map(AtomicU64::new)))
            .collect(),
        mask: cap - 1,
        xu_bits: u64::from(xu) << 48,
    });
    (
        PeerProducer {
            sh: sh.clone(),
            exec: 1,
        },
        PeerWorker {
            sh,
            head: 1,
            seen: 1,
        },
    )
}

impl<const CACHED: bool> PeerProducer<CACHED> {
    /// Submit `item`; `Err(item)` when full.
    #[inline(always)]
    pub fn submit(&mut self, item: u64) -> Result<u64, u64> {
        let sh = &*self.sh;
        let tail = sh.tail.0.load(SEQCST);
        if !CACHED || tail - self.exec >= sh.slots.len() as u64 {
            self.exec = sh.exec_head.0.load(SEQCST);
            if tail - self.exec >= sh.slots.len() as u64 {
                return Err(item);
            }
        }
        let slot = &sh.slots[(tail & sh.mask) as usize].0;
        slot[0].store(tail | sh.xu_bits, RLX);
        slot[1].store(0, RLX);
        slot[2].store(u64::from(u32::MAX), RLX);
        slot[3].store(item, RLX);
        sh.tail.0.fetch_add(1, SEQCST);
        Ok(tail)
    }

    /// Trigger one submitted slot; `false` when none is.
    #[inline(always)]
    pub fn trigger_next(&mut self) -> bool {
        let sh = &*self.sh;
        if sh.sched_head.0.load(SEQCST) >= sh.tail.0.load(SEQCST) {
            return false;
        }
        sh.sched_head.0.fetch_add(1, SEQCST);
        true
    }
}

impl<const CACHED: bool> PeerWorker<CACHED> {
    /// Pop one item; `None` when nothing is triggered. Its refreshes go
    /// through `pace`, as ours do in the bench.
    #[inline(always)]
    pub fn pop(&mut self, pace: &mut Pace) -> Option<u64> {
        let head = self.head;
        if !CACHED || head >= self.seen {
            let fresh = self.refresh();
            pace.observe(fresh, self);
            if head >= self.seen {
                return None;
            }
        }
        let sh = &*self.sh;
        let slot = &sh.slots[(head & sh.mask) as usize].0;
        assert_eq!(slot[0].load(RLX), head | sh.xu_bits, "seq_id");
        assert_eq!(slot[1].load(RLX), 0, "no status cell in the bench");
        sh.worker_busy.0.store(true, RLX);
        compiler_fence(SEQCST);
        assert_eq!(sh.waiters.0 .0.load(Ordering::Acquire), 0, "no waiter");
        if sh.waiters.0 .1.load(RLX) != 0 {
            let _ = slot[2].load(RLX);
        }
        let info = slot[3].load(RLX);
        sh.exec_head.0.fetch_add(1, SEQCST);
        sh.worker_busy.0.store(false, Ordering::Release);
        self.head = head + 1;
        Some(info)
    }
}

impl<const CACHED: bool> Polled for PeerWorker<CACHED> {
    fn ready(&self) -> u64 {
        self.seen.saturating_sub(self.head)
    }

    fn refresh(&mut self) -> u64 {
        self.seen = self.sh.sched_head.0.load(SEQCST);
        self.seen.saturating_sub(self.head)
    }
}
