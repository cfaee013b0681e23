//! The public API on a running threaded system over real mappings: load and
//! unload, schedule / is_completed / last_completed, completion by a
//! caller-owned eventfd and by a pooled one, the blocking execute, statuses
//! with names, concurrent callers on one XU, and 101 after a timeout.

use std::sync::Arc;
use std::time::Duration;

use xunds::actors::Nanos;
use xunds::device::model::MlpSpec;
use xunds::hal::eventfd::{EventFd, Wait};
use xunds::hal::fault::{Fault, FaultInjector, FaultPlan, FaultRule, Trigger};
use xunds::hal::linux::LinuxHal;
use xunds::nds::{Counter, Reader, RecordRead};
use xunds::ring::{Armed, Waited};
use xunds::system::api::{ScheduleOpts, System};
use xunds::system::builder::{SlabTarget, SystemConfig};
use xunds::wire::nds::counters::NcCounter;
use xunds::wire::seq_id::{SeqId, XuId};
use xunds::NrtStatus;

const T: Duration = Duration::from_secs(20);

fn slab(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("xunds-api-{}-{name}.nds", std::process::id()))
}

fn cfg(cores: u8, name: &str) -> SystemConfig {
    let mut c = SystemConfig::new(cores);
    c.slab = SlabTarget::Path(slab(name));
    // Generous: a loaded CI machine must not turn a slow execution into a
    // timeout (the timeout test sets its own).
    c.timeout = Nanos::from_millis(10_000);
    c
}

