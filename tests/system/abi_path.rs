//! The ABI carries every execution (docs/abi.md §1.6-§1.8):
//! the worker reads each work item from the mapped item region and writes
//! `infer_resp_t` back into it; bad items complete with defined statuses;
//! failure exits give back what they took; the producer and consumer
//! orderings show in a deterministic trace; the response is what the caller
//! and the counters see.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use xunds::actors::producer::{Lane, Request};
use xunds::actors::work::{BadItem, OutputBuf, NO_EXPECT};
use xunds::actors::worker::WorkerStats;
use xunds::actors::{Cx, Nanos, NullTrace, TraceEvent, TraceSink};
use xunds::device::model::MlpSpec;
use xunds::fsm::proxy::ProxyEvent;
use xunds::fsm::worker::WorkerEvent;
use xunds::hal::eventfd::{EventFd, Wait};
use xunds::hal::linux::LinuxHal;
use xunds::hal::{Hal, Ordering};
use xunds::ring::{Armed, StatusCell, Waited};
use xunds::sim::fake::FakeHal;
use xunds::system::api::{ScheduleOpts, System};
use xunds::system::builder::{SlabTarget, SysActor, SystemConfig};
use xunds::system::job::{self, JobConfig};
use xunds::system::runner::{DetConfig, DetRunner};
use xunds::wire::seq_id::SeqId;
use xunds::wire::work_item::{off, INFER_RESP_SIZE, SIZE, SUBMISSION_TS};
use xunds::NrtStatus;

/// How a test spoils the first execution's work item.
#[derive(Clone, Copy, Debug)]
enum Spoil {
    /// Nothing (the control).
    None,
    /// Zero the whole item.
    Zero,
    /// `type` = 9.
    Type,
    /// `mod_ref` = 77 (no such model).
    ModRef,
    /// `compute_idx` = 1 on core 0.
    ComputeIdx,
    /// `resources` = 3 (item 0's own is 0).
    Resources,
    /// The slot's `exec_info` one item past the region.
    OutOfRegion,
    /// The slot's `exec_info` 8 bytes into the item.
    OffStride,
}

struct Outcome {
    status: [Option<NrtStatus>; 2],
    worker: WorkerStats,
    free: usize,
    pool: usize,
    completed_with_err: u64,
    inference_count: u64,
}

/// Schedule two executions on core 0 of a deterministic system, spoil the
/// first one's item (or its `exec_info` word) as told, run until both are
/// applied, and report what the caller, the worker and the slab saw.
fn run_spoiled(spoil: Spoil) -> Outcome {
    let (built, model, x) = common::small_system();
    let shared = Arc::clone(&built.shared);
    let mut trace = NullTrace;
    let mut cx = Cx::new(Nanos(0), "test", &mut trace);
    let cells = [Arc::new(StatusCell::new()), Arc::new(StatusCell::new())];
    {
        let mut lane = shared.lanes[0].lock().unwrap();
        match spoil {
            Spoil::OutOfRegion => lane.corrupt_next_word(|w| w + 4 * SIZE as u64),
            Spoil::OffStride => lane.corrupt_next_word(|w| w + 8),
            _ => {}
        }
        for cell in &cells {
            lane.schedule(
                common::request(&model, &x, Some(Arc::clone(cell)), 0),
                &mut cx,
            )
            .unwrap();
        }
        // The first call took item 0 (a fresh lane hands out 0 first).
        let pool = lane.pool();
        let hal = shared.dev.hal();
        let r = pool.region();
        match spoil {
            Spoil::Zero => hal.copy_in(r, 0, &[0u8; SIZE]).unwrap(),
            Spoil::Type => hal.store_u32(r, off::TYPE, 9, Ordering::Relaxed).unwrap(),
            Spoil::ModRef => hal
                .store_u64(r, off::MOD_REF, 77, Ordering::Relaxed)
                .unwrap(),
            Spoil::ComputeIdx => hal
                .store_u32(r, off::COMPUTE_IDX, 1, Ordering::Relaxed)
                .unwrap(),
            Spoil::Resources => hal
                .store_u64(r, off::RESOURCES, 3, Ordering::Relaxed)
                .unwrap(),
            _ => {}
        }
    }
    let mut r = common::det_runner(built);
    let sh = Arc::clone(&shared);
    r.run_until(&mut trace, |_| sh.pub_stats.applied().0 == 2)
        .unwrap();
    let (free, pool) = {
        let mut lane = shared.lanes[0].lock().unwrap();
        (lane.free_items(), lane.pool().len())
    };
    let mut worker = None;
    let mut counts = (0, 0);
    for a in r.into_actors() {
        match a {
            SysActor::Worker(w) => worker = Some(w.stats().clone()),
            SysActor::Publisher(p) => {
                let reader = xunds::nds::Reader::attach(p.writer().slab().read_only()).unwrap();
                let get = |c| {
                    reader
                        .counter(xunds::nds::Counter::nc(0, c).unwrap())
                        .unwrap()
                };
                use xunds::wire::nds::counters::NcCounter;
                counts = (
                    get(NcCounter::InferCompletedWithErr),
                    get(NcCounter::InferenceCount),
                );
            }
            _ => {}
        }
    }
    Outcome {
        status: [cells[0].get(), cells[1].get()],
        worker: worker.unwrap(),
        free,
        pool,
        completed_with_err: counts.0,
        inference_count: counts.1,
    }
}

/// A slot whose seq_id was overwritten (a stray writer into the shared
/// ring): the worker's peek refuses it on every poll; the refusal is counted
/// once and degrades the XU, so the next schedule is refused at once
/// (`EXEC_UNIT_UNRECOVERABLE`) instead of queueing behind a slot nothing
/// can pop. Traced as a message on every poll and nothing else, it would
/// leave the XU HEALTHY, accepting work it would never run.
#[test]
fn an_overwritten_slot_is_counted_once_and_degrades_the_xu() {
    let (cell, worker, next) = run_one_faulty(
        vec![],
        |_, lane, seq| lane.queue().corrupt_seq_id(seq, seq.0 ^ 0x40),
        2_000,
    );
    assert_eq!(next, Err(NrtStatus::EXEC_UNIT_UNRECOVERABLE));
    assert_eq!(worker.ring_refusals, 1, "counted once over 2,000 polls");
    assert_eq!((worker.completed, worker.fsm_violations), (0, 0));
    assert_eq!(cell.get(), None, "nothing can pop it before a reset");
}

