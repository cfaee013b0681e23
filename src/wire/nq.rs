//! `nq_entry`: our 16-byte notification-queue record (docs/abi.md §1.13
//! "Notification queues": the public driver fixes only the ring, so the entry
//! format is **ours**; every field below is marked `[ours]` in the layout).
//!
//! The simulated device writes one entry per engine that ran into that
//! engine's NQ ring when a request finishes; the worker harvests them.
//!
//! | field | meaning |
//! |---|---|
//! | `exec_id` u32 | the request this record belongs to: the per-core request number staging assigned (1, 2, ...; wraps) |
//! | `engine` u8 | 0 PE, 1 ACT, 2 POOL, 3 DVE, 4 SP (docs/abi.md §1.5 engine order) |
//! | `kind` u8 | 1 DONE, 2 ERROR (0 is never written: a zeroed slot is not a record) |
//! | `class` u8 | ERROR: the [`ErrorClass`]; DONE: 0 |
//! | `flags` u8 | bit 0 phase; bits 3:1 [`Source`] (who raised it); bits 7:4 reserved, zero |
//! | `start_cycle` u32 | device timestamp (virtual cycles, low 32 bits) when the engine started |
//! | `end_cycle` u32 | device timestamp (virtual cycles, low 32 bits) when it finished |
//!
//! The phase bit lives in the second 32-bit word (with the engine, kind and
//! class): the writer stores the other three words first and
//! this word last with release ordering, and the reader loads it first with
//! acquire ordering (`device::nq`). Timestamps wrap after 2^32 cycles; a
//! latency is `end_cycle.wrapping_sub(start_cycle)`.
//!
//! Ring ids for reference (docs/abi.md §1.13): queue id = type * 16 + engine, with
//! [`NqType`]; our per-engine completion rings are NOTIFY queues.

use super::device_request::Engine;
#[cfg(feature = "std")]
use super::layout::annotated_dump;
use super::{read, write};

wire_block! {
    /// Layout (ours, docs/abi.md §1.13: the NQ entry format is not public).
    pub LAYOUT: "nq_entry", SIZE = 16, field {
        ours EXEC_ID "exec_id" = 0, 4;
        ours ENGINE "engine" = 4, 1;
        ours KIND "kind" = 5, 1;
        ours CLASS "class" = 6, 1;
        ours FLAGS "flags" = 7, 1;
        ours START_CYCLE "start_cycle" = 8, 4;
        ours END_CYCLE "end_cycle" = 12, 4;
    }
}

/// The 32-bit word that carries the phase bit (`engine`..`flags`): published last.
pub const PHASE_WORD: usize = field::ENGINE;
const _: () = assert!(PHASE_WORD % 4 == 0 && field::FLAGS < PHASE_WORD + 4);

/// The phase bit inside the phase word (flags bit 0).
pub const PHASE_WORD_BIT: u32 = 1 << ((field::FLAGS - PHASE_WORD) * 8);

/// Number of engines ([`Engine`]).
pub const ENGINES: u8 = Engine::ALL.len() as u8;
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

wire_enum! {
    /// The NQ type of a queue id (docs/abi.md §1.13: queue id = type * 16 + engine).
    pub enum NqType(u8) {
        /// Trace records.
        Trace = 0 => "TRACE",
        /// Our per-engine completion rings.
        Notify = 1 => "NOTIFY",
        /// Events.
        Event = 2 => "EVENT",
        /// Errors.
        Error = 3 => "ERROR",
        /// DMA trace records.
        TraceDma = 4 => "TRACE_DMA",
        /// Throttling.
        Throttle = 5 => "THROTTLE",
    }
}

