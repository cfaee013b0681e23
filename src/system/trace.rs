//! The trace of a deterministic run: a binary event stream that names the
//! run (its XXH3-128 digest, `trace_xxh3`), a compact binary file of checkpoints
//! over that stream (what `xunds run --trace FILE` writes and `xunds replay
//! FILE` compares against), and a text view rendered on demand (`xunds
//! replay FILE --print`, the tests' snapshots) with a line diff of two views.
//!
//! ## The event stream
//!
//! Every event (a HAL operation, a state-machine transition, an actor's or
//! the runner's note) is encoded in binary: a tag byte (0 note, 1 `hal`,
//! 2 `fsm`), the time as a varint delta from the previous event, the actor
//! (its index in order of first appearance, and its name that first time),
//! then the payload: a HAL operation's encoded record
//! (`sim::tracer::TraceOp::encode`), a
//! transition's machine (its index in order of first appearance, and its
//! name that first time), id, and its from state, event and to state as
//! their codes (`fsm::Transition::codes`: positions in declaration order,
//! so renaming a state does not change the stream), a note's kind (its text
//! is commentary on the operations around it and is rendered only in the
//! text view). The stream starts with the header line. Nothing in it depends
//! on addresses, wall-clock time or per-process hash seeds, so the same seed
//! and configuration give the same stream, and its XXH3-128 digest
//! ([`TraceSummary::digest`], with the `trace-digest` feature) names the run.
//! A binary trace formats no text unless a text view or a comparison is
//! attached.
//!
//! ## The binary file (version 4)
//!
//! ```text
//! xunds-trace v4 seed=<u64 decimal> config=<free text to end of line>\n
//! 'C' <u32 LE>        a checkpoint after every CHECKPOINT_EVENTS events
//! ...
//! 'E' <u64 LE> <u32 LE>  the end: events recorded, checkpoint of the whole stream
//! ```
//!
//! A checkpoint is a running 64-bit hash of the events (the header line is
//! compared by itself) folded to 32 bits: a replay recomputes it and stops
//! at the first block whose checkpoint disagrees (or where the recording
//! ends), reporting that block's lines of the text view. About 30 bytes per execution of the default workload.
//!
//! ## The text view (version 1)
//!
//! ```text
//! xunds-trace v1 seed=<u64 decimal> config=<free text to end of line>
//! t=<ns> <actor> <kind> <text>
//! ...
//! ```
//!
//! - Line 1 is the header ([`TraceHeader`]): format version, the seed, and
//!   the run's configuration as whitespace-separated `key=value` tokens
//!   (whatever the system builder needs to rebuild the run; see
//!   [`TraceHeader::config_value`]).
//! - Every other line is one event: `t=` the time in nanoseconds (virtual in
//!   deterministic runs), the acting actor's name (`runner` for the runner's
//!   own events), the kind (`fsm` for state-machine transitions, `hal` for
//!   HAL operations, `msg`, `run`, ...) and the text. A transition's text is
//!   `<machine>#<id> <FROM> --<event>--> <TO>`. Line `n + 1` of the view is
//!   event `n` of the stream (0-based, after the header).
//! - Lines end with `\n`; a `\n` or `\r` inside a text is written as the two
//!   characters `\n` / `\r`, so one event is always one line.
//!
//! ## Cost
//!
//! [`Trace::disabled`] reports `enabled() == false`, and `crate::actors::Cx`
//! caches that, so a disabled trace costs one branch per event and formats
//! nothing. A binary trace encodes each event into one preallocated buffer
//! and hashes it; a text trace formats each event into one preallocated line
//! buffer. No allocation per event once the buffers have grown.

use core::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read as _, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::fsm::Transition;
use crate::sim::events::{Nanos, TraceEvent, TraceSink, TransitionText};
use crate::sim::tracer::{put_bytes, put_varint, EncodeOut, Encoded, Head, Namer, TraceOp};

