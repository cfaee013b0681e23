//! Loom models of the actor mailbox (`xunds::actors::mailbox`): the SPSC
//! ring the actors run, built here on loom's atomics and `UnsafeCell`
//! (`crate::sync` and the module's cell swap them in under `--cfg loom`).
//!
//! Each model moves capacity + 1 items through a ring of capacity 1 or 2, so
//! every slot is reused while the other side may still be touching it. The
//! mutants `xunds_mutant="mailbox_relaxed_publish"` (tail stored Relaxed) and
//! `xunds_mutant="mailbox_early_release"` (head published before the slot is
//! read) must make these models fail (`.ci/loom` checks that they do).
#![cfg(loom)]

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use xunds::actors::mailbox::{self, Full};

/// The producer pushes `0..n`, retrying on `Full`; the consumer pops with
/// `pop` (or `drain` in batches of `batch` when given) and checks FIFO order.
fn transfer(cap: usize, n: usize, batch: Option<usize>) {
    loom::model(move || {
        let (mut tx, mut rx) = mailbox::bounded::<usize>(cap);
        let producer = thread::spawn(move || {
            for i in 0..n {
                let mut v = i;
                loop {
                    match tx.push(v) {
                        Ok(()) => break,
                        Err(Full(back)) => {
                            v = back;
                            thread::yield_now();
                        }
                    }
                }
            }
        });
        let mut next = 0;
        while next < n {
            let got = match batch {
                None => match rx.pop() {
                    Some(v) => {
                        assert_eq!(v, next);
                        next += 1;
                        1
                    }
                    None => 0,
                },
                Some(b) => rx.drain(b, |v| {
                    assert_eq!(v, next);
                    next += 1;
                }),
            };
            if got == 0 {
                thread::yield_now();
            }
        }
        producer.join().unwrap();
        assert_eq!(rx.pop(), None);
    });
}

#[test]
fn capacity_1_two_items_pop() {
    transfer(1, 2, None);
}

#[test]
fn capacity_2_three_items_pop() {
    transfer(2, 3, None);
}

#[test]
fn capacity_2_three_items_drain() {
    transfer(2, 3, Some(2));
}

/// Items are heap values with a drop counter: whatever is left in the ring
/// when both halves are dropped concurrently is dropped exactly once.
#[test]
fn concurrent_drop_releases_every_item_once() {
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let (mut tx, mut rx) = mailbox::bounded::<Counted>(1);
        let d = drops.clone();
        let producer = thread::spawn(move || {
            // Capacity + 1 items: the second push may or may not find room.
            let _ = tx.push(Counted(d.clone()));
            let _ = tx.push(Counted(d.clone()));
            // `tx` and any refused item drop here, racing with `rx` below.
        });
        drop(rx.pop());
        drop(rx);
        producer.join().unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 2);
    });
}
