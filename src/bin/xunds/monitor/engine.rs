//! The monitor's state between periods: the watched runtimes, each metric
//! group's baseline, and the last value of every group, consolidated into one
//! [`Document`] per tick (neuron-monitor's execution model: a group is
//! recomputed when its own period is due, see [`Clock`]; every document
//! carries the latest value of every enabled group). With one period for
//! every group (no `-c`, or a configuration with one period) every document
//! recomputes every group; a group with a longer period than the tick repeats
//! its last values, unchanged, in the documents between its updates.
//!
//! Counts are per-period deltas of the slab's monotone counters. A runtime's
//! first report counts from zero (its period runs from the process's start),
//! so the deltas of every report about a runtime add up to its cumulative
//! counters: a monitor that starts late, or a period in which the slab could
//! not be read, loses no count (the baseline only moves on a good read).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use xunds::nds::RecordRead;

use super::config::{Config, RtGroup, SysGroup};
use super::report::{self, Document, HardwareInfo, InstanceInfo, Report, RuntimeEntry, SystemData};
use super::sys;
use super::watch::{self, Counters, Owner, Sample, Watch};

/// How long a discovered runtime that exited stays in the Prometheus
/// scrapes (it leaves the JSON documents after its final report).
pub const LINGER: Duration = Duration::from_secs(60);

/// Where the monitor finds slabs.
#[derive(Clone, Debug)]
pub enum Sources {
    /// These paths, always reported (with an error while unreadable).
    Paths(Vec<PathBuf>),
    /// Every `xunds-<pid>.nds` in this directory whose process is alive
    /// when first seen.
    Dir(PathBuf),
}

/// One group's baseline: where its next delta starts.
#[derive(Clone, Debug)]
struct Base {
    at: Instant,
    /// The monitor tick it was taken at.
    tick: u64,
    counters: Counters,
    cpu: Option<(u64, u64)>,
}

/// A watched runtime.
pub struct Runtime {
    watch: Watch,
    /// Reported even while unreadable.
    explicit: bool,
    started: Option<Instant>,
    latest: Option<Sample>,
    read_error: Option<String>,
    notes: Vec<String>,
    tag: String,
    bases: [Option<Base>; 4],
    report: Report,
    /// When the exit was seen and its final deltas reported.
    exit_reported: Option<Instant>,
    /// Tell the groups to report now (exit, restart).
    force: bool,
    /// The watch's generation the baselines belong to: a newer one is a
    /// re-attach not yet acted on (whichever sample, a period's or a
    /// scrape's, made it).
    generation_seen: u64,
    /// The watch's exit count the last forced report was for: a larger one
    /// is an exit not yet reported.
    exits_seen: u64,
    /// The mean total latency of the last period that had executions.
    last_mean: Option<f64>,
}

impl Runtime {
    fn new(path: PathBuf, explicit: bool) -> Runtime {
        Runtime {
            watch: Watch::new(path),
            explicit,
            started: None,
            latest: None,
            read_error: None,
            notes: Vec::new(),
            tag: String::new(),
            bases: [None, None, None, None],
            report: Report::default(),
            exit_reported: None,
            force: false,
            generation_seen: 0,
            exits_seen: 0,
            last_mean: None,
        }
    }

    /// The slab path.
    pub fn path(&self) -> &Path {
        self.watch.path()
    }

    /// The writing process.
    pub fn owner(&self) -> Owner {
        self.watch.owner()
    }

    /// The last good read.
    pub fn latest(&self) -> Option<&Sample> {
        self.latest.as_ref()
    }

    /// The tag (the pid when none was published).
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// The runtime-level error ("" when fine).
    pub fn error(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if let Some(e) = &self.read_error {
            parts.push(e.clone());
        }
        parts.extend(self.notes.iter().cloned());
        if let Owner::Exited { pid } = self.owner() {
            parts.push(format!(
                "process {pid} has exited; these are its final counters"
            ));
        }
        parts.join("; ")
    }

