//! Request staging (docs/abi.md §1.10 "device publish boundary"): the
//! engine-address arithmetic for all five engines, the skip-config diff, the
//! order of the device-side writes (pinned by a tracer snapshot), and flow
//! control. Then the sequencer consuming what was staged.

use crate::support::NullExecutor;
use xunds::device::memmap::{self, DeviceConfig, DRAM_BASE};
use xunds::device::staging::{build_request, IbAddr, LoadedModel, ModelId, StageError};
use xunds::device::Device;
use xunds::hal::{Dir, Hal, RegionId};
use xunds::sim::fake::FakeHal;
use xunds::sim::tracer::{self, Op, TraceFilter, TraceOp, Tracer};
use xunds::wire::device_request::{DeviceExecRequest, Engine};

fn small() -> DeviceConfig {
    DeviceConfig {
        cores: 1,
        dram_size: 64 << 10,
        ring_len: 8,
        nq_len: 8,
        request_slots: 2,
        ring_id_grace_ns: 0,
    }
}

fn model(id: u32, base_pa: u64) -> LoadedModel {
    let ib = |offset| {
        Some(IbAddr {
            base_pa,
            align_offset: 0x20,
            offset,
        })
    };
    LoadedModel {
        id: ModelId(id),
        ib: [ib(0x000), ib(0x100), None, ib(0x300), ib(0x400)],
    }
}

/// docs/abi.md §1.5: addr = base pa + align_offset + offset, split into the lo and
/// hi arrays, for all five engines (the pseudo-code's `0..4` loop would miss
/// SP at index 4; the struct's arrays are five wide, so bytes win).
#[test]
fn engine_addresses_split_lo_hi_for_all_five() {
    let m = model(1, 0x8_1234_5600);
    let req = build_request(&m, true);
    assert_eq!(
        req.eng_addresses_lo,
        [0x1234_5620, 0x1234_5720, 0, 0x1234_5920, 0x1234_5A20]
    );
    assert_eq!(req.eng_addresses_hi, [8, 8, 0, 8, 8]);
    assert_eq!(
        req.engine_address(Engine::Sp),
        0x8_1234_5A20,
        "SP (index 4) filled"
    );
    assert_eq!(
        (
            req.do_model_switch,
            req.reload_seq_config,
            req.load_act_dve_tables
        ),
        (1, 1, 1)
    );
    let same = build_request(&m, false);
    assert_eq!(
        (
            same.do_model_switch,
            same.reload_seq_config,
            same.load_act_dve_tables
        ),
        (0, 0, 0)
    );
    assert_eq!(m.engines(), 0b11011);
    let idle = LoadedModel {
        id: ModelId(2),
        ib: [None; 5],
    };
    assert_eq!(
        idle.engines(),
        1 << 4,
        "an all-idle model gets one SP record"
    );
}

