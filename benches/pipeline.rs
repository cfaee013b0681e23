//! The whole pipeline (`xunds run`, threaded, on real mappings) against the
//! same four stages built from plain rtrb rings and threads, in the same run.
//!
//! Ours is `system::job::run` with one core (four actors: producer, worker,
//! device proxy, publisher) and with four (one worker and one device proxy
//! per core: ten actors), placed as `xunds run` places them by default
//! (`Placement::Shared`: one thread per CPU, at most cores + 1; the null
//! group also runs `--placement per-actor`, one thread per actor, for
//! comparison). Two peers run on a device built exactly as ours
//! builds it (`system::builder::build`: the same memory map, per-core IO
//! areas and code variants of the loaded model; its actors are never run).
//! Both hand work stage to stage through `rtrb` rings and wait by spinning a
//! little, then yielding; neither has our XU ring, work items, actors,
//! wakers, runner, mailboxes, eventfds or health tracking.
//!
//! - **Same stages** (`peer_same_stages`, the target): our stage work on the
//!   real device objects. The producer takes a free IO slot, writes the input
//!   into its IO area and stages the request and rings the doorbell through
//!   the real `Stager` (descriptors, request buffer, flow control); one
//!   device thread per core runs the real `Sequencer` on its core
//!   (`poll_one`, as our per-core device proxies: DMA copies, execution on
//!   the engines, NQ records); one worker thread harvests each core's NQ
//!   rings with the real `Harvester` (`expect`, `poll`), reads MAC_COUNT,
//!   reads the outputs back and checks them against the CPU reference; the
//!   publisher adds the same five counters per completion to an NDS slab
//!   through `nds::Writer`. This is what our system's plumbing must match.
//! - **Engines only** (`peer`, informational): the device thread calls
//!   `engine::Executor::execute` directly: no descriptors, DMA, doorbell or
//!   NQ records. With the device thread the bottleneck on one core, it does
//!   less work per execution than ours by construction, so it does not set
//!   the target; it shows what the device model's protocol costs.
//!
//! `XUNDS_PIPELINE_N` sets the executions (default 20 000),
//! `XUNDS_PIPELINE_REPS` the best-of count (default 3). Heap allocations per
//! execution in our steady state are the difference of two runs (N and N/2
//! executions) under the counting allocator, divided by N/2.

use std::hint::black_box;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::counting_alloc as alloc;
use xunds::actors::work::{Expectations, ResidentModel};
use xunds::device::engine::{Executor, Limits};
use xunds::device::memmap::reg;
use xunds::device::model::{null_model, MlpSpec, ModelBuilder};
use xunds::device::nq::{EngineMask, ExecStatus, HarvestError, Harvester};
use xunds::device::sequencer::{DramMemory, RequestExecutor};
use xunds::device::staging::{build_request, StageError};
use xunds::hal::linux::LinuxHal;
use xunds::hal::{Hal, Ordering as HalOrdering};
use xunds::nds::{Counter, MappedSlab, Writer};
use xunds::system::builder::{build, Shared, SystemConfig};
use xunds::system::job::{self, JobConfig, ModelKind};
use xunds::system::Placement;
use xunds::wire::nds::counters::NcCounter;

use crate::harness::{env_or, ratio};
use crate::ALLOC;

fn n() -> u64 {
    env_or("XUNDS_PIPELINE_N", 20_000)
}

fn reps() -> usize {
    env_or("XUNDS_PIPELINE_REPS", 3)
}

/// Where ours keeps its slab: where `xunds run` does by default
/// (`/dev/shm`, a tmpfs, when there is one). A slab file on a disk-backed
/// file system is written back by the kernel while the run goes on (dirty
/// pages, write faults after each writeback), which the peers' anonymous
/// slabs never pay: a slab in the temporary directory would measure that
/// instead of the pipeline.
fn slab() -> std::path::PathBuf {
    let name = format!("xunds-bench-{}.nds", std::process::id());
    match job::default_slab_path().parent() {
        Some(dir) => dir.join(name),
        None => std::env::temp_dir().join(name),
    }
}

/// Ours: the job, threaded. Returns the wall time of the run proper and
/// the device proxies' doorbell wake-ups (eventfd writes) per execution.
fn ours(n: u64, vncs: u8, model: ModelKind) -> (Duration, f64) {
    ours_placed(n, vncs, model, Placement::Shared)
}

