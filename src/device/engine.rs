//! The five engines (PE, ACT, POOL, DVE, SP) interpreting [`super::isa`]
//! instruction blocks on device memory, in virtual cycles.
//!
//! [`Executor::run`] runs one execution: engine `i` starts at its block
//! address (0 = idle) at `start_cycle`. The scheduler is deterministic: it
//! always issues the next instruction of the ready engine with the smallest
//! clock (ties: lowest engine index), so signals are processed in virtual
//! time order and the same memory + the same start cycle give the same
//! report, cycle for cycle. Every way a block can go wrong (memory fault,
//! undecodable word, deadlocked `WAIT`, `RAISE`, a non-finite result under
//! `.chk`, an exhausted budget) stops that engine with a typed
//! [`EngineFault`] and an [`ErrorClass`]; nothing panics and nothing loops:
//! blocks are straight-line (no branch instruction) and every request has
//! step, cycle and work budgets ([`Limits`]).
//!
//! A block is decoded once, not at every issue: the executor keeps each
//! block it has run, decoded up to its `END` (or `RAISE`), with the words it
//! was decoded from. Each execution reads those words again in one range
//! and compares them, so a block rewritten since (a model loaded at the same
//! address, a host or DMA write) is decoded again; a block an engine writes
//! into during the execution goes back to word-by-word fetch from the
//! instruction after the write. Past the decoded prefix (an undecodable or
//! unreadable word, a block longer than 4,096 instructions) each
//! instruction is fetched and decoded at issue, so every fault is the one
//! fetch-at-issue gives, at the same instruction.
//!
//! Device memory is reached only through [`DeviceMemory`] (the HAL
//! implements it over mapped device DRAM; the device tests bring a
//! heap-backed one).
#![forbid(unsafe_code)]

use core::fmt;

use super::isa::{self, ActFn, BinOp, Insn, Operand, INSN_BYTES, INSN_WORDS, NUM_SEMAPHORES};
use crate::fsm;
pub use crate::wire::device_request::{Engine, NUM_ENGINES};
use crate::wire::nq::ErrorClass;

/// Word access to device memory by physical address. Implemented by the HAL
/// over mapped device DRAM (and by the tests' heap-backed memory). `pa` is
/// 4-byte aligned when the engines call it.
pub trait DeviceMemory {
    /// Read `out.len()` consecutive words from `pa`. On a fault, which
    /// words of `out` were filled is unspecified, and the fault names the
    /// first refused word.
    fn read_u32s(&self, pa: u64, out: &mut [u32]) -> Result<(), MemFault>;
    /// Write `vals` as consecutive words from `pa`: the words before the
    /// first refused one are written, none after.
    fn write_u32s(&self, pa: u64, vals: &[u32]) -> Result<(), MemFault>;
    /// Read the little-endian word at `pa`.
    fn read_u32(&self, pa: u64) -> Result<u32, MemFault> {
        let mut w = [0];
        self.read_u32s(pa, &mut w).map(|()| w[0])
    }
    /// Write the little-endian word `v` at `pa`.
    fn write_u32(&self, pa: u64, v: u32) -> Result<(), MemFault> {
        self.write_u32s(pa, &[v])
    }
    /// Fail as [`read_u32`](Self::read_u32) at `pa`, then at `last`, would,
    /// without the reads where the memory can tell (an operand's first and
    /// last words are probed before any work). The default reads.
    fn probe(&self, pa: u64, last: u64) -> Result<(), MemFault> {
        self.read_u32(pa)?;
        self.read_u32(last).map(drop)
    }
}

/// An access outside device memory (or misaligned, for memories that refuse
/// that).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemFault {
    /// The refused physical address.
    pub pa: u64,
}

impl fmt::Display for MemFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "memory fault at pa {:#x}", self.pa)
    }
}

impl std::error::Error for MemFault {}

/// Write f32 values at `pa` (4-byte aligned) as one run of words.
pub fn write_f32s(mem: &dyn DeviceMemory, pa: u64, vals: &[f32]) -> Result<(), MemFault> {
    let words: Vec<u32> = vals.iter().map(|v| v.to_bits()).collect();
    mem.write_u32s(aligned(pa)?, &words)
}

/// Read `n` f32 values at `pa` (4-byte aligned) as one run of words.
pub fn read_f32s(mem: &dyn DeviceMemory, pa: u64, n: usize) -> Result<Vec<f32>, MemFault> {
    let mut words = vec![0; n];
    mem.read_u32s(aligned(pa)?, &mut words)?;
    Ok(words.into_iter().map(f32::from_bits).collect())
}

fn aligned(pa: u64) -> Result<u64, MemFault> {
    match pa % 4 {
        0 => Ok(pa),
        _ => Err(MemFault { pa }),
    }
}

