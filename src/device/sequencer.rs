//! The device-sequencer-proxy's core logic: it plays the device on the same
//! regions the host stages into.
//!
//! [`Sequencer::poll`] is non-blocking and returns the [`Progress`] it made;
//! the actor wrapper (in `src/actors/`) calls it in its loop. Per core it
//!
//! 1. runs the DMA engine ([`DmaEngine`]) over the descriptor pairs below
//!    the published tails: a wrong ring id is "not yet written", a corrupt
//!    pair is a sticky fault reported as an error NQ record (source DMA,
//!    class `Hw`);
//! 2. when a copy bumps the sequencer's request tail (the third trigger
//!    pair), reads the request from DMEM, checks the request-load event,
//!    charges the model switch, and executes it through a
//!    [`RequestExecutor`] (the engines, [`engine::Executor`]) on device DRAM
//!    reached through the HAL ([`DramMemory`]);
//! 3. writes one 16-byte NQ record per engine that had a block (DONE, or
//!    ERROR with the class) with phase bits into that engine's NQ ring, bumps
//!    `SEQ_HEAD`, the MAC and cycle registers, and raises the core's NQ
//!    interrupt if the worker armed it ([`super::irq`]).
//!
//! Before any of that, a core answers a reset request (`RESET_REQ` ahead of
//! `RESET_ACK`, see [`Sequencer::poll_one`]): an odd request stops it (every
//! queued descriptor pair is discarded, the descriptor rings and the
//! request numbering start over), an even one re-initialises its NQ rings;
//! either is acknowledged by storing the request in `RESET_ACK`.
//!
//! Device time is virtual cycles, advanced only by the work done (copies,
//! dispatch, model switches, the engines' own cycle counts), so a run is
//! reproducible. The `now` passed to `poll` is host time and only bounds how
//! long a wrong ring id below the tail is tolerated.

use core::fmt;
use core::ops::Range;
use std::sync::Arc;

use crate::hal::{Hal, HalError, Ordering, RegionHandle};
use crate::wire::device_request::{self, DeviceExecRequest, Engine};
use crate::wire::nq::{self, ErrorClass, Kind, NqEntry, Source};

use super::dma::{copy_cycles, DmaEngine, DmaStep};
use super::engine::{self, DeviceMemory, EngineState, ExecReport, MemFault};
use super::irq;
use super::memmap::{dmem, reg, BadPa, MemMap, DRAM_BASE};
use super::nq::{NqWriter, Overflow};

/// The model heap of device DRAM through the HAL, by physical address: what
/// the engines, model loads, inputs and outputs reach. Addresses outside the
/// heap (the per-core areas below it included: request buffers, MAC words,
/// the doorbell constants, which only the host and the sequencer write) or
/// misaligned are refused with [`BadPa`], never followed: an engine that
/// wrote there raced the host's accesses at other widths and could stop
/// another core.
pub struct DramMemory<'a, H: ?Sized> {
    hal: &'a H,
    dram: RegionHandle,
    /// The heap, `[lo, hi)` in physical addresses.
    lo: u64,
    hi: u64,
}

impl<'a, H: Hal + ?Sized> DramMemory<'a, H> {
    /// DRAM of the device described by `map`.
    pub fn new(hal: &'a H, map: &'a MemMap) -> Self {
        DramMemory {
            hal,
            dram: map.dram,
            lo: map.dram_pa(map.config.heap_start()),
            hi: map.dram_pa(map.config.dram_size),
        }
    }

    /// The DRAM offset of `[pa, pa + len)`, or [`BadPa`] when the range is
    /// not all inside the model heap.
    fn off(&self, pa: u64, len: usize) -> Result<usize, BadPa> {
        let len = len as u64;
        match pa.checked_add(len) {
            Some(end) if pa >= self.lo && end <= self.hi => Ok((pa - DRAM_BASE) as usize),
            _ => Err(BadPa { pa, len }),
        }
    }

    /// Copy `data` to DRAM at `pa` (model images, inputs).
    pub fn write_bytes(&self, pa: u64, data: &[u8]) -> Result<(), BadPa> {
        let (off, len) = (self.off(pa, data.len())?, data.len() as u64);
        let copied = self.hal.copy_in(self.dram, off, data);
        copied.map_err(|_| BadPa { pa, len })
    }

