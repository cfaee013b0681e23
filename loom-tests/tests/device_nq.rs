//! Loom model of an NQ ring (ours, docs/abi.md §1.13): the
//! device's `NqWriter` and the worker's `NqReader` on a 2-entry ring with 3
//! records, so the phase bit flips and slots are reused. The reader must see
//! every record exactly once, in order, never torn, and never a stale slot
//! as new.
#![cfg(loom)]

use loom::thread;

use xunds::device::memmap::DeviceConfig;
use xunds::device::nq::{NqReader, NqWriter};
use xunds::device::Device;
use xunds::sim::fake::FakeHal;
use xunds::wire::nq::{ErrorClass, Kind, NqEntry, Source};

fn entry(i: u32) -> NqEntry {
    NqEntry {
        exec_id: i,
        engine: 2,
        kind: if i == 2 {
            Kind::Error(ErrorClass::Transient)
        } else {
            Kind::Done
        },
        source: Source::Engine,
        phase: false,
        start_cycle: 100 * i,
        end_cycle: 100 * i + 7,
    }
}

#[test]
fn nq_records_arrive_once_in_order_untorn() {
    loom::model(|| {
        let cfg = DeviceConfig {
            cores: 1,
            dram_size: 0x1000,
            ring_len: 3,
            nq_len: 2,
            request_slots: 1,
            ring_id_grace_ns: 0,
        };
        let dev = Device::new(FakeHal::new(), cfg).unwrap();
        let hal = dev.hal().clone();
        let mut w = NqWriter::new(dev.map(), 0, 2).unwrap();
        let writer = thread::spawn(move || {
            for i in 1..=3 {
                while w.free(&*hal).unwrap() == 0 {
                    thread::yield_now();
                }
                w.push(&*hal, entry(i)).unwrap().unwrap();
            }
        });
        let mut r = NqReader::new(dev.map(), 0, 2).unwrap();
        let mut got = Vec::new();
        while got.len() < 3 {
            match r.poll(&**dev.hal()).unwrap() {
                Some(e) => got.push(e),
                None => thread::yield_now(),
            }
        }
        writer.join().unwrap();
        let want: Vec<NqEntry> = (1..=3)
            .map(|i| NqEntry {
                phase: i != 3, // laps: 1, 1, then 0 after the wrap
                ..entry(i)
            })
            .collect();
        assert_eq!(got, want);
        assert_eq!(r.poll(&**dev.hal()).unwrap(), None);
    });
}
