//! Unit tests of the protocol that need the crate's insides (the slots, the
//! lock); the behaviour suites are `tests/ring_queue.rs` and
//! `tests/ring_props.rs`, the memory models `loom-tests/tests/ring_*.rs`.

use std::time::{Duration, Instant};

use super::error::{DiscardError, PopError, SlotMismatch, SubmitError, WaitError};
use super::mem::{handle_word, mapped_len, RingMem};
use super::owner::{QueueConfig, StaticQueue};
use super::queue::{Producer, Worker, XuQueue};
use super::status::{StatusArc, StatusCell};
use super::waiter::{after, eventfd_factory, CompletionSink, WaitMode, Waited};
use crate::sync::atomic::Ordering::Relaxed;
use crate::wire::exec_slot::off::MARK_COMP_EFD;
use crate::wire::exec_slot::NO_EFD;
use crate::wire::seq_id::{SeqId, XuId};
use crate::wire::status::NrtStatus;

fn xu() -> XuId {
    XuId::new(0, 1, 2)
}

/// A wait's deadline and spin end: an overflowing sum is a far time, not a
/// panic (`wait(seq, mode, Duration::MAX)` waits for good).
#[test]
fn after_saturates() {
    let now = Instant::now();
    assert_eq!(
        after(now, Duration::from_millis(5)),
        now + Duration::from_millis(5)
    );
    assert!(after(now, Duration::MAX) >= now + Duration::from_secs(1 << 31));
}

/// A producer thread and a worker thread through a 4-slot ring, slots reused
/// 50 times over: FIFO, every item once. Its point is Miri (`cargo +nightly
/// miri test --lib -- ring::tests`): on x86_64 the body is written with
/// plain 16-byte stores (`Words::write_unshared`), and Miri's race detector
/// checks that no read of a slot races with them.
#[test]
fn two_threads_fifo_with_plain_body_stores() {
    let (p, w) = XuQueue::<u64>::owned(QueueConfig::new(XuId::new(0, 0, 1), 4)).unwrap();
    two_threads_fifo(p, w);
}

/// The same on the byte-exact mapped memory (the slot array in a mapping;
/// under Miri the mapping is heap memory, see `hal::mem`).
#[test]
fn two_threads_fifo_with_plain_body_stores_mapped() {
    use crate::hal::mem::Mapping;
    let region = Mapping::anonymous(mapped_len(4)).unwrap().into_region();
    // SAFETY: a fresh anonymous mapping only this queue touches.
    let (p, w) =
        unsafe { XuQueue::<u64>::mapped(region, QueueConfig::new(XuId::new(0, 0, 1), 4)) }.unwrap();
    two_threads_fifo(p, w);
}

/// The same with borrowed handles over caller memory, in scoped threads.
#[test]
fn two_threads_fifo_borrowed_from_caller_memory() {
    #[repr(C, align(64))]
    struct Mem([u64; mapped_len(4) / 8]);
    let mut mem = Mem([0; mapped_len(4) / 8]);
    // SAFETY: `mem` outlives the queue (dropped at the end of this scope)
    // and is touched only through it.
    let ring =
        unsafe { RingMem::init_raw(mem.0.as_mut_ptr().cast(), mapped_len(4), xu(), 4, 1) }.unwrap();
    let mut q = XuQueue::<u64>::new(ring);
    let (p, w) = q.split();
    std::thread::scope(|s| {
        s.spawn(move || produce(p));
        consume(w);
    });
}

const N: u64 = 200;

fn produce<T, Q: core::ops::Deref<Target = XuQueue<u64, T>>>(mut p: Producer<Q>)
where
    T: super::status::StatusRef,
{
    for i in 0..N {
        while p.submit(i, None).is_err() {
            std::thread::yield_now();
        }
        p.trigger_next().unwrap();
    }
}

fn consume<T, Q: core::ops::Deref<Target = XuQueue<u64, T>>>(mut w: Worker<Q>)
where
    T: super::status::StatusRef,
{
    let mut next = 0;
    while next < N {
        match w.pop(NrtStatus::SUCCESS) {
            Ok(got) => {
                assert_eq!(got.item, next);
                next += 1;
            }
            Err(PopError::Empty) => std::thread::yield_now(),
            Err(e) => panic!("{e}"),
        }
    }
}

fn two_threads_fifo<Q>(p: Producer<Q>, w: Worker<Q>)
where
    Q: core::ops::Deref<Target = XuQueue<u64>> + Send + 'static,
{
    let prod = std::thread::spawn(move || produce(p));
    consume(w);
    prod.join().unwrap();
}

