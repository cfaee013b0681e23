//! Shared checks of the end-to-end suites: conservation and exact counters
//! (the slab, read back through the read-only reader, against what the
//! workers and lanes saw and against the model's own numbers).

#![allow(dead_code)]

use xunds::device::model::{MlpSpec, ModelImage};
use xunds::system::job::JobReport;
use xunds::wire::nds::counters::{NcCounter, NdCounter};
use xunds::NrtStatus;

/// The example model's image (sizes, MACs).
pub fn probe() -> ModelImage {
    MlpSpec::EXAMPLE.link(0x8_0000_0000, 0x8_0000_0000).unwrap()
}

/// Device cycles of one clean execution of the example model.
pub const EXAMPLE_DEVICE_CYCLES: u64 = 3508;

/// Conservation and exact counters for any run.
pub fn check_counters(r: &JobReport, ring: u64) {
    // Every schedule call is accounted for exactly once.
    assert_eq!(
        r.producer.attempts,
        r.completed_ok
            + r.completed_err
            + r.producer.refused_full
            + r.producer.refused_unrecoverable
            + r.producer.failed,
        "conservation: {r:#?}"
    );
    assert_eq!(r.producer.accepted, r.completed_ok + r.completed_err);
    assert_eq!(
        r.executions,
        r.producer.accepted + r.producer.refused_unrecoverable + r.producer.failed
    );
    assert_eq!(r.fifo_violations, 0);
    assert_eq!(r.system.nds_errors, 0);
    // Device faults are not corrupt events: no actor refuses one.
    assert_eq!(r.fsm_violations.total(), 0, "{:?}", r.fsm_violations);
    assert_eq!(
        r.outputs_checked, r.completed_ok,
        "every good output checked"
    );
    assert_eq!(r.outputs_wrong, 0);
    assert_eq!(r.system.workers.len(), usize::from(r.config.vncs));
    let models = u64::from(r.config.models);
    let img = probe();
    for (c, (w, k)) in r.system.workers.iter().zip(&r.per_core).enumerate() {
        let l = r.system.lanes[c];
        let (acc, full, unrec) = (l.accepted, l.refused_full, l.refused_unrecoverable);
        let ok = w.by_status.get(NrtStatus::SUCCESS);
        let to = w.by_status.get(NrtStatus::TIMEOUT);
        let num = w.by_status.get(NrtStatus::EXEC_COMPLETED_WITH_NUM_ERR);
        let g = |n: NcCounter| k.get(n);
        assert_eq!(
            w.completed, acc,
            "core {c}: every accepted execution completed once"
        );
        assert_eq!(g(NcCounter::InferCompleted), ok, "core {c}");
        assert_eq!(g(NcCounter::InferTimedOut), to, "core {c}");
        assert_eq!(g(NcCounter::InferCompletedWithNumErr), num, "core {c}");
        assert_eq!(
            g(NcCounter::InferCompletedWithErr),
            w.completed - ok - to - num,
            "core {c}"
        );
        assert_eq!(g(NcCounter::InferenceCount), w.completed, "core {c}");
        assert_eq!(g(NcCounter::InferFailedToQueue), full + unrec, "core {c}");
        assert_eq!(
            u128::from(g(NcCounter::LatencyTotal)),
            w.latency.sum(),
            "core {c}"
        );
        assert_eq!(g(NcCounter::LatencyDevice), w.device_ns, "core {c}");
        assert_eq!(g(NcCounter::MacCount), w.macs, "core {c}");
        for (i, name) in [
            NcCounter::ErrGeneric,
            NcCounter::ErrNumerical,
            NcCounter::ErrModel,
            NcCounter::ErrTransient,
            NcCounter::ErrHw,
            NcCounter::ErrRt,
        ]
        .into_iter()
        .enumerate()
        {
            assert_eq!(g(name), w.classes[i], "core {c} {}", name.name());
        }
        assert_eq!(g(NcCounter::HwErrDmaAbort), w.dma_aborts, "core {c}");
        assert_eq!(g(NcCounter::ErrSwNqOverflow), w.nq_overflows, "core {c}");
        assert_eq!(g(NcCounter::ModelLoadCount), models, "core {c}");
        // Memory: per core, each model holds its shared load area and one
        // code variant and IO area per work item.
        assert_eq!(
            g(NcCounter::MemUsageCodeDevice),
            models * ring * img.mem.code
        );
        assert_eq!(
            g(NcCounter::MemUsageTensorsDevice),
            models * ring * img.mem.tensors
        );
        assert_eq!(
            g(NcCounter::MemUsageConstantsDevice),
            models * img.mem.constants
        );
        assert_eq!(
            g(NcCounter::MemUsageScratchpadDevice),
            models * img.mem.scratchpad
        );
        // Independent of the workers' own numbers: a clean execution is
        // 3072 MACs and 3508 device cycles.
        if w.completed == ok {
            assert_eq!(g(NcCounter::MacCount), ok * img.macs, "core {c}");
            assert_eq!(
                g(NcCounter::LatencyDevice),
                ok * EXAMPLE_DEVICE_CYCLES,
                "core {c}"
            );
        }
    }
    assert_eq!(
        r.nd[NdCounter::MemUsageCodeHost as usize],
        models * img.mem.code
    );
    assert_eq!(
        r.nd[NdCounter::MemUsageConstantsHost as usize],
        models * img.mem.constants
    );
    assert_eq!(
        r.model_records,
        usize::from(r.config.vncs) * r.config.models as usize
    );
    let per_model_core =
        ring * (img.mem.code + img.mem.tensors) + img.mem.constants + img.mem.scratchpad;
    assert_eq!(
        r.record_device_bytes,
        u64::from(r.config.vncs) * models * per_model_core
    );
    let by_status_total: u64 = r.by_status.iter().map(|e| e.1).sum();
    assert_eq!(by_status_total, r.producer.accepted);
}

