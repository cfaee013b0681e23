//! The NDS datastore protocol (docs/abi.md §2): slab memory backings, the
//! publisher-side writer and the read-only reader with the FNV-1a record hash
//! protocol. Its own folder because, like the ring, the protocol is generic
//! over where its words live (a real `MAP_SHARED` slab or a heap backing for
//! loom and Miri).
//!
//! | module | owns |
//! |---|---|
//! | [`slab`] | [`Slab`]/[`SlabMut`] (word-atomic access) and the backings [`MappedSlab`], [`ReadOnlySlab`], [`HeapSlab`] (std), [`RawSlab`] over a [`StaticSlab`] or raw memory (core) |
//! | [`index`] | [`Counter`] (a resolved counter word) and [`ModelSlot`]: typed, checked indices |
//! | [`words`] | word-sized atomic copies between a slab and private buffers (never a `memcpy`) |
//! | [`record`] | the torn-read-proof record protocol: invalidate, body, hash word last; stable copy + FNV verify |
//! | [`writer`] | [`Writer`]: lays out and commits the header, counters, model records, process-info records |
//! | [`reader`] | [`Reader`]: header gate with retry, counters, typed record reads, snapshots; no mutating method |
//!
//! The bytes and offsets all come from [`crate::wire::nds`]; the record
//! lifecycle is [`crate::fsm::record::RecordFsm`].
//!
//! ```
//! use xunds::nds::{Counter, HeapSlab, RecordRead, Reader, Writer};
//! use xunds::wire::nds::counters::NcCounter;
//! use xunds::wire::nds::model::ModelRecord;
//! use std::sync::Arc;
//!
//! let slab = Arc::new(HeapSlab::zeroed());
//! let writer = Writer::new(slab.clone()).unwrap();
//! writer.add(Counter::nc(2, NcCounter::InferCompleted).unwrap(), 1).unwrap();
//! let slot = writer.commit_model(&ModelRecord { model_id: 7, ..ModelRecord::EMPTY }).unwrap();
//!
//! let reader = Reader::attach(slab).unwrap();
//! assert_eq!(reader.counter(Counter::nc(2, NcCounter::InferCompleted).unwrap()).unwrap(), 1);
//! match reader.model(slot).unwrap() {
//!     RecordRead::Fresh(m) => assert_eq!(m.model_id, 7),
//!     other => panic!("{other:?}"),
//! }
//! ```

#[cfg(feature = "std")]
use std::io;

use crate::fsm::record::{RecordEvent, RecordState};
use crate::fsm::InvalidEvent;
use crate::wire::nds::counters::NdCounter;
use crate::wire::WireError;

pub mod index;
pub mod reader;
pub mod record;
pub mod slab;
pub mod words;
pub mod writer;

pub use index::{Counter, CounterId, CounterName, ModelSlot};
pub use reader::{Counters, Reader, RecordRead, Snapshot, Stale};
pub use record::{RecordSpan, TornReason};
#[cfg(feature = "std")]
pub use slab::{is_slab_file, Heap, HeapSlab, MappedSlab, ReadOnlySlab};
pub use slab::{Caller, RawReadSlab, RawSlab, Slab, SlabMut, StaticSlab, WordSlab};
pub use writer::Writer;

pub use crate::wire::nds::region::{MODEL_SLOTS, REQUIRED_SIZE, SLAB_SIZE};

/// `EINVAL`: what libnrt's accessors return for a bad index or header.
pub const EINVAL: i32 = 22;
/// `ENOSPC`: all 64 model slots are taken (docs/abi.md §2.6).
pub const ENOSPC: i32 = 28;
/// `EIO` (Linux): the slab shrank under its mapping.
const EIO: i32 = 5;
/// `EEXIST` (Linux): a file that is not a slab is in the way.
const EEXIST: i32 = 17;
#[cfg(feature = "std")]
const _: () = assert!(
    EIO == libc::EIO && EEXIST == libc::EEXIST && EINVAL == libc::EINVAL && ENOSPC == libc::ENOSPC
);

// docs/abi.md §2.5: the accessors return -EINVAL as `0xffffffea`.
const _: () = assert!(EINVAL.wrapping_neg() as u32 == 0xffff_ffea);

