//! The simulated device (docs/abi.md §1.5, §1.9): UDMA descriptor rings, request
//! staging, the sequencer and its engines executing our small instruction
//! format on device memory, and the NQ records it writes back. Its own folder
//! because it is the far side of the HAL: it plays the hardware.
//!
//! - [`memmap`]: physical windows, layouts, registers, and mapping them all
//!   through a [`Hal`].
//! - [`dma`]: descriptor-ring producer/consumer with ring ids, and the DMA
//!   engine that validates and performs copies.
//! - [`staging`]: the submit path's device half (`stage_and_doorbell`).
//! - [`sequencer`]: the device-sequencer-proxy's core logic (`poll`).
//! - [`isa`], [`engine`], [`model`]: the instruction format, the engine
//!   interpreter and the model builder (see their own docs).
//! - [`irq`]: the NQ interrupt and its arm register.
//! - [`nq`]: NQ ring writer/reader with phase bits, and the worker's
//!   [`nq::Harvester`].
//!
//! [`Device`] ties them together: build it with any HAL backend, then hand
//! out a [`staging::Stager`] per core to the producer, a
//! [`sequencer::Sequencer`] to the device proxy, and a [`nq::Harvester`] per
//! core to the worker.
#![forbid(unsafe_code)]

pub mod dma;
pub mod engine;
pub mod irq;
pub mod isa;
pub mod memmap;
pub mod model;
pub mod nq;
pub mod sequencer;
pub mod staging;

use std::sync::{Arc, Mutex};

use crate::hal::Hal;
use crate::wire::device_request::NUM_ENGINES;

use memmap::{BadPa, ConfigError, DeviceConfig, MemMap, UnitError, HEAP_ALIGN};
use nq::Harvester;
use sequencer::{DramMemory, RequestExecutor, Sequencer};
use staging::{IbAddr, LoadedModel, ModelId, Stager};

/// A DRAM allocation from the model heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DramAlloc {
    /// The allocation's physical base (`base->_pa`).
    pub base_pa: u64,
    /// Bytes from the base to the aligned start (`base->align_offset`).
    pub align_offset: u64,
    /// Usable bytes from the aligned start.
    pub len: u64,
}

impl DramAlloc {
    /// The aligned start: where an image is placed and linked.
    pub const fn pa(&self) -> u64 {
        self.base_pa + self.align_offset
    }
}

