//! docs/abi.md §1.14 ("Reimplementation Checklist"), items 1 to 5, each reproduced
//! byte for byte by a real encode/parse round trip; plus the two places where
//! the seed's prose disagrees with its bytes (docs/abi.md §1.5 loop bound, docs/abi.md §1.6 overlap claim).

use xunds::wire::device_request::{
    self, DeviceExecRequest, Engine, BUFFER_SIZE, CC_DMA_INCREMENT_OFF,
};
use xunds::wire::exec_slot::{self, ExecSlot, NO_EFD};
use xunds::wire::layout::Origin;
use xunds::wire::nq::ErrorClass;
use xunds::wire::seq_id::{self, SeqId, XuId};
use xunds::wire::work_item::{self, InferResp, Timespec, TpbExecutionInfo, WorkType};
use xunds::wire::xu_queue::{self, XuQueueHeader, CURSOR_START};
use xunds::wire::WireError;
use xunds::NrtStatus;

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes(b[o..o + 2].try_into().unwrap())
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

/// docs/abi.md §1.2: xu_queue_t is 256 bytes: xu_id +0x00, buffer +0x08, capacity
/// +0x10, exec_head +0x40, scheduled_head +0x80, scheduled_tail +0xC0, each
/// cursor on its own 64-byte line; cursors are clean 48-bit counters; the
/// gaps are padding, never written.
#[test]
fn abi_1_2_xu_queue_t() {
    let h = XuQueueHeader {
        xu_id: XuId::new(3, 5, 7),
        buffer: 0x1111_2222_3333_4444,
        capacity: 64,
        exec_head: 0x0A,
        scheduled_head: 0x0B,
        scheduled_tail: 0x0C,
    };
    let mut b = [0xFFu8; 256];
    h.emit(&mut b).unwrap();
    assert_eq!(xu_queue::SIZE, 256);
    assert_eq!(u16_at(&b, 0x00), 0x0753);
    assert_eq!(u64_at(&b, 0x08), 0x1111_2222_3333_4444);
    assert_eq!(u64_at(&b, 0x10), 64);
    assert_eq!(u64_at(&b, 0x40), 0x0A);
    assert_eq!(u64_at(&b, 0x80), 0x0B);
    assert_eq!(u64_at(&b, 0xC0), 0x0C);
    // Padding untouched: 0x02..0x08, 0x18..0x40, 0x48..0x80, 0x88..0xC0, 0xC8..0x100.
    for (lo, hi) in [
        (0x02, 0x08),
        (0x18, 0x40),
        (0x48, 0x80),
        (0x88, 0xC0),
        (0xC8, 0x100),
    ] {
        assert!(b[lo..hi].iter().all(|&x| x == 0xFF), "{lo:#x}..{hi:#x}");
    }
    assert_eq!(XuQueueHeader::parse(&b), Ok(h));
    // Each cursor alone in its 64-byte line.
    for name in ["exec_head", "scheduled_head", "scheduled_tail"] {
        let f = xu_queue::LAYOUT.field(name).unwrap();
        assert_eq!(f.offset % 64, 0, "{name}");
        let others = xu_queue::LAYOUT
            .fields
            .iter()
            .filter(|g| g.name != name && g.offset / 64 == f.offset / 64);
        assert_eq!(others.count(), 0, "{name} shares its line");
    }
    // Clean 48-bit cursors: a top-16 bit in a cursor is refused.
    let mut bad = h.encode();
    bad[0xC0 + 6] = 0x01;
    assert!(matches!(
        XuQueueHeader::parse(&bad),
        Err(WireError::InvalidField {
            field: "scheduled_tail",
            ..
        })
    ));
    // A fresh queue starts every cursor at 1.
    let fresh = XuQueueHeader::new(XuId(0), 0, 4);
    assert_eq!(
        (fresh.exec_head, fresh.scheduled_head, fresh.scheduled_tail),
        (CURSOR_START, CURSOR_START, CURSOR_START)
    );
    assert_eq!(CURSOR_START, 1);
}

