//! Random bytes as a slab and as records: the reader never panics, refuses
//! what it must (too small, not committed, bad magic, bad version; the
//! generator produces every one of them), and never calls a record Fresh
//! unless its hash matches its bytes, nor Torn unless it does not. `xunds nds
//! dump` on the same bytes in a real file dumps a committed slab and refuses
//! anything else with the cause, never panicking.

use crate::nds_support;

use std::sync::atomic::Ordering;

use nds_support::{no_pause, xunds, TempSlab};
use xunds::nds::{
    HeapSlab, ModelSlot, NdsError, Reader, RecordRead, RecordSpan, Slab, SlabMut, REQUIRED_SIZE,
    SLAB_SIZE,
};
use xunds::prng::SplitMix64;
use xunds::wire::nds::fnv;
use xunds::wire::nds::header::{Header, HEADER_PROTO};

/// The header a random slab gets, so every verdict of the header gate is
/// generated (random bytes alone almost never start with `"nds\0"` or zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Head {
    Committed,
    Zero,
    /// `"nds\0"` and a version other than 100000.
    BadVersion,
    /// Random bytes (not `"nds\0"`, not zero).
    Random,
}

/// A random slab: random length (sometimes too short), random bytes, a
/// header of each kind, and (when committed) some records with valid
/// hashes so the reader goes past its gates and reads Fresh records.
fn random_slab(rng: &mut SplitMix64) -> (HeapSlab, Head) {
    let len = match rng.below(8) {
        0 => rng.below(REQUIRED_SIZE as u64) as usize,
        1 => REQUIRED_SIZE,
        _ => REQUIRED_SIZE + rng.below((SLAB_SIZE - REQUIRED_SIZE) as u64) as usize,
    };
    let mut bytes = vec![0u8; len];
    rng.fill(&mut bytes);
    let head = match rng.below(8) {
        0 => Head::Zero,
        1 => Head::BadVersion,
        2 => Head::Random,
        _ => Head::Committed,
    };
    if len >= 8 {
        let word = match head {
            Head::Committed => HEADER_PROTO,
            Head::Zero => 0,
            Head::BadVersion => {
                let v = rng.next_u32() as i32;
                let v = if v == 100_000 { 0 } else { v };
                Header {
                    magic: *b"nds\0",
                    version: v,
                }
                .to_word()
            }
            Head::Random => u64::from_le_bytes(bytes[..8].try_into().unwrap()) | 0xff,
        };
        bytes[..8].copy_from_slice(&word.to_le_bytes());
    }
    if len >= REQUIRED_SIZE && head == Head::Committed {
        // Stamp a few records so some read Fresh.
        for slot in 0..64 {
            if rng.chance(1, 3) {
                let span = RecordSpan::model(slot).unwrap();
                fnv::stamp(&mut bytes[span.off()..span.off() + span.len()]);
            }
        }
        for span in [RecordSpan::PROCESS_INFO, RecordSpan::PROCESS_INFO_EXT] {
            if rng.chance(1, 2) {
                fnv::stamp(&mut bytes[span.off()..span.off() + span.len()]);
            }
        }
    }
    (HeapSlab::from_bytes(&bytes), head)
}

fn record_bytes(slab: &HeapSlab, span: RecordSpan) -> Vec<u8> {
    let mut b = vec![0u8; span.len()];
    xunds::nds::words::copy_out(slab, span.off(), &mut b);
    b
}

