//! The XU execution queue (docs/abi.md §1.2-§1.9): a single-producer,
//! single-consumer ring of 32-byte slots behind a 256-byte header with three
//! cursors, byte for byte the runtime's `xu_queue_t`, with seq_id handles,
//! per-execution status cells and completion waiters.
//!
//! ```
//! use xunds::ring::{RingMem, XuQueue};
//! use xunds::wire::seq_id::XuId;
//! use xunds::NrtStatus;
//!
//! // The memory: a heap block here; a mapped region another process shares,
//! // a `static` (`StaticQueue`) or caller memory (`RingMem::init_raw`) work
//! // the same way.
//! let mem = RingMem::owned(XuId::new(0, 0, 1), 8, 1)?;
//! let mut queue = XuQueue::<u64>::new(mem);
//! let (mut producer, mut worker) = queue.split();
//!
//! let seq = producer.submit(7, None)?; // write the slot, publish scheduled_tail
//! producer.trigger_next()?; // publish scheduled_head: the worker may take it
//! let done = worker.pop(NrtStatus::SUCCESS)?; // check, capture, publish exec_head
//! assert_eq!((done.seq, done.item), (seq, 7));
//! assert!(worker.queue().is_completed(seq)?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **The protocol** ([`queue`]): the producer reserves a slot, writes its
//! body, publishes `scheduled_tail` (Release); a trigger publishes
//! `scheduled_head` (Release), the release to the worker. The worker
//! observes `scheduled_head` (Acquire), checks the slot's seq_id, writes
//! the status, captures the slot under the mark-completion lock and
//! publishes `exec_head` (Release): the producer may reuse the slot, and
//! whoever sees the completion sees the status. Each cursor has one writer:
//!
//! | cursor | writer | readers | publish | observe |
//! |---|---|---|---|---|
//! | `scheduled_tail` | producer (submit) | queries, waiters | Release store | Acquire |
//! | `scheduled_head` | producer (trigger) | worker (peek, pop) | Release store | Acquire |
//! | `exec_head` | worker (pop, under the mark-completion lock) | producer (full check), waiters, queries | Release store | Acquire |
//!
//! **Memory** ([`mem`]): one [`RingMem`] over any memory; everything in it is
//! touched through atomic words at checked offsets, so a stray write by
//! another process is refused ([`PopError::Mismatch`],
//! [`SubmitError::Corrupted`], ...), never trusted.
//!
//! **Ownership** ([`owner`]): borrow the two handles from a queue you own
//! ([`XuQueue::split`]), share it through an `Arc` ([`XuQueue::split_arc`],
//! [`XuQueue::owned`]), or keep it in a `static` ([`StaticQueue`], no
//! allocator needed).
//!
//! **Around the protocol**: completion waiters on eventfds ([`waiter`]:
//! `wait`, `wait_on`, `arm`, `std`), the caller's [`StatusCell`] and the
//! [`Payload`] that moves an item through a slot's `exec_info` word. Each
//! operation has its own error type ([`error`]). A worker that spins on
//! `pop` may want a back-off against lockstep with the producer; that is a
//! policy of its loop (the system's worker has one), not of the protocol.

mod lock;

pub mod error;
#[cfg(feature = "std")]
pub mod events;
pub mod mem;
pub mod owner;
pub mod payload;
pub mod queue;
pub mod status;
#[cfg(feature = "std")]
pub mod waiter;

pub use error::{
    DiscardError, ForeignXu, InitError, PopError, SlotMismatch, SubmitError, TriggerError,
    WaitError,
};
#[cfg(feature = "std")]
pub use events::QueueConfig;
pub use mem::{mapped_len, RingMem};
#[cfg(feature = "std")]
pub use owner::Handles;
pub use owner::{Split, StaticQueue};
pub use payload::Payload;
pub use queue::{
    DefaultStatus, Popped, Producer, Rejected, Signal, SignalError, SlotView, Worker, XuQueue,
};
#[cfg(feature = "std")]
pub use status::StatusArc;
pub use status::{StatusCell, StatusRef};
#[cfg(feature = "std")]
pub use waiter::{Armed, CompletionSink, EventFdSink, WaitMode, Waitable, Waited};