    /// The mean total latency (seconds) of the last period with executions.
    pub fn last_mean_latency(&self) -> Option<f64> {
        self.last_mean
    }

    /// The last computed groups.
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// Read the slab once more (a scrape): the cumulative counters now. A
    /// re-attach or an exit this read finds is counted by the watch and
    /// acted on by the next period's [`Runtime::read`].
    pub fn fresh_sample(&mut self) -> Result<Sample, String> {
        self.watch.sample().map(|(s, _)| s)
    }

    fn read(&mut self) {
        self.notes.clear();
        match self.watch.sample() {
            Ok((s, note)) => {
                self.notes.extend(note);
                // Against the generation the baselines were taken in, not
                // the one before this call: a scrape since the last period
                // may have been the sample that re-attached.
                let generation = self.watch.generation();
                let reattached = generation != self.generation_seen;
                self.generation_seen = generation;
                if reattached
                    || self
                        .latest
                        .as_ref()
                        .is_some_and(|l| s.counters.went_back(&l.counters))
                {
                    self.notes.push(
                        "slab re-created (counters went back or it was re-attached): counting from zero again".into(),
                    );
                    self.bases = [None, None, None, None];
                    self.started = None;
                }
                if let Some(e) = watch::record_error("process info", &s.snap.process_info) {
                    self.notes.push(e);
                }
                self.tag = match &s.snap.process_info {
                    RecordRead::Fresh(p) if !p.tag_str().is_empty() => p.tag_str().into_owned(),
                    _ => self.owner().pid().to_string(),
                };
                if self.started.is_none() {
                    self.started = Some(self.watch.started());
                }
                self.latest = Some(s);
                self.read_error = None;
            }
            Err(e) => {
                self.read_error = Some(e);
                if self.tag.is_empty() {
                    self.tag = self.owner().pid().to_string();
                }
            }
        }
        // Likewise an exit a scrape saw first still forces the final report.
        let exits = self.watch.exits();
        if exits != self.exits_seen {
            self.exits_seen = exits;
            self.force = true;
        }
    }

    /// Recompute the groups that are due (all when forced).
    fn update(&mut self, now: Instant, clock: &Clock, groups: &[(RtGroup, Duration)], tck: u64) {
        let force = std::mem::take(&mut self.force);
        let err = self.error();
        for (g, period) in groups {
            let i = *g as usize;
            let due = force || clock.due(self.bases[i].as_ref().map(|b| b.tick), *period);
            if !due {
                continue;
            }
            let Some(s) = &self.latest else {
                // Never read: report the group empty with the error.
                self.set_empty(*g, &err);
                continue;
            };
            if self.read_error.is_some() {
                // Not read this time: keep the baseline (the next good read
                // reports what grew meanwhile, so no count is lost), report
                // no growth now (none is counted twice), keep the last
                // memory values, say why.
                match g {
                    RtGroup::MemoryUsed => self.set_error(*g, &err),
                    _ => self.set_empty(*g, &err),
                }
                continue;
            }
            let started = self.started.unwrap_or(now);
            let zero;
            let (was, at, cpu_was) = match &self.bases[i] {
                Some(b) => (&b.counters, b.at, b.cpu),
                None => {
                    zero = Counters::zero();
                    (&zero, started, Some((0, 0)))
                }
            };
            let secs = now.duration_since(at).as_secs_f64();
            let mut cpu_now = None;
            match g {
                RtGroup::ExecutionStats => {
                    let mut e = report::execution_stats(&s.counters, was, secs);
                    e.error = err.clone();
                    if let Some(m) = e.latency_stats.mean.total_latency {
                        self.last_mean = Some(m);
                    }
                    self.report.execution_stats = Some(e);
                }
                RtGroup::NeuroncoreCounters => {
                    let mut n = report::neuroncore_counters(&s.counters, was, secs);
                    n.error = err.clone();
                    self.report.neuroncore_counters = Some(n);
                }
                RtGroup::MemoryUsed => {
                    let mut m = report::memory_used(s, was, secs);
                    m.error = join(&m.error, &err);
                    if !matches!(self.owner(), Owner::Alive { .. }) {
                        m.loaded_models
                            .iter_mut()
                            .for_each(|x| x.is_running = false);
                    }
                    self.report.memory_used = Some(m);
                }
                RtGroup::VcpuUsage => {
                    let v = match self.owner() {
                        Owner::Alive { pid } => match sys::process_cpu_ticks(pid) {
                            Ok(t) => {
                                cpu_now = Some(t);
                                report::runtime_vcpu(t, cpu_was.unwrap_or(t), secs, tck)
                            }
                            Err(e) => with_error(secs, e),
                        },
                        Owner::Exited { pid } => {
                            with_error(secs, format!("process {pid} has exited"))
                        }
                        Owner::Unknown => {
                            with_error(secs, "no writer holds this slab's lock".into())
                        }
                    };
                    self.report.neuron_runtime_vcpu_usage = Some(v);
                }
            }
            self.bases[i] = Some(Base {
                at: now,
                tick: clock.n,
                counters: s.counters.clone(),
                cpu: cpu_now,
            });
        }
        // Groups the configuration no longer enables for this runtime.
        let on = |g: RtGroup| groups.iter().any(|(x, _)| *x == g);
        if !on(RtGroup::ExecutionStats) {
            self.report.execution_stats = None;
        }
        if !on(RtGroup::NeuroncoreCounters) {
            self.report.neuroncore_counters = None;
        }
        if !on(RtGroup::MemoryUsed) {
            self.report.memory_used = None;
        }
        if !on(RtGroup::VcpuUsage) {
            self.report.neuron_runtime_vcpu_usage = None;
        }
    }

