//! The caller-owned status cell (docs/abi.md §1.8: the coarse result travels
//! through the slot's `exec_status` out-pointer, a single `NRT_STATUS`).
//!
//! The submitter creates an `Arc<StatusCell>` ([`StatusArc`]), keeps a
//! clone and hands one strong count to the ring with the submit: the slot's
//! `exec_status` word is `Arc::into_raw` of it, i.e. the address of the
//! 4-byte status. The worker takes that count back at pop (`Arc::from_raw`),
//! writes the status, and only then publishes completion (`exec_head`,
//! Release). So the address in the slot is used only while the slot owns a
//! strong count. Without `std` the handle is a `&'static StatusCell`, which
//! owns nothing. Any [`StatusRef`] will do.
//!
//! Ordering: the cell's own accesses are Relaxed. The write is ordered before
//! completion by the worker's `exec_head` Release; a reader who observed
//! completion through an Acquire load of `exec_head` (every query and wait)
//! sees it.

use core::ops::Deref;

use super::payload::Payload;
use crate::sync::atomic::{AtomicU32, Ordering};
use crate::wire::status::NrtStatus;

/// A status cell handle a submit can carry: it travels through the slot's
/// `exec_status` word as a [`Payload`] does through `exec_info` (the word
/// owns what the handle owned).
pub trait StatusRef: Payload + Deref<Target = StatusCell> {}

impl<C: Payload + Deref<Target = StatusCell>> StatusRef for C {}

/// The status cell handle of `std` queues: one strong count per submit.
#[cfg(feature = "std")]
pub type StatusArc = std::sync::Arc<StatusCell>;

/// One `NRT_STATUS`, written once per execution by the worker.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use xunds::ring::{QueueConfig, StatusCell, XuQueue};
/// use xunds::wire::seq_id::XuId;
/// use xunds::NrtStatus;
///
/// let (mut producer, mut worker) = XuQueue::<u64>::owned(QueueConfig::new(XuId::new(0, 0, 1), 4))?;
/// let cell = Arc::new(StatusCell::new());
/// let seq = producer.submit(1, Some(cell.clone()))?;
/// producer.trigger_next()?;
/// assert_eq!(cell.get(), None, "pending");
/// worker.pop(NrtStatus::TIMEOUT)?;
/// // Written before the completion became visible.
/// assert!(producer.queue().is_completed(seq)?);
/// assert_eq!(cell.get(), Some(NrtStatus::TIMEOUT));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[repr(transparent)]
pub struct StatusCell(AtomicU32);

impl StatusCell {
    /// The raw value of a cell no worker has written yet (not an NRT code).
    pub const PENDING: u32 = u32::MAX;

    /// A pending cell (`const`: a `no_std` embedder keeps its cells in
    /// `static`s and submits `&'static StatusCell`s).
    #[cfg(not(loom))]
    pub const fn new() -> StatusCell {
        StatusCell(AtomicU32::new(Self::PENDING))
    }

    /// A pending cell.
    #[cfg(loom)]
    pub fn new() -> StatusCell {
        StatusCell(AtomicU32::new(Self::PENDING))
    }

    /// The status, or `None` while pending. Read it after observing
    /// completion (`is_completed`/`wait`), which orders the worker's write
    /// before this load.
    #[inline]
    pub fn get(&self) -> Option<NrtStatus> {
        match self.0.load(Ordering::Relaxed) {
            Self::PENDING => None,
            v => Some(NrtStatus(v)),
        }
    }

    /// Make the cell pending again (to reuse it for another submit).
    pub fn reset(&self) {
        self.0.store(Self::PENDING, Ordering::Relaxed);
    }

    /// The worker's write; the `exec_head` Release that follows publishes it.
    #[inline]
    pub(crate) fn set(&self, s: NrtStatus) {
        self.0.store(s.0, Ordering::Relaxed);
    }
}

impl Default for StatusCell {
    fn default() -> Self {
        Self::new()
    }
}
