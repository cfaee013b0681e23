//! The three-cursor protocol (docs/abi.md §1.2, §1.4, §1.8, §1.9) over any [`Storage`].
//!
//! [`XuQueue`] is the shared, clonable query side (last_completed,
//! is_completed, in_flight, waits). [`Producer`] owns `scheduled_tail` and
//! `scheduled_head` (one thread: the funnel); [`Worker`] owns `exec_head`
//! (one thread). Each handle keeps a cached copy of the cursor the other side
//! publishes (rtrb style) and re-reads it only when the cached value says
//! full / empty.
//!
//! Producer (docs/abi.md §1.9 "producer stages, then publishes"): check space, write the
//! whole 32-byte body (two plain 16-byte stores on x86_64, Relaxed atomic
//! stores elsewhere: [`SlotAccess::set_body`]), then publish `scheduled_tail`
//! (Release); later `trigger_next` publishes `scheduled_head` (Release): the
//! release to the worker. Worker (docs/abi.md §1.9 "consumer captures, then advances"):
//! observe `scheduled_head` (Acquire), check the slot's seq_id, write the
//! status, take the mark-completion lock, capture `mark_comp_efd`,
//! `efd_from_pool` and `exec_info`, advance `exec_head` (Release), unlock,
//! then signal.

use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::mem::{ManuallyDrop, MaybeUninit};
use core::ops::Deref;
use core::sync::atomic::AtomicBool;
#[cfg(feature = "std")]
use std::time::{Duration, Instant};

use crate::fsm;
use crate::fsm::slot::{derive, SlotEvent, SlotFsm, SlotState};
#[cfg(feature = "std")]
use crate::fsm::Transition;
#[cfg(feature = "std")]
use crate::hal::eventfd::Wait;
#[cfg(feature = "std")]
use crate::hal::mem::Region;
use crate::sync::atomic::Ordering::Relaxed;
use crate::wire::exec_slot::NO_EFD;
use crate::wire::seq_id::{SeqId, XuId, SEQ_NUM_MASK};
use crate::wire::status::NrtStatus;
use crate::wire::xu_queue::CURSOR_LIMIT;
#[cfg(feature = "std")]
use crate::wire::xu_queue::CURSOR_START;

use super::lock::MarkCompLock;
#[cfg(feature = "std")]
use super::storage::MappedStorage;
#[cfg(feature = "std")]
use super::storage::OwnedStorage;
use super::storage::{Cursor, SlotAccess, Storage};
#[cfg(feature = "std")]
use super::waiter::{
    eventfd_factory, Armed, CompletionSink, EventFdSink, Pool, WaitMode, Waitable, WaitableFactory,
    Waited,
};
use super::waiter::{RawFd, SignalError};
use super::{Payload, RingError, StatusCell};

/// The status cell handle a submit hands to the ring (std `Arc`: it is only
/// memory management; the cell's atomic is the loom-visible part).
#[cfg(feature = "std")]
pub type StatusArc = std::sync::Arc<StatusCell>;

/// The two single-thread handles a constructor returns.
pub type Handles<T, S, H = DefaultHome> = (Producer<T, S, H>, Worker<T, S, H>);

mod sealed {
    pub trait Sealed {}

    /// What a [`super::Counted`] queue's waiters share.
    #[cfg(feature = "std")]
    pub struct Waits {
        pub(super) sink: std::sync::Arc<dyn super::CompletionSink>,
        pub(super) pool: super::Pool,
        pub(super) recheck: super::Duration,
    }
}

/// Where a queue's shared state lives and what a submit's status cell is:
/// [`Counted`] (`std`: an `Arc`, status cells `Arc<StatusCell>`, eventfd
/// waiters) or [`Static`] (the `no_std` core: a [`QueueHome`] in a `static`,
/// status cells `&'static StatusCell`, no waiters). Sealed.
pub trait Home: sealed::Sealed + Sized + Send + Sync + 'static {
    /// The status cell handle a submit passes with its item. It travels
    /// through the slot's `exec_status` word as a [`Payload`] does through
    /// `exec_info`: the word owns what the handle owned (one strong count
    /// of an `Arc`, or nothing for a `&'static`).
    type Status: Payload + Deref<Target = StatusCell>;
    /// How the handles hold the shared state.
    type Ref<X: Send + Sync + 'static>: Deref<Target = X> + Clone + Send + Sync;
    /// What the waiters share (nothing for [`Static`]).
    type Waits: Send + Sync;
    /// Signal a captured handle; `Err(errno)`.
    fn signal(waits: &Self::Waits, fd: RawFd) -> Result<(), i32>;
    /// Close a captured, non-pooled handle after signalling it.
    fn close(waits: &Self::Waits, fd: RawFd);
}

/// The `std` home: the handles share an `Arc`, status cells are
/// [`StatusArc`]s, waiters block on pooled or caller eventfds.
#[cfg(feature = "std")]
#[derive(Clone, Copy, Debug)]
pub enum Counted {}

/// The `no_std` home: the state lives in a [`QueueHome`] (a `static`),
/// status cells are `&'static StatusCell`, and there are no blocking waiters
/// (poll [`XuQueue::is_completed`]). Nothing installs or counts a slot
/// handle, so pop never captures one; one counted anyway would be reported
/// as a failed signal (`EINVAL`), never as signalled.
#[derive(Clone, Copy, Debug)]
pub enum Static {}

/// The home a queue type names when it does not say: [`Counted`] with
/// `std`, [`Static`] without. Code meant for both names its home.
#[cfg(feature = "std")]
pub type DefaultHome = Counted;
/// The home a queue type names when it does not say: [`Counted`] with
/// `std`, [`Static`] without. Code meant for both names its home.
#[cfg(not(feature = "std"))]
pub type DefaultHome = Static;

#[cfg(feature = "std")]
impl sealed::Sealed for Counted {}

#[cfg(feature = "std")]
impl Home for Counted {
    type Status = StatusArc;
    type Ref<X: Send + Sync + 'static> = crate::sync::Arc<X>;
    type Waits = sealed::Waits;

    fn signal(waits: &sealed::Waits, fd: RawFd) -> Result<(), i32> {
        waits.sink.signal(fd)
    }

    fn close(waits: &sealed::Waits, fd: RawFd) {
        waits.sink.close(fd)
    }
}

impl sealed::Sealed for Static {}

impl Home for Static {
    type Status = &'static StatusCell;
    type Ref<X: Send + Sync + 'static> = &'static X;
    type Waits = ();

    fn signal(_waits: &(), _fd: RawFd) -> Result<(), i32> {
        // No waiter of this queue installs handles: not ours to signal.
        Err(EINVAL)
    }

    fn close(_waits: &(), _fd: RawFd) {}
}

/// `EINVAL` (Linux).
const EINVAL: i32 = 22;
#[cfg(feature = "std")]
const _: () = assert!(EINVAL == libc::EINVAL);

/// How to build a queue.
#[cfg(feature = "std")]
#[derive(Clone)]
pub struct QueueConfig {
    /// The XU this queue serves (the high 16 bits of every seq_id, docs/abi.md §1.4).
    pub xu: XuId,
    /// Number of 32-byte slots (any value >= 1; powers of two index by mask).
    pub capacity: u64,
    /// First cursor value (1 in the ABI; tests start near the 48-bit limit).
    pub start: u64,
    /// Longest single block of a waiter before it re-checks `last_completed`.
    pub recheck: Duration,
    /// How the worker signals and closes captured handles.
    pub sink: std::sync::Arc<dyn CompletionSink>,
    /// How the pool makes a new event.
    pub pool_factory: WaitableFactory,
}

#[cfg(feature = "std")]
impl QueueConfig {
    /// Defaults: cursors at 1, 10 ms re-check, real eventfds.
    pub fn new(xu: XuId, capacity: u64) -> Self {
        QueueConfig {
            xu,
            capacity,
            start: CURSOR_START,
            recheck: Duration::from_millis(10),
            sink: std::sync::Arc::new(EventFdSink),
            pool_factory: eventfd_factory(),
        }
    }

    /// Start every cursor at `start` instead of 1.
    pub fn start_at(mut self, start: u64) -> Self {
        self.start = start;
        self
    }

    /// Set the waiters' re-check interval.
    pub fn recheck(mut self, d: Duration) -> Self {
        self.recheck = d;
        self
    }

    /// Use another signalling backend (loom models, fault injection).
    pub fn signals(
        mut self,
        sink: std::sync::Arc<dyn CompletionSink>,
        pool_factory: WaitableFactory,
    ) -> Self {
        self.sink = sink;
        self.pool_factory = pool_factory;
        self
    }
}

#[cfg(feature = "std")]
impl core::fmt::Debug for QueueConfig {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QueueConfig")
            .field("xu", &self.xu)
            .field("capacity", &self.capacity)
            .field("start", &self.start)
            .field("recheck", &self.recheck)
            .finish_non_exhaustive()
    }
}

struct Shared<T: Payload, S: Storage, H: Home> {
    storage: S,
    xu: XuId,
    /// `xu << 48`, the high half of every seq_id of this queue (docs/abi.md §1.4).
    xu_bits: u64,
    cap: u64,
    /// `cap - 1` when `cap` is a power of two.
    mask: Option<u64>,
    lock: MarkCompLock,
    waits: H::Waits,
    _items: PhantomData<fn(T) -> T>,
}

impl<T: Payload, S: Storage, H: Home> Shared<T, S, H> {
    fn new(storage: S, waits: H::Waits) -> Self {
        let (xu, cap) = (storage.xu(), storage.capacity());
        Shared {
            storage,
            xu,
            xu_bits: SeqId::from_cursor(0, xu).0,
            cap,
            mask: cap.is_power_of_two().then(|| cap - 1),
            lock: MarkCompLock::new(),
            waits,
            _items: PhantomData,
        }
    }

    #[inline(always)]
    fn idx(&self, cursor: u64) -> usize {
        match self.mask {
            Some(m) => (cursor & m) as usize,
            None => (cursor % self.cap) as usize,
        }
    }

    /// `SeqId::from_cursor(c, xu)` (docs/abi.md §1.4) with the xu_id half precomputed.
    #[inline(always)]
    fn seq(&self, c: u64) -> SeqId {
        let s = SeqId((c & SEQ_NUM_MASK) | self.xu_bits);
        debug_assert_eq!(s, SeqId::from_cursor(c, self.xu));
        s
    }

    /// The slot index after `i` (`i < cap`): a compare instead of a divide.
    #[inline(always)]
    fn next_idx(&self, i: usize) -> usize {
        let j = i + 1;
        if j as u64 == self.cap {
            0
        } else {
            j
        }
    }

    /// The slot index `k` after `i` (`i < cap`, any `k <= cap`).
    #[inline(always)]
    fn idx_ahead(&self, i: usize, k: u64) -> usize {
        let j = i + k as usize;
        if j as u64 >= self.cap {
            j - self.cap as usize
        } else {
            j
        }
    }

