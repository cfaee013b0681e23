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

/// Run `xunds replay FILE`, killing it after `limit`: (exit code, stdout,
/// how long it took). `None` as the code: it had to be killed.
fn replay_within(
    file: &PathBuf,
    limit: std::time::Duration,
) -> (Option<i32>, String, std::time::Duration) {
    use std::io::Read as _;
    let t0 = std::time::Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_xunds"))
        .arg("replay")
        .arg(file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code();
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let mut out = String::new();
    let _ = child.stdout.take().unwrap().read_to_string(&mut out);
    (code, out, t0.elapsed())
}

#[test]
fn a_hostile_header_is_refused_or_bounded_by_the_recorded_trace() {
    let (_, recorded) = det(21, "hostile-src.trace");
    let body = std::fs::read_to_string(&recorded).unwrap();
    let _ = std::fs::remove_file(&recorded);
    let (header, rest) = body.split_once('\n').unwrap();
    assert!(header.contains(" executions=300 "), "{header}");
    let limit = std::time::Duration::from_secs(20);

    // A header claiming 2^64 - 1 executions: out of range, refused (exit 2).
    let huge = tmp("hostile-huge.trace");
    let h = header.replace(" executions=300 ", " executions=18446744073709551615 ");
    std::fs::write(&huge, format!("{h}\n{rest}")).unwrap();
    let (code, out, took) = replay_within(&huge, limit);
    let _ = std::fs::remove_file(&huge);
    eprintln!("executions=u64::MAX header: exit {code:?} in {took:?}");
    assert_eq!(code, Some(2), "{out}");

    // 65536 executions claimed over a recording of 300 (cut to its first
    // 2,000 lines): the replay agrees line by line up to the recorded end,
    // then stops with exit 1, keeping no more than the recording plus a line.
    let cut = tmp("hostile-65536.trace");
    let h = header.replace(" executions=300 ", " executions=65536 ");
    let kept_lines: Vec<&str> = rest.lines().take(2_000).collect();
    std::fs::write(&cut, format!("{h}\n{}\n", kept_lines.join("\n"))).unwrap();
    let recorded_len = std::fs::metadata(&cut).unwrap().len();
    let (code, out, took) = replay_within(&cut, limit);
    let _ = std::fs::remove_file(&cut);
    eprintln!("executions=65536 header over 2,001 recorded lines: exit {code:?} in {took:?}");
    let kept = out
        .split("replayed trace kept at ")
        .nth(1)
        .map(|k| PathBuf::from(k.trim().trim_end_matches(')')));
    let kept_len = kept
        .as_ref()
        .and_then(|k| std::fs::metadata(k).ok())
        .map_or(0, |m| m.len());
    if let Some(k) = &kept {
        let _ = std::fs::remove_file(k);
    }
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("line 2002"),
        "stops at the recorded end: {out}"
    );
    assert!(out.contains("<end of trace>"), "{out}");
    assert!(
        kept_len <= recorded_len + 4096,
        "replay kept {kept_len} bytes for a {recorded_len}-byte recording"
    );
}
