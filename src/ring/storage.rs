//! Where the ring's cursors and slots live.
//!
//! The protocol in [`super::queue`] is generic over a [`Storage`]:
//!
//! - [`OwnedStorage`] (`std`): heap atomics from `crate::sync`, each cursor on its own
//!   64-byte line. Loom sees these under `--cfg loom`; unit tests and the
//!   deterministic runner use them too. `OwnedStorage<true>` (`CStyleStorage`)
//!   is the same ring with the C original's `LOCK XADD` (SeqCst `fetch_add`) on
//!   every cursor move and SeqCst cursor loads, kept for the comparison
//!   benchmark only.
//! - [`MappedStorage`]: the byte-exact 256-byte `xu_queue_t` header
//!   (docs/abi.md §1.2) followed by the array of 32-byte `xuq_exec_info_t` slots
//!   (docs/abi.md §1.3) inside a `Region` (`std`), or in memory the embedder
//!   provides: a [`StaticStorage`], or a pointer under
//!   [`MappedStorage::init_raw`]'s contract (the `no_std` core). Raw pointers
//!   are validated once at construction; every access is a `core` atomic created with `from_ptr`,
//!   except the body a submit writes on x86_64 (two 16-byte volatile stores,
//!   [`SlotAccess::set_body`], ordered against every other access by the
//!   protocol).
//!   Loom atomics never live here.
//!
//! The trait is sealed: the queue trusts the words a storage hands back (a
//! slot's `exec_info` word becomes an owned payload again at pop), so only the
//! two storages in this module may implement it.

use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::sync::atomic::AtomicBool;

#[cfg(feature = "std")]
use crate::hal::mem::Region;
#[cfg(feature = "std")]
use crate::sync::atomic::AtomicU64;
use crate::sync::atomic::Ordering;
use crate::wire::exec_slot;
use crate::wire::seq_id::XuId;
use crate::wire::xu_queue;

use super::RingError;

/// One of the three `xu_queue_t` cursors (docs/abi.md §1.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cursor {
    /// `exec_head` (+0x40): written by the worker only.
    ExecHead,
    /// `scheduled_head` (+0x80): written by the producer only (trigger).
    ScheduledHead,
    /// `scheduled_tail` (+0xC0): written by the producer only (submit).
    ScheduledTail,
}