type Faulty = xunds::sim::fault::FaultInjector<FakeHal>;

/// Schedule one execution on core 0 (its status into the returned cell),
/// let `spoil` change its work item, and run until the publisher has
/// applied it (or `max_polls`). Returns the cell, the worker's stats and
/// the lane's answer to one more schedule.
fn run_one_faulty(
    rules: Vec<xunds::sim::fault::FaultRule>,
    spoil: impl FnOnce(&Faulty, &mut Lane<Faulty>, SeqId),
    max_polls: u64,
) -> (Arc<StatusCell>, WorkerStats, Result<SeqId, NrtStatus>) {
    let plan = xunds::sim::fault::FaultPlan { seed: 3, rules };
    let (built, model, x) = common::small_system_on(
        xunds::sim::fault::FaultInjector::new(FakeHal::new(), plan),
        |_| {},
    );
    let shared = Arc::clone(&built.shared);
    let mut trace = NullTrace;
    let request = |status| request(&model, &x, status);
    let cell = Arc::new(StatusCell::new());
    {
        let mut lane = shared.lanes[0].lock().unwrap();
        let mut cx = Cx::new(Nanos(0), "test", &mut trace);
        let seq = lane
            .schedule(request(Some(Arc::clone(&cell))), &mut cx)
            .unwrap();
        spoil(shared.dev.hal(), &mut lane, seq);
    }
    let mut r = common::det_runner(built);
    let sh = Arc::clone(&shared);
    r.run_until(&mut trace, |r| {
        sh.pub_stats.applied().0 == 1 || r.stats().polls >= max_polls
    })
    .unwrap();
    let worker = common::worker_stats(r);
    let next = shared.lanes[0].lock().unwrap().schedule(
        request(None),
        &mut Cx::new(Nanos(0), "test", &mut NullTrace),
    );
    (cell, worker, next)
}

/// A bad item whose staged request the device aborted (a corrupt
/// descriptor): the caller sees the item's status, and the device's fault
/// still counts (`dma_aborts`) and degrades the XU. The item's status used
/// to replace the device's before the XU's health was decided, so the
/// abort neither counted nor degraded, and the next execution waited out
/// its whole timeout on a DMA engine stuck in its fault.
#[test]
fn a_bad_item_hides_no_device_fault() {
    use xunds::sim::fault::{DescCorruption, Fault, FaultRule};
    let rule = FaultRule::nth(
        Fault::CorruptDesc {
            what: DescCorruption::BadLength,
            dir: Some(xunds::hal::Dir::M2s),
        },
        1,
    );
    let (cell, worker, next) = run_one_faulty(
        vec![rule],
        |hal, lane, _| {
            hal.store_u64(lane.pool().region(), off::MOD_REF, 77, Ordering::Relaxed)
                .unwrap()
        },
        u64::MAX,
    );
    assert_eq!(cell.get(), Some(BadItem::UnknownModRef(77).status()));
    assert_eq!(worker.bad_items[BadItem::UnknownModRef(77).index()], 1);
    assert_eq!(worker.dma_aborts, 1, "the device's abort is counted");
    assert_eq!(
        next,
        Err(NrtStatus::EXEC_UNIT_UNRECOVERABLE),
        "the XU degraded"
    );
}

/// An execution whose item says it was submitted in the far future (its
/// `ts_start` overwritten) and whose request the device never runs (a lost
/// doorbell) still times out: its deadline runs from no later than the
/// worker's now. It ran from the item's time, past every reach, and the
/// execution never completed.
#[test]
fn a_future_submission_time_still_times_out() {
    use xunds::sim::fault::{Fault, FaultRule};
    let (cell, worker, _) = run_one_faulty(
        vec![FaultRule::nth(Fault::DropDoorbell, 1)],
        |hal, lane, _| {
            hal.store_u64(
                lane.pool().region(),
                SUBMISSION_TS,
                1 << 40,
                Ordering::Relaxed,
            )
            .unwrap()
        },
        1_000_000,
    );
    assert_eq!(cell.get(), Some(NrtStatus::TIMEOUT));
    assert_eq!(worker.by_status.get(NrtStatus::TIMEOUT), 1);
}

/// Each bad item completes with its status, is counted by kind, loses
/// nothing (the good execution behind it completes too) and leaves the
/// item free list whole.
fn check_bad(spoil: Spoil, kind: BadItem) {
    let o = run_spoiled(spoil);
    assert_eq!(o.status[0], Some(kind.status()), "{spoil:?}");
    assert_eq!(o.status[1], Some(NrtStatus::SUCCESS), "{spoil:?}");
    let mut want = [0; BadItem::KINDS];
    want[kind.index()] = 1;
    assert_eq!(o.worker.bad_items, want, "{spoil:?}");
    assert_eq!(o.worker.completed, 2);
    assert_eq!(o.worker.fsm_violations, 0);
    assert_eq!(o.worker.outputs_checked, 1, "only the good one is checked");
    assert_eq!(o.worker.outputs_wrong, 0);
    assert_eq!((o.completed_with_err, o.inference_count), (1, 2));
    assert_eq!(o.free, o.pool, "{spoil:?}: the item free list is whole");
}

#[test]
fn control_run_has_no_bad_items() {
    let o = run_spoiled(Spoil::None);
    assert_eq!(o.status, [Some(NrtStatus::SUCCESS); 2]);
    assert_eq!(o.worker.bad_items, [0; BadItem::KINDS]);
    assert_eq!((o.completed_with_err, o.inference_count), (0, 2));
    assert_eq!(o.free, o.pool);
}

#[test]
fn zeroed_item_completes_invalid() {
    check_bad(Spoil::Zero, BadItem::Zeroed);
}

