//! `tpb_execution_info_t` (docs/abi.md §1.6): the 208-byte work item a
//! slot's `exec_info` points at, and its 112-byte `infer_resp_t`
//! completion-response area at +0x28.
//!
//! The outer struct is a 4-byte `type`, 4 bytes of alignment, then a
//! 200-byte union whose EXECUTE arm is `exec` (the rows of
//! [`TpbExecutionInfo`]).
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

use super::layout::{self, Origin};
use super::nq::ErrorClass;
use super::status::NrtStatus;

wire_block! {
    /// `infer_resp_t`: the per-execution result the worker fills at DONE
    /// (docs/abi.md §1.6 and §1.8: the fine-grained half of the result; the
    /// coarse status also travels through the slot's `exec_status`).
    /// `ts_start`, `device_id` and `device_tpb_idx` are seed positions; the
    /// rest is ours. Parsing refuses an `err_class` above [`ERR_CLASS_MAX`]
    /// and a timespec whose `tv_nsec` is outside `0..1e9`.
    ///
    /// # Examples
    ///
    /// ```
    /// use xunds::wire::nq::ErrorClass;
    /// use xunds::wire::work_item::{InferResp, Timespec, INFER_RESP_SIZE};
    ///
    /// let r = InferResp {
    ///     ts_start: Timespec::from_nanos(1_000),
    ///     ts_end: Timespec::from_nanos(4_000),
    ///     err_class: Some(ErrorClass::Model),
    ///     ..InferResp::default()
    /// };
    /// let bytes: [u8; INFER_RESP_SIZE] = r.encode();
    /// assert_eq!(u32::from_le_bytes(bytes[4..8].try_into().unwrap()), 3); // 1 + class
    /// assert_eq!(InferResp::parse(&bytes), Ok(r));
    /// assert_eq!(r.latency_total_ns(), 3_000);
    /// ```
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct InferResp: "infer_resp_t", INFER_RESP_SIZE = 112, INFER_RESP_LAYOUT, resp_off {
        /// The execution's status.
        ours STATUS status: NrtStatus = 0x00, 4;
        /// The first error's class, if any. Stored as a `u32`: 0 = none,
        /// else 1 + the [`ErrorClass`] code (whose NC counter is
        /// `ERR_GENERIC` + code), so a zeroed response means "no error".
        ours ERR_CLASS err_class: Option<ErrorClass> = 0x04, 4;
        /// Error records harvested from the NQs.
        ours NQ_ERRORS nq_errors: u32 = 0x08, 4;
        /// NQ records harvested in total.
        ours NQ_RECORDS nq_records: u32 = 0x0C, 4;
        /// Submission time (the schedule path's store).
        seed TS_START ts_start: Timespec = 0x10, 16;
        /// Completion time, host clock, set at DONE.
        ours TS_END ts_end: Timespec = 0x20, 16;
        /// Device clock at the first engine record, ns.
        ours DEVICE_START_NS device_start_ns: u64 = 0x30, 8;
        /// Device clock at the last engine record, ns.
        ours DEVICE_END_NS device_end_ns: u64 = 0x38, 8;
        /// Multiply-accumulates performed (NC `MAC_COUNT`).
        ours MAC_COUNT mac_count: u64 = 0x40, 8;
        /// Time in collectives, ns (NC `CC_TIME`).
        ours CC_TIME_NS cc_time_ns: u64 = 0x48, 8;
        /// Output tensors written.
        ours NUM_OUTPUTS num_outputs: u32 = 0x50, 4;
        reserved = 0x54, 20;
        /// Device id (the schedule path's store).
        seed DEVICE_ID device_id: u16 = 0x68, 2;
        /// TPB index on the device (the schedule path's store).
        seed DEVICE_TPB_IDX device_tpb_idx: u16 = 0x6A, 2;
        pad = 0x6C, 4;
    }
}