/// Why an engine stopped with an error: what happened, at the instruction
/// at `pc` (the one that faulted, or the one not issued).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineFault {
    /// Instruction address.
    pub pc: u64,
    /// What happened.
    pub kind: FaultKind,
}

error_enum! {
    /// What stopped an engine; each names the class it reports
    /// ([`EngineFault::class`]).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum FaultKind {
        /// The words at `pc` are not an instruction. Class `Model`.
        Decode(isa::DecodeError) => "{0}",
        /// Fetch or operand access outside device memory. Class `Hw`.
        Memory(MemFault) => "{0}",
        /// A block or operand address not 4-byte aligned. Class `Hw`.
        Misaligned {
            /// The misaligned address.
            pa: u64,
        } => "misaligned address {pa:#x}",
        /// `base + offset` (or the end of the operand) overflows 64 bits.
        /// Class `Hw`.
        AddressOverflow => "address overflow",
        /// A `.chk` instruction produced NaN or ±Inf (nothing was written).
        /// Class `Numerical`.
        NonFinite {
            /// Index of the first non-finite result.
            index: u32,
        } => "non-finite result at element {index}",
        /// `RAISE`. Class: the instruction's.
        Raised(ErrorClass) => "RAISE {0}",
        /// A `WAIT` no engine can ever satisfy. Class `Runtime`.
        Deadlock {
            /// The semaphore.
            sem: u8,
            /// The amount it waited for.
            value: u32,
            /// The semaphore's value when the execution gave up.
            have: u32,
        } => "deadlock: WAIT s{sem} for {value}, have {have}",
        /// `SIGNAL` would overflow the semaphore's `u32`. Class `Runtime`.
        SemaphoreOverflow {
            /// The semaphore.
            sem: u8,
        } => "semaphore s{sem} overflow",
        /// The request issued [`Limits::max_steps`] instructions. Class `Runtime`.
        StepBudget => "step budget exhausted",
        /// The instruction would run the clock past [`Limits::max_cycles`]
        /// after the start. Class `Runtime`.
        CycleBudget => "cycle budget exhausted",
        /// The instruction would take the request past [`Limits::max_work`].
        /// Class `Runtime`.
        WorkBudget => "work budget exhausted",
        /// The engine state machine refused a transition (a bug; kept as an
        /// error value instead of a panic). Class `Runtime`.
        Internal => "internal state-machine error",
    }
}

impl FaultKind {
    /// This fault at the instruction at `pc`.
    const fn at(self, pc: u64) -> EngineFault {
        EngineFault { pc, kind: self }
    }
}

impl EngineFault {
    /// The error class the engine reports (docs/design.md "Instruction
    /// format", error classes).
    pub const fn class(&self) -> ErrorClass {
        match self.kind {
            FaultKind::Decode(_) => ErrorClass::Model,
            FaultKind::Memory(_) | FaultKind::Misaligned { .. } | FaultKind::AddressOverflow => {
                ErrorClass::Hw
            }
            FaultKind::NonFinite { .. } => ErrorClass::Numerical,
            FaultKind::Raised(class) => class,
            _ => ErrorClass::Runtime,
        }
    }
}

impl fmt::Display for EngineFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let class = self.class().name();
        write!(f, "{class} error at pc {:#x}: {}", self.pc, self.kind)
    }
}

impl std::error::Error for EngineFault {}

/// One engine's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineReport {
    /// How it ended: `Idle` (no block), `Done` (reached `END`) or
    /// `Faulted` (see `fault`).
    pub state: EngineState,
    /// The cycle it started (the request's start cycle).
    pub start_cycle: u64,
    /// The cycle it stopped (its last instruction's completion; equal to
    /// `start_cycle` when idle).
    pub end_cycle: u64,
    /// Instructions issued.
    pub steps: u64,
    /// The fault, when `state` is `Faulted`.
    pub fault: Option<EngineFault>,
}

/// One execution's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExecReport {
    /// Per engine, indexed by [`Engine::index`] (PE, ACT, POOL, DVE, SP).
    pub engines: [EngineReport; NUM_ENGINES],
    /// MACs of every completed `MATMUL` (the NDS `MAC_COUNT` increment).
    pub macs: u64,
    /// The latest engine end cycle (the start cycle when all are idle).
    pub end_cycle: u64,
    /// The first engine to fault, in the order faults happened, with its
    /// class: the root cause when one fault starves other engines into a
    /// deadlock.
    pub first_error: Option<(Engine, ErrorClass)>,
}

#[cfg(any(test, feature = "testkit"))]
impl ExecReport {
    /// One engine's report.
    pub fn engine(&self, engine: Engine) -> &EngineReport {
        &self.engines[engine.index()]
    }

    /// The root-cause error class, if any engine failed.
    pub fn error(&self) -> Option<ErrorClass> {
        self.first_error.map(|(_, c)| c)
    }

