//! The XU reset (`fsm::xu_health`, `System::reset`, `xunds run --recover`):
//! a faulty run of every fault kind keeps executing to the end with exact
//! conservation and slab counters; a reset with executions in flight
//! completes each exactly once; an event the reset's state does not accept
//! is a counted violation.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use xunds::actors::{Cx, Nanos, NullTrace};
use xunds::device::model::MlpSpec;
use xunds::fsm::xu_health::{XuHealthEvent, XuHealthState};
use xunds::hal::linux::LinuxHal;
use xunds::ring::StatusCell;
use xunds::sim::fault::{Fault, FaultInjector, FaultPlan, FaultRule, Trigger};
use xunds::system::api::{ScheduleOpts, System};
use xunds::system::builder::{SlabTarget, SysActor, SystemConfig};
use xunds::system::faults::FaultSpec;
use xunds::system::job::{self, JobConfig, JobReport};
use xunds::NrtStatus;

/// Every fault kind that degrades or wedges an XU, and a mix of them all.
const KINDS: [&str; 8] = [
    "timeout@0.002",
    "doorbell@0.004",
    "corrupt:len@0.002",
    "corrupt:ring_id@0.002",
    "corrupt:addr@0.002",
    "nq_overflow@0.002",
    "error:hw@0.005",
    "timeout@0.0005,doorbell@0.001,corrupt:len@0.0003,corrupt:ring_id@0.0003,\
     corrupt:addr@0.0003,nq_overflow@0.0005,error:hw@0.001,error:numerical@0.002",
];

fn run(faults: &str, deterministic: bool, executions: u64) -> JobReport {
    let name = format!(
        "reset-{deterministic}-{}",
        faults.replace([':', '@', '#', '/', ','], "_")
    );
    let cfg = JobConfig {
        executions,
        vncs: 2,
        models: 2,
        seed: 9,
        deterministic,
        faults: FaultSpec::parse(faults).unwrap(),
        slab: Some(common::slab(&name)),
        recover: true,
        // Threaded: a lost record is found at its deadline; keep it short.
        timeout_ns: (!deterministic).then_some(50_000_000),
        ..JobConfig::default()
    };
    let r = job::run(&cfg, &mut |_, _| {}).unwrap();
    let _ = std::fs::remove_file(&r.slab);
    r
}

fn check_kept_executing(r: &JobReport, what: &str) {
    common::check_counters(r, 32);
    assert!(r.faults_injected > 0, "{what}: no fault injected");
    // A dropped doorbell only delays a request while later doorbells keep
    // coming (the tail catches up), so a closed-loop run times out only at
    // its end, when the run is over; its reset is tested through the API
    // (`reset_with_executions_in_flight_completes_each_once`).
    assert!(
        r.recoveries > 0 || what.starts_with("doorbell"),
        "{what}: no reset"
    );
    // Nothing was given up: every execution ran (with its own status).
    assert_eq!(r.producer.refused_unrecoverable, 0, "{what}");
    assert_eq!(r.producer.failed, 0, "{what}");
    assert_eq!(r.producer.accepted, r.executions, "{what}");
    assert_eq!(r.outputs_wrong, 0, "{what}");
}

/// Deterministic runs: each fault kind with `--recover` executes to the end
/// with exact conservation and slab counters, resetting again and again.
#[test]
fn every_fault_kind_with_recover_runs_to_the_end() {
    for faults in KINDS {
        let r = run(faults, true, 4_000);
        eprintln!(
            "{faults}: {} injected, {} resets, {} ok, {} err, {} timed out",
            r.faults_injected, r.recoveries, r.completed_ok, r.completed_err, r.timed_out
        );
        check_kept_executing(&r, faults);
    }
}

/// The same mix on the threaded runner (real races between the lanes, the
/// workers and the device proxies around each reset).
#[test]
fn threaded_mix_with_recover_runs_to_the_end() {
    let r = run(KINDS[7], false, 20_000);
    check_kept_executing(&r, "threaded mix");
}

