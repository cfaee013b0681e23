//! The tracer middleware: wraps any [`Hal`] and records every operation as a
//! deterministic [`TraceOp`] (regions by name, offsets relative to the region
//! base, never a host address), for insta snapshots and `replay` (the
//! `testkit` feature's check that a trace re-issues).
//!
//! Put the tracer innermost (`FaultInjector<Tracer<B>>`) to record what
//! actually reached memory, outermost to record what the caller asked for.
//! Records from several threads interleave in one log in the order the
//! operations completed; with the deterministic runner that order is fixed.
#![forbid(unsafe_code)]

use core::fmt::{self, Write as _};
#[cfg(any(test, feature = "testkit"))]
use std::collections::HashMap;
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::wire::{nq, udma};

use super::{
    Dir, EventHandle, EventId, Hal, HalError, Ordering, RegionHandle, RegionId, Wait, RECORD,
};

/// One recorded HAL operation with its result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceOp {
    /// `map(region, len)`.
    Map {
        /// Region.
        region: RegionId,
        /// Length.
        len: usize,
    },
    /// `event(id)`.
    Event {
        /// Event.
        event: EventId,
    },
    /// `copy_in`.
    CopyIn {
        /// Region.
        region: RegionId,
        /// Offset.
        off: usize,
        /// Bytes written.
        data: Vec<u8>,
    },
    /// `copy_out`.
    CopyOut {
        /// Region.
        region: RegionId,
        /// Offset.
        off: usize,
        /// Bytes read.
        data: Vec<u8>,
    },
    /// `load_u32`.
    Load32 {
        /// Region.
        region: RegionId,
        /// Offset.
        off: usize,
        /// Ordering.
        order: Ordering,
        /// Value read.
        value: u32,
    },
    /// `store_u32`.
    Store32 {
        /// Region.
        region: RegionId,
        /// Offset.
        off: usize,
        /// Ordering.
        order: Ordering,
        /// Value written.
        value: u32,
    },
    /// `fetch_add_u32`.
    FetchAdd32 {
        /// Region.
        region: RegionId,
        /// Offset.
        off: usize,
        /// Ordering.
        order: Ordering,
        /// Addend.
        add: u32,
        /// Value before.
        old: u32,
    },
    /// `load_u64`.
    Load64 {
        /// Region.
        region: RegionId,
        /// Offset.
        off: usize,
        /// Ordering.
        order: Ordering,
        /// Value read.
        value: u64,
    },
    /// `store_u64`.
    Store64 {
        /// Region.
        region: RegionId,
        /// Offset.
        off: usize,
        /// Ordering.
        order: Ordering,
        /// Value written.
        value: u64,
    },
    /// `write16` (a record write that is neither a descriptor nor an NQ entry).
    Write16 {
        /// Region.
        region: RegionId,
        /// Offset.
        off: usize,
        /// The record.
        rec: [u8; RECORD],
    },
    /// `read16`.
    Read16 {
        /// Region.
        region: RegionId,
        /// Offset.
        off: usize,
        /// The record.
        rec: [u8; RECORD],
    },
    /// `write_desc`: a descriptor appended.
    WriteDesc {
        /// Ring.
        ring: RegionId,
        /// Slot.
        index: u32,
        /// The 16 bytes.
        desc: [u8; RECORD],
    },
    /// `read_desc`.
    ReadDesc {
        /// Ring.
        ring: RegionId,
        /// Slot.
        index: u32,
        /// The 16 bytes.
        desc: [u8; RECORD],
    },
    /// `tail_inc`: the doorbell.
    TailInc {
        /// Register block.
        region: RegionId,
        /// Register offset.
        off: usize,
        /// Increment.
        n: u32,
        /// Running total after.
        total: u32,
    },
    /// `write_nq`.
    WriteNq {
        /// Ring.
        ring: RegionId,
        /// Slot.
        index: u32,
        /// The 16 bytes.
        entry: [u8; RECORD],
    },
    /// `read_nq`.
    ReadNq {
        /// Ring.
        ring: RegionId,
        /// Slot.
        index: u32,
        /// The 16 bytes.
        entry: [u8; RECORD],
    },
    /// `notify`.
    Notify {
        /// Event.
        event: EventId,
        /// Amount.
        n: u64,
    },
    /// `wait`.
    Wait {
        /// Event.
        event: EventId,
        /// Bound in nanoseconds.
        timeout_ns: u64,
        /// Outcome.
        result: Wait,
    },
    /// Any operation that returned an error.
    Failed {
        /// The operation's name.
        op: &'static str,
        /// The error.
        error: HalError,
    },
}