impl Cursor {
    /// The cursor's byte offset in `xu_queue_t`.
    pub const fn offset(self) -> usize {
        match self {
            Cursor::ExecHead => xu_queue::off::EXEC_HEAD,
            Cursor::ScheduledHead => xu_queue::off::SCHEDULED_HEAD,
            Cursor::ScheduledTail => xu_queue::off::SCHEDULED_TAIL,
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// Typed access to the five fields of one 32-byte slot (docs/abi.md §1.3);
/// `mark_comp_efd` and `efd_from_pool` go together as one 8-byte word.
///
/// All slot fields are accessed with the ordering the caller passes; the
/// queue uses `Relaxed` everywhere and orders the body through the cursors
/// (docs/abi.md §1.9) and `mark_comp_efd`/`efd_from_pool` through the mark-completion lock
/// (docs/abi.md §1.3).
pub trait SlotAccess {
    /// `seq_id` (+0x00).
    fn seq_id(&self, o: Ordering) -> u64;
    /// Store `seq_id`.
    fn set_seq_id(&self, v: u64, o: Ordering);
    /// `exec_status` (+0x08): the status cell's address.
    fn exec_status(&self, o: Ordering) -> u64;
    /// Store `exec_status`.
    fn set_exec_status(&self, v: u64, o: Ordering);
    /// `mark_comp_efd` (+0x10) and `efd_from_pool` (+0x14), read together
    /// (one 8-byte load of +0x10..+0x18).
    fn handle(&self, o: Ordering) -> (i32, bool);
    /// Store `mark_comp_efd` and `efd_from_pool` together: one 8-byte store
    /// of +0x10..+0x18 whose 3 padding bytes (+0x15..+0x17) are written as
    /// the zeros they always hold (the slots are zeroed at init and nothing
    /// else writes the hole), so the ABI image is the one two field stores
    /// give.
    fn set_handle(&self, efd: i32, from_pool: bool, o: Ordering);
    /// `mark_comp_efd` alone.
    #[inline(always)]
    fn efd(&self, o: Ordering) -> i32 {
        self.handle(o).0
    }
    /// `exec_info` (+0x18): the work item's address.
    fn exec_info(&self, o: Ordering) -> u64;
    /// Store `exec_info`.
    fn set_exec_info(&self, v: u64, o: Ordering);

    /// Write the whole body a submit writes (docs/abi.md §1.9 producer): `seq_id`,
    /// `exec_status`, `mark_comp_efd` / `efd_from_pool` and `exec_info`,
    /// unordered among themselves (the Release on `scheduled_tail` that
    /// follows publishes them).
    ///
    /// Four Relaxed atomic stores by default, and always under loom. The
    /// owned and mapped slots override it on x86_64 with two 16-byte
    /// volatile stores (`write_body_wide`): every store a producer queues
    /// waits, in order, behind the one store to a line the worker holds, so
    /// fewer stores per item is what lets the producer run ahead. The queue
    /// meets the safety condition below by its protocol: the worker reads a
    /// body only after its Acquire of the cursor published after it, the
    /// previous occupant was captured before the `exec_head` Release the
    /// producer acquired before reusing the slot, waiters touch only slots
    /// whose body they acquired through `scheduled_tail` and only under the
    /// lock while the slot cannot be reused, and
    /// [`crate::ring::XuQueue::snapshot`] is `unsafe` with the same
    /// condition (docs/design.md, "The slot body in two stores").
    ///
    /// # Safety
    /// Every other access to this slot's bytes, on any thread, happens
    /// before this call or after it (in the memory model's sense: through a
    /// Release/Acquire edge, a lock, a join), never concurrently: on x86_64
    /// the stores are plain, and a concurrent access would be a data race.
    #[inline(always)]
    unsafe fn set_body(
        &self,
        seq_id: u64,
        exec_status: u64,
        efd: i32,
        from_pool: bool,
        exec_info: u64,
    ) {
        self.set_seq_id(seq_id, Ordering::Relaxed);
        self.set_exec_status(exec_status, Ordering::Relaxed);
        self.set_exec_info(exec_info, Ordering::Relaxed);
        self.set_handle(efd, from_pool, Ordering::Relaxed);
    }
}

/// The slot body (`seq_id`, `exec_status`, the handle word, `exec_info`:
/// ABI order) as two 16-byte volatile stores at `p`.
///
/// # Safety
/// `p` is valid for writes of 32 bytes and 16-byte aligned, and no other
/// thread accesses those bytes until an ordering edge that follows this
/// write (the protocol's cursor Release/Acquire; see
/// [`SlotAccess::set_body`]). Needs SSE2 (the x86_64 baseline; the
/// soft-float `x86_64-unknown-none` lacks it and keeps the atomic stores).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2", not(loom)))]
#[inline(always)]
unsafe fn write_body_wide(
    p: *mut u8,
    seq_id: u64,
    exec_status: u64,
    efd: i32,
    from_pool: bool,
    exec_info: u64,
) {
    let w = [seq_id, exec_status, handle_word(efd, from_pool), exec_info];
    use core::arch::x86_64::__m128i;
    // SAFETY: `[u64; 2]` and `__m128i` are both 16 plain bytes (no invalid
    // values); the vector type makes each volatile store one 16-byte
    // instruction (SSE2, part of the x86_64 baseline).
    let (lo, hi) = unsafe {
        (
            core::mem::transmute::<[u64; 2], __m128i>([w[0], w[1]]),
            core::mem::transmute::<[u64; 2], __m128i>([w[2], w[3]]),
        )
    };
    let p = p.cast::<__m128i>();
    // SAFETY: the caller's contract: `p` (hence `p.add(1)`, 16 bytes on) is
    // valid for 16-byte aligned writes, and nothing else accesses the bytes
    // concurrently.
    unsafe {
        core::ptr::write_volatile(p, lo);
        core::ptr::write_volatile(p.add(1), hi);
    }
}

/// Where a queue's cursors and slots live. Sealed; see the module docs.
pub trait Storage: sealed::Sealed + Send + Sync + 'static {
    /// Access to one slot.
    type Slot<'a>: SlotAccess
    where
        Self: 'a;

    /// Whether the handles may cache the cursor the other side publishes
    /// (rtrb style) and re-read it only when the cache says full / empty.
    /// `false` re-reads it on every operation, as the C original does.
    const CACHE_REMOTE: bool = true;

    /// Number of slots (`xu_queue_t.capacity`).
    fn capacity(&self) -> u64;

    /// The XU id written in the header.
    fn xu(&self) -> XuId;

    /// Load a cursor with `o`.
    fn load(&self, c: Cursor, o: Ordering) -> u64;

    /// Publish cursor `c` (single writer) from `old` to `old + n`. Ours is a
    /// `Release` store; `CStyleStorage` does the C original's SeqCst
    /// `fetch_add`.
    fn publish(&self, c: Cursor, old: u64, n: u64);

    /// Observe a cursor another thread publishes: `Acquire` (SeqCst for
    /// `CStyleStorage`).
    fn observe(&self, c: Cursor) -> u64;

    /// The slot at `idx`.
    ///
    /// # Safety
    /// `idx < self.capacity()`.
    unsafe fn slot(&self, idx: usize) -> Self::Slot<'_>;

    /// The slots of one contiguous run, in index order.
    type Run<'a>: Iterator<Item = Self::Slot<'a>>
    where
        Self: 'a;

    /// The slots `idx..idx + n` (one contiguous run, no wrap).
    ///
    /// # Safety
    /// `idx + n <= self.capacity()`.
    unsafe fn run(&self, idx: usize, n: usize) -> Self::Run<'_>;

    /// The ABI image: the 256-byte header followed by `capacity` 32-byte
    /// slots, read word by word (atomically) from wherever they live.
    #[cfg(feature = "std")]
    fn snapshot(&self) -> Vec<u8>;

    /// A hint that slots `idx..idx + n` (`idx + n <= capacity`) are about to
    /// be written: start taking their cache lines for writing (`PREFETCHW`)
    /// so the stores that follow do not wait for them one by one. Touches no
    /// byte; a no-op where the CPU lacks the instruction, under loom and under Miri.
    #[inline(always)]
    fn prefetch_write(&self, idx: usize, n: usize) {
        let _ = (idx, n);
    }

    /// [`prefetch_write`](Self::prefetch_write) of the one line holding slot
    /// `idx` (`< capacity`).
    #[inline(always)]
    fn prefetch_write_slot(&self, idx: usize) {
        let _ = idx;
    }

    /// [`prefetch_write`](Self::prefetch_write) of cursor `c`'s line.
    #[inline(always)]
    fn prefetch_write_cursor(&self, c: Cursor) {
        let _ = c;
    }
}

/// Whether the CPU has `PREFETCHW` (CPUID 8000_0001h, ECX bit 8, on AMD and
/// Intel alike). Asked once per process.
#[cfg(all(target_arch = "x86_64", not(any(loom, miri))))]
fn has_prefetchw() -> bool {
    // 0: not asked yet, 1: no, 2: yes. Relaxed: every thread computes the
    // same answer, so a race only asks twice.
    static HAS: core::sync::atomic::AtomicU8 = core::sync::atomic::AtomicU8::new(0);
    match HAS.load(core::sync::atomic::Ordering::Relaxed) {
        0 => {}
        known => return known == 2,
    }
    let has = (|| {
        use core::arch::x86_64::{__cpuid, __get_cpuid_max};
        // SAFETY: CPUID exists on every x86_64 CPU and only reads identification
        // registers (the intrinsics are safe fns on newer toolchains).
        #[allow(unused_unsafe)]
        let (max, _) = unsafe { __get_cpuid_max(0x8000_0000) };
        if max < 0x8000_0001 {
            return false;
        }
        // SAFETY: as above; the leaf is within the range CPUID reported.
        #[allow(unused_unsafe)]
        let ecx = unsafe { __cpuid(0x8000_0001) }.ecx;
        ecx & (1 << 8) != 0
    })();
    HAS.store(1 + u8::from(has), core::sync::atomic::Ordering::Relaxed);
    has
}

#[cfg(not(all(target_arch = "x86_64", not(any(loom, miri)))))]
fn has_prefetchw() -> bool {
    false
}

/// `PREFETCHW` the line holding `addr` when `enabled`.
#[inline(always)]
fn prefetch_write_line(enabled: bool, addr: usize) {
    #[cfg(all(target_arch = "x86_64", not(any(loom, miri))))]
    if enabled {
        // SAFETY: PREFETCHW (present: `enabled` comes from CPUID) is a hint:
        // it never faults, reads or writes no byte the program can see, and
        // touches no register but its address operand.
        unsafe {
            core::arch::asm!(
                "prefetchw [{0}]",
                in(reg) addr,
                options(nostack, preserves_flags, readonly)
            );
        }
    }
    #[cfg(not(all(target_arch = "x86_64", not(any(loom, miri)))))]
    let _ = (enabled, addr);
}

/// `PREFETCHW` every 64-byte line of `[start, start + len)` when `enabled`
/// (the storage asked [`has_prefetchw`] at construction).
#[inline(always)]
fn prefetch_write_lines(enabled: bool, start: usize, len: usize) {
    #[cfg(all(target_arch = "x86_64", not(any(loom, miri))))]
    if enabled {
        let mut line = start & !63;
        while line < start + len {
            // SAFETY: PREFETCHW (present: `enabled` comes from CPUID) is a hint:
            // it never faults, reads or writes no byte the program can see,
            // and touches no register but its address operand.
            unsafe {
                core::arch::asm!(
                    "prefetchw [{0}]",
                    in(reg) line,
                    options(nostack, preserves_flags, readonly)
                );
            }
            line += 64;
        }
    }
    #[cfg(not(all(target_arch = "x86_64", not(any(loom, miri)))))]
    let _ = (enabled, start, len);
}

/// Check a capacity / start pair (shared by both storages).
pub(crate) fn check_config(capacity: u64, start: u64) -> Result<(), RingError> {
    if capacity == 0 || capacity > (1 << 32) {
        return Err(RingError::BadCapacity(capacity));
    }
    if start == 0 || start >= xu_queue::CURSOR_LIMIT {
        return Err(RingError::BadStart(start));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Owned storage
// ---------------------------------------------------------------------------

/// One cursor on its own 64-byte cache line (the docs/abi.md §1.2 layout invariant, kept
/// for owned storage too so both measure the same sharing pattern).
#[repr(align(64))]
#[derive(Debug)]
#[cfg(feature = "std")]
struct Line(AtomicU64);

/// One owned slot: the five `xuq_exec_info_t` fields as atomics.
///
/// Aligned to its 32-byte size (as the mapped slots are, behind the
/// 64-byte-aligned header) so that no slot straddles two cache lines: a
/// straddling slot makes one item's hand-off move two lines between the
/// producer's and the worker's cores.
#[derive(Debug)]
#[cfg_attr(not(loom), repr(C, align(32)))]
#[cfg_attr(loom, repr(C))]
#[cfg(feature = "std")]
pub struct OwnedSlot {
    seq_id: AtomicU64,
    exec_status: AtomicU64,
    /// `mark_comp_efd` (low 4 bytes), `efd_from_pool` (byte 4) and the
    /// always-zero padding, as one word ([`handle_word`]).
    handle: AtomicU64,
    exec_info: AtomicU64,
}

/// The 8 bytes at slot +0x10 as a native word: `mark_comp_efd` (4 bytes LE),
/// `efd_from_pool` (1 byte), 3 zero padding bytes (docs/abi.md §1.3).
#[inline(always)]
fn handle_word(efd: i32, from_pool: bool) -> u64 {
    u64::from_le((efd as u32 as u64) | (u64::from(from_pool) << 32))
}

/// The inverse of [`handle_word`].
#[inline(always)]
fn handle_fields(w: u64) -> (i32, bool) {
    let w = u64::from_le(w);
    (w as u32 as i32, (w >> 32) as u8 != 0)
}

const _: () = assert!(
    exec_slot::off::EFD_FROM_POOL == exec_slot::off::MARK_COMP_EFD + 4
        && exec_slot::off::EXEC_INFO == exec_slot::off::MARK_COMP_EFD + 8
);

// The owned slot has the ABI slot's size (docs/abi.md §1.3), so the owned
// ring has the same two-slots-per-line density as the mapped one.
#[cfg(all(feature = "std", not(loom)))]
const _: () = assert!(core::mem::size_of::<OwnedSlot>() == exec_slot::SIZE);
// ... and its fields at the ABI offsets, so `set_body` can write it as the
// mapped slot's 32-byte image.
#[cfg(all(feature = "std", not(loom)))]
const _: () = assert!(
    core::mem::offset_of!(OwnedSlot, seq_id) == exec_slot::off::SEQ_ID
        && core::mem::offset_of!(OwnedSlot, exec_status) == exec_slot::off::EXEC_STATUS
        && core::mem::offset_of!(OwnedSlot, handle) == exec_slot::off::MARK_COMP_EFD
        && core::mem::offset_of!(OwnedSlot, exec_info) == exec_slot::off::EXEC_INFO
        && core::mem::align_of::<OwnedSlot>() >= 16
);

#[cfg(feature = "std")]
impl SlotAccess for &OwnedSlot {
    #[inline]
    fn seq_id(&self, o: Ordering) -> u64 {
        self.seq_id.load(o)
    }
    #[inline]
    fn set_seq_id(&self, v: u64, o: Ordering) {
        self.seq_id.store(v, o)
    }
    #[inline]
    fn exec_status(&self, o: Ordering) -> u64 {
        self.exec_status.load(o)
    }
    #[inline]
    fn set_exec_status(&self, v: u64, o: Ordering) {
        self.exec_status.store(v, o)
    }
    #[inline]
    fn handle(&self, o: Ordering) -> (i32, bool) {
        handle_fields(self.handle.load(o))
    }
    #[inline]
    fn set_handle(&self, efd: i32, from_pool: bool, o: Ordering) {
        self.handle.store(handle_word(efd, from_pool), o)
    }
    #[inline]
    fn exec_info(&self, o: Ordering) -> u64 {
        self.exec_info.load(o)
    }
    #[inline]
    fn set_exec_info(&self, v: u64, o: Ordering) {
        self.exec_info.store(v, o)
    }
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2", not(loom)))]
    #[inline(always)]
    unsafe fn set_body(
        &self,
        seq_id: u64,
        exec_status: u64,
        efd: i32,
        from_pool: bool,
        exec_info: u64,
    ) {
        // A pointer to the whole slot (not to one field: its provenance must
        // cover all 32 bytes). Every byte of the slot is inside an atomic's
        // `UnsafeCell` (four u64 atomics, no padding), so writing through a
        // pointer derived from `&OwnedSlot` is allowed.
        let p = core::ptr::from_ref::<OwnedSlot>(self)
            .cast_mut()
            .cast::<u8>();
        // SAFETY: the slot is 32 bytes, 32-aligned, its fields at the ABI
        // offsets (const asserts above), all interior-mutable; no access to
        // it is concurrent with this one (our caller's `# Safety`
        // condition).
        unsafe { write_body_wide(p, seq_id, exec_status, efd, from_pool, exec_info) }
    }
}

/// Cursors and slots as heap atomics through `crate::sync`.
///
/// The defaults are the ring (Release publish, Acquire observe, cached
/// remote cursors); use them. The other values exist for the comparison
/// benchmark's peers (with the `testkit` feature): `SEQCST = true` is
/// `CStyleStorage`. `CACHED = false` makes the handles
/// re-read the remote cursor on every operation (`COriginalStorage`).
#[derive(Debug)]
#[cfg(feature = "std")]
pub struct OwnedStorage<const SEQCST: bool = false, const CACHED: bool = true> {
    xu: XuId,
    cap: u64,
    exec_head: Line,
    scheduled_head: Line,
    scheduled_tail: Line,
    slots: Box<[OwnedSlot]>,
    /// The CPU has `PREFETCHW` ([`Storage::prefetch_write`]).
    prefetchw: bool,
}

/// The same ring with SeqCst `fetch_add` on every cursor move and SeqCst
/// cursor loads: the C original's `_InterlockedAdd64` (docs/abi.md §1.9). For the
/// comparison benchmark (`testkit` feature).
#[cfg(all(feature = "std", any(test, feature = "testkit")))]
pub type CStyleStorage = OwnedStorage<true, true>;

/// The C original as the seed shows it (docs/abi.md §1.9): SeqCst `fetch_add` on every
/// cursor move and no cached remote cursors (`xuq_client_submit` reads
/// `exec_head`, the peek reads `scheduled_head`, on every call). For the
/// comparison benchmark (`testkit` feature).
#[cfg(all(feature = "std", any(test, feature = "testkit")))]
pub type COriginalStorage = OwnedStorage<true, false>;

#[cfg(feature = "std")]
impl<const SEQCST: bool, const CACHED: bool> OwnedStorage<SEQCST, CACHED> {
    /// Zeroed slots, every cursor at `start`.
    pub fn new(xu: XuId, capacity: u64, start: u64) -> Result<Self, RingError> {
        check_config(capacity, start)?;
        let slots = (0..capacity)
            .map(|_| OwnedSlot {
                seq_id: AtomicU64::new(0),
                exec_status: AtomicU64::new(0),
                handle: AtomicU64::new(0),
                exec_info: AtomicU64::new(0),
            })
            .collect();
        Ok(OwnedStorage {
            xu,
            cap: capacity,
            exec_head: Line(AtomicU64::new(start)),
            scheduled_head: Line(AtomicU64::new(start)),
            scheduled_tail: Line(AtomicU64::new(start)),
            slots,
            prefetchw: has_prefetchw(),
        })
    }

    #[inline]
    fn cursor(&self, c: Cursor) -> &AtomicU64 {
        match c {
            Cursor::ExecHead => &self.exec_head.0,
            Cursor::ScheduledHead => &self.scheduled_head.0,
            Cursor::ScheduledTail => &self.scheduled_tail.0,
        }
    }
}

#[cfg(feature = "std")]
impl<const SEQCST: bool, const CACHED: bool> sealed::Sealed for OwnedStorage<SEQCST, CACHED> {}

#[cfg(feature = "std")]
impl<const SEQCST: bool, const CACHED: bool> Storage for OwnedStorage<SEQCST, CACHED> {
    type Slot<'a> = &'a OwnedSlot;

    const CACHE_REMOTE: bool = CACHED;

    #[inline]
    fn capacity(&self) -> u64 {
        self.cap
    }

    #[inline]
    fn xu(&self) -> XuId {
        self.xu
    }

    #[inline]
    fn load(&self, c: Cursor, o: Ordering) -> u64 {
        self.cursor(c).load(o)
    }

    #[inline]
    fn publish(&self, c: Cursor, old: u64, n: u64) {
        if SEQCST {
            // Ordering: SeqCst RMW, the C original's LOCK XADD (docs/abi.md §1.9);
            // pairs with the SeqCst loads in `observe`.
            self.cursor(c).fetch_add(n, Ordering::SeqCst);
        } else {
            // Ordering: Release; pairs with the Acquire in `observe` on the
            // other side (docs/abi.md §1.9: store-release on the publish).
            self.cursor(c).store(old + n, PUBLISH);
        }
    }

    #[inline]
    fn observe(&self, c: Cursor) -> u64 {
        if SEQCST {
            // Ordering: SeqCst, as every access in the C original.
            self.cursor(c).load(Ordering::SeqCst)
        } else {
            // Ordering: Acquire; pairs with the Release in `publish` (docs/abi.md §1.9).
            self.cursor(c).load(Ordering::Acquire)
        }
    }

    #[inline(always)]
    unsafe fn slot(&self, idx: usize) -> &OwnedSlot {
        debug_assert!(idx < self.slots.len());
        // SAFETY: the caller guarantees `idx < capacity()` and `slots` holds
        // exactly `capacity` slots (built in `new`), so the index is in bounds.
        unsafe { self.slots.get_unchecked(idx) }
    }

    type Run<'a> = core::slice::Iter<'a, OwnedSlot>;

    #[inline(always)]
    unsafe fn run(&self, idx: usize, n: usize) -> core::slice::Iter<'_, OwnedSlot> {
        debug_assert!(idx + n <= self.slots.len());
        // SAFETY: the caller guarantees `idx + n <= capacity()` = `slots.len()`.
        unsafe { self.slots.get_unchecked(idx..idx + n) }.iter()
    }

    #[inline(always)]
    fn prefetch_write(&self, idx: usize, n: usize) {
        debug_assert!(idx + n <= self.slots.len());
        let start = self.slots.as_ptr() as usize + idx * core::mem::size_of::<OwnedSlot>();
        prefetch_write_lines(self.prefetchw, start, n * core::mem::size_of::<OwnedSlot>());
    }

    #[inline(always)]
    fn prefetch_write_cursor(&self, c: Cursor) {
        prefetch_write_line(self.prefetchw, self.cursor(c) as *const AtomicU64 as usize);
    }

    #[inline(always)]
    fn prefetch_write_slot(&self, idx: usize) {
        debug_assert!(idx < self.slots.len());
        prefetch_write_line(
            self.prefetchw,
            self.slots.as_ptr() as usize + idx * core::mem::size_of::<OwnedSlot>(),
        );
    }

    #[cfg(feature = "std")]
    fn snapshot(&self) -> Vec<u8> {
        let mut out = vec![0u8; xu_queue::SIZE + self.slots.len() * exec_slot::SIZE];
        let put = |out: &mut [u8], off: usize, b: &[u8]| {
            out[off..off + b.len()].copy_from_slice(b);
        };
        put(&mut out, xu_queue::off::XU_ID, &self.xu.0.to_le_bytes());
        put(
            &mut out,
            xu_queue::off::BUFFER,
            &(self.slots.as_ptr() as u64).to_le_bytes(),
        );
        put(&mut out, xu_queue::off::CAPACITY, &self.cap.to_le_bytes());
        for c in [
            Cursor::ExecHead,
            Cursor::ScheduledHead,
            Cursor::ScheduledTail,
        ] {
            let v = self.cursor(c).load(Ordering::Relaxed);
            put(&mut out, c.offset(), &v.to_le_bytes());
        }
        // Each slot's fields at their offsets within the slot's bytes.
        let bodies = out[xu_queue::SIZE..].chunks_exact_mut(exec_slot::SIZE);
        for (s, body) in self.slots.iter().zip(bodies) {
            let r = Ordering::Relaxed;
            put(
                body,
                exec_slot::off::SEQ_ID,
                &s.seq_id.load(r).to_le_bytes(),
            );
            put(
                body,
                exec_slot::off::EXEC_STATUS,
                &s.exec_status.load(r).to_le_bytes(),
            );
            // mark_comp_efd, efd_from_pool and the zero padding.
            put(
                body,
                exec_slot::off::MARK_COMP_EFD,
                &s.handle.load(r).to_ne_bytes(),
            );
            put(
                body,
                exec_slot::off::EXEC_INFO,
                &s.exec_info.load(r).to_le_bytes(),
            );
        }
        out
    }
}

/// The publish ordering (the `relaxed_publish` mutant weakens it; the loom
/// suite must kill that).
#[cfg(not(xunds_mutant = "relaxed_publish"))]
const PUBLISH: Ordering = Ordering::Release;
#[cfg(xunds_mutant = "relaxed_publish")]
const PUBLISH: Ordering = Ordering::Relaxed;

// ---------------------------------------------------------------------------
// Mapped storage
// ---------------------------------------------------------------------------

/// `core`'s atomic even under loom: loom atomics never live in ABI memory.
type StdAtomicU64 = core::sync::atomic::AtomicU64;

/// The byte-exact `xu_queue_t` header at offset 0 of its memory and the slot
/// array right after it (offset [`xu_queue::SIZE`]); `buffer` (+0x08) holds
/// the slot array's address. The memory is a `Region` this value keeps
/// alive ([`MappedStorage::init`], `std`), a [`StaticStorage`], or any memory
/// under [`MappedStorage::init_raw`]'s contract.
#[derive(Debug)]
pub struct MappedStorage {
    /// Keeps the mapping alive when built from one.
    #[cfg(feature = "std")]
    region: Option<Region>,
    /// The header (offset 0).
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    base: *mut u8,
    xu: XuId,
    cap: u64,
    exec_head: *const StdAtomicU64,
    scheduled_head: *const StdAtomicU64,
    scheduled_tail: *const StdAtomicU64,
    slots: *mut u8,
    /// The CPU has `PREFETCHW` ([`Storage::prefetch_write`]).
    prefetchw: bool,
}

// SAFETY: the raw pointers point into `region`'s mapping, which `self` keeps
// alive, or into memory `init_raw`'s caller keeps valid; every access through them is atomic, except a slot body written by
// `SlotAccess::set_body`, an `unsafe fn` whose caller orders it against
// every other access; so sharing across threads is sound (the same argument
// as `Mapping`'s Send/Sync).
unsafe impl Send for MappedStorage {}
// SAFETY: as above; no `&T`/`&[u8]` over the mapped bytes is ever created.
unsafe impl Sync for MappedStorage {}

/// Bytes a mapped queue of `capacity` slots needs.
pub const fn mapped_len(capacity: u64) -> usize {
    xu_queue::SIZE + capacity as usize * exec_slot::SIZE
}

impl MappedStorage {
    /// Lay a fresh queue into `region`: header fields `xu_id`, `buffer`,
    /// `capacity` and the three cursors (= `start`) written, slots zeroed
    /// (calloc semantics), header padding untouched. The region must be
    /// 64-byte aligned and at least [`mapped_len`]`(capacity)` bytes.
    #[cfg(feature = "std")]
    pub fn init(region: Region, xu: XuId, capacity: u64, start: u64) -> Result<Self, RingError> {
        check_config(capacity, start)?;
        if !region.is_writable() {
            return Err(RingError::ReadOnly);
        }
        // Alignment and bounds of the whole block, checked once.
        let len = mapped_len(capacity);
        let base = region.ptr_at(0, len, xu_queue::CACHE_LINE)?;
        // SAFETY: `base..base + len` is inside the writable mapping (checked
        // just above), which the returned value keeps alive (`region`); the
        // caller of the public constructors ([`crate::ring::XuQueue::mapped`])
        // promises nothing else writes it while the queue lives.
        let mut s = unsafe { Self::init_raw(base, len, xu, capacity, start) }?;
        s.region = Some(region);
        Ok(s)
    }

    /// Lay a fresh queue into the `len` bytes at `base`, as [`init`](Self::init)
    /// does into a region: the `no_std` way to put a queue in memory the
    /// embedder provides (a `static`, a device window, shared memory).
    /// Refuses a bad capacity or start, a null or not 64-byte-aligned `base`,
    /// and `len < mapped_len(capacity)` ([`RingError::Misplaced`]).
    ///
    /// # Safety
    /// While the returned storage (and any queue over it) lives, the `len`
    /// bytes at `base` stay valid for reads and writes, nothing but this
    /// storage writes the first `mapped_len(capacity)` of them, and nothing
    /// reads them concurrently with a submit, except through atomics of the
    /// words' width (the slot body is written with plain stores on x86_64:
    /// [`SlotAccess::set_body`]); no `&`/`&mut` to them exists.
    pub unsafe fn init_raw(
        base: *mut u8,
        len: usize,
        xu: XuId,
        capacity: u64,
        start: u64,
    ) -> Result<Self, RingError> {
        check_config(capacity, start)?;
        let need = mapped_len(capacity);
        if base.is_null() || base as usize % xu_queue::CACHE_LINE != 0 || len < need {
            return Err(RingError::Misplaced {
                addr: base as usize,
                len,
                need,
            });
        }
        // Every offset used below is a multiple of 8 below `need <= len`
        // (the header's fields, the slot array after it).
        let word = |off: usize| {
            debug_assert!(off % 8 == 0 && off + 8 <= need);
            // SAFETY: `off` is 8-aligned and in bounds (above) of memory
            // valid for writes from a 64-aligned base; the caller's contract
            // makes every access to it atomic (or ordered, for a slot body).
            unsafe { StdAtomicU64::from_ptr(base.wrapping_add(off).cast()) }
        };
        let slots = base.wrapping_add(xu_queue::SIZE);
        let r = Ordering::Relaxed;
        // xu_id is the first 2 bytes of the first header word (its low 16
        // bits: the ABI is little-endian); the other 6 are padding, kept.
        let w0 = word(xu_queue::off::XU_ID);
        w0.store((w0.load(r) & !0xffff) | u64::from(xu.0), r);
        word(xu_queue::off::BUFFER).store(slots as u64, r);
        word(xu_queue::off::CAPACITY).store(capacity, r);
        for off in (xu_queue::SIZE..need).step_by(8) {
            word(off).store(0, r);
        }
        for c in [
            Cursor::ExecHead,
            Cursor::ScheduledHead,
            Cursor::ScheduledTail,
        ] {
            word(c.offset()).store(start, r);
        }
        let cur = |c: Cursor| base.wrapping_add(c.offset()).cast_const().cast();
        Ok(MappedStorage {
            #[cfg(feature = "std")]
            region: None,
            base,
            xu,
            cap: capacity,
            exec_head: cur(Cursor::ExecHead),
            scheduled_head: cur(Cursor::ScheduledHead),
            scheduled_tail: cur(Cursor::ScheduledTail),
            slots,
            prefetchw: has_prefetchw(),
        })
    }

    /// The region holding the header and slots (`None` for caller memory).
    #[cfg(feature = "std")]
    pub fn region(&self) -> Option<&Region> {
        self.region.as_ref()
    }

    /// Where cursor `c` lives.
    #[inline(always)]
    fn cursor_ptr(&self, c: Cursor) -> *const StdAtomicU64 {
        match c {
            Cursor::ExecHead => self.exec_head,
            Cursor::ScheduledHead => self.scheduled_head,
            Cursor::ScheduledTail => self.scheduled_tail,
        }
    }

    #[inline]
    fn cursor(&self, c: Cursor) -> &StdAtomicU64 {
        // SAFETY: the pointer was bounds- and alignment-checked by
        // `Region::ptr_at` in `init`; the mapping lives as long as
        // `self.region`, which outlives the returned borrow; every access to
        // these 8 bytes is atomic.
        unsafe { &*self.cursor_ptr(c) }
    }
}

/// One slot inside mapped memory: a validated base pointer to 32 bytes.
#[derive(Clone, Copy, Debug)]
pub struct MappedSlot<'a> {
    base: *mut u8,
    _region: PhantomData<&'a MappedStorage>,
}

impl MappedSlot<'_> {
    #[inline]
    fn u64_at(&self, off: usize) -> &StdAtomicU64 {
        // SAFETY: `base` is 8-aligned and 32 valid bytes long (built by
        // `MappedStorage::slot` from the range checked in `init`); `off` is a
        // field offset < 32 that is a multiple of 8; the region outlives 'a;
        // every access to these bytes is atomic, or (a `set_body` write)
        // ordered before or after every atomic one, as `from_ptr` requires.
        unsafe { StdAtomicU64::from_ptr(self.base.add(off).cast()) }
    }
}

impl SlotAccess for MappedSlot<'_> {
    #[inline]
    fn seq_id(&self, o: Ordering) -> u64 {
        self.u64_at(exec_slot::off::SEQ_ID).load(o)
    }
    #[inline]
    fn set_seq_id(&self, v: u64, o: Ordering) {
        self.u64_at(exec_slot::off::SEQ_ID).store(v, o)
    }
    #[inline]
    fn exec_status(&self, o: Ordering) -> u64 {
        self.u64_at(exec_slot::off::EXEC_STATUS).load(o)
    }
    #[inline]
    fn set_exec_status(&self, v: u64, o: Ordering) {
        self.u64_at(exec_slot::off::EXEC_STATUS).store(v, o)
    }
    #[inline]
    fn handle(&self, o: Ordering) -> (i32, bool) {
        handle_fields(self.u64_at(exec_slot::off::MARK_COMP_EFD).load(o))
    }
    #[inline]
    fn set_handle(&self, efd: i32, from_pool: bool, o: Ordering) {
        self.u64_at(exec_slot::off::MARK_COMP_EFD)
            .store(handle_word(efd, from_pool), o)
    }
    #[inline]
    fn exec_info(&self, o: Ordering) -> u64 {
        self.u64_at(exec_slot::off::EXEC_INFO).load(o)
    }
    #[inline]
    fn set_exec_info(&self, v: u64, o: Ordering) {
        self.u64_at(exec_slot::off::EXEC_INFO).store(v, o)
    }
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2", not(loom)))]
    #[inline(always)]
    unsafe fn set_body(
        &self,
        seq_id: u64,
        exec_status: u64,
        efd: i32,
        from_pool: bool,
        exec_info: u64,
    ) {
        // SAFETY: `base` is a slot of the mapping: 32 valid bytes at a
        // multiple of 32 behind the 256-byte header of a region whose base
        // `init` checked to be 64-aligned, so 16-aligned; no access to it is
        // concurrent with this one (our caller's `# Safety` condition).
        unsafe { write_body_wide(self.base, seq_id, exec_status, efd, from_pool, exec_info) }
    }
}