    /// `true` when no engine failed.
    pub fn is_ok(&self) -> bool {
        self.first_error.is_none()
    }

    /// Device latency: `end_cycle - start_cycle`.
    pub fn cycles(&self) -> u64 {
        self.end_cycle - self.engines[0].start_cycle
    }
}

/// Per-request budgets that bound an execution, in virtual time and in the
/// host time the interpreter spends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Instructions issued by all engines together.
    pub max_steps: u64,
    /// Virtual cycles any engine may run past the start cycle.
    pub max_cycles: u64,
    /// Work of all engines together: the sum of the cycle costs of every
    /// instruction except `DELAY` (whose cycles cost the host nothing), so
    /// it bounds the elements and MACs the interpreter computes.
    pub max_work: u64,
}

impl Limits {
    /// The defaults: 2^20 instructions, 2^40 cycles, 2^26 work (at worst
    /// about a quarter second of host time).
    pub const DEFAULT: Limits = Limits {
        max_steps: 1 << 20,
        max_cycles: 1 << 40,
        max_work: 1 << 26,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

crate::fsm::machine! {
    /// The engine state machine: `IDLE -start-> READY`, `READY -block-> BLOCKED
    /// -wake-> READY`, `READY -finish-> DONE`, `READY|BLOCKED -fault-> FAULTED`.
    pub struct EngineFsm = "engine";
    /// An engine's lifecycle within one execution (a `fsm::machine!` table,
    /// so an illegal step is an error value and every step is traced).
    pub enum EngineState {
        /// No block.
        Idle = "IDLE",
        /// Has an instruction to issue.
        Ready = "READY",
        /// Issued a `WAIT` its semaphore cannot satisfy yet.
        Blocked = "BLOCKED",
        /// Reached `END`.
        Done = "DONE",
        /// Stopped by a fault.
        Faulted = "FAULTED",
    }
    /// Events of [`EngineFsm`].
    pub enum EngineEvent {
        /// The request names a block for the engine.
        Start = "start",
        /// A `WAIT` found its semaphore short.
        Block = "block",
        /// A `SIGNAL` satisfied the pending `WAIT`.
        Wake = "wake",
        /// `END`.
        Finish = "finish",
        /// A fault (including a deadlock detected while blocked).
        Fault = "fault",
    }
    rows {
        Idle + Start => Ready,
        Ready + Block => Blocked,
        Blocked + Wake => Ready,
        Ready + Finish => Done,
        Ready + Fault => Faulted,
        Blocked + Fault => Faulted,
    }
}

/// One line of an instruction trace (`Executor::with_trace`, `testkit`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceLine {
    /// The engine.
    pub engine: Engine,
    /// The cycle the event happened (an instruction's issue cycle).
    pub cycle: u64,
    /// Instruction address.
    pub pc: u64,
    /// What happened.
    pub what: TraceWhat,
}

/// What a [`TraceLine`] records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceWhat {
    /// An instruction completed at cycle `end`.
    Done {
        /// The instruction.
        insn: Insn,
        /// Its completion cycle.
        end: u64,
    },
    /// A `WAIT` blocked.
    Blocked {
        /// The `WAIT`.
        insn: Insn,
    },
    /// The engine faulted.
    Fault(EngineFault),
}

impl fmt::Display for TraceLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (cycle, engine, pc) = (self.cycle, self.engine.name(), self.pc);
        write!(f, "{cycle:>8} {engine:<4} {pc:#08x}  ")?;
        match &self.what {
            TraceWhat::Done { insn, end } => write!(f, "{insn}  -> {end}"),
            TraceWhat::Blocked { insn } => write!(f, "{insn}  (blocked)"),
            TraceWhat::Fault(e) => write!(f, "FAULT {e}"),
        }
    }
}

/// Most instructions of one block the executor keeps decoded; past them a
/// block is fetched and decoded at issue.
const MAX_CACHED_INSNS: usize = 4096;
/// Most blocks the executor keeps decoded (all are dropped when a new one
/// would pass it): 64 models of 5 engines in the 32 code variants a core's
/// ring needs, with room.
const MAX_PROGRAMS: usize = 16384;

/// A block decoded once: its instructions from `pa` up to and including
/// the first `END` or `RAISE` (or up to an undecodable or unreadable word,
/// excluded), and the words they were decoded from.
#[derive(Debug, Default)]
struct Program {
    pa: u64,
    words: Vec<u32>,
    insns: Vec<Insn>,
}

