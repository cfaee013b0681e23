//! Exhaustive counter addressing at the writer level (docs/abi.md §2.4, §2.5): every
//! (core, counter) pair in 0..=255 x 0..=255 and every ND index in 0..=255.
//! A valid pair lands inside its band (the 0x100 band for cores 0-3 and
//! counters 0-30, the 0xda80 EXT band for cores 0-3 and counters 31-94, the
//! 0xe280 EXT-data band for cores 4-15), no two valid pairs share a byte, the
//! per-core pad word of the EXT-data band is never touched, and everything
//! else is EINVAL (errno 22).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use xunds::nds::{Counter, CounterId, HeapSlab, NdsError, Slab, Writer, REQUIRED_SIZE};
use xunds::wire::nds::region;
use xunds::wire::nds::region::{
    EXT_NC_COUNTERS, EXT_NC_COUNTERS_OFF, EXT_NC_DATA, EXT_NC_DATA_OFF, NC_COUNTERS,
    NC_COUNTERS_OFF, ND_COUNTERS, ND_COUNTERS_OFF,
};

fn band(core: u32, counter: u32) -> (usize, usize) {
    match (core, counter) {
        (0..=3, 0..=30) => (NC_COUNTERS_OFF, NC_COUNTERS.size),
        (0..=3, _) => (EXT_NC_COUNTERS_OFF, EXT_NC_COUNTERS.size),
        _ => (EXT_NC_DATA_OFF, EXT_NC_DATA.size),
    }
}

#[test]
fn every_core_counter_pair_lands_in_its_band_once_or_is_einval() {
    let slab = Arc::new(HeapSlab::zeroed());
    let w = Writer::new(slab.clone()).unwrap();
    let mut owner: HashMap<usize, (u32, u32)> = HashMap::new();
    let (mut valid, mut invalid) = (0, 0);
    for core in 0..=255u32 {
        for counter in 0..=255u32 {
            match Counter::nc_index(core, counter) {
                Ok(c) => {
                    assert!(core <= 15 && counter <= 94, "({core},{counter}) accepted");
                    valid += 1;
                    let off = c.offset();
                    let (start, size) = band(core, counter);
                    assert!(
                        off >= start && off + 8 <= start + size,
                        "({core},{counter}) at {off:#x} outside its band {start:#x}+{size}"
                    );
                    assert_eq!(off % 8, 0);
                    assert_eq!(
                        c.id(),
                        CounterId::Nc {
                            core: core as u8,
                            index: counter as u8
                        }
                    );
                    if let Some(prev) = owner.insert(off, (core, counter)) {
                        panic!("({core},{counter}) and {prev:?} share {off:#x}");
                    }
                    // Each valid pair gets a distinct value through the
                    // writer; the whole map is checked below.
                    w.add(c, u64::from(core) << 8 | u64::from(counter) | 1 << 32)
                        .unwrap();
                }
                Err(e) => {
                    assert!(core > 15 || counter > 94, "({core},{counter}) refused");
                    assert!(matches!(e, NdsError::Invalid(_)));
                    assert_eq!(e.errno(), 22);
                    invalid += 1;
                }
            }
        }
    }
    assert_eq!(valid, 16 * 95);
    assert_eq!(valid + invalid, 256 * 256);

    // Every word of the map: a counter word holds exactly its own pair's
    // value (so no two pairs overlap, not even partially), the header is
    // committed, and nothing else was touched (including the EXT-data pad
    // word of every extended core).
    for off in (0..REQUIRED_SIZE).step_by(8) {
        let v = slab.load_u64(off, Ordering::Relaxed);
        match owner.get(&off) {
            Some(&(core, counter)) => assert_eq!(
                v,
                u64::from(core) << 8 | u64::from(counter) | 1 << 32,
                "word {off:#x}"
            ),
            None if off == region::HEADER_OFF => {}
            None => assert_eq!(v, 0, "stray write at {off:#x}"),
        }
    }
    for m in 0..12usize {
        let pad = EXT_NC_DATA_OFF + (m * 96 + 95) * 8;
        assert!(!owner.contains_key(&pad), "pad word of core {}", m + 4);
    }
}

#[test]
fn every_nd_index_lands_in_the_nd_band_or_is_einval() {
    let w = Writer::new(HeapSlab::zeroed()).unwrap();
    let mut seen = std::collections::HashSet::new();
    for i in 0..=255u32 {
        match Counter::nd_index(i) {
            Ok(c) => {
                assert!(i <= 30);
                let off = c.offset();
                assert!(off >= ND_COUNTERS_OFF && off + 8 <= ND_COUNTERS_OFF + ND_COUNTERS.size);
                assert!(seen.insert(off));
                if i == 3 {
                    // FEATURE_BITMAP: OR only (docs/abi.md §2.4).
                    assert_eq!(w.add(c, 1).unwrap_err().errno(), 22);
                    w.or(c, 1);
                } else {
                    w.add(c, 1).unwrap();
                }
            }
            Err(e) => {
                assert!(i > 30);
                assert_eq!(e.errno(), 22);
            }
        }
    }
    assert_eq!(seen.len(), 31);
}
