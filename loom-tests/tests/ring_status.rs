//! Loom: the status is written before completion is observable (docs/abi.md §1.8
//! QUIRK, docs/abi.md §3 "the request's status is written before its completion
//! is observable"). An observer that sees is_completed(seq) must read the
//! final status from its cell. Capacity 1 with two items and capacity 2 with
//! three items (the last item reuses the first one's slot); both are
//! slot-reuse models (`reuse` in the name: `.ci/loom` runs them at
//! LOOM_MAX_PREEMPTIONS=3). Kills `status_after_completion`.
#![cfg(loom)]

mod ring_support;

use std::sync::Arc;

use loom::thread;
use ring_support::{Gate, Registry, XU};
use xunds::ring::{PopError, StatusCell, XuQueue};
use xunds::wire::seq_id::SeqId;
use xunds::wire::status::NrtStatus;

const STATUSES: [NrtStatus; 3] = [
    NrtStatus::EXEC_BAD_INPUT,
    NrtStatus::TIMEOUT,
    NrtStatus::FAILURE,
];

/// Items 1..=cap go in up front; the producer (main) submits item cap + 1
/// into slot 0 once it frees; the worker pops all with distinct statuses;
/// the observer looks at every seq once. Three threads.
fn status_before_completion(cap: u64) {
    ring_support::model(move || {
        let n = cap as usize + 1;
        let reg = Registry::new(1, 0);
        let (mut p, mut w) = XuQueue::<u64>::owned(reg.config(cap)).unwrap();
        let q = p.queue().clone();
        let cells: Arc<Vec<Arc<StatusCell>>> =
            Arc::new((0..n).map(|_| Arc::new(StatusCell::new())).collect());
        let mut seqs = Vec::new();
        for (i, cell) in cells.iter().enumerate().take(n - 1) {
            seqs.push(p.submit(i as u64, Some(cell.clone())).unwrap());
            p.trigger_next().unwrap();
        }
        let last = SeqId::from_cursor(n as u64, XU);
        seqs.push(last);
        let (space, work) = (Gate::new(), Gate::new());
        let (sp, wk) = (space.clone(), work.clone());
        let worker = thread::spawn(move || {
            let mut k = 0;
            while k < n {
                match w.pop(STATUSES[k]) {
                    Ok(_) => {
                        k += 1;
                        sp.open();
                    }
                    Err(PopError::Empty) => wk.wait(),
                    Err(e) => panic!("{e}"),
                }
            }
        });
        // The observer looks once per seq, at whatever point loom places it.
        let (q2, c2) = (q.clone(), cells.clone());
        let observer = thread::spawn(move || {
            for (i, s) in seqs.into_iter().enumerate() {
                if q2.is_completed(s).unwrap() {
                    assert_eq!(c2[i].get(), Some(STATUSES[i]), "status of {s:?}");
                }
            }
        });
        // The producer: the last item reuses slot 0.
        loop {
            match p.submit(n as u64 - 1, Some(cells[n - 1].clone())) {
                Ok(s) => {
                    assert_eq!(s, last);
                    break;
                }
                Err(_) => space.wait(),
            }
        }
        p.trigger_next().unwrap();
        work.open();
        worker.join().unwrap();
        observer.join().unwrap();
        for (i, c) in cells.iter().enumerate() {
            assert_eq!(c.get(), Some(STATUSES[i]));
        }
    });
}

#[test]
fn status_reuse_cap1_two_items() {
    status_before_completion(1);
}

#[test]
fn status_reuse_cap2_three_items() {
    status_before_completion(2);
}