/// The first word of every trace file.
pub const MAGIC: &str = "xunds-trace";
/// The text view's format version.
pub const FORMAT_VERSION: u32 = 1;
/// The binary file's format version.
pub const BINARY_VERSION: u32 = 4;
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
        UnsupportedVersion(String) => "unsupported trace version {0:?} (this build reads v{FORMAT_VERSION} text views and v{BINARY_VERSION} binary traces)",
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
    fn versioned(&self, version: u32) -> TraceHeader {
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
struct Hasher(#[cfg(feature = "trace-digest")] xxhash_rust::xxh3::Xxh3);

impl Hasher {
    fn update(&mut self, bytes: &[u8]) {
        #[cfg(feature = "trace-digest")]
        self.0.update(bytes);
        #[cfg(not(feature = "trace-digest"))]
        let _ = bytes;
    }

    #[cfg(feature = "trace-digest")]
    fn finalize(self) -> Digest {
        self.0.digest128().to_be_bytes()
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

/// Where a text trace's lines go.
enum Out {
    Memory(Vec<u8>),
    Writer(Box<dyn Write + Send>),
}

/// A binary trace's state.
struct Binary {
    /// The stream's bytes not yet digested: events are encoded straight
    /// into it and it is handed to the digest [`STREAM_CHUNK`] bytes or
    /// more at a time (the digest of the stream does not depend on how it
    /// is cut). Cleared, never shrunk.
    stream: Vec<u8>,
    last_now: u64,
    /// Running checkpoint hash (kept only with a file or a comparison).
    ck: u64,
    /// The checkpoint file.
    file: Option<Box<dyn Write + Send>>,
    /// The recording this run is compared with.
    compare: Option<Box<Compare>>,
    /// The text view, rendered alongside.
    view: Option<Box<dyn Write + Send>>,
    /// Actor names: an event names its actor by index (and by name too,
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
    /// The index found last (most events repeat the previous name).
    last: usize,
}

impl Names {
    /// `name`'s index, and whether this is its first appearance.
    #[inline(always)]
    fn index(&mut self, name: &str) -> (usize, bool) {
        if self.names.get(self.last).is_some_and(|n| &**n == name) {
            return (self.last, false);
        }
        self.find(name)
    }

    /// [`index`](Self::index) when the name is not the last one found.
    #[inline]
    fn find(&mut self, name: &str) -> (usize, bool) {
        let (i, first) = match self.names.iter().position(|n| &**n == name) {
            Some(i) => (i, false),
            None => {
                self.names.push(name.into());
                (self.names.len() - 1, true)
            }
        };
        self.last = i;
        (i, first)
    }
}

/// Append a name as [`Names::index`] found it: its index, then the name
/// itself at its first appearance.
#[inline]
fn put_name(out: &mut Vec<u8>, (index, first): (usize, bool), name: &str) {
    put_varint(out, index as u64);
    if first {
        put_bytes(out, name.as_bytes());
    }
}

/// The stream bytes kept before they are digested at once.
const STREAM_CHUNK: usize = 64 * 1024;

impl Binary {
    /// Start an event in the stream: its tag, time and actor. Returns
    /// where it starts.
    #[inline]
    fn begin(&mut self, now: Nanos, actor: &str, tag: u8) -> usize {
        let start = self.stream.len();
        self.stream.push(tag);
        put_varint(&mut self.stream, now.as_u64().wrapping_sub(self.last_now));
        self.last_now = now.as_u64();
        let at = self.actors.index(actor);
        put_name(&mut self.stream, at, actor);
        start
    }

    /// Start an event at the time and by the actor of the previous one
    /// (what `begin` appends then). Returns where it starts.
    #[inline]
    fn again(&mut self, tag: u8) -> usize {
        let start = self.stream.len();
        let h = self.again_head(tag);
        self.stream.extend_from_slice(h.bytes());
        start
    }

    /// What `again` appends: the tag, a zero time delta, the last actor.
    #[inline]
    fn again_head(&self, tag: u8) -> Head {
        let mut h = Head::new();
        h.put_slice(&[tag, 0]);
        put_varint(&mut h, self.actors.last as u64);
        h
    }

    /// End the event that `begin` started at `start`: fold it into the
    /// checkpoint hash, then [`cut`](Self::cut).
    #[inline]
    fn end(&mut self, start: usize, hasher: &mut Hasher) {
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

    fn checkpoints(&self) -> bool {
        self.file.is_some() || self.compare.is_some()
    }
    fn texts(&self) -> bool {
        self.view.is_some() || self.compare.is_some()
    }
}

/// A binary trace compared, checkpoint by checkpoint as it is produced,
/// with a recorded one (`xunds replay`): the first checkpoint that
/// disagrees, or a block past the recorded end, is the verdict and raises
/// `stop`, so a replay is bounded by what was recorded whatever its header
/// claims.
struct Compare {
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

/// One record of a binary file.
enum Record {
    Checkpoint(u32),
    End {
        events: u64,
        ck: u32,
    },
    /// End of file (a cut recording).
    Eof,
    /// Bytes that are no record.
    Bad(u8),
}

impl Compare {
    fn next(&mut self) -> io::Result<Record> {
        let mut tag = [0u8; 1];
        if self.recorded.read(&mut tag)? == 0 {
            return Ok(Record::Eof);
        }
        self.offset += 1;
        let mut b4 = [0u8; 4];
        let mut b8 = [0u8; 8];
        let short = |e: &io::Error| e.kind() == io::ErrorKind::UnexpectedEof;
        Ok(match tag[0] {
            TAG_CHECKPOINT => match self.recorded.read_exact(&mut b4) {
                Ok(()) => {
                    self.offset += 4;
                    Record::Checkpoint(u32::from_le_bytes(b4))
                }
                Err(e) if short(&e) => Record::Eof,
                Err(e) => return Err(e),
            },
            TAG_END => {
                match self
                    .recorded
                    .read_exact(&mut b8)
                    .and_then(|()| self.recorded.read_exact(&mut b4))
                {
                    Ok(()) => {
                        self.offset += 12;
                        Record::End {
                            events: u64::from_le_bytes(b8),
                            ck: u32::from_le_bytes(b4),
                        }
                    }
                    Err(e) if short(&e) => Record::Eof,
                    Err(e) => return Err(e),
                }
            }
            t => Record::Bad(t),
        })
    }

    /// Compare a full block's checkpoint with the next recorded record.
    fn block_done(&mut self, ck: u32) -> io::Result<()> {
        if self.diff.is_some() {
            return Ok(());
        }
        match self.next()? {
            Record::Checkpoint(r) if r == ck => {
                self.first_line += self.block.len() as u64;
                self.block.clear();
            }
            Record::Checkpoint(r) => self.differs(Some(Recorded::Checkpoint(r)), Some(ck)),
            Record::End { .. } | Record::Eof => self.differs(Some(Recorded::End), Some(ck)),
            Record::Bad(t) => self.differs(Some(Recorded::Bad(t)), Some(ck)),
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
                Record::End { ck: c, .. } => self.differs(Some(Recorded::Checkpoint(c)), Some(ck)),
                Record::Checkpoint(r) => self.differs(Some(Recorded::Checkpoint(r)), None),
                Record::Eof => self.differs(Some(Recorded::End), Some(ck)),
                Record::Bad(t) => self.differs(Some(Recorded::Bad(t)), Some(ck)),
            }
        }
        Ok(self
            .diff
            .take()
            .unwrap_or(TraceDiff::Identical { lines: events + 1 }))
    }

    fn differs(&mut self, recorded: Option<Recorded>, replayed: Option<u32>) {
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

enum Mode {
    Disabled,
    Text(Out),
    Binary(Box<Binary>),
}

/// A trace being recorded. Implements `TraceSink`.
pub struct Trace {
    mode: Mode,
    /// Scratch for one text line; cleared, never shrunk.
    line: Vec<u8>,
    hasher: Hasher,
    /// Events recorded (the header aside).
    events: u64,
    /// Bytes written out.
    bytes: u64,
    /// The first write error (later events are dropped; [`Trace::finish`]
    /// reports it).
    error: Option<io::Error>,
}

impl fmt::Debug for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trace")
            .field("enabled", &self.enabled())
            .field("events", &self.events)
            .field("bytes", &self.bytes)
            .finish()
    }
}

/// What a finished trace amounts to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceSummary {
    /// Lines of the text view, the header included (0 for a disabled trace).
    pub lines: u64,
    /// Bytes written out (the text, or the binary file).
    pub bytes: u64,
    /// XXH3-128 of the event stream: the text of a text trace, the binary
    /// encoding of a binary one.
    #[cfg(feature = "trace-digest")]
    pub digest: Digest,
    /// The bytes, for an in-memory trace.
    pub memory: Option<Vec<u8>>,
    /// For a [`Trace::comparing`] trace: how it compares with the recording.
    pub replay: Option<TraceDiff>,
}

impl TraceSummary {
    /// The digest in lower-case hex (`trace_xxh3`).
    #[cfg(feature = "trace-digest")]
    pub fn digest_hex(&self) -> String {
        self.digest.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// Initial capacity of the line and event buffers.
const LINE_CAPACITY: usize = 256;

impl Trace {
    fn new(mode: Mode) -> Trace {
        Trace {
            mode,
            line: Vec::with_capacity(LINE_CAPACITY),
            hasher: Hasher::default(),
            events: 0,
            bytes: 0,
            error: None,
        }
    }

    fn text(header: &TraceHeader, out: Out) -> Trace {
        let mut t = Trace::new(Mode::Text(out));
        t.line.extend_from_slice(header.line().as_bytes());
        t.line.push(b'\n');
        t.emit_text();
        t
    }

    fn binary(header: &TraceHeader, b: Binary) -> Trace {
        let mut t = Trace::new(Mode::Binary(Box::new(b)));
        let line = format!("{}\n", header.versioned(BINARY_VERSION).line());
        t.hasher.update(line.as_bytes());
        let Mode::Binary(b) = &mut t.mode else {
            unreachable!()
        };
        // The checkpoints cover the events only: a replay compares the
        // header line by itself.
        if let Some(f) = &mut b.file {
            t.bytes += line.len() as u64;
            if let Err(e) = f.write_all(line.as_bytes()) {
                t.error = Some(e);
            }
        }
        if let Some(v) = &mut b.view {
            let text = format!("{}\n", header.versioned(FORMAT_VERSION).line());
            if let Err(e) = v.write_all(text.as_bytes()) {
                t.error = Some(e);
            }
        }
        t
    }

    fn binary_state(
        file: Option<Box<dyn Write + Send>>,
        compare: Option<Box<Compare>>,
        view: Option<Box<dyn Write + Send>>,
    ) -> Binary {
        Binary {
            stream: Vec::with_capacity(STREAM_CHUNK + LINE_CAPACITY),
            last_now: 0,
            ck: 0,
            file,
            compare,
            view,
            actors: Names::default(),
            machines: Names::default(),
        }
    }

    /// A trace that records nothing (`enabled() == false`).
    pub fn disabled() -> Trace {
        Trace::new(Mode::Disabled)
    }

    /// A text view kept in memory, `capacity` bytes reserved up front.
    pub fn in_memory(header: &TraceHeader, capacity: usize) -> Trace {
        Trace::text(header, Out::Memory(Vec::with_capacity(capacity)))
    }

    /// A text view streamed to `w` (wrap files in a `BufWriter`, or use
    /// [`Trace::create`]).
    pub fn to_writer(header: &TraceHeader, w: impl Write + Send + 'static) -> Trace {
        Trace::text(header, Out::Writer(Box::new(w)))
    }

    /// A text view streamed to a new file at `path` through a 64 KiB buffer.
    pub fn create(header: &TraceHeader, path: &Path) -> io::Result<Trace> {
        let f = File::create(path)?;
        Ok(Trace::to_writer(
            header,
            BufWriter::with_capacity(64 * 1024, f),
        ))
    }

    /// A binary trace that keeps only its event count and digest (for
    /// `trace_xxh3` without a file). It formats no text.
    pub fn digest_only(header: &TraceHeader) -> Trace {
        Trace::binary(header, Trace::binary_state(None, None, None))
    }

    /// A binary trace whose checkpoint file goes to `w` (see the module
    /// docs). It formats no text.
    pub fn binary_to_writer(header: &TraceHeader, w: impl Write + Send + 'static) -> Trace {
        Trace::binary(header, Trace::binary_state(Some(Box::new(w)), None, None))
    }

    /// A binary trace written to a new file at `path`.
    pub fn create_binary(header: &TraceHeader, path: &Path) -> io::Result<Trace> {
        let f = File::create(path)?;
        Ok(Trace::binary_to_writer(
            header,
            BufWriter::with_capacity(64 * 1024, f),
        ))
    }

    /// A binary trace compared with the binary file `recorded` (read from
    /// its first byte) checkpoint by checkpoint as it is produced; the text
    /// view of the replay goes to `view`, up to the first difference. Once
    /// it differs, or runs past the recorded end, it records nothing more
    /// and [`Trace::stop_flag`] is raised; [`TraceSummary::replay`] holds
    /// the verdict.
    pub fn comparing(
        header: &TraceHeader,
        mut recorded: impl BufRead + Send + 'static,
        view: Option<Box<dyn Write + Send>>,
    ) -> Trace {
        let mut first = Vec::new();
        let read = (&mut recorded)
            .take(64 * 1024)
            .read_until(b'\n', &mut first);
        let ours = format!("{}\n", header.versioned(BINARY_VERSION).line());
        let mut c = Compare {
            offset: first.len() as u64,
            recorded: Box::new(recorded),
            block: Vec::new(),
            first_line: 1,
            diff: None,
            stop: Arc::new(AtomicBool::new(false)),
        };
        if read.is_err() || first != ours.as_bytes() {
            c.block
                .push(String::from_utf8_lossy(ours.trim_end().as_bytes()).into_owned());
            c.differs(
                Some(Recorded::Bad(first.first().copied().unwrap_or(0))),
                None,
            );
        } else {
            c.first_line = 2;
        }
        Trace::binary(header, Trace::binary_state(None, Some(Box::new(c)), view))
    }

    /// Raised when a [`Trace::comparing`] trace has its verdict before the
    /// run ends (a difference): the run should stop. `None` for others.
    pub fn stop_flag(&self) -> Option<Arc<AtomicBool>> {
        match &self.mode {
            Mode::Binary(b) => b.compare.as_ref().map(|c| Arc::clone(&c.stop)),
            _ => None,
        }
    }

    /// Lines of the text view so far (the header included; 0 when disabled).
    pub fn lines(&self) -> u64 {
        match self.mode {
            Mode::Disabled => 0,
            _ => self.events + 1,
        }
    }

    /// Bytes written out so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The bytes of an in-memory text view so far.
    pub fn memory(&self) -> Option<&[u8]> {
        match &self.mode {
            Mode::Text(Out::Memory(v)) => Some(v),
            _ => None,
        }
    }

    /// The digest of the stream so far (the trace keeps recording).
    #[cfg(feature = "trace-digest")]
    pub fn digest_so_far(&self) -> Digest {
        let mut h = self.hasher.clone();
        if let Mode::Binary(b) = &self.mode {
            h.update(&b.stream);
        }
        h.finalize()
    }

    /// Flush and summarise. Returns the first write error, if any.
    pub fn finish(mut self) -> io::Result<TraceSummary> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let lines = self.lines();
        let mut replay = None;
        let mut memory = None;
        match core::mem::replace(&mut self.mode, Mode::Disabled) {
            Mode::Disabled => {}
            Mode::Text(Out::Memory(v)) => memory = Some(v),
            Mode::Text(Out::Writer(mut w)) => w.flush()?,
            Mode::Binary(b) => {
                let Binary {
                    stream,
                    ck,
                    file,
                    compare,
                    view,
                    ..
                } = *b;
                self.hasher.update(&stream);
                if let Some(mut f) = file {
                    f.write_all(&[TAG_END])?;
                    f.write_all(&self.events.to_le_bytes())?;
                    f.write_all(&fold(ck).to_le_bytes())?;
                    self.bytes += 13;
                    f.flush()?;
                }
                if let Some(c) = compare {
                    replay = Some(c.finish(self.events, fold(ck))?);
                }
                if let Some(mut v) = view {
                    v.flush()?;
                }
            }
        }
        Ok(TraceSummary {
            lines,
            bytes: self.bytes,
            #[cfg(feature = "trace-digest")]
            digest: self.hasher.finalize(),
            memory,
            replay,
        })
    }

    /// Hash and write out the text line buffer.
    fn emit_text(&mut self) {
        self.hasher.update(&self.line);
        self.bytes += self.line.len() as u64;
        match &mut self.mode {
            Mode::Text(Out::Memory(v)) => v.extend_from_slice(&self.line),
            Mode::Text(Out::Writer(w)) if self.error.is_none() => {
                if let Err(e) = w.write_all(&self.line) {
                    self.error = Some(e);
                }
            }
            _ => {}
        }
    }

    /// Record one event: in a text trace its line; in a binary trace its
    /// encoding (`tag`, then what `payload` appends), and the text line
    /// only when a view or a comparison needs it.
    fn event(
        &mut self,
        now: Nanos,
        actor: &str,
        tag: u8,
        kind: &str,
        payload: impl FnOnce(&mut Vec<u8>),
        text: &dyn fmt::Display,
    ) {
        match &mut self.mode {
            Mode::Disabled => return,
            Mode::Text(_) => {
                format_line(&mut self.line, now, actor, kind, text);
                self.emit_text();
            }
            Mode::Binary(b) => {
                let start = b.begin(now, actor, tag);
                payload(&mut b.stream);
                b.end(start, &mut self.hasher);
                if b.texts() {
                    format_line(&mut self.line, now, actor, kind, text);
                }
                if self.error.is_none() {
                    match Trace::binary_event(b, &self.line, self.events) {
                        Ok(n) => self.bytes += n,
                        Err(e) => self.error = Some(e),
                    }
                }
            }
        }
        self.events += 1;
    }

    /// The outputs of one binary event (`index`: its 0-based number; the
    /// text line in `line` when a view or comparison is attached).
    /// Returns the bytes written to the file.
    fn binary_event(b: &mut Binary, line: &[u8], index: u64) -> io::Result<u64> {
        let stopped = b.compare.as_ref().is_some_and(|c| c.diff.is_some());
        if stopped {
            return Ok(0);
        }
        if let Some(v) = &mut b.view {
            v.write_all(line)?;
        }
        if let Some(c) = &mut b.compare {
            let l = line.strip_suffix(b"\n").unwrap_or(line);
            c.block.push(String::from_utf8_lossy(l).into_owned());
        }
        let mut written = 0;
        if (index + 1) % CHECKPOINT_EVENTS == 0 {
            let ck = fold(b.ck);
            if let Some(f) = &mut b.file {
                f.write_all(&[TAG_CHECKPOINT])?;
                f.write_all(&ck.to_le_bytes())?;
                written = 5;
            }
            if let Some(c) = &mut b.compare {
                c.block_done(ck)?;
            }
        }
        Ok(written)
    }
}

/// Format one text-view line into `line` (cleared first).
fn format_line(line: &mut Vec<u8>, now: Nanos, actor: &str, kind: &str, text: &dyn fmt::Display) {
    #[cfg(test)]
    tests::FORMATTED.with(|c| c.set(c.get() + 1));
    line.clear();
    // Writing into a Vec cannot fail; a `Display` impl that errors leaves a
    // truncated (but still deterministic) line.
    let _ = fmt::write(
        &mut Escaping(line),
        format_args!("t={now} {actor} {kind} {text}"),
    );
    line.push(b'\n');
}

/// Formats into the line buffer, escaping `\n` and `\r`.
struct Escaping<'a>(&'a mut Vec<u8>);

impl fmt::Write for Escaping<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let b = s.as_bytes();
        if !b.iter().any(|&c| c == b'\n' || c == b'\r') {
            self.0.extend_from_slice(b);
            return Ok(());
        }
        for &c in b {
            match c {
                b'\n' => self.0.extend_from_slice(b"\\n"),
                b'\r' => self.0.extend_from_slice(b"\\r"),
                c => self.0.push(c),
            }
        }
        Ok(())
    }
}

/// Stream tags of the three event kinds.
const TAG_NOTE: u8 = 0;
const TAG_HAL: u8 = 1;
const TAG_FSM: u8 = 2;

impl TraceSink for Trace {
    #[inline]
    fn enabled(&self) -> bool {
        !matches!(self.mode, Mode::Disabled)
    }

    fn record(&mut self, now: Nanos, actor: &str, event: TraceEvent<'_>) {
        let kind = event.kind;
        self.event(
            now,
            actor,
            TAG_NOTE,
            kind,
            |e| put_bytes(e, kind.as_bytes()),
            event.text,
        );
    }

    fn record_hal(&mut self, now: Nanos, actor: &str, op: &TraceOp, names: Option<Namer>) {
        let text = crate::sim::tracer::show(op, names);
        self.event(now, actor, TAG_HAL, "hal", |e| op.encode(e), &text);
    }

    fn record_hal_encoded(&mut self, now: Nanos, actor: &str, ops: &Encoded) {
        match &mut self.mode {
            Mode::Disabled => {}
            Mode::Binary(b) if !b.texts() => {
                // As `event` with `TraceOp::encode` for the payload: the
                // same stream, digest and checkpoints. The operations after
                // the first share its time and actor (a zero delta, the
                // actor's index).
                let outputs = b.checkpoints();
                if !outputs {
                    // Digest only: no checkpoint, no file, so the events
                    // are appended back to back (the `again` header is the
                    // same for all but the first) and the stream is cut
                    // for the digest once, after them.
                    let mut ops = ops.ops();
                    let Some(first) = ops.next() else {
                        return;
                    };
                    b.begin(now, actor, TAG_HAL);
                    b.stream.extend_from_slice(first);
                    let again = b.again_head(TAG_HAL);
                    let mut n = 1;
                    for op in ops {
                        b.stream.extend_from_slice(again.bytes());
                        b.stream.extend_from_slice(op);
                        n += 1;
                    }
                    b.cut(&mut self.hasher);
                    self.events += n;
                    return;
                }
                let mut first = true;
                for op in ops.ops() {
                    let start = if first {
                        first = false;
                        b.begin(now, actor, TAG_HAL)
                    } else {
                        b.again(TAG_HAL)
                    };
                    b.stream.extend_from_slice(op);
                    b.end(start, &mut self.hasher);
                    if outputs && self.error.is_none() {
                        match Trace::binary_event(b, &[], self.events) {
                            Ok(n) => self.bytes += n,
                            Err(e) => self.error = Some(e),
                        }
                    }
                    self.events += 1;
                }
            }
            _ => panic!("encoded HAL operations reached a trace that renders text"),
        }
    }

    fn record_fsm(&mut self, now: Nanos, actor: &str, t: Transition) {
        let machine = match &mut self.mode {
            Mode::Binary(b) => b.machines.index(t.machine),
            _ => (0, false),
        };
        self.event(
            now,
            actor,
            TAG_FSM,
            "fsm",
            |e| {
                put_name(e, machine, t.machine);
                put_varint(e, t.id);
                e.extend_from_slice(&t.codes);
            },
            &TransitionText(t),
        );
    }
}

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
        /// What the recording holds there; `None`: more than the replay.
        recorded: Option<Recorded>,
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
                write!(
                    f,
                    "traces differ first within lines {first_line}..={last_line} (a checkpoint covers {CHECKPOINT_EVENTS} lines)\n  recorded: "
                )?;
                match recorded {
                    Some(r) => write!(f, "{r}")?,
                    None => f.write_str("more events")?,
                }
                f.write_str("\n  replayed: ")?;
                match replayed {
                    Some(c) => write!(f, "checkpoint {c:#010x}")?,
                    None => f.write_str("<end of trace>")?,
                }
                for (i, l) in lines.iter().enumerate() {
                    write!(f, "\n  {:>7} {l}", first_line + i as u64)?;
                }
                Ok(())
            }
        }
    }
}

