//! `nq_entry`: our 16-byte notification-queue record (docs/abi.md §1.13
//! "Notification queues": the public driver fixes only the ring, so the entry
//! format is **ours**; every field below is marked `[ours]` in the layout).
//!
//! The simulated device writes one entry per engine that ran into that
//! engine's NQ ring when a request finishes; the worker harvests them.
//!
//! | offset | field | meaning |
//! |---|---|---|
//! | +0x00 | `exec_id` u32 | the request this record belongs to: the per-core request number staging assigned (1, 2, ...; wraps) |
//! | +0x04 | `engine` u8 | 0 PE, 1 ACT, 2 POOL, 3 DVE, 4 SP (docs/abi.md §1.5 engine order) |
//! | +0x05 | `kind` u8 | 1 DONE, 2 ERROR (0 is never written: a zeroed slot is not a record) |
//! | +0x06 | `class` u8 | ERROR: the [`ErrorClass`]; DONE: 0 |
//! | +0x07 | `flags` u8 | bit 0 phase; bits 3:1 [`Source`] (who raised it); bits 7:4 reserved, zero |
//! | +0x08 | `start_cycle` u32 | device timestamp (virtual cycles, low 32 bits) when the engine started |
//! | +0x0C | `end_cycle` u32 | device timestamp (virtual cycles, low 32 bits) when it finished |
//!
//! The phase bit lives in the second 32-bit word (+0x04..+0x08, with the
//! engine, kind and class): the writer stores the other three words first and
//! this word last with release ordering, and the reader loads it first with
//! acquire ordering (`device::nq`). Timestamps wrap after 2^32 cycles; a
//! latency is `end_cycle.wrapping_sub(start_cycle)`.
//!
//! Ring ids for reference (docs/abi.md §1.13): queue id = type * 16 + engine, with
//! [`NqType`]; our per-engine completion rings are NOTIFY queues.

use core::fmt;

use super::layout::{annotated_dump, Block, Field};
use super::{le, WireError};

/// `sizeof(nq_entry)`.
pub const SIZE: usize = 16;

/// Layout (ours, docs/abi.md §1.13: the NQ entry format is not public).
pub const LAYOUT: Block = Block {
    name: "nq_entry",
    size: SIZE,
    fields: &[
        Field::ours("exec_id", 0, 4),
        Field::ours("engine", 4, 1),
        Field::ours("kind", 5, 1),
        Field::ours("class", 6, 1),
        Field::ours("flags", 7, 1),
        Field::ours("start_cycle", 8, 4),
        Field::ours("end_cycle", 12, 4),
    ],
};

const _: () = assert!(LAYOUT.is_well_formed() && LAYOUT.fields[6].end() == SIZE);

/// Byte offsets of the fields.
pub mod field {
    /// `exec_id`.
    pub const EXEC_ID: usize = 0;
    /// `engine`.
    pub const ENGINE: usize = 4;
    /// `kind`.
    pub const KIND: usize = 5;
    /// `class`.
    pub const CLASS: usize = 6;
    /// `flags`.
    pub const FLAGS: usize = 7;
    /// `start_cycle`.
    pub const START_CYCLE: usize = 8;
    /// `end_cycle`.
    pub const END_CYCLE: usize = 12;
    /// The 32-bit word that carries the phase bit: published last.
    pub const PHASE_WORD: usize = 4;
}

const _: () = assert!(field::EXEC_ID == LAYOUT.fields[0].offset);
const _: () = assert!(field::ENGINE == LAYOUT.fields[1].offset);
const _: () = assert!(field::KIND == LAYOUT.fields[2].offset);
const _: () = assert!(field::CLASS == LAYOUT.fields[3].offset);
const _: () = assert!(field::FLAGS == LAYOUT.fields[4].offset);
const _: () = assert!(field::START_CYCLE == LAYOUT.fields[5].offset);
const _: () = assert!(field::END_CYCLE == LAYOUT.fields[6].offset);
const _: () = assert!(field::PHASE_WORD <= field::FLAGS && field::FLAGS < field::PHASE_WORD + 4);

