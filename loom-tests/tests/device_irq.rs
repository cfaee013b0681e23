//! Loom model of the NQ interrupt's arm handshake (`xunds::device::irq`,
//! ours): the device writes an NQ record through the real `NqWriter` and
//! raises the interrupt only if the worker armed it; the worker looks at its
//! NQ through the real `NqReader`, and when it finds nothing it arms, looks
//! once more, and only then would sleep on the event. A worker that decides
//! to sleep must find the event raised: otherwise it sleeps through a
//! record that is already there (a lost interrupt).
//!
//! The mutant `irq_no_fence` (src/device/irq.rs: no SeqCst fence in `raise`
//! between the record writes and the arm load) must make this model fail on
//! its assertion (`.ci/loom` checks that it does).
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;

use xunds::device::irq;
use xunds::device::memmap::DeviceConfig;
use xunds::device::nq::{NqReader, NqWriter};
use xunds::device::Device;
use xunds::hal::{Hal, Wait};
use xunds::sim::fake::FakeHal;
use xunds::wire::nq::{Kind, NqEntry, Source};

fn entry(i: u32) -> NqEntry {
    NqEntry {
        exec_id: i,
        engine: 0,
        kind: Kind::Done,
        source: Source::Engine,
        phase: true,
        start_cycle: 10 * i,
        end_cycle: 10 * i + 5,
    }
}

fn device() -> Device<FakeHal> {
    let cfg = DeviceConfig {
        cores: 1,
        dram_size: 0x1000,
        ring_len: 3,
        nq_len: 2,
        request_slots: 1,
        ring_id_grace_ns: 0,
    };
    Device::new(FakeHal::new(), cfg).unwrap()
}

/// One record, one worker look-arm-look: a worker that goes to sleep is
/// always woken.
#[test]
fn an_armed_worker_is_never_left_asleep() {
    loom::model(|| {
        let dev = device();
        let (regs, ev) = (dev.map().cores[0].regs, dev.map().cores[0].nq_irq);
        let hal = dev.hal().clone();
        let mut w = NqWriter::new(dev.map(), 0, 0).unwrap();
        let device = thread::spawn(move || {
            w.push(&*hal, entry(1)).unwrap().unwrap();
            irq::raise(&*hal, regs, ev).unwrap()
        });
        let hal = dev.hal();
        let mut r = NqReader::new(dev.map(), 0, 0).unwrap();
        let mut seen = r.poll(&**hal).unwrap();
        let mut sleeps = false;
        if seen.is_none() {
            irq::arm(&**hal, regs).unwrap();
            seen = r.poll(&**hal).unwrap();
            sleeps = seen.is_none();
        }
        let raised = device.join().unwrap();
        if sleeps {
            assert!(
                raised && matches!(hal.wait(ev, 0).unwrap(), Wait::Signalled(1)),
                "lost interrupt: the worker armed, found no record and sleeps, \
                 but the device did not raise the event"
            );
            // Asleep until woken: then the record is there.
            assert_eq!(r.poll(&**hal).unwrap(), Some(entry(1)));
        } else {
            assert_eq!(seen, Some(entry(1)));
        }
    });
}

/// Two requests with a re-arm in between: the device's clearing store never
/// strands a worker that armed again.
#[test]
fn a_rearm_is_not_lost_to_the_clear() {
    loom::model(|| {
        let dev = device();
        let (regs, ev) = (dev.map().cores[0].regs, dev.map().cores[0].nq_irq);
        let hal = dev.hal().clone();
        let done = Arc::new(AtomicBool::new(false));
        let done2 = done.clone();
        let mut w = NqWriter::new(dev.map(), 0, 0).unwrap();
        let device = thread::spawn(move || {
            for i in 1..=2 {
                w.push(&*hal, entry(i)).unwrap().unwrap();
                irq::raise(&*hal, regs, ev).unwrap();
            }
            // Ordering: Release pairs with the worker's Acquire load: every
            // raise above happens-before a worker that sees `done`.
            done2.store(true, Ordering::Release);
        });
        let hal = dev.hal();
        let mut r = NqReader::new(dev.map(), 0, 0).unwrap();
        let mut got = 0u32;
        while got < 2 {
            if r.poll(&**hal).unwrap().is_some() {
                got += 1;
                continue;
            }
            irq::arm(&**hal, regs).unwrap();
            if r.poll(&**hal).unwrap().is_some() {
                got += 1;
                continue;
            }
            // Asleep on the event (a real worker blocks here): it must come.
            loop {
                if let Wait::Signalled(_) = hal.wait(ev, 0).unwrap() {
                    break;
                }
                // Ordering: Acquire pairs with the device's Release store.
                if done.load(Ordering::Acquire) {
                    assert!(
                        matches!(hal.wait(ev, 0).unwrap(), Wait::Signalled(_)),
                        "lost interrupt: the device is done, a record is \
                         waiting and the armed worker was never woken"
                    );
                    break;
                }
                thread::yield_now();
            }
        }
        device.join().unwrap();
    });
}
