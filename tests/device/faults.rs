//! Every device fault becomes a clear error value the worker can map to a
//! status, never a hang or a panic: an error NQ record of each class (from
//! the HAL fault injector and from the engines' own RAISE), a device that
//! never completes (timeout), a lost doorbell, corrupt descriptors (bad
//! length, bad ring id, address outside device memory: refused, not
//! followed), a DMA write to a read-only register, a publish without the
//! event poke, an NQ overflow (real, and injected as `nq_overflow`) and a
//! corrupt NQ record.

use crate::support::{done_record, ended, NullExecutor};
use xunds::device::dma::{DmaFault, QueueProducer};
use xunds::device::engine::{EngineFault, EngineState, Executor, FaultKind, Limits, MemFault};
use xunds::device::isa::{Base, Insn, Operand};
use xunds::device::memmap::{reg, DeviceConfig, DRAM_BASE};
use xunds::device::model::{Inject, MlpSpec};
use xunds::device::nq::{ExecCompletion, ExecStatus, Harvest, HarvestError, Overflow};
use xunds::device::sequencer::DramMemory;
use xunds::device::staging::{IbAddr, LoadedModel, ModelId};
use xunds::device::Device;
use xunds::hal::{Dir, Hal, Ordering};
use xunds::sim::fake::FakeHal;
use xunds::sim::fault::{DescCorruption, Fault, FaultInjector, FaultPlan, FaultRule, WILD_PA};
use xunds::system::faults::NQ_OVERFLOW;
use xunds::wire::device_request::Engine;
use xunds::wire::nq::{ErrorClass, Source};
use xunds::NrtStatus;

type Dev = Device<FaultInjector<FakeHal>>;

fn cfg() -> DeviceConfig {
    DeviceConfig {
        cores: 1,
        dram_size: 256 << 10,
        ring_len: 16,
        nq_len: 8,
        request_slots: 4,
        ring_id_grace_ns: 0,
    }
}

fn device(rules: Vec<FaultRule>, config: DeviceConfig) -> Dev {
    let hal = FaultInjector::new(FakeHal::new(), FaultPlan { seed: 3, rules });
    Device::new(hal, config).unwrap()
}

fn pe_act_model() -> LoadedModel {
    let ib = |offset| {
        Some(IbAddr {
            base_pa: DRAM_BASE + 0x4000,
            align_offset: 0,
            offset,
        })
    };
    LoadedModel {
        id: ModelId(1),
        ib: [ib(0), ib(0x40), None, None, None],
    }
}

/// Publish one 4-byte DMA copy from DRAM offset `src` to core 0's register
/// `reg_off`, and ring the doorbell.
fn copy_to_register(dev: &Dev, src: u64, reg_off: usize) {
    let map = dev.map();
    let mut q = QueueProducer::new(map, 0).unwrap();
    q.push_copy(&**dev.hal(), 4, map.dram_pa(src), map.reg_pa(0, reg_off))
        .unwrap();
    q.doorbell(&**dev.hal(), 1).unwrap();
}

/// Stage one request, run the device, harvest with `deadline` at `now`.
fn run_one(
    dev: &Dev,
    now: u64,
    deadline: u64,
) -> (
    Harvest,
    xunds::device::sequencer::Sequencer<FaultInjector<FakeHal>, NullExecutor>,
) {
    let mut st = dev.stager(0).unwrap();
    let mut seq = dev.sequencer(NullExecutor { cycles: 100 });
    let mut h = dev.harvester(0).unwrap();
    let s = st.stage_and_doorbell(&pe_act_model(), 0).unwrap();
    h.expect(s.exec_id, s.engines, deadline);
    seq.poll(now).unwrap();
    let r = h.poll(now).unwrap().expect("an answer by the deadline");
    (r, seq)
}

fn error_of(r: &Harvest) -> (ErrorClass, Source) {
    match r {
        Ok(ExecCompletion {
            status: ExecStatus::Error { class, source, .. },
            ..
        }) => (*class, *source),
        other => panic!("expected an error completion, got {other:?}"),
    }
}