/// Index of the phase word among the entry's four little-endian u32 words.
pub const PHASE_WORD_INDEX: usize = field::PHASE_WORD / 4;
/// The phase bit inside the phase word (flags bit 0, byte +0x07).
pub const PHASE_WORD_BIT: u32 = 1 << ((field::FLAGS - field::PHASE_WORD) * 8);

/// Number of engines (PE, ACT, POOL, DVE, SP).
pub const ENGINES: u8 = 5;
/// `kind` value of a DONE record.
pub const KIND_DONE: u8 = 1;
/// `kind` value of an ERROR record.
pub const KIND_ERROR: u8 = 2;
/// `flags` bit 0.
pub const FLAG_PHASE: u8 = 1;
/// `flags` bits 3:1: the source.
pub const SOURCE_SHIFT: u8 = 1;
/// Mask of the source after shifting.
pub const SOURCE_MASK: u8 = 0b111;
/// `flags` bits that must be zero.
pub const FLAGS_RESERVED: u8 = 0xF0;

const _: () = assert!(PHASE_WORD_BIT == 1 << 24);

/// The NQ type of a queue id (docs/abi.md §1.13: queue id = type * 16 + engine).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum NqType {
    /// TRACE (0).
    Trace = 0,
    /// NOTIFY (1): our per-engine completion rings.
    Notify = 1,
    /// EVENT (2).
    Event = 2,
    /// ERROR (3).
    Error = 3,
    /// TRACE_DMA (4).
    TraceDma = 4,
    /// THROTTLE (5).
    Throttle = 5,
}

impl NqType {
    /// The driver's queue id for this type and `engine`.
    pub const fn queue_id(self, engine: u8) -> u8 {
        self as u8 * 16 + engine
    }
}

/// What a record reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The engine finished its block.
    Done,
    /// The engine (or the DMA engine / sequencer, see [`Source`]) failed.
    Error(ErrorClass),
}

/// Who raised the record (flags bits 3:1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Source {
    /// The engine itself (a done record, or an error its block raised).
    Engine = 0,
    /// The DMA engine: a corrupt descriptor aborted the request (the worker
    /// maps this to `EXEC_HW_ERR_DMA_ABORT`).
    Dma = 1,
    /// The sequencer: the request in DMEM was unusable.
    Sequencer = 2,
}

impl Source {
    /// Decode the 3-bit source field.
    pub const fn from_u8(v: u8) -> Option<Source> {
        match v {
            0 => Some(Source::Engine),
            1 => Some(Source::Dma),
            2 => Some(Source::Sequencer),
            _ => None,
        }
    }

    /// Lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            Source::Engine => "engine",
            Source::Dma => "dma",
            Source::Sequencer => "sequencer",
        }
    }
}

/// One decoded NQ entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NqEntry {
    /// The per-core request number this record belongs to.
    pub exec_id: u32,
    /// Engine index, `0..5` (PE, ACT, POOL, DVE, SP).
    pub engine: u8,
    /// Done, or error with its class.
    pub kind: Kind,
    /// Who raised it.
    pub source: Source,
    /// The phase bit the writer stamped for this lap of the ring.
    pub phase: bool,
    /// Virtual device cycle (low 32 bits) when the engine started.
    pub start_cycle: u32,
    /// Virtual device cycle (low 32 bits) when the engine finished.
    pub end_cycle: u32,
}

/// Why an NQ entry could not be encoded or decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NqError {
    /// Fewer than 16 bytes.
    Truncated {
        /// Bytes given.
        got: usize,
    },
    /// `engine` not in `0..5`.
    BadEngine(u8),
    /// `kind` not DONE (1) or ERROR (2); 0 is a never-written slot.
    BadKind(u8),
    /// `class` is not an [`ErrorClass`] (ERROR), or non-zero (DONE).
    BadClass {
        /// The record's kind byte.
        kind: u8,
        /// The class byte.
        class: u8,
    },
    /// The source bits name no [`Source`].
    BadSource(u8),
    /// Reserved flag bits set.
    ReservedFlags(u8),
}