/// [`ours`] with the actors placed as `placement` says.
fn ours_placed(n: u64, vncs: u8, model: ModelKind, placement: Placement) -> (Duration, f64) {
    let cfg = JobConfig {
        executions: n,
        vncs,
        models: 1,
        slab: Some(slab()),
        model,
        placement,
        ..JobConfig::default()
    };
    let r = job::run(&cfg, &mut |_, _| {}).expect("job");
    assert_eq!(r.completed_ok, n);
    assert_eq!(r.outputs_wrong, 0);
    let _ = std::fs::remove_file(&r.slab);
    (
        r.elapsed,
        r.system.device.doorbell_signals as f64 / n as f64,
    )
}

/// Wait for a ring to have an item / a slot: spin a little, then yield.
fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::hint::spin_loop();
    } else {
        thread::yield_now();
    }
}

struct Req {
    slot: u16,
    input: u16,
}

struct Done {
    slot: u16,
    input: u16,
    ok: bool,
    cycles: u64,
}

/// What both peers start from: a system built exactly as ours builds it
/// (`system::builder::build`: the device, its memory map, the per-core IO
/// areas and code variants of the loaded model), whose actors are never
/// run; the inputs and their CPU-reference outputs.
struct Setup {
    shared: Arc<Shared<LinuxHal>>,
    model: Arc<ResidentModel>,
    inputs: Arc<Vec<Vec<f32>>>,
    expected: Arc<Vec<Vec<f32>>>,
}

/// The builder of `kind` (the job's model, one variant).
fn builder(kind: ModelKind) -> ModelBuilder {
    match kind {
        ModelKind::Mlp => MlpSpec::EXAMPLE.builder().unwrap(),
        ModelKind::Null => null_model().unwrap(),
    }
}

fn setup(lanes: u8, kind: ModelKind) -> Setup {
    let spec = MlpSpec::EXAMPLE;
    let b = builder(kind);
    let probe = b.link(0x8_0000_0000, 0x8_0000_0000).unwrap();
    let inputs: Arc<Vec<Vec<f32>>> = Arc::new(
        (0..16)
            .map(|k| match kind {
                ModelKind::Mlp => spec.example_input(k),
                ModelKind::Null => vec![k as f32],
            })
            .collect(),
    );
    let expected: Arc<Vec<Vec<f32>>> =
        Arc::new(inputs.iter().map(|x| probe.reference(x)).collect());
    let mut cfg = SystemConfig::new(lanes);
    cfg.dram_size = cfg.dram_for(&probe, 1);
    cfg.expected = Arc::new(Expectations::default());
    let built = build(LinuxHal::new(), cfg, None).unwrap();
    let shared = Arc::clone(&built.shared);
    let model = shared.load_model(&b, kind.name()).unwrap();
    Setup {
        shared,
        model,
        inputs,
        expected,
    }
}

