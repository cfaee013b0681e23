//! The whole device loop on both HAL backends: load the engines helper's
//! example MLP into device DRAM, stage requests through real descriptors and
//! mappings, let the sequencer execute them with the real engines, harvest
//! the NQ records, and compare the outputs with the CPU reference bit for
//! bit (the engines accumulate in the reference's order).

use crate::support::engine_addresses;
use xunds::device::engine::{Executor, Limits};
use xunds::device::memmap::DeviceConfig;
use xunds::device::model::{MlpSpec, ModelImage};
use xunds::device::nq::ExecStatus;
use xunds::device::staging::LoadedModel;
use xunds::device::Device;
use xunds::hal::linux::LinuxHal;
use xunds::hal::{Hal, Ordering};
use xunds::sim::fake::FakeHal;

fn load<H: Hal>(dev: &Device<H>, spec: &MlpSpec) -> (ModelImage, LoadedModel) {
    // Link once to learn the sizes, then for real at the allocated addresses.
    let probe = spec.link(0x8_0000_0000, 0x8_0000_0000).unwrap();
    let code = dev.alloc(probe.footprint(), 64).unwrap();
    let io = dev.alloc(probe.mem.tensors, 64).unwrap();
    let image = spec.link(code.pa(), io.pa()).unwrap();
    let model = dev.load_model(code, &image.bytes, image.blocks).unwrap();
    for e in xunds::wire::device_request::Engine::ALL {
        assert_eq!(model.engine_address(e), engine_addresses(&image)[e.index()]);
    }
    (image, model)
}

fn full_loop<H: Hal>(hal: H) {
    let dev = Device::new(hal, DeviceConfig::default()).unwrap();
    let spec = MlpSpec::EXAMPLE;
    let (image, model) = load(&dev, &spec);
    let mut stager = dev.stager(1).unwrap();
    let mut seq = dev.sequencer(Executor::new(Limits::DEFAULT));
    let mut harvest = dev.harvester(1).unwrap();
    let mut latencies = Vec::new();
    for round in 0..3u64 {
        let x = spec.example_input(round);
        image.write_input(&dev.memory(), &x).unwrap();
        let staged = stager.stage_and_doorbell(&model, 0).unwrap();
        assert_eq!(staged.model_switch, round == 0);
        let p = seq.poll(0).unwrap();
        assert_eq!((p.copies, p.executed), (3, 1));
        harvest.expect(staged.exec_id, staged.engines, u64::MAX);
        let done = harvest.poll(0).unwrap().unwrap().unwrap();
        assert_eq!(done.exec_id, staged.exec_id);
        assert_eq!(done.status, ExecStatus::Done);
        assert_eq!(done.reported, staged.engines);
        latencies.push(done.device_cycles());
        let y = image.read_output(&dev.memory()).unwrap();
        let want = image.reference(&x);
        assert_eq!(y.len(), want.len());
        for (i, (a, b)) in y.iter().zip(&want).enumerate() {
            assert_eq!(a.to_bits(), b.to_bits(), "output {i}: {a} vs {b}");
        }
    }
    // The first request paid for the model switch; the others did not.
    assert!(latencies[1] == latencies[2], "{latencies:?}");
    let regs = dev.map().cores[1].regs;
    // Ordering: Acquire, partner: `Sequencer::finish`'s Release store of
    // MAC_COUNT (same thread here; the pairing a monitor would rely on).
    let macs = dev.hal().load_u64(regs, 0x30, Ordering::Acquire).unwrap();
    assert_eq!(macs, 3 * spec.macs());
    assert_eq!(seq.executed(1), 3);
    assert_eq!(seq.executed(0), 0);
}

#[test]
fn example_mlp_on_the_fake_backend() {
    full_loop(FakeHal::new());
}

#[test]
fn example_mlp_on_real_mappings() {
    full_loop(LinuxHal::new());
}