/// docs/abi.md §1.3: xuq_exec_info_t is 32 bytes: seq_id +0x00, exec_status +0x08,
/// mark_comp_efd +0x10 (int, init -1), efd_from_pool +0x14 (bool), exec_info
/// +0x18 (void*); +0x15..+0x18 is padding.
#[test]
fn abi_1_3_xuq_exec_info_t() {
    let seq = SeqId::from_cursor(42, XuId::new(1, 0, 2));
    let slot = ExecSlot::submitted(seq, 0xAAAA_0000_0000_0008, 0xBBBB_0000_0000_0018);
    let mut b = [0x77u8; 32];
    slot.emit(&mut b).unwrap();
    assert_eq!(exec_slot::SIZE, 32);
    assert_eq!(u64_at(&b, 0x00), seq.0);
    assert_eq!(u64_at(&b, 0x08), 0xAAAA_0000_0000_0008);
    assert_eq!(
        u32_at(&b, 0x10) as i32,
        -1,
        "producer writes -1 (no waiter)"
    );
    assert_eq!(NO_EFD, -1);
    assert_eq!(b[0x14], 0, "efd_from_pool false");
    assert_eq!(&b[0x15..0x18], &[0x77; 3], "the hole is never written");
    assert_eq!(u64_at(&b, 0x18), 0xBBBB_0000_0000_0018);
    assert_eq!(ExecSlot::parse(&b), Ok(slot));
    // A waiter installs a pooled eventfd afterwards.
    let waited = ExecSlot {
        mark_comp_efd: 9,
        efd_from_pool: true,
        ..slot
    };
    waited.emit(&mut b).unwrap();
    assert_eq!(u32_at(&b, 0x10), 9);
    assert_eq!(b[0x14], 1);
    assert_eq!(ExecSlot::parse(&b), Ok(waited));
    assert!(waited.has_waiter() && !slot.has_waiter());
}

/// docs/abi.md §1.4 (and docs/abi.md §1.4): seq_id = (cursor & 0xFFFFFFFFFFFF) | (xu_id << 48);
/// xu_id = {type:4 @[3:0], queue:4 @[7:4], vnc_id:8 @[15:8]}; the vNC is
/// HIBYTE(seq_id).
#[test]
fn abi_1_4_seq_id_packing() {
    let xu = XuId::new(3, 5, 7);
    assert_eq!(xu.0, 0x0753);
    assert_eq!((xu.ty(), xu.queue(), xu.vnc_id()), (3, 5, 7));
    assert_eq!(xu.encode(), [0x53, 0x07]);
    assert_eq!(XuId::parse(&[0x53, 0x07]), Ok(xu));

    // Materialised from the submit cursor (scheduled_tail).
    let h = XuQueueHeader {
        scheduled_tail: 0x1234_5678_9ABC,
        ..XuQueueHeader::new(xu, 0, 8)
    };
    let s = h.next_seq_id();
    assert_eq!(s.0, 0x0753_1234_5678_9ABC);
    assert_eq!(s.encode(), [0xBC, 0x9A, 0x78, 0x56, 0x34, 0x12, 0x53, 0x07]);
    assert_eq!(s.encode()[7], 7, "HIBYTE(seq_id) is the vNC");
    assert_eq!(s.vnc_id(), 7);
    assert_eq!(s.xu_id(), xu);
    assert_eq!(s.seq_num(), 0x1234_5678_9ABC);
    assert_eq!(SeqId::parse(&s.encode()), Ok(s));
    // Bits above 48 in the cursor never leak into the xu_id half.
    assert_eq!(
        SeqId::from_cursor(0xFFFF_0000_0000_0001, xu).0,
        0x0753_0000_0000_0001
    );
    // seq_id_t in memory: seq_num bytes 0..6, xu_id bytes 6..8.
    assert_eq!(seq_id::LAYOUT.field("seq_num").unwrap().offset, 0);
    assert_eq!(seq_id::LAYOUT.field("xu_id").unwrap().offset, 6);

    // Last completed = (exec_head - 1) | xu_id << 48 (docs/abi.md §1.8), same expression.
    let h = XuQueueHeader { exec_head: 10, ..h };
    assert_eq!(h.last_completed().0, 0x0753_0000_0000_0009);
    assert!(SeqId::from_cursor(9, xu).is_completed_by(h.last_completed()));
    assert!(!SeqId::from_cursor(10, xu).is_completed_by(h.last_completed()));
    // Nothing completed yet: exec_head = 1 gives seq_num 0, below every handle.
    let fresh = XuQueueHeader::new(xu, 0, 8);
    assert_eq!(fresh.last_completed().seq_num(), 0);
    assert!(!fresh.next_seq_id().is_completed_by(fresh.last_completed()));
}

