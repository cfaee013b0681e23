//! What travels between the actors: work items and their per-core pool, the
//! models resident on the device, caller-owned output buffers, the XU health
//! cell, and the NDS publisher's messages.
//!
//! ## Work items (docs/abi.md §1.6)
//!
//! Each core has a preallocated [`ItemPool`]: one [`WorkItem`] per ring slot,
//! each holding the 208-byte `tpb_execution_info_t` bytes plus host-side
//! bookkeeping (the model, the execution id staging returned, the submission
//! time, what to check the output against, the caller's output buffer). The
//! slot's `exec_info` word carries the **address of the item's cell**, as the
//! C runtime's pointer does; the worker resolves it back to an index with a
//! range and stride check ([`ItemPool::index_of`]), never by dereferencing.
//!
//! Ownership moves with the item's index: the producer takes a free index
//! (its free list, refilled from the worker's return mailbox), fills the
//! item, and publishes it through the ring (`scheduled_head` Release); the
//! worker uses it between `peek` and `return_item` and pushes the index back
//! (mailbox Release) **before** it pops the slot (docs/abi.md §1.6: the item
//! is released after its last read and before the pop; the slot keeps a stale
//! word that nobody reads again). Each cell is a `Mutex` that is therefore
//! never contended; it makes the hand-over safe without `unsafe`.
//!
//! ## IO areas
//!
//! Executions on one XU pipeline (the producer stages the next while the
//! device runs the current and the worker reads the previous one's output),
//! so every (core, model, item) has its own IO area. The model's code is
//! linked once per item with that item's IO address in its `R2` prologue
//! (blocks are straight-line and position-independent apart from their base
//! registers); constants and scratch are shared per (core, model). All the
//! variants of a model on a core share one [`ModelId`](crate::device::staging::ModelId),
//! so the skip-config diff sets `do_model_switch` only when the *model* on
//! the core changes, not when the IO binding does.

use core::fmt;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::actors::Nanos;
use crate::device::model::{MemUsage, ModelImage, Section};
use crate::device::nq::EngineMask;
use crate::device::staging::LoadedModel;
use crate::fsm::xu_health::{XuHealth, XuHealthEvent, XuHealthState};
use crate::fsm::{step_traced, TransitionHook};
use crate::wire::nds::counters::NcCounter;
use crate::wire::nds::model::ModelRecord;
use crate::wire::nq::ErrorClass;
use crate::wire::status::NrtStatus;
use crate::wire::work_item;

/// `expect` value of an item whose output is not checked.
pub const NO_EXPECT: u32 = u32::MAX;

/// A caller-owned buffer the worker copies an execution's outputs into
/// before it publishes completion (read it after observing completion).
#[derive(Debug)]
pub struct OutputBuf {
    vals: Box<[AtomicU32]>,
}

impl OutputBuf {
    /// A buffer of `len` f32 values (zero).
    pub fn new(len: usize) -> OutputBuf {
        OutputBuf {
            vals: (0..len).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.vals.len()
    }

    /// `true` for a zero-length buffer.
    pub fn is_empty(&self) -> bool {
        self.vals.is_empty()
    }

    /// The values. Read after observing completion: the worker's stores
    /// happen-before its `exec_head` Release, which the completion query
    /// acquires.
    pub fn to_vec(&self) -> Vec<f32> {
        self.vals
            .iter()
            .map(|v| f32::from_bits(v.load(Ordering::Relaxed)))
            .collect()
    }

    /// The worker's store (Relaxed; published by the pop's Release).
    pub(crate) fn store(&self, i: usize, v: f32) {
        if let Some(cell) = self.vals.get(i) {
            cell.store(v.to_bits(), Ordering::Relaxed);
        }
    }
}

/// A model on one core: one code variant and one IO area per work item.
#[derive(Clone, Debug)]
pub struct CoreModel {
    /// Per work-item index: the model as staging sees it (all variants share
    /// one `ModelId`).
    pub variants: Vec<LoadedModel>,
    /// Per work-item index: the IO area's physical address.
    pub io_pa: Vec<u64>,
    /// Device bytes this core holds for the model, by NDS category.
    pub device: MemUsage,
    /// Device allocations (the grid's `chunk_count`).
    pub chunks: u32,
}

/// A tensor of the IO area: byte offset from the area's start, elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoTensor {
    /// Byte offset within the IO area.
    pub offset: u64,
    /// f32 elements.
    pub elems: u32,
}

/// A model loaded on every core of the device.
#[derive(Debug)]
pub struct ResidentModel {
    /// The API handle (1, 2, ...; the NDS record's `model_id`).
    pub handle: u32,
    /// Name (the NDS record's `name`).
    pub name: String,
    /// The image linked for core 0's first variant: tensor layout, MACs and
    /// the CPU reference.
    pub image: ModelImage,
    /// Per core.
    pub per_core: Vec<CoreModel>,
    /// Input tensors, in reference order.
    pub inputs: Vec<IoTensor>,
    /// Output tensors, in reference order.
    pub outputs: Vec<IoTensor>,
    /// Host bytes kept for the model (its linked image), by NDS category.
    pub host: MemUsage,
}