#[test]
fn injected_error_record_of_each_class() {
    for class in ErrorClass::ALL {
        let dev = device(vec![FaultRule::nth(Fault::NqError(class), 2)], cfg());
        let (r, _) = run_one(&dev, 0, u64::MAX);
        assert_eq!(error_of(&r), (class, Source::Engine));
        let c = r.unwrap();
        assert_eq!(c.exec_id, 1);
        let want = match class {
            ErrorClass::Numerical => NrtStatus::EXEC_COMPLETED_WITH_NUM_ERR,
            ErrorClass::Hw => NrtStatus::HW_ERROR,
            _ => NrtStatus::EXEC_COMPLETED_WITH_ERR,
        };
        assert_eq!(c.suggested_status(), want);
    }
}

/// The real engines raising each class (the model's RAISE instruction).
#[test]
fn engine_raise_of_each_class() {
    for class in ErrorClass::ALL {
        let dev = Device::new(FakeHal::new(), DeviceConfig::default()).unwrap();
        let spec = MlpSpec {
            inject: Some(Inject::Raise {
                engine: Engine::Act,
                class,
            }),
            ..MlpSpec::EXAMPLE
        };
        let probe = spec.link(DRAM_BASE, DRAM_BASE).unwrap();
        let code = dev.alloc(probe.footprint(), 64).unwrap();
        let io = dev.alloc(probe.mem.tensors, 64).unwrap();
        let image = spec.link(code.pa(), io.pa()).unwrap();
        let model = dev.load_model(code, &image.bytes, image.blocks).unwrap();
        image
            .write_input(&dev.memory(), &spec.example_input(1))
            .unwrap();
        let mut st = dev.stager(0).unwrap();
        let mut seq = dev.sequencer(Executor::new(Limits::DEFAULT));
        let mut h = dev.harvester(0).unwrap();
        let s = st.stage_and_doorbell(&model, 0).unwrap();
        h.expect(s.exec_id, s.engines, u64::MAX);
        seq.poll(0).unwrap();
        let r = h.poll(0).unwrap().unwrap();
        let (got, source) = error_of(&r);
        assert_eq!((got, source), (class, Source::Engine), "class {class:?}");
        assert!(
            matches!(
                r,
                Ok(ExecCompletion {
                    status: ExecStatus::Error { engine: 1, .. },
                    ..
                })
            ),
            "the root cause is ACT (engine 1): {r:?}"
        );
    }
}

/// A device that never completes: no NQ record, so the harvester answers
/// with a timeout at the deadline, and not before.
#[test]
fn device_that_never_completes_times_out() {
    let dev = device(
        vec![FaultRule {
            fault: Fault::DropNq,
            trigger: xunds::sim::fault::Trigger::From(1),
            core: None,
        }],
        cfg(),
    );
    let mut st = dev.stager(0).unwrap();
    let mut seq = dev.sequencer(NullExecutor { cycles: 100 });
    let mut h = dev.harvester(0).unwrap();
    let s = st.stage_and_doorbell(&pe_act_model(), 0).unwrap();
    h.expect(s.exec_id, s.engines, 5_000);
    seq.poll(0).unwrap();
    assert_eq!(
        h.poll(4_999).unwrap(),
        None,
        "still waiting before the deadline"
    );
    let r = h.poll(5_000).unwrap().unwrap();
    assert_eq!(
        r,
        Err(HarvestError::Timeout {
            exec_id: 1,
            reported: 0
        })
    );
    assert_eq!(r.unwrap_err().suggested_status(), NrtStatus::TIMEOUT);
    assert_eq!(dev.hal().injected().len(), 2, "both engine records dropped");
}

#[test]
fn lost_doorbell_times_out() {
    let dev = device(vec![FaultRule::nth(Fault::DropDoorbell, 1)], cfg());
    let (r, seq) = run_one(&dev, 10, 10);
    assert!(matches!(r, Err(HarvestError::Timeout { exec_id: 1, .. })));
    assert_eq!(seq.executed(0), 0);
}

fn corrupt(what: DescCorruption, dir: Dir, nth: u64) -> (Harvest, Option<DmaFault>, Dev) {
    let dev = device(
        vec![FaultRule::nth(
            Fault::CorruptDesc {
                what,
                dir: Some(dir),
            },
            nth,
        )],
        cfg(),
    );
    let (r, seq) = run_one(&dev, 0, u64::MAX);
    let f = seq.dma_fault(0);
    (r, f, dev)
}

