//! The trace's binary event stream, written once beside the encoding of the
//! HAL operations it carries (`TraceOp::encode`): the
//! header line, the poll heads (time, actor) and the events (tag, payload), the
//! running digest and checkpoint hash, the checkpoint file's records, and
//! the checkpoint-by-checkpoint compare of a replay with its recording. The
//! format is described in `crate::system::trace`, which owns the file and
//! mode glue around it.

use core::fmt;
use std::io::{self, BufRead, Read as _, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::fsm::Transition;
use crate::sim::events::Nanos;
use crate::sim::tracer::{put_str, Encoded};

/// The first word of every trace file.
pub const MAGIC: &str = "xunds-trace";
/// The text view's format version.
pub const FORMAT_VERSION: u32 = 1;
/// The binary file's format version.
pub const BINARY_VERSION: u32 = 5;
/// Events between two checkpoints of a binary file.
pub const CHECKPOINT_EVENTS: u64 = 16;

/// The first line of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceHeader {
    /// Format version ([`FORMAT_VERSION`] for a text view,
    /// [`BINARY_VERSION`] for a binary file).
    pub version: u32,
    /// The run's seed.
    pub seed: u64,
    /// The run's configuration, `key=value` tokens separated by spaces (no
    /// newlines: [`TraceHeader::new`] turns them into spaces).
    pub config: String,
}

