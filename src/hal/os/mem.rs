//! Mapped memory reached only through raw pointers with atomic or volatile
//! access (a `&T` over bytes another party writes would be undefined
//! behaviour).
//!
//! [`Mapping`] owns one `mmap` (anonymous `MAP_SHARED`, or a `MAP_SHARED` file
//! such as a slab under `/dev/shm`). [`Region`] is a bounds-checked, shareable
//! handle on a mapping that keeps it alive (`Arc`). Nothing here ever hands out `&T` or
//! `&[u8]` over the mapped bytes: every access is an atomic operation or a
//! volatile byte copy at a checked offset, because another process (an NDS
//! monitor) or the simulated device may write the same bytes.
//!
//! The atomic words are `Words` (`crate::sync::word`), the crate's one
//! atomic access over a raw base; this module adds the region's checks, as
//! [`MemError`]s, and the volatile bytes at a copy's ragged edges.
//!
//! A read-only mapping (`PROT_READ`, [`Mapping::from_file`] with
//! `writable = false`) is only ever loaded from: a storing word view
//! (`Region::view` of [`ReadWrite`]) is refused (`None`), and a copy in
//! with a [`MemError::ReadOnly`] (a store would fault). Word loads on such a mapping are [`ReadOnly`]
//! views: Relaxed atomic loads, the only atomic access the standard library
//! promises works on read-only pages ("Atomic accesses to read-only memory"
//! in `core::sync::atomic`), followed by a fence when the caller asked for
//! more than Relaxed.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;

use crate::sync::word::{Access, ReadOnly, ReadWrite, Words};
use std::sync::Arc;

error_enum! {
    /// A bad offset, length or alignment for a [`Region`] access, or a write to
    /// a read-only mapping.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum MemError {
        /// `[offset, offset + len)` is outside the region or not `align`-aligned.
        OutOfBounds {
            /// Requested offset inside the region.
            offset: usize,
            /// Requested length.
            len: usize,
            /// Required alignment (1 for byte copies).
            align: usize,
            /// Region length.
            region_len: usize,
        } => "access of {len} bytes at offset {offset:#x} (align {align}) outside region of {region_len} bytes",
        /// The access was in bounds but would write (or hand out a writable
        /// atomic handle to) a read-only mapping.
        ReadOnly {
            /// Requested offset inside the region.
            offset: usize,
            /// Requested length.
            len: usize,
        } => "write of {len} bytes at offset {offset:#x} to a read-only mapping",
    }
}

/// One owned `mmap`. Unmapped on drop.
///
/// A file mapping is guarded against the file shrinking under it (another
/// process truncating it): a writable one regrows the file, a read-only one
/// is detached onto zero pages, and [`Mapping::shrunk`] says it happened
/// (see the `hal::sigbus` module). No access through a mapping ever dies of SIGBUS.
#[derive(Debug)]
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
    writable: bool,
    /// Unregistered before the unmap (field dropped in `Drop`).
    guard: Option<super::sigbus::Guard>,
    /// Kept open for the mapping's life: the guard's `ftruncate` uses it,
    /// and a slab writer's lock lives on it.
    _file: Option<File>,
}