/// A contiguous run of mapped slots ([`Storage::run`]).
#[derive(Debug)]
pub struct MappedRun<'a> {
    next: *mut u8,
    end: *mut u8,
    _region: PhantomData<&'a MappedStorage>,
}

impl<'a> Iterator for MappedRun<'a> {
    type Item = MappedSlot<'a>;

    #[inline(always)]
    fn next(&mut self) -> Option<MappedSlot<'a>> {
        if self.next == self.end {
            return None;
        }
        let slot = MappedSlot {
            base: self.next,
            _region: PhantomData,
        };
        // SAFETY: `next < end`, both inside (or one past) the checked slot
        // range (`MappedStorage::run`), and they differ by whole slots.
        self.next = unsafe { self.next.add(exec_slot::SIZE) };
        Some(slot)
    }
}

impl sealed::Sealed for MappedStorage {}

impl Storage for MappedStorage {
    type Slot<'a> = MappedSlot<'a>;

    #[inline]
    fn capacity(&self) -> u64 {
        self.cap
    }

    #[inline]
    fn xu(&self) -> XuId {
        self.xu
    }

    #[inline]
    fn load(&self, c: Cursor, o: Ordering) -> u64 {
        self.cursor(c).load(o)
    }

    #[inline]
    fn publish(&self, c: Cursor, old: u64, n: u64) {
        // Ordering: Release; pairs with the Acquire in `observe` on the other
        // side (docs/abi.md §1.9: store-release on the publish).
        self.cursor(c).store(old + n, PUBLISH);
    }

