//! `xunds monitor` from another process: the neuron-monitor JSON document
//! (shape snapshot, per-period deltas that add up to the run's count), the
//! Prometheus endpoint (parsed with a real exposition parser, compared with
//! the slab's counters read through the library reader), the configuration
//! file, and the faults (non-slab files, a slab mid-commit, torn records, a
//! slab truncated or deleted while watched, a writer that exits): every one
//! is an `error` string, never a dead monitor.

use crate::nds_support;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdout, Stdio};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nds_support::{serving_addr, xunds, TempSlab};
use serde_json::Value;
use xunds::nds::{Counter, Reader, RecordSpan, Slab as _, SlabMut as _, Writer};
use xunds::wire::nds::c_string;
use xunds::wire::nds::counters::NcCounter;
use xunds::wire::nds::model::{MemLocation, MemSlot, ModelRecord};
use xunds::wire::nds::process::{ProcessInfo, VersionInfo};

/// Every value replaced by its type, keys kept (arrays by their first
/// element): the document's shape, for a snapshot.
fn shape(v: &Value) -> Value {
    match v {
        Value::Null => Value::Null,
        Value::Bool(_) => "bool".into(),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(a) => Value::Array(a.iter().take(1).map(shape).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| {
                    // Core and vCPU indexes are data, not shape.
                    let k = if k.bytes().all(|b| b.is_ascii_digit()) {
                        "<index>".to_string()
                    } else {
                        k.clone()
                    };
                    (k, shape(v))
                })
                .collect(),
        ),
    }
}

fn once(args: &[&str]) -> Value {
    let (code, doc, err) = once_with_status(args);
    assert_eq!(code, Some(0), "monitor failed: {err}");
    doc
}

/// `xunds monitor --once ARGS`: its exit code, its one document, its stderr.
fn once_with_status(args: &[&str]) -> (Option<i32>, Value, String) {
    let out = xunds(["monitor", "--once"].iter().chain(args))
        .output()
        .expect("run xunds monitor");
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "one document per line: {text}");
    let doc = serde_json::from_str(&text).expect("valid JSON");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), doc, err)
}

fn runtimes(doc: &Value) -> &Vec<Value> {
    doc["neuron_runtime_data"]
        .as_array()
        .expect("neuron_runtime_data is an array")
}

/// A slab this process writes: counters on cores 0 and 2, one model record,
/// process info tagged `monitor-test`.
fn populated(slab: &TempSlab) -> Writer {
    let w = Writer::create(slab.path()).unwrap();
    let c = |core, k| Counter::nc(core, k).unwrap();
    w.add(c(0, NcCounter::InferCompleted), 40).unwrap();
    w.add(c(2, NcCounter::InferCompleted), 2).unwrap();
    w.add(c(0, NcCounter::InferenceCount), 41).unwrap();
    w.add(c(0, NcCounter::InferCompletedWithNumErr), 1).unwrap();
    w.add(c(0, NcCounter::ErrNumerical), 1).unwrap();
    w.add(c(0, NcCounter::LatencyTotal), 41_000).unwrap();
    w.add(c(0, NcCounter::LatencyDevice), 4_100).unwrap();
    w.add(c(2, NcCounter::MemUsageCodeDevice), 8192).unwrap();
    let none = VersionInfo {
        major: 0,
        minor: 0,
        build: 0,
    };
    w.publish_process_info(&ProcessInfo {
        hash: 0,
        framework_type: 0,
        tag: c_string("monitor-test"),
        framework_version: none,
        fal_version: none,
        runtime_version: none,
    })
    .unwrap();
    let mut m = ModelRecord {
        model_id: 7,
        nc_index: 2,
        name: c_string("mlp-x"),
        ..ModelRecord::EMPTY
    };
    m.usage_mut(MemLocation::Device, MemSlot::Code).total_size = 8192;
    w.commit_model(&m).unwrap();
    w
}

