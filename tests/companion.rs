//! `xunds monitor`'s stream through neuron-monitor's Prometheus companion
//! (`neuron-monitor-prometheus.py`, which ships with the Neuron tools).
//!
//! [`Companion`] does what the companion's published `process_*` functions
//! do with each document, field for field: every field they index must be
//! there with the type they use it as (a missing key or a `null` where they
//! subscript is the exception that ends the companion), a runtime whose
//! `error` is not empty is skipped, a group whose `error` is not empty is
//! skipped, counters add the documents' deltas, gauges take the last value,
//! and a document with no runtime clears every series. After a faulted run
//! the exported `execution_status_total` must equal the slab's counters as
//! `xunds nds dump` reads them, and the monitor's own `/metrics` must have
//! the same families with the same label names and label values (and the
//! same counter values).
//!
//! When the real companion is installed (`$NEURON_MONITOR_PROMETHEUS`, or
//! `/opt/aws/neuron/bin/neuron-monitor-prometheus.py`) and Python has
//! `prometheus_client`, the same stream is also piped through it and its
//! scrape compared the same way; otherwise that test says why it skipped.

mod nds_support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use nds_support::{serving_addr, xunds, TempSlab};
use serde_json::Value;

/// Label names and values, sorted.
type Labels = BTreeMap<String, String>;

/// Family name -> (kind, samples by labels).
type Families = BTreeMap<String, (&'static str, BTreeMap<Labels, f64>)>;

/// An exception the companion would raise (its message names the field).
type Raised = String;

fn key<'a>(v: &'a Value, k: &str) -> Result<&'a Value, Raised> {
    match v {
        Value::Object(o) => o.get(k).ok_or_else(|| format!("KeyError: {k:?}")),
        other => Err(format!(
            "TypeError: {other} is not subscriptable (key {k:?})"
        )),
    }
}

fn num(v: &Value) -> Result<f64, Raised> {
    v.as_f64()
        .ok_or_else(|| format!("TypeError: {v} is not a number"))
}

fn text(v: &Value) -> Result<String, Raised> {
    // A label value is str() of whatever the document holds.
    Ok(match v {
        Value::String(s) => s.clone(),
        Value::Null => "None".into(),
        other => other.to_string(),
    })
}

fn object(v: &Value) -> Result<&serde_json::Map<String, Value>, Raised> {
    v.as_object()
        .ok_or_else(|| format!("AttributeError: {v} has no .items()"))
}

/// `int(s)` of a core index, as the label value it becomes.
fn index(s: &str) -> Result<String, Raised> {
    s.parse::<i64>()
        .map(|i| i.to_string())
        .map_err(|_| format!("ValueError: int({s:?})"))
}

/// The companion's state: its metric objects by group, each with its
/// series.
#[derive(Default)]
struct Companion {
    instance: Option<Labels>,
    /// Group -> family -> (kind, series).
    groups: BTreeMap<String, Families>,
    /// The two info metrics, set once.
    infos: Families,
}

impl Companion {
    fn set(&mut self, group: &str, name: &str, counter: bool, labels: Labels, v: f64) {
        let kind = if counter { "counter" } else { "gauge" };
        let fam = self
            .groups
            .entry(group.into())
            .or_default()
            .entry(name.into())
            .or_insert_with(|| (kind, BTreeMap::new()));
        let slot = fam.1.entry(labels).or_insert(0.0);
        *slot = if counter { *slot + v } else { v };
    }