/// Without `--recover` the same mix loses the XUs: the difference is the
/// reset, not the seed.
#[test]
fn without_recover_the_mix_gives_executions_up() {
    let name = "reset-off";
    let cfg = JobConfig {
        executions: 4_000,
        vncs: 2,
        models: 2,
        seed: 9,
        deterministic: true,
        faults: FaultSpec::parse(KINDS[7]).unwrap(),
        slab: Some(common::slab(name)),
        ..JobConfig::default()
    };
    let r = job::run(&cfg, &mut |_, _| {}).unwrap();
    let _ = std::fs::remove_file(&r.slab);
    common::check_counters(&r, 32);
    assert_eq!(r.recoveries, 0);
    assert!(r.producer.refused_unrecoverable > r.executions / 2, "{r:?}");
}

fn api_cfg(name: &str) -> SystemConfig {
    let mut c = SystemConfig::new(1);
    c.slab = SlabTarget::Path(
        std::env::temp_dir().join(format!("xunds-reset-{}-{name}.nds", std::process::id())),
    );
    c.timeout = Nanos::from_millis(30_000);
    c
}

/// `System::reset` with executions in flight: a dropped doorbell leaves the
/// last request queued on the device (it would wait for its 30 s
/// deadline); the reset stops the device, each execution completes exactly
/// once (the executed ones with their results, the stuck one aborted with
/// 101), and the XU runs again, well before any deadline.
#[test]
fn reset_with_executions_in_flight_completes_each_once() {
    let plan = FaultPlan {
        seed: 1,
        rules: vec![FaultRule {
            fault: Fault::DropDoorbell,
            trigger: Trigger::Nth(1),
            core: Some(0),
        }],
    };
    let sys = System::start(
        FaultInjector::new(LinuxHal::new(), plan),
        api_cfg("inflight"),
    )
    .unwrap();
    let model = sys.load_mlp(&MlpSpec::EXAMPLE, "mlp").unwrap();
    let x = MlpSpec::EXAMPLE.example_input(1);
    let mut calls = Vec::new();
    for _ in 0..6 {
        let opts = ScheduleOpts::for_model(&model);
        let status = opts.status.clone().unwrap();
        let seq = sys.schedule(0, &model, &x, opts).unwrap();
        calls.push((seq, status));
    }
    let started = Instant::now();
    sys.reset(0, Duration::from_secs(20)).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "no deadline waited"
    );
    let mut aborted = 0;
    for (seq, status) in &calls {
        assert_eq!(sys.is_completed(*seq), Ok(true));
        match status.get() {
            Some(NrtStatus::SUCCESS) => {}
            Some(NrtStatus::EXEC_UNIT_UNRECOVERABLE) => aborted += 1,
            s => panic!("seq {seq:?}: {s:?}"),
        }
    }
    assert!(aborted >= 1, "the stuck request was aborted");
    // Healthy again, and it computes the right thing.
    let e = sys.execute(0, &model, &x, Duration::from_secs(20)).unwrap();
    assert_eq!(e.status, NrtStatus::SUCCESS);
    assert_eq!(e.outputs, model.reference(&x));
    assert!(sys.quiesce(Duration::from_secs(20)));
    let path = sys.slab_path().unwrap().to_path_buf();
    let rep = sys.shutdown().unwrap();
    let w = &rep.workers[0];
    assert_eq!(w.completed, 7, "each execution completed exactly once");
    assert_eq!(w.aborted, aborted);
    assert_eq!(w.recoveries, 1);
    assert_eq!(w.fifo_violations, 0);
    assert_eq!(w.fsm_violations, 0);
    let seven = xunds::actors::producer::LaneStats {
        accepted: 7,
        ..Default::default()
    };
    assert_eq!(rep.lanes[0], seven);
    assert_eq!(rep.device.resets, 2, "a stop and an NQ re-initialisation");
    let _ = std::fs::remove_file(path);
}

