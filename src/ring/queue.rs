//! The protocol (docs/abi.md §1.2, §1.4, §1.8, §1.9): the producer reserves
//! a slot, writes its body and publishes `scheduled_tail`, then publishes
//! `scheduled_head` (the trigger); the worker observes `scheduled_head`,
//! checks the slot's seq_id, writes the status, captures the slot under the
//! mark-completion lock and publishes `exec_head`. Each handle caches the
//! cursor the other side publishes (rtrb style) and reads it again only when
//! the cache says full or empty.
//!
//! Every load and store below carries its `Ordering`; the three publishes
//! are Release stores and their partners Acquire loads:
//!
//! | cursor | published by | observed by (Acquire) |
//! |---|---|---|
//! | `scheduled_tail` | [`Producer::submit`], after the body | waiters ("was it issued"), queries |
//! | `scheduled_head` | [`Producer::trigger_burst`] | [`Worker::refresh`]: the pair that matters |
//! | `exec_head` | [`Worker::pop`], after the status write and the capture | [`Producer`]'s refresh (slot reuse), queries and waiters |

use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use core::ops::Deref;

use crate::sync::atomic::Ordering::{self, Acquire, Relaxed};
use crate::wire::exec_slot::off::{EXEC_INFO, EXEC_STATUS, MARK_COMP_EFD as HANDLE, SEQ_ID};
use crate::wire::exec_slot::NO_EFD;
use crate::wire::seq_id::{SeqId, XuId, SEQ_NUM_MASK};
use crate::wire::status::NrtStatus;
use crate::wire::xu_queue::CURSOR_LIMIT;

use super::error::{DiscardError, ForeignXu, PopError, SlotMismatch, SubmitError, TriggerError};
use super::lock::MarkCompLock;
use super::mem::{handle_fields, handle_word, RingMem, Slot};
use super::payload::Payload;
use super::status::StatusRef;
use crate::wire::xu_queue::off::{EXEC_HEAD, SCHEDULED_HEAD, SCHEDULED_TAIL};

/// The ordering of the three cursor publishes. The `relaxed_publish` mutant
/// weakens it; `.ci/loom`'s `ring_publish` model must kill that.
#[cfg(not(xunds_mutant = "relaxed_publish"))]
const PUBLISH: Ordering = Ordering::Release;
#[cfg(xunds_mutant = "relaxed_publish")]
const PUBLISH: Ordering = Ordering::Relaxed;

// The body a submit writes is these four words, in this order (docs/abi.md
// §1.3); `mark_comp_efd` and `efd_from_pool` are one word (`handle_word`).
const _: () = assert!(SEQ_ID == 0 && EXEC_STATUS == 8 && HANDLE == 16 && EXEC_INFO == 24);

/// The status cell handle a queue's submits carry when the queue's type
/// does not name one: `Arc<StatusCell>` with `std`, `&'static StatusCell`
/// without.
#[cfg(feature = "std")]
pub type DefaultStatus = super::status::StatusArc;
/// The status cell handle a queue's submits carry when the queue's type
/// does not name one: `Arc<StatusCell>` with `std`, `&'static StatusCell`
/// without.
#[cfg(not(feature = "std"))]
pub type DefaultStatus = &'static super::status::StatusCell;

/// What a queue moves between threads through its slots: items and status
/// handles, by value (so the queue is `Send + Sync` when they are `Send`,
/// which [`Payload`] requires).
type Moves<T, C> = fn(T, C) -> (T, C);

/// One XU queue: the ring's memory, the mark-completion lock and, with
/// `std`, the waiters' state. Split it into its two handles
/// ([`XuQueue::split`], [`XuQueue::split_arc`]); queries and waits go
/// through `&XuQueue`.
///
/// `T` travels through a slot's `exec_info` word and `C`, the status cell
/// handle, through `exec_status` (both [`Payload`]s).
///
/// # Examples
///
/// ```
/// use xunds::ring::{RingMem, XuQueue};
/// use xunds::wire::seq_id::XuId;
/// use xunds::NrtStatus;
///
/// let mem = RingMem::owned(XuId::new(0, 0, 1), 4, 1).unwrap();
/// let mut queue = XuQueue::<u64>::new(mem);
/// let (mut producer, mut worker) = queue.split();
/// let seq = producer.submit(42, None).unwrap();
/// producer.trigger_next().unwrap();
/// let popped = worker.pop(NrtStatus::SUCCESS).unwrap();
/// assert_eq!((popped.seq, popped.item), (seq, 42));
/// assert!(producer.queue().is_completed(seq).unwrap());
/// ```
pub struct XuQueue<T: Payload, C: StatusRef = DefaultStatus> {
    pub(super) mem: RingMem,
    /// `xu << 48`, the high half of every seq_id of this queue (docs/abi.md §1.4).
    xu_bits: u64,
    /// `capacity - 1` when the capacity is a power of two, else all ones ([`idx`]).
    ///
    /// [`idx`]: XuQueue::idx
    mask: u64,
    pub(super) lock: MarkCompLock,
    #[cfg(feature = "std")]
    pub(super) waits: super::events::Waits,
    _items: PhantomData<Moves<T, C>>,
}

impl<T: Payload, C: StatusRef> core::fmt::Debug for XuQueue<T, C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let (exec_head, scheduled_head, scheduled_tail) = self.cursors();
        f.debug_struct("XuQueue")
            .field("xu", &self.xu())
            .field("capacity", &self.capacity())
            .field("cursors", &[exec_head, scheduled_head, scheduled_tail])
            .finish_non_exhaustive()
    }
}

impl<T: Payload, C: StatusRef> XuQueue<T, C> {
    /// A queue over `mem`; with `std`, its waiters use eventfds and re-check
    /// every 10 ms ([`QueueConfig::new`](super::QueueConfig::new)'s
    /// defaults; [`XuQueue::configured`] for others).
    pub fn new(mem: RingMem) -> Self {
        let (xu, cap) = (mem.xu(), mem.capacity());
        XuQueue {
            mem,
            xu_bits: SeqId::from_cursor(0, xu).0,
            mask: if cap.is_power_of_two() {
                cap - 1
            } else {
                u64::MAX
            },
            lock: MarkCompLock::new(),
            #[cfg(feature = "std")]
            waits: super::events::Waits::new(super::QueueConfig::new(xu, cap)),
            _items: PhantomData,
        }
    }

    /// The slot index of cursor `c` (`c % capacity`, docs/abi.md §1.2): a
    /// mask for a power-of-two capacity; otherwise the mask keeps `c`,
    /// which is its own index below the capacity and needs the division
    /// above it.
    #[inline(always)]
    fn idx(&self, c: u64) -> u64 {
        match c & self.mask {
            i if i < self.mem.capacity() => i,
            _ => self.idx_above(c),
        }
    }

