//! `NRT_STATUS` codes, the panic guard and the handle checks every entry
//! point shares.

use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};

use xunds_core::NrtStatus;

/// The runtime's status word (docs/abi.md §3): a `uint32_t`.
pub type NRT_STATUS = u32;

// The codes a C caller meets (docs/abi.md §3), as literals cbindgen writes
// as `#define`s; each is asserted against the crate's one status table
// (`xunds::NrtStatus`) below, so they cannot drift from it.
/// `NRT_SUCCESS`.
pub const NRT_SUCCESS: NRT_STATUS = 0;
/// `NRT_FAILURE`.
pub const NRT_FAILURE: NRT_STATUS = 1;
/// `NRT_INVALID`.
pub const NRT_INVALID: NRT_STATUS = 2;
/// `NRT_INVALID_HANDLE`.
pub const NRT_INVALID_HANDLE: NRT_STATUS = 3;
/// `NRT_RESOURCE`.
pub const NRT_RESOURCE: NRT_STATUS = 4;
/// `NRT_TIMEOUT`.
pub const NRT_TIMEOUT: NRT_STATUS = 5;
/// `NRT_HW_ERROR`.
pub const NRT_HW_ERROR: NRT_STATUS = 6;
/// `NRT_QUEUE_FULL`.
pub const NRT_QUEUE_FULL: NRT_STATUS = 7;
/// `NRT_UNINITIALIZED`.
pub const NRT_UNINITIALIZED: NRT_STATUS = 13;
/// `NRT_CLOSED`.
pub const NRT_CLOSED: NRT_STATUS = 14;
/// `NRT_QUEUE_EMPTY`.
pub const NRT_QUEUE_EMPTY: NRT_STATUS = 15;
/// `NRT_EXEC_UNIT_UNRECOVERABLE`.
pub const NRT_EXEC_UNIT_UNRECOVERABLE: NRT_STATUS = 101;
/// `NRT_EXEC_BAD_INPUT`.
pub const NRT_EXEC_BAD_INPUT: NRT_STATUS = 1002;
/// `NRT_EXEC_COMPLETED_WITH_NUM_ERR`.
pub const NRT_EXEC_COMPLETED_WITH_NUM_ERR: NRT_STATUS = 1003;
/// `NRT_EXEC_COMPLETED_WITH_ERR`.
pub const NRT_EXEC_COMPLETED_WITH_ERR: NRT_STATUS = 1004;

const _: () = assert!(
    NRT_SUCCESS == NrtStatus::SUCCESS.0
        && NRT_FAILURE == NrtStatus::FAILURE.0
        && NRT_INVALID == NrtStatus::INVALID.0
        && NRT_INVALID_HANDLE == NrtStatus::INVALID_HANDLE.0
        && NRT_RESOURCE == NrtStatus::RESOURCE.0
        && NRT_TIMEOUT == NrtStatus::TIMEOUT.0
        && NRT_HW_ERROR == NrtStatus::HW_ERROR.0
        && NRT_QUEUE_FULL == NrtStatus::QUEUE_FULL.0
        && NRT_UNINITIALIZED == NrtStatus::UNINITIALIZED.0
        && NRT_CLOSED == NrtStatus::CLOSED.0
        && NRT_QUEUE_EMPTY == NrtStatus::QUEUE_EMPTY.0
        && NRT_EXEC_UNIT_UNRECOVERABLE == NrtStatus::EXEC_UNIT_UNRECOVERABLE.0
        && NRT_EXEC_BAD_INPUT == NrtStatus::EXEC_BAD_INPUT.0
        && NRT_EXEC_COMPLETED_WITH_NUM_ERR == NrtStatus::EXEC_COMPLETED_WITH_NUM_ERR.0
        && NRT_EXEC_COMPLETED_WITH_ERR == NrtStatus::EXEC_COMPLETED_WITH_ERR.0
);

/// The value of a status word no worker has written yet (not an NRT code).
pub const XUNDS_STATUS_PENDING: NRT_STATUS = 0xFFFF_FFFF;

const _: () = assert!(XUNDS_STATUS_PENDING == xunds_core::ring::StatusCell::PENDING);

/// The C name of `status` without its `NRT_` prefix ("SUCCESS",
/// "QUEUE_FULL", ...), or NULL for a code the runtime does not define. The
/// string is static. Any thread.
#[no_mangle]
pub extern "C" fn xunds_status_name(status: NRT_STATUS) -> *const c_char {
    // The names are NUL-terminated copies of `NrtStatus::name`, made once.
    static NAMES: std::sync::OnceLock<Vec<(u32, std::ffi::CString)>> = std::sync::OnceLock::new();
    let r = catch_unwind(|| {
        let names = NAMES.get_or_init(|| {
            NrtStatus::ALL
                .iter()
                .filter_map(|s| Some((s.0, std::ffi::CString::new(s.name()?).ok()?)))
                .collect()
        });
        names
            .iter()
            .find(|(c, _)| *c == status)
            .map_or(std::ptr::null(), |(_, n)| n.as_ptr())
    });
    r.unwrap_or(std::ptr::null())
}

/// Run an entry point's body: its `Err` is the status returned, and a panic
/// is caught here and returned as `NRT_FAILURE` (the C side never sees an
/// unwind).
pub(crate) fn guard(f: impl FnOnce() -> Result<(), NRT_STATUS>) -> NRT_STATUS {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => NRT_SUCCESS,
        Ok(Err(s)) => s,
        Err(_) => NRT_FAILURE,
    }
}

