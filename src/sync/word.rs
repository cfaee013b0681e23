//! Atomic words over raw memory: the crate's one way to turn an address into
//! atomics.
//!
//! Memory that another process or the device may write (a mapping, a device
//! window), or that the program reaches only through an address (a `static`
//! block, memory an embedder hands over), is never a Rust value of ours: no
//! `&T` or `&[u8]` may point into it. [`Words`] is a base pointer, a length
//! and a safety contract; every access is an atomic of the word's own width
//! at a byte offset checked against that length. `MIN`, a length every
//! instance has at least, lets an access at a constant offset below it skip
//! the check at run time; [`Words::span`] checks `N` bytes once and gives a
//! view whose `MIN` is `N`, and [`Words::load_u32s`] checks a run of 4-byte
//! words once and loads them with no check each.
//!
//! All of the `unsafe` this takes is in this file: the constructor's
//! contract ([`Words::from_raw`]), the pointer arithmetic behind the checks,
//! and [`Words::write_unshared`], the one plain (non-atomic) store. Under
//! `--cfg loom` a [`Words::heap`] block is made of loom's atomics, so loom
//! models over heap memory see every access; memory reached by address is
//! never loom's.
//!
//! ```
//! use core::sync::atomic::Ordering;
//! use xunds::sync::word::Words;
//! let w = Words::<16>::heap(64);
//! w.store_u64(8, 7, Ordering::Relaxed);
//! assert_eq!(w.fetch_add_u64(8, 1, Ordering::Relaxed), 7);
//! assert_eq!(w.load_u32(8, Ordering::Relaxed), 8, "little-endian low half");
//! let s = w.span::<16>(48).expect("48 + 16 <= 64");
//! s.store_u64(8, 9, Ordering::Relaxed);
//! assert_eq!(w.load_u64(56, Ordering::Relaxed), 9);
//! assert!(w.span::<16>(56).is_none(), "past the end");
//! ```

// The ring uses the 8-byte half of this API; the 4-byte words and the
// read-only views are for the other memory that is shared by address.
#![cfg_attr(not(feature = "testkit"), allow(dead_code))]

use core::marker::PhantomData;
use core::ops::Deref;
use core::ptr::NonNull;
use core::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

#[cfg(loom)]
use crate::sync::atomic::AtomicU64 as LoomU64;

mod sealed {
    pub trait Sealed {}
}

/// Whether a `Words` may store: [`ReadWrite`] or [`ReadOnly`].
pub trait Access: sealed::Sealed {
    /// Stores and read-modify-writes are allowed.
    const WRITABLE: bool;
}

/// Memory valid for reads and writes: every operation.
#[derive(Debug)]
pub enum ReadWrite {}
/// Memory that may be mapped read-only: loads only, each a Relaxed load
/// (what read-only pages allow) followed by a fence for a stronger ordering.
#[derive(Debug)]
pub enum ReadOnly {}

impl sealed::Sealed for ReadWrite {}
impl sealed::Sealed for ReadOnly {}
impl Access for ReadWrite {
    const WRITABLE: bool = true;
}
impl Access for ReadOnly {
    const WRITABLE: bool = false;
}