    /// Copy DRAM at `pa` into `out` (outputs).
    pub fn read_bytes(&self, pa: u64, out: &mut [u8]) -> Result<(), BadPa> {
        let (off, len) = (self.off(pa, out.len())?, out.len() as u64);
        let copied = self.hal.copy_out(self.dram, off, out);
        copied.map_err(|_| BadPa { pa, len })
    }

    /// How many of the `n` words at `pa` lie inside the heap before the
    /// first that does not (none when `pa` is misaligned).
    fn inside(&self, pa: u64, n: usize) -> usize {
        match self.hi.checked_sub(pa) {
            Some(room) if pa % 4 == 0 && pa >= self.lo => n.min((room / 4) as usize),
            _ => 0,
        }
    }
}

/// One range check and one HAL call; a fault names the first word outside
/// the heap.
impl<H: Hal + ?Sized> DeviceMemory for DramMemory<'_, H> {
    fn read_u32s(&self, pa: u64, out: &mut [u32]) -> Result<(), MemFault> {
        let k = self.inside(pa, out.len());
        if k < out.len() {
            let pa = pa + 4 * k as u64;
            return Err(MemFault { pa });
        }
        if k > 0 {
            let off = (pa - DRAM_BASE) as usize;
            self.hal
                .load_u32s(self.dram, off, out)
                .map_err(|_| MemFault { pa })?;
        }
        Ok(())
    }

    fn write_u32s(&self, pa: u64, vals: &[u32]) -> Result<(), MemFault> {
        let k = self.inside(pa, vals.len());
        if k > 0 {
            let off = (pa - DRAM_BASE) as usize;
            self.hal
                .store_u32s(self.dram, off, &vals[..k])
                .map_err(|_| MemFault { pa })?;
        }
        if k < vals.len() {
            return Err(MemFault {
                pa: pa + 4 * k as u64,
            });
        }
        Ok(())
    }

    /// Inside the heap and aligned is all a read needs (the HAL refuses
    /// nothing else on the DRAM region).
    fn probe(&self, pa: u64, last: u64) -> Result<(), MemFault> {
        match [pa, last].into_iter().find(|&a| self.inside(a, 1) == 0) {
            Some(pa) => Err(MemFault { pa }),
            None => Ok(()),
        }
    }
}

/// The engines, as the sequencer drives them: run the request in DMEM,
/// engine `e` starting at `req.engine_address(e)` (0 = idle) at
/// `start_cycle`. Implementations must not panic on bad addresses: an access
/// outside device memory is an engine error in the report, as
/// [`engine::Executor::run`] makes it.
pub trait RequestExecutor: Send {
    /// Execute one request.
    fn execute(
        &mut self,
        mem: &dyn DeviceMemory,
        req: &DeviceExecRequest,
        start_cycle: u64,
    ) -> ExecReport;
}

/// The real engines ([`engine::Executor`], reused across requests).
impl RequestExecutor for engine::Executor {
    fn execute(
        &mut self,
        mem: &dyn DeviceMemory,
        req: &DeviceExecRequest,
        start_cycle: u64,
    ) -> ExecReport {
        self.run(mem, Engine::ALL.map(|e| req.engine_address(e)), start_cycle)
    }
}

/// Virtual cycles the sequencer spends dispatching a request.
pub const DISPATCH_CYCLES: u64 = 32;
/// Extra cycles for a model switch (`do_model_switch`).
pub const MODEL_SWITCH_CYCLES: u64 = 1000;
/// Extra cycles for each reload flag (`reload_seq_config`, `load_act_dve_tables`).
pub const RELOAD_CYCLES: u64 = 200;
/// Most descriptor pairs one core's DMA engine handles per `poll`.
pub const PAIRS_PER_POLL: u32 = 64;

