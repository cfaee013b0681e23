//! Loom: the status is written before completion is observable (seed 000 §5
//! QUIRK, SPEC-NOTES "the request's status is written before its completion
//! is observable"). An observer that sees is_completed(seq) must read the
//! final status from its cell. Capacity 1 with two items (slot reuse).
//! Kills `status_after_completion`.
#![cfg(loom)]

mod ring_support;

use std::sync::Arc;

use loom::thread;
use ring_support::{Gate, Registry, XU};
use xunds::ring::{OwnedStorage, StatusCell, XuQueue};
use xunds::wire::seq_id::SeqId;
use xunds::wire::status::NrtStatus;

const STATUSES: [NrtStatus; 2] = [NrtStatus::EXEC_BAD_INPUT, NrtStatus::TIMEOUT];

#[test]
fn status_before_completion_cap1() {
    ring_support::model(|| {
        let reg = Registry::new(1, 0);
        let (mut p, mut w) = XuQueue::<u64, OwnedStorage>::owned(reg.config(1)).unwrap();
        let q = p.queue().clone();
        let cells = Arc::new([Arc::new(StatusCell::new()), Arc::new(StatusCell::new())]);
        let s1 = p.submit(1, Some(cells[0].clone())).unwrap();
        p.trigger_next().unwrap();
        let s2 = SeqId::from_cursor(2, XU);
        let (space, work) = (Gate::new(), Gate::new());
        let (sp, wk) = (space.clone(), work.clone());
        let worker = thread::spawn(move || {
            let mut n = 0;
            while n < 2 {
                match w.pop(STATUSES[n]).unwrap() {
                    Some(_) => {
                        n += 1;
                        sp.open();
                    }
                    None => wk.wait(),
                }
            }
        });
        // The observer looks once, at whatever point loom places it.
        let (q2, c2) = (q.clone(), cells.clone());
        let observer = thread::spawn(move || {
            for (i, s) in [s1, s2].into_iter().enumerate() {
                if q2.is_completed(s).unwrap() {
                    assert_eq!(c2[i].get(), Some(STATUSES[i]), "status of {s:?}");
                }
            }
        });
        // The producer: item 2 reuses the only slot.
        loop {
            match p.submit(2, Some(cells[1].clone())) {
                Ok(s) => {
                    assert_eq!(s, s2);
                    break;
                }
                Err(_) => space.wait(),
            }
        }
        p.trigger_next().unwrap();
        work.open();
        worker.join().unwrap();
        observer.join().unwrap();
        assert_eq!(cells[0].get(), Some(STATUSES[0]));
        assert_eq!(cells[1].get(), Some(STATUSES[1]));
    });
}
