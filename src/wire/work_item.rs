//! `tpb_execution_info_t` (docs/abi.md §1.6): the 208-byte work item a
//! slot's `exec_info` points at, and its 112-byte `infer_resp_t`
//! completion-response area at +0x28.
//!
//! The outer struct is a 4-byte `type` at +0x00, 4 bytes of alignment, then a
//! 200-byte union at +0x08 whose EXECUTE arm is `exec`: `mod_ref` +0x08,
//! `resources` +0x10, `compute_idx` +0x18, `sync_point_cpu_timestamp` +0x20,
//! `resp` (`infer_resp_t`) +0x28, `sync_exec` +0xC8 (ending at 0xD0).
//!
//! What the seed fixes inside `infer_resp_t`: its size (112), `ts_start` (the
//! submission timestamp, a `timespec`) at resp+0x10 = absolute +0x38, and the
//! schedule path's `device_id`/`device_tpb_idx` stores at absolute +0x90/+0x92
//! = resp+0x68/+0x6A. The seed's prose says those two "overlap
//! exec.wait_event_data", but `infer_resp_t` is 112 bytes at +0x28 and so ends
//! at 0x98: the offsets are the bytes and we follow them, so both fields live
//! inside `infer_resp_t`, and we name the range 0x98..0xC8 `wait_event_data`.
//!
//! Everything else inside `infer_resp_t` is **ours** (marked [`Origin::Ours`]
//! in [`INFER_RESP_LAYOUT`]): the status, error class, NQ record counts,
//! completion timestamp, device start/end times, MAC count and collective
//! time the worker fills at DONE from its NQ harvest (docs/design.md). So are
//! the `type` values ([`WorkType`]), the width of `compute_idx` (4 bytes; the
//! seed gives only its offset) and the contents of `wait_event_data`, which we
//! carry as opaque bytes.
//!
//! The pointer fields (`mod_ref`, `resources`, `sync_exec`) are 8-byte words:
//! xunds stores opaque handles there, never host addresses it dereferences.
//!
//! [`Origin::Ours`]: super::layout::Origin::Ours

use core::mem::{offset_of, size_of};

#[cfg(feature = "std")]
use super::layout::annotated_dump;
use super::nq::ErrorClass;
use super::status::NrtStatus;
use super::{emit_fields, encode_fields, le, need, WireError};

wire_block! {
    /// Layout of `infer_resp_t` (112 bytes). `ts_start`, `device_id` and
    /// `device_tpb_idx` are seed positions; the rest is ours.
    pub INFER_RESP_LAYOUT: "infer_resp_t", INFER_RESP_SIZE = 112, resp_off {
        /// The execution's `NRT_STATUS`.
        ours STATUS "status" = 0x00, 4;
        /// 0 = no error, else 1 + the error class.
        ours ERR_CLASS "err_class" = 0x04, 4;
        /// Error records harvested.
        ours NQ_ERRORS "nq_errors" = 0x08, 4;
        /// NQ records harvested in total.
        ours NQ_RECORDS "nq_records" = 0x0C, 4;
        /// The submission `timespec`.
        seed TS_START "ts_start.tv_sec" = 0x10, 8;
        seed "ts_start.tv_nsec" = 0x18, 8;
        /// The completion `timespec` (host clock, at DONE).
        ours TS_END "ts_end.tv_sec" = 0x20, 8;
        ours "ts_end.tv_nsec" = 0x28, 8;
        /// Device clock at the first engine record.
        ours DEVICE_START_NS "device_start_ns" = 0x30, 8;
        /// Device clock at the last engine record.
        ours DEVICE_END_NS "device_end_ns" = 0x38, 8;
        /// Multiply-accumulates the device reported.
        ours MAC_COUNT "mac_count" = 0x40, 8;
        /// Time spent in collectives.
        ours CC_TIME_NS "cc_time_ns" = 0x48, 8;
        /// Output tensors written.
        ours NUM_OUTPUTS "num_outputs" = 0x50, 4;
        pad = 0x54, 20;
        /// Seed position: absolute +0x90.
        seed DEVICE_ID "device_id" = 0x68, 2;
        /// Seed position: absolute +0x92.
        seed DEVICE_TPB_IDX "device_tpb_idx" = 0x6A, 2;
        pad = 0x6C, 4;
    }
}

