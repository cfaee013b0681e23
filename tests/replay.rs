//! Deterministic runs: one seed gives one byte-identical trace file; another
//! seed another schedule; `xunds replay FILE` re-runs a recorded trace and
//! reports identical (exit 0) or the first differing line (exit 1). The
//! snapshot pins a run's summary and the head of its trace.

mod common;

use std::path::PathBuf;
use std::process::Command;

use xunds::system::job::{self, JobConfig, JobReport};
use xunds::system::trace::diff_files;
use xunds::wire::nds::counters::NcCounter;

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("xunds-replay-test-{}-{name}", std::process::id()))
}

fn det(seed: u64, trace: &str) -> (JobReport, PathBuf) {
    let path = tmp(trace);
    let cfg = JobConfig {
        executions: 300,
        vncs: 2,
        models: 2,
        seed,
        deterministic: true,
        trace: Some(path.clone()),
        slab: Some(tmp(&format!("{trace}.nds"))),
        ..JobConfig::default()
    };
    let r = job::run(&cfg, &mut |_, _| {}).unwrap();
    let _ = std::fs::remove_file(&r.slab);
    (r, path)
}

fn summary(r: &JobReport) -> String {
    let mut s = format!(
        "executions={} submitted={} ok={} err={} timed_out={} refused_full={} refused_unrecoverable={}\n\
         outputs_checked={} outputs_wrong={} virtual_ns={} trace_lines={}\n\
         trace_sha256={}\nby_status={:?}\nlatency_ns p50={} p99={} max={}\n",
        r.executions,
        r.submitted,
        r.completed_ok,
        r.completed_err,
        r.timed_out,
        r.refused_full,
        r.refused_unrecoverable,
        r.outputs_checked,
        r.outputs_wrong,
        r.virtual_ns.unwrap_or(0),
        r.trace_lines.unwrap_or(0),
        r.trace_sha256.as_deref().unwrap_or(""),
        r.by_status,
        r.latency.quantile(0.5),
        r.latency.quantile(0.99),
        r.latency.max(),
    );
    for c in &r.per_core {
        s.push_str(&format!("core {}:", c.core));
        for k in NcCounter::ALL {
            let v = c.get(k);
            if v != 0 {
                s.push_str(&format!(" {}={v}", k.name()));
            }
        }
        s.push('\n');
    }
    s
}

/// The header, then the first lines after the setup (the first schedules,
/// the device run, the first completions).
fn head(path: &PathBuf, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let mut out = vec![lines.next().unwrap().to_string()];
    out.extend(
        lines
            .filter(|l| !l.contains(" setup "))
            .take(n)
            .map(str::to_string),
    );
    out.join("\n")
}

#[test]
fn one_seed_one_trace_and_replay_agrees() {
    let (a, pa) = det(11, "a.trace");
    let (b, pb) = det(11, "b.trace");
    let (c, pc) = det(12, "c.trace");
    assert!(diff_files(&pa, &pb).unwrap().is_identical());
    assert_eq!(a.trace_sha256, b.trace_sha256);
    assert_ne!(
        a.trace_sha256, c.trace_sha256,
        "another seed, another schedule"
    );
    assert!(!diff_files(&pa, &pc).unwrap().is_identical());
    for r in [&a, &b, &c] {
        assert_eq!(r.completed_ok, 300);
        common::check_counters(r, 32);
    }

    // The summary of this run, and the whole trace (setup aside) of a run
    // of one execution: the funnel, the device, the harvest, the publisher.
    let one = tmp("one.trace");
    let cfg = JobConfig {
        executions: 1,
        vncs: 1,
        models: 1,
        seed: 11,
        deterministic: true,
        trace: Some(one.clone()),
        slab: Some(tmp("one.nds")),
        ..JobConfig::default()
    };
    let r1 = job::run(&cfg, &mut |_, _| {}).unwrap();
    let _ = std::fs::remove_file(&r1.slab);
    assert_eq!(r1.completed_ok, 1);
    insta::assert_snapshot!(
        "det_run_seed11",
        format!("{}\n{}", summary(&a), head(&one, 400))
    );
    let _ = std::fs::remove_file(one);

    // `xunds replay` agrees with the recording...
    let bin = env!("CARGO_BIN_EXE_xunds");
    let out = Command::new(bin).arg("replay").arg(&pa).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("identical"), "{text}");

    // ...and names the first line of a tampered one.
    let body = std::fs::read_to_string(&pa).unwrap();
    let mut lines: Vec<&str> = body.lines().collect();
    let k = lines.len() / 2;
    let changed = lines[k].replace("t=", "t=9");
    lines[k] = &changed;
    let tampered = tmp("tampered.trace");
    std::fs::write(&tampered, lines.join("\n") + "\n").unwrap();
    let out = Command::new(bin)
        .arg("replay")
        .arg(&tampered)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains(&format!("line {}", k + 1)), "{text}");
    assert!(
        text.contains("recorded:") && text.contains("replayed:"),
        "{text}"
    );
    if let Some(kept) = text.split("replayed trace kept at ").nth(1) {
        let _ = std::fs::remove_file(kept.trim().trim_end_matches(')'));
    }

    // A file that is not a trace is a usage error (exit 2).
    let junk = tmp("junk.trace");
    std::fs::write(&junk, "hello\n").unwrap();
    let out = Command::new(bin).arg("replay").arg(&junk).output().unwrap();
    assert_eq!(out.status.code(), Some(2));

    for p in [pa, pb, pc, tampered, junk] {
        let _ = std::fs::remove_file(p);
    }
}

#[test]
fn deterministic_json_carries_the_digest() {
    let bin = env!("CARGO_BIN_EXE_xunds");
    let slab = tmp("json.nds");
    let out = Command::new(bin)
        .args([
            "run",
            "--deterministic",
            "--executions",
            "50",
            "--vncs",
            "1",
            "--models",
            "1",
            "--json",
            "--slab",
        ])
        .arg(&slab)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    for (key, want) in [
        ("executions", 50),
        ("completed_ok", 50),
        ("completed_err", 0),
        ("timed_out", 0),
        ("outputs_checked", 50),
        ("outputs_wrong", 0),
    ] {
        assert_eq!(doc[key], want, "{key} in {doc}");
    }
    assert!(doc["refused_full"].is_u64(), "{doc}");
    assert!(doc["exec_per_sec"].is_number(), "{doc}");
    assert!(doc["latency_ns"]["p50"].is_u64(), "{doc}");
    assert!(doc["slab"].is_string(), "{doc}");
    let digest = doc["trace_sha256"].as_str().expect("trace_sha256");
    assert_eq!(digest.len(), 64, "{digest}");
    assert!(digest.bytes().all(|b| b.is_ascii_hexdigit()), "{digest}");
    // The slab is left behind for another process: `xunds nds dump` reads it.
    let dump = Command::new(bin)
        .args(["nds", "dump"])
        .arg(&slab)
        .arg("--json")
        .output()
        .unwrap();
    assert!(dump.status.success());
    let d: serde_json::Value = serde_json::from_slice(&dump.stdout).expect("one JSON document");
    assert_eq!(d["cores"]["0"]["INFER_COMPLETED"], 50, "{d}");
    assert_eq!(d["cores"]["0"]["MODEL_LOAD_COUNT"], 1, "{d}");
    let _ = std::fs::remove_file(slab);
}
