//! The bounded single-producer single-consumer mailbox between two actors.
//!
//! [`bounded`] returns a [`Sender`] (the producer half) and a [`Receiver`]
//! (the consumer half). The ring is this module's own, built on
//! [`crate::sync`] atomics and a loom-aware cell: a normal build runs it on
//! `core` atomics, a build with `--cfg loom` on loom's, so the loom models in
//! `loom-tests/tests/mailbox.rs` check this code, the one the actors run
//! (the same source; only the atomics and the cell are swapped). Its
//! protocol is rtrb's (cached cursors, Release/Acquire publication).
//!
//! Nothing here blocks: [`Sender::push`] on a full mailbox returns the item
//! inside [`Full`], and the actor keeps it and retries on its next poll (the
//! deadlock rule, docs/design.md "Actors and the system").
//!
//! ## Protocol (one writer per cursor)
//!
//! | cursor | writer | reader | publish | observe |
//! |---|---|---|---|---|
//! | `tail` (next slot to write) | sender | receiver | `Release` store after the slot write | `Acquire` load before the slot read |
//! | `head` (next slot to read) | receiver | sender | `Release` store after the slot read | `Acquire` load before the slot overwrite |
//!
//! Positions run over `0..2*capacity` so that `head == tail` means empty
//! and a distance of `capacity` means full, for any capacity. Each half
//! keeps its own cursor in a plain field and a cached copy of the other
//! half's cursor, refreshed only when the cache says full/empty. Slots
//! between `head` and `tail` hold initialised items owned by the ring; the
//! sender owns the free slots, the receiver the full ones.

use core::cell::Cell;
use core::fmt;
use core::mem::MaybeUninit;

use crate::sync::atomic::{AtomicUsize, Ordering};
use crate::sync::Arc;

#[cfg(loom)]
use loom::cell::UnsafeCell;

#[cfg(not(loom))]
use self::cell::UnsafeCell;

#[cfg(not(loom))]
mod cell {
    /// `core::cell::UnsafeCell` with loom's closure API.
    pub struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        pub fn new(v: T) -> Self {
            UnsafeCell(core::cell::UnsafeCell::new(v))
        }
        #[inline]
        pub fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }
        #[inline]
        pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

/// The mailbox was full; the item is given back untouched.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Full<T>(pub T);

impl<T> fmt::Debug for Full<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Full(..)")
    }
}

impl<T> fmt::Display for Full<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("mailbox full")
    }
}

impl<T> std::error::Error for Full<T> {}

/// Keeps each cursor on its own cache line (no false sharing).
#[repr(align(64))]
struct Padded<T>(T);

struct Shared<T> {
    /// Next position the receiver reads. Written only by the receiver.
    head: Padded<AtomicUsize>,
    /// Next position the sender writes. Written only by the sender.
    tail: Padded<AtomicUsize>,
    slots: Box<[UnsafeCell<MaybeUninit<T>>]>,
}

// SAFETY: the slots are handed across threads by value only (an item
// written by the sender is read, i.e. moved out, by the receiver), so
// `T: Send` suffices; the cursor protocol above gives each slot a single
// owner at a time.
unsafe impl<T: Send> Send for Shared<T> {}
// SAFETY: as for `Send`: `&Shared` is only used through the two halves,
// each of which touches only the slots it owns under the protocol.
unsafe impl<T: Send> Sync for Shared<T> {}

impl<T> Shared<T> {
    #[inline]
    fn capacity(&self) -> usize {
        self.slots.len()
    }

    #[inline]
    fn next(&self, pos: usize) -> usize {
        if pos + 1 == 2 * self.capacity() {
            0
        } else {
            pos + 1
        }
    }

    /// Items between `head` and `tail`.
    #[inline]
    fn distance(&self, head: usize, tail: usize) -> usize {
        if tail >= head {
            tail - head
        } else {
            tail + 2 * self.capacity() - head
        }
    }

    #[inline]
    fn slot(&self, pos: usize) -> &UnsafeCell<MaybeUninit<T>> {
        let cap = self.capacity();
        &self.slots[if pos < cap { pos } else { pos - cap }]
    }
}

impl<T> Drop for Shared<T> {
    fn drop(&mut self) {
        // Ordering: Relaxed suffices: the last `Arc` drop synchronises with
        // the other half's drop of its `Arc` (release/acquire on the count),
        // so both halves' final cursor stores and slot writes happen-before
        // this point.
        let mut head = self.head.0.load(Ordering::Relaxed);
        let tail = self.tail.0.load(Ordering::Relaxed);
        while head != tail {
            self.slot(head).with_mut(|p| {
                // SAFETY: positions in head..tail hold initialised items
                // nobody else can reach any more (both halves are gone);
                // each is dropped exactly once as `head` walks forward.
                unsafe { (*p).assume_init_drop() }
            });
            head = self.next(head);
        }
    }
}

