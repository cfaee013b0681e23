//! Loom models of the NDS record hash protocol (seed 004 §7) over word
//! atomics: the real `xunds::nds::record` code on a few-word `HeapSlab`
//! (whose words are loom atomics under `--cfg loom`).
//!
//! The `stable_*` models check the seqlock property the protocol adds to the
//! seed: a copy the reader calls *stable* (word 0 non-zero and unchanged) is
//! exactly one published version, without help from the hash. They kill the
//! mutants (`.ci/loom`):
//! - `record_plain_copy`: an unordered copy (Relaxed hash load, no fence);
//! - `record_hash_after_body`: an update that writes the body under the live
//!   hash and stores the new hash after it (no invalidation first).
//!
//! The `read_*` models check the full read (stable copy + FNV-1a-32): a
//! torn copy is never `Fresh`, including across a delete and an A -> B -> A
//! double update.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;

use xunds::nds::record::{self, Attempt, RecordSpan, Verdict};
use xunds::nds::HeapSlab;
use xunds::wire::nds::fnv;

/// A stamped record of `len` bytes whose every byte depends on `v`.
fn version(len: usize, v: u8) -> Vec<u8> {
    let mut b: Vec<u8> = (0..len).map(|i| v.wrapping_mul(17) ^ (i as u8)).collect();
    fnv::stamp(&mut b);
    b
}

fn commit(slab: &HeapSlab, span: RecordSpan, r: &[u8]) {
    record::invalidate(slab, span);
    record::publish(slab, span, r);
}

/// 3 words: word 0 (hash | 4 body bytes) and two body words.
const LEN: usize = 24;

#[test]
fn stable_copy_during_commit_and_update_is_one_version() {
    loom::model(|| {
        let span = RecordSpan::new(0, LEN).unwrap();
        let slab = Arc::new(HeapSlab::new(LEN));
        let (a, b) = (version(LEN, 1), version(LEN, 2));
        let w = {
            let (slab, a, b) = (slab.clone(), a.clone(), b.clone());
            thread::spawn(move || {
                commit(&slab, span, &a);
                commit(&slab, span, &b);
            })
        };
        let mut out = [0u8; LEN];
        if copy_is_stable(&slab, span, &mut out) {
            assert!(
                out[..] == a[..] || out[..] == b[..],
                "stable torn copy {out:?}"
            );
        }
        w.join().unwrap();
    });
}

#[test]
fn stable_copy_during_update_of_a_live_record_is_one_version() {
    loom::model(|| {
        let span = RecordSpan::new(0, LEN).unwrap();
        let slab = Arc::new(HeapSlab::new(LEN));
        let (a, b) = (version(LEN, 1), version(LEN, 2));
        commit(&slab, span, &a);
        let w = {
            let (slab, b) = (slab.clone(), b.clone());
            thread::spawn(move || commit(&slab, span, &b))
        };
        let mut out = [0u8; LEN];
        if copy_is_stable(&slab, span, &mut out) {
            assert!(
                out[..] == a[..] || out[..] == b[..],
                "stable torn copy {out:?}"
            );
        }
        w.join().unwrap();
    });
}

#[test]
fn stable_copy_with_a_4_byte_tail_is_one_version() {
    // The process-info-ext shape: 8-byte words then a 4-byte tail word.
    const TAIL: usize = 20;
    loom::model(|| {
        let span = RecordSpan::new(0, TAIL).unwrap();
        let slab = Arc::new(HeapSlab::new(24));
        let (a, b) = (version(TAIL, 1), version(TAIL, 2));
        commit(&slab, span, &a);
        let w = {
            let (slab, b) = (slab.clone(), b.clone());
            thread::spawn(move || commit(&slab, span, &b))
        };
        let mut out = [0u8; TAIL];
        if copy_is_stable(&slab, span, &mut out) {
            assert!(
                out[..] == a[..] || out[..] == b[..],
                "stable torn copy {out:?}"
            );
        }
        w.join().unwrap();
    });
}

fn copy_is_stable(slab: &HeapSlab, span: RecordSpan, out: &mut [u8]) -> bool {
    record::copy_once(slab, span, out) == Attempt::Stable
}

#[test]
fn read_during_update_is_never_fresh_and_torn() {
    loom::model(|| {
        let span = RecordSpan::new(0, LEN).unwrap();
        let slab = Arc::new(HeapSlab::new(LEN));
        let (a, b) = (version(LEN, 1), version(LEN, 2));
        commit(&slab, span, &a);
        let w = {
            let (slab, b) = (slab.clone(), b.clone());
            thread::spawn(move || commit(&slab, span, &b))
        };
        let mut out = [0u8; LEN];
        if record::read(&*slab, span, &mut out, thread::yield_now) == Verdict::Fresh {
            assert!(
                out[..] == a[..] || out[..] == b[..],
                "fresh torn copy {out:?}"
            );
        }
        w.join().unwrap();
    });
}

#[test]
fn read_during_delete_is_the_record_or_nothing() {
    loom::model(|| {
        let span = RecordSpan::new(0, LEN).unwrap();
        let slab = Arc::new(HeapSlab::new(LEN));
        let a = version(LEN, 1);
        commit(&slab, span, &a);
        let w = {
            let slab = slab.clone();
            thread::spawn(move || record::erase(&*slab, span))
        };
        let mut out = [0u8; LEN];
        match record::read(&*slab, span, &mut out, thread::yield_now) {
            Verdict::Fresh => assert_eq!(out[..], a[..], "fresh torn copy"),
            Verdict::Unpublished | Verdict::Torn(_) => {}
        }
        w.join().unwrap();
        // After the delete the record reads as unpublished.
        assert_eq!(
            record::read(&*slab, span, &mut out, || {}),
            Verdict::Unpublished
        );
    });
}

#[test]
fn read_across_an_aba_double_update_is_never_fresh_and_torn() {
    // A -> B -> A can leave word 0 equal at both ends of a copy; the FNV
    // check is the last line there (record.rs "ABA").
    loom::model(|| {
        let span = RecordSpan::new(0, 16).unwrap();
        let slab = Arc::new(HeapSlab::new(16));
        let (a, b) = (version(16, 1), version(16, 2));
        commit(&slab, span, &a);
        let w = {
            let (slab, a, b) = (slab.clone(), a.clone(), b.clone());
            thread::spawn(move || {
                commit(&slab, span, &b);
                commit(&slab, span, &a);
            })
        };
        let mut out = [0u8; 16];
        if record::read(&*slab, span, &mut out, thread::yield_now) == Verdict::Fresh {
            assert!(
                out[..] == a[..] || out[..] == b[..],
                "fresh torn copy {out:?}"
            );
        }
        w.join().unwrap();
    });
}
