//! `xunds run --model null` and `--rate R` through the library's job: the
//! null model's executions complete and check like the MLP's; an open-loop
//! run submits on its Poisson schedule (it cannot finish before the last
//! arrival) and its latency figures come from every response.

use crate::common;

use std::time::Duration;

use xunds::system::job::{self, JobConfig, ModelKind};

fn cfg(name: &str, n: u64) -> JobConfig {
    JobConfig {
        executions: n,
        vncs: 2,
        models: 2,
        slab: Some(common::slab(name)),
        timeout_ns: Some(10_000_000_000),
        max_wall: Some(Duration::from_secs(120)),
        ..JobConfig::default()
    }
}

#[test]
fn null_model_runs_the_whole_pipeline() {
    let n = 5_000;
    let c = JobConfig {
        model: ModelKind::Null,
        ..cfg("null", n)
    };
    let r = job::run(&c, &mut |_, _| {}).unwrap();
    assert_eq!(r.completed_ok, n, "{r:#?}");
    assert_eq!(r.outputs_checked, n);
    assert_eq!(r.outputs_wrong, 0);
    assert_eq!(r.latency.count(), n);
    assert_eq!(r.config.model, ModelKind::Null);
    // No MACs: the null model is one COPY.
    assert_eq!(r.system.workers.iter().map(|w| w.macs).sum::<u64>(), 0);
    let _ = std::fs::remove_file(&r.slab);
}

#[test]
fn open_loop_follows_its_arrivals() {
    let (n, rate) = (2_000u64, 20_000.0);
    let c = JobConfig {
        rate: Some(rate),
        ..cfg("rate", n)
    };
    let r = job::run(&c, &mut |_, _| {}).unwrap();
    assert_eq!(r.completed_ok, n, "{r:#?}");
    assert_eq!(r.outputs_wrong, 0);
    assert_eq!(r.latency.count(), n);
    // The last of n Poisson arrivals at `rate` comes after n / rate seconds
    // on average (standard deviation sqrt(n) / rate, 2% of it here): the
    // run cannot end before half of that.
    let mean = Duration::from_secs_f64(n as f64 / rate);
    assert!(r.elapsed >= mean / 2, "{:?} < {:?}", r.elapsed, mean / 2);
    assert!(r.latency.quantile(0.5) <= r.latency.quantile(0.999));
    assert!(r.latency.quantile(0.999) <= r.latency.max());
    let _ = std::fs::remove_file(&r.slab);
}

#[test]
fn bad_rates_are_refused() {
    for rate in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let c = JobConfig {
            rate: Some(rate),
            ..cfg("badrate", 10)
        };
        assert!(job::run(&c, &mut |_, _| {}).is_err(), "rate {rate}");
    }
    // Open loop in virtual time (`xunds sim` draws it): the rate is in the
    // trace header, so the header gives the same job back, and the same
    // seed gives the same trace.
    let c = JobConfig {
        rate: Some(200_000.0),
        deterministic: true,
        ..cfg("detrate", 50)
    };
    let a = job::run(&c, &mut |_, _| {}).unwrap();
    assert_eq!(a.completed_ok, 50);
    assert!(c.header_config().contains(" rate=200000"));
    let h = xunds::system::trace::TraceHeader::new(c.seed, c.header_config());
    assert_eq!(JobConfig::from_header(&h).unwrap().rate, Some(200_000.0));
    let b = job::run(&c, &mut |_, _| {}).unwrap();
    assert_eq!(a.trace_xxh3, b.trace_xxh3);
    let _ = std::fs::remove_file(&a.slab);
    assert!(ModelKind::parse("resnet").is_err());
    assert_eq!(ModelKind::parse("null").unwrap(), ModelKind::Null);
}