#[test]
fn unknown_type_completes_invalid() {
    check_bad(Spoil::Type, BadItem::UnknownType(9));
}

#[test]
fn unknown_mod_ref_completes_invalid_handle() {
    check_bad(Spoil::ModRef, BadItem::UnknownModRef(77));
}

#[test]
fn other_cores_compute_idx_completes_invalid() {
    check_bad(Spoil::ComputeIdx, BadItem::OtherCore(1));
}

/// `resources` is a handle (docs/abi.md §1.6) naming the item's own
/// resources (its index): one naming another item's completes
/// `NRT_INVALID_HANDLE`, like an unknown `mod_ref`.
#[test]
fn foreign_resources_complete_invalid_handle() {
    assert_eq!(BadItem::BadResources(3).status(), NrtStatus::INVALID_HANDLE);
    check_bad(Spoil::Resources, BadItem::BadResources(3));
}

#[test]
fn exec_info_outside_the_region_completes_invalid_handle() {
    check_bad(Spoil::OutOfRegion, BadItem::OutOfRegion);
}

#[test]
fn exec_info_off_stride_completes_invalid_handle() {
    check_bad(Spoil::OffStride, BadItem::OffStride);
}

/// A sink that keeps every line (`actor kind text`).
#[derive(Default)]
struct Lines(Vec<String>, String);

impl TraceSink for Lines {
    fn enabled(&self) -> bool {
        true
    }
    fn begin(&mut self, _now: Nanos, actor: &str) {
        self.1 = actor.to_string();
    }
    fn record(&mut self, e: TraceEvent<'_>) {
        self.0.push(format!("{} {} {}", self.1, e.kind, e.text));
    }
}

/// An event a worker's state does not accept is counted, traced, changes
/// nothing, and the worker goes on completing executions.
#[test]
fn worker_and_device_proxy_count_refused_events() {
    let (built, model, x) = common::small_system();
    let shared = Arc::clone(&built.shared);
    let mut lines = Lines::default();
    let mut daemons = Vec::new();
    {
        let mut cx = Cx::new(Nanos(0), "test", &mut lines);
        let ds = built.daemons;
        for mut d in ds {
            match &mut d {
                // Pop with nothing peeked; sleep while running.
                SysActor::Worker(w) => w.inject_event(WorkerEvent::Pop, &mut cx),
                SysActor::Device(p) => p.inject_event(ProxyEvent::Wake, &mut cx),
                _ => {}
            }
            daemons.push(d);
        }
        let mut lane = shared.lanes[0].lock().unwrap();
        lane.schedule(common::request(&model, &x, None, NO_EXPECT), &mut cx)
            .unwrap();
    }
    assert_eq!(
        lines
            .0
            .iter()
            .filter(|l| l.contains("fsm_violation"))
            .count(),
        2,
        "{:?}",
        lines.0
    );
    let mut r: DetRunner<SysActor<FakeHal>> = DetRunner::new(DetConfig::new(1));
    for d in daemons {
        r.add_daemon(d);
    }
    let sh = Arc::clone(&shared);
    r.run_until(&mut NullTrace, |_| sh.pub_stats.applied().0 == 1)
        .unwrap();
    for a in r.into_actors() {
        match a {
            SysActor::Worker(w) => {
                assert_eq!(w.stats().fsm_violations, 1);
                assert_eq!(
                    w.stats().by_status.get(NrtStatus::SUCCESS),
                    1,
                    "the worker went on"
                );
            }
            SysActor::Device(d) => {
                assert_eq!(d.stats().fsm_violations, 1);
                assert_eq!(d.stats().executed, 1, "the proxy went on");
            }
            _ => {}
        }
    }
}

fn trace_of(name: &str, executions: u64, vncs: u8) -> (String, xunds::system::job::JobReport) {
    let path =
        std::env::temp_dir().join(format!("xunds-abipath-{}-{name}.trace", std::process::id()));
    let cfg = JobConfig {
        executions,
        vncs,
        models: 2,
        seed: 3,
        deterministic: true,
        trace: Some(path.clone()),
        slab: Some(common::slab(name)),
        ..JobConfig::default()
    };
    let r = job::run(&cfg, &mut |_, _| {}).unwrap();
    let _ = std::fs::remove_file(&r.slab);
    // The file holds checkpoints; its text view is rendered by a replay
    // (`xunds replay FILE --print`).
    let view = path.with_extension("txt");
    let replay = JobConfig {
        replay: Some(path.clone()),
        trace: Some(view.clone()),
        slab: Some(common::slab(&format!("{name}-view"))),
        ..cfg
    };
    let rv = job::run(&replay, &mut |_, _| {}).unwrap();
    assert!(
        rv.replay.as_ref().is_some_and(|d| d.is_identical()),
        "{:?}",
        rv.replay
    );
    let text = std::fs::read_to_string(&view).unwrap();
    for p in [path, view, rv.slab] {
        let _ = std::fs::remove_file(p);
    }
    (text, r)
}

/// One work-item access of a text trace line: `t=T ACTOR hal OP
/// itemsK+0xOFF LABEL [LEN] WORD ...` (words are little-endian 4-byte
/// groups; a long run shows its first 16 and then `... (N bytes)`).
#[derive(Debug)]
struct ItemAccess {
    t: u64,
    actor: String,
    op: String,
    core: u8,
    off: usize,
    label: String,
    len: usize,
    bytes: Vec<u8>,
}

impl ItemAccess {
    fn parse(line: &str) -> Option<ItemAccess> {
        let tok: Vec<&str> = line.split_whitespace().collect();
        if tok.len() < 7 || tok[2] != "hal" {
            return None;
        }
        let (region, off) = tok[4].split_once("+0x")?;
        let core = region.strip_prefix("items")?.parse().ok()?;
        let len = tok[6].strip_prefix('[')?.strip_suffix(']')?.parse().ok()?;
        let mut bytes = Vec::new();
        for w in &tok[7..] {
            if w.len() != 8 {
                break;
            }
            for k in 0..4 {
                bytes.push(u8::from_str_radix(&w[2 * k..2 * k + 2], 16).ok()?);
            }
        }
        Some(ItemAccess {
            t: tok[0].strip_prefix("t=")?.parse().ok()?,
            actor: tok[1].to_string(),
            op: tok[3].to_string(),
            core,
            off: usize::from_str_radix(off, 16).ok()?,
            label: tok[5].to_string(),
            len,
            bytes,
        })
    }

