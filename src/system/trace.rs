//! The trace: a stable, line-oriented text record of a run, its SHA-256
//! digest, and a line diff of two traces (what `xunds replay FILE` reports).
//!
//! ## Format (version 1)
//!
//! ```text
//! xunds-trace v1 seed=<u64 decimal> config=<free text to end of line>
//! t=<ns> <actor> <kind> <text>
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
//!   `<machine>#<id> <FROM> --<event>--> <TO>`.
//! - Lines end with `\n`; a `\n` or `\r` inside a text is written as the two
//!   characters `\n` / `\r`, so one event is always one line. The file is
//!   UTF-8 when every text is.
//! - Nothing in a line may depend on addresses, wall-clock time or
//!   per-process hash seeds: the same seed and configuration give a
//!   byte-identical file, and its SHA-256 (`TraceSummary::sha256`, with
//!   the `trace-digest` feature) names the run.
//!
//! ## Cost
//!
//! [`Trace::disabled`] reports `enabled() == false`, and `crate::actors::Cx`
//! caches that, so a disabled trace costs one branch per event and formats
//! nothing. An enabled trace formats each event into one preallocated line
//! buffer, hashes it, and appends it to the output (a preallocated `Vec`, a
//! buffered writer, or nothing for a digest-only trace): no allocation per
//! event once the buffers have grown to their working size.

use core::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::actors::{Nanos, TraceEvent, TraceSink};
#[cfg(feature = "trace-digest")]
use sha2::Digest as _;

/// The first word of every trace file.
pub const MAGIC: &str = "xunds-trace";
/// The format version this module writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// The first line of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceHeader {
    /// Format version ([`FORMAT_VERSION`] when written by this module).
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
        UnsupportedVersion(String) => "unsupported trace version {0:?} (this build reads v{FORMAT_VERSION})",
        /// The seed is missing or not a decimal u64.
        BadSeed(String) => "bad seed field {0:?}",
        /// The `config=` field is missing.
        MissingConfig => "the header has no config= field",
    }
}

impl TraceHeader {
    /// A version-[`FORMAT_VERSION`] header.
    pub fn new(seed: u64, config: impl Into<String>) -> TraceHeader {
        let config = config.into().replace(['\n', '\r'], " ");
        TraceHeader {
            version: FORMAT_VERSION,
            seed,
            config,
        }
    }

    /// The header line, without its newline.
    pub fn line(&self) -> String {
        format!(
            "{MAGIC} v{} seed={} config={}",
            self.version, self.seed, self.config
        )
    }

