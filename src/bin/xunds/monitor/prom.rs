//! `xunds monitor --prometheus ADDR`: `/metrics` in the Prometheus text
//! format, family for family and label for label what neuron-monitor's
//! Prometheus companion (`neuron-monitor-prometheus.py`) exports for the
//! same documents: runtimes are told apart by `runtime_tag` alone (two
//! runtimes with one tag are one series, as there), and a family the
//! documents give no value for has no sample (`execution_latency_seconds`:
//! the datastore keeps no latency distribution; `hardware_ecc_events_total`:
//! no driver).
//!
//! One difference, in the user's favour: the counters
//! (`execution_status_total`, `execution_errors_total`) are the slab's
//! cumulative values read at scrape time, not a sum of the deltas the
//! companion happened to see, so a scrape never loses a count. Gauges that
//! are rates over a period (utilization, vCPU use) come from the monitor's
//! last period.
//!
//! The server is built so that no local client can stop it or starve the
//! others: one thread polls every connection without blocking; at most
//! [`MAX_CONNS`] are open (a new one closes the oldest); each gets
//! [`CONN_TIME`] in all and [`MAX_HEAD`] bytes of request head, one
//! request, one response and the connection is closed (pipelined requests
//! are not read); running out of descriptors closes the oldest connection
//! rather than the listener.

use std::collections::HashMap;
use std::io::{ErrorKind, Read as _, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs as _};
use std::os::fd::AsRawFd as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prometheus::core::Collector;
use prometheus::{CounterVec, GaugeVec, Opts, Registry, TextEncoder};
use xunds::hal::eventfd::{poll_fds, pollin};
use xunds::nds::reader::{CORE_MEMORY, ERROR_CLASSES, OUTCOMES};

use super::engine::Monitor;
use super::report;

/// Most connections open at once.
pub const MAX_CONNS: usize = 64;
/// Most bytes of a request's line and headers.
pub const MAX_HEAD: usize = 8 * 1024;
/// Longest a connection stays open (reading its request and writing the
/// response).
pub const CONN_TIME: Duration = Duration::from_secs(10);

/// Where to listen: `PORT` or `:PORT` is loopback (127.0.0.1); anything
/// else is `HOST:PORT` as given.
pub fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    let s = s.trim();
    let port = s.strip_prefix(':').unwrap_or(s);
    let full = match !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) {
        true => format!("127.0.0.1:{port}"),
        false => s.to_string(),
    };
    let mut addrs = full.to_socket_addrs().map_err(|e| e.to_string())?;
    addrs.next().ok_or_else(|| "no address".into())
}

/// A family: its name and help text, as the companion's.
type Family<'a> = (&'a str, &'a str);

const STATUS: Family = ("execution_status_total", "Execution status total");
const ERRORS: Family = ("execution_errors_total", "Execution errors total");
const MEMORY_USED: Family = (
    "neuron_runtime_memory_used_bytes",
    "Runtime memory used bytes",
);
const UTILIZATION: Family = (
    "neuroncore_utilization_ratio",
    "NeuronCore utilization ratio",
);
const RUNTIME_VCPU: Family = (
    "neuron_runtime_vcpu_usage_ratio",
    "Runtime vCPU utilization ratio",
);
const VCPU_COUNT: Family = ("system_vcpu_count", "System vCPU count");
const SYSTEM_VCPU: Family = ("system_vcpu_usage_ratio", "System CPU utilization ratio");
const INSTANCE: Family = ("instance_info", "EC2 instance information");
const HARDWARE: Family = ("neuron_hardware_info", "Neuron Hardware Information");

/// Label names and values of one sample.
type Labels = Vec<(&'static str, String)>;

/// The exposition being built: one labelled vector per family, registered
/// on first use; the registry's text encoder writes it (families by name,
/// samples by labels, label values escaped). A sample added twice under
/// the same labels (two runtimes with one tag) adds for a counter and
/// replaces for a gauge, as the companion's client library does.
#[derive(Default)]
struct Exposition {
    registry: Registry,
    counters: HashMap<String, CounterVec>,
    gauges: HashMap<String, GaugeVec>,
}

/// A family's vector, registered: its name, help text (the companion's)
/// and label names, and its kind's constructor.
fn family<V: Collector + Clone + 'static>(
    registry: &Registry,
    (name, help): Family,
    labels: &[&str],
    new: fn(Opts, &[&str]) -> prometheus::Result<V>,
) -> V {
    // The names and help texts are this file's constants, all valid.
    let v = new(Opts::new(name, help), labels).expect("a valid family");
    let registered = registry.register(Box::new(v.clone()));
    registered.expect("a new family");
    v
}

