//! The record hash protocol over word atomics (docs/abi.md §2.6-§2.8), made
//! torn-read-proof.
//!
//! ## What libnrt does, and why it is not enough
//!
//! The producer builds a record privately, stamps its FNV-1a-32 hash into the
//! 4-byte word at +0 and publishes with one `memcpy` ("hash word stored first,
//! then payload"). The reader `memcpy`s the record out and accepts it when the
//! hash matches the body. During an update in place a reader can copy the new
//! hash with an old body, or half of each; only the hash catches it, and a
//! 32-bit hash catches a mix only with high probability.
//!
//! ## Our protocol
//!
//! A record starts 8-aligned (0x4e0, 0x528 + 672 n, 0xad28), so its first
//! 8-byte word, **word 0**, holds the hash (low half) and the first 4 body
//! bytes. Word 0 works as the sequence word of a seqlock whose "writer
//! active" value has a zero hash:
//!
//! | step | writer ([`invalidate`], then [`stamp_and_publish`]) | reader ([`copy_once`]) |
//! |---|---|---|
//! | 1 | word 0 := 0 (Relaxed), then a Release fence | `first` := word 0 (Acquire); hash 0 → Unpublished |
//! | 2 | body words, Relaxed, in order | body words, Relaxed |
//! | 3 | word 0 := hash \| body[0..4] (Release) | Acquire fence, then `second` := word 0 |
//!
//! The reader accepts a copy only when `first == second`, its hash is not 0,
//! and the FNV-1a-32 of the copy (hash word as zero) equals that hash.
//!
//! Why a torn copy is never accepted from our writer:
//!
//! * **Old hash, new body.** If any body load saw a store from an update
//!   that started after `first` was published, that store follows the
//!   update's Release fence, which therefore synchronizes with the reader's
//!   Acquire fence; the update's zeroing of word 0 then happens-before
//!   `second`, so `second` is 0 or a later value, not `first`. Rejected
//!   without consulting the hash.
//! * **New hash, old or missing body.** `first` was read with Acquire from
//!   the Release store that ended the publish, so every body store of that
//!   version happens-before the copy: no load can return an older word.
//! * **A body mid-update whose hash happens to match.** Mid-update word 0's
//!   hash is 0, so `first` or `second` is 0 or differs: rejected before the
//!   hash is even computed.
//! * **ABA** (`first == second` although updates ran in between). That
//!   needs the writer to run at least one complete update that stores the
//!   exact same 64-bit word 0 again, i.e. the same hash and model id, while
//!   the reader is still copying. If the body is the same the copy is that
//!   body (not torn); if it differs, the torn mix must also hash to the
//!   stored value. This is the sequence-wrap case every seqlock with a finite
//!   sequence word has; the ABI has no spare bytes for a counter, so the FNV
//!   check is the last line, as in libnrt.
//!
//! Against a foreign writer that follows libnrt (hash first, then the body,
//! no zeroing), the stable-copy check cannot help and the FNV check is the
//! detector, exactly as in libnrt.
//!
//! Reads make at most two attempts with a pause between them (libnrt's
//! `usleep(200)`) and end with a typed verdict ([`Verdict`]); after two failed
//! attempts the caller gets the stale copy marked Torn, never as good.
//!
//! Mutants (`--cfg xunds_mutant=...`, killed by `loom-tests/tests/nds_record.rs`):
//! `record_plain_copy` makes [`copy_once`] an unordered copy (Relaxed hash
//! load, no fence), as a `memcpy` is; `record_hash_after_body` makes
//! [`invalidate`] a no-op, so an update writes the body under a live hash and
//! stores the new hash only after it.
#![forbid(unsafe_code)]

use core::sync::atomic::Ordering;

use crate::wire::nds::fnv::{self, RecordHasher};
use crate::wire::nds::{model, process, region};
use crate::wire::{read as le, WireError};

use super::slab::{Slab, SlabMut};
use super::words;

