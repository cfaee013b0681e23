//! The NQ interrupt with an arm register (ours; docs/abi.md §1.13 leaves the
//! interrupt path to us): the device raises a core's NQ interrupt event
//! only when the worker has armed it, so a worker that is polling its NQ
//! costs the device no system call per request.
//!
//! It is the interrupt-mask shape of real devices, and the same
//! store-buffering (Dekker) handshake as [`crate::actors::wake::Waker`],
//! closed by two SeqCst fences:
//!
//! | side | steps |
//! |---|---|
//! | worker, about to sleep on the event | [`arm`]: `NQ_IRQ_ARM := 1`, fence; harvest **again**; nothing: sleep on the event; records: go on (the arm stays set, which costs at most one spurious event) |
//! | device, after a request's NQ records | [`raise`]: fence; if `NQ_IRQ_ARM != 0`: `NQ_IRQ_ARM := 0`, notify the event |
//!
//! Either the worker's second look sees the records, or the device's load
//! sees the arm (the fences are totally ordered): no lost interrupt. The
//! device clears the arm with a plain store after seeing it set; a worker
//! that re-armed in between is notified by the write that follows, so the
//! clear loses nothing either. The loom model
//! `loom-tests/tests/device_irq.rs` checks this on the real NQ writer and
//! reader, with the mutant `cfg(xunds_mutant = "irq_no_fence")` (the
//! device-side fence dropped) that it must kill.

use crate::hal::{EventHandle, Hal, HalError, Ordering, RegionHandle};
use crate::sync::atomic::fence;

use super::memmap::reg;

/// Worker side: arm the NQ interrupt of the core whose registers are
/// `regs`. The caller must look for NQ records once more before it sleeps.
pub fn arm<H: Hal + ?Sized>(hal: &H, regs: RegionHandle) -> Result<(), HalError> {
    hal.store_u32(regs, reg::NQ_IRQ_ARM, 1, Ordering::Relaxed)?;
    // Ordering: SeqCst fence between the arm store and the worker's second
    // look at its NQ rings; pairs with the fence in `raise` (Dekker, as in
    // actors::wake).
    fence(Ordering::SeqCst);
    Ok(())
}

/// Device side, after a request's NQ records are written: notify `ev` if the
/// worker armed it (and disarm). Returns whether it notified.
pub fn raise<H: Hal + ?Sized>(
    hal: &H,
    regs: RegionHandle,
    ev: EventHandle,
) -> Result<bool, HalError> {
    // Ordering: SeqCst fence between the NQ record writes and the arm load;
    // pairs with the fence in `arm` (Dekker).
    #[cfg(not(xunds_mutant = "irq_no_fence"))]
    fence(Ordering::SeqCst);
    if hal.load_u32(regs, reg::NQ_IRQ_ARM, Ordering::Relaxed)? == 0 {
        return Ok(false);
    }
    hal.store_u32(regs, reg::NQ_IRQ_ARM, 0, Ordering::Relaxed)?;
    hal.notify(ev, 1)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::memmap::DeviceConfig;
    use crate::device::Device;
    use crate::sim::fake::FakeHal;

    #[test]
    fn raises_only_when_armed_and_disarms() {
        let dev = Device::new(
            FakeHal::new(),
            DeviceConfig {
                cores: 1,
                ..DeviceConfig::default()
            },
        )
        .unwrap();
        let (hal, map) = (dev.hal(), dev.map());
        let (regs, ev) = (map.cores[0].regs, map.cores[0].nq_irq);
        assert!(!raise(&**hal, regs, ev).unwrap(), "not armed: no event");
        arm(&**hal, regs).unwrap();
        assert_eq!(
            hal.load_u32(regs, reg::NQ_IRQ_ARM, Ordering::Relaxed)
                .unwrap(),
            1
        );
        assert!(raise(&**hal, regs, ev).unwrap());
        assert_eq!(
            hal.load_u32(regs, reg::NQ_IRQ_ARM, Ordering::Relaxed)
                .unwrap(),
            0,
            "raising disarms"
        );
        assert!(!raise(&**hal, regs, ev).unwrap(), "one event per arm");
        assert_eq!(
            hal.wait(ev, 0).unwrap(),
            crate::hal::Wait::Signalled(1),
            "exactly one notify"
        );
    }
}
