//! The HAL: everything that touches memory shared with another process or the
//! device, and the kernel.
//!
//! [`mem`] owns `mmap` (`Mapping`/`Region`) and [`eventfd`] owns eventfds.
//! On top of them sits the [`Hal`] trait: the one interface the device half of
//! xunds (request staging, the simulated device, the NQ harvest) uses to map
//! regions, copy bytes into device memory, append 16-byte descriptors, ring the
//! tail-increment doorbell, write and read NQ records, and notify or wait on
//! events. Nothing above this layer holds a pointer into device memory: it
//! holds [`RegionHandle`]s and offsets.
//!
//! Backends:
//! - [`linux::LinuxHal`]: real `MAP_SHARED` mappings (`hal::mem::Mapping`,
//!   anonymous or file-backed) and real eventfds.
//! - [`fake::FakeHal`]: in-memory words (`crate::sync` atomics, so loom sees
//!   them under `--cfg loom`), simulated events that never block. Deterministic.
//!
//! Middleware that wraps any backend:
//! - [`tracer::Tracer`]: records every operation as a deterministic
//!   [`tracer::TraceOp`] (regions by name, offsets relative to the region base),
//!   for snapshots and `tracer::replay` (`testkit`).
//! - [`fault::FaultInjector`]: seeded ([`crate::prng::SplitMix64`]) corruption
//!   of descriptors, dropped doorbells, dropped or rewritten NQ records.
//!
//! Time is never read here: waits take their bound as an argument and the
//! fake never blocks. Memory another agent may write is reached only through
//! raw pointers with atomic or volatile access (Linux) or owned atomics (fake);
//! `// SAFETY:` is on every unsafe block.

pub mod eventfd;
pub mod fake;
pub mod fault;
pub mod linux;
pub mod mem;
mod sigbus;
pub mod tracer;

use core::fmt;
use std::os::fd::RawFd;

pub use crate::sync::atomic::Ordering;
pub use eventfd::Wait;

wire_enum! {
    /// Direction of a UDMA ring (docs/abi.md §1.11: each queue pairs an M2S and an
    /// S2M ring of the same length).
    pub enum Dir(u8) {
        /// Memory to stream: the source side ("TX").
        M2s = 0 => "m2s",
        /// Stream to memory: the destination side ("RX").
        S2m = 1 => "s2m",
    }
}

/// What a mapped region is. Used for trace names (deterministic, unlike
/// addresses) and by the fault injector to pick its targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RegionId {
    /// Device DRAM (model images, tensors, request buffers).
    Dram,
    /// A core's sequencer data memory (the request the sequencer executes).
    Dmem {
        /// Core index.
        core: u8,
    },
    /// A core's register block (tail-increment, event, head, status registers).
    Regs {
        /// Core index.
        core: u8,
    },
    /// One ring of a core's request DMA queue.
    DescRing {
        /// Core index.
        core: u8,
        /// M2S or S2M.
        dir: Dir,
    },
    /// A core's notification-queue ring for one engine.
    NqRing {
        /// Core index.
        core: u8,
        /// Engine index (0 PE .. 4 SP).
        engine: u8,
    },
    /// A core's host region of 208-byte work items (`tpb_execution_info_t`,
    /// docs/abi.md §1.6): the XU slots' `exec_info` words point into it.
    WorkItems {
        /// Core index.
        core: u8,
    },
    /// Anything else a user of the HAL maps (tests, other subsystems).
    Other {
        /// Caller-chosen number.
        tag: u32,
    },
}

impl fmt::Display for RegionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RegionId::Dram => f.write_str("dram"),
            RegionId::Dmem { core } => write!(f, "dmem{core}"),
            RegionId::Regs { core } => write!(f, "regs{core}"),
            RegionId::DescRing { core, dir } => write!(f, "{}{core}", dir.name()),
            RegionId::NqRing { core, engine } => {
                write!(f, "nq{core}.{}", crate::wire::nq::engine_name(engine))
            }
            RegionId::WorkItems { core } => write!(f, "items{core}"),
            RegionId::Other { tag } => write!(f, "other{tag}"),
        }
    }
}

