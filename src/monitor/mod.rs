//! Monitors: telemetry sampled on its own thread while a run is in flight
//! (vmstat, meminfo, a kernel profile), stored per run as time series plus a
//! few per-run summary numbers that are compared between configs like any
//! other metric.
//!
//! Lifecycle per run: [`build`] once per plan (validates the name and the
//! interval), [`Monitor::preflight`] once before the experiment, then
//! `start` right before the workload and `stop` right after it.

pub mod control;
pub mod counters;
pub mod fingerprint;
pub mod meminfo;
pub mod procfs;
pub mod profile;
pub mod sampler;
pub mod vmstat;

use std::time::Duration;

use serde::Serialize;

use crate::error::Error;
use crate::metric::MetricSpec;

pub use control::{control_config, CONTROL_SUFFIX};
pub use profile::Profile;

/// One monitor a plan can name: the one declaration the plan's
/// validation, the runner's construction and preflight, and the report's
/// telemetry family read. Adding a monitor is one file and one entry in
/// [`MONITORS`].
pub struct MonitorDef {
    /// Its name in `monitors = [...]`, the name [`Monitor::name`] returns,
    /// and the prefix of the metrics it adds (`vmstat.cs_per_s`).
    pub name: &'static str,
    /// Build it, sampling every `interval` (at least [`MIN_INTERVAL`]).
    pub build: fn(Duration) -> Box<dyn Monitor>,
}

/// Every monitor a plan can name, in the order messages list them.
pub const MONITORS: &[MonitorDef] = &[
    MonitorDef {
        name: "vmstat",
        build: |i| Box::new(vmstat::VmstatMonitor::new(i)),
    },
    MonitorDef {
        name: "meminfo",
        build: |i| Box::new(meminfo::MeminfoMonitor::new(i)),
    },
    MonitorDef {
        name: "profile",
        build: |i| Box::new(profile::ProfileMonitor::new(profile::DEFAULT_HZ, i)),
    },
    MonitorDef {
        name: "counters",
        build: |_| Box::new(counters::CountersMonitor::new()),
    },
];

/// Every monitor's name, in [`MONITORS`]' order.
pub fn names() -> Vec<&'static str> {
    MONITORS.iter().map(|m| m.name).collect()
}

/// Whether a plan can name monitor `name`.
pub fn is_known(name: &str) -> bool {
    MONITORS.iter().any(|m| m.name == name)
}

/// True for a metric a monitor added to a run (`vmstat.cs_per_s`,
/// `profile.kernel_pct`, ...): telemetry, which the report corrects as a
/// family of its own so that it does not take power from the workload's
/// metrics (see `report::families`).
pub fn is_telemetry_metric(metric: &str) -> bool {
    metric
        .split_once('.')
        .is_some_and(|(prefix, _)| is_known(prefix))
}

/// Shortest sampling interval accepted: below it the monitor itself becomes
/// a noticeable load and /proc reads start to dominate what they measure.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);

/// One time series of a run. `t_offsets_s[i]` is when `values[i]` was taken,
/// in seconds since the monitor started; for rates, the end of the interval
/// the rate covers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Series {
    pub name: String,
    pub unit: String,
    pub t_offsets_s: Vec<f64>,
    pub values: Vec<f64>,
}

/// What a monitor collected during one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MonitorData {
    pub series: Vec<Series>,
    /// Per-run numbers (e.g. `vmstat.cs_per_s`), stored as extra metrics.
    pub summaries: Vec<(MetricSpec, f64)>,
    pub profile: Option<Profile>,
    /// CPU time (user + system) the monitor's own thread used, seconds.
    /// Kernel work on its behalf elsewhere (the profiling timer interrupts)
    /// is not included; see docs/monitors.md for the measured total.
    pub self_cpu_s: f64,
    /// Wall time between start and stop, seconds.
    pub wall_s: f64,
}

/// A telemetry source sampled on its own thread during a run.
pub trait Monitor: Send {
    fn name(&self) -> &str;
    /// Check, without changing anything, that this monitor can run here;
    /// one line per problem.
    fn preflight(&self) -> Vec<String>;
    /// Start sampling (spawns the monitor's thread).
    fn start(&mut self) -> anyhow::Result<()>;
    /// Stop sampling, join the thread and return what was collected.
    fn stop(&mut self) -> anyhow::Result<MonitorData>;
    /// Set the sampling rate of a sampling monitor (the profile; others
    /// ignore it), chosen by [`profile::calibrate`] before the first run.
    fn set_rate_hz(&mut self, _hz: u64) {}
    /// What the experiment should record once about this monitor here
    /// (e.g. the counters monitor falling back to software events).
    fn notes(&mut self) -> Vec<String> {
        Vec::new()
    }
}

/// Build a monitor by plan name, sampling every `interval`.
pub fn build(name: &str, interval: Duration) -> Result<Box<dyn Monitor>, Error> {
    if interval < MIN_INTERVAL {
        return Err(Error::bad(format!(
            "monitor {name:?}: interval {interval:?} is below the minimum of 10ms"
        )));
    }
    match MONITORS.iter().find(|m| m.name == name) {
        Some(m) => Ok((m.build)(interval)),
        None => Err(Error::bad(format!(
            "unknown monitor {name:?}; known monitors: {}",
            names().join(", ")
        ))),
    }
}
