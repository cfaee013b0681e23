//! The HAL contract, run over every backend and middleware: bounds and
//! alignment are refused with typed errors, copies cross word edges, records
//! publish their first half last, the doorbell accumulates, events count.
//! Plus the tracer's deterministic rendering and replay, and the fault
//! injector's corruptions.

use crate::support::done_record;
use xunds::hal::linux::LinuxHal;
use xunds::hal::{Access, Dir, EventId, Hal, HalError, Ordering, Record, RegionId, Wait, Width};
use xunds::sim::fake::FakeHal;
use xunds::sim::fault::{
    self, DescCorruption, Fault, FaultInjector, FaultPlan, FaultRule, Trigger, WILD_PA,
};
use xunds::sim::tracer::{self, Op, TraceFilter, TraceOp, Tracer};
use xunds::wire::nq::{ErrorClass, Kind, NqEntry};
use xunds::wire::udma::{self, M2sDesc, S2mDesc};

fn contract<H: Hal>(mut hal: H) {
    let r = hal.map(RegionId::Other { tag: 1 }, 64).unwrap();
    assert_eq!(r.len(), 64);
    assert!(matches!(
        hal.map(RegionId::Other { tag: 1 }, 64),
        Err(HalError::AlreadyMapped(_))
    ));
    assert_eq!(
        hal.map(RegionId::Other { tag: 2 }, 0),
        Err(HalError::ZeroLength(RegionId::Other { tag: 2 }))
    );
    // Copy across word edges and read back.
    let data: Vec<u8> = (1..=23).collect();
    hal.copy_in(r, 3, &data).unwrap();
    let mut out = vec![0u8; 23];
    hal.copy_out(r, 3, &mut out).unwrap();
    assert_eq!(out, data);
    let mut edge = [0u8; 2];
    hal.copy_out(r, 2, &mut edge).unwrap();
    assert_eq!(edge, [0, 1], "byte before the copy untouched");
    // A copy that ends inside its first word (no whole word at all).
    hal.copy_in(r, 5, &[0xEE; 2]).unwrap();
    hal.copy_out(r, 5, &mut edge).unwrap();
    assert_eq!(edge, [0xEE; 2]);
    hal.copy_in(r, 5, &data[2..4]).unwrap();
    assert_eq!(hal.load_u32(r, 4, Ordering::Relaxed).unwrap(), 0x0504_0302);
    // Bounds and alignment.
    assert!(matches!(
        hal.copy_in(r, 60, &[0; 5]),
        Err(HalError::OutOfBounds {
            off: 60,
            len: 5,
            ..
        })
    ));
    assert!(matches!(
        hal.copy_out(r, usize::MAX, &mut [0; 2]),
        Err(HalError::OutOfBounds { .. })
    ));
    assert!(matches!(
        hal.load_u32(r, 2, Ordering::Relaxed),
        Err(HalError::Misaligned { align: 4, .. })
    ));
    assert!(matches!(
        hal.load_u64(r, 60, Ordering::Relaxed),
        Err(HalError::OutOfBounds { .. })
    ));
    assert!(matches!(
        hal.access(r, 8, Access::WriteRecord(Record::Plain, &[0; 16])),
        Err(HalError::Misaligned { align: 16, .. })
    ));
    // Words. Ordering: every ordering is passed through to the backend once
    // (one thread: no partner is needed, the values are what is checked).
    hal.store_u32(r, 36, 0xAABB_CCDD, Ordering::Release)
        .unwrap();
    hal.store_u32(r, 32, 0x1122_3344, Ordering::Relaxed)
        .unwrap();
    assert_eq!(
        hal.load_u64(r, 32, Ordering::Acquire).unwrap(),
        0xAABB_CCDD_1122_3344
    );
    assert_eq!(
        hal.fetch_add_u32(r, 36, 0x23, Ordering::AcqRel).unwrap(),
        0xAABB_CCDD
    );
    assert_eq!(hal.load_u32(r, 32, Ordering::Relaxed).unwrap(), 0x1122_3344);
    hal.store_u64(r, 40, u64::MAX, Ordering::Relaxed).unwrap();
    // The doorbell accumulates and wraps.
    hal.store_u32(r, 44, u32::MAX, Ordering::Relaxed).unwrap();
    assert_eq!(hal.tail_inc(r, 44, 3).unwrap(), 2);
    assert_eq!(hal.tail_inc(r, 44, 1).unwrap(), 3);
    // Records.
    let rec: [u8; 16] = core::array::from_fn(|i| i as u8 + 0x10);
    hal.write_desc(r, 1, &rec).unwrap();
    assert_eq!(hal.read_desc(r, 1).unwrap(), rec);
    hal.write_nq(r, 3, &rec).unwrap();
    assert_eq!(hal.read_nq(r, 3).unwrap(), rec);
    assert!(hal.read_nq(r, 4).is_err());
    // Runs of words, starting on either half of an 8-byte word, agree with
    // word-by-word access; the range is checked as a whole.
    let w = hal.map(RegionId::Dram, 64).unwrap();
    for start in [0usize, 4] {
        let vals: Vec<u32> = (0..5)
            .map(|i| 0x0101_0101 * (i + 1) + start as u32)
            .collect();
        hal.store_u32s(w, start, &vals).unwrap();
        let one: Vec<u32> = (0..5)
            .map(|i| hal.load_u32(w, start + 4 * i, Ordering::Relaxed).unwrap())
            .collect();
        assert_eq!(one, vals);
        let mut run = [0u32; 5];
        hal.load_u32s(w, start, &mut run).unwrap();
        assert_eq!(run.to_vec(), vals);
    }
    assert_eq!(
        hal.load_u32(w, 24, Ordering::Relaxed).unwrap(),
        0,
        "past the run"
    );
    // Every run length to 40 words from either half of a word (the fake
    // backend copies four 8-byte words at a time, then pairs, then a half
    // word): the neighbours keep their words.
    let big = hal.map(RegionId::Other { tag: 78 }, 256).unwrap();
    for start in [8usize, 12] {
        for len in 0..41 {
            hal.copy_in(big, 0, &[0xEE; 256]).unwrap();
            let vals: Vec<u32> = (0..len).map(|i| 0x2000 + i as u32).collect();
            hal.store_u32s(big, start, &vals).unwrap();
            let mut all = [0u32; 64];
            hal.load_u32s(big, 0, &mut all).unwrap();
            for (i, &v) in all.iter().enumerate() {
                let inside = (start / 4..start / 4 + len).contains(&i);
                let want = if inside {
                    vals[i - start / 4]
                } else {
                    0xEEEE_EEEE
                };
                assert_eq!(v, want, "run of {len} at {start}: word {i}");
            }
            let mut run = vec![0u32; len];
            hal.load_u32s(big, start, &mut run).unwrap();
            assert_eq!(run, vals, "run of {len} at {start}");
        }
    }
    // Every byte copy that starts and ends anywhere: the neighbours keep
    // their bytes.
    let m = hal.map(RegionId::Other { tag: 77 }, 64).unwrap();
    for start in 0..17usize {
        for len in 0..20usize {
            hal.copy_in(m, 0, &[0xEE; 64]).unwrap();
            let data: Vec<u8> = (0..len).map(|i| i as u8 + 1).collect();
            hal.copy_in(m, start, &data).unwrap();
            let mut all = [0u8; 64];
            hal.copy_out(m, 0, &mut all).unwrap();
            for (i, &b) in all.iter().enumerate() {
                let want = if (start..start + len).contains(&i) {
                    data[i - start]
                } else {
                    0xEE
                };
                assert_eq!(b, want, "copy of {len} at {start}: byte {i}");
            }
        }
    }
    assert!(matches!(
        hal.load_u32s(w, 48, &mut [0; 5]),
        Err(HalError::OutOfBounds { .. })
    ));
    assert!(matches!(
        hal.store_u32s(w, 2, &[1, 2]),
        Err(HalError::Misaligned { .. })
    ));
    generic_path(&mut hal);
    // Events.
    let e = hal.event(EventId::NqIrq { core: 0 }).unwrap();
    assert!(hal.event(EventId::NqIrq { core: 0 }).is_err());
    assert_eq!(hal.wait(e, 1_000).unwrap(), Wait::TimedOut);
    hal.notify(e, 2).unwrap();
    hal.notify(e, 5).unwrap();
    assert_eq!(hal.wait(e, 1_000).unwrap(), Wait::Signalled(7));
    assert_eq!(hal.wait(e, 0).unwrap(), Wait::TimedOut);
}

