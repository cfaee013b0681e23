//! The in-memory fake backend: regions are owned 8-byte atomic words from
//! `crate::sync` (so a loom model sees every access under `--cfg loom`),
//! events are counters that never block. No system call, no clock:
//! deterministic by construction.
//!
//! Sub-word stores (`copy_in` edges, `store_u32`) are compare-and-swap loops
//! on the containing word, so two agents writing different bytes of one word
//! never lose each other's bytes.
#![forbid(unsafe_code)]

use std::os::fd::RawFd;
use std::sync::Arc;

use crate::sync::atomic::AtomicU64;

use super::{
    check, record_from_halves, record_halves, EventHandle, EventId, Hal, HalError, Ordering,
    RegionHandle, RegionId, Table, Wait, RECORD,
};

/// One region: its length in bytes and its words (`len.div_ceil(8)` of them).
type Words = (usize, Arc<[AtomicU64]>);

/// In-memory regions and simulated events. Clone to share.
#[derive(Clone, Default)]
pub struct FakeHal {
    regions: Table<RegionId, Words>,
    events: Table<EventId, Arc<AtomicU64>>,
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
    pub fn new() -> FakeHal {
        FakeHal::default()
    }

    /// The words of the region `r` names. Checked against the handle's id
    /// and length, so a handle from another backend (even one with the same
    /// index and id) cannot index past this region's words.
    fn words(&self, r: RegionHandle) -> Result<&[AtomicU64], HalError> {
        match self.regions.get(r.index(), r.id()) {
            Ok((len, words)) if *len == r.len() => Ok(words),
            _ => Err(HalError::BadHandle),
        }
    }

    fn counter(&self, ev: EventHandle) -> Result<&AtomicU64, HalError> {
        self.events.get(ev.index(), ev.id()).map(|c| &**c)
    }
}

/// Replace the bytes `[byte, byte + bytes.len())` of word `w` with `bytes`.
fn splice(w: &AtomicU64, byte: usize, bytes: &[u8], order: Ordering) {
    let mut mask = 0u64;
    let mut val = 0u64;
    for (k, b) in bytes.iter().enumerate() {
        let sh = 8 * (byte + k);
        mask |= 0xFF << sh;
        val |= u64::from(*b) << sh;
    }
    if mask == u64::MAX {
        w.store(val, order);
        return;
    }
    let mut cur = w.load(Ordering::Relaxed);
    loop {
        let new = (cur & !mask) | val;
        // Ordering: the caller's ordering applies to the successful store
        // (its partner and seed section are named at the caller); a failed
        // exchange only re-reads the word.
        match w.compare_exchange_weak(cur, new, order, load_for(order)) {
            Ok(_) => return,
            Err(now) => cur = now,
        }
    }
}

