//! Request staging: the submit path's device half (docs/abi.md §1.5, §1.9).
//!
//! For one execution of a loaded model on a core, [`Stager::stage_and_doorbell`]
//!
//! 1. fills a `device_exec_request_t`: each engine's instruction-block
//!    address is `base pa + align_offset + offset` from the model's
//!    per-engine table, split into the `eng_addresses_lo` / `_hi` arrays for
//!    **all five** engines (the seed's pseudo-code loops `0..4`, but the
//!    struct has five entries and docs/abi.md §1.5's prose names five engines: bytes win);
//!    `do_model_switch`, `reload_seq_config` and `load_act_dve_tables` are set
//!    only when the model on this core changes (the skip-config diff);
//! 2. copies the 52-byte body into a request buffer in device DRAM
//!    (`dmem_buf_copyin(req_buf, &req, 0, 0x34)`), then the 4-byte
//!    `cc_dma_increment` trailer at 0x34;
//! 3. appends the three trigger pairs as real M2S/S2M descriptor pairs:
//!    request copy (52 bytes into the sequencer's DMEM), event poke (4 bytes
//!    into `SEQ_EVENT`), tail increment (4 bytes into `SEQ_TAIL_INC`);
//! 4. rings the doorbell (S2M tail increment, then M2S). The tail increment
//!    is the publish: everything above is in device memory before it.
//!
//! The order is pinned by the tracer snapshot in `tests/device/staging.rs`
//! and by the loom model in `loom-tests/tests/device_boundary.rs`, whose
//! `device_tail_first` mutant (below) publishes before the body is written.

use std::sync::Arc;

use crate::hal::{Hal, HalError, Ordering};
use crate::wire::device_request::{self, DeviceExecRequest, Engine};

use super::dma::QueueProducer;
use super::memmap::{core_area, dmem, reg, MemMap, UnitError};
use super::nq::EngineMask;

/// A loaded model's identity (assigned by the loader; the skip-config diff
/// compares it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModelId(pub u32);

/// One engine's instruction-block address, as the runtime's
/// `ib_addrs_one_eng_t` gives it (docs/abi.md §1.5): the allocation's base pa,
/// the alignment offset inside the allocation, and the block's offset in the
/// model image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IbAddr {
    /// `base->_pa`.
    pub base_pa: u64,
    /// `base->align_offset`.
    pub align_offset: u64,
    /// `one_offset.offset`.
    pub offset: u64,
}

impl IbAddr {
    /// `base_pa + align_offset + offset` (wrapping, as the C arithmetic).
    pub const fn pa(&self) -> u64 {
        self.base_pa
            .wrapping_add(self.align_offset)
            .wrapping_add(self.offset)
    }
}

/// A model loaded into device DRAM: its id and per-engine block table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedModel {
    /// Identity for the skip-config diff.
    pub id: ModelId,
    /// Per engine (PE, ACT, POOL, DVE, SP): its block, or `None` (idle).
    pub ib: [Option<IbAddr>; device_request::NUM_ENGINES],
}

impl LoadedModel {
    /// Engine `e`'s block address (0 when idle).
    pub fn engine_address(&self, e: Engine) -> u64 {
        self.ib[e.index()].map_or(0, |ib| ib.pa())
    }

    /// The engines that write NQ records for this model: those with a
    /// non-zero block address; a model with none gets a single sequencer
    /// record on the SP ring.
    pub fn engines(&self) -> EngineMask {
        let mask = Engine::ALL
            .iter()
            .filter(|e| self.engine_address(**e) != 0)
            .fold(0, |m, e| m | (1 << e.index()));
        match mask {
            0 => 1 << Engine::Sp.index(),
            m => m,
        }
    }
}

/// Fill the request for `model`; `switch` sets `do_model_switch` and the two
/// reload flags (the model on the core changed).
pub fn build_request(model: &LoadedModel, switch: bool) -> DeviceExecRequest {
    // All five engines (docs/abi.md §1.5: the struct's arrays are five wide).
    let mut req =
        DeviceExecRequest::with_engine_addresses(Engine::ALL.map(|e| model.engine_address(e)));
    let flag = u32::from(switch);
    req.do_model_switch = flag;
    req.reload_seq_config = flag;
    req.load_act_dve_tables = flag;
    req
}

/// What staging handed to the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Staged {
    /// The per-core request number (1, 2, ...; wrapping u32): the NQ records
    /// of this execution carry it.
    pub exec_id: u32,
    /// The core.
    pub core: u8,
    /// The engines whose NQ records complete it (give it to
    /// [`super::nq::Harvester::expect`]).
    pub engines: EngineMask,
    /// Whether the skip-config diff set the model-switch flags.
    pub model_switch: bool,
    /// The request as staged.
    pub request: DeviceExecRequest,
}

pub use super::dma::StageError;

/// Trigger pairs per request.
pub const PAIRS_PER_REQUEST: u32 = 3;
/// Bytes the request-copy pair moves (the 52-byte body).
pub const REQUEST_COPY_LEN: u32 = device_request::SIZE as u32;

/// The host side of one core: stages requests and rings its doorbell. One
/// per core (it owns the core's descriptor-ring producer cursors).
#[derive(Debug)]
pub struct Stager<H> {
    hal: Arc<H>,
    map: Arc<MemMap>,
    core: u8,
    queue: QueueProducer,
    staged: u32,
    current: Option<ModelId>,
}

impl<H: Hal> Stager<H> {
    /// The stager of `core` (fresh device: no model loaded on the core yet),
    /// or [`UnitError::Core`] for a core `map` does not have.
    pub fn new(hal: Arc<H>, map: Arc<MemMap>, core: u8) -> Result<Stager<H>, UnitError> {
        let queue = QueueProducer::new(&map, core)?;
        Ok(Stager {
            hal,
            map,
            core,
            queue,
            staged: 0,
            current: None,
        })
    }

