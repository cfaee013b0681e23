//! Word-sized atomic copies between a slab and private byte buffers.
//!
//! libnrt's producer and reader move records with `memcpy` (docs/abi.md §2.6,
//! docs/abi.md §2.8). Over memory another process writes at the same time that is a data
//! race; here every byte crosses the boundary inside an 8-byte (or, for a
//! 4-aligned head or tail, 4-byte) atomic load or store through
//! [`Slab`]/[`SlabMut`]. The copies themselves are `Relaxed`: the record
//! protocol in [`super::record`] puts the fences and the Acquire/Release hash
//! word around them.
//!
//! Offsets and lengths must be multiples of 4 (every NDS record is: 64, 260
//! and 672 bytes at 8-aligned starts). A misaligned request is a caller bug
//! and panics.
#![forbid(unsafe_code)]

use core::sync::atomic::Ordering;

use super::slab::{Slab, SlabMut};

/// The words of the 4-aligned run `[off, off + len)`, as (offset, width):
/// 8 bytes where an 8-aligned word fits, else 4 (a head at `off % 8 == 4`,
/// a 4-byte tail).
fn words(off: usize, len: usize) -> impl Iterator<Item = (usize, usize)> {
    let end = off
        .checked_add(len)
        .filter(|_| off % 4 == 0 && len % 4 == 0);
    let end =
        end.unwrap_or_else(|| panic!("word copy of {len} bytes at {off:#x} is not 4-aligned"));
    let mut at = off;
    core::iter::from_fn(move || {
        let n = if at % 8 == 0 && end - at >= 8 { 8 } else { 4 };
        (at < end).then(|| {
            at += n;
            (at - n, n)
        })
    })
}

/// Copy `out.len()` bytes starting at slab offset `off` into `out`, one
/// atomic load per word (`Relaxed`).
#[inline]
pub fn copy_out<S: Slab + ?Sized>(slab: &S, off: usize, out: &mut [u8]) {
    for (at, n) in words(off, out.len()) {
        let b = &mut out[at - off..at - off + n];
        match n {
            8 => b.copy_from_slice(&slab.load_u64(at, Ordering::Relaxed).to_le_bytes()),
            _ => b.copy_from_slice(&slab.load_u32(at, Ordering::Relaxed).to_le_bytes()),
        }
    }
}

/// Copy `data` to slab offset `off`, one atomic store per word (`Relaxed`).
#[inline]
pub fn copy_in<S: SlabMut + ?Sized>(slab: &S, off: usize, data: &[u8]) {
    for (at, n) in words(off, data.len()) {
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(&data[at - off..at - off + n]);
        let v = u64::from_le_bytes(b);
        match n {
            8 => slab.store_u64(at, v, Ordering::Relaxed),
            _ => slab.store_u32(at, v as u32, Ordering::Relaxed),
        }
    }
}

/// Zero `len` bytes at slab offset `off`, one atomic store per word
/// (`Relaxed`).
#[inline]
pub fn zero<S: SlabMut + ?Sized>(slab: &S, off: usize, len: usize) {
    for (at, n) in words(off, len) {
        match n {
            8 => slab.store_u64(at, 0, Ordering::Relaxed),
            _ => slab.store_u32(at, 0, Ordering::Relaxed),
        }
    }
}

#[cfg(not(loom))]
#[cfg(test)]
mod tests {
    use super::*;
    use crate::nds::slab::HeapSlab;

    #[test]
    fn round_trips_at_every_4_aligned_shape() {
        round_trips(&HeapSlab::new(512));
        if cfg!(miri) {
            return; // mmap is not available under Miri
        }
        // The mapped backing's bulk path (one range check per copy).
        round_trips(&crate::nds::MappedSlab::anonymous().unwrap());
    }

    fn round_trips<S: SlabMut>(s: &S) {
        zero(s, 0, 512);
        for off in (0..64).step_by(4) {
            for len in (0..=84).step_by(4) {
                let data: Vec<u8> = (0..len).map(|i| (i * 7 + off + 1) as u8).collect();
                zero(s, 0, 512);
                copy_in(s, off, &data);
                let mut back = vec![0u8; len];
                copy_out(s, off, &mut back);
                assert_eq!(back, data, "off {off} len {len}");
                // Nothing outside [off, off + len) was touched.
                let mut all = vec![0u8; 512];
                copy_out(s, 0, &mut all);
                assert!(all[..off].iter().all(|&b| b == 0));
                assert!(all[off + len..].iter().all(|&b| b == 0));
                zero(s, off, len);
                copy_out(s, 0, &mut all);
                assert!(all.iter().all(|&b| b == 0));
            }
        }
    }

    #[test]
    fn misaligned_or_out_of_bounds_copy_is_refused() {
        let s = HeapSlab::new(64);
        let mut b = [0u8; 6];
        assert!(std::panic::catch_unwind(move || copy_out(&s, 0, &mut b)).is_err());
        if cfg!(miri) {
            return; // mmap is not available under Miri
        }
        let m = crate::nds::MappedSlab::anonymous().unwrap();
        let len = crate::nds::SLAB_SIZE;
        let mut big = vec![0u8; 16];
        assert!(std::panic::catch_unwind(|| {
            let mut b = [0u8; 16];
            copy_out(&m, len - 8, &mut b)
        })
        .is_err());
        assert!(std::panic::catch_unwind(|| copy_in(&m, len - 8, &[0u8; 16])).is_err());
        assert!(std::panic::catch_unwind(|| copy_in(&m, usize::MAX - 7, &[0u8; 16])).is_err());
        copy_out(&m, len - 16, &mut big);
    }
}