    #[inline]
    fn observe(&self, c: Cursor) -> u64 {
        // Ordering: Acquire; pairs with the Release in `publish` (docs/abi.md §1.9).
        self.cursor(c).load(Ordering::Acquire)
    }

    #[inline(always)]
    unsafe fn slot(&self, idx: usize) -> MappedSlot<'_> {
        debug_assert!((idx as u64) < self.cap);
        MappedSlot {
            // SAFETY: the caller guarantees `idx < capacity`, so
            // `idx * 32 + 32 <= capacity * 32`, the slot range checked in `init`.
            base: unsafe { self.slots.add(idx * exec_slot::SIZE) },
            _region: PhantomData,
        }
    }

    type Run<'a> = MappedRun<'a>;

    #[inline(always)]
    unsafe fn run(&self, idx: usize, n: usize) -> MappedRun<'_> {
        debug_assert!((idx + n) as u64 <= self.cap);
        // SAFETY: the caller guarantees `idx + n <= capacity`, so both ends lie
        // inside (or one past) the slot range checked in `init`.
        let (next, end) = unsafe {
            (
                self.slots.add(idx * exec_slot::SIZE),
                self.slots.add((idx + n) * exec_slot::SIZE),
            )
        };
        MappedRun {
            next,
            end,
            _region: PhantomData,
        }
    }

    #[inline(always)]
    fn prefetch_write(&self, idx: usize, n: usize) {
        debug_assert!((idx + n) as u64 <= self.cap);
        // Address arithmetic only (no pointer is formed or dereferenced).
        let start = self.slots as usize + idx * exec_slot::SIZE;
        prefetch_write_lines(self.prefetchw, start, n * exec_slot::SIZE);
    }

    #[inline(always)]
    fn prefetch_write_slot(&self, idx: usize) {
        debug_assert!((idx as u64) < self.cap);
        prefetch_write_line(self.prefetchw, self.slots as usize + idx * exec_slot::SIZE);
    }

    #[inline(always)]
    fn prefetch_write_cursor(&self, c: Cursor) {
        // Address only: the pointer is not dereferenced.
        prefetch_write_line(self.prefetchw, self.cursor_ptr(c) as usize);
    }

    #[cfg(feature = "std")]
    fn snapshot(&self) -> Vec<u8> {
        let mut out = vec![0u8; mapped_len(self.cap)];
        // Word-wise atomic copy: never a `&[u8]` over shared memory.
        for (i, chunk) in out.chunks_mut(8).enumerate() {
            // SAFETY: word `i < mapped_len(cap) / 8` is inside the block
            // `init_raw` checked (8-aligned from the 64-aligned base), and
            // every access to it is atomic or ordered with this one
            // (`XuQueue::snapshot`'s condition).
            let v = unsafe { StdAtomicU64::from_ptr(self.base.add(i * 8).cast()) }
                .load(Ordering::Relaxed);
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        out
    }
}

