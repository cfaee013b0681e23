//! The deadlock rule (docs/design.md "The deadlock rule for paired bounded
//! queues"): every bounded queue of the system is filled at once, every
//! sender that can keep an item keeps one, and the system still drains
//! without losing or duplicating anything, under the deterministic runner
//! (several seeds) and the threaded runner.
//!
//! The state built before the runners start:
//! - every XU ring full (`ring_capacity` executions in flight);
//! - every worker's report mailbox full and one more report kept by the
//!   worker (R1), which therefore starts nothing new (R2);
//! - every lane's refusal mailbox full and more refusals aggregated in the
//!   lane (R1);
//! - the control channel full.
//!
//! (The item-return mailbox cannot be full while its ring is: there are only
//! `ring_capacity` items, each either in the ring, in that mailbox or free.)

use std::sync::Arc;
use std::time::{Duration, Instant};

use xunds::actors::producer::Request;
use xunds::actors::work::{Expectations, PubMsg};
use xunds::actors::{Actor, Cx, Nanos, NullTrace, Progress};
use xunds::device::model::MlpSpec;
use xunds::hal::Hal;
use xunds::nds::Counter;
use xunds::sim::fake::FakeHal;
use xunds::system::builder::{build, Shared, SysActor, SystemConfig};
use xunds::system::runner::{DetConfig, DetRunner, ThreadedConfig, ThreadedRunner};
use xunds::wire::nds::counters::{NcCounter, NdCounter};
use xunds::NrtStatus;

const CORES: u8 = 2;
const RING: u32 = 4;
const REFUSED: u64 = 70;

struct Filled<H: Hal> {
    shared: Arc<Shared<H>>,
    daemons: Vec<SysActor<H>>,
    control_msgs: u64,
}

fn schedule<H: Hal>(
    shared: &Shared<H>,
    core: u8,
    model: &Arc<xunds::actors::work::ResidentModel>,
    x: &[f32],
) -> Result<xunds::wire::seq_id::SeqId, NrtStatus> {
    let mut trace = NullTrace;
    let mut cx = Cx::new(Nanos(0), "test", &mut trace);
    shared.lanes[usize::from(core)].lock().unwrap().schedule(
        Request {
            model,
            input: x,
            status: None,
            out: None,
            expect: 0,
            tag: 0,
        },
        &mut cx,
    )
}

fn fill<H: Hal>(hal: H) -> Filled<H> {
    let spec = MlpSpec::EXAMPLE;
    let probe = spec.link(0x8_0000_0000, 0x8_0000_0000).unwrap();
    let x = spec.example_input(4);
    let mut cfg = SystemConfig::new(CORES);
    cfg.ring_capacity = RING;
    cfg.report_capacity = 2;
    cfg.timeout = Nanos::from_millis(10_000);
    cfg.dram_size = cfg.dram_for(&probe, 1);
    cfg.expected = Arc::new(Expectations {
        outputs: vec![probe.reference(&x)],
    });
    let built = build(hal, cfg, None).unwrap();
    let shared = Arc::clone(&built.shared);
    let model = shared.load_model(&spec.builder().unwrap(), "mlp").unwrap();
    let mut daemons = built.daemons;

    // Rings full, then refusals until the refusal mailboxes are full and the
    // lanes aggregate the rest.
    for core in 0..CORES {
        for _ in 0..RING {
            schedule(&shared, core, &model, &x).unwrap();
        }
        for _ in 0..REFUSED {
            assert_eq!(
                schedule(&shared, core, &model, &x),
                Err(NrtStatus::QUEUE_FULL)
            );
        }
        assert!(
            shared.lanes[usize::from(core)]
                .lock()
                .unwrap()
                .pending_refusals()
                > 0
        );
    }
    // The device and the workers run (the publisher does not): each worker
    // fills its report mailbox, keeps one more report and stops (R2).
    let mut trace = NullTrace;
    let mut now = 0u64;
    loop {
        let mut any = false;
        for a in daemons.iter_mut().take(2 * usize::from(CORES)) {
            now += 100;
            let mut cx = Cx::new(Nanos(now), "test", &mut trace);
            any |= a.poll(&mut cx) == Progress::Made;
        }
        if !any {
            break;
        }
    }
    for a in daemons.iter().take(usize::from(CORES)) {
        let SysActor::Worker(w) = a else { panic!() };
        assert_eq!(w.stats().completed, 3, "two reports delivered, one kept");
        assert_eq!(w.stats().kept_reports, 1);
    }
    // Refill the rings from the returned items.
    for core in 0..CORES {
        for _ in 0..3 {
            schedule(&shared, core, &model, &x).unwrap();
        }
        assert_eq!(
            shared.queues[usize::from(core)].in_flight(),
            u64::from(RING)
        );
        assert_eq!(
            schedule(&shared, core, &model, &x),
            Err(NrtStatus::QUEUE_FULL)
        );
    }
    // And the control channel.
    let mut control_msgs = 0;
    while shared.control.try_send(PubMsg::HostMisc(1)).is_ok() {
        control_msgs += 1;
    }
    assert!(shared.control.is_full());
    Filled {
        shared,
        daemons,
        control_msgs,
    }
}