    fn u32_at(&self, at: usize) -> u32 {
        u32::from_le_bytes(self.bytes[at..at + 4].try_into().unwrap())
    }

    fn u64_at(&self, at: usize) -> u64 {
        u64::from_le_bytes(self.bytes[at..at + 8].try_into().unwrap())
    }

    /// The item's index and the offset within it.
    fn at(&self) -> (usize, usize) {
        (self.off / SIZE, self.off % SIZE)
    }
}

/// `xunds run --deterministic --trace`: for every execution the worker
/// reads the work item's fields from the mapped item region and stores the
/// response fields into it (docs/abi.md §1.6, §1.7). Each field's bytes
/// are checked at its ABI offset: the reads cover `type` ..
/// `sync_point_cpu_timestamp` (+0x00, 40 bytes, the very bytes the producer
/// wrote, `compute_idx` = the worker's core) and `ts_start` (+0x38, 16
/// bytes, the producer's schedule time); the stores are `status` ..
/// `nq_records` (+0x28, 16 bytes) and `ts_end` .. `num_outputs` (+0x48, 52
/// bytes: the completion time, the device times and MACs the completion
/// message reports), never `ts_start`, `device_id` or `device_tpb_idx`
/// (the schedule path's); and the 112 bytes read back hold exactly them.
/// Each access is one HAL operation labelled by the C name of its first
/// field.
#[test]
fn trace_shows_item_loads_and_response_stores_for_every_execution() {
    let n = 40;
    let (text, r) = trace_of("fields", n, 2);
    assert_eq!(r.completed_ok, n);
    assert_eq!(r.fsm_violations.total(), 0);
    // What the producer last wrote into each (core, item): time and bytes.
    let mut written: std::collections::HashMap<(u8, usize), ItemAccess> = Default::default();
    // Per worker, the accesses of the execution it is completing.
    let mut open: std::collections::HashMap<String, Vec<ItemAccess>> = Default::default();
    let mut checked = 0u64;
    for line in text.lines() {
        if let Some(a) = ItemAccess::parse(line) {
            if a.actor == "producer" {
                assert_eq!((a.op.as_str(), a.off % SIZE, a.len), ("copy_in", 0, SIZE));
                written.insert((a.core, a.off / SIZE), a);
            } else {
                assert!(a.actor.starts_with("worker"), "{line}");
                open.entry(a.actor.clone()).or_default().push(a);
            }
            continue;
        }
        // `t=T workerK msg completed xu=K seq=S exec_id=E status=.. macs=M device_ns=D`
        let Some((head, rest)) = line.split_once(" msg completed ") else {
            continue;
        };
        let worker = head.split_whitespace().nth(1).unwrap().to_string();
        let field = |name: &str| -> u64 {
            rest.split_whitespace()
                .find_map(|w| w.strip_prefix(name))
                .unwrap()
                .parse()
                .unwrap()
        };
        let (macs, device_ns) = (field("macs="), field("device_ns="));
        let acc = open.remove(&worker).unwrap_or_default();
        let ops: Vec<(&str, usize, &str, usize)> = acc
            .iter()
            .map(|a| (a.op.as_str(), a.at().1, a.label.as_str(), a.len))
            .collect();
        assert_eq!(
            ops,
            [
                ("copy_out", 0x00, "tpb_execution_info_t.type", 40),
                (
                    "copy_out",
                    SUBMISSION_TS,
                    "tpb_execution_info_t.resp.ts_start.tv_sec",
                    16
                ),
                ("copy_in", off::RESP, "infer_resp_t.status", 16),
                (
                    "copy_in",
                    off::RESP + 0x20,
                    "infer_resp_t.ts_end.tv_sec",
                    52
                ),
                ("copy_out", off::RESP, "infer_resp_t.status", 112),
            ],
            "{worker}: {line}"
        );
        let [head, ts, status, tail, back] = &acc[..] else {
            unreachable!()
        };
        let core = head.core;
        assert!(acc
            .iter()
            .all(|a| a.core == core && a.at().0 == head.at().0));
        assert_eq!(worker, format!("worker{core}"));
        let item = written
            .get(&(core, head.at().0))
            .expect("the producer wrote it");
        // The read bytes are the producer's: type EXECUTE, its mod_ref,
        // resources, compute_idx (this core), sync_point_cpu_timestamp.
        assert_eq!(head.bytes, item.bytes[..40]);
        assert_eq!(head.u32_at(off::TYPE), 1);
        assert!((1..=2).contains(&head.u64_at(off::MOD_REF)));
        assert_eq!(head.u32_at(off::COMPUTE_IDX), u32::from(core));
        // ts_start: the schedule time (virtual ns; tv_sec, tv_nsec).
        let ts_start = ts.u64_at(0) * 1_000_000_000 + ts.u64_at(8);
        assert_eq!(ts_start, item.t);
        // status, err_class, nq_errors, nq_records (5 engines reported).
        assert_eq!(
            [0, 1, 2, 3].map(|k| status.u32_at(4 * k)),
            [0, 0, 0, 5],
            "{line}"
        );
        // ts_end, device_start_ns, device_end_ns, mac_count, cc_time_ns,
        // num_outputs (the MLP's two output tensors).
        let ts_end = tail.u64_at(0) * 1_000_000_000 + tail.u64_at(8);
        assert_eq!(ts_end, tail.t.max(ts_start));
        let (start, end) = (tail.u64_at(0x10), tail.u64_at(0x18));
        assert_eq!(
            (end - start, tail.u64_at(0x20)),
            (device_ns, macs),
            "{line}"
        );
        assert_eq!((tail.u64_at(0x28), tail.u32_at(0x30)), (0, 2));
        // Read back: the stores, with the producer's ts_start between them.
        assert_eq!(back.bytes[..16], status.bytes[..]);
        assert_eq!(back.bytes[16..32], ts.bytes[..]);
        assert_eq!(back.bytes[32..64], tail.bytes[..32]);
        checked += 1;
    }
    assert_eq!(checked, n);
}

