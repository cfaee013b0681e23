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

use serde::Serialize;
use serde_json::{json, Value};

use xunds::nds::reader::{CORE_MEMORY, ERROR_CLASSES, OUTCOMES};
use xunds::nds::{Counters, RecordRead};
use xunds::wire::nds::counters::{NcCounter, NdCounter};
use xunds::wire::nds::model::{MemLocation, MemSlot, ModelRecord};

use super::sys::{self, round2, ProcStat};
use super::watch::Sample;
use crate::Obj;

/// The whole document printed each period.
#[derive(Clone, Debug, Serialize)]
pub struct Document {
    /// One entry per watched runtime that passes the tag filter.
    pub neuron_runtime_data: Vec<RuntimeEntry>,
    /// System-level groups.
    pub system_data: SystemData,
    /// Always present; empty strings offline ([`instance_info`]).
    pub instance_info: Obj<&'static str>,
    /// Always present ([`hardware_info`]).
    pub neuron_hardware_info: Obj<Value>,
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
    pub neuroncore_counters: Option<NeuroncoreCounters>,
    /// `execution_stats`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_stats: Option<ExecutionStats>,
    /// `memory_used`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_used: Option<MemoryUsed>,
    /// `neuron_runtime_vcpu_usage`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub neuron_runtime_vcpu_usage: Option<RuntimeVcpu>,
}

/// `neuroncore_counters`
#[derive(Clone, Debug, Default, Serialize)]
pub struct NeuroncoreCounters {
    /// Measured seconds.
    pub period: f64,
    /// Cores with any non-zero counter.
    pub neuroncores_in_use: Obj<CoreUse>,
    /// "" when fine.
    pub error: String,
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
    /// Measured seconds.
    pub period: f64,
    /// Error classes over the period ([`ERROR_CLASSES`]).
    pub error_summary: Obj<u64>,
    /// Outcomes over the period ([`OUTCOMES`]).
    pub execution_summary: Obj<u64>,
    /// Latency over the period.
    pub latency_stats: LatencyStats,
    /// "" when fine.
    pub error: String,
}

/// No execution: every outcome and class there, at zero.
impl Default for ExecutionStats {
    fn default() -> Self {
        execution_stats(&Counters::ZERO, &Counters::ZERO, 0.0)
    }
}

/// A runtime-level group: its `error`.
pub trait Group: Clone + Default {
    /// The group's `error`.
    fn error_mut(&mut self) -> &mut String;
    /// Computed without an error.
    fn fine(&self) -> bool;
}

macro_rules! groups {
    ($($t:ty),*) => {
        $(impl Group for $t {
            fn error_mut(&mut self) -> &mut String {
                &mut self.error
            }
            fn fine(&self) -> bool {
                self.error.is_empty()
            }
        })*
    };
}
groups!(ExecutionStats, NeuroncoreCounters, MemoryUsed, RuntimeVcpu);

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

/// `memory_used`
#[derive(Clone, Debug, Default, Serialize)]
pub struct MemoryUsed {
    /// Measured seconds.
    pub period: f64,
    /// Current totals and breakdown.
    pub neuron_runtime_used_bytes: RuntimeUsedBytes,
    /// One entry per model record.
    pub loaded_models: Vec<LoadedModel>,
    /// "" when fine.
    pub error: String,
}

/// `neuron_runtime_used_bytes`
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RuntimeUsedBytes {
    /// Host bytes (the ND MEM_USAGE_*_HOST counters).
    pub host: u64,
    /// Device bytes (every core's MEM_USAGE_*_DEVICE counters).
    pub neuron_device: u64,
    /// The breakdown.
    pub usage_breakdown: UsageBreakdown,
}

/// `usage_breakdown`
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct UsageBreakdown {
    /// Host side.
    pub host: HostBreakdown,
    /// Per core in use, its device memory by kind ([`CORE_MEMORY`]).
    pub neuroncore_memory_usage: Obj<Obj<u64>>,
}

/// Host memory by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HostBreakdown {
    /// Code, scratchpad and misc host bytes.
    pub application_memory: u64,
    /// Constants.
    pub constants: u64,
    /// Not tracked by the datastore: 0.
    pub dma_buffers: u64,
    /// Tensors.
    pub tensors: u64,
}

impl HostBreakdown {
    /// The host total neuron-monitor reports (DMA buffers are not tracked).
    fn total(&self) -> u64 {
        byte_sum([self.application_memory, self.constants, self.tensors])
    }
}