/// Attempts a record read makes (docs/abi.md §2.8: `attempt < 2`).
pub const READ_ATTEMPTS: usize = 2;
/// The pause between record read attempts (docs/abi.md §2.8: `usleep(200)`).
pub const READ_RETRY_US: u64 = 200;

/// Where one hashed record lives in a slab: an 8-aligned offset and a length
/// that is a multiple of 4 and at least 8.
///
/// # Examples
///
/// ```
/// use xunds::nds::RecordSpan;
///
/// let slot5 = RecordSpan::model(5).unwrap();
/// assert_eq!((slot5.off(), slot5.len()), (0x1248, 672)); // docs/abi.md §2.10
/// assert_eq!(RecordSpan::PROCESS_INFO.off(), 0x4e0);
/// assert!(RecordSpan::new(0x4e4, 64).is_none(), "not 8-aligned");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RecordSpan {
    off: usize,
    len: usize,
}

impl RecordSpan {
    /// A span at `off` of `len` bytes, or `None` when `off` is not 8-aligned
    /// or `len` is not a multiple of 4 of at least 8.
    pub const fn new(off: usize, len: usize) -> Option<RecordSpan> {
        if off % 8 == 0 && len % 4 == 0 && len >= 8 && off.checked_add(len).is_some() {
            Some(RecordSpan { off, len })
        } else {
            None
        }
    }

    /// `nds_process_info_internal` at 0x4e0, 64 bytes (docs/abi.md §2.7).
    pub const PROCESS_INFO: RecordSpan = RecordSpan {
        off: region::PROCESS_INFO_OFF,
        len: process::PROCESS_INFO_SIZE,
    };

    /// `nds_process_info_ext_internal` at 0xad28, 260 bytes (docs/abi.md §2.7).
    pub const PROCESS_INFO_EXT: RecordSpan = RecordSpan {
        off: region::PROCESS_INFO_EXT_OFF,
        len: process::PROCESS_INFO_EXT_SIZE,
    };

    /// Model slot `slot`'s record at 0x528 + 672 * slot (docs/abi.md §2.6).
    pub fn model(slot: usize) -> Result<RecordSpan, WireError> {
        let off = region::model_record_off(slot)?;
        Ok(RecordSpan {
            off,
            len: model::RECORD_SIZE,
        })
    }

    /// Byte offset of word 0 (the hash word).
    pub const fn off(&self) -> usize {
        self.off
    }

    /// Record length in bytes (at least 8: a span is never empty, so it has
    /// no `is_empty`).
    #[allow(clippy::len_without_is_empty)]
    pub const fn len(&self) -> usize {
        self.len
    }
}

// docs/abi.md §2.6/§2.7: every hashed record starts 8-aligned, so word 0 is one
// naturally aligned u64 holding the hash word (low half, little-endian); each
// is a valid span (what `RecordSpan::new` checks).
const _: () =
    assert!(RecordSpan::new(region::PROCESS_INFO_OFF, process::PROCESS_INFO_SIZE).is_some());
const _: () = assert!(region::MODEL_RECORDS_OFF % 8 == 0 && model::RECORD_SIZE % 8 == 0);
const _: () =
    assert!(
        RecordSpan::new(region::PROCESS_INFO_EXT_OFF, process::PROCESS_INFO_EXT_SIZE).is_some()
    );
const _: () = assert!(process::PROCESS_INFO_EXT_SIZE % 8 == 4); // a 4-byte tail word
const _: () = assert!(fnv::HASH_SIZE == 4);

/// The outcome of one copy attempt, before the hash is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// The hash word was 0: not published (or an update/delete is running).
    Unpublished,
    /// Word 0 changed while the body was copied: an update overlapped.
    Changed,
    /// Word 0 was non-zero and identical before and after the copy.
    Stable,
}

/// Why a record copy was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TornReason {
    /// Word 0 (hash and first body bytes) changed during the copy.
    Changed,
    /// The copy was stable but its hash does not match its body (a foreign
    /// writer's torn publish, or corruption).
    Mismatch {
        /// The hash word found.
        stored: u32,
        /// The FNV-1a-32 of the copied body.
        computed: u32,
    },
}

