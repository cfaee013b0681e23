//! The tracer middleware: wraps any [`Hal`] and records every operation as a
//! deterministic [`TraceOp`] (regions by name, offsets relative to the region
//! base, never a host address), for the run's trace, insta snapshots and
//! the device tests' replay of a trace.
//!
//! Memory accesses all pass through [`Hal::access`], so the tracer wraps that
//! one method and records one generic [`MemOp`]. [`Op`] is the one table of
//! operations (the `ops!` rows: stream tag, method name, text name, shape);
//! the text view, the binary event stream and `replay` all come from it.
//!
//! Put the tracer innermost (`FaultInjector<Tracer<B>>`) to record what
//! actually reached memory, outermost to record what the caller asked for.
//! Records from several threads interleave in one log in the order the
//! operations completed; with the deterministic runner (one thread, whose
//! log takes no lock: [`TraceLog::encoding`]) that order is fixed.
#![deny(unsafe_code)]

use core::cell::{Cell, RefCell, RefMut};
use core::fmt::{self, Write as _};
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::ThreadId;

use crate::wire::{nq, udma};

use crate::hal::{
    Access, Dir, EventHandle, EventId, Hal, HalError, Ordering, Record, RegionHandle, RegionId,
    Wait, Width, RECORD,
};

/// One recorded HAL operation with its result: the structural operations
/// by name, every memory access as one generic [`MemOp`].
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
    /// A memory access ([`Hal::access`]).
    Mem(MemOp),
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

/// One memory access: which operation ([`Op`]), where, and what moved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemOp {
    /// The operation.
    pub op: Op,
    /// Region.
    pub region: RegionId,
    /// Byte offset in the region (a record's slot is [`MemOp::index`]).
    pub off: usize,
    /// The ordering of a word access (`Release` for the doorbell; copies
    /// and records carry theirs built in and record `Relaxed`).
    pub order: Ordering,
    /// The word loaded or stored, or the addend of a read-modify-write.
    pub value: u64,
    /// A fetch-add's old word; the doorbell's running total after.
    pub result: u64,
    /// The bytes of a copy or a record.
    pub data: Vec<u8>,
}

impl MemOp {
    /// The record slot of a descriptor or NQ access (`off / 16`).
    pub fn index(&self) -> u32 {
        (self.off / RECORD) as u32
    }

    /// The record of `a` at `off` of `region`, which returned `v`.
    #[inline(always)]
    fn new(op: Op, region: RegionId, off: usize, a: &Access<'_>, v: u64) -> MemOp {
        let (order, value, result, data) = fields(a, v);
        let data = data.to_vec();
        MemOp {
            op,
            region,
            off,
            order,
            value,
            result,
            data,
        }
    }

    /// Its [`Fields`].
    fn fields(&self) -> Fields<'_> {
        (self.order, self.value, self.result, &self.data)
    }
}

/// A [`MemOp`]'s ordering, value, result and the bytes moved (empty for a
/// word access).
type Fields<'a> = (Ordering, u64, u64, &'a [u8]);

/// The [`Fields`] of access `a`, which returned `v`.
#[inline(always)]
fn fields<'a>(a: &'a Access<'_>, v: u64) -> Fields<'a> {
    match a {
        Access::Load(_, order) => (*order, v, 0, &[]),
        Access::Store(_, value, order) => (*order, *value, 0, &[]),
        Access::FetchAdd(_, value, order) => (*order, *value, v, &[]),
        Access::TailInc(n) => (Ordering::Release, u64::from(*n), v, &[]),
        Access::Read(b) => (Ordering::Relaxed, 0, 0, b),
        Access::Write(b) => (Ordering::Relaxed, 0, 0, b),
        Access::ReadRecord(_, b) => (Ordering::Relaxed, 0, 0, &b[..]),
        Access::WriteRecord(_, b) => (Ordering::Relaxed, 0, 0, &b[..]),
        Access::LoadRun(_) | Access::StoreRun(_) => (Ordering::Relaxed, 0, 0, &[]),
    }
}