/// A bounded mailbox of `capacity` items (`capacity >= 1`).
///
/// # Panics
///
/// If `capacity` is 0 or larger than `usize::MAX / 2` (a configuration
/// error, not a runtime condition).
pub fn bounded<T>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    assert!(
        (1..=usize::MAX / 2).contains(&capacity),
        "mailbox capacity must be in 1..=usize::MAX/2, got {capacity}"
    );
    let slots: Box<[_]> = (0..capacity)
        .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
        .collect();
    let shared = Arc::new(Shared {
        head: Padded(AtomicUsize::new(0)),
        tail: Padded(AtomicUsize::new(0)),
        slots,
    });
    (
        Sender {
            shared: shared.clone(),
            tail: 0,
            cached_head: Cell::new(0),
        },
        Receiver {
            shared,
            head: 0,
            cached_tail: Cell::new(0),
        },
    )
}

/// The producer half of a mailbox. `Send` when `T: Send`; not `Clone` (one
/// writer per cursor).
pub struct Sender<T> {
    shared: Arc<Shared<T>>,
    /// Our own cursor (the authoritative copy; `shared.tail` mirrors it).
    tail: usize,
    /// Last `head` we loaded; the true `head` is never behind it.
    cached_head: Cell<usize>,
}

// SAFETY: the sender owns the free slots and only moves `T` values in;
// `Cell` is only touched by the owning thread (`Sender` is not `Sync`).
unsafe impl<T: Send> Send for Sender<T> {}

impl<T> Sender<T> {
    /// Refresh the cached `head` from the receiver's cursor.
    #[inline]
    fn load_head(&self) -> usize {
        // Ordering: Acquire pairs with the receiver's Release store of
        // `head` (`Receiver::publish_head`): its move out of a slot
        // happens-before we reuse that slot.
        let head = self.shared.head.0.load(Ordering::Acquire);
        self.cached_head.set(head);
        head
    }

    /// Append `item`, or give it back in [`Full`] when every slot is taken.
    /// Never blocks.
    #[inline]
    pub fn push(&mut self, item: T) -> Result<(), Full<T>> {
        let tail = self.tail;
        let cap = self.shared.capacity();
        if self.shared.distance(self.cached_head.get(), tail) == cap
            && self.shared.distance(self.load_head(), tail) == cap
        {
            return Err(Full(item));
        }
        self.shared.slot(tail).with_mut(|p| {
            // SAFETY: `tail` is a free slot (distance < capacity), owned by
            // the sender until `tail` is published below; `MaybeUninit<T>`
            // has `T`'s layout, and a raw write never drops a previous value.
            unsafe { p.cast::<T>().write(item) }
        });
        let next = self.shared.next(tail);
        #[cfg(not(xunds_mutant = "mailbox_relaxed_publish"))]
        // Ordering: Release pairs with the receiver's Acquire load of `tail`
        // (`Receiver::load_tail`): the slot write above happens-before the
        // receiver reads the slot.
        self.shared.tail.0.store(next, Ordering::Release);
        #[cfg(xunds_mutant = "mailbox_relaxed_publish")]
        self.shared.tail.0.store(next, Ordering::Relaxed);
        self.tail = next;
        Ok(())
    }

    /// Free slots right now (a lower bound: the receiver may free more).
    #[inline]
    pub fn slots(&self) -> usize {
        self.shared.capacity() - self.shared.distance(self.load_head(), self.tail)
    }

    /// `true` when a push would fail right now.
    #[inline]
    #[cfg(any(test, feature = "testkit"))]
    pub fn is_full(&self) -> bool {
        self.slots() == 0
    }

    /// The capacity given to [`bounded`].
    #[inline]
    pub fn capacity(&self) -> usize {
        self.shared.capacity()
    }
}

debug_fields!([T] Sender<T>, |s| capacity = s.capacity(), slots = s.slots());

/// The consumer half of a mailbox. `Send` when `T: Send`; not `Clone`.
pub struct Receiver<T> {
    shared: Arc<Shared<T>>,
    /// Our own cursor (the authoritative copy; `shared.head` mirrors it).
    head: usize,
    /// Last `tail` we loaded; the true `tail` is never behind it.
    cached_tail: Cell<usize>,
}

