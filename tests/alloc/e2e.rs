//! The whole pipeline makes no heap allocation per execution in steady
//! state: producer funnel, XU ring, staging and doorbell, sequencer and
//! engines, NQ harvest, worker (outputs checked), NDS publisher. All actors
//! run on this thread (the deterministic runner, tracing off), so the
//! per-thread counter of `CountingAlloc` sees every allocation any of them
//! makes.

use crate::counting_alloc;
use std::sync::Arc;

use counting_alloc::count_thread;
use xunds::actors::producer::{ProducerActor, Workload};
use xunds::actors::work::Expectations;
use xunds::actors::NullTrace;
use xunds::device::model::MlpSpec;
use xunds::sim::fake::FakeHal;
use xunds::system::builder::{build, SysActor, SystemConfig};
use xunds::system::runner::{DetConfig, DetRunner};
use xunds::NrtStatus;

use crate::ALLOC;

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
        pacing: None,
        until: None,
    };
    let producer = ProducerActor::new(
        Arc::clone(&shared.lanes),
        work,
        Arc::clone(&shared.pub_stats),
        shared.tap.clone(),
    )
    .unwrap();
    let daemons = built.daemons;
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
            ok += w.stats().by_status.get(NrtStatus::SUCCESS);
        }
    }
    assert_eq!(ok, warmup + measured);
}

/// Live heap allocations (allocated minus freed), process-wide.
fn live_allocations() -> i64 {
    let s = ALLOC.stats();
    (s.allocs as i64) - (s.deallocs as i64)
}

#[test]
fn memory_stays_flat_under_one_percent_injected_faults() {
    use xunds::system::faults::FaultSpec;
    use xunds::system::job::{self, JobConfig};
    let executions = if cfg!(debug_assertions) {
        50_000
    } else {
        200_000
    };
    let slab = std::env::temp_dir().join(format!("xunds-test-{}-faultmem.nds", std::process::id()));
    let cfg = JobConfig {
        executions,
        vncs: 2,
        models: 1,
        seed: 3,
        faults: FaultSpec::parse("error:numerical@0.01").unwrap(),
        slab: Some(slab.clone()),
        max_wall: Some(std::time::Duration::from_secs(120)),
        ..JobConfig::default()
    };
    // Sample live allocations whenever the job reports progress (a
    // threaded run calls back every 50 ms, on this thread).
    let mut samples: Vec<(u64, i64)> = Vec::new();
    let r = job::run(&cfg, &mut |done, _| {
        samples.push((done, live_allocations()))
    })
    .unwrap();
    let _ = std::fs::remove_file(&slab);
    assert!(
        r.faults_injected as u64 >= executions / 200,
        "{}",
        r.faults_injected
    );
    assert_eq!(
        r.completed_ok + r.completed_err,
        executions,
        "numerical errors do not degrade"
    );
    // From a quarter of the run on, the live heap does not grow with the
    // faults injected (before: two strings per injection, kept forever).
    let warm: Vec<&(u64, i64)> = samples.iter().filter(|s| s.0 >= executions / 4).collect();
    assert!(warm.len() >= 3, "too few samples: {samples:?}");
    let first = warm[0].1;
    let max = warm.iter().map(|s| s.1).max().unwrap();
    eprintln!(
        "{} faults injected over {executions} executions; live allocations from {first} to at most {max}",
        r.faults_injected
    );
    assert!(max - first <= 64, "live heap grows: {samples:?}");
}