/// The stripped peer: plain rtrb rings and threads, on the same device and the same
/// loaded model (one IO area per slot, like ours): a producer, one device
/// thread per core (`lanes`), a worker and a publisher.
fn peer(n: u64, lanes: u8) -> Duration {
    let Setup {
        shared,
        model,
        inputs,
        expected,
    } = setup(lanes, ModelKind::Mlp);
    let slots = model.per_core[0].variants.len();
    let writer = Writer::new(MappedSlab::anonymous().unwrap()).unwrap();
    let l = usize::from(lanes);
    let (mut to_dev, mut dev_rx) = (Vec::new(), Vec::new());
    let (mut to_work, mut work_rx) = (Vec::new(), Vec::new());
    let (mut free_tx, mut free_rx) = (Vec::new(), Vec::new());
    for _ in 0..l {
        let (a, b) = rtrb::RingBuffer::<Req>::new(slots);
        to_dev.push(a);
        dev_rx.push(b);
        let (a, b) = rtrb::RingBuffer::<Done>::new(slots);
        to_work.push(a);
        work_rx.push(b);
        let (mut a, b) = rtrb::RingBuffer::<u16>::new(slots);
        for s in 0..slots as u16 {
            a.push(s).unwrap();
        }
        free_tx.push(a);
        free_rx.push(b);
    }
    let (mut to_pub, mut pub_rx) = rtrb::RingBuffer::<(bool, u64)>::new(1024);
    let go = Arc::new(std::sync::Barrier::new(3 + l));
    let t0 = Instant::now();
    let producer = {
        let (shared, model, inputs, go) =
            (shared.clone(), model.clone(), inputs.clone(), go.clone());
        thread::spawn(move || {
            go.wait();
            let mem = DramMemory::new(&**shared.dev.hal(), shared.dev.map());
            let mut bytes = Vec::with_capacity(1024);
            for i in 0..n {
                let lane = (i % l as u64) as usize;
                let slot = pop_spin(&mut free_rx[lane]);
                let k = (i % inputs.len() as u64) as u16;
                write_input(
                    &mem,
                    &model,
                    lane,
                    slot,
                    &inputs[usize::from(k)],
                    &mut bytes,
                );
                push_spin(&mut to_dev[lane], Req { slot, input: k });
            }
        })
    };
    let mut devices = Vec::new();
    for (lane, (mut rx, mut tx)) in dev_rx.into_iter().zip(to_work).enumerate() {
        let (shared, model, go) = (shared.clone(), model.clone(), go.clone());
        let count = n / l as u64 + u64::from((lane as u64) < n % l as u64);
        devices.push(thread::spawn(move || {
            go.wait();
            let mem = DramMemory::new(&**shared.dev.hal(), shared.dev.map());
            let mut exec = Executor::new(Limits::DEFAULT);
            let mut cycle = 0u64;
            for i in 0..count {
                let r = pop_spin(&mut rx);
                let req =
                    build_request(&model.per_core[lane].variants[usize::from(r.slot)], i == 0);
                let rep = exec.execute(&mem, &req, cycle);
                let ok = rep.first_error.is_none();
                cycle = rep.end_cycle;
                push_spin(
                    &mut tx,
                    Done {
                        slot: r.slot,
                        input: r.input,
                        ok,
                        cycles: rep.end_cycle,
                    },
                );
            }
        }));
    }
    let worker = {
        let (shared, model, expected, go) =
            (shared.clone(), model.clone(), expected.clone(), go.clone());
        thread::spawn(move || {
            go.wait();
            let mem = DramMemory::new(&**shared.dev.hal(), shared.dev.map());
            let mut bytes = vec![0u8; 1024];
            let mut vals: Vec<f32> = Vec::with_capacity(256);
            let mut wrong = 0u64;
            let mut lane = 0usize;
            for _ in 0..n {
                let mut spins = 0;
                let d = loop {
                    if let Ok(d) = work_rx[lane].pop() {
                        break d;
                    }
                    lane = (lane + 1) % l;
                    backoff(&mut spins);
                };
                let out = Outputs {
                    mem: &mem,
                    model: &model,
                    expected: &expected,
                };
                let same = d.ok && out.check(lane, d.slot, d.input, &mut bytes, &mut vals);
                wrong += u64::from(!same);
                push_spin(&mut to_pub, (same, d.cycles));
                push_spin(&mut free_tx[lane], d.slot);
                lane = (lane + 1) % l;
            }
            wrong
        })
    };
    let publisher = thread::spawn(move || {
        go.wait();
        let completed = Counter::nc(0, NcCounter::InferCompleted).unwrap();
        let count = Counter::nc(0, NcCounter::InferenceCount).unwrap();
        let macs = Counter::nc(0, NcCounter::MacCount).unwrap();
        let lat = Counter::nc(0, NcCounter::LatencyDevice).unwrap();
        let errs = Counter::nc(0, NcCounter::InferCompletedWithErr).unwrap();
        for _ in 0..n {
            let (ok, cycles) = pop_spin(&mut pub_rx);
            writer.add(count, 1).unwrap();
            writer.add(if ok { completed } else { errs }, 1).unwrap();
            writer.add(macs, 3072).unwrap();
            writer.add(lat, cycles & 0xFFF).unwrap();
        }
        black_box(writer.slab());
    });
    producer.join().unwrap();
    for d in devices {
        d.join().unwrap();
    }
    let wrong = worker.join().unwrap();
    publisher.join().unwrap();
    let d = t0.elapsed();
    assert_eq!(wrong, 0, "the peer's outputs must be right too");
    d
}

/// A request handed from the producer to a lane's worker in the
/// same-stages peer: what ours keeps in the work item for the worker.
#[derive(Clone, Copy)]
struct Staged {
    slot: u16,
    input: u16,
    exec_id: u32,
    engines: EngineMask,
    submitted: u64,
}

/// One completion's counter update (ours: `PubMsg::Completed`).
struct Report {
    core: u8,
    ok: bool,
    latency_total: u64,
    latency_device: u64,
    macs: u64,
}

/// One lane of the same-stages peer's worker thread.
struct WorkerLane {
    harvester: Harvester<LinuxHal>,
    rx: rtrb::Consumer<Staged>,
    free: rtrb::Producer<u16>,
    cur: Option<Staged>,
    last_macs: u64,
}

/// Both peers' producer: write `input` into the IO area of (`lane`, `slot`).
fn write_input(
    mem: &DramMemory<'_, LinuxHal>,
    model: &ResidentModel,
    lane: usize,
    slot: u16,
    input: &[f32],
    bytes: &mut Vec<u8>,
) {
    let io = model.per_core[lane].io_pa[usize::from(slot)];
    let mut rest = input;
    for t in &model.inputs {
        let (now, later) = rest.split_at(t.elems as usize);
        rest = later;
        bytes.clear();
        for v in now {
            bytes.extend_from_slice(&v.to_bits().to_le_bytes());
        }
        mem.write_bytes(io + t.offset, bytes).unwrap();
    }
}