    #[cold]
    #[inline(never)]
    fn idx_above(&self, c: u64) -> u64 {
        c % self.mem.capacity()
    }

    /// The slot of cursor `c`.
    #[inline(always)]
    pub(super) fn slot(&self, c: u64) -> Slot<'_> {
        self.mem.slot(self.idx(c))
    }

    /// The slot of cursor `c` if it holds `c`'s seq_id (docs/abi.md §1.4,
    /// §1.9 rule 2): a stray write into the slot or the header is refused
    /// here, never trusted.
    #[inline(always)]
    pub(super) fn checked(&self, c: u64) -> Result<(Slot<'_>, SeqId), SlotMismatch> {
        // No mask: the cursors stay below CURSOR_LIMIT < 2^48 (a cursor a
        // stray write set higher names no slot's seq_id anyway).
        let (slot, expected) = (self.slot(c), SeqId(c | self.xu_bits));
        let found = slot.load_u64(SEQ_ID, Relaxed);
        if found != expected.0 {
            return Err(SlotMismatch { expected, found });
        }
        Ok((slot, expected))
    }

    /// Write the whole body of cursor `c`'s slot (docs/abi.md §1.3): the
    /// seq_id, the status cell's and the item's words, `mark_comp_efd` -1
    /// (no waiter yet) with `efd_from_pool` false. The producer's, for a
    /// slot `reserve` found free.
    #[inline(always)]
    fn write(&self, c: u64, seq: SeqId, item: T, status: Option<C>) {
        let status = status.map_or(0, Payload::into_word);
        let body = [seq.0, status, handle_word(NO_EFD, false), item.into_word()];
        // SAFETY: the slot is free: its last occupant was captured before
        // the exec_head Release the producer's refresh acquired, and it is
        // not published yet, so no worker reads it; a waiter touches a slot
        // only for a seq_id it acquired as issued. Nothing accesses it
        // concurrently. Slots are 32-byte aligned (`RingMem`).
        unsafe { self.slot(c).write_unshared(0, body) };
    }

    /// `SeqId::from_cursor(c, xu)` (docs/abi.md §1.4), the xu half precomputed.
    #[inline(always)]
    fn seq(&self, c: u64) -> SeqId {
        SeqId((c & SEQ_NUM_MASK) | self.xu_bits)
    }

    /// This queue's XU.
    pub fn xu(&self) -> XuId {
        self.mem.xu()
    }

    /// Number of slots.
    pub fn capacity(&self) -> u64 {
        self.mem.capacity()
    }

    /// `(exec_head, scheduled_head, scheduled_tail)`, each loaded Acquire.
    pub fn cursors(&self) -> (u64, u64, u64) {
        // Ordering: Acquire each; pair with the Release publishes of their
        // writers (docs/abi.md §1.9).
        let m = &self.mem;
        (
            m.load(EXEC_HEAD, Acquire),
            m.load(SCHEDULED_HEAD, Acquire),
            m.load(SCHEDULED_TAIL, Acquire),
        )
    }

    /// `xuq_get_last_completed` (docs/abi.md §1.8):
    /// `((exec_head - 1) & 0xFFFFFFFFFFFF) | xu_id << 48`.
    pub fn last_completed(&self) -> SeqId {
        // Ordering: Acquire; pairs with pop's Release of exec_head, so the
        // status written before it is visible (docs/abi.md §1.8).
        self.seq(self.mem.load(EXEC_HEAD, Acquire).wrapping_sub(1))
    }

    /// The newest handle submitted (`scheduled_tail - 1`).
    pub fn last_submitted(&self) -> SeqId {
        // Ordering: Acquire; pairs with submit's Release of scheduled_tail.
        self.seq(self.mem.load(SCHEDULED_TAIL, Acquire).wrapping_sub(1))
    }

    /// Submitted, not completed.
    pub fn in_flight(&self) -> u64 {
        let (head, _, tail) = self.cursors();
        tail.saturating_sub(head)
    }

    /// `nrta_is_completed`: `seq <= last_completed` for this XU; another
    /// XU's handle is refused first (docs/abi.md §1.8).
    pub fn is_completed(&self, seq: SeqId) -> Result<bool, ForeignXu> {
        self.check_xu(seq)?;
        Ok(self.done(seq))
    }

    #[inline]
    pub(super) fn check_xu(&self, seq: SeqId) -> Result<(), ForeignXu> {
        let ours = self.xu();
        if seq.xu_id() != ours {
            return Err(ForeignXu { seq, ours });
        }
        Ok(())
    }

    /// `seq` (of this XU) is below `exec_head`.
    #[inline]
    pub(super) fn done(&self, seq: SeqId) -> bool {
        // Ordering: Acquire; pairs with pop's Release of exec_head: the
        // status and the capture happen-before a caller that sees it done.
        seq.seq_num() < self.mem.load(EXEC_HEAD, Acquire)
    }

    /// The ABI image (header + slots) as bytes.
    ///
    /// # Safety
    /// No submit on this queue runs concurrently with this call (same
    /// thread, or ordered through a lock, a channel, a join): a submit
    /// writes the slot body with plain stores on x86_64. Use
    /// [`Producer::snapshot`], which the borrow checker keeps apart from
    /// `submit`, where you can.
    #[cfg(feature = "std")]
    pub unsafe fn snapshot(&self) -> Vec<u8> {
        self.mem.snapshot()
    }

    /// Fault injection for tests: overwrite the `seq_id` word of `seq`'s
    /// slot with `v`, as a stray writer into shared memory would.
    #[doc(hidden)]
    #[cfg(any(test, feature = "testkit"))]
    pub fn corrupt_seq_id(&self, seq: SeqId, v: u64) {
        self.slot(seq.seq_num()).store_u64(SEQ_ID, v, Relaxed);
    }

    /// Signal a captured handle and close it unless pooled (docs/abi.md §1.9
    /// consumer: write, then close a fresh one).
    #[cold]
    #[inline(never)]
    fn signal(&self, seq: SeqId, efd: i32, pooled: bool) -> Signal {
        // Without `std` there are no waiters: nothing installs a handle,
        // and no sink could signal one (EINVAL).
        #[cfg(not(feature = "std"))]
        let r = Err(22);
        #[cfg(feature = "std")]
        let r = self.waits.cfg.sink.signal(efd);
        #[cfg(feature = "std")]
        if !pooled {
            self.waits.cfg.sink.close(efd);
        }
        match r {
            Ok(()) => Signal::Signalled { fd: efd, pooled },
            Err(errno) => Signal::Failed(SignalError { seq, errno }),
        }
    }
}