    /// Parse a header line (with or without its newline).
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
            .filter(|&v| v == FORMAT_VERSION)
            .ok_or_else(|| TraceError::UnsupportedVersion(ver.to_string()))?;
        let (seed, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        let seed = seed
            .strip_prefix("seed=")
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| TraceError::BadSeed(seed.to_string()))?;
        let config = rest
            .strip_prefix("config=")
            .ok_or(TraceError::MissingConfig)?;
        Ok(TraceHeader {
            version,
            seed,
            config: config.to_string(),
        })
    }

    /// Read and parse the first line of a trace.
    pub fn read(r: &mut impl BufRead) -> Result<TraceHeader, TraceError> {
        let mut line = String::new();
        r.read_line(&mut line)?;
        TraceHeader::parse(&line)
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

/// A SHA-256 digest (`trace_sha256`).
pub type Digest = [u8; 32];

/// The running digest of the bytes recorded: SHA-256 (the `sha2` crate) with
/// the `trace-digest` feature, nothing without it.
#[derive(Clone, Default)]
struct Hasher(#[cfg(feature = "trace-digest")] sha2::Sha256);

impl Hasher {
    fn update(&mut self, bytes: &[u8]) {
        #[cfg(feature = "trace-digest")]
        self.0.update(bytes);
        #[cfg(not(feature = "trace-digest"))]
        let _ = bytes;
    }

    #[cfg(feature = "trace-digest")]
    fn finalize(self) -> Digest {
        self.0.finalize().into()
    }
}

/// Where an enabled trace's bytes go.
enum Out {
    Memory(Vec<u8>),
    Writer(Box<dyn Write + Send>),
    DigestOnly,
    Compare(Box<Compare>),
}

/// A trace compared, line by line as it is produced, with a recorded one
/// (`xunds replay`): the first difference, or a line past the recorded end,
/// is the verdict and raises `stop`, so a replay is bounded by what was
/// recorded whatever its header claims.
struct Compare {
    recorded: Box<dyn BufRead + Send>,
    /// Where the replayed lines go (up to and including the first
    /// difference: at most the recorded size plus one line).
    kept: Option<Box<dyn Write + Send>>,
    expected: Vec<u8>,
    line: u64,
    diff: Option<TraceDiff>,
    stop: Arc<AtomicBool>,
}

impl Compare {
    /// Compare one produced line (with its `\n`) with the next recorded one.
    fn line(&mut self, got: &[u8]) -> io::Result<()> {
        if self.diff.is_some() {
            return Ok(());
        }
        self.line += 1;
        if let Some(k) = &mut self.kept {
            k.write_all(got)?;
        }
        self.expected.clear();
        let n = self.recorded.read_until(b'\n', &mut self.expected)?;
        if self.expected != got {
            self.differs(
                (n > 0).then(|| shown(&self.expected, got)),
                Some(shown(got, &self.expected)),
            );
        }
        Ok(())
    }

    fn differs(&mut self, expected: Option<String>, actual: Option<String>) {
        self.diff = Some(TraceDiff::Differs {
            line: self.line,
            expected,
            actual,
        });
        // Ordering: Relaxed: a flag read by the runner's stop predicate on
        // this same thread; it orders nothing else.
        self.stop.store(true, Ordering::Relaxed);
    }

    /// The verdict once the run has ended: a recorded line left over is a
    /// difference too.
    fn finish(mut self) -> io::Result<TraceDiff> {
        if self.diff.is_none() {
            self.expected.clear();
            if self.recorded.read_until(b'\n', &mut self.expected)? > 0 {
                self.line += 1;
                let e = shown(&self.expected, b"");
                self.differs(Some(e), None);
            }
        }
        if let Some(k) = &mut self.kept {
            k.flush()?;
        }
        Ok(self
            .diff
            .take()
            .unwrap_or(TraceDiff::Identical { lines: self.line }))
    }
}

/// A trace being recorded. Implements `TraceSink`.
pub struct Trace {
    enabled: bool,
    /// Scratch for one line; cleared, never shrunk.
    line: Vec<u8>,
    out: Out,
    hasher: Hasher,
    lines: u64,
    bytes: u64,
    /// The first write error (later events are dropped; [`Trace::finish`]
    /// reports it).
    error: Option<io::Error>,
}

impl fmt::Debug for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trace")
            .field("enabled", &self.enabled)
            .field("lines", &self.lines)
            .field("bytes", &self.bytes)
            .finish()
    }
}

/// What a finished trace amounts to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceSummary {
    /// Lines written, the header included (0 for a disabled trace).
    pub lines: u64,
    /// Bytes written.
    pub bytes: u64,
    /// SHA-256 of exactly those bytes.
    #[cfg(feature = "trace-digest")]
    pub sha256: Digest,
    /// The bytes, for an in-memory trace.
    pub memory: Option<Vec<u8>>,
    /// For a [`Trace::comparing`] trace: how it compares with the recording.
    pub replay: Option<TraceDiff>,
}

