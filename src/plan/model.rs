//! A validated experiment plan.

use std::path::PathBuf;
use std::time::Duration;

// Defined with the metrics, below the workloads that extract it.
pub use crate::metric::RegexMetric;
// Below the store, which keeps them with each experiment for `--resume`.
pub use crate::overrides::{Order, Overrides};

// What starts a command workload's command line (`shell` in the plan):
// defined with the process launch it becomes, below the workloads.
pub use crate::process::program::CommandLaunch;

#[derive(Clone, Debug)]
pub enum WorkloadKind {
    Command {
        command: String,
        metrics: Vec<RegexMetric>,
        launch: CommandLaunch,
    },
    Builtin {
        name: String,
        params: toml::Value,
    },
}

#[derive(Clone, Debug)]
pub struct WorkloadDef {
    pub name: String,
    pub kind: WorkloadKind,
    pub timeout: Duration,
    pub workdir: Option<PathBuf>,
    /// Shell commands run before and after each of its runs (warm-ups
    /// too), untimed, in the run's config (`prepare`, `conclude`).
    pub prepare: Option<String>,
    pub conclude: Option<String>,
}

/// A built-in config kind's declaration (ftrace, sysctl, ...), validated by
/// the kind itself when the experiment is built.
#[derive(Clone, Debug)]
pub struct KindDecl {
    pub kind: String,
    pub value: toml::Value,
    /// Where it stands in the plan, for error messages.
    pub at: String,
}

/// A config's kernel: the config runs in a VM booted with this kernel
/// (see `runner::boots`). Checked here for what the plan alone can tell;
/// the image, the modules and the host's limits are checked by preflight.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelDef {
    /// The image to boot as written: a bzImage, a glob (preflight takes
    /// the highest version that matches) or a built kernel tree (its
    /// `arch/x86/boot/bzImage`). Empty when `build` is set.
    pub image: std::path::PathBuf,
    /// Set: the kernel is built by sysdelta from a git tree and a ref
    /// (`tree`, `ref`, `patches`, `kconfig`; `crate::kbuild`), before the
    /// first boot; its image and modules directory are the build's.
    pub build: Option<crate::kbuild::BuildSpec>,
    /// Its modules directory; None: `/lib/modules/<version of the image>`.
    pub modules: Option<std::path::PathBuf>,
    /// Options appended to sysdelta's own part of the kernel command line.
    pub cmdline: String,
    pub cpus: u32,
    pub memory_mib: u64,
    /// `auto`, `kvm` or `tcg`.
    pub accel: String,
    /// Launch until the guest says hello.
    pub boot_timeout: Duration,
    /// Where the `[config.kernel]` table starts, for messages.
    pub at: String,
}

#[derive(Clone, Debug)]
pub struct ConfigDef {
    pub name: String,
    /// Monitors this config runs in addition to the plan's.
    pub monitors: Vec<String>,
    /// The control config of `plan::telemetry::add_control`: the baseline
    /// run without any monitor, the plan's included.
    pub monitors_off: bool,
    pub setup: Option<String>,
    pub teardown: Option<String>,
    pub env: Vec<(String, String)>,
    pub workdir: Option<PathBuf>,
    pub kinds: Vec<KindDecl>,
    /// Set: this config runs in a VM booted with this kernel.
    pub kernel: Option<KernelDef>,
}

/// The plan's telemetry settings (`plan::telemetry`).
#[derive(Clone, Debug, PartialEq)]
pub struct Telemetry {
    /// `profile_hz`: the profile's rate as the plan names it; None: chosen
    /// from the measured cost of a sample, within `budget`.
    pub profile_hz: Option<u64>,
    /// `monitor_budget`: the profile's share of a CPU the chosen rate may
    /// cost (0.005 for "0.5%").
    pub budget: f64,
    /// `monitor_control`: run the baseline with monitors off too, to
    /// measure what they cost (default on).
    pub control: bool,
}