// SAFETY: the receiver owns the full slots and only moves `T` values out;
// `Cell` is only touched by the owning thread (`Receiver` is not `Sync`).
unsafe impl<T: Send> Send for Receiver<T> {}

impl<T> Receiver<T> {
    /// Refresh the cached `tail` from the sender's cursor.
    #[inline]
    fn load_tail(&self) -> usize {
        // Ordering: Acquire pairs with the sender's Release store of `tail`
        // in `push`: the slot write happens-before our read.
        let tail = self.shared.tail.0.load(Ordering::Acquire);
        self.cached_tail.set(tail);
        tail
    }

    /// Publish `head` to the sender.
    #[inline]
    fn publish_head(&self, head: usize) {
        // Ordering: Release pairs with the sender's Acquire load of `head`
        // (`Sender::load_head`): our reads of the slots before `head`
        // happen-before the sender overwrites them.
        self.shared.head.0.store(head, Ordering::Release);
    }

    /// Take the oldest item, or `None` when the mailbox is empty.
    #[cfg(any(test, feature = "testkit"))]
    pub fn pop(&mut self) -> Option<T> {
        let mut v = None;
        self.drain(1, |x| v = Some(x));
        v
    }

    /// Take up to `max` items in FIFO order, handing each to `f`; the read
    /// position is published once for the batch. Returns how many were
    /// taken. If `f` panics, the items already handed over stay consumed.
    #[inline]
    pub fn drain(&mut self, max: usize, mut f: impl FnMut(T)) -> usize {
        // The cached `tail` is refreshed only when it shows fewer than `max`.
        let mut n = self.shared.distance(self.head, self.cached_tail.get());
        if n < max {
            n = self.shared.distance(self.head, self.load_tail());
        }
        let n = n.min(max);
        if n == 0 {
            return 0;
        }
        /// Publishes the drained prefix on every exit path.
        struct Publish<'a, T> {
            c: &'a mut Receiver<T>,
            head: usize,
        }
        impl<T> Drop for Publish<'_, T> {
            fn drop(&mut self) {
                if self.head != self.c.head {
                    self.c.publish_head(self.head);
                    self.c.head = self.head;
                }
            }
        }
        let mut g = Publish {
            head: self.head,
            c: self,
        };
        for _ in 0..n {
            let head = g.head;
            #[cfg(xunds_mutant = "mailbox_early_release")]
            g.c.publish_head(g.c.shared.next(head));
            let v = g.c.shared.slot(head).with(|p| {
                // SAFETY: `head` is one of the `n` full slots counted above
                // (after an Acquire load of `tail`): it holds an initialised
                // item published to us. Reading moves it out; `g.head` moves
                // past it before `f` runs, so it is read once even if `f`
                // panics.
                unsafe { (*p).assume_init_read() }
            });
            g.head = g.c.shared.next(head);
            f(v);
        }
        n
    }

    /// Items waiting right now (a lower bound: the sender may add more).
    #[inline]
    pub fn slots(&self) -> usize {
        self.shared.distance(self.head, self.load_tail())
    }

    /// `true` when nothing is waiting right now.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.slots() == 0
    }
}

