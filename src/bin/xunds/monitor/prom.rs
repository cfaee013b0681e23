//! `xunds monitor --prometheus ADDR`: `/metrics` in the Prometheus text
//! format, with the metric names, help texts and labels of neuron-monitor's
//! Prometheus companion (`neuron-monitor-prometheus.py`), served natively.
//!
//! Differences from the companion, all in the user's favour:
//! - counters (`execution_status_total`, `execution_errors_total`) are the
//!   slab's cumulative values read at scrape time, not a sum of the JSON
//!   deltas the companion happened to see: a scrape never loses a count;
//! - runtime series carry a `pid` label next to `runtime_tag`, so two
//!   processes with the same tag stay two series;
//! - `execution_latency_seconds` has one sample, `percentile="mean"` (the
//!   mean of the last period that had executions; the datastore keeps no
//!   distribution).
//!
//! Gauges that are rates over a period (utilization, vCPU use, the latency
//! mean) come from the monitor's last period.

use std::net::{SocketAddr, ToSocketAddrs as _};
use std::sync::{Arc, Mutex};

use prometheus::{Encoder as _, GaugeVec, IntCounterVec, Opts, Registry, TextEncoder};

use super::engine::Monitor;
use super::report::{self, InstanceInfo};

/// The companion's instance labels, in its order.
const INSTANCE_LABELS: [&str; 6] = [
    "instance_name",
    "instance_id",
    "instance_type",
    "availability_zone",
    "region",
    "subnet_id",
];

fn instance_values(i: &InstanceInfo) -> [&str; 6] {
    [
        &i.instance_name,
        &i.instance_id,
        &i.instance_type,
        &i.instance_availability_zone,
        &i.instance_region,
        &i.subnet_id,
    ]
}

/// Where to listen: `PORT` or `:PORT` is loopback (127.0.0.1); anything
/// else is `HOST:PORT` as given.
pub fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    let s = s.trim();
    let full = if s.bytes().all(|b| b.is_ascii_digit()) && !s.is_empty() {
        format!("127.0.0.1:{s}")
    } else if let Some(port) = s.strip_prefix(':') {
        format!("127.0.0.1:{port}")
    } else {
        s.to_string()
    };
    full.to_socket_addrs()
        .map_err(|e| format!("--prometheus {s:?}: {e}"))?
        .next()
        .ok_or_else(|| format!("--prometheus {s:?}: no address"))
}