impl TraceSummary {
    /// The digest in lower-case hex (`trace_sha256`).
    #[cfg(feature = "trace-digest")]
    pub fn sha256_hex(&self) -> String {
        self.sha256.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// Initial capacity of the line buffer.
const LINE_CAPACITY: usize = 256;

impl Trace {
    fn with_out(header: &TraceHeader, out: Out) -> Trace {
        let mut t = Trace {
            enabled: true,
            line: Vec::with_capacity(LINE_CAPACITY),
            out,
            hasher: Hasher::default(),
            lines: 0,
            bytes: 0,
            error: None,
        };
        t.line.extend_from_slice(header.line().as_bytes());
        t.line.push(b'\n');
        t.emit();
        t
    }

    /// A trace that records nothing (`enabled() == false`).
    pub fn disabled() -> Trace {
        Trace {
            enabled: false,
            line: Vec::new(),
            out: Out::DigestOnly,
            hasher: Hasher::default(),
            lines: 0,
            bytes: 0,
            error: None,
        }
    }

    /// An in-memory trace with `capacity` bytes reserved up front.
    pub fn in_memory(header: &TraceHeader, capacity: usize) -> Trace {
        Trace::with_out(header, Out::Memory(Vec::with_capacity(capacity)))
    }

    /// A trace streamed to `w` (wrap files in a `BufWriter`, or use
    /// [`Trace::create`]).
    pub fn to_writer(header: &TraceHeader, w: impl Write + Send + 'static) -> Trace {
        Trace::with_out(header, Out::Writer(Box::new(w)))
    }

    /// A trace streamed to a new file at `path` through a 64 KiB buffer.
    pub fn create(header: &TraceHeader, path: &Path) -> io::Result<Trace> {
        let f = File::create(path)?;
        Ok(Trace::to_writer(
            header,
            BufWriter::with_capacity(64 * 1024, f),
        ))
    }

    /// A trace compared with `recorded` line by line as it is produced
    /// (the replayed lines go to `kept`, up to the first difference). Once
    /// it differs, or runs past the recorded end, it records nothing more
    /// and [`Trace::stop_flag`] is raised; [`TraceSummary::replay`] holds
    /// the verdict.
    pub fn comparing(
        header: &TraceHeader,
        recorded: impl BufRead + Send + 'static,
        kept: Option<Box<dyn Write + Send>>,
    ) -> Trace {
        Trace::with_out(
            header,
            Out::Compare(Box::new(Compare {
                recorded: Box::new(recorded),
                kept,
                expected: Vec::with_capacity(LINE_CAPACITY),
                line: 0,
                diff: None,
                stop: Arc::new(AtomicBool::new(false)),
            })),
        )
    }

    /// Raised when a [`Trace::comparing`] trace has its verdict before the
    /// run ends (a difference): the run should stop. `None` for others.
    pub fn stop_flag(&self) -> Option<Arc<AtomicBool>> {
        match &self.out {
            Out::Compare(c) => Some(Arc::clone(&c.stop)),
            _ => None,
        }
    }

    /// A trace that keeps only its line count and digest (for
    /// `trace_sha256` without a file).
    pub fn digest_only(header: &TraceHeader) -> Trace {
        Trace::with_out(header, Out::DigestOnly)
    }

    /// Lines recorded so far (the header included).
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Bytes recorded so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The bytes of an in-memory trace so far.
    pub fn memory(&self) -> Option<&[u8]> {
        match &self.out {
            Out::Memory(v) => Some(v),
            _ => None,
        }
    }

    /// The digest of the bytes so far (the trace keeps recording).
    #[cfg(feature = "trace-digest")]
    pub fn digest_so_far(&self) -> Digest {
        self.hasher.clone().finalize()
    }

    /// Flush and summarise. Returns the first write error, if any.
    pub fn finish(mut self) -> io::Result<TraceSummary> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let mut replay = None;
        let memory = match core::mem::replace(&mut self.out, Out::DigestOnly) {
            Out::Memory(v) => Some(v),
            Out::Writer(mut w) => {
                w.flush()?;
                None
            }
            Out::DigestOnly => None,
            Out::Compare(c) => {
                replay = Some(c.finish()?);
                None
            }
        };
        Ok(TraceSummary {
            lines: self.lines,
            bytes: self.bytes,
            #[cfg(feature = "trace-digest")]
            sha256: self.hasher.finalize(),
            memory,
            replay,
        })
    }

    /// Hash and write out the line buffer.
    fn emit(&mut self) {
        self.hasher.update(&self.line);
        self.lines += 1;
        self.bytes += self.line.len() as u64;
        match &mut self.out {
            Out::Memory(v) => v.extend_from_slice(&self.line),
            Out::Writer(w) => {
                if self.error.is_none() {
                    if let Err(e) = w.write_all(&self.line) {
                        self.error = Some(e);
                    }
                }
            }
            Out::DigestOnly => {}
            Out::Compare(c) => {
                if self.error.is_none() {
                    if let Err(e) = c.line(&self.line) {
                        // Ordering: Relaxed, as in `Compare::differs`.
                        c.stop.store(true, Ordering::Relaxed);
                        self.error = Some(e);
                    }
                }
            }
        }
    }
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
        self.enabled
    }