/// A submit refused: the error, and the item and status cell back.
#[derive(Debug)]
pub struct Rejected<T, C> {
    /// Why (`Full` is `NRT_QUEUE_FULL`).
    pub error: SubmitError,
    /// The item, unchanged.
    pub item: T,
    /// The status cell, unchanged.
    pub status: Option<C>,
}

impl<T, C> core::fmt::Display for Rejected<T, C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.error.fmt(f)
    }
}

impl<T: core::fmt::Debug, C: core::fmt::Debug> core::error::Error for Rejected<T, C> {}

/// The producer: owns `scheduled_tail` and `scheduled_head`. One thread.
///
/// `Q` is how it holds its queue: `&XuQueue` ([`XuQueue::split`]) or an
/// `Arc` ([`XuQueue::split_arc`]). It keeps no copy of its own two cursors:
/// it reads them back from the header (its own last publishes, as in the C
/// original), which costs a load where a copy would cost a store per item,
/// and checks them, since a stray write may have changed them.
///
/// # Examples
///
/// ```
/// use xunds::ring::{RingMem, SubmitError, XuQueue};
/// use xunds::wire::seq_id::XuId;
///
/// let mut queue = XuQueue::<u64>::new(RingMem::owned(XuId::new(0, 0, 1), 2, 1).unwrap());
/// let (mut producer, _worker) = queue.split();
/// let first = producer.submit_burst(2, |seq| (seq.seq_num(), None)).unwrap();
/// let full = producer.submit(9, None).unwrap_err();
/// assert_eq!((full.error, full.item), (SubmitError::Full, 9));
/// assert_eq!(producer.trigger_burst(2).unwrap().seq_num(), first.seq_num() + 1);
/// ```
#[derive(Debug)]
pub struct Producer<Q> {
    q: Q,
    /// The last `exec_head` observed (it only grows).
    exec: u64,
    /// `min(capacity, CURSOR_LIMIT - 1 - exec)`: how far past `exec` the
    /// tail may go, so one compare checks depth and cursor limit.
    room: u64,
}

impl<T, C, Q> Producer<Q>
where
    T: Payload,
    C: StatusRef,
    Q: Deref<Target = XuQueue<T, C>>,
{
    pub(super) fn new(q: Q) -> Self {
        let mut p = Producer {
            q,
            exec: 0,
            room: 0,
        };
        p.refresh();
        p
    }

    /// The queue (for queries and waits; `Clone` it to share an `Arc`).
    pub fn queue(&self) -> &Q {
        &self.q
    }

    /// Re-read `exec_head` (the cache says full).
    #[inline]
    fn refresh(&mut self) {
        // Ordering: Acquire; pairs with pop's Release of exec_head (docs/abi.md
        // §1.9 rule 2): the worker's capture of a slot happens-before our
        // rewrite of it.
        self.exec = self.q.mem.load(EXEC_HEAD, Acquire);
        self.room = (CURSOR_LIMIT - 1)
            .saturating_sub(self.exec)
            .min(self.q.capacity());
    }

    /// Room for `n` more slots after `tail` (ours, read back): `tail -
    /// exec_head + n <= capacity` and `tail + n < CURSOR_LIMIT`. Only a miss
    /// reads `exec_head` again.
    #[inline(always)]
    fn reserve(&mut self, tail: u64, n: u64) -> Result<(), SubmitError> {
        // A tail below exec_head (a stray write) wraps to a huge `used`, so
        // one compare checks both ends.
        let used = tail.wrapping_sub(self.exec);
        if used <= self.room && n <= self.room - used {
            return Ok(());
        }
        self.reserve_slow(tail, n)
    }

    #[cold]
    #[inline(never)]
    fn reserve_slow(&mut self, tail: u64, n: u64) -> Result<(), SubmitError> {
        self.refresh();
        let used = tail.wrapping_sub(self.exec);
        if used <= self.room && n <= self.room - used {
            return Ok(());
        }
        Err(if used > self.q.capacity() {
            SubmitError::Corrupted {
                exec_head: self.exec,
                tail,
            }
        } else if n >= CURSOR_LIMIT.saturating_sub(tail) {
            SubmitError::CursorExhausted { tail }
        } else {
            SubmitError::Full
        })
    }

    /// `xuq_client_submit`: reserve a slot (else `Full`, changing no
    /// byte), write its whole body, publish `scheduled_tail`.
    // `inline(always)` here, on `trigger_burst` and on `Worker::pop`: the
    // per-item path must inline into the caller's loop, which the compiler's
    // own choice did not do in a generic caller.
    #[inline(always)]
    pub fn submit(&mut self, item: T, status: Option<C>) -> Result<SeqId, Rejected<T, C>> {
        // Ordering: Relaxed; we are scheduled_tail's one writer, so this is
        // our own last publish (`reserve` checks it against exec_head).
        let tail = self.q.mem.load(SCHEDULED_TAIL, Relaxed);
        if let Err(error) = self.reserve(tail, 1) {
            return Err(Rejected {
                error,
                item,
                status,
            });
        }
        let (q, header) = (&*self.q, self.q.mem.header());
        // `reserve` keeps `tail` below CURSOR_LIMIT < 2^48: no mask needed.
        let seq = SeqId(tail | q.xu_bits);
        q.write(tail, seq, item, status);
        // Ordering: Release; the body stores happen-before any Acquire of
        // the new scheduled_tail (docs/abi.md §1.9 rule 1).
        header.store_u64(SCHEDULED_TAIL, tail + 1, PUBLISH);
        Ok(seq)
    }

    /// Submit `n` items with one publish of `scheduled_tail`; `make(seq)`
    /// makes each item and status cell. All or nothing: a refusal changes
    /// no byte and calls `make` not at all. Returns the first seq_id. If
    /// `make` panics part-way, nothing is published and what it made is
    /// leaked (never dropped, never popped).
    #[inline]
    pub fn submit_burst(
        &mut self,
        n: u64,
        mut make: impl FnMut(SeqId) -> (T, Option<C>),
    ) -> Result<SeqId, SubmitError> {
        // Ordering: Relaxed; our own last publish, as in `submit`.
        let tail = self.q.mem.load(SCHEDULED_TAIL, Relaxed);
        self.reserve(tail, n)?;
        let q = &*self.q;
        for c in tail..tail + n {
            let (item, status) = make(q.seq(c));
            q.write(c, q.seq(c), item, status);
        }
        // Ordering: Release; publishes all n bodies (docs/abi.md §1.9 rule 1).
        q.mem.store(SCHEDULED_TAIL, tail + n, PUBLISH);
        Ok(q.seq(tail))
    }

    /// `xuq_client_trigger_next`: publish `scheduled_head` past one slot (the
    /// release to the worker). Returns the triggered seq_id.
    #[inline(always)]
    pub fn trigger_next(&mut self) -> Result<SeqId, TriggerError> {
        self.trigger_burst(1)
    }

    /// Trigger `n` submitted slots with one publish of `scheduled_head`.
    /// Returns the last triggered seq_id.
    #[inline(always)]
    pub fn trigger_burst(&mut self, n: u64) -> Result<SeqId, TriggerError> {
        let (q, header) = (&*self.q, self.q.mem.header());
        // Ordering: Relaxed both; our own last publishes.
        let head = header.load_u64(SCHEDULED_HEAD, Relaxed);
        let tail = header.load_u64(SCHEDULED_TAIL, Relaxed);
        // exec_head <= scheduled_head, and our cached exec_head never runs
        // ahead of the real one: below it is a stray write.
        if head < self.exec {
            return Err(TriggerError::Corrupted {
                exec_head: self.exec,
                head,
            });
        }
        if n == 0 || tail.saturating_sub(head) < n {
            return Err(TriggerError::NothingToTrigger);
        }
        // Ordering: Release; pairs with the worker's Acquire in
        // `Worker::refresh`, the pair that matters (docs/abi.md §1.9 rule 3):
        // the bodies behind scheduled_tail are visible to the worker.
        header.store_u64(SCHEDULED_HEAD, head + n, PUBLISH);
        Ok(q.seq(head + n - 1))
    }

    /// Whether a submit would find room now.
    pub fn has_space(&mut self) -> bool {
        let tail = self.q.mem.load(SCHEDULED_TAIL, Relaxed);
        self.reserve(tail, 1).is_ok()
    }

    /// Submitted, not yet triggered.
    pub fn untriggered(&self) -> u64 {
        let m = &self.q.mem;
        // Ordering: Relaxed both; our own last publishes.
        let tail = m.load(SCHEDULED_TAIL, Relaxed);
        tail.saturating_sub(m.load(SCHEDULED_HEAD, Relaxed))
    }

    /// The ABI image (header + slots) as bytes, on the producer's thread
    /// (`&self` keeps `submit` out).
    #[cfg(feature = "std")]
    pub fn snapshot(&self) -> Vec<u8> {
        // SAFETY: submits need `&mut self`; while this borrow lives none
        // runs, and the queue has no other producer.
        unsafe { self.q.snapshot() }
    }
}