/// What keeps a view's memory valid.
enum Owner {
    /// Someone else: [`Words::from_raw`]'s caller, or the view a [`Span`]
    /// borrows from.
    Borrowed,
    /// A block [`Words::heap`] allocated; freed on drop.
    #[cfg(all(feature = "std", not(loom)))]
    Heap(core::alloc::Layout),
    /// Under loom, a heap block is loom's atomics.
    #[cfg(loom)]
    Loom(#[allow(dead_code)] Box<[LoomU64]>),
}

/// A run of bytes at a raw base, reached only through atomic words.
///
/// Words of 8 bytes at 8-aligned offsets and of 4 bytes at 4-aligned ones,
/// each checked against the length (a constant offset below `MIN` at
/// compile time). An offset out of bounds is a caller's bug and panics:
/// offsets that come from untrusted bytes are checked by the caller first
/// ([`Words::contains`], [`Words::span`]). Not `Clone`: a view is as long
/// lived as whatever keeps its memory valid, never more.
pub struct Words<const MIN: usize = 0, A: Access = ReadWrite> {
    base: NonNull<u8>,
    len: usize,
    /// Under loom, this view's first word when its memory is loom's (a heap
    /// block or a span of one), else null.
    #[cfg(loom)]
    loom: *const LoomU64,
    /// Held for its drop (it frees a heap block).
    #[cfg_attr(loom, allow(dead_code))]
    owner: Owner,
    _access: PhantomData<A>,
}

// SAFETY: a `Words` is a pointer and a length under `from_raw`'s contract
// (valid memory, reached only through atomics, or `write_unshared`, whose
// caller orders it), or a heap block it owns; moving or sharing the view
// across threads shares nothing else.
unsafe impl<const MIN: usize, A: Access> Send for Words<MIN, A> {}
// SAFETY: as above: every access through `&Words` is atomic.
unsafe impl<const MIN: usize, A: Access> Sync for Words<MIN, A> {}

impl<const MIN: usize, A: Access> core::fmt::Debug for Words<MIN, A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Words")
            .field("base", &self.base)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

/// The alignment of a heap block: a cache line, so a layout that puts words
/// on lines of their own (the ring's cursors) keeps them apart on the heap.
pub const HEAP_ALIGN: usize = 64;

impl<const MIN: usize, A: Access> Words<MIN, A> {
    /// A view of the `len` bytes at `base`; `None` when `base` is null or
    /// not 8-byte aligned, or `len < MIN`.
    ///
    /// # Safety
    /// While the view lives, the `len` bytes at `base` stay valid for reads
    /// (and, with [`ReadWrite`], writes); no `&`/`&mut` to them exists; and
    /// every access to them, from any thread or process, is atomic and of
    /// the word's own width, except what [`Words::write_unshared`]'s caller
    /// orders before or after every other access.
    pub unsafe fn from_raw(base: *mut u8, len: usize) -> Option<Self> {
        let base = NonNull::new(base)?;
        (base.as_ptr() as usize % 8 == 0 && len >= MIN)
            .then(|| Self::view(base, len, Owner::Borrowed))
    }

    fn view(base: NonNull<u8>, len: usize, owner: Owner) -> Self {
        Words {
            base,
            len,
            #[cfg(loom)]
            loom: core::ptr::null(),
            owner,
            _access: PhantomData,
        }
    }

    /// Its length in bytes.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Its base address (for an ABI field that holds an address; never
    /// dereferenced from here).
    pub fn addr(&self) -> usize {
        self.base.as_ptr() as usize
    }

    /// Whether `size` bytes at `off` are inside it, `off` a multiple of
    /// `size.min(8)`. With `size <= MIN` and a constant `off <= MIN - size`
    /// the compiler folds it to `true`.
    #[inline(always)]
    pub fn contains(&self, off: usize, size: usize) -> bool {
        // SAFETY: every constructor refuses `len < MIN`, and `len` never
        // changes.
        unsafe { core::hint::assert_unchecked(self.len >= MIN) };
        let align = if size < 8 { size } else { 8 };
        off % align == 0 && size <= self.len && off <= self.len - size
    }

    /// The `N` bytes at `off` (8-aligned), checked once: `None` past the end.
    #[inline(always)]
    pub fn span<const N: usize>(&self, off: usize) -> Option<Span<'_, N, A>> {
        if off % 8 != 0 || !self.contains(off, N) {
            return None;
        }
        // SAFETY: `off + N <= len` (checked above): the result stays inside
        // (or one past) the memory the view covers.
        let base = unsafe { self.base.add(off) };
        let mut words = Words::view(base, N, Owner::Borrowed);
        #[cfg(loom)]
        if !self.loom.is_null() {
            words.loom = self.loom.wrapping_add(off / 8);
        }
        #[cfg(not(loom))]
        let _ = &mut words;
        Some(Span {
            words,
            _from: PhantomData,
        })
    }