/// A reset can be asked for a healthy XU too, and a second one while the
/// first runs is refused (a value, not a panic).
#[test]
fn reset_of_a_healthy_xu_and_a_reset_while_resetting() {
    let sys = System::start(LinuxHal::new(), api_cfg("healthy")).unwrap();
    let model = sys.load_mlp(&MlpSpec::EXAMPLE, "mlp").unwrap();
    let x = MlpSpec::EXAMPLE.example_input(2);
    assert_eq!(
        sys.execute(0, &model, &x, Duration::from_secs(20))
            .unwrap()
            .status,
        NrtStatus::SUCCESS
    );
    sys.reset(0, Duration::from_secs(20)).unwrap();
    for _ in 0..3 {
        let e = sys.execute(0, &model, &x, Duration::from_secs(20)).unwrap();
        assert_eq!(e.outputs, model.reference(&x));
    }
    assert_eq!(
        sys.reset(7, Duration::from_secs(1)),
        Err(xunds::actors::work::RecoverError::NoSuchXu)
    );
    let path = sys.slab_path().unwrap().to_path_buf();
    sys.shutdown().unwrap();
    let _ = std::fs::remove_file(path);
}

/// An event the reset's state does not accept (a fault reported while
/// RESETTING, when nothing is in flight; a second `reset`) is a counted,
/// traced violation that changes nothing.
#[test]
fn an_event_the_reset_state_refuses_is_a_counted_violation() {
    let (built, model, x) = common::small_system();
    let shared = Arc::clone(&built.shared);
    let mut trace = NullTrace;
    let mut cx = Cx::new(Nanos(0), "test", &mut trace);
    shared.lanes[0]
        .lock()
        .unwrap()
        .begin_reset(&mut cx)
        .unwrap();
    assert!(shared.lanes[0]
        .lock()
        .unwrap()
        .begin_reset(&mut cx)
        .is_err());
    let h = &shared.healths[0];
    h.step(XuHealthEvent::DeviceStopped, 0, &mut cx).unwrap();
    h.step(XuHealthEvent::Drained, 0, &mut cx).unwrap();
    let mut daemons = built.daemons;
    let mut seen = false;
    for d in &mut daemons {
        if let SysActor::Worker(w) = d {
            w.inject_health_event(XuHealthEvent::Timeout, &mut cx);
            w.inject_health_event(XuHealthEvent::Reset, &mut cx);
            assert_eq!(w.stats().fsm_violations, 2);
            seen = true;
        }
    }
    assert!(seen);
    assert_eq!(h.state(), XuHealthState::Resetting);
    // A schedule meanwhile is a transient refusal.
    let r = shared.lanes[0].lock().unwrap().schedule(
        common::request(
            &model,
            &x,
            Some(Arc::new(StatusCell::new())),
            xunds::actors::work::NO_EXPECT,
        ),
        &mut cx,
    );
    assert_eq!(r, Err(NrtStatus::QUEUE_FULL));
}

/// `xunds run --recover --json` says what the resets did (`recoveries`,
/// `aborted`) and lists every bad-item kind (`bad_items`), and nothing is
/// refused with 101.
#[test]
fn run_json_reports_resets_aborts_and_bad_items() {
    let slab = common::slab("reset-cli");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_xunds"))
        .args([
            "run",
            "--executions",
            "3000",
            "--vncs",
            "2",
            "--deterministic",
            "--faults",
            "timeout@0.002,corrupt:addr@0.002",
            "--recover",
            "--json",
            "--slab",
        ])
        .arg(&slab)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&slab);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["refused_unrecoverable"], 0, "{j}");
    assert!(j["recoveries"].as_u64().unwrap() > 0, "{j}");
    let aborted = j["aborted"].as_u64().unwrap();
    assert!(
        aborted
            <= j["by_status"]["NRT_EXEC_UNIT_UNRECOVERABLE"]
                .as_u64()
                .unwrap_or(0)
                + j["by_status"]["NRT_EXEC_SW_NQ_OVERFLOW"]
                    .as_u64()
                    .unwrap_or(0)
                + j["by_status"]["NRT_HW_ERROR"].as_u64().unwrap_or(0),
        "{j}"
    );
    let bad = j["bad_items"].as_object().unwrap();
    assert_eq!(bad.len(), xunds::actors::work::BadItem::KINDS, "{j}");
    assert!(bad.contains_key("unknown_mod_ref"));
    assert!(bad.contains_key("bad_resources"));
    assert!(bad.values().all(|v| v == 0), "{j}");
}

