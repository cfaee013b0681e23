//! No process dies of SIGBUS because another process shrank a file it maps.
//!
//! A `MAP_SHARED` file mapping faults with SIGBUS on any page past the
//! file's end, and any process that may open the file can shrink it
//! (`truncate -s 0 /dev/shm/x`). Every file mapping [`Mapping`] makes is
//! registered here, and a process-wide SIGBUS handler, installed once, turns
//! such a fault on a registered mapping into something the owner can report:
//!
//! - a writable mapping (a publisher's slab) **regrows** the file to the
//!   mapped length (`ftruncate` on its own descriptor) when it is shorter
//!   than that: the access is retried and succeeds on a zero page; the file
//!   stays a full slab for every other process, and the owner sees
//!   [`Guard::shrunk`]. A fault on a file at full length is not a shrink
//!   (a page a full tmpfs cannot supply, an I/O error) and goes on as below.
//! - a read-only mapping (a monitor's view) is **detached**: a private zero
//!   mapping replaces it in place (`mmap(MAP_FIXED)`), the load is retried
//!   and reads zero, and the owner sees [`Guard::shrunk`] and reports the
//!   shrink instead of anything it read.
//!
//! A SIGBUS outside every registered mapping goes to the handler that was
//! installed before (the standard library's stack-overflow handler, or the
//! default action, which ends the process as before).
//!
//! Why not a sealed memfd: a slab must outlive its writer (a monitor reads
//! the slab of a process that died; a restarted writer adopts it), so the
//! shared file itself is the slab, and only the mappings can be guarded.
//!
//! [`Mapping`]: super::mem::Mapping

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Once;

/// How many file mappings may be guarded at once.
const SLOTS: usize = 256;

const FREE: u8 = 0;
const CLAIMED: u8 = 1;
const REGROW: u8 = 2;
const DETACH: u8 = 3;

/// One registered mapping. `start` is written last on registration and
/// cleared first on removal, so a handler that sees a non-zero `start`
/// sees the rest of the slot.
struct Slot {
    state: AtomicU8,
    start: AtomicUsize,
    len: AtomicUsize,
    fd: AtomicI32,
    faults: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    state: AtomicU8::new(FREE),
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    fd: AtomicI32::new(-1),
    faults: AtomicU64::new(0),
};

static REGISTRY: [Slot; SLOTS] = [EMPTY; SLOTS];

/// The SIGBUS action in force before ours (leaked once, read by the
/// handler).
static PREVIOUS: AtomicPtr<libc::sigaction> = AtomicPtr::new(std::ptr::null_mut());

static INSTALL: Once = Once::new();

/// A registered mapping; unregisters on drop (drop it before unmapping).
#[derive(Debug)]
pub(crate) struct Guard {
    slot: usize,
}

impl Guard {
    /// Register `[start, start + len)`, mapped from `fd` (which must stay
    /// open while the guard lives). `writable`: regrow the file on a fault;
    /// otherwise detach the mapping. Fails only when every slot is taken.
    pub(crate) fn new(start: *mut u8, len: usize, fd: RawFd, writable: bool) -> io::Result<Guard> {
        install();
        for (i, s) in REGISTRY.iter().enumerate() {
            // Ordering: Acquire on success, partner: the Release store of
            // FREE in `Drop`: the previous owner's last writes are done.
            if s.state
                .compare_exchange(FREE, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                s.len.store(len, Ordering::Relaxed);
                s.fd.store(fd, Ordering::Relaxed);
                s.faults.store(0, Ordering::Relaxed);
                s.state
                    .store(if writable { REGROW } else { DETACH }, Ordering::Relaxed);
                // Ordering: Release, partner: the Acquire load of `start` in
                // `on_sigbus`: a handler that finds this range sees its
                // length, descriptor and mode.
                s.start.store(start as usize, Ordering::Release);
                return Ok(Guard { slot: i });
            }
        }
        Err(io::Error::other(format!(
            "more than {SLOTS} guarded file mappings at once"
        )))
    }

    /// How many times the file was found shrunk under this mapping (a
    /// fault the handler absorbed). Non-zero: what was read may be zeros
    /// that were never written.
    pub(crate) fn shrunk(&self) -> u64 {
        // Ordering: Acquire, partner: the Release increment in `on_sigbus`
        // (on whichever thread faulted).
        REGISTRY[self.slot].faults.load(Ordering::Acquire)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let s = &REGISTRY[self.slot];
        // Ordering: Release (and the Release store of FREE below), partner:
        // the Acquire loads in `on_sigbus` / `Guard::new`.
        s.start.store(0, Ordering::Release);
        s.state.store(FREE, Ordering::Release);
    }
}