/// A sum of byte counts read from another process's slab: it saturates
/// rather than overflow (a panic in a debug build, a wrong small total in a
/// release one).
fn byte_sum(xs: impl IntoIterator<Item = u64>) -> u64 {
    xs.into_iter().fold(0, u64::saturating_add)
}

/// One loaded model (one model record).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoadedModel {
    /// The record's name.
    pub name: String,
    /// Hex.
    pub uuid: String,
    /// The record's model id.
    pub model_id: u32,
    /// Its core ran executions during the period.
    pub is_running: bool,
    /// One subgraph, `sg_NN` by the record's sg_index.
    pub subgraphs: Obj<Subgraph>,
}

/// A subgraph's memory and placement.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Subgraph {
    /// Bytes at load time.
    pub memory_used_bytes: SubgraphMemory,
    /// The record's nc_index.
    pub neuroncore_index: u32,
    /// One simulated device: 0.
    pub neuron_device_index: u32,
}

/// A subgraph's memory.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SubgraphMemory {
    /// Host total.
    pub host: u64,
    /// Device total.
    pub neuron_device: u64,
    /// By kind.
    pub usage_breakdown: SubgraphBreakdown,
}

/// A subgraph's memory by kind.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SubgraphBreakdown {
    /// Host side.
    pub host: HostBreakdown,
    /// Device side.
    pub neuron_device: DeviceBreakdown,
}

/// Device memory of one model by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DeviceBreakdown {
    /// CONSTANTS
    pub constants: u64,
    /// CODE
    pub model_code: u64,
    /// MISC (and scratchpad)
    pub runtime_memory: u64,
    /// TENSORS
    pub tensors: u64,
}

impl DeviceBreakdown {
    fn total(&self) -> u64 {
        byte_sum([
            self.constants,
            self.model_code,
            self.runtime_memory,
            self.tensors,
        ])
    }
}

/// `neuron_runtime_vcpu_usage`
#[derive(Clone, Debug, Default, Serialize)]
pub struct RuntimeVcpu {
    /// Measured seconds.
    pub period: f64,
    /// Percent of one vCPU.
    pub vcpu_usage: UserSystem,
    /// "" when fine.
    pub error: String,
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
    pub vcpu_usage: Option<VcpuUsage>,
    /// `memory_info`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_info: Option<MemoryInfo>,
}

/// `neuron_hw_counters`: no Neuron driver, so no device and an error that
/// says so.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HwCounters {
    /// Measured seconds.
    pub period: f64,
    /// Always empty.
    pub neuron_devices: Vec<()>,
    /// Why there is no device.
    pub error: String,
}

/// `vcpu_usage`
#[derive(Clone, Debug, Default, Serialize)]
pub struct VcpuUsage {
    /// Measured seconds.
    pub period: f64,
    /// Over all vCPUs, percent by [`sys::CPU_FIELDS`].
    pub average_usage: Obj<f64>,
    /// Per vCPU, likewise.
    pub usage_data: Obj<Obj<f64>>,
    /// Context switches during the period.
    pub context_switch_count: u64,
    /// "" when fine.
    pub error: String,
}

impl VcpuUsage {
    /// The average's user and system percentages as the companion sums
    /// them: user + nice, and system + io_wait + irq + soft_irq.
    pub fn user_system(&self) -> (f64, f64) {
        let sum = |ks: &[&str]| ks.iter().filter_map(|k| self.average_usage.get(k)).sum();
        (
            sum(&["user", "nice"]),
            sum(&["system", "io_wait", "irq", "soft_irq"]),
        )
    }
}

/// `memory_info`
#[derive(Clone, Debug, Default, Serialize)]
pub struct MemoryInfo {
    /// Measured seconds.
    pub period: f64,
    /// MemTotal
    pub memory_total_bytes: u64,
    /// MemTotal - MemAvailable
    pub memory_used_bytes: u64,
    /// SwapTotal
    pub swap_total_bytes: u64,
    /// SwapTotal - SwapFree
    pub swap_used_bytes: u64,
    /// "" when fine.
    pub error: String,
}

/// `instance_info`: no instance metadata service offline, so every field
/// is an empty string.
pub fn instance_info() -> Obj<&'static str> {
    [
        "instance_name",
        "instance_id",
        "instance_type",
        "instance_availability_zone",
        "instance_availability_zone_id",
        "instance_region",
        "ami_id",
        "subnet_id",
        "error",
    ]
    .into_iter()
    .map(|k| (k, ""))
    .collect()
}