impl Program {
    /// Decode the block at `pa`, one instruction read at a time.
    fn decode(mem: &dyn DeviceMemory, pa: u64) -> Program {
        let mut p = Program {
            pa,
            ..Program::default()
        };
        let mut w = [0u32; INSN_WORDS];
        while p.insns.len() < MAX_CACHED_INSNS {
            let at = p.end();
            if at.checked_add(INSN_BYTES as u64).is_none() || mem.read_u32s(at, &mut w).is_err() {
                break;
            }
            let Ok(insn) = Insn::decode(&w) else { break };
            p.words.extend_from_slice(&w);
            p.insns.push(insn);
            if matches!(insn, Insn::End | Insn::Raise(..)) {
                break;
            }
        }
        p
    }

    /// The first byte past the decoded instructions.
    fn end(&self) -> u64 {
        self.pa + 4 * self.words.len() as u64
    }

    /// The decoded instruction at `pc`, if `pc` is inside.
    fn at(&self, pc: u64) -> Option<&Insn> {
        self.insns
            .get((pc.wrapping_sub(self.pa) / INSN_BYTES as u64) as usize)
    }
}

/// The per-engine state of one execution.
#[derive(Clone, Copy, Debug)]
struct Eng<'p> {
    state: EngineState,
    pc: u64,
    cycle: u64,
    steps: u64,
    regs: [u64; isa::NUM_BASES],
    /// The `WAIT` (semaphore, amount) it is blocked on.
    pending: Option<(u8, u32)>,
    fault: Option<EngineFault>,
    /// Its decoded block, while that is still current.
    program: Option<&'p Program>,
}

/// Operand buffers reused across instructions: words as read and as
/// written, the arithmetic done on their bit patterns.
#[derive(Debug, Default)]
struct Buffers {
    a: Vec<u32>,
    b: Vec<u32>,
    out: Vec<u32>,
}

/// Reusable interpreter state: limits, the decoded blocks, scratch buffers
/// and an optional trace. One per sequencer.
#[derive(Debug, Default)]
pub struct Executor {
    limits: Limits,
    /// Sorted by address.
    programs: Vec<Program>,
    buf: Buffers,
    trace: Option<Vec<TraceLine>>,
}

impl Executor {
    /// An executor with `limits`.
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    /// Record an instruction trace (read it with [`Executor::take_trace`]).
    #[cfg(any(test, feature = "testkit"))]
    pub fn with_trace(mut self) -> Self {
        self.trace = Some(Vec::new());
        self
    }

