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
//! Device memory is reached only through [`DeviceMemory`] (the HAL
//! implements it over mapped device DRAM; `VecMemory`, built with the
//! `testkit` feature, is a heap-backed one for tests).
#![forbid(unsafe_code)]

use core::fmt;
#[cfg(any(test, feature = "testkit"))]
use std::sync::atomic::{AtomicU32, Ordering};

use super::isa::{self, Insn, Operand, INSN_BYTES, INSN_WORDS, NUM_SEMAPHORES};
use crate::fsm;
pub use crate::wire::device_request::{DeviceExecRequest, Engine, NUM_ENGINES};
use crate::wire::nq::ErrorClass;

/// Word access to device memory by physical address. Implemented by the HAL
/// over mapped device DRAM and by `VecMemory` (`testkit`). `pa` is 4-byte aligned
/// when the engines call it.
pub trait DeviceMemory {
    /// Read the little-endian word at `pa`.
    fn read_u32(&self, pa: u64) -> Result<u32, MemFault>;
    /// Write the little-endian word `v` at `pa`.
    fn write_u32(&self, pa: u64, v: u32) -> Result<(), MemFault>;
    /// Read `out.len()` consecutive words from `pa`. On a fault, which
    /// words of `out` were filled is unspecified, and the fault names the
    /// first refused word. The default is one [`read_u32`](Self::read_u32)
    /// per word; a memory that can check a range once overrides it.
    fn read_u32s(&self, pa: u64, out: &mut [u32]) -> Result<(), MemFault> {
        for (i, w) in out.iter_mut().enumerate() {
            *w = self.read_u32(pa + 4 * i as u64)?;
        }
        Ok(())
    }
    /// Write `vals` as consecutive words from `pa`: the words before the
    /// first refused one are written, none after (the default, one
    /// [`write_u32`](Self::write_u32) per word, does exactly that).
    fn write_u32s(&self, pa: u64, vals: &[u32]) -> Result<(), MemFault> {
        for (i, &v) in vals.iter().enumerate() {
            self.write_u32(pa + 4 * i as u64, v)?;
        }
        Ok(())
    }
    /// Fail as [`read_u32`](Self::read_u32) at `pa` would, without the
    /// read where the memory can tell (an operand's first and last words
    /// are probed before any work). The default reads.
    fn probe(&self, pa: u64) -> Result<(), MemFault> {
        self.read_u32(pa).map(|_| ())
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

/// Heap-backed device memory covering `base .. base + len`: word-granular,
/// `Sync` (each word is an `AtomicU32` accessed `Relaxed`; the engines need
/// no ordering within one execution).
#[cfg(any(test, feature = "testkit"))]
pub struct VecMemory {
    base: u64,
    words: Box<[AtomicU32]>,
}

#[cfg(any(test, feature = "testkit"))]
impl VecMemory {
    /// Zeroed memory of `len_bytes` (rounded up to a word) at `base`.
    ///
    /// # Panics
    /// If `base` is not 4-byte aligned or `base + len_bytes` overflows (a
    /// programming error in a test, not untrusted input).
    pub fn new(base: u64, len_bytes: usize) -> Self {
        assert!(base % 4 == 0, "VecMemory base must be 4-byte aligned");
        let n = len_bytes.div_ceil(4);
        assert!(
            base.checked_add(n as u64 * 4).is_some(),
            "VecMemory range overflows"
        );
        Self {
            base,
            words: (0..n).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    /// First physical address.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Size in bytes.
    pub fn len_bytes(&self) -> u64 {
        self.words.len() as u64 * 4
    }

    fn index(&self, pa: u64) -> Result<usize, MemFault> {
        let off = pa.checked_sub(self.base).ok_or(MemFault { pa })?;
        if off % 4 != 0 || off / 4 >= self.words.len() as u64 {
            return Err(MemFault { pa });
        }
        Ok((off / 4) as usize)
    }

    /// Zero every word.
    pub fn clear(&self) {
        for w in self.words.iter() {
            w.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(any(test, feature = "testkit"))]
impl DeviceMemory for VecMemory {
    fn read_u32(&self, pa: u64) -> Result<u32, MemFault> {
        Ok(self.words[self.index(pa)?].load(Ordering::Relaxed))
    }
    fn write_u32(&self, pa: u64, v: u32) -> Result<(), MemFault> {
        self.words[self.index(pa)?].store(v, Ordering::Relaxed);
        Ok(())
    }
    fn read_u32s(&self, pa: u64, out: &mut [u32]) -> Result<(), MemFault> {
        let Some(r) = self.range(pa, out.len()) else {
            // Word by word, so the fault names the first bad word.
            for (i, w) in out.iter_mut().enumerate() {
                *w = self.read_u32(pa + 4 * i as u64)?;
            }
            return Ok(());
        };
        for (w, cell) in out.iter_mut().zip(&self.words[r]) {
            *w = cell.load(Ordering::Relaxed);
        }
        Ok(())
    }
    fn write_u32s(&self, pa: u64, vals: &[u32]) -> Result<(), MemFault> {
        let Some(r) = self.range(pa, vals.len()) else {
            for (i, &v) in vals.iter().enumerate() {
                self.write_u32(pa + 4 * i as u64, v)?;
            }
            return Ok(());
        };
        for (&v, cell) in vals.iter().zip(&self.words[r]) {
            cell.store(v, Ordering::Relaxed);
        }
        Ok(())
    }
}

#[cfg(any(test, feature = "testkit"))]
impl VecMemory {
    /// The word indices of `n` words from `pa`, when all are inside.
    fn range(&self, pa: u64, n: usize) -> Option<core::ops::Range<usize>> {
        let first = self.index(pa).ok()?;
        let end = first.checked_add(n)?;
        (end <= self.words.len()).then_some(first..end)
    }
}

#[cfg(any(test, feature = "testkit"))]
impl fmt::Debug for VecMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VecMemory")
            .field("base", &format_args!("{:#x}", self.base))
            .field("len_bytes", &self.len_bytes())
            .finish()
    }
}

/// Write `bytes` at `pa` (4-byte aligned) word by word; a trailing partial
/// word is merged with the bytes already there.
pub fn write_bytes(mem: &dyn DeviceMemory, pa: u64, bytes: &[u8]) -> Result<(), MemFault> {
    if pa % 4 != 0 {
        return Err(MemFault { pa });
    }
    for (i, chunk) in bytes.chunks(4).enumerate() {
        let a = pa
            .checked_add(i as u64 * 4)
            .ok_or(MemFault { pa: u64::MAX })?;
        let mut w = [0u8; 4];
        if chunk.len() < 4 {
            w = mem.read_u32(a)?.to_le_bytes();
        }
        w[..chunk.len()].copy_from_slice(chunk);
        mem.write_u32(a, u32::from_le_bytes(w))?;
    }
    Ok(())
}

/// Read `len` bytes at `pa` (4-byte aligned).
#[cfg(any(test, feature = "testkit"))]
pub fn read_bytes(mem: &dyn DeviceMemory, pa: u64, len: usize) -> Result<Vec<u8>, MemFault> {
    if pa % 4 != 0 {
        return Err(MemFault { pa });
    }
    let mut out = Vec::with_capacity(len.next_multiple_of(4));
    for i in 0..len.div_ceil(4) {
        let a = pa
            .checked_add(i as u64 * 4)
            .ok_or(MemFault { pa: u64::MAX })?;
        out.extend_from_slice(&mem.read_u32(a)?.to_le_bytes());
    }
    out.truncate(len);
    Ok(out)
}

/// Write f32 values at `pa` (4-byte aligned).
pub fn write_f32s(mem: &dyn DeviceMemory, pa: u64, vals: &[f32]) -> Result<(), MemFault> {
    for (i, v) in vals.iter().enumerate() {
        let a = word_addr(pa, i)?;
        mem.write_u32(a, v.to_bits())?;
    }
    Ok(())
}

/// Read `n` f32 values at `pa` (4-byte aligned).
pub fn read_f32s(mem: &dyn DeviceMemory, pa: u64, n: usize) -> Result<Vec<f32>, MemFault> {
    (0..n)
        .map(|i| Ok(f32::from_bits(mem.read_u32(word_addr(pa, i)?)?)))
        .collect()
}

fn word_addr(pa: u64, i: usize) -> Result<u64, MemFault> {
    if pa % 4 != 0 {
        return Err(MemFault { pa });
    }
    pa.checked_add(i as u64 * 4)
        .ok_or(MemFault { pa: u64::MAX })
}

/// How one engine ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineStatus {
    /// No block (address 0).
    Idle,
    /// Reached `END`.
    Done,
    /// Stopped by a fault of this class.
    Error(ErrorClass),
}

/// Why an engine stopped with an error. `pc` is the address of the
/// instruction that faulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineFault {
    /// The words at `pc` are not an instruction. Class `Model`.
    Decode {
        /// Instruction address.
        pc: u64,
        /// Why.
        err: isa::DecodeError,
    },
    /// Fetch or operand access outside device memory. Class `Hw`.
    Memory {
        /// Instruction address.
        pc: u64,
        /// The refused access.
        fault: MemFault,
    },
    /// A block or operand address not 4-byte aligned. Class `Hw`.
    Misaligned {
        /// Instruction address.
        pc: u64,
        /// The misaligned address.
        pa: u64,
    },
    /// `base + offset` (or the end of the operand) overflows 64 bits. Class `Hw`.
    AddressOverflow {
        /// Instruction address.
        pc: u64,
    },
    /// A `.chk` instruction produced NaN or ±Inf (nothing was written).
    /// Class `Numerical`.
    NonFinite {
        /// Instruction address.
        pc: u64,
        /// Index of the first non-finite result.
        index: u32,
    },
    /// `RAISE`. Class: the instruction's.
    Raised {
        /// Instruction address.
        pc: u64,
        /// The class raised.
        class: ErrorClass,
    },
    /// A `WAIT` no engine can ever satisfy. Class `Runtime`.
    Deadlock {
        /// Instruction address.
        pc: u64,
        /// The semaphore.
        sem: u8,
        /// The amount it waited for.
        value: u32,
        /// The semaphore's value when the execution gave up.
        have: u32,
    },
    /// `SIGNAL` would overflow the semaphore's `u32`. Class `Runtime`.
    SemaphoreOverflow {
        /// Instruction address.
        pc: u64,
        /// The semaphore.
        sem: u8,
    },
    /// The request issued [`Limits::max_steps`] instructions. Class `Runtime`.
    StepBudget {
        /// The instruction not issued.
        pc: u64,
    },
    /// The instruction would run the clock past [`Limits::max_cycles`] after
    /// the start. Class `Runtime`.
    CycleBudget {
        /// Instruction address.
        pc: u64,
    },
    /// The instruction would take the request past [`Limits::max_work`].
    /// Class `Runtime`.
    WorkBudget {
        /// Instruction address.
        pc: u64,
    },
    /// The engine state machine refused a transition (a bug; kept as an
    /// error value instead of a panic). Class `Runtime`.
    Internal {
        /// Instruction address.
        pc: u64,
    },
}

impl EngineFault {
    /// The error class the engine reports (docs/design.md "Instruction
    /// format", error classes).
    pub const fn class(&self) -> ErrorClass {
        match *self {
            EngineFault::Decode { .. } => ErrorClass::Model,
            EngineFault::Memory { .. }
            | EngineFault::Misaligned { .. }
            | EngineFault::AddressOverflow { .. } => ErrorClass::Hw,
            EngineFault::NonFinite { .. } => ErrorClass::Numerical,
            EngineFault::Raised { class, .. } => class,
            EngineFault::Deadlock { .. }
            | EngineFault::SemaphoreOverflow { .. }
            | EngineFault::StepBudget { .. }
            | EngineFault::CycleBudget { .. }
            | EngineFault::WorkBudget { .. }
            | EngineFault::Internal { .. } => ErrorClass::Runtime,
        }
    }

    /// The faulting instruction's address.
    pub const fn pc(&self) -> u64 {
        match *self {
            EngineFault::Decode { pc, .. }
            | EngineFault::Memory { pc, .. }
            | EngineFault::Misaligned { pc, .. }
            | EngineFault::AddressOverflow { pc }
            | EngineFault::NonFinite { pc, .. }
            | EngineFault::Raised { pc, .. }
            | EngineFault::Deadlock { pc, .. }
            | EngineFault::SemaphoreOverflow { pc, .. }
            | EngineFault::StepBudget { pc }
            | EngineFault::CycleBudget { pc }
            | EngineFault::WorkBudget { pc }
            | EngineFault::Internal { pc } => pc,
        }
    }
}

impl fmt::Display for EngineFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} error at pc {:#x}: ", self.class().name(), self.pc())?;
        match *self {
            EngineFault::Decode { err, .. } => write!(f, "{err}"),
            EngineFault::Memory { fault, .. } => write!(f, "{fault}"),
            EngineFault::Misaligned { pa, .. } => write!(f, "misaligned address {pa:#x}"),
            EngineFault::AddressOverflow { .. } => f.write_str("address overflow"),
            EngineFault::NonFinite { index, .. } => {
                write!(f, "non-finite result at element {index}")
            }
            EngineFault::Raised { class, .. } => write!(f, "RAISE {}", class.name()),
            EngineFault::Deadlock {
                sem, value, have, ..
            } => write!(f, "deadlock: WAIT s{sem} for {value}, have {have}"),
            EngineFault::SemaphoreOverflow { sem, .. } => write!(f, "semaphore s{sem} overflow"),
            EngineFault::StepBudget { .. } => f.write_str("step budget exhausted"),
            EngineFault::CycleBudget { .. } => f.write_str("cycle budget exhausted"),
            EngineFault::WorkBudget { .. } => f.write_str("work budget exhausted"),
            EngineFault::Internal { .. } => f.write_str("internal state-machine error"),
        }
    }
}