// ---------------------------------------------------------------------------
// Static storage
// ---------------------------------------------------------------------------

/// The bytes of a mapped queue of `N` slots: the 256-byte header, then the
/// slots (plain words: only ever reached through [`MappedStorage`]'s atomics).
#[repr(C)]
struct StaticBlock<const N: usize> {
    header: [u64; xu_queue::SIZE / 8],
    slots: [[u64; exec_slot::SIZE / 8]; N],
}

/// Zeroed, 64-byte-aligned memory for a queue of `N` slots (the byte-exact
/// header and slot array of [`MappedStorage`]) to put in a `static`: the
/// ring of a `no_std` embedder, with no allocator. [`StaticStorage::storage`]
/// lays the queue into it, once.
///
/// ```
/// use xunds::ring::{QueueHome, StaticStorage, MappedStorage, XuQueue};
/// use xunds::wire::seq_id::XuId;
/// static RING: StaticStorage<8> = StaticStorage::new();
/// static HOME: QueueHome<u64, MappedStorage> = QueueHome::new();
/// let storage = RING.storage(XuId::new(0, 1, 0), 1).unwrap();
/// let (mut producer, mut worker) = HOME.queue(storage).unwrap();
/// # let _ = (&mut producer, &mut worker);
/// ```
#[repr(C, align(64))]
pub struct StaticStorage<const N: usize> {
    block: UnsafeCell<StaticBlock<N>>,
    /// A storage was handed out (the block has its one queue).
    taken: AtomicBool,
}

