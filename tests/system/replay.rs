//! Deterministic runs: one seed gives one event stream and one
//! byte-identical binary trace file; another seed another schedule; `xunds
//! replay FILE` re-runs a recorded trace and reports identical (exit 0) or
//! the first differing block of the text view (exit 1), which `--print`
//! renders on demand. The snapshot pins a run's summary and the head of its
//! text view.

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use xunds::system::job::{self, JobConfig, JobReport};
use xunds::system::trace::{diff_files, BINARY_VERSION};
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
         trace_xxh3={}\nby_status={:?}\nlatency_ns p50={} p99={} max={}\n",
        r.executions,
        r.producer.attempts,
        r.completed_ok,
        r.completed_err,
        r.timed_out,
        r.producer.refused_full,
        r.producer.refused_unrecoverable,
        r.outputs_checked,
        r.outputs_wrong,
        r.virtual_ns.unwrap_or(0),
        r.trace_lines.unwrap_or(0),
        r.trace_xxh3.as_deref().unwrap_or(""),
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

/// The text view of the recorded trace at `path` (a replay that keeps it).
fn text_view(path: &PathBuf) -> String {
    let view = tmp("view.txt");
    let mut cfg = JobConfig::from_header(&header_of(path)).unwrap();
    cfg.replay = Some(path.clone());
    cfg.trace = Some(view.clone());
    cfg.slab = Some(tmp("view.nds"));
    let r = job::run(&cfg, &mut |_, _| {}).unwrap();
    let _ = std::fs::remove_file(&r.slab);
    assert!(r.replay.unwrap().is_identical());
    let text = std::fs::read_to_string(&view).unwrap();
    let _ = std::fs::remove_file(view);
    text
}

fn header_of(path: &PathBuf) -> xunds::system::trace::TraceHeader {
    let f = std::fs::File::open(path).unwrap();
    xunds::system::trace::TraceHeader::read(&mut std::io::BufReader::new(f)).unwrap()
}

/// The header, then the first lines after the setup (the first schedules,
/// the device run, the first completions) of a recorded trace's text view.
fn head(path: &PathBuf, n: usize) -> String {
    let text = text_view(path);
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
    assert_eq!(a.trace_xxh3, b.trace_xxh3);
    assert_ne!(a.trace_xxh3, c.trace_xxh3, "another seed, another schedule");
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
    // The digest pinned there is of this binary format, whose recording
    // replays identically (the text views above, `xunds replay` below).
    assert_eq!(header_of(&pa).version, BINARY_VERSION);
    assert_eq!(BINARY_VERSION, 5);

    // `xunds replay` agrees with the recording...
    let bin = env!("CARGO_BIN_EXE_xunds");
    let out = Command::new(bin).arg("replay").arg(&pa).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("identical"), "{text}");

    // ...and names the first differing block of a tampered one (a
    // checkpoint in the middle of the file flipped), which `--print` shows
    // after the text view up to there.
    let mut body = std::fs::read(&pa).unwrap();
    let header_len = body.iter().position(|&b| b == b'\n').unwrap() + 1;
    let records = (body.len() - header_len - 13) / 5;
    let k = records / 2;
    assert_eq!(body[header_len + 5 * k], b'C');
    body[header_len + 5 * k + 1] ^= 0x01;
    let tampered = tmp("tampered.trace");
    std::fs::write(&tampered, &body).unwrap();
    let first = 2 + 16 * k;
    for print in [false, true] {
        let mut cmd = Command::new(bin);
        cmd.arg("replay").arg(&tampered);
        if print {
            cmd.arg("--print");
        }
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}",
            &text[text.len().saturating_sub(3000)..]
        );
        let verdict = text.split("replay: ").nth(1).unwrap_or_default();
        assert!(
            verdict.contains(&format!("within lines {first}..={}", first + 15)),
            "{verdict}"
        );
        assert!(
            verdict.contains("recorded: checkpoint") && verdict.contains("replayed: checkpoint"),
            "{verdict}"
        );
        if print {
            let view: Vec<&str> = text.split("replay: ").next().unwrap().lines().collect();
            assert!(
                view[0].starts_with("xunds-trace v1 seed=11 "),
                "{}",
                view[0]
            );
            assert_eq!(view.len(), first + 15, "the view stops at the block");
        } else {
            assert!(text.starts_with("replay: "), "no view without --print");
        }
    }
    let out = Command::new(bin)
        .args(["replay", "--print"])
        .arg(&pa)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text.lines().count() as u64,
        a.trace_lines.unwrap() + 1,
        "the whole view, then the verdict"
    );
    assert!(text.ends_with(&format!(
        "replay: identical ({} lines)\n",
        a.trace_lines.unwrap()
    )));

    // A file that is not a trace is a usage error (exit 2), and so is a
    // text view (it holds no checkpoints).
    let junk = tmp("junk.trace");
    std::fs::write(&junk, "hello\n").unwrap();
    let out = Command::new(bin).arg("replay").arg(&junk).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let header = header_of(&pa);
    std::fs::write(
        &junk,
        format!(
            "{}\n",
            xunds::system::trace::TraceHeader::new(header.seed, header.config).line()
        ),
    )
    .unwrap();
    let out = Command::new(bin).arg("replay").arg(&junk).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("a text view"));

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
    let digest = doc["trace_xxh3"].as_str().expect("trace_xxh3");
    assert_eq!(digest.len(), 32, "{digest}"); // 128 bits
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
    let (code, out, _, took) = replay_within_err(file, limit);
    (code, out, took)
}

