//! Property tests: random submit / trigger / pop / wait / arm sequences
//! against a `VecDeque` model (SplitMix64, many seeds), on heap and mapped memory.
//!
//! Checked after every step: FIFO order, exactly-once completion (each seq_id
//! pops once, its status cell is written once with the worker's status, an
//! armed eventfd is signalled exactly once), the cursors and queries match the
//! model, every slot's state derived from the cursors moved along the rows
//! of the slot machine (`fsm::slot`, the oracle), every refusal (QUEUE_FULL,
//! cursor limit, nothing to trigger, foreign xu_id, not submitted) leaves
//! every byte of header and slots unchanged (full byte snapshots; atomic
//! word loads for the mapped memory).

use crate::ring_common;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use ring_common::{slot_moves, Backend};
use xunds::hal::eventfd::EventFd;
use xunds::prng::SplitMix64;
use xunds::ring::{
    Armed, ForeignXu, PopError, QueueConfig, Signal, StatusCell, SubmitError, TriggerError,
    WaitError, WaitMode, Waited,
};
use xunds::wire::seq_id::{SeqId, XuId};
use xunds::wire::status::NrtStatus;
use xunds::wire::xu_queue::CURSOR_LIMIT;

const XU: XuId = XuId::new(5, 9, 0x42);

both!(random_sequences_match_the_model);

struct Entry {
    seq: u64,
    token: u64,
    cell: Arc<StatusCell>,
}

fn status_for(seq: u64) -> NrtStatus {
    NrtStatus((seq % 7) as u32 + 1000)
}

fn random_sequences_match_the_model<B: Backend>() {
    let seeds: u64 = if cfg!(debug_assertions) { 200 } else { 1000 };
    for seed in 0..seeds {
        run_one::<B>(seed);
    }
}

