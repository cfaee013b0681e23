//! The bare image: `_start` runs [`xunds_bare::run`] and parks the CPU. No
//! `std`, no allocator, no `main`; a panic parks it too. Built for
//! `x86_64-unknown-none` and `aarch64-unknown-none` (see Cargo.toml).
#![no_std]
#![no_main]

use core::panic::PanicInfo;
use core::sync::atomic::{AtomicU32, Ordering};

/// 1 when the run passed its checks, 2 when it failed: read it with a
/// debugger (`print XUNDS_BARE_RESULT`). Exported, so the linker keeps it.
#[no_mangle]
pub static XUNDS_BARE_RESULT: AtomicU32 = AtomicU32::new(0);

/// The entry symbol the linker starts the image at.
#[no_mangle]
pub extern "C" fn _start() -> ! {
    let r = if xunds_bare::run().is_ok() { 1 } else { 2 };
    XUNDS_BARE_RESULT.store(r, Ordering::Relaxed);
    xunds_bare_park()
}

#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    xunds_bare_park()
}

/// Where the image ends (a debugger's breakpoint: `break xunds_bare_park`).
#[no_mangle]
#[inline(never)]
pub extern "C" fn xunds_bare_park() -> ! {
    loop {
        core::hint::spin_loop();
    }
}