error_enum! {
    /// A header line that could not be read.
    #[derive(Debug)]
    pub enum TraceError {
        /// Reading failed.
        Io(#[from] io::Error) => "reading the trace: {0}",
        /// The first line does not start with `xunds-trace`.
        NotATrace(String) => "not an xunds trace (first line {0:?})",
        /// A version this build cannot read.
        UnsupportedVersion(String) => "unsupported trace version {0:?} (this build reads v{FORMAT_VERSION} text views and v{BINARY_VERSION} binary traces; record an older trace again)",
        /// The seed is missing or not a decimal u64.
        BadSeed(String) => "bad seed field {0:?}",
        /// The `config=` field is missing.
        MissingConfig => "the header has no config= field",
    }
}

impl TraceHeader {
    /// A version-[`FORMAT_VERSION`] header (a binary trace writes it as
    /// version [`BINARY_VERSION`]).
    pub fn new(seed: u64, config: impl Into<String>) -> TraceHeader {
        let config = config.into().replace(['\n', '\r'], " ");
        TraceHeader {
            version: FORMAT_VERSION,
            seed,
            config,
        }
    }

    /// The same header with another version.
    pub(crate) fn versioned(&self, version: u32) -> TraceHeader {
        TraceHeader {
            version,
            ..self.clone()
        }
    }

    /// The header line, without its newline.
    pub fn line(&self) -> String {
        format!(
            "{MAGIC} v{} seed={} config={}",
            self.version, self.seed, self.config
        )
    }

    /// Parse a header line (with or without its newline; a carriage return
    /// left in the config becomes a space, as [`TraceHeader::new`] makes it).
    pub fn parse(line: &str) -> Result<TraceHeader, TraceError> {
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        let short = || line.chars().take(60).collect::<String>();
        let rest = line
            .strip_prefix(MAGIC)
            .and_then(|r| r.strip_prefix(' '))
            .ok_or_else(|| TraceError::NotATrace(short()))?;
        let (ver, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        let version = ver
            .strip_prefix('v')
            .and_then(|v| v.parse::<u32>().ok())
            .filter(|&v| v == FORMAT_VERSION || v == BINARY_VERSION)
            .ok_or_else(|| TraceError::UnsupportedVersion(ver.to_string()))?;
        let (seed, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        let seed = seed
            .strip_prefix("seed=")
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| TraceError::BadSeed(seed.to_string()))?;
        let config = rest
            .strip_prefix("config=")
            .ok_or(TraceError::MissingConfig)?;
        // The config as `new` keeps it (no line breaks), so the header's
        // own line parses back to it.
        Ok(TraceHeader {
            version,
            ..TraceHeader::new(seed, config)
        })
    }

    /// Read and parse the first line of a trace (at most 64 KiB: a binary
    /// trace's records follow it).
    pub fn read(r: &mut impl BufRead) -> Result<TraceHeader, TraceError> {
        let mut line = Vec::new();
        r.take(64 * 1024).read_until(b'\n', &mut line)?;
        TraceHeader::parse(&String::from_utf8_lossy(&line))
    }

    /// The value of `key` among the config's `key=value` tokens.
    pub fn config_value(&self, key: &str) -> Option<&str> {
        self.config
            .split_whitespace()
            .filter_map(|t| t.split_once('='))
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    }
}

/// An XXH3-128 digest (`trace_xxh3`), big-endian (its hex is XXH128's
/// canonical form).
pub type Digest = [u8; 16];

/// The running digest of the stream: XXH3-128 (the `xxhash-rust` crate,
/// seed 0) with the `trace-digest` feature, nothing without it. The digest
/// names a run (same seed and configuration, same digest) and is compared
/// only with other runs' digests; nothing adversarial chooses the stream,
/// so a fast non-cryptographic 128-bit hash serves (docs/design.md "Trace
/// and replay"); SHA-256 cost a sixth of a deterministic run.
#[derive(Clone, Default)]
pub(crate) struct Hasher(#[cfg(feature = "trace-digest")] xxhash_rust::xxh3::Xxh3);

impl Hasher {
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        #[cfg(feature = "trace-digest")]
        self.0.update(bytes);
        #[cfg(not(feature = "trace-digest"))]
        let _ = bytes;
    }

    #[cfg(feature = "trace-digest")]
    pub(crate) fn finalize(self) -> Digest {
        self.0.digest128().to_be_bytes()
    }
}

/// What a trace has done so far, whatever its form.
#[derive(Default)]
pub(crate) struct Tally {
    /// The digest of the stream (or of the text, for a text trace).
    pub(crate) hasher: Hasher,
    /// Events recorded (the header aside).
    pub(crate) events: u64,
    /// Bytes written out.
    pub(crate) bytes: u64,
    /// The first write error (later outputs are dropped; finishing the
    /// trace reports it).
    pub(crate) error: Option<io::Error>,
}

impl Tally {
    /// Keep what a write did: its bytes, or its error.
    pub(crate) fn wrote(&mut self, r: io::Result<u64>) {
        match r {
            Ok(n) => self.bytes += n,
            Err(e) => self.error = Some(e),
        }
    }
}

/// The running checkpoint hash: 8 bytes at a time, multiply and rotate,
/// the length folded in (not cryptographic: it only has to notice a
/// difference between a recording and its replay).
fn mix(mut h: u64, bytes: &[u8]) -> u64 {
    for c in bytes.chunks(8) {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        h = (h ^ u64::from_le_bytes(w))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(29);
    }
    h ^ bytes.len() as u64
}

/// The 32-bit checkpoint of a running hash.
const fn fold(h: u64) -> u32 {
    (h ^ (h >> 32)) as u32
}

/// A checkpoint record's tag.
const TAG_CHECKPOINT: u8 = b'C';
/// The end record's tag.
const TAG_END: u8 = b'E';

/// A binary trace's state.
pub(crate) struct Binary {
    /// The stream's bytes not yet digested: events are encoded straight
    /// into it and it is handed to the digest [`STREAM_CHUNK`] bytes or
    /// more at a time (the digest of the stream does not depend on how it
    /// is cut). Cleared, never shrunk.
    pub(crate) stream: Vec<u8>,
    /// Running checkpoint hash (kept only with a file or a comparison).
    ck: u64,
    /// The checkpoint file.
    file: Option<Box<dyn Write + Send>>,
    /// The recording this run is compared with.
    compare: Option<Box<Compare>>,
    /// The text view, rendered alongside.
    view: Option<Box<dyn Write + Send>>,
    /// Actor names: a poll head names its actor by index (and by name too,
    /// the first time).
    actors: Names,
    /// State-machine names: a transition names its machine the same way,
    /// and its states and event by their codes ([`Transition::codes`]).
    machines: Names,
}

/// Names in order of first appearance (actors, state machines), which the
/// stream gives by index, followed by the name itself the first time
/// ([`put_name`]).
#[derive(Default)]
struct Names {
    names: Vec<Box<str>>,
    /// Where each name was found, from the slot its [`slot`] hash picks on
    /// to the next free one: the address and length of the `&'static str`
    /// it was first looked up with (what finds it again; [`NOT_STATIC`] for
    /// a name looked up by its bytes, an address no `str` starts at) and
    /// its index. Address 0: a free slot. A hash of the bytes, not of the
    /// address: which names share a slot, and so what a lookup costs, does
    /// not depend on where the binary puts them.
    at: [(usize, usize, u32); NAME_SLOTS],
}

/// Slots of [`Names::at`], a power of two (the hash keeps its top bits).
const NAME_SLOTS: usize = 32;
const _: () = assert!(NAME_SLOTS.is_power_of_two());

/// The address kept for a name looked up by its bytes: a name borrowed for
/// one call may be freed, and a `&'static str` of the same length could then
/// start where it was; no `str` starts at the last address.
const NOT_STATIC: usize = usize::MAX;

/// The slot a name's search starts at: a Fibonacci hash of its length and
/// last byte. They tell `worker0` from `worker1`, and give each of the
/// crate's state machines a slot of its own (a test checks it), so a
/// transition finds its machine at the first slot.
#[inline(always)]
fn slot(name: &str) -> usize {
    let last = name.as_bytes().last().map_or(0, |&b| u64::from(b) << 32);
    let hash = (last | name.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (hash >> (64 - NAME_SLOTS.trailing_zeros())) as usize
}

impl Names {
    /// `name`'s index, and whether this is its first appearance: found by
    /// its bytes.
    fn index(&mut self, name: &str) -> (u32, bool) {
        self.probe(name, slot(name), NOT_STATIC, |found, _| found == name)
    }

    /// [`index`](Self::index) of a name that lives as long as the run:
    /// found by its address, no bytes compared (one name may sit at
    /// several addresses, each in a slot of its own).
    #[inline(always)]
    fn index_static(&mut self, name: &'static str) -> (u32, bool) {
        let slot = slot(name);
        let key = (name.as_ptr() as usize, name.len());
        match self.at[slot] {
            (q, m, i) if (q, m) == key => (i, false),
            _ => self.probe(name, slot, key.0, |_, at| at == key),
        }
    }

    /// The index of the first name from `slot` on that is `same` (given its
    /// bytes, address and length); else `name`'s index from [`add`](Self::add),
    /// kept with `addr` in the first free slot if there is one.
    #[inline(never)]
    fn probe(
        &mut self,
        name: &str,
        mut slot: usize,
        addr: usize,
        same: impl Fn(&str, (usize, usize)) -> bool,
    ) -> (u32, bool) {
        for _ in 0..NAME_SLOTS {
            match self.at[slot] {
                (0, ..) => {
                    let i = self.add(name);
                    self.at[slot] = (addr, name.len(), i.0);
                    return i;
                }
                (q, m, i) if same(&self.names[i as usize], (q, m)) => return (i, false),
                _ => slot = (slot + 1) % NAME_SLOTS,
            }
        }
        // Every slot taken.
        self.add(name)
    }

    /// `name`'s index, found by comparing it with each name, or added.
    fn add(&mut self, name: &str) -> (u32, bool) {
        if let Some(i) = self.names.iter().position(|n| **n == *name) {
            return (i as u32, false);
        }
        self.names.push(name.into());
        (self.names.len() as u32 - 1, true)
    }
}

/// Append a name's index (`u32`, little-endian), then, at its first
/// appearance, the name itself.
#[inline(always)]
fn put_name(out: &mut Vec<u8>, (index, first): (u32, bool), name: &str) {
    out.extend_from_slice(&index.to_le_bytes());
    if first {
        put_str(out, name);
    }
}

/// A poll's HAL operations at least this long go to the digest without a
/// copy into the stream: past it the copy costs more than a digest update
/// of its own (about 520 instructions per deterministic execution).
const DIRECT_DIGEST: usize = 1024;

/// The stream bytes kept before they are digested at once.
const STREAM_CHUNK: usize = 64 * 1024;

impl Binary {
    /// A stream with its outputs: the checkpoint `file`, the recording to
    /// `compare` with, the text `view`.
    pub(crate) fn new(
        file: Option<Box<dyn Write + Send>>,
        compare: Option<Box<Compare>>,
        view: Option<Box<dyn Write + Send>>,
    ) -> Binary {
        Binary {
            stream: Vec::with_capacity(STREAM_CHUNK + 256),
            ck: 0,
            file,
            compare,
            view,
            actors: Names::default(),
            machines: Names::default(),
        }
    }

    /// Start the stream with the header line: digested, written to the file
    /// and (as a text-view header) to the view. The checkpoints cover the events only: a replay
    /// compares the header line by itself.
    pub(crate) fn start(&mut self, header: &TraceHeader, t: &mut Tally) {
        let line = format!("{}\n", header.versioned(BINARY_VERSION).line());
        t.hasher.update(line.as_bytes());
        if let Some(f) = &mut self.file {
            t.wrote(f.write_all(line.as_bytes()).map(|()| line.len() as u64));
        }
        if let Some(v) = &mut self.view {
            let text = format!("{}\n", header.versioned(FORMAT_VERSION).line());
            t.wrote(v.write_all(text.as_bytes()).map(|()| 0));
        }
    }

    /// The events up to the next call are `actor`'s at `now`: a poll head
    /// ([`TAG_POLL`], the actor's index, the time, the actor's name at its
    /// first appearance), not an event itself; it goes to the checkpoint
    /// hash with the events.
    pub(crate) fn begin(&mut self, now: Nanos, actor: &str, hasher: &mut Hasher) {
        let start = self.stream.len();
        let at = self.actors.index(actor);
        self.stream.extend_from_slice(&[TAG_POLL, 0, 0, 0]);
        put_name(&mut self.stream, at, actor);
        self.stream.extend_from_slice(&now.as_u64().to_le_bytes());
        self.mixed(start, hasher);
    }

    /// Append one event (what `encode` appends) and fold it into the
    /// checkpoint hash and the digest.
    #[inline]
    pub(crate) fn event(&mut self, encode: impl FnOnce(&mut Binary), hasher: &mut Hasher) {
        let start = self.stream.len();
        encode(self);
        self.mixed(start, hasher);
    }

    /// A note's encoding: [`TAG_NOTE`], its kind.
    pub(crate) fn note(&mut self, kind: &str) {
        self.stream.push(TAG_NOTE);
        put_str(&mut self.stream, kind);
    }

    /// A transition's encoding: [`TAG_FSM`], its codes
    /// ([`Transition::codes`]), its machine (by [`Names`], a `u32`) and its
    /// id (a `u64`), little-endian.
    #[inline(always)]
    pub(crate) fn transition(&mut self, t: &Transition) {
        let (machine, first) = self.machines.index_static(t.machine);
        let mut e = [0u8; 16];
        e[..4].copy_from_slice(&[TAG_FSM, t.codes[0], t.codes[1], t.codes[2]]);
        e[4..8].copy_from_slice(&machine.to_le_bytes());
        e[8..].copy_from_slice(&t.id.to_le_bytes());
        self.stream.extend_from_slice(&e);
        if first {
            put_str(&mut self.stream, t.machine);
        }
    }

    /// The outputs of event number `t.events` (its text line in `line` when
    /// a view or a comparison is attached), unless an earlier write failed.
    pub(crate) fn output(&mut self, line: &[u8], t: &mut Tally) {
        if t.error.is_none() {
            let r = self.outputs(line, t.events);
            t.wrote(r);
        }
    }

    /// Append already encoded HAL operations (`TraceOp::encode`) as `hal`
    /// events without a text view: the same stream, digest and checkpoints
    /// as one [`event`](Self::event) each; when they go to the digest only,
    /// in one copy, or digested where they lie when they are many.
    pub(crate) fn hal_ops(&mut self, ops: &Encoded, t: &mut Tally) {
        if self.checkpoints() {
            for op in ops.ops() {
                self.stream.extend_from_slice(op);
                self.ck = mix(self.ck, op);
                self.output(&[], t);
                t.events += 1;
            }
        } else {
            t.events += ops.ends.len() as u64;
            if ops.bytes.len() >= DIRECT_DIGEST {
                // Digested from the log's buffer, after the stream's pending
                // bytes (the digest does not depend on how the stream is cut).
                t.hasher.update(&self.stream);
                self.stream.clear();
                t.hasher.update(&ops.bytes);
            } else {
                self.stream.extend_from_slice(&ops.bytes);
            }
        }
        self.cut(&mut t.hasher);
    }

    /// Raised once a comparison has its verdict (`None` without one).
    pub(crate) fn stop_flag(&self) -> Option<Arc<AtomicBool>> {
        self.compare.as_ref().map(|c| Arc::clone(&c.stop))
    }

    /// End the stream: digest the rest, write the end record and flush.
    /// Returns a comparison's verdict.
    pub(crate) fn finish(self, t: &mut Tally) -> io::Result<Option<TraceDiff>> {
        t.hasher.update(&self.stream);
        let ck = fold(self.ck);
        if let Some(mut f) = self.file {
            f.write_all(&[TAG_END])?;
            f.write_all(&t.events.to_le_bytes())?;
            f.write_all(&ck.to_le_bytes())?;
            t.bytes += 13;
            f.flush()?;
        }
        let replay = self.compare.map(|c| c.finish(t.events, ck)).transpose()?;
        self.view.map(|mut v| v.flush()).transpose()?;
        Ok(replay)
    }

    /// Fold the stream from `start` into the checkpoint hash (with a file
    /// or a comparison), and digest the stream once a chunk has built up.
    #[inline(always)]
    fn mixed(&mut self, start: usize, hasher: &mut Hasher) {
        if self.checkpoints() {
            self.ck = mix(self.ck, &self.stream[start..]);
        }
        self.cut(hasher);
    }

    /// Digest the stream once a chunk has built up.
    #[inline]
    fn cut(&mut self, hasher: &mut Hasher) {
        if self.stream.len() >= STREAM_CHUNK {
            hasher.update(&self.stream);
            self.stream.clear();
        }
    }

    /// The outputs of one binary event (`index`: its 0-based number; the
    /// text line in `line` when a view or comparison is attached).
    /// Returns the bytes written to the file.
    fn outputs(&mut self, line: &[u8], index: u64) -> io::Result<u64> {
        let stopped = self.compare.as_ref().is_some_and(|c| c.diff.is_some());
        if stopped {
            return Ok(0);
        }
        if let Some(v) = &mut self.view {
            v.write_all(line)?;
        }
        if let Some(c) = &mut self.compare {
            let l = line.strip_suffix(b"\n").unwrap_or(line);
            c.block.push(String::from_utf8_lossy(l).into_owned());
        }
        let mut written = 0;
        if (index + 1) % CHECKPOINT_EVENTS == 0 {
            let ck = fold(self.ck);
            if let Some(f) = &mut self.file {
                f.write_all(&[TAG_CHECKPOINT])?;
                f.write_all(&ck.to_le_bytes())?;
                written = 5;
            }
            if let Some(c) = &mut self.compare {
                c.block_done(ck)?;
            }
        }
        Ok(written)
    }

    /// Whether an event goes anywhere but the digest (a file, a
    /// comparison or a view).
    pub(crate) fn has_outputs(&self) -> bool {
        self.checkpoints() || self.view.is_some()
    }
    fn checkpoints(&self) -> bool {
        self.file.is_some() || self.compare.is_some()
    }
    pub(crate) fn texts(&self) -> bool {
        self.view.is_some() || self.compare.is_some()
    }
}

/// A binary trace compared, checkpoint by checkpoint as it is produced,
/// with a recorded one (`xunds replay`): the first checkpoint that
/// disagrees, or a block past the recorded end, is the verdict and raises
/// `stop`, so a replay is bounded by what was recorded whatever its header
/// claims.
pub(crate) struct Compare {
    recorded: Box<dyn BufRead + Send>,
    /// Bytes of the recording read so far (the header line included).
    offset: u64,
    /// The text view lines of the current block (for the report).
    block: Vec<String>,
    /// Text-view line number of the block's first event.
    first_line: u64,
    diff: Option<TraceDiff>,
    stop: Arc<AtomicBool>,
}

/// One record of a binary file: its end record, or what else is there (a
/// cut recording's end of file is [`Recorded::End`]).
enum Record {
    End { events: u64, ck: u32 },
    Other(Recorded),
}

impl Compare {
    /// A comparison with `recorded`, read from its first byte, whose first
    /// line must be `header`'s (a binary header): otherwise the verdict is
    /// already in.
    pub(crate) fn new(
        header: &TraceHeader,
        mut recorded: impl BufRead + Send + 'static,
    ) -> Compare {
        let mut first = Vec::new();
        let read = (&mut recorded)
            .take(64 * 1024)
            .read_until(b'\n', &mut first);
        let ours = format!("{}\n", header.line());
        let mut c = Compare {
            offset: first.len() as u64,
            recorded: Box::new(recorded),
            block: Vec::new(),
            first_line: 1,
            diff: None,
            stop: Arc::new(AtomicBool::new(false)),
        };
        if read.is_err() || first != ours.as_bytes() {
            c.block.push(ours.trim_end().to_string());
            c.differs(Recorded::Bad(first.first().copied().unwrap_or(0)), None);
        } else {
            c.first_line = 2;
        }
        c
    }

    fn next(&mut self) -> io::Result<Record> {
        let mut tag = [0u8; 1];
        if self.recorded.read(&mut tag)? == 0 {
            return Ok(Record::Other(Recorded::End));
        }
        let (mut b8, mut b4) = ([0u8; 8], [0u8; 4]);
        let fields: &mut [&mut [u8]] = match tag[0] {
            TAG_CHECKPOINT => &mut [&mut b4],
            TAG_END => &mut [&mut b8, &mut b4],
            t => return Ok(Record::Other(Recorded::Bad(t))),
        };
        for f in fields.iter_mut() {
            match self.recorded.read_exact(f) {
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    return Ok(Record::Other(Recorded::End))
                }
                r => r?,
            }
            self.offset += f.len() as u64;
        }
        self.offset += 1;
        let ck = u32::from_le_bytes(b4);
        Ok(match tag[0] {
            TAG_CHECKPOINT => Record::Other(Recorded::Checkpoint(ck)),
            _ => Record::End {
                events: u64::from_le_bytes(b8),
                ck,
            },
        })
    }

    /// Compare a full block's checkpoint with the next recorded record.
    fn block_done(&mut self, ck: u32) -> io::Result<()> {
        if self.diff.is_some() {
            return Ok(());
        }
        match self.next()? {
            Record::Other(Recorded::Checkpoint(r)) if r == ck => {
                self.first_line += self.block.len() as u64;
                self.block.clear();
            }
            Record::End { .. } => self.differs(Recorded::End, Some(ck)),
            Record::Other(r) => self.differs(r, Some(ck)),
        }
        Ok(())
    }

    /// The verdict once the run has ended after `events` events with the
    /// checkpoint `ck`. A recording with bytes after its end record (junk,
    /// or a second trace appended) is refused, naming where they start: it
    /// is no trace this build wrote, whatever its records say.
    fn finish(mut self, events: u64, ck: u32) -> io::Result<TraceDiff> {
        if self.diff.is_none() {
            match self.next()? {
                Record::End { events: e, ck: c } if e == events && c == ck => {
                    if !self.recorded.fill_buf()?.is_empty() {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!(
                                "the recorded trace has bytes after the end record, at offset {}",
                                self.offset
                            ),
                        ));
                    }
                }
                Record::End { ck: c, .. } => self.differs(Recorded::Checkpoint(c), Some(ck)),
                Record::Other(r @ Recorded::Checkpoint(_)) => self.differs(r, None),
                Record::Other(r) => self.differs(r, Some(ck)),
            }
        }
        Ok(self
            .diff
            .take()
            .unwrap_or(TraceDiff::Identical { lines: events + 1 }))
    }

    fn differs(&mut self, recorded: Recorded, replayed: Option<u32>) {
        let n = self.block.len() as u64;
        self.diff = Some(TraceDiff::Block {
            first_line: self.first_line,
            last_line: self.first_line + n.max(1) - 1,
            recorded,
            replayed,
            lines: core::mem::take(&mut self.block),
        });
        // Ordering: Relaxed: a flag read by the runner's stop predicate on
        // this same thread; it orders nothing else.
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// What a binary recording held where a replay first disagreed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// A checkpoint with another value.
    Checkpoint(u32),
    /// Nothing more: the recording ended before this block.
    End,
    /// A byte that starts no record (a damaged file).
    Bad(u8),
}

impl fmt::Display for Recorded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Recorded::Checkpoint(c) => write!(f, "checkpoint {c:#010x}"),
            Recorded::End => f.write_str("<end of trace>"),
            Recorded::Bad(t) => write!(f, "a damaged record (tag byte {t:#04x})"),
        }
    }
}

