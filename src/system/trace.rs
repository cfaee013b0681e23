//! The trace of a deterministic run: a binary event stream that names the
//! run (its XXH3-128 digest, `trace_xxh3`), a compact binary file of checkpoints
//! over that stream (what `xunds run --trace FILE` writes and `xunds replay
//! FILE` compares against), and a text view rendered on demand (`xunds
//! replay FILE --print`, the tests' snapshots) with a line diff of two views.
//!
//! ## The event stream
//!
//! The stream starts with the header line. A runner names the actor and
//! the time once before each poll (`TraceSink::begin`): a poll head
//! (`0x42`, three zero bytes, the actor's index in order of first
//! appearance as a `u32`, its name the first time as a `u32` length and
//! its bytes, the time as a `u64`). The events of that poll follow, each a
//! tag and a payload of fixed places (integers little-endian, no varints):
//!
//! - a HAL operation (`hal`, `sim::tracer::TraceOp::encode`): its tag
//!   (0..=21, `sim::tracer::Op`'s discriminant for a memory access) in a
//!   frame of 24 bytes (tag, target kind, a code: the ordering, a wait's
//!   outcome or an error's kind; a zero byte; the region's or event's number
//!   as a `u32`; the offset as a `u64`; a word: the value loaded or stored,
//!   a copy's length, a map's length, ...), 32 bytes where the operation
//!   has a second word (a read-modify-write's or the doorbell's result, a
//!   16-byte record's second half, a wait's or a structural operation's),
//!   then a copy's bytes, or a failure's operation and error text (each a
//!   `u32` length and its bytes);
//! - a transition (`fsm`, 16 bytes): `0x41`, its from state, event and to
//!   state as their codes (`fsm::Transition::codes`: positions in
//!   declaration order, so renaming a state does not change the stream),
//!   its machine's index in order of first appearance (`u32`) and its id
//!   (`u64`), then the machine's name at its first appearance (a `u32`
//!   length and its bytes);
//! - a note (an actor's or the runner's): `0x40` and its kind (a `u32`
//!   length and its bytes; its text is commentary on the operations around
//!   it and is rendered only in the text view).
//!
//! Nothing in it depends on addresses, wall-clock time or per-process hash
//! seeds, so the same seed and configuration give the same stream, and its
//! XXH3-128 digest ([`TraceSummary::digest`], with the `trace-digest`
//! feature) names the run. A binary trace formats no text unless a text
//! view or a comparison is attached.
//!
//! ## The binary file (version 5)
//!
//! ```text
//! xunds-trace v5 seed=<u64 decimal> config=<free text to end of line>\n
//! 'C' <u32 LE>        a checkpoint after every CHECKPOINT_EVENTS events
//! ...
//! 'E' <u64 LE> <u32 LE>  the end: events recorded, checkpoint of the whole stream
//! ```
//!
//! A checkpoint is a running 64-bit hash of the poll heads and the events
//! (the header line is compared by itself) folded to 32 bits: a replay
//! recomputes it and stops at the first block whose checkpoint disagrees
//! (or where the recording ends), reporting that block's lines of the text
//! view. About 30 bytes per execution of the default workload. A binary
//! trace of an older version (another event stream, so other checkpoints)
//! is refused by name ([`TraceError::UnsupportedVersion`]): record it again.
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
//! nothing. A binary trace writes each event's fixed frame into one
//! preallocated buffer (a poll's HAL operations in one copy from the
//! tracer's log, or hashed there when they are many) and hashes it in 64 KiB
//! chunks; a text trace formats each event into one preallocated line
//! buffer. No allocation per event once the buffers have grown.

use core::fmt;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::fsm::Transition;
use crate::sim::events::{Nanos, TraceEvent, TraceSink, TransitionText};
use crate::sim::stream::{Binary, Compare, Tally};
pub use crate::sim::stream::{
    Digest, Recorded, TraceDiff, TraceError, TraceHeader, BINARY_VERSION, CHECKPOINT_EVENTS,
    FORMAT_VERSION, MAGIC,
};
use crate::sim::tracer::{Encoded, Namer, TraceOp};

/// Where a text trace's lines go.
enum Out {
    Memory(Vec<u8>),
    Writer(Box<dyn Write + Send>),
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
    /// The time and actor of the events being recorded (`begin`).
    now: Nanos,
    actor: String,
    /// Digest, counts and the first write error ([`Trace::finish`]
    /// reports it).
    tally: Tally,
}