/// What a pop did about the waiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// `mark_comp_efd` was -1.
    NoWaiter,
    /// Signalled the captured handle (closed it too unless pooled).
    Signalled {
        /// The captured handle.
        fd: i32,
        /// `efd_from_pool`.
        pooled: bool,
    },
    /// The write failed: completion is published anyway; a waiter finds it
    /// on its bounded re-check. [`Popped::status`] is `NRT_FAILURE`.
    Failed(SignalError),
}

/// A failed completion signal (docs/abi.md §1.9): the completion itself is
/// already published, only the wake-up was lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignalError {
    /// The completed request.
    pub seq: SeqId,
    /// `errno` of the failed `write`.
    pub errno: i32,
}

impl core::fmt::Display for SignalError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // The seed's log line, verbatim (docs/abi.md §1.9 consumer pseudo-code).
        write!(
            f,
            "Failed to signal completion event for request 0x{:x}. errno: {}",
            self.seq.0, self.errno
        )
    }
}

impl core::error::Error for SignalError {}

/// One popped execution.
#[derive(Debug)]
pub struct Popped<T> {
    /// Its seq_id.
    pub seq: SeqId,
    /// The work item, back in the worker's hands.
    pub item: T,
    /// What happened to the waiter's signal.
    pub signal: Signal,
}

impl<T> Popped<T> {
    /// `NRT_SUCCESS`, or `NRT_FAILURE` when the signal write failed
    /// (docs/abi.md §1.8).
    pub fn status(&self) -> NrtStatus {
        match self.signal {
            Signal::Failed(_) => NrtStatus::FAILURE,
            _ => NrtStatus::SUCCESS,
        }
    }
}

/// The slot at `exec_head` as [`Worker::peek`] sees it; derefs to the item,
/// which the slot still owns.
pub struct SlotView<'a, T> {
    /// The slot's seq_id (checked against `exec_head` and the xu_id).
    pub seq: SeqId,
    /// The raw `exec_status` word (the status cell's address, or 0).
    pub exec_status: u64,
    /// The raw `exec_info` word.
    pub exec_info: u64,
    item: ManuallyDrop<T>,
    _worker: PhantomData<&'a mut ()>,
}

impl<T> Deref for SlotView<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.item
    }
}

/// The worker: owns `exec_head`. One thread.
///
/// # Examples
///
/// ```
/// use xunds::ring::{PopError, RingMem, XuQueue};
/// use xunds::wire::seq_id::XuId;
/// use xunds::NrtStatus;
///
/// let mut queue = XuQueue::<u64>::new(RingMem::owned(XuId::new(0, 0, 1), 4, 1).unwrap());
/// let (mut producer, mut worker) = queue.split();
/// assert_eq!(worker.pop(NrtStatus::SUCCESS).unwrap_err(), PopError::Empty);
/// producer.submit(7, None).unwrap();
/// assert_eq!(worker.available(), 0, "submitted, not triggered");
/// producer.trigger_next().unwrap();
/// assert_eq!(*worker.peek().unwrap(), 7);
/// assert_eq!(worker.pop(NrtStatus::SUCCESS).unwrap().item, 7);
/// ```
#[derive(Debug)]
pub struct Worker<Q> {
    q: Q,
    /// Our `exec_head` (we are its one writer).
    head: u64,
    /// The last `scheduled_head` observed.
    seen: u64,
}