/// Render one raw line for a diff report.
fn shown(raw: &[u8], other: &[u8]) -> String {
    let body = raw.strip_suffix(b"\n").unwrap_or(raw);
    let mut s = String::from_utf8_lossy(body).into_owned();
    if !raw.ends_with(b"\n") && other.ends_with(b"\n") {
        s.push_str(" (no newline at end of file)");
    }
    s
}

/// Compare two traces line by line (bytes, newlines included).
pub fn diff_readers(mut a: impl BufRead, mut b: impl BufRead) -> io::Result<TraceDiff> {
    let mut la = Vec::new();
    let mut lb = Vec::new();
    let mut line = 0u64;
    loop {
        la.clear();
        lb.clear();
        let na = a.read_until(b'\n', &mut la)?;
        let nb = b.read_until(b'\n', &mut lb)?;
        if na == 0 && nb == 0 {
            return Ok(TraceDiff::Identical { lines: line });
        }
        line += 1;
        if la != lb {
            return Ok(TraceDiff::Differs {
                line,
                expected: (na > 0).then(|| shown(&la, &lb)),
                actual: (nb > 0).then(|| shown(&lb, &la)),
            });
        }
    }
}

/// Compare two in-memory traces.
pub fn diff_bytes(a: &[u8], b: &[u8]) -> TraceDiff {
    match diff_readers(a, b) {
        Ok(d) => d,
        // Reading from a byte slice never fails.
        Err(_) => unreachable!("reading a slice failed"),
    }
}

