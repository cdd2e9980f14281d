//! The interface every kind of configuration implements (shell
//! setup/teardown, sysctl, ftrace, trace reader, cpus, memory limit, ...).

use crate::metric::MetricSamples;
use crate::metric::MetricSpec;

/// How the workload's processes must be launched while a config is entered.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LaunchMods {
    pub env: Vec<(String, String)>,
    pub cpus: Option<Vec<usize>>,
    pub cgroup_procs: Option<std::path::PathBuf>,
}

pub trait ConfigKind: Send {
    /// A short name of the kind, e.g. "sysctl".
    fn kind(&self) -> &'static str;

    /// True when entering it changes state every process on the machine
    /// sees (a sysctl, tracefs, a cgroup, swap): a run with such a config
    /// holds the machine-wide lock. The shell kind (opaque scripts,
    /// exported variables) and `cpus` (an affinity for the run's own
    /// processes) say false.
    fn changes_system(&self) -> bool {
        true
    }

    /// Check, without changing anything, that the config can be entered
    /// here; return one line per missing thing (root, tracefs, an event).
    fn preflight(&self) -> Vec<String> {
        Vec::new()
    }

    /// Change the system. Previous state must be journaled before it is changed.
    fn enter(&mut self) -> anyhow::Result<LaunchMods>;

    /// Called right before each run while entered (start a trace reader).
    fn before_run(&mut self) -> anyhow::Result<()> {
        Ok(())
    }

    /// Called right after each run; extra metrics of that run (bytes traced,
    /// events lost).
    fn after_run(&mut self) -> anyhow::Result<Vec<MetricSamples>> {
        Ok(Vec::new())
    }

    /// Metrics `after_run` may report.
    fn metrics(&self) -> Vec<MetricSpec> {
        Vec::new()
    }

    /// Put the system back as it was before `enter`. Must be safe to call
    /// after a partial `enter`.
    fn leave(&mut self) -> anyhow::Result<()>;

    /// False when the last `leave` was cut short (its teardown killed
    /// before its end): the config must still count as entered, so that
    /// `--resume` finishes leaving it.
    fn left_cleanly(&self) -> bool {
        true
    }
}
