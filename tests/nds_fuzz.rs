//! Random bytes as a slab and as records: the reader never panics, refuses
//! what it must (too small, not committed, bad magic, bad version), and never
//! calls a record Fresh unless its hash matches its bytes. `xunds nds dump`
//! survives the same bytes in a real file.

mod nds_support;

use std::sync::atomic::Ordering;

use nds_support::{no_pause, xunds, TempSlab};
use xunds::nds::{
    HeapSlab, ModelSlot, NdsError, Reader, RecordRead, RecordSpan, Slab, SlabMut, REQUIRED_SIZE,
    SLAB_SIZE,
};
use xunds::prng::SplitMix64;
use xunds::wire::nds::fnv;
use xunds::wire::nds::header::HEADER_PROTO;

/// A random slab: random length (sometimes too short), random bytes, and
/// (most of the time) a committed header and some records with valid hashes
/// so the reader goes past its gates.
fn random_slab(rng: &mut SplitMix64) -> HeapSlab {
    let len = match rng.below(8) {
        0 => rng.below(REQUIRED_SIZE as u64) as usize,
        1 => REQUIRED_SIZE,
        _ => REQUIRED_SIZE + rng.below((SLAB_SIZE - REQUIRED_SIZE) as u64) as usize,
    };
    let mut bytes = vec![0u8; len];
    rng.fill(&mut bytes);
    if len >= REQUIRED_SIZE && rng.below(4) != 0 {
        bytes[..8].copy_from_slice(&HEADER_PROTO.to_le_bytes());
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
    HeapSlab::from_bytes(&bytes)
}

fn record_bytes(slab: &HeapSlab, span: RecordSpan) -> Vec<u8> {
    let mut b = vec![0u8; span.len()];
    xunds::nds::words::copy_out(slab, span.off(), &mut b);
    b
}

#[test]
fn random_slabs_never_panic_the_reader() {
    let mut rng = SplitMix64::new(0xf022);
    let (mut attached, mut fresh) = (0, 0);
    for _ in 0..300 {
        let slab = random_slab(&mut rng);
        let len = slab.len();
        let reader = match Reader::attach_with_pause(&slab, no_pause) {
            Ok(r) => r,
            Err(NdsError::TooSmall { len: l }) => {
                assert!(len < REQUIRED_SIZE && l == len);
                continue;
            }
            Err(e @ (NdsError::BadMagic { .. } | NdsError::BadVersion { .. })) => {
                assert_eq!(e.errno(), 22);
                continue;
            }
            Err(e) => panic!("unexpected refusal {e}"),
        };
        attached += 1;
        let snap = reader.snapshot().unwrap();
        for (slot, m) in &snap.models {
            let span = RecordSpan::model(slot.index()).unwrap();
            if let RecordRead::Fresh(_) = m {
                fresh += 1;
                assert_eq!(
                    fnv::verify(&record_bytes(&slab, span)),
                    fnv::HashState::Valid
                );
            }
        }
        for slot in ModelSlot::all() {
            let _ = reader.model(slot).unwrap();
        }
        let _ = reader.process_info().unwrap();
        let _ = reader.process_info_ext().unwrap();
        let _ = reader.model_bitmap().unwrap();
    }
    assert!(attached > 100 && fresh > 100, "{attached} {fresh}");
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
        let len = if i % 4 == 0 {
            rng.below(REQUIRED_SIZE as u64) as usize
        } else {
            SLAB_SIZE
        };
        let mut bytes = vec![0u8; len];
        rng.fill(&mut bytes);
        if i % 2 == 1 {
            bytes[..8].copy_from_slice(&HEADER_PROTO.to_le_bytes());
        }
        std::fs::write(f.path(), &bytes).unwrap();
        for json in [false, true] {
            let mut cmd = xunds(["nds", "dump", &f.path().display().to_string()]);
            if json {
                cmd.arg("--json");
            }
            let out = cmd.output().unwrap();
            // 0 = dumped, 1 = refused with a message; 101 would be a panic.
            let code = out.status.code();
            assert!(matches!(code, Some(0) | Some(1)), "exit {code:?}");
            if code == Some(1) {
                assert!(!out.stderr.is_empty());
            }
        }
    }
}
