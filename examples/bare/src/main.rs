//! The bare image: `_start` runs [`xunds_bare::run`] and parks the CPU. No
//! `std`, no allocator, no `main`; a panic parks it too. Built for
//! `x86_64-unknown-none` and `aarch64-unknown-none` (see Cargo.toml).
#![no_std]
#![no_main]

use core::panic::PanicInfo;
use core::sync::atomic::{AtomicU32, Ordering};

/// 1 when the run passed its checks, 2 when it failed (for a debugger).
static RESULT: AtomicU32 = AtomicU32::new(0);

/// The entry symbol the linker starts the image at.
#[no_mangle]
pub extern "C" fn _start() -> ! {
    let r = if xunds_bare::run().is_ok() { 1 } else { 2 };
    RESULT.store(r, Ordering::Relaxed);
    park()
}

#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    park()
}

fn park() -> ! {
    loop {
        core::hint::spin_loop();
    }
}
