//! The HAL: everything that touches memory shared with another process or the
//! device, and the kernel.
//!
//! [`mem`] owns `mmap` (`Mapping`/`Region`) and [`eventfd`] owns eventfds.
//! On top of them sits the device bus, the [`Hal`] trait: the one interface the
//! device half of xunds (request staging, the simulated device, the NQ
//! harvest) uses to map regions, reach their memory and notify or wait on
//! events. Memory is one generic method, [`Hal::access`], over an [`Access`]
//! (loads, stores and fetch-adds of a [`Width`], byte reads and writes, word
//! runs, 16-byte records, the doorbell); the named operations callers use
//! (`copy_in`, `load_u32`, `write_desc`, `tail_inc`, ...) are provided on
//! top of it. Nothing above this layer holds a pointer into device memory:
//! it holds [`RegionHandle`]s and offsets.
//!
//! Backends:
//! - [`linux::LinuxHal`]: real `MAP_SHARED` mappings (`hal::mem::Mapping`,
//!   anonymous or file-backed) and real eventfds.
//!
//! The simulator's backends and middleware (the in-memory fake, the tracer,
//! the fault injector) implement [`Hal`] from `crate::sim`.
//!
//! Time is never read here: waits take their bound as an argument and the
//! fake never blocks. Memory another agent may write is reached only through
//! raw pointers with atomic or volatile access (Linux) or owned atomics (fake);
//! `// SAFETY:` is on every unsafe block.

pub mod linux;
pub mod os;

pub use os::{eventfd, mem};

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

impl RegionId {
    /// The id packed into one word: the variant in bits 32.., its fields
    /// below, the core in the low byte (one-to-one, so two ids are equal
    /// exactly when their keys are). The trace names a region by the same
    /// two halves (`sim::tracer`), so a traced access reads them off its
    /// handle.
    pub(crate) const fn key(self) -> u64 {
        const fn k(variant: u64, fields: u64) -> u64 {
            variant << 32 | fields
        }
        match self {
            RegionId::Dram => k(0, 0),
            RegionId::Dmem { core } => k(1, core as u64),
            RegionId::Regs { core } => k(2, core as u64),
            RegionId::DescRing { core, dir } => k(3, core as u64 | (dir as u64) << 8),
            RegionId::NqRing { core, engine } => k(4, core as u64 | (engine as u64) << 8),
            RegionId::WorkItems { core } => k(5, core as u64),
            RegionId::Other { tag } => k(6, tag as u64),
        }
    }
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
    /// `id` packed into one word ([`RegionId::key`]), so a backend's hot
    /// path checks the id with one compare instead of a match per variant.
    key: u64,
    len: usize,
}

impl RegionHandle {
    /// Built by backends only.
    pub(crate) const fn new(index: u32, id: RegionId, len: usize) -> Self {
        Self {
            index,
            id,
            key: id.key(),
            len,
        }
    }

    /// The backend's table index.
    #[inline(always)]
    pub(crate) const fn index(&self) -> usize {
        self.index as usize
    }