impl std::error::Error for EngineFault {}

/// One engine's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineReport {
    /// How it ended.
    pub status: EngineStatus,
    /// The cycle it started (the request's start cycle).
    pub start_cycle: u64,
    /// The cycle it stopped (its last instruction's completion; equal to
    /// `start_cycle` when idle).
    pub end_cycle: u64,
    /// Instructions issued.
    pub steps: u64,
    /// The fault, when `status` is `Error`.
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

impl ExecReport {
    /// One engine's report.
    #[cfg(any(test, feature = "testkit"))]
    pub fn engine(&self, engine: Engine) -> &EngineReport {
        &self.engines[engine.index()]
    }

    /// The root-cause error class, if any engine failed.
    #[cfg(any(test, feature = "testkit"))]
    pub fn error(&self) -> Option<ErrorClass> {
        self.first_error.map(|(_, c)| c)
    }

    /// `true` when no engine failed.
    #[cfg(any(test, feature = "testkit"))]
    pub fn is_ok(&self) -> bool {
        self.first_error.is_none()
    }

    /// Device latency: `end_cycle - start_cycle`.
    #[cfg(any(test, feature = "testkit"))]
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
        write!(
            f,
            "{:>8} {:<4} {:#08x}  ",
            self.cycle,
            self.engine.name(),
            self.pc
        )?;
        match &self.what {
            TraceWhat::Done { insn, end } => write!(f, "{insn}  -> {end}"),
            TraceWhat::Blocked { insn } => write!(f, "{insn}  (blocked)"),
            TraceWhat::Fault(e) => write!(f, "FAULT {e}"),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Eng {
    state: EngineState,
    pc: u64,
    cycle: u64,
    steps: u64,
    regs: [u64; isa::NUM_BASES],
    /// The `WAIT` (semaphore, amount) it is blocked on.
    pending: Option<(u8, u32)>,
    fault: Option<EngineFault>,
}

/// What one issued instruction did, for the scheduler.
enum Outcome {
    /// Completed; advance pc, charge cycles.
    Next,
    /// `WAIT` must block.
    Block,
    /// `END`.
    End,
}

/// Reusable interpreter state: limits, scratch buffers and an optional
/// trace. One per sequencer.
#[derive(Debug, Default)]
pub struct Executor {
    limits: Limits,
    a: Vec<f32>,
    b: Vec<f32>,
    out: Vec<f32>,
    words: Vec<u32>,
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

    fn log(&mut self, engine: usize, cycle: u64, pc: u64, what: TraceWhat) {
        if let Some(t) = &mut self.trace {
            t.push(TraceLine {
                engine: Engine::ALL[engine],
                cycle,
                pc,
                what,
            });
        }
    }

    /// Run the execution `req` describes: each engine starts at
    /// `req.engine_address(engine)` (0 = idle) at `start_cycle`.
    pub fn run_request(
        &mut self,
        mem: &dyn DeviceMemory,
        req: &DeviceExecRequest,
        start_cycle: u64,
    ) -> ExecReport {
        self.run(mem, Engine::ALL.map(|e| req.engine_address(e)), start_cycle)
    }

    /// Run one execution: engine `i` ([`Engine::ALL`] order) starts at
    /// `blocks[i]` (0 = idle) at `start_cycle`.
    pub fn run(
        &mut self,
        mem: &dyn DeviceMemory,
        blocks: [u64; NUM_ENGINES],
        start_cycle: u64,
    ) -> ExecReport {
        let limit_cycle = start_cycle.saturating_add(self.limits.max_cycles);
        let mut engs = [Eng {
            state: EngineState::Idle,
            pc: 0,
            cycle: start_cycle,
            steps: 0,
            regs: [0; isa::NUM_BASES],
            pending: None,
            fault: None,
        }; NUM_ENGINES];
        for (e, &pc) in engs.iter_mut().zip(&blocks) {
            if pc != 0 {
                e.pc = pc;
                transit(e, EngineEvent::Start);
            }
        }
        let mut sems = [0u32; NUM_SEMAPHORES];
        let mut ready_at = [start_cycle; NUM_SEMAPHORES];
        let mut macs = 0u64;
        let mut total_steps = 0u64;
        let mut total_work = 0u64;
        let mut first_error = None;

        // Issue instructions in virtual-time order until no engine is ready.
        while let Some(i) = (0..NUM_ENGINES)
            .filter(|&i| engs[i].state == EngineState::Ready)
            .min_by_key(|&i| (engs[i].cycle, i))
        {
            let pc = engs[i].pc;
            let issue = engs[i].cycle;
            if total_steps >= self.limits.max_steps {
                self.fail(&mut engs[i], i, EngineFault::StepBudget { pc });
                first_error.get_or_insert((Engine::ALL[i], ErrorClass::Runtime));
                continue;
            }
            total_steps += 1;
            engs[i].steps += 1;
            let insn = match fetch(mem, pc) {
                Ok(insn) => insn,
                Err(f) => {
                    self.fail(&mut engs[i], i, f);
                    first_error.get_or_insert((Engine::ALL[i], f.class()));
                    continue;
                }
            };
            let end = issue.saturating_add(insn.cycles());
            let work = match insn {
                Insn::Delay { .. } => 0,
                _ => insn.cycles(),
            };
            let over = if end > limit_cycle {
                Some(EngineFault::CycleBudget { pc })
            } else if total_work + work > self.limits.max_work {
                Some(EngineFault::WorkBudget { pc })
            } else {
                None
            };
            if let Some(f) = over {
                self.fail(&mut engs[i], i, f);
                first_error.get_or_insert((Engine::ALL[i], f.class()));
                continue;
            }
            total_work += work;
            let result = match insn {
                Insn::Wait { sem, value } => {
                    let s = usize::from(sem);
                    if sems[s] >= value {
                        sems[s] -= value;
                        // The wait completes no earlier than the signal that
                        // made it possible.
                        engs[i].cycle = issue.max(ready_at[s]);
                        Ok(Outcome::Next)
                    } else {
                        Ok(Outcome::Block)
                    }
                }
                Insn::Signal { sem, value } => {
                    let s = usize::from(sem);
                    match sems[s].checked_add(value) {
                        Some(v) => {
                            sems[s] = v;
                            ready_at[s] = ready_at[s].max(end);
                            Ok(Outcome::Next)
                        }
                        None => Err(EngineFault::SemaphoreOverflow { pc, sem }),
                    }
                }
                Insn::End => Ok(Outcome::End),
                _ => self
                    .exec(mem, &mut engs[i], &insn, pc)
                    .map(|()| Outcome::Next),
            };
            match result {
                Ok(Outcome::Next) => {
                    macs += insn.macs();
                    let e = &mut engs[i];
                    e.cycle = e.cycle.saturating_add(insn.cycles());
                    e.pc = e.pc.wrapping_add(INSN_BYTES as u64);
                    let end = e.cycle;
                    self.log(i, issue, pc, TraceWhat::Done { insn, end });
                }
                Ok(Outcome::End) => {
                    let e = &mut engs[i];
                    e.cycle = end;
                    transit(e, EngineEvent::Finish);
                    self.log(i, issue, pc, TraceWhat::Done { insn, end });
                }
                Ok(Outcome::Block) => {
                    if let Insn::Wait { sem, value } = insn {
                        engs[i].pending = Some((sem, value));
                    }
                    transit(&mut engs[i], EngineEvent::Block);
                    self.log(i, issue, pc, TraceWhat::Blocked { insn });
                }
                Err(f) => {
                    self.fail(&mut engs[i], i, f);
                    first_error.get_or_insert((Engine::ALL[i], f.class()));
                }
            }
            if let Insn::Signal { sem, .. } = insn {
                self.wake(&mut engs, &mut sems, &ready_at, sem);
            }
        }

        // Nothing is ready: whoever still waits, waits forever.
        for (i, e) in engs.iter_mut().enumerate() {
            if e.state != EngineState::Blocked {
                continue;
            }
            let (sem, value) = e.pending.unwrap_or((0, 0));
            let f = EngineFault::Deadlock {
                pc: e.pc,
                sem,
                value,
                have: sems[usize::from(sem)],
            };
            self.fail(e, i, f);
            first_error.get_or_insert((Engine::ALL[i], f.class()));
        }

        let engines = core::array::from_fn(|i| {
            let e = &engs[i];
            EngineReport {
                status: match e.state {
                    EngineState::Idle => EngineStatus::Idle,
                    EngineState::Done => EngineStatus::Done,
                    _ => EngineStatus::Error(e.fault.map_or(ErrorClass::Runtime, |f| f.class())),
                },
                start_cycle,
                end_cycle: e.cycle,
                steps: e.steps,
                fault: e.fault,
            }
        });
        ExecReport {
            engines,
            macs,
            end_cycle: engs.iter().map(|e| e.cycle).max().unwrap_or(start_cycle),
            first_error,
        }
    }

    /// After a `SIGNAL` on `sem`: complete the pending `WAIT` of every
    /// blocked engine it now satisfies, in engine order.
    fn wake(
        &mut self,
        engs: &mut [Eng; NUM_ENGINES],
        sems: &mut [u32; NUM_SEMAPHORES],
        ready_at: &[u64; NUM_SEMAPHORES],
        sem: u8,
    ) {
        let s = usize::from(sem);
        for (i, e) in engs.iter_mut().enumerate() {
            if e.state != EngineState::Blocked {
                continue;
            }
            let Some((ws, value)) = e.pending else {
                continue;
            };
            if ws != sem || sems[s] < value {
                continue;
            }
            sems[s] -= value;
            e.pending = None;
            let insn = Insn::Wait { sem: ws, value };
            let pc = e.pc;
            let issue = e.cycle;
            transit(e, EngineEvent::Wake);
            e.cycle = e.cycle.max(ready_at[s]).saturating_add(insn.cycles());
            e.pc = e.pc.wrapping_add(INSN_BYTES as u64);
            let end = e.cycle;
            self.log(i, issue, pc, TraceWhat::Done { insn, end });
        }
    }

    fn fail(&mut self, e: &mut Eng, i: usize, f: EngineFault) {
        let issue = e.cycle;
        transit(e, EngineEvent::Fault);
        if e.fault.is_none() {
            e.fault = Some(f);
        }
        // A faulting instruction takes one cycle.
        e.cycle = e.cycle.saturating_add(1);
        self.log(i, issue, f.pc(), TraceWhat::Fault(f));
    }

    /// Execute a data or control instruction (not WAIT/SIGNAL/END). Reads
    /// every input before writing any output; faults write nothing (on a
    /// contiguous memory).
    fn exec(
        &mut self,
        mem: &dyn DeviceMemory,
        e: &mut Eng,
        insn: &Insn,
        pc: u64,
    ) -> Result<(), EngineFault> {
        let at = Access { mem, pc };
        match *insn {
            Insn::Nop | Insn::End | Insn::Wait { .. } | Insn::Signal { .. } => Ok(()),
            Insn::SetBase { reg, value } => {
                e.regs[reg.index()] = value;
                Ok(())
            }
            Insn::Delay { .. } => Ok(()),
            Insn::Raise { class } => Err(EngineFault::Raised { pc, class }),
            Insn::Copy { dst, src, n } => {
                let n = u64::from(n);
                let s = at.resolve(&e.regs, src, n)?;
                let d = at.resolve(&e.regs, dst, n)?;
                at.read_words(s, n, &mut self.words)?;
                at.write_words(d, &self.words)
            }
            Insn::Fill { dst, n, value } => {
                let n = u64::from(n);
                let d = at.resolve(&e.regs, dst, n)?;
                self.words.clear();
                self.words.resize(n as usize, value);
                at.write_words(d, &self.words)
            }
            Insn::Binary {
                op,
                dst,
                a,
                b,
                n,
                b_len,
                check,
            } => {
                let n = u64::from(n);
                let bl = if b_len == 0 { n } else { u64::from(b_len) };
                let pa = at.resolve(&e.regs, a, n)?;
                let pb = at.resolve(&e.regs, b, bl)?;
                let pd = at.resolve(&e.regs, dst, n)?;
                at.read_f32s(pa, n, &mut self.words, &mut self.a)?;
                at.read_f32s(pb, bl, &mut self.words, &mut self.b)?;
                binary_into(&mut self.out, op, &self.a, &self.b);
                at.finish(pd, &self.out, &mut self.words, check)
            }
            Insn::Affine {
                dst,
                src,
                n,
                scale_bits,
                bias_bits,
                check,
            } => {
                let n = u64::from(n);
                let (s, t) = (f32::from_bits(scale_bits), f32::from_bits(bias_bits));
                let pa = at.resolve(&e.regs, src, n)?;
                let pd = at.resolve(&e.regs, dst, n)?;
                at.read_f32s(pa, n, &mut self.words, &mut self.a)?;
                self.out.clear();
                self.out.extend(self.a.iter().map(|&x| x * s + t));
                at.finish(pd, &self.out, &mut self.words, check)
            }
            Insn::Act {
                func,
                dst,
                src,
                n,
                check,
            } => {
                let n = u64::from(n);
                let pa = at.resolve(&e.regs, src, n)?;
                let pd = at.resolve(&e.regs, dst, n)?;
                at.read_f32s(pa, n, &mut self.words, &mut self.a)?;
                act_into(&mut self.out, func, &self.a);
                at.finish(pd, &self.out, &mut self.words, check)
            }
            Insn::Reduce {
                op,
                dst,
                src,
                rows,
                cols,
                check,
            } => {
                let (r, c) = (u64::from(rows), u64::from(cols));
                let pa = at.resolve(&e.regs, src, r * c)?;
                let pd = at.resolve(&e.regs, dst, r)?;
                at.read_f32s(pa, r * c, &mut self.words, &mut self.a)?;
                self.out.clear();
                self.out
                    .extend(self.a.chunks_exact(cols as usize).map(|row| op.fold(row)));
                at.finish(pd, &self.out, &mut self.words, check)
            }
            Insn::MatMul {
                dst,
                a,
                b,
                m,
                k,
                n,
                acc,
                check,
            } => {
                let (m, k, n) = (m as usize, k as usize, n as usize);
                let pa = at.resolve(&e.regs, a, (m * k) as u64)?;
                let pb = at.resolve(&e.regs, b, (k * n) as u64)?;
                let pd = at.resolve(&e.regs, dst, (m * n) as u64)?;
                at.read_f32s(pa, (m * k) as u64, &mut self.words, &mut self.a)?;
                at.read_f32s(pb, (k * n) as u64, &mut self.words, &mut self.b)?;
                if acc {
                    at.read_f32s(pd, (m * n) as u64, &mut self.words, &mut self.out)?;
                } else {
                    self.out.clear();
                    self.out.resize(m * n, 0.0);
                }
                matmul_into(&mut self.out, &self.a, &self.b, m, k, n);
                at.finish(pd, &self.out, &mut self.words, check)
            }
        }
    }
}

/// `out[m x n] += a[m x k] . b[k x n]`, each sum accumulated in f32 from
/// `out[i][j]`, `k` ascending, one rounding per multiply and per add (no
/// fused multiply-add). The CPU reference uses the same order, so results
/// agree bit for bit.
///
/// The loops run `i`, then `k`, then `j` innermost: row `i` of `out` takes
/// `a[i][k] * b[k][..]` for `k` ascending, so every element still sums in
/// the order above (each `out[i][j]` is its own accumulator), and the
/// inner loop is a contiguous multiply-add over a row that the compiler
/// vectorizes (no per-element bounds check or dispatch).
pub fn matmul_into(out: &mut [f32], a: &[f32], b: &[f32], m: usize, k: usize, n: usize) {
    if n == 0 {
        return;
    }
    for (a_row, o_row) in a
        .chunks_exact(k.max(1))
        .zip(out.chunks_exact_mut(n))
        .take(m)
    {
        for (&x, b_row) in a_row.iter().zip(b.chunks_exact(n)).take(k) {
            for (o, &y) in o_row.iter_mut().zip(b_row) {
                *o += x * y;
            }
        }
    }
}

/// `out = a op b` elementwise, `b` cycled (its length divides `a`'s: decode
/// checks), with the operation chosen once per instruction, not per element.
fn binary_into(out: &mut Vec<f32>, op: isa::BinOp, a: &[f32], b: &[f32]) {
    fn each(out: &mut Vec<f32>, a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32) {
        out.clear();
        if b.is_empty() {
            return;
        }
        for a_chunk in a.chunks(b.len()) {
            out.extend(a_chunk.iter().zip(b).map(|(&x, &y)| f(x, y)));
        }
    }
    match op {
        // Each arm applies a constant operation: `apply` inlines to its one case.
        isa::BinOp::Add => each(out, a, b, |x, y| isa::BinOp::Add.apply(x, y)),
        isa::BinOp::Sub => each(out, a, b, |x, y| isa::BinOp::Sub.apply(x, y)),
        isa::BinOp::Mul => each(out, a, b, |x, y| isa::BinOp::Mul.apply(x, y)),
        isa::BinOp::Max => each(out, a, b, |x, y| isa::BinOp::Max.apply(x, y)),
    }
}

/// `out = func(a)` elementwise, the function chosen once per instruction.
fn act_into(out: &mut Vec<f32>, func: isa::ActFn, a: &[f32]) {
    fn each(out: &mut Vec<f32>, a: &[f32], f: impl Fn(f32) -> f32) {
        out.clear();
        out.extend(a.iter().map(|&x| f(x)));
    }
    // Each arm applies a constant function: `apply` inlines to its one case.
    match func {
        isa::ActFn::Identity => each(out, a, |x| isa::ActFn::Identity.apply(x)),
        isa::ActFn::Relu => each(out, a, |x| isa::ActFn::Relu.apply(x)),
        isa::ActFn::Sigmoid => each(out, a, |x| isa::ActFn::Sigmoid.apply(x)),
        isa::ActFn::Tanh => each(out, a, |x| isa::ActFn::Tanh.apply(x)),
    }
}

fn transit(e: &mut Eng, ev: EngineEvent) {
    match fsm::step::<EngineFsm>(e.state, ev) {
        Ok(s) => e.state = s,
        Err(_) => {
            e.state = EngineState::Faulted;
            if e.fault.is_none() {
                e.fault = Some(EngineFault::Internal { pc: e.pc });
            }
        }
    }
}

/// Fetch and decode the instruction at `pc`.
fn fetch(mem: &dyn DeviceMemory, pc: u64) -> Result<Insn, EngineFault> {
    if pc % 4 != 0 {
        return Err(EngineFault::Misaligned { pc, pa: pc });
    }
    // The last word's address must not overflow; then one range read (its
    // fault names the first refused word, as word-by-word reads would).
    pc.checked_add(4 * (INSN_WORDS as u64 - 1))
        .ok_or(EngineFault::AddressOverflow { pc })?;
    let mut w = [0u32; INSN_WORDS];
    mem.read_u32s(pc, &mut w)
        .map_err(|fault| EngineFault::Memory { pc, fault })?;
    Insn::decode(&w).map_err(|err| EngineFault::Decode { pc, err })
}

/// Operand access on behalf of the instruction at `pc`.
struct Access<'m> {
    mem: &'m dyn DeviceMemory,
    pc: u64,
}

impl Access<'_> {
    /// The address of `op` spanning `elems` words: checked for overflow and
    /// alignment, and probed at its first and last word, so a range off the
    /// end of memory faults before any work or any write.
    fn resolve(&self, regs: &[u64; 4], op: Operand, elems: u64) -> Result<u64, EngineFault> {
        let pc = self.pc;
        let pa = regs[op.base.index()]
            .checked_add(u64::from(op.off))
            .ok_or(EngineFault::AddressOverflow { pc })?;
        if pa % 4 != 0 {
            return Err(EngineFault::Misaligned { pc, pa });
        }
        let last = elems
            .checked_sub(1)
            .and_then(|n| n.checked_mul(4))
            .and_then(|b| pa.checked_add(b))
            .ok_or(EngineFault::AddressOverflow { pc })?;
        for probe in [pa, last] {
            self.mem
                .probe(probe)
                .map_err(|fault| EngineFault::Memory { pc, fault })?;
        }
        Ok(pa)
    }