impl fmt::Display for NqError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NqError::Truncated { got } => write!(f, "nq_entry: need 16 bytes, got {got}"),
            NqError::BadEngine(e) => write!(f, "nq_entry.engine: {e} is not an engine (0..5)"),
            NqError::BadKind(k) => {
                write!(f, "nq_entry.kind: {k} is neither DONE (1) nor ERROR (2)")
            }
            NqError::BadClass { kind, class } => {
                write!(f, "nq_entry.class: {class} is invalid for kind {kind}")
            }
            NqError::BadSource(s) => write!(f, "nq_entry.flags: source {s} is not defined"),
            NqError::ReservedFlags(b) => write!(f, "nq_entry.flags: reserved bits {b:#04x} set"),
        }
    }
}

impl std::error::Error for NqError {}

impl From<NqError> for WireError {
    fn from(e: NqError) -> Self {
        let (field, value) = match e {
            NqError::Truncated { got } => {
                return WireError::Truncated {
                    block: "nq_entry",
                    need: SIZE,
                    got,
                }
            }
            NqError::BadEngine(v) => ("engine", v),
            NqError::BadKind(v) => ("kind", v),
            NqError::BadClass { class, .. } => ("class", class),
            NqError::BadSource(v) => ("flags", v),
            NqError::ReservedFlags(v) => ("flags", v),
        };
        WireError::InvalidField {
            block: "nq_entry",
            field,
            value: u64::from(value),
        }
    }
}

impl NqEntry {
    /// Encode to 16 bytes; refuses an engine index outside `0..5`.
    pub fn encode(&self) -> Result<[u8; SIZE], NqError> {
        if self.engine >= ENGINES {
            return Err(NqError::BadEngine(self.engine));
        }
        let (kind, class) = match self.kind {
            Kind::Done => (KIND_DONE, 0),
            Kind::Error(c) => (KIND_ERROR, c as u8),
        };
        let mut b = [0u8; SIZE];
        le::put_u32(&mut b, field::EXEC_ID, self.exec_id);
        b[field::ENGINE] = self.engine;
        b[field::KIND] = kind;
        b[field::CLASS] = class;
        b[field::FLAGS] = u8::from(self.phase) | ((self.source as u8) << SOURCE_SHIFT);
        le::put_u32(&mut b, field::START_CYCLE, self.start_cycle);
        le::put_u32(&mut b, field::END_CYCLE, self.end_cycle);
        Ok(b)
    }

    /// Decode the first 16 bytes of `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<NqEntry, NqError> {
        if bytes.len() < SIZE {
            return Err(NqError::Truncated { got: bytes.len() });
        }
        let engine = bytes[field::ENGINE];
        if engine >= ENGINES {
            return Err(NqError::BadEngine(engine));
        }
        let flags = bytes[field::FLAGS];
        if flags & FLAGS_RESERVED != 0 {
            return Err(NqError::ReservedFlags(flags & FLAGS_RESERVED));
        }
        let src = (flags >> SOURCE_SHIFT) & SOURCE_MASK;
        let source = Source::from_u8(src).ok_or(NqError::BadSource(src))?;
        let class = bytes[field::CLASS];
        let kind = match bytes[field::KIND] {
            KIND_DONE if class == 0 => Kind::Done,
            KIND_ERROR => match ErrorClass::from_u8(class) {
                Some(c) => Kind::Error(c),
                None => {
                    return Err(NqError::BadClass {
                        kind: KIND_ERROR,
                        class,
                    })
                }
            },
            KIND_DONE => {
                return Err(NqError::BadClass {
                    kind: KIND_DONE,
                    class,
                })
            }
            k => return Err(NqError::BadKind(k)),
        };
        Ok(NqEntry {
            exec_id: le::u32_at(bytes, field::EXEC_ID),
            engine,
            kind,
            source,
            phase: flags & FLAG_PHASE != 0,
            start_cycle: le::u32_at(bytes, field::START_CYCLE),
            end_cycle: le::u32_at(bytes, field::END_CYCLE),
        })
    }

    /// The phase bit of an entry given as its four little-endian words,
    /// without decoding the rest (what the reader checks first).
    pub const fn phase_of_word(phase_word: u32) -> bool {
        phase_word & PHASE_WORD_BIT != 0
    }

    /// Engine busy time in cycles (`end - start`, wrapping).
    pub const fn cycles(&self) -> u32 {
        self.end_cycle.wrapping_sub(self.start_cycle)
    }
}