/// The one generic path every named method above is provided on: each
/// access kind and width straight through `Hal::access`.
fn generic_path<H: Hal>(hal: &mut H) {
    let g = hal.map(RegionId::Other { tag: 3 }, 32).unwrap();
    let (w32, w64, rlx) = (Width::W32, Width::W64, Ordering::Relaxed);
    let v = 0x0102_0304_0506_0708;
    assert_eq!(hal.access(g, 8, Access::Store(w64, v, rlx)).unwrap(), 0);
    // Ordering: AcqRel and Acquire only pass through (one thread).
    let fa = Access::FetchAdd(w64, 1, Ordering::AcqRel);
    assert_eq!(hal.access(g, 8, fa).unwrap(), v);
    let lo = Access::Load(w32, Ordering::Acquire);
    assert_eq!(hal.access(g, 12, lo).unwrap(), 0x0102_0304);
    assert_eq!(hal.access(g, 8, Access::Load(w64, rlx)).unwrap(), v + 1);
    hal.access(g, 12, Access::Store(w32, u64::MAX, rlx))
        .unwrap();
    assert_eq!(
        hal.access(g, 12, Access::FetchAdd(w32, 2, rlx)).unwrap(),
        0xFFFF_FFFF
    );
    assert_eq!(
        hal.access(g, 8, Access::Load(w64, rlx)).unwrap(),
        0x1_0506_0709
    );
    assert_eq!(hal.access(g, 0, Access::TailInc(7)).unwrap(), 7);
    assert_eq!(hal.access(g, 0, Access::TailInc(2)).unwrap(), 9);
    let mut b = [0u8; 3];
    hal.access(g, 9, Access::Read(&mut b)).unwrap();
    assert_eq!(b, [0x07, 0x06, 0x05]);
    hal.access(g, 5, Access::Write(&[0xEE; 2])).unwrap();
    assert_eq!(
        hal.access(g, 4, Access::Load(w32, rlx)).unwrap(),
        0x00EE_EE00
    );
    hal.access(g, 16, Access::StoreRun(&[1, 2, 3])).unwrap();
    let mut run = [0u32; 3];
    hal.access(g, 16, Access::LoadRun(&mut run)).unwrap();
    assert_eq!(run, [1, 2, 3]);
    // A record's kind names it; the memory is the same.
    let rec: [u8; 16] = core::array::from_fn(|i| 0xA0 + i as u8);
    hal.access(g, 16, Access::WriteRecord(Record::Nq, &rec))
        .unwrap();
    let mut back = [0u8; 16];
    hal.access(g, 16, Access::ReadRecord(Record::Plain, &mut back))
        .unwrap();
    assert_eq!(back, rec);
    assert!(matches!(
        hal.access(g, 4, Access::Load(w64, rlx)),
        Err(HalError::Misaligned { align: 8, .. })
    ));
    assert!(matches!(
        hal.access(g, 28, Access::FetchAdd(w64, 1, rlx)),
        Err(HalError::OutOfBounds { len: 8, .. })
    ));
    assert!(matches!(
        hal.access(g, 8, Access::ReadRecord(Record::Desc, &mut back)),
        Err(HalError::Misaligned { align: 16, .. })
    ));
}