impl<T, C, Q> Worker<Q>
where
    T: Payload,
    C: StatusRef,
    Q: Deref<Target = XuQueue<T, C>>,
{
    pub(super) fn new(q: Q) -> Self {
        // Ordering: Relaxed; we are exec_head's one writer from now on.
        let head = q.mem.load(EXEC_HEAD, Relaxed);
        Worker {
            q,
            head,
            seen: head,
        }
    }

    /// The queue (for queries and waits).
    pub fn queue(&self) -> &Q {
        &self.q
    }

    /// Read `scheduled_head` again; returns the triggered items not yet
    /// popped.
    #[inline]
    pub fn refresh(&mut self) -> u64 {
        // Ordering: Acquire; pairs with the producer's Release in
        // `trigger_burst` (docs/abi.md §1.9 rule 3): the bodies of the slots
        // it covers are visible here.
        self.seen = self.q.mem.load(SCHEDULED_HEAD, Acquire);
        self.ready()
    }

    /// [`refresh`](Self::refresh), off the per-item path.
    #[cold]
    fn refill(&mut self) -> u64 {
        self.refresh()
    }

    /// Triggered items not yet popped as of the last refresh (no memory
    /// read; a `scheduled_head` below ours, a stray write, reads as none).
    #[inline(always)]
    pub fn ready(&self) -> u64 {
        self.seen.saturating_sub(self.head)
    }

    /// Triggered items not yet popped, refreshing when the cache says none.
    #[inline]
    pub fn available(&mut self) -> u64 {
        match self.ready() {
            0 => self.refresh(),
            n => n,
        }
    }

    /// `xuq_worker_pop_current_exec` with the worker's status write: check
    /// the slot, write `status` through its `exec_status`, then under the
    /// mark-completion lock capture `mark_comp_efd`, `efd_from_pool` and
    /// `exec_info` and publish `exec_head`; then signal the captured handle.
    #[inline(always)]
    pub fn pop(&mut self, status: NrtStatus) -> Result<Popped<T>, PopError> {
        if self.ready() == 0 && self.refill() == 0 {
            return Err(PopError::Empty);
        }
        Ok(self.take(status)?)
    }

    /// Pop the triggered slot at `exec_head` (the caller saw one ready):
    /// [`pop`](Self::pop) past its empty check.
    #[inline(always)]
    fn take(&mut self, status: NrtStatus) -> Result<Popped<T>, SlotMismatch> {
        let head = self.head;
        let (slot, seq) = self.q.checked(head)?;
        let (q, header) = (&*self.q, self.q.mem.header());
        // TRIGGERED -> DONE: the status, published by the Release below.
        let status_word = slot.load_u64(EXEC_STATUS, Relaxed);
        // (The `status_after_completion` mutant writes it after the Release;
        // `.ci/loom`'s `ring_status` must kill that.)
        #[cfg(not(xunds_mutant = "status_after_completion"))]
        write_status::<C>(status_word, status);
        let (handle, info) = {
            let lock = q.lock.lock_worker();
            // Mutant (`.ci/loom`'s `ring_capture` must kill it): the advance
            // before the capture.
            #[cfg(xunds_mutant = "advance_before_capture")]
            header.store_u64(EXEC_HEAD, head + 1, PUBLISH);
            // Capture, then advance (docs/abi.md §1.9 rule 2). With no handle
            // installed anywhere, every triggered slot's mark_comp_efd is -1.
            let mut handle = (NO_EFD, false);
            if lock.any_installed() {
                handle = handle_fields(slot.load_u64(HANDLE, Relaxed));
                if handle.0 != NO_EFD {
                    lock.removed();
                }
            }
            let info = slot.load_u64(EXEC_INFO, Relaxed);
            // Ordering: Release; DONE -> FREE. Pairs with the producer's
            // Acquire in its refresh (the slot may be rewritten only after
            // this capture) and with every query's and waiter's Acquire (the
            // status is visible to whoever sees the completion),
            // docs/abi.md §1.8, §1.9 rule 2.
            #[cfg(not(xunds_mutant = "advance_before_capture"))]
            header.store_u64(EXEC_HEAD, head + 1, PUBLISH);
            (handle, info)
        };
        #[cfg(xunds_mutant = "status_after_completion")]
        write_status::<C>(status_word, status);
        self.head = head + 1;
        // SAFETY: `info` is the word submit made with `T::into_word` for this
        // slot (its seq_id checked), and this pop is its one consumer:
        // exec_head has moved past it.
        let item = unsafe { T::from_word(info) };
        let signal = match handle {
            (NO_EFD, _) => Signal::NoWaiter,
            (efd, pooled) => q.signal(seq, efd, pooled),
        };
        Ok(Popped { seq, item, signal })
    }

    /// `xuq_worker_peek_current_exec`: the slot at `exec_head`, checked.
    pub fn peek(&mut self) -> Result<SlotView<'_, T>, PopError> {
        if self.available() == 0 {
            return Err(PopError::Empty);
        }
        let (slot, seq) = self.q.checked(self.head)?;
        let exec_status = slot.load_u64(EXEC_STATUS, Relaxed);
        let exec_info = slot.load_u64(EXEC_INFO, Relaxed);
        Ok(SlotView {
            seq,
            exec_status,
            exec_info,
            // SAFETY: the word came from `T::into_word` at submit (a checked
            // slot of this queue); `ManuallyDrop` keeps this view from
            // dropping it, so the slot keeps sole ownership until pop.
            item: ManuallyDrop::new(unsafe { T::from_word(exec_info) }),
            _worker: PhantomData,
        })
    }

    /// Pop up to `max` triggered items, one [`pop`](Self::pop) each;
    /// `status(seq)` gives each item's status, `out` receives each popped
    /// item in FIFO order. Returns how many. Every slot's seq_id is checked
    /// before anything is written: a refusal moves nothing.
    pub fn pop_burst(
        &mut self,
        max: usize,
        mut status: impl FnMut(SeqId) -> NrtStatus,
        mut out: impl FnMut(Popped<T>),
    ) -> Result<usize, SlotMismatch> {
        let want = max as u64;
        if self.ready() < want {
            self.refresh();
        }
        let n = self.ready().min(want);
        let burst = self.head..self.head + n;
        for c in burst.clone() {
            self.q.checked(c)?;
        }
        for c in burst {
            out(self.take(status(self.q.seq(c)))?);
        }
        Ok(n as usize)
    }

    /// Reclaim the slot at `exec_head` that [`peek`](Self::peek) and
    /// [`pop`](Self::pop) refuse (its seq_id was overwritten by a stray
    /// writer): advance `exec_head` past it under the mark-completion lock,
    /// trusting none of its words. No status is written, no handle signalled,
    /// no item taken: the item and status cell its words named are leaked, a
    /// blocked waiter finds the completion on its re-check (an armed eventfd
    /// is never signalled, its dup stays open), and a handle installed before
    /// the overwrite stays counted (pops then look at handles: slower, never
    /// wrong). Returns the seq_id the cursor names.
    pub fn discard(&mut self) -> Result<SeqId, DiscardError> {
        if self.available() == 0 {
            return Err(DiscardError::Empty);
        }
        let head = self.head;
        let seq = match self.q.checked(head) {
            Ok((_, seq)) => return Err(DiscardError::Intact { seq }),
            Err(m) => m.expected,
        };
        let q = &*self.q;
        {
            let _lock = q.lock.lock_worker();
            // Ordering: Release; as in `pop`.
            q.mem.store(EXEC_HEAD, head + 1, PUBLISH);
        }
        self.head = head + 1;
        Ok(seq)
    }
}