fn install() {
    INSTALL.call_once(|| {
        // SAFETY: plain-old-data structs for `sigaction(2)`, zeroed then
        // filled in; the handler is an `extern "C"` function with the
        // SA_SIGINFO signature. The previous action is leaked (read by the
        // handler for the rest of the process's life).
        unsafe {
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = on_sigbus as *const () as usize;
            new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut new.sa_mask);
            let old = Box::into_raw(Box::new(std::mem::zeroed::<libc::sigaction>()));
            if libc::sigaction(libc::SIGBUS, &new, old) == 0 {
                // Ordering: Release, partner: the Acquire load in `on_sigbus`.
                PREVIOUS.store(old, Ordering::Release);
            } else {
                drop(Box::from_raw(old));
            }
        }
    });
}

/// The SIGBUS handler. Async-signal-safe: atomics, `fstat`, `ftruncate`, `mmap`,
/// `sigaction` and `raise` only.
extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    // SAFETY: as above.
    let code = unsafe { (*info).si_code };
    if code > 0 {
        for s in REGISTRY.iter() {
            // Ordering: Acquire, partner: the Release store of `start` in
            // `Guard::new`.
            let start = s.start.load(Ordering::Acquire);
            let len = s.len.load(Ordering::Relaxed);
            if start == 0 || addr < start || addr - start >= len {
                continue;
            }
            let fixed = match s.state.load(Ordering::Relaxed) {
                // Only a file now shorter than the mapping is a shrink; a
                // fault on a file at full length (no space left on a tmpfs
                // for a page, an I/O error) would fault again on every retry,
                // so it goes on to the previous handler below.
                // SAFETY: `fd` is the open descriptor the mapping was made
                // from (kept open while the guard lives); `fstat` writes
                // only `st`, and growing a file back to the mapped length
                // aliases no Rust object.
                REGROW => unsafe {
                    let fd = s.fd.load(Ordering::Relaxed);
                    let mut st: libc::stat = std::mem::zeroed();
                    libc::fstat(fd, &mut st) == 0
                        && (st.st_size as u64) < len as u64
                        && libc::ftruncate(fd, len as libc::off_t) == 0
                },
                DETACH => {
                    // SAFETY: `[start, start + len)` is exactly one live
                    // mapping this process made (registered until it is
                    // unmapped); replacing it with zero pages keeps every
                    // pointer into it valid for reads (it was PROT_READ).
                    let p = unsafe {
                        libc::mmap(
                            start as *mut libc::c_void,
                            len,
                            libc::PROT_READ,
                            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                            -1,
                            0,
                        )
                    };
                    p != libc::MAP_FAILED
                }
                _ => false,
            };
            if fixed {
                // Ordering: Release, partner: the Acquire load in
                // `Guard::shrunk`.
                s.faults.fetch_add(1, Ordering::Release);
                return;
            }
        }
    }
    // Not ours: whatever was there before.
    // Ordering: Acquire, partner: the Release store in `install`.
    let prev = PREVIOUS.load(Ordering::Acquire);
    let (handler, flags) = if prev.is_null() {
        (libc::SIG_DFL, 0)
    } else {
        // SAFETY: a non-null `prev` is the leaked, never-freed previous
        // action, written once before it was published.
        unsafe { ((*prev).sa_sigaction, (*prev).sa_flags) }
    };
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        // SAFETY: restore the default action and re-raise: the process ends
        // of SIGBUS exactly as without this handler (a hardware fault
        // re-faults on return; a sent signal is raised again).
        unsafe {
            let mut dfl: libc::sigaction = std::mem::zeroed();
            dfl.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(libc::SIGBUS, &dfl, std::ptr::null_mut());
            if code <= 0 {
                libc::raise(sig);
            }
        }
    } else if flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the previous SA_SIGINFO handler, called as the kernel
        // would have called it.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(handler) };
        f(sig, info, ctx);
    } else {
        // SAFETY: the previous plain handler, called as the kernel would
        // have called it.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(handler) };
        f(sig);
    }
}
