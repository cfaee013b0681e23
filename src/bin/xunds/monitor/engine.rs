//! The monitor's state between periods: the watched runtimes, each metric
//! group's baseline, and the last value of every group, consolidated into one
//! [`Document`] per tick (neuron-monitor's execution model: a group is
//! recomputed when its own period is due, see [`Clock`]; every document
//! carries the latest value of every enabled group). With one period for
//! every group (no `-c`, or a configuration with one period) every document
//! recomputes every group; a group with a longer period than the tick repeats
//! its last values, unchanged, in the documents between its updates.
//!
//! Counts are per-period deltas of the slab's monotone counters. A runtime is
//! one writer of a slab: a new writer (another lock holder, pid and start
//! time; another tag; the slab committed again; counters going back) is a new
//! runtime, whose first report counts from zero (its period runs from the
//! writer's start). So the deltas of every report about a runtime add up to
//! its cumulative counters: a monitor that starts late, or a period in which
//! the slab could not be read, loses no count (the baseline only moves on a
//! good read). The report in which a writer is first seen gone forces every
//! group: its final counters, with `error` "" (consumers skip an entry with
//! an error) and `state` `exited`; the exit is also a line in the log.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use xunds::nds::{Counters, RecordRead};
use xunds::wire::nds::counters::NcCounter;

use super::config::{Config, RtGroup, SysGroup};
use super::report::{self, Document, Group, Report, RuntimeEntry, SystemData};
use super::sys;
use super::watch::{self, Sample, Watch};

/// How long a discovered runtime stays reported after its exit (its final
/// counters stay in the documents and the scrapes; a consumer that resets
/// when no runtime is left keeps them that long), and how long a discovered
/// slab that cannot be read stays before it is forgotten.
pub const LINGER: Duration = Duration::from_secs(60);

/// Where the monitor finds slabs.
#[derive(Clone, Debug)]
pub enum Sources {
    /// These paths, always reported (with an error while unreadable).
    Paths(Vec<PathBuf>),
    /// Every `xunds-<pid>.nds` in this directory that a running process
    /// writes.
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

/// The writer of a runtime's slab, as far as the reads have shown it.
#[derive(Clone, Debug, Default)]
struct Writer {
    /// 0 when unknown.
    pid: u32,
    /// The lock holder last seen: pid and start time (clock ticks after
    /// boot), which tell a new process from an old one with the same pid.
    holder: Option<(u32, Option<u64>)>,
    /// The last fresh process-info tag.
    tag: Option<String>,
    /// Held the lock at the last good read.
    alive: bool,
}

/// Counters that only ever grow while a writer lives.
const MONOTONE: [NcCounter; 5] = [
    NcCounter::InferenceCount,
    NcCounter::InferCompleted,
    NcCounter::InferCompletedWithErr,
    NcCounter::LatencyTotal,
    NcCounter::MacCount,
];

/// Any monotone counter below `earlier`'s: the counters restarted.
fn went_back(now: &Counters, earlier: &Counters) -> bool {
    let back = |core| {
        MONOTONE
            .iter()
            .any(|&c| now.nc(core, c) < earlier.nc(core, c))
    };
    (0..xunds::nds::index::CORES).any(back)
}

/// A watched runtime.
#[derive(Default)]
pub struct Runtime {
    /// The slab (a scrape reads it too).
    pub watch: Watch,
    /// Named on the command line: reported even while unreadable, never
    /// forgotten.
    explicit: bool,
    started: Option<Instant>,
    /// The last good read.
    pub latest: Option<Sample>,
    /// When the last good read was.
    read_at: Option<Instant>,
    read_error: Option<String>,
    notes: Vec<String>,
    /// `None` until the first good read.
    writer: Option<Writer>,
    bases: [Option<Base>; 4],
    /// The last computed groups.
    pub report: Report,
    /// The gauge groups' (`neuroncore_counters`,
    /// `neuron_runtime_vcpu_usage`) last values computed without an error
    /// (what a gauge shows until the next good one, as the companion keeps
    /// it).
    pub good: Report,
    /// When the writer's exit was first seen (and its final report made).
    exited_at: Option<Instant>,
    /// Tell the groups to report now (exit, new writer).
    force: bool,
    /// The watch's generation the baselines belong to.
    generation_seen: u64,
}

impl Runtime {
    fn new(path: PathBuf, explicit: bool) -> Runtime {
        Runtime {
            watch: Watch::new(path),
            explicit,
            ..Runtime::default()
        }
    }

