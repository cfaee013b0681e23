//! The slab's memory: one pair of traits, one slab type over four backings.
//!
//! [`Slab`] is word-sized atomic *reads* of a slab; [`SlabMut`] adds the
//! stores and read-modify-writes a publisher needs. Every byte of a slab is
//! reached through these methods, because another process may write it at
//! any time: never a `&[u8]`, never a plain `memcpy`, never a reference to
//! anything but an atomic.
//!
//! [`WordSlab`] is the one implementation: `Words` (the crate's atomic
//! words over a raw base, `crate::sync::word`) and what keeps that memory
//! valid, its [`Backing`]:
//!
//! | name | backing | memory | used by |
//! |---|---|---|---|
//! | [`MappedSlab`] | [`Region`], read-write | `MAP_SHARED`, `PROT_READ\|PROT_WRITE` (a file such as `/dev/shm/x`, or anonymous) | the publisher ([`Writer`](super::Writer)) |
//! | [`ReadOnlySlab`] | [`Region`], [`ReadOnly`] | `MAP_SHARED`, `PROT_READ` when opened by path | monitors ([`Reader`](super::Reader)) |
//! | [`HeapSlab`] | [`Heap`] | a heap block (loom's atomics under `--cfg loom`) | loom models, Miri, unit tests, fuzzing |
//! | [`RawSlab`] | [`Caller`] | memory the embedder provides: a [`StaticSlab`], or a pointer with [`RawSlab::from_raw`]'s contract | `no_std` embedders |
//!
//! [`RawSlab`] and [`StaticSlab`] are the `no_std` core (no allocator, no
//! file); the others need the `std` feature.
//!
//! A [`ReadOnly`] slab implements only [`Slab`]: libnrt's read-only gate
//! (docs/abi.md §2.5: `nds_is_read_only`) as a type, so a monitor cannot
//! even name a store. Its loads are Relaxed atomic loads followed by a fence
//! when the caller asks for Acquire (or SeqCst): on a `PROT_READ` page that
//! is the only atomic access `core::sync::atomic` promises ("Atomic accesses
//! to read-only memory"), and it synchronizes exactly as an Acquire load.
//!
//! Offsets are byte offsets from the start of the slab. An offset must be
//! aligned to the access size and in bounds; all offsets xunds passes come
//! from the checked constructors of [`crate::wire::nds`], which are all below
//! `REQUIRED_SIZE`, and every slab a [`Reader`](super::Reader) or
//! [`Writer`](super::Writer) accepts is at least that long. A violation is a
//! bug in the caller and panics (like slice indexing); it is never caused by
//! the slab's contents.
//!
//! The slab takes the memory ordering from the caller and applies it to one
//! atomic operation; the `// Ordering:` reasoning lives at the call sites
//! (`record.rs`, `writer.rs`, `reader.rs`), which name the partner operation.

use core::cell::UnsafeCell;
use core::ops::Deref;
use core::sync::atomic::Ordering;
#[cfg(feature = "std")]
use std::io;
#[cfg(feature = "std")]
use std::path::Path;

#[cfg(feature = "std")]
use crate::hal::mem::{lock_exclusive, lock_holder, Mapping, Region};
use crate::sync::word::Words;
pub use crate::sync::word::{Access, ReadOnly, ReadWrite};
#[cfg(feature = "std")]
use crate::wire::nds::{header, region};

use super::{NdsError, REQUIRED_SIZE, SLAB_SIZE};

/// The slab a [`Writer`](super::Writer) names by default: the mapped slab
/// with `std`, [`RawSlab`] without.
#[cfg(feature = "std")]
pub(crate) type DefaultSlab = MappedSlab;
#[cfg(not(feature = "std"))]
pub(crate) type DefaultSlab = RawSlab;
/// The slab a [`Reader`](super::Reader) names by default: the read-only
/// mapping with `std`, [`RawSlab`] without.
#[cfg(feature = "std")]
pub(crate) type DefaultReadSlab = ReadOnlySlab;
#[cfg(not(feature = "std"))]
pub(crate) type DefaultReadSlab = RawSlab;

// The slab is the x86/ARM little-endian ABI: a word's bytes in memory are its
// little-endian encoding.
const _: () = assert!(cfg!(target_endian = "little"));

/// Word-sized atomic reads of a slab.
pub trait Slab: Send + Sync {
    /// Length of the slab in bytes.
    fn len(&self) -> usize;

    /// `true` for an empty slab (never the case for an accepted one).
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Atomically load the 8-byte word at `off` (8-aligned, in bounds).
    fn load_u64(&self, off: usize, order: Ordering) -> u64;

    /// Atomically load the 4-byte word at `off` (4-aligned, in bounds).
    fn load_u32(&self, off: usize, order: Ordering) -> u32;

    /// A memory fence in the atomics family this backing uses (`core`, or
    /// loom's for the heap backing under `--cfg loom`).
    fn fence(&self, order: Ordering);

    /// `true` once the file behind a mapped slab was found shrunk under it
    /// (truncated by another process): loads since may have returned zeros
    /// nobody wrote, so nothing read can be trusted. Always `false` for
    /// memory no other process can shrink.
    fn shrunk(&self) -> bool {
        false
    }
}

/// Word-sized atomic writes of a slab (the publisher's side).
pub trait SlabMut: Slab {
    /// Atomically store the 8-byte word at `off`.
    fn store_u64(&self, off: usize, v: u64, order: Ordering);

    /// Atomically store the 4-byte word at `off`.
    fn store_u32(&self, off: usize, v: u32, order: Ordering);

    /// Atomic wrapping add (`LOCK ADD`, docs/abi.md §2.4); returns the old value.
    fn fetch_add_u64(&self, off: usize, v: u64, order: Ordering) -> u64;

    /// Atomic bitwise OR (`LOCK OR`, docs/abi.md §2.4 FEATURE_BITMAP); returns the
    /// old value.
    fn fetch_or_u64(&self, off: usize, v: u64, order: Ordering) -> u64;
}

