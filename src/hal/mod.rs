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
//!   for snapshots and [`tracer::replay`].
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
pub mod tracer;

use core::fmt;
use std::os::fd::RawFd;

pub use crate::sync::atomic::Ordering;
pub use eventfd::Wait;

/// Direction of a UDMA ring (SPEC-NOTES.md: each queue pairs an M2S and an
/// S2M ring of the same length).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dir {
    /// Memory to stream: the source side ("TX").
    M2s,
    /// Stream to memory: the destination side ("RX").
    S2m,
}

impl Dir {
    /// `m2s` or `s2m`.
    pub const fn name(self) -> &'static str {
        match self {
            Dir::M2s => "m2s",
            Dir::S2m => "s2m",
        }
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
            RegionId::NqRing { core, engine } => write!(
                f,
                "nq{core}.{}",
                crate::wire::nq::ENGINE_NAMES
                    .get(usize::from(engine))
                    .copied()
                    .unwrap_or("?")
            ),
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
    },
    /// A word or record access at a misaligned offset.
    Misaligned {
        /// The region.
        region: RegionId,
        /// Offset asked for.
        off: usize,
        /// Required alignment.
        align: usize,
    },
    /// A handle this backend did not hand out.
    BadHandle,
    /// A region or event with this id is already mapped.
    AlreadyMapped(String),
    /// A zero-length region.
    ZeroLength(RegionId),
    /// An operating-system call failed.
    Os {
        /// What was being done.
        op: &'static str,
        /// `errno`, when there is one.
        errno: Option<i32>,
        /// The error text.
        text: String,
    },
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

impl fmt::Display for HalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HalError::OutOfBounds {
                region,
                off,
                len,
                region_len,
            } => write!(
                f,
                "{region}: {len} bytes at +{off:#x} outside the region ({region_len} bytes)"
            ),
            HalError::Misaligned { region, off, align } => {
                write!(f, "{region}: offset +{off:#x} is not {align}-byte aligned")
            }
            HalError::BadHandle => f.write_str("handle not issued by this HAL backend"),
            HalError::AlreadyMapped(what) => write!(f, "{what} is already mapped"),
            HalError::ZeroLength(r) => write!(f, "{r}: cannot map zero bytes"),
            HalError::Os { op, text, .. } => write!(f, "{op}: {text}"),
        }
    }
}

impl std::error::Error for HalError {}

impl From<HalError> for crate::Error {
    fn from(e: HalError) -> Self {
        crate::Error::Other(format!("hal: {e}"))
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
        // tail register (seed 000 §3 "device publish boundary", §6 GOTCHA).
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

impl<H: Hal + ?Sized> Hal for Box<H> {
    fn name(&self) -> String {
        (**self).name()
    }
    fn map(&mut self, id: RegionId, len: usize) -> Result<RegionHandle, HalError> {
        (**self).map(id, len)
    }
    fn event(&mut self, id: EventId) -> Result<EventHandle, HalError> {
        (**self).event(id)
    }
    fn copy_in(&self, r: RegionHandle, off: usize, data: &[u8]) -> Result<(), HalError> {
        (**self).copy_in(r, off, data)
    }
    fn copy_out(&self, r: RegionHandle, off: usize, out: &mut [u8]) -> Result<(), HalError> {
        (**self).copy_out(r, off, out)
    }
    fn load_u32(&self, r: RegionHandle, off: usize, order: Ordering) -> Result<u32, HalError> {
        (**self).load_u32(r, off, order)
    }
    fn store_u32(&self, r: RegionHandle, off: usize, v: u32, o: Ordering) -> Result<(), HalError> {
        (**self).store_u32(r, off, v, o)
    }
    fn fetch_add_u32(
        &self,
        r: RegionHandle,
        off: usize,
        v: u32,
        o: Ordering,
    ) -> Result<u32, HalError> {
        (**self).fetch_add_u32(r, off, v, o)
    }
    fn load_u64(&self, r: RegionHandle, off: usize, order: Ordering) -> Result<u64, HalError> {
        (**self).load_u64(r, off, order)
    }
    fn store_u64(&self, r: RegionHandle, off: usize, v: u64, o: Ordering) -> Result<(), HalError> {
        (**self).store_u64(r, off, v, o)
    }
    fn write16(&self, r: RegionHandle, off: usize, rec: &[u8; RECORD]) -> Result<(), HalError> {
        (**self).write16(r, off, rec)
    }
    fn read16(&self, r: RegionHandle, off: usize) -> Result<[u8; RECORD], HalError> {
        (**self).read16(r, off)
    }
    fn write_desc(&self, ring: RegionHandle, index: u32, d: &[u8; RECORD]) -> Result<(), HalError> {
        (**self).write_desc(ring, index, d)
    }
    fn read_desc(&self, ring: RegionHandle, index: u32) -> Result<[u8; RECORD], HalError> {
        (**self).read_desc(ring, index)
    }
    fn tail_inc(&self, regs: RegionHandle, off: usize, n: u32) -> Result<u32, HalError> {
        (**self).tail_inc(regs, off, n)
    }
    fn write_nq(&self, ring: RegionHandle, index: u32, e: &[u8; RECORD]) -> Result<(), HalError> {
        (**self).write_nq(ring, index, e)
    }
    fn read_nq(&self, ring: RegionHandle, index: u32) -> Result<[u8; RECORD], HalError> {
        (**self).read_nq(ring, index)
    }
    fn notify(&self, ev: EventHandle, n: u64) -> Result<(), HalError> {
        (**self).notify(ev, n)
    }
    fn wait(&self, ev: EventHandle, timeout_ns: u64) -> Result<Wait, HalError> {
        (**self).wait(ev, timeout_ns)
    }
    fn event_fd(&self, ev: EventHandle) -> Option<RawFd> {
        (**self).event_fd(ev)
    }
}