/// Stream tags of a note, a transition and a poll head. A HAL event's is
/// its operation's (`crate::sim::tracer::Op`, below these).
pub(crate) const TAG_NOTE: u8 = 0x40;
pub(crate) const TAG_FSM: u8 = 0x41;
pub(crate) const TAG_POLL: u8 = 0x42;

/// The outcome of comparing two traces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceDiff {
    /// Identical.
    Identical {
        /// Number of lines in each (of the text view, for binary traces).
        lines: u64,
    },
    /// Two text views differ first at `line`.
    Differs {
        /// The first differing line number (1-based; line 1 is the header).
        line: u64,
        /// That line in the first (recorded) trace; `None` past its end.
        expected: Option<String>,
        /// That line in the second (replayed) trace; `None` past its end.
        actual: Option<String>,
    },
    /// A replay's checkpoint first disagreed with a binary recording in the
    /// block of text-view lines `first_line..=last_line`.
    Block {
        /// The block's first line of the text view (1: the header).
        first_line: u64,
        /// Its last line.
        last_line: u64,
        /// What the recording holds there.
        recorded: Recorded,
        /// The replay's checkpoint; `None`: the replay ended there.
        replayed: Option<u32>,
        /// The replay's lines of that block.
        lines: Vec<String>,
    },
}

