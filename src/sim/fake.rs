//! The in-memory fake backend: regions are owned 8-byte atomic words from
//! `crate::sync` (so a loom model sees every access under `--cfg loom`),
//! events are counters that never block. No system call, no clock:
//! deterministic by construction.
//!
//! Sub-word stores (byte-copy edges, 4-byte stores) are compare-and-swap loops
//! on the containing word, so two agents writing different bytes of one word
//! never lose each other's bytes. A fake only one thread writes
//! ([`FakeHal::one_thread`], the deterministic runner's) makes them, and
//! every read-modify-write, a load and a store: no locked instruction.
#![forbid(unsafe_code)]

use std::os::fd::RawFd;
use std::sync::Arc;

use crate::sync::atomic::AtomicU64;

use crate::hal::{
    check, record_from_halves, record_halves, Access, EventHandle, EventId, Hal, HalError,
    Ordering, RegionHandle, RegionId, Table, Wait, Width,
};

/// One region: its length in bytes and its words (`len.div_ceil(8)` of them).
type Words = (usize, Arc<[AtomicU64]>);

/// In-memory regions and simulated events. Clone to share.
#[derive(Clone, Default)]
pub struct FakeHal {
    regions: Table<RegionId, Words>,
    events: Table<EventId, Arc<AtomicU64>>,
    /// Made by [`FakeHal::one_thread`].
    one: bool,
}

impl core::fmt::Debug for FakeHal {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FakeHal")
            .field("regions", &self.regions.ids().collect::<Vec<_>>())
            .field("events", &self.events.ids().collect::<Vec<_>>())
            .finish()
    }
}

impl FakeHal {
    /// An empty fake.
    #[cfg(any(test, feature = "testkit"))]
    pub fn new() -> FakeHal {
        FakeHal::default()
    }

    /// An empty fake whose memory and events one thread at a time writes
    /// (the deterministic runner's): its read-modify-writes and sub-word
    /// stores are a load and a store. Writers on two threads at once could
    /// lose each other's updates (the words stay atomics: never undefined
    /// behaviour).
    pub fn one_thread() -> FakeHal {
        FakeHal {
            one: true,
            ..FakeHal::default()
        }
    }

    /// The words of the region `r` names. Checked against the handle's id
    /// and length, so a handle from another backend (even one with the same
    /// index and id) cannot index past this region's words.
    #[inline(always)]
    fn words(&self, r: RegionHandle) -> Result<&[AtomicU64], HalError> {
        match self.regions.get(r.index(), r.key()) {
            Some((len, words)) if *len == r.len() => Ok(words),
            _ => Err(HalError::BadHandle),
        }
    }

    fn counter(&self, ev: EventHandle) -> Result<&AtomicU64, HalError> {
        self.events.event(ev).map(|c| &**c)
    }
}

/// Replace word `w` by `f(old)`; returns `old`. `one`: the fake's one
/// writer does it with a load and a store; otherwise a compare-and-swap
/// loop, so no other writer's update in between is lost.
#[inline(always)]
fn update(w: &AtomicU64, one: bool, order: Ordering, f: impl Fn(u64) -> u64) -> u64 {
    if one {
        // Ordering: the caller's, its load half on the load and its store
        // half on the store (partner and seed section named at the caller);
        // with one writer nothing comes between them.
        let old = w.load(load_for(order));
        w.store(f(old), store_for(order));
        return old;
    }
    let mut cur = w.load(Ordering::Relaxed);
    loop {
        // Ordering: the caller's ordering applies to the successful
        // exchange (partner and seed section named at the caller); a failed
        // one only re-reads the word.
        match w.compare_exchange_weak(cur, f(cur), order, load_for(order)) {
            Ok(_) => return cur,
            Err(now) => cur = now,
        }
    }
}

/// The load half of an ordering (also a failure ordering valid for
/// `compare_exchange`), whose `// Ordering:` reasoning is at the caller.
fn load_for(o: Ordering) -> Ordering {
    match o {
        Ordering::SeqCst => Ordering::SeqCst,
        Ordering::Acquire | Ordering::AcqRel => Ordering::Acquire,
        _ => Ordering::Relaxed,
    }
}