/// What one [`Sequencer::poll`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Descriptor pairs copied.
    pub copies: u32,
    /// Requests executed.
    pub executed: u32,
    /// NQ records written.
    pub records: u32,
    /// New faults reported (DMA faults, NQ overflows, sequencer errors).
    pub faults: u32,
    /// Reset requests carried out (stops and NQ re-initialisations).
    pub resets: u32,
}

impl Progress {
    /// Whether anything happened (the actor may sleep when not).
    pub fn made_progress(&self) -> bool {
        self.copies + self.executed + self.records + self.faults + self.resets > 0
    }
}

/// The sequencer's own errors (HAL failures on device regions, which a
/// correctly built device never produces).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SequencerError {
    /// The core.
    pub core: u8,
    /// The HAL error.
    pub error: HalError,
}

impl fmt::Display for SequencerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sequencer core {}: {}", self.core, self.error)
    }
}

impl std::error::Error for SequencerError {}

/// One core's device state.
#[derive(Clone, Debug)]
struct Core {
    dma: DmaEngine,
    writers: [NqWriter; nq::ENGINES as usize],
    executed: u32,
    cycle: u64,
    macs: u64,
    switches: u32,
    fault_reported: bool,
    overflows: Vec<Overflow>,
    /// The last reset request carried out (`RESET_ACK`).
    reset_ack: u32,
}

impl Core {
    /// Core `c` of `map` as built (and as a reset leaves the parts it
    /// resets), or `None` for a core `map` does not have.
    fn new(map: &MemMap, c: u8) -> Option<Core> {
        Some(Core {
            dma: DmaEngine::new(map, c).ok()?,
            writers: NqWriter::for_core(map, c)?,
            executed: 0,
            cycle: 0,
            macs: 0,
            switches: 0,
            fault_reported: false,
            overflows: Vec::new(),
            reset_ack: 0,
        })
    }
}

/// The device: every core's DMA engine and sequencer.
pub struct Sequencer<H, X> {
    hal: Arc<H>,
    map: Arc<MemMap>,
    exec: X,
    cores: Vec<Core>,
}

debug_fields!([H, X] Sequencer<H, X>, |s| cores = s.cores.len());

impl<H: Hal, X: RequestExecutor> Sequencer<H, X> {
    /// The device side of `map`, executing requests with `exec`.
    pub fn new(hal: Arc<H>, map: Arc<MemMap>, exec: X) -> Sequencer<H, X> {
        // Every core of the map (`Core::new` refuses none of them).
        let cores = (0..map.config.cores)
            .filter_map(|c| Core::new(&map, c))
            .collect();
        Sequencer {
            hal,
            map,
            exec,
            cores,
        }
    }

    /// The executor (to read its statistics).
    #[cfg(any(test, feature = "testkit"))]
    pub fn executor(&self) -> &X {
        &self.exec
    }

    #[cfg(any(test, feature = "testkit"))]
    fn core(&self, core: u8) -> Option<&Core> {
        self.cores.get(usize::from(core))
    }

    /// A core's sticky DMA fault.
    #[cfg(any(test, feature = "testkit"))]
    pub fn dma_fault(&self, core: u8) -> Option<super::dma::DmaFault> {
        self.core(core)?.dma.fault()
    }

    /// Requests a core has executed.
    #[cfg(any(test, feature = "testkit"))]
    pub fn executed(&self, core: u8) -> u32 {
        self.core(core).map_or(0, |c| c.executed)
    }

    /// Records a core dropped because an NQ ring was full.
    #[cfg(any(test, feature = "testkit"))]
    pub fn overflows(&self, core: u8) -> &[Overflow] {
        self.core(core).map_or(&[], |c| &c.overflows)
    }

    /// Do all the work available now on every core, without blocking.
    pub fn poll(&mut self, now: u64) -> Result<Progress, SequencerError> {
        self.poll_cores(0..self.cores.len() as u8, now)
    }

    /// Do the work available now on `core` only (one device proxy per core:
    /// cores are independent, and a sequencer touches only the state of the
    /// cores it polls).
    pub fn poll_one(&mut self, core: u8, now: u64) -> Result<Progress, SequencerError> {
        // Empty for a core the device does not have.
        self.poll_cores(
            core..(self.cores.len() as u8).min(core.saturating_add(1)),
            now,
        )
    }