wire_block! {
    /// Layout of `tpb_execution_info_t` (208 bytes, docs/abi.md §1.6 / §1.6),
    /// with `exec.resp` flattened so every absolute offset the seed states
    /// (+0x38, +0x90, +0x92) is a row. `type` is followed by 4 bytes of
    /// alignment, then the 200-byte union whose EXECUTE arm is `exec`.
    pub LAYOUT: "tpb_execution_info_t", SIZE = 0xD0, off {
        /// The discriminant (4 bytes).
        seed TYPE "type" = 0x00, 4;
        pad = 0x04, 4;
        /// 8-byte pointer; also the start of the union.
        seed MOD_REF "exec.mod_ref" = 0x08, 8;
        /// 8-byte pointer.
        seed RESOURCES "exec.resources" = 0x10, 8;
        /// 4 bytes: our width.
        seed COMPUTE_IDX "exec.compute_idx" = 0x18, 4;
        pad = 0x1C, 4;
        seed SYNC_POINT_CPU_TIMESTAMP "exec.sync_point_cpu_timestamp" = 0x20, 8;
        /// `infer_resp_t` starts here.
        ours RESP "exec.resp.status" = 0x28, 4;
        ours "exec.resp.err_class" = 0x2C, 4;
        ours "exec.resp.nq_errors" = 0x30, 4;
        ours "exec.resp.nq_records" = 0x34, 4;
        /// The submission timestamp the schedule path stores (`exec.resp.ts_start`).
        seed SUBMISSION_TS "exec.resp.ts_start.tv_sec" = 0x38, 8;
        seed "exec.resp.ts_start.tv_nsec" = 0x40, 8;
        ours "exec.resp.ts_end.tv_sec" = 0x48, 8;
        ours "exec.resp.ts_end.tv_nsec" = 0x50, 8;
        ours "exec.resp.device_start_ns" = 0x58, 8;
        ours "exec.resp.device_end_ns" = 0x60, 8;
        ours "exec.resp.mac_count" = 0x68, 8;
        ours "exec.resp.cc_time_ns" = 0x70, 8;
        ours "exec.resp.num_outputs" = 0x78, 4;
        pad = 0x7C, 20;
        /// The schedule path's `device_id` store.
        seed DEVICE_ID "exec.resp.device_id" = 0x90, 2;
        /// The schedule path's `device_tpb_idx` store.
        seed DEVICE_TPB_IDX "exec.resp.device_tpb_idx" = 0x92, 2;
        pad = 0x94, 4;
        /// Ours: the 48 bytes between `resp` and `sync_exec`.
        ours WAIT_EVENT_DATA "exec.wait_event_data" = 0x98, 48;
        /// 8 bytes, last.
        seed SYNC_EXEC "exec.sync_exec" = 0xC8, 8;
    }
}

/// The 200-byte union; its EXECUTE arm is `exec` (which starts with `mod_ref`).
pub const EXEC: usize = off::MOD_REF;
/// Bytes of `exec.wait_event_data` (ours).
pub const WAIT_EVENT_DATA_LEN: usize = off::SYNC_EXEC - off::WAIT_EVENT_DATA;
/// Size of a `struct timespec` (two `i64`).
pub const TIMESPEC_SIZE: usize = 16;
/// Raw `err_class` meaning "no error" (class `k` is stored as `k + 1`).
pub const ERR_CLASS_NONE: u32 = 0;
/// The largest raw `err_class`: 1 + the last [`ErrorClass`] (`Runtime`).
pub const ERR_CLASS_MAX: u32 = ErrorClass::ALL.len() as u32;

const _: () = assert!(ERR_CLASS_MAX == 6);
const _: () = assert!(SIZE - EXEC == 200); // the union
                                           // Our reading of the docs/abi.md §1.6 discrepancy: resp is the 112 bytes from +0x28, it
                                           // ends where wait_event_data starts, and the +0x90/+0x92 stores fall inside.