    fn record(&mut self, now: Nanos, actor: &str, event: TraceEvent<'_>) {
        if !self.enabled {
            return;
        }
        self.line.clear();
        let mut w = Escaping(&mut self.line);
        // Writing into a Vec cannot fail; a `Display` impl that errors leaves
        // a truncated (but still deterministic) line.
        let _ = fmt::write(
            &mut w,
            format_args!("t={now} {actor} {} {}", event.kind, event.text),
        );
        self.line.push(b'\n');
        self.emit();
    }
}

/// The outcome of comparing two traces line by line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceDiff {
    /// Byte-identical.
    Identical {
        /// Number of lines in each.
        lines: u64,
    },
    /// They differ first at `line` (1-based; line 1 is the header).
    Differs {
        /// The first differing line number.
        line: u64,
        /// That line in the first (recorded) trace; `None` past its end.
        expected: Option<String>,
        /// That line in the second (replayed) trace; `None` past its end.
        actual: Option<String>,
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

    /// SHA-256 of `bytes`, straight from the crate (the trace hashes in
    /// pieces).
    #[cfg(feature = "trace-digest")]
    fn sha256(bytes: &[u8]) -> Digest {
        sha2::Sha256::digest(bytes).into()
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

    #[test]
    fn bad_headers_are_typed_errors() {
        assert!(matches!(
            TraceHeader::parse("hello"),
            Err(TraceError::NotATrace(_))
        ));
        assert!(matches!(
            TraceHeader::parse("xunds-trace v2 seed=1 config="),
            Err(TraceError::UnsupportedVersion(_))
        ));
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
        assert_eq!(s.sha256, sha256(text.as_bytes()));
    }

    #[test]
    #[cfg(feature = "trace-digest")]
    fn every_output_has_the_same_digest() {
        let h = TraceHeader::new(1, "a=b");
        let feed = |t: &mut Trace| {
            for i in 0..100u64 {
                t.record(Nanos(i * 10), "a", ev("msg", &i));
            }
        };
        let mut m = Trace::in_memory(&h, 0);
        let mut d = Trace::digest_only(&h);
        let mut w = Trace::to_writer(&h, Vec::<u8>::new());
        feed(&mut m);
        feed(&mut d);
        feed(&mut w);
        assert_eq!(m.digest_so_far(), d.digest_so_far());
        let (m, d, w) = (
            m.finish().unwrap(),
            d.finish().unwrap(),
            w.finish().unwrap(),
        );
        assert_eq!(m.sha256, d.sha256);
        assert_eq!(m.sha256, w.sha256);
        assert_eq!((m.lines, d.lines, w.lines), (101, 101, 101));
        assert_eq!(d.memory, None);
        assert_eq!(m.sha256_hex().len(), 64);
    }

    #[test]
    fn disabled_records_nothing() {
        let mut t = Trace::disabled();
        assert!(!t.enabled());
        t.record(Nanos(1), "a", ev("msg", &"x"));
        let s = t.finish().unwrap();
        assert_eq!((s.lines, s.bytes), (0, 0));
        #[cfg(feature = "trace-digest")]
        assert_eq!(s.sha256, sha256(b""));
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
