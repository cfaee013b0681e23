//! The whole pipeline (`xunds run`, threaded, on real mappings) against the
//! same four stages built from plain rtrb rings and threads, in the same run.
//!
//! Both sides do the same work per execution on the same simulated device:
//! write the input into the execution's own IO area, run the example MLP on
//! the engines (`engine::Executor` over device DRAM through the HAL), read
//! the outputs back and compare them with the CPU reference, and count the
//! outcome in an NDS slab through `nds::Writer`. The peer hands requests
//! stage to stage through `rtrb` rings (producer -> device -> worker ->
//! publisher, free IO areas back to the producer) and waits by spinning then
//! yielding; it has none of the XU ring, descriptors, doorbells, NQ records,
//! status cells, eventfds or health tracking. Ours is `system::job::run`
//! with one core (so both sides run four threads) and with four (one
//! device proxy per core; the peer then runs one device thread per core).
//!
//! `XUNDS_PIPELINE_N` sets the executions (default 20 000),
//! `XUNDS_PIPELINE_REPS` the best-of count (default 3). Heap allocations per
//! execution in our steady state are the difference of two runs (N and N/2
//! executions) under the counting allocator, divided by N/2.

use std::hint::black_box;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use xunds::actors::work::{Expectations, ResidentModel};
use xunds::device::engine::{Executor, Limits};
use xunds::device::model::MlpSpec;
use xunds::device::sequencer::{DramMemory, RequestExecutor};
use xunds::device::staging::build_request;
use xunds::hal::linux::LinuxHal;
use xunds::nds::{Counter, MappedSlab, Writer};
use xunds::system::alloc;
use xunds::system::builder::{build, SystemConfig};
use xunds::system::job::{self, JobConfig};
use xunds::wire::nds::counters::NcCounter;

use crate::harness::ratio;
use crate::ALLOC;

