//! Core: the XU ring (docs/abi.md §1.2-§1.9) in memory the caller provides,
//! with the caller's `NRT_STATUS *` as each slot's `exec_status` word and a
//! raw `void *` as its `exec_info`; std: completion by eventfd.
//!
//! The ring's bytes (the 256-byte `xu_queue_t` and the 32-byte slots) live
//! in the caller's memory ([`RingMem::init_raw`]); the queue's own state
//! (the mark-completion lock, the waiters' pool) and the producer and worker
//! handles live in one heap block the three C handles point into.

use std::ffi::c_void;
use std::os::fd::{FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::Duration;

use xunds_core::hal::eventfd::EventFd;
use xunds_core::ring::{
    mapped_len, Armed, Payload, PopError, Producer, RingMem, StatusCell, TriggerError, WaitMode,
    Waited, Worker, XuQueue,
};
use xunds_core::wire::seq_id::{SeqId, XuId};
use xunds_core::wire::xu_queue::CURSOR_START;
use xunds_core::NrtStatus;

use crate::status::{
    boxed, checked, guard, handle, handle_mut, out, retire, NRT_FAILURE, NRT_INVALID,
    NRT_QUEUE_EMPTY, NRT_STATUS, NRT_TIMEOUT,
};

/// The caller's status word, as a slot's `exec_status` carries it: the
/// address of a 4-byte `NRT_STATUS` the caller owns and keeps valid until
/// the handle completes. It owns nothing.
struct CallerStatus(NonNull<StatusCell>);

// SAFETY: the word is an address the caller keeps valid until completion,
// written by the worker (atomically, through `StatusCell`) and read by the
// caller only after observing completion; moving the address to the worker's
// thread is the protocol (docs/abi.md §1.8).
unsafe impl Send for CallerStatus {}

// SAFETY: `from_word(into_word(x))` is `x` (the address round-trips), and
// the address is all there is: nothing is owned, so nothing is leaked or
// freed twice.
unsafe impl Payload for CallerStatus {
    fn into_word(self) -> u64 {
        self.0.as_ptr() as usize as u64
    }
    unsafe fn from_word(w: u64) -> Self {
        // SAFETY: `w` came from `into_word` of a non-null pointer.
        CallerStatus(unsafe { NonNull::new_unchecked(w as usize as *mut StatusCell) })
    }
}

impl std::ops::Deref for CallerStatus {
    type Target = StatusCell;
    fn deref(&self) -> &StatusCell {
        // SAFETY: `StatusCell` is `repr(transparent)` over an `AtomicU32`,
        // which has the layout of the caller's `uint32_t`; the caller keeps
        // it valid and touches it only after completion (header contract).
        unsafe { self.0.as_ref() }
    }
}

/// The queue a C ring is: `exec_info` a raw address, `exec_status` the
/// caller's word.
type Queue = XuQueue<u64, CallerStatus>;

/// A ring (opaque): queries and waits, any thread.
pub struct xunds_ring_t {
    magic: u64,
    queue: Arc<Queue>,
}
checked!(xunds_ring_t, 0x5855_5244_5249_4e47);

/// A ring's producer (opaque): submit and trigger, one thread at a time.
pub struct xunds_producer_t {
    magic: u64,
    p: Producer<Arc<Queue>>,
}
checked!(xunds_producer_t, 0x5855_5244_5052_4f44);

/// A ring's worker (opaque): peek, pop and discard, one thread at a time.
pub struct xunds_worker_t {
    magic: u64,
    w: Worker<Arc<Queue>>,
}
checked!(xunds_worker_t, 0x5855_5244_574f_524b);

/// The one heap block behind a ring's three handles (the ring first, so
/// its pointer is the block's).
#[repr(C)]
struct RingBlock {
    ring: xunds_ring_t,
    producer: xunds_producer_t,
    worker: xunds_worker_t,
}

/// The alignment a ring's memory needs (a cache line).
pub const XUNDS_RING_ALIGN: usize = 64;

/// Bytes of caller memory a ring of `capacity` slots needs: the 256-byte
/// `xu_queue_t`, then 32 bytes per slot (docs/abi.md §1.2, §1.3). 0 for a
/// capacity of 0 or above 2^32. Any thread.
#[no_mangle]
pub extern "C" fn xunds_ring_mem_size(capacity: u64) -> usize {
    // Arithmetic that cannot overflow for the capacities let through; the
    // guard is there because every entry point has one.
    std::panic::catch_unwind(|| match capacity {
        1..=0x1_0000_0000 => mapped_len(capacity),
        _ => 0,
    })
    .unwrap_or(0)
}

/// Lay a fresh ring of `capacity` slots for XU `xu_id` into the `len` bytes
/// at `mem` (64-byte aligned, at least `xunds_ring_mem_size(capacity)`
/// bytes), cursors at 1, and return the ring and its two single-thread
/// handles. The memory stays the caller's, but until `xunds_ring_fini`
/// nothing else may write it, and anything reading it concurrently (another
/// process) uses 8-byte atomic loads. NRT_INVALID for bad arguments (nothing
/// written). Any thread, once per memory.
///
/// # Safety
/// `mem` is valid for `len` bytes until `xunds_ring_fini` returns; the out
/// pointers are valid for writes.
#[no_mangle]
pub unsafe extern "C" fn xunds_ring_init(
    mem: *mut c_void,
    len: usize,
    xu_id: u16,
    capacity: u64,
    ring: *mut *mut xunds_ring_t,
    producer: *mut *mut xunds_producer_t,
    worker: *mut *mut xunds_worker_t,
) -> NRT_STATUS {
    guard(|| {
        if ring.is_null() || producer.is_null() || worker.is_null() {
            return Err(NRT_INVALID);
        }
        // SAFETY: our caller's contract: `mem` is valid for `len` bytes while
        // the ring lives, and only the ring writes it (init_raw checks null,
        // alignment and length).
        let m = unsafe { RingMem::init_raw(mem.cast(), len, XuId(xu_id), capacity, CURSOR_START) }
            .map_err(|e| e.status().0)?;
        let (p, w) = Queue::new(m).split_arc();
        let queue = p.queue().clone();
        let block = boxed(RingBlock {
            ring: xunds_ring_t {
                magic: <xunds_ring_t as crate::status::Checked>::MAGIC,
                queue,
            },
            producer: xunds_producer_t {
                magic: <xunds_producer_t as crate::status::Checked>::MAGIC,
                p,
            },
            worker: xunds_worker_t {
                magic: <xunds_worker_t as crate::status::Checked>::MAGIC,
                w,
            },
        });
        // SAFETY: `block` is a fresh allocation; the field pointers are
        // projections of it. The out pointers are valid (caller contract,
        // null checked above).
        unsafe {
            ring.write(std::ptr::addr_of_mut!((*block).ring));
            producer.write(std::ptr::addr_of_mut!((*block).producer));
            worker.write(std::ptr::addr_of_mut!((*block).worker));
        }
        Ok(())
    })
}

/// Release the ring's handles and give its memory back to the caller. One
/// call, after the producer and worker threads are done with their handles
/// and no other call on the ring runs. Items still in flight are not
/// completed: their `exec_info` and status words stay the caller's, never
/// written again.
///
/// # Safety
/// `ring` came from `xunds_ring_init` and is released once.
#[no_mangle]
pub unsafe extern "C" fn xunds_ring_fini(ring: *mut xunds_ring_t) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        unsafe { retire(ring) }?;
        // The ring is the block's first field (`repr(C)`), and its pointer
        // was projected from the block's, so it is the block's pointer.
        let block = ring.cast::<RingBlock>();
        // SAFETY: `block` is the `RingBlock` `xunds_ring_init` allocated;
        // clear the other two magics so a stray use fails its check, then
        // free the whole block (the ring's magic is already clear).
        unsafe {
            (*block).producer.magic = 0;
            (*block).worker.magic = 0;
            drop(Box::from_raw(block));
        }
        Ok(())
    })
}

