//! Loom: the slot body is written before the cursor publish (docs/abi.md §1.9
//! "producer stages, then publishes"; the scheduled_head Release / peek
//! Acquire pair). Capacity 1 and 2 with capacity + 1 items force slot reuse;
//! every model here is a slot-reuse model (`reuse` in its name: `.ci/loom`
//! runs them at LOOM_MAX_PREEMPTIONS=3). Two threads each, so the retry
//! loops yield instead of waiting on a gate (a gate would add a
//! happens-before edge that hides the `relaxed_publish` mutant).
//! Kills `relaxed_publish`: with a Relaxed publish the worker can see
//! scheduled_head move and still read a stale seq_id / exec_info.
#![cfg(loom)]

mod ring_support;

use loom::thread;
use ring_support::Registry;
use xunds::ring::{PopError, XuQueue};
use xunds::wire::status::NrtStatus;

fn one_by_one(cap: u64) {
    ring_support::model(move || {
        let reg = Registry::new(1, 0);
        let (mut p, mut w) = XuQueue::<u64>::owned(reg.config(cap)).unwrap();
        let n = cap + 1;
        let prod = thread::spawn(move || {
            for i in 0..n {
                while let Err(e) = p.submit(100 + i, None) {
                    assert_eq!(e.error, xunds::ring::SubmitError::Full);
                    thread::yield_now();
                }
                p.trigger_next().unwrap();
            }
        });
        let mut next = 0;
        while next < n {
            match w.pop(NrtStatus::SUCCESS) {
                Ok(pp) => {
                    assert_eq!(pp.seq.seq_num(), next + 1);
                    assert_eq!(pp.item, 100 + next);
                    next += 1;
                }
                Err(PopError::Empty) => thread::yield_now(),
                Err(e) => panic!("slot body visible: {e}"),
            }
        }
        prod.join().unwrap();
    });
}

#[test]
fn publish_reuse_cap1_two_items() {
    one_by_one(1);
}

#[test]
fn publish_reuse_cap2_three_items() {
    one_by_one(2);
}

/// The batched form: one publish per burst on each side.
#[test]
fn publish_reuse_bursts_cap2() {
    ring_support::model(|| {
        let reg = Registry::new(1, 0);
        let (mut p, mut w) = XuQueue::<u64>::owned(reg.config(2)).unwrap();
        let prod = thread::spawn(move || {
            p.submit_burst(2, |s| (s.seq_num() * 10, None)).unwrap();
            p.trigger_burst(2).unwrap();
            while p.submit_burst(1, |s| (s.seq_num() * 10, None)).is_err() {
                thread::yield_now();
            }
            p.trigger_burst(1).unwrap();
        });
        let mut next = 1u64;
        while next <= 3 {
            let got = w
                .pop_burst(
                    2,
                    |_| NrtStatus::SUCCESS,
                    |pp| {
                        assert_eq!(pp.seq.seq_num(), next);
                        assert_eq!(pp.item, next * 10);
                        next += 1;
                    },
                )
                .expect("slot bodies visible");
            if got == 0 {
                thread::yield_now();
            }
        }
        prod.join().unwrap();
    });
}