/// [`replay_within`], with stderr: (exit code, stdout, stderr, how long it
/// took).
fn replay_within_err(
    file: &PathBuf,
    limit: std::time::Duration,
) -> (Option<i32>, String, String, std::time::Duration) {
    use std::io::Read as _;
    let t0 = std::time::Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_xunds"))
        .arg("replay")
        .arg(file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Both pipes drained on threads, so a chatty child cannot block.
    let drain = |p: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut p) = p {
                let _ = p.read_to_string(&mut s);
            }
            s
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
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
    let took = t0.elapsed();
    (code, out.join().unwrap(), err.join().unwrap(), took)
}

/// A trace is its header, its records and one end record, and nothing
/// after: bytes after the end record (junk, or a second trace appended)
/// are refused with exit 2, naming their offset. They were ignored, and
/// `cat t t > tt; xunds replay tt` replayed "identical".
#[test]
fn bytes_after_the_end_record_are_refused() {
    let (_, recorded) = det(31, "trailing-src.trace");
    let body = std::fs::read(&recorded).unwrap();
    let _ = std::fs::remove_file(&recorded);
    let limit = std::time::Duration::from_secs(60);
    for (name, tail) in [("twice", body.clone()), ("junk", b"x".to_vec())] {
        let path = tmp(&format!("trailing-{name}.trace"));
        let mut bytes = body.clone();
        bytes.extend_from_slice(&tail);
        std::fs::write(&path, &bytes).unwrap();
        let (code, out, err, _) = replay_within_err(&path, limit);
        let _ = std::fs::remove_file(&path);
        assert_eq!(code, Some(2), "{name}: {out}{err}");
        assert!(err.contains("after the end record"), "{name}: {err}");
        assert!(
            err.contains(&format!("offset {}", body.len())),
            "{name}: {err}"
        );
    }
}

/// A FIFO is refused at once (exit 2), as `xunds nds dump` refuses one:
/// opening it for reading blocked until a writer came, for ever.
#[test]
fn a_fifo_is_refused_not_waited_on() {
    let fifo = tmp("replay.fifo");
    let _ = std::fs::remove_file(&fifo);
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path for the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (code, out, err, _) = replay_within_err(&fifo, std::time::Duration::from_secs(20));
    let _ = std::fs::remove_file(&fifo);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("not a regular file"), "{err}");
}