    fn set_empty(&mut self, g: RtGroup, err: &str) {
        let r = &mut self.report;
        match g {
            RtGroup::ExecutionStats => {
                r.execution_stats = Some(report::ExecutionStats {
                    error: err.into(),
                    ..Default::default()
                })
            }
            RtGroup::NeuroncoreCounters => {
                r.neuroncore_counters = Some(report::NeuroncoreCounters {
                    error: err.into(),
                    ..Default::default()
                })
            }
            RtGroup::MemoryUsed => {
                r.memory_used = Some(report::MemoryUsed {
                    error: err.into(),
                    ..Default::default()
                })
            }
            RtGroup::VcpuUsage => {
                r.neuron_runtime_vcpu_usage = Some(report::RuntimeVcpu {
                    error: err.into(),
                    ..Default::default()
                })
            }
        }
    }

    fn set_error(&mut self, g: RtGroup, err: &str) {
        let r = &mut self.report;
        let slot: Option<&mut String> = match g {
            RtGroup::ExecutionStats => r.execution_stats.as_mut().map(|x| &mut x.error),
            RtGroup::NeuroncoreCounters => r.neuroncore_counters.as_mut().map(|x| &mut x.error),
            RtGroup::MemoryUsed => r.memory_used.as_mut().map(|x| &mut x.error),
            RtGroup::VcpuUsage => r.neuron_runtime_vcpu_usage.as_mut().map(|x| &mut x.error),
        };
        match slot {
            Some(e) => *e = err.into(),
            None => self.set_empty(g, err),
        }
    }
}

fn with_error(secs: f64, e: String) -> report::RuntimeVcpu {
    report::RuntimeVcpu {
        period: secs,
        error: e,
        ..Default::default()
    }
}

fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}; {b}"),
    }
}

/// Ticks, and which group is due at which: a group of period `p` is
/// recomputed every `round(p / tick)` ticks (at least every tick), counted in
/// ticks rather than measured time so that a late tick never makes a group
/// skip a document (its `period` field still says the measured time).
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    /// The tick.
    pub tick: Duration,
    /// Ticks so far (the current one included).
    pub n: u64,
}