/// Both peers' output check: read the execution's outputs back from its IO
/// area and compare them bit for bit with the CPU reference.
struct Outputs<'a> {
    mem: &'a DramMemory<'a, LinuxHal>,
    model: &'a ResidentModel,
    expected: &'a [Vec<f32>],
}

impl Outputs<'_> {
    fn check(
        &self,
        lane: usize,
        slot: u16,
        input: u16,
        bytes: &mut [u8],
        vals: &mut Vec<f32>,
    ) -> bool {
        let io = self.model.per_core[lane].io_pa[usize::from(slot)];
        vals.clear();
        for t in &self.model.outputs {
            let b = &mut bytes[..t.elems as usize * 4];
            self.mem.read_bytes(io + t.offset, b).unwrap();
            vals.extend(
                b.chunks_exact(4)
                    .map(|w| f32::from_le_bytes(w.try_into().unwrap())),
            );
        }
        let want = &self.expected[usize::from(input)];
        want.len() == vals.len()
            && want
                .iter()
                .zip(vals.iter())
                .all(|(a, b)| a.to_bits() == b.to_bits())
    }
}

fn push_spin<T>(tx: &mut rtrb::Producer<T>, mut v: T) {
    let mut spins = 0;
    loop {
        match tx.push(v) {
            Ok(()) => return,
            Err(rtrb::PushError::Full(x)) => v = x,
        }
        backoff(&mut spins);
    }
}

fn pop_spin<T>(rx: &mut rtrb::Consumer<T>) -> T {
    let mut spins = 0;
    loop {
        if let Ok(v) = rx.pop() {
            return v;
        }
        backoff(&mut spins);
    }
}