/// Default of `--max-failures`: a cell that fails this many runs in a row
/// stops the experiment (a broken command is not measured for an hour).
pub const MAX_CONSECUTIVE_FAILURES: u32 = 3;
/// The most measured runs per (config, workload) cell: `runs`, `[quick]`
/// `runs`, `--runs` and `--max-runs`.
pub const MAX_RUNS: u32 = 1_000_000;
/// The most warm-up runs per cell: `warmup`, `[quick]` `warmup`, `--warmup`.
pub const MAX_WARMUP: u32 = 1_000_000;
/// The most runs one experiment may schedule: configs x workloads x
/// (warm-up + measured runs, or `--max-runs` with `--until`). The schedule
/// is built whole before the first run (32 bytes a run), and every run is
/// a row in the store, so this keeps both to a few hundred MB.
pub const MAX_SCHEDULED_RUNS: u64 = 10_000_000;
/// The longest `timeout` of one run: a week.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);
/// The shortest `timeout`: below a millisecond no process even starts.
pub const MIN_TIMEOUT: Duration = Duration::from_millis(1);
/// The longest `monitor_interval` (the shortest is
/// [`crate::monitor::MIN_INTERVAL`]): an hour.
pub const MAX_MONITOR_INTERVAL: Duration = Duration::from_secs(3600);

/// Measured blocks an adaptive experiment runs before its first check.
pub const ADAPTIVE_MIN_RUNS: u32 = 10;
/// Default `--max-runs` for adaptive experiments.
pub const ADAPTIVE_MAX_RUNS: u32 = 50;
/// Default `--max-runs` under `--min-time`: a 3 s minimum of a 0.3 ms
/// command, beyond which more runs only grow the store.
pub const MIN_TIME_MAX_RUNS: u32 = 10_000;

#[derive(Clone, Debug)]
pub struct Plan {
    pub name: String,
    /// Display name of the source: a path, or "(ab)" for the shorthand.
    pub source_name: String,
    /// The plan's text as written (TOML).
    pub text: String,
    pub runs: u32,
    pub warmup: u32,
    pub order: Order,
    pub seed: u64,
    pub baseline: String,
    /// Run once before the first and after the last run of the experiment.
    pub setup: Option<String>,
    pub teardown: Option<String>,
    pub configs: Vec<ConfigDef>,
    pub workloads: Vec<WorkloadDef>,
    pub monitors: Vec<String>,
    pub monitor_interval: Duration,
    pub telemetry: Telemetry,
    pub overrides: Overrides,
    /// Boots per kernel config (plans whose configs name kernels; 0 otherwise).
    pub boots: u32,
}

/// Default `boots`: 6 vs 6 boots is the fewest at which the rank test on
/// per-boot values can reach p < 0.05 after a few comparisons (exact
/// minimum p 0.0022; 3 vs 3 can never go below 0.1).
pub const DEFAULT_BOOTS: u32 = 6;
/// Default `boots` under `--quick`.
pub const DEFAULT_QUICK_BOOTS: u32 = 3;
/// The most boots per kernel config.
pub const MAX_BOOTS: u32 = 10_000;

/// [`Plan::cells`] of these configs and workloads, before the plan is
/// whole (its size bound is checked on them).
pub(super) fn cells_of(
    configs: &[ConfigDef],
    workloads: &[WorkloadDef],
    runs: u32,
) -> Vec<(usize, usize)> {
    let configs: Vec<&str> = configs.iter().map(|c| c.name.as_str()).collect();
    let workloads: Vec<&str> = workloads.iter().map(|w| w.name.as_str()).collect();
    crate::monitor::control::cells(&configs, &workloads, runs)
}

impl Plan {
    /// The (config, workload) cells of one block, as indices: every pair
    /// once, except around the monitor-overhead control (see
    /// `monitor::control::cells`).
    pub fn cells(&self) -> Vec<(usize, usize)> {
        cells_of(&self.configs, &self.workloads, self.runs)
    }

    /// True when the configs run in VMs booted for them.
    pub fn has_kernels(&self) -> bool {
        self.configs.iter().any(|c| c.kernel.is_some())
    }

    pub fn config_index(&self, name: &str) -> Option<usize> {
        self.configs.iter().position(|c| c.name == name)
    }
}