impl Clock {
    /// Is a group of `period`, last computed at tick `last`, due now?
    pub fn due(&self, last: Option<u64>, period: Duration) -> bool {
        let every = (period.as_secs_f64() / self.tick.as_secs_f64())
            .round()
            .max(1.0) as u64;
        last.is_none_or(|l| self.n.saturating_sub(l) >= every)
    }
}

/// The system groups' state.
#[derive(Default)]
struct SystemState {
    stat_base: Option<(Instant, u64, sys::ProcStat)>,
    mem_at: Option<(Instant, u64)>,
    data: SystemData,
}

/// The whole monitor.
pub struct Monitor {
    sources: Sources,
    config: Config,
    runtimes: Vec<Runtime>,
    /// Discovered slabs whose process was already gone when first seen.
    ignored: Vec<PathBuf>,
    system: SystemState,
    tck: u64,
    boot: Instant,
    clock: Clock,
}

impl Monitor {
    /// A monitor over `sources` with `config`; `default` is the tick when
    /// the configuration enables no group.
    pub fn new(sources: Sources, config: Config, default: Duration) -> Monitor {
        let runtimes = match &sources {
            Sources::Paths(ps) => ps.iter().map(|p| Runtime::new(p.clone(), true)).collect(),
            Sources::Dir(_) => Vec::new(),
        };
        let up = std::fs::read_to_string("/proc/uptime")
            .ok()
            .and_then(|s| s.split_ascii_whitespace().next()?.parse::<f64>().ok())
            .unwrap_or(0.0);
        let now = Instant::now();
        let config_tick = config.tick(default);
        Monitor {
            sources,
            config,
            runtimes,
            ignored: Vec::new(),
            system: SystemState::default(),
            tck: sys::clk_tck(),
            boot: now.checked_sub(Duration::from_secs_f64(up)).unwrap_or(now),
            clock: Clock {
                tick: config_tick,
                n: 0,
            },
        }
    }

    /// The loop's tick (the shortest enabled period).
    pub fn tick_period(&self) -> Duration {
        self.clock.tick
    }

    /// The system groups' last values.
    pub fn system_data(&self) -> &SystemData {
        &self.system.data
    }