// SAFETY: the block is reached only through the one `MappedStorage` that
// `storage` hands out (the `taken` flag), whose accesses are atomic or ordered
// by the queue protocol; sharing `&StaticStorage` exposes nothing else.
unsafe impl<const N: usize> Sync for StaticStorage<N> {}

impl<const N: usize> StaticStorage<N> {
    /// The block is exactly the header and `N` slots (docs/abi.md §1.2, §1.3).
    const EXACT: () = assert!(core::mem::size_of::<StaticBlock<N>>() == mapped_len(N as u64));

    /// Zeroed memory, no queue in it yet.
    pub const fn new() -> Self {
        StaticStorage {
            block: UnsafeCell::new(StaticBlock {
                header: [0; xu_queue::SIZE / 8],
                slots: [[0; exec_slot::SIZE / 8]; N],
            }),
            taken: AtomicBool::new(false),
        }
    }

    /// Lay a fresh queue of `N` slots for `xu`, cursors at `start` (1 in the
    /// ABI), into this memory ([`MappedStorage::init_raw`]). Once: a second
    /// call is refused with [`RingError::InUse`].
    pub fn storage(&'static self, xu: XuId, start: u64) -> Result<MappedStorage, RingError> {
        let () = Self::EXACT;
        // Relaxed: the flag only elects the one caller; the queue's memory
        // reaches other threads through the handles (moved, hence ordered).
        if self.taken.swap(true, Ordering::Relaxed) {
            return Err(RingError::InUse);
        }
        let len = core::mem::size_of::<StaticBlock<N>>();
        // SAFETY: the block is `'static`, 64-byte aligned (`repr(align(64))`
        // and the block at offset 0 of a `repr(C)` struct) and exactly
        // `mapped_len(N)` bytes; the `taken` flag makes this storage its only
        // accessor, and the cell is private, so no reference to its bytes
        // is ever formed.
        unsafe { MappedStorage::init_raw(self.block.get().cast(), len, xu, N as u64, start) }
            .inspect_err(|_| self.taken.store(false, Ordering::Relaxed))
    }
}