/// The store half of an ordering, whose `// Ordering:` reasoning is at the
/// caller.
fn store_for(o: Ordering) -> Ordering {
    match o {
        Ordering::SeqCst => Ordering::SeqCst,
        Ordering::Release | Ordering::AcqRel => Ordering::Release,
        _ => Ordering::Relaxed,
    }
}

/// Replace the bytes `[byte, byte + bytes.len())` of word `w` with `bytes`.
#[inline(always)]
fn splice(w: &AtomicU64, one: bool, byte: usize, bytes: &[u8], order: Ordering) {
    if let Ok(whole) = <[u8; 8]>::try_from(bytes) {
        // The whole word: one plain store, no mask to build. Ordering: the
        // caller's (its partner and seed section are named at the caller).
        w.store(u64::from_le_bytes(whole), order);
        return;
    }
    let mut mask = 0u64;
    let mut val = 0u64;
    for (k, b) in bytes.iter().enumerate() {
        let sh = 8 * (byte + k);
        mask |= 0xFF << sh;
        val |= u64::from(*b) << sh;
    }
    update(w, one, order, |cur| (cur & !mask) | val);
}

/// Add `v` (wrapping) to the 4-byte word at byte `byte` of `w`; returns the
/// old 4-byte word.
fn fetch_add32(w: &AtomicU64, one: bool, byte: usize, v: u32, order: Ordering) -> u32 {
    let sh = 8 * byte;
    let add = |cur: u64| {
        let new = ((cur >> sh) as u32).wrapping_add(v);
        (cur & !(0xFFFF_FFFFu64 << sh)) | (u64::from(new) << sh)
    };
    (update(w, one, order, add) >> sh) as u32
}

// Runs of words (range checked by the caller; offsets are 4-aligned): an
// unaligned first word, then whole 8-byte words (one load or one plain
// store per pair, a straight loop the compiler unrolls), then an odd last
// word. A lone 4-byte store is spliced into its word.
fn load_run(words: &[AtomicU64], off: usize, out: &mut [u32]) {
    let (mut out, mut w) = (out, off / 8);
    if off % 8 != 0 {
        let Some((first, rest)) = out.split_first_mut() else {
            return;
        };
        *first = (words[w].load(Ordering::Relaxed) >> 32) as u32;
        (out, w) = (rest, w + 1);
    }
    // Four 8-byte words at a time (a fixed-size block the compiler
    // unrolls: one load and one 8-byte store per word), then the pairs
    // left, then a last half word.
    let n = out.len() / 2;
    let src = &words[w..w + n];
    // As many blocks of 8 as of 4 words (`n` is half of `out`).
    let mut blocks = out.chunks_exact_mut(8);
    let mut quads = src.chunks_exact(4);
    for (block, four) in (&mut blocks).zip(&mut quads) {
        if let (Ok(block), Ok(four)) = (
            <&mut [u32; 8]>::try_from(block),
            <&[AtomicU64; 4]>::try_from(four),
        ) {
            for (k, word) in four.iter().enumerate() {
                let v = word.load(Ordering::Relaxed);
                block[2 * k] = v as u32;
                block[2 * k + 1] = (v >> 32) as u32;
            }
        }
    }
    let mut pairs = blocks.into_remainder().chunks_exact_mut(2);
    for (pair, word) in (&mut pairs).zip(quads.remainder()) {
        let v = word.load(Ordering::Relaxed);
        pair[0] = v as u32;
        pair[1] = (v >> 32) as u32;
    }
    if let [last] = pairs.into_remainder() {
        *last = words[w + n].load(Ordering::Relaxed) as u32;
    }
}

/// The bytes at `off` (bounds checked by the caller): a partial first
/// word, whole words, a partial last word.
fn read_bytes(words: &[AtomicU64], off: usize, out: &mut [u8]) {
    let (byte, mut w) = (off % 8, off / 8);
    let head = ((8 - byte) % 8).min(out.len());
    let (first, rest) = out.split_at_mut(head);
    if head > 0 {
        let v = words[w].load(Ordering::Relaxed).to_le_bytes();
        first.copy_from_slice(&v[byte..byte + head]);
        w += 1;
    }
    let last = w + rest.len() / 8;
    let mut whole = rest.chunks_exact_mut(8);
    for (chunk, word) in (&mut whole).zip(&words[w..last]) {
        chunk.copy_from_slice(&word.load(Ordering::Relaxed).to_le_bytes());
    }
    let tail = whole.into_remainder();
    if !tail.is_empty() {
        let v = words[last].load(Ordering::Relaxed).to_le_bytes();
        tail.copy_from_slice(&v[..tail.len()]);
    }
}