/// Shut `sys` down and remove its slab file.
fn finish(sys: System<LinuxHal>) {
    let path = sys.slab_path().map(|p| p.to_path_buf());
    sys.shutdown().unwrap();
    if let Some(p) = path {
        let _ = std::fs::remove_file(p);
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn schedule_complete_and_read_back() {
    let sys = System::start(LinuxHal::new(), cfg(2, "basic")).unwrap();
    let spec = MlpSpec::EXAMPLE;
    let model = sys.load_mlp(&spec, "mlp").unwrap();
    assert_eq!(model.input_len(), 64);
    assert_eq!(model.output_len(), 36);

    // Blocking execute on every XU: bit-exact against the CPU reference.
    for xu in 0..2 {
        let x = spec.example_input(10 + u64::from(xu));
        let e = sys.execute(xu, &model, &x, T).unwrap();
        assert_eq!(e.status, NrtStatus::SUCCESS);
        assert_eq!(e.status.name(), Some("SUCCESS"));
        assert_eq!(bits(&e.outputs), bits(&model.reference(&x)));
        assert_eq!(e.seq.vnc_id(), xu);
        assert!(sys.is_completed(e.seq).unwrap());
        assert!(sys.last_completed(xu).unwrap().seq_num() >= e.seq.seq_num());
    }

    // Async: schedule with a status cell and an output buffer, then poll.
    let x = spec.example_input(77);
    let opts = ScheduleOpts::for_model(&model);
    let (st, out) = (opts.status.clone().unwrap(), opts.out.clone().unwrap());
    let seq = sys.schedule(1, &model, &x, opts).unwrap();
    assert_eq!(seq.xu_id(), XuId::new(0, 0, 1));
    while !sys.is_completed(seq).unwrap() {
        std::thread::yield_now();
    }
    assert_eq!(
        st.get(),
        Some(NrtStatus::SUCCESS),
        "status before completion"
    );
    assert_eq!(bits(&out.to_vec()), bits(&model.reference(&x)));

    // Completion by a caller-owned eventfd.
    let ev = EventFd::new().unwrap();
    let seq = sys
        .schedule(0, &model, &x, ScheduleOpts::default())
        .unwrap();
    match sys.arm(seq, &ev).unwrap() {
        Armed::Installed => assert!(matches!(ev.wait(T).unwrap(), Wait::Signalled(_))),
        Armed::AlreadyComplete => {}
    }
    assert!(sys.is_completed(seq).unwrap());

    // Completion by a pooled eventfd.
    let seq = sys
        .schedule(0, &model, &x, ScheduleOpts::default())
        .unwrap();
    assert!(matches!(
        sys.wait(seq, T).unwrap(),
        Waited::Completed { .. }
    ));

    // Handles of an XU that does not exist, and bad requests.
    let foreign = SeqId::from_cursor(1, XuId::new(0, 0, 9));
    assert_eq!(sys.is_completed(foreign), Err(NrtStatus::INVALID_HANDLE));
    assert_eq!(
        sys.schedule(7, &model, &x, ScheduleOpts::default()),
        Err(NrtStatus::INVALID)
    );
    assert_eq!(
        sys.schedule(0, &model, &x[..10], ScheduleOpts::default()),
        Err(NrtStatus::INVALID)
    );

    assert!(sys.quiesce(T));
    let path = sys.slab_path().unwrap().to_path_buf();
    let r = Reader::open(&path).unwrap();
    let get = |core: u32, c: NcCounter| r.counter(Counter::nc(core, c).unwrap()).unwrap();
    assert_eq!(
        get(0, NcCounter::InferCompleted) + get(1, NcCounter::InferCompleted),
        5
    );
    assert_eq!(get(0, NcCounter::MacCount), 3 * model.macs());
    assert_eq!(get(1, NcCounter::ModelLoadCount), 1);
    let rep = sys.shutdown().unwrap();
    assert_eq!(rep.workers.iter().map(|w| w.completed).sum::<u64>(), 5);
    assert_eq!(rep.nds_errors, 0);
    let _ = std::fs::remove_file(path);
}

#[test]
fn concurrent_callers_share_one_xu() {
    let sys = Arc::new(System::start(LinuxHal::new(), cfg(1, "concurrent")).unwrap());
    let model = sys.load_mlp(&MlpSpec::EXAMPLE, "mlp").unwrap();
    let per = if cfg!(debug_assertions) { 50 } else { 400 };
    let threads: Vec<_> = (0..3u64)
        .map(|t| {
            let (sys, model) = (Arc::clone(&sys), model.clone());
            std::thread::spawn(move || {
                let x = MlpSpec::EXAMPLE.example_input(t);
                let want = bits(&model.reference(&x));
                let mut seqs = Vec::new();
                for _ in 0..per {
                    let e = sys.execute(0, &model, &x, T).unwrap();
                    assert_eq!(e.status, NrtStatus::SUCCESS);
                    assert_eq!(bits(&e.outputs), want);
                    seqs.push(e.seq.seq_num());
                }
                seqs
            })
        })
        .collect();
    let mut all: Vec<u64> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 3 * per, "every handle distinct");
    assert!(sys.quiesce(T));
    let sys = Arc::try_unwrap(sys).unwrap();
    let path = sys.slab_path().unwrap().to_path_buf();
    let rep = sys.shutdown().unwrap();
    assert_eq!(rep.workers[0].completed, 3 * per as u64);
    assert_eq!(rep.workers[0].fifo_violations, 0);
    let _ = std::fs::remove_file(path);
}

#[test]
fn a_timeout_makes_the_xu_unrecoverable() {
    let plan = FaultPlan {
        seed: 1,
        rules: vec![FaultRule {
            fault: Fault::DropNq,
            trigger: Trigger::Nth(1),
            core: Some(0),
        }],
    };
    let mut c = cfg(2, "timeout");
    c.timeout = Nanos::from_millis(1_000);
    let sys = System::start(FaultInjector::new(LinuxHal::new(), plan), c).unwrap();
    let model = sys.load_mlp(&MlpSpec::EXAMPLE, "mlp").unwrap();
    let x = MlpSpec::EXAMPLE.example_input(1);
    let e = sys.execute(0, &model, &x, T).unwrap();
    assert_eq!(e.status, NrtStatus::TIMEOUT);
    assert_eq!(e.status.name(), Some("TIMEOUT"));
    let refused = sys.schedule(0, &model, &x, ScheduleOpts::default());
    assert_eq!(refused, Err(NrtStatus::EXEC_UNIT_UNRECOVERABLE));
    assert_eq!(NrtStatus::EXEC_UNIT_UNRECOVERABLE.code(), 101);
    // The other XU is healthy.
    assert_eq!(
        sys.execute(1, &model, &x, T).unwrap().status,
        NrtStatus::SUCCESS
    );
    assert!(sys.quiesce(T));
    let path = sys.slab_path().unwrap().to_path_buf();
    let r = Reader::open(&path).unwrap();
    let get = |core: u32, c: NcCounter| r.counter(Counter::nc(core, c).unwrap()).unwrap();
    assert_eq!(get(0, NcCounter::InferTimedOut), 1);
    assert_eq!(get(0, NcCounter::InferFailedToQueue), 1);
    assert_eq!(get(1, NcCounter::InferCompleted), 1);
    sys.shutdown().unwrap();
    let _ = std::fs::remove_file(path);
}

/// A model handle works only with the system that loaded it: another
/// system refuses to schedule or unload it (both number their models from
/// 1, and the handle's input would land in the other system's memory at its
/// own addresses), and its own model of the same number is untouched.
#[test]
fn a_model_of_another_system_is_refused() {
    let a = System::start(LinuxHal::new(), cfg(1, "handles-a")).unwrap();
    let b = System::start(LinuxHal::new(), cfg(1, "handles-b")).unwrap();
    let ma = a.load_mlp(&MlpSpec::EXAMPLE, "a").unwrap();
    let mb = b.load_mlp(&MlpSpec::EXAMPLE, "b").unwrap();
    assert_eq!(ma.id(), mb.id(), "both number from 1");
    let x = MlpSpec::EXAMPLE.example_input(2);
    assert_eq!(
        a.schedule(0, &mb, &x, ScheduleOpts::default()),
        Err(NrtStatus::INVALID_HANDLE)
    );
    assert!(a.unload_model(mb.clone()).is_err());
    assert_eq!(a.execute(0, &ma, &x, T).unwrap().status, NrtStatus::SUCCESS);
    assert_eq!(b.execute(0, &mb, &x, T).unwrap().status, NrtStatus::SUCCESS);
    finish(a);
    finish(b);
}

/// Once the daemons have stopped (as when one panics: the runner stops the
/// rest), the API says so instead of hanging: a wait with no deadline
/// returns NRT_FAILURE within its stop check, a schedule and a load are
/// refused, a reset says Stopped, quiesce gives up, rather than a wait
/// blocked for good or a schedule accepted for a ring nobody drains.
#[test]
fn a_stopped_system_fails_its_calls_instead_of_hanging() {
    let sys = System::start(LinuxHal::new(), cfg(1, "stopped")).unwrap();
    let m = sys.load_mlp(&MlpSpec::EXAMPLE, "m").unwrap();
    let x = MlpSpec::EXAMPLE.example_input(2);
    assert_eq!(
        sys.execute(0, &m, &x, T).unwrap().status,
        NrtStatus::SUCCESS
    );
    let late = sys.schedule(0, &m, &x, ScheduleOpts::default()).unwrap();
    sys.stop_daemons();
    let t0 = std::time::Instant::now();
    // `late` may have completed before the stop; a wait then says so.
    // Bounded (30 s) so that a regression fails rather than hangs.
    match sys.wait(late, Duration::from_secs(30)) {
        Ok(Waited::Completed { .. }) | Err(NrtStatus::FAILURE) => {}
        other => panic!("{other:?}"),
    }
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert_eq!(
        sys.schedule(0, &m, &x, ScheduleOpts::default()),
        Err(NrtStatus::FAILURE)
    );
    assert!(sys.load_mlp(&MlpSpec::EXAMPLE, "n").is_err());
    assert_eq!(
        sys.reset(0, Duration::from_secs(30)),
        Err(xunds::actors::work::RecoverError::Stopped)
    );
    assert!(!sys.quiesce(Duration::from_secs(30)));
    let path = sys.slab_path().map(|p| p.to_path_buf());
    let e = sys.shutdown().expect_err("the daemons had stopped");
    assert!(e.to_string().contains("had stopped"), "{e}");
    if let Some(p) = path {
        let _ = std::fs::remove_file(p);
    }
}

/// A zero execution timeout is refused at start (every execution would
/// time out and degrade its XU).
#[test]
fn a_zero_timeout_is_refused_at_start() {
    let mut c = cfg(1, "zero-timeout");
    c.timeout = Nanos(0);
    let Err(e) = System::start(LinuxHal::new(), c) else {
        panic!("a zero timeout was accepted");
    };
    assert!(e.to_string().contains("timeout"), "{e}");
}

/// An unloaded model is refused on a core that ran it before (its worker
/// had it cached): NRT_INVALID_HANDLE, as on a core that never did, even
/// though the worker's cache held it.
#[test]
fn an_unloaded_model_is_refused_where_it_ran_before() {
    let sys = System::start(LinuxHal::new(), cfg(1, "unload-cached")).unwrap();
    let b = sys.load_mlp(&MlpSpec::EXAMPLE, "b").unwrap();
    let x = MlpSpec::EXAMPLE.example_input(2);
    assert_eq!(
        sys.execute(0, &b, &x, T).unwrap().status,
        NrtStatus::SUCCESS
    );
    let stale = b.clone();
    sys.unload_model(b).unwrap();
    assert_eq!(
        sys.execute(0, &stale, &x, T).unwrap().status,
        NrtStatus::INVALID_HANDLE
    );
    finish(sys);
}

#[test]
fn load_and_unload_keep_the_records_and_memory_counters() {
    let sys = System::start(LinuxHal::new(), cfg(2, "models")).unwrap();
    let a = sys.load_mlp(&MlpSpec::EXAMPLE, "first").unwrap();
    let b = sys
        .load_mlp(
            &MlpSpec {
                seed: 99,
                ..MlpSpec::EXAMPLE
            },
            "second",
        )
        .unwrap();
    assert_ne!(a.id(), b.id());
    assert!(sys.quiesce(T));
    let path = sys.slab_path().unwrap().to_path_buf();
    let r = Reader::open(&path).unwrap();
    let records = |r: &Reader| {
        let snap = r.snapshot().unwrap();
        let mut v: Vec<(u32, u8, String)> = snap
            .models
            .into_iter()
            .filter_map(|(_, m)| match m {
                RecordRead::Fresh(m) => Some((
                    m.model_id,
                    m.nc_index,
                    xunds::wire::nds::c_str_lossy(&m.name).into_owned(),
                )),
                _ => None,
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        records(&r),
        vec![
            (a.id(), 0, "first".into()),
            (a.id(), 1, "first".into()),
            (b.id(), 0, "second".into()),
            (b.id(), 1, "second".into()),
        ]
    );
    let code = |core: u32| {
        r.counter(Counter::nc(core, NcCounter::MemUsageCodeDevice).unwrap())
            .unwrap()
    };
    let before = code(1);
    let stale = b.clone();
    sys.unload_model(b).unwrap();
    assert!(sys.quiesce(T));
    assert_eq!(
        records(&r),
        vec![(a.id(), 0, "first".into()), (a.id(), 1, "first".into())]
    );
    assert_eq!(code(1), before / 2);
    assert_eq!(
        r.counter(Counter::nc(1, NcCounter::ModelLoadCount).unwrap())
            .unwrap(),
        2,
        "MODEL_LOAD_COUNT counts loads"
    );
    // The remaining model still runs.
    let x = MlpSpec::EXAMPLE.example_input(2);
    assert_eq!(
        sys.execute(1, &a, &x, T).unwrap().status,
        NrtStatus::SUCCESS
    );
    // The unloaded one's handle resolves no more: its execution completes
    // with NRT_INVALID_HANDLE, and a second unload is an error.
    assert_eq!(
        sys.execute(1, &stale, &x, T).unwrap().status,
        NrtStatus::INVALID_HANDLE
    );
    assert!(sys.unload_model(stale).is_err());
    sys.shutdown().unwrap();
    let _ = std::fs::remove_file(path);
}
