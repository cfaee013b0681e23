//! The simulated device's memory map: physical address windows, the layout
//! inside each window, the register block, and the mapping of all of it
//! through a [`Hal`].
//!
//! | window | physical base | size | contents |
//! |---|---|---|---|
//! | DRAM | [`DRAM_BASE`] (32 GiB, above 4 GiB so `eng_addresses_hi` is non-zero) | configured | per-core areas (request buffers, trigger constants), then the model heap |
//! | DMEM, core c | [`DMEM_BASE`] + c * [`WINDOW_STRIDE`] | [`DMEM_SIZE`] | the request the sequencer executes ([`dmem::REQUEST`], 0x38 bytes) |
//! | registers, core c | [`REGS_BASE`] + c * [`WINDOW_STRIDE`] | [`REGS_SIZE`] | see [`reg`] |
//!
//! Descriptor rings and NQ rings are host-side regions with no physical
//! window: the device reaches them through its ring state, never through a
//! descriptor's address. Every physical address a descriptor carries is
//! translated by [`MemMap::translate`]; an address outside every window is
//! refused, never followed.

use core::fmt;

use crate::hal::{Dir, EventHandle, EventId, Hal, HalError, RegionHandle, RegionId};
use crate::wire::device_request;
use crate::wire::nq;

/// Physical base of device DRAM (32 GiB: every DRAM address has a non-zero
/// high word, so the `eng_addresses_hi` array is exercised).
pub const DRAM_BASE: u64 = 0x8_0000_0000;
/// Physical base of core 0's sequencer DMEM.
pub const DMEM_BASE: u64 = 0x1000_0000;
/// Physical base of core 0's register block.
pub const REGS_BASE: u64 = 0x2000_0000;
/// Distance between two cores' DMEM (or register) windows.
pub const WINDOW_STRIDE: u64 = 0x1_0000;
/// Size of a DMEM window.
pub const DMEM_SIZE: usize = 0x100;
/// Size of a register window.
pub const REGS_SIZE: usize = 0x100;
/// Most cores a device may have.
pub const MAX_CORES: u8 = 16;
/// Bytes of DRAM reserved per core at the start of DRAM.
pub const CORE_AREA: u64 = 0x1000;
/// Stride of request buffers inside a core area: the 0x38-byte buffer, then
/// the request's 8-byte MAC word at +0x38 (all 0x40 used).
pub const REQUEST_STRIDE: u64 = 0x40;
/// Most request buffers per core.
pub const MAX_REQUEST_SLOTS: u32 = 32;
/// Alignment of the model heap.
pub const HEAP_ALIGN: u64 = 64;
/// Most entries an NQ ring may have ([`DeviceConfig::nq_len`]).
pub const MAX_NQ_LEN: u32 = 1 << 16;

const _: () = assert!(DRAM_BASE >> 32 != 0);
const _: () = assert!(REQUEST_STRIDE as usize >= device_request::BUFFER_SIZE);
/// Offset in a request buffer slot of the sequencer's per-request MAC count
/// (ours): right past the buffer, 8-aligned, inside the stride.
pub const REQUEST_MACS_OFF: u64 = device_request::BUFFER_SIZE as u64;
const _: () = assert!(REQUEST_MACS_OFF % 8 == 0 && REQUEST_MACS_OFF + 8 <= REQUEST_STRIDE);
const _: () = assert!(MAX_REQUEST_SLOTS as u64 * REQUEST_STRIDE <= core_area::CONSTANTS);
const _: () = assert!(DMEM_BASE + MAX_CORES as u64 * WINDOW_STRIDE <= REGS_BASE);
const _: () = assert!(REGS_BASE + (MAX_CORES as u64) * WINDOW_STRIDE <= DRAM_BASE);

/// Layout of a core's area at the start of DRAM (offsets inside the area).
pub mod core_area {
    /// Request buffer `k` (0x38 bytes: 52-byte body, then the
    /// `cc_dma_increment` trailer at 0x34) is at `k * REQUEST_STRIDE`.
    pub const REQUESTS: u64 = 0;
    /// The constants the trigger descriptors copy from.
    pub const CONSTANTS: u64 = 0xF00;
    /// The word the event-poke pair copies into `SEQ_EVENT` (value 1).
    pub const EVENT_VALUE: u64 = CONSTANTS;
    /// The word the tail-increment pair copies into `SEQ_TAIL_INC` (value 1).
    pub const TAIL_INC_VALUE: u64 = CONSTANTS + 4;
}