/// Producer thread. Write the next slot (seq_id, `exec_status` = `status`,
/// `mark_comp_efd` = -1, `exec_info`) and publish `scheduled_tail`.
/// `*status` is set to XUNDS_STATUS_PENDING here and written by the worker
/// at pop; it must stay valid, and unread, until the handle is observed
/// complete (`xunds_ring_is_completed`, a wait, the completion fd).
/// `exec_info` is the caller's and travels untouched to the worker.
/// NRT_QUEUE_FULL (nothing changed, `*status` untouched); NRT_FAILURE at the
/// 48-bit cursor limit or when a stray write broke the cursors.
///
/// # Safety
/// `status` is valid for 4-byte aligned reads and writes until completion.
#[no_mangle]
pub unsafe extern "C" fn xunds_producer_submit(
    p: *mut xunds_producer_t,
    exec_info: *mut c_void,
    status: *mut NRT_STATUS,
    seq_out: *mut u64,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the header's contract: a live producer, one thread.
        let p = unsafe { handle_mut(p) }?;
        let cell = NonNull::new(status.cast::<StatusCell>())
            .filter(|c| c.as_ptr().is_aligned())
            .ok_or(NRT_INVALID)?;
        if seq_out.is_null() {
            return Err(NRT_INVALID);
        }
        let seq =
            p.p.submit(exec_info as usize as u64, Some(CallerStatus(cell)))
                .map_err(|r| r.error.status().0)?;
        // Pending only once accepted (a refusal writes nothing). No worker
        // can write it yet: the slot reaches the worker only through a
        // trigger, on this thread, whose Release publishes this store.
        // SAFETY: valid and aligned (checked above) by the caller's contract.
        unsafe { &*cell.as_ptr() }.reset();
        // SAFETY: non-null (checked above), valid by contract.
        unsafe { out(seq_out, seq.0) }
    })
}