/// How an operation's fields are rendered and encoded.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `data` at `off`.
    Bytes,
    /// A word and its ordering; `=` marks a load.
    Load,
    Store,
    /// A read-modify-write: addend and old word.
    Rmw,
    /// The doorbell: increment and running total.
    Doorbell,
    /// A 16-byte record at `off`.
    Record,
    /// A descriptor at a slot (rendered decoded).
    Desc,
    /// An NQ record at a slot (rendered decoded).
    Nq,
    /// A run of words: never recorded as such (word by word, or only its
    /// failure).
    Run,
}

impl Shape {
    /// Whether its frame has the second word (a result, a record's second
    /// half).
    const fn wide(self) -> bool {
        matches!(
            self,
            Shape::Rmw | Shape::Doorbell | Shape::Record | Shape::Desc | Shape::Nq
        )
    }
}

/// Declares [`Op`]: each memory operation once, with the [`Access`] it
/// records, its stream tag, the [`Hal`] method it is recorded under, its
/// name in the text view and its shape.
macro_rules! ops {
    ($($(#[$doc:meta])* $access:pat => $op:ident = $tag:literal, $name:literal, $text:literal, $shape:ident;)*) => {
        /// A memory operation: the one table of their names (docs/design.md
        /// "HAL"). The discriminant is the tag in the binary event stream.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Op {
            $($(#[$doc])* $op = $tag,)*
        }

        // Tags are unique (they are discriminants) and leave the structural
        // operations theirs: map 0, event 1, notify 16, wait 17, failed 18.
        const _: () = assert!($(!matches!($tag, 0 | 1 | 16..=18))&&*);

        impl Op {
            /// The operation `a` is.
            #[inline(always)]
            pub fn of(a: &Access<'_>) -> Op {
                match a {
                    $($access => Op::$op,)*
                }
            }

            /// The [`Hal`] method's name (a failure is recorded under it).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Op::$op => $name,)*
                }
            }

            /// The name in the text view.
            const fn text(self) -> &'static str {
                match self {
                    $(Op::$op => $text,)*
                }
            }

            const fn shape(self) -> Shape {
                match self {
                    $(Op::$op => Shape::$shape,)*
                }
            }
        }
    };
}