#[test]
fn corrupt_descriptor_bad_length() {
    let (r, f, dev) = corrupt(DescCorruption::BadLength, Dir::M2s, 1);
    assert_eq!(error_of(&r), (ErrorClass::Hw, Source::Dma));
    assert_eq!(
        r.unwrap().suggested_status(),
        NrtStatus::EXEC_HW_ERR_DMA_ABORT
    );
    assert_eq!(
        f,
        Some(DmaFault::LengthMismatch {
            index: 0,
            m2s: 56,
            s2m: 52
        })
    );
    // Ordering: Acquire, as a monitor would read it; the device ran on this
    // thread, so the store (Relaxed, `DmaEngine::fail`) is visible anyway.
    let code = dev
        .hal()
        .load_u32(dev.map().cores[0].regs, reg::DMA_FAULT, Ordering::Acquire)
        .unwrap();
    assert_eq!(code, 3);
}

#[test]
fn corrupt_descriptor_bad_ring_id() {
    let (r, f, _) = corrupt(DescCorruption::BadRingId, Dir::S2m, 2);
    assert_eq!(error_of(&r), (ErrorClass::Hw, Source::Dma));
    assert_eq!(
        f,
        Some(DmaFault::RingIdMismatch {
            dir: Dir::S2m,
            index: 1,
            found: 3,
            expected: 1
        })
    );
}

/// A wrong ring id below the tail is first "not yet written": the device
/// waits for the grace period (host time passed in) before calling it corrupt.
#[test]
fn wrong_ring_id_waits_for_the_grace_period() {
    let mut c = cfg();
    c.ring_id_grace_ns = 1_000;
    let dev = device(
        vec![FaultRule::nth(
            Fault::CorruptDesc {
                what: DescCorruption::BadRingId,
                dir: Some(Dir::M2s),
            },
            1,
        )],
        c,
    );
    let mut st = dev.stager(0).unwrap();
    let mut seq = dev.sequencer(NullExecutor { cycles: 1 });
    st.stage_and_doorbell(&pe_act_model(), 0).unwrap();
    assert!(!seq.poll(100).unwrap().made_progress());
    assert!(!seq.poll(1_099).unwrap().made_progress());
    assert_eq!(seq.dma_fault(0), None);
    let p = seq.poll(1_100).unwrap();
    assert_eq!(p.faults, 1);
    assert!(matches!(
        seq.dma_fault(0),
        Some(DmaFault::RingIdMismatch { .. })
    ));
    // Sticky: nothing more happens, and no second report.
    assert!(!seq.poll(5_000).unwrap().made_progress());
}

/// An address outside device memory is refused, not followed: the
/// destination is never written, the source never read.
#[test]
fn corrupt_descriptor_address_outside_device_memory() {
    for dir in [Dir::M2s, Dir::S2m] {
        let (r, f, dev) = corrupt(DescCorruption::BadAddress, dir, 1);
        assert_eq!(error_of(&r), (ErrorClass::Hw, Source::Dma));
        match f {
            Some(DmaFault::AddressOutOfRange { dir: d, bad }) => {
                assert_eq!((d, bad.pa), (dir, WILD_PA));
            }
            other => panic!("{other:?}"),
        }
        // DMEM untouched: the request copy never happened.
        let mut dmem = [0u8; 52];
        dev.hal()
            .copy_out(dev.map().cores[0].dmem, 0, &mut dmem)
            .unwrap();
        assert_eq!(dmem, [0u8; 52]);
    }
}

