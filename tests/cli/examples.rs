//! Run each example the README lists and check that it succeeds and says
//! what it did. `cargo test` builds the examples before it runs the tests;
//! a run that did not build them (`cargo test --test cli` alone) skips
//! with a line saying so.

use std::path::PathBuf;
use std::process::Command;

fn example(name: &str) -> Option<PathBuf> {
    // target/<profile>/deps/cli-<hash> -> target/<profile>/examples/NAME
    let exe = std::env::current_exe().ok()?;
    let p = exe.parent()?.parent()?.join("examples").join(name);
    p.exists().then_some(p)
}

fn run(name: &str, expect: &[&str]) {
    let Some(bin) = example(name) else {
        eprintln!(
            "skipped: example `{name}` not built (run `cargo test`, which builds the examples)"
        );
        return;
    };
    let out = Command::new(&bin).output().expect("spawn example");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{name} failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    for e in expect {
        assert!(stdout.contains(e), "{name}: no `{e}` in\n{stdout}");
    }
}

#[test]
fn host_agent() {
    run(
        "host_agent",
        &[
            "ring: 1000 items",
            "read INFER_COMPLETED[0] = 42, model 7 `resnet-agent`",
        ],
    );
}

#[test]
fn async_api() {
    run(
        "async_api",
        &[
            "schedule + poll",
            // Signalled, or completed before the arm: which one depends on
            // the worker's timing, and both are the API's answer.
            "completion fd ",
            "status NRT_SUCCESS",
            "3 executions completed",
        ],
    );
}

#[test]
fn slab_monitor() {
    run(
        "slab_monitor",
        &[
            "mapped read-only",
            "INFER_COMPLETED 4",
            "model slot 1: id 1 `mlp`",
        ],
    );
}