    /// Visit the `n <= cap` slots from index `first` in ring order as
    /// `(i, slot)`, in contiguous runs (no per-slot wrap check); stop at the
    /// first error. Returns the index after the last slot visited.
    #[inline(always)]
    fn try_each_slot<E>(
        &self,
        first: usize,
        n: usize,
        mut f: impl FnMut(usize, S::Slot<'_>) -> Result<(), E>,
    ) -> Result<usize, E> {
        let cap = self.cap as usize;
        debug_assert!(first < cap && n <= cap);
        let (mut idx, mut i) = (first, 0);
        while i < n {
            let run = (n - i).min(cap - idx);
            // SAFETY: `idx + run <= cap`.
            for (k, slot) in unsafe { self.storage.run(idx, run) }.enumerate() {
                f(i + k, slot)?;
            }
            i += run;
            idx += run;
            if idx == cap {
                idx = 0;
            }
        }
        Ok(idx)
    }

    /// [`Storage::prefetch_write`] for the `n <= cap` slots from index
    /// `first` in ring order (one or two contiguous runs).
    #[inline(always)]
    fn prefetch_write(&self, first: usize, n: usize) {
        let cap = self.cap as usize;
        let run = n.min(cap - first);
        self.storage.prefetch_write(first, run);
        if run < n {
            self.storage.prefetch_write(0, n - run);
        }
    }

    #[inline(always)]
    fn slot(&self, cursor: u64) -> S::Slot<'_> {
        // SAFETY: `idx` reduces modulo the capacity, so it is < capacity().
        unsafe { self.storage.slot(self.idx(cursor)) }
    }
}

impl<T: Payload, S: Storage, H: Home> Drop for Shared<T, S, H> {
    fn drop(&mut self) {
        // Every handle is gone: take back what in-flight slots own.
        let head = self.storage.load(Cursor::ExecHead, Relaxed);
        let tail = self.storage.load(Cursor::ScheduledTail, Relaxed);
        for c in head..tail {
            let slot = self.slot(c);
            let words = Words::<T, H>::held(slot.exec_info(Relaxed), slot.exec_status(Relaxed));
            // SAFETY: slots in [exec_head, scheduled_tail) hold the words a
            // submit made (`Words::new`) and no pop consumed.
            drop(unsafe { words.take_back() });
            let (efd, pooled) = slot.handle(Relaxed);
            if efd != NO_EFD && !pooled {
                // The slot owned this dup (waiter module docs).
                H::close(&self.waits, efd);
            }
        }
    }
}

/// The shared side of one XU queue: queries and waits. Cheap to clone.
pub struct XuQueue<T: Payload, S: Storage, H: Home = DefaultHome> {
    sh: H::Ref<Shared<T, S, H>>,
}

impl<T: Payload, S: Storage, H: Home> Clone for XuQueue<T, S, H> {
    fn clone(&self) -> Self {
        XuQueue {
            sh: self.sh.clone(),
        }
    }
}

impl<T: Payload, S: Storage, H: Home> core::fmt::Debug for XuQueue<T, S, H> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let (h, sh, t) = self.cursors();
        f.debug_struct("XuQueue")
            .field("xu", &self.sh.xu)
            .field("capacity", &self.sh.cap)
            .field("exec_head", &h)
            .field("scheduled_head", &sh)
            .field("scheduled_tail", &t)
            .finish()
    }
}

#[cfg(feature = "std")]
impl<T: Payload> XuQueue<T, OwnedStorage, Counted> {
    /// A queue over heap atomics with default settings.
    pub fn new_owned(xu: XuId, capacity: u64) -> Result<Handles<T, OwnedStorage>, RingError> {
        Self::owned(QueueConfig::new(xu, capacity))
    }
}

#[cfg(feature = "std")]
impl<T: Payload, const SEQCST: bool, const CACHED: bool>
    XuQueue<T, OwnedStorage<SEQCST, CACHED>, Counted>
{
    /// A queue over heap atomics ([`OwnedStorage`]; the comparison variants
    /// `CStyleStorage` and `COriginalStorage` are built the same way).
    pub fn owned(cfg: QueueConfig) -> Result<Handles<T, OwnedStorage<SEQCST, CACHED>>, RingError> {
        let s = OwnedStorage::new(cfg.xu, cfg.capacity, cfg.start)?;
        Ok(Self::from_storage(s, cfg))
    }
}

#[cfg(feature = "std")]
impl<T: Payload> XuQueue<T, MappedStorage, Counted> {
    /// A queue laid into `region` (the byte-exact header at offset 0, slots
    /// right after), with default settings.
    ///
    /// # Safety
    /// See [`XuQueue::mapped`].
    pub unsafe fn new_mapped(
        region: Region,
        xu: XuId,
        capacity: u64,
    ) -> Result<Handles<T, MappedStorage>, RingError> {
        // SAFETY: forwarded contract.
        unsafe { Self::mapped(region, QueueConfig::new(xu, capacity)) }
    }

    /// A queue laid into `region`.
    ///
    /// # Safety
    /// While the queue lives, nothing but this queue writes the first
    /// `mapped_len(capacity)` bytes of `region`, and nothing reads them
    /// concurrently with a submit (a submit writes the slot body with plain
    /// stores on x86_64: read them on the producer's thread, or otherwise
    /// ordered with its submits, as [`Producer::snapshot`] does). The slot words carry owned pointers (`exec_info`,
    /// `exec_status`) that pop turns back into owned values.
    pub unsafe fn mapped(
        region: Region,
        cfg: QueueConfig,
    ) -> Result<Handles<T, MappedStorage>, RingError> {
        let s = MappedStorage::init(region, cfg.xu, cfg.capacity, cfg.start)?;
        Ok(Self::from_storage(s, cfg))
    }
}

#[cfg(feature = "std")]
impl<T: Payload, S: Storage> XuQueue<T, S, Counted> {
    fn from_storage(storage: S, cfg: QueueConfig) -> Handles<T, S, Counted> {
        debug_assert_eq!(storage.xu(), cfg.xu);
        let waits = sealed::Waits {
            sink: cfg.sink,
            pool: Pool::new(cfg.pool_factory),
            recheck: cfg.recheck,
        };
        Self::from_shared(crate::sync::Arc::new(Shared::new(storage, waits)))
    }
}

/// The memory of one queue's shared state, to put in a `static` (with
/// [`StaticStorage`](super::StaticStorage) for its slots): the `no_std` way
/// to build a queue without an allocator ([`QueueHome::queue`]). The state
/// is never dropped: items still in flight when the handles go are not
/// given back (a `&'static` payload owns nothing).
pub struct QueueHome<T: Payload, S: Storage> {
    cell: UnsafeCell<MaybeUninit<Shared<T, S, Static>>>,
    /// A queue was built in `cell`.
    taken: AtomicBool,
}

// SAFETY: `cell` is written once, by the one `queue` call that wins `taken`,
// before any reference to it exists; afterwards it is only shared (`&`), and
// the shared state is `Sync` (atomics, a `Storage`, which is `Sync`).
unsafe impl<T: Payload, S: Storage> Sync for QueueHome<T, S> {}

impl<T: Payload, S: Storage> QueueHome<T, S> {
    /// Empty: no queue yet.
    pub const fn new() -> Self {
        QueueHome {
            cell: UnsafeCell::new(MaybeUninit::uninit()),
            taken: AtomicBool::new(false),
        }
    }

    /// Build the queue over `storage` here and return its two handles.
    /// Once: a second call is refused with [`RingError::InUse`].
    pub fn queue(&'static self, storage: S) -> Result<Handles<T, S, Static>, RingError> {
        // Relaxed: the flag only elects the one caller; the state reaches
        // other threads through the handles (moved, hence ordered).
        if self.taken.swap(true, core::sync::atomic::Ordering::Relaxed) {
            return Err(RingError::InUse);
        }
        // SAFETY: we won `taken`, so no other call writes or reads `cell`,
        // and nothing referenced it before; after this write it is only
        // shared, for `'static` (the cell lives in `self`, a `'static`).
        let sh: &'static Shared<T, S, Static> =
            unsafe { (*self.cell.get()).write(Shared::new(storage, ())) };
        Ok(XuQueue::from_shared(sh))
    }
}

impl<T: Payload, S: Storage> Default for QueueHome<T, S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Payload, S: Storage> core::fmt::Debug for QueueHome<T, S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QueueHome").finish_non_exhaustive()
    }
}

impl<T: Payload, S: Storage, H: Home> XuQueue<T, S, H> {
    fn from_shared(sh: H::Ref<Shared<T, S, H>>) -> Handles<T, S, H> {
        let start = sh.storage.load(Cursor::ScheduledTail, Relaxed);
        let q = XuQueue { sh };
        (Producer::new(q.clone(), start), Worker::new(q, start))
    }

    /// This queue's XU.
    pub fn xu(&self) -> XuId {
        self.sh.xu
    }

    /// Number of slots.
    pub fn capacity(&self) -> u64 {
        self.sh.cap
    }

    /// Fault injection for tests: overwrite the `seq_id` word of `seq`'s
    /// slot with `v`, as a stray writer into the shared ring would (the
    /// worker's peek then refuses the slot, docs/abi.md §1.9).
    #[doc(hidden)]
    #[cfg(any(test, feature = "testkit"))]
    pub fn corrupt_seq_id(&self, seq: SeqId, v: u64) {
        self.sh.slot(seq.seq_num()).set_seq_id(v, Relaxed);
    }

    /// `(exec_head, scheduled_head, scheduled_tail)`, each loaded Acquire.
    pub fn cursors(&self) -> (u64, u64, u64) {
        let s = &self.sh.storage;
        (
            s.observe(Cursor::ExecHead),
            s.observe(Cursor::ScheduledHead),
            s.observe(Cursor::ScheduledTail),
        )
    }

    /// `xuq_get_last_completed` (docs/abi.md §1.8):
    /// `((exec_head - 1) & 0xFFFFFFFFFFFF) | xu_id << 48`.
    pub fn last_completed(&self) -> SeqId {
        // Ordering (in `observe`): Acquire; pairs with pop's Release advance of
        // exec_head (docs/abi.md §1.9), so the status written before it is visible.
        SeqId::from_cursor(self.sh.storage.observe(Cursor::ExecHead) - 1, self.sh.xu)
    }

    /// The newest handle submitted (`scheduled_tail - 1`).
    pub fn last_submitted(&self) -> SeqId {
        // Ordering (in `observe`): Acquire; pairs with submit's Release.
        SeqId::from_cursor(
            self.sh.storage.observe(Cursor::ScheduledTail) - 1,
            self.sh.xu,
        )
    }

    /// Submitted but not completed: `last_submitted - last_completed`.
    pub fn in_flight(&self) -> u64 {
        let (head, _, tail) = self.cursors();
        tail.saturating_sub(head)
    }

    /// `nrta_is_completed`: `seq <= last_completed` for this XU. A foreign
    /// XU is an error, checked before anything else.
    pub fn is_completed(&self, seq: SeqId) -> Result<bool, RingError> {
        self.check_xu(seq)?;
        Ok(self.done(seq))
    }