const _: () = assert!(off::RESP + INFER_RESP_SIZE == off::WAIT_EVENT_DATA);
const _: () = assert!(off::RESP + resp_off::TS_START == off::SUBMISSION_TS);
const _: () = assert!(off::RESP + resp_off::DEVICE_ID == off::DEVICE_ID);
const _: () = assert!(off::RESP + resp_off::DEVICE_TPB_IDX == off::DEVICE_TPB_IDX);
// The flattened rows are INFER_RESP_LAYOUT's rows shifted by off::RESP.
const _: () = assert!(LAYOUT.embeds(&INFER_RESP_LAYOUT, off::RESP));

/// C mirrors of the two structs, with natural alignment, used only to prove
/// at compile time that a C compiler would put every field where `off` and
/// `resp_off` say (no value of these types is ever built).
#[allow(dead_code)]
mod c {
    #[repr(C)]
    pub struct Timespec {
        pub tv_sec: i64,
        pub tv_nsec: i64,
    }
    #[repr(C)]
    pub struct InferResp {
        pub status: u32,
        pub err_class: u32,
        pub nq_errors: u32,
        pub nq_records: u32,
        pub ts_start: Timespec,
        pub ts_end: Timespec,
        pub device_start_ns: u64,
        pub device_end_ns: u64,
        pub mac_count: u64,
        pub cc_time_ns: u64,
        pub num_outputs: u32,
        pub reserved: [u32; 5],
        pub device_id: u16,
        pub device_tpb_idx: u16,
        pub tail: u32,
    }
    /// The union's EXECUTE arm (the union is exactly this arm's 200 bytes).
    #[repr(C)]
    pub struct Exec {
        pub mod_ref: u64,
        pub resources: u64,
        pub compute_idx: u32,
        pub sync_point_cpu_timestamp: u64,
        pub resp: InferResp,
        pub wait_event_data: [u8; super::WAIT_EVENT_DATA_LEN],
        pub sync_exec: u64,
    }
    #[repr(C)]
    pub struct TpbExecutionInfo {
        pub ty: u32,
        pub exec: Exec,
    }
}

const _: () = assert!(size_of::<c::Timespec>() == TIMESPEC_SIZE);
const _: () = assert!(size_of::<c::InferResp>() == INFER_RESP_SIZE);
const _: () = assert!(size_of::<c::TpbExecutionInfo>() == SIZE);
const _: () = assert!(offset_of!(c::TpbExecutionInfo, ty) == off::TYPE);
const _: () = assert!(offset_of!(c::TpbExecutionInfo, exec) == EXEC);
const _: () = assert!(EXEC + offset_of!(c::Exec, resources) == off::RESOURCES);
const _: () = assert!(EXEC + offset_of!(c::Exec, compute_idx) == off::COMPUTE_IDX);
const _: () =
    assert!(EXEC + offset_of!(c::Exec, sync_point_cpu_timestamp) == off::SYNC_POINT_CPU_TIMESTAMP);
const _: () = assert!(EXEC + offset_of!(c::Exec, resp) == off::RESP);
const _: () = assert!(EXEC + offset_of!(c::Exec, wait_event_data) == off::WAIT_EVENT_DATA);
const _: () = assert!(EXEC + offset_of!(c::Exec, sync_exec) == off::SYNC_EXEC);
const _: () = assert!(offset_of!(c::InferResp, err_class) == resp_off::ERR_CLASS);
const _: () = assert!(offset_of!(c::InferResp, nq_errors) == resp_off::NQ_ERRORS);
const _: () = assert!(offset_of!(c::InferResp, nq_records) == resp_off::NQ_RECORDS);
const _: () = assert!(offset_of!(c::InferResp, ts_start) == resp_off::TS_START);
const _: () = assert!(offset_of!(c::InferResp, ts_end) == resp_off::TS_END);
const _: () = assert!(offset_of!(c::InferResp, device_start_ns) == resp_off::DEVICE_START_NS);
const _: () = assert!(offset_of!(c::InferResp, device_end_ns) == resp_off::DEVICE_END_NS);
const _: () = assert!(offset_of!(c::InferResp, mac_count) == resp_off::MAC_COUNT);
const _: () = assert!(offset_of!(c::InferResp, cc_time_ns) == resp_off::CC_TIME_NS);
const _: () = assert!(offset_of!(c::InferResp, num_outputs) == resp_off::NUM_OUTPUTS);
const _: () = assert!(offset_of!(c::InferResp, device_id) == resp_off::DEVICE_ID);
const _: () = assert!(offset_of!(c::InferResp, device_tpb_idx) == resp_off::DEVICE_TPB_IDX);