    /// The word of `size` bytes at `off`, after the bounds check.
    #[inline(always)]
    fn loc(&self, off: usize, size: usize) -> Loc<'_> {
        if !self.contains(off, size) {
            out_of_bounds(off, size, self.len);
        }
        #[cfg(loom)]
        if !self.loom.is_null() {
            // SAFETY: `off / 8` is a word of this view (bounds checked),
            // and `loom` points at the view's first word of a boxed loom
            // block that outlives the view (its owner or the view a span
            // borrows from).
            let w = unsafe { &*self.loom.add(off / 8) };
            return Loc::Loom(w, (off % 8) as u32 * 8);
        }
        Loc::Raw(self.base.as_ptr().wrapping_add(off), PhantomData)
    }

    /// Load the u64 at `off`.
    #[inline(always)]
    pub fn load_u64(&self, off: usize, o: Ordering) -> u64 {
        match self.loc(off, 8) {
            Loc::Raw(p, _) => Self::load_raw(o, |o| raw64(p).load(o)),
            #[cfg(loom)]
            Loc::Loom(w, _) => w.load(o),
        }
    }

    /// Load the u32 at `off`.
    #[inline(always)]
    pub fn load_u32(&self, off: usize, o: Ordering) -> u32 {
        match self.loc(off, 4) {
            Loc::Raw(p, _) => Self::load_raw(o, |o| raw32(p).load(o)),
            #[cfg(loom)]
            Loc::Loom(w, shift) => (w.load(o) >> shift) as u32,
        }
    }

    /// Load the `n` 4-byte words at `off` (4-aligned), each with `o`, and
    /// hand `f` each one's index and value. The run is checked once as a
    /// whole (past the end or misaligned panics, as for one word), so its
    /// words take no check each; an empty run accesses nothing, so any
    /// offset will do.
    #[inline(always)]
    pub fn load_u32s(&self, off: usize, n: usize, o: Ordering, mut f: impl FnMut(usize, u32)) {
        if n > 0 && (off % 4 != 0 || off > self.len || n > (self.len - off) / 4) {
            out_of_bounds(off, n.saturating_mul(4), self.len);
        }
        let p = self.base.as_ptr().wrapping_add(off);
        for i in 0..n {
            // A loom block's words are loom's: the one-word load takes them.
            let v = match cfg!(loom) {
                true => self.load_u32(off + 4 * i, o),
                false => Self::load_raw(o, |o| raw32(p.wrapping_add(4 * i)).load(o)),
            };
            f(i, v);
        }
    }

    /// A load of memory reached by address with ordering `o`; of read-only
    /// memory, a Relaxed load followed by the fence a stronger load would
    /// have given.
    #[inline(always)]
    fn load_raw<T>(o: Ordering, load: impl FnOnce(Ordering) -> T) -> T {
        if A::WRITABLE || o == Ordering::Relaxed {
            return load(o);
        }
        let v = load(Ordering::Relaxed);
        if o == Ordering::SeqCst {
            // Ordering: SeqCst fence; its partner (and docs/abi.md section)
            // is whatever the caller's protocol pairs its SeqCst load with.
            fence(Ordering::SeqCst);
        } else {
            // Ordering: Acquire fence: after the Relaxed load it
            // synchronizes with the Release store the load read from, as an
            // Acquire load would; partner (and section): the caller's (e.g.
            // the docs/abi.md §2.3 header commit for `nds::Reader`).
            fence(Ordering::Acquire);
        }
        v
    }

    /// A fence of `o`, of the kind that orders these words' accesses
    /// (loom's for a loom heap block).
    pub fn fence(&self, o: Ordering) {
        #[cfg(loom)]
        if !self.loom.is_null() {
            return crate::sync::atomic::fence(o);
        }
        fence(o);
    }
}

