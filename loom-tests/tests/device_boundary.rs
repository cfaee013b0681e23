//! Loom model of the device publish boundary (docs/abi.md §1.10 "device publish
//! boundary", docs/abi.md §1.10): a producer thread stages requests through the real
//! `Stager` (body copy-in, trailer, three trigger pairs, doorbell) while the
//! device thread runs the real `Sequencer` (DMA engine + sequencer) on the
//! same in-memory regions (`FakeHal`, whose words are loom atomics under
//! `--cfg loom`). The sequencer must never execute a half-written request.
//!
//! Rings of 3 slots and one request buffer with two requests force a ring
//! wrap (ring id 1 -> 2), buffer reuse and the flow control on the device's
//! head registers. The `device_tail_first` mutant (library code) publishes
//! before the body is copied in; this model must fail with it.
#![cfg(loom)]

use loom::thread;

use xunds::device::engine::{DeviceMemory, EngineReport, EngineState, ExecReport};
use xunds::device::memmap::{DeviceConfig, DRAM_BASE};
use xunds::device::sequencer::RequestExecutor;
use xunds::device::staging::{build_request, IbAddr, LoadedModel, ModelId, StageError};
use xunds::device::Device;
use xunds::sim::fake::FakeHal;
use xunds::wire::device_request::{DeviceExecRequest, Engine};

/// Records every request it is asked to run; touches no memory.
#[derive(Default)]
struct Recorder {
    seen: Vec<DeviceExecRequest>,
}

impl RequestExecutor for Recorder {
    fn execute(
        &mut self,
        _m: &dyn DeviceMemory,
        req: &DeviceExecRequest,
        start: u64,
    ) -> ExecReport {
        self.seen.push(*req);
        let engines = Engine::ALL.map(|_| EngineReport {
            state: EngineState::Done,
            start_cycle: start,
            end_cycle: start + 1,
            steps: 1,
            fault: None,
        });
        ExecReport {
            engines,
            macs: 0,
            end_cycle: start + 1,
            first_error: None,
        }
    }
}

fn model(id: u32, base: u64) -> LoadedModel {
    let ib = |offset| {
        Some(IbAddr {
            base_pa: base,
            align_offset: 0x40,
            offset,
        })
    };
    LoadedModel {
        id: ModelId(id),
        ib: [ib(0x100), ib(0x200), ib(0x300), ib(0x400), ib(0x500)],
    }
}

fn config() -> DeviceConfig {
    DeviceConfig {
        cores: 1,
        dram_size: 0x1000,
        ring_len: 3,
        nq_len: 2,
        request_slots: 1,
        ring_id_grace_ns: u64::MAX,
    }
}

#[test]
fn sequencer_never_reads_a_half_written_request() {
    loom::model(|| {
        let dev = Device::new(FakeHal::new(), config()).unwrap();
        let a = model(1, DRAM_BASE + 0x7_0000_0000);
        let b = model(2, DRAM_BASE + 0x1_2340_0000);
        let expected = vec![build_request(&a, true), build_request(&b, true)];
        let mut stager = dev.stager(0).unwrap();
        let producer = thread::spawn(move || {
            for (m, cc) in [(a, 0x11), (b, 0x22)] {
                loop {
                    match stager.stage_and_doorbell(&m, cc) {
                        Ok(_) => break,
                        Err(StageError::Busy { .. } | StageError::RingFull { .. }) => {
                            thread::yield_now()
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
            }
        });
        let mut seq = dev.sequencer(Recorder::default());
        while seq.executed(0) < 2 {
            let p = seq.poll(0).unwrap();
            assert_eq!(seq.dma_fault(0), None);
            if !p.made_progress() {
                thread::yield_now();
            }
        }
        producer.join().unwrap();
        assert_eq!(
            seq.executor().seen,
            expected,
            "a torn or stale request executed"
        );
    });
}