/// The verdict of a full record read (up to [`READ_ATTEMPTS`] attempts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// A consistent copy whose hash matches: the buffer holds it.
    Fresh,
    /// The last attempt saw a zero hash word.
    Unpublished,
    /// The last attempt was torn; the buffer holds that stale copy.
    Torn(TornReason),
}

/// Copy the record at `span` into `out` once (`out.len() == span.len()`),
/// and say whether the copy is stable. Does not check the hash.
///
/// # Panics
/// If `out.len() != span.len()` (a caller bug).
pub fn copy_once<S: Slab + ?Sized>(slab: &S, span: RecordSpan, out: &mut [u8]) -> Attempt {
    copy_once_hashed(slab, span, out).0
}

/// [`copy_once`], also returning the FNV-1a-32 of the copy (hash word as
/// zero; meaningful for a [`Attempt::Stable`] copy), folded word by word as
/// the words are loaded: the copy costs nothing next to FNV's multiply chain.
fn copy_once_hashed<S: Slab + ?Sized>(
    slab: &S,
    span: RecordSpan,
    out: &mut [u8],
) -> (Attempt, u32) {
    assert_eq!(out.len(), span.len, "record buffer length");
    #[cfg(not(xunds_mutant = "record_plain_copy"))]
    // Ordering: Acquire, partner: the Release store of word 0 that ends
    // `publish` (docs/abi.md §2.8): every body store of the version whose hash we
    // see happens-before the copy below.
    let first = slab.load_u64(span.off, Ordering::Acquire);
    #[cfg(xunds_mutant = "record_plain_copy")]
    let first = slab.load_u64(span.off, Ordering::Relaxed);
    out[..8].copy_from_slice(&first.to_le_bytes());
    if first as u32 == 0 {
        return (Attempt::Unpublished, 0);
    }
    // The body, one Relaxed load per word (the span is 8-aligned, its length
    // a multiple of 4: whole words, then at most one 4-byte tail word).
    let mut h = RecordHasher::new().word32((first >> 32) as u32);
    let (words8, tail) = out[8..].split_at_mut((span.len - 8) & !7);
    let mut at = span.off + 8;
    for w in words8.chunks_exact_mut(8) {
        let v = slab.load_u64(at, Ordering::Relaxed);
        w.copy_from_slice(&v.to_le_bytes());
        h = h.word64(v);
        at += 8;
    }
    if !tail.is_empty() {
        let v = slab.load_u32(at, Ordering::Relaxed);
        tail.copy_from_slice(&v.to_le_bytes());
        h = h.word32(v);
    }
    // Ordering: Acquire fence (docs/abi.md §2.8 read), partner: the Release fence in `invalidate`: if
    // any body load above returned a store made after an update started, the
    // update's zeroing of word 0 happens-before the re-load below.
    #[cfg(not(xunds_mutant = "record_plain_copy"))]
    slab.fence(Ordering::Acquire);
    let second = slab.load_u64(span.off, Ordering::Relaxed);
    if second == first {
        (Attempt::Stable, h.finish())
    } else {
        (Attempt::Changed, h.finish())
    }
}

/// Read the record at `span` into `out` following docs/abi.md §2.8: at most
/// [`READ_ATTEMPTS`] attempts, calling `pause` between them (libnrt's
/// `usleep(200)`). Only a stable copy whose hash matches is [`Verdict::Fresh`].
///
/// # Panics
/// If `out.len() != span.len()` (a caller bug).
pub fn read<S: Slab + ?Sized>(
    slab: &S,
    span: RecordSpan,
    out: &mut [u8],
    mut pause: impl FnMut(),
) -> Verdict {
    let mut verdict = Verdict::Unpublished;
    for attempt in 0..READ_ATTEMPTS {
        if attempt > 0 {
            pause();
        }
        verdict = match copy_once_hashed(slab, span, out) {
            (Attempt::Unpublished, _) => Verdict::Unpublished,
            (Attempt::Changed, _) => Verdict::Torn(TornReason::Changed),
            // The stored hash is the copy's own word 0 (non-zero: Stable);
            // `computed` is `fnv::record_hash(out)`, folded during the copy.
            (Attempt::Stable, computed) => match fnv::stored_hash(out) {
                stored if stored == computed => return Verdict::Fresh,
                stored => Verdict::Torn(TornReason::Mismatch { stored, computed }),
            },
        };
    }
    verdict
}