    /// Replace `out` with the `n` words at `pa` (a range `resolve` checked),
    /// read as one range.
    fn read_words(&self, pa: u64, n: u64, out: &mut Vec<u32>) -> Result<(), EngineFault> {
        out.clear();
        out.resize(n as usize, 0);
        self.mem
            .read_u32s(pa, out)
            .map_err(|fault| EngineFault::Memory { pc: self.pc, fault })
    }

    /// Replace `out` with the `n` f32s at `pa`, read as words into `raw`.
    fn read_f32s(
        &self,
        pa: u64,
        n: u64,
        raw: &mut Vec<u32>,
        out: &mut Vec<f32>,
    ) -> Result<(), EngineFault> {
        self.read_words(pa, n, raw)?;
        out.clear();
        out.extend(raw.iter().map(|&w| f32::from_bits(w)));
        Ok(())
    }

    fn write_words(&self, pa: u64, vals: &[u32]) -> Result<(), EngineFault> {
        self.mem
            .write_u32s(pa, vals)
            .map_err(|fault| EngineFault::Memory { pc: self.pc, fault })
    }

    /// Check (under `.chk`) then write f32 results (through `raw`).
    fn finish(
        &self,
        pa: u64,
        vals: &[f32],
        raw: &mut Vec<u32>,
        check: bool,
    ) -> Result<(), EngineFault> {
        // A sweep without an early exit (it vectorizes); the position only
        // when something is not finite.
        if check && !vals.iter().fold(true, |ok, v| ok & v.is_finite()) {
            let index = vals.iter().position(|v| !v.is_finite()).unwrap_or(0);
            return Err(EngineFault::NonFinite {
                pc: self.pc,
                index: index as u32,
            });
        }
        raw.clear();
        raw.extend(vals.iter().map(|v| v.to_bits()));
        self.write_words(pa, raw)
    }
}

/// Run the execution `req` describes with default [`Limits`]: engine `e`'s
/// block is at `req.engine_address(e)` (0 = idle); all start at
/// `start_cycle`.
#[cfg(any(test, feature = "testkit"))]
pub fn execute_request(
    mem: &dyn DeviceMemory,
    req: &DeviceExecRequest,
    start_cycle: u64,
) -> ExecReport {
    Executor::new(Limits::DEFAULT).run_request(mem, req, start_cycle)
}

/// Run one execution with default [`Limits`]: engine `i` ([`Engine::ALL`]
/// order) starts at `blocks[i]` (0 = idle) at `start_cycle`.
#[cfg(any(test, feature = "testkit"))]
pub fn execute_blocks(
    mem: &dyn DeviceMemory,
    blocks: [u64; NUM_ENGINES],
    start_cycle: u64,
) -> ExecReport {
    Executor::new(Limits::DEFAULT).run(mem, blocks, start_cycle)
}