    fn poll_cores(&mut self, cores: Range<u8>, now: u64) -> Result<Progress, SequencerError> {
        let mut p = Progress::default();
        for core in cores {
            let poll = self.poll_core(usize::from(core), now, &mut p);
            poll.map_err(|error| SequencerError { core, error })?;
        }
        Ok(p)
    }

    fn poll_core(&mut self, c: usize, now: u64, p: &mut Progress) -> Result<(), HalError> {
        // `poll_cores` passes only cores of both tables; checked once here,
        // so the compiler drops some of the indexing checks below.
        if c >= self.cores.len().min(self.map.cores.len()) {
            return Err(HalError::BadHandle);
        }
        // Ordering: Acquire pairs with the host's Release fetch_add of
        // RESET_REQ (`Lane::begin_reset`, the worker's reset steps): the
        // host stopped using the queues the request names.
        let req = self
            .hal
            .load_u32(self.map.cores[c].regs, reg::RESET_REQ, Ordering::Acquire)?;
        if req != self.cores[c].reset_ack {
            p.resets += 1;
            return self.reset(c, req);
        }
        let published = self.cores[c].dma.published(&*self.hal);
        let mut faulted = published.is_err();
        for _ in 0..published.unwrap_or(0).min(PAIRS_PER_POLL) {
            let k = &mut self.cores[c];
            match k.dma.step(&*self.hal, &self.map, now) {
                DmaStep::Waiting => break,
                DmaStep::Copied { len, published } => {
                    p.copies += 1;
                    // The device clock saturates like the engines' clocks (it is
                    // advanced by program-controlled DELAYs).
                    k.cycle = k.cycle.saturating_add(copy_cycles(len));
                    if let Some(tail) = published {
                        self.execute(c, tail, p)?;
                    }
                }
                DmaStep::Faulted => {
                    faulted = true;
                    break;
                }
            }
        }
        // The slots of every pair consumed go back at once.
        let released = self.cores[c].dma.release(&*self.hal);
        if (faulted || released.is_err()) && !self.cores[c].fault_reported {
            // A corrupt descriptor aborted the request being assembled:
            // its one record is a DMA error of class `Hw`.
            let k = &mut self.cores[c];
            k.fault_reported = true;
            p.faults += 1;
            let (exec_id, cycle) = (k.executed.wrapping_add(1), k.cycle);
            self.lone_error(c, exec_id, (ErrorClass::Hw, Source::Dma), cycle, p)?;
            return self.raise_irq(c);
        }
        Ok(())
    }

    /// Carry out reset request `req` on core `c` (module docs) and
    /// acknowledge it. The host uses none of the queues it touches until the
    /// acknowledgement: the lane stages nothing while the XU resets, and the
    /// worker reads the NQ rings only once the stop is acknowledged and
    /// starts over only after the re-initialisation is.
    fn reset(&mut self, c: usize, req: u32) -> Result<(), HalError> {
        let (hal, map) = (&*self.hal, &*self.map);
        let (r, regs) = (map.cores[c], map.cores[c].regs);
        let zero = |r, len: u32| hal.copy_in(r, 0, &vec![0u8; len as usize * crate::hal::RECORD]);
        let fresh = Core::new(map, c as u8).ok_or(HalError::BadHandle)?;
        let k = &mut self.cores[c];
        if req % 2 == 1 {
            // Stop: what is queued is discarded (its executions are aborted
            // by the worker); descriptor rings and request numbering restart.
            zero(r.m2s, map.config.ring_len)?;
            zero(r.s2m, map.config.ring_len)?;
            for r in [
                reg::M2S_TAIL_INC,
                reg::S2M_TAIL_INC,
                reg::M2S_HEAD,
                reg::S2M_HEAD,
                reg::SEQ_TAIL_INC,
                reg::SEQ_EVENT,
                reg::DMA_FAULT,
            ] {
                hal.store_u32(regs, r, 0, Ordering::Relaxed)?;
            }
            // Ordering: Release pairs with `Stager::in_flight`'s Acquire
            // load: every request buffer is free again.
            hal.store_u32(regs, reg::SEQ_HEAD, 0, Ordering::Release)?;
            (k.dma, k.executed, k.fault_reported) = (fresh.dma, 0, false);
        } else {
            // Re-initialise the NQ rings: writers at slot 0, phase 1, every
            // slot zeroed (a zeroed slot never carries the expected phase).
            for (e, ring) in r.nq.into_iter().enumerate() {
                zero(ring, map.config.nq_len)?;
                hal.store_u32(regs, reg::NQ_HEAD + 4 * e, 0, Ordering::Relaxed)?;
            }
            hal.store_u32(regs, reg::NQ_OVERFLOWS, 0, Ordering::Relaxed)?;
            (k.writers, k.overflows) = (fresh.writers, Vec::new());
        }
        k.reset_ack = req;
        // Ordering: Release pairs with the worker's Acquire load of
        // RESET_ACK: everything above (and every NQ record written before a
        // stop) is visible once the acknowledgement is.
        hal.store_u32(regs, reg::RESET_ACK, req, Ordering::Release)?;
        self.raise_irq(c)
    }