/// An overwritten ring slot (a stray writer changed its seq_id): the peek
/// refuses it and the XU degrades; the reset (started by the worker with
/// `recover`, by the caller without) stops the device, and its drain
/// discards the slot: that execution completes aborted with its caller's
/// cell unwritten (no word of the slot is trusted, the status pointer
/// least of all) and its work item back in the pool; the one behind it
/// completes once; the XU is healthy again and computes. A drain that
/// waited for a pop the ring refuses would leave the XU DRAINING and hold
/// every schedule for good.
#[test]
fn a_reset_discards_an_overwritten_slot() {
    for recover in [true, false] {
        let (built, model, x) =
            common::small_system_on(xunds::sim::fake::FakeHal::new(), |c| c.recover = recover);
        let shared = Arc::clone(&built.shared);
        let mut trace = NullTrace;
        let request =
            |cell: &Arc<StatusCell>| common::request(&model, &x, Some(Arc::clone(cell)), 0);
        let cells: [Arc<StatusCell>; 3] = Default::default();
        {
            let mut lane = shared.lanes[0].lock().unwrap();
            let mut cx = Cx::new(Nanos(0), "test", &mut trace);
            let first = lane.schedule(request(&cells[0]), &mut cx).unwrap();
            lane.schedule(request(&cells[1]), &mut cx).unwrap();
            lane.queue().corrupt_seq_id(first, first.0 ^ 0x40);
        }
        let mut r = common::det_runner(built);
        let health = Arc::clone(&shared.healths[0]);
        let sh = Arc::clone(&shared);
        let bounded = |r: &xunds::system::runner::DetRunner<_>| r.stats().polls >= 100_000;
        if !recover {
            r.run_until(&mut trace, |r| {
                health.state() == XuHealthState::Degraded || bounded(r)
            })
            .unwrap();
            assert_eq!(health.state(), XuHealthState::Degraded);
            let mut cx = Cx::new(Nanos(0), "test", &mut trace);
            shared.lanes[0]
                .lock()
                .unwrap()
                .begin_reset(&mut cx)
                .unwrap();
        }
        r.run_until(&mut trace, |r| {
            (sh.pub_stats.applied().0 == 2 && health.state() == XuHealthState::Healthy)
                || bounded(r)
        })
        .unwrap();
        assert_eq!(health.state(), XuHealthState::Healthy, "recover={recover}");
        assert_eq!(
            cells[0].get(),
            None,
            "no status through the overwritten slot"
        );
        assert!(
            matches!(
                cells[1].get(),
                Some(NrtStatus::SUCCESS | NrtStatus::EXEC_UNIT_UNRECOVERABLE)
            ),
            "{:?}",
            cells[1].get()
        );
        // Healthy again: it computes.
        {
            let mut lane = shared.lanes[0].lock().unwrap();
            let mut cx = Cx::new(Nanos(0), "test", &mut trace);
            lane.schedule(request(&cells[2]), &mut cx).unwrap();
        }
        r.run_until(&mut trace, |r| sh.pub_stats.applied().0 == 3 || bounded(r))
            .unwrap();
        assert_eq!(cells[2].get(), Some(NrtStatus::SUCCESS));
        {
            let mut lane = shared.lanes[0].lock().unwrap();
            assert_eq!(lane.free_items(), lane.pool().len(), "every item returned");
        }
        let w = common::worker_stats(r);
        assert_eq!(
            (w.ring_refusals, w.discarded, w.recoveries, w.completed),
            (1, 1, 1, 3)
        );
        assert_eq!((w.fifo_violations, w.fsm_violations), (0, 0));
        assert_eq!(w.outputs_checked, w.by_status.get(NrtStatus::SUCCESS));
        assert_eq!(w.outputs_wrong, 0);
        assert!(w.aborted >= 1);
    }
}