/// One record: its sequence number in the log and the operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    /// 0-based position in the log.
    pub seq: u64,
    /// The operation.
    pub op: TraceOp,
}

/// What the tracer keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TraceFilter {
    /// Every operation (needed for `replay`).
    #[default]
    All,
    /// Every operation except plain word loads and stores on [`RegionId::Dram`]
    /// (the engines' tensor traffic); everything the protocols do is kept.
    Protocol,
}

/// Optional register names for rendering (`regs0+0x004` becomes
/// `regs0+0x004 S2M_TAIL_INC`); the device's memory map supplies one.
pub type Namer = fn(RegionId, usize) -> Option<&'static str>;

/// The shared log of a [`Tracer`]; clone it before handing the tracer away.
#[derive(Clone, Debug, Default)]
pub struct TraceLog {
    inner: Arc<Mutex<Vec<TraceRecord>>>,
}

impl TraceLog {
    fn lock(&self) -> MutexGuard<'_, Vec<TraceRecord>> {
        // A panic while holding the lock leaves a consistent Vec: keep going.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn push(&self, op: TraceOp) {
        let mut v = self.lock();
        let seq = v.len() as u64;
        v.push(TraceRecord { seq, op });
    }

    /// A copy of every record so far.
    pub fn records(&self) -> Vec<TraceRecord> {
        self.lock().clone()
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// `true` when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Remove and return every record (sequence numbers restart at 0).
    pub fn take(&self) -> Vec<TraceRecord> {
        std::mem::take(&mut *self.lock())
    }

    /// Render records `from..` one per line (see [`render`]).
    pub fn render_from(&self, from: usize, names: Option<Namer>) -> String {
        let v = self.lock();
        render(v.get(from..).unwrap_or(&[]), names)
    }
}

/// Render records one per line: `seq op details`. Deterministic.
pub fn render(records: &[TraceRecord], names: Option<Namer>) -> String {
    let mut out = String::new();
    for r in records {
        let _ = writeln!(out, "{:04} {}", r.seq, Show(&r.op, names));
    }
    out
}

/// One operation rendered as `render` prints it (without the sequence
/// number), for callers that forward records one at a time (the actors hand
/// them to the system trace as `hal` events).
pub fn show(op: &TraceOp, names: Option<Namer>) -> impl fmt::Display + '_ {
    Show(op, names)
}

/// Short ordering name.
pub const fn order_name(o: Ordering) -> &'static str {
    match o {
        Ordering::Relaxed => "rlx",
        Ordering::Acquire => "acq",
        Ordering::Release => "rel",
        Ordering::AcqRel => "acqrel",
        _ => "seqcst",
    }
}

struct At(RegionId, usize, Option<Namer>);

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}+{:#06x}", self.0, self.1)?;
        if let Some(name) = self.2.and_then(|n| n(self.0, self.1)) {
            write!(f, " {name}")?;
        }
        Ok(())
    }
}

fn hex_words(out: &mut fmt::Formatter<'_>, data: &[u8]) -> fmt::Result {
    for (i, chunk) in data.chunks(4).enumerate() {
        if i > 0 {
            out.write_char(' ')?;
        }
        if i == 16 {
            return write!(out, "... ({} bytes)", data.len());
        }
        for b in chunk {
            write!(out, "{b:02x}")?;
        }
    }
    Ok(())
}

fn desc_summary(dir: Option<Dir>, d: &[u8; RECORD]) -> String {
    match dir {
        Some(Dir::M2s) => match udma::M2sDesc::decode(d) {
            Ok(m) => format!(
                "M2S len={} rid={} {} meta={:#010x} src={:#x}",
                m.ctrl.len,
                m.ctrl.ring_id,
                flag_list(m.ctrl.flags),
                m.meta.encode().unwrap_or(0),
                m.src
            ),
            Err(e) => format!("M2S undecodable ({e})"),
        },
        Some(Dir::S2m) => match udma::S2mDesc::decode(d) {
            Ok(s) => format!(
                "S2M len={} rid={} {} dst={:#x}",
                s.ctrl.len,
                s.ctrl.ring_id,
                flag_list(s.ctrl.flags),
                s.dst
            ),
            Err(e) => format!("S2M undecodable ({e})"),
        },
        None => String::new(),
    }
}

fn flag_list(f: udma::DescFlags) -> String {
    let v: Vec<&str> = f.iter_names().map(|(n, _)| n).collect();
    if v.is_empty() {
        "-".to_string()
    } else {
        v.join("|")
    }
}