    /// The core.
    #[cfg(any(test, feature = "testkit"))]
    pub fn core(&self) -> u8 {
        self.core
    }

    /// Requests staged so far (the last `exec_id`).
    #[cfg(any(test, feature = "testkit"))]
    pub fn staged(&self) -> u32 {
        self.staged
    }

    /// The descriptor-queue producer (for inspection).
    #[cfg(any(test, feature = "testkit"))]
    pub fn queue(&self) -> &QueueProducer {
        &self.queue
    }

    /// Request buffers (staging slots) taken: staged and not yet executed.
    /// A slot is given back by the device executing its request (`SEQ_HEAD`
    /// reaching its `exec_id`), whether or not a worker expects it.
    pub fn in_flight(&self) -> Result<u32, HalError> {
        let regs = self.map.cores[usize::from(self.core)].regs;
        // Ordering: Acquire pairs with `Sequencer::finish`'s Release store of
        // SEQ_HEAD: the request buffers of executed requests are free (ours:
        // flow control over the docs/abi.md §1.5 request buffers).
        let executed = self.hal.load_u32(regs, reg::SEQ_HEAD, Ordering::Acquire)?;
        Ok(self.staged.wrapping_sub(executed))
    }

    /// Start over after the device was asked to stop (the XU reset): no
    /// request staged, descriptor rings at slot 0 with ring id 1, and no
    /// model on the core (the next request switches). The caller stages
    /// nothing until the device acknowledged the stop (it zeroes the rings
    /// and `SEQ_HEAD` this resets against).
    pub fn reset(&mut self) -> Result<(), UnitError> {
        self.queue = QueueProducer::new(&self.map, self.core)?;
        self.staged = 0;
        self.current = None;
        Ok(())
    }

    /// Stage one execution of `model` and ring the doorbell (module docs).
    /// Refusals ([`StageError::Busy`], [`StageError::RingFull`]) change
    /// nothing.
    pub fn stage_and_doorbell(
        &mut self,
        model: &LoadedModel,
        cc_dma_increment: u32,
    ) -> Result<Staged, StageError> {
        let (hal, map, core) = (&*self.hal, &*self.map, self.core);
        let slots = map.config.request_slots;

        // Flow control first, so a refusal changes nothing.
        let in_flight = self.in_flight()?;
        if in_flight >= slots {
            return Err(StageError::Busy { in_flight });
        }
        let need = PAIRS_PER_REQUEST;
        let free = self.queue.free(hal)?;
        if free < need {
            return Err(StageError::RingFull { need, free });
        }

        // 1. Fill the request (skip-config diff).
        let switch = self.current != Some(model.id);
        let req = build_request(model, switch);
        let exec_id = self.staged.wrapping_add(1);
        let slot = map.request_slot(exec_id);
        let buf = map.request_buf_off(core, slot);

        #[cfg(not(xunds_mutant = "device_tail_first"))]
        {
            self.copy_in_body(&req, buf, cc_dma_increment)?;
            self.trigger(buf)?;
        }
        // MUTANT: publish (trigger pairs + doorbell) before the body is in
        // device memory; the loom model must catch the torn request.
        #[cfg(xunds_mutant = "device_tail_first")]
        {
            self.trigger(buf)?;
            self.copy_in_body(&req, buf, cc_dma_increment)?;
        }

        self.staged = exec_id;
        self.current = Some(model.id);
        Ok(Staged {
            exec_id,
            core,
            engines: model.engines(),
            model_switch: switch,
            request: req,
        })
    }

    /// Steps 2: the body, then the trailer, into the request buffer.
    fn copy_in_body(
        &self,
        req: &DeviceExecRequest,
        buf: u64,
        cc_dma_increment: u32,
    ) -> Result<(), StageError> {
        let (hal, dram) = (&*self.hal, self.map.dram);
        // dmem_buf_copyin(req_buf, &exec_req, 0, 0x34)
        hal.copy_in(dram, buf as usize, &req.encode())?;
        // dmem_buf_copyin(req_buf, &cc_dma_increment, 0x34, 4)
        let trailer = buf as usize + device_request::CC_DMA_INCREMENT_OFF;
        hal.copy_in(dram, trailer, &cc_dma_increment.to_le_bytes())?;
        Ok(())
    }

    /// Steps 3 and 4: the three trigger pairs, then the doorbell.
    fn trigger(&mut self, buf: u64) -> Result<(), StageError> {
        let (hal, map, core) = (&*self.hal, &*self.map, self.core);
        let (area, reg_pa) = (map.core_area_off(core), |r| map.reg_pa(core, r));
        let pairs = [
            // Pair 1: request copy (52 bytes, DRAM request buffer -> DMEM).
            (REQUEST_COPY_LEN, buf, map.dmem_pa(core, dmem::REQUEST)),
            // Pair 2: event poke (4 bytes -> SEQ_EVENT).
            (4, area + core_area::EVENT_VALUE, reg_pa(reg::SEQ_EVENT)),
            // Pair 3: tail increment (4 bytes -> SEQ_TAIL_INC): the publish.
            (
                4,
                area + core_area::TAIL_INC_VALUE,
                reg_pa(reg::SEQ_TAIL_INC),
            ),
        ];
        for (len, src, dst) in pairs {
            self.queue.push_copy(hal, len, map.dram_pa(src), dst)?;
        }
        // The doorbell: S2M tail increment, then M2S.
        self.queue.doorbell(hal, PAIRS_PER_REQUEST)?;
        Ok(())
    }
}