/// Engine names in record order (docs/abi.md §1.5: PE, ACT, POOL, DVE, SP).
pub const ENGINE_NAMES: [&str; 5] = ["PE", "ACT", "POOL", "DVE", "SP"];

/// Annotated dump of `bytes` as an `nq_entry`: the field-by-field hex dump,
/// then the decoded record or the decoder's refusal. Never panics.
pub fn dump(bytes: &[u8]) -> String {
    use core::fmt::Write as _;
    let mut out = annotated_dump(&LAYOUT, bytes);
    match NqEntry::decode(bytes) {
        Ok(e) => {
            let kind = match e.kind {
                Kind::Done => "DONE".to_string(),
                Kind::Error(c) => format!("ERROR class={}", c.name()),
            };
            let _ = writeln!(
                out,
                "  => exec_id={} engine={} {} source={} phase={} cycles {}..{} ({} cycles)",
                e.exec_id,
                ENGINE_NAMES[usize::from(e.engine)],
                kind,
                e.source.name(),
                u8::from(e.phase),
                e.start_cycle,
                e.end_cycle,
                e.cycles()
            );
        }
        Err(err) => {
            let _ = writeln!(out, "  => refused: {err}");
        }
    }
    out
}

/// The error class a device engine reports. The numbering is order-locked to
/// the NDS `ERR_*` counters: counter index = `ERR_GENERIC` (7) + class
/// (docs/abi.md §2.4 NC counters 7..12).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ErrorClass {
    /// `ERR_GENERIC` (NC counter 7).
    Generic = 0,
    /// `ERR_NUMERICAL` (NC counter 8).
    Numerical = 1,
    /// `ERR_MODEL` (NC counter 9).
    Model = 2,
    /// `ERR_TRANSIENT` (NC counter 10).
    Transient = 3,
    /// `ERR_HW` (NC counter 11).
    Hw = 4,
    /// `ERR_RT` (NC counter 12).
    Runtime = 5,
}

impl ErrorClass {
    /// Every class, in code order.
    pub const ALL: [ErrorClass; 6] = [
        ErrorClass::Generic,
        ErrorClass::Numerical,
        ErrorClass::Model,
        ErrorClass::Transient,
        ErrorClass::Hw,
        ErrorClass::Runtime,
    ];

    /// Decode a raw class byte.
    pub const fn from_u8(v: u8) -> Option<ErrorClass> {
        match v {
            0 => Some(ErrorClass::Generic),
            1 => Some(ErrorClass::Numerical),
            2 => Some(ErrorClass::Model),
            3 => Some(ErrorClass::Transient),
            4 => Some(ErrorClass::Hw),
            5 => Some(ErrorClass::Runtime),
            _ => None,
        }
    }

    /// Lower-case name (`generic`, `numerical`, ...), as fault specs spell it.
    pub const fn name(self) -> &'static str {
        match self {
            ErrorClass::Generic => "generic",
            ErrorClass::Numerical => "numerical",
            ErrorClass::Model => "model",
            ErrorClass::Transient => "transient",
            ErrorClass::Hw => "hw",
            ErrorClass::Runtime => "runtime",
        }
    }
}