    /// The trace recorded so far (empty without [`Executor::with_trace`]).
    #[cfg(any(test, feature = "testkit"))]
    pub fn take_trace(&mut self) -> Vec<TraceLine> {
        self.trace.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Check the decoded block at `pa` against memory now, and decode it
    /// (again) when it is new or its words changed. A block whose first
    /// instruction does not decode (or `pa` not an aligned block address)
    /// is not kept.
    fn refresh(&mut self, mem: &dyn DeviceMemory, pa: u64) {
        if pa == 0 || pa % 4 != 0 {
            return;
        }
        let found = self.programs.binary_search_by_key(&pa, |p| p.pa);
        if let Ok(k) = found {
            let p = &self.programs[k];
            let now = &mut self.buf.a;
            let now = grow(now, p.words.len() as u64);
            if mem.read_u32s(pa, now).is_ok() && *now == p.words[..] {
                return;
            }
        }
        let p = Program::decode(mem, pa);
        match (found, p.insns.is_empty()) {
            (Ok(k), true) => drop(self.programs.remove(k)),
            (Ok(k), false) => self.programs[k] = p,
            (Err(_), true) => {}
            (Err(k), false) if self.programs.len() < MAX_PROGRAMS => self.programs.insert(k, p),
            (Err(_), false) => self.programs = vec![p],
        }
    }

    /// Run one execution: engine `i` ([`Engine::ALL`] order) starts at
    /// `blocks[i]` (0 = idle) at `start_cycle`.
    pub fn run(
        &mut self,
        mem: &dyn DeviceMemory,
        blocks: [u64; NUM_ENGINES],
        start_cycle: u64,
    ) -> ExecReport {
        // Every block checked (or decoded) first, then looked up: a block
        // decoded for a later engine moves the earlier ones' entries.
        for &pc in &blocks {
            self.refresh(mem, pc);
        }
        let Executor {
            limits,
            programs,
            buf,
            trace,
        } = self;
        let limit_cycle = start_cycle.saturating_add(limits.max_cycles);
        let mut engs = [Eng {
            state: EngineState::Idle,
            pc: 0,
            cycle: start_cycle,
            steps: 0,
            regs: [0; isa::NUM_BASES],
            pending: None,
            fault: None,
            program: None,
        }; NUM_ENGINES];
        // The engines in state READY, one bit each.
        let mut ready = 0u8;
        let programs = &programs[..];
        for (i, (e, &pc)) in engs.iter_mut().zip(&blocks).enumerate() {
            if pc != 0 {
                e.pc = pc;
                let found = programs.binary_search_by_key(&pc, |p| p.pa);
                e.program = found.ok().map(|k| &programs[k]);
                transit(e, EngineEvent::Start);
                ready |= 1 << i;
            }
        }
        let mut sems = [0u32; NUM_SEMAPHORES];
        // The latest completion of a `SIGNAL` on each semaphore; it only
        // ever raises a clock that starts at `start_cycle`, so 0 does for none.
        let mut ready_at = [0u64; NUM_SEMAPHORES];
        let mut macs = 0u64;
        let mut total_steps = 0u64;
        let mut total_work = 0u64;
        let mut first_error = None;
        // The range the last instruction wrote (or meant to), `[lo, hi)`:
        // state of this run only, not of the reusable buffers.
        let mut written = None;
        // An instruction fetched at issue (past its block's decoded part).
        let mut fetched = None;

        // Issue instructions in virtual-time order until no engine is ready:
        // the ready engine with the smallest clock, ties to the lowest index.
        while ready != 0 {
            let mut i = ready.trailing_zeros() as usize;
            if ready & (ready - 1) != 0 {
                let mut first = u64::MAX;
                for (j, e) in engs.iter().enumerate() {
                    if ready >> j & 1 != 0 && e.cycle < first {
                        (i, first) = (j, e.cycle);
                    }
                }
            }
            let e = &mut engs[i];
            let (pc, issue) = (e.pc, e.cycle);
            let insn = if total_steps >= limits.max_steps {
                Err(FaultKind::StepBudget.at(pc))
            } else {
                total_steps += 1;
                e.steps += 1;
                match e.program.and_then(|p| p.at(pc)) {
                    Some(insn) => Ok(insn),
                    None => fetch(mem, pc).map(|insn| &*fetched.insert(insn)),
                }
            };
            let insn = match insn {
                Ok(insn) => insn,
                Err(f) => {
                    fail(e, f, trace, i, &mut first_error);
                    ready &= !(1 << i);
                    continue;
                }
            };
            let cycles = insn.cycles();
            let mut end = issue.saturating_add(cycles);
            let work = if matches!(insn, Insn::Delay(..)) {
                0
            } else {
                cycles
            };
            // The event the instruction ends on (`None`: it completed and
            // the engine goes on).
            let result = if end > limit_cycle {
                Err(FaultKind::CycleBudget.at(pc))
            } else if total_work.saturating_add(work) > limits.max_work {
                Err(FaultKind::WorkBudget.at(pc))
            } else {
                total_work += work;
                match *insn {
                    Insn::Wait(sem, value) => {
                        let s = usize::from(sem);
                        if sems[s] >= value {
                            sems[s] -= value;
                            // The wait completes no earlier than the signal
                            // that made it possible.
                            end = issue.max(ready_at[s]).saturating_add(cycles);
                            Ok(None)
                        } else {
                            e.pending = Some((sem, value));
                            Ok(Some(EngineEvent::Block))
                        }
                    }
                    Insn::Signal(sem, value) => {
                        let s = usize::from(sem);
                        match sems[s].checked_add(value) {
                            Some(v) => {
                                sems[s] = v;
                                ready_at[s] = ready_at[s].max(end);
                                Ok(None)
                            }
                            None => Err(FaultKind::SemaphoreOverflow { sem }.at(pc)),
                        }
                    }
                    Insn::End => Ok(Some(EngineEvent::Finish)),
                    Insn::SetBase(reg, value) => {
                        e.regs[reg.index()] = value;
                        Ok(None)
                    }
                    Insn::Nop | Insn::Delay(..) => Ok(None),
                    _ => exec(mem, buf, &mut written, &e.regs, insn, pc).map(|()| None),
                }
            };
            match result {
                Ok(None) => {
                    macs += insn.macs();
                    e.cycle = end;
                    e.pc = pc.wrapping_add(INSN_BYTES as u64);
                    note(trace, i, issue, pc, || TraceWhat::Done { insn: *insn, end });
                }
                Ok(Some(EngineEvent::Block)) => {
                    transit(e, EngineEvent::Block);
                    ready &= !(1 << i);
                    note(trace, i, issue, pc, || TraceWhat::Blocked { insn: *insn });
                }
                Ok(Some(ev)) => {
                    e.cycle = end;
                    transit(e, ev);
                    ready &= !(1 << i);
                    note(trace, i, issue, pc, || TraceWhat::Done { insn: *insn, end });
                }
                Err(f) => {
                    fail(e, f, trace, i, &mut first_error);
                    ready &= !(1 << i);
                }
            }
            // A block written into is fetched word by word from here on.
            if let Some((lo, hi)) = written.take() {
                for e in &mut engs {
                    if let Some(p) = e.program {
                        if lo < p.end() && p.pa < hi {
                            e.program = None;
                        }
                    }
                }
            }
            // After a SIGNAL on `sem`: complete the pending `WAIT` of every
            // blocked engine it now satisfies, in engine order.
            if let Insn::Signal(sem, ..) = *insn {
                let s = usize::from(sem);
                for (j, e) in engs.iter_mut().enumerate() {
                    let Some((ws, value)) = e.pending else {
                        continue;
                    };
                    if ws != sem || sems[s] < value || e.state != EngineState::Blocked {
                        continue;
                    }
                    sems[s] -= value;
                    e.pending = None;
                    let (pc, issue) = (e.pc, e.cycle);
                    transit(e, EngineEvent::Wake);
                    ready |= 1 << j;
                    let insn = Insn::Wait(ws, value);
                    e.cycle = e.cycle.max(ready_at[s]).saturating_add(insn.cycles());
                    e.pc = e.pc.wrapping_add(INSN_BYTES as u64);
                    let end = e.cycle;
                    note(trace, j, issue, pc, || TraceWhat::Done { insn, end });
                }
            }
        }

        // Nothing is ready: whoever still waits, waits forever.
        for (i, e) in engs.iter_mut().enumerate() {
            if e.state != EngineState::Blocked {
                continue;
            }
            let (sem, value) = e.pending.unwrap_or((0, 0));
            let have = sems[usize::from(sem)];
            let f = FaultKind::Deadlock { sem, value, have }.at(e.pc);
            fail(e, f, trace, i, &mut first_error);
        }

        ExecReport {
            engines: engs.map(|e| EngineReport {
                state: e.state,
                start_cycle,
                end_cycle: e.cycle,
                steps: e.steps,
                fault: e.fault,
            }),
            macs,
            end_cycle: engs.iter().map(|e| e.cycle).max().unwrap_or(start_cycle),
            first_error,
        }
    }
}

/// Append a line to the trace, when there is one (made only then).
#[inline(always)]
fn note(
    trace: &mut Option<Vec<TraceLine>>,
    i: usize,
    cycle: u64,
    pc: u64,
    what: impl FnOnce() -> TraceWhat,
) {
    if let Some(t) = trace {
        let (engine, what) = (Engine::ALL[i], what());
        t.push(TraceLine {
            engine,
            cycle,
            pc,
            what,
        });
    }
}

/// Stop engine `i` with `f`: a faulting instruction takes one cycle. The
/// execution's first fault is its root cause.
#[cold]
fn fail(
    e: &mut Eng<'_>,
    f: EngineFault,
    trace: &mut Option<Vec<TraceLine>>,
    i: usize,
    first_error: &mut Option<(Engine, ErrorClass)>,
) {
    let issue = e.cycle;
    transit(e, EngineEvent::Fault);
    e.fault.get_or_insert(f);
    e.cycle = e.cycle.saturating_add(1);
    note(trace, i, issue, f.pc, || TraceWhat::Fault(f));
    first_error.get_or_insert((Engine::ALL[i], f.class()));
}

fn transit(e: &mut Eng<'_>, ev: EngineEvent) {
    match fsm::step::<EngineFsm>(e.state, ev) {
        Ok(s) => e.state = s,
        Err(_) => {
            e.state = EngineState::Faulted;
            e.fault.get_or_insert(FaultKind::Internal.at(e.pc));
        }
    }
}

/// Fetch and decode the instruction at `pc` (past a block's decoded part).
fn fetch(mem: &dyn DeviceMemory, pc: u64) -> Result<Insn, EngineFault> {
    if pc % 4 != 0 {
        return Err(FaultKind::Misaligned { pa: pc }.at(pc));
    }
    // The last word's address must not overflow; then one range read (its
    // fault names the first refused word, as word-by-word reads would).
    pc.checked_add(4 * (INSN_WORDS as u64 - 1))
        .ok_or(FaultKind::AddressOverflow.at(pc))?;
    let mut w = [0u32; INSN_WORDS];
    mem.read_u32s(pc, &mut w)
        .map_err(|f| FaultKind::Memory(f).at(pc))?;
    Insn::decode(&w).map_err(|e| FaultKind::Decode(e).at(pc))
}

/// The address of `op` spanning `elems` words: checked for overflow and
/// alignment, and probed at its first and last word, so a range off the
/// end of memory faults before any work or any write.
fn resolve(
    mem: &dyn DeviceMemory,
    regs: &[u64; isa::NUM_BASES],
    pc: u64,
    op: Operand,
    elems: u64,
) -> Result<u64, EngineFault> {
    let pa = regs[op.base.index()]
        .checked_add(u64::from(op.off))
        .ok_or(FaultKind::AddressOverflow.at(pc))?;
    if pa % 4 != 0 {
        return Err(FaultKind::Misaligned { pa }.at(pc));
    }
    let last = elems
        .checked_sub(1)
        .and_then(|n| n.checked_mul(4))
        .and_then(|b| pa.checked_add(b))
        .ok_or(FaultKind::AddressOverflow.at(pc))?;
    mem.probe(pa, last)
        .map_err(|f| FaultKind::Memory(f).at(pc))?;
    Ok(pa)
}

/// The first `n` words of `v`, grown to hold them (never shrunk, so only a
/// growth is zeroed: what they hold is about to be overwritten).
fn grow(v: &mut Vec<u32>, n: u64) -> &mut [u32] {
    let n = n as usize;
    if v.len() < n {
        v.resize(n, 0);
    }
    &mut v[..n]
}

/// The `n` words at `pa` (a range `resolve` checked), read into `v`.
fn read<'v>(
    mem: &dyn DeviceMemory,
    pc: u64,
    pa: u64,
    n: u64,
    v: &'v mut Vec<u32>,
) -> Result<&'v mut [u32], EngineFault> {
    let w = grow(v, n);
    mem.read_u32s(pa, w)
        .map_err(|f| FaultKind::Memory(f).at(pc))?;
    Ok(w)
}

