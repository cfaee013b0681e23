//! Re-issue a recorded trace against a fresh backend: the check that the
//! tracer's records (`TraceFilter::All`) carry everything an operation
//! did.

use std::collections::HashMap;
use std::fmt;

use xunds::hal::{
    Access, EventHandle, EventId, Hal, HalError, Record, RegionHandle, RegionId, Width, RECORD,
};
use xunds::sim::tracer::{self, MemOp, Op, TraceOp, TraceRecord};

/// The record of a record access (zeros past the data).
fn rec(m: &MemOp) -> [u8; RECORD] {
    let mut rec = [0u8; RECORD];
    let n = m.data.len().min(RECORD);
    rec[..n].copy_from_slice(&m.data[..n]);
    rec
}

/// Where a replay first disagreed with the recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Divergence {
    /// The record's sequence number.
    pub(crate) seq: u64,
    /// The recorded operation.
    pub(crate) recorded: TraceOp,
    /// What the replay observed instead (rendered), or the error.
    pub(crate) observed: String,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "replay diverged at record {}: recorded `{}`, observed {}",
            self.seq,
            tracer::show(&self.recorded, None),
            self.observed
        )
    }
}

impl std::error::Error for Divergence {}

/// What a successful replay did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ReplayReport {
    /// Operations re-issued.
    pub(crate) applied: usize,
    /// Reads whose value matched the recording.
    pub(crate) checked: usize,
    /// Records skipped (failed operations).
    pub(crate) skipped: usize,
}

/// Re-issue a recorded trace (taken with `TraceFilter::All`) against a
/// fresh backend: maps and events are created, every write is applied, and every
/// read is performed and compared with the recorded value. The first
/// mismatch is a [`Divergence`]. Waits are compared too (the fake answers
/// deterministically; a Linux wait is bounded by the recorded timeout).
pub(crate) fn replay<H: Hal>(
    records: &[TraceRecord],
    hal: &mut H,
) -> Result<ReplayReport, Divergence> {
    let mut regions: HashMap<RegionId, RegionHandle> = HashMap::new();
    let mut events: HashMap<EventId, EventHandle> = HashMap::new();
    let mut rep = ReplayReport::default();
    for r in records {
        let diverge = |observed: String| Divergence {
            seq: r.seq,
            recorded: r.op.clone(),
            observed,
        };
        let err = |e: HalError| diverge(format!("error: {e}"));
        let mut check = |same: bool, got: String| {
            if same {
                rep.checked += 1;
                Ok(())
            } else {
                Err(diverge(got))
            }
        };
        let event = |e: &EventId| {
            events
                .get(e)
                .copied()
                .ok_or_else(|| diverge(format!("event {e} never created")))
        };
        match &r.op {
            TraceOp::Map { region, len } => {
                let h = hal.map(*region, *len).map_err(err)?;
                regions.insert(*region, h);
            }
            TraceOp::Event { event } => {
                let h = hal.event(*event).map_err(err)?;
                events.insert(*event, h);
            }
            TraceOp::Mem(m) => {
                let reg = *regions
                    .get(&m.region)
                    .ok_or_else(|| diverge(format!("region {} was never mapped", m.region)))?;
                let (mut buf, mut rec) = (m.data.clone(), rec(m));
                let (order, value) = (m.order, m.value);
                let width = match m.op {
                    Op::Load64 | Op::Store64 | Op::FetchAdd64 => Width::W64,
                    _ => Width::W32,
                };
                let a = match m.op {
                    Op::CopyIn => Access::Write(&m.data),
                    Op::CopyOut => Access::Read(&mut buf),
                    Op::Load32 | Op::Load64 => Access::Load(width, order),
                    Op::Store32 | Op::Store64 => Access::Store(width, value, order),
                    Op::FetchAdd32 | Op::FetchAdd64 => Access::FetchAdd(width, value, order),
                    Op::TailInc => Access::TailInc(value as u32),
                    Op::Write16 => Access::WriteRecord(Record::Plain, &rec),
                    Op::WriteDesc => Access::WriteRecord(Record::Desc, &rec),
                    Op::WriteNq => Access::WriteRecord(Record::Nq, &rec),
                    Op::Read16 => Access::ReadRecord(Record::Plain, &mut rec),
                    Op::ReadDesc => Access::ReadRecord(Record::Desc, &mut rec),
                    Op::ReadNq => Access::ReadRecord(Record::Nq, &mut rec),
                    Op::LoadRun | Op::StoreRun => {
                        return Err(diverge("a word run is recorded word by word".into()))
                    }
                };
                let got = hal.access(reg, m.off, a).map_err(err)?;
                match m.op {
                    Op::Load32 | Op::Load64 => check(got == m.value, format!("{got:#x}"))?,
                    Op::FetchAdd32 | Op::FetchAdd64 => {
                        check(got == m.result, format!("old {got:#x}"))?
                    }
                    Op::TailInc => check(got == m.result, format!("total {got}"))?,
                    Op::CopyOut => check(buf == m.data, format!("{:02x?}", &*buf))?,
                    Op::Read16 | Op::ReadDesc | Op::ReadNq => {
                        check(rec[..] == m.data[..], format!("{rec:02x?}"))?
                    }
                    _ => {}
                }
            }
            TraceOp::Notify { event: e, n } => hal.notify(event(e)?, *n).map_err(err)?,
            TraceOp::Wait {
                event: e,
                timeout_ns,
                result,
            } => {
                let got = hal.wait(event(e)?, *timeout_ns).map_err(err)?;
                check(got == *result, format!("{got:?}"))?;
            }
            TraceOp::Failed { .. } => {
                rep.skipped += 1;
                continue;
            }
        }
        rep.applied += 1;
    }
    Ok(rep)
}