/// docs/abi.md §1.5: device_exec_request_t is 52 bytes: do_model_switch +0x00,
/// eng_addresses_lo[5] +0x04, eng_addresses_hi[5] +0x18, reload_seq_config
/// +0x2C, load_act_dve_tables +0x30; cc_dma_increment is a separate 4-byte
/// copy at buffer offset 0x34 (buffer 0x38 bytes).
#[test]
fn abi_1_5_device_exec_request_t() {
    let addrs = [
        0x0000_0001_1000_0000,
        0x0000_0002_2000_0000,
        0x0000_0003_3000_0000,
        0x0000_0004_4000_0000,
        0x0000_0005_5000_0000,
    ];
    let mut r = DeviceExecRequest::with_engine_addresses(addrs);
    r.do_model_switch = 1;
    r.reload_seq_config = 1;
    r.load_act_dve_tables = 1;
    let b = r.encode();
    assert_eq!(b.len(), 0x34);
    assert_eq!(device_request::SIZE, 52);
    assert_eq!(u32_at(&b, 0x00), 1);
    for (i, e) in Engine::ALL.iter().enumerate() {
        assert_eq!(e.index(), i);
        assert_eq!(
            u32_at(&b, 0x04 + 4 * i),
            (addrs[i] & 0xFFFF_FFFF) as u32,
            "{e} lo"
        );
        assert_eq!(u32_at(&b, 0x18 + 4 * i), (addrs[i] >> 32) as u32, "{e} hi");
        assert_eq!(r.engine_address(*e), addrs[i]);
    }
    assert_eq!(u32_at(&b, 0x2C), 1);
    assert_eq!(u32_at(&b, 0x30), 1);
    assert_eq!(DeviceExecRequest::parse(&b), Ok(r));

    // The buffer: body at 0, trailer at 0x34, 0x38 in all.
    let buf = r.encode_buffer(0xC0C0_0001);
    assert_eq!(buf.len(), BUFFER_SIZE);
    assert_eq!(BUFFER_SIZE, 0x38);
    assert_eq!(CC_DMA_INCREMENT_OFF, 0x34);
    assert_eq!(&buf[..0x34], &b[..]);
    assert_eq!(u32_at(&buf, 0x34), 0xC0C0_0001);
    assert_eq!(DeviceExecRequest::parse_buffer(&buf), Ok((r, 0xC0C0_0001)));
    // The trailer is not part of the body copy.
    assert_eq!(DeviceExecRequest::parse(&buf), Ok(r));
    assert!(device_request::LAYOUT.field("cc_dma_increment").is_none());
}

