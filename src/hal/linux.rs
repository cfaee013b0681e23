//! The Linux backend: every region is a real `MAP_SHARED` mapping
//! ([`Mapping`]: anonymous, or a file in a directory such as `/dev/shm` so
//! another process can map the same device), every event a real eventfd.
//!
//! All access goes through [`Region`]: atomic `from_ptr` words or volatile
//! bytes at checked offsets; this file has no `unsafe` of its own.
#![forbid(unsafe_code)]

use std::os::fd::RawFd;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::eventfd::EventFd;
use super::mem::{Mapping, Region};
use super::{
    check, record_from_halves, record_halves, Access, EventHandle, EventId, Hal, HalError,
    RegionHandle, RegionId, Table, Wait, Width,
};
use crate::sync::word::ReadWrite;

/// Real mappings and eventfds. Clone to share (the tables are `Arc`ed once the
/// device is built; mapping after a clone affects only that clone).
#[derive(Clone, Debug, Default)]
pub struct LinuxHal {
    dir: Option<PathBuf>,
    regions: Table<RegionId, Region>,
    events: Table<EventId, Arc<EventFd>>,
}

impl LinuxHal {
    /// Anonymous `MAP_SHARED` mappings.
    pub fn new() -> LinuxHal {
        LinuxHal::default()
    }

    /// File-backed `MAP_SHARED` mappings, one file per region in `dir`
    /// (named after the region: `dram`, `dmem0`, `m2s0`, ...).
    pub fn in_dir(dir: impl Into<PathBuf>) -> LinuxHal {
        LinuxHal {
            dir: Some(dir.into()),
            ..LinuxHal::default()
        }
    }

    /// The region of a handle this backend issued: the entry at its index
    /// has its id (by key) and its length.
    #[inline(always)]
    fn region(&self, r: RegionHandle) -> Result<&Region, HalError> {
        match self.regions.get(r.index(), r.key()) {
            Some(region) if region.len() == r.len() => Ok(region),
            _ => Err(HalError::BadHandle),
        }
    }

    fn efd(&self, ev: EventHandle) -> Result<&EventFd, HalError> {
        self.events.event(ev).map(|e| &**e)
    }
}

impl Hal for LinuxHal {
    fn name(&self) -> String {
        "linux".to_string()
    }

    fn map(&mut self, id: RegionId, len: usize) -> Result<RegionHandle, HalError> {
        if len == 0 {
            return Err(HalError::ZeroLength(id));
        }
        let dir = &self.dir;
        let index = self.regions.insert(id, || {
            let mapping = match dir {
                None => Mapping::anonymous(len),
                Some(d) => Mapping::create_file(&d.join(id.to_string()), len),
            };
            mapping
                .map(Mapping::into_region)
                .map_err(|e| HalError::os("mmap", &e))
        })?;
        Ok(RegionHandle::new(index, id, len))
    }

    fn base_addr(&self, r: RegionHandle) -> Result<u64, HalError> {
        let p = self
            .region(r)?
            .ptr_at(0, 0, 1)
            .map_err(|_| HalError::BadHandle)?;
        Ok(p as usize as u64)
    }

    fn event(&mut self, id: EventId) -> Result<EventHandle, HalError> {
        let index = self.events.insert(id, || {
            EventFd::new()
                .map(Arc::new)
                .map_err(|e| HalError::os("eventfd", &e))
        })?;
        Ok(EventHandle::new(index, id))
    }

    #[inline(always)]
    fn access(&self, r: RegionHandle, off: usize, a: Access<'_>) -> Result<u64, HalError> {
        let (len, align) = a.span();
        // One check: the bounds and alignment against the handle (refused
        // first), then that the handle is this backend's, so the region has
        // the handle's length and a word access needs no range check of the
        // region's (the view still checks each word against the mapping).
        // Past it, a copy's and the view's own checks fail only on a
        // read-only mapping or a misaligned base, which this backend never
        // makes (every region is a whole read-write mapping); such a
        // failure is reported as the handle's.
        check(r, off, len, align)?;
        let reg = self.region(r)?;
        let e = |_| HalError::BadHandle;
        let w = match a {
            // Whole aligned words go as relaxed atomic accesses (so a
            // concurrent reader or writer never races a plain access), the
            // ragged edges as volatile bytes.
            Access::Read(out) => return reg.copy_out(off, out).map(|()| 0).map_err(e),
            Access::Write(data) => return reg.copy_in(off, data).map(|()| 0).map_err(e),
            _ => reg.view::<ReadWrite>(),
        };
        let Some(w) = w else {
            return Err(HalError::BadHandle);
        };
        Ok(match a {
            Access::Load(Width::W32, order) => w.load_u32(off, order).into(),
            Access::Load(Width::W64, order) => w.load_u64(off, order),
            Access::Store(Width::W32, v, order) => {
                w.store_u32(off, v as u32, order);
                0
            }
            Access::Store(Width::W64, v, order) => {
                w.store_u64(off, v, order);
                0
            }
            // Ordering: the caller's ordering applies to the read-modify-write
            // (partner and seed section named off the caller).
            Access::FetchAdd(Width::W32, v, order) => w.fetch_add_u32(off, v as u32, order).into(),
            // Ordering: as above.
            Access::FetchAdd(Width::W64, v, order) => w.fetch_add_u64(off, v, order),
            // Ordering: Release pairs with the device's Acquire load of the
            // same tail register (docs/abi.md §1.10 "device publish boundary").
            Access::TailInc(n) => w
                .fetch_add_u32(off, n, Ordering::Release)
                .wrapping_add(n)
                .into(),
            Access::LoadRun(out) => {
                w.load_u32s(off, out.len(), Ordering::Relaxed, |i, v| out[i] = v);
                0
            }
            Access::StoreRun(vals) => {
                for (i, &v) in vals.iter().enumerate() {
                    w.store_u32(off + 4 * i, v, Ordering::Relaxed);
                }
                0
            }
            Access::ReadRecord(_, out) => {
                // Ordering: Acquire pairs with the Release store of this half
                // in `WriteRecord` below: if the mark is the expected one, the
                // other half is too (docs/abi.md §1.11, §1.13).
                let lo = w.load_u64(off, Ordering::Acquire);
                *out = record_from_halves(lo, w.load_u64(off + 8, Ordering::Relaxed));
                0
            }
            Access::WriteRecord(_, rec) => {
                let (lo, hi) = record_halves(rec);
                w.store_u64(off + 8, hi, Ordering::Relaxed);
                // Ordering: Release publishes the record; pairs with the
                // Acquire load of the same half in `ReadRecord` (the
                // consumer's ring-id / phase check). docs/abi.md §1.11, §1.13.
                w.store_u64(off, lo, Ordering::Release);
                0
            }
            Access::Read(_) | Access::Write(_) => 0,
        })
    }

    fn notify(&self, ev: EventHandle, n: u64) -> Result<(), HalError> {
        self.efd(ev)?
            .signal(n)
            .map_err(|e| HalError::os("eventfd write", &e))
    }

    fn wait(&self, ev: EventHandle, timeout_ns: u64) -> Result<Wait, HalError> {
        self.efd(ev)?
            .wait(Duration::from_nanos(timeout_ns))
            .map_err(|e| HalError::os("eventfd wait", &e))
    }

    fn event_fd(&self, ev: EventHandle) -> Option<RawFd> {
        self.efd(ev).ok().map(EventFd::raw)
    }
}