/// The index of the first line at or after `from` that contains every
/// needle.
fn find(lines: &[&str], from: usize, needles: &[&str]) -> usize {
    (from..lines.len())
        .find(|&i| needles.iter().all(|n| lines[i].contains(n)))
        .unwrap_or_else(|| panic!("{needles:?} not found after line {from}"))
}

/// docs/abi.md §1.14 item 7 (producer ordering, §1.9 rule 1 and §1.10): the 52-byte request
/// body, then its 4-byte trailer, then the tail-increment doorbell; then the
/// slot is submitted (`scheduled_tail`), then triggered (`scheduled_head`),
/// then the worker is woken. Checked for every execution of a trace.
#[test]
fn abi_producer_ordering_body_trailer_doorbell_submit_trigger_wake() {
    let n = 24;
    let (text, _) = trace_of("producer", n, 1);
    let lines: Vec<&str> = text.lines().collect();
    let mut at = 0;
    for _ in 0..n {
        let take = find(&lines, at, &["funnel#0", "--take_item-->"]);
        let item = find(&lines, take, &["producer hal copy_in", "items0"]);
        let body = find(&lines, take, &["copy_in", "REQUEST_BUF [52]"]);
        let trailer = find(&lines, take, &["copy_in", "CC_DMA_INCREMENT [4]"]);
        let doorbell = find(&lines, take, &["tail_inc", "M2S_TAIL_INC"]);
        let staged = find(&lines, take, &["funnel#0", "--stage_and_doorbell-->"]);
        let slot_submit = find(&lines, take, &["xu_slot#", "--submit-->"]);
        let submit = find(&lines, take, &["funnel#0", "DOORBELLED --submit-->"]);
        let slot_trigger = find(&lines, take, &["xu_slot#", "--trigger-->"]);
        let trigger = find(&lines, take, &["funnel#0", "--trigger-->"]);
        let wake = find(&lines, take, &["funnel#0", "--wake_worker-->"]);
        let order = [
            item,
            body,
            trailer,
            doorbell,
            staged,
            slot_submit,
            submit,
            slot_trigger,
            trigger,
            wake,
        ];
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
        at = wake;
    }
}

/// docs/abi.md §1.14 item 8 (consumer ordering, §1.9 rule 2): peek, then the work
/// item's fields, then `infer_resp_t`, then the item back, then the slot
/// completes and is reclaimed (`exec_head` moves), then the waiter is
/// signalled. Checked for every execution of a trace.
#[test]
fn abi_consumer_ordering_peek_item_response_pop_signal() {
    let n = 24;
    let (text, _) = trace_of("consumer", n, 1);
    let lines: Vec<&str> = text.lines().collect();
    let mut at = 0;
    for _ in 0..n {
        let peek = find(&lines, at, &["worker#0", "--peek-->"]);
        let mod_ref = find(
            &lines,
            peek,
            &["worker0 hal copy_out", "tpb_execution_info_t.type [40]"],
        );
        let done = find(&lines, peek, &["worker#0", "CURRENT --"]);
        let resp = find(
            &lines,
            done,
            &["worker0 hal copy_in", "infer_resp_t.status [16]"],
        );
        let filled = find(&lines, resp, &["worker#0", "--fill_resp-->"]);
        let returned = find(&lines, filled, &["worker#0", "--return_item-->"]);
        let complete = find(&lines, returned, &["xu_slot#", "--complete-->"]);
        let reclaim = find(&lines, complete, &["xu_slot#", "--reclaim-->"]);
        let pop = find(&lines, reclaim, &["worker#0", "--pop-->"]);
        let signal = find(&lines, pop, &["worker#0", "--signal_waiter-->"]);
        let order = [
            peek, mod_ref, done, resp, filled, returned, complete, reclaim, pop, signal,
        ];
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
        at = signal;
    }
}

/// docs/abi.md §1.14 item 6 (the completion model, §1.8): completion is the
/// `exec_head` bump plus a write to the caller's eventfd; the last
/// completed handle is `(exec_head - 1) | xu_id << 48`; the result splits
/// across `exec_status` (the status) and `infer_resp_t` (the timings).
#[test]
fn abi_completion_model_exec_head_efd_status_and_infer_resp() {
    let mut cfg = SystemConfig::new(1);
    cfg.slab = SlabTarget::Anonymous;
    cfg.timeout = Nanos::from_millis(10_000);
    let sys = System::start(LinuxHal::new(), cfg).unwrap();
    let spec = MlpSpec::EXAMPLE;
    let model = sys.load_mlp(&spec, "mlp").unwrap();
    let x = spec.example_input(1);
    let opts = ScheduleOpts::for_model(&model);
    let (status, out) = (opts.status.clone().unwrap(), opts.out.clone().unwrap());
    let seq = sys.schedule(0, &model, &x, opts).unwrap();
    let efd = EventFd::new().unwrap();
    match sys.arm(seq, &efd).unwrap() {
        Armed::Installed => {
            assert_eq!(
                efd.wait(Duration::from_secs(20)).unwrap(),
                Wait::Signalled(1),
                "write(mark_comp_efd, 1)"
            );
        }
        Armed::AlreadyComplete => {}
    }
    assert!(sys.is_completed(seq).unwrap());
    let last = sys.last_completed(0).unwrap();
    assert_eq!(last, seq, "(exec_head - 1) | xu_id << 48");
    assert_eq!(last.0 >> 48, seq.0 >> 48);
    // The status from exec_status, the timings from infer_resp_t.
    assert_eq!(status.get(), Some(NrtStatus::SUCCESS));
    let resp = out.response().unwrap();
    assert_eq!(resp.status, NrtStatus::SUCCESS);
    assert!(resp.ts_end >= resp.ts_start);
    assert_eq!(
        resp.device_end_ns - resp.device_start_ns,
        common::EXAMPLE_DEVICE_CYCLES
    );
    assert_eq!(resp.mac_count, model.macs());
    assert_eq!(resp.nq_records, 5);
    // The blocking API hands the same record back, typed.
    let e = sys.execute(0, &model, &x, Duration::from_secs(20)).unwrap();
    assert_eq!(e.response.status, e.status);
    assert_eq!(e.response.mac_count, model.macs());
    sys.shutdown().unwrap();
}