/// A `struct timespec` (`tv_sec`, `tv_nsec`, both `i64`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Timespec {
    /// Whole seconds.
    pub tv_sec: i64,
    /// Nanoseconds, `0..1_000_000_000` in a valid value.
    pub tv_nsec: i64,
}

impl Timespec {
    /// Nanoseconds per second.
    pub const NANOS_PER_SEC: i64 = 1_000_000_000;

    /// The timespec for `ns` nanoseconds since the clock's epoch.
    pub const fn from_nanos(ns: u64) -> Timespec {
        Timespec {
            tv_sec: (ns / Self::NANOS_PER_SEC as u64) as i64,
            tv_nsec: (ns % Self::NANOS_PER_SEC as u64) as i64,
        }
    }

    /// Total nanoseconds (wide enough for any pair of `i64`).
    pub const fn as_nanos(&self) -> i128 {
        self.tv_sec as i128 * Self::NANOS_PER_SEC as i128 + self.tv_nsec as i128
    }

    /// `true` when `tv_nsec` is in `0..1_000_000_000` (POSIX).
    pub const fn is_valid(&self) -> bool {
        self.tv_nsec >= 0 && self.tv_nsec < Self::NANOS_PER_SEC
    }

    /// `self - earlier` in nanoseconds, clamped at 0 and `u64::MAX`
    /// (`get_timespec_delta`).
    pub fn nanos_since(&self, earlier: &Timespec) -> u64 {
        let d = self.as_nanos() - earlier.as_nanos();
        d.clamp(0, u64::MAX as i128) as u64
    }

    fn read(b: &[u8], at: usize, field: &'static str) -> Result<Timespec, WireError> {
        let t = Timespec {
            tv_sec: le::u64_at(b, at) as i64,
            tv_nsec: le::u64_at(b, at + 8) as i64,
        };
        if t.is_valid() {
            Ok(t)
        } else {
            Err(WireError::invalid(
                INFER_RESP_LAYOUT.name,
                field,
                t.tv_nsec as u64,
            ))
        }
    }

    fn write(&self, b: &mut [u8], at: usize) {
        le::put_u64(b, at, self.tv_sec as u64);
        le::put_u64(b, at + 8, self.tv_nsec as u64);
    }
}

/// `infer_resp_t`: the per-execution result the worker fills at DONE
/// (docs/abi.md §1.6 and §1.8: the fine-grained half of the result; the coarse
/// status also travels through the slot's `exec_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InferResp {
    /// The execution's status (ours; resp+0x00).
    pub status: NrtStatus,
    /// The first error's class, if any (ours; resp+0x04). Stored as a `u32`:
    /// 0 = none, else 1 + the [`ErrorClass`] code (whose NC counter is
    /// `ERR_GENERIC` + code), so a zeroed response means "no error".
    pub err_class: Option<ErrorClass>,
    /// Error records harvested from the NQs (ours; resp+0x08).
    pub nq_errors: u32,
    /// NQ records harvested in total (ours; resp+0x0C).
    pub nq_records: u32,
    /// Submission time (seed: resp+0x10 = work item +0x38).
    pub ts_start: Timespec,
    /// Completion time, host clock, set at DONE (ours; resp+0x20).
    pub ts_end: Timespec,
    /// Device clock at the first engine record, ns (ours; resp+0x30).
    pub device_start_ns: u64,
    /// Device clock at the last engine record, ns (ours; resp+0x38).
    pub device_end_ns: u64,
    /// Multiply-accumulates performed (ours; resp+0x40; NC `MAC_COUNT`).
    pub mac_count: u64,
    /// Time in collectives, ns (ours; resp+0x48; NC `CC_TIME`).
    pub cc_time_ns: u64,
    /// Output tensors written (ours; resp+0x50).
    pub num_outputs: u32,
    /// Device id (seed position: resp+0x68 = work item +0x90).
    pub device_id: u16,
    /// TPB index on the device (seed position: resp+0x6A = work item +0x92).
    pub device_tpb_idx: u16,
}

