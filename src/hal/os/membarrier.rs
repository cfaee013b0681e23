//! `membarrier(2)`: the heavy side of an asymmetric fence (Linux >= 4.14).
//! Under loom and Miri, which cannot model it, it is never available and
//! callers fall back to `fence(SeqCst)` on both sides.

#[cfg(not(any(loom, miri)))]
mod sys {
    use std::sync::OnceLock;

    const CMD_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
    const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

    pub(super) fn available() -> bool {
        static OK: OnceLock<bool> = OnceLock::new();
        *OK.get_or_init(|| {
            // SAFETY: a plain syscall with integer arguments; no memory is
            // passed. Failure (ENOSYS, EINVAL, EPERM) is reported as `false`.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_membarrier,
                    CMD_REGISTER_PRIVATE_EXPEDITED,
                    0 as libc::c_long,
                )
            };
            r == 0
        })
    }

    pub(super) fn barrier() -> bool {
        // SAFETY: as above; registration happened in `available`.
        let r = unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                CMD_PRIVATE_EXPEDITED,
                0 as libc::c_long,
            )
        };
        r == 0
    }
}

#[cfg(any(loom, miri))]
mod sys {
    pub(super) fn available() -> bool {
        false
    }
    pub(super) fn barrier() -> bool {
        false
    }
}

/// Register this process once; `false` when the kernel refuses (then
/// [`barrier`] must not be relied on).
pub fn available() -> bool {
    sys::available()
}

/// Force a full barrier on every running thread of this process; `false`
/// when it failed.
pub fn barrier() -> bool {
    sys::barrier()
}