    /// The id as one word ([`RegionId::key`]).
    #[inline(always)]
    pub(crate) const fn key(&self) -> u64 {
        self.key
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

impl EventId {
    /// The id packed into one word, as [`RegionId::key`] packs a region's
    /// (the trace names an event by its two halves).
    pub(crate) const fn key(self) -> u64 {
        match self {
            EventId::NqIrq { core } => core as u64,
            EventId::Other { tag } => 1 << 32 | tag as u64,
        }
    }
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

/// The width of a word access (the discriminant is its size and alignment).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Width {
    /// 4 bytes, 4-aligned.
    W32 = 4,
    /// 8 bytes, 8-aligned.
    W64 = 8,
}

/// What a 16-byte record is. Every kind publishes the same way (see
/// [`Access::WriteRecord`]); the kind names the operation in traces and lets
/// the fault injector pick its targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Record {
    /// Any other 16-byte record.
    Plain,
    /// A UDMA descriptor (docs/abi.md §1.11).
    Desc,
    /// An NQ record (docs/abi.md §1.13).
    Nq,
}

/// One access to a mapped region: the whole memory surface of [`Hal`],
/// in the manner of vm-memory's `Bytes` (reads and writes of N bytes) and
/// its atomic access (loads, stores and read-modify-writes of a width).
/// [`Hal::access`] returns the word a variant produces (zero-extended) and
/// 0 for the others.
#[derive(Debug)]
pub enum Access<'a> {
    /// Load a word with an ordering; returns it.
    Load(Width, Ordering),
    /// Store the low `width` bytes of the value with an ordering.
    Store(Width, u64, Ordering),
    /// Add the value (wrapping, truncated to the width) with an ordering;
    /// returns the old word.
    FetchAdd(Width, u64, Ordering),
    /// The doorbell: add `n` to a 4-byte tail-increment register with
    /// Release (everything staged before is visible to the device once it
    /// sees the new tail; docs/abi.md §1.10). Returns the new running total.
    TailInc(u32),
    /// Load consecutive 4-byte words, each Relaxed (the engines' operand
    /// reads); the range is checked once and the run reaches the backend
    /// whole.
    LoadRun(&'a mut [u32]),
    /// Store consecutive 4-byte words, each Relaxed (the engines' results).
    StoreRun(&'a [u32]),
    /// Copy bytes out (`copy_out`): any offset, any length.
    Read(&'a mut [u8]),
    /// Copy bytes in (the runtime's `dmem_buf_copyin`).
    Write(&'a [u8]),
    /// Read a 16-byte record (16-aligned): [`PUBLISH_HALF`] with Acquire
    /// first, then the rest.
    ReadRecord(Record, &'a mut [u8; RECORD]),
    /// Write a 16-byte record (16-aligned): the bytes after
    /// [`PUBLISH_HALF`] first (Relaxed), then [`PUBLISH_HALF`] with Release.
    WriteRecord(Record, &'a [u8; RECORD]),
}

impl Access<'_> {
    /// `(bytes touched, alignment required)`: the bounds rule every backend
    /// applies with one check before touching memory.
    #[inline(always)]
    pub fn span(&self) -> (usize, usize) {
        match self {
            Access::Load(w, _) | Access::Store(w, ..) | Access::FetchAdd(w, ..) => {
                (*w as usize, *w as usize)
            }
            Access::TailInc(_) => (4, 4),
            Access::LoadRun(w) => (4 * w.len(), 4),
            Access::StoreRun(w) => (4 * w.len(), 4),
            Access::Read(b) => (b.len(), 1),
            Access::Write(b) => (b.len(), 1),
            Access::ReadRecord(..) | Access::WriteRecord(..) => (RECORD, RECORD),
        }
    }

    /// The same access, borrowing this one's buffers again (so a wrapper can
    /// pass it on and still look at the bytes afterwards).
    #[inline(always)]
    pub fn reborrow(&mut self) -> Access<'_> {
        match self {
            Access::Load(w, o) => Access::Load(*w, *o),
            Access::Store(w, v, o) => Access::Store(*w, *v, *o),
            Access::FetchAdd(w, v, o) => Access::FetchAdd(*w, *v, *o),
            Access::TailInc(n) => Access::TailInc(*n),
            Access::LoadRun(w) => Access::LoadRun(w),
            Access::StoreRun(w) => Access::StoreRun(w),
            Access::Read(b) => Access::Read(b),
            Access::Write(b) => Access::Write(b),
            Access::ReadRecord(k, r) => Access::ReadRecord(*k, r),
            Access::WriteRecord(k, r) => Access::WriteRecord(*k, r),
        }
    }
}

/// Everything that touches device memory or the kernel.
///
/// Handles are created while the device is built (`&mut self`); every other
/// operation takes `&self`, so a built backend is shared (`Arc`) between the
/// producer that stages requests, the device that consumes them and the
/// worker that harvests completions. Offsets are relative to the region base.
///
/// Memory is reached through one method, [`access`](Hal::access), generic
/// over the [`Access`]: a backend implements it once, a middleware wraps it
/// once. The word, run, copy and record methods callers use are provided on
/// top of it and are not overridden. Word operations take an explicit
/// [`Ordering`]; the record operations publish with the ordering built in
/// (see [`Access::WriteRecord`] and [`Access::ReadRecord`]).
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

    /// Perform `a` at `off` of `r` after the bounds and alignment check of
    /// [`Access::span`]. Returns the loaded word, the old word of a
    /// fetch-add, the doorbell's new total, or 0.
    fn access(&self, r: RegionHandle, off: usize, a: Access<'_>) -> Result<u64, HalError>;

    /// Add `n` to an event's counter (`write(efd, &n, 8)`).
    fn notify(&self, ev: EventHandle, n: u64) -> Result<(), HalError>;

    /// Wait up to `timeout_ns` for the counter to be non-zero, then read and
    /// reset it. The fake backend never blocks: it answers at once.
    fn wait(&self, ev: EventHandle, timeout_ns: u64) -> Result<Wait, HalError>;

    /// The event's file descriptor, when the backend has real ones.
    fn event_fd(&self, ev: EventHandle) -> Option<RawFd>;

    /// Copy `data` into the region at `off` ([`Access::Write`]).
    #[inline]
    fn copy_in(&self, r: RegionHandle, off: usize, data: &[u8]) -> Result<(), HalError> {
        self.access(r, off, Access::Write(data)).map(drop)
    }

    /// Copy `out.len()` bytes at `off` out of the region ([`Access::Read`]).
    #[inline]
    fn copy_out(&self, r: RegionHandle, off: usize, out: &mut [u8]) -> Result<(), HalError> {
        self.access(r, off, Access::Read(out)).map(drop)
    }

    /// Load the 4-byte word at `off` (4-aligned).
    #[inline]
    fn load_u32(&self, r: RegionHandle, off: usize, order: Ordering) -> Result<u32, HalError> {
        Ok(self.access(r, off, Access::Load(Width::W32, order))? as u32)
    }

    /// Store the 4-byte word at `off` (4-aligned).
    #[inline]
    fn store_u32(&self, r: RegionHandle, off: usize, v: u32, o: Ordering) -> Result<(), HalError> {
        self.access(r, off, Access::Store(Width::W32, v.into(), o))
            .map(drop)
    }

    /// Load `out.len()` consecutive 4-byte words from `off` (4-aligned),
    /// each Relaxed ([`Access::LoadRun`]).
    #[inline]
    fn load_u32s(&self, r: RegionHandle, off: usize, out: &mut [u32]) -> Result<(), HalError> {
        self.access(r, off, Access::LoadRun(out)).map(drop)
    }

    /// Store `vals` as consecutive 4-byte words at `off` (4-aligned), each
    /// Relaxed ([`Access::StoreRun`]).
    #[inline]
    fn store_u32s(&self, r: RegionHandle, off: usize, vals: &[u32]) -> Result<(), HalError> {
        self.access(r, off, Access::StoreRun(vals)).map(drop)
    }

    /// Add `v` (wrapping) to the 4-byte word at `off`; returns the old value.
    #[inline]
    fn fetch_add_u32(
        &self,
        r: RegionHandle,
        off: usize,
        v: u32,
        o: Ordering,
    ) -> Result<u32, HalError> {
        Ok(self.access(r, off, Access::FetchAdd(Width::W32, v.into(), o))? as u32)
    }

    /// Load the 8-byte word at `off` (8-aligned).
    #[inline]
    fn load_u64(&self, r: RegionHandle, off: usize, order: Ordering) -> Result<u64, HalError> {
        self.access(r, off, Access::Load(Width::W64, order))
    }

    /// Store the 8-byte word at `off` (8-aligned).
    #[inline]
    fn store_u64(&self, r: RegionHandle, off: usize, v: u64, o: Ordering) -> Result<(), HalError> {
        self.access(r, off, Access::Store(Width::W64, v, o))
            .map(drop)
    }

    /// Append a descriptor: write the 16 bytes (already stamped with the
    /// ring id) at slot `index` of `ring`, `len_ctrl` last with Release.
    #[inline]
    fn write_desc(&self, ring: RegionHandle, i: u32, d: &[u8; RECORD]) -> Result<(), HalError> {
        self.access(ring, slot_offset(i), Access::WriteRecord(Record::Desc, d))
            .map(drop)
    }

    /// Read the descriptor at slot `index` (`len_ctrl` first, Acquire).
    #[inline]
    fn read_desc(&self, ring: RegionHandle, index: u32) -> Result<[u8; RECORD], HalError> {
        read_record(self, ring, slot_offset(index), Record::Desc)
    }

    /// The doorbell ([`Access::TailInc`]): add `n` to the tail-increment
    /// register at `off` of a register block. Returns the new running total.
    #[inline]
    fn tail_inc(&self, regs: RegionHandle, off: usize, n: u32) -> Result<u32, HalError> {
        Ok(self.access(regs, off, Access::TailInc(n))? as u32)
    }

    /// Write an NQ record at slot `index` of `ring` (phase half last, Release).
    #[inline]
    fn write_nq(&self, ring: RegionHandle, i: u32, e: &[u8; RECORD]) -> Result<(), HalError> {
        self.access(ring, slot_offset(i), Access::WriteRecord(Record::Nq, e))
            .map(drop)
    }

    /// Read the NQ record at slot `index` (phase half first, Acquire).
    #[inline]
    fn read_nq(&self, ring: RegionHandle, index: u32) -> Result<[u8; RECORD], HalError> {
        read_record(self, ring, slot_offset(index), Record::Nq)
    }
}

#[inline]
fn read_record<H: Hal + ?Sized>(
    hal: &H,
    r: RegionHandle,
    off: usize,
    kind: Record,
) -> Result<[u8; RECORD], HalError> {
    let mut rec = [0u8; RECORD];
    hal.access(r, off, Access::ReadRecord(kind, &mut rec))?;
    Ok(rec)
}

/// Byte offset of record slot `index` in a ring.
pub const fn slot_offset(index: u32) -> usize {
    index as usize * RECORD
}

/// A 16-byte record as its two little-endian 8-byte halves: (`PUBLISH_HALF`,
/// the rest). Backends store the second half first and the first half last.
#[inline(always)]
pub(crate) fn record_halves(rec: &[u8; RECORD]) -> (u64, u64) {
    let (lo, hi) = rec.split_at(8);
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
    (word(lo), word(hi))
}

/// The inverse of [`record_halves`].
#[inline(always)]
pub(crate) fn record_from_halves(lo: u64, hi: u64) -> [u8; RECORD] {
    (u128::from(lo) | u128::from(hi) << 64).to_le_bytes()
}

/// An id a backend's [`Table`] keeps: packed into one word, so a lookup
/// checks it with one compare instead of a match per variant.
pub(crate) trait Key: Copy + fmt::Display {
    /// The id as one word, one-to-one.
    fn key(self) -> u64;
}

impl Key for RegionId {
    fn key(self) -> u64 {
        RegionId::key(self)
    }
}

impl Key for EventId {
    fn key(self) -> u64 {
        EventId::key(self)
    }
}

/// A backend's table of regions or events: entries in creation order, each
/// found by its handle's index and checked against the handle's id (its
/// [`Key`]), so a handle from another backend (or another table) is
/// `BadHandle`.
#[derive(Clone, Debug)]
pub(crate) struct Table<K, V> {
    entries: Vec<(K, u64, V)>,
}

impl<K, V> Default for Table<K, V> {
    fn default() -> Self {
        Table {
            entries: Vec::new(),
        }
    }
}

impl<K: Key, V> Table<K, V> {
    /// Add `id` with the value `make` builds; `AlreadyMapped` when `id` is
    /// taken (nothing is built then). Returns the new entry's index.
    pub(crate) fn insert(
        &mut self,
        id: K,
        make: impl FnOnce() -> Result<V, HalError>,
    ) -> Result<u32, HalError> {
        let key = id.key();
        if self.entries.iter().any(|&(_, k, _)| k == key) {
            return Err(HalError::AlreadyMapped(id.to_string()));
        }
        let index = u32::try_from(self.entries.len()).map_err(|_| HalError::BadHandle)?;
        self.entries.push((id, key, make()?));
        Ok(index)
    }

    /// The value at `index`, if its id's key is `key`.
    #[inline(always)]
    pub(crate) fn get(&self, index: usize, key: u64) -> Option<&V> {
        match self.entries.get(index) {
            Some((_, k, v)) if *k == key => Some(v),
            _ => None,
        }
    }

    /// Every id, in creation order (the fake HAL's `Debug`).
    #[cfg(feature = "sim")]
    pub(crate) fn ids(&self) -> impl Iterator<Item = K> + '_ {
        self.entries.iter().map(|(k, ..)| *k)
    }
}

impl<V> Table<EventId, V> {
    /// The event `ev` names: `BadHandle` unless this table made it.
    pub(crate) fn event(&self, ev: EventHandle) -> Result<&V, HalError> {
        self.get(ev.index(), ev.id().key())
            .ok_or(HalError::BadHandle)
    }
}

/// Check `[off, off + len)` against a region of `region_len` bytes and the
/// alignment `align`; the common bounds rule of every backend.
#[inline]
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
    (@ name, $s:tt, $i:expr) => { forward!($s => $i; fn name(&self) -> String;); };
    (@ map, $s:tt, $i:expr) => {
        forward!($s => $i;
            fn map(&mut self, id: RegionId, len: usize) -> Result<RegionHandle, HalError>;);
    };
    (@ base_addr, $s:tt, $i:expr) => {
        forward!($s => $i; fn base_addr(&self, r: RegionHandle) -> Result<u64, HalError>;);
    };
    (@ event, $s:tt, $i:expr) => {
        forward!($s => $i; fn event(&mut self, id: EventId) -> Result<EventHandle, HalError>;);
    };
    (@ access, $s:tt, $i:expr) => {
        forward!($s => $i;
            fn access(&self, r: RegionHandle, off: usize, a: Access<'_>) -> Result<u64, HalError>;);
    };
    (@ notify, $s:tt, $i:expr) => {
        forward!($s => $i; fn notify(&self, ev: EventHandle, n: u64) -> Result<(), HalError>;);
    };
    (@ wait, $s:tt, $i:expr) => {
        forward!($s => $i;
            fn wait(&self, ev: EventHandle, timeout_ns: u64) -> Result<Wait, HalError>;);
    };
    (@ event_fd, $s:tt, $i:expr) => {
        forward!($s => $i; fn event_fd(&self, ev: EventHandle) -> Option<RawFd>;);
    };
}
pub(crate) use forward_hal;

impl<H: Hal + ?Sized> Hal for Box<H> {
    forward_hal!(self => **self;
        name, map, base_addr, event, access, notify, wait, event_fd);
}