/// Write `status` through a slot's `exec_status` word, if it holds one.
#[inline(always)]
fn write_status<C: StatusRef>(word: u64, status: NrtStatus) {
    if word != 0 {
        // SAFETY: a non-zero exec_status word came from `C::into_word` at
        // submit; the slot gives it to us once (a slot is popped once), and
        // the handle's ownership ends when it drops here.
        unsafe { C::from_word(word) }.set(status);
    }
}

/// Unit tests that need the ring's insides (its slots, its lock); the
/// behaviour suites are `tests/ring_queue.rs` and `tests/ring_props.rs`, the
/// memory models `loom-tests/tests/ring_*.rs`.
#[cfg(test)]
mod tests {

    use std::time::{Duration, Instant};

    use super::super::error::{DiscardError, PopError, SlotMismatch, SubmitError, WaitError};
    use super::super::events::QueueConfig;
    use super::super::mem::{handle_word, mapped_len, RingMem};
    use super::super::owner::StaticQueue;
    use super::super::status::{StatusArc, StatusCell};
    use super::super::waiter::{after, eventfd_factory, CompletionSink, WaitMode, Waited};
    use super::{Producer, Worker, XuQueue};
    use crate::sync::atomic::Ordering::Relaxed;
    use crate::wire::exec_slot::off::MARK_COMP_EFD;
    use crate::wire::exec_slot::NO_EFD;
    use crate::wire::seq_id::{SeqId, XuId};
    use crate::wire::status::NrtStatus;

    fn xu() -> XuId {
        XuId::new(0, 1, 2)
    }

    /// A wait's deadline and spin end: an overflowing sum is a far time, not a
    /// panic (`wait(seq, mode, Duration::MAX)` waits for good).
    #[test]
    fn after_saturates() {
        let now = Instant::now();
        assert_eq!(
            after(now, Duration::from_millis(5)),
            now + Duration::from_millis(5)
        );
        assert!(after(now, Duration::MAX) >= now + Duration::from_secs(1 << 31));
    }

    /// A producer thread and a worker thread through a 4-slot ring, slots reused
    /// 50 times over: FIFO, every item once. Its point is Miri (`cargo +nightly
    /// miri test --lib -- ring::tests`): on x86_64 the body is written with
    /// plain 16-byte stores (`Words::write_unshared`), and Miri's race detector
    /// checks that no read of a slot races with them.
    #[test]
    fn two_threads_fifo_with_plain_body_stores() {
        let (p, w) = XuQueue::<u64>::owned(QueueConfig::new(XuId::new(0, 0, 1), 4)).unwrap();
        two_threads_fifo(p, w);
    }

    /// The same on the byte-exact mapped memory (the slot array in a mapping;
    /// under Miri the mapping is heap memory, see `hal::mem`).
    #[test]
    fn two_threads_fifo_with_plain_body_stores_mapped() {
        use crate::hal::mem::Mapping;
        let region = Mapping::anonymous(mapped_len(4)).unwrap().into_region();
        // SAFETY: a fresh anonymous mapping only this queue touches.
        let (p, w) =
            unsafe { XuQueue::<u64>::mapped(region, QueueConfig::new(XuId::new(0, 0, 1), 4)) }
                .unwrap();
        two_threads_fifo(p, w);
    }

    /// The same with borrowed handles over caller memory, in scoped threads.
    #[test]
    fn two_threads_fifo_borrowed_from_caller_memory() {
        #[repr(C, align(64))]
        struct Mem([u64; mapped_len(4) / 8]);
        let mut mem = Mem([0; mapped_len(4) / 8]);
        // SAFETY: `mem` outlives the queue (dropped at the end of this scope)
        // and is touched only through it.
        let ring =
            unsafe { RingMem::init_raw(mem.0.as_mut_ptr().cast(), mapped_len(4), xu(), 4, 1) }
                .unwrap();
        let mut q = XuQueue::<u64>::new(ring);
        let (p, w) = q.split();
        std::thread::scope(|s| {
            s.spawn(move || produce(p));
            consume(w);
        });
    }

    const N: u64 = 200;

    fn produce<T, Q: core::ops::Deref<Target = XuQueue<u64, T>>>(mut p: Producer<Q>)
    where
        T: super::super::status::StatusRef,
    {
        for i in 0..N {
            while p.submit(i, None).is_err() {
                std::thread::yield_now();
            }
            p.trigger_next().unwrap();
        }
    }

    fn consume<T, Q: core::ops::Deref<Target = XuQueue<u64, T>>>(mut w: Worker<Q>)
    where
        T: super::super::status::StatusRef,
    {
        let mut next = 0;
        while next < N {
            match w.pop(NrtStatus::SUCCESS) {
                Ok(got) => {
                    assert_eq!(got.item, next);
                    next += 1;
                }
                Err(PopError::Empty) => std::thread::yield_now(),
                Err(e) => panic!("{e}"),
            }
        }
    }

    fn two_threads_fifo<Q>(p: Producer<Q>, w: Worker<Q>)
    where
        Q: core::ops::Deref<Target = XuQueue<u64>> + Send + 'static,
    {
        let prod = std::thread::spawn(move || produce(p));
        consume(w);
        prod.join().unwrap();
    }

    /// Counts closes (never closes anything: the fds here are made up).
    struct CountingSink(std::sync::Mutex<Vec<i32>>);
    impl CompletionSink for CountingSink {
        fn signal(&self, _fd: i32) -> Result<(), i32> {
            Ok(())
        }
        fn close(&self, fd: i32) {
            self.0.lock().unwrap().push(fd);
        }
    }

    /// docs/abi.md §1.4: `last_submitted` is the newest handle issued, not a
    /// default (mutant: `last_submitted` -> `Default::default()`).
    #[test]
    fn last_submitted_is_the_newest_handle() {
        let (mut p, _w) = XuQueue::<u64>::owned(QueueConfig::new(xu(), 4)).unwrap();
        let q = p.queue().clone();
        assert_eq!(q.last_submitted(), SeqId::from_cursor(0, xu()));
        let a = p.submit(1, None).unwrap();
        assert_eq!(q.last_submitted(), a);
        let b = p.submit(2, None).unwrap();
        assert_eq!(q.last_submitted(), b);
        assert_ne!(a, b);
        assert_eq!(q.in_flight(), 2);
    }

    /// The queue reports the XU and the slot count it was made with (mutants:
    /// `xu` -> `Default::default()`, `capacity` -> 0 or 1).
    #[test]
    fn a_queue_knows_its_xu_and_capacity() {
        let (p, w) = XuQueue::<u64>::owned(QueueConfig::new(xu(), 4)).unwrap();
        assert_ne!(xu(), XuId::default());
        for q in [p.queue(), w.queue()] {
            assert_eq!(q.xu(), xu());
            assert_eq!(q.capacity(), 4);
        }
    }

