//! The XU execution queue protocol (docs/abi.md §1.2, §1.4, §1.8, §1.9): the three-cursor
//! SPSC ring, seq_id handles and completion waiters.
//!
//! `ring` is its own folder because the protocol is generic over where its
//! cursors and slots live: owned atomics through `crate::sync` (unit tests,
//! loom, deterministic runs) and the byte-exact `xu_queue_t` header and slot
//! array inside mapped memory (production, through [`crate::hal::mem`]) or
//! memory a `no_std` embedder provides ([`StaticStorage`], a raw pointer).
//!
//! - [`storage`]: the sealed [`Storage`] trait, [`OwnedStorage`],
//!   [`MappedStorage`], [`StaticStorage`] and the C-style comparison storage.
//! - [`queue`]: [`XuQueue`] (shared query side), [`Producer`] (submit,
//!   trigger; one thread: the funnel) and [`Worker`] (peek, pop; one thread),
//!   shared through their [`Home`]: an `Arc` (`Counted`, std) or a
//!   [`QueueHome`] static ([`Static`], the `no_std` core).
//! - [`waiter`]: completion waiters: the [`CompletionSink`] the worker signals
//!   through, the [`Waitable`] a waiter blocks on, the pool, wait modes.
//! - [`status`]: the caller-owned [`StatusCell`] a slot's `exec_status` points at.
//! - [`payload`]: the [`Payload`] trait that moves a work item through a
//!   slot's 8-byte `exec_info` word.
//!
//! Cursor ownership (one writer each; the full table is in docs/design.md):
//!
//! | cursor | writer | readers | publish | observe |
//! |---|---|---|---|---|
//! | `scheduled_tail` | producer (submit) | queries (in_flight) | Release store | Acquire |
//! | `scheduled_head` | producer (trigger) | worker (peek) | Release store | Acquire |
//! | `exec_head` | worker (pop, under the mark-completion lock) | producer (full check), waiters, queries | Release store | Acquire |

use crate::fsm::slot::{SlotEvent, SlotState};
use crate::fsm::InvalidEvent;
#[cfg(feature = "std")]
use crate::hal::mem::MemError;
use crate::wire::seq_id::{SeqId, XuId};
use crate::wire::status::NrtStatus;

mod lock;
pub mod payload;
pub mod queue;
// Under loom the slip is compiled out (`Worker::refresh`), and with it every
// caller of this module.
#[cfg_attr(loom, allow(dead_code))]
mod spin;
pub mod status;
pub mod storage;
pub mod waiter;

pub use payload::Payload;
#[cfg(feature = "std")]
pub use queue::{Counted, QueueConfig};
pub use queue::{
    DefaultHome, Handles, Home, Popped, Producer, QueueHome, Signal, SlotView, Static, SubmitError,
    Worker, XuQueue,
};
pub use status::StatusCell;
#[cfg(feature = "std")]
pub use storage::OwnedStorage;
#[cfg(all(feature = "std", any(test, feature = "testkit")))]
pub use storage::{COriginalStorage, CStyleStorage};
pub use storage::{Cursor, MappedStorage, StaticStorage, Storage};
pub use waiter::{Armed, CompletionSink, SignalError, WaitMode, Waited};
#[cfg(feature = "std")]
pub use waiter::{EventFdSink, Waitable};