error_enum! {
    /// A loading failure.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum LoadError {
        /// The heap cannot hold the allocation.
        OutOfMemory {
            /// Bytes asked for.
            len: u64,
            /// Bytes left.
            free: u64,
        } => "device DRAM: need {len} bytes, {free} free",
        /// Alignment not a power of two.
        BadAlign(u64) => "alignment {0} is not a power of two",
        /// The image does not fit its allocation, or a block offset lies outside it.
        BadImage(&'static str) => "model image: {0}",
        /// A DRAM range outside device memory.
        Pa(#[source] BadPa) => "{0}",
    }
}

/// A built device: its HAL, memory map and model heap.
pub struct Device<H> {
    hal: Arc<H>,
    map: Arc<MemMap>,
    heap: Mutex<(u64, u32)>,
}

debug_fields!([H] Device<H>, |s| config = s.map.config);

impl<H: Hal> Device<H> {
    /// Map every region of a device sized by `config` through `hal`.
    pub fn new(mut hal: H, config: DeviceConfig) -> Result<Device<H>, ConfigError> {
        let map = MemMap::build(&mut hal, config)?;
        Ok(Device {
            hal: Arc::new(hal),
            heap: Mutex::new((config.heap_start(), 0)),
            map: Arc::new(map),
        })
    }

    /// The HAL (shared).
    pub fn hal(&self) -> &Arc<H> {
        &self.hal
    }

    /// The memory map (shared).
    pub fn map(&self) -> &Arc<MemMap> {
        &self.map
    }

    /// The stager of `core` (the producer's; make one per core), or
    /// [`UnitError::Core`] when the device has no such core.
    pub fn stager(&self, core: u8) -> Result<Stager<H>, UnitError> {
        Stager::new(Arc::clone(&self.hal), Arc::clone(&self.map), core)
    }

    /// The device side, executing with `exec` (make one per device).
    pub fn sequencer<X: RequestExecutor>(&self, exec: X) -> Sequencer<H, X> {
        Sequencer::new(Arc::clone(&self.hal), Arc::clone(&self.map), exec)
    }

    /// The NQ harvester of `core` (the worker's; make one per core), or
    /// [`UnitError::Core`] when the device has no such core.
    pub fn harvester(&self, core: u8) -> Result<Harvester<H>, UnitError> {
        Harvester::new(Arc::clone(&self.hal), &self.map, core)
    }

    /// DRAM by physical address, for loading images and tensors.
    pub fn memory(&self) -> DramMemory<'_, H> {
        DramMemory::new(&*self.hal, &self.map)
    }

    /// Allocate `len` bytes aligned to `align` from the model heap (never
    /// freed). The returned base may precede the aligned start by
    /// `align_offset` bytes, as the runtime's allocations do.
    pub fn alloc(&self, len: u64, align: u64) -> Result<DramAlloc, LoadError> {
        if !align.is_power_of_two() {
            return Err(LoadError::BadAlign(align));
        }
        let mut heap = self.heap.lock().unwrap_or_else(|p| p.into_inner());
        let base_off = heap.0;
        let base_pa = self.map.dram_pa(base_off);
        let free = self.map.config.dram_size.saturating_sub(base_off);
        // Checked: `len` and `align` come from the caller (a model size, an
        // alignment); anything that overflows cannot fit in DRAM anyway.
        let aligned = base_pa.checked_next_multiple_of(align);
        let total = aligned.and_then(|a| (a - base_pa).checked_add(len));
        let (Some(aligned), Some(total)) = (aligned, total) else {
            let len = u64::MAX;
            return Err(LoadError::OutOfMemory { len, free });
        };
        let align_offset = aligned - base_pa;
        if total > free {
            return Err(LoadError::OutOfMemory { len: total, free });
        }
        // `base_off + total <= dram_size <= 16 GiB`: no overflow below.
        heap.0 = (base_off + total).next_multiple_of(HEAP_ALIGN);
        Ok(DramAlloc {
            base_pa,
            align_offset,
            len,
        })
    }

    /// Copy a model image into `alloc` and register its per-engine block
    /// offsets (`None` = the engine is idle). Returns the loaded model with a
    /// fresh [`ModelId`].
    pub fn load_model(
        &self,
        alloc: DramAlloc,
        image: &[u8],
        blocks: [Option<u64>; NUM_ENGINES],
    ) -> Result<LoadedModel, LoadError> {
        if image.len() as u64 > alloc.len {
            return Err(LoadError::BadImage("larger than its allocation"));
        }
        if blocks.iter().flatten().any(|&o| o >= alloc.len) {
            return Err(LoadError::BadImage("block offset outside the allocation"));
        }
        let written = self.memory().write_bytes(alloc.pa(), image);
        written.map_err(LoadError::Pa)?;
        let id = {
            let mut heap = self.heap.lock().unwrap_or_else(|p| p.into_inner());
            heap.1 += 1;
            ModelId(heap.1)
        };
        Ok(LoadedModel {
            id,
            ib: blocks.map(|b| {
                b.map(|offset| IbAddr {
                    base_pa: alloc.base_pa,
                    align_offset: alloc.align_offset,
                    offset,
                })
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::dma::{DmaEngine, QueueProducer};
    use super::nq::{NqReader, NqWriter};
    use super::*;
    use crate::sim::fake::FakeHal;
    use crate::wire::nq::ENGINES;

    fn two_cores() -> Device<FakeHal> {
        let config = DeviceConfig {
            cores: 2,
            ..DeviceConfig::default()
        };
        Device::new(FakeHal::new(), config).unwrap()
    }

    #[test]
    fn out_of_range_core_is_an_error_not_a_panic() {
        let dev = two_cores();
        let map = dev.map();
        for core in [2u8, 3, 16, 255] {
            let want = UnitError::Core { core, cores: 2 };
            assert_eq!(dev.stager(core).err(), Some(want), "stager({core})");
            assert_eq!(dev.harvester(core).err(), Some(want), "harvester({core})");
            let hal = Arc::clone(dev.hal());
            assert_eq!(Stager::new(hal, Arc::clone(map), core).err(), Some(want));
            let hal = Arc::clone(dev.hal());
            assert_eq!(Harvester::new(hal, map, core).err(), Some(want));
            assert_eq!(QueueProducer::new(map, core).err(), Some(want));
            assert_eq!(DmaEngine::new(map, core).err(), Some(want));
            for engine in [0u8, 4, 5, 255] {
                // The core is checked first: a bad core names the core.
                assert_eq!(NqWriter::new(map, core, engine).err(), Some(want));
                assert_eq!(NqReader::new(map, core, engine).err(), Some(want));
            }
        }
        // The last core is fine.
        assert_eq!(dev.stager(1).map(|s| s.core()).ok(), Some(1));
        assert!(dev.harvester(1).is_ok());
        assert!(DmaEngine::new(map, 1).is_ok());
        let e = UnitError::Core {
            core: 255,
            cores: 2,
        }
        .to_string();
        assert!(e.contains("core 255") && e.contains("2 core"), "{e}");
    }

    #[test]
    fn out_of_range_engine_is_an_error_not_a_panic() {
        let dev = two_cores();
        let map = dev.map();
        for core in [0u8, 1] {
            for engine in [ENGINES, 6, 255] {
                let want = UnitError::Engine {
                    engine,
                    engines: ENGINES,
                };
                assert_eq!(NqWriter::new(map, core, engine).err(), Some(want));
                assert_eq!(NqReader::new(map, core, engine).err(), Some(want));
            }
            for engine in 0..ENGINES {
                assert!(NqWriter::new(map, core, engine).is_ok());
                assert!(NqReader::new(map, core, engine).is_ok());
            }
        }
        let e = UnitError::Engine {
            engine: 5,
            engines: 5,
        }
        .to_string();
        assert!(
            e.contains("engine 5") && e.contains("5 NQ engine rings"),
            "{e}"
        );
    }

    #[test]
    fn a_hand_made_map_short_of_a_core_is_refused() {
        // `MemMap`'s tables are public: one that lists fewer cores' regions
        // than its config claims must not index past them.
        let dev = two_cores();
        let mut map = (**dev.map()).clone();
        map.cores.truncate(1);
        let want = Some(UnitError::Core { core: 1, cores: 2 });
        assert_eq!(NqReader::new(&map, 1, 0).err(), want);
        assert_eq!(Harvester::new(Arc::clone(dev.hal()), &map, 1).err(), want);
        assert!(Harvester::new(Arc::clone(dev.hal()), &map, 0).is_ok());
    }
}