#[test]
fn a_hostile_header_is_refused_or_bounded_by_the_recorded_trace() {
    let (_, recorded) = det(21, "hostile-src.trace");
    let body = std::fs::read(&recorded).unwrap();
    let _ = std::fs::remove_file(&recorded);
    let nl = body.iter().position(|&b| b == b'\n').unwrap();
    let header = std::str::from_utf8(&body[..nl]).unwrap();
    let rest = &body[nl + 1..];
    assert!(header.contains(" executions=300 "), "{header}");
    let limit = std::time::Duration::from_secs(20);
    let with = |h: &str, rest: &[u8]| {
        let mut v = format!("{h}\n").into_bytes();
        v.extend_from_slice(rest);
        v
    };

    // A header claiming 2^64 - 1 executions: out of range, refused (exit 2).
    let huge = tmp("hostile-huge.trace");
    let h = header.replace(" executions=300 ", " executions=18446744073709551615 ");
    std::fs::write(&huge, with(&h, rest)).unwrap();
    let (code, out, took) = replay_within(&huge, limit);
    let _ = std::fs::remove_file(&huge);
    eprintln!("executions=u64::MAX header: exit {code:?} in {took:?}");
    assert_eq!(code, Some(2), "{out}");

    // 65536 executions claimed over a recording of 300 cut to its first
    // 125 checkpoints (2,000 events): the replay agrees checkpoint by
    // checkpoint up to the recorded end, then stops with exit 1.
    let cut = tmp("hostile-65536.trace");
    let h = header.replace(" executions=300 ", " executions=65536 ");
    std::fs::write(&cut, with(&h, &rest[..125 * 5])).unwrap();
    let (code, out, took) = replay_within(&cut, limit);
    let _ = std::fs::remove_file(&cut);
    eprintln!("executions=65536 header over 2,000 recorded events: exit {code:?} in {took:?}");
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("within lines 2002..=2017"),
        "stops at the recorded end: {out}"
    );
    assert!(out.contains("recorded: <end of trace>"), "{out}");
}

/// A binary trace of 5,000 executions of the default workload is well under
/// a megabyte (about 30 bytes an execution), and its replay agrees.
#[test]
fn a_5000_execution_trace_is_small_and_replays() {
    let path = tmp("5000.trace");
    let cfg = JobConfig {
        executions: 5_000,
        deterministic: true,
        trace: Some(path.clone()),
        slab: Some(tmp("5000.nds")),
        ..JobConfig::default()
    };
    let r = job::run(&cfg, &mut |_, _| {}).unwrap();
    let _ = std::fs::remove_file(&r.slab);
    assert_eq!(r.completed_ok, 5_000);
    let size = std::fs::metadata(&path).unwrap().len();
    eprintln!(
        "5,000 executions: {size} bytes ({} per execution), {} events",
        size / 5_000,
        r.trace_lines.unwrap() - 1
    );
    assert!(size < 1 << 20, "{size} bytes");
    assert!(size / 5_000 <= 100, "{size} bytes");
    let out = Command::new(env!("CARGO_BIN_EXE_xunds"))
        .arg("replay")
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("identical"), "{text}");
    let _ = std::fs::remove_file(path);
}

/// A run that only digests its stream and one that writes a trace file
/// build the same stream (the digest-only path appends a batch of HAL
/// operations at once; the file path checkpoints each): same digest, with
/// faults on and off.
#[cfg(feature = "trace-digest")]
#[test]
fn digest_only_and_trace_file_runs_have_one_digest() {
    use xunds::system::faults::FaultSpec;
    for (k, faults) in ["", "error:numerical@0.05,timeout@0.02"]
        .into_iter()
        .enumerate()
    {
        let run = |trace: Option<PathBuf>| {
            let cfg = JobConfig {
                executions: 400,
                vncs: 2,
                deterministic: true,
                faults: FaultSpec::parse(faults).expect("fault plan"),
                trace,
                slab: Some(tmp(&format!("digest-{k}.nds"))),
                ..JobConfig::default()
            };
            let r = job::run(&cfg, &mut |_, _| {}).expect("run");
            let _ = std::fs::remove_file(&r.slab);
            r.trace_xxh3.expect("digest")
        };
        let file = tmp(&format!("digest-{k}.trace"));
        let with_file = run(Some(file.clone()));
        let _ = std::fs::remove_file(&file);
        assert_eq!(run(None), with_file, "faults {faults}");
    }
}

/// A binary trace of an older format is refused with a clear error (its
/// checkpoints hash another event stream): it is recorded again.
#[test]
fn an_older_binary_trace_is_refused() {
    let path = tmp("v4.trace");
    let mut old = b"xunds-trace v4 seed=1 config=mode=deterministic executions=1\n".to_vec();
    old.extend_from_slice(&[b'E', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    std::fs::write(&path, old).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_xunds"))
        .arg("replay")
        .arg(&path)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("unsupported trace version \"v4\"") && err.contains("v5 binary traces"),
        "{err}"
    );
}
