//! The core alone, as a host agent would use it: no simulated device, no
//! actors, no system.
//!
//! 1. An XU ring between two threads of the agent's own: one submits and
//!    triggers work, the other pops it and completes it with a status; the
//!    submitter waits on the status cell.
//! 2. An NDS slab written by this process and read by another: the example
//!    creates a slab file, publishes counters and a model record, then runs
//!    itself again as `host_agent read PATH`, a second process that maps the
//!    file read-only and checks what it sees.
//!
//! `cargo run --example host_agent`

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::thread;

use xunds::nds::{Counter, ModelSlot, Reader, RecordRead, Writer};
use xunds::ring::{PopError, QueueConfig, StatusCell, SubmitError, XuQueue};
use xunds::wire::nds::counters::NcCounter;
use xunds::wire::nds::model::ModelRecord;
use xunds::wire::nds::{c_str_lossy, c_string};
use xunds::wire::seq_id::XuId;
use xunds::NrtStatus;

const ITEMS: u64 = 1000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if let [_, cmd, path] = args.as_slice() {
        if cmd == "read" {
            return read_slab(Path::new(path));
        }
    }
    ring_between_two_threads()?;
    slab_across_processes()
}

/// A 32-slot ring of `u64` work items; the producer and worker halves move
/// to two threads.
fn ring_between_two_threads() -> Result<(), Box<dyn std::error::Error>> {
    let (mut producer, mut worker) =
        XuQueue::<u64>::owned(QueueConfig::new(XuId::new(0, 0, 0), 32))?;

    let executor = thread::spawn(move || {
        let mut sum = 0u64;
        let mut done = 0u64;
        while done < ITEMS {
            // `pop` writes the status into the slot (and the submitter's status
            // cell) before the completion is visible, then advances exec_head.
            match worker.pop(NrtStatus::SUCCESS) {
                Ok(p) => {
                    sum += p.item;
                    done += 1;
                }
                Err(PopError::Empty) => thread::yield_now(),
                Err(e) => panic!("pop: {e}"),
            }
        }
        sum
    });

    let mut last = None;
    let mut next = 0u64;
    while next < ITEMS {
        let status = Arc::new(StatusCell::new());
        match producer.submit(next, Some(status.clone())) {
            Ok(seq) => {
                producer.trigger_next()?;
                last = Some((seq, status));
                next += 1;
            }
            // Full: the executor has not caught up yet.
            Err(e) if e.error == SubmitError::Full => thread::yield_now(),
            Err(e) => return Err(e.error.into()),
        }
    }
    let (seq, status) = last.expect("submitted");
    while !producer.queue().is_completed(seq)? {
        thread::yield_now();
    }
    let sum = executor.join().expect("executor thread");
    assert_eq!(sum, ITEMS * (ITEMS - 1) / 2);
    assert_eq!(status.get(), Some(NrtStatus::SUCCESS));
    println!(
        "ring: {ITEMS} items through xu {:#06x}, last seq_id {:#x} completed with {}",
        seq.xu_id().0,
        seq.0,
        status.get().map(|s| s.to_string()).unwrap_or_default()
    );
    Ok(())
}

/// Write a slab file here; read it from a second process.
fn slab_across_processes() -> Result<(), Box<dyn std::error::Error>> {
    let path: PathBuf =
        std::env::temp_dir().join(format!("xunds-host-agent-{}.nds", std::process::id()));
    let writer = Writer::create(&path)?;
    writer.add(Counter::nc(0, NcCounter::InferCompleted)?, 41)?;
    writer.add(Counter::nc(0, NcCounter::InferCompleted)?, 1)?;
    let mut model = ModelRecord::EMPTY;
    model.model_id = 7;
    model.name = c_string("resnet-agent");
    let slot = writer.commit_model(&model)?;
    println!(
        "nds: wrote {} (model in slot {})",
        path.display(),
        slot.index()
    );

    let out = Command::new(std::env::current_exe()?)
        .arg("read")
        .arg(&path)
        .output()?;
    print!("{}", String::from_utf8_lossy(&out.stdout));
    drop(writer);
    let _ = std::fs::remove_file(&path);
    if !out.status.success() {
        return Err(format!(
            "reader process failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(())
}

/// The second process: map read-only, check, print.
fn read_slab(path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let reader = Reader::open(path)?;
    let done = reader.counter(Counter::nc(0, NcCounter::InferCompleted)?)?;
    assert_eq!(done, 42);
    let slot = ModelSlot::new(0)?;
    match reader.model(slot)? {
        RecordRead::Fresh(m) => {
            assert_eq!(m.model_id, 7);
            println!(
                "nds: pid {} read INFER_COMPLETED[0] = {done}, model {} `{}`",
                std::process::id(),
                m.model_id,
                c_str_lossy(&m.name)
            );
        }
        other => return Err(format!("model slot 0: {}", other.state_name()).into()),
    }
    Ok(())
}
