//! What travels between the actors: work items and their per-core pool, the
//! models resident on the device, caller-owned output buffers, the XU health
//! cell, and the NDS publisher's messages.
//!
//! ## Work items (docs/abi.md §1.6)
//!
//! Each core has an [`ItemPool`]: a region the HAL maps
//! ([`RegionId::WorkItems`]) of one 208-byte `tpb_execution_info_t` per
//! ring slot, in the ABI's layout, and a side table ([`HostSide`]) of what
//! the host keeps that the ABI has no field for (the request number staging
//! returned, the engines, the expected output, the caller's output buffer,
//! the tag, the seq_id). The slot's `exec_info` word is the **address of the
//! item's first byte**; the worker resolves it back to an index with a range
//! and stride check ([`ItemPool::index_of`]), never by dereferencing, reads
//! the fields it decides on through the HAL in two runs ([`ItemPool::load`]:
//! `type` .. `sync_point_cpu_timestamp`, then `ts_start`), parses them with
//! the wire view, and writes the `infer_resp_t` fields it owns back in two
//! runs ([`ItemPool::store_resp`]: `status` .. `nq_records`, `ts_end` ..
//! `num_outputs`). A run is one HAL access (one trace record, named by its
//! first field) where a field-by-field access was one per field. A bad
//! item ([`BadItem`]) completes with a defined status.
//!
//! Ownership moves with the item's index: the producer takes a free index
//! (its free list, refilled from the worker's return mailbox), writes the
//! item, and publishes it through the ring (`scheduled_head` Release, which
//! also orders the item's bytes before the worker's loads); the worker uses
//! it between `peek` and `return_item` and pushes the index back (mailbox
//! Release) **before** it pops the slot (docs/abi.md §1.6: the item is
//! released after its last read and before the pop; the slot keeps a stale
//! word that nobody reads again). The side table's cells are `Mutex`es that are therefore never
//! contended.
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

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use crate::device::model::{MemUsage, ModelImage, Section};
use crate::device::nq::EngineMask;
use crate::device::staging::LoadedModel;
use crate::fsm::xu_health::{XuHealth, XuHealthEvent, XuHealthState};
use crate::fsm::{step_traced, Fsm, TransitionHook};
use crate::hal::{Hal, HalError, RegionHandle, RegionId};
use crate::wire::nds::counters::NcCounter;
use crate::wire::nds::model::ModelRecord;
use crate::wire::status::NrtStatus;
use crate::wire::work_item::{self, InferResp, TpbExecutionInfo, WorkType};
use crate::wire::WireError;

/// `expect` value of an item whose output is not checked.
pub const NO_EXPECT: u32 = u32::MAX;

/// A caller-owned buffer the worker copies an execution's outputs into
/// before it publishes completion (read it after observing completion).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use xunds::hal::linux::LinuxHal;
/// use xunds::system::{MlpSpec, OutputBuf, ScheduleOpts, System, SystemConfig};
///
/// let sys = System::start(LinuxHal::new(), SystemConfig::new(1)).unwrap();
/// let m = sys.load_mlp(&MlpSpec::EXAMPLE, "mlp").unwrap();
/// let out = Arc::new(OutputBuf::new(m.output_len()));
/// assert_eq!(out.to_vec(), vec![0.0; m.output_len()]);
/// let x = MlpSpec::EXAMPLE.example_input(2);
/// let opts = ScheduleOpts { out: Some(out.clone()), ..ScheduleOpts::default() };
/// let seq = sys.schedule(0, &m, &x, opts).unwrap();
/// sys.wait(seq, Duration::from_secs(10)).unwrap();
/// assert_eq!(out.to_vec(), m.reference(&x));
/// sys.shutdown().unwrap();
/// ```
#[derive(Debug)]
pub struct OutputBuf {
    vals: Box<[AtomicU32]>,
    /// The execution's `infer_resp_t` bytes, as the worker read them back
    /// from the work item (little-endian words).
    resp: [AtomicU64; work_item::INFER_RESP_SIZE / 8],
}