wire_block! {
    /// `tpb_execution_info_t`: the 208-byte work item (docs/abi.md §1.6),
    /// its union's EXECUTE arm `exec` flattened. Parsing refuses an unknown
    /// `type` and whatever [`InferResp::parse`] refuses.
    ///
    /// # Examples
    ///
    /// ```
    /// use xunds::wire::work_item::{Timespec, TpbExecutionInfo, SIZE, SUBMISSION_TS};
    ///
    /// let mut w = TpbExecutionInfo::execute(0x55, 0x66, 0);
    /// w.resp.ts_start = Timespec { tv_sec: 2, tv_nsec: 7 };
    /// let bytes: [u8; SIZE] = w.encode();
    /// assert_eq!(&bytes[SUBMISSION_TS..SUBMISSION_TS + 8], &2u64.to_le_bytes());
    /// assert_eq!(TpbExecutionInfo::parse(&bytes), Ok(w));
    /// // A zeroed item has no valid `type`.
    /// assert!(TpbExecutionInfo::parse(&[0; SIZE]).is_err());
    /// ```
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct TpbExecutionInfo: "tpb_execution_info_t", SIZE = 0xD0, LAYOUT, off {
        /// The discriminant (4 bytes).
        seed TYPE "type" ty: WorkType = 0x00, 4;
        pad = 0x04, 4;
        /// Opaque model handle (an 8-byte pointer); also the start of the union.
        seed MOD_REF "exec.mod_ref" mod_ref: u64 = 0x08, 8;
        /// Opaque bound-resources handle (an 8-byte pointer).
        seed RESOURCES "exec.resources" resources: u64 = 0x10, 8;
        /// The seed gives its offset; the width (4 bytes) is ours.
        seed COMPUTE_IDX "exec.compute_idx" compute_idx: u32 = 0x18, 4;
        pad = 0x1C, 4;
        seed SYNC_POINT_CPU_TIMESTAMP "exec.sync_point_cpu_timestamp"
            sync_point_cpu_timestamp: u64 = 0x20, 8;
        /// The completion-response area.
        seed RESP "exec.resp" resp: InferResp = 0x28, 112;
        /// Ours: the bytes between `resp` and `sync_exec`, carried opaquely.
        ours WAIT_EVENT_DATA "exec.wait_event_data" wait_event_data: [u8; 48] = 0x98, 48;
        /// 8 bytes, last.
        seed SYNC_EXEC "exec.sync_exec" sync_exec: u64 = 0xC8, 8;
    }
}

/// The 200-byte union; its EXECUTE arm is `exec` (which starts with `mod_ref`).
pub const EXEC: usize = off::MOD_REF;
/// Bytes of `exec.wait_event_data` (ours).
pub const WAIT_EVENT_DATA_LEN: usize = off::SYNC_EXEC - off::WAIT_EVENT_DATA;
/// The submission timestamp the schedule path stores (`exec.resp.ts_start`).
pub const SUBMISSION_TS: usize = off::RESP + resp_off::TS_START;
/// The schedule path's `device_id` store.
pub const DEVICE_ID: usize = off::RESP + resp_off::DEVICE_ID;
/// The schedule path's `device_tpb_idx` store.
pub const DEVICE_TPB_IDX: usize = off::RESP + resp_off::DEVICE_TPB_IDX;
/// Raw `err_class` meaning "no error" (class `k` is stored as `k + 1`).
pub const ERR_CLASS_NONE: u32 = 0;
/// The largest raw `err_class`: 1 + the last [`ErrorClass`] (`Runtime`).
pub const ERR_CLASS_MAX: u32 = ErrorClass::ALL.len() as u32;

const _: () = assert!(ERR_CLASS_MAX == 6);
const _: () = assert!(SIZE - EXEC == 200); // the union
                                           // The absolute positions the seed states: the schedule path's stores.
const _: () = assert!(SUBMISSION_TS == 0x38 && DEVICE_ID == 0x90 && DEVICE_TPB_IDX == 0x92);
// Our reading of the docs/abi.md §1.6 discrepancy: resp ends where
// wait_event_data starts, and the schedule path's two stores fall inside.
const _: () = assert!(off::RESP + INFER_RESP_SIZE == off::WAIT_EVENT_DATA);
const _: () = assert!(WAIT_EVENT_DATA_LEN == 48);

codec_as!(Option<ErrorClass>: u32, |c| match c {
    None => ERR_CLASS_NONE,
    Some(c) => c as u32 + 1,
}, |raw| match raw {
    ERR_CLASS_NONE => Some(None),
    1..=ERR_CLASS_MAX => ErrorClass::from_u8((raw - 1) as u8).map(Some),
    _ => None,
});
codec_as!(WorkType: u32, |t| t as u32, |raw| WorkType::from_index(raw));