debug_fields!([] Trace, |s| enabled = s.enabled(), events = s.tally.events, bytes = s.tally.bytes);

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
            now: Nanos::ZERO,
            actor: String::new(),
            tally: Tally::default(),
        }
    }

    fn text(header: &TraceHeader, out: Out) -> Trace {
        let mut t = Trace::new(Mode::Text(out));
        t.line.extend_from_slice(header.line().as_bytes());
        t.line.push(b'\n');
        t.emit_text();
        t
    }

    fn binary(header: &TraceHeader, mut b: Binary) -> Trace {
        let mut t = Trace::new(Mode::Disabled);
        b.start(header, &mut t.tally);
        t.mode = Mode::Binary(Box::new(b));
        t
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
        Ok(Trace::to_writer(header, buffered(path)?))
    }

    /// A binary trace that keeps only its event count and digest (for
    /// `trace_xxh3` without a file). It formats no text.
    pub fn digest_only(header: &TraceHeader) -> Trace {
        Trace::binary(header, Binary::new(None, None, None))
    }

    /// A binary trace whose checkpoint file (see the module docs) goes to
    /// a new file at `path`. It formats no text.
    pub fn create_binary(header: &TraceHeader, path: &Path) -> io::Result<Trace> {
        let file = Box::new(buffered(path)?);
        Ok(Trace::binary(header, Binary::new(Some(file), None, None)))
    }

    /// A binary trace compared with the binary file `recorded` (read from
    /// its first byte) checkpoint by checkpoint as it is produced; the text
    /// view of the replay goes to `view`, up to the first difference. Once
    /// it differs, or runs past the recorded end, it records nothing more
    /// and [`Trace::stop_flag`] is raised; [`TraceSummary::replay`] holds
    /// the verdict.
    pub fn comparing(
        header: &TraceHeader,
        recorded: impl BufRead + Send + 'static,
        view: Option<Box<dyn Write + Send>>,
    ) -> Trace {
        let c = Compare::new(&header.versioned(BINARY_VERSION), recorded);
        Trace::binary(header, Binary::new(None, Some(Box::new(c)), view))
    }

    /// Raised when a [`Trace::comparing`] trace has its verdict before the
    /// run ends (a difference): the run should stop. `None` for others.
    pub fn stop_flag(&self) -> Option<Arc<AtomicBool>> {
        match &self.mode {
            Mode::Binary(b) => b.stop_flag(),
            _ => None,
        }
    }

    /// Lines of the text view so far (the header included; 0 when disabled).
    pub fn lines(&self) -> u64 {
        match self.mode {
            Mode::Disabled => 0,
            _ => self.tally.events + 1,
        }
    }

    /// Flush and summarise. Returns the first write error, if any.
    pub fn finish(mut self) -> io::Result<TraceSummary> {
        if let Some(e) = self.tally.error.take() {
            return Err(e);
        }
        let lines = self.lines();
        let (memory, replay) = match core::mem::replace(&mut self.mode, Mode::Disabled) {
            Mode::Disabled => (None, None),
            Mode::Text(Out::Memory(v)) => (Some(v), None),
            Mode::Text(Out::Writer(mut w)) => {
                w.flush()?;
                (None, None)
            }
            Mode::Binary(b) => (None, b.finish(&mut self.tally)?),
        };
        Ok(TraceSummary {
            lines,
            bytes: self.tally.bytes,
            #[cfg(feature = "trace-digest")]
            digest: self.tally.hasher.finalize(),
            memory,
            replay,
        })
    }

    /// Hash and write out the text line buffer.
    fn emit_text(&mut self) {
        self.tally.hasher.update(&self.line);
        self.tally.bytes += self.line.len() as u64;
        match &mut self.mode {
            Mode::Text(Out::Memory(v)) => v.extend_from_slice(&self.line),
            Mode::Text(Out::Writer(w)) if self.tally.error.is_none() => {
                if let Err(e) = w.write_all(&self.line) {
                    self.tally.error = Some(e);
                }
            }
            _ => {}
        }
    }

    /// Record one event: in a text trace its line; in a binary trace its
    /// encoding (what `encode` appends), and the text line (`text`) only
    /// when a view or a comparison needs it.
    #[inline(always)]
    fn event<D: fmt::Display>(
        &mut self,
        kind: &str,
        encode: impl FnOnce(&mut Binary),
        text: impl FnOnce() -> D,
    ) {
        match &mut self.mode {
            Mode::Disabled => return,
            Mode::Binary(b) => {
                b.event(encode, &mut self.tally.hasher);
                if b.has_outputs() {
                    if b.texts() {
                        format_line(&mut self.line, self.now, &self.actor, kind, &text());
                    }
                    b.output(&self.line, &mut self.tally);
                }
            }
            Mode::Text(_) => {
                format_line(&mut self.line, self.now, &self.actor, kind, &text());
                self.emit_text();
            }
        }
        self.tally.events += 1;
    }
}

/// A new file at `path` behind a 64 KiB buffer.
pub(crate) fn buffered(path: &Path) -> io::Result<BufWriter<File>> {
    Ok(BufWriter::with_capacity(64 * 1024, File::create(path)?))
}

