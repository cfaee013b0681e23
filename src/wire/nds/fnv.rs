//! The record hash (docs/abi.md §2.8): canonical 32-bit FNV-1a (`nds_hash`
//! @0x5080c0) over a whole record with its 4-byte hash word at +0 treated as
//! zero, stored little-endian at +0.
//!
//! Process-info (64 B), process-info-ext (260 B) and the model records
//! (672 B) carry it; the counter arrays and the header do not. A stored hash of
//! 0 means "not published" (the kernel's memset). These are the pure byte
//! functions; the publish/read retry protocol lives in [`crate::nds`].

/// FNV-1a 32-bit offset basis (`mov $0x811c9dc5,%eax`).
pub const FNV_BASIS: u32 = 0x811c_9dc5;
/// FNV 32-bit prime (`imul $0x1000193`).
pub const FNV_PRIME: u32 = 0x0100_0193;
/// Size of the hash word at record +0.
pub const HASH_SIZE: usize = 4;

/// Fold `bytes` into the FNV-1a state `h`.
const fn fold(mut h: u32, bytes: &[u8]) -> u32 {
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u32;
        h = h.wrapping_mul(FNV_PRIME);
        i += 1;
    }
    h
}

/// The record hash computed incrementally, in record order, one word at a
/// time (the hash word at +0 folded as zero): what [`record_hash`] gives for
/// the same bytes. The slab code folds each word as it copies it, so the
/// copy runs in the shadow of FNV's multiply chain instead of after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHasher(u32);

impl RecordHasher {
    /// A record's hash state after its 4-byte hash word (read as zero).
    pub const fn new() -> RecordHasher {
        RecordHasher(fold(FNV_BASIS, &[0u8; HASH_SIZE]))
    }

    /// Fold the 4 bytes of the little-endian word `w`.
    #[inline(always)]
    pub const fn word32(self, w: u32) -> RecordHasher {
        RecordHasher(fold(self.0, &w.to_le_bytes()))
    }

    /// Fold the 8 bytes of the little-endian word `w`.
    #[inline(always)]
    pub const fn word64(self, w: u64) -> RecordHasher {
        RecordHasher(fold(self.0, &w.to_le_bytes()))
    }

    /// The hash so far.
    pub const fn finish(self) -> u32 {
        self.0
    }
}

impl Default for RecordHasher {
    fn default() -> Self {
        RecordHasher::new()
    }
}

/// FNV-1a-32 of `bytes`.
///
/// # Examples
///
/// ```
/// use xunds::wire::nds::fnv::fnv1a32;
///
/// assert_eq!(fnv1a32(b""), 0x811c_9dc5); // the offset basis
/// assert_eq!(fnv1a32(b"foobar"), 0xbf9c_f968);
/// ```
pub const fn fnv1a32(bytes: &[u8]) -> u32 {
    fold(FNV_BASIS, bytes)
}

/// The record hash: FNV-1a-32 of `record` with its first 4 bytes read as
/// zero, without copying the record. (A slice shorter than 4 bytes is hashed
/// as that many zero bytes.)
pub fn record_hash(record: &[u8]) -> u32 {
    let head = record.len().min(HASH_SIZE);
    let h = fold(FNV_BASIS, &[0u8; HASH_SIZE][..head]);
    fold(h, &record[head..])
}

/// The hash word stored at record +0 (0 when the slice is shorter than 4 bytes).
pub fn stored_hash(record: &[u8]) -> u32 {
    match record.first_chunk::<HASH_SIZE>() {
        Some(w) => u32::from_le_bytes(*w),
        None => 0,
    }
}

/// Stamp `record` as the producer does: zero the hash word, hash the whole
/// record, store the hash little-endian at +0. Returns the hash. A slice
/// shorter than 4 bytes has no hash word and is left unchanged.
pub fn stamp(record: &mut [u8]) -> u32 {
    let h = record_hash(record);
    if let Some(w) = record.first_chunk_mut::<HASH_SIZE>() {
        *w = h.to_le_bytes();
    }
    h
}

/// An encoded record with its hash stamped ([`stamp`]; the `hash` field
/// it was encoded with is ignored), as `nds_commit_model_node_info` builds
/// its staging record: `fnv::stamped(model.encode())`.
pub fn stamped<const N: usize>(mut record: [u8; N]) -> [u8; N] {
    stamp(&mut record);
    record
}