    /// The one record of a request no engine ran: its MACs (0), then an
    /// error of `class` from `source` on the SP ring at `cycle`.
    fn lone_error(
        &mut self,
        c: usize,
        exec_id: u32,
        (class, source): (ErrorClass, Source),
        cycle: u64,
        p: &mut Progress,
    ) -> Result<(), HalError> {
        self.put_macs(c, exec_id, 0)?;
        let kind = (Kind::Error(class), source);
        self.record(c, Engine::Sp, exec_id, kind, (cycle, cycle), p)
    }

    /// Write one NQ record; a full ring drops it (counted as a fault).
    /// Inlined into each request path, whose arguments it would otherwise
    /// take through the stack.
    #[inline(always)]
    fn record(
        &mut self,
        c: usize,
        engine: Engine,
        exec_id: u32,
        (kind, source): (Kind, Source),
        (start, end): (u64, u64),
        p: &mut Progress,
    ) -> Result<(), HalError> {
        let entry = NqEntry {
            exec_id,
            engine: engine.index() as u8,
            kind,
            source,
            phase: false,
            start_cycle: start as u32,
            end_cycle: end as u32,
        };
        let k = &mut self.cores[c];
        match k.writers[engine.index()].push(&*self.hal, entry)? {
            Ok(()) => p.records += 1,
            Err(o) => {
                p.faults += 1;
                k.overflows.push(o);
            }
        }
        Ok(())
    }

