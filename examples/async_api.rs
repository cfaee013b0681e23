//! The async API of the simulated system: start a `System` over the Linux
//! HAL, load a model, schedule an execution and poll it, wait for one by its
//! completion fd, run one blocking `execute`, and read the typed response.
//!
//! `cargo run --example async_api`

use std::time::Duration;

use xunds::hal::eventfd::{EventFd, Wait};
use xunds::hal::linux::LinuxHal;
use xunds::ring::Armed;
use xunds::system::{MlpSpec, ScheduleOpts, System, SystemConfig};
use xunds::NrtStatus;

const TIMEOUT: Duration = Duration::from_secs(10);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Two NeuronCores (= two XU rings, two workers), an anonymous NDS slab.
    let sys = System::start(LinuxHal::new(), SystemConfig::new(2))?;

    // Load: the example MLP, placed on every core.
    let spec = MlpSpec::EXAMPLE;
    let model = sys.load_mlp(&spec, "mlp")?;
    println!(
        "loaded model {} `{}`: {} inputs, {} outputs, {} MACs",
        model.id(),
        model.name(),
        model.input_len(),
        model.output_len(),
        model.macs()
    );
    let input = spec.example_input(1);

    // Schedule, then poll: the status cell is written before completion is
    // observable, the outputs are in the buffer.
    let opts = ScheduleOpts::for_model(&model);
    let (status, out) = (opts.status.clone(), opts.out.clone());
    let seq = nrt(sys.schedule(0, &model, &input, opts))?;
    while !nrt(sys.is_completed(seq))? {
        std::thread::yield_now();
    }
    let status = status.and_then(|s| s.get());
    let outputs = out.map(|o| o.to_vec()).unwrap_or_default();
    assert_eq!(status, Some(NrtStatus::SUCCESS));
    assert_eq!(outputs, model.reference(&input));
    println!(
        "schedule + poll: seq_id {:#x} on xu {} -> {}",
        seq.0,
        seq.vnc_id(),
        NrtStatus::SUCCESS
    );

    // Completion by fd: arm a caller-owned eventfd, block on it.
    let ev = EventFd::new()?;
    let seq = nrt(sys.schedule(1, &model, &input, ScheduleOpts::default()))?;
    match nrt(sys.arm(seq, &ev))? {
        Armed::Installed => {
            let w = ev.wait(TIMEOUT)?;
            assert!(
                matches!(w, Wait::Signalled(_)),
                "no completion within {TIMEOUT:?}: {w:?}"
            );
            println!("completion fd {}: seq_id {:#x} signalled", ev.raw(), seq.0);
        }
        Armed::AlreadyComplete => println!(
            "completion fd {}: seq_id {:#x} completed before arm",
            ev.raw(),
            seq.0
        ),
    }
    assert!(nrt(sys.is_completed(seq))?);
    println!(
        "last completed on xu 1: {:#x}",
        nrt(sys.last_completed(1))?.0
    );

    // Execute: schedule and wait in one call; the typed response is the
    // work item's infer_resp_t as the worker wrote it.
    let e = nrt(sys.execute(0, &model, &input, TIMEOUT))?;
    let r = &e.response;
    println!(
        "execute: {} outputs, status {}, device {} ns, {} MACs, {} NQ records",
        e.outputs.len(),
        e.status,
        r.device_end_ns.saturating_sub(r.device_start_ns),
        r.mac_count,
        r.nq_records
    );

    sys.unload_model(model)?;
    let report = sys.shutdown()?;
    let completed: u64 = report.workers.iter().map(|w| w.completed).sum();
    println!("shutdown: {completed} executions completed");
    Ok(())
}

/// The calls that mirror libnrt's return an `NRT_STATUS` on refusal; turn
/// it into an error with its name for `?`.
fn nrt<T>(r: Result<T, NrtStatus>) -> Result<T, String> {
    r.map_err(|s| format!("refused: {s}"))
}