/// A DMA write to a register that is not DMA-writable is refused.
#[test]
fn dma_to_a_read_only_register_is_refused() {
    let dev = device(vec![], cfg());
    let map = dev.map();
    copy_to_register(&dev, 0xF00, reg::SEQ_HEAD);
    let mut seq = dev.sequencer(NullExecutor { cycles: 1 });
    let mut h = dev.harvester(0).unwrap();
    h.expect(1, 1, u64::MAX);
    seq.poll(0).unwrap();
    assert!(matches!(
        seq.dma_fault(0),
        Some(DmaFault::BadRegisterAccess { dir: Dir::S2m, .. })
    ));
    let r = h.poll(0).unwrap().unwrap();
    assert_eq!(error_of(&r), (ErrorClass::Hw, Source::Dma));
    // Ordering: Acquire, as staging reads it (partner: `Sequencer::finish`'s
    // Release store; same thread here).
    let head = dev
        .hal()
        .load_u32(map.cores[0].regs, reg::SEQ_HEAD, Ordering::Acquire)
        .unwrap();
    assert_eq!(head, 0, "the register was not written");
}

/// A request the device aborts (a corrupt descriptor) or refuses (no event
/// poke) ran nothing: its MAC word reads 0, not what the request that used
/// its buffer slot before left there (the worker reports that word as the
/// execution's `mac_count` and adds it to the NDS MAC_COUNT).
#[test]
fn an_aborted_or_refused_request_reports_no_macs() {
    let stale = |dev: &Dev| {
        let off = dev.map().request_macs_off(0, 1) as usize;
        dev.hal()
            .store_u64(dev.map().dram, off, 3072, Ordering::Relaxed)
            .unwrap();
        move |dev: &Dev| {
            dev.hal()
                .load_u64(dev.map().dram, off, Ordering::Relaxed)
                .unwrap()
        }
    };
    // Aborted: a descriptor of the request corrupted.
    let dev = device(
        vec![FaultRule::nth(
            Fault::CorruptDesc {
                what: DescCorruption::BadLength,
                dir: Some(Dir::M2s),
            },
            1,
        )],
        cfg(),
    );
    let macs = stale(&dev);
    let (r, _) = run_one(&dev, 0, u64::MAX);
    assert_eq!(error_of(&r), (ErrorClass::Hw, Source::Dma));
    assert_eq!(macs(&dev), 0, "an aborted request's MACs");
    // Refused: published without the event poke.
    let dev = device(vec![], cfg());
    let macs = stale(&dev);
    copy_to_register(&dev, 0xF04, reg::SEQ_TAIL_INC);
    let mut seq = dev.sequencer(NullExecutor { cycles: 1 });
    seq.poll(0).unwrap();
    assert_eq!(seq.executed(0), 1);
    assert_eq!(macs(&dev), 0, "a refused request's MACs");
}

/// Abandoning an execution removes that execution's entry, wherever it is
/// (a harvest that failed on the current one must not leave it ahead of the
/// next; a reset gives up the current one, not whichever is oldest): the
/// others are still harvested, and an id not expected is refused.
#[test]
fn abandon_removes_the_named_execution_only() {
    let dev = device(vec![], cfg());
    let mut st = dev.stager(0).unwrap();
    let mut seq = dev.sequencer(NullExecutor { cycles: 1 });
    let mut h = dev.harvester(0).unwrap();
    let a = st.stage_and_doorbell(&pe_act_model(), 0).unwrap();
    let b = st.stage_and_doorbell(&pe_act_model(), 0).unwrap();
    h.expect(a.exec_id, a.engines, u64::MAX);
    h.expect(b.exec_id, b.engines, u64::MAX);
    assert!(!h.abandon(77), "not expected");
    assert!(h.abandon(b.exec_id));
    assert_eq!(h.in_flight(), 1);
    seq.poll(0).unwrap();
    seq.poll(0).unwrap();
    let r = h.poll(0).unwrap().expect("the first execution's answer");
    assert_eq!(r.unwrap().exec_id, a.exec_id);
    assert_eq!(h.in_flight(), 0);
    assert!(
        h.poll(0).unwrap().is_none(),
        "the abandoned one is not answered"
    );
}

/// A request published without the event poke: the sequencer refuses to
/// trust DMEM and reports a runtime error.
#[test]
fn publish_without_event_poke_is_a_sequencer_error() {
    let dev = device(vec![], cfg());
    copy_to_register(&dev, 0xF04, reg::SEQ_TAIL_INC);
    let mut seq = dev.sequencer(NullExecutor { cycles: 1 });
    let mut h = dev.harvester(0).unwrap();
    h.expect(1, 0b11, u64::MAX);
    seq.poll(0).unwrap();
    let r = h.poll(0).unwrap().unwrap();
    assert_eq!(error_of(&r), (ErrorClass::Runtime, Source::Sequencer));
}