    /// Dropping a queue with in-flight slots closes only the dups the slots own:
    /// never a slot without a handle (`NO_EFD`), never a pooled event (the pool
    /// owns it). Mutant: `efd != NO_EFD && !pooled` -> `||`.
    #[test]
    fn drop_closes_only_owned_dups() {
        let sink = std::sync::Arc::new(CountingSink(std::sync::Mutex::new(Vec::new())));
        let cfg = QueueConfig::new(xu(), 4).signals(sink.clone(), eventfd_factory());
        let (mut p, w) = XuQueue::<u64>::owned(cfg).unwrap();
        let q = p.queue().clone();
        let _none = p.submit(1, None).unwrap();
        let pooled = p.submit(2, None).unwrap();
        let owned = p.submit(3, None).unwrap();
        let set = |s: SeqId, fd, pool| {
            q.slot(s.seq_num())
                .store_u64(MARK_COMP_EFD, handle_word(fd, pool), Relaxed)
        };
        set(pooled, 7001, true);
        set(owned, 7002, false);
        drop((p, w, q));
        assert_eq!(*sink.0.lock().unwrap(), vec![7002]);
    }

    /// A dropped queue gives back what its in-flight slots own, and leaves a
    /// slot whose seq_id a stray writer changed alone (its words are not
    /// trusted): the cell of the intact slot is released, the other leaked.
    #[test]
    fn drop_returns_only_what_intact_slots_own() {
        let (mut p, w) = XuQueue::<u64>::owned(QueueConfig::new(xu(), 4)).unwrap();
        let cells = [StatusArc::default(), StatusArc::default()];
        p.submit(1, Some(cells[0].clone())).unwrap();
        let spoiled = p.submit(2, Some(cells[1].clone())).unwrap();
        p.queue().corrupt_seq_id(spoiled, 0);
        drop((p, w));
        assert_eq!(std::sync::Arc::strong_count(&cells[0]), 1, "given back");
        assert_eq!(std::sync::Arc::strong_count(&cells[1]), 2, "leaked");
        // SAFETY: the count the submit handed to the slot, which the drop left
        // behind: given back here so the test leaks nothing (Miri).
        unsafe { std::sync::Arc::decrement_strong_count(std::sync::Arc::as_ptr(&cells[1])) };
    }

    /// A handle the worker captures leaves the installed count, by `pop` and
    /// by `pop_burst`, so the worker's fast path (no handle anywhere) comes
    /// back; a handle still in a slot keeps it counted. Mutants:
    /// `WorkerGuard::removed` -> `()`, `take`'s `!=` -> `==`.
    #[test]
    fn a_captured_handle_leaves_the_installed_count() {
        let (mut p, mut w) = XuQueue::<u64>::owned(QueueConfig::new(xu(), 4)).unwrap();
        let q = p.queue().clone();
        let installed = || q.lock.lock_worker().any_installed();
        let ev = crate::hal::eventfd::EventFd::new().unwrap();
        let a = p.submit(1, None).unwrap();
        let b = p.submit(2, None).unwrap();
        p.trigger_burst(2).unwrap();
        q.arm(a, &ev).unwrap();
        q.arm(b, &ev).unwrap();
        assert!(installed());
        assert_eq!(w.pop(NrtStatus::SUCCESS).unwrap().seq, a);
        assert!(installed(), "b's handle is still in its slot");
        let mut popped = Vec::new();
        let n = w.pop_burst(4, |_| NrtStatus::SUCCESS, |pp| popped.push(pp.signal));
        assert_eq!(n, Ok(1));
        assert!(matches!(
            popped[..],
            [super::Signal::Signalled { pooled: false, .. }]
        ));
        assert!(!installed(), "every captured handle left the count");
    }