/// Whether the record at `span` carries a hash (word 0's low half): word 0
/// loaded whole, at the width its writer stores it (Rust's atomics allow
/// mixed sizes on the same bytes only between reads). A liveness hint, not
/// a verified read ([`copy_once`] is that).
pub fn hashed<S: Slab + ?Sized>(slab: &S, span: RecordSpan) -> bool {
    slab.load_u64(span.off, Ordering::Relaxed) as u32 != 0
}

/// Zero word 0 and fence, so no reader accepts a copy that overlaps the
/// stores that follow.
fn zero_word0<S: SlabMut + ?Sized>(slab: &S, span: RecordSpan) {
    slab.store_u64(span.off, 0, Ordering::Relaxed);
    // Ordering: Release fence (docs/abi.md §2.8 publish), partner: the Acquire fence in `copy_once`
    // before its re-load of word 0: a reader whose body loads see any store
    // after this fence re-loads 0 (or later) and rejects the copy.
    slab.fence(Ordering::Release);
}

/// Start rewriting a published record: its hash word becomes 0 (readers see
/// Unpublished) before any body word changes. Call before [`stamp_and_publish`] on a
/// record that may be live.
pub fn invalidate<S: SlabMut + ?Sized>(slab: &S, span: RecordSpan) {
    #[cfg(not(xunds_mutant = "record_hash_after_body"))]
    zero_word0(slab, span);
    #[cfg(xunds_mutant = "record_hash_after_body")]
    let _ = (slab, span);
}

/// Stamp and publish in one pass: store the body words of `staged`
/// (`staged.len() == span.len()`) at `span` (Relaxed), folding each into the
/// FNV-1a-32 record hash as it goes, then write the hash into `staged` at +0
/// and store word 0 with Release. Returns the hash. The copy runs in the
/// shadow of the hash's multiply chain (the slab's update window grows
/// from the copy to the hash, about half a microsecond for a model record).
/// The record must be invalidated (or never published) first.
///
/// # Panics
/// If `staged.len() != span.len()` (a caller bug).
pub fn stamp_and_publish<S: SlabMut + ?Sized>(
    slab: &S,
    span: RecordSpan,
    staged: &mut [u8],
) -> u32 {
    assert_eq!(staged.len(), span.len, "record buffer length");
    let (w0, body) = staged.split_at_mut(8);
    let mut h = RecordHasher::new().word32(le::<u32>(w0, 4));
    let (words8, tail) = body.split_at(body.len() & !7);
    let mut at = span.off + 8;
    for w in words8.chunks_exact(8) {
        let v = le::<u64>(w, 0);
        slab.store_u64(at, v, Ordering::Relaxed);
        h = h.word64(v);
        at += 8;
    }
    if !tail.is_empty() {
        let v = le::<u32>(tail, 0);
        slab.store_u32(at, v, Ordering::Relaxed);
        h = h.word32(v);
    }
    let hash = h.finish();
    w0[..4].copy_from_slice(&hash.to_le_bytes());
    // Ordering: Release, partner: the Acquire load of word 0 in `copy_once`
    // (docs/abi.md §2.8): a reader that sees this hash sees the whole body.
    slab.store_u64(span.off, le::<u64>(w0, 0), Ordering::Release);
    hash
}

/// Delete a record (docs/abi.md §2.6 `nds_delete_model_node_info`): zero the hash
/// word first (readers see Unpublished), then every other word.
pub fn erase<S: SlabMut + ?Sized>(slab: &S, span: RecordSpan) {
    zero_word0(slab, span);
    words::zero(slab, span.off + 8, span.len - 8);
}

#[cfg(not(loom))]
#[cfg(test)]
mod tests {
    use super::*;
    use crate::nds::slab::HeapSlab;