fn n() -> u64 {
    std::env::var("XUNDS_PIPELINE_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

fn reps() -> usize {
    std::env::var("XUNDS_PIPELINE_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

fn slab() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("xunds-bench-{}.nds", std::process::id()))
}

/// Ours: the job, threaded. Returns the wall time of the run proper and
/// the device proxies' doorbell wake-ups (eventfd writes) per execution.
fn ours(n: u64, vncs: u8) -> (Duration, f64) {
    let cfg = JobConfig {
        executions: n,
        vncs,
        models: 1,
        slab: Some(slab()),
        ..JobConfig::default()
    };
    let r = job::run(&cfg, &mut |_, _| {}).expect("job");
    assert_eq!(r.completed_ok, n);
    assert_eq!(r.outputs_wrong, 0);
    let _ = std::fs::remove_file(&r.slab);
    (r.elapsed, r.device.doorbell_signals as f64 / n as f64)
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

/// The peer: plain rtrb rings and threads, on the same device and the same
/// loaded model (one IO area per slot, like ours): a producer, one device
/// thread per core (`lanes`), a worker and a publisher.
fn peer(n: u64, lanes: u8) -> Duration {
    let spec = MlpSpec::EXAMPLE;
    let probe = spec.link(0x8_0000_0000, 0x8_0000_0000).unwrap();
    let inputs: Arc<Vec<Vec<f32>>> = Arc::new((0..16).map(|k| spec.example_input(k)).collect());
    let expected: Arc<Vec<Vec<f32>>> =
        Arc::new(inputs.iter().map(|x| probe.reference(x)).collect());
    let mut cfg = SystemConfig::new(lanes);
    cfg.dram_size = cfg.dram_for(&probe, 1);
    cfg.expected = Arc::new(Expectations::default());
    // The same device layout as ours (IO areas, code variants); the actors
    // are not run.
    let built = build(LinuxHal::new(), cfg, None).unwrap();
    let shared = Arc::clone(&built.shared);
    let model: Arc<ResidentModel> = shared.load_model(&spec.builder().unwrap(), "mlp").unwrap();
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
                let mut spins = 0;
                let slot = loop {
                    if let Ok(s) = free_rx[lane].pop() {
                        break s;
                    }
                    backoff(&mut spins);
                };
                let k = (i % inputs.len() as u64) as u16;
                let io = model.per_core[lane].io_pa[usize::from(slot)];
                let mut rest = &inputs[usize::from(k)][..];
                for t in &model.inputs {
                    let (now, later) = rest.split_at(t.elems as usize);
                    rest = later;
                    bytes.clear();
                    for v in now {
                        bytes.extend_from_slice(&v.to_bits().to_le_bytes());
                    }
                    mem.write_bytes(io + t.offset, &bytes).unwrap();
                }
                let mut req = Req { slot, input: k };
                let mut spins = 0;
                loop {
                    match to_dev[lane].push(req) {
                        Ok(()) => break,
                        Err(rtrb::PushError::Full(r)) => req = r,
                    }
                    backoff(&mut spins);
                }
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
                let mut spins = 0;
                let r = loop {
                    if let Ok(r) = rx.pop() {
                        break r;
                    }
                    backoff(&mut spins);
                };
                let req =
                    build_request(&model.per_core[lane].variants[usize::from(r.slot)], i == 0);
                let rep = exec.execute(&mem, &req, cycle);
                let ok = rep.first_error.is_none();
                cycle = rep.end_cycle;
                let mut d = Done {
                    slot: r.slot,
                    input: r.input,
                    ok,
                    cycles: rep.end_cycle,
                };
                let mut spins = 0;
                loop {
                    match tx.push(d) {
                        Ok(()) => break,
                        Err(rtrb::PushError::Full(x)) => d = x,
                    }
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
                let io = model.per_core[lane].io_pa[usize::from(d.slot)];
                vals.clear();
                for t in &model.outputs {
                    let b = &mut bytes[..t.elems as usize * 4];
                    mem.read_bytes(io + t.offset, b).unwrap();
                    vals.extend(
                        b.chunks_exact(4)
                            .map(|w| f32::from_le_bytes(w.try_into().unwrap())),
                    );
                }
                let want = &expected[usize::from(d.input)];
                let same = d.ok
                    && want
                        .iter()
                        .zip(&vals)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                wrong += u64::from(!same);
                let mut m = (same, d.cycles);
                let mut spins = 0;
                loop {
                    match to_pub.push(m) {
                        Ok(()) => break,
                        Err(rtrb::PushError::Full(x)) => m = x,
                    }
                    backoff(&mut spins);
                }
                let mut s = d.slot;
                let mut spins = 0;
                loop {
                    match free_tx[lane].push(s) {
                        Ok(()) => break,
                        Err(rtrb::PushError::Full(x)) => s = x,
                    }
                    backoff(&mut spins);
                }
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
            let mut spins = 0;
            let (ok, cycles) = loop {
                if let Ok(m) = pub_rx.pop() {
                    break m;
                }
                backoff(&mut spins);
            };
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

fn line(name: &str, n: u64, d: Duration) {
    println!(
        "  {name:<44} {:>9.2} us/exec {:>10.0} exec/s",
        d.as_secs_f64() * 1e6 / n as f64,
        n as f64 / d.as_secs_f64()
    );
}

/// `pipeline`: ours (1 and 4 cores) against the plain peer.
pub fn pipeline() {
    let n = n();
    let reps = reps();
    // Interleaved (ours, peer, ours, peer, ...) so both see the same machine
    // load; best of each.
    let (mut ours1, mut peer1, mut ours4, mut peer4) =
        (Duration::MAX, Duration::MAX, Duration::MAX, Duration::MAX);
    let (mut wakes1, mut wakes4) = (0.0f64, 0.0f64);
    for _ in 0..reps {
        let (d, w) = ours(n, 1);
        (ours1, wakes1) = (ours1.min(d), wakes1.max(w));
        peer1 = peer1.min(peer(n, 1));
        let (d, w) = ours(n, 4);
        (ours4, wakes4) = (ours4.min(d), wakes4.max(w));
        peer4 = peer4.min(peer(n, 4));
    }
    line("xunds run, 1 core (4 threads)", n, ours1);
    line("plain rtrb stages, 1 device lane (4 threads)", n, peer1);
    line("xunds run, 4 cores (10 threads)", n, ours4);
    line("plain rtrb stages, 4 device lanes (7 threads)", n, peer4);
    ratio(
        "xunds vs plain stages, 1 core",
        ours1,
        peer1,
        ">= 1.0x exec/s",
    );
    ratio(
        "xunds vs plain stages, 4 cores",
        ours4,
        peer4,
        ">= 1.0x exec/s",
    );
    println!(
        "  device doorbell wake-ups per execution (worst rep): 1 core {wakes1:.4}, 4 cores {wakes4:.4}"
    );
    // Allocations per execution in our steady state: the marginal cost of
    // N/2 more executions.
    let before = ALLOC.stats();
    ours(n / 2, 1);
    let mid = ALLOC.stats();
    ours(n, 1);
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