    /// Feed one document; `Err` is what the companion would raise.
    fn process(&mut self, doc: &Value) -> Result<(), Raised> {
        if self.instance.is_none() {
            let i = key(doc, "instance_info")?;
            let mut l = Labels::new();
            for (label, field) in [
                ("instance_name", "instance_name"),
                ("instance_id", "instance_id"),
                ("instance_type", "instance_type"),
                ("availability_zone", "instance_availability_zone"),
                ("region", "instance_region"),
                ("subnet_id", "subnet_id"),
            ] {
                l.insert(label.into(), text(key(i, field)?)?);
            }
            self.instance = Some(l);
        }
        let inst = self.instance.clone().unwrap_or_default();
        let runtimes = doc
            .get("neuron_runtime_data")
            .cloned()
            .unwrap_or(Value::Null);
        match runtimes.as_array() {
            Some(rts) if !rts.is_empty() => {
                for rt in rts {
                    let tag = text(key(rt, "neuron_runtime_tag")?)?;
                    if key(rt, "error")? != "" {
                        continue;
                    }
                    let mut l = inst.clone();
                    l.insert("runtime_tag".into(), tag);
                    self.entries(key(rt, "report")?, &l)?;
                }
            }
            // No runtime: every gauge and counter loses its series.
            _ => self
                .groups
                .values_mut()
                .flat_map(|g| g.values_mut())
                .for_each(|f| f.1.clear()),
        }
        let sys = key(doc, "system_data")?;
        if !sys.is_null() {
            self.entries(sys, &inst)?;
        }
        let infos = &mut self.infos;
        infos
            .entry("instance_info".into())
            .or_insert_with(|| ("gauge", BTreeMap::from([(inst.clone(), 1.0)])));
        let hw = key(doc, "neuron_hardware_info")?;
        if !hw.is_null() && !infos.contains_key("neuron_hardware_info") {
            let mut l = inst.clone();
            for k in ["neuron_device_count", "neuroncore_per_device_count"] {
                l.insert(k.into(), text(key(hw, k)?)?);
            }
            infos.insert(
                "neuron_hardware_info".into(),
                ("gauge", BTreeMap::from([(l, 1.0)])),
            );
        }
        Ok(())
    }

    /// The groups of a report (or of `system_data`) that have a handler.
    fn entries(&mut self, report: &Value, labels: &Labels) -> Result<(), Raised> {
        for (group, data) in object(report)? {
            let handled = [
                "neuroncore_counters",
                "neuron_runtime_vcpu_usage",
                "memory_used",
                "execution_stats",
                "neuron_hw_counters",
                "vcpu_usage",
                "memory_info",
            ];
            if !handled.contains(&group.as_str()) {
                continue;
            }
            if key(data, "error")? != "" {
                continue;
            }
            self.group(group, data, labels.clone())?;
        }
        Ok(())
    }