wire_block! {
    /// A `struct timespec` (`tv_sec`, `tv_nsec`, both `i64`). Parsing
    /// refuses a `tv_nsec` outside `0..1_000_000_000`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub struct Timespec: "timespec", TIMESPEC_SIZE = 16, TIMESPEC_LAYOUT, ts_off {
        /// Whole seconds.
        seed TV_SEC tv_sec: i64 = 0, 8;
        /// Nanoseconds.
        seed TV_NSEC tv_nsec: i64 = 8, 8 if |v| (0..Timespec::NANOS_PER_SEC).contains(v);
    }
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

    /// `self - earlier` in nanoseconds, clamped at 0 and `u64::MAX`
    /// (`get_timespec_delta`).
    pub fn nanos_since(&self, earlier: &Timespec) -> u64 {
        let d = self.as_nanos() - earlier.as_nanos();
        d.clamp(0, u64::MAX as i128) as u64
    }
}

impl InferResp {
    /// Host latency, submission to completion, ns (NC `LATENCY_TOTAL`).
    pub fn latency_total_ns(&self) -> u64 {
        self.ts_end.nanos_since(&self.ts_start)
    }

    /// Device latency, first to last engine record, ns (NC `LATENCY_DEVICE`).
    pub const fn latency_device_ns(&self) -> u64 {
        self.device_end_ns.saturating_sub(self.device_start_ns)
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
}

/// The trace label of an access at byte `off` of a work-item region (taken
/// modulo the item size): the C name of the field that starts there, as a
/// field of `infer_resp_t` when it is one the worker fills (ours), else as
/// a field of the item (the union arm's `exec.` left out), e.g.
/// `tpb_execution_info_t.type`, `tpb_execution_info_t.resp.ts_start.tv_sec`,
/// `infer_resp_t.status`.
pub fn field_name(off: usize) -> Option<&'static str> {
    let at = off % SIZE;
    let i = LAYOUT.fields.iter().position(|f| f.offset == at)?;
    Some(LABELS[i])
}

/// The trace labels of [`LAYOUT`]'s fields, built at compile time.
const LABELS: [&str; LAYOUT.fields.len()] = {
    const PARTS: [(&str, &str); LAYOUT.fields.len()] = label_parts();
    const BYTES: [u8; layout::joined_len(&PARTS)] = layout::joined(&PARTS);
    layout::split(&BYTES, &PARTS, 0)
};

/// `(block, name)` of each field's label.
const fn label_parts<const N: usize>() -> [(&'static str, &'static str); N] {
    /// `s` without `prefix` (which it starts with).
    const fn after(s: &'static str, prefix: &str) -> &'static str {
        match core::str::from_utf8(s.as_bytes().split_at(prefix.len()).1) {
            Ok(t) => t,
            Err(_) => s,
        }
    }
    let mut out = [("", ""); N];
    let mut i = 0;
    while i < N {
        let f = &LAYOUT.fields[i];
        let in_resp = f.offset >= off::RESP && f.offset < off::WAIT_EVENT_DATA;
        out[i] = match (f.offset, in_resp, f.origin) {
            (off::TYPE, ..) => ("tpb_execution_info_t.", f.name),
            (_, true, Origin::Ours) => ("infer_resp_t.", after(f.name, "exec.resp.")),
            _ => ("tpb_execution_info_t.", after(f.name, "exec.")),
        };
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{read, write, WireError};

    #[test]
    fn trace_labels() {
        assert_eq!(field_name(0), Some("tpb_execution_info_t.type"));
        assert_eq!(field_name(208 + 8), Some("tpb_execution_info_t.mod_ref"));
        assert_eq!(
            field_name(SUBMISSION_TS),
            Some("tpb_execution_info_t.resp.ts_start.tv_sec")
        );
        assert_eq!(field_name(0x28), Some("infer_resp_t.status"));
        assert_eq!(field_name(0x28 + 0x40), Some("infer_resp_t.mac_count"));
        assert_eq!(field_name(0x48), Some("infer_resp_t.ts_end.tv_sec"));
        assert_eq!(field_name(0x1C), None);
    }

    #[test]
    fn a_nested_refusal_names_the_enclosing_field() {
        let mut b = TpbExecutionInfo::execute(1, 2, 3).encode();
        b[off::RESP + resp_off::TS_END + 8..][..8].copy_from_slice(&(-1i64).to_le_bytes());
        assert_eq!(
            TpbExecutionInfo::parse(&b),
            Err(WireError::InvalidField {
                block: "tpb_execution_info_t",
                field: "exec.resp.ts_end.tv_nsec",
                value: u64::MAX
            })
        );
    }

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
        write::<u64>(&mut r, resp_off::TS_END + 8, 1_000_000_000);
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
        assert_eq!(read::<u32>(&r.encode(), resp_off::ERR_CLASS), 3);
        assert_eq!(InferResp::parse(&r.encode()), Ok(r));
    }
}