/// Producer thread. Release the oldest submitted, untriggered slot to the
/// worker (publish `scheduled_head`); `*seq_out` is its seq_id.
/// NRT_QUEUE_EMPTY when everything submitted is triggered.
///
/// # Safety
/// `p` is a live producer; `seq_out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn xunds_producer_trigger(
    p: *mut xunds_producer_t,
    seq_out: *mut u64,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the header's contract: a live producer, one thread.
        let p = unsafe { handle_mut(p) }?;
        if seq_out.is_null() {
            return Err(NRT_INVALID);
        }
        let seq = p.p.trigger_next().map_err(|e| match e {
            TriggerError::NothingToTrigger => NRT_QUEUE_EMPTY,
            TriggerError::Corrupted { .. } => NRT_FAILURE,
        })?;
        // SAFETY: checked non-null; valid by contract.
        unsafe { out(seq_out, seq.0) }
    })
}

fn pop_error(e: PopError) -> NRT_STATUS {
    match e {
        PopError::Empty => NRT_QUEUE_EMPTY,
        PopError::Mismatch(_) => NRT_FAILURE,
    }
}

/// Worker thread. The triggered slot at `exec_head`, without taking it:
/// its seq_id and `exec_info`. NRT_QUEUE_EMPTY; NRT_FAILURE when the slot
/// fails the seq_id check (see `xunds_worker_discard`).
///
/// # Safety
/// `w` is a live worker; the out pointers are valid for writes.
#[no_mangle]
pub unsafe extern "C" fn xunds_worker_peek(
    w: *mut xunds_worker_t,
    seq_out: *mut u64,
    exec_info_out: *mut *mut c_void,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the header's contract: a live worker, one thread.
        let w = unsafe { handle_mut(w) }?;
        if seq_out.is_null() || exec_info_out.is_null() {
            return Err(NRT_INVALID);
        }
        let v = w.w.peek().map_err(pop_error)?;
        let (seq, info) = (v.seq.0, v.exec_info as usize as *mut c_void);
        // SAFETY: checked non-null; valid by contract.
        unsafe {
            out(seq_out, seq)?;
            out(exec_info_out, info)
        }
    })
}

/// Worker thread. Complete the slot at `exec_head`: write `status` through
/// its status word, capture its fields, publish `exec_head`, signal an
/// installed eventfd. Hands back the seq_id and the `exec_info` the producer
/// gave (the worker now owns what it points at). NRT_QUEUE_EMPTY;
/// NRT_FAILURE when the slot fails the seq_id check (nothing moved), or
/// when it was completed but the eventfd write failed (the out pointers are
/// written then too).
///
/// # Safety
/// `w` is a live worker; the out pointers are null or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn xunds_worker_pop(
    w: *mut xunds_worker_t,
    status: NRT_STATUS,
    seq_out: *mut u64,
    exec_info_out: *mut *mut c_void,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the header's contract: a live worker, one thread.
        let w = unsafe { handle_mut(w) }?;
        if seq_out.is_null() || exec_info_out.is_null() {
            return Err(NRT_INVALID);
        }
        let popped = w.w.pop(NrtStatus(status)).map_err(pop_error)?;
        // SAFETY: checked non-null; valid by contract.
        unsafe {
            out(seq_out, popped.seq.0)?;
            out(exec_info_out, popped.item as usize as *mut c_void)?;
        }
        match popped.status() {
            s if s.is_success() => Ok(()),
            s => Err(s.0),
        }
    })
}

/// Worker thread. Step over a slot whose seq_id was overwritten, trusting
/// none of its words (its status word is not written, its `exec_info` not
/// returned); `*seq_out` is the seq_id the cursor names. NRT_QUEUE_EMPTY;
/// NRT_INVALID when the slot is intact (pop it instead).
///
/// # Safety
/// `w` is a live worker; `seq_out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn xunds_worker_discard(
    w: *mut xunds_worker_t,
    seq_out: *mut u64,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the header's contract: a live worker, one thread.
        let w = unsafe { handle_mut(w) }?;
        if seq_out.is_null() {
            return Err(NRT_INVALID);
        }
        let seq = w.w.discard().map_err(|e| match e {
            xunds_core::ring::DiscardError::Empty => NRT_QUEUE_EMPTY,
            xunds_core::ring::DiscardError::Intact { .. } => NRT_INVALID,
        })?;
        // SAFETY: checked non-null; valid by contract.
        unsafe { out(seq_out, seq.0) }
    })
}