impl ResidentModel {
    /// The IO tensors of an image (all live in its IO section).
    pub fn io_tensors(image: &ModelImage) -> (Vec<IoTensor>, Vec<IoTensor>) {
        let conv = |ts: &[crate::device::model::TensorDesc]| {
            ts.iter()
                .filter(|t| t.section == Section::Io)
                .map(|t| IoTensor {
                    offset: t.offset,
                    elems: t.elems() as u32,
                })
                .collect::<Vec<_>>()
        };
        (conv(&image.inputs), conv(&image.outputs))
    }

    /// Elements of all inputs together.
    pub fn input_len(&self) -> usize {
        self.inputs.iter().map(|t| t.elems as usize).sum()
    }

    /// Elements of all outputs together.
    pub fn output_len(&self) -> usize {
        self.outputs.iter().map(|t| t.elems as usize).sum()
    }
}

/// One work item: the ABI bytes and the host's bookkeeping.
#[derive(Debug)]
pub struct WorkItem {
    /// The 208-byte `tpb_execution_info_t` (docs/abi.md §1.6, `wire::work_item`).
    pub info: [u8; work_item::SIZE],
    /// The model it runs.
    pub model: Option<Arc<ResidentModel>>,
    /// The per-core request number staging returned.
    pub exec_id: u32,
    /// The engines whose NQ records complete it.
    pub engines: EngineMask,
    /// When it was scheduled.
    pub submitted: Nanos,
    /// Index into the worker's expected outputs, or [`NO_EXPECT`].
    pub expect: u32,
    /// Where the worker copies the outputs (the caller's).
    pub out: Option<Arc<OutputBuf>>,
    /// The caller's tag (e.g. the execution number of a workload).
    pub tag: u64,
}

impl WorkItem {
    fn empty() -> WorkItem {
        WorkItem {
            info: [0; work_item::SIZE],
            model: None,
            exec_id: 0,
            engines: 0,
            submitted: Nanos::ZERO,
            expect: NO_EXPECT,
            out: None,
            tag: 0,
        }
    }
}

/// A core's preallocated work items.
pub struct ItemPool {
    cells: Box<[Mutex<WorkItem>]>,
}

impl fmt::Debug for ItemPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemPool")
            .field("len", &self.cells.len())
            .finish()
    }
}

impl ItemPool {
    /// `n` empty items (`n <= 65536`).
    pub fn new(n: usize) -> ItemPool {
        assert!((1..=1 << 16).contains(&n), "pool size {n}");
        ItemPool {
            cells: (0..n).map(|_| Mutex::new(WorkItem::empty())).collect(),
        }
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// `true` for an empty pool (never: `new` refuses it).
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// The `exec_info` word of item `i`: the address of its cell.
    pub fn word(&self, i: u16) -> u64 {
        &self.cells[usize::from(i)] as *const Mutex<WorkItem> as usize as u64
    }

    /// The item index an `exec_info` word names, checked by range and
    /// stride (a word that is not one of ours is `None`).
    pub fn index_of(&self, word: u64) -> Option<u16> {
        let base = self.cells.as_ptr() as usize as u64;
        let stride = core::mem::size_of::<Mutex<WorkItem>>() as u64;
        let off = word.checked_sub(base)?;
        if off % stride != 0 || off / stride >= self.cells.len() as u64 {
            return None;
        }
        u16::try_from(off / stride).ok()
    }

    /// Lock item `i` (never contended: see the module docs).
    pub fn lock(&self, i: u16) -> MutexGuard<'_, WorkItem> {
        self.cells[usize::from(i)]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }
}

/// The health of one XU, shared by its producer lane (reads) and worker
/// (degrades, recovers), stepped through [`XuHealth`]. On its own cache line
/// (read on every schedule; a hot neighbour would make each read a miss).
///
/// A degraded XU also remembers whether its queues are known intact: a
/// fault the device reported in an error record (the record arrived, every
/// queue is in step) can be recovered once the XU has drained
/// ([`HealthCell::recover`]); a lost record, a lost doorbell, a DMA abort
/// or an NQ overflow leaves the device queues out of step, and the XU stays
/// degraded (re-initialising those queues is not implemented).
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct HealthCell(AtomicU8);

const HEALTHY: u8 = 0;
/// Degraded with every queue in step: recoverable.
const DEGRADED_INTACT: u8 = 1;
/// Degraded with queues possibly out of step: not recoverable.
const DEGRADED_LOST: u8 = 2;