#[test]
fn no_slab_is_a_valid_document_with_no_runtimes() {
    let dir = std::env::temp_dir().join(format!("xunds-monitor-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let doc = once(&["--dir", dir.to_str().unwrap()]);
    let _ = std::fs::remove_dir(&dir);
    assert!(runtimes(&doc).is_empty());
    // No driver: an object with no device and an error, never null (the
    // companion indexes it).
    let hw = &doc["system_data"]["neuron_hw_counters"];
    assert_eq!(hw["neuron_devices"], serde_json::json!([]));
    assert!(hw["error"].as_str().unwrap().contains("no Neuron driver"));
    assert!(hw["period"].as_f64().unwrap() > 0.0);
    assert_eq!(doc["instance_info"]["instance_id"], "");
    assert!(
        doc["system_data"]["memory_info"]["memory_total_bytes"]
            .as_u64()
            .unwrap()
            > 0
    );
    insta::assert_json_snapshot!("empty_document_shape", shape(&doc));
}

#[test]
fn a_live_slab_reads_as_neuron_monitor_reports_it() {
    let slab = TempSlab::new("monitor-shape");
    let _w = populated(&slab);
    let doc = once(&[slab.path().to_str().unwrap()]);
    let rt = &runtimes(&doc)[0];
    // This test process writes the slab, so it is the runtime's pid.
    assert_eq!(rt["pid"], std::process::id());
    assert_eq!(rt["neuron_runtime_tag"], "monitor-test");
    assert_eq!(rt["error"], "");
    let ex = &rt["report"]["execution_stats"];
    // The first report counts from zero: everything so far.
    assert_eq!(ex["execution_summary"]["completed"], 42);
    assert_eq!(ex["execution_summary"]["completed_with_num_err"], 1);
    assert_eq!(ex["error_summary"]["numerical"], 1);
    assert_eq!(ex["latency_stats"]["total_latency"], Value::Null);
    assert_eq!(ex["latency_stats"]["mean"]["total_latency"], 1e-6);
    let cores = rt["report"]["neuroncore_counters"]["neuroncores_in_use"]
        .as_object()
        .unwrap();
    assert_eq!(cores.keys().collect::<Vec<_>>(), ["0", "2"]);
    let mem = &rt["report"]["memory_used"];
    assert_eq!(mem["neuron_runtime_used_bytes"]["neuron_device"], 8192);
    assert_eq!(
        mem["neuron_runtime_used_bytes"]["usage_breakdown"]["neuroncore_memory_usage"]["2"]
            ["model_code"],
        8192
    );
    assert_eq!(mem["loaded_models"][0]["name"], "mlp-x");
    assert_eq!(
        mem["loaded_models"][0]["subgraphs"]["sg_00"]["neuroncore_index"],
        2
    );
    assert_eq!(mem["error"], "");
    insta::assert_json_snapshot!("runtime_document_shape", shape(&doc));
}

/// A model record's sizes are another process's bytes: totals that would
/// pass 2^64 read as `u64::MAX`, never a wrapped small number (nor, in a
/// debug build, a panic).
#[test]
fn model_sizes_that_overflow_a_sum_saturate() {
    let slab = TempSlab::new("monitor-huge");
    let w = populated(&slab);
    let mut m = ModelRecord {
        model_id: 8,
        nc_index: 0,
        name: c_string("huge"),
        ..ModelRecord::EMPTY
    };
    for slot in [
        MemSlot::Code,
        MemSlot::Scratchpad,
        MemSlot::Misc,
        MemSlot::Tensors,
    ] {
        m.usage_mut(MemLocation::Host, slot).total_size = u64::MAX - 1;
        m.usage_mut(MemLocation::Device, slot).total_size = u64::MAX / 2 + 1;
    }
    w.commit_model(&m).unwrap();
    let doc = once(&[slab.path().to_str().unwrap()]);
    let models = &runtimes(&doc)[0]["report"]["memory_used"]["loaded_models"];
    let huge = models
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "huge")
        .unwrap();
    let mem = &huge["subgraphs"]["sg_00"]["memory_used_bytes"];
    assert_eq!(mem["host"], u64::MAX);
    assert_eq!(mem["neuron_device"], u64::MAX);
    let b = &mem["usage_breakdown"];
    assert_eq!(b["host"]["application_memory"], u64::MAX);
    assert_eq!(b["neuron_device"]["runtime_memory"], u64::MAX);
    assert_eq!(b["neuron_device"]["tensors"], u64::MAX / 2 + 1);
}

/// Lines of a child's stdout, on a channel.
fn lines(out: ChildStdout) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines() {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    rx
}

fn spawn_monitor(args: &[&str]) -> Child {
    xunds(["monitor"].iter().chain(args))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn xunds monitor")
}

/// SIGTERM, then the exit status must be a clean 0 (not a signal).
fn stop(mut child: Child) {
    // SAFETY: kill(2) on our own child's pid; no memory is involved.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(0), "monitor ended with {st:?}");
}

fn next_doc(rx: &mpsc::Receiver<String>) -> Value {
    let l = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("a document within 20 s");
    serde_json::from_str(&l).expect("valid JSON line")
}

fn run_json(slab: &Path, executions: &str) -> Value {
    run_json_with(slab, executions, &[])
}

/// `run_json` with more flags (`--rate R` makes the run's length the
/// rate's, not the machine's: a run must span several monitor periods).
fn run_json_with(slab: &Path, executions: &str, more: &[&str]) -> Value {
    let out = xunds([
        "run",
        "--executions",
        executions,
        "--vncs",
        "2",
        "--json",
        "--slab",
    ])
    .arg(slab)
    .args(more)
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn per_period_completed_deltas_add_up_to_the_runs_count() {
    let slab = TempSlab::new("monitor-deltas");
    let p = slab.path().to_str().unwrap().to_string();
    let mut mon = spawn_monitor(&["--period", "200ms", &p]);
    let rx = lines(mon.stdout.take().unwrap());
    // Before the run: the entry is there, with an error (no file yet).
    let first = next_doc(&rx);
    assert!(!runtimes(&first)[0]["error"].as_str().unwrap().is_empty());
    let run = run_json(slab.path(), "20000");
    // Let the monitor see the final counters for a few periods.
    let done = Instant::now();
    let mut docs = vec![first];
    while done.elapsed() < Duration::from_millis(900) {
        docs.push(next_doc(&rx));
    }
    stop(mon);
    while let Ok(l) = rx.recv_timeout(Duration::from_millis(500)) {
        docs.push(serde_json::from_str(&l).unwrap());
    }
    let completed: Vec<u64> = docs
        .iter()
        .map(|d| {
            runtimes(d)[0]["report"]["execution_stats"]["execution_summary"]["completed"]
                .as_u64()
                .unwrap()
        })
        .collect();
    let sum: u64 = completed.iter().sum();
    let errors: Vec<String> = docs.iter().map(error_of).collect();
    assert_eq!(
        sum,
        run["completed_ok"].as_u64().unwrap(),
        "deltas {completed:?}, errors {errors:#?}"
    );
    // After the run every period adds nothing.
    assert_eq!(*completed.last().unwrap(), 0, "deltas {completed:?}");
}

/// Two runs one after the other on a watched slab (`first`, then
/// `second` executions, with `flags`): the monitor's deltas add up to both
/// runs' counts.
fn two_runs_on_one_slab(name: &str, first: &str, second: &str, flags: &[&str]) {
    let slab = TempSlab::new(name);
    let p = slab.path().to_str().unwrap().to_string();
    let mut mon = spawn_monitor(&["--period", "200ms", &p]);
    let rx = lines(mon.stdout.take().unwrap());
    let completed = |d: &Value| {
        runtimes(d)[0]["report"]["execution_stats"]["execution_summary"]["completed"]
            .as_u64()
            .unwrap()
    };
    let ok = |r: Value| r["completed_ok"].as_u64().unwrap();
    let mut docs = vec![next_doc(&rx)];
    let want1 = ok(run_json_with(slab.path(), first, flags));
    // Counts a slab holds when it is re-created are gone; let the monitor
    // read the first run's final counters before the second run starts.
    let t = Instant::now();
    while docs.iter().map(completed).sum::<u64>() < want1 {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the first run's count never showed up"
        );
        docs.push(next_doc(&rx));
    }
    let want2 = ok(run_json_with(slab.path(), second, flags));
    let done = Instant::now();
    while done.elapsed() < Duration::from_millis(1200) {
        docs.push(next_doc(&rx));
    }
    stop(mon);
    while let Ok(l) = rx.recv_timeout(Duration::from_millis(500)) {
        docs.push(serde_json::from_str(&l).unwrap());
    }
    let sum: u64 = docs.iter().map(completed).sum();
    let trail: Vec<(u64, String)> = docs.iter().map(|d| (completed(d), error_of(d))).collect();
    assert_eq!(
        sum,
        want1 + want2,
        "per document (completed, error): {trail:#?}"
    );
}

/// The second run is smaller, so its counters are below the first's
/// whenever the monitor looks.
#[test]
fn a_slab_re_created_by_a_second_run_counts_from_zero_again() {
    two_runs_on_one_slab("monitor-rerun", "30000", "10000", &[]);
}

/// A second run that goes past the first run's count before the monitor
/// looks again is a new runtime counting from zero too: the new writer,
/// not counters going back, tells it.
#[test]
fn a_bigger_second_run_on_a_watched_slab_counts_from_zero() {
    two_runs_on_one_slab("monitor-bigger", "3000", "9000", &["--deterministic"]);
}

fn scrape(url_line: &str) -> String {
    let addr = url_line
        .split("http://")
        .nth(1)
        .and_then(|s| s.strip_suffix("/metrics"))
        .expect("serving line");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let (head, body) = resp.split_once("\r\n\r\n").expect("HTTP response");
    assert!(head.starts_with("HTTP/1."), "{head}");
    assert!(head.contains(" 200 "), "{head}");
    body.to_string()
}

#[test]
fn a_scrape_after_the_run_equals_the_slab_counters() {
    let slab = TempSlab::new("monitor-prom");
    let p = slab.path().to_str().unwrap().to_string();
    let mut mon = spawn_monitor(&["--prometheus", ":0", "--quiet", "--period", "200ms", &p]);
    let mut err = BufReader::new(mon.stderr.take().unwrap());
    let mut serving = String::new();
    err.read_line(&mut serving).unwrap();
    assert!(serving.contains("http://127.0.0.1:"), "{serving}");
    // Open loop at 20,000/s: about a second, five monitor periods, however
    // fast the machine runs the pipeline (a closed-loop run of 20,000 can
    // end inside one period, leaving no period with executions in it).
    run_json_with(slab.path(), "20000", &["--rate", "20000"]);
    let body = scrape(serving.trim());
    stop(mon);
    let scrape =
        prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).expect("parses");

    // The slab's cumulative counters through the library's reader.
    let snap = Reader::open(slab.path()).unwrap().snapshot().unwrap();
    let sum = |k: NcCounter| -> f64 {
        snap.counters
            .nc
            .iter()
            .map(|row| row[k as usize])
            .sum::<u64>() as f64
    };
    let value = |metric: &str, label: &str, v: &str| -> f64 {
        let s = scrape
            .samples
            .iter()
            .find(|s| s.metric == metric && s.labels.get(label) == Some(v))
            .unwrap_or_else(|| panic!("{metric}{{{label}={v:?}}} missing"));
        match s.value {
            prometheus_parse::Value::Counter(x) | prometheus_parse::Value::Gauge(x) => x,
            ref other => panic!("{metric}: {other:?}"),
        }
    };
    for (status, k) in [
        ("completed", NcCounter::InferCompleted),
        ("completed_with_err", NcCounter::InferCompletedWithErr),
        (
            "completed_with_num_err",
            NcCounter::InferCompletedWithNumErr,
        ),
        ("timed_out", NcCounter::InferTimedOut),
        ("incorrect_input", NcCounter::InferIncorrectInput),
        ("failed_to_queue", NcCounter::InferFailedToQueue),
    ] {
        assert_eq!(
            value("execution_status_total", "status_type", status),
            sum(k),
            "{status}"
        );
    }
    assert!(sum(NcCounter::InferCompleted) > 0.0);
    for (class, k) in [
        ("generic", NcCounter::ErrGeneric),
        ("hardware", NcCounter::ErrHw),
    ] {
        assert_eq!(
            value("execution_errors_total", "error_type", class),
            sum(k),
            "{class}"
        );
    }
    let device: f64 = [
        NcCounter::MemUsageCodeDevice,
        NcCounter::MemUsageTensorsDevice,
        NcCounter::MemUsageConstantsDevice,
        NcCounter::MemUsageScratchpadDevice,
        NcCounter::MemUsageMiscDevice,
    ]
    .iter()
    .map(|k| sum(*k))
    .sum();
    assert_eq!(
        value(
            "neuron_runtime_memory_used_bytes",
            "memory_location",
            "neuron_device"
        ),
        device
    );

    // The families and their label names (values are data). The runtime's
    // vCPU ratio needs its pid, which a short run may not live long enough
    // to be found by; it is left out so the snapshot does not depend on it.
    let mut families: Vec<String> = scrape
        .samples
        .iter()
        .filter(|s| s.metric != "neuron_runtime_vcpu_usage_ratio")
        .map(|s| {
            let mut l: Vec<&String> = s.labels.keys().collect();
            l.sort();
            let kind = match s.value {
                prometheus_parse::Value::Counter(_) => "counter",
                prometheus_parse::Value::Gauge(_) => "gauge",
                _ => "other",
            };
            format!(
                "{} {kind} {{{}}}",
                s.metric,
                l.iter().map(|x| x.as_str()).collect::<Vec<_>>().join(",")
            )
        })
        .collect();
    families.sort();
    families.dedup();
    insta::assert_snapshot!("metric_families", families.join("\n"));
}

