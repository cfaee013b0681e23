//! Mapped memory reached only through raw pointers with atomic or volatile
//! access (STYLE.md practice 4).
//!
//! [`Mapping`] owns one `mmap` (anonymous `MAP_SHARED`, or a `MAP_SHARED` file
//! such as a slab under `/dev/shm`). [`Region`] is a bounds-checked window into
//! a mapping that keeps it alive (`Arc`). Nothing here ever hands out `&T` or
//! `&[u8]` over the mapped bytes: every access is an `Atomic*::from_ptr`
//! operation or a volatile byte copy at a checked offset, because another
//! process (an NDS monitor) or the simulated device may write the same bytes.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use core::fmt;

/// A bad offset, length or alignment for a [`Region`] access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemError {
    /// Requested offset inside the region.
    pub offset: usize,
    /// Requested length.
    pub len: usize,
    /// Region length.
    pub region_len: usize,
    /// Required alignment (1 for byte copies).
    pub align: usize,
}

impl fmt::Display for MemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "access of {} bytes at offset {:#x} (align {}) outside region of {} bytes",
            self.len, self.offset, self.align, self.region_len
        )
    }
}

impl std::error::Error for MemError {}

/// One owned `mmap`. Unmapped on drop.
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
    writable: bool,
    _file: Option<File>,
}

// SAFETY: the mapping is plain shared memory; every access goes through
// atomics or volatile copies on raw pointers, so sharing the base pointer
// across threads is sound.
unsafe impl Send for Mapping {}
// SAFETY: as above; `Mapping` exposes no `&T` into the mapped bytes.
unsafe impl Sync for Mapping {}

impl fmt::Debug for Mapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mapping")
            .field("len", &self.len)
            .field("writable", &self.writable)
            .finish()
    }
}

impl Mapping {
    /// An anonymous, zero-filled `MAP_SHARED` mapping of `len` bytes (shared
    /// with children across `fork`).
    pub fn anonymous(len: usize) -> io::Result<Mapping> {
        Self::map(None, len, true)
    }