    fn group(&mut self, group: &str, d: &Value, base: Labels) -> Result<(), Raised> {
        let with = |extra: &[(&str, String)]| {
            let mut l = base.clone();
            for (k, v) in extra {
                l.insert(k.to_string(), v.clone());
            }
            l
        };
        match group {
            "neuroncore_counters" => {
                for (nc, c) in object(key(d, "neuroncores_in_use")?)? {
                    let l = with(&[("neuroncore", index(nc)?)]);
                    let u = num(key(c, "neuroncore_utilization")?)? / 100.0;
                    self.set(group, "neuroncore_utilization_ratio", false, l, u);
                }
            }
            "neuron_runtime_vcpu_usage" => {
                for t in ["user", "system"] {
                    let v = num(key(key(d, "vcpu_usage")?, t)?)? / 100.0;
                    let l = with(&[("usage_type", t.into())]);
                    self.set(group, "neuron_runtime_vcpu_usage_ratio", false, l, v);
                }
            }
            "memory_used" => {
                let used = key(d, "neuron_runtime_used_bytes")?;
                for loc in ["host", "neuron_device"] {
                    let l = with(&[("memory_location", loc.into())]);
                    let v = num(key(used, loc)?)?;
                    self.set(group, "neuron_runtime_memory_used_bytes", false, l, v);
                }
                let cores = key(key(used, "usage_breakdown")?, "neuroncore_memory_usage")?;
                for kind in [
                    "constants",
                    "model_code",
                    "model_shared_scratchpad",
                    "runtime_memory",
                    "tensors",
                ] {
                    for (nc, m) in object(cores)? {
                        let l = with(&[
                            ("memory_location", "None".into()),
                            ("neuroncore", index(nc)?),
                        ]);
                        let v = num(key(m, kind)?)?;
                        self.set(
                            group,
                            &format!("neuroncore_memory_usage_{kind}"),
                            false,
                            l,
                            v,
                        );
                    }
                }
            }
            "execution_stats" => {
                for (field, label, name) in [
                    ("error_summary", "error_type", "execution_errors_total"),
                    ("execution_summary", "status_type", "execution_status_total"),
                ] {
                    for (k, v) in object(key(d, field)?)? {
                        let v = num(v)?;
                        if v < 0.0 {
                            return Err(format!("ValueError: {name} can only increase ({v})"));
                        }
                        self.set(group, name, true, with(&[(label, k.clone())]), v);
                    }
                }
                let lat = key(key(d, "latency_stats")?, "total_latency")?;
                if !lat.is_null() {
                    for (p, v) in object(lat)? {
                        let l = with(&[("percentile", p.clone())]);
                        self.set(group, "execution_latency_seconds", false, l, num(v)?);
                    }
                }
            }
            "neuron_hw_counters" => {
                let devices = key(d, "neuron_devices")?;
                for dev in devices
                    .as_array()
                    .ok_or("TypeError: neuron_devices is not iterable")?
                {
                    for c in [
                        "mem_ecc_corrected",
                        "mem_ecc_uncorrected",
                        "sram_ecc_corrected",
                        "sram_ecc_uncorrected",
                    ] {
                        let l = with(&[
                            ("event_type", c.into()),
                            (
                                "neuron_device_index",
                                text(key(dev, "neuron_device_index")?)?,
                            ),
                        ]);
                        self.set(
                            group,
                            "hardware_ecc_events_total",
                            true,
                            l,
                            num(key(dev, c)?)?,
                        );
                    }
                }
            }
            "vcpu_usage" => {
                let n = object(key(d, "usage_data")?)?.len() as f64;
                self.set(group, "system_vcpu_count", false, base.clone(), n);
                let avg = key(d, "average_usage")?;
                for (t, items) in [
                    ("user", &["user", "nice"][..]),
                    ("system", &["system", "io_wait", "irq", "soft_irq"]),
                ] {
                    let mut sum = 0.0;
                    for i in items {
                        sum += num(key(avg, i)?)?;
                    }
                    let l = with(&[("usage_type", t.into())]);
                    self.set(
                        group,
                        "system_vcpu_usage_ratio",
                        false,
                        l,
                        sum.min(100.0) / 100.0,
                    );
                }
            }
            "memory_info" => {
                for (what, name) in [("memory", "system_memory"), ("swap", "system_swap")] {
                    for stat in ["total_bytes", "used_bytes"] {
                        let v = num(key(d, &format!("{what}_{stat}"))?)?;
                        self.set(group, &format!("{name}_{stat}"), false, base.clone(), v);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// What a scrape of the companion shows: every family with a series.
    fn exposition(&self) -> Families {
        let mut out = self.infos.clone();
        for g in self.groups.values() {
            for (name, (kind, series)) in g {
                if !series.is_empty() {
                    out.insert(name.clone(), (kind, series.clone()));
                }
            }
        }
        out
    }
}

/// A scrape in the text format as families (`_created` series, which the
/// companion's client library adds to its counters, left out).
fn parse(body: &str) -> Families {
    let scrape = prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_string())))
        .expect("the exposition parses");
    let mut out = Families::new();
    for s in scrape.samples {
        if s.metric.ends_with("_created") {
            continue;
        }
        let (kind, v) = match s.value {
            prometheus_parse::Value::Counter(x) => ("counter", x),
            prometheus_parse::Value::Gauge(x) | prometheus_parse::Value::Untyped(x) => ("gauge", x),
            ref other => panic!("{}: {other:?}", s.metric),
        };
        let labels: Labels = s
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        out.entry(s.metric)
            .or_insert((kind, BTreeMap::new()))
            .1
            .insert(labels, v);
    }
    out
}

/// The same families, label names and label values in both; the same
/// counter values; gauges whose values do not move after a run (memory,
/// the info metrics) equal too. Rates over a period (utilization, vCPU use)
/// are compared by labels only: the two read them at different moments.
fn compare(companion: &Families, native: &Families) {
    let names = |f: &Families| f.keys().cloned().collect::<BTreeSet<_>>();
    assert_eq!(names(companion), names(native), "families");
    for (name, (kind, theirs)) in companion {
        let (native_kind, ours) = &native[name];
        assert_eq!(kind, native_kind, "{name}: type");
        let labels = |s: &BTreeMap<Labels, f64>| s.keys().cloned().collect::<Vec<_>>();
        assert_eq!(labels(theirs), labels(ours), "{name}: label sets");
        let rate = name.ends_with("_ratio") || name.starts_with("system_");
        if !rate {
            assert_eq!(theirs, ours, "{name}: values");
        }
    }
}

/// `xunds monitor` with JSON on stdout and /metrics served; its address.
fn monitor(args: &[&str]) -> (Child, String) {
    let mut all = vec!["monitor", "--prometheus", ":0", "--period", "200ms"];
    all.extend(args);
    let mut mon = xunds(&all)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(mon.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    // Keep draining stderr (the exit lines) so the monitor never blocks.
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    (mon, serving_addr(&line))
}

fn scrape(addr: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let (head, body) = resp.split_once("\r\n\r\n").unwrap();
    assert!(head.contains(" 200 "), "{head}");
    body.to_string()
}

/// Read documents from the monitor until `enough` says so.
fn documents(out: &mut impl BufRead, enough: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let mut docs = Vec::new();
    let t = Instant::now();
    while !enough(&docs) {
        assert!(t.elapsed() < Duration::from_secs(60), "documents stopped");
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "the monitor ended");
        docs.push(serde_json::from_str(&line).expect("one JSON document per line"));
    }
    docs
}

fn stop(mut child: Child) {
    // SAFETY: kill(2) on our own child's pid; no memory is involved.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    child.wait().unwrap();
}

/// The slab's totals by `execution_summary` name, as `xunds nds dump`
/// reads them.
fn dump_totals(slab: &Path) -> BTreeMap<String, f64> {
    let out = xunds(["nds", "dump", "--json"]).arg(slab).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut totals = BTreeMap::new();
    for (status, counter) in [
        ("completed", "INFER_COMPLETED"),
        ("completed_with_err", "INFER_COMPLETED_WITH_ERR"),
        ("completed_with_num_err", "INFER_COMPLETED_WITH_NUM_ERR"),
        ("timed_out", "INFER_TIMED_OUT"),
        ("incorrect_input", "INFER_INCORRECT_INPUT"),
        ("failed_to_queue", "INFER_FAILED_TO_QUEUE"),
    ] {
        let n: u64 = object(&doc["cores"])
            .unwrap()
            .values()
            .map(|c| c.get(counter).and_then(Value::as_u64).unwrap_or(0))
            .sum();
        totals.insert(status.to_string(), n as f64);
    }
    totals
}

fn status_totals(f: &Families, tag: &str) -> BTreeMap<String, f64> {
    f["execution_status_total"]
        .1
        .iter()
        .filter(|(l, _)| l["runtime_tag"] == tag)
        .map(|(l, v)| (l["status_type"].clone(), *v))
        .collect()
}

/// A faulted run, watched from before it starts to after it ends: the
/// companion's logic takes every document, its `execution_status_total`
/// equals the slab's counters, and the native /metrics is the same
/// exposition. Returns the documents (for the real companion).
fn faulted_run_through_the_companion() -> (Vec<Value>, Families, BTreeMap<String, f64>, String) {
    // One slab per call (two tests make this run at once).
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let slab = TempSlab::new(&format!("companion-faulted-{n}"));
    let p = slab.path().to_str().unwrap().to_string();
    let (mut mon, addr) = monitor(&[&p]);
    let mut out = BufReader::new(mon.stdout.take().unwrap());
    let run = xunds([
        "run",
        "--executions",
        "20000",
        "--rate",
        "20000",
        "--vncs",
        "2",
        "--faults",
        "error:hw@0.01,timeout@0.001,error:numerical@0.01",
        "--timeout-ms",
        "10",
        "--recover",
        "--json",
        "--slab",
    ])
    .arg(slab.path())
    .env_remove("NEURON_PROCESS_TAG")
    .output()
    .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let run: Value = serde_json::from_slice(&run.stdout).unwrap();
    // Documents until a few after the exit was reported.
    let exited = |d: &Value| d["neuron_runtime_data"][0]["state"] == "exited";
    let docs = documents(&mut out, |ds| {
        ds.iter().position(exited).is_some_and(|i| ds.len() > i + 3)
    });
    let native = parse(&scrape(&addr));
    drop(out);
    stop(mon);
    let mut companion = Companion::default();
    for (i, d) in docs.iter().enumerate() {
        companion
            .process(d)
            .unwrap_or_else(|e| panic!("document {i} raises {e}:\n{d}"));
    }
    let theirs = companion.exposition();
    let totals = dump_totals(slab.path());
    // The run's tag is its pid (no NEURON_PROCESS_TAG).
    let tag = docs.last().unwrap()["neuron_runtime_data"][0]["pid"].to_string();
    assert_eq!(
        docs.last().unwrap()["neuron_runtime_data"][0]["neuron_runtime_tag"],
        tag
    );
    assert_eq!(
        status_totals(&theirs, &tag),
        totals,
        "the companion's totals"
    );
    assert!(
        totals["completed"] > 0.0 && totals["completed_with_err"] > 0.0,
        "{totals:?}"
    );
    assert_eq!(totals["completed"], run["completed_ok"].as_f64().unwrap());
    compare(&theirs, &native);
    (docs, native, totals, tag)
}

#[test]
fn the_companions_logic_takes_a_faulted_runs_stream() {
    faulted_run_through_the_companion();
}

/// Two runs at once, told apart by the tag the Neuron runtime sets
/// (`NEURON_PROCESS_TAG`), selected by a configuration's `tag_filter`: two
/// runtimes in the documents and in both expositions, each with its own
/// slab's totals.
#[test]
fn two_concurrent_runs_are_two_runtimes() {
    let dir = xunds::system::job::default_slab_path()
        .parent()
        .unwrap()
        .to_path_buf();
    let me = std::process::id();
    let tags = [format!("companion-a-{me}"), format!("companion-b-{me}")];
    let cfg = std::env::temp_dir().join(format!("xunds-companion-{me}.json"));
    std::fs::write(
        &cfg,
        format!(
            r#"{{"neuron_runtimes": [{{"tag_filter": "companion-[ab]-{me}", "metrics": [
                {{"type": "neuroncore_counters"}}, {{"type": "memory_used"}},
                {{"type": "neuron_runtime_vcpu_usage"}}, {{"type": "execution_stats"}}]}}],
              "system_metrics": [{{"type": "vcpu_usage"}}, {{"type": "memory_info"}},
                {{"type": "neuron_hw_counters"}}]}}"#
        ),
    )
    .unwrap();
    let (mut mon, addr) = monitor(&["-c", cfg.to_str().unwrap(), "--dir", dir.to_str().unwrap()]);
    let mut out = BufReader::new(mon.stdout.take().unwrap());
    let runs: Vec<Child> = tags
        .iter()
        .map(|t| {
            xunds([
                "run",
                "--executions",
                "15000",
                "--rate",
                "10000",
                "--vncs",
                "1",
                "--json",
            ])
            .env("NEURON_PROCESS_TAG", t)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let outputs: Vec<Value> = runs
        .into_iter()
        .map(|r| serde_json::from_slice(&r.wait_with_output().unwrap().stdout).unwrap())
        .collect();
    let both_exited = |d: &Value| {
        let rts = d["neuron_runtime_data"].as_array().unwrap();
        rts.len() == 2 && rts.iter().all(|r| r["state"] == "exited")
    };
    let docs = documents(&mut out, |ds| ds.iter().any(both_exited));
    let native = parse(&scrape(&addr));
    drop(out);
    stop(mon);
    let _ = std::fs::remove_file(&cfg);
    let mut companion = Companion::default();
    for d in &docs {
        companion.process(d).unwrap();
    }
    let theirs = companion.exposition();
    for (tag, run) in tags.iter().zip(&outputs) {
        let slab = PathBuf::from(run["slab"].as_str().unwrap());
        let totals = dump_totals(&slab);
        let _ = std::fs::remove_file(&slab);
        assert_eq!(status_totals(&theirs, tag), totals, "{tag}");
        assert_eq!(status_totals(&native, tag), totals, "{tag}");
    }
    compare(&theirs, &native);
}

/// Where the real companion is, if it is installed.
fn real_companion() -> Result<PathBuf, String> {
    let path = std::env::var_os("NEURON_MONITOR_PROMETHEUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/opt/aws/neuron/bin/neuron-monitor-prometheus.py".into());
    if !path.is_file() {
        return Err(format!(
            "{} not found (set NEURON_MONITOR_PROMETHEUS to the companion script)",
            path.display()
        ));
    }
    Ok(path)
}

/// A Python that can import `prometheus_client`: the one on PATH, else a
/// venv with it installed from PyPI (when PyPI can be reached).
fn python_with_client() -> Result<PathBuf, String> {
    let has = |py: &Path| {
        std::process::Command::new(py)
            .args(["-c", "import prometheus_client"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let system = PathBuf::from("python3");
    if has(&system) {
        return Ok(system);
    }
    let venv = std::env::temp_dir().join("xunds-companion-venv");
    let py = venv.join("bin/python");
    if !has(&py) {
        let made = std::process::Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .map_err(|e| format!("no python3: {e}"))?;
        if !made.success() {
            return Err("python3 -m venv failed".into());
        }
        let pip = std::process::Command::new(&py)
            .args(["-m", "pip", "install", "-q", "prometheus_client"])
            .status()
            .map_err(|e| format!("pip: {e}"))?;
        if !pip.success() || !has(&py) {
            return Err("prometheus_client could not be installed (PyPI unreachable?)".into());
        }
    }
    Ok(py)
}

/// The real companion, when installed, on the faulted run's stream: it
/// raises nothing and its scrape is the native one.
#[test]
fn the_real_companion_takes_the_stream_when_installed() {
    let (script, python) = match (real_companion(), python_with_client()) {
        (Ok(s), Ok(p)) => (s, p),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("the real companion test skipped: {e}");
            return;
        }
    };
    let (docs, native, totals, tag) = faulted_run_through_the_companion();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut py = std::process::Command::new(python)
        .arg(script)
        .args(["--port", &port.to_string()])
        .env("PROMETHEUS_DISABLE_CREATED_SERIES", "True")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = py.stdin.take().unwrap();
    for d in &docs {
        writeln!(stdin, "{d}").unwrap();
    }
    stdin.flush().unwrap();
    // Let it take every line, then read its scrape.
    std::thread::sleep(Duration::from_secs(2));
    let addr = format!("127.0.0.1:{port}");
    let body = scrape(&addr);
    drop(stdin);
    let _ = py.kill();
    let out = py.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("Traceback"), "the companion raised:\n{err}");
    let mut theirs = parse(&body);
    // The client library's own families (its process and interpreter).
    theirs.retain(|name, _| !name.starts_with("process_") && !name.starts_with("python_"));
    assert_eq!(status_totals(&theirs, &tag), totals);
    compare(&theirs, &native);
}