    /// The ABI image (header + slots) as bytes.
    ///
    /// # Safety
    /// Every submit on this queue happens before this call or after it (in
    /// the memory model's sense: same thread, or through a lock, a channel,
    /// a join), never concurrently: the producer writes a slot's body with
    /// plain (non-atomic) stores on x86_64 ([`SlotAccess::set_body`]), so a
    /// concurrent copy would race with them. Call it on the producer's
    /// thread, or use [`Producer::snapshot`], which the borrow checker keeps
    /// apart from `submit`.
    #[cfg(feature = "std")]
    pub unsafe fn snapshot(&self) -> Vec<u8> {
        self.sh.storage.snapshot()
    }

    #[inline]
    fn check_xu(&self, seq: SeqId) -> Result<(), RingError> {
        if seq.xu_id() != self.sh.xu {
            return Err(RingError::ForeignXu {
                seq,
                ours: self.sh.xu,
            });
        }
        Ok(())
    }

    /// Foreign XU first, then "issued by this queue".
    #[cfg(feature = "std")]
    fn check_handle(&self, seq: SeqId) -> Result<(), RingError> {
        self.check_xu(seq)?;
        // Ordering (in `observe`): Acquire; pairs with submit's Release of
        // scheduled_tail, so the slot body of `seq` is visible to the install.
        if seq.seq_num() >= self.sh.storage.observe(Cursor::ScheduledTail) {
            return Err(RingError::NotSubmitted { seq });
        }
        Ok(())
    }

    #[inline]
    fn done(&self, seq: SeqId) -> bool {
        // Ordering (in `observe`): Acquire; pairs with pop's Release advance.
        seq.seq_num() < self.sh.storage.observe(Cursor::ExecHead)
    }
}

/// Waiters: blocking and explicit-async completion on eventfds (`std`).
#[cfg(feature = "std")]
impl<T: Payload, S: Storage> XuQueue<T, S, Counted> {
    /// (free, retired) pooled events; for tests and diagnostics.
    pub fn pool_counts(&self) -> (usize, usize) {
        self.sh.waits.pool.counts()
    }

    /// Install `fd` for `seq` under the mark-completion lock, re-checking
    /// completion first (docs/abi.md §1.3; the `waiter_no_recheck` mutant skips it).
    fn install(&self, seq: SeqId, fd: i32, from_pool: bool) -> Result<Armed, RingError> {
        let g = self.sh.lock.lock_waiter();
        #[cfg(not(xunds_mutant = "waiter_no_recheck"))]
        if self.done(seq) {
            return Ok(Armed::AlreadyComplete);
        }
        let slot = self.sh.slot(seq.seq_num());
        let found = slot.seq_id(Relaxed);
        if found != seq.0 {
            return Err(RingError::SlotMismatch {
                expected: seq,
                found,
            });
        }
        if slot.efd(Relaxed) != NO_EFD {
            return Err(RingError::AlreadyWaiting { seq });
        }
        // Relaxed: the lock orders these before pop's capture (pop takes the
        // same lock), and pop cannot have captured yet (not done, above).
        slot.set_handle(fd, from_pool, Relaxed);
        g.installed_one();
        Ok(Armed::Installed)
    }

    /// Remove our install unless pop captured it already. `true` = removed.
    fn uninstall(&self, seq: SeqId) -> bool {
        let g = self.sh.lock.lock_waiter();
        if self.done(seq) {
            return false;
        }
        let slot = self.sh.slot(seq.seq_num());
        if slot.efd(Relaxed) != NO_EFD {
            g.removed(1);
        }
        slot.set_handle(NO_EFD, false, Relaxed);
        true
    }

    /// Explicit-async completion by fd: install a dup of `ev` for `seq`; the
    /// worker signals and closes the dup at pop. `AlreadyComplete` installs
    /// nothing.
    pub fn arm(&self, seq: SeqId, ev: &dyn Waitable) -> Result<Armed, RingError> {
        self.check_handle(seq)?;
        if self.done(seq) {
            return Ok(Armed::AlreadyComplete);
        }
        let dup = ev.dup_handle()?;
        let r = self.install(seq, dup, false);
        if !matches!(r, Ok(Armed::Installed)) {
            ev.close_handle(dup);
        }
        r
    }

    /// Wait for `seq` using a pooled event (`efd_from_pool = true`).
    pub fn wait(&self, seq: SeqId, mode: WaitMode, timeout: Duration) -> Result<Waited, RingError> {
        self.wait_impl(seq, mode, None, timeout)
    }

    /// Wait for `seq` on a caller-owned event (a dup of it is installed).
    pub fn wait_on(
        &self,
        seq: SeqId,
        mode: WaitMode,
        ev: &dyn Waitable,
        timeout: Duration,
    ) -> Result<Waited, RingError> {
        self.wait_impl(seq, mode, Some(ev), timeout)
    }

    fn wait_impl(
        &self,
        seq: SeqId,
        mode: WaitMode,
        own: Option<&dyn Waitable>,
        timeout: Duration,
    ) -> Result<Waited, RingError> {
        self.check_handle(seq)?;
        if self.done(seq) {
            return Ok(Waited::Completed { wakeups: 0 });
        }
        if mode == WaitMode::Poll {
            return Ok(Waited::Pending);
        }
        let now = Instant::now();
        let deadline = after(now, timeout);
        if let WaitMode::SpinThenBlock { max } = mode {
            let end = after(now, max).min(deadline);
            loop {
                crate::sync::spin_hint();
                if self.done(seq) {
                    return Ok(Waited::Completed { wakeups: 0 });
                }
                if Instant::now() >= end {
                    break;
                }
            }
        }
        // A pooled event, or (below) a dup of the caller's.
        let pooled: Option<Box<dyn Waitable>> = match own {
            Some(_) => None,
            None => Some(self.sh.waits.pool.take()?),
        };
        let (result, fate) = match (&pooled, own) {
            (Some(p), _) => self.block(seq, p.as_ref(), false, deadline),
            (None, Some(o)) => self.block(seq, o, true, deadline),
            (None, None) => (Err(RingError::Os(libc::EINVAL)), Fate::Idle),
        };
        if let Some(p) = pooled {
            match fate {
                Fate::Idle | Fate::Consumed => self.sh.waits.pool.give_back(p),
                Fate::MaybePending => self.sh.waits.pool.retire(p),
            }
        }
        result
    }

    /// Install a handle onto `ev` (a dup when `dup`, else `ev`'s own pooled
    /// handle) and block until completion or `deadline`. Closes the dup on
    /// every path where the worker did not get it; says what became of a
    /// pooled handle.
    fn block(
        &self,
        seq: SeqId,
        ev: &dyn Waitable,
        dup: bool,
        deadline: Instant,
    ) -> (Result<Waited, RingError>, Fate) {
        let fd = if dup {
            match ev.dup_handle() {
                Ok(fd) => fd,
                Err(e) => return (Err(e.into()), Fate::Idle),
            }
        } else {
            ev.raw_handle()
        };
        let close_dup = || {
            if dup {
                ev.close_handle(fd);
            }
        };
        match self.install(seq, fd, !dup) {
            Ok(Armed::Installed) => {}
            Ok(Armed::AlreadyComplete) => {
                close_dup();
                return (Ok(Waited::Completed { wakeups: 0 }), Fate::Idle);
            }
            Err(e) => {
                close_dup();
                return (Err(e), Fate::Idle);
            }
        }
        // Installed: the slot owns the handle until pop captures it.
        let mut wakeups = 0u32;
        loop {
            let slice = deadline
                .saturating_duration_since(Instant::now())
                .min(self.sh.waits.recheck);
            match ev.wait(slice) {
                Ok(Wait::Signalled(_)) => wakeups += 1,
                Ok(Wait::TimedOut) => {}
                // A broken wait still ends bounded: fall through to the
                // re-check and the deadline.
                Err(_) => {}
            }
            if self.done(seq) {
                if wakeups == 0 {
                    // Completion seen before the signal: pop captured our
                    // handle before advancing, so exactly one write is on its
                    // way (or failed). Give it one re-check interval.
                    if let Ok(Wait::Signalled(_)) = ev.wait(self.sh.waits.recheck) {
                        wakeups += 1;
                    }
                }
                let fate = if wakeups > 0 {
                    Fate::Consumed
                } else {
                    Fate::MaybePending
                };
                // A dup went to the worker, which closes it.
                return (Ok(Waited::Completed { wakeups }), fate);
            }
            // If pop captured it meanwhile, uninstall refuses and the next
            // round sees completion.
            if Instant::now() >= deadline && self.uninstall(seq) {
                close_dup();
                return (Ok(Waited::TimedOut), Fate::Idle);
            }
        }
    }
}

/// What became of a waiter's handle.
#[cfg(feature = "std")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    /// Never reached the worker (or was taken back): no signal can come.
    Idle,
    /// Its one signal was consumed: nothing more can come.
    Consumed,
    /// Completion seen, signal not (yet) seen: it may still arrive.
    MaybePending,
}

/// A submit refused; gives the item and status cell back.
#[derive(Debug)]
pub struct SubmitError<T, C = <DefaultHome as Home>::Status> {
    /// Why (`Full` is `NRT_QUEUE_FULL`).
    pub error: RingError,
    /// The item, unchanged.
    pub item: T,
    /// The status cell, unchanged.
    pub status: Option<C>,
}

/// The transitions a handle records while tracing is on (`std`).
#[cfg(feature = "std")]
type Trace = Option<Vec<Transition>>;
/// Without `std` nothing is recorded: always `None`.
#[cfg(not(feature = "std"))]
type Trace = Option<core::convert::Infallible>;

/// `swap_trace` for both handles (`take_trace` instead leaves an empty
/// `Vec`: an allocation on the next transition and a free per call).
#[cfg(feature = "std")]
fn swap_into(trace: &mut Trace, buf: &mut Vec<Transition>) {
    buf.clear();
    if let Some(t) = trace.as_mut() {
        core::mem::swap(t, buf);
    }
}

/// `now + d`, or a time no wait reaches when that overflows (a timeout of
/// `Duration::MAX` waits for good instead of panicking).
#[cfg(feature = "std")]
pub(crate) fn after(now: Instant, d: Duration) -> Instant {
    now.checked_add(d)
        .unwrap_or_else(|| now + Duration::from_secs(u64::from(u32::MAX)))
}

/// [`derive()`] out of line, for a case the hot path has already ruled out.
#[cold]
#[inline(never)]
fn derive_cold(
    seq_num: u64,
    exec_head: u64,
    scheduled_head: u64,
    scheduled_tail: u64,
) -> SlotState {
    derive(seq_num, exec_head, scheduled_head, scheduled_tail)
}

/// Lockstep refreshes in a row after which the worker slips
/// ([`Worker::refresh`]).
const LOCKSTEP_STREAK: u32 = 8;

