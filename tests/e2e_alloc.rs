//! The whole pipeline makes no heap allocation per execution in steady
//! state: producer funnel, XU ring, staging and doorbell, sequencer and
//! engines, NQ harvest, worker (outputs checked), NDS publisher. All actors
//! run on this thread (the deterministic runner, tracing off), so the
//! per-thread counter of `CountingAlloc` sees every allocation any of them
//! makes.

use std::sync::Arc;

use xunds::actors::producer::{ProducerActor, Workload};
use xunds::actors::work::Expectations;
use xunds::actors::NullTrace;
use xunds::device::model::MlpSpec;
use xunds::hal::fake::FakeHal;
use xunds::system::alloc::{count_thread, CountingAlloc};
use xunds::system::builder::{build, SysActor, SystemConfig};
use xunds::system::runner::{DetConfig, DetRunner};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::new();

#[test]
fn steady_state_pipeline_makes_no_heap_allocation() {
    let cores = 2;
    let warmup = 2_000u64;
    let measured = if cfg!(debug_assertions) { 1_000 } else { 5_000 };
    let spec = MlpSpec::EXAMPLE;
    let inputs: Vec<Vec<f32>> = (0..8).map(|k| spec.example_input(k)).collect();
    let mut expected = Expectations::default();
    let probe = spec.link(0x8_0000_0000, 0x8_0000_0000).unwrap();
    for x in &inputs {
        expected.outputs.push(probe.reference(x));
    }
    let mut cfg = SystemConfig::new(cores);
    cfg.expected = Arc::new(expected);
    cfg.dram_size = cfg.dram_for(&probe, 1);
    let built = build(FakeHal::new(), cfg, None).unwrap();
    let shared = Arc::clone(&built.shared);
    let model = shared.load_model(&spec.builder().unwrap(), "mlp").unwrap();
    let work = Workload {
        executions: warmup + measured,
        models: vec![model],
        inputs: Arc::new(inputs),
    };
    let producer = ProducerActor::new(
        Arc::clone(&shared.lanes),
        work,
        Arc::clone(&shared.pub_stats),
        shared.tap.clone(),
    )
    .unwrap();
    let (_, daemons) = built.into_daemons();
    let mut r: DetRunner<SysActor<FakeHal>> = DetRunner::new(DetConfig::new(7));
    r.add(SysActor::Producer(producer));
    for d in daemons {
        r.add_daemon(d);
    }
    let mut trace = NullTrace;
    let completed = |s: &xunds::system::builder::Shared<FakeHal>| s.pub_stats.applied().0;
    // Warm up: every buffer, queue and table reaches its working size.
    r.run_until(&mut trace, |_| completed(&shared) >= warmup)
        .unwrap();
    let start = completed(&shared);
    let (res, used) = count_thread(|| r.run_until(&mut trace, |_| false));
    res.unwrap();
    let done = completed(&shared) - start;
    assert!(done >= measured - 64, "only {done} executions measured");
    println!(
        "{done} executions in steady state: {} allocations, {} bytes",
        used.allocations(),
        used.bytes
    );
    assert_eq!(
        used.allocations(),
        0,
        "heap allocations in the steady state: {used:?}"
    );
    let mut ok = 0;
    for a in r.into_actors() {
        if let SysActor::Worker(w) = a {
            assert_eq!(w.stats().outputs_wrong, 0);
            ok += w.stats().ok;
        }
    }
    assert_eq!(ok, warmup + measured);
}