impl Exposition {
    fn counter(&mut self, fam: Family, labels: Labels, v: f64) {
        let (names, values): (Vec<_>, Vec<_>) = labels.into_iter().unzip();
        let new = || family(&self.registry, fam, &names, CounterVec::new);
        let f = self.counters.entry(fam.0.into()).or_insert_with(new);
        f.with_label_values(&values).inc_by(v);
    }

    fn gauge(&mut self, fam: Family, labels: Labels, v: f64) {
        let (names, values): (Vec<_>, Vec<_>) = labels.into_iter().unzip();
        let new = || family(&self.registry, fam, &names, GaugeVec::new);
        let f = self.gauges.entry(fam.0.into()).or_insert_with(new);
        f.with_label_values(&values).set(v);
    }

    fn text(&self) -> String {
        let families = self.registry.gather();
        TextEncoder::new()
            .encode_to_string(&families)
            .unwrap_or_else(|e| format!("# {e}\n"))
    }
}

/// `base` and `extra` (the registry sorts them by name).
fn with<V: ToString>(base: &Labels, extra: impl IntoIterator<Item = (&'static str, V)>) -> Labels {
    let mut l = base.clone();
    l.extend(extra.into_iter().map(|(k, v)| (k, v.to_string())));
    l
}

/// Render one scrape: read every reported slab now (cumulative counters),
/// take the rate gauges from each group's last good period.
pub fn render(monitor: &mut Monitor) -> String {
    let mut x = Exposition::default();
    // The companion's instance labels: `instance_info`'s fields, some
    // renamed, all empty offline (as [`report::InstanceInfo`]'s).
    let inst: Labels = [
        "instance_name",
        "instance_id",
        "instance_type",
        "availability_zone",
        "region",
        "subnet_id",
    ]
    .map(|k| (k, String::new()))
    .to_vec();
    for rt in monitor.runtimes() {
        // A scrape reads the slab now; if it cannot, the last good read
        // stands (counters never go back). A new writer or an exit this read
        // finds is acted on by the next period's read, which compares the
        // writer itself.
        let fresh = rt.watch.sample().ok().map(|(s, _)| s);
        let Some(s) = fresh.as_ref().or(rt.latest.as_ref()) else {
            continue;
        };
        let c = &s.snap.counters;
        let rl = with(&inst, [("runtime_tag", rt.tag())]);
        for (t, k) in OUTCOMES {
            let l = with(&rl, [("status_type", t)]);
            x.counter(STATUS, l, c.sum(k) as f64);
        }
        for (t, k) in ERROR_CLASSES {
            let l = with(&rl, [("error_type", t)]);
            x.counter(ERRORS, l, c.sum(k) as f64);
        }
        let cores = report::core_memory(c);
        let host = report::byte_sum(report::host_memory(c));
        let device = report::byte_sum(cores.iter().flat_map(|m| m.1));
        for (loc, v) in [("host", host), ("neuron_device", device)] {
            let l = with(&rl, [("memory_location", loc)]);
            x.gauge(MEMORY_USED, l, v as f64);
        }
        for (core, bytes) in cores {
            // The companion leaves this memory_location label unset.
            let core = [
                ("memory_location", "None".into()),
                ("neuroncore", core.to_string()),
            ];
            for ((kind, _), v) in CORE_MEMORY.iter().zip(bytes) {
                let name = format!("neuroncore_memory_usage_{kind}");
                let help = format!("NeuronCore memory utilization for {kind}");
                x.gauge((&name, &help), with(&rl, core.clone()), v as f64);
            }
        }
        // A gauge shows its group's last value without an error, as the
        // companion's does.
        let good = &rt.good;
        let cores = good.neuroncore_counters.iter();
        for (core, u) in cores.flat_map(|n| &n.neuroncores_in_use) {
            let (l, ratio) = (with(&rl, [("neuroncore", core)]), u.neuroncore_utilization);
            x.gauge(UTILIZATION, l, ratio / 100.0);
        }
        if let Some(v) = &good.neuron_runtime_vcpu_usage {
            for (t, p) in [("user", v.vcpu_usage.user), ("system", v.vcpu_usage.system)] {
                let l = with(&rl, [("usage_type", t)]);
                x.gauge(RUNTIME_VCPU, l, p / 100.0);
            }
        }
    }
    let sys = &monitor.system.data;
    if let Some(m) = sys.memory_info.as_ref().filter(|m| m.error.is_empty()) {
        for (what, stat, v) in [
            ("memory", "total_bytes", m.memory_total_bytes),
            ("memory", "used_bytes", m.memory_used_bytes),
            ("swap", "total_bytes", m.swap_total_bytes),
            ("swap", "used_bytes", m.swap_used_bytes),
        ] {
            let name = format!("system_{what}_{stat}");
            let help = format!("System {what} {stat} bytes");
            x.gauge((&name, &help), inst.clone(), v as f64);
        }
    }
    if let Some(v) = sys.vcpu_usage.as_ref().filter(|v| v.error.is_empty()) {
        x.gauge(VCPU_COUNT, inst.clone(), v.usage_data.len() as f64);
        let (user, system) = v.user_system();
        for (t, p) in [("user", user), ("system", system)] {
            let l = with(&inst, [("usage_type", t)]);
            x.gauge(SYSTEM_VCPU, l, p.min(100.0) / 100.0);
        }
    }
    x.gauge(INSTANCE, inst.clone(), 1.0);
    let hw = report::hardware_info();
    let count = |k| (k, hw.get(k).map_or(String::new(), |v| v.to_string()));
    let counts = ["neuron_device_count", "neuroncore_per_device_count"].map(count);
    x.gauge(HARDWARE, with(&inst, counts), 1.0);
    x.text()
}

/// One client connection.
struct Conn {
    stream: TcpStream,
    opened: Instant,
    head: Vec<u8>,
    /// The response and how much of it is written.
    out: Option<(Vec<u8>, usize)>,
    /// Answered, or gone: to be closed.
    done: bool,
}

/// Serve `/metrics` on `addr` from a background thread; returns the bound
/// address (port 0 picks a free one).
pub fn serve(addr: SocketAddr, monitor: Arc<Mutex<Monitor>>) -> Result<SocketAddr, String> {
    let bind = |e: std::io::Error| format!("--prometheus {addr}: {e}");
    let listener = TcpListener::bind(addr).map_err(bind)?;
    listener.set_nonblocking(true).map_err(bind)?;
    let bound = listener.local_addr().map_err(bind)?;
    std::thread::Builder::new()
        .name("xunds-metrics".into())
        .spawn(move || serve_forever(&listener, &monitor))
        .map_err(|e| format!("metrics thread: {e}"))?;
    Ok(bound)
}

fn serve_forever(listener: &TcpListener, monitor: &Mutex<Monitor>) {
    let mut conns: Vec<Conn> = Vec::new();
    loop {
        let now = Instant::now();
        conns.retain(|c| now.duration_since(c.opened) < CONN_TIME);
        let mut fds = vec![pollin(listener.as_raw_fd())];
        fds.extend(conns.iter().map(|c| libc::pollfd {
            fd: c.stream.as_raw_fd(),
            events: match &c.out {
                Some((body, at)) if *at < body.len() => libc::POLLOUT,
                _ => libc::POLLIN,
            },
            revents: 0,
        }));
        // Wake at least once a second to close connections past their time.
        if !poll_fds(&mut fds, Duration::from_secs(1)) {
            continue;
        }
        let ready: Vec<bool> = fds[1..].iter().map(|f| f.revents != 0).collect();
        for (c, r) in conns.iter_mut().zip(ready) {
            if r {
                step(c, monitor);
            }
        }
        conns.retain(|c| !c.done);
        if fds[0].revents != 0 {
            accept(listener, &mut conns);
        }
    }
}

/// Take every pending connection; at the cap, or out of descriptors, the
/// oldest connection makes room.
fn accept(listener: &TcpListener, conns: &mut Vec<Conn>) {
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                if stream.set_nonblocking(true).is_err() {
                    continue;
                }
                if conns.len() >= MAX_CONNS {
                    conns.remove(0);
                }
                conns.push(Conn {
                    stream,
                    opened: Instant::now(),
                    head: Vec::new(),
                    out: None,
                    done: false,
                });
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
                ) =>
            {
                // The pending connection stays queued; free a descriptor
                // for it, or, holding none, wait rather than spin.
                if conns.is_empty() {
                    std::thread::sleep(Duration::from_millis(100));
                } else {
                    conns.remove(0);
                }
                return;
            }
            // A connection reset before it was taken, and the like.
            Err(_) => return,
        }
    }
}