/// A mapped region as the HAL's users see it: an opaque index into the
/// backend's table, plus its id and length (for traces and bounds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegionHandle {
    index: u32,
    id: RegionId,
    len: usize,
}

impl RegionHandle {
    /// Built by backends only.
    pub(crate) const fn new(index: u32, id: RegionId, len: usize) -> Self {
        Self { index, id, len }
    }

    /// The backend's table index.
    pub(crate) const fn index(&self) -> usize {
        self.index as usize
    }

    /// What this region is.
    pub const fn id(&self) -> RegionId {
        self.id
    }

    /// Length in bytes.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// `true` for an empty region (never: zero-length maps are refused).
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// What an event is for (trace names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventId {
    /// The device's "NQ records written" interrupt for a core.
    NqIrq {
        /// Core index.
        core: u8,
    },
    /// Anything else (caller-chosen number).
    Other {
        /// Caller-chosen number.
        tag: u32,
    },
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            EventId::NqIrq { core } => write!(f, "nq_irq{core}"),
            EventId::Other { tag } => write!(f, "event{tag}"),
        }
    }
}

/// An event created by [`Hal::event`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventHandle {
    index: u32,
    id: EventId,
}

impl EventHandle {
    pub(crate) const fn new(index: u32, id: EventId) -> Self {
        Self { index, id }
    }

    pub(crate) const fn index(&self) -> usize {
        self.index as usize
    }

    /// What this event is.
    pub const fn id(&self) -> EventId {
        self.id
    }
}

error_enum! {
    /// A HAL operation refused or failed.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum HalError {
        /// `[off, off + len)` is outside the region.
        OutOfBounds {
            /// The region.
            region: RegionId,
            /// Offset asked for.
            off: usize,
            /// Length asked for.
            len: usize,
            /// The region's length.
            region_len: usize,
        } => "{region}: {len} bytes at +{off:#x} outside the region ({region_len} bytes)",
        /// A word or record access at a misaligned offset.
        Misaligned {
            /// The region.
            region: RegionId,
            /// Offset asked for.
            off: usize,
            /// Required alignment.
            align: usize,
        } => "{region}: offset +{off:#x} is not {align}-byte aligned",
        /// A handle this backend did not hand out.
        BadHandle => "handle not issued by this HAL backend",
        /// A region or event with this id is already mapped.
        AlreadyMapped(String) => "{0} is already mapped",
        /// A zero-length region.
        ZeroLength(RegionId) => "{0}: cannot map zero bytes",
        /// An operating-system call failed.
        Os {
            /// What was being done.
            op: &'static str,
            /// `errno`, when there is one.
            errno: Option<i32>,
            /// The error text.
            text: String,
        } => "{op}: {text}",
    }
}

impl HalError {
    pub(crate) fn os(op: &'static str, e: &std::io::Error) -> HalError {
        HalError::Os {
            op,
            errno: e.raw_os_error(),
            text: e.to_string(),
        }
    }
}

/// Size of one descriptor or NQ record.
pub const RECORD: usize = 16;
/// The half of a 16-byte record that carries its validity mark (the UDMA
/// ring id in `len_ctrl`, the NQ phase bit): bytes `0..8`, written last with
/// release ordering and read first with acquire ordering.
pub const PUBLISH_HALF: core::ops::Range<usize> = 0..8;

const _: () = assert!(crate::wire::udma::field::LEN_CTRL + 4 <= PUBLISH_HALF.end);
const _: () = assert!(crate::wire::nq::field::FLAGS < PUBLISH_HALF.end);
const _: () = assert!(crate::wire::udma::SIZE == RECORD && crate::wire::nq::SIZE == RECORD);