/// Any thread. Whether `seq` is at or below `last_completed` of this ring
/// (docs/abi.md §1.8); after `true` its status word may be read.
/// NRT_INVALID_HANDLE for another XU's seq_id.
///
/// # Safety
/// `r` is a live ring; `done` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn xunds_ring_is_completed(
    r: *const xunds_ring_t,
    seq: u64,
    done: *mut bool,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the header's contract: a live ring.
        let r = unsafe { handle(r) }?;
        let d = r.queue.is_completed(SeqId(seq)).map_err(|e| e.status().0)?;
        // SAFETY: valid by contract (null refused by `out`).
        unsafe { out(done, d) }
    })
}

/// Any thread. `((exec_head - 1) & 0xFFFFFFFFFFFF) | xu_id << 48`.
///
/// # Safety
/// `r` is a live ring; `seq_out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn xunds_ring_last_completed(
    r: *const xunds_ring_t,
    seq_out: *mut u64,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the header's contract: a live ring.
        let r = unsafe { handle(r) }?;
        // SAFETY: valid by contract (null refused by `out`).
        unsafe { out(seq_out, r.queue.last_completed().0) }
    })
}

/// Any thread. Submitted and not yet completed (`scheduled_tail -
/// exec_head`).
///
/// # Safety
/// `r` is a live ring; `n_out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn xunds_ring_in_flight(
    r: *const xunds_ring_t,
    n_out: *mut u64,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the header's contract: a live ring.
        let r = unsafe { handle(r) }?;
        // SAFETY: valid by contract (null refused by `out`).
        unsafe { out(n_out, r.queue.in_flight()) }
    })
}

/// The caller's eventfd as an owned `EventFd` on a duplicate of it (the
/// caller keeps and closes its own).
pub(crate) fn dup_event(efd: i32) -> Result<EventFd, NRT_STATUS> {
    let dup = xunds_core::hal::eventfd::dup_cloexec(efd).map_err(|_| NRT_INVALID)?;
    // SAFETY: `dup` is a fresh descriptor nobody else owns.
    Ok(EventFd::from(unsafe { OwnedFd::from_raw_fd(dup) }))
}

/// `true` when `a` says the handle had completed.
pub(crate) fn already(a: Armed) -> bool {
    a == Armed::AlreadyComplete
}

/// std. Any thread. Completion by fd: install a duplicate of the caller's
/// eventfd `efd` for `seq`; the worker writes 1 to it and closes the
/// duplicate at pop. The caller keeps, reads and closes its own `efd`; one
/// eventfd may be armed for many handles (its counter adds up). `*already`
/// is true (nothing installed, no signal will come) when `seq` had
/// completed. NRT_INVALID for a second waiter on the same handle or a bad
/// fd; NRT_INVALID_HANDLE for another XU's or a future seq_id.
///
/// # Safety
/// `r` is a live ring; `already_out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn xunds_ring_arm(
    r: *const xunds_ring_t,
    seq: u64,
    efd: i32,
    already_out: *mut bool,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the header's contract: a live ring.
        let r = unsafe { handle(r) }?;
        if already_out.is_null() {
            return Err(NRT_INVALID);
        }
        let ev = dup_event(efd)?;
        let a = r.queue.arm(SeqId(seq), &ev).map_err(|e| e.status().0)?;
        // SAFETY: checked non-null; valid by contract.
        unsafe { out(already_out, already(a)) }
    })
}

/// std. Any thread. Block until `seq` completes (on an eventfd of the
/// ring's pool), at most `timeout_ms`: NRT_SUCCESS, or NRT_TIMEOUT.
/// NRT_INVALID_HANDLE for another XU's or a future seq_id.
///
/// # Safety
/// `r` is a live ring.
#[no_mangle]
pub unsafe extern "C" fn xunds_ring_wait(
    r: *const xunds_ring_t,
    seq: u64,
    timeout_ms: u32,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the header's contract: a live ring.
        let r = unsafe { handle(r) }?;
        let t = Duration::from_millis(u64::from(timeout_ms));
        match r.queue.wait(SeqId(seq), WaitMode::Block, t) {
            Ok(Waited::Completed { .. }) => Ok(()),
            Ok(_) => Err(NRT_TIMEOUT),
            Err(e) => Err(e.status().0),
        }
    })
}

const _: () =
    assert!(core::mem::size_of::<StatusCell>() == 4 && core::mem::align_of::<StatusCell>() == 4);