/// Read the request head, or write the response; a connection answered,
/// closed by the client or failed is marked done.
fn step(c: &mut Conn, monitor: &Mutex<Monitor>) {
    let again =
        |e: &std::io::Error| matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted);
    let mut buf = [0u8; 2048];
    match &mut c.out {
        Some((body, at)) if *at < body.len() => {
            match c.stream.write(&body[*at..]) {
                Ok(n) if n > 0 => *at += n,
                Err(e) if again(&e) => {}
                _ => c.done = true,
            }
            if *at == body.len() {
                let _ = c.stream.shutdown(Shutdown::Write);
            }
        }
        // Answered: read and drop what the client still sends until it
        // closes (at most MAX_HEAD bytes more), so that closing first does
        // not reset the connection under a response it has not read yet.
        Some(_) => match c.stream.read(&mut buf) {
            Ok(n) if n > 0 && c.head.len() <= 2 * MAX_HEAD => c.head.extend_from_slice(&buf[..n]),
            Err(e) if again(&e) => {}
            _ => c.done = true,
        },
        None => match c.stream.read(&mut buf) {
            Ok(n) if n > 0 => {
                c.head.extend_from_slice(&buf[..n]);
                let ended = c.head.windows(4).any(|w| w == b"\r\n\r\n")
                    || c.head.windows(2).any(|w| w == b"\n\n");
                if ended {
                    c.out = Some((respond(&c.head, monitor), 0));
                } else if c.head.len() > MAX_HEAD {
                    let status = "431 Request Header Fields Too Large";
                    c.out = Some((response(status, "request head too large\n"), 0));
                }
            }
            Err(e) if again(&e) => {}
            _ => c.done = true,
        },
    }
}