/// 10^5 executions (10^4 in debug builds) through the public API on four
/// cores over real mappings: every response is checked (ts_end >= ts_start,
/// device time = the cycles the device ran for the model, mac_count = the
/// model's MACs, status = the exec_status the caller saw).
#[test]
fn hundred_thousand_responses_checked() {
    let n: usize = if cfg!(debug_assertions) {
        10_000
    } else {
        100_000
    };
    let mut cfg = SystemConfig::new(4);
    cfg.slab = SlabTarget::Anonymous;
    cfg.timeout = Nanos::from_millis(10_000);
    let sys = System::start(LinuxHal::new(), cfg).unwrap();
    let spec = MlpSpec::EXAMPLE;
    let model = sys.load_mlp(&spec, "mlp").unwrap();
    let x = spec.example_input(2);
    let cycles = common::EXAMPLE_DEVICE_CYCLES;
    let checked = Mutex::new(0usize);
    let check = |status: &Arc<StatusCell>, out: &Arc<OutputBuf>| {
        let r = out.response().unwrap();
        assert!(r.ts_end >= r.ts_start, "{r:?}");
        assert_eq!(r.device_end_ns - r.device_start_ns, cycles, "{r:?}");
        assert_eq!(r.mac_count, model.macs(), "{r:?}");
        assert_eq!(Some(r.status), status.get(), "{r:?}");
        assert_eq!(r.status, NrtStatus::SUCCESS);
        *checked.lock().unwrap() += 1;
    };
    // One caller per XU, each keeping up to 16 executions in flight.
    std::thread::scope(|s| {
        for xu in 0..4u8 {
            let (sys, model, x, check) = (&sys, &model, &x, &check);
            s.spawn(move || {
                let mine = n / 4;
                let mut inflight = std::collections::VecDeque::new();
                let mut done = 0;
                let mut sent = 0;
                while done < mine {
                    if sent < mine && inflight.len() < 16 {
                        let opts = ScheduleOpts::for_model(model);
                        let keep = (opts.status.clone().unwrap(), opts.out.clone().unwrap());
                        match sys.schedule(xu, model, x, opts) {
                            Ok(seq) => {
                                inflight.push_back((seq, keep));
                                sent += 1;
                                continue;
                            }
                            Err(NrtStatus::QUEUE_FULL) => {}
                            Err(e) => panic!("schedule: {e}"),
                        }
                    }
                    let (seq, (st, out)) = inflight.pop_front().unwrap();
                    match sys.wait(seq, Duration::from_secs(20)).unwrap() {
                        Waited::Completed { .. } => {}
                        w => panic!("wait: {w:?}"),
                    }
                    check(&st, &out);
                    done += 1;
                }
            });
        }
    });
    assert_eq!(*checked.lock().unwrap(), n);
    let rep = sys.shutdown().unwrap();
    assert_eq!(
        rep.workers
            .iter()
            .map(|w| w.by_status.get(NrtStatus::SUCCESS))
            .sum::<u64>(),
        n as u64
    );
    assert_eq!(rep.workers.iter().map(|w| w.fsm_violations).sum::<u64>(), 0);
    assert_eq!(rep.device.fsm_violations, 0);
    assert_eq!(rep.publisher_fsm_violations, 0);
}

fn request<'a>(
    model: &'a Arc<xunds::actors::work::ResidentModel>,
    x: &'a [f32],
    status: Option<Arc<StatusCell>>,
) -> Request<'a> {
    common::request(model, x, status, NO_EXPECT)
}

/// Run `built`'s daemons until the publisher applied `completions`
/// completions and `refusals` refusals; the worker's stray NQ records.
fn run_to(built: xunds::system::builder::Built<FakeHal>, completions: u64, refusals: u64) -> u64 {
    let shared = Arc::clone(&built.shared);
    let mut r = common::det_runner(built);
    let mut steps = 0u32;
    r.run_until(&mut NullTrace, |_| {
        steps += 1;
        let (c, f) = shared.pub_stats.applied();
        assert!(steps < 1_000_000, "stuck at ({c}, {f}) applied");
        c >= completions && f >= refusals
    })
    .unwrap();
    assert_eq!(shared.pub_stats.applied(), (completions, refusals));
    r.into_actors()
        .iter()
        .map(|a| match a {
            SysActor::Worker(w) => w.stray_records(),
            _ => 0,
        })
        .sum()
}

/// Every free list of core 0 is whole: every work item is on the lane's
/// free list, no staging slot (request buffer) is taken.
fn assert_whole(shared: &xunds::system::builder::Shared<FakeHal>, what: &str) {
    let mut lane = shared.lanes[0].lock().unwrap();
    assert_eq!(
        lane.free_items(),
        lane.pool().len(),
        "{what}: item free list"
    );
    assert_eq!(lane.stager().in_flight(), Ok(0), "{what}: staging slots");
}