// SAFETY: `Mapping` owns the mapping (unmapped once, in `Drop`) and holds
// only its base pointer and length; the mapped bytes are reached only through
// `Region`'s atomic or volatile accesses at checked offsets, which are sound
// from any thread, so moving the owner to another thread is sound.
unsafe impl Send for Mapping {}
// SAFETY: `&Mapping` gives no access to the mapped bytes at all (only
// `shrunk`); `Region` does the accesses, each atomic or volatile.
unsafe impl Sync for Mapping {}

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

    /// Map the first `len` bytes of an open file (read-write when
    /// `writable`; the file must be open for that). The mapping keeps the
    /// file open, and with it any lock taken on it ([`lock_exclusive`]).
    pub fn from_file(file: File, len: usize, writable: bool) -> io::Result<Mapping> {
        Self::map(Some(file), len, writable)
    }

    /// How many times the file was found shrunk under this mapping since it
    /// was made (0 for an anonymous mapping). Non-zero: some bytes read
    /// through it may be zeros nobody wrote; a read-only mapping reads only
    /// zeros from then on.
    pub fn shrunk(&self) -> u64 {
        self.guard.as_ref().map_or(0, |g| g.shrunk())
    }

    fn map(file: Option<File>, len: usize, writable: bool) -> io::Result<Mapping> {
        if len == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot map zero bytes",
            ));
        }
        #[cfg(miri)]
        if file.is_none() {
            // Miri has no shared mappings: an anonymous one is zeroed,
            // page-aligned heap memory (one process, so nothing is lost),
            // which lets Miri check the mapped ring storage too.
            // SAFETY: `len > 0` and the layout is valid (4096 is a power of
            // two, `len` far below isize::MAX for any caller).
            let p = unsafe { std::alloc::alloc_zeroed(Self::miri_layout(len)) };
            let ptr = NonNull::new(p).ok_or_else(|| io::Error::other("out of memory"))?;
            return Ok(Mapping {
                ptr,
                len,
                writable,
                guard: None,
                _file: None,
            });
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
        let guard = file
            .as_ref()
            .map(|f| super::sigbus::Guard::new(ptr.as_ptr(), len, f.as_raw_fd(), writable));
        let guard = match guard.transpose() {
            Ok(g) => g,
            Err(e) => {
                // SAFETY: the mapping just made, not yet shared.
                unsafe { libc::munmap(p, len) };
                return Err(e);
            }
        };
        Ok(Mapping {
            ptr,
            len,
            writable,
            guard,
            _file: file,
        })
    }

    #[cfg(miri)]
    fn miri_layout(len: usize) -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(len, 4096).expect("mapping layout")
    }

    /// The whole mapping as a shareable [`Region`].
    pub fn into_region(self) -> Region {
        let (base, len, writable) = (self.ptr, self.len, self.writable);
        Region {
            map: Arc::new(self),
            base,
            len,
            writable,
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // Unregister before the range can be reused by another mapping.
        drop(self.guard.take());
        #[cfg(miri)]
        if self._file.is_none() {
            // SAFETY: allocated in `map` with exactly this layout.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr(), Self::miri_layout(self.len)) };
            return;
        }
        // SAFETY: `ptr`/`len` are exactly what mmap returned and nothing else
        // unmaps them; no access can outlive `self` because every `Region`
        // (and every atomic handle, borrowed from a `Region`) keeps an
        // `Arc<Mapping>` alive.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// A whole [`Mapping`], bounds-checked; cheap to clone, keeps the mapping
/// alive.
///
/// The mapping's base, length and writability are cached here (invariant:
/// they are the mapping's), so a checked access reads this struct only, not
/// the shared `Mapping` behind the `Arc`.
#[derive(Clone, Debug)]
pub struct Region {
    map: Arc<Mapping>,
    base: NonNull<u8>,
    len: usize,
    writable: bool,
}

// SAFETY: `base` points into the mapping `map` keeps alive (for as long as
// this `Region` lives); the bytes are reached only through atomic or
// volatile accesses at checked offsets, sound from any thread (as for
// `Mapping`, whose `Send` this mirrors).
unsafe impl Send for Region {}
// SAFETY: as for `Send`: `&Region` reaches the mapped bytes only through
// atomic or volatile accesses, which are sound from any thread.
unsafe impl Sync for Region {}

impl Region {
    /// Length in bytes.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true (zero-length mappings are refused); present for clippy.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the underlying mapping is writable.
    pub fn is_writable(&self) -> bool {
        self.writable
    }

    /// [`Mapping::shrunk`] of the underlying mapping.
    pub fn shrunk(&self) -> u64 {
        self.map.shrunk()
    }

    #[inline(always)]
    fn err(&self, offset: usize, len: usize, align: usize) -> MemError {
        let region_len = self.len;
        MemError::OutOfBounds {
            offset,
            len,
            align,
            region_len,
        }
    }

    /// The raw address of byte `off` after a bounds and alignment check. Only
    /// the HAL, ring and datastore memory modules use this, to build
    /// validated atomic handles; the pointer is valid while this region
    /// lives. On a read-only mapping ([`Region::is_writable`] false) the
    /// pointer may only be loaded from, with Relaxed atomic loads.
    #[inline(always)]
    pub fn ptr_at(&self, off: usize, len: usize, align: usize) -> Result<*mut u8, MemError> {
        let err = self.err(off, len, align);
        let end = off.checked_add(len).ok_or(err)?;
        if end > self.len {
            return Err(err);
        }
        // SAFETY: `off + len <= self.len` (checked above) and `base .. base +
        // self.len` lies inside the mapping (Region invariant), so the offset
        // pointer stays inside the one allocation mmap returned (`add` needs
        // exactly that).
        let p = unsafe { self.base.as_ptr().add(off) };
        if (p as usize) % align != 0 {
            return Err(err);
        }
        Ok(p)
    }

    /// The raw address of byte `off` and the mapping's [`view`](Self::view),
    /// after the bounds and alignment check of `len` bytes at `off` (and,
    /// for a view that stores, the writability check), as [`MemError`]s.
    #[inline(always)]
    fn checked<A: Access>(
        &self,
        off: usize,
        len: usize,
        align: usize,
    ) -> Result<(*mut u8, Words<0, A>), MemError> {
        let p = self.ptr_at(off, len, align)?;
        if A::WRITABLE && !self.writable {
            return Err(MemError::ReadOnly { offset: off, len });
        }
        let w = self.view().ok_or_else(|| self.err(off, len, align))?;
        Ok((p, w))
    }

    /// The mapping as atomic words ([`Words`], a view that stores when `A`
    /// is [`ReadWrite`]; its offsets are the region's), with no range check
    /// of its own: every access of the view is checked against the
    /// mapping's length anyway, so a caller that checked its range once
    /// reaches its words without a second check. `None` for a view that
    /// stores over a read-only mapping. The view is for the caller's one
    /// access and is dropped before `self`.
    #[inline(always)]
    pub(crate) fn view<A: Access>(&self) -> Option<Words<0, A>> {
        if A::WRITABLE && !self.writable {
            return None;
        }
        // SAFETY: `base` is what `mmap` returned (or Miri's 4096-aligned
        // block), page aligned, so the view's alignment check below folds.
        unsafe { core::hint::assert_unchecked(self.base.as_ptr() as usize % 4096 == 0) };
        // SAFETY: `base .. base + len` is the mapping `self` keeps alive for
        // longer than the view (a local of the caller), page aligned; a view
        // that stores only over a writable mapping (checked above). Mapped
        // bytes are never a `&T`: they are reached only through atomics, each
        // shared word with one width (the ownership tables in
        // docs/design.md), or volatile bytes at the ragged edges of a copy,
        // which no other agent writes concurrently.
        unsafe { Words::<0, A>::from_raw(self.base.as_ptr(), self.len) }
    }

    /// Copy `out.len()` bytes at `off` (any offset, any length) out: the
    /// whole 4-aligned words as Relaxed atomic loads (so a concurrent
    /// writer's word is never torn), the ragged edges as volatile bytes. The
    /// range is checked once.
    #[inline(always)]
    pub fn copy_out(&self, off: usize, out: &mut [u8]) -> Result<(), MemError> {
        let (p, w) = self.checked::<ReadOnly>(off, out.len(), 1)?;
        let (head, mid, _) = split_words(p as usize, out.len());
        let (h, rest) = out.split_at_mut(head);
        let (m, t) = rest.split_at_mut(mid);
        for (i, b) in h.iter_mut().enumerate() {
            // SAFETY: `i < head <= out.len()`: inside the checked range; a
            // volatile byte read of mapped memory (even read-only) is allowed.
            *b = unsafe { p.add(i).read_volatile() };
        }
        // The whole words: `p + head` is 4-aligned (`head` is the distance
        // to the next 4-aligned address) and `head + mid <= out.len()`.
        w.load_u32s(off + head, mid / 4, Ordering::Relaxed, |i, v| {
            m[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
        });
        for (i, b) in t.iter_mut().enumerate() {
            // SAFETY: `head + mid + i < out.len()`: inside the checked range.
            *b = unsafe { p.add(head + mid + i).read_volatile() };
        }
        Ok(())
    }

    /// Copy `data` in at `off` (any offset, any length; writable mappings
    /// only): the whole 4-aligned words as Relaxed atomic stores (so a
    /// concurrent reader never races a plain write), the ragged edges as
    /// volatile bytes. The range is checked once.
    #[inline(always)]
    pub fn copy_in(&self, off: usize, data: &[u8]) -> Result<(), MemError> {
        let (p, w) = self.checked::<ReadWrite>(off, data.len(), 1)?;
        let (head, mid, _) = split_words(p as usize, data.len());
        let (h, rest) = data.split_at(head);
        let (m, t) = rest.split_at(mid);
        for (i, b) in h.iter().enumerate() {
            // SAFETY: `i < head <= data.len()`: inside the checked range of a
            // writable mapping (checked); a byte needs no alignment.
            unsafe { p.add(i).write_volatile(*b) };
        }
        // The whole words, as in `copy_out`.
        for (i, chunk) in m.chunks_exact(4).enumerate() {
            let v = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            w.store_u32(off + head + 4 * i, v, Ordering::Relaxed);
        }
        for (i, b) in t.iter().enumerate() {
            // SAFETY: `head + mid + i < data.len()`: inside the checked range
            // of a writable mapping.
            unsafe { p.add(head + mid + i).write_volatile(*b) };
        }
        Ok(())
    }
}

/// Take an exclusive `flock` on `file` without waiting: held until the open
/// file description is closed (every clone of the descriptor, e.g. the
/// [`Mapping`] made from it), released by the kernel when the holder dies.
/// Contention is `ErrorKind::WouldBlock`; [`lock_holder`] names the holder.
pub fn lock_exclusive(file: &File) -> io::Result<()> {
    flock_nb(file, libc::LOCK_EX)
}

/// `flock(file, op | LOCK_NB)`.
fn flock_nb(file: &File, op: libc::c_int) -> io::Result<()> {
    // SAFETY: `flock` on a descriptor `file` keeps open for the call.
    match unsafe { libc::flock(file.as_raw_fd(), op | libc::LOCK_NB) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// A new, empty file with no name in any directory (`memfd_create`, closed
/// on exec): nothing another process can open by path, and nothing left
/// behind however this process ends (its memory goes with the last
/// descriptor or mapping).
pub fn unnamed_file() -> io::Result<File> {
    use std::os::fd::FromRawFd as _;
    // SAFETY: the name is a NUL-terminated static string; the call takes no
    // other pointer.
    let fd = unsafe { libc::memfd_create(c"xunds-unnamed".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a descriptor the call just opened, owned by nothing
    // else.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Take a shared `flock` on `file` without waiting: the lock of a process
/// that removes a writer's file once the writer is gone (`xunds nds clean`).
/// It excludes writers (their [`lock_exclusive`] fails while it is held, and
/// it fails while one is) without being one: [`lock_holder`] names only
/// exclusive holders, so a writer that finds the file locked this way
/// waits it out instead of reporting a second writer.
pub fn lock_shared(file: &File) -> io::Result<()> {
    flock_nb(file, libc::LOCK_SH)
}

/// Whether `path` still names the open file whose metadata (`fstat`) is
/// `held`: the same device and inode, and not unlinked. The check after
/// locking a file opened by path, since another process may remove or
/// replace the file between the open and the lock (a lock on the removed
/// file excludes no one who opens the path afterwards); the caller passes
/// the metadata it reads after the lock anyway. `follow`: resolve a final
/// symbolic link in `path`, as an open without `O_NOFOLLOW` did. A path that
/// no longer exists is `false`.
pub fn path_names(path: &Path, held: &std::fs::Metadata, follow: bool) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let named = if follow {
        std::fs::metadata(path)
    } else {
        std::fs::symlink_metadata(path)
    };
    match named {
        Ok(now) => Ok(held.nlink() > 0 && (now.dev(), now.ino()) == (held.dev(), held.ino())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// The pid holding an exclusive `flock` on the file `file` refers to, from
/// `/proc/locks` (`None` when it cannot be told).
pub fn lock_holder(file: &File) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let m = file.metadata().ok()?;
    let dev = m.dev();
    let want = format!(
        "{:02x}:{:02x}:{}",
        libc::major(dev),
        libc::minor(dev),
        m.ino()
    );
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    locks.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        // `1: FLOCK  ADVISORY  WRITE 8341 fe:00:10010988 0 EOF`
        (f.get(1) == Some(&"FLOCK")
            && f.get(3) == Some(&"WRITE")
            && f.get(5) == Some(&want.as_str()))
        .then(|| f.get(4)?.parse().ok())
        .flatten()
    })
}

/// Split `len` bytes at address (or offset) `at` into (ragged head up to
/// the first 4-aligned address, whole 4-byte words, ragged tail).
#[inline(always)]
fn split_words(at: usize, len: usize) -> (usize, usize, usize) {
    let head = ((4 - at % 4) % 4).min(len);
    let mid = (len - head) / 4 * 4;
    (head, mid, len - head - mid)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A SIGBUS on a writable file mapping whose file is at full length is
    /// not a shrink (a page a full tmpfs cannot supply, an I/O error): the
    /// guard neither regrows nor counts it and passes the fault on. A guard
    /// that "regrew" the file to its own size, counted a shrink and returned
    /// would fault again forever on a real fault of that kind. A forked child
    /// queues itself such a fault (SIGBUS with a fault's code and an address
    /// in the mapping) and exits with the shrink count it then reads.
    #[test]
    #[cfg_attr(miri, ignore = "mmap, fork and signals are not available under Miri")]
    fn a_fault_on_a_full_length_file_is_not_a_shrink() {
        let path = std::env::temp_dir().join(format!("xunds-sigbus-full-{}", std::process::id()));
        let m = Mapping::create_file(&path, 4096).unwrap();
        let _ = std::fs::remove_file(&path);
        let addr = m.ptr.as_ptr().cast::<libc::c_void>();
        // SAFETY: the child makes only async-signal-safe calls (getpid,
        // gettid, rt_tgsigqueueinfo, an atomic load, _exit) and touches no
        // lock another thread of the test process might have held.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork");
        if pid == 0 {
            // SAFETY: a zeroed siginfo is valid; the fault address goes
            // where the kernel puts it (16 bytes in, after signo, errno,
            // code and padding: `si_addr()` reads it back from there); the
            // syscall reads the struct only.
            unsafe {
                let mut info: libc::siginfo_t = std::mem::zeroed();
                info.si_signo = libc::SIGBUS;
                info.si_code = libc::BUS_ADRERR;
                (&mut info as *mut libc::siginfo_t)
                    .cast::<u8>()
                    .add(16)
                    .cast::<*mut libc::c_void>()
                    .write(addr);
                if info.si_addr() != addr {
                    libc::_exit(100);
                }
                let r = libc::syscall(
                    libc::SYS_rt_tgsigqueueinfo,
                    libc::getpid(),
                    libc::gettid(),
                    libc::SIGBUS,
                    &info as *const libc::siginfo_t,
                );
                if r != 0 {
                    libc::_exit(101);
                }
                libc::_exit(m.shrunk().min(99) as libc::c_int);
            }
        }
        let mut status = 0;
        // SAFETY: waits for the child forked above; writes `status` only.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status), "child status {status:#x}");
        assert_eq!(
            libc::WEXITSTATUS(status),
            0,
            "shrinks counted for a fault on a full-length file (100/101: the test's own setup failed)"
        );
    }

    #[test]
    fn ragged_edges_and_whole_words() {
        assert_eq!(split_words(0, 8), (0, 8, 0));
        assert_eq!(split_words(1, 10), (3, 4, 3));
        assert_eq!(split_words(0, 3), (0, 0, 3));
        assert_eq!(split_words(3, 1), (1, 0, 0));
        assert_eq!(split_words(2, 1), (1, 0, 0));
        assert_eq!(split_words(5, 0), (0, 0, 0));
    }

    #[test]
    #[cfg_attr(miri, ignore = "mmap is not available under Miri")]
    fn ragged_copies_round_trip() {
        let r = Mapping::anonymous(64).unwrap().into_region();
        let data: Vec<u8> = (1..=23).collect();
        for off in 0..8 {
            r.copy_in(0, &[0; 64]).unwrap();
            r.copy_in(off, &data).unwrap();
            let mut out = vec![0u8; data.len() + 2];
            r.copy_out(off.saturating_sub(1), &mut out).unwrap();
            let skip = usize::from(off > 0);
            assert_eq!(&out[skip..skip + data.len()], &data[..], "at +{off}");
            assert_eq!(out[skip + data.len()], 0);
        }
        // Short copies at every offset: some have no whole word at all.
        for (off, len) in (0..8).flat_map(|off| (0..9).map(move |len| (off, len))) {
            let data: Vec<u8> = (0..len as u8).map(|b| b ^ 0xa5).collect();
            r.copy_in(off, &data).unwrap();
            let mut out = vec![0u8; len];
            r.copy_out(off, &mut out).unwrap();
            assert_eq!(out, data, "{len} bytes at +{off}");
        }
        assert!(r.copy_in(60, &[0; 5]).is_err());
        assert!(r.copy_out(usize::MAX, &mut [0; 1]).is_err());
    }

    #[test]
    #[cfg_attr(miri, ignore = "mmap is not available under Miri")]
    fn anonymous_mapping_is_zeroed_and_checked() {
        let r = Mapping::anonymous(4096).unwrap().into_region();
        let rw = |off, len, align| r.checked::<ReadWrite>(off, len, align).map(|(_, w)| w);
        let w = rw(0, 16, 8).unwrap();
        assert_eq!(w.load_u64(0, Ordering::Relaxed), 0);
        w.store_u64(8, 0xdead_beef, Ordering::Relaxed);
        assert_eq!(w.load_u64(8, Ordering::Relaxed), 0xdead_beef);
        assert!(rw(4, 8, 8).is_err(), "misaligned");
        assert!(rw(4092, 8, 8).is_err(), "out of bounds");
        assert!(rw(usize::MAX, 8, 1).is_err(), "wraps");
        let mut b = [0u8; 4];
        r.copy_out(8, &mut b).unwrap();
        assert_eq!(b, [0xef, 0xbe, 0xad, 0xde]);
        assert!(r.copy_out(usize::MAX, &mut b).is_err());
    }

    #[test]
    #[cfg_attr(miri, ignore = "mmap and files are not available under Miri")]
    fn read_only_mapping_loads_and_refuses_writes() {
        let p = std::env::temp_dir().join(format!("xunds-mem-ro-{}", std::process::id()));
        {
            let w = Mapping::create_file(&p, 64).unwrap().into_region();
            w.copy_in(8, &0x1122_3344_5566_7788u64.to_le_bytes())
                .unwrap();
        }
        let f = File::open(&p).unwrap();
        let r = Mapping::from_file(f, 64, false).unwrap().into_region();
        assert!(!r.is_writable());
        // Ordering: each load ordering once, on one thread (the value is
        // what is checked; the read-only path turns them into fences).
        let w = r.checked::<ReadOnly>(8, 8, 8).unwrap().1;
        assert_eq!(w.load_u64(8, Ordering::Acquire), 0x1122_3344_5566_7788);
        assert_eq!(w.load_u32(12, Ordering::SeqCst), 0x1122_3344);
        drop(w);
        let mut b = [0u8; 2];
        r.copy_out(8, &mut b).unwrap();
        assert_eq!(b, [0x88, 0x77]);
        // Every write path (a storing word view, a copy in) is refused in
        // bounds, as `ReadOnly`: a store would hit a PROT_READ page.
        for e in [
            r.checked::<ReadWrite>(8, 8, 8).map(drop).unwrap_err(),
            r.checked::<ReadWrite>(8, 4, 4).map(drop).unwrap_err(),
            r.copy_in(8, &[1]).unwrap_err(),
            r.copy_in(0, &[0; 64]).unwrap_err(),
        ] {
            assert!(matches!(e, MemError::ReadOnly { .. }), "{e}");
            assert!(e.to_string().contains("read-only"), "{e}");
        }
        // Bounds still come first.
        for e in [
            r.checked::<ReadOnly>(64, 8, 8).map(drop).unwrap_err(),
            r.checked::<ReadWrite>(64, 8, 8).map(drop).unwrap_err(),
        ] {
            assert!(matches!(e, MemError::OutOfBounds { .. }), "{e}");
        }
        let w = r.checked::<ReadOnly>(8, 8, 8).unwrap().1;
        assert_eq!(
            w.load_u64(8, Ordering::Relaxed),
            0x1122_3344_5566_7788,
            "nothing was written"
        );
        drop(w);
        drop(r);
        std::fs::remove_file(&p).unwrap();
    }
}
