//! [`CountingAlloc`]: a [`GlobalAlloc`] wrapper over [`System`] that counts
//! allocations, for a test or benchmark binary to install with
//! `#[global_allocator]`. Test and benchmark support, not part of the
//! library: the `alloc` test binary (`tests/alloc/main.rs`) and the benches
//! include it by `#[path]`.
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: counting_alloc::CountingAlloc = counting_alloc::CountingAlloc::new();
//!
//! let (_, used) = counting_alloc::count_thread(|| steady_state_work());
//! assert_eq!(used.allocations(), 0);
//! ```
//!
//! It keeps process-wide counters (on the allocator value) and per-thread
//! counters (thread-locals with `const` initialisers and no destructor, so
//! reading them never allocates). [`count_thread`] and [`AllocScope`] count
//! what *this thread* allocated between two points, unaffected by other
//! threads.

#![allow(dead_code)] // each test or bench binary uses a part of it

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Counts calls into the system allocator.
#[derive(Debug)]
pub struct CountingAlloc {
    allocs: AtomicU64,
    reallocs: AtomicU64,
    deallocs: AtomicU64,
    bytes: AtomicU64,
}

impl Default for CountingAlloc {
    fn default() -> Self {
        Self::new()
    }
}

/// Allocation counters: process-wide ([`CountingAlloc::stats`]) or for one
/// thread ([`thread_stats`]), or the difference of two snapshots.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocStats {
    /// `alloc` / `alloc_zeroed` calls.
    pub allocs: u64,
    /// `realloc` calls (each may allocate).
    pub reallocs: u64,
    /// `dealloc` calls.
    pub deallocs: u64,
    /// Bytes requested by `alloc`, `alloc_zeroed` and growing `realloc`s.
    pub bytes: u64,
}

impl AllocStats {
    /// Calls that may have taken new memory: `allocs + reallocs`.
    pub const fn allocations(&self) -> u64 {
        self.allocs + self.reallocs
    }

    /// `self - earlier`, field by field (saturating).
    pub const fn since(&self, earlier: &AllocStats) -> AllocStats {
        AllocStats {
            allocs: self.allocs.saturating_sub(earlier.allocs),
            reallocs: self.reallocs.saturating_sub(earlier.reallocs),
            deallocs: self.deallocs.saturating_sub(earlier.deallocs),
            bytes: self.bytes.saturating_sub(earlier.bytes),
        }
    }
}

/// Set on the first call through any `CountingAlloc` (so a report can tell
/// "0 allocations" from "not counting").
static ACTIVE: AtomicBool = AtomicBool::new(false);

thread_local! {
    static T_ALLOCS: Cell<u64> = const { Cell::new(0) };
    static T_REALLOCS: Cell<u64> = const { Cell::new(0) };
    static T_DEALLOCS: Cell<u64> = const { Cell::new(0) };
    static T_BYTES: Cell<u64> = const { Cell::new(0) };
}

#[inline]
fn bump(key: &'static std::thread::LocalKey<Cell<u64>>, by: u64) {
    // `try_with`: never fails for a const-initialised, destructor-free
    // thread-local, but never panic inside the allocator either.
    let _ = key.try_with(|c| c.set(c.get().wrapping_add(by)));
}

impl CountingAlloc {
    /// A counter at zero.
    pub const fn new() -> CountingAlloc {
        CountingAlloc {
            allocs: AtomicU64::new(0),
            reallocs: AtomicU64::new(0),
            deallocs: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        }
    }

    /// Process-wide counters so far (Relaxed: statistics only).
    pub fn stats(&self) -> AllocStats {
        AllocStats {
            allocs: self.allocs.load(Ordering::Relaxed),
            reallocs: self.reallocs.load(Ordering::Relaxed),
            deallocs: self.deallocs.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
        }
    }

    #[inline]
    fn note_alloc(&self, size: usize) {
        if !ACTIVE.load(Ordering::Relaxed) {
            ACTIVE.store(true, Ordering::Relaxed);
        }
        self.allocs.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(size as u64, Ordering::Relaxed);
        bump(&T_ALLOCS, 1);
        bump(&T_BYTES, size as u64);
    }
}

/// Whether a `CountingAlloc` is the global allocator of this process (it
/// has served at least one call; any Rust program allocates before `main`).
pub fn is_active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees carry over; the counting touches only
// atomics and allocation-free thread-locals.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.note_alloc(layout.size());
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract for
        // `layout`, which is exactly `System.alloc`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.note_alloc(layout.size());
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.deallocs.fetch_add(1, Ordering::Relaxed);
        bump(&T_DEALLOCS, 1);
        // SAFETY: `ptr` was allocated by this allocator, i.e. by `System`,
        // with `layout` (the caller's contract).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.reallocs.fetch_add(1, Ordering::Relaxed);
        bump(&T_REALLOCS, 1);
        let grow = new_size.saturating_sub(layout.size()) as u64;
        self.bytes.fetch_add(grow, Ordering::Relaxed);
        bump(&T_BYTES, grow);
        // SAFETY: `ptr`/`layout` came from this allocator (`System`) and
        // `new_size` satisfies `realloc`'s contract (the caller's duty).
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// This thread's counters so far (all zero unless a [`CountingAlloc`] is the
/// global allocator).
pub fn thread_stats() -> AllocStats {
    AllocStats {
        allocs: T_ALLOCS.try_with(Cell::get).unwrap_or(0),
        reallocs: T_REALLOCS.try_with(Cell::get).unwrap_or(0),
        deallocs: T_DEALLOCS.try_with(Cell::get).unwrap_or(0),
        bytes: T_BYTES.try_with(Cell::get).unwrap_or(0),
    }
}

/// Counts this thread's allocations from [`AllocScope::begin`] to
/// [`AllocScope::end`].
#[derive(Clone, Copy, Debug)]
pub struct AllocScope {
    start: AllocStats,
}

impl AllocScope {
    /// Point A.
    pub fn begin() -> AllocScope {
        AllocScope {
            start: thread_stats(),
        }
    }

    /// Point B: what this thread did since A.
    pub fn end(self) -> AllocStats {
        thread_stats().since(&self.start)
    }
}

/// Run `f` and return its result with what this thread allocated inside it.
pub fn count_thread<R>(f: impl FnOnce() -> R) -> (R, AllocStats) {
    let scope = AllocScope::begin();
    let r = f();
    (r, scope.end())
}