    fn stamped(len: usize, seed: u8) -> Vec<u8> {
        let mut b: Vec<u8> = (0..len)
            .map(|i| (i as u8).wrapping_mul(31) ^ seed)
            .collect();
        fnv::stamp(&mut b);
        b
    }

    #[test]
    fn spans_match_the_seed() {
        assert_eq!(RecordSpan::PROCESS_INFO.off(), 0x4e0);
        assert_eq!(RecordSpan::PROCESS_INFO.len(), 64);
        assert_eq!(RecordSpan::PROCESS_INFO_EXT.off(), 0xad28);
        assert_eq!(RecordSpan::PROCESS_INFO_EXT.len(), 260);
        assert_eq!(RecordSpan::model(5).unwrap().off(), 0x1248);
        assert!(RecordSpan::model(64).is_err());
        assert!(RecordSpan::new(4, 8).is_none());
        assert!(RecordSpan::new(8, 6).is_none());
        assert!(RecordSpan::new(8, 4).is_none());
        assert!(RecordSpan::new(usize::MAX - 7, 8).is_none());
    }

    /// docs/abi.md §2.9: a fresh record is read on the first attempt, with no
    /// pause at all. Mutant: `attempt > 0` -> `attempt == 0`.
    #[test]
    fn a_fresh_record_is_read_without_any_pause() {
        let slab = HeapSlab::zeroed();
        let span = RecordSpan::model(3).unwrap();
        stamp_and_publish(&slab, span, &mut stamped(span.len(), 9));
        let mut out = vec![0u8; span.len()];
        let mut pauses = 0;
        assert_eq!(read(&slab, span, &mut out, || pauses += 1), Verdict::Fresh);
        assert_eq!(pauses, 0);
    }

    #[test]
    fn publish_read_update_erase() {
        let slab = HeapSlab::zeroed();
        for span in [
            RecordSpan::PROCESS_INFO,
            RecordSpan::PROCESS_INFO_EXT,
            RecordSpan::model(63).unwrap(),
        ] {
            let mut out = vec![0u8; span.len()];
            let mut pauses = 0;
            assert_eq!(
                read(&slab, span, &mut out, || pauses += 1),
                Verdict::Unpublished
            );
            assert_eq!(pauses, 1, "one retry after an unpublished attempt");
            let mut a = stamped(span.len(), 1);
            invalidate(&slab, span);
            stamp_and_publish(&slab, span, &mut a);
            assert_eq!(read(&slab, span, &mut out, || {}), Verdict::Fresh);
            assert_eq!(out, a);
            let mut b = stamped(span.len(), 2);
            invalidate(&slab, span);
            assert_eq!(copy_once(&slab, span, &mut out), Attempt::Unpublished);
            stamp_and_publish(&slab, span, &mut b);
            assert_eq!(read(&slab, span, &mut out, || {}), Verdict::Fresh);
            assert_eq!(out, b);
            erase(&slab, span);
            let mut all = vec![0u8; span.len()];
            words::copy_out(&slab, span.off(), &mut all);
            assert!(all.iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn a_body_without_its_hash_is_torn_with_the_stale_copy() {
        // A foreign writer's torn publish: hash of A, body of B.
        let slab = HeapSlab::zeroed();
        let span = RecordSpan::model(0).unwrap();
        let a = stamped(span.len(), 1);
        let mut b = stamped(span.len(), 2);
        b[..4].copy_from_slice(&a[..4]);
        b[4..8].copy_from_slice(&a[4..8]);
        words::copy_in(&slab, span.off(), &b);
        let mut out = vec![0u8; span.len()];
        let mut pauses = 0;
        let v = read(&slab, span, &mut out, || pauses += 1);
        assert!(matches!(
            v,
            Verdict::Torn(TornReason::Mismatch { stored, .. }) if stored == fnv::stored_hash(&a)
        ));
        assert_eq!(pauses, 1);
        assert_eq!(out, b, "the stale copy is handed back, marked torn");
    }
}
