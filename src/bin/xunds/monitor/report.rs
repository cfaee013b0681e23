//! The neuron-monitor JSON document, field for field, and how each metric
//! group is computed from two counter samples.
//!
//! Names, nesting, types and units are neuron-monitor's (its user guide,
//! "The JSON output format"). Fields that are ours, not neuron-monitor's
//! (its consumers ignore them): `neuron_runtime_data[].state` (`running`,
//! or `exited`: these are the writer's final counters), `.slab` (the slab
//! path) and `execution_stats.latency_stats.mean` (the datastore keeps
//! latency sums, not distributions, so the percentile objects are `null`
//! and the mean over the period is given here).
//!
//! Every group's `period` is the time its values cover: since the group was
//! last computed, or for its first value since the start of what it
//! measures (the runtime's start for a runtime's groups, the boot for the
//! system's).

use std::borrow::Borrow;

use indexmap::IndexMap;
use serde::{Serialize, Serializer};
use serde_json::{json, Value};

use xunds::nds::reader::{CORE_MEMORY, ERROR_CLASSES, OUTCOMES};
use xunds::nds::{Counters, RecordRead};
use xunds::wire::nds::counters::{NcCounter, NdCounter};
use xunds::wire::nds::model::{MemLocation, MemSlot, ModelRecord};

use super::sys::{self, round2, ProcStat};
use super::watch::Sample;

/// A JSON object keyed by fixed names, in the order given.
pub type Named<V> = IndexMap<&'static str, V>;

/// The whole document printed each period.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Document {
    /// One entry per watched runtime that passes the tag filter.
    pub neuron_runtime_data: Vec<RuntimeEntry>,
    /// System-level groups.
    pub system_data: SystemData,
    /// Always present; empty strings offline.
    pub instance_info: InstanceInfo,
    /// Always present ([`hardware_info`]).
    pub neuron_hardware_info: Named<Value>,
}

/// One runtime (one slab).
#[derive(Clone, Debug, Serialize)]
pub struct RuntimeEntry {
    /// The writing process (0 when unknown).
    pub pid: u32,
    /// Always "" (no network address: the runtime is a local process).
    pub address: String,
    /// The process-info tag (the pid when the runtime published none).
    pub neuron_runtime_tag: String,
    /// What went wrong reading this runtime ("" when fine).
    pub error: String,
    /// The groups.
    pub report: Report,
    /// Ours: `running`, `exited` (the writer is gone: its final counters)
    /// or `unknown` (never read, or no writer seen).
    pub state: &'static str,
    /// Ours: the slab's path.
    pub slab: String,
}

/// The runtime-level groups; a group not enabled by the configuration is
/// left out.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// `neuroncore_counters`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub neuroncore_counters: Option<Group<NeuroncoreCounters>>,
    /// `execution_stats`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_stats: Option<Group<ExecutionStats>>,
    /// `memory_used`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_used: Option<Group<MemoryUsed>>,
    /// `neuron_runtime_vcpu_usage`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub neuron_runtime_vcpu_usage: Option<Group<RuntimeVcpu>>,
}

/// A metric group as neuron-monitor writes each: the seconds its values
/// cover, its own fields, and its `error`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Group<T> {
    /// Measured seconds.
    pub period: f64,
    /// The group's own fields, between `period` and `error`.
    #[serde(flatten)]
    pub values: T,
    /// "" when fine.
    pub error: String,
}

/// A group's own fields are read through it.
impl<T> std::ops::Deref for Group<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.values
    }
}

impl<T> Group<T> {
    /// `values` over `secs` seconds, without an error.
    pub fn new(secs: f64, values: T) -> Group<T> {
        Group {
            period: secs,
            values,
            error: String::new(),
        }
    }
}

impl<T: Default> Group<T> {
    /// `values` over `secs` seconds, or no values and the error.
    pub fn of(secs: f64, values: Result<T, String>) -> Group<T> {
        match values {
            Ok(v) => Group::new(secs, v),
            Err(error) => Group {
                error,
                ..Group::new(secs, T::default())
            },
        }
    }
}

/// `neuroncore_counters`
#[derive(Clone, Debug, Default, Serialize)]
pub struct NeuroncoreCounters {
    /// Cores with any non-zero counter.
    pub neuroncores_in_use: IndexMap<String, CoreUse>,
}

