//! neuron-monitor's configuration file (`-c FILE`), same schema:
//!
//! ```json
//! {"period": "1s",
//!  "neuron_runtimes": [{"tag_filter": ".*", "period": "2s",
//!                       "metrics": [{"type": "execution_stats", "period": "5s"}]}],
//!  "system_metrics": [{"type": "vcpu_usage"}, {"type": "memory_info"}]}
//! ```
//!
//! A metric group's period is its own `period`, else its runtime entry's,
//! else the root's, else the default (5 s, or `--period`). `tag_filter` is a
//! regular expression that must match the whole tag; a runtime is reported
//! with the groups of the first entry that matches it, and not at all when
//! none does. Unknown metric types are reported on stderr and ignored.

use std::time::Duration;

use serde::Deserialize;

use crate::parse_duration as parse_period;

/// A metric group enum, each variant with its neuron-monitor name: `ALL`
/// in report order (the declaration order, which `Ord` sorts by too) and
/// `from_name`.
macro_rules! groups {
    ($(#[$m:meta])* pub enum $E:ident { $($(#[$vm:meta])* $V:ident = $name:literal,)* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
        pub enum $E { $($(#[$vm])* $V,)* }

        impl $E {
            /// All, in report order.
            pub const ALL: [$E; [$($name),*].len()] = [$($E::$V),*];

            fn from_name(s: &str) -> Option<$E> {
                [$(($name, $E::$V)),*].into_iter().find(|g| g.0 == s).map(|g| g.1)
            }
        }
    };
}

groups! {
    /// A per-runtime metric group.
    pub enum RtGroup {
        /// `neuroncore_counters`
        NeuroncoreCounters = "neuroncore_counters",
        /// `execution_stats`
        ExecutionStats = "execution_stats",
        /// `memory_used`
        MemoryUsed = "memory_used",
        /// `neuron_runtime_vcpu_usage`
        VcpuUsage = "neuron_runtime_vcpu_usage",
    }
}

groups! {
    /// A system-level metric group.
    pub enum SysGroup {
        /// `vcpu_usage`
        VcpuUsage = "vcpu_usage",
        /// `memory_info`
        MemoryInfo = "memory_info",
        /// `neuron_hw_counters` (always null: no driver)
        HwCounters = "neuron_hw_counters",
    }
}

/// Which runtimes get which groups.
#[derive(Clone, Debug)]
pub struct RuntimeRule {
    /// Anchored tag filter; `None` matches every tag.
    pub tag_filter: Option<regex_lite::Regex>,
    /// Enabled groups with their periods.
    pub groups: Vec<(RtGroup, Duration)>,
}

/// The resolved configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Runtime rules, first match wins.
    pub rules: Vec<RuntimeRule>,
    /// Enabled system groups with their periods.
    pub system: Vec<(SysGroup, Duration)>,
}

#[derive(Deserialize)]
struct RawConfig {
    period: Option<String>,
    #[serde(default)]
    neuron_runtimes: Vec<RawRuntime>,
    #[serde(default)]
    system_metrics: Vec<RawMetric>,
}

#[derive(Deserialize)]
struct RawRuntime {
    tag_filter: Option<String>,
    period: Option<String>,
    #[serde(default)]
    metrics: Vec<RawMetric>,
}

#[derive(Deserialize)]
struct RawMetric {
    #[serde(rename = "type")]
    kind: String,
    period: Option<String>,
}

impl Config {
    /// Every group for every runtime, all at `period` (no `-c`).
    pub fn all(period: Duration) -> Config {
        Config {
            rules: vec![RuntimeRule {
                tag_filter: None,
                groups: RtGroup::ALL.iter().map(|g| (*g, period)).collect(),
            }],
            system: SysGroup::ALL.iter().map(|g| (*g, period)).collect(),
        }
    }

    /// Parse a neuron-monitor configuration; `default` is the period of
    /// groups that name none. Warnings (ignored types) go to `warn`.
    pub fn parse(
        text: &str,
        default: Duration,
        warn: &mut dyn FnMut(String),
    ) -> Result<Config, String> {
        let raw: RawConfig = serde_json::from_str(text).map_err(|e| format!("config: {e}"))?;
        let root = period(&raw.period, "", default)?;
        let mut rules = Vec::new();
        for (i, r) in raw.neuron_runtimes.iter().enumerate() {
            let at = format!("neuron_runtimes[{i}]");
            let rule_period = period(&r.period, &format!("{at}."), root)?;
            let anchored = |f| regex_lite::Regex::new(&format!("^(?:{f})$"));
            let tag_filter = r
                .tag_filter
                .as_ref()
                .map(anchored)
                .transpose()
                .map_err(|e| format!("config: {at}.tag_filter: {e}"))?;
            let at = format!("{at}.metrics");
            let groups = metrics(&r.metrics, &at, rule_period, RtGroup::from_name, warn)?;
            rules.push(RuntimeRule { tag_filter, groups });
        }
        let sys = &raw.system_metrics;
        let system = metrics(sys, "system_metrics", root, SysGroup::from_name, warn)?;
        Ok(Config { rules, system })
    }

    /// The rule for a runtime tagged `tag`, if any.
    pub fn rule_for(&self, tag: &str) -> Option<&RuntimeRule> {
        self.rules
            .iter()
            .find(|r| r.tag_filter.as_ref().is_none_or(|f| f.is_match(tag)))
    }

    /// The shortest period of any enabled group (the loop's tick), at least
    /// 10 ms; the default when nothing is enabled.
    pub fn tick(&self, default: Duration) -> Duration {
        let periods = self.rules.iter().flat_map(|r| &r.groups).map(|g| g.1);
        let min = periods.chain(self.system.iter().map(|g| g.1)).min();
        min.unwrap_or(default).max(Duration::from_millis(10))
    }
}

/// A period given at `at`, else `default`.
fn period(p: &Option<String>, at: &str, default: Duration) -> Result<Duration, String> {
    match p {
        Some(p) => parse_period(p).map_err(|e| format!("config: {at}period: {e}")),
        None => Ok(default),
    }
}

/// The metric list at `at` (its groups' default period `default`): each
/// known group once, in report order, with its period; an unknown type is
/// a warning.
fn metrics<G: Ord + Copy>(
    list: &[RawMetric],
    at: &str,
    default: Duration,
    from_name: fn(&str) -> Option<G>,
    warn: &mut dyn FnMut(String),
) -> Result<Vec<(G, Duration)>, String> {
    let mut groups = Vec::new();
    for (j, m) in list.iter().enumerate() {
        let p = period(&m.period, &format!("{at}[{j}]."), default)?;
        let kind = &m.kind;
        match from_name(kind) {
            Some(g) => groups.push((g, p)),
            None => warn(format!("config: {at}[{j}]: unknown type {kind:?} ignored")),
        }
    }
    groups.sort_by_key(|(g, _)| *g);
    groups.dedup_by_key(|(g, _)| *g);
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_lists_name_the_entry_they_ignore_or_refuse() {
        let text = r#"{"neuron_runtimes": [{"metrics": [{"type": "memory_used"}, {"type": "gpu"}]}],
                       "system_metrics": [{"type": "vcpu_usage"}, {"type": "disk"}]}"#;
        let mut warns = Vec::new();
        Config::parse(text, Duration::from_secs(5), &mut |w| warns.push(w)).unwrap();
        assert_eq!(
            warns,
            [
                r#"config: neuron_runtimes[0].metrics[1]: unknown type "gpu" ignored"#,
                r#"config: system_metrics[1]: unknown type "disk" ignored"#,
            ]
        );
        let text = r#"{"system_metrics": [{"type": "vcpu_usage"}, {"type": "memory_info", "period": "soon"}]}"#;
        let e = Config::parse(text, Duration::from_secs(5), &mut |_| {}).unwrap_err();
        assert!(e.starts_with("config: system_metrics[1].period: "), "{e}");
    }

    #[test]
    fn the_guides_example_config_parses() {
        let text = r#"{
          "period": "1s",
          "neuron_runtimes": [{"tag_filter": ".*", "metrics": [
              {"type": "neuroncore_counters"}, {"type": "memory_used"},
              {"type": "neuron_runtime_vcpu_usage"}, {"type": "execution_stats"}]}],
          "system_metrics": [{"type": "vcpu_usage"}, {"type": "memory_info"},
              {"period": "2s", "type": "neuron_hw_counters"}]}"#;
        let mut warns = Vec::new();
        let c = Config::parse(text, Duration::from_secs(5), &mut |w| warns.push(w)).unwrap();
        assert!(warns.is_empty());
        let r = c.rule_for("anything").unwrap();
        assert_eq!(r.groups.len(), 4);
        assert!(r.groups.iter().all(|(_, p)| *p == Duration::from_secs(1)));
        assert_eq!(c.system[2], (SysGroup::HwCounters, Duration::from_secs(2)));
        assert_eq!(c.tick(Duration::from_secs(5)), Duration::from_secs(1));
    }

    #[test]
    fn tag_filters_are_anchored_and_first_match_wins() {
        let text = r#"{"neuron_runtimes": [
            {"tag_filter": "train.*", "metrics": [{"type": "memory_used"}]},
            {"tag_filter": "xunds", "period": "3s", "metrics": [{"type": "execution_stats"}, {"type": "k8s"}]}]}"#;
        let mut warns = Vec::new();
        let c = Config::parse(text, Duration::from_secs(5), &mut |w| warns.push(w)).unwrap();
        assert_eq!(warns.len(), 1, "{warns:?}");
        assert_eq!(
            c.rule_for("training").unwrap().groups[0].0,
            RtGroup::MemoryUsed
        );
        assert_eq!(
            c.rule_for("xunds").unwrap().groups,
            vec![(RtGroup::ExecutionStats, Duration::from_secs(3))]
        );
        assert!(c.rule_for("xunds2").is_none());
        assert!(c.rule_for("pretrain").is_none());
        assert!(c.system.is_empty());
    }

    #[test]
    fn bad_configs_say_what_is_wrong() {
        let d = Duration::from_secs(5);
        let e = Config::parse("{", d, &mut |_| {}).unwrap_err();
        assert!(e.starts_with("config:"), "{e}");
        let e = Config::parse(r#"{"period": "soon"}"#, d, &mut |_| {}).unwrap_err();
        assert!(e.contains("period"), "{e}");
        let e = Config::parse(
            r#"{"neuron_runtimes": [{"tag_filter": "("}]}"#,
            d,
            &mut |_| {},
        )
        .unwrap_err();
        assert!(e.contains("tag_filter"), "{e}");
    }
}
