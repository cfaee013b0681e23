//! Who owns a queue, and how it splits into its two handles.
//!
//! - **Borrowed** (heapless style): the caller owns an [`XuQueue`] and
//!   [`split`](XuQueue::split)s it; the handles hold `&XuQueue`, so the
//!   borrow checker keeps a second producer or worker out while they live.
//! - **Counted** (`std`): [`split_arc`](XuQueue::split_arc) (or
//!   [`XuQueue::owned`], [`XuQueue::mapped`]) moves the queue into an `Arc`
//!   the two handles and any query clones share.
//! - **Static** (no allocator): a [`StaticQueue`] in a `static` holds the
//!   memory and the state of a ring of `N` slots and splits once.
//!
//! Dropping the queue takes back what its in-flight slots own (items,
//! status cells, installed dups).

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::sync::atomic::AtomicBool;

#[cfg(feature = "std")]
use crate::hal::mem::Region;
use crate::sync::atomic::Ordering::Relaxed;
use crate::wire::exec_slot::off::{EXEC_INFO, EXEC_STATUS, MARK_COMP_EFD};
use crate::wire::exec_slot::NO_EFD;
use crate::wire::seq_id::XuId;

use super::error::InitError;
#[cfg(feature = "std")]
use super::events::{QueueConfig, Waits};
use super::mem::{handle_fields, RingMem, StaticBlock};
use super::payload::Payload;
use super::queue::{Producer, Worker, XuQueue};
use super::status::StatusRef;
use crate::wire::xu_queue::off::{EXEC_HEAD, SCHEDULED_TAIL};

/// The two handles [`XuQueue::split`] returns, borrowing the queue.
pub type Split<'q, T, C> = (Producer<&'q XuQueue<T, C>>, Worker<&'q XuQueue<T, C>>);

/// The two `Arc`-holding handles [`XuQueue::split_arc`] returns.
#[cfg(feature = "std")]
pub type Handles<T, C = super::queue::DefaultStatus> = (
    Producer<crate::sync::Arc<XuQueue<T, C>>>,
    Worker<crate::sync::Arc<XuQueue<T, C>>>,
);

impl<T: Payload, C: StatusRef> XuQueue<T, C> {
    /// A queue over `mem` whose waiters wait as `cfg` says (its `xu`,
    /// `capacity` and `start` are `mem`'s business).
    #[cfg(feature = "std")]
    pub fn configured(mem: RingMem, cfg: QueueConfig) -> Self {
        let mut q = Self::new(mem);
        q.waits = Waits::new(cfg);
        q
    }

    /// The producer and the worker, borrowing the queue.
    pub fn split(&mut self) -> Split<'_, T, C> {
        let q = &*self;
        (Producer::new(q), Worker::new(q))
    }

    /// The producer and the worker, sharing the queue through an `Arc`.
    #[cfg(feature = "std")]
    pub fn split_arc(self) -> Handles<T, C> {
        let q = crate::sync::Arc::new(self);
        (Producer::new(q.clone()), Worker::new(q))
    }

    /// A queue on the heap ([`RingMem::owned`]), split.
    #[cfg(feature = "std")]
    pub fn owned(cfg: QueueConfig) -> Result<Handles<T, C>, InitError> {
        let mem = RingMem::owned(cfg.xu, cfg.capacity, cfg.start)?;
        Ok(Self::configured(mem, cfg).split_arc())
    }

    /// A queue laid into `region` ([`RingMem::mapped`]), split.
    ///
    /// # Safety
    /// [`RingMem::mapped`]'s. The slot words carry owned pointers
    /// (`exec_info`, `exec_status`) that pop turns back into owned values.
    #[cfg(feature = "std")]
    pub unsafe fn mapped(region: Region, cfg: QueueConfig) -> Result<Handles<T, C>, InitError> {
        // SAFETY: forwarded contract.
        let mem = unsafe { RingMem::mapped(region, cfg.xu, cfg.capacity, cfg.start) }?;
        Ok(Self::configured(mem, cfg).split_arc())
    }
}

impl<T: Payload, C: StatusRef> Drop for XuQueue<T, C> {
    fn drop(&mut self) {
        // Every handle is gone: take back what in-flight slots own. The
        // cursors and words are read back from memory another party may
        // have written, so at most `capacity` slots are looked at and only
        // a slot that still holds its seq_id is trusted.
        let head = self.mem.load(EXEC_HEAD, Relaxed);
        let tail = self.mem.load(SCHEDULED_TAIL, Relaxed);
        let end = tail.min(head.saturating_add(self.capacity()));
        for c in head..end {
            let Ok((slot, _)) = self.checked(c) else {
                continue;
            };
            // SAFETY: a slot in [exec_head, scheduled_tail) holding its
            // seq_id holds the words its submit made (`into_word`), and no
            // pop consumed them; the queue is gone, so this is their one
            // taker.
            unsafe {
                drop(T::from_word(slot.load_u64(EXEC_INFO, Relaxed)));
                let status = slot.load_u64(EXEC_STATUS, Relaxed);
                if status != 0 {
                    drop(C::from_word(status));
                }
            }
            let (efd, pooled) = handle_fields(slot.load_u64(MARK_COMP_EFD, Relaxed));
            #[cfg(feature = "std")]
            if efd != NO_EFD && !pooled {
                // The slot owned this dup (waiter module docs).
                self.waits.cfg.sink.close(efd);
            }
            #[cfg(not(feature = "std"))]
            let _ = (efd, pooled, NO_EFD);
        }
    }
}