fn drained<H: Hal>(sh: &Shared<H>) -> bool {
    let mut flushed = true;
    for l in sh.lanes.iter() {
        flushed &= l.lock().unwrap().flush();
    }
    let (c, r) = sh.pub_stats.applied();
    flushed
        && sh.queues.iter().all(|q| q.in_flight() == 0)
        && sh.control.is_empty()
        && c == u64::from(CORES) * 7
        && r == u64::from(CORES) * (REFUSED + 1)
}

fn check<H: Hal>(f: &Filled<H>, actors: Vec<SysActor<H>>) {
    let p = actors
        .into_iter()
        .find_map(|a| match a {
            SysActor::Publisher(p) => Some(p),
            _ => None,
        })
        .unwrap();
    let w = p.writer();
    let slab = w.slab().read_only();
    let r = xunds::nds::Reader::attach(slab).unwrap();
    for core in 0..u32::from(CORES) {
        let get = |c: NcCounter| r.counter(Counter::nc(core, c).unwrap()).unwrap();
        assert_eq!(get(NcCounter::InferCompleted), 7, "core {core}");
        assert_eq!(get(NcCounter::InferenceCount), 7, "core {core}");
        assert_eq!(
            get(NcCounter::InferFailedToQueue),
            REFUSED + 1,
            "core {core}"
        );
    }
    let misc = r.counter(Counter::nd(NdCounter::MemUsageMiscHost)).unwrap();
    assert!(misc >= f.control_msgs, "every control message applied");
    // Ordering: Acquire; pairs with the publisher's Release store of
    // `errors` (the run has ended).
    assert_eq!(
        f.shared
            .pub_stats
            .errors
            .load(std::sync::atomic::Ordering::Acquire),
        0
    );
}

#[test]
fn everything_full_drains_under_the_deterministic_runner() {
    for seed in 0..8 {
        let f = fill(FakeHal::new());
        let mut r: DetRunner<SysActor<FakeHal>> = DetRunner::new(DetConfig::new(seed));
        let mut daemons = f.daemons;
        let shared = Arc::clone(&f.shared);
        for d in daemons.drain(..) {
            r.add_daemon(d);
        }
        let sh = Arc::clone(&shared);
        r.run_until(&mut NullTrace, |_| drained(&sh))
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let f = Filled {
            shared,
            daemons: Vec::new(),
            control_msgs: f.control_msgs,
        };
        check(&f, r.into_actors());
    }
}

#[test]
fn everything_full_drains_under_the_threaded_runner() {
    let f = fill(xunds::hal::linux::LinuxHal::new());
    let mut r = ThreadedRunner::new(ThreadedConfig {
        max_wall: Some(Duration::from_secs(60)),
        ..ThreadedConfig::default()
    })
    .unwrap();
    let mut daemons = f.daemons;
    for d in daemons.drain(..) {
        r.add_daemon(d);
    }
    let running = r.start().unwrap();
    let t0 = Instant::now();
    while !drained(&f.shared) {
        assert!(t0.elapsed() < Duration::from_secs(60), "did not drain");
        std::thread::sleep(Duration::from_millis(1));
    }
    running.stop_handle().stop();
    let rep = running.join().unwrap();
    let f2 = Filled {
        shared: Arc::clone(&f.shared),
        daemons: Vec::new(),
        control_msgs: f.control_msgs,
    };
    check(&f2, rep.actors);
}