fn nq_summary(e: &[u8; RECORD]) -> String {
    match nq::NqEntry::decode(e) {
        Ok(n) => {
            let kind = match n.kind {
                nq::Kind::Done => "DONE".to_string(),
                nq::Kind::Error(c) => format!("ERROR({})", c.name()),
            };
            format!(
                "exec={} {} {} src={} phase={} cycles={}..{}",
                n.exec_id,
                nq::engine_name(n.engine),
                kind,
                n.source.name(),
                u8::from(n.phase),
                n.start_cycle,
                n.end_cycle
            )
        }
        Err(err) => format!("undecodable ({err})"),
    }
}

struct Show<'a>(&'a TraceOp, Option<Namer>);

impl fmt::Display for Show<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.1;
        match self.0 {
            TraceOp::Map { region, len } => write!(f, "map       {region} len={len:#x}"),
            TraceOp::Event { event } => write!(f, "event     {event}"),
            TraceOp::CopyIn { region, off, data } => {
                write!(f, "copy_in   {} [{}] ", At(*region, *off, n), data.len())?;
                hex_words(f, data)
            }
            TraceOp::CopyOut { region, off, data } => {
                write!(f, "copy_out  {} [{}] ", At(*region, *off, n), data.len())?;
                hex_words(f, data)
            }
            TraceOp::Load32 {
                region,
                off,
                order,
                value,
            } => word(
                f,
                "load32",
                At(*region, *off, n),
                *order,
                "= ",
                (*value).into(),
            ),
            TraceOp::Store32 {
                region,
                off,
                order,
                value,
            } => word(
                f,
                "store32",
                At(*region, *off, n),
                *order,
                "",
                (*value).into(),
            ),
            TraceOp::FetchAdd32 {
                region,
                off,
                order,
                add,
                old,
            } => write!(
                f,
                "fetch_add {} {} +{add} (was {old:#x})",
                At(*region, *off, n),
                order_name(*order)
            ),
            TraceOp::Load64 {
                region,
                off,
                order,
                value,
            } => word(f, "load64", At(*region, *off, n), *order, "= ", *value),
            TraceOp::Store64 {
                region,
                off,
                order,
                value,
            } => word(f, "store64", At(*region, *off, n), *order, "", *value),
            TraceOp::Write16 { region, off, rec } => {
                write!(f, "write16   {} ", At(*region, *off, n))?;
                hex_words(f, rec)
            }
            TraceOp::Read16 { region, off, rec } => {
                write!(f, "read16    {} ", At(*region, *off, n))?;
                hex_words(f, rec)
            }
            TraceOp::WriteDesc { ring, index, desc } => write!(
                f,
                "append    {ring}[{index}] {}",
                desc_summary(ring_dir(*ring), desc)
            ),
            TraceOp::ReadDesc { ring, index, desc } => write!(
                f,
                "read_desc {ring}[{index}] {}",
                desc_summary(ring_dir(*ring), desc)
            ),
            TraceOp::TailInc {
                region,
                off,
                n: inc,
                total,
            } => write!(f, "tail_inc  {} +{inc} -> {total}", At(*region, *off, n)),
            TraceOp::WriteNq { ring, index, entry } => {
                write!(f, "write_nq  {ring}[{index}] {}", nq_summary(entry))
            }
            TraceOp::ReadNq { ring, index, entry } => {
                write!(f, "read_nq   {ring}[{index}] {}", nq_summary(entry))
            }
            TraceOp::Notify { event, n: k } => write!(f, "notify    {event} +{k}"),
            TraceOp::Wait {
                event,
                timeout_ns,
                result,
            } => write!(f, "wait      {event} {timeout_ns}ns -> {result:?}"),
            TraceOp::Failed { op, error } => write!(f, "FAILED    {op}: {error}"),
        }
    }
}

/// One word load or store: `load32    dram+0x0010 rlx = 0x2a`.
fn word(
    f: &mut fmt::Formatter<'_>,
    op: &str,
    at: At,
    order: Ordering,
    sep: &str,
    value: u64,
) -> fmt::Result {
    write!(f, "{op:<9} {at} {} {sep}{value:#x}", order_name(order))
}

fn ring_dir(r: RegionId) -> Option<Dir> {
    match r {
        RegionId::DescRing { dir, .. } => Some(dir),
        _ => None,
    }
}

