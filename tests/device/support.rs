//! Test doubles of the simulated device: heap-backed device memory
//! ([`VecMemory`]), an executor that touches no memory ([`NullExecutor`]),
//! and one-call executions with the default limits.

use std::sync::atomic::{AtomicU32, Ordering};

use xunds::device::engine::{
    DeviceMemory, EngineReport, EngineState, ExecReport, Executor, Limits, MemFault,
};
use xunds::device::isa::{DecodeError, Insn, INSN_BYTES, INSN_WORDS};
use xunds::device::model::ModelImage;
use xunds::device::sequencer::RequestExecutor;
use xunds::wire::device_request::{DeviceExecRequest, Engine, NUM_ENGINES};
use xunds::wire::nq::{ErrorClass, Kind, NqEntry, Source};

/// Heap-backed device memory covering `base .. base + len`: word-granular,
/// `Sync` (each word is an `AtomicU32` accessed `Relaxed`; the engines need
/// no ordering within one execution).
pub struct VecMemory {
    base: u64,
    words: Box<[AtomicU32]>,
}

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

    /// The cells of `n` words from `pa`, or the first refused word.
    fn cells(&self, pa: u64, n: usize) -> Result<&[AtomicU32], MemFault> {
        let first = pa
            .checked_sub(self.base)
            .filter(|off| off % 4 == 0 && off / 4 < self.words.len() as u64)
            .ok_or(MemFault { pa })?;
        let first = (first / 4) as usize;
        let inside = self.words.len() - first;
        self.words[first..].get(..n).ok_or(MemFault {
            pa: pa + 4 * inside as u64,
        })
    }
}

impl DeviceMemory for VecMemory {
    fn read_u32s(&self, pa: u64, out: &mut [u32]) -> Result<(), MemFault> {
        let cells = self.cells(pa, out.len())?;
        for (w, cell) in out.iter_mut().zip(cells) {
            *w = cell.load(Ordering::Relaxed);
        }
        Ok(())
    }
    fn write_u32s(&self, pa: u64, vals: &[u32]) -> Result<(), MemFault> {
        let cells = match self.cells(pa, vals.len()) {
            Ok(c) => c,
            // The words before the first refused one are written.
            Err(f) => self.cells(pa, ((f.pa - pa) / 4) as usize).map_err(|_| f)?,
        };
        for (&v, cell) in vals.iter().zip(cells) {
            cell.store(v, Ordering::Relaxed);
        }
        match cells.len() == vals.len() {
            true => Ok(()),
            false => Err(MemFault {
                pa: pa + 4 * cells.len() as u64,
            }),
        }
    }
}

/// An executor that completes every engine with a block after a fixed
/// number of cycles, touching no memory (tests, loom models, benches of the
/// staging path alone).
#[derive(Clone, Copy, Debug)]
pub struct NullExecutor {
    /// Cycles every non-idle engine takes.
    pub cycles: u64,
}

impl RequestExecutor for NullExecutor {
    fn execute(&mut self, _: &dyn DeviceMemory, req: &DeviceExecRequest, start: u64) -> ExecReport {
        let engines = Engine::ALL.map(|e| {
            let busy = req.engine_address(e) != 0;
            EngineReport {
                state: [EngineState::Idle, EngineState::Done][usize::from(busy)],
                start_cycle: start,
                end_cycle: start.saturating_add(if busy { self.cycles } else { 0 }),
                steps: u64::from(busy),
                fault: None,
            }
        });
        let end_cycle = engines.iter().map(|e| e.end_cycle).max().unwrap_or(start);
        ExecReport {
            engines,
            macs: 0,
            end_cycle,
            first_error: None,
        }
    }
}

/// Run the execution `req` describes with default [`Limits`]: engine `e`'s
/// block is at `req.engine_address(e)` (0 = idle); all start at
/// `start_cycle`.
pub fn execute_request(
    mem: &dyn DeviceMemory,
    req: &DeviceExecRequest,
    start_cycle: u64,
) -> ExecReport {
    execute_blocks(mem, Engine::ALL.map(|e| req.engine_address(e)), start_cycle)
}

/// Run one execution with default [`Limits`]: engine `i` ([`Engine::ALL`]
/// order) starts at `blocks[i]` (0 = idle) at `start_cycle`.
pub fn execute_blocks(
    mem: &dyn DeviceMemory,
    blocks: [u64; NUM_ENGINES],
    start_cycle: u64,
) -> ExecReport {
    Executor::new(Limits::DEFAULT).run(mem, blocks, start_cycle)
}

/// Decode an instruction from its first [`INSN_BYTES`] little-endian bytes
/// (fewer is a bug in the calling test: it panics).
pub fn insn_from_bytes(bytes: &[u8]) -> Result<Insn, DecodeError> {
    let mut w = [0u32; INSN_WORDS];
    for (wi, chunk) in w.iter_mut().zip(bytes[..INSN_BYTES].chunks_exact(4)) {
        *wi = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
    }
    Insn::decode(&w)
}

/// Copy `img` to its load address in `mem` and zero its scratch (whole
/// words: `link` makes every section a multiple of 64 bytes).
pub fn load(img: &ModelImage, mem: &dyn DeviceMemory) -> Result<(), MemFault> {
    let word = |w: &[u8]| u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
    let words: Vec<u32> = img.bytes.chunks_exact(4).map(word).collect();
    mem.write_u32s(img.load_pa, &words)?;
    let zeros = vec![0; img.mem.scratchpad as usize / 4];
    mem.write_u32s(img.load_pa + img.scratch_offset(), &zeros)
}

/// Each engine's block address in `img` (`load_pa + offset`, 0 when idle),
/// in [`Engine::ALL`] order: what goes into `eng_addresses_lo/hi`.
pub fn engine_addresses(img: &ModelImage) -> [u64; NUM_ENGINES] {
    img.blocks.map(|o| o.map_or(0, |o| img.load_pa + o))
}

/// How an engine ended: its state and the class of its fault (`None`
/// without one).
pub fn ended(e: &EngineReport) -> (EngineState, Option<ErrorClass>) {
    (e.state, e.fault.map(|f| f.class()))
}

/// An engine's DONE record of execution `exec_id`, phase 1, over device
/// cycles `start..end`: the record NQ tests write by hand.
pub fn done_record(exec_id: u32, engine: u8, (start, end): (u32, u32)) -> [u8; 16] {
    let rec = NqEntry {
        exec_id,
        engine,
        kind: Kind::Done,
        source: Source::Engine,
        phase: true,
        start_cycle: start,
        end_cycle: end,
    };
    rec.encode().unwrap()
}