impl Default for InferResp {
    fn default() -> Self {
        InferResp {
            status: NrtStatus::SUCCESS,
            err_class: None,
            nq_errors: 0,
            nq_records: 0,
            ts_start: Timespec::default(),
            ts_end: Timespec::default(),
            device_start_ns: 0,
            device_end_ns: 0,
            mac_count: 0,
            cc_time_ns: 0,
            num_outputs: 0,
            device_id: 0,
            device_tpb_idx: 0,
        }
    }
}

impl InferResp {
    /// The raw `err_class` word: 0 for none, else 1 + the class code.
    pub const fn err_class_raw(&self) -> u32 {
        match self.err_class {
            None => ERR_CLASS_NONE,
            Some(c) => c as u32 + 1,
        }
    }

    /// Host latency, submission to completion, ns (NC `LATENCY_TOTAL`).
    pub fn latency_total_ns(&self) -> u64 {
        self.ts_end.nanos_since(&self.ts_start)
    }

    /// Device latency, first to last engine record, ns (NC `LATENCY_DEVICE`).
    pub const fn latency_device_ns(&self) -> u64 {
        self.device_end_ns.saturating_sub(self.device_start_ns)
    }

    /// The 112 bytes, little-endian, reserved bytes zero.
    pub fn encode(&self) -> [u8; INFER_RESP_SIZE] {
        encode_fields(|b| self.put(b, 0))
    }

    /// Write the field bytes into `buf[..112]`, leaving reserved bytes as they are.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        emit_fields(&INFER_RESP_LAYOUT, buf, |b| self.put(b, 0))
    }

    fn put(&self, b: &mut [u8], at: usize) {
        le::put_u32(b, at + resp_off::STATUS, self.status.code());
        le::put_u32(b, at + resp_off::ERR_CLASS, self.err_class_raw());
        le::put_u32(b, at + resp_off::NQ_ERRORS, self.nq_errors);
        le::put_u32(b, at + resp_off::NQ_RECORDS, self.nq_records);
        self.ts_start.write(b, at + resp_off::TS_START);
        self.ts_end.write(b, at + resp_off::TS_END);
        le::put_u64(b, at + resp_off::DEVICE_START_NS, self.device_start_ns);
        le::put_u64(b, at + resp_off::DEVICE_END_NS, self.device_end_ns);
        le::put_u64(b, at + resp_off::MAC_COUNT, self.mac_count);
        le::put_u64(b, at + resp_off::CC_TIME_NS, self.cc_time_ns);
        le::put_u32(b, at + resp_off::NUM_OUTPUTS, self.num_outputs);
        le::put_u16(b, at + resp_off::DEVICE_ID, self.device_id);
        le::put_u16(b, at + resp_off::DEVICE_TPB_IDX, self.device_tpb_idx);
    }

    /// Decode the first 112 bytes. Refuses an `err_class` above
    /// [`ERR_CLASS_MAX`] and a timespec whose `tv_nsec` is outside `0..1e9`.
    pub fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        need(INFER_RESP_LAYOUT.name, bytes, INFER_RESP_SIZE)?;
        Self::get(bytes, 0)
    }

    fn get(b: &[u8], at: usize) -> Result<Self, WireError> {
        let raw = le::u32_at(b, at + resp_off::ERR_CLASS);
        let err_class = match raw {
            ERR_CLASS_NONE => None,
            1..=ERR_CLASS_MAX => ErrorClass::from_u8((raw - 1) as u8),
            _ => return Err(WireError::invalid(INFER_RESP_LAYOUT.name, "err_class", raw)),
        };
        Ok(InferResp {
            status: NrtStatus(le::u32_at(b, at + resp_off::STATUS)),
            err_class,
            nq_errors: le::u32_at(b, at + resp_off::NQ_ERRORS),
            nq_records: le::u32_at(b, at + resp_off::NQ_RECORDS),
            ts_start: Timespec::read(b, at + resp_off::TS_START, "ts_start.tv_nsec")?,
            ts_end: Timespec::read(b, at + resp_off::TS_END, "ts_end.tv_nsec")?,
            device_start_ns: le::u64_at(b, at + resp_off::DEVICE_START_NS),
            device_end_ns: le::u64_at(b, at + resp_off::DEVICE_END_NS),
            mac_count: le::u64_at(b, at + resp_off::MAC_COUNT),
            cc_time_ns: le::u64_at(b, at + resp_off::CC_TIME_NS),
            num_outputs: le::u32_at(b, at + resp_off::NUM_OUTPUTS),
            device_id: le::u16_at(b, at + resp_off::DEVICE_ID),
            device_tpb_idx: le::u16_at(b, at + resp_off::DEVICE_TPB_IDX),
        })
    }

    /// Annotated hex dump.
    #[cfg(feature = "std")]
    pub fn dump(&self) -> String {
        annotated_dump(&INFER_RESP_LAYOUT, &self.encode())
    }
}