/// Why [`HealthCell::recover`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecoverError {
    /// The XU is healthy.
    NotDegraded,
    /// A record, doorbell or descriptor was lost or corrupted: the device
    /// queues are out of step and would need re-initialising.
    QueuesLost,
    /// Executions are still in flight on the XU: wait for them first.
    InFlight(u64),
    /// No such XU.
    NoSuchXu,
}

impl core::fmt::Display for RecoverError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            RecoverError::NotDegraded => "the XU is not degraded",
            RecoverError::QueuesLost => {
                "the XU lost a record, doorbell or descriptor: its device queues are out of step"
            }
            RecoverError::InFlight(_) => "executions are still in flight on the XU",
            RecoverError::NoSuchXu => "no such XU",
        })
    }
}

impl HealthCell {
    /// A healthy XU.
    pub fn new() -> HealthCell {
        HealthCell(AtomicU8::new(HEALTHY))
    }

    /// The current state.
    #[inline]
    pub fn state(&self) -> XuHealthState {
        // Ordering: Acquire pairs with the Release stores in `degrade` and
        // `recover`: a schedule that sees DEGRADED also sees why, one that
        // sees HEALTHY again sees the recovery's drained queues.
        match self.0.load(Ordering::Acquire) {
            HEALTHY => XuHealthState::Healthy,
            _ => XuHealthState::Degraded,
        }
    }

    /// Step `event` (`Timeout` or `FatalError`), tracing it as
    /// `xu_health#<core>`, with the queues possibly out of step (not
    /// recoverable). Returns `true` when the XU just became degraded.
    pub fn degrade<H: TransitionHook + ?Sized>(
        &self,
        event: XuHealthEvent,
        core: u8,
        hook: &mut H,
    ) -> bool {
        self.degrade_as(event, DEGRADED_LOST, core, hook)
    }

    /// [`HealthCell::degrade`] for a fault the device reported in an error
    /// record, every queue in step: recoverable once drained.
    pub fn degrade_intact<H: TransitionHook + ?Sized>(
        &self,
        event: XuHealthEvent,
        core: u8,
        hook: &mut H,
    ) -> bool {
        self.degrade_as(event, DEGRADED_INTACT, core, hook)
    }

    fn degrade_as<H: TransitionHook + ?Sized>(
        &self,
        event: XuHealthEvent,
        how: u8,
        core: u8,
        hook: &mut H,
    ) -> bool {
        let from = self.state();
        let to = step_traced::<XuHealth, H>(from, event, u64::from(core), hook).unwrap_or(from);
        if to == XuHealthState::Degraded {
            // Ordering: Release pairs with the Acquire load in `state`. The
            // max keeps "queues lost" once it is known.
            self.0.fetch_max(how, Ordering::Release);
        }
        from == XuHealthState::Healthy && to == XuHealthState::Degraded
    }

    /// `true` when the XU is degraded and recoverable.
    pub fn recoverable(&self) -> bool {
        // Ordering: Acquire, as in `state`.
        self.0.load(Ordering::Acquire) == DEGRADED_INTACT
    }

    /// Bring a degraded XU back (`recover`, traced as `xu_health#<core>`):
    /// only when its queues are known intact. The caller must have drained
    /// the XU first (nothing in flight on its ring or device), as the
    /// runtime's reset does.
    pub fn recover<H: TransitionHook + ?Sized>(
        &self,
        core: u8,
        hook: &mut H,
    ) -> Result<(), RecoverError> {
        // Ordering: Acquire on success pairs with the Release in
        // `degrade_as`; Release publishes the recovery to `state`.
        match self.0.compare_exchange(
            DEGRADED_INTACT,
            HEALTHY,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                let _ = step_traced::<XuHealth, H>(
                    XuHealthState::Degraded,
                    XuHealthEvent::Recover,
                    u64::from(core),
                    hook,
                );
                Ok(())
            }
            Err(HEALTHY) => Err(RecoverError::NotDegraded),
            Err(_) => Err(RecoverError::QueuesLost),
        }
    }
}

/// One completed execution, as a worker reports it to the NDS publisher.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The core (XU).
    pub core: u8,
    /// The status the caller got.
    pub status: NrtStatus,
    /// The error class behind it (device-reported), if any.
    pub class: Option<ErrorClass>,
    /// An EXT NC counter it also counts (`HW_ERR_DMA_ABORT`, `ERR_SW_NQ_OVERFLOW`).
    pub ext: Option<NcCounter>,
    /// `LATENCY_TOTAL` contribution: submission to completion, host ns.
    pub latency_total_ns: u64,
    /// `LATENCY_DEVICE` contribution: first to last engine record, device ns
    /// (1 cycle = 1 ns); 0 for a timeout.
    pub latency_device_ns: u64,
    /// `MAC_COUNT` contribution (the core's `MAC_COUNT` register delta).
    pub macs: u64,
}