impl OutputBuf {
    /// A buffer of `len` f32 values (zero).
    pub fn new(len: usize) -> OutputBuf {
        OutputBuf {
            vals: (0..len).map(|_| AtomicU32::new(0)).collect(),
            resp: Default::default(),
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
        let bits = self.vals.iter().map(|v| v.load(Ordering::Relaxed));
        bits.map(f32::from_bits).collect()
    }

    /// The execution's response, parsed from the bytes the worker copied
    /// out of the work item (read after observing completion, as `to_vec`).
    pub fn response(&self) -> Result<InferResp, WireError> {
        let mut b = [0u8; work_item::INFER_RESP_SIZE];
        for (w, c) in self.resp.iter().zip(b.chunks_exact_mut(8)) {
            c.copy_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
        }
        InferResp::parse(&b)
    }

    /// The worker's copy of the response bytes (Relaxed; published by the
    /// pop's Release).
    pub(crate) fn store_resp(&self, bytes: &[u8; work_item::INFER_RESP_SIZE]) {
        for (w, c) in self.resp.iter().zip(bytes.chunks_exact(8)) {
            let word = u64::from_le_bytes(c.try_into().unwrap_or_default());
            w.store(word, Ordering::Relaxed);
        }
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
    /// Model `handle`, `image` (core 0's first variant) loaded on each core
    /// as `per_core` says: its IO tensors are the image's (all in its IO
    /// section), its host bytes the image's code and constants.
    pub fn new(handle: u32, name: &str, image: ModelImage, per_core: Vec<CoreModel>) -> Self {
        let io = |ts: &[crate::device::model::TensorDesc]| {
            let io = ts.iter().filter(|t| t.section == Section::Io);
            io.map(|t| IoTensor {
                offset: t.offset,
                elems: t.elems() as u32,
            })
            .collect()
        };
        let (code, constants) = (image.mem.code, image.mem.constants);
        ResidentModel {
            handle,
            name: name.to_string(),
            inputs: io(&image.inputs),
            outputs: io(&image.outputs),
            host: MemUsage {
                code,
                constants,
                ..MemUsage::default()
            },
            image,
            per_core,
        }
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

/// What the host keeps about a work item that the ABI has no field for
/// (docs/design.md "Work items"): indexed by the item's index, never read
/// for a decision the item's bytes can make.
#[derive(Debug)]
pub struct HostSide {
    /// The per-core request number staging returned (which NQ records end it).
    pub exec_id: u32,
    /// The engines whose NQ records complete it.
    pub engines: EngineMask,
    /// Index into the worker's expected outputs, or [`NO_EXPECT`].
    pub expect: u32,
    /// Where the worker copies the outputs and the response (the caller's).
    pub out: Option<Arc<OutputBuf>>,
    /// The caller's tag (e.g. the execution number of a workload).
    pub tag: u64,
    /// The seq_id the lane submitted the item under (0: not yet): lets the
    /// worker return an item whose slot's `exec_info` was spoiled.
    pub seq: u64,
}

impl Default for HostSide {
    fn default() -> HostSide {
        HostSide {
            seq: 0,
            exec_id: 0,
            engines: 0,
            expect: NO_EXPECT,
            out: None,
            tag: 0,
        }
    }
}

/// Why a slot's `exec_info` did not name a runnable work item. Each kind
/// completes the execution with [`BadItem::status`] and is counted
/// ([`BadItem::index`] into the worker's `bad_items`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadItem {
    /// The word is outside this core's item region.
    OutOfRegion,
    /// The word is inside the region but not on an item's first byte.
    OffStride,
    /// Every field the worker loads is zero.
    Zeroed,
    /// `type` is not EXECUTE.
    UnknownType(u32),
    /// `mod_ref` names no loaded model.
    UnknownModRef(u64),
    /// `compute_idx` is another core's.
    OtherCore(u32),
    /// `resources` does not name the item's own bound resources (the
    /// schedule path writes the item's index there, docs/design.md "Work
    /// items"): a handle that names nothing this execution owns.
    BadResources(u64),
    /// The item's bytes do not parse (a field out of its range) or could not
    /// be loaded.
    Unparsable,
}

impl BadItem {
    /// Number of kinds (the length of the counters array).
    pub const KINDS: usize = 8;

    /// The status the caller gets.
    pub const fn status(self) -> NrtStatus {
        match self {
            BadItem::OutOfRegion
            | BadItem::OffStride
            | BadItem::UnknownModRef(_)
            | BadItem::BadResources(_) => NrtStatus::INVALID_HANDLE,
            BadItem::Zeroed
            | BadItem::UnknownType(_)
            | BadItem::OtherCore(_)
            | BadItem::Unparsable => NrtStatus::INVALID,
        }
    }

    /// Stable names, by [`index`](Self::index) (`xunds run --json`'s
    /// `bad_items`).
    pub const NAMES: [&'static str; Self::KINDS] = [
        "out_of_region",
        "off_stride",
        "zeroed",
        "unknown_type",
        "unknown_mod_ref",
        "other_core",
        "unparsable",
        "bad_resources",
    ];

    /// Counter index (0..KINDS).
    pub const fn index(self) -> usize {
        match self {
            BadItem::OutOfRegion => 0,
            BadItem::OffStride => 1,
            BadItem::Zeroed => 2,
            BadItem::UnknownType(_) => 3,
            BadItem::UnknownModRef(_) => 4,
            BadItem::OtherCore(_) => 5,
            BadItem::Unparsable => 6,
            BadItem::BadResources(_) => 7,
        }
    }
}

/// The byte ranges `[from, to)` of `tpb_execution_info_t` the worker reads,
/// one HAL read each: `type` .. `sync_point_cpu_timestamp`, and `ts_start`
/// (nothing else of `infer_resp_t`: that is the worker's to write).
pub const LOAD_RUNS: [(usize, usize); 2] = [
    (work_item::off::TYPE, work_item::off::RESP),
    (
        work_item::SUBMISSION_TS,
        work_item::SUBMISSION_TS + work_item::TIMESPEC_SIZE,
    ),
];

/// The bytes of [`LOAD_RUNS`] the worker decides on: `0xFF` on each byte of
/// a field of [`work_item::LAYOUT`] inside a run, `0` elsewhere (the
/// layout's gaps, the padding the runs read, are never looked at).
const LOADED: [u8; work_item::SIZE] = {
    let (mut mask, fields) = ([0; work_item::SIZE], work_item::LAYOUT.fields);
    let mut i = 0;
    while i < fields.len() {
        let f = &fields[i];
        let mut r = 0;
        while r < LOAD_RUNS.len() {
            if LOAD_RUNS[r].0 <= f.offset && f.end() <= LOAD_RUNS[r].1 {
                let mut k = f.offset;
                while k < f.end() {
                    mask[k] = 0xFF;
                    k += 1;
                }
            }
            r += 1;
        }
        i += 1;
    }
    mask
};

/// The byte ranges `[from, to)` of `infer_resp_t` the worker writes, one
/// HAL write each: `status` .. `nq_records` and `ts_end` .. `num_outputs`,
/// the fields it owns (not the schedule path's `ts_start`, between them,
/// nor its `device_id` and `device_tpb_idx`, after them).
pub const STORE_RUNS: [(usize, usize); 2] = [
    (work_item::resp_off::STATUS, work_item::resp_off::TS_START),
    (
        work_item::resp_off::TS_END,
        work_item::resp_off::NUM_OUTPUTS + 4,
    ),
];

// The store runs hold none of the schedule path's fields: checked at
// compile time.
const _: () = {
    use work_item::resp_off::{DEVICE_ID, DEVICE_TPB_IDX, TS_START};
    // `whole` writes one run from the first to the last: `ts_start` between.
    assert!(STORE_RUNS[0].1 == TS_START);
    assert!(STORE_RUNS[1].0 == TS_START + work_item::TIMESPEC_SIZE);
    assert!(STORE_RUNS[1].1 <= DEVICE_ID && DEVICE_ID < DEVICE_TPB_IDX);
};

/// A core's work items: a HAL-mapped region of `n` 208-byte
/// `tpb_execution_info_t` items in the ABI's layout (docs/abi.md §1.6), and
/// the host side table ([`HostSide`]) by item index.
pub struct ItemPool {
    region: RegionHandle,
    base: u64,
    side: Box<[Mutex<HostSide>]>,
}

debug_fields!([] ItemPool, |s| region = s.region, len = s.side.len());

impl ItemPool {
    /// Map core `core`'s region of `n` items (`1..=65536`) through `hal`.
    pub fn new<H: Hal>(hal: &mut H, core: u8, n: usize) -> Result<ItemPool, HalError> {
        assert!((1..=1 << 16).contains(&n), "pool size {n}");
        let region = hal.map(RegionId::WorkItems { core }, n * work_item::SIZE)?;
        let base = hal.base_addr(region)?;
        Ok(ItemPool {
            region,
            base,
            side: (0..n).map(|_| Mutex::default()).collect(),
        })
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.side.len()
    }

    /// `true` for an empty pool (never: `new` refuses it).
    #[cfg(any(test, feature = "testkit"))]
    pub fn is_empty(&self) -> bool {
        self.side.is_empty()
    }

    /// The mapped region.
    #[cfg(any(test, feature = "testkit"))]
    pub fn region(&self) -> RegionHandle {
        self.region
    }

    /// Bytes of host memory the pool holds (region and side table).
    pub fn host_bytes(&self) -> u64 {
        (self.len() * (work_item::SIZE + core::mem::size_of::<Mutex<HostSide>>())) as u64
    }

    /// The byte offset of item `i` in the region.
    pub const fn offset(i: u16) -> usize {
        i as usize * work_item::SIZE
    }

    /// The `exec_info` word of item `i`: the address of its first byte.
    pub fn word(&self, i: u16) -> u64 {
        self.base + Self::offset(i) as u64
    }

    /// `word` relative to the item region's base (wrapping): how a trace
    /// names an `exec_info` word without the region's address, which
    /// differs from run to run.
    pub fn relative(&self, word: u64) -> i64 {
        word.wrapping_sub(self.base) as i64
    }

    /// The item index an `exec_info` word names, checked by range and
    /// stride, never by dereferencing.
    pub fn index_of(&self, word: u64) -> Result<u16, BadItem> {
        let off = word.checked_sub(self.base).ok_or(BadItem::OutOfRegion)?;
        if off >= self.region.len() as u64 {
            return Err(BadItem::OutOfRegion);
        }
        if off % work_item::SIZE as u64 != 0 {
            return Err(BadItem::OffStride);
        }
        u16::try_from(off / work_item::SIZE as u64).map_err(|_| BadItem::OutOfRegion)
    }

    /// Lock item `i`'s side table entry (never contended: ownership moves
    /// with the index, module docs).
    pub fn side(&self, i: u16) -> MutexGuard<'_, HostSide> {
        super::lock(&self.side[usize::from(i)])
    }

    /// Item `i`'s side table entry as the worker takes it at `peek`: a copy,
    /// with the caller's output buffer moved out (the next schedule of the
    /// item sets it again).
    pub fn take_side(&self, i: u16) -> HostSide {
        let mut side = self.side(i);
        HostSide {
            out: side.out.take(),
            ..*side
        }
    }

    /// The item submitted under `seq` (a slow search: the error path of a
    /// spoiled `exec_info` word only).
    pub fn find_seq(&self, seq: u64) -> Option<u16> {
        (0..self.len())
            .find(|&i| self.side(i as u16).seq == seq && seq != 0)
            .map(|i| i as u16)
    }

    /// Write item `i`'s 208 bytes (the producer, before the slot is
    /// published: the ring's Release/Acquire orders these stores before the
    /// worker's loads).
    pub fn write<H: Hal + ?Sized>(
        &self,
        hal: &H,
        i: u16,
        info: &TpbExecutionInfo,
    ) -> Result<(), HalError> {
        hal.copy_in(self.region, Self::offset(i), &info.encode())
    }

    /// Load item `i` the way the worker does: the fields it decides on come
    /// in two HAL reads ([`LOAD_RUNS`]: `type` .. `sync_point_cpu_timestamp`
    /// and `ts_start`; each labelled in traces by its first field,
    /// [`work_item::field_name`]), only the fields of `LOADED` are kept (the
    /// padding between them is not looked at), the bytes are parsed through
    /// the wire view, and the decisions checked: a zeroed item, an unknown
    /// `type`, a `compute_idx` other than `core`, a `resources` handle other
    /// than the item's own (`i`). (`mod_ref` is checked against the loaded
    /// models by the caller.)
    pub fn load<H: Hal + ?Sized>(
        &self,
        hal: &H,
        i: u16,
        core: u8,
    ) -> Result<TpbExecutionInfo, BadItem> {
        let base = Self::offset(i);
        let mut b = [0u8; work_item::SIZE];
        for (from, to) in LOAD_RUNS {
            hal.copy_out(self.region, base + from, &mut b[from..to])
                .map_err(|_| BadItem::Unparsable)?;
        }
        for (x, m) in b.iter_mut().zip(LOADED) {
            *x &= m;
        }
        if b.iter().all(|&x| x == 0) {
            return Err(BadItem::Zeroed);
        }
        // An unknown `type` is what makes bytes unparsable first.
        let ty = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let info = TpbExecutionInfo::parse(&b).map_err(|_| match WorkType::from_index(ty) {
            None => BadItem::UnknownType(ty),
            Some(_) => BadItem::Unparsable,
        })?;
        if info.ty != WorkType::Execute {
            return Err(BadItem::UnknownType(ty));
        }
        if info.compute_idx != u32::from(core) {
            return Err(BadItem::OtherCore(info.compute_idx));
        }
        if info.resources != u64::from(i) {
            return Err(BadItem::BadResources(info.resources));
        }
        Ok(info)
    }

    /// Store `resp` into item `i`'s `infer_resp_t`: the fields the worker
    /// owns in two HAL writes ([`STORE_RUNS`], each labelled in
    /// traces by its first field); `whole` (a bad item, whose own
    /// `ts_start` is not to be trusted) writes `ts_start` too, in one write
    /// from `status` to `num_outputs`. Then the 112 bytes are read back:
    /// the record every consumer parses.
    pub fn store_resp<H: Hal + ?Sized>(
        &self,
        hal: &H,
        i: u16,
        resp: &InferResp,
        whole: bool,
    ) -> Result<[u8; work_item::INFER_RESP_SIZE], HalError> {
        let at = Self::offset(i) + work_item::off::RESP;
        let bytes = resp.encode();
        let whole_run = [(STORE_RUNS[0].0, STORE_RUNS[1].1)];
        let runs: &[(usize, usize)] = if whole { &whole_run } else { &STORE_RUNS };
        for &(from, to) in runs {
            hal.copy_in(self.region, at + from, &bytes[from..to])?;
        }
        let mut out = [0u8; work_item::INFER_RESP_SIZE];
        hal.copy_out(self.region, at, &mut out)?;
        Ok(out)
    }
}

/// The models loaded on the device, by handle: what a work item's
/// `mod_ref` names. An unloaded model is removed, so a `mod_ref` naming it
/// no longer resolves (its execution completes with `NRT_INVALID_HANDLE`);
/// its device memory stays (the heap does not reuse it), so an execution
/// that resolved it before the unload finishes normally.
#[derive(Debug, Default)]
pub struct Models(RwLock<Vec<Arc<ResidentModel>>>, AtomicU64);

impl Models {
    /// Register a model.
    pub fn insert(&self, m: Arc<ResidentModel>) {
        self.0.write().unwrap_or_else(|p| p.into_inner()).push(m);
    }

    /// Drop the model with this handle (unload). `true` when it was there.
    pub fn remove(&self, handle: u32) -> bool {
        let mut v = self.0.write().unwrap_or_else(|p| p.into_inner());
        let before = v.len();
        v.retain(|m| m.handle != handle);
        let removed = v.len() != before;
        if removed {
            // Relaxed: a schedule made after the unload reaches the worker
            // through the ring's Release/Acquire, which carries this too.
            self.1.fetch_add(1, Ordering::Relaxed);
        }
        removed
    }

    /// How many unloads so far: a worker that cached models drops its
    /// cache when this moves (a cached model may be gone).
    pub fn removals(&self) -> u64 {
        self.1.load(Ordering::Relaxed)
    }

    /// The model a `mod_ref` names.
    pub fn get(&self, mod_ref: u64) -> Option<Arc<ResidentModel>> {
        let models = self.0.read().unwrap_or_else(|p| p.into_inner());
        let found = models.iter().find(|m| u64::from(m.handle) == mod_ref);
        found.cloned()
    }
}

/// The health of one XU, shared by its producer lane (reads; starts a
/// reset), its worker (degrades, drives the reset) and the API, stepped
/// through [`XuHealth`]. On its own cache line (read on every schedule; a
/// hot neighbour would make each read a miss).
///
/// A degraded XU also remembers whether its queues are known intact: a
/// fault the device reported in an error record (the record arrived, every
/// queue is in step) can be recovered once the XU has drained
/// ([`HealthCell::recover`]); any fault (a lost record, a lost doorbell, a
/// DMA abort, an NQ overflow too) is cleared by the full reset, which
/// re-initialises the device queues (`Lane::begin_reset`, then the worker's
/// reset steps, [`HealthCell::step`]).
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct HealthCell(AtomicU8);

/// The cell holds the state's discriminant (its `fsm` code), with [`LOST`]
/// set on a DEGRADED whose queues may be out of step (only a reset brings
/// it back); a DEGRADED without it has every queue in step: recoverable.
const LOST: u8 = 0x80;
const HEALTHY: u8 = XuHealthState::Healthy as u8;
const DEGRADED_INTACT: u8 = XuHealthState::Degraded as u8;
const DEGRADED_LOST: u8 = DEGRADED_INTACT | LOST;

fn state_of(code: u8) -> XuHealthState {
    XuHealth::STATES[usize::from(code & !LOST)]
}

/// An event the XU's health did not accept.
pub type HealthViolation = crate::fsm::InvalidEvent<XuHealthState, XuHealthEvent>;

error_enum! {
    /// Why `HealthCell::recover` (or a reset) refused.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum RecoverError {
        /// The XU is healthy.
        NotDegraded => "the XU is not degraded",
        /// A record, doorbell or descriptor was lost or corrupted: the device
        /// queues are out of step and need the full reset (`System::reset`).
        QueuesLost => "the XU lost a record, doorbell or descriptor: its device queues are out of step (reset it)",
        /// Executions are still in flight on the XU: wait for them first.
        InFlight(u64) => "{} executions are still in flight on the XU",
        /// No such XU.
        NoSuchXu => "no such XU",
        /// A reset is already running on the XU.
        Resetting => "a reset is already running on the XU",
        /// The reset did not finish in time (it goes on).
        TimedOut => "the reset did not finish in time",
        /// The system's daemons have stopped (one panicked): nothing can reset
        /// the XU any more.
        Stopped => "the system's daemons have stopped",
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
        // Ordering: Acquire pairs with the Release stores in `step_as` and
        // `recover`: a schedule that sees DEGRADED also sees why, one that
        // sees HEALTHY again sees the reset's (or recovery's) queues.
        state_of(self.0.load(Ordering::Acquire))
    }

    /// Step `event` (`Timeout` or `FatalError`), tracing it as
    /// `xu_health#<core>`. `intact`: the device reported the fault in an
    /// error record, every queue in step, so the XU is recoverable once
    /// drained; otherwise the queues may be out of step (only a reset
    /// brings the XU back). `Ok(true)` when the XU just became degraded; an
    /// event the state does not accept (a fault while `RESETTING`) is the
    /// error, for the caller to count.
    pub fn degrade<H: TransitionHook + ?Sized>(
        &self,
        event: XuHealthEvent,
        intact: bool,
        core: u8,
        hook: &mut H,
    ) -> Result<bool, HealthViolation> {
        let how = if intact {
            DEGRADED_INTACT
        } else {
            DEGRADED_LOST
        };
        self.step_as(event, how, core, hook)
            .map(|(from, to)| from == XuHealthState::Healthy && to == XuHealthState::Degraded)
    }

    /// Step one of the reset's events (`Reset`, `DeviceStopped`, `Drained`,
    /// `DeviceReset`), traced. Returns the new state. Only the lane (under
    /// its lock, `Reset`) and the XU's worker (the others) step these.
    pub fn step<H: TransitionHook + ?Sized>(
        &self,
        event: XuHealthEvent,
        core: u8,
        hook: &mut H,
    ) -> Result<XuHealthState, HealthViolation> {
        self.step_as(event, DEGRADED_LOST, core, hook)
            .map(|(_, to)| to)
    }

    /// Step `event` and store the new state (`how` says which DEGRADED:
    /// the max keeps "queues lost" once it is known).
    fn step_as<H: TransitionHook + ?Sized>(
        &self,
        event: XuHealthEvent,
        how: u8,
        core: u8,
        hook: &mut H,
    ) -> Result<(XuHealthState, XuHealthState), HealthViolation> {
        // Ordering: Acquire, as in `state`.
        let mut cur = self.0.load(Ordering::Acquire);
        loop {
            let from = state_of(cur);
            let to = crate::fsm::step::<XuHealth>(from, event)?;
            let next = match to {
                XuHealthState::Degraded if from == XuHealthState::Degraded => cur.max(how),
                XuHealthState::Degraded => how,
                s => s as u8,
            };
            // Ordering: Release pairs with the Acquire load in `state`;
            // Acquire on failure re-reads the state another thread stored.
            match self
                .0
                .compare_exchange(cur, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    let _ = step_traced::<XuHealth, H>(from, event, u64::from(core), hook);
                    return Ok((from, to));
                }
                Err(now) => cur = now,
            }
        }
    }