wire_enum! {
    /// The work item's `type` discriminant (values ours: the seed names the
    /// EXECUTE arm and a stop request, not their numbers). 0 is deliberately
    /// not a type, so a zeroed, never-filled item is refused.
    pub enum WorkType(u32) {
        /// Run a model (the union's EXECUTE arm is meaningful).
        Execute = 1 => "EXECUTE",
        /// Stop the worker (`tpb_xu_schedule_stop`); the union is all zero.
        Stop = 2 => "STOP",
    }
}

/// `tpb_execution_info_t`: the 208-byte work item (EXECUTE arm of the union).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TpbExecutionInfo {
    /// `type` (+0x00).
    pub ty: WorkType,
    /// `exec.mod_ref` (+0x08): opaque model handle.
    pub mod_ref: u64,
    /// `exec.resources` (+0x10): opaque bound-resources handle.
    pub resources: u64,
    /// `exec.compute_idx` (+0x18).
    pub compute_idx: u32,
    /// `exec.sync_point_cpu_timestamp` (+0x20).
    pub sync_point_cpu_timestamp: u64,
    /// `exec.resp` (+0x28): the completion-response area.
    pub resp: InferResp,
    /// `exec.wait_event_data` (+0x98..+0xC8, ours): carried opaquely.
    pub wait_event_data: [u8; WAIT_EVENT_DATA_LEN],
    /// `exec.sync_exec` (+0xC8).
    pub sync_exec: u64,
}

impl Default for TpbExecutionInfo {
    fn default() -> Self {
        Self::execute(0, 0, 0)
    }
}

impl TpbExecutionInfo {
    /// An EXECUTE item for a model and its resources; everything else zero.
    pub fn execute(mod_ref: u64, resources: u64, compute_idx: u32) -> Self {
        TpbExecutionInfo {
            ty: WorkType::Execute,
            mod_ref,
            resources,
            compute_idx,
            sync_point_cpu_timestamp: 0,
            resp: InferResp::default(),
            wait_event_data: [0; WAIT_EVENT_DATA_LEN],
            sync_exec: 0,
        }
    }

    /// A STOP item (all-zero union).
    pub fn stop() -> Self {
        TpbExecutionInfo {
            ty: WorkType::Stop,
            ..Self::execute(0, 0, 0)
        }
    }

    /// The submission timestamp at +0x38 (`exec.resp.ts_start`).
    pub const fn submission_ts(&self) -> Timespec {
        self.resp.ts_start
    }

    /// The 208 bytes, little-endian, padding zero.
    pub fn encode(&self) -> [u8; SIZE] {
        encode_fields(|b| self.put(b))
    }

