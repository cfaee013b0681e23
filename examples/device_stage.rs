//! The device stage alone, for callgrind: N executions of the null model
//! (one `COPY` of one word on SP) staged by the real `Stager`, carried out
//! by the real `Sequencer` (DMA copies, execution on the engines, NQ
//! records) and harvested by the real `Harvester`, on the Linux HAL, one
//! thread. Only [`device_stage`] is the stage; count it alone with
//!
//! ```text
//! cargo build --release --example device_stage
//! valgrind --tool=callgrind --toggle-collect='*device_stage*device_stage*' \
//!     target/release/examples/device_stage 5000
//! ```
//!
//! and divide the collected instructions by N (default 5,000).

use xunds::device::engine::{Executor, Limits};
use xunds::device::memmap::DeviceConfig;
use xunds::device::model::null_model;
use xunds::device::nq::ExecStatus;
use xunds::device::sequencer::{RequestExecutor, Sequencer};
use xunds::device::Device;
use xunds::hal::linux::LinuxHal;
use xunds::hal::Hal;

/// One execution's device work: poll the core until it executed the
/// request staged last (its NQ records are written by the same poll).
#[inline(never)]
fn device_stage<H: Hal, X: RequestExecutor>(seq: &mut Sequencer<H, X>) {
    let before = seq.executed(0);
    while seq.executed(0) == before {
        seq.poll_one(0, 0).expect("device");
    }
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .map_or(5_000, |a| a.parse().expect("N: executions"));
    let config = DeviceConfig {
        cores: 1,
        ..DeviceConfig::default()
    };
    let dev = Device::new(LinuxHal::new(), config).expect("device");
    // Link once to learn the sizes, then for real at the allocated addresses.
    let builder = null_model().expect("null model");
    let probe = builder.link(0x8_0000_0000, 0x8_0000_0000).expect("link");
    let code = dev.alloc(probe.footprint(), 64).expect("alloc");
    let io = dev.alloc(probe.mem.tensors, 64).expect("alloc");
    let image = builder.link(code.pa(), io.pa()).expect("link");
    let model = dev
        .load_model(code, &image.bytes, image.blocks)
        .expect("load");
    let mut stager = dev.stager(0).expect("stager");
    let mut seq = dev.sequencer(Executor::new(Limits::DEFAULT));
    let mut harvester = dev.harvester(0).expect("harvester");
    for i in 0..n {
        image
            .write_input(&dev.memory(), &[i as f32])
            .expect("input");
        let staged = stager.stage_and_doorbell(&model, 0).expect("stage");
        device_stage(&mut seq);
        harvester.expect(staged.exec_id, staged.engines, u64::MAX);
        let done = harvester
            .poll(0)
            .expect("harvest")
            .expect("a completion")
            .expect("no harvest error");
        assert_eq!(done.status, ExecStatus::Done);
        let y = image.read_output(&dev.memory()).expect("output");
        assert_eq!(y, [i as f32], "execution {i}");
    }
    println!("{n} null executions through the device stage");
}
