//! A thin owned `eventfd(2)` wrapper: create, signal, wait with a bound.
//!
//! The XU ring's completion signal (docs/abi.md §1.8: `write(mark_comp_efd, 1)`)
//! and the worker's has-work wake-up both use it. Waits are always bounded so
//! a lost signal can only cost one timeout, after which the caller re-checks
//! the cursor.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// An owned eventfd. Closed on drop.
#[derive(Debug)]
pub struct EventFd {
    fd: OwnedFd,
}

/// Outcome of a bounded wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// The counter was non-zero; its value (reset to zero by the read).
    Signalled(u64),
    /// The bound passed with no signal.
    TimedOut,
}

impl EventFd {
    /// A new non-blocking, close-on-exec eventfd with counter 0.
    pub fn new() -> io::Result<EventFd> {
        // SAFETY: plain syscall; the returned fd is checked before use.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by eventfd and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(EventFd { fd })
    }

    /// The raw descriptor (what a ring slot's `mark_comp_efd` stores).
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Add `n` to the counter (`write(fd, &n, 8)`).
    pub fn signal(&self, n: u64) -> io::Result<()> {
        signal_raw(self.raw(), n)
    }

    /// Read and reset the counter without blocking; `Ok(0)` when it was zero.
    pub fn try_read(&self) -> io::Result<u64> {
        read_raw(self.raw())
    }

    /// Wait up to `timeout` for the counter to become non-zero, then read it.
    /// `poll(2)` counts whole milliseconds, so a non-zero `timeout` is rounded
    /// up (a sub-millisecond wait blocks for one millisecond instead of
    /// returning at once, which would make a caller's wait loop spin). Plain
    /// `poll`, not [`poll_fds`]' `ppoll`: Miri runs the ring's waiters through
    /// here and models `poll` only.
    pub fn wait(&self, timeout: Duration) -> io::Result<Wait> {
        let v = self.try_read()?;
        if v != 0 {
            return Ok(Wait::Signalled(v));
        }
        let mut pfd = pollin(self.raw());
        let ms = i32::try_from(timeout.as_nanos().div_ceil(1_000_000)).unwrap_or(i32::MAX);
        // SAFETY: one valid pollfd on the stack.
        if unsafe { libc::poll(&mut pfd, 1, ms) } < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        Ok(match self.try_read()? {
            0 => Wait::TimedOut,
            v => Wait::Signalled(v),
        })
    }
}

/// An eventfd descriptor someone else made (a C caller's, duplicated):
/// owned from now on, closed on drop.
impl From<OwnedFd> for EventFd {
    fn from(fd: OwnedFd) -> EventFd {
        EventFd { fd }
    }
}