    /// Execute the request now published in DMEM (`tail`: the request tail
    /// the publish left).
    fn execute(&mut self, c: usize, tail: u32, p: &mut Progress) -> Result<(), HalError> {
        // The HAL and the map are borrowed per statement, never cloned: an
        // `Arc` clone per request writes the count on the line every thread
        // reads the HAL's region table from.
        let regs = self.map.cores[c].regs;
        let exec_id = self.cores[c].executed.wrapping_add(1);
        if tail == self.cores[c].executed {
            return Ok(());
        }
        p.executed += 1;
        // The request-load event: set by the second trigger pair.
        // Ordering: Acquire pairs with the DMA engine's Release store of
        // SEQ_EVENT in `DmaEngine::copy` (docs/abi.md §1.10, the evt-poke pair;
        // same device thread here, kept for a split device).
        let event = self.hal.load_u32(regs, reg::SEQ_EVENT, Ordering::Acquire)?;
        self.hal
            .store_u32(regs, reg::SEQ_EVENT, 0, Ordering::Relaxed)?;
        let mut body = [0u8; device_request::SIZE];
        self.hal
            .copy_out(self.map.cores[c].dmem, dmem::REQUEST, &mut body)?;
        let req = DeviceExecRequest::parse(&body).unwrap_or_default();

        let k = &mut self.cores[c];
        let mut start = k.cycle.saturating_add(DISPATCH_CYCLES);
        if req.do_model_switch != 0 {
            start = start.saturating_add(MODEL_SWITCH_CYCLES);
            k.switches = k.switches.wrapping_add(1);
            let n = k.switches;
            self.hal
                .store_u32(regs, reg::MODEL_SWITCHES, n, Ordering::Relaxed)?;
        }
        for flag in [req.reload_seq_config, req.load_act_dve_tables] {
            if flag != 0 {
                start = start.saturating_add(RELOAD_CYCLES);
            }
        }

        if event == 0 {
            // Published without the event poke: the sequencer cannot trust
            // DMEM. One sequencer error record, nothing executed.
            let error = (ErrorClass::Runtime, Source::Sequencer);
            self.lone_error(c, exec_id, error, start, p)?;
            p.faults += 1;
            return self.finish(c, exec_id, start, 0);
        }

        let out = {
            let mem = DramMemory::new(&*self.hal, &self.map);
            self.exec.execute(&mem, &req, start)
        };
        self.put_macs(c, exec_id, out.macs)?;
        let mut any = false;
        for e in Engine::ALL {
            if req.engine_address(e) == 0 {
                continue;
            }
            any = true;
            let o = &out.engines[e.index()];
            let kind = match (o.state, o.fault) {
                (EngineState::Done, _) => (Kind::Done, Source::Engine),
                (EngineState::Faulted, f) => {
                    let class = f.map_or(ErrorClass::Runtime, |f| f.class());
                    (Kind::Error(class), Source::Engine)
                }
                // A block that the engines did not run: the sequencer's error.
                _ => (Kind::Error(ErrorClass::Runtime), Source::Sequencer),
            };
            self.record(c, e, exec_id, kind, (o.start_cycle, o.end_cycle), p)?;
        }
        if !any {
            // No engine had a block: one DONE record from the sequencer.
            let kind = (Kind::Done, Source::Sequencer);
            self.record(c, Engine::Sp, exec_id, kind, (start, start), p)?;
        }
        self.finish(c, exec_id, out.end_cycle.max(start), out.macs)
    }

    /// Write request `exec_id`'s MACs, before its records (their Release
    /// publishes the word to the worker that acquires them). Every path
    /// that writes records for a request writes its MACs too (0 when nothing
    /// ran): the word is in the request's buffer slot, which the request
    /// `request_slots` earlier used, and a worker must never read that one's.
    fn put_macs(&self, c: usize, exec_id: u32, macs: u64) -> Result<(), HalError> {
        self.hal.store_u64(
            self.map.dram,
            self.map.request_macs_off(c as u8, exec_id) as usize,
            macs,
            Ordering::Relaxed,
        )
    }

    /// Bookkeeping after a request: clocks, counters, `SEQ_HEAD`, interrupt.
    /// Inlined, as [`Self::record`] is.
    #[inline(always)]
    fn finish(&mut self, c: usize, exec_id: u32, end: u64, macs: u64) -> Result<(), HalError> {
        let regs = self.map.cores[c].regs;
        let core = &mut self.cores[c];
        core.executed = exec_id;
        core.cycle = end;
        core.macs = core.macs.wrapping_add(macs);
        self.hal
            .store_u64(regs, reg::CYCLE, core.cycle, Ordering::Relaxed)?;
        // Ordering: Release: a monitor that loads the new total with Acquire
        // also sees this request's NQ records (the register is ours, the
        // source of the NDS MAC_COUNT counter, docs/abi.md §2.4; no library code
        // reads it, tests/device/whole_loop.rs does, with Acquire).
        self.hal
            .store_u64(regs, reg::MAC_COUNT, core.macs, Ordering::Release)?;
        // Ordering: Release pairs with `Stager::stage_and_doorbell`'s Acquire
        // load of SEQ_HEAD: this request's buffer may be reused (ours: flow
        // control over the docs/abi.md §1.5 request buffers).
        self.hal
            .store_u32(regs, reg::SEQ_HEAD, exec_id, Ordering::Release)?;
        self.raise_irq(c)
    }

    /// The core's NQ interrupt, if the worker armed it ([`irq::raise`]).
    fn raise_irq(&self, c: usize) -> Result<(), HalError> {
        let r = &self.map.cores[c];
        irq::raise(&*self.hal, r.regs, r.nq_irq).map(drop)
    }
}
