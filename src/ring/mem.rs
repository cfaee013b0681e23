//! Where a ring lives: the byte-exact `xu_queue_t` header (docs/abi.md §1.2)
//! and the array of 32-byte `xuq_exec_info_t` slots right after it (§1.3),
//! in one block of `sync::word::Words` (the crate's one mapped-word type),
//! whoever owns the memory.
//!
//! One type for every kind of memory: a heap block ([`RingMem::owned`],
//! loom's atomics under loom), a mapped region another process may share
//! ([`RingMem::mapped`]), a `static` ([`StaticQueue`](super::StaticQueue)),
//! or any memory under [`RingMem::init_raw`]'s contract. The memory is
//! validated once, when the ring is laid into it; every access after that is
//! an atomic word at a checked offset (the header's at compile time), except
//! the slot body a submit writes (`Words::write_unshared`, ordered by the
//! protocol).

#[cfg(feature = "std")]
use crate::hal::mem::Region;
use crate::sync::atomic::Ordering;
use crate::sync::word::{Span, Words};
use crate::wire::exec_slot;
use crate::wire::seq_id::XuId;
use crate::wire::xu_queue::off::{EXEC_HEAD, SCHEDULED_HEAD, SCHEDULED_TAIL};
use crate::wire::xu_queue::{self, CURSOR_LIMIT};

use super::error::InitError;

/// Bytes a ring of `capacity` slots needs: the header, then the slots.
pub const fn mapped_len(capacity: u64) -> usize {
    xu_queue::SIZE + capacity as usize * exec_slot::SIZE
}

/// One slot's 32 bytes, bounds-checked once ([`RingMem::slot`]).
pub(crate) type Slot<'a> = Span<'a, { exec_slot::SIZE }>;

/// The header, for one operation's cursor accesses ([`RingMem::header`]):
/// its offsets are checked at compile time, and its base stays in a
/// register across the operation.
pub(crate) type Header<'a> = Span<'a, { xu_queue::SIZE }>;

/// A ring's header and slots, laid into memory once (every constructor
/// checks the capacity, the start cursor and the memory, then writes the
/// header and zeroes the slots).
///
/// # Examples
///
/// A ring in memory the caller provides (a `static`, a device window,
/// shared memory): the `no_std` way, under [`RingMem::init_raw`]'s contract.
///
/// ```
/// use xunds::ring::{mapped_len, InitError, RingMem, XuQueue};
/// use xunds::wire::seq_id::XuId;
/// use xunds::NrtStatus;
///
/// #[repr(C, align(64))]
/// struct Block([u64; mapped_len(4) / 8]);
/// let mut block = Block([0; mapped_len(4) / 8]);
/// let (base, len) = (block.0.as_mut_ptr().cast::<u8>(), mapped_len(4));
/// // SAFETY: `block` outlives the queue and is touched only through it.
/// let mem = unsafe { RingMem::init_raw(base, len, XuId::new(0, 0, 1), 4, 1) }?;
/// assert_eq!(mem.capacity(), 4);
/// let mut queue = XuQueue::<u64>::new(mem);
/// let (mut producer, mut worker) = queue.split();
/// producer.submit(5, None).unwrap();
/// producer.trigger_next().unwrap();
/// assert_eq!(worker.pop(NrtStatus::SUCCESS).unwrap().item, 5);
/// // Too short for 8 slots: refused before anything is written.
/// // SAFETY: refused before any access.
/// let short = unsafe { RingMem::init_raw(base, len, XuId::new(0, 0, 1), 8, 1) };
/// assert!(matches!(short, Err(InitError::Misplaced { .. })));
/// # Ok::<(), InitError>(())
/// ```
#[derive(Debug)]
pub struct RingMem {
    words: Words<{ xu_queue::SIZE }>,
    cap: u64,
    xu: XuId,
    /// Keeps the mapping alive when built from one.
    #[cfg(feature = "std")]
    region: Option<Region>,
}