/// Any pointer to a slab is a slab (`&S`, `Arc<S>`, `Box<S>`): every method
/// forwards to the pointee.
impl<P> Slab for P
where
    P: Deref + Send + Sync,
    P::Target: Slab,
{
    forward!(self => (**self);
        fn len(&self) -> usize;
        fn load_u64(&self, off: usize, order: Ordering) -> u64;
        fn load_u32(&self, off: usize, order: Ordering) -> u32;
        fn fence(&self, order: Ordering);
        fn shrunk(&self) -> bool;
    );
}

/// Any pointer to a writable slab is a writable slab.
impl<P> SlabMut for P
where
    P: Deref + Send + Sync,
    P::Target: SlabMut,
{
    forward!(self => (**self);
        fn store_u64(&self, off: usize, v: u64, order: Ordering);
        fn store_u32(&self, off: usize, v: u32, order: Ordering);
        fn fetch_add_u64(&self, off: usize, v: u64, order: Ordering) -> u64;
        fn fetch_or_u64(&self, off: usize, v: u64, order: Ordering) -> u64;
    );
}

/// What keeps a [`WordSlab`]'s memory valid: a mapping ([`Region`]), a heap
/// block ([`Heap`]) or the embedder ([`Caller`]).
pub trait Backing: Send + Sync + core::fmt::Debug {
    /// [`Slab::shrunk`]: whether the file behind the memory shrank.
    fn shrunk(&self) -> bool {
        false
    }
}

#[cfg(feature = "std")]
impl Backing for Region {
    fn shrunk(&self) -> bool {
        Region::shrunk(self) > 0
    }
}

/// A heap block, owned by the slab's `Words` (so a [`HeapSlab`] is not
/// `Clone`: share it behind an `Arc`).
#[cfg(feature = "std")]
#[derive(Debug)]
pub struct Heap;
#[cfg(feature = "std")]
impl Backing for Heap {}

/// Memory the embedder keeps valid under [`RawSlab::from_raw`]'s contract.
#[derive(Clone, Copy, Debug)]
pub struct Caller;
impl Backing for Caller {}

/// A slab: atomic words over memory its [`Backing`] keeps valid, writable
/// ([`SlabMut`]) unless `A` is [`ReadOnly`].
#[derive(Debug)]
pub struct WordSlab<M: Backing, A: Access = ReadWrite> {
    words: Words<0, A>,
    backing: M,
}

/// A read-write `MAP_SHARED` slab: the publisher's memory.
///
/// # Examples
///
/// A slab file, its one writer, and a reader of the same mapping:
///
/// ```
/// use xunds::nds::{Counter, MappedSlab, Reader, Writer};
/// use xunds::wire::nds::counters::NdCounter;
///
/// let path = std::env::temp_dir().join(format!("xunds-doc-mapped-{}.nds", std::process::id()));
/// let slab = MappedSlab::create(&path).unwrap(); // 262,144 zero bytes, locked for this writer
/// let reader_view = slab.read_only();
/// let w = Writer::new(slab).unwrap();
/// w.add(Counter::nd(NdCounter::MemUsageMiscHost), 4096).unwrap();
/// let r = Reader::attach(reader_view).unwrap();
/// assert_eq!(r.counter(Counter::nd(NdCounter::MemUsageMiscHost)).unwrap(), 4096);
/// # drop((r, w));
/// # std::fs::remove_file(&path).unwrap();
/// ```
///
/// `MappedSlab::anonymous()` maps the same 262,144 bytes without a file.
#[cfg(feature = "std")]
pub type MappedSlab = WordSlab<Region>;

impl<M: Backing, A: Access> WordSlab<M, A> {
    /// A slab over the `len` bytes at `base`, kept valid by `backing`.
    /// Refuses `len < REQUIRED_SIZE` (docs/abi.md §2.2), then a null or
    /// non-8-aligned `base`.
    ///
    /// # Safety
    /// As for [`Words::from_raw`], for as long as `backing` (and any clone
    /// of the slab) lives.
    unsafe fn over(backing: M, base: *mut u8, len: usize) -> Result<Self, NdsError> {
        require_size(len)?;
        // SAFETY: the caller's contract is `from_raw`'s.
        let words = unsafe { Words::from_raw(base, len) }.ok_or(NdsError::Misaligned {
            addr: base as usize,
        })?;
        Ok(WordSlab { words, backing })
    }
}

/// A clone is a second view of the same memory, kept valid by a clone of the
/// backing ([`Region`] keeps the mapping; [`Caller`]'s contract covers every
/// clone). A [`Heap`] block has one owner, so a [`HeapSlab`] is not `Clone`.
impl<M: Backing + Clone, A: Access> Clone for WordSlab<M, A> {
    fn clone(&self) -> Self {
        // SAFETY: the memory is the view's own, valid while the cloned
        // backing lives (see above), and reached only through atomics.
        unsafe {
            Self::over(
                self.backing.clone(),
                self.words.addr() as *mut u8,
                self.len(),
            )
        }
        .expect("the memory was accepted once")
    }
}

impl<M: Backing, A: Access> Slab for WordSlab<M, A> {
    fn shrunk(&self) -> bool {
        self.backing.shrunk()
    }
    forward!(self => self.words;
        fn len(&self) -> usize;
        fn load_u64(&self, off: usize, order: Ordering) -> u64;
        fn load_u32(&self, off: usize, order: Ordering) -> u32;
        fn fence(&self, order: Ordering);
    );
}

impl<M: Backing> SlabMut for WordSlab<M> {
    forward!(self => self.words;
        fn store_u64(&self, off: usize, v: u64, order: Ordering);
        fn store_u32(&self, off: usize, v: u32, order: Ordering);
        fn fetch_add_u64(&self, off: usize, v: u64, order: Ordering) -> u64;
        fn fetch_or_u64(&self, off: usize, v: u64, order: Ordering) -> u64;
    );
}