/// Counts closes (never closes anything: the fds here are made up).
struct CountingSink(std::sync::Mutex<Vec<i32>>);
impl CompletionSink for CountingSink {
    fn signal(&self, _fd: i32) -> Result<(), i32> {
        Ok(())
    }
    fn close(&self, fd: i32) {
        self.0.lock().unwrap().push(fd);
    }
}

/// docs/abi.md §1.4: `last_submitted` is the newest handle issued, not a
/// default (mutant: `last_submitted` -> `Default::default()`).
#[test]
fn last_submitted_is_the_newest_handle() {
    let (mut p, _w) = XuQueue::<u64>::owned(QueueConfig::new(xu(), 4)).unwrap();
    let q = p.queue().clone();
    assert_eq!(q.last_submitted(), SeqId::from_cursor(0, xu()));
    let a = p.submit(1, None).unwrap();
    assert_eq!(q.last_submitted(), a);
    let b = p.submit(2, None).unwrap();
    assert_eq!(q.last_submitted(), b);
    assert_ne!(a, b);
    assert_eq!(q.in_flight(), 2);
}

/// The queue reports the XU and the slot count it was made with (mutants:
/// `xu` -> `Default::default()`, `capacity` -> 0 or 1).
#[test]
fn a_queue_knows_its_xu_and_capacity() {
    let (p, w) = XuQueue::<u64>::owned(QueueConfig::new(xu(), 4)).unwrap();
    assert_ne!(xu(), XuId::default());
    for q in [p.queue(), w.queue()] {
        assert_eq!(q.xu(), xu());
        assert_eq!(q.capacity(), 4);
    }
}

/// Dropping a queue with in-flight slots closes only the dups the slots own:
/// never a slot without a handle (`NO_EFD`), never a pooled event (the pool
/// owns it). Mutant: `efd != NO_EFD && !pooled` -> `||`.
#[test]
fn drop_closes_only_owned_dups() {
    let sink = std::sync::Arc::new(CountingSink(std::sync::Mutex::new(Vec::new())));
    let cfg = QueueConfig::new(xu(), 4).signals(sink.clone(), eventfd_factory());
    let (mut p, w) = XuQueue::<u64>::owned(cfg).unwrap();
    let q = p.queue().clone();
    let _none = p.submit(1, None).unwrap();
    let pooled = p.submit(2, None).unwrap();
    let owned = p.submit(3, None).unwrap();
    let set = |s: SeqId, fd, pool| {
        q.slot(s.seq_num())
            .store_u64(MARK_COMP_EFD, handle_word(fd, pool), Relaxed)
    };
    set(pooled, 7001, true);
    set(owned, 7002, false);
    drop((p, w, q));
    assert_eq!(*sink.0.lock().unwrap(), vec![7002]);
}

/// A dropped queue gives back what its in-flight slots own, and leaves a
/// slot whose seq_id a stray writer changed alone (its words are not
/// trusted): the cell of the intact slot is released, the other leaked.
#[test]
fn drop_returns_only_what_intact_slots_own() {
    let (mut p, w) = XuQueue::<u64>::owned(QueueConfig::new(xu(), 4)).unwrap();
    let cells = [StatusArc::default(), StatusArc::default()];
    p.submit(1, Some(cells[0].clone())).unwrap();
    let spoiled = p.submit(2, Some(cells[1].clone())).unwrap();
    p.queue().corrupt_seq_id(spoiled, 0);
    drop((p, w));
    assert_eq!(std::sync::Arc::strong_count(&cells[0]), 1, "given back");
    assert_eq!(std::sync::Arc::strong_count(&cells[1]), 2, "leaked");
    // SAFETY: the count the submit handed to the slot, which the drop left
    // behind: given back here so the test leaks nothing (Miri).
    unsafe { std::sync::Arc::decrement_strong_count(std::sync::Arc::as_ptr(&cells[1])) };
}

