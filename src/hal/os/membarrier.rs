//! `membarrier(2)`: the heavy side of an asymmetric fence (Linux >= 4.14).
//! Under loom and Miri, which cannot model it, it is never available and
//! callers fall back to `fence(SeqCst)` on both sides.

use std::sync::OnceLock;

const CMD_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

/// `membarrier(cmd, 0)` succeeded; always `false` under loom and Miri.
fn membarrier(cmd: libc::c_long) -> bool {
    if cfg!(any(loom, miri)) {
        return false;
    }
    // SAFETY: a plain syscall with integer arguments; no memory is passed.
    // Failure (ENOSYS, EINVAL, EPERM) is reported as `false`.
    unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0 as libc::c_long) == 0 }
}

/// Register this process once; `false` when the kernel refuses (then
/// [`barrier`] must not be relied on).
pub fn available() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| membarrier(CMD_REGISTER_PRIVATE_EXPEDITED))
}

/// Force a full barrier on every running thread of this process (after
/// [`available`] registered it); `false` when it failed.
pub fn barrier() -> bool {
    membarrier(CMD_PRIVATE_EXPEDITED)
}
