//! One error type per operation, each listing only what that call can
//! return; every refusal leaves the ring as it was. `status()` gives the
//! `NRT_STATUS` a C caller would see (docs/abi.md §3).

#[cfg(feature = "std")]
use crate::hal::mem::MemError;
use crate::wire::seq_id::{SeqId, XuId};
use crate::wire::status::NrtStatus;

error_enum! {
    /// Why a queue could not be laid into its memory.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum InitError {
        /// Capacity 0, or too large for this implementation (> 2^32 slots).
        BadCapacity(u64) => "bad ring capacity {0}",
        /// A start cursor of 0 or at/above `CURSOR_LIMIT` (docs/abi.md §1.2).
        BadStart(u64) => "bad start cursor {0:#x}",
        /// The memory is null, not 64-byte aligned, or shorter than the
        /// header and slots need.
        Misplaced {
            /// Its address.
            addr: usize,
            /// Its length.
            len: usize,
            /// The bytes the queue needs.
            need: usize,
        } => "ring memory at {addr:#x} ({len} bytes) is not 64-byte aligned or shorter than {need} bytes",
        /// The region is mapped read-only.
        ReadOnly => "ring memory is mapped read-only",
        /// A static queue was already handed out.
        InUse => "ring memory already holds a queue",
        /// The region refused the range (std).
        #[cfg(feature = "std")]
        Mem(#[from] MemError) => "ring memory: {0}",
    }
}

error_enum! {
    /// Why a submit was refused (`Producer::submit`, `submit_burst`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum SubmitError {
        /// `scheduled_tail - exec_head >= capacity` (docs/abi.md §1.2):
        /// `NRT_QUEUE_FULL`.
        Full => "queue full",
        /// The submit would move `scheduled_tail` to `CURSOR_LIMIT` or
        /// beyond (the binary asserts it never does; we refuse, docs/abi.md
        /// §1.2).
        CursorExhausted {
            /// The current `scheduled_tail`.
            tail: u64,
        } => "scheduled_tail {tail:#x} would reach the 48-bit limit",
        /// The cursors read back from the header break `exec_head <=
        /// scheduled_tail <= exec_head + capacity`: a stray write into the
        /// ring's memory. Nothing is written.
        Corrupted {
            /// `exec_head` as the producer last observed it.
            exec_head: u64,
            /// The `scheduled_tail` read back.
            tail: u64,
        } => "scheduled_tail {tail:#x} out of order with exec_head {exec_head:#x} (a stray write)",
    }
}

error_enum! {
    /// Why a trigger was refused (`Producer::trigger_next`, `trigger_burst`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum TriggerError {
        /// Fewer than the asked number of slots (or none) are submitted and
        /// not yet triggered.
        NothingToTrigger => "nothing submitted to trigger",
        /// `scheduled_head` read back from the header is below `exec_head`:
        /// a stray write into the ring's memory. Nothing is published.
        Corrupted {
            /// `exec_head` as the producer last observed it.
            exec_head: u64,
            /// The `scheduled_head` read back.
            head: u64,
        } => "scheduled_head {head:#x} below exec_head {exec_head:#x} (a stray write)",
    }
}

/// The slot at `exec_head` does not hold `exec_head`'s seq_id (docs/abi.md
/// §1.4, §1.9: the worker's peek-time check, here an error value): a stray
/// write into the slot, or a cursor moved by one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotMismatch {
    /// The seq_id the cursor says the slot must hold.
    pub expected: SeqId,
    /// The raw `seq_id` word found in the slot.
    pub found: u64,
}

impl core::fmt::Display for SlotMismatch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "slot holds seq_id {:#x}, cursor expects {:#x}",
            self.found, self.expected.0
        )
    }
}

impl core::error::Error for SlotMismatch {}

error_enum! {
    /// Why a pop or peek returned no item (`Worker::pop`, `peek`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum PopError {
        /// `exec_head == scheduled_head`: nothing triggered.
        Empty => "queue empty",
        /// The slot failed the seq_id check; nothing moved.
        Mismatch(#[from] SlotMismatch) => "{0}",
    }
}

error_enum! {
    /// Why a discard did nothing (`Worker::discard`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum DiscardError {
        /// Nothing triggered.
        Empty => "queue empty",
        /// The head slot passes the seq_id check: pop it, not discard it.
        Intact {
            /// The slot's seq_id.
            seq: SeqId,
        } => ("the slot of {:#x} is intact: pop it, not discard it", seq.0),
    }
}

/// A seq_id of another XU (docs/abi.md §1.4: checked before any slot is
/// indexed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForeignXu {
    /// The refused handle.
    pub seq: SeqId,
    /// This queue's XU.
    pub ours: XuId,
}

impl core::fmt::Display for ForeignXu {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "seq_id {:#x} belongs to xu {:#06x}, not {:#06x}",
            self.seq.0,
            self.seq.xu_id().0,
            self.ours.0
        )
    }
}

impl core::error::Error for ForeignXu {}

error_enum! {
    /// Why a wait or an arm was refused (`XuQueue::wait`, `wait_on`, `arm`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum WaitError {
        /// The handle is another XU's.
        Foreign(#[from] ForeignXu) => "{0}",
        /// A seq_id this queue has not issued yet.
        NotSubmitted {
            /// The refused handle.
            seq: SeqId,
        } => ("seq_id {:#x} not submitted", seq.0),
        /// The slot no longer holds the handle's seq_id.
        Mismatch(#[from] SlotMismatch) => "{0}",
        /// Another waiter already installed an eventfd into this slot.
        AlreadyWaiting {
            /// The handle.
            seq: SeqId,
        } => ("a waiter is already installed for {:#x}", seq.0),
        /// An OS call for the wait failed (errno).
        Os(i32) => "os error {0}",
    }
}

#[cfg(feature = "std")]
impl From<std::io::Error> for WaitError {
    fn from(e: std::io::Error) -> Self {
        WaitError::Os(e.raw_os_error().unwrap_or(0))
    }
}

impl InitError {
    /// `NRT_INVALID`: the arguments or the memory are wrong.
    pub fn status(&self) -> NrtStatus {
        NrtStatus::INVALID
    }
}

impl SubmitError {
    /// `NRT_QUEUE_FULL` for a full ring, `NRT_FAILURE` otherwise.
    pub fn status(&self) -> NrtStatus {
        match self {
            SubmitError::Full => NrtStatus::QUEUE_FULL,
            SubmitError::CursorExhausted { .. } | SubmitError::Corrupted { .. } => {
                NrtStatus::FAILURE
            }
        }
    }
}

impl ForeignXu {
    /// `NRT_INVALID_HANDLE`.
    pub fn status(&self) -> NrtStatus {
        NrtStatus::INVALID_HANDLE
    }
}

impl WaitError {
    /// The `NRT_STATUS` a C caller would see.
    pub fn status(&self) -> NrtStatus {
        match self {
            WaitError::Foreign(_) | WaitError::NotSubmitted { .. } => NrtStatus::INVALID_HANDLE,
            WaitError::AlreadyWaiting { .. } => NrtStatus::INVALID,
            WaitError::Mismatch(_) | WaitError::Os(_) => NrtStatus::FAILURE,
        }
    }
}
