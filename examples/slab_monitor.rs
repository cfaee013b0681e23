//! Read a live NDS slab as a monitor does: map the file read-only, take a
//! consistent snapshot (counters, the model bitmap, every model record with
//! its freshness), print it. Never writes, never blocks the publisher.
//!
//! `cargo run --example slab_monitor [-- PATH]`: with PATH, read that slab
//! (for example the one `xunds run` publishes); without, start a small
//! simulated system that publishes to a temporary slab, run a few
//! executions, and read its slab while it is live.

use std::path::{Path, PathBuf};
use std::time::Duration;

use xunds::hal::linux::LinuxHal;
use xunds::nds::{ReadOnlySlab, Reader, RecordRead};
use xunds::system::{MlpSpec, SlabTarget, System, SystemConfig};
use xunds::wire::nds::c_str_lossy;
use xunds::wire::nds::counters::NcCounter;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if let Some(path) = std::env::args().nth(1) {
        return monitor(Path::new(&path));
    }
    let path: PathBuf =
        std::env::temp_dir().join(format!("xunds-monitor-{}.nds", std::process::id()));
    let mut cfg = SystemConfig::new(2);
    cfg.slab = SlabTarget::Path(path.clone());
    let sys = System::start(LinuxHal::new(), cfg)?;
    let spec = MlpSpec::EXAMPLE;
    let model = sys.load_mlp(&spec, "mlp")?;
    for i in 0..8u8 {
        let input = spec.example_input(u64::from(i));
        sys.execute(i % 2, &model, &input, Duration::from_secs(10))
            .map_err(|s| format!("execute refused: {s}"))?;
    }
    // The publisher applies outcomes asynchronously; wait until the slab
    // agrees with everything executed so far.
    sys.quiesce(Duration::from_secs(10));
    let result = monitor(&path);
    sys.shutdown()?;
    let _ = std::fs::remove_file(&path);
    result
}

fn monitor(path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let slab = ReadOnlySlab::open(path)?;
    assert!(slab.is_mapped_read_only());
    let reader = Reader::attach(slab)?;
    let snap = reader.snapshot()?;

    println!("slab {} (mapped read-only)", path.display());
    for (core, nc) in snap.counters.nc.iter().enumerate() {
        let done = nc[NcCounter::InferCompleted.index() as usize];
        let failed = nc[NcCounter::InferCompletedWithErr.index() as usize];
        if done + failed > 0 {
            println!("  core {core}: INFER_COMPLETED {done}, INFER_COMPLETED_WITH_ERR {failed}");
        }
    }
    println!("  model bitmap {:#018x}", snap.model_bitmap);
    for (slot, rec) in &snap.models {
        match rec {
            RecordRead::Fresh(m) => println!(
                "  model slot {}: id {} `{}` on nc {}",
                slot.index(),
                m.model_id,
                c_str_lossy(&m.name),
                m.nc_index
            ),
            other => println!("  model slot {}: {}", slot.index(), other.state_name()),
        }
    }
    println!("  process info: {}", snap.process_info.state_name());
    Ok(())
}