impl<const MIN: usize> Words<MIN, ReadWrite> {
    /// A zeroed heap block of `len` bytes (rounded up to whole cache lines),
    /// aligned to [`HEAP_ALIGN`], owned and freed by this view; loom's
    /// atomics under loom. Panics when `len < MIN`.
    #[cfg(feature = "std")]
    pub fn heap(len: usize) -> Self {
        assert!(
            len >= MIN,
            "a heap block of {len} bytes is shorter than {MIN}"
        );
        let size = len.div_ceil(HEAP_ALIGN).max(1) * HEAP_ALIGN;
        #[cfg(not(loom))]
        {
            let layout = core::alloc::Layout::from_size_align(size, HEAP_ALIGN)
                .expect("a heap block's size fits a layout");
            // SAFETY: the layout has a non-zero size.
            let p = unsafe { std::alloc::alloc_zeroed(layout) };
            let Some(base) = NonNull::new(p) else {
                std::alloc::handle_alloc_error(layout)
            };
            Self::view(base, len, Owner::Heap(layout))
        }
        #[cfg(loom)]
        {
            let words: Box<[LoomU64]> = (0..size / 8).map(|_| LoomU64::new(0)).collect();
            let first: *const LoomU64 = &words[0];
            // `base` is never dereferenced under loom: `loom` takes every
            // access.
            let mut w = Self::view(NonNull::from(&words[0]).cast(), len, Owner::Loom(words));
            w.loom = first;
            w
        }
    }

    /// Store `v` at `off`.
    #[inline(always)]
    pub fn store_u64(&self, off: usize, v: u64, o: Ordering) {
        match self.loc(off, 8) {
            Loc::Raw(p, _) => raw64(p).store(v, o),
            #[cfg(loom)]
            Loc::Loom(w, _) => w.store(v, o),
        }
    }

    /// Store `v` at `off`.
    #[inline(always)]
    pub fn store_u32(&self, off: usize, v: u32, o: Ordering) {
        match self.loc(off, 4) {
            Loc::Raw(p, _) => raw32(p).store(v, o),
            #[cfg(loom)]
            Loc::Loom(w, shift) => {
                loom_update(w, shift, o, |_| v);
            }
        }
    }

    /// Add `v` to the u64 at `off` (wrapping); the old value.
    #[inline(always)]
    pub fn fetch_add_u64(&self, off: usize, v: u64, o: Ordering) -> u64 {
        match self.loc(off, 8) {
            Loc::Raw(p, _) => raw64(p).fetch_add(v, o),
            #[cfg(loom)]
            Loc::Loom(w, _) => w.fetch_add(v, o),
        }
    }

    /// OR `v` into the u64 at `off`; the old value.
    #[inline(always)]
    pub fn fetch_or_u64(&self, off: usize, v: u64, o: Ordering) -> u64 {
        match self.loc(off, 8) {
            Loc::Raw(p, _) => raw64(p).fetch_or(v, o),
            #[cfg(loom)]
            Loc::Loom(w, _) => w.fetch_or(v, o),
        }
    }

    /// Add `v` to the u32 at `off` (wrapping); the old value.
    #[inline(always)]
    pub fn fetch_add_u32(&self, off: usize, v: u32, o: Ordering) -> u32 {
        match self.loc(off, 4) {
            Loc::Raw(p, _) => raw32(p).fetch_add(v, o),
            #[cfg(loom)]
            Loc::Loom(w, shift) => loom_update(w, shift, o, |x| x.wrapping_add(v)),
        }
    }