/// One core's use over the period.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CoreUse {
    /// Device time over the period, percent (0..=100).
    pub neuroncore_utilization: f64,
    /// Floating-point operations per second (2 per MAC).
    pub flops: u64,
}

/// `execution_stats`
#[derive(Clone, Debug, Serialize)]
pub struct ExecutionStats {
    /// Error classes over the period ([`ERROR_CLASSES`]).
    pub error_summary: Named<u64>,
    /// Outcomes over the period ([`OUTCOMES`]).
    pub execution_summary: Named<u64>,
    /// Latency over the period.
    pub latency_stats: LatencyStats,
}

/// No execution: every outcome and class there, at zero.
impl Default for ExecutionStats {
    fn default() -> Self {
        execution_stats(&Counters::ZERO, &Counters::ZERO, 0.0).values
    }
}

/// `latency_stats`: the percentile objects are `null` (the datastore keeps
/// no distribution); `mean` is ours.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LatencyStats {
    /// Always `null`.
    pub total_latency: Option<()>,
    /// Always `null`.
    pub device_latency: Option<()>,
    /// Ours: means over the period in seconds (`null` without executions).
    pub mean: MeanLatency,
}

/// Mean latencies in seconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MeanLatency {
    /// LATENCY_TOTAL / INFERENCE_COUNT
    pub total_latency: Option<f64>,
    /// LATENCY_DEVICE / INFERENCE_COUNT
    pub device_latency: Option<f64>,
}

/// `memory_used`: the current totals and one entry per loaded model.
#[derive(Clone, Debug, Default)]
pub struct MemoryUsed {
    /// Host bytes by [`HOST_KINDS`] (the ND MEM_USAGE_*_HOST counters).
    pub host: [u64; 4],
    /// Per core in use, its device bytes by [`CORE_MEMORY`] kind.
    pub cores: Vec<(usize, [u64; 5])>,
    /// One entry per fresh model record.
    pub loaded_models: Vec<LoadedModel>,
}

/// Host memory by kind, as neuron-monitor names it: application memory
/// (code, scratchpad and misc), constants, DMA buffers (not tracked by the
/// datastore: 0) and tensors.
pub const HOST_KINDS: [&str; 4] = ["application_memory", "constants", "dma_buffers", "tensors"];

/// One loaded model: its fresh model record (its memory at load time).
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedModel {
    /// The record as read.
    pub record: ModelRecord,
    /// Its core ran executions during the period.
    pub is_running: bool,
}

impl LoadedModel {
    /// Host bytes by [`HOST_KINDS`].
    pub fn host(&self) -> [u64; 4] {
        host_kinds(|slot| self.record.usage(MemLocation::Host, slot).total_size)
    }

    /// Device bytes by [`CORE_MEMORY`] kind; a model's scratchpad is
    /// counted as runtime memory, so its own is 0 (and left out of the
    /// document).
    pub fn device(&self) -> [u64; 5] {
        use MemSlot::*;
        let dev = |slot| self.record.usage(MemLocation::Device, slot).total_size;
        let runtime = byte_sum([dev(Misc), dev(Scratchpad)]);
        [dev(Constants), dev(Code), 0, runtime, dev(Tensors)]
    }
}

/// A sum of byte counts read from another process's slab: it saturates
/// rather than overflow (a panic in a debug build, a wrong small total in a
/// release one).
pub fn byte_sum<T: Borrow<u64>>(xs: impl IntoIterator<Item = T>) -> u64 {
    xs.into_iter().fold(0, |a, b| a.saturating_add(*b.borrow()))
}

/// `names[i]: values[i]`, in order.
fn named<const N: usize>(names: [&'static str; N], values: &[u64; N]) -> Named<u64> {
    names.into_iter().zip(*values).collect()
}

impl Serialize for MemoryUsed {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let kinds = CORE_MEMORY.map(|k| k.0);
        let cores = self
            .cores
            .iter()
            .map(|(c, m)| (c.to_string(), named(kinds, m)));
        obj! {
            neuron_runtime_used_bytes: obj! {
                host: byte_sum(self.host),
                neuron_device: byte_sum(self.cores.iter().flat_map(|c| &c.1)),
                usage_breakdown: obj! {
                    host: named(HOST_KINDS, &self.host),
                    neuroncore_memory_usage: cores.collect::<IndexMap<_, _>>(),
                },
            },
            loaded_models: &self.loaded_models,
        }
        .serialize(s)
    }
}

