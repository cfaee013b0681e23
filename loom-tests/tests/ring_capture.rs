//! Loom: the worker captures the slot (mark_comp_efd, efd_from_pool,
//! exec_info) before it advances exec_head (seed 000 §6 "consumer captures,
//! then advances"): the instant exec_head moves, the producer may reuse the
//! slot and write -1 / the next item over it. Capacity 1, two items.
//! Kills `advance_before_capture`.
#![cfg(loom)]

mod ring_support;

use std::time::Duration;

use loom::thread;
use ring_support::{Gate, Registry};
use xunds::ring::{OwnedStorage, WaitMode, Waited, XuQueue};
use xunds::wire::status::NrtStatus;

/// Producer reuses the only slot as soon as exec_head moves; the worker must
/// still hand back the first item.
#[test]
fn capture_before_advance_items() {
    ring_support::model(|| {
        let reg = Registry::new(1, 0);
        let (mut p, mut w) = XuQueue::<u64, OwnedStorage>::owned(reg.config(1)).unwrap();
        p.submit(100, None).unwrap();
        p.trigger_next().unwrap();
        let prod = thread::spawn(move || {
            while p.submit(101, None).is_err() {
                thread::yield_now();
            }
            p.trigger_next().unwrap();
        });
        for i in 0..2u64 {
            loop {
                if let Some(pp) = w.pop(NrtStatus::SUCCESS).expect("consistent slot") {
                    assert_eq!(pp.seq.seq_num(), i + 1);
                    assert_eq!(pp.item, 100 + i, "captured the item of this slot");
                    break;
                }
                thread::yield_now();
            }
        }
        prod.join().unwrap();
    });
}

/// A waiter blocked on item 1 must be signalled even though the producer
/// overwrites mark_comp_efd with -1 for item 2 right after exec_head moves.
#[test]
fn capture_before_advance_waiter() {
    ring_support::model(|| {
        let reg = Registry::new(1, 1);
        let (mut p, mut w) = XuQueue::<u64, OwnedStorage>::owned(reg.config(1)).unwrap();
        let q = p.queue().clone();
        let s1 = p.submit(100, None).unwrap();
        p.trigger_next().unwrap();
        let ev = reg.event(0);
        let waiter = thread::spawn(move || {
            q.wait_on(s1, WaitMode::Block, &ev, Duration::from_secs(3600))
                .unwrap()
        });
        let (space, work) = (Gate::new(), Gate::new());
        let (sp, wk) = (space.clone(), work.clone());
        let worker = thread::spawn(move || {
            let mut n = 0u64;
            while n < 2 {
                match w.pop(NrtStatus::SUCCESS).unwrap() {
                    Some(pp) => {
                        assert_eq!(pp.item, 100 + n);
                        n += 1;
                        sp.open();
                    }
                    None => wk.wait(),
                }
            }
        });
        while p.submit(101, None).is_err() {
            space.wait();
        }
        p.trigger_next().unwrap();
        work.open();
        worker.join().unwrap();
        assert!(matches!(waiter.join().unwrap(), Waited::Completed { .. }));
        reg.assert_dups_closed_once();
    });
}