/// Open a recorded trace for reading, refusing anything but a regular file:
/// opening a FIFO for reading would wait until a writer came (it is opened
/// non-blocking, which changes nothing for a regular file).
pub fn open_recorded(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(f)
}

/// Compare two trace files.
pub fn diff_files(a: &Path, b: &Path) -> io::Result<TraceDiff> {
    diff_readers(
        BufReader::new(File::open(a)?),
        BufReader::new(File::open(b)?),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// Text-view lines formatted on this thread.
        pub(super) static FORMATTED: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
    }

    /// (lines formatted, HAL operations rendered) on this thread.
    fn formatted() -> (u64, u64) {
        (
            FORMATTED.with(|c| c.get()),
            crate::sim::tracer::SHOWN.with(|c| c.get()),
        )
    }

    /// A deterministic job without a trace file, and one with a binary
    /// trace file, format no text at all: every event is digested in
    /// binary. A replay with a text view formats every line (the counters
    /// do count).
    #[test]
    #[cfg_attr(miri, ignore = "a whole job")]
    fn a_deterministic_job_formats_no_text() {
        use crate::system::job::{self, JobConfig};
        let dir = std::env::temp_dir();
        let tag = format!("xunds-trace-unit-{}", std::process::id());
        let file = dir.join(format!("{tag}.trace"));
        let view = dir.join(format!("{tag}.txt"));
        let cfg = JobConfig {
            executions: 200,
            vncs: 2,
            models: 1,
            deterministic: true,
            slab: Some(dir.join(format!("{tag}.nds"))),
            ..JobConfig::default()
        };
        let before = formatted();
        let r = job::run(&cfg, &mut |_, _| {}).unwrap();
        assert_eq!(r.completed_ok, 200);
        assert!(r.trace_lines.unwrap() > 200 * 50, "{:?}", r.trace_lines);
        assert_eq!(formatted(), before, "the digest-only run formatted text");
        let rec = JobConfig {
            trace: Some(file.clone()),
            ..cfg.clone()
        };
        let r2 = job::run(&rec, &mut |_, _| {}).unwrap();
        assert_eq!(formatted(), before, "the trace-file run formatted text");
        assert_eq!(r.trace_xxh3, r2.trace_xxh3);
        let replay = JobConfig {
            replay: Some(file.clone()),
            trace: Some(view.clone()),
            ..cfg.clone()
        };
        let r3 = job::run(&replay, &mut |_, _| {}).unwrap();
        assert!(r3.replay.unwrap().is_identical());
        let (lines, ops) = formatted();
        assert_eq!(lines - before.0, r.trace_lines.unwrap() - 1);
        assert!(ops > before.1);
        for p in [file, view, r.slab] {
            let _ = std::fs::remove_file(p);
        }
    }

    /// XXH3-128 of `bytes` in one call, straight from the crate (the
    /// trace hashes in pieces).
    #[cfg(feature = "trace-digest")]
    fn xxh3(bytes: &[u8]) -> Digest {
        xxhash_rust::xxh3::xxh3_128(bytes).to_be_bytes()
    }

    fn ev<'a>(kind: &'static str, text: &'a dyn fmt::Display) -> TraceEvent<'a> {
        TraceEvent { kind, text }
    }

    #[test]
    fn header_round_trips() {
        let h = TraceHeader::new(42, "vncs=4 executions=100\nmodels=1");
        assert_eq!(h.config, "vncs=4 executions=100 models=1");
        let line = h.line();
        assert_eq!(
            line,
            "xunds-trace v1 seed=42 config=vncs=4 executions=100 models=1"
        );
        assert_eq!(TraceHeader::parse(&format!("{line}\n")).unwrap(), h);
        assert_eq!(h.config_value("executions"), Some("100"));
        assert_eq!(h.config_value("models"), Some("1"));
        assert_eq!(h.config_value("seed"), None);
        let empty = TraceHeader::new(u64::MAX, "");
        assert_eq!(TraceHeader::parse(&empty.line()).unwrap(), empty);
    }

    /// A parsed header's line parses back to the same header, whatever the
    /// line held: carriage returns before the newline (past the one a CRLF
    /// ending has) stayed in the config, and its line then lost one to the
    /// next parse (found by the `trace_header` fuzz target).
    #[test]
    fn a_parsed_header_reads_back_from_its_line() {
        for line in [
            "xunds-trace v1 seed=1 config=a\r\r\r\n",
            "xunds-trace v1 seed=1 config=a\rb\r\n",
            "xunds-trace v1 seed=1 config=a\r",
        ] {
            let h = TraceHeader::parse(line).unwrap();
            assert_eq!(TraceHeader::parse(&h.line()).unwrap(), h, "{line:?}");
            assert!(!h.config.contains(['\r', '\n']), "{line:?}");
        }
    }

    #[test]
    fn bad_headers_are_typed_errors() {
        assert!(matches!(
            TraceHeader::parse("hello"),
            Err(TraceError::NotATrace(_))
        ));
        // Older binary formats and a newer one are refused.
        for old_or_new in ["v2", "v3", "v5"] {
            assert!(matches!(
                TraceHeader::parse(&format!("xunds-trace {old_or_new} seed=1 config=")),
                Err(TraceError::UnsupportedVersion(_))
            ));
        }
        assert!(matches!(
            TraceHeader::parse("xunds-trace v1 seed=x config="),
            Err(TraceError::BadSeed(_))
        ));
        assert!(matches!(
            TraceHeader::parse("xunds-trace v1 seed=1"),
            Err(TraceError::MissingConfig)
        ));
        assert!(matches!(
            TraceHeader::parse(""),
            Err(TraceError::NotATrace(_))
        ));
    }

    #[test]
    fn lines_are_stable_and_escaped() {
        let h = TraceHeader::new(7, "k=v");
        let mut t = Trace::in_memory(&h, 1024);
        t.record(Nanos(0), "producer", ev("msg", &"send 1"));
        t.record(Nanos(150), "worker0", ev("hal", &"two\nlines\r"));
        assert_eq!(t.lines(), 3);
        let s = t.finish().unwrap();
        let text = String::from_utf8(s.memory.clone().unwrap()).unwrap();
        assert_eq!(
            text,
            "xunds-trace v1 seed=7 config=k=v\n\
             t=0 producer msg send 1\n\
             t=150 worker0 hal two\\nlines\\r\n"
        );
        assert_eq!(s.bytes, text.len() as u64);
        #[cfg(feature = "trace-digest")]
        assert_eq!(s.digest, xxh3(text.as_bytes()));
    }

    #[test]
    #[cfg(feature = "trace-digest")]
    fn every_output_of_a_kind_has_the_same_digest() {
        let h = TraceHeader::new(1, "a=b");
        let feed = |t: &mut Trace| {
            for i in 0..100u64 {
                t.record(Nanos(i * 10), "a", ev("msg", &i));
            }
        };
        // Text views digest their text.
        let mut m = Trace::in_memory(&h, 0);
        let mut w = Trace::to_writer(&h, Vec::<u8>::new());
        // Binary traces digest the event stream, whatever they write.
        let mut d = Trace::digest_only(&h);
        let mut b = Trace::binary_to_writer(&h, Vec::<u8>::new());
        for t in [&mut m, &mut w, &mut d, &mut b] {
            feed(t);
        }
        assert_eq!(d.digest_so_far(), b.digest_so_far());
        let [m, w, d, b] = [m, w, d, b].map(|t| t.finish().unwrap());
        assert_eq!(m.digest, w.digest);
        assert_eq!(m.digest, xxh3(m.memory.as_deref().unwrap()));
        assert_eq!(d.digest, b.digest);
        assert_ne!(m.digest, d.digest);
        assert_eq!([m.lines, w.lines, d.lines, b.lines], [101; 4]);
        assert_eq!(d.memory, None);
        assert_eq!(d.bytes, 0);
        assert_eq!(m.digest_hex().len(), 32);
    }

    /// A `Display` that must never be called.
    struct Bomb;
    impl fmt::Display for Bomb {
        fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
            panic!("a binary trace formatted text")
        }
    }

    fn op(v: u32) -> TraceOp {
        TraceOp::Mem(crate::sim::tracer::MemOp {
            op: crate::sim::tracer::Op::Load32,
            region: crate::hal::RegionId::Regs { core: 0 },
            off: 4,
            order: crate::hal::Ordering::Acquire,
            value: v.into(),
            result: 0,
            data: Default::default(),
        })
    }

    fn transition() -> Transition {
        Transition {
            machine: "toy",
            id: 3,
            from: "A",
            event: "go",
            to: "B",
            codes: [0, 0, 1],
        }
    }

    /// A writer whose bytes the test reads back.
    #[derive(Clone, Default)]
    struct Shared(Arc<std::sync::Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    impl Shared {
        fn bytes(&self) -> Vec<u8> {
            self.0.lock().unwrap().clone()
        }
    }

    /// Feed `n` events of the three kinds; event `bad` gets another value.
    fn feed(t: &mut Trace, n: u64, bad: Option<u64>) {
        for i in 0..n {
            let now = Nanos(i / 3 * 100);
            match i % 3 {
                0 => t.record(now, "producer", ev("msg", &Bomb)),
                1 => {
                    let v = if bad == Some(i) { 7 } else { i as u32 };
                    t.record_hal(
                        now,
                        "device0",
                        &op(v),
                        Some(crate::device::memmap::trace_names),
                    );
                }
                _ => t.record_fsm(now, "worker0", transition()),
            }
        }
    }

    #[test]
    fn a_binary_trace_formats_no_text() {
        let h = TraceHeader::new(2, "k=v");
        let mut d = Trace::digest_only(&h);
        feed(&mut d, 300, None);
        let out = Shared::default();
        let mut b = Trace::binary_to_writer(&h, out.clone());
        feed(&mut b, 300, None);
        let (d, b) = (d.finish().unwrap(), b.finish().unwrap());
        #[cfg(feature = "trace-digest")]
        assert_eq!(d.digest, b.digest);
        assert_eq!((d.lines, b.lines), (301, 301));
        // The header line, a 5-byte checkpoint per 16 events, the 13-byte end.
        let file = out.bytes();
        let head = format!("{}\n", h.versioned(BINARY_VERSION).line());
        assert!(file.starts_with(head.as_bytes()));
        assert_eq!(file.len() as u64, head.len() as u64 + 300 / 16 * 5 + 13);
        assert_eq!(b.bytes, file.len() as u64);
    }

    /// A transition is digested by its machine and its codes: any change of
    /// machine, id, from, event or to changes the digest; the names a
    /// machine's states carry do not (the text view shows them).
    #[cfg(feature = "trace-digest")]
    #[test]
    fn a_transition_is_digested_by_machine_id_and_codes() {
        let digest = |ts: &[Transition]| {
            let mut d = Trace::digest_only(&TraceHeader::new(2, "k=v"));
            for &t in ts {
                d.record_fsm(Nanos(100), "worker0", t);
            }
            d.finish().unwrap().digest
        };
        let t = transition();
        let base = digest(&[t, t]);
        let changed = [
            Transition {
                machine: "other",
                ..t
            },
            Transition { id: 4, ..t },
            Transition {
                codes: [1, 0, 1],
                ..t
            },
            Transition {
                codes: [0, 1, 1],
                ..t
            },
            Transition {
                codes: [0, 0, 0],
                ..t
            },
        ];
        for c in changed {
            assert_ne!(digest(&[t, c]), base, "{c:?}");
        }
        // Same machine and codes, other names: the same stream.
        let renamed = Transition {
            from: "a",
            event: "g",
            to: "b",
            ..t
        };
        assert_eq!(digest(&[t, renamed]), base);
        // A machine seen again by another name is another machine.
        let m2 = Transition {
            machine: "toy2",
            ..t
        };
        assert_ne!(digest(&[m2, t]), digest(&[t, t]));
    }

    fn recorded(n: u64) -> Vec<u8> {
        let out = Shared::default();
        let mut b = Trace::binary_to_writer(&TraceHeader::new(2, "k=v"), out.clone());
        feed(&mut b, n, None);
        b.finish().unwrap();
        out.bytes()
    }

    /// Replay `n` events (event `bad` changed) against `file`: the verdict
    /// and the text view kept.
    fn replay(file: Vec<u8>, n: u64, bad: Option<u64>) -> (TraceDiff, String) {
        let view = Shared::default();
        let h = TraceHeader::new(2, "k=v");
        let mut t = Trace::comparing(&h, io::Cursor::new(file), Some(Box::new(view.clone())));
        let stop = t.stop_flag().unwrap();
        for i in 0..n {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let now = Nanos(i / 3 * 100);
            match i % 3 {
                0 => t.record(now, "producer", ev("msg", &"note")),
                1 => {
                    let v = if bad == Some(i) { 7 } else { i as u32 };
                    t.record_hal(
                        now,
                        "device0",
                        &op(v),
                        Some(crate::device::memmap::trace_names),
                    );
                }
                _ => t.record_fsm(now, "worker0", transition()),
            }
        }
        let s = t.finish().unwrap();
        (s.replay.unwrap(), String::from_utf8(view.bytes()).unwrap())
    }

    #[test]
    fn a_replay_matches_its_recording_and_names_the_first_differing_block() {
        let file = recorded(100);
        let (d, view) = replay(file.clone(), 100, None);
        assert_eq!(d, TraceDiff::Identical { lines: 101 });
        assert!(
            view.starts_with("xunds-trace v1 seed=2 config=k=v\n"),
            "{view}"
        );
        assert_eq!(view.lines().count(), 101);
        assert!(view.contains("t=0 producer msg note"), "{view}");
        assert!(
            view.contains("device0 hal load32    regs0+0x0004 S2M_TAIL_INC acq = 0x1"),
            "{view}"
        );
        assert!(view.contains("worker0 fsm toy#3 A --go--> B"), "{view}");

        // Event 40 (line 42) differs: the block of lines 34..=49 is reported
        // and the replay stops there.
        let (d, view) = replay(file.clone(), 100, Some(40));
        let TraceDiff::Block {
            first_line,
            last_line,
            recorded: Some(Recorded::Checkpoint(_)),
            replayed: Some(_),
            ref lines,
        } = d
        else {
            panic!("{d:?}")
        };
        assert_eq!((first_line, last_line), (34, 49));
        assert_eq!(lines.len(), 16);
        assert!(lines[42 - 34].contains("= 0x7"), "{lines:?}");
        let text = d.to_string();
        assert!(
            text.contains("traces differ first within lines 34..=49"),
            "{text}"
        );
        assert!(
            text.contains("recorded: checkpoint 0x") && text.contains("replayed: checkpoint 0x"),
            "{text}"
        );
        assert!(text.contains("     42 t=1300 device0 hal load32"), "{text}");
        assert_eq!(view.lines().count(), 49, "the view stops at the block");

        // A damaged checkpoint is a difference in its block.
        let mut damaged = file.clone();
        let at = damaged.len() - 13 - 5 * 2 + 2;
        damaged[at] ^= 0xFF;
        let (d, _) = replay(damaged, 100, None);
        assert!(
            matches!(d, TraceDiff::Block { first_line: 66, .. }),
            "{d:?}"
        );

        // A cut recording: the replay stops where it ends.
        let cut = file[..file.len() - 13 - 5 * 3].to_vec();
        let (d, view) = replay(cut, 100, None);
        assert!(
            matches!(
                d,
                TraceDiff::Block {
                    first_line: 50,
                    recorded: Some(Recorded::End),
                    ..
                }
            ),
            "{d:?}"
        );
        assert!(d.to_string().contains("recorded: <end of trace>"));
        assert_eq!(view.lines().count(), 65);

        // A longer replay than the recording, and a shorter one.
        let (d, _) = replay(file.clone(), 120, None);
        assert!(!d.is_identical(), "{d:?}");
        let (d, _) = replay(file, 90, None);
        assert!(!d.is_identical(), "{d:?}");
    }

    #[test]
    fn disabled_records_nothing() {
        let mut t = Trace::disabled();
        assert!(!t.enabled());
        t.record(Nanos(1), "a", ev("msg", &"x"));
        let s = t.finish().unwrap();
        assert_eq!((s.lines, s.bytes), (0, 0));
        #[cfg(feature = "trace-digest")]
        assert_eq!(s.digest, xxh3(b""));
    }

    #[test]
    fn write_errors_surface_at_finish() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::other("disk gone"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut t = Trace::to_writer(&TraceHeader::new(0, ""), Broken);
        t.record(Nanos(1), "a", ev("msg", &"x"));
        assert_eq!(t.finish().unwrap_err().to_string(), "disk gone");
    }

    #[test]
    fn diff_reports_the_first_differing_line() {
        let a = b"h\nx\ny\nz\n";
        assert_eq!(diff_bytes(a, a), TraceDiff::Identical { lines: 4 });
        assert!(diff_bytes(a, a).is_identical());
        assert_eq!(diff_bytes(b"", b""), TraceDiff::Identical { lines: 0 });
        let d = diff_bytes(a, b"h\nx\nY\nz\n");
        assert_eq!(
            d,
            TraceDiff::Differs {
                line: 3,
                expected: Some("y".into()),
                actual: Some("Y".into())
            }
        );
        assert_eq!(
            d.to_string(),
            "traces differ first at line 3\n  recorded: y\n  replayed: Y"
        );
        // One trace is a prefix of the other.
        assert_eq!(
            diff_bytes(a, b"h\nx\n"),
            TraceDiff::Differs {
                line: 3,
                expected: Some("y".into()),
                actual: None
            }
        );
        assert!(diff_bytes(b"h\n", a)
            .to_string()
            .contains("recorded: <end of trace>"));
        // Only the final newline differs.
        assert_eq!(
            diff_bytes(b"h\nx\n", b"h\nx"),
            TraceDiff::Differs {
                line: 2,
                expected: Some("x".into()),
                actual: Some("x (no newline at end of file)".into())
            }
        );
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri isolation forbids the file system")]
    fn diff_files_reads_from_disk() {
        let dir = std::env::temp_dir().join(format!("xunds-trace-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (p, q) = (dir.join("a.trace"), dir.join("b.trace"));
        let h = TraceHeader::new(3, "x=1");
        for (path, last) in [(&p, "end"), (&q, "END")] {
            let mut t = Trace::create(&h, path).unwrap();
            t.record(Nanos(5), "a", ev("msg", &"same"));
            t.record(Nanos(6), "a", ev("msg", &last));
            t.finish().unwrap();
        }
        let mut r = BufReader::new(File::open(&p).unwrap());
        assert_eq!(TraceHeader::read(&mut r).unwrap(), h);
        assert!(diff_files(&p, &p).unwrap().is_identical());
        match diff_files(&p, &q).unwrap() {
            TraceDiff::Differs { line, .. } => assert_eq!(line, 3),
            d => panic!("{d:?}"),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