impl Serialize for LoadedModel {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (r, d, host) = (&self.record, &self.device(), &self.host());
        let subgraph = obj! {
            memory_used_bytes: obj! {
                host: byte_sum(host),
                neuron_device: byte_sum(d),
                usage_breakdown: obj! {
                    host: named(HOST_KINDS, host),
                    neuron_device: obj! {
                        constants: d[0],
                        model_code: d[1],
                        runtime_memory: d[3],
                        tensors: d[4],
                    },
                },
            },
            neuroncore_index: u32::from(r.nc_index),
            neuron_device_index: 0,
        };
        obj! {
            name: r.name_str(),
            uuid: crate::hex(&r.uuid),
            model_id: r.model_id,
            is_running: self.is_running,
            subgraphs: IndexMap::from([(format!("sg_{:02}", r.sg_index), subgraph)]),
        }
        .serialize(s)
    }
}

/// `neuron_runtime_vcpu_usage`
#[derive(Clone, Debug, Default, Serialize)]
pub struct RuntimeVcpu {
    /// Percent of one vCPU.
    pub vcpu_usage: UserSystem,
}

/// User and system percentages.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct UserSystem {
    /// user
    pub user: f64,
    /// system
    pub system: f64,
}

/// `system_data`
#[derive(Clone, Debug, Default, Serialize)]
pub struct SystemData {
    /// `neuron_hw_counters`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub neuron_hw_counters: Option<HwCounters>,
    /// `vcpu_usage`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vcpu_usage: Option<Group<VcpuUsage>>,
    /// `memory_info`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_info: Option<Group<sys::MemoryInfo>>,
}

/// `neuron_hw_counters` over a period (seconds): no Neuron driver, so no
/// device and an error that says so.
#[derive(Clone, Debug, Default)]
pub struct HwCounters(pub f64);

impl Serialize for HwCounters {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let error = "no Neuron driver: no hardware ECC counters (devices are simulated inside each xunds process)";
        obj! { period: self.0, neuron_devices: [(); 0], error: error }.serialize(s)
    }
}

/// `vcpu_usage`
#[derive(Clone, Debug, Default, Serialize)]
pub struct VcpuUsage {
    /// Over all vCPUs, percent by [`sys::CPU_FIELDS`].
    pub average_usage: Named<f64>,
    /// Per vCPU, likewise.
    pub usage_data: IndexMap<String, Named<f64>>,
    /// Context switches during the period.
    pub context_switch_count: u64,
}

impl VcpuUsage {
    /// The average's user and system percentages as the companion sums
    /// them: user + nice, and system + io_wait + irq + soft_irq.
    pub fn user_system(&self) -> (f64, f64) {
        let sum = |ks: &[&str]| ks.iter().filter_map(|k| self.average_usage.get(*k)).sum();
        (
            sum(&["user", "nice"]),
            sum(&["system", "io_wait", "irq", "soft_irq"]),
        )
    }
}

/// `instance_info`: no instance metadata service offline, so every field
/// is an empty string.
#[derive(Clone, Debug, Default, Serialize)]
pub struct InstanceInfo {
    instance_name: &'static str,
    instance_id: &'static str,
    instance_type: &'static str,
    instance_availability_zone: &'static str,
    instance_availability_zone_id: &'static str,
    instance_region: &'static str,
    ami_id: &'static str,
    subnet_id: &'static str,
    error: &'static str,
}

/// `neuron_hardware_info`: no Neuron driver here (the devices are simulated
/// inside each `xunds` process), so no device and an error saying so.
pub fn hardware_info() -> Named<Value> {
    let none = "no Neuron driver: devices are simulated inside each xunds process";
    Named::from([
        ("neuron_device_type", json!("")),
        ("neuron_device_version", json!("")),
        ("neuroncore_version", json!("")),
        ("neuron_device_count", json!(0)),
        ("neuron_device_memory_size", json!(0)),
        ("neuroncore_per_device_count", json!(0)),
        ("logical_neuroncore_config", json!(0)),
        ("error", json!(none)),
    ])
}