/// The most new items a refresh that follows an empty poll may find and
/// still count as lockstep: fewer than a cache line's worth per slot line
/// transfer means the producer is not getting ahead.
const LOCKSTEP_BATCH: u64 = 32;

/// The most lockstep refreshes a worker whose slips kept finding no batch
/// waits before it tries one again ([`Worker::slip`]).
#[cfg_attr(loom, allow(dead_code))]
const MAX_LOCKSTEP_STREAK: u32 = 1024;

/// How many slots ahead a per-item submit prefetches.
const PREFETCH_AHEAD: u64 = 8;

/// Record a transition when tracing is on; check it either way.
#[inline(always)]
fn step(
    trace: &mut Trace,
    state: SlotState,
    event: SlotEvent,
    id: u64,
) -> Result<SlotState, RingError> {
    Ok(match trace {
        None => fsm::step::<SlotFsm>(state, event)?,
        Some(t) => fsm::step_traced::<SlotFsm, _>(state, event, id, t)?,
    })
}

/// Check (and trace) `event` for every cursor in `range`. A contiguous range
/// lies inside one cursor region, so its derived states are all equal:
/// without a trace the first and the last are checked; with one, each is
/// checked and recorded.
#[inline]
fn step_range(
    trace: &mut Trace,
    range: core::ops::Range<u64>,
    state_of: impl Fn(u64) -> SlotState,
    event: SlotEvent,
) -> Result<(), RingError> {
    match trace {
        Some(t) => {
            for c in range {
                fsm::step_traced::<SlotFsm, _>(state_of(c), event, c, t)?;
            }
        }
        None => {
            if !range.is_empty() {
                fsm::step::<SlotFsm>(state_of(range.start), event)?;
                fsm::step::<SlotFsm>(state_of(range.end - 1), event)?;
            }
        }
    }
    Ok(())
}

/// Write the whole 32-byte body of one slot (published by the Release on
/// scheduled_tail / scheduled_head that follows, docs/abi.md §1.9 producer).
///
/// # Safety
/// [`SlotAccess::set_body`]'s: no access to the slot is concurrent with
/// this write. The producer meets it for a slot it may submit into: FREE by
/// the lifecycle check (its previous occupant captured before an
/// `exec_head` Release this producer acquired), not yet published, and
/// waiters touch a slot only for a seq they acquired as submitted.
#[inline(always)]
unsafe fn write_body<T: Payload, H: Home>(slot: impl SlotAccess, seq: u64, words: Words<T, H>) {
    // +0x00 seq_id, +0x08 exec_status (the status cell's address, or 0),
    // +0x10 mark_comp_efd = -1 (no waiter yet, docs/abi.md §1.3) with +0x14
    // efd_from_pool = false, +0x18 exec_info (the work item): the whole body
    // at once (`SlotAccess::set_body`).
    // SAFETY: our caller's condition, passed on.
    unsafe { slot.set_body(seq, words.status, NO_EFD, false, words.item) };
}

/// An item and its status cell as the slot words they become (`exec_info`,
/// `exec_status`). A submit makes them before its checks: a word has no
/// destructor, so nothing on the submit path has to sit in memory for an
/// unwind to find (an `Option<Arc>` held across the checks cost a stack
/// store per item, docs/perf.md, "Measurements behind the design"). The price: a panic inside the
/// checks (only the trace's allocation can raise one) leaks the item and
/// cell instead of dropping them. Not `Copy`, and typed by what it owns:
/// each `Words` goes to one slot or back to its owner, once.
#[must_use]
struct Words<T, H: Home> {
    item: u64,
    status: u64,
    _owns: PhantomData<(T, H::Status)>,
}

impl<T: Payload, H: Home> Words<T, H> {
    #[inline(always)]
    fn new(item: T, status: Option<H::Status>) -> Self {
        Self::held(item.into_word(), status.map_or(0, Payload::into_word))
    }

    /// The words a slot holds (`exec_info`, `exec_status`).
    #[inline(always)]
    fn held(item: u64, status: u64) -> Self {
        Words {
            item,
            status,
            _owns: PhantomData,
        }
    }

    /// The item and cell back: a refused submit returns them, a dropped
    /// queue drops those of its in-flight slots.
    ///
    /// # Safety
    /// The words came from [`Words::new`] (directly, or through a slot that
    /// no pop consumed) and are taken back once.
    #[inline(always)]
    unsafe fn take_back(self) -> (T, Option<H::Status>) {
        // SAFETY: our caller's condition: `new` made both words from a `T`
        // and an `Option<H::Status>` (0 for `None`: `into_word` of a cell
        // is its non-null address), and nothing else takes them back.
        unsafe {
            (
                T::from_word(self.item),
                (self.status != 0).then(|| <H::Status as Payload>::from_word(self.status)),
            )
        }
    }
}

/// The producer: owns `scheduled_tail` and `scheduled_head`. One thread.
///
/// Its two cursors live only in the queue's header, as in the C original:
/// we are their one writer, so a relaxed load of either returns our own
/// last publish (docs/abi.md §1.9). No private copies: stepping them is a
/// store per item each beside the ABI's four (the slot body's two, the two
/// cursors), and where the producer's stores wait for slot lines the
/// worker's core holds, every store per item counts (docs/perf.md, "Measurements behind the design").
pub struct Producer<T: Payload, S: Storage, H: Home = DefaultHome> {
    q: XuQueue<T, S, H>,
    /// Last `exec_head` we observed (only grows).
    cached_exec_head: u64,
    /// `min(cached_exec_head + capacity, CURSOR_LIMIT - 1)`: the highest
    /// `scheduled_tail` the cached `exec_head` and the cursor limit allow, so
    /// a submit checks both with one comparison.
    limit: u64,
    trace: Trace,
}

impl<T: Payload, S: Storage, H: Home> core::fmt::Debug for Producer<T, S, H> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Producer")
            .field("tail", &self.tail())
            .field("sched_head", &self.sched_head())
            .field("cached_exec_head", &self.cached_exec_head)
            .finish()
    }
}

impl<T: Payload, S: Storage, H: Home> Producer<T, S, H> {
    fn new(q: XuQueue<T, S, H>, start: u64) -> Self {
        let mut p = Producer {
            q,
            cached_exec_head: start,
            limit: start,
            trace: None,
        };
        p.set_limit();
        debug_assert_eq!((p.tail(), p.sched_head()), (start, start));
        p
    }

    /// Our `scheduled_tail`. Relaxed: we are its only writer, so this is
    /// our own last publish.
    #[inline(always)]
    fn tail(&self) -> u64 {
        self.q.sh.storage.load(Cursor::ScheduledTail, Relaxed)
    }

    /// Our `scheduled_head`, as [`tail`](Self::tail).
    #[inline(always)]
    fn sched_head(&self) -> u64 {
        self.q.sh.storage.load(Cursor::ScheduledHead, Relaxed)
    }

    /// The shared query side.
    pub fn queue(&self) -> &XuQueue<T, S, H> {
        &self.q
    }

    /// The ABI image (header + slots) as bytes ([`XuQueue::snapshot`]),
    /// safe here: `&self` excludes a concurrent `submit` on this, the only
    /// producer.
    #[cfg(feature = "std")]
    pub fn snapshot(&self) -> Vec<u8> {
        // SAFETY: submits need `&mut self`; while this borrow lives none
        // runs, and the queue has no other producer.
        unsafe { self.q.snapshot() }
    }

    /// Record every slot transition from now on (see [`take_trace`](Self::take_trace)).
    #[cfg(feature = "std")]
    pub fn trace(&mut self, on: bool) {
        self.trace = on.then(Vec::new);
    }

    /// The transitions recorded so far.
    #[cfg(feature = "std")]
    pub fn take_trace(&mut self) -> Vec<Transition> {
        self.trace.as_mut().map(core::mem::take).unwrap_or_default()
    }

    /// The transitions recorded so far, swapped into `buf` (cleared first);
    /// the recording goes on in `buf`'s old storage, so a caller that hands
    /// the same buffer back allocates nothing once both have grown.
    #[cfg(feature = "std")]
    pub fn swap_trace(&mut self, buf: &mut Vec<Transition>) {
        swap_into(&mut self.trace, buf);
    }

    /// Free slots, refreshing the cached `exec_head`.
    pub fn free_space(&mut self) -> u64 {
        self.refresh();
        self.q.sh.cap - (self.tail() - self.cached_exec_head)
    }

    /// `true` when a submit would not be refused for space.
    pub fn has_space(&mut self) -> bool {
        self.tail() - self.cached_exec_head < self.q.sh.cap || self.free_space() > 0
    }

    /// Submitted, not yet triggered.
    pub fn untriggered(&self) -> u64 {
        self.tail() - self.sched_head()
    }

    #[inline(always)]
    fn set_limit(&mut self) {
        self.limit = (self.cached_exec_head + self.q.sh.cap).min(CURSOR_LIMIT - 1);
    }

    #[inline]
    fn refresh(&mut self) {
        // Ordering (in `observe`): Acquire; pairs with pop's Release advance of
        // exec_head (docs/abi.md §1.9): the worker's capture of a slot happens-before our
        // overwrite of it.
        self.cached_exec_head = self.q.sh.storage.observe(Cursor::ExecHead);
        self.set_limit();
    }

    /// Refuse (changing nothing) unless `n` more slots fit after `tail`
    /// (ours): the cursor limit (`tail + n >= CURSOR_LIMIT`:
    /// `CursorExhausted`, reported first) and the depth (`tail - exec_head +
    /// n > capacity`: `Full`, docs/abi.md §1.9). Both are folded into
    /// `limit`; only a miss re-reads `exec_head`.
    #[inline(always)]
    fn reserve(&mut self, tail: u64, n: u64) -> Result<(), RingError> {
        // `limit >= tail` always (tail never passes either bound), so the
        // subtraction cannot wrap and a huge `n` cannot overflow.
        if !S::CACHE_REMOTE || n > self.limit - tail {
            self.refresh();
            if n > self.limit - tail {
                return Err(if n >= CURSOR_LIMIT - tail {
                    RingError::CursorExhausted { tail }
                } else {
                    RingError::Full
                });
            }
        }
        Ok(())
    }

    /// The lifecycle check for a submit at cursor `c` (our tail): the
    /// physical slot's previous occupant (one lap back) must be FREE.
    /// `scheduled_head` is read only off the common path: the worker reads
    /// its line all the time, and a load of it here, ahead of the slot
    /// stores, made the whole submit wait for the line
    /// (docs/perf.md, "Measurements behind the design").
    #[inline(always)]
    fn check_submit(&mut self, c: u64) -> Result<(), RingError> {
        let occupant = c.saturating_sub(self.q.sh.cap);
        // `derive`, with its first (and, after `reserve`, usual) case tested
        // up front so the common path is one compare.
        let st = if occupant < self.cached_exec_head {
            SlotState::Free
        } else {
            derive_cold(occupant, self.cached_exec_head, self.sched_head(), c)
        };
        step(&mut self.trace, st, SlotEvent::Submit, c).map(|_| ())
    }