/// A heap handle C holds by pointer: its first word is a magic number that
/// release clears, so a null, misaligned, foreign or released pointer is
/// `NRT_INVALID_HANDLE` where it can be told (a released handle's memory may
/// be reused, so that check is best effort: the contract is never to use a
/// handle after its release).
pub(crate) trait Checked: Sized {
    /// The magic word of a live handle of this type.
    const MAGIC: u64;
    /// The address of the magic word of `*p` (no reference formed).
    fn magic(p: *const Self) -> *const u64;
}

/// Implement [`Checked`] for a struct with a `magic: u64` field.
macro_rules! checked {
    ($t:ty, $m:expr) => {
        impl $crate::status::Checked for $t {
            const MAGIC: u64 = $m;
            fn magic(p: *const Self) -> *const u64 {
                // SAFETY: `addr_of!` on a place behind a raw pointer only
                // computes the address (no read, no reference); callers pass
                // a `p` `handle` checked non-null and aligned.
                unsafe { core::ptr::addr_of!((*p).magic) }
            }
        }
    };
}
pub(crate) use checked;

/// `p` as a live handle: `NRT_INVALID_HANDLE` for null, misaligned or a
/// magic word that is not this type's.
///
/// # Safety
/// `p` is null or points to readable memory of `size_of::<T>()` bytes (the
/// header's contract: a pointer this library returned, not yet released).
pub(crate) unsafe fn handle<'a, T: Checked>(p: *const T) -> Result<&'a T, NRT_STATUS> {
    if p.is_null() || !p.is_aligned() {
        return Err(NRT_INVALID_HANDLE);
    }
    // SAFETY: non-null and aligned; readable by our caller's contract. A
    // volatile read, so the check is not folded away for a released handle.
    if unsafe { T::magic(p).read_volatile() } != T::MAGIC {
        return Err(NRT_INVALID_HANDLE);
    }
    // SAFETY: a live handle of this type (magic checked), which this library
    // allocated as a `Box<T>`.
    Ok(unsafe { &*p })
}

/// As [`handle`], for the handles one thread uses mutably (the SPSC ends).
///
/// # Safety
/// [`handle`]'s, and no other reference to `*p` is live (the header's
/// thread rule for that handle).
pub(crate) unsafe fn handle_mut<'a, T: Checked>(p: *mut T) -> Result<&'a mut T, NRT_STATUS> {
    // SAFETY: forwarded contract.
    unsafe { handle(p) }?;
    // SAFETY: checked just above; exclusive by our caller's contract.
    Ok(unsafe { &mut *p })
}

/// Move a new handle to the heap and give C its pointer.
pub(crate) fn boxed<T>(v: T) -> *mut T {
    Box::into_raw(Box::new(v))
}

/// Check a handle for release and clear its magic word, so a later use of
/// the same pointer fails the check while the memory is not reused.
///
/// # Safety
/// [`handle`]'s, and no other call on this handle runs or follows.
pub(crate) unsafe fn retire<T: Checked>(p: *mut T) -> Result<(), NRT_STATUS> {
    // SAFETY: forwarded contract.
    unsafe { handle(p) }?;
    // SAFETY: a live handle (checked): its magic word is writable.
    unsafe { (T::magic(p) as *mut u64).write_volatile(0) };
    Ok(())
}

/// Take a handle back for release: checked, its magic cleared, then owned.
///
/// # Safety
/// [`handle`]'s, and no other call on this handle runs or follows.
pub(crate) unsafe fn unbox<T: Checked>(p: *mut T) -> Result<Box<T>, NRT_STATUS> {
    // SAFETY: forwarded contract.
    unsafe { retire(p) }?;
    // SAFETY: allocated by `boxed` as a `Box<T>`, released once (magic).
    Ok(unsafe { Box::from_raw(p) })
}

/// Write `v` through an out-pointer: `NRT_INVALID` for null or misaligned.
///
/// # Safety
/// `p` is null or valid for a write of a `T`.
pub(crate) unsafe fn out<T>(p: *mut T, v: T) -> Result<(), NRT_STATUS> {
    if p.is_null() || !p.is_aligned() {
        return Err(NRT_INVALID);
    }
    // SAFETY: non-null, aligned, writable by our caller's contract.
    unsafe { p.write(v) };
    Ok(())
}

/// A C string argument as `&str`: `NRT_INVALID` for null or non-UTF-8.
///
/// # Safety
/// `p` is null or a NUL-terminated string valid for the call.
pub(crate) unsafe fn c_str<'a>(p: *const c_char) -> Result<&'a str, NRT_STATUS> {
    if p.is_null() {
        return Err(NRT_INVALID);
    }
    // SAFETY: NUL-terminated by our caller's contract.
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| NRT_INVALID)
}

/// `len` elements at `p` as a slice: `NRT_INVALID` for null or misaligned
/// (an empty slice may be null).
///
/// # Safety
/// `p` is valid for reads of `len` `T`s for the call.
pub(crate) unsafe fn slice<'a, T>(p: *const T, len: usize) -> Result<&'a [T], NRT_STATUS> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() || !p.is_aligned() {
        return Err(NRT_INVALID);
    }
    // SAFETY: our caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}