error_enum! {
    /// Why a datastore operation was refused.
    #[derive(Debug)]
    #[non_exhaustive]
    pub enum NdsError {
        /// An operating-system call (open, mmap, ...) failed.
        #[cfg(feature = "std")]
        Io(#[from] io::Error) => "nds: {0}",
        /// The mapping is shorter than `REQUIRED_SIZE` (67,200 bytes);
        /// docs/abi.md §2.2: `nds_open` refuses `<= 0x1067f`.
        TooSmall {
            /// The mapping's length.
            len: usize,
        } => "nds: mapping too small: {len} bytes, the region map needs {REQUIRED_SIZE}",
        /// Caller-provided slab memory at a null or not 8-byte-aligned
        /// address ([`RawSlab::from_raw`]): `EINVAL`.
        Misaligned {
            /// The address given.
            addr: usize,
        } => "nds: slab memory at {addr:#x} is null or not 8-byte aligned",
        /// The header is still zero after the one retry (docs/abi.md §2.3): the
        /// producer has not committed, or the slab was released.
        NotCommitted => "nds: header not committed (still zero after one retry)",
        /// The header's signature is not `"nds\0"`: not an NDS slab.
        BadMagic {
            /// The header word found.
            word: u64,
        } => "nds: bad magic: header word {word:#018x} is not \"nds\\0\"",
        /// The signature matches but the layout version is not 100000; the
        /// regions must not be parsed (docs/abi.md §2.3).
        BadVersion {
            /// The version found.
            version: i32,
        } => ("nds: bad version {version} (this layout is version {})", crate::wire::nds::header::VERSION),
        /// A writer was asked to lay out a slab whose header is already
        /// committed (another publisher owns it); use [`Writer::attach`].
        AlreadyCommitted => "nds: slab header already committed by another publisher",
        /// The header went back to zero (or changed) around a read: the slab was
        /// released. Nothing read across the change is returned.
        Detached => "nds: slab detached (header went back to zero)",
        /// An index (core, counter, slot) outside its band, or bytes the wire
        /// layer refused: `EINVAL`.
        Invalid(#[from] WireError) => "nds: EINVAL: {0}",
        /// `FEATURE_BITMAP` is written only with OR (docs/abi.md §2.4): `EINVAL`.
        OrOnly(NdCounter) => "nds: EINVAL: {0} is written only with OR",
        /// All 64 model slots are live (docs/abi.md §2.6): `ENOSPC`.
        NoSpace => "nds: ENOSPC: all 64 model slots are live",
        /// Another live writer holds the slab's writer lock: `EBUSY`.
        #[cfg(feature = "std")]
        Busy {
            /// The holder's pid, when it can be told.
            pid: Option<u32>,
        } => (
            "nds: slab in use: another writer{} holds it",
            pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
        ),
        /// The file is not a slab of ours (nor empty); it is left untouched
        /// (taking it over needs `force`).
        NotASlab {
            /// The file's length.
            len: u64,
        } => (
            "nds: not a slab ({len} bytes that are not a {}-byte xunds slab); refusing to overwrite it (use --force)",
            SLAB_SIZE
        ),
        /// The file behind the mapping shrank while it was mapped (another
        /// process truncated it): nothing read across it is returned.
        Shrunk => "nds: the slab file shrank while mapped (truncated by another process); nothing read from it is trusted",
        /// The record lifecycle refused the operation (update or delete of a
        /// free slot, ...): `EINVAL`.
        Lifecycle(#[from] InvalidEvent<RecordState, RecordEvent>) => "nds: EINVAL: {0}",
    }
}

impl NdsError {
    /// The errno a C caller of libnds would see (positive; the C functions
    /// return its negation). I/O errors give their OS code (or `EIO`).
    pub fn errno(&self) -> i32 {
        match self {
            #[cfg(feature = "std")]
            NdsError::Io(e) => e.raw_os_error().unwrap_or(EIO),
            NdsError::NoSpace => ENOSPC,
            #[cfg(feature = "std")]
            NdsError::Busy { .. } => libc::EBUSY,
            NdsError::NotASlab { .. } => EEXIST,
            NdsError::Shrunk => EIO,
            NdsError::TooSmall { .. }
            | NdsError::Misaligned { .. }
            | NdsError::NotCommitted
            | NdsError::BadMagic { .. }
            | NdsError::BadVersion { .. }
            | NdsError::AlreadyCommitted
            | NdsError::Detached
            | NdsError::Invalid(_)
            | NdsError::OrOnly(_)
            | NdsError::Lifecycle(_) => EINVAL,
        }
    }
}