/// Write `data` at `off` (bounds checked by the caller): whole words are
/// stored, partial ones spliced into their neighbours' bytes.
fn write_bytes(words: &[AtomicU64], one: bool, off: usize, data: &[u8]) {
    let (byte, mut w) = (off % 8, off / 8);
    let head = ((8 - byte) % 8).min(data.len());
    let (first, rest) = data.split_at(head);
    if head > 0 {
        splice(&words[w], one, byte, first, Ordering::Relaxed);
        w += 1;
    }
    let last = w + rest.len() / 8;
    let whole = rest.chunks_exact(8);
    let tail = whole.remainder();
    for (chunk, word) in whole.zip(&words[w..last]) {
        if let Ok(b) = <[u8; 8]>::try_from(chunk) {
            word.store(u64::from_le_bytes(b), Ordering::Relaxed);
        }
    }
    if !tail.is_empty() {
        splice(&words[last], one, 0, tail, Ordering::Relaxed);
    }
}

fn store_run(words: &[AtomicU64], one: bool, off: usize, vals: &[u32]) {
    let (mut vals, mut w) = (vals, off / 8);
    if off % 8 != 0 {
        let Some((first, rest)) = vals.split_first() else {
            return;
        };
        splice(&words[w], one, 4, &first.to_le_bytes(), Ordering::Relaxed);
        (vals, w) = (rest, w + 1);
    }
    let n = vals.len() / 2;
    let pairs = vals.chunks_exact(2);
    let last = pairs.remainder();
    for (pair, word) in pairs.zip(&words[w..w + n]) {
        if let [lo, hi] = *pair {
            word.store(u64::from(lo) | (u64::from(hi) << 32), Ordering::Relaxed);
        }
    }
    if let [v] = last {
        splice(&words[w + n], one, 0, &v.to_le_bytes(), Ordering::Relaxed);
    }
}

impl Hal for FakeHal {
    fn name(&self) -> String {
        "fake".to_string()
    }

    fn map(&mut self, id: RegionId, len: usize) -> Result<RegionHandle, HalError> {
        if len == 0 {
            return Err(HalError::ZeroLength(id));
        }
        let index = self.regions.insert(id, || {
            let words = (0..len.div_ceil(8)).map(|_| AtomicU64::new(0)).collect();
            Ok((len, words))
        })?;
        Ok(RegionHandle::new(index, id, len))
    }

    fn base_addr(&self, r: RegionHandle) -> Result<u64, HalError> {
        self.words(r).map(|w| w.as_ptr() as usize as u64)
    }

    fn event(&mut self, id: EventId) -> Result<EventHandle, HalError> {
        let index = self.events.insert(id, || Ok(Arc::new(AtomicU64::new(0))))?;
        Ok(EventHandle::new(index, id))
    }