/// docs/abi.md §1.5: the flags are full u32 words (not 1-byte fields at
/// +0x00..+0x03) and the addresses are a lo array then a hi array (not
/// interleaved {lo,hi} pairs).
#[test]
fn abi_1_5_abi1_flags_are_words_and_arrays_not_interleaved() {
    let mut r = DeviceExecRequest {
        do_model_switch: 0x0403_0201,
        ..Default::default()
    };
    r.set_engine_address(Engine::Pe, 0xAAAA_AAAA_BBBB_BBBB);
    r.set_engine_address(Engine::Act, 0xCCCC_CCCC_DDDD_DDDD);
    let b = r.encode();
    assert_eq!(&b[0..4], &[1, 2, 3, 4], "one little-endian u32 flag word");
    assert_eq!(u32_at(&b, 0x04), 0xBBBB_BBBB, "PE lo");
    assert_eq!(u32_at(&b, 0x08), 0xDDDD_DDDD, "ACT lo follows PE lo");
    assert_eq!(u32_at(&b, 0x18), 0xAAAA_AAAA, "PE hi starts the hi array");
    assert_eq!(u32_at(&b, 0x1C), 0xCCCC_CCCC, "ACT hi");
    let v = DeviceExecRequest::parse(&b).unwrap();
    assert_eq!(v.do_model_switch, 0x0403_0201);
    assert_eq!(v.engine_address(Engine::Act), 0xCCCC_CCCC_DDDD_DDDD);
}

/// docs/abi.md §1.5 discrepancy: the pseudo-code loops `for i in 0..4`, but the prose, the
/// loop's own comment and the bytes (five lo words 0x04..0x18, five hi words
/// 0x18..0x2C) say five engines. Bytes win: SP (index 4) is filled too.
#[test]
fn abi_1_5_all_five_engines_are_filled_not_four() {
    assert_eq!(Engine::ALL.len(), 5);
    assert_eq!(
        Engine::ALL.map(Engine::name),
        ["PE", "ACT", "POOL", "DVE", "SP"]
    );
    let r = DeviceExecRequest::with_engine_addresses([0, 0, 0, 0, 0x0000_00EE_0000_00FF]);
    let b = r.encode();
    assert_eq!(u32_at(&b, 0x14), 0xFF, "SP lo is the fifth lo word");
    assert_eq!(u32_at(&b, 0x28), 0xEE, "SP hi is the fifth hi word");
    assert_eq!(0x18 - 0x04, 5 * 4);
    assert_eq!(0x2C - 0x18, 5 * 4);
    assert_eq!(Engine::from_index(4), Some(Engine::Sp));
    assert_eq!(Engine::from_index(5), None);
}

fn populated_work_item() -> TpbExecutionInfo {
    let mut w = TpbExecutionInfo::execute(0x0000_7F00_0000_1000, 0x0000_7F00_0000_2000, 3);
    w.sync_point_cpu_timestamp = 0x0102_0304_0506_0708;
    w.resp = InferResp {
        status: NrtStatus::EXEC_COMPLETED_WITH_NUM_ERR,
        err_class: Some(ErrorClass::Numerical),
        nq_errors: 1,
        nq_records: 6,
        ts_start: Timespec {
            tv_sec: 1_700_000_000,
            tv_nsec: 123_456_789,
        },
        ts_end: Timespec {
            tv_sec: 1_700_000_001,
            tv_nsec: 5,
        },
        device_start_ns: 1000,
        device_end_ns: 9000,
        mac_count: 1 << 40,
        cc_time_ns: 77,
        num_outputs: 2,
        device_id: 0x0A0B,
        device_tpb_idx: 0x0C0D,
    };
    w.wait_event_data = [0x5E; work_item::WAIT_EVENT_DATA_LEN];
    w.sync_exec = 1;
    w
}