    /// `xuq_client_submit`: refuse with `Full` (changing no byte) when
    /// `scheduled_tail - exec_head >= capacity`, else write the body and
    /// publish `scheduled_tail`.
    // `inline(always)` here, on `trigger_next` and on `Worker::pop`: the
    // per-item path must inline into the caller's loop, and the compiler's
    // own choice left it out of line in a generic caller (the two-thread
    // ring bench 1.5x slower per item; docs/perf.md, "Measurements behind the design").
    #[inline(always)]
    pub fn submit(
        &mut self,
        item: T,
        status: Option<H::Status>,
    ) -> Result<SeqId, SubmitError<T, H::Status>> {
        // The trigger that usually follows reads `scheduled_head`, whose line
        // the worker takes each time it polls: start taking it back now, so
        // that load does not wait a line transfer (the spinning round trip;
        // docs/perf.md, "Measurements behind the design").
        self.q
            .sh
            .storage
            .prefetch_write_cursor(Cursor::ScheduledHead);
        let words = Words::<T, H>::new(item, status);
        let tail = self.tail();
        if let Err(error) = self.reserve(tail, 1).and_then(|()| self.check_submit(tail)) {
            // SAFETY: made just above, and no slot took them.
            let (item, status) = unsafe { words.take_back() };
            return Err(SubmitError {
                error,
                item,
                status,
            });
        }
        let sh = &*self.q.sh;
        let seq = sh.seq(tail);
        // A mask for a power-of-two capacity, a divide for any other, rather
        // than a stored index stepped per item: a store (see the struct's doc).
        let idx = sh.idx(tail);
        // SAFETY: `Shared::idx` reduces modulo the capacity, so `idx` is a
        // slot; it is FREE and unpublished (`reserve` + `check_submit`):
        // `write_body`'s condition.
        unsafe { write_body(sh.storage.slot(idx), seq.0, words) };
        // Ordering (in `publish`): Release; the body stores above happen-before
        // any Acquire observer of the new scheduled_tail (docs/abi.md §1.9 producer).
        sh.storage.publish(Cursor::ScheduledTail, tail, 1);
        // Take the line of a slot a few ahead for writing while it is
        // certainly free (below `limit`), so a later submit does not wait.
        if tail + 1 + PREFETCH_AHEAD < self.limit {
            sh.storage
                .prefetch_write_slot(sh.idx_ahead(idx, 1 + PREFETCH_AHEAD));
        }
        Ok(seq)
    }

    /// Submit `n` items with one publish of `scheduled_tail`. `make(seq)`
    /// produces each item and status cell. All or nothing: a refusal changes
    /// no byte and calls `make` not at all. Returns the first seq_id. If
    /// `make` panics part-way, nothing is published and the items and cells
    /// it already made are leaked (never dropped, never popped).
    #[inline]
    pub fn submit_burst(
        &mut self,
        n: u64,
        mut make: impl FnMut(SeqId) -> (T, Option<H::Status>),
    ) -> Result<SeqId, RingError> {
        let (tail, sched) = (self.tail(), self.sched_head());
        self.reserve(tail, n)?;
        let (cap, exec) = (self.q.sh.cap, self.cached_exec_head);
        // The physical slots' previous occupants (one lap back) must be FREE.
        step_range(
            &mut self.trace,
            tail..tail + n,
            |c| derive(c.saturating_sub(cap), exec, sched, tail),
            SlotEvent::Submit,
        )?;
        let sh = &*self.q.sh;
        let first_idx = sh.idx(tail);
        sh.prefetch_write(first_idx, n as usize);
        // `tail + n < CURSOR_LIMIT < 2^48` (reserve), so `first + i` never
        // carries into the xu_id bits: it is `from_cursor(tail + i)`.
        let first = sh.seq(tail);
        let _ = sh.try_each_slot(first_idx, n as usize, |i, slot| {
            let seq = first.0 + i as u64;
            let (item, status) = make(SeqId(seq));
            // SAFETY: the n slots are FREE and unpublished (`reserve` and the
            // lifecycle check above): `write_body`'s condition.
            unsafe { write_body(slot, seq, Words::<T, H>::new(item, status)) };
            Ok::<(), core::convert::Infallible>(())
        });
        // Ordering (in `publish`): Release; publishes all n bodies (docs/abi.md §1.9).
        sh.storage.publish(Cursor::ScheduledTail, tail, n);
        Ok(first)
    }

    /// `xuq_client_trigger_next`: publish `scheduled_head` (the release to
    /// the worker). Returns the triggered seq_id.
    #[inline(always)]
    pub fn trigger_next(&mut self) -> Result<SeqId, RingError> {
        let (c, tail) = (self.sched_head(), self.tail());
        if c >= tail {
            return Err(RingError::NothingToTrigger);
        }
        let st = derive(c, self.cached_exec_head, c, tail);
        step(&mut self.trace, st, SlotEvent::Trigger, c)?;
        // Ordering (in `publish`): Release; pairs with the worker's Acquire of
        // scheduled_head in peek/pop: the pair that matters (docs/abi.md §1.9).
        self.q.sh.storage.publish(Cursor::ScheduledHead, c, 1);
        Ok(self.q.sh.seq(c))
    }

    /// Trigger `n` submitted items with one publish of `scheduled_head`.
    /// Returns the last triggered seq_id.
    #[inline]
    pub fn trigger_burst(&mut self, n: u64) -> Result<SeqId, RingError> {
        let (exec, sched, tail) = (self.cached_exec_head, self.sched_head(), self.tail());
        if n == 0 || tail - sched < n {
            return Err(RingError::NothingToTrigger);
        }
        step_range(
            &mut self.trace,
            sched..sched + n,
            |c| derive(c, exec, sched, tail),
            SlotEvent::Trigger,
        )?;
        // Ordering (in `publish`): Release; pairs with the worker's Acquire of
        // scheduled_head in peek/pop: the pair that matters (docs/abi.md §1.9).
        self.q.sh.storage.publish(Cursor::ScheduledHead, sched, n);
        Ok(self.q.sh.seq(sched + n - 1))
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
    /// The write failed: completion is published anyway; a waiter finds it on
    /// its bounded re-check. `pop` reports `NRT_FAILURE`.
    Failed(SignalError),
}

/// One popped execution.
#[derive(Debug)]
pub struct Popped<T> {
    /// Its seq_id.
    pub seq: SeqId,
    /// The work item, back in the worker's hands.
    pub item: T,
    /// What happened to the waiter signal.
    pub signal: Signal,
}

impl<T> Popped<T> {
    /// `NRT_SUCCESS`, or `NRT_FAILURE` when the signal write failed (docs/abi.md §1.9).
    pub fn status(&self) -> NrtStatus {
        match self.signal {
            Signal::Failed(_) => NrtStatus::FAILURE,
            _ => NrtStatus::SUCCESS,
        }
    }
}

/// The slot at `exec_head`, seen by the worker before pop. Derefs to the item
/// (still owned by the slot).
pub struct SlotView<'a, T> {
    /// The slot's seq_id (checked against exec_head and the xu_id).
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
pub struct Worker<T: Payload, S: Storage, H: Home = DefaultHome> {
    q: XuQueue<T, S, H>,
    /// Our own `exec_head` (we are its only writer).
    head: u64,
    /// The slot index of `head` (`head % capacity`), stepped along with it.
    head_idx: usize,
    /// Last `scheduled_head` we observed.
    cached_sched_head: u64,
    /// Refreshes in a row that found at most [`LOCKSTEP_BATCH`] new items
    /// after an empty poll: the sign of lockstep ([`Worker::refresh`]).
    streak: u32,
    /// The last refresh found the ring empty.
    ran_dry: bool,
    /// The streak that triggers a slip: [`LOCKSTEP_STREAK`], doubled (up to
    /// [`MAX_LOCKSTEP_STREAK`]) after each slip that found no batch.
    slip_after: u32,
    trace: Trace,
}

impl<T: Payload, S: Storage, H: Home> core::fmt::Debug for Worker<T, S, H> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Worker")
            .field("head", &self.head)
            .field("cached_sched_head", &self.cached_sched_head)
            .finish()
    }
}

/// Captured under the lock for one slot (docs/abi.md §1.9 consumer).
#[derive(Clone, Copy)]
struct Capture {
    efd: i32,
    pooled: bool,
}

impl<T: Payload, S: Storage, H: Home> Worker<T, S, H> {
    fn new(q: XuQueue<T, S, H>, start: u64) -> Self {
        Worker {
            head_idx: q.sh.idx(start),
            q,
            head: start,
            cached_sched_head: start,
            streak: 0,
            ran_dry: false,
            slip_after: LOCKSTEP_STREAK,
            trace: None,
        }
    }

    /// Re-read `scheduled_head` into the cache (the cache said empty).
    ///
    /// Lockstep guard (docs/perf.md, "The worker's lockstep slip"):
    /// when the producer submits back to back and the worker keeps up, each
    /// refresh after the worker ran dry finds a few new items, and every
    /// item moves the slot's line and `scheduled_head`'s line between the
    /// two cores (the worker's read, then the producer's next write to the
    /// same line): both sides stall on every transfer instead of running
    /// ahead. After [`LOCKSTEP_STREAK`] refreshes in a row that each follow
    /// an empty poll and find at most [`LOCKSTEP_BATCH`] items, the worker
    /// stays off the shared lines for the slip's time (`spin::slip_wait`), letting the
    /// producer get whole lines ahead, and reads again. How many empty polls
    /// came before does not matter: where the two cores share no cache the
    /// worker's empty polls hit its own copy of the line until the
    /// producer's store takes it back, so lockstep there shows hundreds of
    /// them. A worker that finds items without having run dry was busy
    /// elsewhere (the pipeline's, harvesting between pops) and is not
    /// counted. A lone round trip looks like lockstep, but its slip finds no
    /// batch: the worker then waits for twice the streak before the next
    /// slip ([`Worker::slip`]).
    #[inline(always)]
    fn refresh(&mut self) {
        // Ordering (in `observe`): Acquire; pairs with trigger's Release of
        // scheduled_head (docs/abi.md §1.9: the pair that matters), so the
        // slot bodies written before it are visible here.
        let seen = self.q.sh.storage.observe(Cursor::ScheduledHead);
        let fresh = seen - self.head;
        self.cached_sched_head = seen;
        if fresh == 0 {
            self.ran_dry = true;
            return;
        }
        let ran_dry = core::mem::take(&mut self.ran_dry);
        if fresh > LOCKSTEP_BATCH {
            self.streak = 0;
            return;
        }
        if !ran_dry {
            // Came back from other work and found items waiting: a busy
            // worker, not one spinning on the producer's lines. No evidence
            // either way.
            return;
        }
        self.streak += 1;
        #[cfg(not(loom))]
        if self.streak >= self.slip_after {
            self.streak = 0;
            self.slip();
        }
    }

