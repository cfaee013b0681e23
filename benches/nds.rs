//! NDS datastore benchmarks, each against its floor in the same run, on a
//! real `MAP_SHARED` mapping. Candidates are interleaved round by round (best
//! of `REPS` each), so load from other processes hits peer and ours alike.
//!
//! - `nds_counter`: `Writer::add` on a resolved [`Counter`] (and resolving
//!   the counter per call) against one bare `fetch_add` on the same word of
//!   the same mapping. Target <= 1.1x.
//! - `nds_record`: a model record update in place (`Writer::update_model`:
//!   encode, stamp, invalidate, 84 word stores, Release hash) and a verified
//!   read (`Reader::record_bytes`: header bracket, Acquire hash word, 84 word
//!   loads, fence, re-load, FNV-1a-32; `Reader::model` also parses) against
//!   the floor libnrt's own code pays: FNV-1a-32 of 672 bytes plus one
//!   672-byte `memcpy`. Target <= 1.1x.

use std::hint::black_box;
use std::sync::atomic::Ordering;
use std::time::Duration;

use xunds::nds::{Counter, MappedSlab, ModelSlot, Reader, RecordSpan, Writer};
use xunds::sync::word::Words;
use xunds::wire::nds::counters::NcCounter;
use xunds::wire::nds::fnv;
use xunds::wire::nds::model::{MemLocation, MemSlot, MemUsageInfo, ModelRecord, RECORD_SIZE};

use crate::harness::{ratio, row, time};

const REPS: usize = 40;

/// Run every candidate once per round for `REPS` rounds; the best time of
/// each.
fn interleaved(cands: &mut [&mut dyn FnMut() -> Duration]) -> Vec<Duration> {
    let mut best = vec![Duration::MAX; cands.len()];
    for _ in 0..REPS {
        for (b, f) in best.iter_mut().zip(cands.iter_mut()) {
            *b = (*b).min(f());
        }
    }
    best
}

/// Counter updates: ours against one `fetch_add` on the same mapped word.
pub fn counter() {
    const N: u64 = 500_000;
    let w = Writer::new(MappedSlab::anonymous().expect("mmap")).expect("writer");
    let c = Counter::nc(7, NcCounter::InferCompleted).expect("counter");
    let at = w
        .slab()
        .region()
        .ptr_at(c.offset(), 8, 8)
        .expect("aligned word");
    // SAFETY: the word is inside the mapping `w` keeps alive for the whole
    // run, and every access to it is an 8-byte atomic.
    let word = unsafe { Words::<8>::from_raw(at, 8) }.expect("aligned word");

    let mut peer = || {
        time(|| {
            for _ in 0..N {
                black_box(word.fetch_add_u64(0, black_box(1), Ordering::Relaxed));
            }
        })
    };
    let mut ours = || {
        time(|| {
            for _ in 0..N {
                black_box(w.add(black_box(c), black_box(1)).expect("add"));
            }
        })
    };
    let mut resolved = || {
        time(|| {
            for _ in 0..N {
                let c = Counter::nc(black_box(7), NcCounter::InferCompleted).expect("counter");
                black_box(w.add(c, black_box(1)).expect("add"));
            }
        })
    };
    let t = interleaved(&mut [&mut peer, &mut ours, &mut resolved]);
    row("fetch_add on the mapped word (floor)", N, t[0]);
    row("Writer::add(resolved Counter)", N, t[1]);
    row("Writer::add(Counter::nc(core, name))", N, t[2]);
    ratio(
        "counter update vs fetch_add",
        t[1],
        t[0],
        ">= 0.91 (<= 1.1x)",
    );
    ratio("resolve + update vs fetch_add", t[2], t[0], "informational");
}

fn sample_record(id: u32) -> ModelRecord {
    let mut r = ModelRecord {
        model_id: id,
        model_node_id: 7,
        nc_index: 2,
        sg_index: 1,
        ..ModelRecord::EMPTY
    };
    r.name[..16].copy_from_slice(b"resnet50_v1.neff");
    *r.usage_mut(MemLocation::Device, MemSlot::Tensors) = MemUsageInfo {
        total_size: 0x0800_0000,
        chunk_count: 12,
    };
    r
}

/// Record commit and verified read against FNV-1a-32 of 672 bytes + a copy.
pub fn record() {
    const N: u64 = 5_000;
    let w = Writer::new(MappedSlab::anonymous().expect("mmap")).expect("writer");
    let slot = w.commit_model(&sample_record(1)).expect("commit");
    let reader = Reader::attach(w.slab().read_only()).expect("reader attaches a committed slab");
    let recs = [sample_record(1), sample_record(2)];
    let span = RecordSpan::model(slot.index()).expect("span");

    // The floor: what libnrt's producer and reader each pay at least.
    let src = recs[0].encode();
    let mut dst = [0u8; RECORD_SIZE];
    let mut floor = || {
        time(|| {
            for _ in 0..N {
                let s = black_box(&src);
                black_box(fnv::record_hash(s));
                dst.copy_from_slice(s);
                black_box(&mut dst);
            }
        })
    };
    let mut update = || {
        time(|| {
            for i in 0..N {
                w.update_model(slot, black_box(&recs[(i & 1) as usize]))
                    .expect("update");
            }
        })
    };
    let mut buf = [0u8; RECORD_SIZE];
    let mut read_bytes = || {
        time(|| {
            for _ in 0..N {
                let v = reader
                    .record_bytes(black_box(span), &mut buf)
                    .expect("attached");
                black_box((v, &mut buf));
            }
        })
    };
    let mut read = || {
        time(|| {
            for _ in 0..N {
                let r = reader.model(black_box(slot)).expect("attached");
                black_box(r.is_fresh());
            }
        })
    };
    // Informational: a whole commit + delete cycle.
    let free = ModelSlot::new(1).expect("slot");
    let mut cycle = || {
        time(|| {
            for _ in 0..N {
                let s = w.commit_model(black_box(&recs[0])).expect("commit");
                debug_assert_eq!(s, free);
                w.delete_model(s).expect("delete");
            }
        })
    };
    let t = interleaved(&mut [
        &mut floor,
        &mut update,
        &mut read_bytes,
        &mut read,
        &mut cycle,
    ]);
    row("floor: FNV-1a-32(672 B) + 672 B copy", N, t[0]);
    row("Writer::update_model (commit in place)", N, t[1]);
    row("Reader::record_bytes (verified read)", N, t[2]);
    row("Reader::model (verified read + parse)", N, t[3]);
    row("commit_model + delete_model", N, t[4]);
    ratio("record commit vs floor", t[1], t[0], ">= 0.91 (<= 1.1x)");
    ratio("verified read vs floor", t[2], t[0], ">= 0.91 (<= 1.1x)");
    ratio(
        "verified read + parse vs floor",
        t[3],
        t[0],
        "informational",
    );
}