    #[inline(always)]
    fn access(&self, r: RegionHandle, off: usize, a: Access<'_>) -> Result<u64, HalError> {
        let (len, align) = a.span();
        check(r, off, len, align)?;
        let words = self.words(r)?;
        let (w, byte, one) = (off / 8, off % 8, self.one);
        Ok(match a {
            Access::Load(Width::W32, order) => (words[w].load(order) >> (8 * byte)) & 0xFFFF_FFFF,
            Access::Load(Width::W64, order) => words[w].load(order),
            Access::Store(Width::W32, v, order) => {
                splice(&words[w], one, byte, &(v as u32).to_le_bytes(), order);
                0
            }
            Access::Store(Width::W64, v, order) => {
                words[w].store(v, order);
                0
            }
            Access::FetchAdd(Width::W32, v, order) => {
                fetch_add32(&words[w], one, byte, v as u32, order).into()
            }
            Access::FetchAdd(Width::W64, v, order) if one => {
                update(&words[w], one, order, |cur| cur.wrapping_add(v))
            }
            // Ordering: the caller's ordering applies to the read-modify-write
            // (partner and seed section named at the caller).
            Access::FetchAdd(Width::W64, v, order) => words[w].fetch_add(v, order),
            Access::TailInc(n) => {
                // Ordering: Release pairs with the device's Acquire load of
                // the same tail register (docs/abi.md §1.10 "device publish
                // boundary").
                let old = fetch_add32(&words[w], one, byte, n, Ordering::Release);
                old.wrapping_add(n).into()
            }
            Access::LoadRun(out) => {
                load_run(words, off, out);
                0
            }
            Access::StoreRun(vals) => {
                store_run(words, one, off, vals);
                0
            }
            Access::Read(out) => {
                read_bytes(words, off, out);
                0
            }
            Access::Write(data) => {
                write_bytes(words, one, off, data);
                0
            }
            Access::ReadRecord(_, out) => {
                // Ordering: Acquire pairs with the Release store of the same
                // word below (`WriteRecord`; docs/abi.md §1.11, §1.13).
                let lo = words[w].load(Ordering::Acquire);
                let hi = words[w + 1].load(Ordering::Relaxed);
                *out = record_from_halves(lo, hi);
                0
            }
            Access::WriteRecord(_, rec) => {
                let (lo, hi) = record_halves(rec);
                words[w + 1].store(hi, Ordering::Relaxed);
                // Ordering: Release publishes the record; pairs with the
                // Acquire load of the same word in `ReadRecord` (the
                // consumer's ring-id / phase check: docs/abi.md §1.11, §1.13).
                words[w].store(lo, Ordering::Release);
                0
            }
        })
    }

    fn notify(&self, ev: EventHandle, n: u64) -> Result<(), HalError> {
        // Ordering: Release pairs with the AcqRel swap in `wait`, like an
        // eventfd write/read pair (docs/abi.md §1.8: the eventfd write is the
        // completion signal; here the NQ interrupt event).
        let c = self.counter(ev)?;
        if self.one {
            update(c, true, Ordering::Release, |v| v.wrapping_add(n));
        } else {
            c.fetch_add(n, Ordering::Release);
        }
        Ok(())
    }

    fn wait(&self, ev: EventHandle, _timeout_ns: u64) -> Result<Wait, HalError> {
        // Ordering: AcqRel: acquire pairs with `notify`'s Release fetch_add
        // (docs/abi.md §1.8 eventfd signal); release keeps a later notify's
        // counter ordered after this reset.
        let c = self.counter(ev)?;
        let v = if self.one {
            update(c, true, Ordering::AcqRel, |_| 0)
        } else {
            c.swap(0, Ordering::AcqRel)
        };
        match v {
            0 => Ok(Wait::TimedOut),
            v => Ok(Wait::Signalled(v)),
        }
    }

    fn event_fd(&self, _ev: EventHandle) -> Option<RawFd> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-writer fake's loads and stores give what the
    /// compare-and-swap ones give.
    #[test]
    fn one_thread_read_modify_writes_match_the_shared_ones() {
        let run = |mut hal: FakeHal| {
            let r = hal.map(RegionId::Dram, 32).unwrap();
            let ev = hal.event(EventId::Other { tag: 1 }).unwrap();
            hal.store_u64(r, 0, u64::MAX, Ordering::Relaxed).unwrap();
            hal.store_u32(r, 4, 0x1234_5678, Ordering::Release).unwrap();
            hal.copy_in(r, 9, &[1, 2, 3, 4, 5, 6, 7, 8, 9]).unwrap();
            let a = hal.fetch_add_u32(r, 0, 2, Ordering::AcqRel).unwrap();
            let b = hal
                .access(r, 24, Access::FetchAdd(Width::W64, 5, Ordering::Relaxed))
                .unwrap();
            let c = hal.tail_inc(r, 20, 3).unwrap();
            hal.notify(ev, 4).unwrap();
            hal.notify(ev, 1).unwrap();
            let waits = [hal.wait(ev, 0).unwrap(), hal.wait(ev, 0).unwrap()];
            let mut bytes = [0u8; 32];
            hal.copy_out(r, 0, &mut bytes).unwrap();
            (a, b, c, waits, bytes)
        };
        let one = run(FakeHal::one_thread());
        assert_eq!(one, run(FakeHal::new()));
        assert_eq!((one.0, one.2), (u32::MAX, 3));
        assert_eq!(one.3, [Wait::Signalled(5), Wait::TimedOut]);
    }
}