    /// Stay off the shared lines for a moment, then re-read (see `refresh`).
    #[cfg_attr(loom, allow(dead_code))]
    #[cold]
    #[inline(never)]
    fn slip(&mut self) {
        super::spin::slip_wait();
        // Ordering (in `observe`): Acquire; as in `refresh`.
        let seen = self.q.sh.storage.observe(Cursor::ScheduledHead);
        self.cached_sched_head = seen;
        // A batch after the wait: the producer streams and got whole lines
        // ahead, so slip again at the next sign of lockstep. No batch: the
        // producer was waiting for us (a round trip: it submits after it
        // sees the completion) and the slip only delayed it, so wait twice
        // as long before the next one (docs/perf.md: without the doubling
        // the round trip read 2.5-2.7x of ping-pong instead of about 1x).
        self.slip_after = if seen - self.head > LOCKSTEP_BATCH {
            LOCKSTEP_STREAK
        } else {
            (self.slip_after * 2).min(MAX_LOCKSTEP_STREAK)
        };
    }

    /// The shared query side.
    pub fn queue(&self) -> &XuQueue<T, S, H> {
        &self.q
    }

    /// Record every slot transition from now on.
    #[cfg(feature = "std")]
    pub fn trace(&mut self, on: bool) {
        self.trace = on.then(Vec::new);
    }

    /// The transitions recorded so far.
    #[cfg(feature = "std")]
    pub fn take_trace(&mut self) -> Vec<Transition> {
        self.trace.as_mut().map(core::mem::take).unwrap_or_default()
    }

    /// The transitions recorded so far, swapped into `buf` (cleared first);
    /// the recording goes on in `buf`'s old storage, so a caller that hands
    /// the same buffer back allocates nothing once both have grown.
    #[cfg(feature = "std")]
    pub fn swap_trace(&mut self, buf: &mut Vec<Transition>) {
        swap_into(&mut self.trace, buf);
    }

    /// Triggered items not yet popped (refreshes the cached `scheduled_head`
    /// when it says none).
    #[inline]
    pub fn available(&mut self) -> u64 {
        if !S::CACHE_REMOTE || self.head >= self.cached_sched_head {
            self.refresh();
        }
        self.cached_sched_head - self.head
    }

    /// The slot for cursor `c` at index `idx` (the worker's `head` and
    /// `head_idx`): its seq_id must be `c`'s, with our xu_id (docs/abi.md §1.9: the
    /// peek-time check, an error value here).
    #[inline(always)]
    fn checked(
        sh: &Shared<T, S, H>,
        c: u64,
        idx: usize,
    ) -> Result<(S::Slot<'_>, SeqId), RingError> {
        debug_assert_eq!(idx, sh.idx(c));
        // SAFETY: `head_idx < capacity` (stepped with `Shared::next_idx`).
        let slot = unsafe { sh.storage.slot(idx) };
        let expected = sh.seq(c);
        let found = slot.seq_id(Relaxed);
        if found != expected.0 {
            return Err(RingError::SlotMismatch { expected, found });
        }
        Ok((slot, expected))
    }