    /// `true` when the XU is degraded and recoverable.
    pub fn recoverable(&self) -> bool {
        // Ordering: Acquire, as in `state`.
        self.0.load(Ordering::Acquire) == DEGRADED_INTACT
    }

    /// Bring a degraded XU back (`recover`, traced as `xu_health#<core>`):
    /// only when its queues are known intact. The caller must have drained
    /// the XU first (nothing in flight on its ring or device).
    pub fn recover<H: TransitionHook + ?Sized>(
        &self,
        core: u8,
        hook: &mut H,
    ) -> Result<(), RecoverError> {
        // Ordering: Acquire on success pairs with the Release in
        // `step_as`; Release publishes the recovery to `state`.
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
            Err(DEGRADED_LOST) => Err(RecoverError::QueuesLost),
            Err(_) => Err(RecoverError::Resetting),
        }
    }
}

/// One completed execution, as a worker reports it to the NDS publisher:
/// the `infer_resp_t` bytes read back from the work item are the record
/// (status, error class, latencies, MACs all come from parsing them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The core (XU).
    pub core: u8,
    /// The execution's `infer_resp_t`, as the work item holds it.
    pub resp: [u8; work_item::INFER_RESP_SIZE],
    /// An EXT NC counter it also counts (`HW_ERR_DMA_ABORT`,
    /// `ERR_SW_NQ_OVERFLOW`): the ABI's response has no field for it.
    pub ext: Option<NcCounter>,
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
    /// (core, calls refused with `NRT_QUEUE_FULL`, 101, or failed to
    /// queue). Each counts `INFER_FAILED_TO_QUEUE`.
    Refused(u8, u32),
    /// A model was loaded on a core (control channel).
    ModelLoaded(Box<ModelLoad>),
    /// A model was unloaded from a core (control channel): its record is
    /// deleted and its memory subtracted (the message's `record` is not
    /// read).
    ModelUnloaded(Box<ModelLoad>),
    /// Host memory the system itself holds (work-item pools, rings), in
    /// bytes: `MEM_USAGE_MISC_HOST`.
    HostMisc(u64),
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
    use crate::hal::Ordering as HalOrdering;
    use crate::sim::fake::FakeHal;

    /// docs/abi.md §1.6: the slot's `exec_info` is the address of the
    /// item's first byte; a word outside the region or off the 208-byte
    /// stride names no item.
    #[test]
    fn index_of_accepts_only_item_addresses() {
        let mut hal = FakeHal::new();
        let pool = ItemPool::new(&mut hal, 1, 5).unwrap();
        let base = hal.base_addr(pool.region()).unwrap();
        for i in 0..5 {
            assert_eq!(pool.word(i), base + 208 * u64::from(i));
            assert_eq!(pool.index_of(pool.word(i)), Ok(i));
        }
        assert_eq!(pool.index_of(pool.word(1) + 1), Err(BadItem::OffStride));
        assert_eq!(pool.index_of(pool.word(4) + 8), Err(BadItem::OffStride));
        assert_eq!(pool.index_of(0), Err(BadItem::OutOfRegion));
        assert_eq!(pool.index_of(base - 208), Err(BadItem::OutOfRegion));
        assert_eq!(pool.index_of(pool.word(4) + 208), Err(BadItem::OutOfRegion));
        assert_eq!(pool.index_of(u64::MAX), Err(BadItem::OutOfRegion));
    }

    /// The worker decides on every byte its two runs read but two 4-byte
    /// paddings (+0x04, +0x1C), and on nothing outside them.
    #[test]
    fn loaded_bytes_are_the_runs_but_padding() {
        let read: usize = LOAD_RUNS.iter().map(|(from, to)| to - from).sum();
        assert_eq!(LOADED.iter().filter(|&&m| m == 0xFF).count() + 8, read);
        assert!(LOADED.iter().all(|&m| m == 0 || m == 0xFF));
        assert_eq!(LOADED[0x04..0x08], [0; 4]);
        assert_eq!(LOADED[0x1C..0x20], [0; 4]);
        assert!(LOADED[work_item::off::RESP..work_item::SUBMISSION_TS]
            .iter()
            .all(|&m| m == 0));
    }

    /// The worker's view of an item: each decision from the bytes.
    #[test]
    fn load_checks_type_and_compute_idx_from_the_bytes() {
        let mut hal = FakeHal::new();
        let pool = ItemPool::new(&mut hal, 2, 3).unwrap();
        let mut info = TpbExecutionInfo::execute(7, 1, 2);
        info.resp.ts_start = work_item::Timespec::from_nanos(5_000_000_123);
        pool.write(&hal, 1, &info).unwrap();
        // `resources` names item 1's own resources: in item 2 it is refused.
        pool.write(&hal, 2, &info).unwrap();
        assert_eq!(pool.load(&hal, 2, 2), Err(BadItem::BadResources(1)));
        let got = pool.load(&hal, 1, 2).unwrap();
        assert_eq!((got.mod_ref, got.compute_idx), (7, 2));
        assert_eq!(got.resp.ts_start.as_nanos(), 5_000_000_123);
        assert_eq!(pool.load(&hal, 0, 2), Err(BadItem::Zeroed));
        assert_eq!(pool.load(&hal, 1, 3), Err(BadItem::OtherCore(2)));
        pool.write(&hal, 2, &TpbExecutionInfo::stop()).unwrap();
        assert_eq!(pool.load(&hal, 2, 2), Err(BadItem::UnknownType(2)));
        hal.store_u32(pool.region(), 208 * 2, 77, HalOrdering::Relaxed)
            .unwrap();
        assert_eq!(pool.load(&hal, 2, 2), Err(BadItem::UnknownType(77)));
        // A ts_start whose nanoseconds are out of range does not parse.
        hal.store_u64(
            pool.region(),
            208 + 0x40,
            2_000_000_000,
            HalOrdering::Relaxed,
        )
        .unwrap();
        assert_eq!(pool.load(&hal, 1, 2), Err(BadItem::Unparsable));
    }

    /// The response the worker stores reads back as the same record (the
    /// trace labels of its fields: `wire::work_item`'s tests).
    #[test]
    fn stored_response_reads_back() {
        let mut hal = FakeHal::new();
        let pool = ItemPool::new(&mut hal, 0, 2).unwrap();
        let mut info = TpbExecutionInfo::execute(1, 0, 0);
        info.resp.ts_start = work_item::Timespec::from_nanos(10);
        pool.write(&hal, 1, &info).unwrap();
        let resp = InferResp {
            ts_start: work_item::Timespec::from_nanos(10),
            ts_end: work_item::Timespec::from_nanos(99),
            device_start_ns: 3,
            device_end_ns: 8,
            mac_count: 42,
            nq_records: 5,
            ..InferResp::default()
        };
        let bytes = pool.store_resp(&hal, 1, &resp, false).unwrap();
        assert_eq!(InferResp::parse(&bytes), Ok(resp));
    }

    #[test]
    fn health_degrades_once_and_stays() {
        for &s in XuHealth::STATES {
            assert_eq!(state_of(s as u8), s);
        }
        let h = HealthCell::new();
        let mut log: Vec<crate::fsm::Transition> = Vec::new();
        assert_eq!(h.state(), XuHealthState::Healthy);
        assert_eq!(
            h.degrade(XuHealthEvent::Timeout, false, 2, &mut log),
            Ok(true)
        );
        assert_eq!(
            h.degrade(XuHealthEvent::FatalError, false, 2, &mut log),
            Ok(false)
        );
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
        assert_eq!(
            h.degrade(XuHealthEvent::FatalError, true, 1, &mut log),
            Ok(true)
        );
        assert!(h.recoverable());
        assert_eq!(h.recover(1, &mut log), Ok(()));
        assert_eq!(h.state(), XuHealthState::Healthy);
        assert_eq!(log.last().unwrap().to, "HEALTHY");
        // A lost queue entry after an intact fault: no recovery.
        assert_eq!(
            h.degrade(XuHealthEvent::FatalError, true, 1, &mut log),
            Ok(true)
        );
        assert_eq!(
            h.degrade(XuHealthEvent::Timeout, false, 1, &mut log),
            Ok(false)
        );
        assert_eq!(h.recover(1, &mut log), Err(RecoverError::QueuesLost));
    }

    /// The reset's steps through the cell; a fault while RESETTING (nothing
    /// is in flight then) is refused as a value and changes nothing.
    #[test]
    fn health_reset_steps_and_refuses_what_its_state_does_not_accept() {
        let h = HealthCell::new();
        let mut log: Vec<crate::fsm::Transition> = Vec::new();
        assert_eq!(
            h.degrade(XuHealthEvent::Timeout, false, 3, &mut log),
            Ok(true)
        );
        for (e, to) in [
            (XuHealthEvent::Reset, XuHealthState::Stopping),
            (XuHealthEvent::FatalError, XuHealthState::Stopping),
            (XuHealthEvent::DeviceStopped, XuHealthState::Draining),
            (XuHealthEvent::Drained, XuHealthState::Resetting),
        ] {
            assert_eq!(h.step(e, 3, &mut log), Ok(to));
            assert_eq!(h.state(), to);
        }
        let err = h
            .degrade(XuHealthEvent::Timeout, false, 3, &mut log)
            .unwrap_err();
        assert_eq!(err.state, XuHealthState::Resetting);
        assert_eq!(h.recover(3, &mut log), Err(RecoverError::Resetting));
        assert_eq!(h.state(), XuHealthState::Resetting);
        assert_eq!(
            h.step(XuHealthEvent::DeviceReset, 3, &mut log),
            Ok(XuHealthState::Healthy)
        );
        assert_eq!(log.len(), 6, "a refused event is not traced");
        assert_eq!(log.last().unwrap().to, "HEALTHY");
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
