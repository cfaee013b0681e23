//! `xunds monitor` and `xunds top`: watch live datastore slabs from another
//! process, read-only, and report them as neuron-monitor does (one JSON
//! document per period on stdout), as its Prometheus companion does
//! (`--prometheus ADDR` serves `/metrics`), or as neuron-top does (a live
//! terminal view).
//!
//! | module | owns |
//! |---|---|
//! | `watch` | one slab: open it, map it for each read through the read-only reader, find the writing process |
//! | `sys` | `/proc` readers (process CPU, age and start, system CPU and memory) |
//! | `config` | neuron-monitor's configuration file (`-c FILE`) |
//! | `report` | the JSON document's types and how each metric group is computed |
//! | `engine` | the state between periods: writers, baselines, due groups, discovery |
//! | `prom` | the Prometheus exposition and its HTTP server |
//! | `top` | the terminal view |

mod config;
mod engine;
mod prom;
mod report;
mod sys;
pub mod top;
mod watch;

use std::io::Write as _;
use std::os::fd::AsFd as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use engine::{Monitor, Sources};
pub use watch::{discover, pid_from_name};

/// Report live slabs as neuron-monitor does: one JSON document per period.
///
/// Reads slabs read-only from another process and prints one complete JSON
/// document per period in neuron-monitor's shape (neuron_runtime_data with
/// execution_stats, memory_used, neuroncore_counters and
/// neuron_runtime_vcpu_usage; system_data; instance_info;
/// neuron_hardware_info). A runtime is one writer, tagged as the Neuron
/// runtime tags it (NEURON_PROCESS_TAG, else its pid). Execution counts are
/// per-period deltas; a runtime's first report counts from zero, and the
/// report in which its writer is seen gone carries its final counts with
/// `state` "exited" (and a line on stderr). What cannot be read is the
/// `error` of its entry or group and the monitor keeps running; with --once
/// a named slab that cannot be read also exits 1, its reason on stderr.
/// --prometheus serves /metrics as neuron-monitor's Prometheus companion
/// exports the same documents.
#[derive(clap::Args, Debug, Clone)]
pub struct MonitorArgs {
    #[command(flatten)]
    pub slabs: SlabArgs,
    /// Time between documents (e.g. 5s, 200ms); a configuration file's
    /// periods take precedence.
    #[arg(long, default_value = "5s", allow_hyphen_values = true, value_parser = crate::parse_duration)]
    pub period: Duration,
    /// Print one document (counting from each runtime's start) and exit.
    #[arg(long, conflicts_with = "prometheus")]
    pub once: bool,
    /// Stop after N documents.
    #[arg(long, value_name = "N", conflicts_with = "once", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// A neuron-monitor configuration file (period, neuron_runtimes with
    /// tag_filter and metrics, system_metrics).
    #[arg(short = 'c', long = "config-file", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Serve /metrics in the Prometheus text format on ADDR (PORT or :PORT
    /// for 127.0.0.1, or HOST:PORT).
    #[arg(long, value_name = "ADDR", value_parser = prom::parse_addr)]
    pub prometheus: Option<std::net::SocketAddr>,
    /// No JSON on stdout (with --prometheus).
    #[arg(short, long, requires = "prometheus")]
    pub quiet: bool,
}

/// The slabs `xunds monitor` and `xunds top` watch.
#[derive(clap::Args, Debug, Clone)]
pub struct SlabArgs {
    /// Slab files to watch. Default: every slab `xunds run` leaves in its
    /// default place (`xunds-<pid>.nds` in --dir) whose process is running.
    pub slabs: Vec<PathBuf>,
    /// Where to look for slabs when none are named (default: /dev/shm, or
    /// the temporary directory without it).
    #[arg(long, conflicts_with = "slabs")]
    pub dir: Option<PathBuf>,
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::Relaxed);
}