ops! {
    /// [`Access::Write`].
    Access::Write(_) => CopyIn = 2, "copy_in", "copy_in", Bytes;
    /// [`Access::Read`].
    Access::Read(_) => CopyOut = 3, "copy_out", "copy_out", Bytes;
    /// [`Access::Load`] of 4 bytes.
    Access::Load(Width::W32, _) => Load32 = 4, "load_u32", "load32", Load;
    /// [`Access::Store`] of 4 bytes.
    Access::Store(Width::W32, ..) => Store32 = 5, "store_u32", "store32", Store;
    /// [`Access::FetchAdd`] of 4 bytes.
    Access::FetchAdd(Width::W32, ..) => FetchAdd32 = 6, "fetch_add_u32", "fetch_add", Rmw;
    /// [`Access::Load`] of 8 bytes.
    Access::Load(Width::W64, _) => Load64 = 7, "load_u64", "load64", Load;
    /// [`Access::Store`] of 8 bytes.
    Access::Store(Width::W64, ..) => Store64 = 8, "store_u64", "store64", Store;
    /// [`Access::WriteRecord`] of a [`Record::Plain`].
    Access::WriteRecord(Record::Plain, _) => Write16 = 9, "write16", "write16", Record;
    /// [`Access::ReadRecord`] of a [`Record::Plain`].
    Access::ReadRecord(Record::Plain, _) => Read16 = 10, "read16", "read16", Record;
    /// [`Access::WriteRecord`] of a [`Record::Desc`]: a descriptor appended.
    Access::WriteRecord(Record::Desc, _) => WriteDesc = 11, "write_desc", "append", Desc;
    /// [`Access::ReadRecord`] of a [`Record::Desc`].
    Access::ReadRecord(Record::Desc, _) => ReadDesc = 12, "read_desc", "read_desc", Desc;
    /// [`Access::TailInc`]: the doorbell.
    Access::TailInc(_) => TailInc = 13, "tail_inc", "tail_inc", Doorbell;
    /// [`Access::WriteRecord`] of a [`Record::Nq`].
    Access::WriteRecord(Record::Nq, _) => WriteNq = 14, "write_nq", "write_nq", Nq;
    /// [`Access::ReadRecord`] of a [`Record::Nq`].
    Access::ReadRecord(Record::Nq, _) => ReadNq = 15, "read_nq", "read_nq", Nq;
    /// [`Access::FetchAdd`] of 8 bytes.
    Access::FetchAdd(Width::W64, ..) => FetchAdd64 = 19, "fetch_add_u64", "fetch_add", Rmw;
    /// [`Access::LoadRun`] (recorded word by word, or only its failure).
    Access::LoadRun(_) => LoadRun = 20, "load_u32s", "load_u32s", Run;
    /// [`Access::StoreRun`] (recorded word by word, or only its failure).
    Access::StoreRun(_) => StoreRun = 21, "store_u32s", "store_u32s", Run;
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
///
/// A log keeps [`TraceRecord`]s, from any threads (in the order the
/// operations completed), or, made by [`TraceLog::encoding`] (the
/// deterministic runner's digest-only and trace-file runs), only the
/// operations' encodings in the binary event stream (`TraceOp::encode`):
/// one byte buffer, nothing allocated per operation, drained by
/// [`TraceLog::drain_encoded`]. An encoding log keeps no records and belongs
/// to the thread that made it: it takes no lock, and any other thread's use
/// of it panics.
#[derive(Clone, Debug, Default)]
pub struct TraceLog {
    inner: Arc<Log>,
}

#[derive(Debug)]
enum Log {
    Records(Mutex<Vec<TraceRecord>>),
    Encoded(Bound),
}

impl Default for Log {
    fn default() -> Log {
        Log::Records(Mutex::default())
    }
}

/// Encodings only the thread that made them reaches: a [`RefCell`] with no
/// lock and no locked instruction, for a log the one-thread deterministic
/// runner writes once per HAL operation.
#[derive(Debug)]
struct Bound {
    owner: ThreadId,
    cell: RefCell<Encoded>,
}

// SAFETY: `Sync` lets other threads hold a `&Bound`, but the only way to
// `cell` is `Bound::with`, which panics unless the calling thread is `owner`
// (a `ThreadId` is never reused), so one thread alone ever touches the
// `RefCell`, its borrow flag included. Dropping a `Bound` elsewhere needs
// ownership (the `Arc` orders it after every use), and `Encoded` is `Send`.
#[allow(unsafe_code)]
unsafe impl Sync for Bound {}

impl Bound {
    /// The encodings; panics on another thread than the owner, or while
    /// they are borrowed.
    #[inline(always)]
    fn get(&self) -> RefMut<'_, Encoded> {
        assert!(
            this_thread() == self.owner,
            "a trace log used off its thread"
        );
        self.cell.borrow_mut()
    }
}

thread_local! {
    /// The thread's id once [`this_thread`] asked for it.
    static THREAD: Cell<Option<ThreadId>> = const { Cell::new(None) };
}

/// The calling thread's id, cached (`thread::current()` clones a handle).
#[inline(always)]
fn this_thread() -> ThreadId {
    THREAD.get().unwrap_or_else(first_ask)
}

#[cold]
fn first_ask() -> ThreadId {
    let t = std::thread::current().id();
    THREAD.set(Some(t));
    t
}

/// The operations of an encoding [`TraceLog`]: their encodings
/// (`TraceOp::encode`) back to back, as the event stream carries a poll's
/// `hal` events, so the stream takes them in one copy or digests them where
/// they lie.
#[derive(Debug, Default)]
pub struct Encoded {
    /// The encodings, concatenated.
    pub bytes: Vec<u8>,
    /// The end offset in `bytes` of each operation's encoding.
    pub ends: Vec<u32>,
}

impl Encoded {
    /// Each operation's encoding, in order.
    pub fn ops(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let mut start = 0usize;
        self.ends.iter().map(move |&end| {
            let op = &self.bytes[start..end as usize];
            start = end as usize;
            op
        })
    }

    #[inline(always)]
    fn push(&mut self, encode: impl FnOnce(&mut Vec<u8>)) {
        encode(&mut self.bytes);
        self.ends.push(self.bytes.len() as u32);
    }
}