/// A pair on core 0's queue that adds to core 1's request tail: the
/// register takes the add, but neither core runs a request for it (core 0's
/// tail did not move, and core 1's sequencer runs what its own queue
/// publishes).
#[test]
fn a_tail_increment_into_another_core_runs_nothing() {
    let dev = device(vec![], DeviceConfig { cores: 2, ..cfg() });
    let map = dev.map();
    let mut q = QueueProducer::new(map, 0).unwrap();
    q.push_copy(
        &**dev.hal(),
        4,
        map.dram_pa(0xF04),
        map.reg_pa(1, reg::SEQ_TAIL_INC),
    )
    .unwrap();
    q.doorbell(&**dev.hal(), 1).unwrap();
    let mut seq = dev.sequencer(NullExecutor { cycles: 1 });
    let p = seq.poll(0).unwrap();
    assert_eq!((p.copies, p.executed, p.records), (1, 0, 0));
    assert_eq!((seq.executed(0), seq.executed(1)), (0, 0));
    // Ordering: Acquire, as the sequencer's partner would (same thread).
    let tail = dev
        .hal()
        .inner()
        .load_u32(map.cores[1].regs, reg::SEQ_TAIL_INC, Ordering::Acquire);
    assert_eq!(tail, Ok(1));
}

/// The worker does not harvest: the device fills the 8-entry NQ rings, then
/// drops records and counts them; the harvester reports the overflow.
#[test]
fn nq_overflow_is_reported() {
    let dev = device(vec![], cfg());
    let mut st = dev.stager(0).unwrap();
    let mut seq = dev.sequencer(NullExecutor { cycles: 1 });
    let m = pe_act_model();
    for _ in 0..9 {
        st.stage_and_doorbell(&m, 0).unwrap();
        seq.poll(0).unwrap();
    }
    assert_eq!(seq.overflows(0).len(), 2, "PE and ACT records of request 9");
    let mut h = dev.harvester(0).unwrap();
    for i in 1..=9 {
        h.expect(i, 0b11, u64::MAX);
    }
    let r = h.poll(0).unwrap().unwrap();
    assert_eq!(r, Err(HarvestError::Overflow { dropped: 2 }));
    assert_eq!(
        r.unwrap_err().suggested_status(),
        NrtStatus::EXEC_SW_NQ_OVERFLOW
    );
    // The eight complete executions still come out, then request 9 times out.
    for i in 1..=8 {
        assert_eq!(h.poll(0).unwrap().unwrap().unwrap().exec_id, i);
    }
    assert!(matches!(
        h.poll(u64::MAX).unwrap().unwrap(),
        Err(HarvestError::Timeout { exec_id: 9, .. })
    ));
}

/// `xunds run --faults nq_overflow` (the HAL's stale read of an NQ head):
/// the device takes its own overflow path on a ring that is not really
/// full: the record is dropped and counted, the harvester reports the
/// overflow, the execution that lost it times out, and the ring is not
/// stuck (the next request completes).
#[test]
fn injected_nq_overflow_takes_the_device_overflow_path() {
    // The 2nd NQ head read of the core: request 1's ACT record (PE first).
    let dev = device(vec![FaultRule::nth(NQ_OVERFLOW, 2)], cfg());
    let mut st = dev.stager(0).unwrap();
    let mut seq = dev.sequencer(NullExecutor { cycles: 1 });
    let mut h = dev.harvester(0).unwrap();
    let m = pe_act_model();
    let s1 = st.stage_and_doorbell(&m, 0).unwrap();
    h.expect(s1.exec_id, s1.engines, 1_000);
    seq.poll(0).unwrap();
    assert_eq!(
        seq.overflows(0),
        [Overflow {
            engine: Engine::Act.index() as u8,
            exec_id: 1
        }]
    );
    let regs = dev.map().cores[0].regs;
    // Ordering: Acquire, as the harvester reads it (partner: the writer's
    // Release fetch_add; same thread here).
    let dropped = dev
        .hal()
        .inner()
        .load_u32(regs, reg::NQ_OVERFLOWS, Ordering::Acquire);
    assert_eq!(dropped, Ok(1));
    let r = h.poll(0).unwrap().unwrap();
    assert_eq!(r, Err(HarvestError::Overflow { dropped: 1 }));
    assert_eq!(
        r.unwrap_err().suggested_status(),
        NrtStatus::EXEC_SW_NQ_OVERFLOW
    );
    assert_eq!(h.poll(999).unwrap(), None, "PE reported, ACT never will");
    assert!(matches!(
        h.poll(1_000).unwrap().unwrap(),
        Err(HarvestError::Timeout {
            exec_id: 1,
            reported: 0b01
        })
    ));
    let s2 = st.stage_and_doorbell(&m, 0).unwrap();
    h.expect(s2.exec_id, s2.engines, u64::MAX);
    seq.poll(0).unwrap();
    let c = h.poll(0).unwrap().unwrap().unwrap();
    assert_eq!((c.exec_id, c.status), (2, ExecStatus::Done));
    assert_eq!(seq.overflows(0).len(), 1);
    assert_eq!(dev.hal().injected().len(), 1);
}