/// The same-stages peer: our four stages' work on the real device objects
/// (`Stager`, `Sequencer`, `Harvester`, `nds::Writer`), joined by plain
/// rtrb rings and plain threads that spin a little, then yield. A producer
/// (free IO slot, input into the IO area, `stage_and_doorbell`), one device
/// thread per core running a `Sequencer` on its core (`poll_one`, as our
/// per-core device proxies), one worker thread with a `Harvester` per core
/// (`expect`, `poll` until the execution's NQ records are in, MAC_COUNT,
/// outputs read back and checked) and a publisher.
fn peer_same_stages(n: u64, lanes: u8, kind: ModelKind) -> Duration {
    let Setup {
        shared,
        model,
        inputs,
        expected,
    } = setup(lanes, kind);
    let dev = &shared.dev;
    let slots = model.per_core[0].variants.len();
    let timeout = shared.cfg.timeout.as_u64();
    let l = usize::from(lanes);
    let mut stagers = Vec::new();
    let mut seqs = Vec::new();
    let mut to_work = Vec::new();
    let mut free_rx = Vec::new();
    let mut wlanes = Vec::new();
    for core in 0..lanes {
        stagers.push(dev.stager(core).unwrap());
        seqs.push(dev.sequencer(Executor::new(Limits::DEFAULT)));
        let (tx, rx) = rtrb::RingBuffer::<Staged>::new(slots);
        to_work.push(tx);
        let (mut ftx, frx) = rtrb::RingBuffer::<u16>::new(slots);
        for s in 0..slots as u16 {
            ftx.push(s).unwrap();
        }
        free_rx.push(frx);
        wlanes.push(WorkerLane {
            harvester: dev.harvester(core).unwrap(),
            rx,
            free: ftx,
            cur: None,
            last_macs: 0,
        });
    }
    let (mut to_pub, mut pub_rx) = rtrb::RingBuffer::<Report>::new(1024);
    let writer = Writer::new(MappedSlab::anonymous().unwrap()).unwrap();
    let go = Arc::new(std::sync::Barrier::new(3 + l));
    let t0 = Instant::now();
    let now = move || t0.elapsed().as_nanos() as u64;
    let producer = {
        let (shared, model, inputs, go) =
            (shared.clone(), model.clone(), inputs.clone(), go.clone());
        thread::spawn(move || {
            go.wait();
            let mem = DramMemory::new(&**shared.dev.hal(), shared.dev.map());
            let mut bytes = Vec::with_capacity(1024);
            for i in 0..n {
                let lane = (i % l as u64) as usize;
                let slot = pop_spin(&mut free_rx[lane]);
                let k = (i % inputs.len() as u64) as u16;
                let cm = &model.per_core[lane];
                write_input(
                    &mem,
                    &model,
                    lane,
                    slot,
                    &inputs[usize::from(k)],
                    &mut bytes,
                );
                let submitted = now();
                // Flow control as ours: a busy request buffer or a full
                // descriptor ring changes nothing; retry.
                let mut spins = 0;
                let staged = loop {
                    match stagers[lane].stage_and_doorbell(&cm.variants[usize::from(slot)], 0) {
                        Ok(s) => break s,
                        Err(StageError::Busy { .. } | StageError::RingFull { .. }) => {
                            backoff(&mut spins)
                        }
                        Err(e) => panic!("stage: {e}"),
                    }
                };
                push_spin(
                    &mut to_work[lane],
                    Staged {
                        slot,
                        input: k,
                        exec_id: staged.exec_id,
                        engines: staged.engines,
                        submitted,
                    },
                );
            }
        })
    };
    let mut devices = Vec::new();
    for (lane, mut seq) in seqs.into_iter().enumerate() {
        let go = go.clone();
        let count = n / l as u64 + u64::from((lane as u64) < n % l as u64);
        devices.push(thread::spawn(move || {
            go.wait();
            let core = lane as u8;
            let mut spins = 0;
            while u64::from(seq.executed(core)) < count {
                let p = seq.poll_one(core, now()).expect("device");
                assert_eq!(p.faults, 0, "device faults");
                if p.made_progress() {
                    spins = 0;
                } else {
                    backoff(&mut spins);
                }
            }
        }));
    }
    let worker = {
        let (shared, model, expected, go) =
            (shared.clone(), model.clone(), expected.clone(), go.clone());
        thread::spawn(move || {
            go.wait();
            let hal = &**shared.dev.hal();
            let map = shared.dev.map();
            let mem = DramMemory::new(hal, map);
            let mut bytes = vec![0u8; 1024];
            let mut vals: Vec<f32> = Vec::with_capacity(256);
            let (mut done, mut wrong) = (0u64, 0u64);
            let mut spins = 0;
            while done < n {
                let mut progress = false;
                for (lane, w) in wlanes.iter_mut().enumerate() {
                    let cur = match w.cur {
                        Some(c) => c,
                        None => {
                            let Ok(c) = w.rx.pop() else { continue };
                            w.harvester
                                .expect(c.exec_id, c.engines, c.submitted + timeout);
                            w.cur = Some(c);
                            progress = true;
                            c
                        }
                    };
                    // A stray completion, an overflow or a corrupt record
                    // cannot happen on this fault-free run: fail loudly.
                    let got = match w.harvester.poll(now()).expect("harvest") {
                        None => None,
                        Some(Ok(c)) if c.exec_id == cur.exec_id => {
                            Some((c.status == ExecStatus::Done, u64::from(c.device_cycles())))
                        }
                        Some(Err(HarvestError::Timeout { exec_id, .. }))
                            if exec_id == cur.exec_id =>
                        {
                            Some((false, 0))
                        }
                        Some(other) => panic!("lane {lane}: unexpected harvest {other:?}"),
                    };
                    let Some((ok, latency_device)) = got else {
                        continue;
                    };
                    progress = true;
                    // Ordering: Acquire pairs with the sequencer's Release
                    // store of MAC_COUNT (as our worker reads it).
                    let macs_now = hal
                        .load_u64(map.cores[lane].regs, reg::MAC_COUNT, HalOrdering::Acquire)
                        .unwrap();
                    let macs = macs_now.wrapping_sub(w.last_macs);
                    w.last_macs = macs_now;
                    let out = Outputs {
                        mem: &mem,
                        model: &model,
                        expected: &expected,
                    };
                    let same = ok && out.check(lane, cur.slot, cur.input, &mut bytes, &mut vals);
                    wrong += u64::from(!same);
                    push_spin(
                        &mut to_pub,
                        Report {
                            core: lane as u8,
                            ok: same,
                            latency_total: now().saturating_sub(cur.submitted),
                            latency_device,
                            macs,
                        },
                    );
                    push_spin(&mut w.free, cur.slot);
                    w.cur = None;
                    done += 1;
                }
                if progress {
                    spins = 0;
                } else {
                    backoff(&mut spins);
                }
            }
            wrong
        })
    };
    let publisher = thread::spawn(move || {
        go.wait();
        let nc = |core: u8, c: NcCounter| Counter::nc(u32::from(core), c).unwrap();
        let books: Vec<[Counter; 6]> = (0..lanes)
            .map(|c| {
                [
                    nc(c, NcCounter::InferenceCount),
                    nc(c, NcCounter::LatencyTotal),
                    nc(c, NcCounter::LatencyDevice),
                    nc(c, NcCounter::MacCount),
                    nc(c, NcCounter::InferCompleted),
                    nc(c, NcCounter::InferCompletedWithErr),
                ]
            })
            .collect();
        for _ in 0..n {
            let r = pop_spin(&mut pub_rx);
            let [count, total, device, macs, completed, errs] = &books[usize::from(r.core)];
            writer.add(*count, 1).unwrap();
            writer.add(*total, r.latency_total).unwrap();
            writer.add(*device, r.latency_device).unwrap();
            writer.add(*macs, r.macs).unwrap();
            writer
                .add(if r.ok { *completed } else { *errs }, 1)
                .unwrap();
        }
        black_box(writer.slab());
    });
    producer.join().unwrap();
    for d in devices {
        d.join().unwrap();
    }
    let wrong = worker.join().unwrap();
    publisher.join().unwrap();
    let d = t0.elapsed();
    assert_eq!(wrong, 0, "the same-stages peer's outputs must be right too");
    d
}

