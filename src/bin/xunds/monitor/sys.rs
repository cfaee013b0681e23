//! What the monitor reads from `/proc`: a process's age and CPU time, and
//! the system's CPU and memory counters.
//! Every parser takes the text and returns `None` / an error string on
//! anything unexpected; nothing here panics on what `/proc` holds.

use std::time::Duration;

use serde::Serialize;

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`), 100 when unknown.
pub fn clk_tck() -> u64 {
    // SAFETY: sysconf only reads a configuration value; no memory is passed.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(t).ok().filter(|t| *t > 0).unwrap_or(100)
}

/// Fields of `/proc/PID/stat` after the `comm` field (which may hold spaces
/// and parentheses): field 3 (`state`) is index 0.
fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    let close = stat.rfind(')')?;
    Some(stat.get(close + 1..)?.split_ascii_whitespace().collect())
}

/// (`utime`, `stime`) in clock ticks from a `/proc/PID/stat` text.
pub fn parse_cpu_ticks(stat: &str) -> Option<(u64, u64)> {
    let f = stat_fields(stat)?;
    // utime and stime are fields 14 and 15 (1-based): indexes 11 and 12.
    Some((f.get(11)?.parse().ok()?, f.get(12)?.parse().ok()?))
}

/// The file at `path` parsed by `parse`, or what went wrong, naming it.
pub fn read<T>(path: &str, parse: fn(&str) -> Option<T>) -> Result<T, String> {
    let s = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    parse(&s).ok_or_else(|| format!("{path}: unexpected format"))
}

/// When process `pid` started, in clock ticks after boot (field 22
/// `starttime`): with the pid, it names one process (a pid is reused, a
/// start time with it is not).
pub fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat_fields(&stat)?.get(19)?.parse().ok()
}

/// Time since boot (`/proc/uptime`).
pub fn uptime() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/uptime").ok()?;
    let up: f64 = s.split_ascii_whitespace().next()?.parse().ok()?;
    Duration::try_from_secs_f64(up).ok()
}

/// How long ago process `pid` started.
pub fn process_age(pid: u32) -> Option<Duration> {
    let start = Duration::from_secs_f64(start_ticks(pid)? as f64 / clk_tck() as f64);
    Some(uptime()?.saturating_sub(start))
}

/// The fields of a CPU line of `/proc/stat` as neuron-monitor names them.
pub const CPU_FIELDS: [&str; 7] = [
    "user", "nice", "system", "idle", "io_wait", "irq", "soft_irq",
];

/// One CPU line of `/proc/stat`, in ticks, in [`CPU_FIELDS`] order.
pub type CpuTimes = [u64; 7];

/// Percentages of `now - earlier`, rounded to 2 decimals as neuron-monitor
/// prints them, in [`CPU_FIELDS`] order.
pub fn percent_since(now: &CpuTimes, earlier: &CpuTimes) -> [f64; 7] {
    let parts: [f64; 7] = std::array::from_fn(|i| now[i].saturating_sub(earlier[i]) as f64);
    let total: f64 = parts.iter().sum();
    parts.map(|p| match total > 0.0 {
        true => round2(p * 100.0 / total),
        false => 0.0,
    })
}

/// `/proc/stat`: the aggregate CPU line, the per-CPU lines and `ctxt`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcStat {
    /// The `cpu` line.
    pub all: CpuTimes,
    /// `cpuN` lines by N.
    pub cpus: Vec<(u32, CpuTimes)>,
    /// Context switches since boot.
    pub ctxt: u64,
}

/// Parse a `/proc/stat` text.
pub fn parse_proc_stat(s: &str) -> Option<ProcStat> {
    let mut out = ProcStat::default();
    let mut seen_all = false;
    for line in s.lines() {
        let mut f = line.split_ascii_whitespace();
        let Some(key) = f.next() else { continue };
        if key == "ctxt" {
            out.ctxt = f.next()?.parse().ok()?;
            continue;
        }
        let Some(rest) = key.strip_prefix("cpu") else {
            continue;
        };
        let v: Vec<u64> = f.take(7).map(|x| x.parse().unwrap_or(0)).collect();
        if v.len() < 4 {
            return None;
        }
        let t: CpuTimes = std::array::from_fn(|i| v.get(i).copied().unwrap_or(0));
        if rest.is_empty() {
            out.all = t;
            seen_all = true;
        } else {
            out.cpus.push((rest.parse().ok()?, t));
        }
    }
    seen_all.then_some(out)
}

/// `memory_info` (`/proc/meminfo`)
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MemoryInfo {
    /// MemTotal
    pub memory_total_bytes: u64,
    /// MemTotal - MemAvailable
    pub memory_used_bytes: u64,
    /// SwapTotal
    pub swap_total_bytes: u64,
    /// SwapTotal - SwapFree
    pub swap_used_bytes: u64,
}

/// System memory in bytes (`/proc/meminfo`).
pub fn parse_meminfo(s: &str) -> Option<MemoryInfo> {
    let kb = |key: &str| -> Option<u64> {
        let line = s.lines().find(|l| l.starts_with(key))?;
        let mut words = line.get(key.len()..)?.split_ascii_whitespace();
        words.next()?.parse::<u64>().ok()?.checked_mul(1024)
    };
    let total = kb("MemTotal:")?;
    let avail = kb("MemAvailable:").or_else(|| kb("MemFree:"))?;
    let swap_total = kb("SwapTotal:").unwrap_or(0);
    let swap_free = kb("SwapFree:").unwrap_or(0);
    Some(MemoryInfo {
        memory_total_bytes: total,
        memory_used_bytes: total.saturating_sub(avail),
        swap_total_bytes: swap_total,
        swap_used_bytes: swap_total.saturating_sub(swap_free),
    })
}

/// `x` rounded to two decimals.
pub fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_survive_odd_comm() {
        // comm with spaces and a ')' inside.
        let s = "123 (a b) c) S 1 2 3 4 5 6 7 8 9 10 250 30 0 0 20 0 1 0 5000 1 2";
        assert_eq!(parse_cpu_ticks(s), Some((250, 30)));
        assert_eq!(parse_cpu_ticks("garbage"), None);
        assert_eq!(parse_cpu_ticks("1 (x) S 1"), None);
    }

    #[test]
    fn proc_stat_parses_and_refuses() {
        let s = "cpu  10 0 5 85 0 0 0 0 0 0\ncpu0 5 0 2 43 0 0 0\ncpu1 5 0 3 42 0 0 0\nctxt 777\n";
        let p = parse_proc_stat(s).unwrap();
        assert_eq!(p.all[0], 10);
        assert_eq!(p.cpus.len(), 2);
        assert_eq!(p.ctxt, 777);
        let pct = percent_since(&p.all, &CpuTimes::default());
        assert_eq!(pct, [10.0, 0.0, 5.0, 85.0, 0.0, 0.0, 0.0]);
        assert_eq!(parse_proc_stat("intr 1 2\n"), None);
    }

    #[test]
    fn meminfo_parses() {
        let s = "MemTotal:  1000 kB\nMemFree: 100 kB\nMemAvailable: 400 kB\nSwapTotal: 10 kB\nSwapFree: 4 kB\n";
        let m = MemoryInfo {
            memory_total_bytes: 1_024_000,
            memory_used_bytes: 614_400,
            swap_total_bytes: 10_240,
            swap_used_bytes: 6_144,
        };
        assert_eq!(parse_meminfo(s), Some(m));
        assert_eq!(parse_meminfo("nothing"), None);
    }
}