fn run_one<B: Backend>(seed: u64) {
    let mut rng = SplitMix64::new(seed.wrapping_mul(0x9E37_79B9) ^ 0xA5A5);
    let cap = [1u64, 2, 3, 4, 8][rng.below(5) as usize];
    let start = if rng.chance(1, 4) {
        CURSOR_LIMIT - 1 - rng.below(40)
    } else {
        1 + rng.below(1000)
    };
    let cfg = QueueConfig::new(XU, cap)
        .start_at(start)
        .recheck(Duration::from_millis(1));
    let (mut p, mut w, bytes) = B::make::<u64>(cfg);
    let q = p.queue().clone();
    let ctx = format!("{} seed {seed} cap {cap} start {start:#x}", B::NAME);

    // The model.
    let (mut head, mut sched, mut tail) = (start, start, start);
    let mut fifo: VecDeque<Entry> = VecDeque::new();
    let mut popped: HashMap<u64, u32> = HashMap::new();
    let mut armed: HashMap<u64, EventFd> = HashMap::new();
    let mut token = seed << 20;

    let unchanged = |before: &[u8], what: &str| {
        assert_eq!(bytes(), before, "{ctx}: {what} changed bytes");
    };

    let mut cursors = q.cursors();
    for step in 0..250 {
        let op = rng.below(100);
        match op {
            // submit
            0..=24 => {
                let before = bytes();
                token += 1;
                let cell = Arc::new(StatusCell::new());
                let r = p.submit(token, Some(cell.clone()));
                if tail + 1 >= CURSOR_LIMIT {
                    let e = r.unwrap_err();
                    assert_eq!(e.error, SubmitError::CursorExhausted { tail }, "{ctx}");
                    unchanged(&before, "cursor limit");
                } else if tail - head >= cap {
                    let e = r.unwrap_err();
                    assert_eq!(e.error, SubmitError::Full, "{ctx} step {step}");
                    assert_eq!(e.item, token);
                    unchanged(&before, "QUEUE_FULL");
                } else {
                    let s = r.unwrap();
                    assert_eq!(s, SeqId::from_cursor(tail, XU), "{ctx}");
                    fifo.push_back(Entry {
                        seq: tail,
                        token,
                        cell,
                    });
                    tail += 1;
                }
            }
            // submit burst
            25..=32 => {
                let n = 1 + rng.below(3);
                let before = bytes();
                let mut made = Vec::new();
                let base = token;
                let r = p.submit_burst(n, |s| {
                    let cell = Arc::new(StatusCell::new());
                    made.push((s.seq_num(), base + 1 + made.len() as u64, cell.clone()));
                    (base + made.len() as u64, Some(cell))
                });
                if tail + n >= CURSOR_LIMIT {
                    assert_eq!(r, Err(SubmitError::CursorExhausted { tail }), "{ctx}");
                    assert!(made.is_empty());
                    unchanged(&before, "burst at cursor limit");
                } else if tail - head + n > cap {
                    assert_eq!(r, Err(SubmitError::Full), "{ctx}");
                    assert!(made.is_empty());
                    unchanged(&before, "burst QUEUE_FULL");
                } else {
                    assert_eq!(r.unwrap().seq_num(), tail);
                    for (s, t, cell) in made {
                        assert_eq!(s, tail);
                        fifo.push_back(Entry {
                            seq: s,
                            token: t,
                            cell,
                        });
                        tail += 1;
                    }
                    token = base + n;
                }
            }
            // trigger one or a burst
            33..=52 => {
                let n = if op < 45 { 1 } else { 1 + rng.below(3) };
                let before = bytes();
                let r = p.trigger_burst(n);
                if tail - sched < n {
                    assert_eq!(r, Err(TriggerError::NothingToTrigger), "{ctx}");
                    unchanged(&before, "empty trigger");
                } else {
                    sched += n;
                    assert_eq!(r.unwrap().seq_num(), sched - 1);
                }
            }
            // pop one
            53..=70 => {
                let r = w.pop(status_for(head));
                if head == sched {
                    assert_eq!(r.map(|p| p.seq), Err(PopError::Empty), "{ctx}");
                } else {
                    let pp = r.expect("triggered item");
                    let e = fifo.pop_front().unwrap();
                    check_popped(&ctx, &e, pp.seq, pp.item, pp.signal, &mut armed);
                    *popped.entry(e.seq).or_default() += 1;
                    head += 1;
                }
            }
            // pop burst
            71..=77 => {
                let max = 1 + rng.below(4) as usize;
                let mut got = Vec::new();
                let n = w
                    .pop_burst(max, |s| status_for(s.seq_num()), |pp| got.push(pp))
                    .unwrap();
                assert_eq!(n as u64, (sched - head).min(max as u64), "{ctx}");
                assert_eq!(got.len(), n);
                for pp in got {
                    let e = fifo.pop_front().unwrap();
                    check_popped(&ctx, &e, pp.seq, pp.item, pp.signal, &mut armed);
                    *popped.entry(e.seq).or_default() += 1;
                    head += 1;
                }
            }
            // poll / zero-timeout waits on random seqs around the window
            78..=87 => {
                let lo = start.saturating_sub(2);
                let s = lo + rng.below(tail + 2 - lo);
                let seq = SeqId::from_cursor(s, XU);
                let before = bytes();
                let mode = if rng.chance(1, 2) {
                    WaitMode::Poll
                } else {
                    WaitMode::Block
                };
                let r = q.wait(seq, mode, Duration::ZERO);
                if s >= tail {
                    assert_eq!(r, Err(WaitError::NotSubmitted { seq }), "{ctx}");
                } else if s < head {
                    assert_eq!(r, Ok(Waited::Completed { wakeups: 0 }), "{ctx}");
                } else if mode == WaitMode::Poll {
                    assert_eq!(r, Ok(Waited::Pending), "{ctx}");
                } else if armed.contains_key(&s) {
                    // One waiter per slot: an armed fd is already installed.
                    assert_eq!(r, Err(WaitError::AlreadyWaiting { seq }), "{ctx}");
                } else {
                    assert_eq!(r, Ok(Waited::TimedOut), "{ctx}");
                }
                unchanged(&before, "poll / timed-out wait");
                assert_eq!(q.is_completed(seq).unwrap(), s < head, "{ctx}");
            }
            // arm an eventfd on a pending seq (once per seq)
            88..=93 => {
                if head < tail {
                    let s = head + rng.below(tail - head);
                    let seq = SeqId::from_cursor(s, XU);
                    let ev = EventFd::new().unwrap();
                    let r = q.arm(seq, &ev);
                    match armed.entry(s) {
                        std::collections::hash_map::Entry::Occupied(_) => {
                            assert_eq!(r, Err(WaitError::AlreadyWaiting { seq }), "{ctx}");
                        }
                        std::collections::hash_map::Entry::Vacant(v) => {
                            assert_eq!(r, Ok(Armed::Installed), "{ctx}");
                            v.insert(ev);
                        }
                    }
                }
            }
            // foreign xu_ids: refused before any slot is indexed, no byte changes
            _ => {
                let before = bytes();
                let mut xu = rng.next_u32() as u16;
                if xu == XU.0 {
                    xu ^= 1;
                }
                let s = if head < tail && rng.chance(1, 2) {
                    head
                } else {
                    rng.next_u64()
                };
                let seq = SeqId::from_cursor(s, XuId(xu));
                let want = ForeignXu { seq, ours: XU };
                assert_eq!(q.is_completed(seq).map(|_| ()), Err(want), "{ctx}");
                let want = Err(WaitError::Foreign(want));
                assert_eq!(
                    q.wait(seq, WaitMode::Block, Duration::ZERO).map(|_| ()),
                    want
                );
                let ev = EventFd::new().unwrap();
                assert_eq!(q.arm(seq, &ev).map(|_| ()), want);
                unchanged(&before, "foreign seq_id");
            }
        }
        // The queries agree with the model after every step, and every slot
        // moved along the slot machine's rows (the oracle).
        assert_eq!(q.cursors(), (head, sched, tail), "{ctx} step {step}");
        slot_moves(cursors, (head, sched, tail));
        cursors = (head, sched, tail);
        assert_eq!(q.in_flight(), tail - head);
        assert_eq!(q.last_completed(), SeqId::from_cursor(head - 1, XU));
        // The worker's cached view never over-reports and refreshes at 0.
        let a = w.available();
        assert!(a <= sched - head && (a > 0 || sched == head), "{ctx}");
    }
    // Exactly once: every popped seq once; everything else still in the FIFO.
    assert!(popped.values().all(|&n| n == 1), "{ctx}");
    assert_eq!(popped.len() as u64, head - start, "{ctx}");
    assert_eq!(fifo.len() as u64, tail - head);
    for e in &fifo {
        assert_eq!(e.cell.get(), None, "{ctx}: in-flight status untouched");
    }
}

fn check_popped(
    ctx: &str,
    e: &Entry,
    seq: SeqId,
    item: u64,
    signal: Signal,
    armed: &mut HashMap<u64, EventFd>,
) {
    assert_eq!(seq, SeqId::from_cursor(e.seq, XU), "{ctx}: FIFO");
    assert_eq!(item, e.token, "{ctx}: item");
    assert_eq!(e.cell.get(), Some(status_for(e.seq)), "{ctx}: status");
    match armed.remove(&e.seq) {
        Some(ev) => {
            assert!(
                matches!(signal, Signal::Signalled { pooled: false, .. }),
                "{ctx}: {signal:?}"
            );
            assert_eq!(ev.try_read().unwrap(), 1, "{ctx}: exactly one signal");
        }
        None => assert_eq!(signal, Signal::NoWaiter, "{ctx}"),
    }
}