/// A failure ordering valid for `compare_exchange` (no Release/AcqRel): the
/// load half of the caller's ordering (whose `// Ordering:` reasoning is at
/// the caller).
fn load_for(o: Ordering) -> Ordering {
    match o {
        Ordering::SeqCst => Ordering::SeqCst,
        Ordering::Acquire | Ordering::AcqRel => Ordering::Acquire,
        _ => Ordering::Relaxed,
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
            Ok((
                len,
                (0..len.div_ceil(8)).map(|_| AtomicU64::new(0)).collect(),
            ))
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

    fn copy_in(&self, r: RegionHandle, off: usize, data: &[u8]) -> Result<(), HalError> {
        check(r, off, data.len(), 1)?;
        let words = self.words(r)?;
        let mut i = 0;
        while i < data.len() {
            let o = off + i;
            let byte = o % 8;
            let n = (8 - byte).min(data.len() - i);
            splice(&words[o / 8], byte, &data[i..i + n], Ordering::Relaxed);
            i += n;
        }
        Ok(())
    }

    fn copy_out(&self, r: RegionHandle, off: usize, out: &mut [u8]) -> Result<(), HalError> {
        check(r, off, out.len(), 1)?;
        let words = self.words(r)?;
        let mut i = 0;
        while i < out.len() {
            let o = off + i;
            let byte = o % 8;
            let n = (8 - byte).min(out.len() - i);
            let w = words[o / 8].load(Ordering::Relaxed).to_le_bytes();
            out[i..i + n].copy_from_slice(&w[byte..byte + n]);
            i += n;
        }
        Ok(())
    }

    fn load_u32(&self, r: RegionHandle, off: usize, order: Ordering) -> Result<u32, HalError> {
        check(r, off, 4, 4)?;
        let w = self.words(r)?[off / 8].load(order);
        Ok((w >> (8 * (off % 8))) as u32)
    }

    fn store_u32(
        &self,
        r: RegionHandle,
        off: usize,
        v: u32,
        order: Ordering,
    ) -> Result<(), HalError> {
        check(r, off, 4, 4)?;
        splice(&self.words(r)?[off / 8], off % 8, &v.to_le_bytes(), order);
        Ok(())
    }

    fn fetch_add_u32(
        &self,
        r: RegionHandle,
        off: usize,
        v: u32,
        order: Ordering,
    ) -> Result<u32, HalError> {
        check(r, off, 4, 4)?;
        let w = &self.words(r)?[off / 8];
        let sh = 8 * (off % 8);
        let mut cur = w.load(Ordering::Relaxed);
        loop {
            let old = (cur >> sh) as u32;
            let new = (cur & !(0xFFFF_FFFFu64 << sh)) | (u64::from(old.wrapping_add(v)) << sh);
            // Ordering: the caller's ordering applies to the read-modify-write
            // (partner and seed section named at the caller, e.g.
            // `Hal::tail_inc`).
            match w.compare_exchange_weak(cur, new, order, load_for(order)) {
                Ok(_) => return Ok(old),
                Err(now) => cur = now,
            }
        }
    }

    fn load_u64(&self, r: RegionHandle, off: usize, order: Ordering) -> Result<u64, HalError> {
        check(r, off, 8, 8)?;
        Ok(self.words(r)?[off / 8].load(order))
    }

    fn store_u64(
        &self,
        r: RegionHandle,
        off: usize,
        v: u64,
        order: Ordering,
    ) -> Result<(), HalError> {
        check(r, off, 8, 8)?;
        self.words(r)?[off / 8].store(v, order);
        Ok(())
    }

    fn write16(&self, r: RegionHandle, off: usize, rec: &[u8; RECORD]) -> Result<(), HalError> {
        check(r, off, RECORD, RECORD)?;
        let words = self.words(r)?;
        let (lo, hi) = record_halves(rec);
        words[off / 8 + 1].store(hi, Ordering::Relaxed);
        // Ordering: Release publishes the record; pairs with the Acquire load
        // of the same word in `read16` (the consumer's ring-id / phase check:
        // docs/abi.md §1.11, §1.13).
        words[off / 8].store(lo, Ordering::Release);
        Ok(())
    }

    fn read16(&self, r: RegionHandle, off: usize) -> Result<[u8; RECORD], HalError> {
        check(r, off, RECORD, RECORD)?;
        let words = self.words(r)?;
        // Ordering: Acquire pairs with the Release store in `write16`
        // (docs/abi.md §1.11, §1.13).
        let lo = words[off / 8].load(Ordering::Acquire);
        let hi = words[off / 8 + 1].load(Ordering::Relaxed);
        Ok(record_from_halves(lo, hi))
    }

    fn notify(&self, ev: EventHandle, n: u64) -> Result<(), HalError> {
        // Ordering: Release pairs with the AcqRel swap in `wait`, like an
        // eventfd write/read pair (docs/abi.md §1.8: the eventfd write is the
        // completion signal; here the NQ interrupt event).
        self.counter(ev)?.fetch_add(n, Ordering::Release);
        Ok(())
    }

    fn wait(&self, ev: EventHandle, _timeout_ns: u64) -> Result<Wait, HalError> {
        // Ordering: AcqRel: acquire pairs with `notify`'s Release fetch_add
        // (docs/abi.md §1.8 eventfd signal); release keeps a later notify's
        // counter ordered after this reset.
        match self.counter(ev)?.swap(0, Ordering::AcqRel) {
            0 => Ok(Wait::TimedOut),
            v => Ok(Wait::Signalled(v)),
        }
    }

    fn event_fd(&self, _ev: EventHandle) -> Option<RawFd> {
        None
    }
}