/// `write(fd, &n, 8)` on a raw eventfd that the caller keeps open.
pub fn signal_raw(fd: RawFd, n: u64) -> io::Result<()> {
    // SAFETY: writes 8 bytes from a local u64; a bad fd yields EBADF, not UB.
    let r = unsafe { libc::write(fd, (&n as *const u64).cast(), 8) };
    if r == 8 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sleep until one of `fds` is readable or `timeout` passes; which ones
/// were readable (a zero timeout is a readiness check that does not
/// block). A bad fd is
/// reported as not readable (`POLLNVAL`), an interrupted sleep as nothing
/// readable.
pub fn poll_readable<const N: usize>(fds: [RawFd; N], timeout: Duration) -> [bool; N] {
    let mut pfd = fds.map(pollin);
    let any = poll_fds(&mut pfd, timeout);
    pfd.map(|p| any && readable(&p))
}

/// A `pollfd` asking whether `fd` is readable.
pub fn pollin(fd: RawFd) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

/// Whether a [`poll_fds`] that returned `true` found this one readable.
pub fn readable(p: &libc::pollfd) -> bool {
    p.revents & libc::POLLIN != 0
}

/// [`poll_readable`] on a caller's `pollfd` slice (any length, e.g. kept
/// from one wait to the next): `true` if any became readable; then
/// [`readable`] says which.
///
/// The timeout is kept to the nanosecond (`ppoll`), not rounded up to a
/// whole millisecond as `poll` would.
pub fn poll_fds(pfd: &mut [libc::pollfd], timeout: Duration) -> bool {
    let ts = libc::timespec {
        tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(libc::time_t::MAX),
        // Below 10^9: fits every `c_long`.
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    let n = libc::nfds_t::try_from(pfd.len()).unwrap_or(0);
    // SAFETY: `n` initialised pollfd structs in the caller's slice; ppoll
    // only writes their `revents` and reads `ts`, a valid timespec (no
    // signal mask: null). A bad fd is reported in `revents` (POLLNVAL),
    // not undefined behaviour.
    let r = unsafe { libc::ppoll(pfd.as_mut_ptr(), n, &ts, core::ptr::null()) };
    r > 0
}

/// Read and reset a raw non-blocking eventfd's counter; `Ok(0)` when it
/// was zero.
fn read_raw(fd: RawFd) -> io::Result<u64> {
    let mut v = 0u64;
    // SAFETY: reads at most 8 bytes into a local u64; a bad fd yields an
    // error, never undefined behaviour.
    let n = unsafe { libc::read(fd, (&mut v as *mut u64).cast(), 8) };
    if n == 8 {
        return Ok(v);
    }
    match io::Error::last_os_error() {
        e if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
        e => Err(e),
    }
}

/// Read and discard a raw eventfd's counter (reset it). The caller promises
/// a non-blocking eventfd; any other fd gives an error or fewer bytes, which
/// are ignored (the read only resets the counter).
pub fn reset_raw(fd: RawFd) {
    let _ = read_raw(fd);
}

/// A new close-on-exec descriptor for the same open file as `fd`
/// (`fcntl(F_DUPFD_CLOEXEC)`), which the caller owns.
pub fn dup_cloexec(fd: RawFd) -> io::Result<RawFd> {
    // SAFETY: plain syscall on an fd the caller keeps open; the result is
    // checked.
    let d = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if d < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(d)
    }
}

/// Close a raw descriptor the caller owns and nobody else uses.
pub fn close_raw(fd: RawFd) {
    // SAFETY: the caller owns `fd` (its contract); closing a bad fd yields
    // EBADF, not undefined behaviour.
    unsafe {
        libc::close(fd);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_readable_names_the_ready_fds() {
        let a = EventFd::new().unwrap();
        let b = EventFd::new().unwrap();
        assert_eq!(
            poll_readable([a.raw(), b.raw()], Duration::ZERO),
            [false, false]
        );
        b.signal(1).unwrap();
        assert_eq!(
            poll_readable([a.raw(), b.raw()], Duration::from_millis(50)),
            [false, true]
        );
        reset_raw(b.raw());
        assert_eq!(poll_readable([b.raw()], Duration::ZERO), [false]);
        let d = dup_cloexec(a.raw()).unwrap();
        a.signal(2).unwrap();
        assert_eq!(poll_readable([d], Duration::ZERO), [true]);
        close_raw(d);
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri has no poll(2)")]
    fn signal_then_wait() {
        let e = EventFd::new().unwrap();
        assert_eq!(e.wait(Duration::from_millis(1)).unwrap(), Wait::TimedOut);
        e.signal(1).unwrap();
        e.signal(2).unwrap();
        assert_eq!(
            e.wait(Duration::from_millis(1)).unwrap(),
            Wait::Signalled(3)
        );
        assert_eq!(e.try_read().unwrap(), 0);
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri has no poll(2)")]
    fn a_sub_millisecond_wait_still_blocks() {
        // Truncated to whole milliseconds it would be poll(.., 0), which
        // returns at once.
        let e = EventFd::new().unwrap();
        let t = std::time::Instant::now();
        assert_eq!(e.wait(Duration::from_micros(300)).unwrap(), Wait::TimedOut);
        assert!(
            t.elapsed() >= Duration::from_micros(300),
            "{:?}",
            t.elapsed()
        );
        assert_eq!(e.wait(Duration::ZERO).unwrap(), Wait::TimedOut);
    }

    #[test]
    fn signal_to_bad_fd_is_an_error() {
        assert!(signal_raw(-1, 1).is_err());
    }
}