/// A slab path for a test.
pub fn slab(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("xunds-test-{}-{name}.nds", std::process::id()))
}

/// A deterministic one-thread runner over `built`'s daemons.
pub fn det_runner<H: xunds::hal::Hal>(
    built: xunds::system::builder::Built<H>,
) -> xunds::system::runner::DetRunner<xunds::system::builder::SysActor<H>> {
    let daemons = built.daemons;
    let mut r = xunds::system::runner::DetRunner::new(xunds::system::runner::DetConfig::new(1));
    for d in daemons {
        r.add_daemon(d);
    }
    r
}

/// A deterministic one-core system (ring of 4) with the example MLP loaded
/// and its output for the returned input as expectation 0,
/// its daemons not yet running.
pub fn small_system() -> (
    xunds::system::builder::Built<xunds::sim::fake::FakeHal>,
    std::sync::Arc<xunds::actors::work::ResidentModel>,
    Vec<f32>,
) {
    small_system_on(xunds::sim::fake::FakeHal::new(), |_| {})
}

/// [`small_system`] on `hal` (a fault injector, say), its configuration
/// changed by `tweak`.
pub fn small_system_on<H: xunds::hal::Hal>(
    hal: H,
    tweak: impl FnOnce(&mut xunds::system::builder::SystemConfig),
) -> (
    xunds::system::builder::Built<H>,
    std::sync::Arc<xunds::actors::work::ResidentModel>,
    Vec<f32>,
) {
    let spec = MlpSpec::EXAMPLE;
    let probe = spec.link(0x8_0000_0000, 0x8_0000_0000).unwrap();
    let x = spec.example_input(4);
    let mut cfg = xunds::system::builder::SystemConfig::new(1);
    cfg.ring_capacity = 4;
    cfg.dram_size = cfg.dram_for(&probe, 1);
    // Expectation 0 is `x`'s output (requests that check it say `expect: 0`).
    cfg.expected = std::sync::Arc::new(xunds::actors::work::Expectations {
        outputs: vec![probe.reference(&x)],
    });
    tweak(&mut cfg);
    let built = xunds::system::builder::build(hal, cfg, None).unwrap();
    let model = built
        .shared
        .load_model(&spec.builder().unwrap(), "mlp")
        .unwrap();
    (built, model, x)
}

/// A schedule call's request for `model` on input `x`, its status into
/// `status` (if any), its output checked against expectation `expect`
/// (`NO_EXPECT`: not checked), no output buffer, tag 0.
pub fn request<'a>(
    model: &'a std::sync::Arc<xunds::actors::work::ResidentModel>,
    x: &'a [f32],
    status: Option<std::sync::Arc<xunds::ring::StatusCell>>,
    expect: u32,
) -> xunds::actors::producer::Request<'a> {
    xunds::actors::producer::Request {
        model,
        input: x,
        status,
        out: None,
        expect,
        tag: 0,
    }
}

/// The (one) worker's statistics, once a deterministic run is over.
pub fn worker_stats<H: xunds::hal::Hal>(
    r: xunds::system::runner::DetRunner<xunds::system::builder::SysActor<H>>,
) -> xunds::actors::worker::WorkerStats {
    r.into_actors()
        .into_iter()
        .find_map(|a| match a {
            xunds::system::builder::SysActor::Worker(w) => Some(w.stats().clone()),
            _ => None,
        })
        .expect("a worker")
}