/// The memory and the state of a queue of `N` slots, to put in a `static`:
/// the `no_std` way to build a queue without an allocator. It splits once
/// ([`StaticQueue::split`]); the state is never dropped, so items still in
/// flight when the handles go are not given back (a `&'static` payload owns
/// nothing).
///
/// # Examples
///
/// ```
/// use xunds::ring::{StaticQueue, StatusCell};
/// use xunds::wire::seq_id::XuId;
/// use xunds::NrtStatus;
///
/// static QUEUE: StaticQueue<&'static u32, &'static StatusCell, 4> = StaticQueue::new();
/// static JOB: u32 = 7;
/// static DONE: StatusCell = StatusCell::new();
/// let (mut producer, mut worker) = QUEUE.split(XuId::new(0, 0, 1), 1).unwrap();
/// assert!(QUEUE.split(XuId::new(0, 0, 1), 1).is_err(), "once");
/// producer.submit(&JOB, Some(&DONE)).unwrap();
/// producer.trigger_next().unwrap();
/// assert_eq!(*worker.pop(NrtStatus::SUCCESS).unwrap().item, 7);
/// assert_eq!(DONE.get(), Some(NrtStatus::SUCCESS));
/// ```
pub struct StaticQueue<T: Payload, C: StatusRef, const N: usize> {
    block: UnsafeCell<StaticBlock<N>>,
    queue: UnsafeCell<MaybeUninit<XuQueue<T, C>>>,
    /// `split` ran (the block holds its one queue).
    taken: AtomicBool,
}

// SAFETY: the block is reached only through the one `RingMem` that `split`
// lays into it, and the queue cell is written once, by the `split` that wins
// `taken`, before any reference to it exists; afterwards both are only
// shared, through the queue, which is `Sync`.
unsafe impl<T: Payload, C: StatusRef, const N: usize> Sync for StaticQueue<T, C, N> {}

impl<T: Payload, C: StatusRef, const N: usize> StaticQueue<T, C, N> {
    /// Zeroed memory, no queue in it yet.
    pub const fn new() -> Self {
        StaticQueue {
            block: UnsafeCell::new(StaticBlock::ZEROED),
            queue: UnsafeCell::new(MaybeUninit::uninit()),
            taken: AtomicBool::new(false),
        }
    }

    /// Lay a fresh queue of `N` slots for `xu`, cursors at `start` (1 in the
    /// ABI), into this memory and return its two handles. Once: a second
    /// call is refused with [`InitError::InUse`].
    pub fn split(&'static self, xu: XuId, start: u64) -> Result<Split<'static, T, C>, InitError> {
        let () = StaticBlock::<N>::EXACT;
        // Relaxed: the flag only elects the one caller; the state reaches
        // other threads through the handles (moved, hence ordered).
        if self.taken.swap(true, core::sync::atomic::Ordering::Relaxed) {
            return Err(InitError::InUse);
        }
        let len = core::mem::size_of::<StaticBlock<N>>();
        // SAFETY: the block is `'static`, 64-byte aligned (`repr(align(64))`)
        // and exactly `mapped_len(N)` bytes; the `taken` flag makes this ring
        // its only accessor, and the cell is private, so no reference to its
        // bytes is ever formed.
        let mem = unsafe { RingMem::init_raw(self.block.get().cast(), len, xu, N as u64, start) }
            .inspect_err(|_| {
            self.taken
                .store(false, core::sync::atomic::Ordering::Relaxed)
        })?;
        // SAFETY: we won `taken`, so no other call writes or reads the cell,
        // and nothing referenced it before; after this write it is only
        // shared, for `'static` (the cell lives in `self`).
        let q: &'static XuQueue<T, C> = unsafe { (*self.queue.get()).write(XuQueue::new(mem)) };
        Ok((Producer::new(q), Worker::new(q)))
    }
}

impl<T: Payload, C: StatusRef, const N: usize> Default for StaticQueue<T, C, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Payload, C: StatusRef, const N: usize> core::fmt::Debug for StaticQueue<T, C, N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("StaticQueue")
            .field("slots", &N)
            .finish_non_exhaustive()
    }
}