/// The tracer middleware.
#[derive(Clone, Debug)]
pub struct Tracer<H> {
    inner: H,
    log: TraceLog,
    filter: TraceFilter,
}

impl<H: Hal> Tracer<H> {
    /// Record every operation on `inner`.
    pub fn new(inner: H) -> Tracer<H> {
        Tracer::with_filter(inner, TraceFilter::All)
    }

    /// Record the operations `filter` keeps.
    pub fn with_filter(inner: H, filter: TraceFilter) -> Tracer<H> {
        Tracer {
            inner,
            log: TraceLog::default(),
            filter,
        }
    }

    /// The shared log (clone it to read after the tracer is moved away).
    pub fn log(&self) -> TraceLog {
        self.log.clone()
    }

    /// The wrapped backend.
    pub fn inner(&self) -> &H {
        &self.inner
    }

    fn keep_word(&self, r: RegionHandle) -> bool {
        !(self.filter == TraceFilter::Protocol && r.id() == RegionId::Dram)
    }

    /// [`rec`](Self::rec) for a plain word load or store, which the
    /// [`TraceFilter::Protocol`] filter drops on DRAM (failures are kept).
    fn rec_word<T>(
        &self,
        r: RegionHandle,
        op: &'static str,
        res: Result<T, HalError>,
        ok: impl FnOnce(&T) -> TraceOp,
    ) -> Result<T, HalError> {
        if !self.keep_word(r) && res.is_ok() {
            return res;
        }
        self.rec(op, res, ok)
    }

    fn rec<T>(
        &self,
        op: &'static str,
        res: Result<T, HalError>,
        ok: impl FnOnce(&T) -> TraceOp,
    ) -> Result<T, HalError> {
        match &res {
            Ok(v) => self.log.push(ok(v)),
            Err(e) => self.log.push(TraceOp::Failed {
                op,
                error: e.clone(),
            }),
        }
        res
    }
}

impl<H: Hal> Hal for Tracer<H> {
    fn name(&self) -> String {
        format!("tracer({})", self.inner.name())
    }

    fn map(&mut self, id: RegionId, len: usize) -> Result<RegionHandle, HalError> {
        let res = self.inner.map(id, len);
        self.rec("map", res, |_| TraceOp::Map { region: id, len })
    }

    // Not recorded: an address is not deterministic (traces name regions).
    fn base_addr(&self, r: RegionHandle) -> Result<u64, HalError> {
        self.inner.base_addr(r)
    }

    fn event(&mut self, id: EventId) -> Result<EventHandle, HalError> {
        let res = self.inner.event(id);
        self.rec("event", res, |_| TraceOp::Event { event: id })
    }

    fn copy_in(&self, r: RegionHandle, off: usize, data: &[u8]) -> Result<(), HalError> {
        let res = self.inner.copy_in(r, off, data);
        self.rec("copy_in", res, |_| TraceOp::CopyIn {
            region: r.id(),
            off,
            data: data.to_vec(),
        })
    }

    fn copy_out(&self, r: RegionHandle, off: usize, out: &mut [u8]) -> Result<(), HalError> {
        let res = self.inner.copy_out(r, off, out);
        let data = out.to_vec();
        self.rec("copy_out", res, |_| TraceOp::CopyOut {
            region: r.id(),
            off,
            data,
        })
    }

    fn load_u32(&self, r: RegionHandle, off: usize, order: Ordering) -> Result<u32, HalError> {
        let res = self.inner.load_u32(r, off, order);
        self.rec_word(r, "load_u32", res, |v| TraceOp::Load32 {
            region: r.id(),
            off,
            order,
            value: *v,
        })
    }

    fn store_u32(
        &self,
        r: RegionHandle,
        off: usize,
        v: u32,
        order: Ordering,
    ) -> Result<(), HalError> {
        let res = self.inner.store_u32(r, off, v, order);
        self.rec_word(r, "store_u32", res, |_| TraceOp::Store32 {
            region: r.id(),
            off,
            order,
            value: v,
        })
    }

    fn fetch_add_u32(
        &self,
        r: RegionHandle,
        off: usize,
        v: u32,
        order: Ordering,
    ) -> Result<u32, HalError> {
        let res = self.inner.fetch_add_u32(r, off, v, order);
        self.rec("fetch_add_u32", res, |old| TraceOp::FetchAdd32 {
            region: r.id(),
            off,
            order,
            add: v,
            old: *old,
        })
    }