/// Layout of a core's DMEM.
pub mod dmem {
    /// The request the sequencer executes: the req-copy pair writes the
    /// 52-byte body here; 0x38 bytes are reserved (the buffer's size).
    pub const REQUEST: usize = 0;
}

const _: () = assert!(dmem::REQUEST + device_request::BUFFER_SIZE <= DMEM_SIZE);

/// The register block of one core (byte offsets; every register is a u32
/// unless noted). "Host" is the staging side, "worker" the NQ harvest.
pub mod reg {
    /// Each register once: its offset, and its name for traces.
    macro_rules! regs {
        ($($(#[$doc:meta])* $name:ident = $off:literal;)*) => {
            $($(#[$doc])* pub const $name: usize = $off;)*
            /// The name of the register at `off`, for traces.
            pub fn name(off: usize) -> Option<&'static str> {
                const NQ: [&str; 5] = ["NQ_HEAD[PE]", "NQ_HEAD[ACT]", "NQ_HEAD[POOL]", "NQ_HEAD[DVE]", "NQ_HEAD[SP]"];
                match off {
                    _ if off >= NQ_HEAD && off % 4 == 0 && off < RESET_REQ => NQ.get((off - NQ_HEAD) / 4).copied(),
                    $($name => Some(stringify!($name)),)*
                    _ => None,
                }
            }
        };
    }
    regs! {
        /// Tail increment of the request queue's M2S ring: the host adds the
        /// number of descriptors it appended (the doorbell); the device reads the
        /// running total with acquire ordering.
        M2S_TAIL_INC = 0x00;
        /// Tail increment of the S2M ring (bumped before the M2S one).
        S2M_TAIL_INC = 0x04;
        /// Descriptors the device has consumed from the M2S ring (device writes
        /// with release; the host reads to know the free space).
        M2S_HEAD = 0x08;
        /// Descriptors consumed from the S2M ring.
        S2M_HEAD = 0x0C;
        /// The sequencer's request tail increment: the third trigger pair's S2M
        /// half writes 1 here, which adds 1 (the publish, docs/abi.md §1.10).
        SEQ_TAIL_INC = 0x10;
        /// The request-load event: the second trigger pair writes 1 here.
        SEQ_EVENT = 0x14;
        /// Requests the sequencer has executed (device, release); staging reads
        /// it before reusing a request buffer.
        SEQ_HEAD = 0x18;
        /// Sticky DMA fault code (0 none; see `device::dma::DmaFault::code`).
        DMA_FAULT = 0x1C;
        /// Model switches the sequencer performed.
        MODEL_SWITCHES = 0x20;
        /// NQ records dropped because a ring was full (NQ overflow).
        NQ_OVERFLOWS = 0x24;
        /// u64: the device clock (virtual cycles) after the last request.
        CYCLE = 0x28;
        /// u64: MACs performed by every request so far (monotone).
        MAC_COUNT = 0x30;
        /// The NQ interrupt's arm bit (ours): the worker writes 1 before it
        /// sleeps on the core's NQ event; the device notifies the event only
        /// when it finds 1 here, and writes 0 (see `device::irq`).
        NQ_IRQ_ARM = 0x38;
        /// Records the worker has consumed from engine `e`'s NQ ring: at
        /// `NQ_HEAD + 4 * e` (worker writes with release; the device reads
        /// before writing, to detect overflow).
        NQ_HEAD = 0x40;
        /// The XU reset's request counter (ours): the host adds 1 (release) to
        /// ask the device to stop (odd values: discard every queued descriptor
        /// pair and start the descriptor rings and request numbering over) or
        /// to re-initialise its NQ rings (even values); see
        /// `Sequencer::poll_one` and `actors::worker`.
        RESET_REQ = 0x58;
        /// The last reset request the device carried out (device, release).
        RESET_ACK = 0x5C;
    }
}

const _: () = assert!(reg::NQ_HEAD + 4 * nq::ENGINES as usize <= REGS_SIZE);
const _: () = assert!(reg::NQ_HEAD + 4 * nq::ENGINES as usize <= reg::RESET_REQ);
const _: () = assert!(reg::RESET_ACK + 4 <= REGS_SIZE);
const _: () = assert!(reg::CYCLE % 8 == 0 && reg::MAC_COUNT % 8 == 0);

/// Register and DRAM-area names for [`crate::sim::tracer`] rendering.
pub fn trace_names(region: RegionId, off: usize) -> Option<&'static str> {
    match region {
        RegionId::Regs { .. } => reg::name(off),
        RegionId::Dmem { .. } if off == dmem::REQUEST => Some("REQUEST"),
        RegionId::WorkItems { .. } => crate::wire::work_item::field_name(off),
        RegionId::Dram => match off as u64 % CORE_AREA {
            core_area::EVENT_VALUE => Some("EVENT_VALUE"),
            core_area::TAIL_INC_VALUE => Some("TAIL_INC_VALUE"),
            a if a < core_area::CONSTANTS && a % REQUEST_STRIDE == 0 => Some("REQUEST_BUF"),
            a if a % REQUEST_STRIDE == device_request::CC_DMA_INCREMENT_OFF as u64 => {
                Some("CC_DMA_INCREMENT")
            }
            _ => None,
        },
        _ => None,
    }
}

/// How the device is sized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceConfig {
    /// Number of NeuronCores (1..=16).
    pub cores: u8,
    /// Bytes of DRAM (at least the per-core areas; the rest is model heap).
    pub dram_size: u64,
    /// Descriptors per ring (each request uses 3 slots of each ring; at least 3).
    pub ring_len: u32,
    /// Entries per NQ ring (a power of two, at least 2).
    pub nq_len: u32,
    /// Request buffers per core (1..=32): requests in flight on a core.
    pub request_slots: u32,
    /// How long (host nanoseconds, as passed to `poll`) the device waits on a
    /// descriptor below the published tail whose ring id is wrong before it
    /// declares the descriptor corrupt.
    pub ring_id_grace_ns: u64,
}

impl Default for DeviceConfig {
    fn default() -> Self {
        DeviceConfig {
            cores: 2,
            dram_size: 4 << 20,
            ring_len: 64,
            nq_len: 64,
            request_slots: 8,
            ring_id_grace_ns: 1_000_000,
        }
    }
}

error_enum! {
    /// A configuration the device cannot be built with.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum ConfigError {
        /// A field out of range.
        Invalid {
            /// The field.
            field: &'static str,
            /// Why.
            why: &'static str,
        } => "device config: {field}: {why}",
        /// Mapping failed.
        Hal(#[from] HalError) => "device config: {0}",
    }
}

impl DeviceConfig {
    /// Check every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |field, why| Err(ConfigError::Invalid { field, why });
        if self.cores == 0 || self.cores > MAX_CORES {
            return bad("cores", "must be 1..=16");
        }
        if self.ring_len < 3 || self.ring_len > 1 << 16 {
            return bad("ring_len", "must be 3..=65536 (a request takes 3 slots)");
        }
        if !self.nq_len.is_power_of_two() || self.nq_len < 2 || self.nq_len > MAX_NQ_LEN {
            return bad("nq_len", "must be a power of two in 2..=65536");
        }
        if self.request_slots == 0 || self.request_slots > MAX_REQUEST_SLOTS {
            return bad("request_slots", "must be 1..=32");
        }
        if self.dram_size < u64::from(self.cores) * CORE_AREA || self.dram_size > 1 << 34 {
            return bad(
                "dram_size",
                "must hold the per-core areas and be at most 16 GiB",
            );
        }
        Ok(())
    }