/// Everything that touches device memory or the kernel.
///
/// Handles are created while the device is built (`&mut self`); every other
/// operation takes `&self`, so a built backend is shared (`Arc`) between the
/// producer that stages requests, the device that consumes them and the
/// worker that harvests completions. Offsets are relative to the region base.
///
/// Word operations take an explicit [`Ordering`]; the record operations
/// ([`write_desc`](Hal::write_desc), [`write_nq`](Hal::write_nq) and their
/// readers) publish with the ordering built in: the 8 bytes after
/// [`PUBLISH_HALF`] first (relaxed), then [`PUBLISH_HALF`] with release; a
/// reader loads [`PUBLISH_HALF`] with acquire, then the rest.
pub trait Hal: Send + Sync {
    /// Backend name (`linux`, `fake`, `tracer(linux)`, ...).
    fn name(&self) -> String;

    /// Map a zero-filled region of `len` bytes.
    fn map(&mut self, id: RegionId, len: usize) -> Result<RegionHandle, HalError>;

    /// The host address of the region's first byte: what a pointer word
    /// into the region holds (a slot's `exec_info` names a work item by it,
    /// docs/abi.md §1.6). Never dereferenced above the HAL: users turn
    /// such a word back into an offset with a range and stride check.
    fn base_addr(&self, r: RegionHandle) -> Result<u64, HalError>;

    /// Create an event (counter 0).
    fn event(&mut self, id: EventId) -> Result<EventHandle, HalError>;

    /// Copy `data` into the region at `off` (the runtime's `dmem_buf_copyin`).
    fn copy_in(&self, r: RegionHandle, off: usize, data: &[u8]) -> Result<(), HalError>;

    /// Copy `out.len()` bytes at `off` out of the region.
    fn copy_out(&self, r: RegionHandle, off: usize, out: &mut [u8]) -> Result<(), HalError>;

    /// Load the 4-byte word at `off` (4-aligned).
    fn load_u32(&self, r: RegionHandle, off: usize, order: Ordering) -> Result<u32, HalError>;

    /// Store the 4-byte word at `off` (4-aligned).
    fn store_u32(
        &self,
        r: RegionHandle,
        off: usize,
        v: u32,
        order: Ordering,
    ) -> Result<(), HalError>;

    /// Load `out.len()` consecutive 4-byte words from `off` (4-aligned),
    /// each with a Relaxed load: the engines' operand reads. The default is
    /// one [`load_u32`](Hal::load_u32) per word (so wrappers that trace or
    /// inject faults per word keep doing so); a backend over plain mappings
    /// checks the range once and loads in a tight loop.
    fn load_u32s(&self, r: RegionHandle, off: usize, out: &mut [u32]) -> Result<(), HalError> {
        for (i, w) in out.iter_mut().enumerate() {
            *w = self.load_u32(r, off + 4 * i, Ordering::Relaxed)?;
        }
        Ok(())
    }

    /// Store `vals` as consecutive 4-byte words at `off` (4-aligned), each
    /// with a Relaxed store: the engines' result writes. Default: one
    /// [`store_u32`](Hal::store_u32) per word (see [`load_u32s`](Hal::load_u32s)).
    fn store_u32s(&self, r: RegionHandle, off: usize, vals: &[u32]) -> Result<(), HalError> {
        for (i, &v) in vals.iter().enumerate() {
            self.store_u32(r, off + 4 * i, v, Ordering::Relaxed)?;
        }
        Ok(())
    }

    /// Add `v` (wrapping) to the 4-byte word at `off`; returns the old value.
    fn fetch_add_u32(
        &self,
        r: RegionHandle,
        off: usize,
        v: u32,
        order: Ordering,
    ) -> Result<u32, HalError>;

    /// Load the 8-byte word at `off` (8-aligned).
    fn load_u64(&self, r: RegionHandle, off: usize, order: Ordering) -> Result<u64, HalError>;

    /// Store the 8-byte word at `off` (8-aligned).
    fn store_u64(
        &self,
        r: RegionHandle,
        off: usize,
        v: u64,
        order: Ordering,
    ) -> Result<(), HalError>;

    /// Write a 16-byte record at `off` (16-aligned): bytes 8..16 relaxed, then
    /// bytes 0..8 with release. The building block of the two record ops.
    fn write16(&self, r: RegionHandle, off: usize, rec: &[u8; RECORD]) -> Result<(), HalError>;