#[test]
fn bad_files_are_errors_in_the_document_not_crashes() {
    let dir = std::env::temp_dir().join(format!("xunds-monitor-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let garbage = dir.join("garbage");
    std::fs::write(&garbage, vec![0x55u8; 256 * 1024]).unwrap();
    let short = dir.join("short");
    std::fs::write(&short, vec![0u8; 100]).unwrap();
    // Laid out but not committed: a slab mid-commit.
    let zero = dir.join("zero");
    std::fs::write(&zero, vec![0u8; 256 * 1024]).unwrap();
    let missing = dir.join("missing");
    let paths = [&garbage, &short, &zero, &missing, &dir];
    let args: Vec<&str> = paths.iter().map(|p| p.to_str().unwrap()).collect();
    // The document still comes, each error in it; the reasons are on
    // stderr too, one line each, and the exit is 1.
    let (code, doc, err) = once_with_status(&args);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(err.lines().count(), 5, "{err}");
    let errors: Vec<String> = runtimes(&doc)
        .iter()
        .map(|r| r["error"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(errors.len(), 5);
    assert!(errors[0].contains("bad magic"), "{}", errors[0]);
    assert!(errors[1].contains("too small"), "{}", errors[1]);
    assert!(errors[2].contains("not committed"), "{}", errors[2]);
    assert!(errors[3].contains("No such file"), "{}", errors[3]);
    assert!(errors[4].contains("not a regular file"), "{}", errors[4]);
    for r in runtimes(&doc) {
        // Every group is there, with the same error.
        assert_eq!(r["report"]["execution_stats"]["error"], r["error"]);
        assert_eq!(
            r["report"]["execution_stats"]["execution_summary"]["completed"],
            0
        );
    }
}

/// A FIFO where a slab should be (anyone can leave one in /dev/shm under a
/// slab's name) is refused as not a regular file by the monitor, a
/// directory scan and `nds dump`, rather than opened for reading, which
/// waits for a writer forever.
#[test]
fn a_fifo_is_refused_not_waited_on() {
    let dir = std::env::temp_dir().join(format!("xunds-monitor-fifo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("xunds-1.nds");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo reads it only.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let (f, d) = (fifo.to_str().unwrap(), dir.to_str().unwrap());
    for args in [
        vec!["monitor", "--once", f],
        vec!["monitor", "--once", "--dir", d],
        vec!["nds", "dump", f],
    ] {
        let scan = args.contains(&"--dir");
        let mut child = xunds(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if t0.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                let _ = std::fs::remove_dir_all(&dir);
                panic!("{args:?} waits on the FIFO");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if scan {
            // A directory scan reports only the slabs it can read.
            let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert!(runtimes(&doc).is_empty(), "{doc}");
        } else {
            assert!(all.contains("not a regular file"), "{args:?}: {all}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_torn_model_record_is_named_in_memory_used() {
    let slab = TempSlab::new("monitor-torn");
    let w = populated(&slab);
    // Flip one body byte of model slot 0 behind the protocol's back.
    let off = RecordSpan::model(0).unwrap().off() + 0x100;
    let v = w.slab().load_u64(off, Ordering::Relaxed);
    w.slab().store_u64(off, v ^ 0x100, Ordering::Relaxed);
    let doc = once(&[slab.path().to_str().unwrap()]);
    let rt = &runtimes(&doc)[0];
    let mem = &rt["report"]["memory_used"];
    assert!(mem["error"].as_str().unwrap().contains("torn"), "{mem}");
    assert_eq!(mem["loaded_models"].as_array().unwrap().len(), 0);
    // The other groups are unaffected.
    assert_eq!(rt["report"]["execution_stats"]["error"], "");
    assert_eq!(
        rt["report"]["execution_stats"]["execution_summary"]["completed"],
        42
    );
}

fn wait_for(rx: &mpsc::Receiver<String>, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let t = Instant::now();
    loop {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "no document with {what}"
        );
        let d = next_doc(rx);
        if pred(&d) {
            return d;
        }
    }
}

fn error_of(d: &Value) -> String {
    runtimes(d)[0]["error"].as_str().unwrap().to_string()
}

#[test]
fn a_slab_truncated_then_deleted_while_watched_is_reported_and_survived() {
    let slab = TempSlab::new("monitor-trunc");
    let w = populated(&slab);
    let p = slab.path().to_str().unwrap().to_string();
    let mut mon = spawn_monitor(&["--period", "100ms", &p]);
    let rx = lines(mon.stdout.take().unwrap());
    wait_for(&rx, "a good read", |d| error_of(d).is_empty());
    // Our own mapping must not be touched past the new end either.
    drop(w);
    std::fs::OpenOptions::new()
        .write(true)
        .open(slab.path())
        .unwrap()
        .set_len(4096)
        .unwrap();
    let d = wait_for(&rx, "truncation", |d| {
        error_of(d).contains("truncated") || error_of(d).contains("too small")
    });
    // The last counts are not repeated or lost: nothing new this period.
    assert_eq!(
        runtimes(&d)[0]["report"]["execution_stats"]["execution_summary"]["completed"],
        0
    );
    std::fs::remove_file(slab.path()).unwrap();
    wait_for(&rx, "deletion", |d| error_of(d).contains("No such file"));
    stop(mon);
}

/// A run killed mid-way: its final report has no error (the companion
/// skips an entry with one), says `exited`, and keeps the run's pid and
/// its tag (the pid, as the Neuron runtime sets it without
/// `NEURON_PROCESS_TAG`); `--once` afterwards agrees, and its count is the
/// sum of the stream's deltas.
#[test]
fn a_writer_that_exits_is_reported_with_its_final_counts() {
    let slab = TempSlab::new("monitor-exit");
    let mut run = xunds([
        "run",
        "--executions",
        "100000000",
        "--rate",
        "2000",
        "--vncs",
        "1",
        "--slab",
    ])
    .arg(slab.path())
    .env_remove("NEURON_PROCESS_TAG")
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let p = slab.path().to_str().unwrap().to_string();
    let mut mon = spawn_monitor(&["--period", "100ms", &p]);
    let rx = lines(mon.stdout.take().unwrap());
    let completed = |d: &Value| {
        runtimes(d)[0]["report"]["execution_stats"]["execution_summary"]["completed"]
            .as_u64()
            .unwrap()
    };
    // Until the run has completed some executions.
    let mut sum = 0;
    let t = Instant::now();
    let d = loop {
        assert!(t.elapsed() < Duration::from_secs(20), "no executions seen");
        let d = next_doc(&rx);
        sum += completed(&d);
        if runtimes(&d)[0]["pid"] == run.id() && sum > 0 {
            break d;
        }
    };
    assert_eq!(error_of(&d), "");
    assert_eq!(runtimes(&d)[0]["state"], "running");
    assert_eq!(runtimes(&d)[0]["neuron_runtime_tag"], run.id().to_string());
    run.kill().unwrap();
    run.wait().unwrap();
    let last = loop {
        let d = next_doc(&rx);
        sum += completed(&d);
        if runtimes(&d)[0]["state"] == "exited" {
            break d;
        }
    };
    assert_eq!(error_of(&last), "");
    stop(mon);
    // --once after the exit says what the stream said: the same pid, tag,
    // state and no error, and its count from zero is the stream's sum.
    let once = once(&[&p]);
    for d in [&last, &once] {
        let rt = &runtimes(d)[0];
        assert_eq!(rt["pid"], run.id(), "{rt}");
        assert_eq!(rt["neuron_runtime_tag"], run.id().to_string(), "{rt}");
        assert_eq!(rt["state"], "exited", "{rt}");
        assert_eq!(rt["error"], "", "{rt}");
    }
    assert_eq!(completed(&once), sum);
}

#[test]
fn a_config_file_selects_groups_and_runtimes() {
    let slab = TempSlab::new("monitor-config");
    let _w = populated(&slab);
    let cfg = slab.path().with_extension("json");
    std::fs::write(
        &cfg,
        r#"{"period": "1s",
            "neuron_runtimes": [{"tag_filter": "monitor-.*", "metrics": [{"type": "execution_stats"}]}],
            "system_metrics": [{"type": "memory_info"}]}"#,
    )
    .unwrap();
    let p = slab.path().to_str().unwrap();
    let doc = once(&["-c", cfg.to_str().unwrap(), p]);
    let rt = &runtimes(&doc)[0];
    let groups: Vec<&String> = rt["report"].as_object().unwrap().keys().collect();
    assert_eq!(groups, ["execution_stats"]);
    let sys: Vec<&String> = doc["system_data"].as_object().unwrap().keys().collect();
    assert_eq!(sys, ["memory_info"]);
    std::fs::write(
        &cfg,
        r#"{"neuron_runtimes": [{"tag_filter": "other", "metrics": []}]}"#,
    )
    .unwrap();
    let doc = once(&["-c", cfg.to_str().unwrap(), p]);
    assert!(runtimes(&doc).is_empty(), "{doc}");
    std::fs::write(&cfg, r#"{"period": "never"}"#).unwrap();
    let out = xunds(["monitor", "--once", "-c", cfg.to_str().unwrap(), p])
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&cfg);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("period"));
}

/// `xunds top` in a real terminal (tmux), when tmux is installed: each
/// view neuron-top has (title bar, core bars with their average, vCPU,
/// memory summary, the tree expanded with `x`, FLOPS with `f`, the next tab
/// with `d`), and `q` ends it.
#[test]
fn top_runs_in_a_terminal_and_shows_every_view() {
    let tmux = |args: &[&str]| std::process::Command::new("tmux").args(args).output();
    if tmux(&["-V"]).map(|o| !o.status.success()).unwrap_or(true) {
        eprintln!("tmux not installed: skipped");
        return;
    }
    let slab = TempSlab::new("monitor-top");
    let _w = populated(&slab);
    let session = format!("xunds-top-{}", std::process::id());
    let cmd = format!(
        "{} top --period 200ms {}",
        env!("CARGO_BIN_EXE_xunds"),
        slab.path().display()
    );
    let ok = tmux(&[
        "new-session",
        "-d",
        "-s",
        &session,
        "-x",
        "100",
        "-y",
        "30",
        &cmd,
    ])
    .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    // The screen once every wanted text is on it (a capture may catch a
    // frame half drawn), or after 10 s whatever is there.
    let screen_with = |key: Option<&str>, wants: &[&str]| {
        if let Some(k) = key {
            let _ = tmux(&["send-keys", "-t", &session, k]);
        }
        let t = Instant::now();
        loop {
            let out = tmux(&["capture-pane", "-p", "-t", &session]).unwrap();
            let s = String::from_utf8_lossy(&out.stdout).to_string();
            if wants.iter().all(|w| s.contains(w)) || t.elapsed() > Duration::from_secs(10) {
                return s;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let first_wants = [
        "xunds top",
        "NeuronCore Utilization",
        "average",
        "NC 0",
        "NC 2",
        "vCPU Utilization",
        "Memory Usage Summary",
        "Memory Usage Details",
        ">all<",
        "monitor-test",
    ];
    let first = screen_with(None, &first_wants);
    let tree = screen_with(Some("x"), &["mlp-x"]);
    let flops = screen_with(Some("f"), &["NeuronCore FLOPS"]);
    // `>all<` is on screen before `d` redraws, so wait for the tab it selects.
    let tab = screen_with(Some("d"), &["monitor-test<"]);
    let _ = tmux(&["send-keys", "-t", &session, "q"]);
    let t = Instant::now();
    while tmux(&["has-session", "-t", &session])
        .map(|o| o.status.success())
        .unwrap_or(false)
    {
        if t.elapsed() > Duration::from_secs(5) {
            let _ = tmux(&["kill-session", "-t", &session]);
            panic!("top did not quit on q");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    for want in first_wants {
        assert!(first.contains(want), "{want:?} missing:\n{first}");
    }
    assert!(tree.contains("mlp-x"), "{tree}");
    assert!(flops.contains("FLOPS"), "{flops}");
    assert!(tab.contains("monitor-test<"), "{tab}");
}

// ---- the /metrics endpoint against hostile local clients ----

/// A monitor serving /metrics (on a slab that does not exist: the
/// endpoint is what is tested), with its descriptors limited to `nofile`
/// when given; its address.
fn serving_monitor(nofile: Option<u64>) -> (Child, String) {
    use std::os::unix::process::CommandExt as _;
    let mut cmd = xunds([
        "monitor",
        "--prometheus",
        ":0",
        "--quiet",
        "--period",
        "200ms",
        "/nonexistent-xunds-endpoint-test.nds",
    ]);
    if let Some(n) = nofile {
        // SAFETY: setrlimit is async-signal-safe and touches no memory of
        // the parent; the struct is on the child's stack.
        unsafe {
            cmd.pre_exec(move || {
                let r = libc::rlimit {
                    rlim_cur: n,
                    rlim_max: n,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut mon = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(mon.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (mon, serving_addr(&line))
}

/// A scrape that must be answered within `limit`.
fn scrape_within(addr: &str, limit: Duration) -> String {
    let mut s = std::net::TcpStream::connect(addr).expect("the listener is up");
    s.set_read_timeout(Some(limit)).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp)
        .unwrap_or_else(|e| panic!("no answer within {limit:?}: {e}"));
    assert!(resp.starts_with("HTTP/1.1 200 "), "{resp}");
    assert!(resp.contains("instance_info{"), "{resp}");
    resp
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// Idle connections past the process's descriptor limit neither close the
/// listener nor pile up: the oldest make room, and a scrape is answered
/// (64 descriptors, 200 idle connections).
#[test]
fn idle_connections_past_the_descriptor_limit_stop_no_scrape() {
    let (mut mon, addr) = serving_monitor(Some(64));
    let idle: Vec<std::net::TcpStream> = (0..200)
        .map(|_| std::net::TcpStream::connect(&addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..3 {
        scrape_within(&addr, Duration::from_secs(10));
    }
    drop(idle);
    assert!(mon.try_wait().unwrap().is_none(), "the monitor died");
    stop(mon);
    // Without a low limit the connections held are still bounded (64),
    // whatever the clients open.
    let (mon, addr) = serving_monitor(None);
    let idle: Vec<std::net::TcpStream> = (0..200)
        .map(|_| std::net::TcpStream::connect(&addr).unwrap())
        .collect();
    scrape_within(&addr, Duration::from_secs(10));
    let fds = open_fds(mon.id());
    assert!(fds <= 64 + 16, "{fds} descriptors");
    drop(idle);
    stop(mon);
}

/// A client that pipelines requests and never reads its responses holds
/// no one up: it gets one response and a closed connection.
#[test]
fn a_pipelining_client_that_never_reads_starves_no_one() {
    let (mon, addr) = serving_monitor(None);
    let mut greedy = std::net::TcpStream::connect(&addr).unwrap();
    greedy.set_nonblocking(true).unwrap();
    let many = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".repeat(2000);
    let _ = greedy.write(many.as_bytes());
    std::thread::sleep(Duration::from_millis(300));
    for _ in 0..3 {
        scrape_within(&addr, Duration::from_secs(5));
    }
    drop(greedy);
    stop(mon);
}

/// A request head that never ends is cut at the limit (8 KiB) with 431 and
/// the connection closed, instead of being buffered without bound; a client
/// that sends a byte now and then is closed after its time, and others are
/// answered meanwhile.
#[test]
fn endless_and_slow_request_heads_are_cut() {
    let (mon, addr) = serving_monitor(None);
    let mut endless = std::net::TcpStream::connect(&addr).unwrap();
    endless
        .set_write_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let chunk = vec![b'a'; 64 * 1024];
    let mut sent = 0usize;
    while sent < 256 << 20 {
        match endless.write(&chunk) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
    }
    assert!(sent < 256 << 20, "256 MiB of one header line taken");
    let mut resp = Vec::new();
    let _ = endless.read_to_end(&mut resp);
    let resp = String::from_utf8_lossy(&resp);
    assert!(
        resp.is_empty() || resp.starts_with("HTTP/1.1 431 "),
        "{resp}"
    );
    // The server's memory stayed small.
    let status = std::fs::read_to_string(format!("/proc/{}/status", mon.id())).unwrap();
    let hwm_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap();
    assert!(hwm_kb < 64 * 1024, "peak RSS {hwm_kb} kB");

    let mut slow = std::net::TcpStream::connect(&addr).unwrap();
    slow.write_all(b"GET /metr").unwrap();
    let t = Instant::now();
    scrape_within(&addr, Duration::from_secs(5));
    slow.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest);
    let waited = t.elapsed();
    assert!(
        waited < Duration::from_secs(15),
        "a slow client held its connection {waited:?}"
    );
    stop(mon);
}

// ---- runtimes that come and go ----

/// `--dir` reports only slabs a running process writes: junk under slab
/// names, uncommitted files and dead runs' slabs are not runtimes, and
/// nothing stays once they are gone.
#[test]
fn a_directory_scan_keeps_no_phantom_runtimes() {
    let dir = std::env::temp_dir().join(format!("xunds-monitor-phantom-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Junk under the names of live processes (init, this test) and of
    // pids no process can have.
    let pid_max: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let mut names: Vec<u32> = (0..300).map(|i| pid_max + i).collect();
    names.extend([1, std::process::id()]);
    for pid in &names {
        let body = if pid % 2 == 0 {
            vec![0u8; 256 * 1024]
        } else {
            b"junk".to_vec()
        };
        std::fs::write(dir.join(format!("xunds-{pid}.nds")), body).unwrap();
    }
    let d = dir.to_str().unwrap();
    let mut mon = spawn_monitor(&["--period", "100ms", "--dir", d]);
    let rx = lines(mon.stdout.take().unwrap());
    for _ in 0..3 {
        let doc = next_doc(&rx);
        assert!(runtimes(&doc).is_empty(), "{doc}");
    }
    for pid in &names {
        std::fs::remove_file(dir.join(format!("xunds-{pid}.nds"))).unwrap();
    }
    for _ in 0..3 {
        assert!(runtimes(&next_doc(&rx)).is_empty());
    }
    stop(mon);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// More named slabs than the process may map at once (256) are all read:
/// a watch maps its slab only for the moment of a read, so none reports
/// "more than 256 guarded file mappings at once".
#[test]
fn more_slabs_than_mappings_at_once_are_all_read() {
    let slab = TempSlab::new("monitor-many");
    drop(populated(&slab));
    let dir = std::env::temp_dir().join(format!("xunds-monitor-many-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copies: Vec<String> = (0..300)
        .map(|i| {
            let p = dir.join(format!("copy-{i}.nds"));
            std::fs::copy(slab.path(), &p).unwrap();
            p.to_str().unwrap().to_string()
        })
        .collect();
    let args: Vec<&str> = copies.iter().map(String::as_str).collect();
    let doc = once(&args);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(runtimes(&doc).len(), 300);
    for r in runtimes(&doc) {
        assert_eq!(r["error"], "", "{}", r["slab"]);
        assert_eq!(
            r["report"]["execution_stats"]["execution_summary"]["completed"],
            42
        );
    }
}