impl NqType {
    /// The driver's queue id for this type and `engine` (a type's 16 ids:
    /// `None` for an engine past 15, whose id would be another type's).
    pub const fn queue_id(self, engine: u8) -> Option<u8> {
        if engine < 16 {
            Some(self as u8 * 16 + engine)
        } else {
            None
        }
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

wire_enum! {
    /// Who raised the record (flags bits 3:1).
    pub enum Source(u8) {
        /// The engine itself (a done record, or an error its block raised).
        Engine = 0 => "engine",
        /// The DMA engine: a corrupt descriptor aborted the request (the
        /// worker maps this to `EXEC_HW_ERR_DMA_ABORT`).
        Dma = 1 => "dma",
        /// The sequencer: the request in DMEM was unusable.
        Sequencer = 2 => "sequencer",
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

error_enum! {
    /// Why an NQ entry could not be encoded or decoded.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum NqError {
        /// Fewer than 16 bytes.
        Truncated {
            /// Bytes given.
            got: usize,
        } => "nq_entry: need 16 bytes, got {got}",
        /// `engine` not in `0..5`.
        BadEngine(u8) => "nq_entry.engine: {0} is not an engine (0..5)",
        /// `kind` not DONE (1) or ERROR (2); 0 is a never-written slot.
        BadKind(u8) => "nq_entry.kind: {0} is neither DONE (1) nor ERROR (2)",
        /// `class` is not an [`ErrorClass`] (ERROR), or non-zero (DONE).
        BadClass {
            /// The record's kind byte.
            kind: u8,
            /// The class byte.
            class: u8,
        } => "nq_entry.class: {class} is invalid for kind {kind}",
        /// The source bits name no [`Source`].
        BadSource(u8) => "nq_entry.flags: source {0} is not defined",
        /// Reserved flag bits set.
        ReservedFlags(u8) => "nq_entry.flags: reserved bits {0:#04x} set",
    }
}

impl NqEntry {
    /// Encode to 16 bytes; refuses an engine index outside `0..5`.
    #[inline]
    pub fn encode(&self) -> Result<[u8; SIZE], NqError> {
        if self.engine >= ENGINES {
            return Err(NqError::BadEngine(self.engine));
        }
        let (kind, class) = match self.kind {
            Kind::Done => (KIND_DONE, 0),
            Kind::Error(c) => (KIND_ERROR, c as u8),
        };
        let mut b = [0u8; SIZE];
        write::<u32>(&mut b, field::EXEC_ID, self.exec_id);
        b[field::ENGINE] = self.engine;
        b[field::KIND] = kind;
        b[field::CLASS] = class;
        b[field::FLAGS] = u8::from(self.phase) | ((self.source as u8) << SOURCE_SHIFT);
        write::<u32>(&mut b, field::START_CYCLE, self.start_cycle);
        write::<u32>(&mut b, field::END_CYCLE, self.end_cycle);
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
        let kind = match (bytes[field::KIND], ErrorClass::from_u8(class)) {
            (KIND_DONE, _) if class == 0 => Kind::Done,
            (KIND_ERROR, Some(c)) => Kind::Error(c),
            (kind @ (KIND_DONE | KIND_ERROR), _) => return Err(NqError::BadClass { kind, class }),
            (k, _) => return Err(NqError::BadKind(k)),
        };
        Ok(NqEntry {
            exec_id: read::<u32>(bytes, field::EXEC_ID),
            engine,
            kind,
            source,
            phase: flags & FLAG_PHASE != 0,
            start_cycle: read::<u32>(bytes, field::START_CYCLE),
            end_cycle: read::<u32>(bytes, field::END_CYCLE),
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

/// The name of engine index `engine` ([`Engine`]), `?` past the last.
pub fn engine_name(engine: u8) -> &'static str {
    Engine::from_u8(engine).map_or("?", Engine::name)
}

/// Annotated dump of `bytes` as an `nq_entry`: the field-by-field hex dump,
/// then the decoded record or the decoder's refusal. Never panics.
#[cfg(feature = "std")]
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
                engine_name(e.engine),
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

wire_enum! {
    /// The error class a device engine reports, by its lower-case name (as
    /// fault specs spell it). The numbering is order-locked to the NDS `ERR_*`
    /// counters: counter index = `ERR_GENERIC` (7) + class (docs/abi.md §2.4
    /// GOTCHA; docs/abi.md §2.4 NC counters 7..12).
    pub enum ErrorClass(u8) {
        /// NC counter 7, `ERR_GENERIC`.
        Generic = 0 => "generic",
        /// NC counter 8, `ERR_NUMERICAL`.
        Numerical = 1 => "numerical",
        /// NC counter 9, `ERR_MODEL`.
        Model = 2 => "model",
        /// NC counter 10, `ERR_TRANSIENT`.
        Transient = 3 => "transient",
        /// NC counter 11, `ERR_HW`.
        Hw = 4 => "hw",
        /// NC counter 12, `ERR_RT`.
        Runtime = 5 => "runtime",
    }
}