/// `neuron_hardware_info`: no Neuron driver here (the devices are simulated
/// inside each `xunds` process), so no device and an error saying so.
pub fn hardware_info() -> Obj<Value> {
    let none = "no Neuron driver: devices are simulated inside each xunds process";
    [
        ("neuron_device_type", json!("")),
        ("neuron_device_version", json!("")),
        ("neuroncore_version", json!("")),
        ("neuron_device_count", json!(0)),
        ("neuron_device_memory_size", json!(0)),
        ("neuroncore_per_device_count", json!(0)),
        ("logical_neuroncore_config", json!(0)),
        ("error", json!(none)),
    ]
    .into_iter()
    .collect()
}

// ---- computing the groups ----

// Growth of a counter; a counter below its baseline (a slab re-created
// under us before the monitor noticed) counts as no growth, never as a
// wrapped-around huge one.
fn d(now: &Counters, was: &Counters, core: usize, c: NcCounter) -> u64 {
    now.nc(core, c).saturating_sub(was.nc(core, c))
}

/// `(name, growth)` of each counter of `table` summed over the cores.
fn growth(now: &Counters, was: &Counters, table: &[(&str, NcCounter)]) -> Obj<u64> {
    Obj(table
        .iter()
        .map(|(n, c)| (n.to_string(), now.sum(*c).saturating_sub(was.sum(*c))))
        .collect())
}

/// `execution_stats` from the counter growth between `was` and `now`
/// over `secs`.
pub fn execution_stats(now: &Counters, was: &Counters, secs: f64) -> ExecutionStats {
    let g = |c: NcCounter| now.sum(c).saturating_sub(was.sum(c));
    let count = g(NcCounter::InferenceCount);
    let mean = |c| (count > 0).then(|| g(c) as f64 / count as f64 / 1e9);
    ExecutionStats {
        period: secs,
        error_summary: growth(now, was, &ERROR_CLASSES),
        execution_summary: growth(now, was, &OUTCOMES),
        latency_stats: LatencyStats {
            total_latency: None,
            device_latency: None,
            mean: MeanLatency {
                total_latency: mean(NcCounter::LatencyTotal),
                device_latency: mean(NcCounter::LatencyDevice),
            },
        },
        error: String::new(),
    }
}