    /// First byte of the model heap (DRAM offset).
    pub fn heap_start(&self) -> u64 {
        u64::from(self.cores) * CORE_AREA
    }
}

error_enum! {
    /// A core or engine the device does not have (asked of a constructor that
    /// picks one core's or one engine's registers and rings).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum UnitError {
        /// `core` is not below the device's core count.
        Core {
            /// The core asked for.
            core: u8,
            /// The device's cores (valid: `0..cores`).
            cores: u8,
        } => "core {core} is out of range: the device has {cores} core(s), numbered 0..{cores}",
        /// `engine` is not below the number of NQ engine rings per core.
        #[cfg_attr(not(feature = "testkit"), allow(dead_code))]
        Engine {
            /// The engine asked for.
            engine: u8,
            /// Engine rings per core (valid: `0..engines`).
            engines: u8,
        } => "engine {engine} is out of range: a core has {engines} NQ engine rings, numbered 0..{engines}",
    }
}

/// Where a physical range lands. A region is the map's own handle,
/// borrowed: a translation per DMA end moves no 32-byte handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window<'a> {
    /// Bytes of a mapped region (DRAM, or a core's DMEM) from this offset.
    Mem(&'a RegionHandle, usize),
    /// A core's register block (reached word by word) at this offset.
    Regs {
        /// Core.
        core: u8,
        /// Offset in the window.
        off: usize,
    },
}