/// Every failure exit of the funnel, driven through the lane itself, ends
/// the call in IDLE and gives back what it took, exactly once:
/// - `stage_failed` returns the item at once (nothing was staged);
/// - `submit_failed` returns the item at once; its request was staged and
///   doorbelled, so the device runs it and the worker drops its NQ records
///   as stray; the staging slot comes back with that run;
/// - `trigger_failed` leaves the item with its submitted slot: the call's
///   own flush (or the next trigger) publishes it, the worker runs it and
///   returns the item; the caller gets its handle (and, at completion, its
///   real result), not a failure for an execution that runs.
///
/// A refused call (stage or submit failure) counts `INFER_FAILED_TO_QUEUE`.
/// After the next execution completed, every free list is whole.
#[test]
fn funnel_failure_exits_return_the_item() {
    use xunds::fsm::funnel::FunnelEvent;
    // (exit, status, trace line, items the slot holds after the exit,
    // completions and refusals the publisher applies).
    for (at, refused, name, held, applied) in [
        (
            FunnelEvent::StageFailed,
            Some(NrtStatus::QUEUE_FULL),
            "ITEM_TAKEN --stage_failed--> IDLE",
            0,
            (1, 1),
        ),
        (
            FunnelEvent::SubmitFailed,
            Some(NrtStatus::FAILURE),
            "DOORBELLED --submit_failed--> IDLE",
            0,
            (1, 1),
        ),
        (
            FunnelEvent::TriggerFailed,
            None,
            "SUBMITTED --trigger_failed--> IDLE",
            1,
            (2, 0),
        ),
    ] {
        let (built, model, x) = common::small_system();
        let shared = Arc::clone(&built.shared);
        let mut lines = Lines::default();
        let cell = Arc::new(StatusCell::new());
        {
            let mut cx = Cx::new(Nanos(0), "test", &mut lines);
            let mut lane = shared.lanes[0].lock().unwrap();
            let pool = lane.pool().len();
            lane.fail_next(at);
            let r = lane.schedule(request(&model, &x, None), &mut cx);
            match refused {
                Some(s) => assert_eq!(r, Err(s), "{at:?}"),
                None => assert!(r.is_ok(), "{at:?}: {r:?}"),
            }
            let full = lane.stats().refused_full;
            assert_eq!(full, u64::from(refused.is_some()), "{at:?}: counted");
            assert_eq!(
                lane.free_items(),
                pool - held,
                "{at:?}: items after the exit"
            );
            let staged = u32::from(at != FunnelEvent::StageFailed);
            assert_eq!(lane.stager().in_flight(), Ok(staged), "{at:?}: staged");
            lane.schedule(request(&model, &x, Some(Arc::clone(&cell))), &mut cx)
                .unwrap();
        }
        assert!(
            lines
                .0
                .iter()
                .any(|l| l.contains(&format!("funnel#0 {name}"))),
            "{at:?}: {:?}",
            lines.0
        );
        let stray = run_to(built, applied.0, applied.1);
        assert_eq!(cell.get(), Some(NrtStatus::SUCCESS), "{at:?}");
        assert_whole(&shared, &format!("{at:?}"));
        // The submit-failed request ran on the device (one NQ record per
        // engine of the model), its records matched nothing.
        assert_eq!(
            stray > 0,
            at == FunnelEvent::SubmitFailed,
            "{at:?}: {stray}"
        );
        assert_eq!(shared.queues[0].in_flight(), 0, "{at:?}: drained");
    }
}

/// A trigger failure with no later schedule call: the call's own flush
/// (`flush` is also what `quiesce` and the producer actor's end condition
/// call) publishes the slot left behind, so the XU drains, the item comes
/// back, and the caller, who got its handle, gets its real result.
#[test]
fn trigger_failure_left_alone_drains_on_flush() {
    use xunds::fsm::funnel::FunnelEvent;
    let (built, model, x) = common::small_system();
    let shared = Arc::clone(&built.shared);
    let cell = Arc::new(StatusCell::new());
    {
        let mut trace = NullTrace;
        let mut cx = Cx::new(Nanos(0), "test", &mut trace);
        let mut lane = shared.lanes[0].lock().unwrap();
        lane.fail_next(FunnelEvent::TriggerFailed);
        let r = lane.schedule(request(&model, &x, Some(Arc::clone(&cell))), &mut cx);
        assert!(r.is_ok(), "{r:?}");
        // No flush here: the call itself published the slot.
    }
    run_to(built, 1, 0);
    assert_eq!(cell.get(), Some(NrtStatus::SUCCESS));
    assert_whole(&shared, "trigger_failed + flush");
}

/// The refusals `System::schedule` returns before anything is taken (a full
/// queue, a degraded XU) take no item and no staging slot; what the
/// accepted calls took comes back when they complete.
#[test]
fn refusals_take_nothing() {
    use xunds::fsm::xu_health::XuHealthEvent;
    let (built, model, x) = common::small_system();
    let shared = Arc::clone(&built.shared);
    {
        let mut trace = NullTrace;
        let mut cx = Cx::new(Nanos(0), "test", &mut trace);
        let mut lane = shared.lanes[0].lock().unwrap();
        let pool = lane.pool().len();
        for _ in 0..4 {
            lane.schedule(request(&model, &x, None), &mut cx).unwrap();
        }
        let r = lane.schedule(request(&model, &x, None), &mut cx);
        assert_eq!(r, Err(NrtStatus::QUEUE_FULL));
        assert_eq!(lane.free_items(), pool - 4, "queue full took no item");
        assert_eq!(lane.stager().in_flight(), Ok(4), "nor a staging slot");
        assert_eq!(
            shared.healths[0].degrade(XuHealthEvent::Timeout, false, 0, &mut xunds::fsm::NoHook),
            Ok(true)
        );
        let r = lane.schedule(request(&model, &x, None), &mut cx);
        assert_eq!(r, Err(NrtStatus::EXEC_UNIT_UNRECOVERABLE));
        assert_eq!(lane.free_items(), pool - 4, "101 took no item");
        assert_eq!(lane.stager().in_flight(), Ok(4), "nor a staging slot");
    }
    run_to(built, 4, 2);
    assert_whole(&shared, "refusals");
}