#[cfg(feature = "std")]
impl<A: Access> WordSlab<Region, A> {
    /// Wrap a region: a [`ReadOnlySlab`] takes any, a [`MappedSlab`] refuses
    /// a read-only mapping; both refuse one shorter than `REQUIRED_SIZE`.
    pub fn from_region(region: Region) -> Result<Self, NdsError> {
        if A::WRITABLE && !region.is_writable() {
            return Err(NdsError::Io(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "a publisher slab needs a writable mapping",
            )));
        }
        let len = region.len();
        let base = region
            .ptr_at(0, len, 8)
            .map_err(|_| NdsError::TooSmall { len })?;
        // SAFETY: the region keeps its mapping (writable when `A` stores,
        // checked above) valid while the slab holds it, and mapped memory is
        // reached only through atomic or volatile accesses. `over` refuses
        // one shorter than `REQUIRED_SIZE`.
        unsafe { Self::over(region, base, len) }
    }

    /// Map the first `len` bytes of `file` (read-write when `A` stores)
    /// after the size gate (docs/abi.md §2.2), as [`Self::from_region`].
    fn map_file(file: std::fs::File, len: usize) -> Result<Self, NdsError> {
        require_size(len)?;
        Self::from_region(Mapping::from_file(file, len, A::WRITABLE)?.into_region())
    }

    /// The underlying region.
    pub fn region(&self) -> &Region {
        &self.backing
    }

    /// Whether the underlying mapping is `PROT_READ` only.
    pub fn is_mapped_read_only(&self) -> bool {
        !self.backing.is_writable()
    }
}

/// Open the slab file at `path` (read-write when `write`, created when
/// `create`) and return it with its length, refusing anything but a
/// regular file. Opened non-blocking: opening a FIFO for reading blocks
/// until a writer comes, and anyone may leave one where a monitor looks
/// for slabs; the flag changes nothing for a regular file.
#[cfg(feature = "std")]
fn open_regular(
    path: &Path,
    write: bool,
    create: bool,
) -> Result<(std::fs::File, usize), NdsError> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(write)
        .create(create)
        .truncate(false)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(NdsError::Io(io::Error::other(
            "is a directory, not a regular file",
        )));
    }
    if !meta.is_file() {
        return Err(NdsError::Io(io::Error::other("not a regular file")));
    }
    Ok((file, file_len(&meta)?))
}

/// A slab file's length as a mapping length.
#[cfg(feature = "std")]
fn file_len(meta: &std::fs::Metadata) -> Result<usize, NdsError> {
    usize::try_from(meta.len())
        .map_err(|_| NdsError::Io(io::Error::other("slab file too large to map")))
}

pub(super) fn require_size(len: usize) -> Result<(), NdsError> {
    // docs/abi.md §2.2: nds_open refuses a mapping of <= 0x1067f bytes.
    if len < REQUIRED_SIZE {
        Err(NdsError::TooSmall { len })
    } else {
        Ok(())
    }
}

#[cfg(feature = "std")]
impl MappedSlab {
    /// Create the file at `path` as a zero-filled `SLAB_SIZE`-byte
    /// (262,144) slab and map it read-write, `MAP_SHARED`, as its one
    /// writer: [`MappedSlab::create_with`] without `force`.
    pub fn create(path: &Path) -> Result<MappedSlab, NdsError> {
        Self::create_with(path, false)
    }

    /// Create the slab file at `path`, or take over an existing one, as its
    /// one writer:
    ///
    /// - an exclusive lock on the file ([`lock_exclusive`]) is taken first
    ///   and held for the mapping's life (the kernel drops it when the
    ///   process dies): a slab another live writer holds is refused with
    ///   [`NdsError::Busy`], naming its pid;
    /// - an existing file that is not a slab of ours (not empty, and not
    ///   `SLAB_SIZE` bytes with a committed or zero header) is refused with
    ///   [`NdsError::NotASlab`] unless `force`; a stale slab (its writer
    ///   gone) is reused;
    /// - the file is then zeroed in place to `SLAB_SIZE` bytes (never
    ///   truncated first, so a monitor mapping the stale slab is not cut
    ///   short).
    pub fn create_with(path: &Path, force: bool) -> Result<MappedSlab, NdsError> {
        use std::os::unix::fs::FileExt;
        let (file, len) = open_locked(path, true, || {})?;
        if len != 0 && !force && !is_slab_file(&file, len as u64) {
            return Err(NdsError::NotASlab { len: len as u64 });
        }
        file.write_all_at(&[0u8; SLAB_SIZE], 0)?;
        file.set_len(SLAB_SIZE as u64)?;
        Self::map_file(file, SLAB_SIZE)
    }

    /// Map an existing slab file read-write as its one writer (adopting what
    /// a writer that died left): takes the writer's lock as
    /// [`MappedSlab::create_with`] does ([`NdsError::Busy`] while another
    /// writer lives). Refuses a file shorter than `REQUIRED_SIZE` (67,200
    /// bytes, docs/abi.md §2.2).
    pub fn open(path: &Path) -> Result<MappedSlab, NdsError> {
        // The length once the lock is ours (a writer we waited out may
        // have resized the file).
        let (file, len) = open_locked(path, false, || {})?;
        Self::map_file(file, len)
    }

    /// Map an existing slab file read-write *without* the writer's lock:
    /// for a counter co-writer only (counter updates are single atomic
    /// read-modify-writes, safe from any number of processes, docs/abi.md
    /// §2.4), never for a publisher of records. Refuses a file shorter than
    /// `REQUIRED_SIZE`.
    pub fn open_unlocked(path: &Path) -> Result<MappedSlab, NdsError> {
        let (file, len) = open_regular(path, true, false)?;
        Self::map_file(file, len)
    }

    /// A zero-filled `SLAB_SIZE`-byte slab in a file with no name
    /// ([`unnamed_file`](crate::hal::mem::unnamed_file)), mapped read-write
    /// `MAP_SHARED` like a slab at a path: no other process can open it, so
    /// it needs no writer's lock, and nothing is left behind however the
    /// process ends.
    pub fn unnamed() -> Result<MappedSlab, NdsError> {
        let file = crate::hal::mem::unnamed_file()?;
        file.set_len(SLAB_SIZE as u64)?;
        Self::map_file(file, SLAB_SIZE)
    }

    /// An anonymous zero-filled `MAP_SHARED` slab of `SLAB_SIZE` bytes
    /// (shared with children across `fork`; used by benchmarks and tests).
    pub fn anonymous() -> Result<MappedSlab, NdsError> {
        Self::from_region(Mapping::anonymous(SLAB_SIZE)?.into_region())
    }