    /// The writing process's pid (0 when unknown).
    pub fn pid(&self) -> u32 {
        self.writer.as_ref().map_or(0, |w| w.pid)
    }

    /// `running`, `exited` or `unknown`.
    pub fn state(&self) -> &'static str {
        match &self.writer {
            Some(w) if w.alive => "running",
            Some(w) if w.holder.is_some() || w.pid != 0 => "exited",
            _ => "unknown",
        }
    }

    /// The tag as the Neuron runtime sets it: the published one, else the
    /// pid ("" when neither is known).
    pub fn tag(&self) -> String {
        match &self.writer {
            Some(Writer { tag: Some(t), .. }) => t.clone(),
            _ if self.pid() != 0 => self.pid().to_string(),
            _ => String::new(),
        }
    }

    /// The runtime-level error ("" when fine).
    pub fn error(&self) -> String {
        let parts = self.read_error.iter().chain(&self.notes);
        parts.cloned().collect::<Vec<_>>().join("; ")
    }

    /// Read the slab for a period; `log` gets a line for an exit.
    fn read(&mut self, log: &mut Vec<String>) {
        self.notes.clear();
        let (s, note) = match self.watch.sample() {
            Ok(x) => x,
            Err(e) => {
                self.read_error = Some(e);
                return;
            }
        };
        self.read_error = None;
        self.read_at = Some(Instant::now());
        self.notes.extend(note);
        let holder = s.holder.map(|pid| (pid, sys::start_ticks(pid)));
        let tag = s.tag();
        let generation = self.watch.generation;
        fn differs<T: PartialEq>(now: &Option<T>, was: &Option<T>) -> bool {
            now.is_some() && was.is_some() && now != was
        }
        let new_writer = self.writer.as_ref().is_some_and(|w| {
            generation != self.generation_seen
                || differs(&holder, &w.holder)
                || differs(&tag, &w.tag)
                || self
                    .latest
                    .as_ref()
                    .is_some_and(|l| went_back(&s.snap.counters, &l.snap.counters))
        });
        self.generation_seen = generation;
        if new_writer {
            self.notes
                .push("a new writer took over the slab: counting from zero again".into());
            (self.writer, self.started, self.exited_at) = (None, None, None);
            self.bases = Default::default();
        }
        let first = self.writer.is_none();
        let w = self.writer.get_or_insert_with(Writer::default);
        let was_alive = w.alive;
        w.tag = tag.or(w.tag.take());
        w.alive = holder.is_some();
        if let Some((pid, _)) = holder {
            (w.pid, w.holder) = (pid, holder);
        } else if w.pid == 0 {
            // Gone before it was seen: the pid its default name or its
            // default tag (the pid) carries.
            w.pid = watch::pid_from_name(&self.watch.path)
                .or_else(|| w.tag.as_deref()?.parse().ok())
                .unwrap_or(0);
        }
        let (pid, alive) = (w.pid, w.alive);
        if !alive && (was_alive || first) && self.exited_at.is_none() && (pid != 0 || !first) {
            self.exited_at = Some(Instant::now());
            self.force = true;
            let (path, tag) = (self.watch.path.display(), self.tag());
            log.push(format!(
                "{path}: process {pid} (tag {tag:?}) has exited; its final counters are in this report"
            ));
        }
        if let RecordRead::Torn(t) = &s.snap.process_info {
            let why = t.reason;
            self.notes
                .push(format!("process info: torn record ({why:?}), not used"));
        }
        if self.started.is_none() {
            self.started = Some(self.start_instant(alive.then_some(pid)));
        }
        self.latest = Some(s);
    }

