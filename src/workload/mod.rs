//! Workloads: things that, run once, yield samples of one or more metrics.
//!
//! A workload is built from the plan (a shell command, or a built-in looked
//! up by name in [`crate::builtins`]) and run once per run by the runner, inside
//! whatever configuration is entered at the time.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::metric::MetricSpec;

/// `SYSDELTA_SCRATCH`: the experiment's scratch directory, given to every
/// setup, teardown and command (e.g. for a generated input file). It lives
/// here, below the runner, because a command workload sets it for its own
/// child and must not reach up into the runner for it.
pub fn scratch_var(dir: &Path) -> (String, String) {
    ("SYSDELTA_SCRATCH".to_string(), dir.display().to_string())
}

/// Everything a workload needs to know about the run it is asked to do.
pub struct RunContext<'a> {
    /// Environment variables added by the entered configuration.
    pub env: &'a [(String, String)],
    /// Working directory for processes the workload starts.
    pub cwd: Option<&'a Path>,
    /// The per-run timeout; a workload that exceeds it must stop and fail.
    pub timeout: Duration,
    /// Set on the first SIGINT/SIGTERM: stop promptly, kill children.
    pub cancel: &'a AtomicBool,
    /// Restrict every process of the workload to these CPUs (None: no restriction).
    pub cpus: Option<&'a [usize]>,
    /// Put every process of the workload into this cgroup (its `cgroup.procs`
    /// or `tasks` file), for memory limits.
    pub cgroup_procs: Option<&'a Path>,
    /// A scratch directory private to this experiment, removed at its end.
    pub scratch: &'a Path,
}

// A value type config kinds report too (tracer counters, memory peaks), so
// it lives on the ground floor, in `metric`; re-exported where workloads
// have always named it.
pub use crate::metric::MetricSamples;

/// The result of one run.
#[derive(Clone, Debug, PartialEq)]
pub enum RunOutcome {
    Ok(Vec<MetricSamples>),
    /// Failed runs are recorded and shown, never used as samples.
    Failed {
        reason: String,
        stderr_tail: String,
        exit_code: Option<i32>,
    },
}

pub trait Workload: Send {
    /// The metrics this workload reports, in report order (primary first).
    fn metrics(&self) -> Vec<MetricSpec>;

    /// One-time preparation before the experiment's first run (generate a
    /// corpus, create volumes). Not timed.
    fn prepare(&mut self, _scratch: &Path) -> anyhow::Result<()> {
        Ok(())
    }

    /// True when running it changes state every process on the machine
    /// sees (fsops: loop devices and mounts), so that the run holds the
    /// machine-wide lock.
    fn changes_system(&self) -> bool {
        false
    }

    /// Check, changing nothing, that the workload can run here; one line
    /// per missing thing (root, a tool, disk space).
    fn preflight(&self, _scratch: &Path) -> Vec<String> {
        Vec::new()
    }

    /// Metrics whose samples within a run are a time series (one value per
    /// interval, in time order), with the interval in seconds.
    fn series(&self) -> Vec<(String, f64)> {
        Vec::new()
    }

    /// Run once and report samples.
    fn run(&mut self, ctx: &RunContext) -> RunOutcome;

    /// What the last run could not measure and why, one line each (a micro
    /// benchmark this machine cannot run). The runner records each distinct
    /// line once per config as an event, so the report says why a metric is
    /// missing.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// The exit status of the one process the last run measured (a
    /// command), kept with the run whatever it was: non-zero only where the
    /// plan keeps such runs (`-i`), and the report counts those. None where
    /// a run is not one process's exit (built-ins measure in-process) or a
    /// signal ended it. Asked after `run`, as `notes` is, so that the
    /// outcome every workload and test builds keeps its shape.
    fn exit_status(&self) -> Option<i32> {
        None
    }

    /// Undo `prepare`; always called, also after failures and signals.
    fn cleanup(&mut self) {}
}

pub mod command;
pub mod compile;
pub mod compress;
pub mod fsops;
pub mod memsweep;
pub mod spin;