    /// Read a 16-byte record at `off`: bytes 0..8 with acquire, then 8..16.
    fn read16(&self, r: RegionHandle, off: usize) -> Result<[u8; RECORD], HalError>;

    /// Append a descriptor: write the 16 bytes (already stamped with the
    /// ring id) at slot `index` of `ring`, `len_ctrl` last with release.
    fn write_desc(
        &self,
        ring: RegionHandle,
        index: u32,
        desc: &[u8; RECORD],
    ) -> Result<(), HalError> {
        self.write16(ring, slot_offset(index), desc)
    }

    /// Read the descriptor at slot `index` (`len_ctrl` first, acquire).
    fn read_desc(&self, ring: RegionHandle, index: u32) -> Result<[u8; RECORD], HalError> {
        self.read16(ring, slot_offset(index))
    }

    /// The doorbell: add `n` to the tail-increment register at `off` of a
    /// register block (release: everything staged before is visible to the
    /// device once it sees the new tail). Returns the new running total.
    fn tail_inc(&self, regs: RegionHandle, off: usize, n: u32) -> Result<u32, HalError> {
        // Ordering: Release pairs with the device's Acquire load of the same
        // tail register (docs/abi.md §1.10 "device publish boundary").
        Ok(self
            .fetch_add_u32(regs, off, n, Ordering::Release)?
            .wrapping_add(n))
    }

    /// Write an NQ record at slot `index` of `ring` (phase half last, release).
    fn write_nq(
        &self,
        ring: RegionHandle,
        index: u32,
        entry: &[u8; RECORD],
    ) -> Result<(), HalError> {
        self.write16(ring, slot_offset(index), entry)
    }

    /// Read the NQ record at slot `index` (phase half first, acquire).
    fn read_nq(&self, ring: RegionHandle, index: u32) -> Result<[u8; RECORD], HalError> {
        self.read16(ring, slot_offset(index))
    }

    /// Add `n` to an event's counter (`write(efd, &n, 8)`).
    fn notify(&self, ev: EventHandle, n: u64) -> Result<(), HalError>;

    /// Wait up to `timeout_ns` for the counter to be non-zero, then read and
    /// reset it. The fake backend never blocks: it answers at once.
    fn wait(&self, ev: EventHandle, timeout_ns: u64) -> Result<Wait, HalError>;

    /// The event's file descriptor, when the backend has real ones.
    fn event_fd(&self, ev: EventHandle) -> Option<RawFd>;
}

/// Byte offset of record slot `index` in a ring.
pub const fn slot_offset(index: u32) -> usize {
    index as usize * RECORD
}

/// A 16-byte record as its two little-endian 8-byte halves: (`PUBLISH_HALF`,
/// the rest). Backends store the second half first and the first half last.
pub(crate) fn record_halves(rec: &[u8; RECORD]) -> (u64, u64) {
    let (lo, hi) = rec.split_at(8);
    let word = |b: &[u8]| {
        let mut w = [0u8; 8];
        w.copy_from_slice(b);
        u64::from_le_bytes(w)
    };
    (word(lo), word(hi))
}

/// The inverse of [`record_halves`].
pub(crate) fn record_from_halves(lo: u64, hi: u64) -> [u8; RECORD] {
    let mut out = [0u8; RECORD];
    out[..8].copy_from_slice(&lo.to_le_bytes());
    out[8..].copy_from_slice(&hi.to_le_bytes());
    out
}

/// A backend's table of regions or events: entries in creation order, each
/// found by its handle's index and checked against the handle's id, so a
/// handle from another backend (or another table) is `BadHandle`.
#[derive(Clone, Debug)]
pub(crate) struct Table<K, V> {
    entries: Vec<(K, V)>,
}

impl<K, V> Default for Table<K, V> {
    fn default() -> Self {
        Table {
            entries: Vec::new(),
        }
    }
}

