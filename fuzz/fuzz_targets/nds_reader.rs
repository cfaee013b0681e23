//! The NDS reader over untrusted slab bytes: `Reader::attach_with_pause`,
//! `snapshot` and every per-item read on a heap slab built from the input.
//! Never a panic; a record is Fresh only when its hash matches its bytes and
//! Torn only when it does not; a too-short slab is refused as such; the
//! per-item reads agree with the snapshot.
//!
//! Input: one flags byte, then bytes laid over the slab. Flags: bit 0, the
//! header word comes from the input (else it is committed); bit 1, the slab
//! is the full 262,144 bytes (else the 67,200 the reader needs); bit 2, the
//! slab is the rest of the input itself, unpadded (short slabs); bit 3, each
//! record laid down gets its valid hash stamped (libFuzzer cannot invert
//! FNV-1a, and a Fresh record is where the parsers run). After the flags:
//! the header word (with bit 0), the model bitmap word, then the records in
//! order (process info, process info ext, model slots 0..63), as far as the
//! input goes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use xunds::nds::record::Verdict;
use xunds::nds::{
    Counter, HeapSlab, NdsError, RawSlab, Reader, RecordRead, RecordSpan, Slab, SlabMut,
    REQUIRED_SIZE, SLAB_SIZE,
};
use xunds::wire::nds::fnv;
use xunds::wire::nds::header::HEADER_PROTO;
use xunds::wire::nds::region;

fn spans() -> impl Iterator<Item = RecordSpan> {
    [RecordSpan::PROCESS_INFO, RecordSpan::PROCESS_INFO_EXT]
        .into_iter()
        .chain((0..64).map(|s| RecordSpan::model(s).expect("64 model slots")))
}

/// The slab's memory, made once: zeroing a fresh 67,200-byte slab for every
/// input cost more than reading it. Each input's bytes are zeroed again
/// after it ([`Laid`]).
fn memory() -> *mut u8 {
    static MEM: OnceLock<usize> = OnceLock::new();
    *MEM.get_or_init(|| {
        let words: Box<[AtomicU64]> = (0..SLAB_SIZE / 8).map(|_| AtomicU64::new(0)).collect();
        Box::leak(words).as_mut_ptr() as usize
    }) as *mut u8
}

/// The words an input laid over the slab, zeroed again when dropped.
struct Laid {
    slab: RawSlab,
    spans: Vec<(usize, usize)>,
}

impl Laid {
    /// Store `bytes` at `off` (8-aligned; a length that is a multiple of 4).
    fn put(&mut self, off: usize, bytes: &[u8]) {
        xunds::nds::words::copy_in(&self.slab, off, bytes);
        self.spans.push((off, bytes.len()));
    }
}

impl Drop for Laid {
    fn drop(&mut self) {
        for &(off, len) in &self.spans {
            for at in (off..off + len).step_by(4) {
                self.slab.store_u32(at, 0, Ordering::Relaxed);
            }
        }
    }
}

/// The next `n` bytes of the input, zero-padded.
fn next(rest: &mut &[u8], n: usize) -> Vec<u8> {
    let k = n.min(rest.len());
    let mut v = rest[..k].to_vec();
    v.resize(n, 0);
    *rest = &rest[k..];
    v
}

fn lay(flags: u8, mut rest: &[u8]) -> Laid {
    let len = if flags & 2 != 0 {
        SLAB_SIZE
    } else {
        REQUIRED_SIZE
    };
    // SAFETY: `memory()` is SLAB_SIZE bytes of 8-aligned atomics, leaked
    // (valid for the program), reached only through RawSlabs, whose every
    // access is an aligned 4- or 8-byte atomic; one fuzzing thread.
    let slab = unsafe { RawSlab::from_raw(memory(), len) }.expect("an aligned slab");
    let mut laid = Laid {
        slab,
        spans: Vec::new(),
    };
    let header = if flags & 1 != 0 {
        next(&mut rest, 8)
    } else {
        HEADER_PROTO.to_le_bytes().to_vec()
    };
    laid.put(region::HEADER_OFF, &header);
    let bitmap = next(&mut rest, 8);
    laid.put(region::MODEL_BITMAP_OFF, &bitmap);
    for span in spans() {
        if rest.is_empty() {
            break;
        }
        let mut record = next(&mut rest, span.len());
        if flags & 8 != 0 {
            fnv::stamp(&mut record);
        }
        laid.put(span.off(), &record);
    }
    laid
}

fn record_bytes(slab: &impl Slab, span: RecordSpan) -> Vec<u8> {
    let mut b = vec![0u8; span.len()];
    xunds::nds::words::copy_out(slab, span.off(), &mut b);
    b
}

/// A verdict agrees with the record's bytes.
fn agrees<R>(r: &RecordRead<R>, bytes: &[u8]) {
    match (r, fnv::verify(bytes)) {
        (RecordRead::Fresh(_), fnv::HashState::Valid)
        | (RecordRead::Unpublished, fnv::HashState::Unpublished)
        | (RecordRead::Torn(_), fnv::HashState::Mismatch { .. }) => {}
        (r, h) => panic!("verdict {} on a record whose hash is {h:?}", r.state_name()),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    if flags & 4 != 0 {
        check(&HeapSlab::from_bytes(rest));
    } else {
        let laid = lay(flags, rest);
        check(&laid.slab);
    }
});

fn check(slab: &(impl Slab + Sync)) {
    let reader = match Reader::attach_with_pause(slab, |_| {}) {
        Ok(r) => r,
        Err(NdsError::TooSmall { len }) => {
            assert!(len < REQUIRED_SIZE && len == slab.len());
            return;
        }
        Err(e) => {
            assert!(slab.len() >= REQUIRED_SIZE, "{e} on a short slab");
            return;
        }
    };
    let snap = reader.snapshot().expect("nobody writes: no detach");
    agrees(
        &snap.process_info,
        &record_bytes(slab, RecordSpan::PROCESS_INFO),
    );
    agrees(
        &snap.process_info_ext,
        &record_bytes(slab, RecordSpan::PROCESS_INFO_EXT),
    );
    for (slot, m) in &snap.models {
        let span = RecordSpan::model(slot.index()).unwrap();
        let bytes = record_bytes(slab, span);
        agrees(m, &bytes);
        // The per-record read agrees with the snapshot's.
        assert_eq!(&reader.model(*slot).unwrap(), m);
        // The raw read's copy (promised for a Fresh or Torn verdict only).
        let mut out = vec![0u8; span.len()];
        let verdict = reader.record_bytes(span, &mut out).unwrap();
        if verdict != Verdict::Unpublished {
            assert_eq!(out, bytes);
        }
    }
    assert_eq!(reader.process_info().unwrap(), snap.process_info);
    assert_eq!(reader.process_info_ext().unwrap(), snap.process_info_ext);
    assert_eq!(reader.model_bitmap().unwrap(), snap.model_bitmap);
    for i in 0..xunds::nds::index::ND_COUNTERS as u32 {
        let c = Counter::nd_index(i).unwrap();
        assert_eq!(reader.counter(c).unwrap(), snap.counters.nd[i as usize]);
    }
}