fn line(name: &str, n: u64, d: Duration) {
    println!(
        "  {name:<50} {:>9.2} us/exec {:>10.0} exec/s",
        d.as_secs_f64() * 1e6 / n as f64,
        n as f64 / d.as_secs_f64()
    );
}

/// `pipeline`: ours (1 and 4 cores) against both peers.
pub fn pipeline() {
    let n = n();
    let reps = reps();
    // Interleaved (ours, stripped peer, same-stages peer, ...) so all see
    // the same machine load; best of each.
    let mut best = [Duration::MAX; 6];
    let (mut wakes1, mut wakes4) = (0.0f64, 0.0f64);
    // `XUNDS_PIPELINE_VERBOSE=1` prints every rep (us/exec), to see the spread.
    let verbose = std::env::var_os("XUNDS_PIPELINE_VERBOSE").is_some();
    for rep in 0..reps {
        let (o1, w) = ours(n, 1, ModelKind::Mlp);
        wakes1 = wakes1.max(w);
        let (s1, p1) = (peer(n, 1), peer_same_stages(n, 1, ModelKind::Mlp));
        let (o4, w) = ours(n, 4, ModelKind::Mlp);
        wakes4 = wakes4.max(w);
        let (s4, p4) = (peer(n, 4), peer_same_stages(n, 4, ModelKind::Mlp));
        let this = [o1, s1, p1, o4, s4, p4];
        if verbose {
            let us: Vec<String> = this
                .iter()
                .map(|d| format!("{:.2}", d.as_secs_f64() * 1e6 / n as f64))
                .collect();
            println!(
                "  rep {rep}: ours1 strip1 same1 ours4 strip4 same4 = {}",
                us.join(" ")
            );
        }
        for (b, d) in best.iter_mut().zip(this) {
            *b = (*b).min(d);
        }
    }
    let [ours1, strip1, same1, ours4, strip4, same4] = best;
    line("xunds run, 1 core (4 actors, shared threads)", n, ours1);
    line("plain rtrb, same stages, 1 lane (4 threads)", n, same1);
    line("plain rtrb, engines only (no descr./NQ), 1 lane", n, strip1);
    line("xunds run, 4 cores (10 actors, shared threads)", n, ours4);
    line("plain rtrb, same stages, 4 lanes (7 threads)", n, same4);
    line(
        "plain rtrb, engines only (no descr./NQ), 4 lanes",
        n,
        strip4,
    );
    ratio(
        "xunds vs plain same stages, 1 core",
        ours1,
        same1,
        ">= 1.0x exec/s",
    );
    ratio(
        "xunds vs plain same stages, 4 cores",
        ours4,
        same4,
        ">= 1.0x exec/s",
    );
    ratio(
        "xunds vs engines-only stages, 1 core",
        ours1,
        strip1,
        "informational",
    );
    ratio(
        "xunds vs engines-only stages, 4 cores",
        ours4,
        strip4,
        "informational",
    );
    println!(
        "  device doorbell wake-ups per execution (worst rep): 1 core {wakes1:.4}, 4 cores {wakes4:.4}"
    );
    // Allocations per execution in our steady state: the marginal cost of
    // N/2 more executions.
    let before = ALLOC.stats();
    ours(n / 2, 1, ModelKind::Mlp);
    let mid = ALLOC.stats();
    ours(n, 1, ModelKind::Mlp);
    let after = ALLOC.stats();
    let small = mid.since(&before).allocations() as f64;
    let big = after.since(&mid).allocations() as f64;
    let per = (big - small) / (n - n / 2) as f64;
    println!(
        "  heap allocations per execution (steady state): {per:.4}  (run of {}: {big:.0}, run of {}: {small:.0}; counting allocator {})",
        n,
        n / 2,
        if alloc::is_active() { "on" } else { "OFF" }
    );
}