#[test]
fn random_slabs_never_panic_the_reader() {
    let mut rng = SplitMix64::new(0xf022);
    let (mut attached, mut fresh, mut torn) = (0, 0, 0);
    let (mut too_small, mut not_committed, mut bad_magic, mut bad_version) = (0, 0, 0, 0);
    for _ in 0..400 {
        let (slab, head) = random_slab(&mut rng);
        let len = slab.len();
        let reader = match Reader::attach_with_pause(&slab, no_pause) {
            Ok(r) => r,
            Err(NdsError::TooSmall { len: l }) => {
                assert!(len < REQUIRED_SIZE && l == len);
                too_small += 1;
                continue;
            }
            Err(e) => {
                assert!(len >= REQUIRED_SIZE, "{e} on a short slab");
                assert_eq!(e.errno(), 22);
                // The refusal says exactly what the header was.
                match (head, e) {
                    (Head::Zero, NdsError::NotCommitted) => not_committed += 1,
                    (Head::Random, NdsError::BadMagic { .. }) => bad_magic += 1,
                    (Head::BadVersion, NdsError::BadVersion { version }) => {
                        assert_ne!(version, 100_000);
                        bad_version += 1;
                    }
                    (h, e) => panic!("header {h:?} refused as {e}"),
                }
                continue;
            }
        };
        assert_eq!(head, Head::Committed, "attached to a {head:?} header");
        attached += 1;
        let snap = reader.snapshot().unwrap();
        for (slot, m) in &snap.models {
            let span = RecordSpan::model(slot.index()).unwrap();
            match m {
                RecordRead::Fresh(_) => {
                    fresh += 1;
                    assert_eq!(
                        fnv::verify(&record_bytes(&slab, span)),
                        fnv::HashState::Valid
                    );
                }
                RecordRead::Torn(_) => {
                    torn += 1;
                    assert!(matches!(
                        fnv::verify(&record_bytes(&slab, span)),
                        fnv::HashState::Mismatch { .. }
                    ));
                }
                RecordRead::Unpublished => {}
            }
        }
        for slot in ModelSlot::all() {
            let _ = reader.model(slot).unwrap();
        }
        let _ = reader.process_info().unwrap();
        let _ = reader.process_info_ext().unwrap();
        let _ = reader.model_bitmap().unwrap();
    }
    // Every branch of the gate and both record verdicts were exercised.
    assert!(
        attached > 100 && fresh > 100 && torn > 100,
        "{attached} {fresh} {torn}"
    );
    for (what, n) in [
        ("too small", too_small),
        ("not committed", not_committed),
        ("bad magic", bad_magic),
        ("bad version", bad_version),
    ] {
        assert!(n > 5, "{what}: only {n} cases");
    }
}

#[test]
fn random_record_bytes_are_fresh_only_with_a_matching_hash() {
    let mut rng = SplitMix64::new(0x5eed);
    let slab = HeapSlab::zeroed();
    slab.store_u64(0, HEADER_PROTO, Ordering::Relaxed);
    let reader = Reader::attach_with_pause(&slab, no_pause).unwrap();
    for i in 0..2000 {
        let span = RecordSpan::model(i % 64).unwrap();
        let mut b = vec![0u8; span.len()];
        rng.fill(&mut b);
        match rng.below(3) {
            0 => b[..4].fill(0),
            1 => {
                fnv::stamp(&mut b);
            }
            _ => {}
        }
        xunds::nds::words::copy_in(&slab, span.off(), &b);
        let got = reader.model(ModelSlot::new(i % 64).unwrap()).unwrap();
        match fnv::verify(&b) {
            fnv::HashState::Valid => assert!(got.is_fresh()),
            fnv::HashState::Unpublished => assert_eq!(got, RecordRead::Unpublished),
            fnv::HashState::Mismatch { .. } => {
                assert!(matches!(got, RecordRead::Torn(_)), "{got:?}")
            }
        }
    }
}

#[test]
fn dump_survives_random_slab_files() {
    let mut rng = SplitMix64::new(0xd0);
    let f = TempSlab::new("fuzz-dump");
    for i in 0..12 {
        let short = i % 4 == 0;
        let committed = i % 2 == 1;
        let len = if short {
            rng.below(REQUIRED_SIZE as u64) as usize
        } else {
            SLAB_SIZE
        };
        let mut bytes = vec![0u8; len];
        rng.fill(&mut bytes);
        if committed && len >= 8 {
            bytes[..8].copy_from_slice(&HEADER_PROTO.to_le_bytes());
        }
        std::fs::write(f.path(), &bytes).unwrap();
        for json in [false, true] {
            let mut cmd = xunds(["nds", "dump", &f.path().display().to_string()]);
            if json {
                cmd.arg("--json");
            }
            let out = cmd.output().unwrap();
            let code = out.status.code();
            let stderr = String::from_utf8_lossy(&out.stderr);
            if json && !out.stdout.is_empty() {
                // Whatever bytes the records hold, the output is valid JSON.
                let doc: Result<serde_json::Value, _> = serde_json::from_slice(&out.stdout);
                assert!(doc.is_ok(), "case {i}: {doc:?}");
            }
            if committed && !short {
                // Random bytes behind a committed header: every record is
                // torn or unpublished, every counter some number; the dump
                // shows them and succeeds.
                assert_eq!(code, Some(0), "case {i} json={json}: {stderr}");
                assert!(!out.stdout.is_empty());
            } else {
                // Refused with a message naming the cause; 101 would be a
                // panic.
                assert_eq!(code, Some(1), "case {i} json={json}");
                let why = if short { "too small" } else { "bad magic" };
                assert!(stderr.contains(why), "case {i}: {stderr}");
            }
        }
    }
}