/// SIGINT and SIGTERM end the loop cleanly after the current document;
/// SIGPIPE is ignored so a closed stdout is an ordinary write error.
fn install_signals() {
    // SAFETY: `on_stop` only stores to an atomic (async-signal-safe); the
    // sigaction struct is zeroed and then filled in before use, and the
    // handler stays valid for the life of the process.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_stop as *const () as libc::sighandler_t;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// Write all of `bytes` to `out`, giving up on a stop signal (which
/// interrupts a blocked write: the handler is installed without
/// `SA_RESTART`).
fn emit(out: &mut std::fs::File, mut bytes: &[u8]) -> std::io::Result<()> {
    while !bytes.is_empty() {
        match out.write(bytes) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted && !stopping() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `true` once SIGINT or SIGTERM arrived.
pub fn stopping() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Sleep until `deadline`, waking early on a stop signal.
pub fn sleep_until(deadline: Instant) {
    while !stopping() && Instant::now() < deadline {
        let left = deadline.saturating_duration_since(Instant::now());
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

/// The default slab directory (where `xunds run` puts `xunds-<pid>.nds`).
pub fn default_dir() -> PathBuf {
    let slab = xunds::system::job::default_slab_path();
    slab.parent().map_or_else(std::env::temp_dir, PathBuf::from)
}

/// Build the monitor from the sources and configuration options; on an
/// error, one line `<command>: <what>` on stderr and the exit code: 2 for
/// a configuration that says something wrong, 1 for a file or directory
/// that cannot be read.
pub fn build(
    command: &str,
    slabs: &SlabArgs,
    config: Option<&PathBuf>,
    period: Duration,
) -> Result<Monitor, ExitCode> {
    let fail = |code, e: String| crate::fail(code, command, e);
    let cfg = match config {
        Some(p) => {
            let text =
                std::fs::read_to_string(p).map_err(|e| fail(1, format!("{}: {e}", p.display())))?;
            config::Config::parse(&text, period, &mut |w| eprintln!("{command}: {w}"))
                .map_err(|e| fail(2, format!("{}: {e}", p.display())))?
        }
        None => config::Config::all(period),
    };
    if let Some(d) = &slabs.dir {
        match std::fs::metadata(d) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(fail(1, format!("--dir {}: not a directory", d.display()))),
            Err(e) => return Err(fail(1, format!("--dir {}: {e}", d.display()))),
        }
    }
    let sources = match (&slabs.slabs, &slabs.dir) {
        (s, d) if s.is_empty() => Sources::Dir(d.clone().unwrap_or_else(default_dir)),
        (s, _) => Sources::Paths(s.clone()),
    };
    Ok(Monitor::new(sources, cfg, period))
}

/// Run `xunds monitor`.
pub fn main(args: MonitorArgs) -> ExitCode {
    run(args).unwrap_or_else(|code| code)
}

/// `xunds monitor`'s loop; `Err` is a failure's exit code, its lines printed.
fn run(args: MonitorArgs) -> Result<ExitCode, ExitCode> {
    const ME: &str = "xunds monitor";
    let fail = |e: &dyn std::fmt::Display| crate::fail(1, ME, e);
    install_signals();
    let monitor = build(ME, &args.slabs, args.config.as_ref(), args.period)?;
    let tick = monitor.clock.tick;
    let monitor = Arc::new(Mutex::new(monitor));
    if let Some(addr) = args.prometheus {
        let bound = prom::serve(addr, monitor.clone()).map_err(|e| fail(&e))?;
        eprintln!("{ME}: serving http://{bound}/metrics");
    }
    let limit = if args.once { Some(1) } else { args.count };
    let print = !(args.quiet && args.prometheus.is_some());
    let start = Instant::now();
    let mut n: u64 = 0;
    // Our own descriptor of stdout, written without a buffer that retries
    // an interrupted write: a stop signal ends a write blocked on a full
    // pipe.
    let fd = std::io::stdout().as_fd().try_clone_to_owned();
    let mut out = std::fs::File::from(fd.map_err(|e| fail(&format_args!("stdout: {e}")))?);
    loop {
        let mut m = monitor
            .lock()
            .map_err(|_| fail(&"internal error: state poisoned"))?;
        let doc = m.tick();
        for line in std::mem::take(&mut m.log) {
            eprintln!("{ME}: {line}");
        }
        // With --once, a named slab that could not be read fails the one
        // document (its `error` says why there too).
        let unreadable = m.unreadable();
        drop(m);
        if print {
            let line = serde_json::to_string(&doc).map_err(|e| fail(&e))?;
            if emit(&mut out, format!("{line}\n").as_bytes()).is_err() {
                // The reader went away (`| head`), or a stop signal came
                // while a reader that does not read held the write: done,
                // not a failure.
                return Ok(ExitCode::SUCCESS);
            }
        }
        n += 1;
        if args.once && !unreadable.is_empty() {
            unreadable.iter().for_each(|e| eprintln!("{ME}: {e}"));
            return Err(ExitCode::FAILURE);
        }
        if limit.is_some_and(|l| n >= l) || stopping() {
            return Ok(ExitCode::SUCCESS);
        }
        sleep_until(start + tick.saturating_mul(u32::try_from(n).unwrap_or(u32::MAX)));
        if stopping() {
            return Ok(ExitCode::SUCCESS);
        }
    }
}