    /// Create (or truncate) the file at `path`, size it to `len` zero bytes and
    /// map it `MAP_SHARED` read-write.
    pub fn create_file(path: &Path, len: usize) -> io::Result<Mapping> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        file.set_len(len as u64)?;
        Self::map(Some(file), len, true)
    }

    /// Map an existing file whole, read-write or read-only.
    pub fn open_file(path: &Path, writable: bool) -> io::Result<Mapping> {
        let file = OpenOptions::new().read(true).write(writable).open(path)?;
        let len = usize::try_from(file.metadata()?.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file too large to map"))?;
        Self::map(Some(file), len, writable)
    }

    fn map(file: Option<File>, len: usize, writable: bool) -> io::Result<Mapping> {
        if len == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot map zero bytes",
            ));
        }
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        let (flags, fd) = match &file {
            Some(f) => (libc::MAP_SHARED, f.as_raw_fd()),
            None => (libc::MAP_SHARED | libc::MAP_ANONYMOUS, -1),
        };
        // SAFETY: a fresh mapping at a kernel-chosen address; no existing Rust
        // object is aliased. The fd (if any) is valid for the call.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, fd, 0) };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr =
            NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(Mapping {
            ptr,
            len,
            writable,
            _file: file,
        })
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true (zero-length mappings are refused); present for clippy.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the mapping may be written.
    pub fn is_writable(&self) -> bool {
        self.writable
    }

    /// The whole mapping as a shareable [`Region`].
    pub fn into_region(self) -> Region {
        let len = self.len;
        Region {
            map: Arc::new(self),
            off: 0,
            len,
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned, and no access can
        // outlive `self` because every `Region` holds an `Arc<Mapping>`.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// A bounds-checked window into a [`Mapping`]; cheap to clone, keeps the
/// mapping alive.
#[derive(Clone, Debug)]
pub struct Region {
    map: Arc<Mapping>,
    off: usize,
    len: usize,
}

impl Region {
    /// Length of the window in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` for an empty window.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the underlying mapping is writable.
    pub fn is_writable(&self) -> bool {
        self.map.writable
    }

    /// A sub-window `[off, off + len)` of this one.
    pub fn sub(&self, off: usize, len: usize) -> Result<Region, MemError> {
        self.check(off, len, 1)?;
        Ok(Region {
            map: self.map.clone(),
            off: self.off + off,
            len,
        })
    }

    fn check(&self, off: usize, len: usize, align: usize) -> Result<*mut u8, MemError> {
        let err = MemError {
            offset: off,
            len,
            region_len: self.len,
            align,
        };
        let end = off.checked_add(len).ok_or(err)?;
        if end > self.len {
            return Err(err);
        }
        // SAFETY: `self.off + off + len <= map.len` (Region invariant plus the
        // check above), so the pointer stays inside the mapping.
        let p = unsafe { self.map.ptr.as_ptr().add(self.off + off) };
        if (p as usize) % align != 0 {
            return Err(err);
        }
        Ok(p)
    }

    /// The raw address of byte `off` after a bounds and alignment check. Only
    /// the ring and datastore memory modules use this, to build validated
    /// atomic handles once; the pointer is valid while this region lives.
    pub fn ptr_at(&self, off: usize, len: usize, align: usize) -> Result<*mut u8, MemError> {
        self.check(off, len, align)
    }

    /// An atomic view of the 8-byte word at `off` (must be 8-aligned).
    pub fn atomic_u64(&self, off: usize) -> Result<&AtomicU64, MemError> {
        let p = self.check(off, 8, 8)?;
        // SAFETY: in bounds and aligned (checked); the mapping outlives `&self`;
        // every access to these bytes anywhere in xunds is atomic.
        Ok(unsafe { AtomicU64::from_ptr(p.cast()) })
    }

    /// An atomic view of the 4-byte word at `off` (must be 4-aligned).
    pub fn atomic_u32(&self, off: usize) -> Result<&AtomicU32, MemError> {
        let p = self.check(off, 4, 4)?;
        // SAFETY: in bounds and aligned (checked); the mapping outlives `&self`;
        // every access to these bytes anywhere in xunds is atomic.
        Ok(unsafe { AtomicU32::from_ptr(p.cast()) })
    }

    /// Load the u64 at `off` with `order`.
    pub fn load_u64(&self, off: usize, order: Ordering) -> Result<u64, MemError> {
        Ok(self.atomic_u64(off)?.load(order))
    }

    /// Store `v` at `off` with `order`.
    pub fn store_u64(&self, off: usize, v: u64, order: Ordering) -> Result<(), MemError> {
        self.atomic_u64(off)?.store(v, order);
        Ok(())
    }

    /// Load the u32 at `off` with `order`.
    pub fn load_u32(&self, off: usize, order: Ordering) -> Result<u32, MemError> {
        Ok(self.atomic_u32(off)?.load(order))
    }

    /// Store `v` at `off` with `order`.
    pub fn store_u32(&self, off: usize, v: u32, order: Ordering) -> Result<(), MemError> {
        self.atomic_u32(off)?.store(v, order);
        Ok(())
    }

    /// Volatile copy of `out.len()` bytes starting at `off` into `out`.
    pub fn read_bytes(&self, off: usize, out: &mut [u8]) -> Result<(), MemError> {
        let p = self.check(off, out.len(), 1)?;
        for (i, b) in out.iter_mut().enumerate() {
            // SAFETY: `p + i` is inside the checked range.
            *b = unsafe { p.add(i).read_volatile() };
        }
        Ok(())
    }

    /// Volatile copy of `data` to `off`.
    pub fn write_bytes(&self, off: usize, data: &[u8]) -> Result<(), MemError> {
        let p = self.check(off, data.len(), 1)?;
        for (i, b) in data.iter().enumerate() {
            // SAFETY: `p + i` is inside the checked range.
            unsafe { p.add(i).write_volatile(*b) };
        }
        Ok(())
    }

    /// Volatile fill of `len` bytes at `off` with `byte`.
    pub fn fill(&self, off: usize, len: usize, byte: u8) -> Result<(), MemError> {
        let p = self.check(off, len, 1)?;
        for i in 0..len {
            // SAFETY: `p + i` is inside the checked range.
            unsafe { p.add(i).write_volatile(byte) };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anonymous_mapping_is_zeroed_and_checked() {
        let r = Mapping::anonymous(4096).unwrap().into_region();
        assert_eq!(r.load_u64(0, Ordering::Relaxed).unwrap(), 0);
        r.store_u64(8, 0xdead_beef, Ordering::Relaxed).unwrap();
        assert_eq!(r.load_u64(8, Ordering::Relaxed).unwrap(), 0xdead_beef);
        assert!(r.atomic_u64(4).is_err(), "misaligned");
        assert!(r.atomic_u64(4092).is_err(), "out of bounds");
        assert!(r.sub(4000, 200).is_err());
        let s = r.sub(8, 8).unwrap();
        assert_eq!(s.load_u64(0, Ordering::Relaxed).unwrap(), 0xdead_beef);
        let mut b = [0u8; 4];
        r.read_bytes(8, &mut b).unwrap();
        assert_eq!(b, [0xef, 0xbe, 0xad, 0xde]);
        assert!(r.read_bytes(usize::MAX, &mut b).is_err());
    }
}