impl<K: Copy + PartialEq + fmt::Display, V> Table<K, V> {
    /// Add `id` with the value `make` builds; `AlreadyMapped` when `id` is
    /// taken (nothing is built then). Returns the new entry's index.
    pub(crate) fn insert(
        &mut self,
        id: K,
        make: impl FnOnce() -> Result<V, HalError>,
    ) -> Result<u32, HalError> {
        if self.entries.iter().any(|(k, _)| *k == id) {
            return Err(HalError::AlreadyMapped(id.to_string()));
        }
        let index = u32::try_from(self.entries.len()).map_err(|_| HalError::BadHandle)?;
        self.entries.push((id, make()?));
        Ok(index)
    }

    /// The value at `index`, if its id is `id`.
    pub(crate) fn get(&self, index: usize, id: K) -> Result<&V, HalError> {
        match self.entries.get(index) {
            Some((k, v)) if *k == id => Ok(v),
            _ => Err(HalError::BadHandle),
        }
    }

    /// Every id, in creation order.
    pub(crate) fn ids(&self) -> impl Iterator<Item = K> + '_ {
        self.entries.iter().map(|(k, _)| *k)
    }
}

/// Check `[off, off + len)` against a region of `region_len` bytes and the
/// alignment `align`; the common bounds rule of every backend.
pub(crate) fn check(r: RegionHandle, off: usize, len: usize, align: usize) -> Result<(), HalError> {
    let end = off.checked_add(len);
    if end.is_none_or(|e| e > r.len) {
        return Err(HalError::OutOfBounds {
            region: r.id,
            off,
            len,
            region_len: r.len,
        });
    }
    if off % align != 0 {
        return Err(HalError::Misaligned {
            region: r.id,
            off,
            align,
        });
    }
    Ok(())
}