    /// Write the 32 bytes at `off` (16-aligned from a 16-aligned base) as
    /// the four words `w` in order, with plain stores where that is fewer
    /// instructions: two 16-byte stores on x86_64 with SSE2, four Relaxed
    /// atomic stores elsewhere and under loom.
    ///
    /// # Safety
    /// Every other access to these 32 bytes, on any thread or process,
    /// happens before this call or after it (through a Release/Acquire
    /// edge, a lock, a join), never concurrently: a plain store racing any
    /// access is a data race. And the view's base plus `off` is 16-byte
    /// aligned.
    #[inline(always)]
    pub unsafe fn write_unshared(&self, off: usize, w: [u64; 4]) {
        if off % 16 != 0 || !self.contains(off, 32) {
            out_of_bounds(off, 32, self.len);
        }
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2", not(loom)))]
        {
            use core::arch::x86_64::__m128i;
            let p = self.base.as_ptr().wrapping_add(off).cast::<__m128i>();
            debug_assert!(p as usize % 16 == 0, "16-byte aligned (the contract)");
            // SAFETY: `[u64; 2]` and `__m128i` are both 16 plain bytes with
            // no invalid values.
            let (lo, hi) = unsafe {
                (
                    core::mem::transmute::<[u64; 2], __m128i>([w[0], w[1]]),
                    core::mem::transmute::<[u64; 2], __m128i>([w[2], w[3]]),
                )
            };
            // SAFETY: the 32 bytes are in bounds (checked above) of memory
            // valid for writes (`from_raw`'s contract, `ReadWrite`), 16-byte
            // aligned and accessed by no one concurrently (our caller's
            // contract). Volatile keeps each one 16-byte store.
            unsafe {
                core::ptr::write_volatile(p, lo);
                core::ptr::write_volatile(p.add(1), hi);
            }
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2", not(loom))))]
        for (i, v) in w.into_iter().enumerate() {
            self.store_u64(off + 8 * i, v, Ordering::Relaxed);
        }
    }
}

impl<const MIN: usize, A: Access> Drop for Words<MIN, A> {
    fn drop(&mut self) {
        #[cfg(all(feature = "std", not(loom)))]
        if let Owner::Heap(layout) = self.owner {
            // SAFETY: `Owner::Heap` is set only by `Words::heap`, which
            // allocated `base` with this layout; this view is its one owner
            // (not `Clone`), so it is freed once, after the last access.
            unsafe { std::alloc::dealloc(self.base.as_ptr(), layout) };
        }
    }
}

/// `N` bytes of a [`Words`], checked once ([`Words::span`]): a view whose
/// `MIN` is `N`, so an access at a constant offset inside it has no check
/// left at run time.
pub struct Span<'a, const N: usize, A: Access = ReadWrite> {
    words: Words<N, A>,
    _from: PhantomData<&'a ()>,
}

impl<const N: usize, A: Access> Deref for Span<'_, N, A> {
    type Target = Words<N, A>;
    #[inline(always)]
    fn deref(&self) -> &Words<N, A> {
        &self.words
    }
}

impl<const N: usize, A: Access> core::fmt::Debug for Span<'_, N, A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.words.fmt(f)
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn out_of_bounds(off: usize, size: usize, len: usize) -> ! {
    panic!("word access of {size} bytes at {off:#x} outside {len} bytes or misaligned")
}