    /// When the writer started: its process's start, else the slab file's
    /// modification time, else now.
    fn start_instant(&self, alive: Option<u32>) -> Instant {
        let since = alive.and_then(sys::process_age).or_else(|| {
            let t = std::fs::metadata(&self.watch.path).ok()?.modified().ok()?;
            std::time::SystemTime::now().duration_since(t).ok()
        });
        let now = Instant::now();
        now.checked_sub(since.unwrap_or_default()).unwrap_or(now)
    }

    /// Recompute the groups that are due (all when forced).
    fn update(&mut self, now: Instant, clock: &Clock, groups: &[(RtGroup, Duration)], tck: u64) {
        use RtGroup::*;
        let force = std::mem::take(&mut self.force);
        let err = self.error();
        let (pid, state) = (self.pid(), self.state());
        // Not read this time: keep the baseline (the next good read
        // reports what grew meanwhile, so no count is lost), report no
        // growth now (none is counted twice), keep the last memory values,
        // say why. Never read: the group empty with the error.
        let s = self.latest.as_ref().filter(|_| self.read_error.is_none());
        let keep_last = self.latest.is_some();
        let r = &mut self.report;
        for &(g, period) in groups {
            let base = &mut self.bases[g as usize];
            if !force && !clock.due(base.as_ref().map(|b| b.tick), period) {
                continue;
            }
            let (was, at, cpu_was) = match base {
                Some(b) => (&b.counters, b.at, b.cpu),
                None => (&Counters::ZERO, self.started.unwrap_or(now), Some((0, 0))),
            };
            let secs = now.duration_since(at).as_secs_f64();
            let mut cpu_now = None;
            match g {
                ExecutionStats => {
                    let e = s.map(|s| report::execution_stats(&s.snap.counters, was, secs));
                    put(&mut r.execution_stats, e, &err, false);
                }
                NeuroncoreCounters => {
                    let n = s.map(|s| report::neuroncore_counters(&s.snap.counters, was, secs));
                    put(&mut r.neuroncore_counters, n, &err, false);
                }
                MemoryUsed => {
                    let m = s.map(|s| {
                        let mut m = report::memory_used(s, was, secs);
                        let running = state == "running";
                        let models = m.values.loaded_models.iter_mut();
                        models.for_each(|x| x.is_running &= running);
                        m
                    });
                    put(&mut r.memory_used, m, &err, keep_last);
                }
                VcpuUsage => {
                    let v = s.map(|_| {
                        let ticks = match state {
                            "running" => {
                                sys::read(&format!("/proc/{pid}/stat"), sys::parse_cpu_ticks)
                            }
                            "exited" => Err(format!("process {pid} has exited")),
                            _ => Err("no writer holds this slab's lock".into()),
                        };
                        cpu_now = ticks.as_ref().ok().copied();
                        let usage =
                            ticks.map(|t| report::runtime_vcpu(t, cpu_was.unwrap_or(t), secs, tck));
                        Group::of(secs, usage)
                    });
                    put(&mut r.neuron_runtime_vcpu_usage, v, &err, false);
                }
            }
            if let Some(s) = s {
                let counters = s.snap.counters.clone();
                *base = Some(Base {
                    at: now,
                    tick: clock.n,
                    counters,
                    cpu: cpu_now,
                });
            }
        }
        // The groups the configuration no longer enables for this runtime
        // go; the gauges keep their last good values.
        let off = |g: RtGroup| !groups.iter().any(|(x, _)| *x == g);
        r.execution_stats.take_if(|_| off(ExecutionStats));
        r.neuroncore_counters.take_if(|_| off(NeuroncoreCounters));
        r.memory_used.take_if(|_| off(MemoryUsed));
        r.neuron_runtime_vcpu_usage.take_if(|_| off(VcpuUsage));
        let (vcpu, good) = (&r.neuron_runtime_vcpu_usage, &mut self.good);
        keep(&r.neuroncore_counters, &mut good.neuroncore_counters);
        keep(vcpu, &mut good.neuron_runtime_vcpu_usage);
    }
}

