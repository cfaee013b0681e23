//! Annotated hex dumps of one populated instance of every seed-000 block,
//! pinned as insta snapshots. Values are chosen so each field's bytes are
//! recognisable in the dump.

use xunds::wire::device_request::{self, DeviceExecRequest, Engine};
use xunds::wire::exec_slot::ExecSlot;
use xunds::wire::layout::annotated_dump;
use xunds::wire::seq_id::{SeqId, XuId};
use xunds::wire::work_item::{InferResp, Timespec, TpbExecutionInfo};
use xunds::wire::xu_queue::XuQueueHeader;
use xunds::NrtStatus;

const XU: XuId = XuId::new(3, 5, 7);

#[test]
fn dump_xu_queue_t() {
    let h = XuQueueHeader {
        exec_head: 0x11,
        scheduled_head: 0x13,
        scheduled_tail: 0x15,
        ..XuQueueHeader::new(XU, 0x0000_7F12_3456_0000, 16)
    };
    insta::assert_snapshot!("xu_queue_t", h.dump());
}

#[test]
fn dump_xuq_exec_info_t() {
    let s = ExecSlot {
        mark_comp_efd: 42,
        efd_from_pool: true,
        ..ExecSlot::submitted(
            SeqId::from_cursor(0x14, XU),
            0x0000_7FFE_0000_0100,
            0x0000_5555_0000_0200,
        )
    };
    insta::assert_snapshot!("xuq_exec_info_t", s.dump());
}

#[test]
fn dump_seq_id_t() {
    let s = SeqId::from_cursor(0x1234_5678_9ABC, XU);
    insta::assert_snapshot!("seq_id_t", format!("{s}\n{}", s.dump()));
}

fn request() -> DeviceExecRequest {
    let mut r = DeviceExecRequest {
        do_model_switch: 1,
        reload_seq_config: 0,
        load_act_dve_tables: 1,
        ..Default::default()
    };
    for e in Engine::ALL {
        r.set_engine_address(e, 0x0000_0040_0000_0000 | ((e.index() as u64 + 1) << 20));
    }
    r
}

#[test]
fn dump_device_exec_request_t() {
    insta::assert_snapshot!("device_exec_request_t", request().dump());
}

#[test]
fn dump_device_exec_request_buf() {
    let b = request().encode_buffer(4);
    insta::assert_snapshot!(
        "device_exec_request_buf",
        annotated_dump(&device_request::BUFFER_LAYOUT, &b)
    );
}

fn work_item() -> TpbExecutionInfo {
    let mut w = TpbExecutionInfo::execute(0x0000_5555_AAAA_0000, 0x0000_5555_BBBB_0000, 1);
    w.sync_point_cpu_timestamp = 0x0000_0001_0000_0000;
    w.resp = InferResp {
        status: NrtStatus::SUCCESS,
        err_class: None,
        nq_errors: 0,
        nq_records: 5,
        ts_start: Timespec {
            tv_sec: 0x6500_0000,
            tv_nsec: 0x1000,
        },
        ts_end: Timespec {
            tv_sec: 0x6500_0000,
            tv_nsec: 0x9000,
        },
        device_start_ns: 0x100,
        device_end_ns: 0x700,
        mac_count: 0x10_0000,
        cc_time_ns: 0,
        num_outputs: 1,
        device_id: 2,
        device_tpb_idx: 1,
    };
    w.sync_exec = 1;
    w
}

#[test]
fn dump_tpb_execution_info_t() {
    insta::assert_snapshot!("tpb_execution_info_t", work_item().dump());
}

#[test]
fn dump_infer_resp_t() {
    insta::assert_snapshot!("infer_resp_t", work_item().resp.dump());
}