fn response(status: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The response to one request head.
fn respond(head: &[u8], monitor: &Mutex<Monitor>) -> Vec<u8> {
    let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split_ascii_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    if !parts.next().is_some_and(|v| v.starts_with("HTTP/1.")) {
        return response("400 Bad Request", "bad request line\n");
    }
    if method != "GET" {
        return response("405 Method Not Allowed", "GET only\n");
    }
    match path {
        "/metrics" => match monitor.lock() {
            Ok(mut m) => response("200 OK", &render(&mut m)),
            Err(_) => response("500 Internal Server Error", "monitor state poisoned\n"),
        },
        "/" => response("200 OK", "xunds monitor: metrics at /metrics\n"),
        _ => response("404 Not Found", "not found\n"),
    }
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

    #[test]
    fn samples_merge_as_the_companion_merges_them() {
        let mut x = Exposition::default();
        let l = || vec![("runtime_tag", "a\"b".to_string())];
        let swap = ("system_swap_used_bytes", "System swap used_bytes bytes");
        x.counter(STATUS, l(), 2.0);
        x.counter(STATUS, l(), 3.0);
        x.gauge(swap, l(), 2.0);
        x.gauge(swap, l(), 3.0);
        assert_eq!(
            x.text(),
            "# HELP execution_status_total Execution status total\n\
             # TYPE execution_status_total counter\n\
             execution_status_total{runtime_tag=\"a\\\"b\"} 5\n\
             # HELP system_swap_used_bytes System swap used_bytes bytes\n\
             # TYPE system_swap_used_bytes gauge\n\
             system_swap_used_bytes{runtime_tag=\"a\\\"b\"} 3\n"
        );
    }
}