/// A rate whose mean gap is longer than an hour is refused by the config
/// check, in `--rate`'s words; the bound itself is accepted.
#[test]
fn rates_below_one_an_hour_are_refused() {
    let one_an_hour = 1.0 / 3600.0;
    for rate in [1e-300, f64::MIN_POSITIVE, one_an_hour / 2.0, 0.0002] {
        let c = JobConfig {
            rate: Some(rate),
            ..cfg("lowrate", 3)
        };
        let e = c.check().expect_err("refused").to_string();
        assert!(e.contains("--rate") && e.contains("1/3600"), "{rate}: {e}");
        assert!(job::run(&c, &mut |_, _| {}).is_err(), "rate {rate}");
    }
    let c = JobConfig {
        rate: Some(one_an_hour),
        ..cfg("minrate", 3)
    };
    assert!(c.check().is_ok());
}

/// Deterministic open loop at a low rate: the producer's next arrival is
/// its deadline, so the runner jumps the virtual clock there when every
/// actor is idle instead of creeping one idle jump (10 us) at a time: at
/// 200 per second six executions made a trace 60 times the closed loop's,
/// and at 10 per second the runner's livelock guard fired before the first
/// arrival. Every execution completes, the trace grows with the executions
/// and not with the idle time, and the same seed gives the same trace.
#[test]
fn a_low_rate_deterministic_job_jumps_to_each_arrival() {
    let det = |rate: Option<f64>| JobConfig {
        rate,
        deterministic: true,
        ..cfg("detlow", 6)
    };
    let closed = job::run(&det(None), &mut |_, _| {}).unwrap();
    let _ = std::fs::remove_file(&closed.slab);
    let closed_lines = closed.trace_lines.unwrap();
    for rate in [200.0, 10.0, 0.5] {
        let a = job::run(&det(Some(rate)), &mut |_, _| {}).unwrap();
        let _ = std::fs::remove_file(&a.slab);
        assert_eq!(a.completed_ok, 6, "rate {rate}: {a:#?}");
        assert_eq!(a.outputs_wrong, 0);
        // Six arrivals at `rate` take 6 / rate seconds on average; the run
        // ends after the last one.
        let virtual_ns = a.virtual_ns.unwrap();
        assert!(
            virtual_ns as f64 > 0.1 * 6.0 / rate * 1e9,
            "rate {rate}: ended at {virtual_ns} ns"
        );
        let lines = a.trace_lines.unwrap();
        assert!(
            lines < 2 * closed_lines,
            "rate {rate}: {lines} trace lines, closed loop {closed_lines}"
        );
        let b = job::run(&det(Some(rate)), &mut |_, _| {}).unwrap();
        let _ = std::fs::remove_file(&b.slab);
        assert_eq!(a.trace_xxh3, b.trace_xxh3, "rate {rate}");
        assert_eq!(a.trace_lines, b.trace_lines);
    }
}

#[test]
fn a_deterministic_null_run_names_its_model_in_the_trace_header() {
    let null = JobConfig {
        model: ModelKind::Null,
        deterministic: true,
        ..JobConfig::default()
    };
    assert!(null.header_config().contains(" model=null "));
    // The default model writes no token: MLP traces keep their bytes.
    assert!(!JobConfig::default().header_config().contains("model="));
}

/// A threaded job stops at its wall bound with an error saying so: the job
/// waited for its actors alone (the bound was checked only after they had
/// stopped), so a run that could not finish ran for good.
#[test]
fn a_threaded_job_stops_at_its_wall_bound() {
    let c = JobConfig {
        model: ModelKind::Null,
        max_wall: Some(Duration::from_millis(300)),
        ..cfg("wall-bound", 1 << 36)
    };
    // On its own thread, so that a run the bound does not stop fails this
    // test after a minute instead of running for hours.
    let (tx, rx) = std::sync::mpsc::channel();
    let slab = c.slab.clone().unwrap();
    std::thread::spawn(move || {
        let _ = tx.send(
            job::run(&c, &mut |_, _| {})
                .map(drop)
                .map_err(|e| e.to_string()),
        );
    });
    let r = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the run stopped within a minute");
    let Err(e) = r else {
        panic!("the bound did not stop the run");
    };
    assert!(e.contains("still going"), "{e}");
    let _ = std::fs::remove_file(slab);
}