    /// `xuq_worker_peek_current_exec`: `Ok(None)` when
    /// `exec_head == scheduled_head`.
    pub fn peek(&mut self) -> Result<Option<SlotView<'_, T>>, RingError> {
        if self.available() == 0 {
            return Ok(None);
        }
        let (slot, seq) = Self::checked(&self.q.sh, self.head, self.head_idx)?;
        let exec_status = slot.exec_status(Relaxed);
        let exec_info = slot.exec_info(Relaxed);
        Ok(Some(SlotView {
            seq,
            exec_status,
            exec_info,
            // SAFETY: the word came from `T::into_word` at submit (checked slot
            // of this queue); ManuallyDrop means this view never drops it, so
            // the slot keeps sole ownership until pop.
            item: ManuallyDrop::new(unsafe { T::from_word(exec_info) }),
            _worker: PhantomData,
        }))
    }

    /// Write `status` through the slot's `exec_status` word (if any).
    #[inline(always)]
    fn write_status(word: u64, status: NrtStatus) {
        if word != 0 {
            // SAFETY: a non-zero exec_status word came from the status
            // cell's `Payload::into_word` at submit (`Words::new`); the slot
            // gives it to us here, exactly once (this slot is popped once).
            unsafe { <H::Status as Payload>::from_word(word) }.set(status);
        }
    }

    /// Signal a captured handle (docs/abi.md §1.9: write, then close a fresh one).
    #[inline(always)]
    fn signal(&self, seq: SeqId, c: Capture) -> Signal {
        if c.efd == NO_EFD {
            return Signal::NoWaiter;
        }
        self.signal_installed(seq, c)
    }

    /// The rare half of [`signal`](Self::signal): a waiter installed a handle.
    /// The write and close are out of line; the `Signal` is built here, in
    /// the caller, so the common path keeps it in registers.
    #[inline(always)]
    fn signal_installed(&self, seq: SeqId, c: Capture) -> Signal {
        match self.write_and_close(c) {
            Ok(()) => Signal::Signalled {
                fd: c.efd,
                pooled: c.pooled,
            },
            Err(errno) => Signal::Failed(SignalError { seq, errno }),
        }
    }

    #[cold]
    #[inline(never)]
    fn write_and_close(&self, c: Capture) -> Result<(), i32> {
        let r = H::signal(&self.q.sh.waits, c.efd);
        if !c.pooled {
            H::close(&self.q.sh.waits, c.efd);
        }
        r
    }

    /// `xuq_worker_pop_current_exec` with the worker's status write: write
    /// `status` through `exec_status`, then under the mark-completion lock
    /// capture `mark_comp_efd`, `efd_from_pool` and `exec_info` and advance
    /// `exec_head` (Release), then signal. `Ok(None)` when empty.
    #[inline(always)]
    pub fn pop(&mut self, status: NrtStatus) -> Result<Option<Popped<T>>, RingError> {
        if !S::CACHE_REMOTE || self.head >= self.cached_sched_head {
            self.refresh();
        }
        let head = self.head;
        let sched = self.cached_sched_head;
        if head >= sched {
            return Ok(None);
        }
        let st = derive(head, head, sched, sched);
        let done = step(&mut self.trace, st, SlotEvent::Complete, head)?;
        let sh: &Shared<T, S, H> = &self.q.sh;
        let idx = self.head_idx;
        let (slot, seq) = Self::checked(sh, head, idx)?;
        let status_word = slot.exec_status(Relaxed);
        #[cfg(not(xunds_mutant = "status_after_completion"))]
        Self::write_status(status_word, status);
        let (cap, info) = {
            let g = sh.lock.lock_worker();
            #[cfg(xunds_mutant = "advance_before_capture")]
            sh.storage.publish(Cursor::ExecHead, head, 1);
            // With no handle installed anywhere, mark_comp_efd is -1 in every
            // triggered slot: the capture is that value without the loads.
            let mut cap = Capture {
                efd: NO_EFD,
                pooled: false,
            };
            if g.any_installed() {
                let (efd, pooled) = slot.handle(Relaxed);
                cap = Capture { efd, pooled };
                if cap.efd != NO_EFD {
                    g.removed(1);
                }
            }
            let info = slot.exec_info(Relaxed);
            // Ordering (in `publish`): Release; pairs with the producer's
            // Acquire of exec_head (slot reuse) and every waiter's/query's
            // Acquire (completion + status visible), docs/abi.md §1.8, §1.9.
            #[cfg(not(xunds_mutant = "advance_before_capture"))]
            sh.storage.publish(Cursor::ExecHead, head, 1);
            (cap, info)
        };
        #[cfg(xunds_mutant = "status_after_completion")]
        Self::write_status(status_word, status);
        self.head = head + 1;
        self.head_idx = sh.next_idx(idx);
        step(&mut self.trace, done, SlotEvent::Reclaim, head)?;
        // SAFETY: `info` is the exec_info word submit stored from
        // `T::into_word`; this pop is its single consumer (exec_head has moved
        // past it).
        let item = unsafe { T::from_word(info) };
        let signal = self.signal(seq, cap);
        Ok(Some(Popped { seq, item, signal }))
    }

    /// Reclaim the slot at `exec_head` that [`peek`](Self::peek) and
    /// [`pop`](Self::pop) refuse with `SlotMismatch` (its seq_id was
    /// overwritten by a stray writer, docs/abi.md §1.9): advance `exec_head`
    /// past it under the mark-completion lock, trusting none of its words.
    /// So no status is written through `exec_status`, no handle is
    /// signalled and no item is taken: the item and status cell its words
    /// named are leaked (never dropped), a waiter blocked on it finds the
    /// completion on its own re-check (an eventfd [`arm`](XuQueue::arm)ed
    /// on it is never signalled, and its dup stays open), and a handle
    /// installed before the
    /// overwrite stays counted as installed (pops then look at handles,
    /// slower, never wrong). Returns the seq_id the cursor names,
    /// `Ok(None)` when nothing is triggered, `Intact` for a slot that passes
    /// the check (pop that one).
    pub fn discard(&mut self) -> Result<Option<SeqId>, RingError> {
        self.refresh();
        let (head, sched) = (self.head, self.cached_sched_head);
        if head >= sched {
            return Ok(None);
        }
        let sh: &Shared<T, S, H> = &self.q.sh;
        let seq = match Self::checked(sh, head, self.head_idx) {
            Ok((_, seq)) => return Err(RingError::Intact { seq }),
            Err(RingError::SlotMismatch { expected, .. }) => expected,
            Err(e) => return Err(e),
        };
        let st = derive(head, head, sched, sched);
        let done = step(&mut self.trace, st, SlotEvent::Complete, head)?;
        {
            let _g = sh.lock.lock_worker();
            // Ordering (in `publish`): Release; pairs with the producer's
            // Acquire of exec_head (slot reuse) and every waiter's/query's
            // Acquire (docs/abi.md §1.8, §1.9), as in `pop`.
            sh.storage.publish(Cursor::ExecHead, head, 1);
        }
        self.head = head + 1;
        self.head_idx = sh.next_idx(self.head_idx);
        step(&mut self.trace, done, SlotEvent::Reclaim, head)?;
        Ok(Some(seq))
    }

    /// Pop up to `max` (at most 64) triggered items with one lock and one
    /// `exec_head` publish. `status(seq)` gives each item's status; `out`
    /// receives each popped item in FIFO order. Returns how many.
    #[inline]
    pub fn pop_burst(
        &mut self,
        max: usize,
        mut status: impl FnMut(SeqId) -> NrtStatus,
        mut out: impl FnMut(Popped<T>),
    ) -> Result<usize, RingError> {
        const BURST: usize = 64;
        const _: () = assert!(BURST.is_power_of_two());
        let want = (max as u64).min(BURST as u64);
        if !S::CACHE_REMOTE || self.cached_sched_head - self.head < want {
            self.refresh();
        }
        let n = (self.cached_sched_head - self.head).min(want) as usize;
        if n == 0 {
            return Ok(0);
        }
        let head = self.head;
        let sched = self.cached_sched_head;
        step_range(
            &mut self.trace,
            head..head + n as u64,
            |c| derive(c, c, sched, sched),
            SlotEvent::Complete,
        )?;
        let sh: &Shared<T, S, H> = &self.q.sh;
        // `head + n <= scheduled_head < CURSOR_LIMIT < 2^48`, so `base + i`
        // never carries into the xu_id bits: it is `from_cursor(head + i)`.
        let base = sh.seq(head).0;
        let first_idx = self.head_idx;
        // Captured under the lock: every exec_info word, and the (rare)
        // installed handles as (index, efd, pooled).
        let mut infos: [MaybeUninit<u64>; BURST] = [const { MaybeUninit::uninit() }; BURST];
        let mut handles: [MaybeUninit<(usize, i32, bool)>; BURST] =
            [const { MaybeUninit::uninit() }; BURST];
        let mut n_handles = 0usize;
        // OR of every exec_status word: 0 when no item carries a status cell.
        let mut status_words = 0u64;
        let end_idx = {
            let g = sh.lock.lock_worker();
            #[cfg(xunds_mutant = "advance_before_capture")]
            sh.storage.publish(Cursor::ExecHead, head, n as u64);
            // As in `pop`: no handle installed anywhere means every
            // mark_comp_efd in the burst is -1.
            let scan_handles = g.any_installed();
            // Check every slot's seq_id as we capture it; no side effect yet,
            // so an error leaves nothing half-done.
            let end_idx = sh.try_each_slot(first_idx, n, |i, slot| {
                let expected = base + i as u64;
                let found = slot.seq_id(Relaxed);
                if found != expected {
                    return Err(RingError::SlotMismatch {
                        expected: SeqId(expected),
                        found,
                    });
                }
                status_words |= slot.exec_status(Relaxed);
                // `i < n <= BURST` (a power of two): the mask changes nothing
                // and proves the index in bounds.
                infos[i & (BURST - 1)].write(slot.exec_info(Relaxed));
                if scan_handles {
                    let (efd, pooled) = slot.handle(Relaxed);
                    if efd != NO_EFD {
                        handles[n_handles & (BURST - 1)].write((i, efd, pooled));
                        n_handles += 1;
                    }
                }
                Ok(())
            })?;
            g.removed(n_handles as u32);
            // Status writes, still before the exec_head Release below (the
            // slots cannot change until it).
            if status_words != 0 {
                let _ = sh.try_each_slot(first_idx, n, |i, slot| {
                    let word = slot.exec_status(Relaxed);
                    Self::write_status(word, status(SeqId(base + i as u64)));
                    Ok::<(), core::convert::Infallible>(())
                });
            }
            // Ordering (in `publish`): Release; as in `pop` (docs/abi.md §1.8, §1.9).
            #[cfg(not(xunds_mutant = "advance_before_capture"))]
            sh.storage.publish(Cursor::ExecHead, head, n as u64);
            end_idx
        };
        self.head = head + n as u64;
        self.head_idx = end_idx;
        step_range(
            &mut self.trace,
            head..head + n as u64,
            |_| SlotState::Done,
            SlotEvent::Reclaim,
        )?;
        if n_handles == 0 {
            // The common case: no waiter installed a handle in this burst.
            for (i, info) in infos[..n].iter().enumerate() {
                // SAFETY: written for every i < n in the locked loop above.
                let info = unsafe { info.assume_init_read() };
                // SAFETY: as in `pop`: the word is from `T::into_word`, consumed once.
                let item = unsafe { T::from_word(info) };
                out(Popped {
                    seq: SeqId(base + i as u64),
                    item,
                    signal: Signal::NoWaiter,
                });
            }
            return Ok(n);
        }
        let mut next_handle = 0usize;
        for (i, info) in infos.iter().enumerate().take(n) {
            // SAFETY: written for every i < n in the locked loop above.
            let info = unsafe { info.assume_init_read() };
            let seq = SeqId(base + i as u64);
            // SAFETY: as in `pop`: the word is from `T::into_word`, consumed once.
            let item = unsafe { T::from_word(info) };
            let mut signal = Signal::NoWaiter;
            if next_handle < n_handles {
                // SAFETY: entries below `n_handles` were written above.
                let (at, efd, pooled) = unsafe { handles[next_handle].assume_init() };
                if at == i {
                    signal = self.signal_installed(seq, Capture { efd, pooled });
                    next_handle += 1;
                }
            }
            out(Popped { seq, item, signal });
        }
        Ok(n)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::fsm::InvalidEvent;
    use crate::ring::OwnedStorage;

    /// A wait's deadline and spin end: an overflowing sum is a far time,
    /// not a panic (`wait(seq, mode, Duration::MAX)` waits for good).
    #[test]
    fn after_saturates() {
        let now = Instant::now();
        assert_eq!(
            after(now, Duration::from_millis(5)),
            now + Duration::from_millis(5)
        );
        assert!(after(now, Duration::MAX) >= now + Duration::from_secs(1 << 31));
    }

    /// A producer thread and a worker thread through a 4-slot ring, slots
    /// reused 50 times over: FIFO, every item once. Its point is Miri
    /// (`cargo +nightly miri test --lib -- ring::queue`): on x86_64 the body
    /// is written with plain 16-byte stores (`SlotAccess::set_body`), and
    /// Miri's race detector checks that no read of a slot races with them.
    #[test]
    fn two_threads_fifo_with_plain_body_stores() {
        let (p, w) =
            XuQueue::<u64, OwnedStorage>::owned(QueueConfig::new(XuId::new(0, 0, 1), 4)).unwrap();
        two_threads_fifo(p, w);
    }

    /// The lockstep guard (`Worker::refresh`, docs/perf.md, "The worker's lockstep slip"):
    /// refreshes that follow an empty poll and find a few items count toward
    /// a slip however many empty polls came first; a slip that finds no batch
    /// doubles the streak before the next one and a slip that finds one
    /// ends the back-off; a refresh finding more than `LOCKSTEP_BATCH` items
    /// resets the count, and one that finds items without having run dry (a
    /// busy worker) leaves it alone.
    #[test]
    fn lockstep_refreshes_slip_and_lone_items_back_off() {
        let (mut p, mut w) =
            XuQueue::<u64, OwnedStorage>::owned(QueueConfig::new(xu(), 1024)).unwrap();
        let ok = NrtStatus::SUCCESS;
        let submit = |p: &mut Producer<u64, OwnedStorage>, n: u64| {
            for _ in 0..n {
                p.submit(0, None).unwrap();
                p.trigger_next().unwrap();
            }
        };
        // `empties` empty polls, then `n` items submitted and popped.
        let feed = |p: &mut Producer<u64, OwnedStorage>,
                    w: &mut Worker<u64, OwnedStorage>,
                    empties: usize,
                    n: u64| {
            for _ in 0..empties {
                assert!(w.pop(ok).unwrap().is_none());
            }
            submit(p, n);
            for _ in 0..n {
                assert!(w.pop(ok).unwrap().is_some());
            }
        };
        for k in 1..LOCKSTEP_STREAK {
            feed(&mut p, &mut w, 100, 1);
            assert_eq!(w.streak, k, "a lone item after 100 empty polls is lockstep");
        }
        // The streak's last refresh slips; nothing arrives during the slip
        // (one thread), so the next slip waits twice as long.
        feed(&mut p, &mut w, 1, LOCKSTEP_BATCH);
        assert_eq!((w.streak, w.slip_after), (0, 2 * LOCKSTEP_STREAK));
        feed(&mut p, &mut w, 1, 2);
        assert_eq!(w.streak, 1);
        feed(&mut p, &mut w, 1, LOCKSTEP_BATCH + 1);
        assert_eq!(w.streak, 0, "a batch is not lockstep");
        feed(&mut p, &mut w, 1, 1);
        feed(&mut p, &mut w, 0, 1);
        assert_eq!(w.streak, 1, "items found without running dry count nothing");
        // A whole doubled streak of lone items slips again and doubles again.
        for _ in 1..2 * LOCKSTEP_STREAK {
            feed(&mut p, &mut w, 3, 1);
        }
        assert_eq!((w.streak, w.slip_after), (0, 4 * LOCKSTEP_STREAK));
        // A slip that finds a batch (the producer got ahead while the worker
        // stayed off its lines) ends the back-off: the next slip comes after
        // the usual streak.
        submit(&mut p, LOCKSTEP_BATCH + 1);
        w.slip();
        assert_eq!(w.slip_after, LOCKSTEP_STREAK, "a slip that finds a batch");
    }

    /// The same on the byte-exact mapped storage (the slot array in a
    /// mapping; under Miri the mapping is heap memory, see `hal::mem`).
    #[test]
    fn two_threads_fifo_with_plain_body_stores_mapped() {
        use crate::hal::mem::Mapping;
        use crate::ring::storage::mapped_len;
        let region = Mapping::anonymous(mapped_len(4)).unwrap().into_region();
        // SAFETY: a fresh anonymous mapping only this queue touches.
        let (p, w) = unsafe {
            XuQueue::<u64, crate::ring::MappedStorage>::mapped(
                region,
                QueueConfig::new(XuId::new(0, 0, 1), 4),
            )
        }
        .unwrap();
        two_threads_fifo(p, w);
    }

    fn two_threads_fifo<S: Storage + Send + Sync + 'static>(
        mut p: Producer<u64, S>,
        mut w: Worker<u64, S>,
    ) {
        const N: u64 = 200;
        let prod = std::thread::spawn(move || {
            for i in 0..N {
                while p.submit(i, None).is_err() {
                    std::thread::yield_now();
                }
                p.trigger_next().unwrap();
            }
        });
        let mut next = 0;
        while next < N {
            match w.pop(NrtStatus::SUCCESS).unwrap() {
                Some(got) => {
                    assert_eq!(got.item, next);
                    next += 1;
                }
                None => std::thread::yield_now(),
            }
        }
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

    fn xu() -> XuId {
        XuId::new(0, 1, 2)
    }

    /// docs/abi.md §1.4: `last_submitted` is the newest handle issued, not a
    /// default (mutant: `last_submitted` -> `Default::default()`).
    #[test]
    fn last_submitted_is_the_newest_handle() {
        let (mut p, _w) = XuQueue::<u64, OwnedStorage>::owned(QueueConfig::new(xu(), 4)).unwrap();
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
        let (p, w) = XuQueue::<u64, OwnedStorage>::owned(QueueConfig::new(xu(), 4)).unwrap();
        assert_ne!(xu(), XuId::default());
        for q in [p.queue(), w.queue()] {
            assert_eq!(q.xu(), xu());
            assert_eq!(q.capacity(), 4);
        }
    }

    /// Dropping a queue with in-flight slots closes only the dups the slots
    /// own: never a slot without a handle (`NO_EFD`), never a pooled event
    /// (the pool owns it). Mutant: `efd != NO_EFD && !pooled` -> `||`.
    #[test]
    fn drop_closes_only_owned_dups() {
        let sink = std::sync::Arc::new(CountingSink(std::sync::Mutex::new(Vec::new())));
        let cfg = QueueConfig::new(xu(), 4)
            .signals(sink.clone(), super::super::waiter::eventfd_factory());
        let (mut p, w) = XuQueue::<u64, OwnedStorage>::owned(cfg).unwrap();
        let q = p.queue().clone();
        let _none = p.submit(1, None).unwrap();
        let pooled = p.submit(2, None).unwrap();
        let owned = p.submit(3, None).unwrap();
        q.sh.slot(pooled.seq_num()).set_handle(7001, true, Relaxed);
        q.sh.slot(owned.seq_num()).set_handle(7002, false, Relaxed);
        drop((p, w, q));
        assert_eq!(*sink.0.lock().unwrap(), vec![7002]);
    }

    /// A waiter that times out takes its handle back and the installed
    /// count with it, so the worker's fast path (no handle anywhere) comes
    /// back. Mutant: `uninstall`'s `!=` -> `==`.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "a blocking wait needs poll(2), not available under Miri"
    )]
    fn a_timed_out_waiter_leaves_no_installed_handle_counted() {
        let (mut p, _w) = XuQueue::<u64, OwnedStorage>::owned(QueueConfig::new(xu(), 4)).unwrap();
        let q = p.queue().clone();
        let s = p.submit(1, None).unwrap();
        p.trigger_next().unwrap();
        assert!(!q.sh.lock.lock_waiter().any_installed());
        let r = q.wait(s, WaitMode::Block, Duration::from_millis(5));
        assert_eq!(r, Ok(Waited::TimedOut));
        assert_eq!(q.sh.slot(s.seq_num()).efd(Relaxed), NO_EFD);
        assert!(
            !q.sh.lock.lock_waiter().any_installed(),
            "the installed count still counts the uninstalled handle"
        );
    }

    /// A slot whose seq_id was overwritten (`corrupt_seq_id`, as a stray
    /// writer would) is refused at peek and at pop with `SlotMismatch`
    /// naming both values, and the refusal changes nothing: the cursors stay
    /// and the same refusal comes again (docs/abi.md §1.9, the peek-time
    /// check).
    #[test]
    fn an_overwritten_seq_id_is_refused_at_peek_and_pop() {
        let (mut p, mut w) =
            XuQueue::<u64, OwnedStorage>::owned(QueueConfig::new(xu(), 4)).unwrap();
        let q = p.queue().clone();
        let s = p.submit(1, None).unwrap();
        p.trigger_next().unwrap();
        q.corrupt_seq_id(s, s.0 ^ 0x40);
        let refused = Err(RingError::SlotMismatch {
            expected: s,
            found: s.0 ^ 0x40,
        });
        assert_eq!(w.peek().map(|v| v.map(|v| v.seq)), refused);
        assert_eq!(w.pop(NrtStatus::SUCCESS).map(|p| p.map(|p| p.seq)), refused);
        assert_eq!(q.cursors(), (1, 2, 2), "nothing moved");
        assert_eq!(w.peek().map(|v| v.map(|v| v.seq)), refused);
    }

    /// `discard` reclaims only an overwritten head slot: an empty ring is
    /// `None`, an intact slot is refused (`Intact`, nothing moves); the
    /// overwritten one is passed with no status written and no item taken,
    /// `exec_head` moves by one, so the seq_id
    /// reads as completed and the slot behind it pops as usual. Mutants:
    /// every early return, the advance, the head steps.
    #[test]
    fn discard_reclaims_only_an_overwritten_slot() {
        let (mut p, mut w) =
            XuQueue::<u64, OwnedStorage>::owned(QueueConfig::new(xu(), 2)).unwrap();
        let q = p.queue().clone();
        assert_eq!(w.discard(), Ok(None), "empty");
        let cells = [StatusArc::default(), StatusArc::default()];
        let a = p.submit(10, Some(cells[0].clone())).unwrap();
        let b = p.submit(11, Some(cells[1].clone())).unwrap();
        p.trigger_next().unwrap();
        assert_eq!(w.discard(), Err(RingError::Intact { seq: a }));
        assert_eq!(q.cursors(), (1, 2, 3), "nothing moved");
        q.corrupt_seq_id(a, 0);
        assert_eq!(w.discard(), Ok(Some(a)));
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
        assert_eq!(w.discard(), Ok(None), "b is not triggered yet");
        p.trigger_next().unwrap();
        let popped = w.pop(NrtStatus::SUCCESS).unwrap().unwrap();
        assert_eq!((popped.seq, popped.item), (b, 11));
        assert_eq!(cells[1].get(), Some(NrtStatus::SUCCESS));
        // The discarded slot is reused like any other.
        let c = p.submit(12, None).unwrap();
        p.submit(13, None).unwrap();
        p.trigger_burst(2).unwrap();
        assert_eq!(w.pop(NrtStatus::SUCCESS).unwrap().unwrap().seq, c);
        assert_eq!(q.cursors(), (4, 5, 5));
    }

    /// `step_range` (pop_burst's lifecycle check) refuses an event that is
    /// illegal in the range's derived state, with or without a trace, wherever
    /// the illegal cursor sits (untraced it checks the first and the last
    /// cursor; a contiguous range has one derived state, docs/abi.md §1.2), and
    /// checks nothing for an empty range. Mutants: `step_range` -> `Ok(())`,
    /// the untraced `!range.is_empty()` without its `!`, `range.end - 1` ->
    /// `+ 1` or `/ 1`.
    #[test]
    fn step_range_refuses_an_illegal_event() {
        let refused = Err(RingError::Lifecycle(InvalidEvent {
            machine: <SlotFsm as fsm::Fsm>::NAME,
            state: SlotState::Free,
            event: SlotEvent::Complete,
        }));
        // FREE at `bad`, TRIGGERED (where Complete is legal) elsewhere.
        let free_at = |bad: u64| {
            move |c: u64| {
                if c == bad {
                    SlotState::Free
                } else {
                    SlotState::Triggered
                }
            }
        };
        for traced in [false, true] {
            let fresh = || traced.then(Vec::new);
            for bad in [10, 13] {
                let mut t = fresh();
                assert_eq!(
                    step_range(&mut t, 10..14, free_at(bad), SlotEvent::Complete),
                    refused,
                    "traced {traced}, FREE at {bad} of 10..14"
                );
            }
            let mut t = fresh();
            assert_eq!(
                step_range(
                    &mut t,
                    10..14,
                    |_| SlotState::Triggered,
                    SlotEvent::Complete
                ),
                Ok(())
            );
            if let Some(t) = &t {
                let ids: Vec<u64> = t.iter().map(|tr| tr.id).collect();
                assert_eq!(ids, [10, 11, 12, 13], "each cursor traced once");
            }
            let mut t = fresh();
            assert_eq!(
                step_range(&mut t, 5..5, |_| SlotState::Free, SlotEvent::Complete),
                Ok(()),
                "an empty range checks nothing"
            );
        }
    }

    /// The `Static` home has no waiters: nothing installs or counts a handle,
    /// so pop never loads `mark_comp_efd` (the installed count stays 0,
    /// src/ring/lock.rs `WaiterLine::installed`). Should a handle ever be
    /// counted (done by hand here, under the lock, as `install` does in the
    /// `Counted` home), pop reports it as a failed signal with `EINVAL`, never
    /// as signalled: this home has no sink that could write it (docs/abi.md
    /// §1.9: a failed signal is reported, completion is still published).
    /// Mutant: `Static::signal` -> `Ok(())`.
    #[test]
    fn a_static_home_reports_a_counted_handle_as_a_failed_signal() {
        use crate::ring::StaticStorage;
        static RING: StaticStorage<2> = StaticStorage::new();
        static HOME: QueueHome<&'static u32, MappedStorage> = QueueHome::new();
        static ITEM: u32 = 5;
        let (mut p, mut w): Handles<&'static u32, MappedStorage, Static> =
            HOME.queue(RING.storage(xu(), 1).unwrap()).unwrap();
        let s = p.submit(&ITEM, None).unwrap();
        p.trigger_next().unwrap();
        {
            let sh = &p.queue().sh;
            let g = sh.lock.lock_waiter();
            sh.slot(s.seq_num()).set_handle(9, false, Relaxed);
            g.installed_one();
        }
        let popped = w.pop(NrtStatus::SUCCESS).unwrap().unwrap();
        assert_eq!(popped.seq, s);
        assert_eq!(
            popped.signal,
            Signal::Failed(SignalError {
                seq: s,
                errno: EINVAL
            })
        );
        assert!(p.queue().is_completed(s).unwrap());
        assert!(
            !p.queue().sh.lock.lock_waiter().any_installed(),
            "the worker's capture took the handle out of the count"
        );
    }

    /// The `no_std` home: a queue in statics over a `StaticStorage`,
    /// `&'static` items and status cells. FIFO, a full ring gives the item
    /// and its cell back, pop writes each cell, and the storage and the home
    /// are each handed out once.
    #[test]
    fn a_static_home_over_static_storage() {
        use crate::ring::StaticStorage;
        static RING: StaticStorage<2> = StaticStorage::new();
        static SPARE: StaticStorage<2> = StaticStorage::new();
        static HOME: QueueHome<&'static u32, MappedStorage> = QueueHome::new();
        static ITEMS: [u32; 3] = [7, 8, 9];
        static CELLS: [StatusCell; 3] = [const { StatusCell::new() }; 3];
        let (mut p, mut w): Handles<&'static u32, MappedStorage, Static> =
            HOME.queue(RING.storage(xu(), 1).unwrap()).unwrap();
        assert_eq!(RING.storage(xu(), 1).unwrap_err(), RingError::InUse);
        let spare = SPARE.storage(xu(), 1).unwrap();
        assert_eq!(HOME.queue(spare).unwrap_err(), RingError::InUse);
        let a = p.submit(&ITEMS[0], Some(&CELLS[0])).unwrap();
        p.submit(&ITEMS[1], Some(&CELLS[1])).unwrap();
        let full = p.submit(&ITEMS[2], Some(&CELLS[2])).unwrap_err();
        assert_eq!(full.error, RingError::Full);
        assert!(core::ptr::eq(full.item, &ITEMS[2]));
        assert!(full.status.is_some_and(|c| core::ptr::eq(c, &CELLS[2])));
        p.trigger_burst(2).unwrap();
        let first = w.pop(NrtStatus::SUCCESS).unwrap().unwrap();
        assert_eq!((first.seq, *first.item), (a, 7));
        assert_eq!(*w.pop(NrtStatus::TIMEOUT).unwrap().unwrap().item, 8);
        let c = p.submit(&ITEMS[2], Some(&CELLS[2])).unwrap();
        p.trigger_next().unwrap();
        assert_eq!(*w.pop(NrtStatus::SUCCESS).unwrap().unwrap().item, 9);
        assert!(p.queue().is_completed(c).unwrap());
        assert!(w.pop(NrtStatus::SUCCESS).unwrap().is_none());
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