impl TraceDiff {
    /// `true` for [`TraceDiff::Identical`].
    pub fn is_identical(&self) -> bool {
        matches!(self, TraceDiff::Identical { .. })
    }
}

impl fmt::Display for TraceDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceDiff::Identical { lines } => write!(f, "identical ({lines} lines)"),
            TraceDiff::Differs {
                line,
                expected,
                actual,
            } => {
                let show =
                    |l: &Option<String>| l.clone().unwrap_or_else(|| "<end of trace>".into());
                write!(
                    f,
                    "traces differ first at line {line}\n  recorded: {}\n  replayed: {}",
                    show(expected),
                    show(actual)
                )
            }
            TraceDiff::Block {
                first_line,
                last_line,
                recorded,
                replayed,
                lines,
            } => {
                // The replay's side reads as a recording's would: its
                // checkpoint, or the end of the trace.
                let replayed = replayed.map_or(Recorded::End, Recorded::Checkpoint);
                write!(
                    f,
                    "traces differ first within lines {first_line}..={last_line} (a checkpoint covers {CHECKPOINT_EVENTS} lines)\n  recorded: {recorded}\n  replayed: {replayed}"
                )?;
                for (i, l) in lines.iter().enumerate() {
                    write!(f, "\n  {:>7} {l}", first_line + i as u64)?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsm::Fsm;

    #[test]
    fn each_state_machine_has_a_slot_of_its_own() {
        use crate::fsm::{funnel, proxy, publisher, record, slot, worker, xu_health};
        let names = [
            funnel::Funnel::NAME,
            proxy::ProxyCycle::NAME,
            publisher::PublisherCycle::NAME,
            record::RecordFsm::NAME,
            slot::SlotFsm::NAME,
            worker::WorkerCycle::NAME,
            xu_health::XuHealth::NAME,
            crate::device::engine::EngineFsm::NAME,
        ];
        let mut slots: Vec<usize> = names.iter().map(|n| super::slot(n)).collect();
        slots.sort_unstable();
        slots.dedup();
        assert_eq!(slots.len(), names.len(), "{names:?} share slots");
    }

    #[test]
    fn a_static_name_at_two_addresses_keeps_its_index() {
        let mut n = Names::default();
        assert_eq!(n.index_static("worker"), (0, true));
        let copy: &'static str = Box::leak(String::from("worker").into_boxed_str());
        assert_eq!(n.index_static(copy), (0, false));
        assert_eq!(n.index_static("funnel"), (1, true));
        assert_eq!(n.index_static(copy), (0, false));
        assert_eq!(n.index("funnel"), (1, false));
    }

    #[test]
    fn names_sharing_a_slot_or_past_the_slots_keep_their_indices() {
        let names: Vec<String> = (0..NAME_SLOTS + 8)
            .flat_map(|i| [format!("device{i}"), format!("worker{i}")])
            .collect();
        assert_eq!(slot("device0"), slot("worker0"));
        let mut n = Names::default();
        for (i, name) in names.iter().enumerate() {
            assert_eq!(n.index(name), (i as u32, true));
        }
        for (i, name) in names.iter().enumerate().rev() {
            assert_eq!(n.index(name), (i as u32, false));
        }
    }
}