/// A physical range outside every window (or straddling two).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadPa {
    /// First byte.
    pub pa: u64,
    /// Length.
    pub len: u64,
}

impl fmt::Display for BadPa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (len, pa) = (self.len, self.pa);
        write!(f, "{len} bytes at pa {pa:#x} are outside device memory")
    }
}

impl std::error::Error for BadPa {}

/// One core's regions and its NQ interrupt event.
#[derive(Clone, Copy, Debug)]
pub struct CoreRegions {
    /// DMEM.
    pub dmem: RegionHandle,
    /// Registers.
    pub regs: RegionHandle,
    /// The request queue's M2S ring.
    pub m2s: RegionHandle,
    /// The request queue's S2M ring.
    pub s2m: RegionHandle,
    /// The NQ ring, by engine.
    pub nq: [RegionHandle; nq::ENGINES as usize],
    /// The NQ interrupt event.
    pub nq_irq: EventHandle,
}

/// Every region of a built device, by handle.
#[derive(Clone, Debug)]
pub struct MemMap {
    /// The configuration it was built from.
    pub config: DeviceConfig,
    /// Device DRAM.
    pub dram: RegionHandle,
    /// Per core: its regions.
    pub cores: Vec<CoreRegions>,
}

impl MemMap {
    /// Map every region of a device with `config` through `hal`, and write
    /// the per-core trigger constants.
    pub fn build<H: Hal>(hal: &mut H, config: DeviceConfig) -> Result<MemMap, ConfigError> {
        config.validate()?;
        let (field, why) = ("dram_size", "does not fit the host address space");
        let dram_len = usize::try_from(config.dram_size);
        let dram_len = dram_len.map_err(|_| ConfigError::Invalid { field, why })?;
        let dram = hal.map(RegionId::Dram, dram_len)?;
        let mut m = MemMap {
            config,
            dram,
            cores: Vec::new(),
        };
        let ring_bytes = config.ring_len as usize * crate::hal::RECORD;
        let nq_bytes = config.nq_len as usize * crate::hal::RECORD;
        for core in 0..config.cores {
            let dmem = hal.map(RegionId::Dmem { core }, DMEM_SIZE)?;
            let regs = hal.map(RegionId::Regs { core }, REGS_SIZE)?;
            let mut ring = |dir| hal.map(RegionId::DescRing { core, dir }, ring_bytes);
            let (m2s, s2m) = (ring(Dir::M2s)?, ring(Dir::S2m)?);
            let mut nq = [dram; nq::ENGINES as usize];
            for (engine, ring) in (0..nq::ENGINES).zip(&mut nq) {
                *ring = hal.map(RegionId::NqRing { core, engine }, nq_bytes)?;
            }
            let nq_irq = hal.event(EventId::NqIrq { core })?;
            m.cores.push(CoreRegions {
                dmem,
                regs,
                m2s,
                s2m,
                nq,
                nq_irq,
            });
            let area = m.core_area_off(core);
            for word in [core_area::EVENT_VALUE, core_area::TAIL_INC_VALUE] {
                hal.copy_in(dram, (area + word) as usize, &1u32.to_le_bytes())?;
            }
        }
        Ok(m)
    }

    /// `core`'s regions, or [`UnitError::Core`] for a core the device does
    /// not have (or a hand-made map lists no regions for).
    pub fn core(&self, core: u8) -> Result<&CoreRegions, UnitError> {
        let cores = self.config.cores;
        match self.cores.get(usize::from(core)) {
            Some(r) if core < cores => Ok(r),
            _ => Err(UnitError::Core { core, cores }),
        }
    }

    /// DRAM offset of a core's area.
    pub fn core_area_off(&self, core: u8) -> u64 {
        u64::from(core) * CORE_AREA
    }

    /// The request buffer slot of request `exec_id` (1, 2, ...; staging
    /// fills them round-robin).
    pub fn request_slot(&self, exec_id: u32) -> u32 {
        exec_id.wrapping_sub(1) % self.config.request_slots
    }