/// A record with the right phase that does not decode is skipped and
/// reported; the ring keeps going.
#[test]
fn corrupt_nq_record_is_reported_and_skipped() {
    let dev = device(vec![], cfg());
    let ring = dev.map().cores[0].nq[0];
    let mut junk = [0u8; 16];
    junk[4] = 7; // engine 7
    junk[7] = 1; // phase 1
    dev.hal().write_nq(ring, 0, &junk).unwrap();
    let mut h = dev.harvester(0).unwrap();
    let r = h.poll(0).unwrap().unwrap();
    assert!(matches!(r, Err(HarvestError::Corrupt(_))), "{r:?}");
    assert_eq!(h.poll(0).unwrap(), None);
}

/// Records that arrive before the worker expects the execution (the device
/// is doorbelled first, docs/abi.md §1.9) are kept, not lost.
#[test]
fn early_records_are_kept_until_expected() {
    let dev = device(vec![], cfg());
    let mut st = dev.stager(0).unwrap();
    let mut seq = dev.sequencer(NullExecutor { cycles: 1 });
    let mut h = dev.harvester(0).unwrap();
    let s1 = st.stage_and_doorbell(&pe_act_model(), 0).unwrap();
    let s2 = st.stage_and_doorbell(&pe_act_model(), 0).unwrap();
    seq.poll(0).unwrap();
    assert_eq!(h.poll(0).unwrap(), None);
    h.expect(s1.exec_id, s1.engines, u64::MAX);
    h.expect(s2.exec_id, s2.engines, u64::MAX);
    assert_eq!(h.poll(0).unwrap().unwrap().unwrap().exec_id, 1);
    assert_eq!(h.poll(0).unwrap().unwrap().unwrap().exec_id, 2);
    assert_eq!(h.stray_records(), 0);
}

/// Early records of several executions, interleaved across the engines'
/// rings: `expect` takes only the new execution's, keeps the later ones in
/// order and counts those of an execution that will never be expected (it
/// is behind the new one) as strays.
#[test]
fn expect_sorts_interleaved_early_records() {
    let dev = device(vec![], cfg());
    let mut st = dev.stager(0).unwrap();
    let mut seq = dev.sequencer(NullExecutor { cycles: 1 });
    let mut h = dev.harvester(0).unwrap();
    let s: Vec<_> = (0..3)
        .map(|_| st.stage_and_doorbell(&pe_act_model(), 0).unwrap())
        .collect();
    seq.poll(0).unwrap();
    assert_eq!(h.poll(0).unwrap(), None);
    // Execution 1 is never expected: its two records become strays.
    h.expect(s[1].exec_id, s[1].engines, u64::MAX);
    assert_eq!(h.stray_records(), 2);
    h.expect(s[2].exec_id, s[2].engines, u64::MAX);
    for want in [2, 3] {
        let c = h.poll(0).unwrap().unwrap().unwrap();
        assert_eq!(
            (c.exec_id, c.status, c.reported),
            (want, ExecStatus::Done, 0b11)
        );
    }
    assert_eq!(h.poll(0).unwrap(), None);
    assert_eq!(h.stray_records(), 2);
}