/// Write `out` at `pa`, noting the range in `written`; under `.chk` first
/// refuse a non-finite result (writing nothing).
fn write(
    mem: &dyn DeviceMemory,
    written: &mut Option<(u64, u64)>,
    (pc, pa): (u64, u64),
    out: &[u32],
    check: bool,
) -> Result<(), EngineFault> {
    // A sweep without an early exit (it vectorizes); the position only
    // when something is not finite.
    let finite = |w: &u32| w & 0x7F80_0000 != 0x7F80_0000;
    if check && !out.iter().fold(true, |ok, w| ok & finite(w)) {
        let index = out.iter().position(|w| !finite(w)).unwrap_or(0) as u32;
        return Err(FaultKind::NonFinite { index }.at(pc));
    }
    *written = Some((pa, pa + 4 * out.len() as u64));
    mem.write_u32s(pa, out)
        .map_err(|f| FaultKind::Memory(f).at(pc))
}

fn f(w: u32) -> f32 {
    f32::from_bits(w)
}

/// Execute a data instruction or `RAISE` (the scheduler runs the others).
/// Reads every input before writing any output; faults write nothing (on
/// a contiguous memory). The range it writes (or meant to) goes to `written`.
fn exec(
    mem: &dyn DeviceMemory,
    buf: &mut Buffers,
    written: &mut Option<(u64, u64)>,
    regs: &[u64; isa::NUM_BASES],
    insn: &Insn,
    pc: u64,
) -> Result<(), EngineFault> {
    let at = |op: Operand, elems: u64| resolve(mem, regs, pc, op, elems);
    let Buffers { a: va, b: vb, out } = buf;
    match *insn {
        Insn::Raise(class) => Err(FaultKind::Raised(class).at(pc)),
        Insn::Copy(dst, src, n) => {
            let n = u64::from(n);
            let (s, d) = (at(src, n)?, at(dst, n)?);
            let o = read(mem, pc, s, n, out)?;
            write(mem, written, (pc, d), o, false)
        }
        Insn::Fill(dst, n, value) => {
            let d = at(dst, u64::from(n))?;
            let o = grow(out, n.into());
            o.fill(value);
            write(mem, written, (pc, d), o, false)
        }
        Insn::Binary(op, dst, a, b, n, b_len, check) => {
            let n = u64::from(n);
            let bl = if b_len == 0 { n } else { u64::from(b_len) };
            let (pa, pb, pd) = (at(a, n)?, at(b, bl)?, at(dst, n)?);
            let (x, y) = (read(mem, pc, pa, n, va)?, read(mem, pc, pb, bl, vb)?);
            let o = grow(out, n);
            // Each arm applies a constant operation: `apply` inlines to its
            // one case, chosen once per instruction, not per element.
            match op {
                BinOp::Add => binary(o, x, y, |x, y| BinOp::Add.apply(x, y)),
                BinOp::Sub => binary(o, x, y, |x, y| BinOp::Sub.apply(x, y)),
                BinOp::Mul => binary(o, x, y, |x, y| BinOp::Mul.apply(x, y)),
                BinOp::Max => binary(o, x, y, |x, y| BinOp::Max.apply(x, y)),
            }
            write(mem, written, (pc, pd), o, check)
        }
        Insn::Affine(dst, src, n, scale_bits, bias_bits, check) => {
            let n = u64::from(n);
            let (s, t) = (f(scale_bits), f(bias_bits));
            let (pa, pd) = (at(src, n)?, at(dst, n)?);
            let (x, o) = (read(mem, pc, pa, n, va)?, grow(out, n));
            unary(o, x, |x| x * s + t);
            write(mem, written, (pc, pd), o, check)
        }
        Insn::Act(func, dst, src, n, check) => {
            let n = u64::from(n);
            let (pa, pd) = (at(src, n)?, at(dst, n)?);
            let (x, o) = (read(mem, pc, pa, n, va)?, grow(out, n));
            match func {
                ActFn::Identity => unary(o, x, |x| ActFn::Identity.apply(x)),
                ActFn::Relu => unary(o, x, |x| ActFn::Relu.apply(x)),
                ActFn::Sigmoid => unary(o, x, |x| ActFn::Sigmoid.apply(x)),
                ActFn::Tanh => unary(o, x, |x| ActFn::Tanh.apply(x)),
            }
            write(mem, written, (pc, pd), o, check)
        }
        Insn::Reduce(op, dst, src, rows, cols, check) => {
            let (r, c) = (u64::from(rows), u64::from(cols));
            let (pa, pd) = (at(src, r * c)?, at(dst, r)?);
            let (x, o) = (read(mem, pc, pa, r * c, va)?, grow(out, r));
            for (o, row) in o.iter_mut().zip(x.chunks_exact(c as usize)) {
                *o = op.fold(row.iter().map(|&w| f(w))).to_bits();
            }
            write(mem, written, (pc, pd), o, check)
        }
        Insn::MatMul(dst, a, b, m, k, n, acc, check) => {
            let (m, k, n) = (u64::from(m), u64::from(k), u64::from(n));
            let (pa, pb, pd) = (at(a, m * k)?, at(b, k * n)?, at(dst, m * n)?);
            let (x, y) = (read(mem, pc, pa, m * k, va)?, read(mem, pc, pb, k * n, vb)?);
            let o = if acc {
                read(mem, pc, pd, m * n, out)?
            } else {
                let o = grow(out, m * n);
                o.fill(0.0f32.to_bits());
                o
            };
            matmul(o, x, y, k as usize, n as usize);
            write(mem, written, (pc, pd), o, check)
        }
        // Control instructions: the scheduler ran them.
        _ => Ok(()),
    }
}