impl<const N: usize> Default for StaticStorage<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> core::fmt::Debug for StaticStorage<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("StaticStorage")
            .field("slots", &N)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod abi_tests {
    use super::*;

    /// The mapped ring is the 256-byte header then 32 bytes per slot
    /// (docs/abi.md §1.2). Mutant: `mapped_len`'s `+` -> `*`.
    #[test]
    fn mapped_len_is_header_plus_slots() {
        assert_eq!(mapped_len(1), 256 + 32);
        assert_eq!(mapped_len(4), 256 + 4 * 32);
        assert_eq!(mapped_len(32), 1280);
    }

    /// `init_raw` over caller memory lays the image `init` lays into a
    /// region (docs/abi.md §1.2, §1.3; only `buffer`, an address, differs),
    /// and refuses memory that is null, not 64-byte aligned or short.
    #[test]
    fn init_raw_lays_the_region_image_and_refuses_misplaced_memory() {
        use crate::hal::mem::Mapping;
        #[repr(C, align(64))]
        struct Mem([u64; mapped_len(4) / 8]);
        let xu = XuId::new(1, 2, 3);
        let mut mem = Mem([0; mapped_len(4) / 8]);
        let base = mem.0.as_mut_ptr().cast::<u8>();
        // SAFETY: `mem` outlives `raw` (dropped first, below) and is touched
        // only through it meanwhile.
        let raw = unsafe { MappedStorage::init_raw(base, mapped_len(4), xu, 4, 9) }.unwrap();
        let region = Mapping::anonymous(mapped_len(4)).unwrap().into_region();
        let mapped = MappedStorage::init(region, xu, 4, 9).unwrap();
        let (mut a, mut b) = (raw.snapshot(), mapped.snapshot());
        assert_eq!(a.len(), mapped_len(4));
        for img in [&mut a, &mut b] {
            img[xu_queue::off::BUFFER..xu_queue::off::BUFFER + 8].fill(0);
        }
        assert_eq!(a, b);
        drop(raw);
        for (p, len) in [
            (core::ptr::null_mut(), mapped_len(4)),
            (base.wrapping_add(8), mapped_len(3)),
            (base, mapped_len(4) - 1),
        ] {
            // SAFETY: refused before any access (the test's point).
            let r = unsafe { MappedStorage::init_raw(p, len, xu, 4, 1) };
            assert!(matches!(r, Err(RingError::Misplaced { .. })), "{p:?} {len}");
        }
    }

    /// Both storages report the XU they were made for, not XU 0 (no other
    /// test used a non-zero XU). Mutant: `OwnedStorage::xu` -> 0.
    #[test]
    fn storages_keep_a_non_zero_xu() {
        let xu = XuId::new(1, 2, 3);
        let o = OwnedStorage::<true, true>::new(xu, 4, 1).unwrap();
        assert_eq!(o.xu(), xu);
        assert_eq!(
            &o.snapshot()[xu_queue::off::XU_ID..xu_queue::off::XU_ID + 2],
            &xu.0.to_le_bytes()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A storage made on a region keeps it (the same memory, the whole
    /// length); one made on raw caller memory has none.
    #[cfg(all(feature = "std", not(loom)))]
    #[test]
    fn a_mapped_storage_keeps_its_region_and_raw_memory_has_none() {
        use crate::hal::mem::Mapping;
        let len = mapped_len(4);
        let region = Mapping::anonymous(len).unwrap().into_region();
        let base = region.ptr_at(0, len, 64).unwrap();
        let s = MappedStorage::init(region, XuId(0x0103), 4, 1).unwrap();
        let kept = s.region().expect("the storage keeps its region");
        assert_eq!(kept.len(), len);
        assert_eq!(kept.ptr_at(0, len, 64).unwrap(), base);
        drop(s);
        let other = Mapping::anonymous(len).unwrap().into_region();
        let raw_base = other.ptr_at(0, len, 64).unwrap();
        // SAFETY: `other` (a fresh anonymous mapping, 64-byte aligned, `len`
        // bytes) outlives `raw`, which is dropped first; nothing else
        // touches it meanwhile.
        let raw = unsafe { MappedStorage::init_raw(raw_base, len, XuId(0x0103), 4, 1) }.unwrap();
        assert!(raw.region().is_none());
        drop(raw);
        drop(other);
    }

    /// The capacity and start bounds exactly: every capacity from 1 to 2^32
    /// (xunds' bound) and every start from 1 (cursors start at 1) below
    /// `CURSOR_LIMIT` (docs/abi.md §1.2), nothing else.
    #[test]
    fn check_config_takes_exactly_its_bounds() {
        let limit = xu_queue::CURSOR_LIMIT;
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
                    RingError::BadCapacity(capacity)
                } else {
                    RingError::BadStart(start)
                };
                assert_eq!(r, Err(want));
            }
        }
    }
}