/// docs/abi.md §1.6: tpb_execution_info_t is 208 bytes: type +0x00, exec union at
/// +0x08 (mod_ref +0x08, resources +0x10, compute_idx +0x18,
/// sync_point_cpu_timestamp +0x20, infer_resp_t (112 B) +0x28, sync_exec
/// +0xC8); submission timestamp at +0x38; device_id/device_tpb_idx at
/// +0x90/+0x92 (docs/abi.md §1.6).
#[test]
fn abi_1_6_tpb_execution_info_t() {
    let w = populated_work_item();
    let b = w.encode();
    assert_eq!(b.len(), 208);
    assert_eq!(work_item::SIZE, 0xD0);
    assert_eq!(u32_at(&b, 0x00), WorkType::Execute as u32);
    assert_eq!(u64_at(&b, 0x08), 0x0000_7F00_0000_1000);
    assert_eq!(u64_at(&b, 0x10), 0x0000_7F00_0000_2000);
    assert_eq!(u32_at(&b, 0x18), 3);
    assert_eq!(u64_at(&b, 0x20), 0x0102_0304_0506_0708);
    // infer_resp_t: 112 bytes at +0x28, byte-identical to its own encoding.
    assert_eq!(work_item::INFER_RESP_SIZE, 112);
    assert_eq!(&b[0x28..0x28 + 112], &w.resp.encode()[..]);
    assert_eq!(InferResp::parse(&b[0x28..]), Ok(w.resp));
    // Submission timestamp (timespec) at +0x38 = resp+0x10.
    assert_eq!(u64_at(&b, 0x38), 1_700_000_000);
    assert_eq!(u64_at(&b, 0x40), 123_456_789);
    // device_id / device_tpb_idx at +0x90 / +0x92.
    assert_eq!(u16_at(&b, 0x90), 0x0A0B);
    assert_eq!(u16_at(&b, 0x92), 0x0C0D);
    // sync_exec at +0xC8, the last 8 bytes.
    assert_eq!(u64_at(&b, 0xC8), 1);
    assert_eq!(TpbExecutionInfo::parse(&b), Ok(w));
    // Seed-stated vs ours, as the layout records it.
    let origin = |n: &str| work_item::LAYOUT.field(n).unwrap().origin;
    assert_eq!(origin("exec.resp.ts_start.tv_sec"), Origin::Seed);
    assert_eq!(origin("exec.resp.device_id"), Origin::Seed);
    assert_eq!(origin("exec.sync_exec"), Origin::Seed);
    assert_eq!(origin("exec.resp.mac_count"), Origin::Ours);
    assert_eq!(origin("exec.wait_event_data"), Origin::Ours);
}

/// docs/abi.md §1.6 discrepancy: the prose says +0x90/+0x92 "overlap exec.wait_event_data",
/// but infer_resp_t is 112 bytes at +0x28 and ends at 0x98, so those stores
/// land inside infer_resp_t (resp+0x68/+0x6A). We follow the offsets and name
/// 0x98..0xC8 `wait_event_data`: writing wait_event_data never disturbs them.
#[test]
fn abi_1_6_device_id_lies_inside_infer_resp_not_wait_event_data() {
    assert_eq!(0x28 + 112, 0x98);
    let wed = work_item::LAYOUT.field("exec.wait_event_data").unwrap();
    assert_eq!((wed.offset, wed.end()), (0x98, 0xC8));
    let resp_dev = work_item::INFER_RESP_LAYOUT.field("device_id").unwrap();
    assert_eq!(0x28 + resp_dev.offset, 0x90);
    let mut w = populated_work_item();
    w.wait_event_data = [0xFF; work_item::WAIT_EVENT_DATA_LEN];
    let b = w.encode();
    assert_eq!(u16_at(&b, 0x90), 0x0A0B);
    assert_eq!(u16_at(&b, 0x92), 0x0C0D);
    assert!(b[0x98..0xC8].iter().all(|&x| x == 0xFF));
}

/// docs/abi.md §1.8: there is no completion descriptor; the result splits across the
/// slot's exec_status (coarse) and the work item's infer_resp_t (timings),
/// and the slot stays 32 bytes.
#[test]
fn abi_1_8_result_splits_across_status_and_infer_resp() {
    assert_eq!(exec_slot::SIZE, 32);
    let r = populated_work_item().resp;
    assert_eq!(r.latency_total_ns(), 1_000_000_000 - 123_456_789 + 5);
    assert_eq!(r.latency_device_ns(), 8000);
    // Numerical is class 1 (NC counter ERR_GENERIC + 1), stored as 1 + 1.
    assert_eq!(u32_at(&populated_work_item().encode(), 0x28 + 0x04), 2);
}