impl TraceLog {
    /// A log that keeps only the operations' encodings (see the type's
    /// docs), for the calling thread: for a binary trace without a text
    /// view.
    pub fn encoding() -> TraceLog {
        TraceLog {
            inner: Arc::new(Log::Encoded(Bound {
                owner: this_thread(),
                cell: RefCell::default(),
            })),
        }
    }

    /// The records of a record-keeping log (`None` for an encoding one).
    fn lock(&self) -> Option<MutexGuard<'_, Vec<TraceRecord>>> {
        match &*self.inner {
            // A panic while holding the lock leaves a consistent log: keep
            // going.
            Log::Records(m) => Some(m.lock().unwrap_or_else(|p| p.into_inner())),
            Log::Encoded(_) => None,
        }
    }

    fn push(&self, op: TraceOp) {
        if let Log::Encoded(e) = &*self.inner {
            return e.get().push(|out| op.encode(out));
        }
        if let Some(mut v) = self.lock() {
            let seq = v.len() as u64;
            v.push(TraceRecord { seq, op });
        }
    }

    /// Record a memory access: encoded straight from the access in an
    /// encoding log (no [`MemOp`], no copy of its bytes), as a [`MemOp`]
    /// otherwise.
    #[inline(always)]
    fn push_mem(&self, op: Op, r: RegionHandle, off: usize, a: &Access<'_>, v: u64) {
        match &*self.inner {
            Log::Encoded(e) => e
                .get()
                .push(|out| encode_mem(out, op, key_code(r.key()), off, fields(a, v))),
            Log::Records(_) => self.push(TraceOp::Mem(MemOp::new(op, r.id(), off, a, v))),
        }
    }

    /// A copy of every record so far.
    pub fn records(&self) -> Vec<TraceRecord> {
        self.lock().map_or_else(Vec::new, |v| v.clone())
    }

    /// Number of records (of operations, in an encoding log).
    pub fn len(&self) -> usize {
        match &*self.inner {
            Log::Encoded(e) => e.get().ends.len(),
            Log::Records(_) => self.lock().map_or(0, |v| v.len()),
        }
    }

    /// `true` when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Hand every record to `f` in order, then remove them (sequence
    /// numbers restart at 0) keeping the log's buffer for the next ones.
    /// `f` must not use the traced HAL (the log is locked meanwhile).
    pub fn drain_each(&self, f: impl FnMut(&TraceRecord)) {
        if let Some(mut v) = self.lock() {
            v.iter().for_each(f);
            v.clear();
        }
    }

    /// For an encoding log: hand the encoded operations so far to `f` (if
    /// there are any), then remove them keeping the buffers. Returns
    /// `false` for a log that keeps records (nothing is handed over).
    /// `f` must not use the traced HAL (the log is borrowed meanwhile).
    pub fn drain_encoded(&self, f: impl FnOnce(&Encoded)) -> bool {
        let Log::Encoded(e) = &*self.inner else {
            return false;
        };
        let mut e = e.get();
        if !e.ends.is_empty() {
            f(&e);
            e.bytes.clear();
            e.ends.clear();
        }
        true
    }
}

/// Render records one per line: `seq op details`. Deterministic.
#[cfg(any(test, feature = "testkit"))]
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

/// Short ordering name (by its [`order_code`]).
const fn order_name(o: Ordering) -> &'static str {
    ["rlx", "acq", "rel", "acqrel", "seqcst"][order_code(o) as usize]
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