impl RingMem {
    /// A ring of `capacity` slots on the heap (a 64-byte aligned block, the
    /// mapped layout), cursors at `start`.
    #[cfg(feature = "std")]
    pub fn owned(xu: XuId, capacity: u64, start: u64) -> Result<RingMem, InitError> {
        check_config(capacity, start)?;
        Ok(Self::lay(
            Words::heap(mapped_len(capacity)),
            xu,
            capacity,
            start,
        ))
    }

    /// Lay a fresh ring into `region`: header fields `xu_id`, `buffer`,
    /// `capacity` and the three cursors (= `start`) written, slots zeroed,
    /// header padding untouched. The region must be writable, 64-byte
    /// aligned and at least [`mapped_len`]`(capacity)` bytes.
    ///
    /// # Safety
    /// While the ring lives nothing but it writes the first
    /// `mapped_len(capacity)` bytes of the region, and nothing reads them
    /// concurrently with a submit except through 8-byte atomics (a submit
    /// writes the slot body with plain stores on x86_64).
    #[cfg(feature = "std")]
    pub unsafe fn mapped(
        region: Region,
        xu: XuId,
        capacity: u64,
        start: u64,
    ) -> Result<RingMem, InitError> {
        check_config(capacity, start)?;
        if !region.is_writable() {
            return Err(InitError::ReadOnly);
        }
        let len = mapped_len(capacity);
        let base = region.ptr_at(0, len, xu_queue::CACHE_LINE)?;
        // SAFETY: `base..base + len` is inside the writable mapping (checked
        // just above), which the returned value keeps alive (`region`); our
        // caller's contract is `init_raw`'s.
        let mut mem = unsafe { Self::init_raw(base, len, xu, capacity, start) }?;
        mem.region = Some(region);
        Ok(mem)
    }

    /// Lay a fresh ring into the `len` bytes at `base`, as
    /// [`mapped`](Self::mapped) does into a region: the `no_std` way to put
    /// a ring in memory the embedder provides (a device window, shared
    /// memory). Refuses a bad capacity or start, a null or not 64-byte
    /// aligned `base`, and `len < mapped_len(capacity)`.
    ///
    /// # Safety
    /// `Words::from_raw`'s, for the first `mapped_len(capacity)` bytes at
    /// `base`, while the ring lives: valid, written by nothing but this
    /// ring, read concurrently with a submit only through 8-byte atomics;
    /// no `&`/`&mut` to them exists.
    pub unsafe fn init_raw(
        base: *mut u8,
        len: usize,
        xu: XuId,
        capacity: u64,
        start: u64,
    ) -> Result<RingMem, InitError> {
        check_config(capacity, start)?;
        let need = mapped_len(capacity);
        let refuse = InitError::Misplaced {
            addr: base as usize,
            len,
            need,
        };
        if base as usize % xu_queue::CACHE_LINE != 0 || len < need {
            return Err(refuse);
        }
        // SAFETY: our caller's contract, for the `need` bytes we use.
        let words = unsafe { Words::from_raw(base, need) }.ok_or(refuse)?;
        Ok(Self::lay(words, xu, capacity, start))
    }

    /// Write the header's fields and zero the slots (calloc semantics).
    fn lay(words: Words<{ xu_queue::SIZE }>, xu: XuId, cap: u64, start: u64) -> RingMem {
        let r = Ordering::Relaxed;
        // xu_id is the low 16 bits of the first header word (little-endian
        // ABI); the other 6 bytes are padding, kept.
        let w0 = words.load_u64(xu_queue::off::XU_ID, r);
        words.store_u64(xu_queue::off::XU_ID, (w0 & !0xffff) | u64::from(xu.0), r);
        let slots = words.addr() + xu_queue::SIZE;
        words.store_u64(xu_queue::off::BUFFER, slots as u64, r);
        words.store_u64(xu_queue::off::CAPACITY, cap, r);
        for off in (xu_queue::SIZE..mapped_len(cap)).step_by(8) {
            words.store_u64(off, 0, r);
        }
        for off in [EXEC_HEAD, SCHEDULED_HEAD, SCHEDULED_TAIL] {
            words.store_u64(off, start, r);
        }
        RingMem {
            words,
            cap,
            xu,
            #[cfg(feature = "std")]
            region: None,
        }
    }

    /// Number of slots (`xu_queue_t.capacity`).
    #[inline(always)]
    pub fn capacity(&self) -> u64 {
        self.cap
    }