// ---- computing the groups ----

// Growth of a counter; a counter below its baseline (a slab re-created
// under us before the monitor noticed) counts as no growth, never as a
// wrapped-around huge one.
fn d(now: &Counters, was: &Counters, core: usize, c: NcCounter) -> u64 {
    now.nc(core, c).saturating_sub(was.nc(core, c))
}

/// `(name, growth)` of each counter of `table` summed over the cores.
fn growth(now: &Counters, was: &Counters, table: &[(&'static str, NcCounter)]) -> Named<u64> {
    table.iter().map(|&(n, c)| (n, grew(now, was, c))).collect()
}

/// Growth of a counter summed over the cores.
fn grew(now: &Counters, was: &Counters, c: NcCounter) -> u64 {
    now.sum(c).saturating_sub(was.sum(c))
}

/// `execution_stats` from the counter growth between `was` and `now`
/// over `secs`.
pub fn execution_stats(now: &Counters, was: &Counters, secs: f64) -> Group<ExecutionStats> {
    let count = grew(now, was, NcCounter::InferenceCount);
    let mean = |c| (count > 0).then(|| grew(now, was, c) as f64 / count as f64 / 1e9);
    let stats = ExecutionStats {
        error_summary: growth(now, was, &ERROR_CLASSES),
        execution_summary: growth(now, was, &OUTCOMES),
        latency_stats: LatencyStats {
            mean: MeanLatency {
                total_latency: mean(NcCounter::LatencyTotal),
                device_latency: mean(NcCounter::LatencyDevice),
            },
            ..LatencyStats::default()
        },
    };
    Group::new(secs, stats)
}

/// `neuroncore_counters`: per core in use, device time (LATENCY_DEVICE, in
/// ns) over the period as a percentage (at most 100), and 2 x MAC_COUNT per
/// second.
pub fn neuroncore_counters(now: &Counters, was: &Counters, secs: f64) -> Group<NeuroncoreCounters> {
    let cores = now.cores_in_use().map(|core| {
        let dev_ns = d(now, was, core, NcCounter::LatencyDevice) as f64;
        let macs = d(now, was, core, NcCounter::MacCount) as f64;
        let u = match secs > 0.0 {
            true => CoreUse {
                neuroncore_utilization: round2((dev_ns / (secs * 1e9) * 100.0).min(100.0)),
                flops: (2.0 * macs / secs).round() as u64,
            },
            false => CoreUse::default(),
        };
        (core.to_string(), u)
    });
    let neuroncores_in_use = cores.collect();
    Group::new(secs, NeuroncoreCounters { neuroncores_in_use })
}

/// The current host memory by [`HOST_KINDS`] (the ND MEM_USAGE_*_HOST
/// counters).
pub fn host_memory(now: &Counters) -> [u64; 4] {
    host_kinds(|slot| NdCounter::host_memory(slot.index()).map_or(0, |c| now.nd(c)))
}

/// Host bytes by [`HOST_KINDS`] from each slot's bytes (application memory:
/// code, scratchpad and misc).
fn host_kinds(bytes: impl Fn(MemSlot) -> u64) -> [u64; 4] {
    use MemSlot::*;
    let app = byte_sum([bytes(Code), bytes(Scratchpad), bytes(Misc)]);
    [app, bytes(Constants), 0, bytes(Tensors)]
}

/// Per core in use, its current device memory by [`CORE_MEMORY`] kind.
pub fn core_memory(now: &Counters) -> Vec<(usize, [u64; 5])> {
    let kinds = |core| CORE_MEMORY.map(|(_, c)| now.nc(core, c));
    now.cores_in_use().map(|core| (core, kinds(core))).collect()
}

/// `memory_used`: the current totals, and one `loaded_models` entry per
/// fresh model record; torn records are left out and named in `error`.
pub fn memory_used(s: &Sample, was: &Counters, secs: f64) -> Group<MemoryUsed> {
    let mut errors = Vec::new();
    let mut models = Vec::new();
    for (slot, m) in &s.snap.models {
        match m {
            RecordRead::Fresh(r) => {
                let (record, core) = (*r, usize::from(r.nc_index));
                let is_running = d(&s.snap.counters, was, core, NcCounter::InferenceCount) > 0;
                models.push(LoadedModel { record, is_running });
            }
            RecordRead::Unpublished => {}
            RecordRead::Torn(t) => {
                let (slot, why) = (slot.index(), t.reason);
                errors.push(format!(
                    "model slot {slot}: torn record ({why:?}), left out"
                ));
            }
        }
    }
    let m = MemoryUsed {
        host: host_memory(&s.snap.counters),
        cores: core_memory(&s.snap.counters),
        loaded_models: models,
    };
    Group {
        error: errors.join("; "),
        ..Group::new(secs, m)
    }
}

/// `neuron_runtime_vcpu_usage` from the process's CPU ticks.
pub fn runtime_vcpu(now: (u64, u64), was: (u64, u64), secs: f64, tck: u64) -> RuntimeVcpu {
    let pct = |a: u64, b: u64| match secs > 0.0 {
        true => round2(a.saturating_sub(b) as f64 / tck as f64 / secs * 100.0),
        false => 0.0,
    };
    let (user, system) = (pct(now.0, was.0), pct(now.1, was.1));
    let vcpu_usage = UserSystem { user, system };
    RuntimeVcpu { vcpu_usage }
}

/// `vcpu_usage` between two `/proc/stat` readings.
pub fn vcpu_usage(now: &ProcStat, was: &ProcStat) -> VcpuUsage {
    let pct = |a, b| Named::from_iter(sys::CPU_FIELDS.into_iter().zip(sys::percent_since(a, b)));
    let usage_data = now.cpus.iter().map(|(i, t)| {
        let e = was.cpus.iter().find(|(j, _)| j == i);
        (i.to_string(), pct(t, e.map_or(&[0; 7], |(_, e)| e)))
    });
    VcpuUsage {
        average_usage: pct(&now.all, &was.all),
        usage_data: usage_data.collect(),
        context_switch_count: now.ctxt.saturating_sub(was.ctxt),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(c: &mut Counters, core: usize, k: NcCounter, v: u64) {
        c.nc[core][k as usize] = v;
    }

    #[test]
    fn execution_stats_are_deltas_with_a_mean() {
        let mut was = Counters::ZERO;
        let mut now = Counters::ZERO;
        set(&mut was, 0, NcCounter::InferCompleted, 10);
        set(&mut now, 0, NcCounter::InferCompleted, 25);
        set(&mut now, 2, NcCounter::InferCompleted, 5);
        set(&mut now, 2, NcCounter::InferenceCount, 4);
        set(&mut now, 2, NcCounter::LatencyTotal, 4_000);
        set(&mut now, 1, NcCounter::ErrHw, 3);
        let e = execution_stats(&now, &was, 1.0);
        assert_eq!(e.execution_summary.get("completed"), Some(&20));
        assert_eq!(e.error_summary.get("hardware"), Some(&3));
        assert_eq!(e.latency_stats.mean.total_latency, Some(1e-6));
        assert_eq!(e.latency_stats.mean.device_latency, Some(0.0));
        let none = execution_stats(&was, &was, 1.0);
        assert_eq!(none.latency_stats.mean, MeanLatency::default());
    }

    #[test]
    fn utilization_is_device_time_over_the_period_capped() {
        let was = Counters::ZERO;
        let mut now = Counters::ZERO;
        set(&mut now, 1, NcCounter::LatencyDevice, 250_000_000);
        set(&mut now, 1, NcCounter::MacCount, 1000);
        set(&mut now, 3, NcCounter::LatencyDevice, 5_000_000_000);
        let n = neuroncore_counters(&now, &was, 1.0);
        let cores = &n.neuroncores_in_use;
        assert_eq!(cores.len(), 2);
        assert_eq!(cores.get_index(0).unwrap().0, "1");
        assert_eq!(cores[0].neuroncore_utilization, 25.0);
        assert_eq!(cores[0].flops, 2000);
        assert_eq!(cores[1].neuroncore_utilization, 100.0);
        let z = neuroncore_counters(&now, &was, 0.0);
        assert_eq!(z.neuroncores_in_use[0], CoreUse::default());
    }
}