    /// The same mapping as a [`ReadOnlySlab`] (a reader in this process).
    pub fn read_only(&self) -> ReadOnlySlab {
        ReadOnlySlab::from_region(self.backing.clone()).expect("the mapping was accepted once")
    }
}

/// Whether `file`, `len` bytes long, is a slab: exactly `SLAB_SIZE` bytes
/// and its header word (read at `region::HEADER_OFF`, not mapped) committed
/// or zero (released, or its writer died before the layout); an unreadable
/// header is not. What [`MappedSlab::create_with`] takes over without
/// `force`, and what `xunds nds clean` may remove.
#[cfg(feature = "std")]
pub fn is_slab_file(file: &std::fs::File, len: u64) -> bool {
    use std::os::unix::fs::FileExt;
    let mut word = [0u8; 8];
    if len != SLAB_SIZE as u64
        || file
            .read_exact_at(&mut word, region::HEADER_OFF as u64)
            .is_err()
    {
        return false;
    }
    let word = u64::from_le_bytes(word);
    word == 0 || header::check(word) == header::HeaderState::Committed
}

/// How long a writer waits out a lock held under its own pid before it
/// reports [`NdsError::Busy`] ([`lock`]).
#[cfg(feature = "std")]
const OWN_LOCK_GRACE: std::time::Duration = std::time::Duration::from_millis(100);