/// `neuroncore_counters`: per core in use, device time (LATENCY_DEVICE, in
/// ns) over the period as a percentage (at most 100), and 2 x MAC_COUNT per
/// second.
pub fn neuroncore_counters(now: &Counters, was: &Counters, secs: f64) -> NeuroncoreCounters {
    let mut cores = Vec::new();
    for core in now.cores_in_use() {
        let dev_ns = d(now, was, core, NcCounter::LatencyDevice) as f64;
        let macs = d(now, was, core, NcCounter::MacCount) as f64;
        let (util, flops) = if secs > 0.0 {
            (
                round2((dev_ns / (secs * 1e9) * 100.0).min(100.0)),
                (2.0 * macs / secs).round() as u64,
            )
        } else {
            (0.0, 0)
        };
        cores.push((
            core.to_string(),
            CoreUse {
                neuroncore_utilization: util,
                flops,
            },
        ));
    }
    NeuroncoreCounters {
        period: secs,
        neuroncores_in_use: Obj(cores),
        error: String::new(),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn model_entry(r: &ModelRecord, running: bool) -> LoadedModel {
    let u = |loc, slot| r.usage(loc, slot).total_size;
    use MemLocation::{Device, Host};
    let host = HostBreakdown {
        application_memory: byte_sum([
            u(Host, MemSlot::Code),
            u(Host, MemSlot::Scratchpad),
            u(Host, MemSlot::Misc),
        ]),
        constants: u(Host, MemSlot::Constants),
        dma_buffers: 0,
        tensors: u(Host, MemSlot::Tensors),
    };
    let dev = DeviceBreakdown {
        constants: u(Device, MemSlot::Constants),
        model_code: u(Device, MemSlot::Code),
        runtime_memory: byte_sum([u(Device, MemSlot::Misc), u(Device, MemSlot::Scratchpad)]),
        tensors: u(Device, MemSlot::Tensors),
    };
    let (host_total, dev_total) = (host.total(), dev.total());
    LoadedModel {
        name: r.name_str().into_owned(),
        uuid: hex(&r.uuid),
        model_id: r.model_id,
        is_running: running,
        subgraphs: Obj(vec![(
            format!("sg_{:02}", r.sg_index),
            Subgraph {
                memory_used_bytes: SubgraphMemory {
                    host: host_total,
                    neuron_device: dev_total,
                    usage_breakdown: SubgraphBreakdown {
                        host,
                        neuron_device: dev,
                    },
                },
                neuroncore_index: u32::from(r.nc_index),
                neuron_device_index: 0,
            },
        )]),
    }
}

/// Per core in use, its device memory by kind.
pub fn core_memory(now: &Counters) -> Obj<Obj<u64>> {
    Obj(now
        .cores_in_use()
        .map(|core| {
            let kinds = CORE_MEMORY
                .iter()
                .map(|(n, c)| (n.to_string(), now.nc(core, *c)));
            (core.to_string(), Obj(kinds.collect()))
        })
        .collect())
}

/// Current host and device totals with their breakdown.
pub fn used_bytes(now: &Counters) -> RuntimeUsedBytes {
    let nd = |c: NdCounter| now.nd(c);
    let host = HostBreakdown {
        application_memory: byte_sum([
            nd(NdCounter::MemUsageCodeHost),
            nd(NdCounter::MemUsageScratchpadHost),
            nd(NdCounter::MemUsageMiscHost),
        ]),
        constants: nd(NdCounter::MemUsageConstantsHost),
        dma_buffers: 0,
        tensors: nd(NdCounter::MemUsageTensorsHost),
    };
    let cores = core_memory(now);
    let neuron_device = byte_sum(
        cores
            .0
            .iter()
            .flat_map(|(_, m)| m.0.iter().map(|(_, v)| *v)),
    );
    RuntimeUsedBytes {
        host: host.total(),
        neuron_device,
        usage_breakdown: UsageBreakdown {
            host,
            neuroncore_memory_usage: cores,
        },
    }
}

/// `memory_used`: the current totals, and one `loaded_models` entry per
/// fresh model record; torn records are left out and named in `error`.
pub fn memory_used(s: &Sample, was: &Counters, secs: f64) -> MemoryUsed {
    let mut errors = Vec::new();
    let mut models = Vec::new();
    for (slot, m) in &s.snap.models {
        match m {
            RecordRead::Fresh(r) => {
                let core = usize::from(r.nc_index);
                let running = d(&s.counters, was, core, NcCounter::InferenceCount) > 0;
                models.push(model_entry(r, running));
            }
            RecordRead::Unpublished => {}
            RecordRead::Torn(t) => errors.push(format!(
                "model slot {}: torn record ({:?}), left out",
                slot.index(),
                t.reason
            )),
        }
    }
    MemoryUsed {
        period: secs,
        neuron_runtime_used_bytes: used_bytes(&s.counters),
        loaded_models: models,
        error: errors.join("; "),
    }
}

/// `neuron_runtime_vcpu_usage` from the process's CPU ticks.
pub fn runtime_vcpu(now: (u64, u64), was: (u64, u64), secs: f64, tck: u64) -> RuntimeVcpu {
    let pct = |a: u64, b: u64| {
        if secs > 0.0 {
            round2(a.saturating_sub(b) as f64 / tck as f64 / secs * 100.0)
        } else {
            0.0
        }
    };
    RuntimeVcpu {
        period: secs,
        vcpu_usage: UserSystem {
            user: pct(now.0, was.0),
            system: pct(now.1, was.1),
        },
        error: String::new(),
    }
}

/// `vcpu_usage` between two `/proc/stat` readings.
pub fn vcpu_usage(now: &ProcStat, was: &ProcStat, secs: f64) -> VcpuUsage {
    let pct = |a, b| {
        sys::CPU_FIELDS
            .into_iter()
            .zip(sys::percent_since(a, b))
            .collect()
    };
    let usage_data = now.cpus.iter().map(|(i, t)| {
        let e = was
            .cpus
            .iter()
            .find(|(j, _)| j == i)
            .map_or(&[0; 7], |(_, e)| e);
        (i.to_string(), pct(t, e))
    });
    VcpuUsage {
        period: secs,
        average_usage: pct(&now.all, &was.all),
        usage_data: usage_data.collect(),
        context_switch_count: now.ctxt.saturating_sub(was.ctxt),
        error: String::new(),
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
        assert_eq!(n.neuroncores_in_use.0.len(), 2);
        assert_eq!(n.neuroncores_in_use.0[0].0, "1");
        assert_eq!(n.neuroncores_in_use.0[0].1.neuroncore_utilization, 25.0);
        assert_eq!(n.neuroncores_in_use.0[0].1.flops, 2000);
        assert_eq!(n.neuroncores_in_use.0[1].1.neuroncore_utilization, 100.0);
        let z = neuroncore_counters(&now, &was, 0.0);
        assert_eq!(z.neuroncores_in_use.0[0].1, CoreUse::default());
    }
}
