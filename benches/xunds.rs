//! The one benchmark harness: xunds against its peers, in the same run.
//!
//! `cargo bench --bench xunds [-- FILTER]` runs every group whose name
//! contains FILTER. Each group prints its own rows and the ratio against its
//! peer, under a line naming the host (CPU model, family/model, CPUs), what a
//! cache-line round trip between CPU 0 and CPU 1 costs at that moment, and
//! the load average, and ends with the round trip measured again (flagged
//! when the pair changed during the group); the README copies the table and
//! this command, per host.

mod api;
#[path = "../tests/counting_alloc/mod.rs"]
mod counting_alloc;
mod det;
// The bench uses the heap-backed device memory only.
#[allow(dead_code)]
#[path = "../tests/device/support.rs"]
mod device_support;
mod engine;
mod harness;
mod nds;
mod pipeline;
mod ring;
mod ring_peers;

/// Counts heap allocations (the pipeline group reports them per execution;
/// the other groups' hot loops do not allocate, so it costs them nothing).
#[global_allocator]
static ALLOC: counting_alloc::CountingAlloc = counting_alloc::CountingAlloc::new();

fn main() {
    if let Ok(which) = std::env::var(ring::COUNT_CHILD) {
        ring::count_child(&which);
        return;
    }
    let filter = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_default();
    let groups: &[(&str, fn())] = &[
        ("nds_counter", nds::counter),
        ("nds_record", nds::record),
        ("ring_throughput", ring::throughput),
        ("ring_batched", ring::batched),
        ("ring_roundtrip", ring::roundtrip),
        ("ring_blocking", ring::blocking),
        ("ring_overhead", ring::overhead),
        ("ring_instructions", ring::instructions),
        ("engine_matmul", engine::engine),
        ("pipeline", pipeline::pipeline),
        ("pipeline_null", pipeline::pipeline_null),
        ("host_stages", pipeline::host_stages),
        ("det_vs_threaded", det::det_vs_threaded),
        ("api_execute", api::execute),
    ];
    println!("host: {}", harness::host());
    for (name, run) in groups {
        if name.contains(filter.as_str()) {
            println!("## {name}");
            let before = harness::line_round_trip_ns();
            println!(
                "  host: {}; CPU 0 <-> 1 line round trip {before:.0} ns; load average (1 min) at start: {}",
                harness::host(),
                harness::load1()
            );
            run();
            harness::pair_after(before);
        }
    }
}