/// An engine's early records are taken from the front of its queue: a
/// record a device wrote out of execution order waits behind the one
/// before it, so its execution times out as if the record had been
/// dropped, and it is a stray once a later execution is expected.
#[test]
fn an_out_of_order_early_record_times_its_execution_out() {
    let dev = device(vec![], cfg());
    let ring = dev.map().cores[0].nq[0];
    for (slot, exec_id) in [(0, 3), (1, 2)] {
        let rec = done_record(exec_id, 0, (1, 2));
        dev.hal().write_nq(ring, slot, &rec).unwrap();
    }
    let mut h = dev.harvester(0).unwrap();
    assert_eq!(h.poll(0).unwrap(), None, "both records are early");
    h.expect(2, 0b1, 10);
    assert_eq!(
        h.poll(5).unwrap(),
        None,
        "execution 2's record is behind 3's"
    );
    assert_eq!(
        h.poll(10).unwrap(),
        Some(Err(HarvestError::Timeout {
            exec_id: 2,
            reported: 0
        }))
    );
    h.expect(3, 0b1, u64::MAX);
    let c = h.poll(0).unwrap().unwrap().unwrap();
    assert_eq!((c.exec_id, c.status), (3, ExecStatus::Done));
    assert_eq!(h.stray_records(), 1, "execution 2's record, behind 3");
}

/// A program can run the device clock to the end of u64 (a `DELAY` costs no
/// host time); the clock saturates instead of overflowing (which would
/// panic in debug builds on the next request's copy/dispatch cycles).
#[test]
fn a_saturated_device_clock_keeps_working() {
    let dev = device(Vec::new(), cfg());
    let mut st = dev.stager(0).unwrap();
    let mut seq = dev.sequencer(NullExecutor { cycles: u64::MAX });
    let mut h = dev.harvester(0).unwrap();
    for round in 1..=3u32 {
        let s = st.stage_and_doorbell(&pe_act_model(), 0).unwrap();
        h.expect(s.exec_id, s.engines, u64::MAX);
        assert_eq!(seq.poll(0).unwrap().executed, 1, "round {round}");
        let c = h.poll(0).unwrap().expect("completed").unwrap();
        assert_eq!((c.exec_id, c.status), (round, ExecStatus::Done));
        let regs = dev.map().cores[0].regs;
        let clock = dev.hal().load_u64(regs, reg::CYCLE, Ordering::Relaxed);
        assert_eq!(clock, Ok(u64::MAX), "the CYCLE register");
    }
}

/// An operand that runs off the end of DRAM faults before the engine writes
/// anything: its first and last words are probed first (on DRAM without a
/// read: the address translation alone), the fault names the last word,
/// and the words of the range that are inside DRAM keep their bytes.
#[test]
fn an_operand_off_the_end_of_dram_faults_before_any_write() {
    use xunds::device::engine::DeviceMemory;
    let dev = device(vec![], cfg());
    let mem = DramMemory::new(&**dev.hal(), dev.map());
    let end = DRAM_BASE + cfg().dram_size;
    // FILL 8 words from 4 words before the end: the last 4 are outside.
    let dst = end - 16;
    let code = DRAM_BASE + 0x8000;
    let at = |off| Operand {
        base: Base::R0,
        off,
    };
    let load = |prog: &[Insn]| {
        for (i, insn) in prog.iter().enumerate() {
            mem.write_u32s(code + 32 * i as u64, &insn.encode())
                .unwrap();
        }
    };
    load(&[
        Insn::SetBase(Base::R0, dst),
        Insn::Fill(at(0), 8, 0xDEAD_BEEF),
        Insn::End,
    ]);
    mem.write_u32s(dst, &[0x1111_1111; 4]).unwrap();
    let mut exec = Executor::new(Limits::DEFAULT);
    let rep = exec.run(&mem, [code, 0, 0, 0, 0], 0);
    let pe = &rep.engines[0];
    assert_eq!(
        ended(pe),
        (EngineState::Faulted, Some(ErrorClass::Hw)),
        "{rep:?}"
    );
    assert_eq!(
        pe.fault,
        Some(EngineFault {
            pc: code + 32,
            kind: FaultKind::Memory(MemFault { pa: dst + 28 }),
        })
    );
    let mut inside = [0u32; 4];
    mem.read_u32s(dst, &mut inside).unwrap();
    assert_eq!(inside, [0x1111_1111; 4], "nothing written");
    // A source range off the end faults the same way, naming its last word.
    let src = end - 8;
    load(&[
        Insn::SetBase(Base::R0, src),
        Insn::Copy(at(0), at(0), 4),
        Insn::End,
    ]);
    let rep = exec.run(&mem, [code, 0, 0, 0, 0], 0);
    assert_eq!(
        rep.engines[0].fault,
        Some(EngineFault {
            pc: code + 32,
            kind: FaultKind::Memory(MemFault { pa: src + 12 }),
        })
    );
}

