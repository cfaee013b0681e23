//! The XU ring protocol (docs/abi.md §1.2, §1.4, §1.8, §1.9), one suite run against both
//! storages: heap atomics and the byte-exact mapped header + slot array.

use crate::ring_common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use ring_common::{slot_moves, Backend, Mapped};
use xunds::hal::eventfd::{EventFd, Wait};
use xunds::ring::waiter::{eventfd_factory, WaitableFactory};
use xunds::ring::{
    Armed, CompletionSink, EventFdSink, ForeignXu, InitError, PopError, QueueConfig, Signal,
    StatusCell, SubmitError, TriggerError, WaitError, WaitMode, Waitable, Waited,
};
use xunds::wire::exec_slot;
use xunds::wire::seq_id::{SeqId, XuId};
use xunds::wire::status::NrtStatus;
use xunds::wire::xu_queue::{self, CURSOR_LIMIT};

const XU: XuId = XuId::new(2, 1, 3);

fn cfg(cap: u64) -> QueueConfig {
    QueueConfig::new(XU, cap).recheck(Duration::from_millis(5))
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

fn slot_off(i: usize) -> usize {
    xu_queue::SIZE + i * exec_slot::SIZE
}

both!(
    cursors_start_at_one_and_seq_ids_pack,
    fifo_submit_trigger_peek_pop,
    slot_body_bytes_after_submit,
    queue_full_changes_no_byte,
    trigger_and_peek_boundaries,
    cursor_limit_is_an_error_not_a_wrap,
    foreign_xu_rejected_for_all_65536_ids,
    status_written_before_completion,
    waiter_caller_owned_fd_across_threads,
    waiter_pooled_fd_and_reuse,
    waiter_modes_poll_and_already_complete,
    waiter_without_deadline,
    waiter_timeout_uninstalls,
    blocking_wait_counts_its_wakeups,
    failed_signal_is_reported_and_loses_nothing,
    arm_saturated_eventfd_fails_with_seed_message,
    bursts_publish_once_and_are_all_or_nothing,
    non_power_of_two_capacity,
    every_cursor_move_is_a_row_of_the_slot_machine,
    drop_returns_in_flight_items,
    threaded_fifo_with_waiters,
);

/// docs/abi.md §1.2 (cursors start at 1), docs/abi.md §1.4 (seq_id = cursor | xu << 48), docs/abi.md §1.8
/// (last_completed = (exec_head - 1) | xu << 48).
fn cursors_start_at_one_and_seq_ids_pack<B: Backend>() {
    let (mut p, mut w, bytes) = B::make::<u64>(cfg(4));
    let q = p.queue().clone();
    assert_eq!(q.cursors(), (1, 1, 1));
    let b = bytes();
    for off in [
        xu_queue::off::EXEC_HEAD,
        xu_queue::off::SCHEDULED_HEAD,
        xu_queue::off::SCHEDULED_TAIL,
    ] {
        assert_eq!(u64_at(&b, off), 1, "{} cursor at {off:#x}", B::NAME);
    }
    assert_eq!(q.last_completed(), SeqId(0x0312_0000_0000_0000));
    let s = p.submit(7, None).unwrap();
    assert_eq!(s.0, 0x0312_0000_0000_0001);
    assert_eq!(s.vnc_id(), 3);
    assert_eq!(q.in_flight(), 1);
    assert!(!q.is_completed(s).unwrap());
    p.trigger_next().unwrap();
    let popped = w.pop(NrtStatus::SUCCESS).unwrap();
    assert_eq!(
        (popped.seq, popped.item, popped.signal),
        (s, 7, Signal::NoWaiter)
    );
    assert_eq!(q.last_completed(), s);
    assert!(q.is_completed(s).unwrap());
    assert_eq!(q.in_flight(), 0);
}

fn fifo_submit_trigger_peek_pop<B: Backend>() {
    let (mut p, mut w, _) = B::make::<u64>(cfg(4));
    let mut seqs = Vec::new();
    for i in 0..4 {
        seqs.push(p.submit(100 + i, None).unwrap());
        p.trigger_next().unwrap();
    }
    for (i, s) in seqs.iter().enumerate() {
        let v = w.peek().unwrap();
        assert_eq!((v.seq, *v), (*s, 100 + i as u64));
        let popped = w.pop(NrtStatus::SUCCESS).unwrap();
        assert_eq!(popped.seq, *s);
        assert_eq!(popped.item, 100 + i as u64);
    }
    assert!(matches!(w.pop(NrtStatus::SUCCESS), Err(PopError::Empty)));
    assert!(matches!(w.peek(), Err(PopError::Empty)));
}

/// docs/abi.md §1.2/§1.3: the 32-byte slot, mark_comp_efd = -1 at submit,
/// efd_from_pool = false, exec_status = the cell's address, exec_info = the
/// item word; header xu_id/capacity; padding bytes stay zero.
fn slot_body_bytes_after_submit<B: Backend>() {
    let (mut p, _w, bytes) = B::make::<u64>(cfg(2));
    let cell = Arc::new(StatusCell::new());
    let addr = Arc::as_ptr(&cell) as u64;
    let s = p.submit(0xABCD_EF01_2345_6789, Some(cell.clone())).unwrap();
    let b = bytes();
    assert_eq!(&b[0..2], &XU.0.to_le_bytes());
    assert_eq!(u64_at(&b, xu_queue::off::CAPACITY), 2);
    assert_ne!(u64_at(&b, xu_queue::off::BUFFER), 0);
    assert_eq!(u64_at(&b, xu_queue::off::SCHEDULED_TAIL), 2);
    assert_eq!(u64_at(&b, xu_queue::off::SCHEDULED_HEAD), 1);
    let o = slot_off(1); // cursor 1 % 2
    assert_eq!(u64_at(&b, o + exec_slot::off::SEQ_ID), s.0);
    assert_eq!(u64_at(&b, o + exec_slot::off::EXEC_STATUS), addr);
    assert_eq!(&b[o + 0x10..o + 0x14], &[0xFF; 4], "mark_comp_efd = -1");
    assert_eq!(b[o + exec_slot::off::EFD_FROM_POOL], 0);
    assert_eq!(&b[o + 0x15..o + 0x18], &[0, 0, 0], "padding");
    assert_eq!(
        u64_at(&b, o + exec_slot::off::EXEC_INFO),
        0xABCD_EF01_2345_6789
    );
    // Header padding is never written.
    for r in [0x02..0x08, 0x18..0x40, 0x48..0x80, 0x88..0xC0, 0xC8..0x100] {
        assert!(b[r.clone()].iter().all(|&x| x == 0), "{r:?}");
    }
}

/// Mapped only: the header's `buffer` is the slot array's address and the
/// padding keeps whatever was there before init (never written).
#[test]
fn mapped_header_buffer_and_untouched_padding() {
    let cap = 3;
    let region = Mapped::region(cap);
    region.copy_in(0, &[0xAA; xu_queue::SIZE]).unwrap();
    // SAFETY: fresh private mapping; the test only reads it.
    let (_p, _w) =
        unsafe { xunds::ring::XuQueue::<u64>::mapped(region.clone(), cfg(cap)) }.unwrap();
    let mut b = vec![0u8; xu_queue::SIZE];
    region.copy_out(0, &mut b).unwrap();
    let base = region.ptr_at(0, 1, 1).unwrap() as u64;
    assert_eq!(
        u64_at(&b, xu_queue::off::BUFFER),
        base + xu_queue::SIZE as u64
    );
    for r in [0x02..0x08, 0x18..0x40, 0x48..0x80, 0x88..0xC0, 0xC8..0x100] {
        assert!(b[r.clone()].iter().all(|&x| x == 0xAA), "{r:?}");
    }
    // A region too small is an error value. (A region is a whole, page
    // aligned mapping; misaligned memory is refused at `RingMem::init_raw`.)
    let small = Mapped::region(1);
    // SAFETY: as above.
    let e = unsafe { xunds::ring::XuQueue::<u64>::mapped(small, cfg(2)) }.unwrap_err();
    assert!(matches!(e, InitError::Mem(_)));
}

/// docs/abi.md §1.9: the full check comes before any store, so a refusal changes
/// no byte of header or slots, and the item comes back.
fn queue_full_changes_no_byte<B: Backend>() {
    let (mut p, mut w, bytes) = B::make::<Box<u32>>(cfg(2));
    let cell = Arc::new(StatusCell::new());
    p.submit(Box::new(1), Some(cell.clone())).unwrap();
    p.submit(Box::new(2), None).unwrap();
    p.trigger_next().unwrap();
    let before = bytes();
    let e = p.submit(Box::new(3), Some(cell.clone())).unwrap_err();
    assert_eq!(e.error, SubmitError::Full);
    assert_eq!(e.error.status(), NrtStatus::QUEUE_FULL);
    assert_eq!(*e.item, 3);
    // The same cell comes back, with the strong count the submit took.
    assert!(Arc::ptr_eq(e.status.as_ref().unwrap(), &cell));
    assert_eq!(Arc::strong_count(&cell), 3);
    assert_eq!(bytes(), before);
    assert!(p.submit_burst(1, |_| unreachable!()).is_err());
    assert_eq!(bytes(), before);
    assert!(!p.has_space());
    // Space comes back only after a pop.
    let popped = w.pop(NrtStatus::SUCCESS).unwrap();
    assert_eq!(*popped.item, 1);
    assert!(p.has_space());
    p.submit(Box::new(3), None).unwrap();
    drop(e);
    assert_eq!(Arc::strong_count(&cell), 1);
}

fn trigger_and_peek_boundaries<B: Backend>() {
    let (mut p, mut w, _) = B::make::<u64>(cfg(4));
    assert_eq!(
        p.trigger_next().unwrap_err(),
        TriggerError::NothingToTrigger
    );
    p.submit(1, None).unwrap();
    // Submitted but not triggered: the worker sees nothing (docs/abi.md §1.9).
    assert!(matches!(w.peek(), Err(PopError::Empty)));
    assert_eq!(
        p.trigger_burst(2).unwrap_err(),
        TriggerError::NothingToTrigger
    );
    assert_eq!(
        p.trigger_burst(0).unwrap_err(),
        TriggerError::NothingToTrigger
    );
    p.trigger_next().unwrap();
    assert!(w.peek().is_ok());
    assert_eq!(
        p.trigger_next().unwrap_err(),
        TriggerError::NothingToTrigger
    );
}

/// docs/abi.md §1.2 / §1.9 (`queue.c:0x5C`): scheduled_tail stays below
/// 0xFFFFFFFFFFFE; the submit that would reach it is refused, no byte
/// changes, and no seq_id ever carries bits into the xu_id.
fn cursor_limit_is_an_error_not_a_wrap<B: Backend>() {
    let start = CURSOR_LIMIT - 3;
    let (mut p, mut w, bytes) = B::make::<u64>(cfg(4).start_at(start));
    let q = p.queue().clone();
    let a = p.submit(1, None).unwrap();
    let b = p.submit(2, None).unwrap();
    assert_eq!(a.seq_num(), 0xFFFF_FFFF_FFFB);
    assert_eq!(b.seq_num(), 0xFFFF_FFFF_FFFC);
    assert_eq!(a.xu_id(), XU);
    let before = bytes();
    let e = p.submit(3, None).unwrap_err();
    assert_eq!(
        e.error,
        SubmitError::CursorExhausted {
            tail: CURSOR_LIMIT - 1
        }
    );
    assert_eq!(e.error.status(), NrtStatus::FAILURE);
    assert_eq!((e.item, e.status.is_none()), (3, true));
    let cell = Arc::new(StatusCell::new());
    let e = p.submit(4, Some(cell.clone())).unwrap_err();
    assert!(Arc::ptr_eq(e.status.as_ref().unwrap(), &cell));
    drop(e);
    assert_eq!(Arc::strong_count(&cell), 1);
    assert_eq!(bytes(), before);
    p.trigger_burst(2).unwrap();
    assert_eq!(w.pop(NrtStatus::SUCCESS).unwrap().seq, a);
    assert_eq!(w.pop(NrtStatus::SUCCESS).unwrap().seq, b);
    assert_eq!(q.last_completed(), b);
    assert_eq!(q.last_completed().xu_id(), XU);
    // A start at or above the limit, or 0, is refused.
    assert!(B::make_checked(cfg(4).start_at(CURSOR_LIMIT)).is_err());
    assert!(B::make_checked(cfg(4).start_at(0)).is_err());
    assert!(B::make_checked(cfg(0)).is_err());
}

trait MakeChecked {
    fn make_checked(c: QueueConfig) -> Result<(), InitError>;
}
impl<B: Backend> MakeChecked for B {
    fn make_checked(c: QueueConfig) -> Result<(), InitError> {
        match B::NAME {
            "owned" => xunds::ring::XuQueue::<u64>::owned(c).map(|_| ()),
            _ => {
                let r = Mapped::region(c.capacity.clamp(1, 64));
                // SAFETY: fresh private mapping.
                unsafe { xunds::ring::XuQueue::<u64>::mapped(r, c) }.map(|_| ())
            }
        }
    }
}

/// docs/abi.md §1.4: every op that takes a seq_id checks seq.xu_id ==
/// xq->xu_id before indexing the buffer. All 65,535 foreign ids are refused
/// by is_completed, wait (which would install an fd into the slot) and arm,
/// and no byte changes.
fn foreign_xu_rejected_for_all_65536_ids<B: Backend>() {
    let (mut p, _w, bytes) = B::make::<u64>(cfg(2));
    let q = p.queue().clone();
    let s = p.submit(9, None).unwrap();
    p.trigger_next().unwrap();
    let ev = EventFd::new().unwrap();
    let before = bytes();
    let mut refused = 0u32;
    for xu in 0..=u16::MAX {
        let foreign = SeqId::from_cursor(s.seq_num(), XuId(xu));
        if xu == XU.0 {
            assert!(!q.is_completed(foreign).unwrap());
            continue;
        }
        let want = ForeignXu {
            seq: foreign,
            ours: XU,
        };
        assert_eq!(q.is_completed(foreign), Err(want));
        assert_eq!(
            q.wait(foreign, WaitMode::Block, Duration::from_secs(5)),
            Err(WaitError::Foreign(want))
        );
        assert_eq!(q.arm(foreign, &ev), Err(WaitError::Foreign(want)));
        refused += 1;
    }
    assert_eq!(refused, 65_535);
    assert_eq!(bytes(), before);
    assert_eq!(
        WaitError::Foreign(ForeignXu { seq: s, ours: XU }).status(),
        NrtStatus::INVALID_HANDLE
    );
    // Not yet issued: refused too.
    let future = SeqId::from_cursor(s.seq_num() + 1, XU);
    assert_eq!(
        q.wait(future, WaitMode::Poll, Duration::ZERO),
        Err(WaitError::NotSubmitted { seq: future })
    );
}

/// docs/abi.md §1.8: the status travels through the caller's cell and is
/// written before completion is observable.
fn status_written_before_completion<B: Backend>() {
    let (mut p, mut w, _) = B::make::<u64>(cfg(2));
    let q = p.queue().clone();
    let cell = Arc::new(StatusCell::new());
    let s = p.submit(1, Some(cell.clone())).unwrap();
    assert_eq!(Arc::strong_count(&cell), 2, "the slot owns one count");
    p.trigger_next().unwrap();
    assert_eq!(cell.get(), None);
    let popped = w.pop(NrtStatus::EXEC_COMPLETED_WITH_ERR).unwrap();
    assert_eq!(popped.status(), NrtStatus::SUCCESS);
    assert!(q.is_completed(s).unwrap());
    assert_eq!(cell.get(), Some(NrtStatus::EXEC_COMPLETED_WITH_ERR));
    assert_eq!(Arc::strong_count(&cell), 1, "pop gave the count back");
    cell.reset();
    assert_eq!(cell.get(), None);
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Caller-owned eventfd: the waiter installs a dup, the worker signals and
/// closes the dup; the caller's fd stays open and receives the signal.
fn waiter_caller_owned_fd_across_threads<B: Backend>() {
    let (mut p, mut w, _) = B::make::<u64>(cfg(2));
    let q = p.queue().clone();
    let s = p.submit(5, None).unwrap();
    p.trigger_next().unwrap();
    let ev = Arc::new(EventFd::new().unwrap());
    let (q2, ev2) = (q.clone(), ev.clone());
    let waiter = std::thread::spawn(move || {
        q2.wait_on(s, WaitMode::Block, ev2.as_ref(), Duration::from_secs(10))
    });
    // Wait until the install is visible in the slot, then pop.
    let mut installed = false;
    for _ in 0..10_000 {
        if p.snapshot()[slot_off(1) + 0x10..slot_off(1) + 0x14] != [0xFF; 4] {
            installed = true;
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    assert!(installed, "waiter installed its dup");
    let popped = w.pop(NrtStatus::SUCCESS).unwrap();
    let Signal::Signalled { fd, pooled } = popped.signal else {
        panic!("expected a signal, got {:?}", popped.signal)
    };
    assert!(!pooled);
    assert_ne!(fd, ev.raw(), "the worker got a dup, never the caller's fd");
    assert_eq!(waiter.join().unwrap(), Ok(Waited::Completed { wakeups: 1 }));
    // The dup is closed (by the worker); the caller's fd is still good.
    // SAFETY: F_GETFD on a number is harmless; -1/EBADF means closed.
    assert_eq!(unsafe { libc::fcntl(fd, libc::F_GETFD) }, -1);
    ev.signal(1).unwrap();
    assert_eq!(ev.try_read().unwrap(), 1);
}

/// Pooled eventfds: efd_from_pool = true, the worker never closes them, the
/// waiter returns them to the pool after consuming the signal.
fn waiter_pooled_fd_and_reuse<B: Backend>() {
    let (mut p, mut w, bytes) = B::make::<u64>(cfg(2));
    let q = p.queue().clone();
    for round in 0..3 {
        let s = p.submit(round, None).unwrap();
        p.trigger_next().unwrap();
        let q2 = q.clone();
        let waiter =
            std::thread::spawn(move || q2.wait(s, WaitMode::Block, Duration::from_secs(10)));
        let o = slot_off((s.seq_num() % 2) as usize);
        while bytes()[o + exec_slot::off::EFD_FROM_POOL] != 1 {
            std::thread::sleep(Duration::from_micros(200));
        }
        let popped = w.pop(NrtStatus::SUCCESS).unwrap();
        assert!(matches!(
            popped.signal,
            Signal::Signalled { pooled: true, .. }
        ));
        assert_eq!(waiter.join().unwrap(), Ok(Waited::Completed { wakeups: 1 }));
        assert_eq!(q.pool_counts(), (1, 0), "round {round}: one event, reused");
    }
}

/// A wait with no deadline (`Duration::MAX`) in each blocking mode: no
/// overflow computing it, and the completion ends it.
fn waiter_without_deadline<B: Backend>() {
    let (mut p, mut w, _) = B::make::<u64>(cfg(2));
    let q = p.queue().clone();
    for mode in [
        WaitMode::Block,
        WaitMode::SpinThenBlock {
            max: Duration::from_micros(50),
        },
        WaitMode::SpinThenBlock { max: Duration::MAX },
    ] {
        let s = p.submit(1, None).unwrap();
        p.trigger_next().unwrap();
        let q2 = q.clone();
        let waiter = std::thread::spawn(move || q2.wait(s, mode, Duration::MAX));
        std::thread::sleep(Duration::from_millis(5));
        w.pop(NrtStatus::SUCCESS).unwrap();
        assert!(
            matches!(waiter.join().unwrap(), Ok(Waited::Completed { .. })),
            "{mode:?}"
        );
    }
}

fn waiter_modes_poll_and_already_complete<B: Backend>() {
    let (mut p, mut w, bytes) = B::make::<u64>(cfg(2));
    let q = p.queue().clone();
    let s = p.submit(1, None).unwrap();
    p.trigger_next().unwrap();
    assert_eq!(
        q.wait(s, WaitMode::Poll, Duration::ZERO),
        Ok(Waited::Pending)
    );
    let before = bytes();
    assert_eq!(
        q.wait(
            s,
            WaitMode::SpinThenBlock {
                max: Duration::from_micros(100)
            },
            Duration::ZERO
        ),
        Ok(Waited::TimedOut)
    );
    assert_eq!(bytes(), before, "a timed-out wait leaves no install behind");
    // A spin budget longer than the timeout ends with the timeout.
    let t = std::time::Instant::now();
    assert_eq!(
        q.wait(
            s,
            WaitMode::SpinThenBlock {
                max: Duration::from_secs(60)
            },
            Duration::from_millis(20)
        ),
        Ok(Waited::TimedOut)
    );
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "the spin ran past the timeout: {:?}",
        t.elapsed()
    );
    assert_eq!(bytes(), before);
    w.pop(NrtStatus::SUCCESS).unwrap();
    let fds = open_fds();
    for mode in [
        WaitMode::Poll,
        WaitMode::Block,
        WaitMode::SpinThenBlock {
            max: Duration::from_micros(10),
        },
    ] {
        assert_eq!(
            q.wait(s, mode, Duration::from_secs(1)),
            Ok(Waited::Completed { wakeups: 0 })
        );
    }
    let ev = EventFd::new().unwrap();
    assert_eq!(q.arm(s, &ev), Ok(Armed::AlreadyComplete));
    assert_eq!(open_fds(), fds + 1, "no dup leaked");
}

/// A bounded wait that times out removes its install under the lock, closes
/// its dup, and the worker later finds no waiter.
fn waiter_timeout_uninstalls<B: Backend>() {
    let (mut p, mut w, bytes) = B::make::<u64>(cfg(2));
    let q = p.queue().clone();
    let s = p.submit(1, None).unwrap();
    p.trigger_next().unwrap();
    let ev = EventFd::new().unwrap();
    let before = bytes();
    let fds = open_fds();
    assert_eq!(
        q.wait_on(s, WaitMode::Block, &ev, Duration::from_millis(20)),
        Ok(Waited::TimedOut)
    );
    assert_eq!(bytes(), before);
    assert_eq!(open_fds(), fds, "dup closed by the waiter");
    assert_eq!(
        q.wait(s, WaitMode::Block, Duration::from_millis(20)),
        Ok(Waited::TimedOut)
    );
    assert_eq!(q.pool_counts(), (1, 0));
    let popped = w.pop(NrtStatus::SUCCESS).unwrap();
    assert_eq!(popped.signal, Signal::NoWaiter);
    assert_eq!(ev.try_read().unwrap(), 0);
}

/// The script a [`Scripted`] event follows: its first block tells the test
/// it has begun and holds until the test (having popped) lets it go, then
/// either times out (the worker's signal stays pending in the eventfd) or
/// reads the signal; every later block is the eventfd's own.
struct Script {
    entered: Mutex<mpsc::Sender<()>>,
    go: Mutex<mpsc::Receiver<()>>,
    first_times_out: bool,
    /// How many blocks (`wait` calls) the waiter made.
    waits: Mutex<u32>,
}

/// A real eventfd (the worker's write lands in it) whose waits follow a
/// [`Script`].
struct Scripted {
    ev: EventFd,
    script: Arc<Script>,
}

impl Waitable for Scripted {
    fn raw_handle(&self) -> i32 {
        Waitable::raw_handle(&self.ev)
    }
    fn dup_handle(&self) -> std::io::Result<i32> {
        Waitable::dup_handle(&self.ev)
    }
    fn close_handle(&self, fd: i32) {
        Waitable::close_handle(&self.ev, fd)
    }
    fn wait(&self, timeout: Duration) -> std::io::Result<Wait> {
        let n = {
            let mut waits = self.script.waits.lock().unwrap();
            *waits += 1;
            *waits
        };
        if n == 1 {
            self.script.entered.lock().unwrap().send(()).unwrap();
            let go = self.script.go.lock().unwrap();
            go.recv_timeout(Duration::from_secs(10))
                .expect("the test lets the first block go");
            if self.script.first_times_out {
                return Ok(Wait::TimedOut);
            }
        }
        Waitable::wait(&self.ev, timeout)
    }
}

/// docs/abi.md §1.9 consumer: a blocking waiter reports how many eventfd
/// signals it consumed, and blocks no more than it needs to. Its first block
/// is held until the worker has popped (and signalled), then:
///
/// - it reads the signal: one wake-up, one block;
/// - it times out with the signal still pending, so the waiter sees
///   completion first and gives the signal one more re-check interval: it
///   consumes it there, one wake-up, two blocks.
///
/// Either way the one signal is consumed, so a pooled event goes back to the
/// free list (not retired). Caller-owned and pooled events alike. Mutants in
/// `XuQueue::block`: either wake-up `+=` -> `-=` or `*=`, `wakeups == 0` ->
/// `!=`.
fn blocking_wait_counts_its_wakeups<B: Backend>() {
    for first_times_out in [false, true] {
        for pooled in [true, false] {
            let ctx = format!("first block times out: {first_times_out}, pooled: {pooled}");
            let (entered_tx, entered) = mpsc::channel();
            let (go, go_rx) = mpsc::channel();
            let script = Arc::new(Script {
                entered: Mutex::new(entered_tx),
                go: Mutex::new(go_rx),
                first_times_out,
                waits: Mutex::new(0),
            });
            let for_pool = script.clone();
            let factory: WaitableFactory = Arc::new(move || {
                Ok(Box::new(Scripted {
                    ev: EventFd::new()?,
                    script: for_pool.clone(),
                }) as Box<dyn Waitable>)
            });
            let (mut p, mut w, _) = B::make::<u64>(cfg(2).signals(Arc::new(EventFdSink), factory));
            let q = p.queue().clone();
            let s = p.submit(1, None).unwrap();
            p.trigger_next().unwrap();
            let own = Scripted {
                ev: EventFd::new().unwrap(),
                script: script.clone(),
            };
            let q2 = q.clone();
            let waiter = std::thread::spawn(move || {
                let t = Duration::from_secs(10);
                if pooled {
                    q2.wait(s, WaitMode::Block, t)
                } else {
                    q2.wait_on(s, WaitMode::Block, &own, t)
                }
            });
            // The waiter blocks only once its handle is installed.
            entered
                .recv_timeout(Duration::from_secs(10))
                .expect("the waiter blocks");
            let popped = w.pop(NrtStatus::SUCCESS).unwrap();
            assert!(
                matches!(popped.signal, Signal::Signalled { pooled: p, .. } if p == pooled),
                "{ctx}: {:?}",
                popped.signal
            );
            go.send(()).unwrap();
            assert_eq!(
                waiter.join().unwrap(),
                Ok(Waited::Completed { wakeups: 1 }),
                "{ctx}"
            );
            assert_eq!(
                *script.waits.lock().unwrap(),
                if first_times_out { 2 } else { 1 },
                "{ctx}: blocks"
            );
            let free = usize::from(pooled);
            assert_eq!(q.pool_counts(), (free, 0), "{ctx}: nothing retired");
        }
    }
}

/// A sink whose writes fail (fault injection at the worker's `write`).
struct FailingSink {
    closes: AtomicUsize,
}
impl CompletionSink for FailingSink {
    fn signal(&self, _fd: i32) -> Result<(), i32> {
        Err(libc::EIO)
    }
    fn close(&self, fd: i32) {
        self.closes.fetch_add(1, Ordering::SeqCst);
        // SAFETY: the worker owns this dup (waiter module docs).
        unsafe {
            libc::close(fd);
        }
    }
}

/// docs/abi.md §1.9: a failed eventfd write returns NRT_FAILURE with the seed's
/// message, and loses nothing: completion is already published and the
/// waiter's bounded re-check finds it. The pooled event, whose signal never
/// came, is retired (kept open, never reused).
fn failed_signal_is_reported_and_loses_nothing<B: Backend>() {
    let sink = Arc::new(FailingSink {
        closes: AtomicUsize::new(0),
    });
    let c = cfg(2).signals(sink.clone(), eventfd_factory());
    let (mut p, mut w, _) = B::make::<u64>(c);
    let q = p.queue().clone();
    for (round, own) in [(0u64, false), (1, true)] {
        let cell = Arc::new(StatusCell::new());
        let s = p.submit(round, Some(cell.clone())).unwrap();
        p.trigger_next().unwrap();
        let q2 = q.clone();
        let waiter = std::thread::spawn(move || {
            let t = Duration::from_secs(10);
            if own {
                let ev = EventFd::new().unwrap();
                q2.wait_on(s, WaitMode::Block, &ev, t)
            } else {
                q2.wait(s, WaitMode::Block, t)
            }
        });
        let o = slot_off((s.seq_num() % 2) as usize);
        // Poll the waiter's handle word with atomic loads of its own width
        // (`Producer::snapshot`): the waiter stores it atomically, and a
        // plain byte copy of the slot here (volatile on the mapped backend)
        // would race with that store.
        while p.snapshot()[o + 0x10..o + 0x14] == [0xFF; 4] {
            std::thread::sleep(Duration::from_micros(200));
        }
        let popped = w.pop(NrtStatus::SUCCESS).unwrap();
        assert_eq!(popped.status(), NrtStatus::FAILURE);
        let Signal::Failed(e) = popped.signal else {
            panic!("expected a failed signal")
        };
        assert_eq!(
            e.to_string(),
            format!(
                "Failed to signal completion event for request 0x{:x}. errno: {}",
                s.0,
                libc::EIO
            )
        );
        // Nothing lost: completion and status are published.
        assert!(q.is_completed(s).unwrap());
        assert_eq!(cell.get(), Some(NrtStatus::SUCCESS));
        assert_eq!(waiter.join().unwrap(), Ok(Waited::Completed { wakeups: 0 }));
    }
    assert_eq!(
        q.pool_counts(),
        (0, 1),
        "the unsignalled pooled event is retired"
    );
    assert_eq!(
        sink.closes.load(Ordering::SeqCst),
        1,
        "only the dup is closed"
    );
}

/// A real failing write: an eventfd whose counter is saturated refuses the
/// worker's `write` with EAGAIN.
fn arm_saturated_eventfd_fails_with_seed_message<B: Backend>() {
    let (mut p, mut w, _) = B::make::<u64>(cfg(2));
    let q = p.queue().clone();
    let s = p.submit(1, None).unwrap();
    p.trigger_next().unwrap();
    let ev = EventFd::new().unwrap();
    ev.signal(u64::MAX - 1).unwrap(); // the counter's maximum
    assert_eq!(q.arm(s, &ev), Ok(Armed::Installed));
    assert_eq!(
        q.arm(s, &ev),
        Err(WaitError::AlreadyWaiting { seq: s }),
        "one waiter per slot"
    );
    let popped = w.pop(NrtStatus::SUCCESS).unwrap();
    let Signal::Failed(e) = popped.signal else {
        panic!("expected EAGAIN, got {:?}", popped.signal)
    };
    assert_eq!(e.errno, libc::EAGAIN);
    assert!(e
        .to_string()
        .starts_with("Failed to signal completion event for request 0x312"));
    assert!(q.is_completed(s).unwrap());
    assert_eq!(
        ev.wait(Duration::ZERO).unwrap(),
        Wait::Signalled(u64::MAX - 1)
    );
}

fn bursts_publish_once_and_are_all_or_nothing<B: Backend>() {
    let (mut p, mut w, bytes) = B::make::<u64>(cfg(8));
    let q = p.queue().clone();
    let first = p.submit_burst(5, |s| (s.seq_num() * 10, None)).unwrap();
    assert_eq!(first.seq_num(), 1);
    assert_eq!(q.cursors(), (1, 1, 6));
    assert_eq!(p.trigger_burst(3).unwrap().seq_num(), 3);
    assert_eq!(q.cursors(), (1, 4, 6));
    let before = bytes();
    assert_eq!(
        p.submit_burst(4, |_| unreachable!("refused bursts build nothing")),
        Err(SubmitError::Full)
    );
    assert_eq!(bytes(), before);
    let mut got = Vec::new();
    let n = w
        .pop_burst(
            10,
            |_| NrtStatus::SUCCESS,
            |pp| got.push((pp.seq.seq_num(), pp.item)),
        )
        .unwrap();
    assert_eq!(n, 3);
    assert_eq!(got, vec![(1, 10), (2, 20), (3, 30)]);
    assert_eq!(q.cursors(), (4, 4, 6));
    p.trigger_burst(2).unwrap();
    let n = w
        .pop_burst(
            1,
            |_| NrtStatus::SUCCESS,
            |pp| got.push((pp.seq.seq_num(), pp.item)),
        )
        .unwrap();
    assert_eq!(n, 1);
    assert_eq!(w.pop_burst(0, |_| NrtStatus::SUCCESS, |_| {}).unwrap(), 0);
    assert_eq!(w.available(), 1);
    // Every seq_id of a burst is checked before any pop: an overwritten
    // second slot refuses the whole burst, and the intact first stays.
    let s = p.submit(60, None).unwrap();
    p.trigger_next().unwrap();
    q.corrupt_seq_id(s, 0);
    let before = q.cursors();
    let refused = w.pop_burst(
        4,
        |_| NrtStatus::SUCCESS,
        |_| unreachable!("nothing popped"),
    );
    assert_eq!(refused.unwrap_err().expected, s);
    assert_eq!(q.cursors(), before);
}

fn non_power_of_two_capacity<B: Backend>() {
    let (mut p, mut w, _) = B::make::<u64>(cfg(3));
    let mut expect = 1u64;
    for round in 0..20u64 {
        while p.has_space() {
            p.submit(round, None).unwrap();
        }
        p.trigger_burst(p.untriggered()).unwrap();
        while let Ok(pp) = w.pop(NrtStatus::SUCCESS) {
            assert_eq!(pp.seq.seq_num(), expect);
            expect += 1;
        }
    }
    assert_eq!(expect, 61);
}

/// Every cursor move of every operation is a path of the slot machine
/// (`fsm::slot`, the oracle: `ring_common::slot_moves`), and each operation
/// moves exactly its own slots: a submit FREE -> SUBMITTED, a trigger
/// SUBMITTED -> TRIGGERED, a pop TRIGGERED -> DONE -> FREE; a burst each of
/// its slots once and no other; a refusal none.
fn every_cursor_move_is_a_row_of_the_slot_machine<B: Backend>() {
    let (mut p, mut w, _) = B::make::<u64>(cfg(4));
    let q = p.queue().clone();
    let mut at = q.cursors();
    let mut step = |what: &str| {
        let now = q.cursors();
        let moves = slot_moves(at, now);
        at = now;
        let got: Vec<String> = moves
            .iter()
            .map(|(c, e)| format!("{c}:{}", e.join("+")))
            .collect();
        (what.to_string(), got.join(" "))
    };
    let mut log = Vec::new();
    p.submit(1, None).unwrap();
    log.push(step("submit"));
    p.trigger_next().unwrap();
    log.push(step("trigger"));
    w.pop(NrtStatus::SUCCESS).unwrap();
    log.push(step("pop"));
    p.submit_burst(3, |s| (s.seq_num(), None)).unwrap();
    log.push(step("submit_burst"));
    p.trigger_burst(2).unwrap();
    log.push(step("trigger_burst"));
    assert!(p.submit_burst(2, |_| unreachable!()).is_err());
    log.push(step("refused"));
    assert_eq!(w.pop_burst(4, |_| NrtStatus::SUCCESS, |_| {}).unwrap(), 2);
    log.push(step("pop_burst"));
    let want = [
        ("submit", "1:Submit"),
        ("trigger", "1:Trigger"),
        ("pop", "1:Complete+Reclaim"),
        ("submit_burst", "2:Submit 3:Submit 4:Submit"),
        ("trigger_burst", "2:Trigger 3:Trigger"),
        ("refused", ""),
        ("pop_burst", "2:Complete+Reclaim 3:Complete+Reclaim"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(log, want);
}

#[derive(Debug)]
struct Counted(Arc<AtomicUsize>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Items and status counts still in flight when the queue goes away are
/// dropped exactly once; installed dups are closed.
fn drop_returns_in_flight_items<B: Backend>() {
    let drops = Arc::new(AtomicUsize::new(0));
    let cell = Arc::new(StatusCell::new());
    let fds = open_fds();
    let ev = EventFd::new().unwrap();
    {
        let (mut p, mut w, _) = B::make::<Box<Counted>>(cfg(4));
        for _ in 0..3 {
            p.submit(Box::new(Counted(drops.clone())), Some(cell.clone()))
                .unwrap();
        }
        p.trigger_burst(2).unwrap();
        let pp = w.pop(NrtStatus::SUCCESS).unwrap();
        drop(pp);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        let s = SeqId::from_cursor(2, XU);
        assert_eq!(p.queue().arm(s, &ev), Ok(Armed::Installed));
        assert_eq!(open_fds(), fds + 2);
        // The view does not take ownership.
        let v = w.peek().unwrap();
        assert_eq!(v.seq, s);
    }
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    assert_eq!(Arc::strong_count(&cell), 1);
    assert_eq!(open_fds(), fds + 1, "the slot's dup closed on drop");
}

/// Producer thread -> worker thread with a waiter thread, FIFO and exactly once.
fn threaded_fifo_with_waiters<B: Backend>() {
    const N: u64 = 20_000;
    let (mut p, mut w, _) = B::make::<u64>(cfg(8));
    let q = p.queue().clone();
    let (tx, rx) = std::sync::mpsc::channel::<(SeqId, Arc<StatusCell>)>();
    let prod = std::thread::spawn(move || {
        for i in 0..N {
            let cell = Arc::new(StatusCell::new());
            loop {
                match p.submit(i, Some(cell.clone())) {
                    Ok(s) => {
                        if i % 100 == 0 {
                            tx.send((s, cell)).unwrap();
                        }
                        break;
                    }
                    Err(e) => {
                        assert_eq!(e.error, SubmitError::Full);
                        std::thread::yield_now();
                    }
                }
            }
            p.trigger_next().unwrap();
        }
    });
    let waiter = std::thread::spawn(move || {
        let mut n = 0;
        while let Ok((s, cell)) = rx.recv() {
            let mode = if n % 2 == 0 {
                WaitMode::Block
            } else {
                WaitMode::SpinThenBlock {
                    max: Duration::from_micros(50),
                }
            };
            let r = q.wait(s, mode, Duration::from_secs(20)).unwrap();
            assert!(matches!(r, Waited::Completed { .. }), "{r:?}");
            assert_eq!(cell.get(), Some(NrtStatus(s.seq_num() as u32)));
            n += 1;
        }
        n
    });
    let mut next = 0u64;
    while next < N {
        match w.pop(NrtStatus((next + 1) as u32)) {
            Ok(pp) => {
                assert_eq!(pp.item, next);
                assert_eq!(pp.seq.seq_num(), next + 1);
                assert_ne!(pp.status(), NrtStatus::FAILURE);
                next += 1;
            }
            Err(PopError::Empty) => std::thread::yield_now(),
            Err(e) => panic!("{e}"),
        }
    }
    prod.join().unwrap();
    assert_eq!(waiter.join().unwrap(), N / 100);
}