    /// The runtimes currently reported (tag filter applied), including
    /// discovered ones whose exit was reported within [`LINGER`] (so a
    /// Prometheus scrape after a short run still sees its final counters).
    pub fn runtimes(&mut self) -> impl Iterator<Item = &mut Runtime> + '_ {
        let config = &self.config;
        self.runtimes
            .iter_mut()
            .filter(move |r| r.latest.is_none() || config.rule_for(&r.tag).is_some())
    }

    fn discover(&mut self) {
        let Sources::Dir(dir) = &self.sources else {
            return;
        };
        // A directory that cannot be read (yet) holds no runtime this tick.
        for p in watch::discover(dir).unwrap_or_default() {
            if self.ignored.contains(&p) || self.runtimes.iter().any(|r| r.path() == p) {
                continue;
            }
            let mut r = Runtime::new(p.clone(), false);
            r.read();
            if matches!(r.owner(), Owner::Exited { .. }) {
                // A slab an earlier run left behind: not a running runtime.
                self.ignored.push(p);
                continue;
            }
            self.runtimes.push(r);
        }
        // Forget ignored names that are gone (a new process may reuse one).
        self.ignored.retain(|p| p.exists());
    }

    /// One tick: read every slab, recompute the due groups, and return the
    /// document.
    pub fn tick(&mut self) -> Document {
        // Discovered runtimes whose exit was reported leave the documents at
        // once and the scrapes after LINGER.
        self.runtimes
            .retain(|r| r.explicit || r.exit_reported.is_none_or(|t| t.elapsed() < LINGER));
        self.discover();
        self.clock.n += 1;
        let now = Instant::now();
        for r in &mut self.runtimes {
            if r.exit_reported.is_none() || r.explicit {
                r.read();
            }
        }
        let mut entries = Vec::new();
        for r in &mut self.runtimes {
            if r.exit_reported.is_some() && !r.explicit {
                continue;
            }
            let groups = match self.config.rule_for(&r.tag) {
                Some(rule) => rule.groups.clone(),
                None if r.latest.is_none() => {
                    RtGroup::ALL.iter().map(|g| (*g, Duration::MAX)).collect()
                }
                None => continue,
            };
            r.update(now, &self.clock, &groups, self.tck);
            if matches!(r.owner(), Owner::Exited { .. }) && r.exit_reported.is_none() {
                r.exit_reported = Some(now);
            }
            entries.push(RuntimeEntry {
                pid: r.owner().pid(),
                neuron_runtime_tag: r.tag.clone(),
                error: r.error(),
                report: r.report.clone(),
                slab: r.path().display().to_string(),
            });
        }
        self.update_system(now);
        Document {
            neuron_runtime_data: entries,
            system_data: self.system.data.clone(),
            instance_info: InstanceInfo::default(),
            neuron_hardware_info: HardwareInfo::offline(),
        }
    }

    fn update_system(&mut self, now: Instant) {
        let groups = self.config.system.clone();
        let st = &mut self.system;
        let clock = self.clock;
        let on = |g: SysGroup| groups.iter().any(|(x, _)| *x == g);
        for (g, p) in &groups {
            match g {
                SysGroup::HwCounters => st.data.neuron_hw_counters = Some(serde_json::Value::Null),
                SysGroup::VcpuUsage => {
                    if !clock.due(st.stat_base.as_ref().map(|b| b.1), *p) {
                        continue;
                    }
                    let (was_at, _, was) =
                        st.stat_base
                            .clone()
                            .unwrap_or((self.boot, 0, sys::ProcStat::default()));
                    let secs = now.duration_since(was_at).as_secs_f64();
                    st.data.vcpu_usage = Some(match sys::proc_stat() {
                        Ok(s) => {
                            let v = report::vcpu_usage(&s, &was, secs);
                            st.stat_base = Some((now, clock.n, s));
                            v
                        }
                        Err(e) => report::VcpuUsage {
                            period: secs,
                            error: e,
                            ..Default::default()
                        },
                    });
                }
                SysGroup::MemoryInfo => {
                    if !clock.due(st.mem_at.map(|m| m.1), *p) {
                        continue;
                    }
                    let secs = now
                        .duration_since(st.mem_at.map_or(now, |m| m.0))
                        .as_secs_f64();
                    st.mem_at = Some((now, clock.n));
                    let mut m = report::MemoryInfo {
                        period: secs,
                        ..Default::default()
                    };
                    match sys::meminfo() {
                        Ok((t, u, st_, su)) => {
                            m.memory_total_bytes = t;
                            m.memory_used_bytes = u;
                            m.swap_total_bytes = st_;
                            m.swap_used_bytes = su;
                        }
                        Err(e) => m.error = e,
                    }
                    st.data.memory_info = Some(m);
                }
            }
        }
        if !on(SysGroup::HwCounters) {
            st.data.neuron_hw_counters = None;
        }
        if !on(SysGroup::VcpuUsage) {
            st.data.vcpu_usage = None;
        }
        if !on(SysGroup::MemoryInfo) {
            st.data.memory_info = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xunds::nds::{Counter, Writer};
    use xunds::wire::nds::counters::NcCounter;

    use super::super::prom;

    /// A slab path in the temporary directory, removed on drop.
    struct TempPath(PathBuf);

    impl TempPath {
        fn new(name: &str) -> TempPath {
            let p = std::env::temp_dir()
                .join(format!("xunds-engine-test-{name}-{}", std::process::id()));
            let _ = std::fs::remove_file(&p);
            TempPath(p)
        }
    }

    impl Drop for TempPath {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    /// A slab this process writes, with `completed` executions on core 0.
    fn writer(path: &Path, completed: u64) -> Writer {
        let w = Writer::create(path).unwrap();
        add(&w, completed);
        w
    }

    fn add(w: &Writer, completed: u64) {
        let c = Counter::nc(0, NcCounter::InferCompleted).unwrap();
        w.add(c, completed).unwrap();
    }

    /// The one runtime's `completed` delta and its error.
    fn completed(d: &Document) -> (u64, String) {
        let rt = &d.neuron_runtime_data[0];
        let ex = rt.report.execution_stats.as_ref().expect("execution_stats");
        (ex.execution_summary.completed, rt.error.clone())
    }

    /// A slab released and committed again by a second writer, with a
    /// Prometheus scrape between the periods that is the read to re-attach:
    /// the next period still counts the new slab from zero. (The watch used
    /// to be compared before and after the period's own read only, so the
    /// scrape's re-attach went unseen and, the new counters being above the
    /// old ones, the first 10 of the second life were taken as the old
    /// baseline and lost.)
    #[test]
    fn a_re_attach_a_scrape_made_still_resets_the_baselines() {
        let path = TempPath::new("reattach");
        let first = writer(&path.0, 10);
        let mut m = Monitor::new(
            Sources::Paths(vec![path.0.clone()]),
            Config::all(Duration::from_secs(1)),
            Duration::from_secs(1),
        );
        assert_eq!(completed(&m.tick()).0, 10);
        // The first life ends: the header goes back to zero. A scrape sees
        // it detached and drops its mapping.
        drop(first.release());
        prom::render(&mut m).unwrap();
        // The second life, on the same file, already past the first's
        // counts; the next scrape attaches to it.
        let _second = writer(&path.0, 15);
        prom::render(&mut m).unwrap();
        let (n, error) = completed(&m.tick());
        assert_eq!(n, 15, "the second life counts from zero: {error}");
        assert!(error.contains("re-created"), "{error}");
    }

    /// A writer that exits, with a Prometheus scrape between the periods
    /// that is the read to see the exit: the next period still forces the
    /// final report of every group, including one whose own period is not
    /// due. (Were the scrape to hide the exit from the period's
    /// before-and-after comparison, the slow group would keep repeating its
    /// value from before the last executions.)
    #[test]
    fn an_exit_a_scrape_saw_first_still_forces_the_final_report() {
        let path = TempPath::new("exit");
        let w = writer(&path.0, 10);
        let config = Config::parse(
            r#"{"neuron_runtimes": [{"metrics": [
                {"type": "execution_stats", "period": "1h"},
                {"type": "memory_used", "period": "1s"}]}]}"#,
            Duration::from_secs(1),
            &mut |w| panic!("{w}"),
        )
        .unwrap();
        let mut m = Monitor::new(
            Sources::Paths(vec![path.0.clone()]),
            config,
            Duration::from_secs(1),
        );
        assert_eq!(completed(&m.tick()), (10, String::new()));
        // Five more, then the writer exits (its lock goes with it; the
        // counters stay in the file).
        add(&w, 5);
        drop(w);
        prom::render(&mut m).unwrap();
        let (n, error) = completed(&m.tick());
        assert!(error.contains("has exited"), "{error}");
        assert_eq!(n, 5, "the final report has the last five: {error}");
    }

    #[test]
    fn groups_are_due_by_ticks_not_by_time() {
        let mut c = Clock {
            tick: Duration::from_millis(200),
            n: 1,
        };
        let p = Duration::from_millis(200);
        assert!(c.due(None, p));
        // The next tick is due however early it runs.
        c.n = 2;
        assert!(c.due(Some(1), p));
        assert!(!c.due(Some(2), p));
        // A 1 s group every fifth tick.
        let slow = Duration::from_secs(1);
        assert!(!c.due(Some(1), slow));
        c.n = 6;
        assert!(c.due(Some(1), slow));
        // A period shorter than the tick is every tick.
        assert!(c.due(Some(5), Duration::from_millis(1)));
    }
}