/// Forward the listed [`Hal`] methods unchanged to another backend:
/// `forward_hal!(self => <expr reaching the inner backend>; method, ...)`.
/// Used by `Box<H>` and by middleware for the operations it does not touch;
/// each method's signature is written here once. The types are named as the
/// call site imports them (every `hal` module uses the same names); `self` is
/// passed in so the generated methods and the forwarding expression share it.
macro_rules! forward_hal {
    ($s:tt => $inner:expr; $($method:ident),* $(,)?) => {
        $( $crate::hal::forward_hal!(@ $method, $s, $inner); )*
    };
    (@ name, $s:tt, $inner:expr) => {
        fn name(&$s) -> String {
            $inner.name()
        }
    };
    (@ map, $s:tt, $inner:expr) => {
        fn map(&mut $s, id: RegionId, len: usize) -> Result<RegionHandle, HalError> {
            $inner.map(id, len)
        }
    };
    (@ base_addr, $s:tt, $inner:expr) => {
        fn base_addr(&$s, r: RegionHandle) -> Result<u64, HalError> {
            $inner.base_addr(r)
        }
    };
    (@ event, $s:tt, $inner:expr) => {
        fn event(&mut $s, id: EventId) -> Result<EventHandle, HalError> {
            $inner.event(id)
        }
    };
    (@ copy_in, $s:tt, $inner:expr) => {
        fn copy_in(&$s, r: RegionHandle, off: usize, data: &[u8]) -> Result<(), HalError> {
            $inner.copy_in(r, off, data)
        }
    };
    (@ copy_out, $s:tt, $inner:expr) => {
        fn copy_out(&$s, r: RegionHandle, off: usize, out: &mut [u8]) -> Result<(), HalError> {
            $inner.copy_out(r, off, out)
        }
    };
    (@ load_u32, $s:tt, $inner:expr) => {
        fn load_u32(&$s, r: RegionHandle, off: usize, o: Ordering) -> Result<u32, HalError> {
            $inner.load_u32(r, off, o)
        }
    };
    (@ store_u32, $s:tt, $inner:expr) => {
        fn store_u32(
            &$s,
            r: RegionHandle,
            off: usize,
            v: u32,
            o: Ordering,
        ) -> Result<(), HalError> {
            $inner.store_u32(r, off, v, o)
        }
    };
    (@ load_u32s, $s:tt, $inner:expr) => {
        fn load_u32s(&$s, r: RegionHandle, off: usize, out: &mut [u32]) -> Result<(), HalError> {
            $inner.load_u32s(r, off, out)
        }
    };
    (@ store_u32s, $s:tt, $inner:expr) => {
        fn store_u32s(&$s, r: RegionHandle, off: usize, vals: &[u32]) -> Result<(), HalError> {
            $inner.store_u32s(r, off, vals)
        }
    };
    (@ fetch_add_u32, $s:tt, $inner:expr) => {
        fn fetch_add_u32(
            &$s,
            r: RegionHandle,
            off: usize,
            v: u32,
            o: Ordering,
        ) -> Result<u32, HalError> {
            $inner.fetch_add_u32(r, off, v, o)
        }
    };
    (@ load_u64, $s:tt, $inner:expr) => {
        fn load_u64(&$s, r: RegionHandle, off: usize, o: Ordering) -> Result<u64, HalError> {
            $inner.load_u64(r, off, o)
        }
    };
    (@ store_u64, $s:tt, $inner:expr) => {
        fn store_u64(
            &$s,
            r: RegionHandle,
            off: usize,
            v: u64,
            o: Ordering,
        ) -> Result<(), HalError> {
            $inner.store_u64(r, off, v, o)
        }
    };
    (@ write16, $s:tt, $inner:expr) => {
        fn write16(&$s, r: RegionHandle, off: usize, rec: &[u8; RECORD]) -> Result<(), HalError> {
            $inner.write16(r, off, rec)
        }
    };
    (@ read16, $s:tt, $inner:expr) => {
        fn read16(&$s, r: RegionHandle, off: usize) -> Result<[u8; RECORD], HalError> {
            $inner.read16(r, off)
        }
    };
    (@ write_desc, $s:tt, $inner:expr) => {
        fn write_desc(&$s, ring: RegionHandle, i: u32, d: &[u8; RECORD]) -> Result<(), HalError> {
            $inner.write_desc(ring, i, d)
        }
    };
    (@ read_desc, $s:tt, $inner:expr) => {
        fn read_desc(&$s, ring: RegionHandle, i: u32) -> Result<[u8; RECORD], HalError> {
            $inner.read_desc(ring, i)
        }
    };
    (@ tail_inc, $s:tt, $inner:expr) => {
        fn tail_inc(&$s, regs: RegionHandle, off: usize, n: u32) -> Result<u32, HalError> {
            $inner.tail_inc(regs, off, n)
        }
    };
    (@ write_nq, $s:tt, $inner:expr) => {
        fn write_nq(&$s, ring: RegionHandle, i: u32, e: &[u8; RECORD]) -> Result<(), HalError> {
            $inner.write_nq(ring, i, e)
        }
    };
    (@ read_nq, $s:tt, $inner:expr) => {
        fn read_nq(&$s, ring: RegionHandle, i: u32) -> Result<[u8; RECORD], HalError> {
            $inner.read_nq(ring, i)
        }
    };
    (@ notify, $s:tt, $inner:expr) => {
        fn notify(&$s, ev: EventHandle, n: u64) -> Result<(), HalError> {
            $inner.notify(ev, n)
        }
    };
    (@ wait, $s:tt, $inner:expr) => {
        fn wait(&$s, ev: EventHandle, timeout_ns: u64) -> Result<Wait, HalError> {
            $inner.wait(ev, timeout_ns)
        }
    };
    (@ event_fd, $s:tt, $inner:expr) => {
        fn event_fd(&$s, ev: EventHandle) -> Option<RawFd> {
            $inner.event_fd(ev)
        }
    };
}
pub(crate) use forward_hal;

impl<H: Hal + ?Sized> Hal for Box<H> {
    forward_hal!(self => **self;
        name, map, base_addr, event, copy_in, copy_out, load_u32, store_u32, load_u32s, store_u32s,
        fetch_add_u32, load_u64,
        store_u64, write16, read16, write_desc, read_desc, tail_inc, write_nq, read_nq, notify,
        wait, event_fd);
}