    /// The XU written in the header.
    pub fn xu(&self) -> XuId {
        self.xu
    }

    /// The region holding the ring (`None` for other memory).
    #[cfg(feature = "std")]
    pub fn region(&self) -> Option<&Region> {
        self.region.as_ref()
    }

    /// The header (no check at run time: every view is at least its size).
    #[inline(always)]
    pub(crate) fn header(&self) -> Header<'_> {
        match self.words.span(0) {
            Some(h) => h,
            None => unreachable!("a ring's memory holds its header"),
        }
    }

    /// Load the cursor at `off` with `o`.
    #[inline(always)]
    pub(crate) fn load(&self, off: usize, o: Ordering) -> u64 {
        self.header().load_u64(off, o)
    }

    /// Store `v` into the cursor at `off` with `o` (its one writer).
    #[inline(always)]
    pub(crate) fn store(&self, off: usize, v: u64, o: Ordering) {
        self.header().store_u64(off, v, o)
    }

    /// The slot at index `idx` (`< capacity`).
    #[inline(always)]
    pub(crate) fn slot(&self, idx: u64) -> Slot<'_> {
        let off = xu_queue::SIZE + idx as usize * exec_slot::SIZE;
        if idx < self.cap {
            // SAFETY: `lay` is given exactly `mapped_len(cap)` bytes (every
            // constructor), so a slot below `cap` lies inside. Said here, the
            // span's bounds check folds away where the caller's index is
            // known to be below `cap` (`XuQueue::idx`).
            unsafe { core::hint::assert_unchecked(off <= self.words.len() - exec_slot::SIZE) };
        }
        match self.words.span(off) {
            Some(s) => s,
            None => unreachable!("`lay` sized the memory for `capacity` slots"),
        }
    }

    /// The ABI image: the header and the slots, word by word (atomically).
    #[cfg(feature = "std")]
    pub(crate) fn snapshot(&self) -> Vec<u8> {
        let mut out = vec![0u8; mapped_len(self.cap)];
        for (i, w) in out.chunks_exact_mut(8).enumerate() {
            w.copy_from_slice(&self.words.load_u64(i * 8, Ordering::Relaxed).to_le_bytes());
        }
        out
    }
}

/// Check a capacity / start pair.
pub(crate) fn check_config(capacity: u64, start: u64) -> Result<(), InitError> {
    if capacity == 0 || capacity > (1 << 32) {
        return Err(InitError::BadCapacity(capacity));
    }
    if start == 0 || start >= CURSOR_LIMIT {
        return Err(InitError::BadStart(start));
    }
    Ok(())
}

/// The 8 bytes at slot +0x10 as one native word: `mark_comp_efd` (4 bytes
/// LE), `efd_from_pool` (1 byte), then 3 padding bytes written as the zeros
/// they always hold (docs/abi.md §1.3), so one store gives the image two
/// field stores would.
#[inline(always)]
pub(crate) fn handle_word(efd: i32, from_pool: bool) -> u64 {
    u64::from_le((efd as u32 as u64) | (u64::from(from_pool) << 32))
}

/// The inverse of [`handle_word`].
#[inline(always)]
pub(crate) fn handle_fields(w: u64) -> (i32, bool) {
    let w = u64::from_le(w);
    (w as u32 as i32, (w >> 32) as u8 != 0)
}

const _: () = assert!(exec_slot::off::EFD_FROM_POOL == exec_slot::off::MARK_COMP_EFD + 4);

/// Zeroed, 64-byte-aligned memory for a ring of `N` slots, to put in a
/// `static` (the header and slots are plain words, only ever reached
/// through a [`RingMem`]).
#[repr(C, align(64))]
pub(crate) struct StaticBlock<const N: usize> {
    header: [u64; xu_queue::SIZE / 8],
    slots: [[u64; exec_slot::SIZE / 8]; N],
}

impl<const N: usize> StaticBlock<N> {
    /// The block is exactly the header and `N` slots.
    pub(crate) const EXACT: () =
        assert!(core::mem::size_of::<StaticBlock<N>>() == mapped_len(N as u64));