/// User + system CPU time of this whole process so far (every thread).
fn process_cpu() -> Duration {
    // SAFETY: a zeroed rusage is a valid out-parameter; getrusage writes it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF and a valid pointer to an rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The host path's stages one after another on one thread, with the null
/// model on one core: each stage's work on the real device objects (as the
/// same-stages peer uses them), timed apart. No thread hand-offs, so no
/// cache-line transfers: the CPU cost of each stage's own work. Returns
/// ns per execution for (producer: input into the IO area, staging and
/// doorbell, sequencer protocol (with the one-instruction execution), NQ
/// harvest, worker: MAC_COUNT and the output check, publisher: five NDS
/// counter adds), each the lowest mean over batches of 256, less one timer
/// read.
fn stage_costs(n: u64) -> [f64; 6] {
    let Setup {
        shared,
        model,
        inputs,
        expected,
    } = setup(1, ModelKind::Null);
    let dev = &shared.dev;
    let hal = &**dev.hal();
    let map = dev.map();
    let mem = DramMemory::new(hal, map);
    let mut stager = dev.stager(0).unwrap();
    let mut seq = dev.sequencer(Executor::new(Limits::DEFAULT));
    let mut harvester = dev.harvester(0).unwrap();
    let writer = Writer::new(MappedSlab::anonymous().unwrap()).unwrap();
    let nc = |c: NcCounter| Counter::nc(0, c).unwrap();
    let books = [
        nc(NcCounter::InferenceCount),
        nc(NcCounter::LatencyTotal),
        nc(NcCounter::LatencyDevice),
        nc(NcCounter::MacCount),
        nc(NcCounter::InferCompleted),
    ];
    let slots = model.per_core[0].variants.len();
    let (mut bytes, mut obytes, mut vals) = (Vec::with_capacity(64), vec![0u8; 64], Vec::new());
    let t0 = Instant::now();
    let now = || t0.elapsed().as_nanos() as u64;
    // Per batch of BATCH executions; each stage's figure is its lowest
    // batch mean (a batch the scheduler preempted only reads high, so on a
    // shared machine the minimum is the stage's own cost).
    const BATCH: u64 = 256;
    let mut best = [f64::MAX; 6];
    let mut spent = [0u64; 6];
    let mut last_macs = 0u64;
    for i in 0..n {
        let slot = (i % slots as u64) as u16;
        let k = (i % inputs.len() as u64) as u16;
        let a = Instant::now();
        write_input(&mem, &model, 0, slot, &inputs[usize::from(k)], &mut bytes);
        let b = Instant::now();
        let staged = stager
            .stage_and_doorbell(&model.per_core[0].variants[usize::from(slot)], 0)
            .expect("stage");
        let c = Instant::now();
        let before = seq.executed(0);
        while seq.executed(0) == before {
            seq.poll_one(0, now()).expect("device");
        }
        // The NQ records of the execution's last engine are written by
        // the poll that finished it.
        let d = Instant::now();
        harvester.expect(staged.exec_id, staged.engines, u64::MAX / 2);
        let done = loop {
            if let Some(r) = harvester.poll(now()).expect("harvest") {
                break r.expect("completion");
            }
            // Records still in flight: let the device write them.
            seq.poll_one(0, now()).expect("device");
        };
        let e = Instant::now();
        // Ordering: Acquire pairs with the sequencer's Release store of
        // MAC_COUNT (as our worker reads it).
        let macs_now = hal
            .load_u64(map.cores[0].regs, reg::MAC_COUNT, HalOrdering::Acquire)
            .unwrap();
        let macs = macs_now.wrapping_sub(last_macs);
        last_macs = macs_now;
        let out = Outputs {
            mem: &mem,
            model: &model,
            expected: &expected,
        };
        let ok = done.status == ExecStatus::Done && out.check(0, slot, k, &mut obytes, &mut vals);
        assert!(ok, "null model output");
        let f = Instant::now();
        let [count, total, device, mc, completed] = &books;
        writer.add(*count, 1).unwrap();
        writer.add(*total, 1).unwrap();
        writer
            .add(*device, u64::from(done.device_cycles()))
            .unwrap();
        writer.add(*mc, macs).unwrap();
        writer.add(*completed, 1).unwrap();
        let g = Instant::now();
        for (s, (x, y)) in spent
            .iter_mut()
            .zip([(a, b), (b, c), (c, d), (d, e), (e, f), (f, g)])
        {
            *s += (y - x).as_nanos() as u64;
        }
        if (i + 1) % BATCH == 0 {
            for (b, s) in best.iter_mut().zip(spent.iter_mut()) {
                *b = b.min(*s as f64 / BATCH as f64);
                *s = 0;
            }
        }
    }
    black_box(writer.slab());
    // What one timer read pair costs, taken off each stage.
    let cal = (0..n / BATCH)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..BATCH {
                black_box(Instant::now());
            }
            t.elapsed().as_nanos() as f64 / BATCH as f64
        })
        .fold(f64::MAX, f64::min);
    best.map(|b| (b - cal).max(0.0))
}