    fn load_u64(&self, r: RegionHandle, off: usize, order: Ordering) -> Result<u64, HalError> {
        let res = self.inner.load_u64(r, off, order);
        self.rec_word(r, "load_u64", res, |v| TraceOp::Load64 {
            region: r.id(),
            off,
            order,
            value: *v,
        })
    }

    fn store_u64(
        &self,
        r: RegionHandle,
        off: usize,
        v: u64,
        order: Ordering,
    ) -> Result<(), HalError> {
        let res = self.inner.store_u64(r, off, v, order);
        self.rec_word(r, "store_u64", res, |_| TraceOp::Store64 {
            region: r.id(),
            off,
            order,
            value: v,
        })
    }

    fn write16(&self, r: RegionHandle, off: usize, rec: &[u8; RECORD]) -> Result<(), HalError> {
        let res = self.inner.write16(r, off, rec);
        self.rec("write16", res, |_| TraceOp::Write16 {
            region: r.id(),
            off,
            rec: *rec,
        })
    }

    fn read16(&self, r: RegionHandle, off: usize) -> Result<[u8; RECORD], HalError> {
        let res = self.inner.read16(r, off);
        self.rec("read16", res, |rec| TraceOp::Read16 {
            region: r.id(),
            off,
            rec: *rec,
        })
    }

    fn write_desc(
        &self,
        ring: RegionHandle,
        index: u32,
        desc: &[u8; RECORD],
    ) -> Result<(), HalError> {
        let res = self.inner.write_desc(ring, index, desc);
        self.rec("write_desc", res, |_| TraceOp::WriteDesc {
            ring: ring.id(),
            index,
            desc: *desc,
        })
    }

    fn read_desc(&self, ring: RegionHandle, index: u32) -> Result<[u8; RECORD], HalError> {
        let res = self.inner.read_desc(ring, index);
        self.rec("read_desc", res, |desc| TraceOp::ReadDesc {
            ring: ring.id(),
            index,
            desc: *desc,
        })
    }

    fn tail_inc(&self, regs: RegionHandle, off: usize, n: u32) -> Result<u32, HalError> {
        let res = self.inner.tail_inc(regs, off, n);
        self.rec("tail_inc", res, |total| TraceOp::TailInc {
            region: regs.id(),
            off,
            n,
            total: *total,
        })
    }

    fn write_nq(
        &self,
        ring: RegionHandle,
        index: u32,
        entry: &[u8; RECORD],
    ) -> Result<(), HalError> {
        let res = self.inner.write_nq(ring, index, entry);
        self.rec("write_nq", res, |_| TraceOp::WriteNq {
            ring: ring.id(),
            index,
            entry: *entry,
        })
    }

    fn read_nq(&self, ring: RegionHandle, index: u32) -> Result<[u8; RECORD], HalError> {
        let res = self.inner.read_nq(ring, index);
        self.rec("read_nq", res, |entry| TraceOp::ReadNq {
            ring: ring.id(),
            index,
            entry: *entry,
        })
    }

    fn notify(&self, ev: EventHandle, n: u64) -> Result<(), HalError> {
        let res = self.inner.notify(ev, n);
        self.rec("notify", res, |_| TraceOp::Notify { event: ev.id(), n })
    }

    fn wait(&self, ev: EventHandle, timeout_ns: u64) -> Result<Wait, HalError> {
        let res = self.inner.wait(ev, timeout_ns);
        self.rec("wait", res, |w| TraceOp::Wait {
            event: ev.id(),
            timeout_ns,
            result: *w,
        })
    }

    fn event_fd(&self, ev: EventHandle) -> Option<RawFd> {
        self.inner.event_fd(ev)
    }
}

#[cfg(any(test, feature = "testkit"))]
/// Where a replay first disagreed with the recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// The record's sequence number.
    pub seq: u64,
    /// The recorded operation.
    pub recorded: TraceOp,
    /// What the replay observed instead (rendered), or the error.
    pub observed: String,
}

#[cfg(any(test, feature = "testkit"))]
impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "replay diverged at record {}: recorded `{}`, observed {}",
            self.seq,
            Show(&self.recorded, None),
            self.observed
        )
    }
}

#[cfg(any(test, feature = "testkit"))]
impl std::error::Error for Divergence {}

#[cfg(any(test, feature = "testkit"))]
/// What a successful replay did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplayReport {
    /// Operations re-issued.
    pub applied: usize,
    /// Reads whose value matched the recording.
    pub checked: usize,
    /// Records skipped (failed operations).
    pub skipped: usize,
}