/// The engines reach the model heap only: a FILL aimed at the per-core area
/// below it (here core 0's request-buffer MAC word, which the sequencer and
/// the worker access as 8 bytes, and where the doorbell constants live)
/// faults before writing, and the word keeps its value. Were it written, a
/// model could race the host's 8-byte accesses with 4-byte ones and stop
/// another core by overwriting its tail-increment constant.
#[test]
fn the_engines_cannot_write_below_the_model_heap() {
    use xunds::device::engine::DeviceMemory;
    let dev = device(vec![], cfg());
    let map = dev.map();
    let mem = DramMemory::new(&**dev.hal(), map);
    let macs = map.request_macs_off(0, 1);
    assert!(macs < map.config.heap_start());
    dev.hal()
        .store_u64(map.dram, macs as usize, 77, Ordering::Relaxed)
        .unwrap();
    let code = DRAM_BASE + map.config.heap_start();
    let prog = [
        Insn::SetBase(Base::R0, DRAM_BASE + macs),
        Insn::Fill(
            Operand {
                base: Base::R0,
                off: 0,
            },
            2,
            0xDEAD_BEEF,
        ),
        Insn::End,
    ];
    for (i, insn) in prog.iter().enumerate() {
        mem.write_u32s(code + 32 * i as u64, &insn.encode())
            .unwrap();
    }
    let rep = Executor::new(Limits::DEFAULT).run(&mem, [code, 0, 0, 0, 0], 0);
    assert!(
        matches!(
            rep.engines[0].fault,
            Some(EngineFault {
                kind: FaultKind::Memory(_),
                ..
            })
        ),
        "{rep:?}"
    );
    let word = dev
        .hal()
        .load_u64(map.dram, macs as usize, Ordering::Relaxed)
        .unwrap();
    assert_eq!(word, 77, "the word below the heap was not written");
}

/// A doorbell that claims more pairs than the ring holds is a sticky DMA
/// fault (code 7 in `DMA_FAULT`), reported as an abort: tails only grow, so
/// the queue could never move again. Read as "nothing published yet", it
/// would stall for good with no fault and no record: the worker would see
/// only timeouts.
#[test]
fn a_tail_past_the_ring_is_a_sticky_fault() {
    let dev = device(vec![], cfg());
    let map = dev.map();
    let q = QueueProducer::new(map, 0).unwrap();
    q.doorbell(&**dev.hal(), cfg().ring_len + 1).unwrap();
    let mut seq = dev.sequencer(NullExecutor { cycles: 1 });
    let mut h = dev.harvester(0).unwrap();
    h.expect(1, 1, u64::MAX);
    seq.poll(0).unwrap();
    assert_eq!(
        seq.dma_fault(0),
        Some(DmaFault::TailOverrun {
            published: cfg().ring_len + 1,
            ring_len: cfg().ring_len
        })
    );
    let r = h.poll(0).unwrap().unwrap();
    assert_eq!(error_of(&r), (ErrorClass::Hw, Source::Dma));
    // Ordering: Acquire, as a monitor would read it; same thread here.
    let code = dev
        .hal()
        .load_u32(map.cores[0].regs, reg::DMA_FAULT, Ordering::Acquire)
        .unwrap();
    assert_eq!(code, 7);
}