/// How long a writer waits out a lock no exclusive holder has (a remover's
/// shared lock, [`lock_shared`](crate::hal::mem::lock_shared), held for a
/// few system calls; or a holder `/proc/locks` does not name) before it
/// reports [`NdsError::Busy`] ([`lock`]).
#[cfg(feature = "std")]
const UNNAMED_LOCK_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// The writer's lock on a slab file, or [`NdsError::Busy`] naming the
/// holder.
///
/// A lock held under our own pid may be a writer this process just closed:
/// a child that another thread is spawning holds a copy of every open
/// descriptor from its fork to its exec (close-on-exec drops them there),
/// and with it the lock. So such a lock is tried again for up to
/// [`OWN_LOCK_GRACE`] before it is reported; a second live writer in this
/// process is still refused, that much later. A lock with no exclusive
/// holder to name is no writer's: `xunds nds clean` holds a shared one while
/// it removes a dead writer's file (this writer then finds the path names
/// another file, or none, and opens it again), or the holder let it go
/// between the refused attempt and the look at `/proc/locks` (CI once
/// failed on that: the forked child exited in between, and the slab was
/// reported busy with no holder). It is tried again for up to
/// [`UNNAMED_LOCK_GRACE`].
#[cfg(feature = "std")]
fn lock(file: &std::fs::File) -> Result<(), NdsError> {
    let start = std::time::Instant::now();
    loop {
        match lock_exclusive(file) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let pid = lock_holder(file);
                let grace = match pid {
                    None => UNNAMED_LOCK_GRACE,
                    Some(p) if p == std::process::id() => OWN_LOCK_GRACE,
                    Some(_) => return Err(NdsError::Busy { pid }),
                };
                if start.elapsed() >= grace {
                    return Err(NdsError::Busy { pid });
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// How many times a writer opens its path again after finding, once the
/// lock was its, that the file had been removed or replaced ([`open_locked`]).
#[cfg(feature = "std")]
const REPLACED_TRIES: u32 = 8;

/// The regular file at `path`, opened read-write (created when `create`) with
/// the writer's [`lock`] held, and still the file the path names; with its
/// length once the lock was ours. Between the
/// open and the lock another process may remove the file (`xunds nds clean`
/// removes a dead writer's slab under its lock) or put another in its place:
/// a writer that went on would write a file no monitor can reach, and a
/// second writer could lock the new one. So the path is checked once the
/// lock is ours, and opened again when it names another file. `opened` is
/// called between each open and its lock (where the tests remove the file).
#[cfg(feature = "std")]
fn open_locked(
    path: &Path,
    create: bool,
    mut opened: impl FnMut(),
) -> Result<(std::fs::File, usize), NdsError> {
    for _ in 0..REPLACED_TRIES {
        let (file, _) = open_regular(path, true, create)?;
        opened();
        lock(&file)?;
        let held = file.metadata()?;
        if crate::hal::mem::path_names(path, &held, true)? {
            return Ok((file, file_len(&held)?));
        }
    }
    Err(NdsError::Io(io::Error::other(
        "the file was replaced each time it was locked",
    )))
}

/// A writable slab over memory the embedder provides (no allocator, no
/// file): a [`StaticSlab`] ([`StaticSlab::slab`]), or any memory shared
/// with another agent under [`RawSlab::from_raw`]'s contract. Every access
/// is a 4- or 8-byte atomic at a checked offset.
///
/// # Examples
///
/// Over memory of the embedder's own (here a leaked, 8-aligned buffer):
///
/// ```
/// use xunds::nds::{Counter, RawSlab, Reader, Writer, SLAB_SIZE};
/// use xunds::wire::nds::counters::NcCounter;
///
/// let words: &'static mut [u64] = Vec::leak(vec![0u64; SLAB_SIZE / 8]);
/// // SAFETY: the leaked buffer lives for the rest of the program, is
/// // 8-aligned, and is reached only through this slab's atomics.
/// let slab = unsafe { RawSlab::from_raw(words.as_mut_ptr().cast(), SLAB_SIZE) }.unwrap();
/// let w = Writer::new(slab.clone()).unwrap();
/// let c = Counter::nc(3, NcCounter::MacCount).unwrap();
/// w.add(c, 3072).unwrap();
/// let r = Reader::attach(slab).unwrap();
/// assert_eq!(r.counter(c).unwrap(), 3072);
/// ```
pub type RawSlab = WordSlab<Caller>;

impl RawSlab {
    /// A slab over the `len` bytes at `base`. Refuses a null or
    /// non-8-aligned `base`, or `len < REQUIRED_SIZE` (docs/abi.md §2.2).
    ///
    /// # Safety
    /// While the returned value (or a clone) lives, the `len` bytes at
    /// `base` stay valid for reads and writes, and every access to them, by
    /// any thread, process or device, is an aligned 4- or 8-byte atomic (the
    /// NDS protocols never mix widths on one word while another agent runs,
    /// docs/abi.md §2.4, §2.8); no `&`/`&mut` to them exists.
    pub unsafe fn from_raw(base: *mut u8, len: usize) -> Result<RawSlab, NdsError> {
        // SAFETY: the caller's contract, for every clone.
        unsafe { Self::over(Caller, base, len) }
    }
}

/// A read-only slab over caller memory (a `PROT_READ` mapping of another
/// process's slab, a `const` pointer from C): what [`RawSlab`] is to a
/// writer, for a [`Reader`](super::Reader). Its loads are Relaxed atomic
/// loads with a fence for a stronger order ([`ReadOnly`]), what read-only
/// pages allow.
pub type RawReadSlab = WordSlab<Caller, ReadOnly>;

impl RawReadSlab {
    /// A read-only slab over the `len` bytes at `base`. Refuses a null or
    /// non-8-aligned `base`, or `len < REQUIRED_SIZE` (docs/abi.md §2.2).
    ///
    /// # Safety
    /// While the returned value (or a clone) lives, the `len` bytes at
    /// `base` stay valid for reads, and every access to them, by any thread,
    /// process or device, is an aligned 4- or 8-byte atomic; no `&mut` to
    /// them exists.
    pub unsafe fn from_raw(base: *const u8, len: usize) -> Result<RawReadSlab, NdsError> {
        // SAFETY: the caller's contract; a `ReadOnly` view never stores
        // through the pointer.
        unsafe { Self::over(Caller, base.cast_mut(), len) }
    }
}

// The slab is read from one `StaticSlab` as 8-byte words: its size is whole words.
const _: () = assert!(SLAB_SIZE % 8 == 0);

/// `SLAB_SIZE` (262,144) bytes of zeroed, 64-byte-aligned memory to put in a
/// `static`: the slab of a `no_std` publisher. It hands out only
/// [`RawSlab`]s, so its bytes are reached by atomics alone.
///
/// # Examples
///
/// ```
/// use xunds::nds::{StaticSlab, Writer};
/// static SLAB: StaticSlab = StaticSlab::new();
/// let w = Writer::new(SLAB.slab()).unwrap();
/// # drop(w);
/// ```
#[repr(C, align(64))]
pub struct StaticSlab(UnsafeCell<[u64; SLAB_SIZE / 8]>);

// SAFETY: the bytes are reached only through `RawSlab`, whose every access is
// atomic, so sharing a `&StaticSlab` across threads is sound.
unsafe impl Sync for StaticSlab {}

impl StaticSlab {
    /// Zeroed memory (the state of a slab no writer has laid out).
    pub const fn new() -> StaticSlab {
        StaticSlab(UnsafeCell::new([0; SLAB_SIZE / 8]))
    }

    /// The slab over this memory.
    pub fn slab(&'static self) -> RawSlab {
        // SAFETY: the memory is `'static` (valid for the whole program), 64-
        // byte aligned and `SLAB_SIZE >= REQUIRED_SIZE` bytes long; its only
        // accessors are `RawSlab`s (the cell is private), whose every access
        // is an aligned 4- or 8-byte atomic.
        unsafe { RawSlab::from_raw(self.0.get().cast(), SLAB_SIZE) }
            .expect("a StaticSlab is aligned and SLAB_SIZE long")
    }
}

impl Default for StaticSlab {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for StaticSlab {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("StaticSlab").finish_non_exhaustive()
    }
}

/// A read-only view of a `MAP_SHARED` slab: implements [`Slab`] and nothing
/// else. Opened by path it is mapped `PROT_READ`, so even a bug could not
/// write through it.
///
/// # Examples
///
/// ```
/// use xunds::nds::{ReadOnlySlab, Reader, Slab, Writer};
///
/// let path = std::env::temp_dir().join(format!("xunds-doc-ro-{}.nds", std::process::id()));
/// let w = Writer::create(&path).unwrap();
/// let slab = ReadOnlySlab::open(&path).unwrap();
/// assert!(slab.is_mapped_read_only());
/// assert_eq!(slab.len(), xunds::nds::SLAB_SIZE);
/// let r = Reader::attach(slab).unwrap();
/// assert!(r.is_attached());
/// # drop((r, w));
/// # std::fs::remove_file(&path).unwrap();
/// ```
#[cfg(feature = "std")]
pub type ReadOnlySlab = WordSlab<Region, ReadOnly>;

#[cfg(feature = "std")]
impl ReadOnlySlab {
    /// Map the slab file at `path` read-only (`PROT_READ`, `MAP_SHARED`).
    /// Refuses a file shorter than `REQUIRED_SIZE` (docs/abi.md §2.2).
    ///
    /// The length is taken from the open file (`fstat`), never from the
    /// path, so a file replaced in between cannot slip through; a file that
    /// shrinks later is detected ([`Slab::shrunk`]), never a fault.
    pub fn open(path: &Path) -> Result<ReadOnlySlab, NdsError> {
        let (file, len) = open_regular(path, false, false)?;
        Self::map_file(file, len)
    }

    /// [`open`](Self::open), and a second descriptor of the same open file
    /// for the caller's own checks (`fstat` for a truncation, `lock_holder`
    /// for the writer): one open, so what those checks see is the file that
    /// is mapped, not whatever the path names by then.
    pub fn open_with_file(path: &Path) -> Result<(ReadOnlySlab, std::fs::File), NdsError> {
        let (file, len) = open_regular(path, false, false)?;
        let kept = file.try_clone()?;
        Ok((Self::map_file(file, len)?, kept))
    }

    /// Map `file` (an open slab file, e.g. the descriptor
    /// [`open_with_file`](Self::open_with_file) handed back) read-only
    /// again, at its length now: a watcher keeps the descriptor and maps
    /// only for the moment of a read, so the mappings held at once do not
    /// grow with the slabs watched.
    pub fn from_file(file: &std::fs::File) -> Result<ReadOnlySlab, NdsError> {
        Self::map_file(file.try_clone()?, file_len(&file.metadata()?)?)
    }
}

/// A slab on the heap (`Words::heap`): loom checks every access under
/// `--cfg loom`, and Miri can run it (no `mmap`).
///
/// Its length may be any multiple of 8, so loom models can use a few words;
/// a [`Reader`](super::Reader) or [`Writer`](super::Writer) still refuses one
/// shorter than `REQUIRED_SIZE`. 4-byte accesses are done on the containing
/// 8-byte atomic (a load and shift, or a compare-exchange loop that keeps the
/// other half), so loom sees one atomic object per word.
///
/// # Examples
///
/// ```
/// use xunds::nds::{HeapSlab, NdsError, Reader, Slab, Writer, REQUIRED_SIZE};
///
/// let slab = HeapSlab::zeroed();
/// assert!(slab.len() >= REQUIRED_SIZE);
/// let w = Writer::new(slab).unwrap();
/// let header = w.slab().load_u64(0, core::sync::atomic::Ordering::Acquire);
/// assert_eq!(header, 0x000186A0_0073646E, "committed: version 100000, magic \"nds\"");
///
/// // Foreign bytes for a reader: an all-ones slab is refused, not a panic.
/// let junk = HeapSlab::from_bytes(&[0xFF; REQUIRED_SIZE]);
/// assert!(matches!(Reader::attach(junk), Err(NdsError::BadMagic { .. })));
/// ```
#[cfg(feature = "std")]
pub type HeapSlab = WordSlab<Heap>;

#[cfg(feature = "std")]
impl WordSlab<Heap> {
    /// A zero-filled heap slab of `len` bytes (`len` is rounded up to a
    /// multiple of 8).
    pub fn new(len: usize) -> HeapSlab {
        WordSlab {
            words: Words::heap(len.div_ceil(8) * 8),
            backing: Heap,
        }
    }

    /// A zero-filled heap slab of `SLAB_SIZE` bytes.
    pub fn zeroed() -> HeapSlab {
        Self::new(SLAB_SIZE)
    }

    /// A heap slab holding a copy of `bytes` (zero-padded to a multiple of 8);
    /// used to feed random or foreign bytes to a reader.
    pub fn from_bytes(bytes: &[u8]) -> HeapSlab {
        let s = Self::new(bytes.len());
        for (i, c) in bytes.chunks(8).enumerate() {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            s.store_u64(i * 8, u64::from_le_bytes(w), Ordering::Relaxed);
        }
        s
    }
}

#[cfg(not(loom))]
#[cfg(test)]
mod tests {
    use super::*;

    fn exercise<S: SlabMut>(s: &S) {
        s.store_u64(8, 0x1122_3344_5566_7788, Ordering::Relaxed);
        assert_eq!(s.load_u32(8, Ordering::Relaxed), 0x5566_7788);
        assert_eq!(s.load_u32(12, Ordering::Relaxed), 0x1122_3344);
        s.store_u32(12, 0xaabb_ccdd, Ordering::Release);
        assert_eq!(s.load_u64(8, Ordering::Acquire), 0xaabb_ccdd_5566_7788);
        s.store_u32(8, 1, Ordering::Relaxed);
        assert_eq!(s.load_u64(8, Ordering::Relaxed), 0xaabb_ccdd_0000_0001);
        assert_eq!(s.fetch_add_u64(16, 5, Ordering::Relaxed), 0);
        assert_eq!(
            s.fetch_add_u64(16, 7u64.wrapping_neg(), Ordering::Relaxed),
            5
        );
        assert_eq!(s.load_u64(16, Ordering::Relaxed), u64::MAX - 1);
        assert_eq!(s.fetch_or_u64(24, 0b10, Ordering::Relaxed), 0);
        assert_eq!(s.fetch_or_u64(24, 0b01, Ordering::Relaxed), 0b10);
        assert_eq!(s.load_u64(24, Ordering::Relaxed), 0b11);
        let last = s.len() - 8;
        s.store_u64(last, 9, Ordering::Relaxed);
        assert_eq!(s.load_u64(last, Ordering::Relaxed), 9);
    }

    #[test]
    fn heap_and_mapped_backings_agree() {
        exercise(&HeapSlab::zeroed());
        if cfg!(miri) {
            return; // mmap is not available under Miri
        }
        let m = MappedSlab::anonymous().unwrap();
        exercise(&m);
        let ro = m.read_only();
        assert_eq!(ro.load_u64(24, Ordering::Relaxed), 0b11);
        assert!(!ro.is_mapped_read_only(), "a view of a writable mapping");
    }

    /// The `no_std` backings: a static slab behaves as the others, and raw
    /// memory that is null, misaligned or short is refused.
    #[test]
    fn static_and_raw_slabs() {
        static SLAB: StaticSlab = StaticSlab::new();
        exercise(&SLAB.slab());
        assert_eq!(SLAB.slab().len(), SLAB_SIZE);
        let mut words = vec![0u64; REQUIRED_SIZE / 8 + 1];
        let base = words.as_mut_ptr().cast::<u8>();
        // SAFETY: all three are refused before any access.
        let refused = unsafe {
            [
                RawSlab::from_raw(core::ptr::null_mut(), REQUIRED_SIZE).unwrap_err(),
                RawSlab::from_raw(base.wrapping_add(4), REQUIRED_SIZE).unwrap_err(),
                RawSlab::from_raw(base, REQUIRED_SIZE - 8).unwrap_err(),
            ]
        };
        assert!(matches!(refused[0], NdsError::Misaligned { addr: 0 }));
        assert!(matches!(refused[1], NdsError::Misaligned { .. }));
        assert!(matches!(refused[2], NdsError::TooSmall { .. }));
        // SAFETY: `words` outlives `raw` and is reached only through it.
        let raw = unsafe { RawSlab::from_raw(base, REQUIRED_SIZE + 8) }.unwrap();
        exercise(&raw);
    }

    #[test]
    fn misaligned_or_out_of_bounds_access_panics_not_ub() {
        let s = HeapSlab::new(64);
        assert!(std::panic::catch_unwind(|| s.load_u64(4, Ordering::Relaxed)).is_err());
        assert!(std::panic::catch_unwind(|| s.load_u64(64, Ordering::Relaxed)).is_err());
        assert!(std::panic::catch_unwind(|| s.load_u32(62, Ordering::Relaxed)).is_err());
        assert!(
            std::panic::catch_unwind(|| s.load_u64(usize::MAX - 7, Ordering::Relaxed)).is_err()
        );
        if cfg!(miri) {
            return; // mmap is not available under Miri
        }
        let m = MappedSlab::anonymous().unwrap();
        assert!(std::panic::catch_unwind(|| m.load_u64(SLAB_SIZE, Ordering::Relaxed)).is_err());
    }

    #[test]
    fn heap_from_bytes_is_little_endian() {
        let s = HeapSlab::from_bytes(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(s.len(), 16);
        assert_eq!(s.load_u64(0, Ordering::Relaxed), 0x0807_0605_0403_0201);
        assert_eq!(s.load_u32(8, Ordering::Relaxed), 9);
    }

    /// A slab path of this test process in the temp dir, with no file left
    /// there by an earlier run.
    fn scratch_path(tag: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("xunds-slab-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_file(&p);
        p
    }

    /// The descriptor `open_with_file` hands back is the mapped file's,
    /// whatever the path names later: a file renamed over the path is
    /// another inode, and the kept descriptor still says the old one (the
    /// monitor tells a replaced slab so). A directory is refused in words
    /// that say both what it is and what was wanted.
    #[test]
    #[cfg_attr(miri, ignore = "mmap and files are not available under Miri")]
    fn open_with_file_keeps_the_mapped_file() {
        use std::os::unix::fs::MetadataExt;
        let p = scratch_path("withfile");
        let w = MappedSlab::create(&p).unwrap();
        w.store_u64(0x520, 11, Ordering::Relaxed);
        let (ro, file) = ReadOnlySlab::open_with_file(&p).unwrap();
        let ino = std::fs::metadata(&p).unwrap().ino();
        let other = scratch_path("withfile-other");
        std::fs::write(&other, vec![0u8; SLAB_SIZE]).unwrap();
        std::fs::rename(&other, &p).unwrap();
        assert_ne!(std::fs::metadata(&p).unwrap().ino(), ino);
        assert_eq!(file.metadata().unwrap().ino(), ino);
        assert_eq!(file.metadata().unwrap().len(), SLAB_SIZE as u64);
        // And the mapping is of that inode (the kernel's word for it).
        let base = ro.region().ptr_at(0, 8, 8).unwrap() as usize;
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let mapped_ino = maps.lines().find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (lo, hi) = f.first()?.split_once('-')?;
            let (lo, hi) = (
                usize::from_str_radix(lo, 16).ok()?,
                usize::from_str_radix(hi, 16).ok()?,
            );
            (lo..hi)
                .contains(&base)
                .then(|| f.get(4)?.parse::<u64>().ok())?
        });
        assert_eq!(mapped_ino, Some(ino));
        assert_eq!(ro.load_u64(0x520, Ordering::Relaxed), 11);
        drop((w, ro, file));
        std::fs::remove_file(&p).unwrap();
        let dir = std::env::temp_dir();
        let e = ReadOnlySlab::open_with_file(&dir).unwrap_err().to_string();
        assert!(e.contains("is a directory, not a regular file"), "{e}");
    }

    #[test]
    #[cfg_attr(miri, ignore = "mmap and files are not available under Miri")]
    fn read_only_mapping_serves_every_load_ordering() {
        let p = scratch_path("ro");
        {
            let w = MappedSlab::create(&p).unwrap();
            // Ordering: one thread; every load ordering is exercised below.
            w.store_u64(0x520, 0x0102_0304_0506_0708, Ordering::Release);
            w.store_u64(SLAB_SIZE - 8, 7, Ordering::Relaxed);
        }
        let ro = ReadOnlySlab::open(&p).unwrap();
        assert!(ro.is_mapped_read_only());
        for order in [Ordering::Relaxed, Ordering::Acquire, Ordering::SeqCst] {
            assert_eq!(ro.load_u64(0x520, order), 0x0102_0304_0506_0708);
            assert_eq!(ro.load_u32(0x524, order), 0x0102_0304);
            assert_eq!(ro.load_u64(SLAB_SIZE - 8, order), 7);
        }
        let mut w = [0u8; 16];
        crate::nds::words::copy_out(&ro, 0x518, &mut w);
        assert_eq!(&w[8..], &0x0102_0304_0506_0708u64.to_le_bytes());
        assert!(std::panic::catch_unwind(|| ro.load_u64(SLAB_SIZE, Ordering::Relaxed)).is_err());
        // A read-only mapping is refused as a publisher's slab.
        let f = std::fs::File::open(&p).unwrap();
        let region = Mapping::from_file(f, SLAB_SIZE, false)
            .unwrap()
            .into_region();
        assert!(matches!(
            MappedSlab::from_region(region),
            Err(NdsError::Io(e)) if e.kind() == io::ErrorKind::PermissionDenied
        ));
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    #[cfg_attr(miri, ignore = "mmap and files are not available under Miri")]
    fn size_gate_refuses_short_files() {
        let p = scratch_path("short");
        std::fs::write(&p, vec![0u8; REQUIRED_SIZE - 1]).unwrap();
        assert!(matches!(
            ReadOnlySlab::open(&p),
            Err(NdsError::TooSmall { len }) if len == REQUIRED_SIZE - 1
        ));
        assert!(matches!(
            MappedSlab::open(&p),
            Err(NdsError::TooSmall { .. })
        ));
        std::fs::write(&p, vec![0u8; REQUIRED_SIZE]).unwrap();
        let ro = ReadOnlySlab::open(&p).unwrap();
        assert!(ro.is_mapped_read_only());
        assert_eq!(ro.len(), REQUIRED_SIZE);
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    #[cfg_attr(miri, ignore = "mmap and files are not available under Miri")]
    fn a_file_shrunk_under_its_mappings_is_reported_not_a_fault() {
        let p = scratch_path("shrink");
        let w = MappedSlab::create(&p).unwrap();
        w.store_u64(0x520, 7, Ordering::Relaxed);
        let ro = ReadOnlySlab::open(&p).unwrap();
        assert_eq!(ro.load_u64(0x520, Ordering::Relaxed), 7);
        assert!(!ro.shrunk() && !w.shrunk());
        // Another open file description cuts the file to nothing: before,
        // the next load through either mapping died of SIGBUS.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(0)
            .unwrap();
        // The reader's mapping is detached onto zero pages and says so.
        assert_eq!(ro.load_u64(0x520, Ordering::Relaxed), 0);
        assert!(ro.shrunk());
        assert_eq!(ro.load_u64(SLAB_SIZE - 8, Ordering::Relaxed), 0);
        // The writer's store regrows the file to a full slab (the lost
        // contents read zero) and the writer knows.
        w.store_u64(0x528, 9, Ordering::Relaxed);
        assert!(w.shrunk());
        assert_eq!(w.load_u64(0x520, Ordering::Relaxed), 0);
        assert_eq!(w.load_u64(0x528, Ordering::Relaxed), 9);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), SLAB_SIZE as u64);
        // A new reader sees the regrown file whole.
        let again = ReadOnlySlab::open(&p).unwrap();
        assert_eq!(again.load_u64(0x528, Ordering::Relaxed), 9);
        assert!(!again.shrunk());
        drop((w, ro, again));
        std::fs::remove_file(&p).unwrap();
    }

    /// A child forked while a writer is open keeps a copy of its descriptor,
    /// and so its lock, until the child execs or exits: a writer opened
    /// right after the first one closed waits that out instead of being
    /// refused (CI once failed on this: a test running two jobs in a row on
    /// one slab while another test spawned `xunds`).
    #[test]
    #[cfg_attr(miri, ignore = "mmap, files and fork are not available under Miri")]
    fn a_lock_a_forked_child_still_holds_is_waited_out() {
        let p = scratch_path("fork");
        let w = MappedSlab::create(&p).unwrap();
        // SAFETY: the child calls only async-signal-safe functions
        // (nanosleep, _exit) before it ends; the parent waits for it.
        let child = unsafe { libc::fork() };
        assert!(child >= 0, "fork");
        if child == 0 {
            let ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 30_000_000,
            };
            // SAFETY: async-signal-safe; the child holds the lock 30 ms, then ends.
            unsafe {
                libc::nanosleep(&ts, core::ptr::null_mut());
                libc::_exit(0);
            }
        }
        drop(w);
        let again = MappedSlab::create(&p);
        let mut status = 0;
        // SAFETY: waitpid on our own child.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
        assert!(again.is_ok(), "{:?}", again.err());
        drop(again);
        std::fs::remove_file(&p).unwrap();
    }

    /// A writer whose file is removed between its open and its lock (`xunds
    /// nds clean` unlinks a dead writer's slab under that lock) locks and
    /// writes the file the path names afterwards, not the removed one; a path
    /// replaced on every try is refused after `REPLACED_TRIES`.
    #[test]
    #[cfg_attr(miri, ignore = "files are not available under Miri")]
    fn a_file_removed_before_its_lock_is_opened_again() {
        use std::os::unix::fs::MetadataExt;
        let p = scratch_path("removed");
        drop(MappedSlab::create(&p).unwrap());
        let mut tries = 0;
        let (file, _) = open_locked(&p, true, || {
            tries += 1;
            if tries == 1 {
                std::fs::remove_file(&p).unwrap();
            }
        })
        .unwrap();
        assert_eq!(tries, 2, "opened again once");
        let named = std::fs::metadata(&p).expect("the path names a file");
        assert_eq!(named.ino(), file.metadata().unwrap().ino());
        // Its lock is the writer's: a second writer is refused.
        assert!(matches!(MappedSlab::open(&p), Err(NdsError::Busy { .. })));
        drop(file);

        let mut tries = 0;
        let refused = open_locked(&p, true, || {
            tries += 1;
            std::fs::remove_file(&p).unwrap();
        });
        assert!(matches!(refused, Err(NdsError::Io(_))), "{refused:?}");
        assert_eq!(tries, REPLACED_TRIES);
        // Without `create`, a removed file is not made again.
        drop(MappedSlab::create(&p).unwrap());
        let gone = open_locked(&p, false, || std::fs::remove_file(&p).unwrap());
        assert!(
            matches!(&gone, Err(NdsError::Io(e)) if e.kind() == io::ErrorKind::NotFound),
            "{gone:?}"
        );
    }

    #[test]
    #[cfg_attr(miri, ignore = "mmap and files are not available under Miri")]
    fn one_writer_per_slab_and_no_file_clobbered() {
        let p = scratch_path("lock");
        let w = MappedSlab::create(&p).unwrap();
        // A second writer (another open file description) is refused and
        // told who holds the slab.
        match MappedSlab::create(&p) {
            Err(NdsError::Busy { pid }) => assert_eq!(pid, Some(std::process::id())),
            other => panic!("second writer: {other:?}"),
        }
        assert!(matches!(MappedSlab::open(&p), Err(NdsError::Busy { .. })));
        assert!(matches!(
            MappedSlab::create_with(&p, true),
            Err(NdsError::Busy { .. })
        ));
        // Readers need no lock.
        assert!(ReadOnlySlab::open(&p).is_ok());
        // Once the writer is gone its stale slab is reused.
        w.store_u64(0, crate::wire::nds::header::HEADER_PROTO, Ordering::Release);
        w.store_u64(0x520, 5, Ordering::Relaxed);
        drop(w);
        let w = MappedSlab::create(&p).unwrap();
        assert_eq!(w.load_u64(0x520, Ordering::Relaxed), 0, "reused, zeroed");
        drop(w);
        // A file that is not a slab is left alone unless forced.
        let f = scratch_path("notslab");
        std::fs::write(&f, b"important\n").unwrap();
        assert!(matches!(
            MappedSlab::create(&f),
            Err(NdsError::NotASlab { len: 10 })
        ));
        assert_eq!(std::fs::read(&f).unwrap(), b"important\n");
        let forced = MappedSlab::create_with(&f, true).unwrap();
        assert_eq!(forced.len(), SLAB_SIZE);
        drop(forced);
        for q in [&p, &f] {
            std::fs::remove_file(q).unwrap();
        }
    }
}