error_enum! {
    /// Why a ring operation was refused. Every refusal leaves the ring unchanged.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum RingError {
        /// Capacity 0, or too large for this implementation (> 2^32 slots).
        BadCapacity(u64) => "bad ring capacity {0}",
        /// A start cursor of 0 or at/above `CURSOR_LIMIT`.
        BadStart(u64) => "bad start cursor {0:#x}",
        /// The region is too small or misaligned for the header and slots.
        #[cfg(feature = "std")]
        Mem(#[from] MemError) => "ring memory: {0}",
        /// Caller memory ([`MappedStorage::init_raw`]) is null, not 64-byte
        /// aligned, or shorter than the header and slots need.
        Misplaced {
            /// Its address.
            addr: usize,
            /// Its length.
            len: usize,
            /// The bytes the queue needs.
            need: usize,
        } => "ring memory at {addr:#x} ({len} bytes) is not 64-byte aligned or shorter than {need} bytes",
        /// A [`StaticStorage`] or [`QueueHome`] already holds a queue.
        InUse => "ring memory already holds a queue",
        /// The region is mapped read-only.
        ReadOnly => "ring memory is mapped read-only",
        /// `scheduled_tail - exec_head >= capacity` (docs/abi.md §1.9): `NRT_QUEUE_FULL`.
        Full => "queue full",
        /// The next submit would move `scheduled_tail` to `0xFFFFFFFFFFFE` or
        /// beyond (`queue.c:0x5C` asserts it never does; we refuse instead).
        CursorExhausted {
            /// The current `scheduled_tail`.
            tail: u64,
        } => "scheduled_tail {tail:#x} would reach the 48-bit limit",
        /// `exec_head == scheduled_head`: nothing for the worker.
        Empty => "queue empty",
        /// Trigger with `scheduled_head == scheduled_tail`.
        NothingToTrigger => "nothing submitted to trigger",
        /// The seq_id's xu_id is not this queue's (checked before any slot is indexed).
        ForeignXu {
            /// The refused handle.
            seq: SeqId,
            /// This queue's XU.
            ours: XuId,
        } => (
            "seq_id {:#x} belongs to xu {:#06x}, not {:#06x}",
            seq.0,
            seq.xu_id().0,
            ours.0
        ),
        /// A seq_id this queue has not issued yet.
        NotSubmitted {
            /// The refused handle.
            seq: SeqId,
        } => ("seq_id {:#x} not submitted", seq.0),
        /// The slot at `exec_head` does not hold `exec_head`'s seq_id (docs/abi.md §1.9:
        /// the peek-time assert, here an error value).
        SlotMismatch {
            /// The seq_id the cursor says the slot must hold.
            expected: SeqId,
            /// The raw `seq_id` word found in the slot.
            found: u64,
        } => ("slot holds seq_id {found:#x}, cursor expects {:#x}", expected.0),
        /// [`Worker::discard`] of a slot that holds the seq_id its cursor
        /// names: pop it.
        Intact {
            /// The slot's seq_id.
            seq: SeqId,
        } => ("the slot of {:#x} is intact: pop it, not discard it", seq.0),
        /// An illegal slot lifecycle transition.
        Lifecycle(#[from] InvalidEvent<SlotState, SlotEvent>) => "{0}",
        /// Another waiter already installed an eventfd into this slot.
        AlreadyWaiting {
            /// The handle.
            seq: SeqId,
        } => ("a waiter is already installed for {:#x}", seq.0),
        /// An OS call for a waiter failed (errno).
        Os(i32) => "os error {0}",
    }
}

impl RingError {
    /// The `NRT_STATUS` a C caller would see.
    pub fn status(&self) -> NrtStatus {
        match self {
            RingError::Full => NrtStatus::QUEUE_FULL,
            RingError::Empty | RingError::NothingToTrigger => NrtStatus::QUEUE_EMPTY,
            RingError::ForeignXu { .. } | RingError::NotSubmitted { .. } => {
                NrtStatus::INVALID_HANDLE
            }
            RingError::BadCapacity(_)
            | RingError::BadStart(_)
            | RingError::Misplaced { .. }
            | RingError::InUse
            | RingError::ReadOnly => NrtStatus::INVALID,
            #[cfg(feature = "std")]
            RingError::Mem(_) => NrtStatus::INVALID,
            RingError::AlreadyWaiting { .. } | RingError::Intact { .. } => NrtStatus::INVALID,
            RingError::CursorExhausted { .. }
            | RingError::SlotMismatch { .. }
            | RingError::Lifecycle(_)
            | RingError::Os(_) => NrtStatus::FAILURE,
        }
    }
}

#[cfg(feature = "std")]
impl From<std::io::Error> for RingError {
    fn from(e: std::io::Error) -> Self {
        RingError::Os(e.raw_os_error().unwrap_or(0))
    }
}