/// The device-side order of one staged request, as the tracer saw it: body
/// (52 bytes), trailer at 0x34, three M2S/S2M pairs (request copy 52 B into
/// DMEM, event poke 4 B, tail increment 4 B), then the doorbell S2M before
/// M2S. The last operation is the publish.
#[test]
fn snapshot_staging_order() {
    let dev = Device::new(Tracer::new(FakeHal::new()), small()).unwrap();
    let log = dev.hal().log();
    let start = log.len();
    let mut st = dev.stager(0).unwrap();
    let m = model(7, DRAM_BASE + 0x1000);
    let staged = st.stage_and_doorbell(&m, 0xCC).unwrap();
    assert_eq!(staged.exec_id, 1);
    assert!(staged.model_switch);
    let rendered = tracer::render(&log.records()[start..], Some(memmap::trace_names));
    insta::assert_snapshot!(rendered);

    // The same order, checked structurally (the snapshot is for humans).
    let ops: Vec<TraceOp> = log.records()[start..]
        .iter()
        .map(|r| r.op.clone())
        .collect();
    let kinds: Vec<String> = ops
        .iter()
        .filter_map(|op| match op {
            TraceOp::Mem(m) => match m.op {
                Op::CopyIn => Some(format!("copy_in{}", m.data.len())),
                Op::WriteDesc => Some(format!("{}", m.region)),
                Op::TailInc => Some(format!("tail_inc@{:#x}", m.off)),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "copy_in52",
            "copy_in4",
            "m2s0",
            "s2m0",
            "m2s0",
            "s2m0",
            "m2s0",
            "s2m0",
            "tail_inc@0x4",
            "tail_inc@0x0"
        ]
    );
    assert!(
        matches!(ops.last(), Some(TraceOp::Mem(m)) if m.op == Op::TailInc),
        "publish is last"
    );
}

/// Skip-config diff: the flags are set on the first request of a model on a
/// core and whenever the model changes, never on a repeat.
#[test]
fn skip_config_diff() {
    let dev = Device::new(FakeHal::new(), small()).unwrap();
    let mut st = dev.stager(0).unwrap();
    let mut seq = dev.sequencer(NullExecutor { cycles: 10 });
    let a = model(1, DRAM_BASE + 0x1000);
    let b = model(2, DRAM_BASE + 0x2000);
    let mut flags = Vec::new();
    for m in [&a, &a, &b, &b, &a] {
        let s = loop {
            match st.stage_and_doorbell(m, 0) {
                Ok(s) => break s,
                Err(StageError::Busy { .. }) => {
                    seq.poll(0).unwrap();
                }
                Err(e) => panic!("{e}"),
            }
        };
        flags.push((
            s.model_switch,
            s.request.do_model_switch,
            s.request.reload_seq_config,
        ));
    }
    assert_eq!(
        flags,
        [
            (true, 1, 1),
            (false, 0, 0),
            (true, 1, 1),
            (false, 0, 0),
            (true, 1, 1)
        ]
    );
    seq.poll(0).unwrap();
    let regs = dev.map().cores[0].regs;
    // Ordering: Acquire for a monitor's read; the Relaxed store in
    // `Sequencer::execute` ran on this thread, so it is visible anyway.
    let switches = dev
        .hal()
        .load_u32(
            regs,
            memmap::reg::MODEL_SWITCHES,
            xunds::hal::Ordering::Acquire,
        )
        .unwrap();
    assert_eq!(switches, 3, "the device saw three model switches");
}

/// The sequencer fetches exactly the request that was staged: the DMEM copy
/// equals the body, and the trailer stayed in the request buffer.
#[test]
fn sequencer_reads_the_staged_request() {
    let dev = Device::new(FakeHal::new(), small()).unwrap();
    let mut st = dev.stager(0).unwrap();
    let mut seq = dev.sequencer(NullExecutor { cycles: 10 });
    let m = model(3, DRAM_BASE + 0x4000);
    let staged = st.stage_and_doorbell(&m, 0xABCD_0123).unwrap();
    let p = seq.poll(0).unwrap();
    assert_eq!((p.copies, p.executed, p.records), (3, 1, 4));
    let mut body = [0u8; 52];
    dev.hal()
        .copy_out(dev.map().cores[0].dmem, 0, &mut body)
        .unwrap();
    assert_eq!(DeviceExecRequest::parse(&body).unwrap(), staged.request);
    let mut trailer = [0u8; 4];
    let buf = dev.map().request_buf_off(0, 0) as usize;
    dev.hal()
        .copy_out(dev.map().dram, buf + 0x34, &mut trailer)
        .unwrap();
    assert_eq!(u32::from_le_bytes(trailer), 0xABCD_0123);
}

/// A refused stage changes nothing: same exec id next time, same ring state.
#[test]
fn busy_and_ring_full_change_nothing() {
    let dev = Device::new(FakeHal::new(), small()).unwrap();
    let mut st = dev.stager(0).unwrap();
    let m = model(1, DRAM_BASE + 0x1000);
    st.stage_and_doorbell(&m, 0).unwrap();
    st.stage_and_doorbell(&m, 0).unwrap();
    let before = (st.staged(), st.queue().written());
    assert_eq!(
        st.stage_and_doorbell(&m, 0),
        Err(StageError::Busy { in_flight: 2 })
    );
    assert_eq!((st.staged(), st.queue().written()), before);
    // With more request buffers than the ring holds (3 slots per request in
    // each ring), the ring itself is the limit.
    let mut cfg = small();
    cfg.request_slots = 4;
    cfg.ring_len = 5;
    let dev = Device::new(FakeHal::new(), cfg).unwrap();
    let mut st = dev.stager(0).unwrap();
    st.stage_and_doorbell(&m, 0).unwrap();
    assert_eq!(
        st.stage_and_doorbell(&m, 0),
        Err(StageError::RingFull { need: 3, free: 2 })
    );
    let mut seq = dev.sequencer(NullExecutor { cycles: 1 });
    seq.poll(0).unwrap();
    assert_eq!(st.stage_and_doorbell(&m, 0).unwrap().exec_id, 2);
}

/// Many requests through rings of 8 slots (3 per request): the ring id at
/// slot 0 steps 1, 2, 3, 0, 1, ... on each wrap and the device keeps up, in order.
#[test]
fn ring_id_wraps_through_many_requests() {
    let dev = Device::new(
        Tracer::with_filter(FakeHal::new(), TraceFilter::Protocol),
        small(),
    )
    .unwrap();
    let log = dev.hal().log();
    let mut st = dev.stager(0).unwrap();
    let mut seq = dev.sequencer(NullExecutor { cycles: 5 });
    let mut h = dev.harvester(0).unwrap();
    let m = model(1, DRAM_BASE + 0x1000);
    for i in 1..=20u32 {
        let s = st.stage_and_doorbell(&m, i).unwrap();
        assert_eq!(s.exec_id, i);
        h.expect(s.exec_id, s.engines, u64::MAX);
        seq.poll(0).unwrap();
        let c = h.poll(0).unwrap().unwrap().unwrap();
        assert_eq!(c.exec_id, i);
    }
    let ids: Vec<u8> = log
        .records()
        .iter()
        .filter_map(|r| match &r.op {
            TraceOp::Mem(m)
                if m.op == Op::WriteDesc
                    && m.region
                        == (RegionId::DescRing {
                            core: 0,
                            dir: Dir::M2s,
                        }) =>
            {
                Some((m.index(), m.data[3] & 3))
            }
            _ => None,
        })
        .filter(|(index, _)| *index == 0)
        .map(|(_, id)| id)
        .collect();
    assert_eq!(
        ids,
        [1, 2, 3, 0, 1, 2, 3, 0],
        "20 requests x 3 slots = 7.5 laps"
    );
    let _ = tracer::render(&log.records()[..0], None);
}