    /// Write the field bytes into `buf[..208]`, leaving padding as it is.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        emit_fields(&LAYOUT, buf, |b| self.put(b))
    }

    fn put(&self, b: &mut [u8]) {
        le::put_u32(b, off::TYPE, self.ty as u32);
        le::put_u64(b, off::MOD_REF, self.mod_ref);
        le::put_u64(b, off::RESOURCES, self.resources);
        le::put_u32(b, off::COMPUTE_IDX, self.compute_idx);
        le::put_u64(
            b,
            off::SYNC_POINT_CPU_TIMESTAMP,
            self.sync_point_cpu_timestamp,
        );
        self.resp.put(b, off::RESP);
        b[off::WAIT_EVENT_DATA..off::SYNC_EXEC].copy_from_slice(&self.wait_event_data);
        le::put_u64(b, off::SYNC_EXEC, self.sync_exec);
    }

    /// Decode the first 208 bytes. Refuses an unknown `type` and whatever
    /// [`InferResp::parse`] refuses.
    pub fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        need(LAYOUT.name, bytes, SIZE)?;
        let raw = le::u32_at(bytes, off::TYPE);
        let ty = WorkType::from_index(raw).ok_or(WireError::invalid(LAYOUT.name, "type", raw))?;
        let mut wait_event_data = [0u8; WAIT_EVENT_DATA_LEN];
        wait_event_data.copy_from_slice(&bytes[off::WAIT_EVENT_DATA..off::SYNC_EXEC]);
        Ok(TpbExecutionInfo {
            ty,
            mod_ref: le::u64_at(bytes, off::MOD_REF),
            resources: le::u64_at(bytes, off::RESOURCES),
            compute_idx: le::u32_at(bytes, off::COMPUTE_IDX),
            sync_point_cpu_timestamp: le::u64_at(bytes, off::SYNC_POINT_CPU_TIMESTAMP),
            resp: InferResp::get(bytes, off::RESP)?,
            wait_event_data,
            sync_exec: le::u64_at(bytes, off::SYNC_EXEC),
        })
    }

    /// Annotated hex dump (with `exec.resp` flattened).
    #[cfg(feature = "std")]
    pub fn dump(&self) -> String {
        annotated_dump(&LAYOUT, &self.encode())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn submission_ts_lands_at_0x38() {
        let mut w = TpbExecutionInfo::execute(1, 2, 3);
        w.resp.ts_start = Timespec {
            tv_sec: 0x1122,
            tv_nsec: 0x3344,
        };
        w.resp.device_id = 0xBEEF;
        w.resp.device_tpb_idx = 0x0102;
        let b = w.encode();
        assert_eq!(&b[0x38..0x40], &0x1122u64.to_le_bytes());
        assert_eq!(&b[0x40..0x48], &0x3344u64.to_le_bytes());
        assert_eq!(&b[0x90..0x92], &[0xEF, 0xBE]);
        assert_eq!(&b[0x92..0x94], &[0x02, 0x01]);
        assert_eq!(TpbExecutionInfo::parse(&b), Ok(w));
    }

    #[test]
    fn strict_fields_are_refused() {
        let mut b = TpbExecutionInfo::stop().encode();
        b[0] = 0;
        assert!(matches!(
            TpbExecutionInfo::parse(&b),
            Err(WireError::InvalidField { field: "type", .. })
        ));
        let mut r = InferResp::default().encode();
        r[resp_off::ERR_CLASS] = 7;
        assert!(matches!(
            InferResp::parse(&r),
            Err(WireError::InvalidField {
                field: "err_class",
                ..
            })
        ));
        let mut r = InferResp::default().encode();
        le::put_u64(&mut r, resp_off::TS_END + 8, 1_000_000_000);
        assert!(InferResp::parse(&r).is_err());
    }

    #[test]
    fn emit_leaves_padding_alone() {
        let mut buf = [0xA5u8; SIZE];
        TpbExecutionInfo::execute(9, 9, 9).emit(&mut buf).unwrap();
        assert_eq!(&buf[0x04..0x08], &[0xA5; 4]);
        assert_eq!(&buf[0x1C..0x20], &[0xA5; 4]);
        assert_eq!(
            &buf[off::RESP + 0x54..off::RESP + resp_off::DEVICE_ID],
            &[0xA5; 20]
        );
        assert_eq!(TpbExecutionInfo::parse(&buf).unwrap().compute_idx, 9);
    }

    #[test]
    fn latencies() {
        let r = InferResp {
            ts_start: Timespec::from_nanos(1_500_000_000),
            ts_end: Timespec::from_nanos(2_000_000_100),
            device_start_ns: 10,
            device_end_ns: 25,
            err_class: Some(ErrorClass::Model),
            ..InferResp::default()
        };
        assert_eq!(r.latency_total_ns(), 500_000_100);
        assert_eq!(r.latency_device_ns(), 15);
        assert_eq!(r.err_class_raw(), 3);
        assert_eq!(InferResp::parse(&r.encode()), Ok(r));
    }
}