/// Where one checked word lives.
enum Loc<'a> {
    /// In memory reached by address: an 8-aligned base plus a checked,
    /// aligned offset, valid while the view (borrowed for `'a`) lives.
    Raw(*mut u8, PhantomData<&'a ()>),
    /// One of a loom block's words, and the bit shift of a 4-byte word
    /// inside it (little-endian).
    #[cfg(loom)]
    Loom(&'a LoomU64, u32),
}

#[inline(always)]
fn raw64<'a>(p: *mut u8) -> &'a AtomicU64 {
    // SAFETY: `p` is an 8-aligned, in-bounds word (`Words`'s 8-aligned base
    // plus an offset the bounds check of the word, or of its run, passed) of
    // memory valid while the view lives (`from_raw`'s contract, or a heap
    // block of ours); the reference serves one operation inside the caller's
    // borrow of the view. Every access to the word is atomic and of this
    // width (the contract), as `from_ptr` requires; a view of read-only
    // memory only ever makes Relaxed loads through it (`load_u64`).
    unsafe { AtomicU64::from_ptr(p.cast()) }
}

#[inline(always)]
fn raw32<'a>(p: *mut u8) -> &'a AtomicU32 {
    // SAFETY: as in `raw64`, for a 4-aligned, in-bounds 4-byte word.
    unsafe { AtomicU32::from_ptr(p.cast()) }
}

/// A 4-byte read-modify-write on its containing loom word; the old value.
#[cfg(loom)]
fn loom_update(w: &LoomU64, shift: u32, o: Ordering, mut f: impl FnMut(u32) -> u32) -> u32 {
    let mask = 0xffff_ffffu64 << shift;
    let load = match o {
        Ordering::Release | Ordering::Relaxed => Ordering::Relaxed,
        _ => Ordering::Acquire,
    };
    let mut x = w.load(load);
    loop {
        let old = (x >> shift) as u32;
        let new = (x & !mask) | (u64::from(f(old)) << shift);
        match w.compare_exchange(x, new, o, load) {
            Ok(_) => return old,
            Err(seen) => x = seen,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every operation reads and writes the bytes at its offset, little
    /// endian, and no other.
    #[test]
    fn operations_touch_their_word_only() {
        let w = Words::<32>::heap(64);
        let r = Ordering::Relaxed;
        w.store_u64(8, 0x1122_3344_5566_7788, r);
        assert_eq!(w.load_u32(8, r), 0x5566_7788);
        assert_eq!(w.load_u32(12, r), 0x1122_3344);
        w.store_u32(12, 0xaabb_ccdd, r);
        assert_eq!(w.load_u64(8, r), 0xaabb_ccdd_5566_7788);
        assert_eq!(w.fetch_add_u64(16, 5, r), 0);
        assert_eq!(w.fetch_add_u64(16, 7u64.wrapping_neg(), r), 5);
        assert_eq!(w.load_u64(16, r), u64::MAX - 1);
        assert_eq!(w.fetch_or_u64(24, 0b10, r), 0);
        assert_eq!(w.fetch_or_u64(24, 0b01, r), 0b10);
        assert_eq!(w.fetch_add_u32(40, 3, r), 0);
        assert_eq!(w.fetch_add_u32(40, 1, r), 3);
        assert_eq!(w.load_u64(0, r), 0);
        assert_eq!(w.load_u64(32, r), 0);
        assert_eq!(w.load_u32(44, r), 0);
        assert_eq!(w.load_u64(56, r), 0);
        // SAFETY: this thread is the memory's only accessor.
        unsafe { w.write_unshared(32, [1, 2, 3, 4]) };
        let got: Vec<u64> = (0..4).map(|i| w.load_u64(32 + 8 * i, r)).collect();
        assert_eq!(got, [1, 2, 3, 4]);
        w.fence(Ordering::SeqCst);
    }

    /// The bounds: a span ends where the memory does; offsets past the end,
    /// straddling it or misaligned panic; a view refuses null, misaligned
    /// or short memory.
    #[test]
    fn bounds_are_checked() {
        let w = Words::<8>::heap(24);
        assert_eq!(w.len(), 24);
        assert!(w.contains(16, 8) && !w.contains(20, 8) && !w.contains(24, 4));
        assert!(w.contains(20, 4) && !w.contains(2, 4));
        assert!(w.span::<16>(8).is_some() && w.span::<16>(16).is_none());
        assert!(w.span::<8>(4).is_none());
        let s = w.span::<16>(8).unwrap();
        s.store_u64(8, 3, Ordering::Relaxed);
        assert_eq!(w.load_u64(16, Ordering::Relaxed), 3);
        for off in [24, 4, usize::MAX - 7] {
            let r = std::panic::catch_unwind(|| w.load_u64(off, Ordering::Relaxed));
            assert!(r.is_err(), "{off:#x}");
        }
        assert!(std::panic::catch_unwind(|| s.load_u64(16, Ordering::Relaxed)).is_err());
        // A run of words: checked as a whole, loaded in order.
        let mut got = Vec::new();
        w.load_u32s(12, 3, Ordering::Relaxed, |i, v| got.push((i, v)));
        assert_eq!(got, [(0, 0), (1, 3), (2, 0)]);
        for off in [24, 2, usize::MAX] {
            w.load_u32s(off, 0, Ordering::Relaxed, |_, _| unreachable!());
        }
        for (off, n) in [(16, 3), (2, 1), (28, 1), (4, usize::MAX / 2)] {
            let r = std::panic::catch_unwind(|| w.load_u32s(off, n, Ordering::Relaxed, |_, _| ()));
            assert!(r.is_err(), "{off:#x} + {n} words");
        }
        let mut mem = [0u64; 4];
        let p = mem.as_mut_ptr().cast::<u8>();
        // SAFETY: refused before any access, or used only below while `mem`
        // lives, atomically.
        unsafe {
            assert!(Words::<0>::from_raw(core::ptr::null_mut(), 8).is_none());
            assert!(Words::<0>::from_raw(p.add(4), 8).is_none());
            assert!(Words::<40>::from_raw(p, 32).is_none());
            let v = Words::<32, ReadOnly>::from_raw(p, 32).unwrap();
            assert_eq!(v.load_u64(24, Ordering::Acquire), 0);
            assert_eq!(v.addr(), p as usize);
        }
    }
}