struct Families {
    status: IntCounterVec,
    errors: IntCounterVec,
    latency: GaugeVec,
    util: GaugeVec,
    mem: GaugeVec,
    core_mem: Vec<(&'static str, GaugeVec)>,
    rt_vcpu: GaugeVec,
}

fn labels(extra: &[&'static str]) -> Vec<&'static str> {
    let mut l = INSTANCE_LABELS.to_vec();
    l.extend_from_slice(&["runtime_tag", "pid"]);
    l.extend_from_slice(extra);
    l
}

fn gauge(r: &Registry, name: &str, help: &str, l: &[&str]) -> Result<GaugeVec, prometheus::Error> {
    let g = GaugeVec::new(Opts::new(name, help), l)?;
    r.register(Box::new(g.clone()))?;
    Ok(g)
}

fn counter(
    r: &Registry,
    name: &str,
    help: &str,
    l: &[&str],
) -> Result<IntCounterVec, prometheus::Error> {
    let c = IntCounterVec::new(Opts::new(name, help), l)?;
    r.register(Box::new(c.clone()))?;
    Ok(c)
}

impl Families {
    fn new(r: &Registry) -> Result<Families, prometheus::Error> {
        let mut core_mem = Vec::new();
        for kind in [
            "constants",
            "model_code",
            "model_shared_scratchpad",
            "runtime_memory",
            "tensors",
        ] {
            core_mem.push((
                kind,
                gauge(
                    r,
                    &format!("neuroncore_memory_usage_{kind}"),
                    &format!("NeuronCore memory utilization for {kind}"),
                    &labels(&["memory_location", "neuroncore"]),
                )?,
            ));
        }
        Ok(Families {
            status: counter(
                r,
                "execution_status_total",
                "Execution status total",
                &labels(&["status_type"]),
            )?,
            errors: counter(
                r,
                "execution_errors_total",
                "Execution errors total",
                &labels(&["error_type"]),
            )?,
            latency: gauge(
                r,
                "execution_latency_seconds",
                "Execution latency in seconds",
                &labels(&["percentile"]),
            )?,
            util: gauge(
                r,
                "neuroncore_utilization_ratio",
                "NeuronCore utilization ratio",
                &labels(&["neuroncore"]),
            )?,
            mem: gauge(
                r,
                "neuron_runtime_memory_used_bytes",
                "Runtime memory used bytes",
                &labels(&["memory_location"]),
            )?,
            core_mem,
            rt_vcpu: gauge(
                r,
                "neuron_runtime_vcpu_usage_ratio",
                "Runtime vCPU utilization ratio",
                &labels(&["usage_type"]),
            )?,
        })
    }
}

/// Render one scrape: read every reported slab now (cumulative counters),
/// take the rate gauges from the last period.
pub fn render(monitor: &mut Monitor) -> Result<String, String> {
    let e = |e: prometheus::Error| e.to_string();
    let reg = Registry::new();
    let f = Families::new(&reg).map_err(e)?;
    let inst = InstanceInfo::default();
    let iv = instance_values(&inst);
    for rt in monitor.runtimes() {
        // A scrape reads the slab now; if it cannot, the last good read
        // stands (counters never go back).
        let fresh = rt.fresh_sample().ok();
        let Some(s) = fresh.as_ref().or(rt.latest()) else {
            continue;
        };
        let counters = s.counters.clone();
        let tag = rt.tag().to_string();
        let pid = rt.owner().pid().to_string();
        let with = |extra: &[&str]| -> Vec<String> {
            let mut v: Vec<String> = iv.iter().map(|x| x.to_string()).collect();
            v.push(tag.clone());
            v.push(pid.clone());
            v.extend(extra.iter().map(|x| x.to_string()));
            v
        };
        let (exec, errs) = report::cumulative_summary(&counters);
        for (name, v) in exec.pairs() {
            let l = with(&[name]);
            f.status
                .get_metric_with_label_values(&refs(&l))
                .map_err(e)?
                .inc_by(v);
        }
        for (name, v) in errs.pairs() {
            let l = with(&[name]);
            f.errors
                .get_metric_with_label_values(&refs(&l))
                .map_err(e)?
                .inc_by(v);
        }
        let used = report::used_bytes(&counters);
        for (loc, v) in [("host", used.host), ("neuron_device", used.neuron_device)] {
            let l = with(&[loc]);
            f.mem
                .get_metric_with_label_values(&refs(&l))
                .map_err(e)?
                .set(v as f64);
        }
        for (core, m) in &used.usage_breakdown.neuroncore_memory_usage.0 {
            // `pairs()` and `core_mem` are in the same order.
            for ((_, v), (_, g)) in m.pairs().iter().zip(&f.core_mem) {
                let l = with(&["None", core]);
                g.get_metric_with_label_values(&refs(&l))
                    .map_err(e)?
                    .set(*v as f64);
            }
        }
        let rep = rt.report();
        if let Some(n) = &rep.neuroncore_counters {
            for (core, u) in &n.neuroncores_in_use.0 {
                let l = with(&[core]);
                f.util
                    .get_metric_with_label_values(&refs(&l))
                    .map_err(e)?
                    .set(u.neuroncore_utilization / 100.0);
            }
        }
        if let Some(mean) = rt.last_mean_latency() {
            let l = with(&["mean"]);
            f.latency
                .get_metric_with_label_values(&refs(&l))
                .map_err(e)?
                .set(mean);
        }
        if let Some(v) = rep
            .neuron_runtime_vcpu_usage
            .as_ref()
            .filter(|v| v.error.is_empty())
        {
            for (t, x) in [("user", v.vcpu_usage.user), ("system", v.vcpu_usage.system)] {
                let l = with(&[t]);
                f.rt_vcpu
                    .get_metric_with_label_values(&refs(&l))
                    .map_err(e)?
                    .set(x / 100.0);
            }
        }
    }
    system_families(&reg, monitor, &iv).map_err(e)?;
    let mut out = Vec::new();
    TextEncoder::new()
        .encode(&reg.gather(), &mut out)
        .map_err(e)?;
    String::from_utf8(out).map_err(|e| e.to_string())
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn system_families(
    reg: &Registry,
    monitor: &Monitor,
    iv: &[&str; 6],
) -> Result<(), prometheus::Error> {
    let sys = monitor.system_data();
    if let Some(m) = sys.memory_info.as_ref().filter(|m| m.error.is_empty()) {
        for (name, help, v) in [
            (
                "system_memory_total_bytes",
                "System memory total_bytes bytes",
                m.memory_total_bytes,
            ),
            (
                "system_memory_used_bytes",
                "System memory used_bytes bytes",
                m.memory_used_bytes,
            ),
            (
                "system_swap_total_bytes",
                "System swap total_bytes bytes",
                m.swap_total_bytes,
            ),
            (
                "system_swap_used_bytes",
                "System swap used_bytes bytes",
                m.swap_used_bytes,
            ),
        ] {
            gauge(reg, name, help, &INSTANCE_LABELS)?
                .get_metric_with_label_values(iv)?
                .set(v as f64);
        }
    }
    if let Some(v) = sys.vcpu_usage.as_ref().filter(|v| v.error.is_empty()) {
        gauge(
            reg,
            "system_vcpu_count",
            "System vCPU count",
            &INSTANCE_LABELS,
        )?
        .get_metric_with_label_values(iv)?
        .set(v.usage_data.0.len() as f64);
        let mut l = INSTANCE_LABELS.to_vec();
        l.push("usage_type");
        let g = gauge(
            reg,
            "system_vcpu_usage_ratio",
            "System CPU utilization ratio",
            &l,
        )?;
        let a = &v.average_usage;
        for (t, x) in [
            ("user", a.user + a.nice),
            ("system", a.system + a.io_wait + a.irq + a.soft_irq),
        ] {
            let mut lv = iv.to_vec();
            lv.push(t);
            g.get_metric_with_label_values(&lv)?
                .set(x.min(100.0) / 100.0);
        }
    }
    gauge(
        reg,
        "instance_info",
        "EC2 instance information",
        &INSTANCE_LABELS,
    )?
    .get_metric_with_label_values(iv)?
    .set(1.0);
    let hw = report::HardwareInfo::offline();
    let mut l = vec!["neuron_device_count", "neuroncore_per_device_count"];
    l.extend_from_slice(&INSTANCE_LABELS);
    let (dc, cc) = (
        hw.neuron_device_count.to_string(),
        hw.neuroncore_per_device_count.to_string(),
    );
    let mut lv = vec![dc.as_str(), cc.as_str()];
    lv.extend_from_slice(iv);
    gauge(
        reg,
        "neuron_hardware_info",
        "Neuron Hardware Information",
        &l,
    )?
    .get_metric_with_label_values(&lv)?
    .set(1.0);
    Ok(())
}

/// Serve `/metrics` on `addr` from a background thread; returns the bound
/// address (port 0 picks a free one).
pub fn serve(addr: SocketAddr, monitor: Arc<Mutex<Monitor>>) -> Result<SocketAddr, String> {
    let server = tiny_http::Server::http(addr).map_err(|e| format!("--prometheus {addr}: {e}"))?;
    let bound = server
        .server_addr()
        .to_ip()
        .ok_or_else(|| format!("--prometheus {addr}: not an IP listener"))?;
    std::thread::Builder::new()
        .name("xunds-metrics".into())
        .spawn(move || {
            for req in server.incoming_requests() {
                let path = req.url().split('?').next().unwrap_or("").to_string();
                let resp = if path == "/metrics" {
                    let body = match monitor.lock() {
                        Ok(mut m) => render(&mut m),
                        Err(_) => Err("monitor state poisoned".to_string()),
                    };
                    match body {
                        Ok(b) => {
                            let r = tiny_http::Response::from_string(b);
                            match tiny_http::Header::from_bytes(
                                &b"Content-Type"[..],
                                &b"text/plain; version=0.0.4; charset=utf-8"[..],
                            ) {
                                Ok(h) => r.with_header(h),
                                Err(()) => r,
                            }
                        }
                        Err(e) => tiny_http::Response::from_string(e).with_status_code(500),
                    }
                } else if path == "/" {
                    tiny_http::Response::from_string("xunds monitor: metrics at /metrics\n")
                } else {
                    tiny_http::Response::from_string("not found\n").with_status_code(404)
                };
                // A client that went away is not our error.
                let _ = req.respond(resp);
            }
        })
        .map_err(|e| format!("metrics thread: {e}"))?;
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_default_to_loopback() {
        assert_eq!(parse_addr("9100").unwrap().to_string(), "127.0.0.1:9100");
        assert_eq!(parse_addr(":0").unwrap().to_string(), "127.0.0.1:0");
        assert_eq!(
            parse_addr("0.0.0.0:9100").unwrap().to_string(),
            "0.0.0.0:9100"
        );
        assert!(parse_addr("nowhere").is_err());
        assert!(parse_addr("").is_err());
    }
}