#[test]
fn contract_linux() {
    contract(LinuxHal::new());
}

#[test]
fn contract_linux_file_backed() {
    let dir = std::env::temp_dir().join(format!("xunds-hal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    contract(LinuxHal::in_dir(&dir));
    assert!(dir.join("other1").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn contract_fake() {
    contract(FakeHal::new());
}

#[test]
fn contract_middleware() {
    contract(Tracer::new(FakeHal::new()));
    contract(Tracer::with_filter(FakeHal::new(), TraceFilter::Protocol));
    contract(FaultInjector::new(LinuxHal::new(), FaultPlan::default()));
    contract(Box::new(Tracer::new(LinuxHal::new())) as Box<dyn Hal>);
}

#[test]
fn handles_from_another_backend_are_refused() {
    let mut a = FakeHal::new();
    let b = FakeHal::new();
    let r = a.map(RegionId::Dram, 16).unwrap();
    assert_eq!(
        b.load_u32(r, 0, Ordering::Relaxed),
        Err(HalError::BadHandle)
    );
    let l = LinuxHal::new();
    assert_eq!(l.copy_in(r, 0, &[1]), Err(HalError::BadHandle));
    // Same index and id, another length: a handle of a larger region must
    // not index past the smaller region's words (a lookup that checked only
    // the id would panic here).
    fn same_id_other_len<H: Hal>(mut small: H, mut big: H) {
        small.map(RegionId::Dram, 16).unwrap();
        let r = big.map(RegionId::Dram, 4096).unwrap();
        assert_eq!(
            small.load_u64(r, 4000, Ordering::Relaxed),
            Err(HalError::BadHandle)
        );
        assert_eq!(small.copy_in(r, 1000, &[1; 8]), Err(HalError::BadHandle));
        assert_eq!(
            small.access(r, 2048, Access::WriteRecord(Record::Plain, &[0; 16])),
            Err(HalError::BadHandle)
        );
    }
    same_id_other_len(FakeHal::new(), FakeHal::new());
    same_id_other_len(LinuxHal::new(), LinuxHal::new());
}

/// The tracer records deterministic text: region names and offsets, never
/// host addresses, and both backends give the same trace.
#[test]
fn tracer_is_deterministic_across_backends() {
    fn run<H: Hal>(hal: H) -> String {
        let mut t = Tracer::new(hal);
        let log = t.log();
        let ring = t
            .map(
                RegionId::DescRing {
                    core: 0,
                    dir: Dir::M2s,
                },
                64,
            )
            .unwrap();
        let nqr = t.map(RegionId::NqRing { core: 0, engine: 1 }, 32).unwrap();
        let dram = t.map(RegionId::Dram, 64).unwrap();
        let regs = t.map(RegionId::Regs { core: 0 }, 16).unwrap();
        t.copy_in(dram, 0, &[1, 2, 3, 4, 5]).unwrap();
        let d = M2sDesc::copy(52, 1, 0x8_0000_0000).encode().unwrap();
        t.write_desc(ring, 0, &d).unwrap();
        t.tail_inc(regs, 4, 1).unwrap();
        t.write_nq(nqr, 0, &done_record(1, 1, (10, 20))).unwrap();
        let _ = t.read_nq(nqr, 1).unwrap();
        // Ordering: Acquire only so the trace shows the ordering name
        // (`acq`); a misaligned load fails before any access.
        let _ = t.load_u32(regs, 3, Ordering::Acquire);
        tracer::render(&log.records(), None)
    }
    let a = run(FakeHal::new());
    let b = run(LinuxHal::new());
    assert_eq!(a, b);
    insta::assert_snapshot!(a);
}

#[test]
fn replay_reproduces_and_detects_divergence() {
    let mut t = Tracer::new(FakeHal::new());
    let log = t.log();
    let r = t.map(RegionId::Dram, 32).unwrap();
    let ev = t.event(EventId::Other { tag: 9 }).unwrap();
    t.copy_in(r, 1, &[9, 8, 7]).unwrap();
    t.tail_inc(r, 8, 5).unwrap();
    t.write_nq(r, 1, &[3; 16]).unwrap();
    let _ = t.read_nq(r, 1).unwrap();
    let mut b = [0u8; 4];
    t.copy_out(r, 0, &mut b).unwrap();
    t.notify(ev, 1).unwrap();
    let _ = t.wait(ev, 0).unwrap();
    let _ = t.copy_in(r, 40, &[1]); // fails: recorded as Failed, skipped
    let records = log.records();
    let rep = crate::replay::replay(&records, &mut LinuxHal::new()).unwrap();
    assert_eq!(rep.skipped, 1);
    assert!(rep.checked >= 4);
    // Tamper with one recorded read: the replay names the record.
    let mut bad = records.clone();
    if let TraceOp::Mem(m) = &mut bad[6].op {
        assert_eq!(m.op, Op::CopyOut);
        m.data[1] = 0xEE;
    } else {
        panic!("record 6 should be the copy_out: {:?}", bad[6]);
    }
    let d = crate::replay::replay(&bad, &mut FakeHal::new()).unwrap_err();
    assert_eq!(d.seq, 6);
    assert!(d.to_string().contains("record 6"));
}

/// Every operation of the tracer's table is recorded under its name and
/// re-issued by `replay` on both backends.
#[test]
fn every_operation_traces_and_replays() {
    let mut t = Tracer::new(FakeHal::new());
    let log = t.log();
    generic_path(&mut t);
    let r = t.map(RegionId::Other { tag: 4 }, 64).unwrap();
    t.write_desc(r, 0, &[1; 16]).unwrap();
    let _ = t.read_desc(r, 0).unwrap();
    t.write_nq(r, 1, &[2; 16]).unwrap();
    let _ = t.read_nq(r, 1).unwrap();
    t.access(r, 32, Access::WriteRecord(Record::Plain, &[3; 16]))
        .unwrap();
    t.access(r, 32, Access::ReadRecord(Record::Plain, &mut [0; 16]))
        .unwrap();
    let records = log.records();
    let mut seen: Vec<&str> = records
        .iter()
        .filter_map(|r| match &r.op {
            TraceOp::Mem(m) => Some(m.op.name()),
            _ => None,
        })
        .collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(
        seen,
        [
            "copy_in",
            "copy_out",
            "fetch_add_u32",
            "fetch_add_u64",
            "load_u32",
            "load_u64",
            "read16",
            "read_desc",
            "read_nq",
            "store_u32",
            "store_u64",
            "tail_inc",
            "write16",
            "write_desc",
            "write_nq"
        ]
    );
    let text = tracer::render(&records, None);
    assert!(
        text.contains("fetch_add other3+0x0008 acqrel +1 (was 0x102030405060708)"),
        "{text}"
    );
    assert!(text.contains("FAILED    fetch_add_u64: other3"), "{text}");
    for rep in [
        crate::replay::replay(&records, &mut FakeHal::new()).unwrap(),
        crate::replay::replay(&records, &mut LinuxHal::new()).unwrap(),
    ] {
        assert_eq!(rep.skipped, 3, "the three refused accesses");
    }
}

#[test]
fn protocol_filter_skips_dram_words_only() {
    let mut t = Tracer::with_filter(FakeHal::new(), TraceFilter::Protocol);
    let log = t.log();
    let dram = t.map(RegionId::Dram, 16).unwrap();
    let regs = t.map(RegionId::Regs { core: 0 }, 16).unwrap();
    t.store_u32(dram, 0, 1, Ordering::Relaxed).unwrap();
    let _ = t.load_u32(dram, 0, Ordering::Relaxed).unwrap();
    t.store_u32(regs, 0, 1, Ordering::Relaxed).unwrap();
    t.copy_in(dram, 4, &[1]).unwrap();
    let ops: Vec<_> = log.records().into_iter().map(|r| r.op).collect();
    assert_eq!(ops.len(), 4, "{ops:?}");
}

#[test]
fn fault_injector_corrupts_the_nth_descriptor() {
    let plan = FaultPlan::one(FaultRule::nth(
        Fault::CorruptDesc {
            what: DescCorruption::BadAddress,
            dir: Some(Dir::S2m),
        },
        2,
    ));
    let mut f = FaultInjector::new(FakeHal::new(), plan);
    let s2m = f
        .map(
            RegionId::DescRing {
                core: 0,
                dir: Dir::S2m,
            },
            64,
        )
        .unwrap();
    let m2s = f
        .map(
            RegionId::DescRing {
                core: 0,
                dir: Dir::M2s,
            },
            64,
        )
        .unwrap();
    let d = S2mDesc::copy(4, 1, 0x1000).encode().unwrap();
    for i in 0..3 {
        f.write_desc(m2s, i, &M2sDesc::copy(4, 1, 0).encode().unwrap())
            .unwrap();
        f.write_desc(s2m, i, &d).unwrap();
    }
    let got: Vec<u64> = (0..3)
        .map(|i| S2mDesc::decode(&f.read_desc(s2m, i).unwrap()).unwrap().dst)
        .collect();
    assert_eq!(got, vec![0x1000, WILD_PA, 0x1000]);
    let inj = f.injected();
    assert_eq!(inj.len(), 1);
    assert_eq!(inj[0].at, "s2m0[1]");
}

#[test]
fn corruptions_are_what_they_say() {
    let d = M2sDesc::copy(65536, 3, 0x40).encode().unwrap();
    let bad_len = M2sDesc::decode(&fault::corrupt_desc(&d, DescCorruption::BadLength)).unwrap();
    assert_eq!(bad_len.ctrl.len, 8);
    let bad_id = M2sDesc::decode(&fault::corrupt_desc(&d, DescCorruption::BadRingId)).unwrap();
    assert_eq!(bad_id.ctrl.ring_id, 1);
    assert_ne!(bad_id.ctrl.ring_id, udma::next_ring_id(3));
    let bad_pa = M2sDesc::decode(&fault::corrupt_desc(&d, DescCorruption::BadAddress)).unwrap();
    assert_eq!(bad_pa.src, WILD_PA);
}

#[test]
fn fault_injector_nq_faults_and_chance_is_seeded() {
    let entry = done_record(4, 0, (1, 2));
    let mut f = FaultInjector::new(
        FakeHal::new(),
        FaultPlan {
            seed: 1,
            rules: vec![
                FaultRule::nth(Fault::NqError(ErrorClass::Transient), 1),
                FaultRule::nth(Fault::DropNq, 2),
            ],
        },
    );
    let r = f.map(RegionId::NqRing { core: 0, engine: 0 }, 64).unwrap();
    f.write_nq(r, 0, &entry).unwrap();
    f.write_nq(r, 1, &entry).unwrap();
    f.write_nq(r, 2, &entry).unwrap();
    let e0 = NqEntry::decode(&f.read_nq(r, 0).unwrap()).unwrap();
    assert_eq!(e0.kind, Kind::Error(ErrorClass::Transient));
    assert_eq!(e0.exec_id, 4);
    assert_eq!(f.read_nq(r, 1).unwrap(), [0; 16], "dropped");
    assert_eq!(f.read_nq(r, 2).unwrap(), entry);

    let pattern = |seed| {
        let mut f = FaultInjector::new(
            FakeHal::new(),
            FaultPlan {
                seed,
                rules: vec![FaultRule {
                    fault: Fault::DropDoorbell,
                    trigger: Trigger::Chance { num: 1, den: 3 },
                    core: Some(0),
                }],
            },
        );
        let regs = f.map(RegionId::Regs { core: 0 }, 8).unwrap();
        let other = f.map(RegionId::Regs { core: 1 }, 8).unwrap();
        let mut v = Vec::new();
        for _ in 0..64 {
            v.push(f.tail_inc(regs, 0, 1).unwrap());
            f.tail_inc(other, 0, 1).unwrap();
        }
        assert_eq!(f.load_u32(other, 0, Ordering::Relaxed).unwrap(), 64);
        v
    };
    assert_eq!(pattern(7), pattern(7));
    assert_ne!(pattern(7), pattern(8));
    assert!(*pattern(7).last().unwrap() < 64, "some doorbells dropped");
}

/// `StaleRead` lags only u32 loads of register blocks inside its offset
/// range, counts only those loads, and leaves the stored value alone.
#[test]
fn fault_injector_stale_read_lags_only_its_registers() {
    let plan = FaultPlan::one(FaultRule {
        fault: Fault::StaleRead {
            off: 0x40,
            span: 8,
            lag: 100,
        },
        trigger: Trigger::From(2),
        core: Some(1),
    });
    let mut f = FaultInjector::new(FakeHal::new(), plan);
    let regs0 = f.map(RegionId::Regs { core: 0 }, 0x100).unwrap();
    let regs1 = f.map(RegionId::Regs { core: 1 }, 0x100).unwrap();
    let dram = f.map(RegionId::Dram, 0x100).unwrap();
    for r in [regs0, regs1, dram] {
        for off in [0x3C, 0x40, 0x44, 0x48] {
            f.store_u32(r, off, 7, Ordering::Relaxed).unwrap();
        }
    }
    // Ordering: Acquire only to exercise the injector's load path with a
    // non-Relaxed order; the stores above are on this thread.
    let load = |r, off| f.load_u32(r, off, Ordering::Acquire).unwrap();
    // Not eligible: another core, DRAM, offsets outside [0x40, 0x48).
    for off in [0x3C, 0x40, 0x44, 0x48] {
        assert_eq!(load(regs0, off), 7);
        assert_eq!(load(dram, off), 7);
    }
    assert_eq!(load(regs1, 0x3C), 7);
    assert_eq!(load(regs1, 0x48), 7);
    // Eligible: the first is spared (`From(2)`), then every one lags.
    assert_eq!(load(regs1, 0x40), 7);
    assert_eq!(load(regs1, 0x44), 7u32.wrapping_sub(100));
    assert_eq!(load(regs1, 0x40), 7u32.wrapping_sub(100));
    let inj = f.injected();
    assert_eq!(inj.len(), 2, "{inj:?}");
    assert_eq!(inj[0].at, "regs1+0x44");
    // The register itself is untouched.
    assert_eq!(
        f.inner().load_u32(regs1, 0x44, Ordering::Relaxed).unwrap(),
        7
    );
}