debug_fields!([T] Receiver<T>, |s| capacity = s.shared.capacity(), slots = s.slots());

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize as StdCount;

    /// The other half has been dropped (items already sent can still be
    /// popped).
    fn abandoned<T>(shared: &Arc<Shared<T>>) -> bool {
        Arc::strong_count(shared) < 2
    }

    #[test]
    fn sender_receiver_basics() {
        let (mut tx, mut rx) = bounded::<u8>(2);
        assert_eq!((tx.capacity(), rx.shared.capacity()), (2, 2));
        assert!(rx.is_empty());
        assert_eq!(tx.slots(), 2);
        tx.push(1).unwrap();
        tx.push(2).unwrap();
        assert!(tx.is_full());
        assert_eq!(tx.push(3).unwrap_err().0, 3);
        assert_eq!(rx.slots(), 2);
        assert_eq!(rx.pop(), Some(1));
        tx.push(3).unwrap();
        let mut got = Vec::new();
        assert_eq!(rx.drain(10, |v| got.push(v)), 2);
        assert_eq!(got, [2, 3]);
        assert_eq!(rx.pop(), None);
        assert!(!abandoned(&rx.shared));
        drop(tx);
        assert!(abandoned(&rx.shared));
        assert_eq!(Full(0u8).to_string(), "mailbox full");
    }

    #[test]
    #[should_panic(expected = "mailbox capacity")]
    fn zero_capacity_is_refused() {
        let _ = bounded::<u8>(0);
    }

    #[test]
    fn fifo_wraps_for_every_small_capacity() {
        for cap in 1..=5 {
            let (mut p, mut c) = bounded::<u32>(cap);
            let mut next_in = 0u32;
            let mut next_out = 0u32;
            for round in 0..(4 * cap as u32 + 3) {
                // Fill, then drain a varying amount, to hit every offset.
                while p.push(next_in).is_ok() {
                    next_in += 1;
                }
                assert_eq!(p.slots(), 0);
                assert_eq!(c.slots(), cap);
                let take = 1 + (round as usize % cap);
                for _ in 0..take {
                    assert_eq!(c.pop(), Some(next_out));
                    next_out += 1;
                }
                assert_eq!(p.slots(), take);
            }
            while let Some(v) = c.pop() {
                assert_eq!(v, next_out);
                next_out += 1;
            }
            assert_eq!(next_in, next_out);
            assert!(c.is_empty());
        }
    }

    #[test]
    fn full_gives_the_item_back() {
        let (mut p, mut c) = bounded::<String>(1);
        p.push("a".into()).unwrap();
        let Full(back) = p.push("b".into()).unwrap_err();
        assert_eq!(back, "b");
        assert_eq!(c.pop().as_deref(), Some("a"));
        p.push(back).unwrap();
        assert_eq!(c.pop().as_deref(), Some("b"));
        assert_eq!(c.pop(), None);
    }

    #[test]
    fn drain_takes_in_order_and_respects_max() {
        let (mut p, mut c) = bounded::<u32>(4);
        for i in 0..4 {
            p.push(i).unwrap();
        }
        let mut got = Vec::new();
        assert_eq!(c.drain(3, |v| got.push(v)), 3);
        assert_eq!(got, [0, 1, 2]);
        p.push(4).unwrap();
        p.push(5).unwrap();
        p.push(6).unwrap();
        assert!(p.push(7).is_err());
        got.clear();
        assert_eq!(c.drain(usize::MAX, |v| got.push(v)), 4);
        assert_eq!(got, [3, 4, 5, 6]);
        assert_eq!(c.drain(5, |_| unreachable!()), 0);
    }

    #[test]
    fn drain_publishes_consumed_items_when_f_panics() {
        static DROPS: StdCount = StdCount::new(0);
        struct D(#[allow(dead_code)] u32);
        impl Drop for D {
            fn drop(&mut self) {
                DROPS.fetch_add(1, Ordering::Relaxed);
            }
        }
        let (mut p, mut c) = bounded::<D>(3);
        for i in 0..3 {
            p.push(D(i)).unwrap();
        }
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut k = 0;
            c.drain(3, |_d| {
                k += 1;
                if k == 2 {
                    panic!("boom");
                }
            });
        }));
        assert!(r.is_err());
        // Two items were handed to `f` (and dropped there); one is left.
        assert_eq!(DROPS.load(Ordering::Relaxed), 2);
        assert_eq!(c.slots(), 1);
        assert_eq!(p.slots(), 2);
        drop((p, c));
        assert_eq!(DROPS.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn drop_releases_queued_items_once() {
        let probe = std::sync::Arc::new(());
        let (mut p, mut c) = bounded::<std::sync::Arc<()>>(3);
        for _ in 0..3 {
            p.push(probe.clone()).unwrap();
        }
        drop(c.pop());
        assert!(!abandoned(&p.shared));
        drop(c);
        assert!(abandoned(&p.shared));
        assert_eq!(std::sync::Arc::strong_count(&probe), 3);
        drop(p);
        assert_eq!(std::sync::Arc::strong_count(&probe), 1);
    }

    #[test]
    fn threads_transfer_everything_in_order() {
        let n: u64 = if cfg!(miri) { 200 } else { 200_000 };
        for cap in [1, 2, 7] {
            let (mut p, mut c) = bounded::<u64>(cap);
            let t = std::thread::spawn(move || {
                for i in 0..n {
                    let mut v = i;
                    while let Err(Full(back)) = p.push(v) {
                        v = back;
                        std::thread::yield_now();
                    }
                }
            });
            let mut expect = 0;
            while expect < n {
                let k = c.drain(64, |v| {
                    assert_eq!(v, expect);
                    expect += 1;
                });
                if k == 0 {
                    std::thread::yield_now();
                }
            }
            t.join().unwrap();
            assert!(abandoned(&c.shared));
            assert_eq!(c.pop(), None);
        }
    }
}