    /// A waiter that times out takes its handle back and the installed count
    /// with it, so the worker's fast path (no handle anywhere) comes back.
    /// Mutant: `uninstall`'s `!=` -> `==`.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "a blocking wait needs poll(2), not available under Miri"
    )]
    fn a_timed_out_waiter_leaves_no_installed_handle_counted() {
        let (mut p, _w) = XuQueue::<u64>::owned(QueueConfig::new(xu(), 4)).unwrap();
        let q = p.queue().clone();
        let s = p.submit(1, None).unwrap();
        p.trigger_next().unwrap();
        assert!(!q.lock.lock_worker().any_installed());
        let r = q.wait(s, WaitMode::Block, Duration::from_millis(5));
        assert_eq!(r, Ok(Waited::TimedOut));
        let handle = q.slot(s.seq_num()).load_u64(MARK_COMP_EFD, Relaxed);
        assert_eq!(handle, handle_word(NO_EFD, false));
        assert!(
            !q.lock.lock_worker().any_installed(),
            "the installed count still counts the uninstalled handle"
        );
    }

    /// A slot whose seq_id was overwritten (`corrupt_seq_id`, as a stray writer
    /// would) is refused at peek and at pop naming both values, and the refusal
    /// changes nothing: the cursors stay and the same refusal comes again; a
    /// waiter's install is refused the same way (docs/abi.md §1.9).
    #[test]
    fn an_overwritten_seq_id_is_refused_at_peek_and_pop() {
        let (mut p, mut w) = XuQueue::<u64>::owned(QueueConfig::new(xu(), 4)).unwrap();
        let q = p.queue().clone();
        let s = p.submit(1, None).unwrap();
        p.trigger_next().unwrap();
        q.corrupt_seq_id(s, s.0 ^ 0x40);
        let mismatch = SlotMismatch {
            expected: s,
            found: s.0 ^ 0x40,
        };
        assert_eq!(w.peek().map(|v| v.seq), Err(PopError::Mismatch(mismatch)));
        assert_eq!(
            w.pop(NrtStatus::SUCCESS).map(|p| p.seq),
            Err(PopError::Mismatch(mismatch))
        );
        assert_eq!(q.cursors(), (1, 2, 2), "nothing moved");
        assert_eq!(
            w.pop_burst(4, |_| NrtStatus::SUCCESS, |_| ()),
            Err(mismatch)
        );
        assert_eq!(w.peek().map(|v| v.seq), Err(PopError::Mismatch(mismatch)));
        let ev = crate::hal::eventfd::EventFd::new().unwrap();
        assert_eq!(q.arm(s, &ev), Err(WaitError::Mismatch(mismatch)));
    }

    /// `discard` reclaims only an overwritten head slot: an empty ring is
    /// `Empty`, an intact slot is refused (`Intact`, nothing moves); the
    /// overwritten one is passed with no status written and no item taken,
    /// `exec_head` moves by one, so the seq_id reads as completed and the slot
    /// behind it pops as usual. Mutants: every early return, the advance, the
    /// head step.
    #[test]
    fn discard_reclaims_only_an_overwritten_slot() {
        let (mut p, mut w) = XuQueue::<u64>::owned(QueueConfig::new(xu(), 2)).unwrap();
        let q = p.queue().clone();
        assert_eq!(w.discard(), Err(DiscardError::Empty));
        let cells = [StatusArc::default(), StatusArc::default()];
        let a = p.submit(10, Some(cells[0].clone())).unwrap();
        let b = p.submit(11, Some(cells[1].clone())).unwrap();
        p.trigger_next().unwrap();
        assert_eq!(w.discard(), Err(DiscardError::Intact { seq: a }));
        assert_eq!(q.cursors(), (1, 2, 3), "nothing moved");
        q.corrupt_seq_id(a, 0);
        assert_eq!(w.discard(), Ok(a));
        assert_eq!(q.cursors(), (2, 2, 3));
        assert!(q.is_completed(a).unwrap() && !q.is_completed(b).unwrap());
        assert_eq!(cells[0].get(), None, "no status through an untrusted word");
        assert_eq!(
            std::sync::Arc::strong_count(&cells[0]),
            2,
            "leaked, not dropped"
        );
        // SAFETY: the count the submit handed to the slot, which the discard
        // left behind: given back here so the test leaks nothing (Miri).
        unsafe { std::sync::Arc::decrement_strong_count(std::sync::Arc::as_ptr(&cells[0])) };
        assert_eq!(
            w.discard(),
            Err(DiscardError::Empty),
            "b is not triggered yet"
        );
        p.trigger_next().unwrap();
        let popped = w.pop(NrtStatus::SUCCESS).unwrap();
        assert_eq!((popped.seq, popped.item), (b, 11));
        assert_eq!(cells[1].get(), Some(NrtStatus::SUCCESS));
        // The discarded slot is reused like any other.
        let c = p.submit(12, None).unwrap();
        p.submit(13, None).unwrap();
        p.trigger_burst(2).unwrap();
        assert_eq!(w.pop(NrtStatus::SUCCESS).unwrap().seq, c);
        assert_eq!(q.cursors(), (4, 5, 5));
    }

    /// Cursors a stray writer moved are refused, never trusted: a
    /// `scheduled_tail` below `exec_head` or past `exec_head + capacity` at
    /// submit, a `scheduled_head` below `exec_head` at trigger, a
    /// `scheduled_head` below the worker's head (read as empty); nothing is
    /// written. Mutants: `reserve_slow`'s corruption test, `trigger_burst`'s
    /// `<`.
    #[test]
    fn cursors_a_stray_write_moved_are_refused() {
        use super::super::error::TriggerError;
        use crate::wire::xu_queue::off::{SCHEDULED_HEAD, SCHEDULED_TAIL};
        let (mut p, mut w) = XuQueue::<u64>::owned(QueueConfig::new(xu(), 4).start_at(10)).unwrap();
        let q = p.queue().clone();
        p.submit(1, None).unwrap();
        p.trigger_next().unwrap();
        w.pop(NrtStatus::SUCCESS).unwrap();
        p.submit(2, None).unwrap();
        let image = p.snapshot();
        let set = |c: usize, v: u64| q.mem.store(c, v, Relaxed);
        for bad in [3, 11 + 5, u64::MAX] {
            set(SCHEDULED_TAIL, bad);
            let refused = p.submit(3, None).unwrap_err().error;
            assert_eq!(
                refused,
                SubmitError::Corrupted {
                    exec_head: 11,
                    tail: bad
                }
            );
        }
        set(SCHEDULED_TAIL, 12);
        assert_eq!(p.snapshot(), image, "nothing written");
        set(SCHEDULED_HEAD, 4);
        let refused = p.trigger_next().unwrap_err();
        assert_eq!(
            refused,
            TriggerError::Corrupted {
                exec_head: 11,
                head: 4
            }
        );
        assert_eq!(w.pop(NrtStatus::SUCCESS).unwrap_err(), PopError::Empty);
        assert_eq!(w.available(), 0);
        set(SCHEDULED_HEAD, 11);
        p.trigger_next().unwrap();
        assert_eq!(w.pop(NrtStatus::SUCCESS).unwrap().item, 2);
    }

    /// A `no_std`-shaped queue: in a `StaticQueue`, `&'static` items and status
    /// cells. FIFO, a full ring gives the item and its cell back, pop writes
    /// each cell, and the queue splits once.
    #[test]
    fn a_static_queue() {
        static QUEUE: StaticQueue<&'static u32, &'static StatusCell, 2> = StaticQueue::new();
        static ITEMS: [u32; 3] = [7, 8, 9];
        static CELLS: [StatusCell; 3] = [const { StatusCell::new() }; 3];
        let (mut p, mut w) = QUEUE.split(xu(), 1).unwrap();
        assert_eq!(
            QUEUE.split(xu(), 1).map(drop),
            Err(super::super::error::InitError::InUse)
        );
        let a = p.submit(&ITEMS[0], Some(&CELLS[0])).unwrap();
        p.submit(&ITEMS[1], Some(&CELLS[1])).unwrap();
        let full = p.submit(&ITEMS[2], Some(&CELLS[2])).unwrap_err();
        assert_eq!(full.error, SubmitError::Full);
        assert!(core::ptr::eq(full.item, &ITEMS[2]));
        assert!(full.status.is_some_and(|c| core::ptr::eq(c, &CELLS[2])));
        p.trigger_burst(2).unwrap();
        let first = w.pop(NrtStatus::SUCCESS).unwrap();
        assert_eq!((first.seq, *first.item), (a, 7));
        assert_eq!(*w.pop(NrtStatus::TIMEOUT).unwrap().item, 8);
        let c = p.submit(&ITEMS[2], Some(&CELLS[2])).unwrap();
        p.trigger_next().unwrap();
        assert_eq!(*w.pop(NrtStatus::SUCCESS).unwrap().item, 9);
        assert!(p.queue().is_completed(c).unwrap());
        assert_eq!(w.pop(NrtStatus::SUCCESS).unwrap_err(), PopError::Empty);
        let got: Vec<_> = CELLS.iter().map(StatusCell::get).collect();
        assert_eq!(
            got,
            [
                Some(NrtStatus::SUCCESS),
                Some(NrtStatus::TIMEOUT),
                Some(NrtStatus::SUCCESS)
            ]
        );
    }
}