#[cfg(any(test, feature = "testkit"))]
/// Test support (`testkit` feature): re-issue a recorded trace (taken with [`TraceFilter::All`]) against a fresh
/// backend: maps and events are created, every write is applied, and every
/// read is performed and compared with the recorded value. The first
/// mismatch is a [`Divergence`]. Waits are compared too (the fake answers
/// deterministically; a Linux wait is bounded by the recorded timeout).
pub fn replay<H: Hal>(records: &[TraceRecord], hal: &mut H) -> Result<ReplayReport, Divergence> {
    let mut regions: HashMap<RegionId, RegionHandle> = HashMap::new();
    let mut events: HashMap<EventId, EventHandle> = HashMap::new();
    let mut rep = ReplayReport::default();
    for r in records {
        let diverge = |observed: String| Divergence {
            seq: r.seq,
            recorded: r.op.clone(),
            observed,
        };
        let reg = |id: &RegionId| {
            regions
                .get(id)
                .copied()
                .ok_or_else(|| diverge(format!("region {id} was never mapped")))
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
        match &r.op {
            TraceOp::Map { region, len } => {
                let h = hal.map(*region, *len).map_err(err)?;
                regions.insert(*region, h);
            }
            TraceOp::Event { event } => {
                let h = hal.event(*event).map_err(err)?;
                events.insert(*event, h);
            }
            TraceOp::CopyIn { region, off, data } => {
                hal.copy_in(reg(region)?, *off, data).map_err(err)?;
            }
            TraceOp::CopyOut { region, off, data } => {
                let mut got = vec![0u8; data.len()];
                hal.copy_out(reg(region)?, *off, &mut got).map_err(err)?;
                check(&got == data, format!("{got:02x?}"))?;
            }
            TraceOp::Load32 {
                region,
                off,
                order,
                value,
            } => {
                let got = hal.load_u32(reg(region)?, *off, *order).map_err(err)?;
                check(got == *value, format!("{got:#x}"))?;
            }
            TraceOp::Store32 {
                region,
                off,
                order,
                value,
            } => hal
                .store_u32(reg(region)?, *off, *value, *order)
                .map_err(err)?,
            TraceOp::FetchAdd32 {
                region,
                off,
                order,
                add,
                old,
            } => {
                let got = hal
                    .fetch_add_u32(reg(region)?, *off, *add, *order)
                    .map_err(err)?;
                check(got == *old, format!("old {got:#x}"))?;
            }
            TraceOp::Load64 {
                region,
                off,
                order,
                value,
            } => {
                let got = hal.load_u64(reg(region)?, *off, *order).map_err(err)?;
                check(got == *value, format!("{got:#x}"))?;
            }
            TraceOp::Store64 {
                region,
                off,
                order,
                value,
            } => hal
                .store_u64(reg(region)?, *off, *value, *order)
                .map_err(err)?,
            TraceOp::Write16 { region, off, rec } => {
                hal.write16(reg(region)?, *off, rec).map_err(err)?
            }
            TraceOp::Read16 { region, off, rec } => {
                let got = hal.read16(reg(region)?, *off).map_err(err)?;
                check(&got == rec, format!("{got:02x?}"))?;
            }
            TraceOp::WriteDesc { ring, index, desc } => {
                hal.write_desc(reg(ring)?, *index, desc).map_err(err)?
            }
            TraceOp::ReadDesc { ring, index, desc } => {
                let got = hal.read_desc(reg(ring)?, *index).map_err(err)?;
                check(&got == desc, format!("{got:02x?}"))?;
            }
            TraceOp::TailInc {
                region,
                off,
                n,
                total,
            } => {
                let got = hal.tail_inc(reg(region)?, *off, *n).map_err(err)?;
                check(got == *total, format!("total {got}"))?;
            }
            TraceOp::WriteNq { ring, index, entry } => {
                hal.write_nq(reg(ring)?, *index, entry).map_err(err)?
            }
            TraceOp::ReadNq { ring, index, entry } => {
                let got = hal.read_nq(reg(ring)?, *index).map_err(err)?;
                check(&got == entry, format!("{got:02x?}"))?;
            }
            TraceOp::Notify { event, n } => {
                let h = *events
                    .get(event)
                    .ok_or_else(|| diverge(format!("event {event} never created")))?;
                hal.notify(h, *n).map_err(err)?;
            }
            TraceOp::Wait {
                event,
                timeout_ns,
                result,
            } => {
                let h = *events
                    .get(event)
                    .ok_or_else(|| diverge(format!("event {event} never created")))?;
                let got = hal.wait(h, *timeout_ns).map_err(err)?;
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