/// A waiter that times out takes its handle back and the installed count
/// with it, so the worker's fast path (no handle anywhere) comes back.
/// Mutant: `uninstall`'s `!=` -> `==`.
#[test]
#[cfg_attr(
    miri,
    ignore = "a blocking wait needs poll(2), not available under Miri"
)]
fn a_timed_out_waiter_leaves_no_installed_handle_counted() {
    let (mut p, _w) = XuQueue::<u64>::owned(QueueConfig::new(xu(), 4)).unwrap();
    let q = p.queue().clone();
    let s = p.submit(1, None).unwrap();
    p.trigger_next().unwrap();
    assert!(!q.lock.lock_waiter().any_installed());
    let r = q.wait(s, WaitMode::Block, Duration::from_millis(5));
    assert_eq!(r, Ok(Waited::TimedOut));
    let handle = q.slot(s.seq_num()).load_u64(MARK_COMP_EFD, Relaxed);
    assert_eq!(handle, handle_word(NO_EFD, false));
    assert!(
        !q.lock.lock_waiter().any_installed(),
        "the installed count still counts the uninstalled handle"
    );
}

/// A slot whose seq_id was overwritten (`corrupt_seq_id`, as a stray writer
/// would) is refused at peek and at pop naming both values, and the refusal
/// changes nothing: the cursors stay and the same refusal comes again; a
/// waiter's install is refused the same way (docs/abi.md §1.9).
#[test]
fn an_overwritten_seq_id_is_refused_at_peek_and_pop() {
    let (mut p, mut w) = XuQueue::<u64>::owned(QueueConfig::new(xu(), 4)).unwrap();
    let q = p.queue().clone();
    let s = p.submit(1, None).unwrap();
    p.trigger_next().unwrap();
    q.corrupt_seq_id(s, s.0 ^ 0x40);
    let mismatch = SlotMismatch {
        expected: s,
        found: s.0 ^ 0x40,
    };
    assert_eq!(w.peek().map(|v| v.seq), Err(PopError::Mismatch(mismatch)));
    assert_eq!(
        w.pop(NrtStatus::SUCCESS).map(|p| p.seq),
        Err(PopError::Mismatch(mismatch))
    );
    assert_eq!(q.cursors(), (1, 2, 2), "nothing moved");
    assert_eq!(
        w.pop_burst(4, |_| NrtStatus::SUCCESS, |_| ()),
        Err(mismatch)
    );
    assert_eq!(w.peek().map(|v| v.seq), Err(PopError::Mismatch(mismatch)));
    let ev = crate::hal::eventfd::EventFd::new().unwrap();
    assert_eq!(q.arm(s, &ev), Err(WaitError::Mismatch(mismatch)));
}

/// `discard` reclaims only an overwritten head slot: an empty ring is
/// `Empty`, an intact slot is refused (`Intact`, nothing moves); the
/// overwritten one is passed with no status written and no item taken,
/// `exec_head` moves by one, so the seq_id reads as completed and the slot
/// behind it pops as usual. Mutants: every early return, the advance, the
/// head step.
#[test]
fn discard_reclaims_only_an_overwritten_slot() {
    let (mut p, mut w) = XuQueue::<u64>::owned(QueueConfig::new(xu(), 2)).unwrap();
    let q = p.queue().clone();
    assert_eq!(w.discard(), Err(DiscardError::Empty));
    let cells = [StatusArc::default(), StatusArc::default()];
    let a = p.submit(10, Some(cells[0].clone())).unwrap();
    let b = p.submit(11, Some(cells[1].clone())).unwrap();
    p.trigger_next().unwrap();
    assert_eq!(w.discard(), Err(DiscardError::Intact { seq: a }));
    assert_eq!(q.cursors(), (1, 2, 3), "nothing moved");
    q.corrupt_seq_id(a, 0);
    assert_eq!(w.discard(), Ok(a));
    assert_eq!(q.cursors(), (2, 2, 3));
    assert!(q.is_completed(a).unwrap() && !q.is_completed(b).unwrap());
    assert_eq!(cells[0].get(), None, "no status through an untrusted word");
    assert_eq!(
        std::sync::Arc::strong_count(&cells[0]),
        2,
        "leaked, not dropped"
    );
    // SAFETY: the count the submit handed to the slot, which the discard
    // left behind: given back here so the test leaks nothing (Miri).
    unsafe { std::sync::Arc::decrement_strong_count(std::sync::Arc::as_ptr(&cells[0])) };
    assert_eq!(
        w.discard(),
        Err(DiscardError::Empty),
        "b is not triggered yet"
    );
    p.trigger_next().unwrap();
    let popped = w.pop(NrtStatus::SUCCESS).unwrap();
    assert_eq!((popped.seq, popped.item), (b, 11));
    assert_eq!(cells[1].get(), Some(NrtStatus::SUCCESS));
    // The discarded slot is reused like any other.
    let c = p.submit(12, None).unwrap();
    p.submit(13, None).unwrap();
    p.trigger_burst(2).unwrap();
    assert_eq!(w.pop(NrtStatus::SUCCESS).unwrap().seq, c);
    assert_eq!(q.cursors(), (4, 5, 5));
}