/// `o = x op y` elementwise, `y` cycled (its length divides `x`'s: decode
/// checks).
#[inline(always)]
fn binary(o: &mut [u32], x: &[u32], y: &[u32], op: impl Fn(f32, f32) -> f32) {
    for (o, x) in o.chunks_mut(y.len()).zip(x.chunks(y.len())) {
        for ((o, &x), &y) in o.iter_mut().zip(x).zip(y) {
            *o = op(f(x), f(y)).to_bits();
        }
    }
}

/// `o = func(x)` elementwise.
#[inline(always)]
fn unary(o: &mut [u32], x: &[u32], func: impl Fn(f32) -> f32) {
    for (o, &x) in o.iter_mut().zip(x) {
        *o = func(f(x)).to_bits();
    }
}

/// `out[m x n] += a[m x k] . b[k x n]` on f32 bit patterns, each sum
/// accumulated in f32 from `out[i][j]`, `k` ascending, one rounding per
/// multiply and per add (no fused multiply-add). The CPU reference uses the
/// same order, so results agree bit for bit.
///
/// The loops run `i`, then `k`, then `j` innermost: row `i` of `out` takes
/// `a[i][k] * b[k][..]` for `k` ascending, so every element still sums in
/// the order above (each `out[i][j]` is its own accumulator), and the
/// inner loop is a contiguous multiply-add over a row that the compiler
/// vectorizes (no per-element bounds check or dispatch). It takes four
/// rows of `b` per pass, one after the other for each element, so a row of
/// `out` is loaded and stored once per four products, not once per product.
fn matmul(out: &mut [u32], a: &[u32], b: &[u32], k: usize, n: usize) {
    for (a_row, o_row) in a.chunks_exact(k).zip(out.chunks_exact_mut(n)) {
        let (xs, bs) = (a_row.chunks_exact(4), b.chunks_exact(4 * n));
        let rest = xs.remainder().iter().zip(bs.remainder().chunks_exact(n));
        for (x, q) in xs.zip(bs) {
            let [x0, x1, x2, x3] = [0, 1, 2, 3].map(|i| f(x[i]));
            let ((q0, q1), (q2, q3)) = (q[..2 * n].split_at(n), q[2 * n..].split_at(n));
            let rows = o_row.iter_mut().zip(q0).zip(q1).zip(q2).zip(q3);
            for ((((o, &y0), &y1), &y2), &y3) in rows {
                let s = f(*o) + x0 * f(y0) + x1 * f(y1);
                *o = (s + x2 * f(y2) + x3 * f(y3)).to_bits();
            }
        }
        for (&x, b_row) in rest {
            let x = f(x);
            for (o, &y) in o_row.iter_mut().zip(b_row) {
                *o = (f(*o) + x * f(y)).to_bits();
            }
        }
    }
}