/// Determinism: two runs give the same device timestamps.
#[test]
fn device_time_is_reproducible() {
    let run = || {
        let dev = Device::new(FakeHal::new(), DeviceConfig::default()).unwrap();
        let (image, model) = load(&dev, &MlpSpec::EXAMPLE);
        let mut st = dev.stager(0).unwrap();
        let mut seq = dev.sequencer(Executor::new(Limits::DEFAULT));
        let mut h = dev.harvester(0).unwrap();
        let mut v = Vec::new();
        for i in 0..4 {
            image
                .write_input(&dev.memory(), &MlpSpec::EXAMPLE.example_input(i))
                .unwrap();
            let s = st.stage_and_doorbell(&model, 0).unwrap();
            h.expect(s.exec_id, s.engines, u64::MAX);
            seq.poll(0).unwrap();
            let c = h.poll(0).unwrap().unwrap().unwrap();
            v.push((c.start_cycle, c.end_cycle));
        }
        v
    };
    assert_eq!(run(), run());
}

/// The device runs on its own thread against the same real mappings while
/// the producer stages from another: outputs still match.
#[test]
fn threaded_producer_and_device() {
    use std::sync::atomic::{AtomicBool, Ordering as O};
    use std::sync::Arc;
    let dev = Device::new(LinuxHal::new(), DeviceConfig::default()).unwrap();
    let spec = MlpSpec::EXAMPLE;
    let (image, model) = load(&dev, &spec);
    let stop = Arc::new(AtomicBool::new(false));
    let mut seq = dev.sequencer(Executor::new(Limits::DEFAULT));
    let s2 = Arc::clone(&stop);
    let t = std::thread::spawn(move || {
        let mut n = 0u64;
        while !s2.load(O::Acquire) {
            if !seq.poll(n).unwrap().made_progress() {
                std::thread::yield_now();
            }
            n += 1;
        }
        seq.executed(0)
    });
    let mut st = dev.stager(0).unwrap();
    let mut h = dev.harvester(0).unwrap();
    let x = spec.example_input(9);
    image.write_input(&dev.memory(), &x).unwrap();
    for _ in 0..50 {
        let s = loop {
            match st.stage_and_doorbell(&model, 0) {
                Ok(s) => break s,
                Err(_) => std::thread::yield_now(),
            }
        };
        h.expect(s.exec_id, s.engines, u64::MAX);
        let c = loop {
            if let Some(r) = h.poll(0).unwrap() {
                break r.unwrap();
            }
            std::thread::yield_now();
        };
        assert_eq!((c.exec_id, c.status), (s.exec_id, ExecStatus::Done));
    }
    stop.store(true, O::Release);
    assert_eq!(t.join().unwrap(), 50);
    let y = image.read_output(&dev.memory()).unwrap();
    assert_eq!(y, image.reference(&x));
}

#[test]
fn alloc_refuses_what_cannot_fit_without_overflowing() {
    use xunds::device::LoadError;
    let dev = Device::new(FakeHal::new(), DeviceConfig::default()).unwrap();
    // Leave the heap 64- but not 128-aligned, so a 128-aligned request has a
    // non-zero align_offset: `align_offset + u64::MAX` must not overflow (a
    // panic in debug builds, a wrapped, tiny "total" in release).
    let first = dev.alloc(1, 64).unwrap();
    assert_eq!((first.pa() + 64) % 128, 64, "heap left at an odd 64");
    for (len, align) in [(u64::MAX, 128), (u64::MAX - 8, 4096), (8, 1 << 63)] {
        assert!(
            matches!(dev.alloc(len, align), Err(LoadError::OutOfMemory { .. })),
            "alloc({len:#x}, {align:#x})"
        );
    }
    assert_eq!(dev.alloc(8, 3), Err(LoadError::BadAlign(3)));
    // A refusal changes nothing: the heap still serves the next allocation
    // right after the first one.
    let a = dev.alloc(100, 64).unwrap();
    assert_eq!(a.base_pa, first.pa() + 64);
    assert_eq!(a.pa() % 64, 0);
    let free = DeviceConfig::default().dram_size;
    assert!(matches!(
        dev.alloc(free, 64),
        Err(LoadError::OutOfMemory { len, .. }) if len >= free
    ));
}
