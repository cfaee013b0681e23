//! Shared fixtures for the ring test files: one suite, two storages.
#![allow(dead_code)]

use xunds::fsm::slot::{derive, SlotEvent, SlotFsm, SlotState};
use xunds::hal::mem::{Mapping, Region};
use xunds::ring::{mapped_len, Payload, Producer, QueueConfig, Worker, XuQueue};

/// Reads the full ABI image (header + slots) of a queue.
pub type Bytes = Box<dyn Fn() -> Vec<u8>>;

/// The producer of a queue the suite made.
pub type P<T> = Producer<std::sync::Arc<XuQueue<T>>>;
/// Its worker.
pub type W<T> = Worker<std::sync::Arc<XuQueue<T>>>;

/// A fresh queue's handles plus its byte reader.
pub type Made<T> = (P<T>, W<T>, Bytes);

/// A memory the suite runs against.
pub trait Backend {
    const NAME: &'static str;
    fn make<T: Payload>(cfg: QueueConfig) -> Made<T>;
}

/// A heap block; bytes from the queue's ABI image.
pub struct Owned;

impl Backend for Owned {
    const NAME: &'static str = "owned";
    fn make<T: Payload>(cfg: QueueConfig) -> Made<T> {
        let (p, w) = xunds::ring::XuQueue::owned(cfg).expect("owned queue");
        let q = p.queue().clone();
        // SAFETY: the suite calls the byte reader on the thread that owns the
        // producer, between its operations, never while a submit runs.
        (p, w, Box::new(move || unsafe { q.snapshot() }))
    }
}

/// The byte-exact header + slot array in an anonymous mapping; bytes read
/// word by word with atomic loads, independently of the queue.
pub struct Mapped;

impl Mapped {
    pub fn region(cap: u64) -> Region {
        Mapping::anonymous(mapped_len(cap))
            .expect("mmap")
            .into_region()
    }
}

impl Backend for Mapped {
    const NAME: &'static str = "mapped";
    fn make<T: Payload>(cfg: QueueConfig) -> Made<T> {
        let len = mapped_len(cfg.capacity);
        let region = Self::region(cfg.capacity);
        // SAFETY: a fresh private anonymous mapping; only the queue writes it,
        // the test only reads it.
        let (p, w) =
            unsafe { xunds::ring::XuQueue::mapped(region.clone(), cfg) }.expect("mapped queue");
        (
            p,
            w,
            Box::new(move || {
                // Word by word with 8-byte atomic loads: waiters store their
                // handle word atomically while tests poll (a plain byte copy,
                // or a 4-byte load of an 8-byte word, would race with that
                // store).
                let base = region.ptr_at(0, len, 8).expect("mapped");
                // SAFETY: `region` (owned by this closure) keeps the mapping
                // alive for the view's life, and the ring's words are reached
                // only through atomics of their own width.
                let words = unsafe { xunds::sync::word::Words::<0>::from_raw(base, len) };
                let words = words.expect("page aligned");
                let mut b = vec![0u8; len];
                for (i, w) in b.chunks_exact_mut(8).enumerate() {
                    let v = words.load_u64(i * 8, std::sync::atomic::Ordering::Relaxed);
                    w.copy_from_slice(&v.to_le_bytes());
                }
                b
            }),
        )
    }
}

/// The suite counts open fds (`/proc/self/fd`), which is process-wide: every
/// test that [`both!`] makes runs under this lock, one at a time.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Instantiate `$f::<Owned>` and `$f::<Mapped>` as two `#[test]`s.
macro_rules! both {
    ($($f:ident),* $(,)?) => {
        mod owned {
            $( #[test] fn $f() { let _g = $crate::ring_common::serial(); super::$f::<$crate::ring_common::Owned>() } )*
        }
        mod mapped {
            $( #[test] fn $f() { let _g = $crate::ring_common::serial(); super::$f::<$crate::ring_common::Mapped>() } )*
        }
    };
}

/// The slot machine as the oracle of the cursors: between two cursor
/// triples `(exec_head, scheduled_head, scheduled_tail)`, every slot whose
/// derived state (`fsm::slot::derive`) changed must have moved along rows
/// of `SlotFsm` (FREE -submit-> SUBMITTED -trigger-> TRIGGERED -complete->
/// DONE -reclaim-> FREE); panics otherwise. Returns the moves as (cursor,
/// events), in cursor order.
pub fn slot_moves(
    before: (u64, u64, u64),
    after: (u64, u64, u64),
) -> Vec<(u64, Vec<&'static str>)> {
    let state = |c: u64, (h, s, t): (u64, u64, u64)| derive(c, h, s, t);
    let mut moves = Vec::new();
    for c in before.0.min(after.0)..before.2.max(after.2) {
        let (from, to) = (state(c, before), state(c, after));
        if from == to {
            continue;
        }
        let events: &[SlotEvent] = match (from, to) {
            (SlotState::Free, SlotState::Submitted) => &[SlotEvent::Submit],
            (SlotState::Submitted, SlotState::Triggered) => &[SlotEvent::Trigger],
            (SlotState::Free, SlotState::Triggered) => &[SlotEvent::Submit, SlotEvent::Trigger],
            (SlotState::Triggered, SlotState::Free) => &[SlotEvent::Complete, SlotEvent::Reclaim],
            _ => panic!("cursor {c}: {from:?} -> {to:?} is no path of the slot machine"),
        };
        let mut s = from;
        for &e in events {
            s = xunds::fsm::step::<SlotFsm>(s, e).unwrap_or_else(|e| panic!("cursor {c}: {e}"));
        }
        assert_eq!(s, to, "cursor {c}");
        let names = events
            .iter()
            .map(|e| format!("{e:?}").leak() as &str)
            .collect();
        moves.push((c, names));
    }
    moves
}