    /// DRAM offset of the MAC count the sequencer reports for request
    /// `exec_id` of `core` (ours, docs/design.md "Work items": the 8 bytes
    /// after the request buffer, written before the request's NQ records,
    /// so a worker that acquired a record reads its request's MACs).
    pub fn request_macs_off(&self, core: u8, exec_id: u32) -> u64 {
        self.request_buf_off(core, self.request_slot(exec_id)) + REQUEST_MACS_OFF
    }

    /// DRAM offset of request buffer `slot` of `core`.
    pub fn request_buf_off(&self, core: u8, slot: u32) -> u64 {
        self.core_area_off(core) + core_area::REQUESTS + u64::from(slot) * REQUEST_STRIDE
    }

    /// Physical address of a DRAM offset.
    pub fn dram_pa(&self, off: u64) -> u64 {
        DRAM_BASE + off
    }

    /// Physical address of a core's DMEM byte `off`.
    pub fn dmem_pa(&self, core: u8, off: usize) -> u64 {
        DMEM_BASE + u64::from(core) * WINDOW_STRIDE + off as u64
    }

    /// Physical address of a core's register `off`.
    pub fn reg_pa(&self, core: u8, off: usize) -> u64 {
        REGS_BASE + u64::from(core) * WINDOW_STRIDE + off as u64
    }

    /// The window that holds all of `[pa, pa + len)`, or [`BadPa`].
    pub fn translate(&self, pa: u64, len: u64) -> Result<Window<'_>, BadPa> {
        let bad = BadPa { pa, len };
        let end = pa.checked_add(len).ok_or(bad)?;
        if pa >= DRAM_BASE && end <= DRAM_BASE + self.config.dram_size {
            return Ok(Window::Mem(&self.dram, (pa - DRAM_BASE) as usize));
        }
        // The DMEM windows lie below the register windows (asserted above).
        let regs = pa >= REGS_BASE;
        let (base, size) = if regs {
            (REGS_BASE, REGS_SIZE as u64)
        } else {
            (DMEM_BASE, DMEM_SIZE as u64)
        };
        let rel = pa.checked_sub(base).ok_or(bad)?;
        let (core, off) = (rel / WINDOW_STRIDE, rel % WINDOW_STRIDE);
        // `off + len <= end`: no overflow.
        if core >= u64::from(self.config.cores) || off + len > size {
            return Err(bad);
        }
        let (core, off) = (core as u8, off as usize);
        Ok(if regs {
            Window::Regs { core, off }
        } else {
            Window::Mem(&self.cores[usize::from(core)].dmem, off)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Device;
    use crate::sim::fake::FakeHal;

    #[test]
    fn translate_finds_each_window_and_refuses_gaps_and_straddles() {
        let config = DeviceConfig {
            cores: 2,
            ..DeviceConfig::default()
        };
        let dev = Device::new(FakeHal::new(), config).unwrap();
        let map = dev.map();
        let size = map.config.dram_size;
        let ok = |pa, len| map.translate(pa, len).unwrap();
        let refused = |pa, len| assert_eq!(map.translate(pa, len), Err(BadPa { pa, len }));

        assert_eq!(ok(DRAM_BASE, 4), Window::Mem(&map.dram, 0));
        assert_eq!(
            ok(DRAM_BASE + size - 4, 4),
            Window::Mem(&map.dram, size as usize - 4)
        );
        refused(DRAM_BASE + size - 2, 4);
        refused(u64::MAX - 1, 4);

        let dmem1 = DMEM_BASE + WINDOW_STRIDE;
        assert_eq!(ok(dmem1 + 0x10, 4), Window::Mem(&map.cores[1].dmem, 0x10));
        let last = DMEM_SIZE as u64 - 4;
        assert_eq!(
            ok(dmem1 + last, 4),
            Window::Mem(&map.cores[1].dmem, last as usize)
        );
        refused(dmem1 + last, 5);
        refused(dmem1 + DMEM_SIZE as u64, 4);
        refused(DMEM_BASE + 2 * WINDOW_STRIDE, 4); // no core 2
        refused(DMEM_BASE - 4, 4);
        refused(0, 4);

        let tail = REGS_BASE + WINDOW_STRIDE + reg::SEQ_TAIL_INC as u64;
        let off = reg::SEQ_TAIL_INC;
        assert_eq!(ok(tail, 4), Window::Regs { core: 1, off });
        refused(REGS_BASE + REGS_SIZE as u64, 4);
        refused(REGS_BASE + 2 * WINDOW_STRIDE, 4);
        refused(REGS_BASE - 4, 4);
        refused(DRAM_BASE - 4, 4);
    }
}
