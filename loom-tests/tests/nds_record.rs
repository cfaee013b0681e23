//! Loom models of the NDS record hash protocol (docs/abi.md §2.8) over word
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

/// The writer's path (`Writer::write_record`): invalidate, then stamp and
/// publish in one pass. `r` is already stamped; the pass recomputes the
/// same hash.
fn commit(slab: &HeapSlab, span: RecordSpan, r: &[u8]) {
    record::invalidate(slab, span);
    let mut staged = r.to_vec();
    let h = record::stamp_and_publish(slab, span, &mut staged);
    assert_eq!(h, fnv::stored_hash(r));
}

/// 3 words: word 0 (hash | 4 body bytes) and two body words.
const LEN: usize = 24;

/// One model run: a `len`-byte record at offset 0 of a `slab_len`-byte slab,
/// its versions A and B, and (when `live`) A already published. `writer`
/// runs on a second thread while `reader` runs on this one; after the join
/// the slab and span are returned for checks on the final state.
fn race(
    len: usize,
    slab_len: usize,
    live: bool,
    writer: fn(&HeapSlab, RecordSpan, &[u8], &[u8]),
    reader: impl FnOnce(&HeapSlab, RecordSpan, &[u8], &[u8]),
) -> (Arc<HeapSlab>, RecordSpan) {
    let span = RecordSpan::new(0, len).unwrap();
    let slab = Arc::new(HeapSlab::new(slab_len));
    let (a, b) = (version(len, 1), version(len, 2));
    if live {
        commit(&slab, span, &a);
    }
    let w = {
        let (slab, a, b) = (slab.clone(), a.clone(), b.clone());
        thread::spawn(move || writer(&slab, span, &a, &b))
    };
    reader(&slab, span, &a, &b);
    w.join().unwrap();
    (slab, span)
}

/// `out` is exactly version A or version B.
fn assert_one_version(out: &[u8], a: &[u8], b: &[u8], what: &str) {
    assert!(out == a || out == b, "{what} torn copy {out:?}");
}

/// The reader of the `stable_*` models: a copy `copy_once` calls stable is
/// one version, without the hash.
fn stable_copy_is_one_version(slab: &HeapSlab, span: RecordSpan, a: &[u8], b: &[u8]) {
    let mut out = vec![0u8; span.len()];
    if record::copy_once(slab, span, &mut out) == Attempt::Stable {
        assert_one_version(&out, a, b, "stable");
    }
}

/// The reader of the `read_*` models: a Fresh read is one version.
fn fresh_read_is_one_version(slab: &HeapSlab, span: RecordSpan, a: &[u8], b: &[u8]) {
    let mut out = vec![0u8; span.len()];
    if record::read(slab, span, &mut out, thread::yield_now) == Verdict::Fresh {
        assert_one_version(&out, a, b, "fresh");
    }
}

#[test]
fn stable_copy_during_commit_and_update_is_one_version() {
    loom::model(|| {
        race(
            LEN,
            LEN,
            false,
            |slab, span, a, b| {
                commit(slab, span, a);
                commit(slab, span, b);
            },
            stable_copy_is_one_version,
        );
    });
}

#[test]
fn stable_copy_during_update_of_a_live_record_is_one_version() {
    loom::model(|| {
        race(
            LEN,
            LEN,
            true,
            |slab, span, _, b| commit(slab, span, b),
            stable_copy_is_one_version,
        );
    });
}

#[test]
fn stable_copy_with_a_4_byte_tail_is_one_version() {
    // The process-info-ext shape: 8-byte words then a 4-byte tail word.
    loom::model(|| {
        race(
            20,
            24,
            true,
            |slab, span, _, b| commit(slab, span, b),
            stable_copy_is_one_version,
        );
    });
}

#[test]
fn read_during_update_is_never_fresh_and_torn() {
    loom::model(|| {
        race(
            LEN,
            LEN,
            true,
            |slab, span, _, b| commit(slab, span, b),
            fresh_read_is_one_version,
        );
    });
}

#[test]
fn read_during_delete_is_the_record_or_nothing() {
    loom::model(|| {
        let (slab, span) = race(
            LEN,
            LEN,
            true,
            |slab, span, _, _| record::erase(slab, span),
            |slab, span, a, _| {
                let mut out = [0u8; LEN];
                match record::read(slab, span, &mut out, thread::yield_now) {
                    Verdict::Fresh => assert_eq!(out[..], a[..], "fresh torn copy"),
                    Verdict::Unpublished | Verdict::Torn(_) => {}
                }
            },
        );
        // After the delete the record reads as unpublished.
        let mut out = [0u8; LEN];
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
        race(
            16,
            16,
            true,
            |slab, span, a, b| {
                commit(slab, span, b);
                commit(slab, span, a);
            },
            fresh_read_is_one_version,
        );
    });
}