/// The pooled-eventfd exits of a blocking wait (`System::wait` is this
/// call on the handle's queue) give the fd back to the pool: an install
/// the slot refuses (a caller's event is already armed on it), and a
/// timeout (the install is removed again). Each wait reuses the one fd.
#[test]
fn pooled_fd_exits_return_the_fd() {
    use xunds::ring::WaitMode;
    let (built, model, x) = common::small_system();
    let shared = Arc::clone(&built.shared);
    let (a, b) = {
        let mut trace = NullTrace;
        let mut cx = Cx::new(Nanos(0), "test", &mut trace);
        let mut lane = shared.lanes[0].lock().unwrap();
        let a = lane.schedule(request(&model, &x, None), &mut cx).unwrap();
        let b = lane.schedule(request(&model, &x, None), &mut cx).unwrap();
        (a, b)
    };
    let q = &shared.queues[0];
    assert_eq!(q.pool_counts(), (0, 0));
    let ev = EventFd::new().unwrap();
    assert_eq!(q.arm(a, &ev), Ok(Armed::Installed));
    for round in 0..3 {
        let r = q.wait(a, WaitMode::Block, Duration::from_secs(5));
        assert!(r.is_err(), "round {round}: the slot has a waiter: {r:?}");
        assert_eq!(q.pool_counts(), (1, 0), "round {round}: refused install");
        let r = q.wait(b, WaitMode::Block, Duration::from_millis(5));
        assert_eq!(r, Ok(Waited::TimedOut), "round {round}");
        assert_eq!(q.pool_counts(), (1, 0), "round {round}: timeout");
    }
    run_to(built, 2, 0);
    assert_eq!(ev.wait(Duration::from_secs(5)).unwrap(), Wait::Signalled(1));
    let r = q.wait(b, WaitMode::Block, Duration::from_secs(5));
    assert_eq!(r, Ok(Waited::Completed { wakeups: 0 }));
    assert_eq!(q.pool_counts(), (1, 0));
    assert_whole(&shared, "waits");
}

/// A HAL whose accesses to the work items' responses fail: the first
/// `fail` writes of a response's first run (`status` ..) when `write`, else
/// the first `fail` read-backs of a whole response.
struct RespFail {
    inner: FakeHal,
    write: bool,
    fail: std::sync::atomic::AtomicU32,
}

impl Hal for RespFail {
    fn name(&self) -> String {
        format!("resp_fail({})", self.inner.name())
    }
    fn map(
        &mut self,
        id: xunds::hal::RegionId,
        len: usize,
    ) -> Result<xunds::hal::RegionHandle, xunds::hal::HalError> {
        self.inner.map(id, len)
    }
    fn base_addr(&self, r: xunds::hal::RegionHandle) -> Result<u64, xunds::hal::HalError> {
        self.inner.base_addr(r)
    }
    fn event(
        &mut self,
        id: xunds::hal::EventId,
    ) -> Result<xunds::hal::EventHandle, xunds::hal::HalError> {
        self.inner.event(id)
    }
    fn access(
        &self,
        r: xunds::hal::RegionHandle,
        at: usize,
        a: xunds::hal::Access<'_>,
    ) -> Result<u64, xunds::hal::HalError> {
        use std::sync::atomic::Ordering::Relaxed;
        let resp =
            matches!(r.id(), xunds::hal::RegionId::WorkItems { .. }) && at % SIZE == off::RESP;
        let hit = match &a {
            xunds::hal::Access::Write(_) => self.write,
            xunds::hal::Access::Read(b) => !self.write && b.len() == INFER_RESP_SIZE,
            _ => false,
        };
        if resp
            && hit
            && self
                .fail
                .fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1))
                .is_ok()
        {
            return Err(xunds::hal::HalError::BadHandle);
        }
        self.inner.access(r, at, a)
    }
    fn notify(&self, ev: xunds::hal::EventHandle, n: u64) -> Result<(), xunds::hal::HalError> {
        self.inner.notify(ev, n)
    }
    fn wait(
        &self,
        ev: xunds::hal::EventHandle,
        timeout_ns: u64,
    ) -> Result<Wait, xunds::hal::HalError> {
        self.inner.wait(ev, timeout_ns)
    }
    fn event_fd(&self, ev: xunds::hal::EventHandle) -> Option<std::os::fd::RawFd> {
        self.inner.event_fd(ev)
    }
}

/// The response store (or its read-back) fails for the first execution:
/// it completes with `NRT_FAILURE`, counted and traced; the caller and the
/// counters see that status; the second execution completes normally, the
/// item goes back to the pool and the XU stays healthy.
#[test]
fn a_failed_response_store_or_load_completes_with_failure() {
    for write in [true, false] {
        let hal = RespFail {
            inner: FakeHal::new(),
            write,
            fail: std::sync::atomic::AtomicU32::new(1),
        };
        let (built, model, x) = common::small_system_on(hal, |_| {});
        let shared = Arc::clone(&built.shared);
        let cells = [Arc::new(StatusCell::new()), Arc::new(StatusCell::new())];
        {
            let mut lane = shared.lanes[0].lock().unwrap();
            for cell in &cells {
                lane.schedule(
                    common::request(&model, &x, Some(Arc::clone(cell)), 0),
                    &mut Cx::new(Nanos(0), "test", &mut NullTrace),
                )
                .unwrap();
            }
        }
        let mut r = common::det_runner(built);
        let sh = Arc::clone(&shared);
        let mut lines = Lines::default();
        r.run_until(&mut lines, |_| sh.pub_stats.applied().0 == 2)
            .unwrap();
        let free = {
            let mut lane = shared.lanes[0].lock().unwrap();
            (lane.free_items(), lane.pool().len())
        };
        let w = common::worker_stats(r);
        let what = if write { "store" } else { "read-back" };
        assert_eq!(cells[0].get(), Some(NrtStatus::FAILURE), "{what}");
        assert_eq!(cells[1].get(), Some(NrtStatus::SUCCESS), "{what}");
        assert_eq!((w.resp_failures, w.completed), (1, 2), "{what}");
        assert_eq!(w.by_status.get(NrtStatus::FAILURE), 1, "{what}");
        assert_eq!(
            (w.fsm_violations, w.by_status.get(NrtStatus::TIMEOUT)),
            (0, 0),
            "{what}"
        );
        assert_eq!(free.0, free.1, "{what}: the item free list is whole");
        assert_eq!(
            lines
                .0
                .iter()
                .filter(|l| l.contains(" resp_failure "))
                .count(),
            1,
            "{what}: traced once"
        );
        assert_eq!(
            shared.healths[0].state(),
            xunds::fsm::xu_health::XuHealthState::Healthy,
            "{what}"
        );
    }
}