/// Store a group's new value with `err` added to its own error; without
/// one (the slab not read), `err` on the last value when `keep_last` and
/// there is one, else on an empty group (no growth).
fn put<T: Default>(slot: &mut Option<Group<T>>, new: Option<Group<T>>, err: &str, keep_last: bool) {
    let mut g = new.unwrap_or_else(|| {
        let last = slot.take().filter(|_| keep_last).unwrap_or_default();
        let error = String::new();
        Group { error, ..last }
    });
    let own = std::mem::take(&mut g.error);
    let errors = [own.as_str(), err].into_iter().filter(|x| !x.is_empty());
    g.error = errors.collect::<Vec<_>>().join("; ");
    *slot = Some(g);
}

/// Copy a group computed without an error to `good`.
fn keep<T: Clone>(now: &Option<Group<T>>, good: &mut Option<Group<T>>) {
    if let Some(x) = now.as_ref().filter(|x| x.error.is_empty()) {
        *good = Some(x.clone());
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

/// The system groups' state: each group's last computation (time and
/// tick), the `/proc/stat` reading the next vCPU use starts from, and the
/// values.
#[derive(Default)]
pub struct SystemState {
    at: [Option<(Instant, u64)>; 3],
    stat: sys::ProcStat,
    /// The system groups' last values.
    pub data: SystemData,
}

/// The whole monitor.
pub struct Monitor {
    sources: Sources,
    config: Config,
    runtimes: Vec<Runtime>,
    /// The system groups.
    pub system: SystemState,
    tck: u64,
    boot: Instant,
    /// Its tick is the loop's (the shortest enabled period).
    pub clock: Clock,
    /// The lines to log (exits seen), for the caller to take.
    pub log: Vec<String>,
}

impl Monitor {
    /// A monitor over `sources` with `config`; `default` is the tick when
    /// the configuration enables no group.
    pub fn new(sources: Sources, config: Config, default: Duration) -> Monitor {
        let runtimes = match &sources {
            Sources::Paths(ps) => ps.iter().map(|p| Runtime::new(p.clone(), true)).collect(),
            Sources::Dir(_) => Vec::new(),
        };
        let now = Instant::now();
        let up = sys::uptime().unwrap_or_default();
        let tick = config.tick(default);
        Monitor {
            sources,
            config,
            runtimes,
            system: SystemState::default(),
            tck: sys::clk_tck(),
            boot: now.checked_sub(up).unwrap_or(now),
            clock: Clock { tick, n: 0 },
            log: Vec::new(),
        }
    }

    /// Why each named slab could not be read at the last tick.
    pub fn unreadable(&self) -> Vec<String> {
        let named = self.runtimes.iter().filter(|r| r.explicit);
        named.filter_map(|r| r.read_error.clone()).collect()
    }

    /// The runtimes currently reported (tag filter applied).
    pub fn runtimes(&mut self) -> impl Iterator<Item = &mut Runtime> + '_ {
        let config = &self.config;
        self.runtimes
            .iter_mut()
            .filter(move |r| r.latest.is_none() || config.rule_for(&r.tag()).is_some())
    }

    /// Add the slabs in the directory a running process may write: a
    /// default name whose pid is running (a dead pid's slab is left behind,
    /// not a runtime, and costs one `stat` of `/proc`). One pass over the
    /// directory, one set lookup per name: linear in the slabs.
    fn discover(&mut self) {
        let Sources::Dir(dir) = &self.sources else {
            return;
        };
        let known: HashSet<PathBuf> = self.runtimes.iter().map(|r| r.watch.path.clone()).collect();
        // A directory that cannot be read (yet) holds no runtime this tick.
        for p in watch::discover(dir).unwrap_or_default() {
            let running = watch::pid_from_name(&p)
                .is_some_and(|pid| Path::new("/proc").join(pid.to_string()).exists());
            if running && !known.contains(&p) {
                self.runtimes.push(Runtime::new(p, false));
            }
        }
    }

    /// One tick: read every slab, recompute the due groups, and return the
    /// document.
    pub fn tick(&mut self) -> Document {
        self.discover();
        self.clock.n += 1;
        let now = Instant::now();
        for r in &mut self.runtimes {
            r.read(&mut self.log);
        }
        // A discovered slab is a runtime once a good read found its writer
        // running; it is forgotten LINGER after its exit was reported, or
        // after its last good read.
        self.runtimes.retain(|r| {
            r.explicit
                || match (&r.writer, r.exited_at) {
                    (_, Some(t)) => now.duration_since(t) < LINGER,
                    (Some(w), None) => w.alive || r.read_at.is_some_and(|t| now - t < LINGER),
                    (None, None) => false,
                }
        });
        let mut entries = Vec::new();
        for r in &mut self.runtimes {
            let groups = match self.config.rule_for(&r.tag()) {
                Some(rule) => rule.groups.clone(),
                None if r.latest.is_none() => RtGroup::ALL.map(|g| (g, Duration::MAX)).to_vec(),
                None => continue,
            };
            r.update(now, &self.clock, &groups, self.tck);
            entries.push(RuntimeEntry {
                pid: r.pid(),
                address: String::new(),
                neuron_runtime_tag: r.tag(),
                error: r.error(),
                report: r.report.clone(),
                state: r.state(),
                slab: r.watch.path.display().to_string(),
            });
        }
        self.update_system(now);
        Document {
            neuron_runtime_data: entries,
            system_data: self.system.data.clone(),
            instance_info: Default::default(),
            neuron_hardware_info: report::hardware_info(),
        }
    }

    /// Recompute the system groups that are due; a group's `period` runs
    /// from its last computation, or from the boot.
    fn update_system(&mut self, now: Instant) {
        let (st, clock) = (&mut self.system, self.clock);
        // The configuration is fixed: a group it does not enable is never
        // computed, so never in the document.
        for &(g, p) in &self.config.system {
            let (at, d) = (&mut st.at[g as usize], &mut st.data);
            if !clock.due(at.map(|a| a.1), p) {
                continue;
            }
            let prev = at.replace((now, clock.n));
            let since = prev.map_or(self.boot, |a| a.0);
            let secs = now.duration_since(since).as_secs_f64();
            match g {
                SysGroup::HwCounters => d.neuron_hw_counters = Some(report::HwCounters(secs)),
                SysGroup::MemoryInfo => {
                    let m = sys::read("/proc/meminfo", sys::parse_meminfo);
                    d.memory_info = Some(Group::of(secs, m));
                }
                SysGroup::VcpuUsage => {
                    // A failed read keeps its baseline (time and reading)
                    // for the next one.
                    let usage = match sys::read("/proc/stat", sys::parse_proc_stat) {
                        Ok(s) => {
                            let usage = report::vcpu_usage(&s, &st.stat);
                            st.stat = s;
                            Ok(usage)
                        }
                        Err(e) => {
                            *at = prev;
                            Err(e)
                        }
                    };
                    d.vcpu_usage = Some(Group::of(secs, usage));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xunds::nds::{Counter, Writer};
    use xunds::wire::nds::c_string;
    use xunds::wire::nds::process::{ProcessInfo, VersionInfo};

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

    /// A slab this process writes, tagged `tag`, with `completed`
    /// executions on core 0.
    fn writer(path: &Path, tag: &str, completed: u64) -> Writer {
        let w = Writer::create(path).unwrap();
        let v = VersionInfo {
            major: 0,
            minor: 0,
            build: 0,
        };
        w.publish_process_info(&ProcessInfo {
            hash: 0,
            framework_type: 0,
            tag: c_string(tag),
            framework_version: v,
            fal_version: v,
            runtime_version: v,
        })
        .unwrap();
        add(&w, completed);
        w
    }

    fn add(w: &Writer, completed: u64) {
        let c = Counter::nc(0, NcCounter::InferCompleted).unwrap();
        w.add(c, completed).unwrap();
    }

    fn monitor(path: &Path, config: Config) -> Monitor {
        let d = Duration::from_secs(1);
        Monitor::new(Sources::Paths(vec![path.into()]), config, d)
    }

    /// The one runtime's `completed` delta, its error and its state.
    fn completed(d: &Document) -> (u64, String, &'static str) {
        let rt = &d.neuron_runtime_data[0];
        let ex = rt.report.execution_stats.as_ref().expect("execution_stats");
        let n = *ex.execution_summary.get("completed").unwrap();
        (n, rt.error.clone(), rt.state)
    }

    /// A slab released and committed again by a second writer, with a
    /// Prometheus scrape between the periods that is the read to see the
    /// new commit: the next period still counts the new slab from zero.
    #[test]
    fn a_re_commit_a_scrape_saw_still_resets_the_baselines() {
        let path = TempPath::new("reattach");
        let first = writer(&path.0, "a", 10);
        let mut m = monitor(&path.0, Config::all(Duration::from_secs(1)));
        assert_eq!(completed(&m.tick()).0, 10);
        // The first life ends: the header goes back to zero.
        drop(first.release());
        prom::render(&mut m);
        // The second life, same tag, already past the first's counts.
        let _second = writer(&path.0, "a", 15);
        prom::render(&mut m);
        let (n, error, _) = completed(&m.tick());
        assert_eq!(n, 15, "the second life counts from zero: {error}");
        assert!(error.contains("new writer"), "{error}");
    }

    /// A new writer that takes over a slab between two periods (its
    /// counters already past the old writer's) is a new runtime counting
    /// from zero: no release was seen, but the writer is another one.
    #[test]
    fn a_new_writer_past_the_old_counts_counts_from_zero() {
        let path = TempPath::new("newwriter");
        let first = writer(&path.0, "a", 10);
        let mut m = monitor(&path.0, Config::all(Duration::from_secs(1)));
        assert_eq!(completed(&m.tick()).0, 10);
        drop(first);
        let _second = writer(&path.0, "b", 25);
        let (n, error, state) = completed(&m.tick());
        assert_eq!(n, 25, "{error}");
        assert_eq!(state, "running");
        assert_eq!(m.tick().neuron_runtime_data[0].neuron_runtime_tag, "b");
    }

    /// A writer that exits, with a Prometheus scrape between the periods:
    /// the next period forces the final report of every group, including
    /// one whose own period is not due, with no error (consumers skip an
    /// entry with one) and the state `exited`; the log says so.
    #[test]
    fn an_exit_is_a_final_report_without_an_error() {
        let path = TempPath::new("exit");
        let w = writer(&path.0, "x", 10);
        let config = Config::parse(
            r#"{"neuron_runtimes": [{"metrics": [
                {"type": "execution_stats", "period": "1h"},
                {"type": "memory_used", "period": "1s"}]}]}"#,
            Duration::from_secs(1),
            &mut |w| panic!("{w}"),
        )
        .unwrap();
        let mut m = monitor(&path.0, config);
        assert_eq!(completed(&m.tick()), (10, String::new(), "running"));
        add(&w, 5);
        drop(w);
        prom::render(&mut m);
        assert_eq!(completed(&m.tick()), (5, String::new(), "exited"));
        let log = std::mem::take(&mut m.log);
        assert_eq!(log.len(), 1, "{log:?}");
        assert!(log[0].contains("has exited"), "{log:?}");
        // Once.
        m.tick();
        assert!(std::mem::take(&mut m.log).is_empty());
    }

    #[test]
    fn counters_going_back_are_a_restart() {
        let mut a = Counters::ZERO;
        a.nc[3][NcCounter::InferCompleted as usize] = 5;
        assert!(went_back(&Counters::ZERO, &a));
        assert!(!went_back(&a, &Counters::ZERO));
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