/// One ring item (submit + trigger + pop) on one thread, no cross-core
/// traffic: the unit the host path is measured in. ns per item, best of 8.
fn ring_item_ns(n: u64) -> f64 {
    let n = n / 8;
    let d = crate::harness::best_of(8, || crate::ring::one_thread_bursts(n));
    d.as_nanos() as f64 / n as f64
}

/// `pipeline_null`: the host path apart from the engines. Ours and the
/// same-stages peer with the null model (one instruction, no MACs), our
/// process's CPU time per execution, each stage's CPU cost on one thread,
/// and the ring's own per-item cost in the same run.
pub fn pipeline_null() {
    let n = n();
    let reps = reps();
    let mut best = [Duration::MAX; 6];
    let mut cpu1 = Duration::MAX;
    for _ in 0..reps {
        let c0 = process_cpu();
        let (o1, _) = ours(n, 1, ModelKind::Null);
        cpu1 = cpu1.min(process_cpu() - c0);
        let p1 = peer_same_stages(n, 1, ModelKind::Null);
        let (o4, _) = ours(n, 4, ModelKind::Null);
        let p4 = peer_same_stages(n, 4, ModelKind::Null);
        let (a1, _) = ours_placed(n, 1, ModelKind::Null, Placement::PerActor);
        let (a4, _) = ours_placed(n, 4, ModelKind::Null, Placement::PerActor);
        for (b, d) in best.iter_mut().zip([o1, p1, o4, p4, a1, a4]) {
            *b = (*b).min(d);
        }
    }
    let [ours1, same1, ours4, same4, actor1, actor4] = best;
    line("xunds run --model null, 1 core (shared threads)", n, ours1);
    line("plain rtrb, same stages, null model, 1 lane", n, same1);
    line("xunds run --model null, 4 cores (shared threads)", n, ours4);
    line("plain rtrb, same stages, null model, 4 lanes", n, same4);
    line("  the same, --placement per-actor, 1 core", n, actor1);
    line("  the same, --placement per-actor, 4 cores", n, actor4);
    ratio(
        "xunds vs same stages, null, 1 core",
        ours1,
        same1,
        ">= 1.0x exec/s",
    );
    ratio(
        "xunds vs same stages, null, 4 cores",
        ours4,
        same4,
        ">= 1.0x exec/s",
    );
    ratio(
        "per-actor vs shared threads, null, 4 cores",
        actor4,
        ours4,
        "informational",
    );
    println!(
        "  xunds run --model null, 1 core: {:.0} ns host CPU per execution, all threads (spinning and yielding included; best rep)",
        cpu1.as_nanos() as f64 / n as f64
    );
}

/// `host_stages`: each stage's host CPU cost with the null model on one
/// thread ([`stage_costs`]), against one ring item in the same run.
pub fn host_stages() {
    let n = n();
    let stages = stage_costs(n);
    let ring = ring_item_ns(n.max(1 << 20));
    let names = [
        "producer (input into the IO area)",
        "staging + doorbell",
        "sequencer protocol (+1-insn execution)",
        "NQ harvest",
        "worker (MAC_COUNT, output check)",
        "publisher (5 NDS counter adds)",
    ];
    println!("  host CPU ns per execution by stage (null model, one thread, no hand-offs):");
    for (name, ns) in names.iter().zip(stages) {
        println!("    {name:<46} {ns:>9.1} ns");
    }
    let total: f64 = stages.iter().sum();
    println!("    {:<46} {total:>9.1} ns", "whole host path (sum)");
    println!(
        "    {:<46} {ring:>9.1} ns",
        "one ring item (submit+trigger+pop), same run"
    );
    println!(
        "  RATIO {:<40} {:>6.1}x  (target <= 50x)",
        "host path / one ring item",
        total / ring
    );
    // With hardware the sequencer's stage runs on the device: what is left
    // is what the host's CPU pays per execution.
    let device = names
        .iter()
        .position(|n| n.starts_with("sequencer"))
        .expect("a sequencer stage");
    let host_side = total - stages[device];
    println!(
        "  RATIO {:<40} {:>6.1}x  (informational: {host_side:.1} ns)",
        "host path without the device's stage / item",
        host_side / ring
    );
    println!(
        "  RATIO {:<40} {:>6.2}x  (target <= 1.0x)",
        "device stage / host stages",
        stages[device] / host_side
    );
}