/// Format one text-view line into `line` (cleared first).
fn format_line(line: &mut Vec<u8>, now: Nanos, actor: &str, kind: &str, text: &dyn fmt::Display) {
    #[cfg(test)]
    tests::FORMATTED.with(|c| c.set(c.get() + 1));
    line.clear();
    // Writing into a Vec cannot fail; a `Display` impl that errors leaves a
    // truncated (but still deterministic) line.
    let _ = write!(Escaping(line), "t={now} {actor} {kind} {text}");
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

impl TraceSink for Trace {
    #[inline]
    fn enabled(&self) -> bool {
        !matches!(self.mode, Mode::Disabled)
    }

    fn begin(&mut self, now: Nanos, actor: &str) {
        match &mut self.mode {
            Mode::Disabled => return,
            Mode::Binary(b) => b.begin(now, actor, &mut self.tally.hasher),
            Mode::Text(_) => {}
        }
        self.now = now;
        self.actor.clear();
        self.actor.push_str(actor);
    }

    fn record(&mut self, event: TraceEvent<'_>) {
        let kind = event.kind;
        self.event(kind, |b| b.note(kind), || event.text);
    }

    fn record_hal(&mut self, op: &TraceOp, names: Option<Namer>) {
        let text = || crate::sim::tracer::show(op, names);
        self.event("hal", |b| op.encode(&mut b.stream), text);
    }

    fn record_hal_encoded(&mut self, ops: &Encoded) {
        match &mut self.mode {
            Mode::Disabled => {}
            Mode::Binary(b) if !b.texts() => b.hal_ops(ops, &mut self.tally),
            _ => panic!("encoded HAL operations reached a trace that renders text"),
        }
    }

    fn record_fsm(&mut self, t: Transition) {
        self.event("fsm", |b| b.transition(&t), || TransitionText(t));
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
    // Reading from a byte slice never fails.
    diff_readers(a, b).unwrap_or_else(|_| unreachable!("reading a slice failed"))
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
        let not_a_file = io::Error::new(io::ErrorKind::InvalidInput, "not a regular file");
        return Err(not_a_file);
    }
    Ok(f)
}

/// Compare two trace files.
pub fn diff_files(a: &Path, b: &Path) -> io::Result<TraceDiff> {
    let (a, b) = (File::open(a)?, File::open(b)?);
    diff_readers(BufReader::new(a), BufReader::new(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    thread_local! {
        /// Text-view lines formatted on this thread.
        pub(super) static FORMATTED: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
    }

    /// A binary trace whose checkpoint file goes to `w`.
    fn binary_to_writer(header: &TraceHeader, w: impl Write + Send + 'static) -> Trace {
        Trace::binary(header, Binary::new(Some(Box::new(w)), None, None))
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
        for old_or_new in ["v2", "v3", "v4", "v6"] {
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
        t.begin(Nanos(0), "producer");
        t.record(ev("msg", &"send 1"));
        t.begin(Nanos(150), "worker0");
        t.record(ev("hal", &"two\nlines\r"));
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
                t.begin(Nanos(i * 10), "a");
                t.record(ev("msg", &i));
            }
        };
        // Text views digest their text.
        let mut m = Trace::in_memory(&h, 0);
        let mut w = Trace::to_writer(&h, Vec::<u8>::new());
        // Binary traces digest the event stream, whatever they write.
        let mut d = Trace::digest_only(&h);
        let mut b = binary_to_writer(&h, Vec::<u8>::new());
        for t in [&mut m, &mut w, &mut d, &mut b] {
            feed(t);
        }
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
                0 => {
                    t.begin(now, "producer");
                    t.record(ev("msg", &Bomb));
                }
                1 => {
                    let v = if bad == Some(i) { 7 } else { i as u32 };
                    t.begin(now, "device0");
                    t.record_hal(&op(v), Some(crate::device::memmap::trace_names));
                }
                _ => {
                    t.begin(now, "worker0");
                    t.record_fsm(transition());
                }
            }
        }
    }

    #[test]
    fn a_binary_trace_formats_no_text() {
        let h = TraceHeader::new(2, "k=v");
        let mut d = Trace::digest_only(&h);
        feed(&mut d, 300, None);
        let out = Shared::default();
        let mut b = binary_to_writer(&h, out.clone());
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
                d.begin(Nanos(100), "worker0");
                d.record_fsm(t);
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
        let mut b = binary_to_writer(&TraceHeader::new(2, "k=v"), out.clone());
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
                0 => {
                    t.begin(now, "producer");
                    t.record(ev("msg", &"note"));
                }
                1 => {
                    let v = if bad == Some(i) { 7 } else { i as u32 };
                    t.begin(now, "device0");
                    t.record_hal(&op(v), Some(crate::device::memmap::trace_names));
                }
                _ => {
                    t.begin(now, "worker0");
                    t.record_fsm(transition());
                }
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
            recorded: Recorded::Checkpoint(_),
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
                    recorded: Recorded::End,
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
        t.begin(Nanos(1), "a");
        t.record(ev("msg", &"x"));
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
        t.begin(Nanos(1), "a");
        t.record(ev("msg", &"x"));
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
            t.begin(Nanos(5), "a");
            t.record(ev("msg", &"same"));
            t.begin(Nanos(6), "a");
            t.record(ev("msg", &last));
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