/// A model record and its memory, for the publisher (boxed: rare and large).
#[derive(Clone, Debug)]
pub struct ModelLoad {
    /// The API handle.
    pub handle: u32,
    /// The core.
    pub core: u8,
    /// The record to commit (its `mem_usage` grid filled).
    pub record: ModelRecord,
    /// Device bytes on this core (the NC `MEM_USAGE_*_DEVICE` counters).
    pub device: MemUsage,
    /// Host bytes (the ND `MEM_USAGE_*_HOST` counters); counted once per
    /// model, on its core-0 message.
    pub host: MemUsage,
}

/// What the NDS publisher receives.
#[derive(Clone, Debug)]
pub enum PubMsg {
    /// An execution completed (from a worker).
    Completed(Completion),
    /// Schedule calls refused on a core (from a producer lane, aggregated):
    /// each counts `INFER_FAILED_TO_QUEUE`.
    Refused {
        /// The core.
        core: u8,
        /// Refused with `NRT_QUEUE_FULL`.
        full: u32,
        /// Refused with `NRT_EXEC_UNIT_UNRECOVERABLE`.
        unrecoverable: u32,
    },
    /// A model was loaded on a core (control channel).
    ModelLoaded(Box<ModelLoad>),
    /// A model was unloaded from a core (control channel).
    ModelUnloaded {
        /// The API handle.
        handle: u32,
        /// The core.
        core: u8,
        /// The device bytes to subtract.
        device: MemUsage,
        /// The host bytes to subtract (core-0 message only; else zero).
        host: MemUsage,
    },
    /// Host memory the system itself holds (work-item pools, rings):
    /// `MEM_USAGE_MISC_HOST`.
    HostMisc {
        /// Bytes.
        bytes: u64,
    },
}

/// The expected outputs a worker checks against, by `WorkItem::expect`.
#[derive(Debug, Default)]
pub struct Expectations {
    /// Concatenated outputs per expectation id.
    pub outputs: Vec<Vec<f32>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_of_accepts_only_our_cell_addresses() {
        let pool = ItemPool::new(5);
        for i in 0..5 {
            assert_eq!(pool.index_of(pool.word(i)), Some(i));
        }
        let w = pool.word(1);
        assert_eq!(pool.index_of(w + 1), None);
        assert_eq!(pool.index_of(0), None);
        assert_eq!(
            pool.index_of(pool.word(4) + (pool.word(1) - pool.word(0))),
            None
        );
        assert_eq!(pool.index_of(u64::MAX), None);
    }

    #[test]
    fn health_degrades_once_and_stays() {
        let h = HealthCell::new();
        let mut log: Vec<crate::fsm::Transition> = Vec::new();
        assert_eq!(h.state(), XuHealthState::Healthy);
        assert!(h.degrade(XuHealthEvent::Timeout, 2, &mut log));
        assert!(!h.degrade(XuHealthEvent::FatalError, 2, &mut log));
        assert_eq!(h.state(), XuHealthState::Degraded);
        assert_eq!(log.len(), 2);
        assert_eq!(log[0].machine, "xu_health");
        assert_eq!(log[0].id, 2);
        // Queues possibly out of step: no recovery.
        assert!(!h.recoverable());
        assert_eq!(h.recover(2, &mut log), Err(RecoverError::QueuesLost));
        assert_eq!(h.state(), XuHealthState::Degraded);
    }

    #[test]
    fn health_recovers_only_with_its_queues_intact() {
        let h = HealthCell::new();
        let mut log: Vec<crate::fsm::Transition> = Vec::new();
        assert_eq!(h.recover(1, &mut log), Err(RecoverError::NotDegraded));
        assert!(h.degrade_intact(XuHealthEvent::FatalError, 1, &mut log));
        assert!(h.recoverable());
        assert_eq!(h.recover(1, &mut log), Ok(()));
        assert_eq!(h.state(), XuHealthState::Healthy);
        assert_eq!(log.last().unwrap().to, "HEALTHY");
        // A lost queue entry after an intact fault: no recovery.
        assert!(h.degrade_intact(XuHealthEvent::FatalError, 1, &mut log));
        assert!(!h.degrade(XuHealthEvent::Timeout, 1, &mut log));
        assert_eq!(h.recover(1, &mut log), Err(RecoverError::QueuesLost));
    }

    #[test]
    fn output_buf_round_trips_bits() {
        let b = OutputBuf::new(3);
        b.store(1, -0.0);
        b.store(2, f32::NAN);
        b.store(9, 1.0);
        let v = b.to_vec();
        assert_eq!(v[0].to_bits(), 0);
        assert_eq!(v[1].to_bits(), (-0.0f32).to_bits());
        assert!(v[2].is_nan());
    }
}