/// Cursors a stray writer moved are refused, never trusted: a
/// `scheduled_tail` below `exec_head` or past `exec_head + capacity` at
/// submit, a `scheduled_head` below `exec_head` at trigger, a
/// `scheduled_head` below the worker's head (read as empty); nothing is
/// written. Mutants: `reserve_slow`'s corruption test, `trigger_burst`'s
/// `<`.
#[test]
fn cursors_a_stray_write_moved_are_refused() {
    use super::error::{Cursors, TriggerError};
    use super::mem::Cursor;
    let (mut p, mut w) = XuQueue::<u64>::owned(QueueConfig::new(xu(), 4).start_at(10)).unwrap();
    let q = p.queue().clone();
    p.submit(1, None).unwrap();
    p.trigger_next().unwrap();
    w.pop(NrtStatus::SUCCESS).unwrap();
    p.submit(2, None).unwrap();
    let image = p.snapshot();
    let set = |c: Cursor, v: u64| q.mem.store(c, v, Relaxed);
    for bad in [3, 11 + 5, u64::MAX] {
        set(Cursor::ScheduledTail, bad);
        let refused = p.submit(3, None).unwrap_err().error;
        assert_eq!(
            refused,
            SubmitError::Corrupted(Cursors {
                exec_head: 11,
                found: bad
            })
        );
    }
    set(Cursor::ScheduledTail, 12);
    assert_eq!(p.snapshot(), image, "nothing written");
    set(Cursor::ScheduledHead, 4);
    let refused = p.trigger_next().unwrap_err();
    assert_eq!(
        refused,
        TriggerError::Corrupted(Cursors {
            exec_head: 11,
            found: 4
        })
    );
    assert_eq!(w.pop(NrtStatus::SUCCESS).unwrap_err(), PopError::Empty);
    assert_eq!(w.available(), 0);
    set(Cursor::ScheduledHead, 11);
    p.trigger_next().unwrap();
    assert_eq!(w.pop(NrtStatus::SUCCESS).unwrap().item, 2);
}

/// A `no_std`-shaped queue: in a `StaticQueue`, `&'static` items and status
/// cells. FIFO, a full ring gives the item and its cell back, pop writes
/// each cell, and the queue splits once.
#[test]
fn a_static_queue() {
    static QUEUE: StaticQueue<&'static u32, &'static StatusCell, 2> = StaticQueue::new();
    static ITEMS: [u32; 3] = [7, 8, 9];
    static CELLS: [StatusCell; 3] = [const { StatusCell::new() }; 3];
    let (mut p, mut w) = QUEUE.split(xu(), 1).unwrap();
    assert_eq!(
        QUEUE.split(xu(), 1).map(drop),
        Err(super::error::InitError::InUse)
    );
    let a = p.submit(&ITEMS[0], Some(&CELLS[0])).unwrap();
    p.submit(&ITEMS[1], Some(&CELLS[1])).unwrap();
    let full = p.submit(&ITEMS[2], Some(&CELLS[2])).unwrap_err();
    assert_eq!(full.error, SubmitError::Full);
    assert!(core::ptr::eq(full.item, &ITEMS[2]));
    assert!(full.status.is_some_and(|c| core::ptr::eq(c, &CELLS[2])));
    p.trigger_burst(2).unwrap();
    let first = w.pop(NrtStatus::SUCCESS).unwrap();
    assert_eq!((first.seq, *first.item), (a, 7));
    assert_eq!(*w.pop(NrtStatus::TIMEOUT).unwrap().item, 8);
    let c = p.submit(&ITEMS[2], Some(&CELLS[2])).unwrap();
    p.trigger_next().unwrap();
    assert_eq!(*w.pop(NrtStatus::SUCCESS).unwrap().item, 9);
    assert!(p.queue().is_completed(c).unwrap());
    assert_eq!(w.pop(NrtStatus::SUCCESS).unwrap_err(), PopError::Empty);
    let got: Vec<_> = CELLS.iter().map(StatusCell::get).collect();
    assert_eq!(
        got,
        [
            Some(NrtStatus::SUCCESS),
            Some(NrtStatus::TIMEOUT),
            Some(NrtStatus::SUCCESS)
        ]
    );
}