/// A descriptor as a ring of `region` holds it (nothing off a ring).
fn desc_summary(region: RegionId, d: &[u8; RECORD]) -> String {
    let ctrl = |c: udma::LenCtrl| format!("len={} rid={} {}", c.len, c.ring_id, c.flags.names());
    match region {
        RegionId::DescRing { dir: Dir::M2s, .. } => match udma::M2sDesc::decode(d) {
            Ok(m) => {
                let meta = m.meta.encode().unwrap_or(0);
                format!("M2S {} meta={meta:#010x} src={:#x}", ctrl(m.ctrl), m.src)
            }
            Err(e) => format!("M2S undecodable ({e})"),
        },
        RegionId::DescRing { dir: Dir::S2m, .. } => match udma::S2mDesc::decode(d) {
            Ok(s) => format!("S2M {} dst={:#x}", ctrl(s.ctrl), s.dst),
            Err(e) => format!("S2M undecodable ({e})"),
        },
        _ => String::new(),
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

#[cfg(test)]
thread_local! {
    /// Operations rendered as text on this thread (tests count them).
    pub(crate) static SHOWN: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
}

impl fmt::Display for Show<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        #[cfg(test)]
        SHOWN.with(|c| c.set(c.get() + 1));
        let m = match self.0 {
            TraceOp::Map { region, len } => return write!(f, "map       {region} len={len:#x}"),
            TraceOp::Event { event } => return write!(f, "event     {event}"),
            TraceOp::Notify { event, n: k } => return write!(f, "notify    {event} +{k}"),
            TraceOp::Wait {
                event,
                timeout_ns,
                result,
            } => return write!(f, "wait      {event} {timeout_ns}ns -> {result:?}"),
            TraceOp::Failed { op, error } => return write!(f, "FAILED    {op}: {error}"),
            TraceOp::Mem(m) => m,
        };
        let (at, order, v) = (At(m.region, m.off, self.1), order_name(m.order), m.value);
        write!(f, "{:<9} ", m.op.text())?;
        match m.op.shape() {
            Shape::Bytes => {
                write!(f, "{at} [{}] ", m.data.len())?;
                hex_words(f, &m.data)
            }
            Shape::Load => write!(f, "{at} {order} = {v:#x}"),
            Shape::Store => write!(f, "{at} {order} {v:#x}"),
            Shape::Rmw => write!(f, "{at} {order} +{v} (was {:#x})", m.result),
            Shape::Doorbell => write!(f, "{at} +{v} -> {}", m.result),
            Shape::Record => {
                write!(f, "{at} ")?;
                hex_words(f, &m.data)
            }
            Shape::Desc => {
                let desc = desc_summary(m.region, &padded(&m.data));
                write!(f, "{}[{}] {desc}", m.region, m.index())
            }
            Shape::Nq => {
                let nq = nq_summary(&padded(&m.data));
                write!(f, "{}[{}] {nq}", m.region, m.index())
            }
            Shape::Run => write!(f, "{at}"),
        }
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
    #[cfg(any(test, feature = "testkit"))]
    pub fn new(inner: H) -> Tracer<H> {
        Tracer::with_filter(inner, TraceFilter::All)
    }

    /// Record the operations `filter` keeps.
    pub fn with_filter(inner: H, filter: TraceFilter) -> Tracer<H> {
        Tracer::with_log(inner, filter, TraceLog::default())
    }

    /// Record the operations `filter` keeps into `log` (a
    /// [`TraceLog::encoding`] one, say).
    pub fn with_log(inner: H, filter: TraceFilter, log: TraceLog) -> Tracer<H> {
        Tracer { inner, log, filter }
    }

    /// The shared log (clone it to read after the tracer is moved away).
    pub fn log(&self) -> TraceLog {
        self.log.clone()
    }

    /// The wrapped backend.
    #[cfg(any(test, feature = "testkit"))]
    pub fn inner(&self) -> &H {
        &self.inner
    }

    fn keep_word(&self, r: RegionHandle) -> bool {
        !(self.filter == TraceFilter::Protocol && r.key() == RegionId::Dram.key())
    }

    /// Record a failure under the operation's name.
    #[inline]
    fn rec_failure<T>(&self, op: &'static str, res: Result<T, HalError>) -> Result<T, HalError> {
        if let Err(e) = &res {
            self.failed(op, e);
        }
        res
    }

    #[cold]
    #[inline(never)]
    fn failed(&self, op: &'static str, e: &HalError) {
        self.log.push(TraceOp::Failed {
            op,
            error: e.clone(),
        });
    }

    #[inline]
    fn rec<T>(
        &self,
        op: &'static str,
        res: Result<T, HalError>,
        ok: impl FnOnce(&T) -> TraceOp,
    ) -> Result<T, HalError> {
        if let Ok(v) = &res {
            self.log.push(ok(v));
        }
        self.rec_failure(op, res)
    }

    /// An access the filter keeps: recorded as one [`MemOp`]. Inlined into
    /// each named method, where the access (so its [`Op`]) is a constant.
    #[inline(always)]
    fn record(&self, r: RegionHandle, off: usize, mut a: Access<'_>) -> Result<u64, HalError> {
        if let Access::LoadRun(_) | Access::StoreRun(_) = a {
            return self.record_run(r, off, a);
        }
        let op = Op::of(&a);
        let res = self.inner.access(r, off, a.reborrow());
        match res {
            Ok(v) => {
                self.log.push_mem(op, r, off, &a, v);
                Ok(v)
            }
            Err(e) => self.rec_failure(op.name(), Err(e)),
        }
    }

    /// A kept word run, recorded word by word.
    #[inline(never)]
    fn record_run(&self, r: RegionHandle, off: usize, a: Access<'_>) -> Result<u64, HalError> {
        match a {
            Access::LoadRun(out) => {
                for (i, w) in out.iter_mut().enumerate() {
                    *w = self.load_u32(r, off + 4 * i, Ordering::Relaxed)?;
                }
            }
            Access::StoreRun(vals) => {
                for (i, &v) in vals.iter().enumerate() {
                    self.store_u32(r, off + 4 * i, v, Ordering::Relaxed)?;
                }
            }
            _ => {}
        }
        Ok(0)
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
    crate::hal::forward_hal!(self => self.inner; base_addr, event_fd);

    fn event(&mut self, id: EventId) -> Result<EventHandle, HalError> {
        let res = self.inner.event(id);
        self.rec("event", res, |_| TraceOp::Event { event: id })
    }

    #[inline(always)]
    fn access(&self, r: RegionHandle, off: usize, a: Access<'_>) -> Result<u64, HalError> {
        let plain = matches!(
            a,
            Access::Load(..) | Access::Store(..) | Access::LoadRun(_) | Access::StoreRun(_)
        );
        if !plain || self.keep_word(r) {
            return self.record(r, off, a);
        }
        // The filter drops plain words on DRAM (the engines' tensor
        // traffic): runs go to the backend whole, only failures are kept.
        let op = Op::of(&a);
        let res = self.inner.access(r, off, a);
        self.rec_failure(op.name(), res)
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
}

/// The frame every operation's encoding starts with (docs in
/// `crate::system::trace`, "The event stream"): the tag, the target's kind,
/// a code (an ordering, a wait's outcome, an error's kind), the target's
/// number, an offset and a word, little-endian, then a second word for the
/// shapes that have one ([`Shape::wide`]; the structural operations' frames
/// all have it). Fixed places, so encoding is a few stores.
const FRAME: usize = 32;

/// A frame: `tag`, the target (`kind`, number), `code`, `off`, `tail`.
#[inline(always)]
fn frame(tag: u8, (kind, num): (u8, u32), code: u8, off: u64, tail: [u8; 16]) -> [u8; FRAME] {
    let mut f = [0u8; FRAME];
    f[..4].copy_from_slice(&[tag, kind, code, 0]);
    f[4..8].copy_from_slice(&num.to_le_bytes());
    f[8..16].copy_from_slice(&off.to_le_bytes());
    f[16..].copy_from_slice(&tail);
    f
}

/// Two words as a frame's tail.
#[inline(always)]
fn words(a: u64, b: u64) -> [u8; 16] {
    let mut t = [0u8; 16];
    t[..8].copy_from_slice(&a.to_le_bytes());
    t[8..].copy_from_slice(&b.to_le_bytes());
    t
}

/// Append `s` with its length first (a `u32`, little-endian).
pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// A region's or event's key ([`RegionId::key`], [`EventId::key`]) as a
/// frame's target: its halves, the kind and the number.
#[inline(always)]
const fn key_code(key: u64) -> (u8, u32) {
    ((key >> 32) as u8, key as u32)
}

const fn order_code(o: Ordering) -> u8 {
    match o {
        Ordering::Relaxed => 0,
        Ordering::Acquire => 1,
        Ordering::Release => 2,
        Ordering::AcqRel => 3,
        _ => 4,
    }
}

/// A record access's record: its bytes, zeros past them.
#[inline(always)]
fn padded(data: &[u8]) -> [u8; RECORD] {
    let mut rec = [0u8; RECORD];
    let n = data.len().min(RECORD);
    rec[..n].copy_from_slice(&data[..n]);
    rec
}

/// A memory access's encoding (what [`TraceOp::encode`] appends for a
/// [`TraceOp::Mem`]): one frame (the ordering as its code; the word and
/// result, the record, or a copy's length as its tail), then a copy's bytes.
#[inline(always)]
fn encode_mem(out: &mut Vec<u8>, op: Op, region: (u8, u32), off: usize, fields: Fields<'_>) {
    let (order, value, result, data) = fields;
    let tail = match op.shape() {
        Shape::Bytes => words(data.len() as u64, 0),
        Shape::Record | Shape::Desc | Shape::Nq => padded(data),
        _ => words(value, result),
    };
    let f = frame(op as u8, region, order_code(order), off as u64, tail);
    out.extend_from_slice(&f[..if op.shape().wide() { FRAME } else { FRAME - 8 }]);
    if op.shape() == Shape::Bytes {
        out.extend_from_slice(data);
    }
}

impl TraceOp {
    /// The operation as bytes of the binary event stream (what the trace
    /// digests and checkpoints): a frame, then a copy's bytes or a
    /// failure's names. Deterministic, and it formats no text.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let f = match self {
            TraceOp::Map { region, len } => {
                frame(0, key_code(region.key()), 0, 0, words(*len as u64, 0))
            }
            TraceOp::Event { event } => frame(1, key_code(event.key()), 0, 0, words(0, 0)),
            TraceOp::Mem(m) => {
                return encode_mem(out, m.op, key_code(m.region.key()), m.off, m.fields())
            }
            TraceOp::Notify { event, n } => frame(16, key_code(event.key()), 0, 0, words(*n, 0)),
            TraceOp::Wait {
                event,
                timeout_ns,
                result,
            } => {
                let (code, v) = match result {
                    Wait::Signalled(v) => (1, *v),
                    Wait::TimedOut => (0, 0),
                };
                frame(17, key_code(event.key()), code, 0, words(*timeout_ns, v))
            }
            TraceOp::Failed { op, error } => return encode_failure(out, op, error),
        };
        out.extend_from_slice(&f);
    }
}

/// A failure: a frame (the error's kind as its code, its region, offset
/// and sizes), then the operation's name and the error's text field.
fn encode_failure(out: &mut Vec<u8>, op: &str, e: &HalError) {
    let none = (0, 0);
    let (code, target, off, a, b, text) = match e {
        HalError::OutOfBounds {
            region,
            off,
            len,
            region_len,
        } => (
            0,
            key_code(region.key()),
            *off,
            *len as u64,
            *region_len as u64,
            "",
        ),
        HalError::Misaligned { region, off, align } => {
            (1, key_code(region.key()), *off, *align as u64, 0, "")
        }
        HalError::BadHandle => (2, none, 0, 0, 0, ""),
        HalError::AlreadyMapped(what) => (3, none, 0, 0, 0, what.as_str()),
        HalError::ZeroLength(region) => (4, key_code(region.key()), 0, 0, 0, ""),
        HalError::Os { op, errno, .. } => {
            let errno = errno.map_or(0, |e| u64::from(e.unsigned_abs()) + 1);
            (5, none, 0, errno, 0, *op)
        }
    };
    out.extend_from_slice(&frame(18, target, code, off as u64, words(a, b)));
    put_str(out, op);
    put_str(out, text);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::fake::FakeHal;

    #[test]
    fn an_encoding_log_belongs_to_the_thread_that_made_it() {
        let log = TraceLog::encoding();
        let mut t = Tracer::with_log(FakeHal::new(), TraceFilter::All, log.clone());
        let r = t.map(RegionId::Dram, 64).unwrap();
        t.store_u32(r, 4, 7, Ordering::Relaxed).unwrap();
        assert_eq!(log.len(), 2);
        assert!(log.records().is_empty());
        let elsewhere = log.clone();
        assert!(std::thread::spawn(move || elsewhere.len()).join().is_err());
        let mut ops = 0;
        assert!(log.drain_encoded(|e| ops = e.ops().count()));
        assert_eq!((ops, log.len()), (2, 0));
    }
}