/// A reader's verdict on a record copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HashState {
    /// The stored hash is 0: the producer has not published this record.
    Unpublished,
    /// The stored hash matches the body: a consistent snapshot.
    Valid,
    /// The stored hash does not match: a torn read (or corruption).
    Mismatch {
        /// The hash word at +0.
        stored: u32,
        /// The hash of the body.
        computed: u32,
    },
}

/// Verify a private copy of a record (`nds_read_generic_obj`, docs/abi.md §2.8).
///
/// # Examples
///
/// ```
/// use xunds::wire::nds::fnv::{record_hash, stamp, verify, HashState};
///
/// let mut record = [7u8; 64];
/// assert_eq!(verify(&[0u8; 64]), HashState::Unpublished); // hash word 0
/// let h = stamp(&mut record); // what the producer does before publishing
/// assert_eq!(h, record_hash(&record)); // the hash word reads as zero
/// assert_eq!(verify(&record), HashState::Valid);
/// record[10] ^= 1; // a torn copy
/// assert!(matches!(verify(&record), HashState::Mismatch { stored, .. } if stored == h));
/// ```
pub fn verify(record: &[u8]) -> HashState {
    let stored = stored_hash(record);
    if stored == 0 {
        return HashState::Unpublished;
    }
    let computed = record_hash(record);
    if computed == stored {
        HashState::Valid
    } else {
        HashState::Mismatch { stored, computed }
    }
}

// The standard FNV-1a-32 test vectors (Fowler/Noll/Vo reference).
const _: () = assert!(fnv1a32(b"") == 0x811c_9dc5);
const _: () = assert!(fnv1a32(b"a") == 0xe40c_292c);
const _: () = assert!(fnv1a32(b"foobar") == 0xbf9c_f968);

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time hasher agrees with `record_hash` on records of the
    /// three docs/abi.md §2 sizes (docs/abi.md §2.6-§2.8: 64, 260, 672 bytes) with random bytes.
    #[test]
    fn record_hasher_matches_record_hash() {
        let mut rng = crate::prng::SplitMix64::new(4);
        for len in [8usize, 64, 260, 672] {
            for _ in 0..200 {
                let b: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
                let mut h =
                    RecordHasher::new().word32(u32::from_le_bytes([b[4], b[5], b[6], b[7]]));
                let mut i = 8;
                while i + 8 <= len {
                    h = h.word64(u64::from_le_bytes(b[i..i + 8].try_into().unwrap()));
                    i += 8;
                }
                if i < len {
                    h = h.word32(u32::from_le_bytes(b[i..i + 4].try_into().unwrap()));
                }
                assert_eq!(h.finish(), record_hash(&b), "len {len}");
            }
        }
    }

    #[test]
    fn standard_vectors() {
        assert_eq!(fnv1a32(b""), 0x811c9dc5);
        assert_eq!(fnv1a32(b"a"), 0xe40c292c);
        assert_eq!(fnv1a32(b"foobar"), 0xbf9cf968);
    }

    #[test]
    fn record_hash_ignores_the_hash_word() {
        let mut r = [7u8; 64];
        let h = record_hash(&r);
        let mut z = r;
        z[..4].fill(0);
        assert_eq!(h, fnv1a32(&z));
        assert_eq!(stamp(&mut r), h);
        assert_eq!(stored_hash(&r), h);
        assert_eq!(verify(&r), HashState::Valid);
        r[10] ^= 1;
        assert!(matches!(verify(&r), HashState::Mismatch { stored, .. } if stored == h));
    }

    #[test]
    fn short_and_unpublished() {
        assert_eq!(verify(&[]), HashState::Unpublished);
        assert_eq!(verify(&[0u8; 672]), HashState::Unpublished);
        // docs/abi.md §2.8: the hash of an all-zero record is not zero, so a published
        // record never looks unpublished.
        assert_ne!(record_hash(&[0u8; 672]), 0);
        assert_ne!(record_hash(&[0u8; 64]), 0);
        assert_ne!(record_hash(&[0u8; 260]), 0);
        let mut s = [1u8, 2];
        assert_eq!(stamp(&mut s), fnv1a32(&[0, 0]));
        assert_eq!(s, [1, 2]);
    }
}