    pub(crate) const ZEROED: Self = StaticBlock {
        header: [0; xu_queue::SIZE / 8],
        slots: [[0; exec_slot::SIZE / 8]; N],
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mapped ring is the 256-byte header then 32 bytes per slot
    /// (docs/abi.md §1.2). Mutant: `mapped_len`'s `+` -> `*`.
    #[test]
    fn mapped_len_is_header_plus_slots() {
        assert_eq!(mapped_len(1), 256 + 32);
        assert_eq!(mapped_len(4), 256 + 4 * 32);
        assert_eq!(mapped_len(32), 1280);
    }

    /// The heap, a region and raw caller memory get the same image (only
    /// `buffer`, an address, differs), a non-zero XU included; raw memory
    /// that is null, not 64-byte aligned or short is refused; a region
    /// kept by the ring is the one given.
    #[test]
    fn every_memory_gets_the_same_image() {
        use crate::hal::mem::Mapping;
        #[repr(C, align(64))]
        struct Mem([u64; mapped_len(4) / 8]);
        let xu = XuId::new(1, 2, 3);
        let mut mem = Mem([0; mapped_len(4) / 8]);
        let base = mem.0.as_mut_ptr().cast::<u8>();
        // SAFETY: `mem` outlives `raw` (dropped first, below) and is touched
        // only through it meanwhile.
        let raw = unsafe { RingMem::init_raw(base, mapped_len(4), xu, 4, 9) }.unwrap();
        let region = Mapping::anonymous(mapped_len(4)).unwrap().into_region();
        let region_base = region.ptr_at(0, mapped_len(4), 64).unwrap();
        // SAFETY: a fresh anonymous mapping only this ring touches.
        let mapped = unsafe { RingMem::mapped(region, xu, 4, 9) }.unwrap();
        let kept = mapped.region().expect("the ring keeps its region");
        assert_eq!(kept.ptr_at(0, mapped_len(4), 64).unwrap(), region_base);
        assert!(raw.region().is_none());
        let owned = RingMem::owned(xu, 4, 9).unwrap();
        let mut imgs = [raw.snapshot(), mapped.snapshot(), owned.snapshot()];
        assert_eq!(imgs[0].len(), mapped_len(4));
        assert_eq!(&imgs[2][..2], &xu.0.to_le_bytes(), "xu_id at +0");
        for img in &mut imgs {
            img[xu_queue::off::BUFFER..xu_queue::off::BUFFER + 8].fill(0);
        }
        assert_eq!(imgs[0], imgs[1]);
        assert_eq!(imgs[0], imgs[2]);
        assert_eq!(owned.xu(), xu);
        drop(raw);
        for (p, len) in [
            (core::ptr::null_mut(), mapped_len(4)),
            (base.wrapping_add(8), mapped_len(3)),
            (base, mapped_len(4) - 1),
        ] {
            // SAFETY: refused before any access (the test's point).
            let r = unsafe { RingMem::init_raw(p, len, xu, 4, 1) };
            assert!(matches!(r, Err(InitError::Misplaced { .. })), "{p:?} {len}");
        }
    }

    /// The capacity and start bounds exactly: every capacity from 1 to 2^32
    /// (xunds' bound) and every start from 1 (cursors start at 1) below
    /// `CURSOR_LIMIT` (docs/abi.md §1.2), nothing else.
    #[test]
    fn check_config_takes_exactly_its_bounds() {
        let limit = CURSOR_LIMIT;
        for (capacity, start, ok) in [
            (1, 1, true),
            (1 << 32, 1, true),
            ((1 << 32) - 1, limit - 1, true),
            (0, 1, false),
            ((1 << 32) + 1, 1, false),
            (u64::MAX, 1, false),
            (8, 0, false),
            (8, limit, false),
        ] {
            let r = check_config(capacity, start);
            assert_eq!(r.is_ok(), ok, "capacity {capacity}, start {start}: {r:?}");
            if !ok {
                let want = if capacity == 0 || capacity > 1 << 32 {
                    InitError::BadCapacity(capacity)
                } else {
                    InitError::BadStart(start)
                };
                assert_eq!(r, Err(want));
            }
        }
    }
}
