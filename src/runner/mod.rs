//! Running an experiment: build everything the plan names, check it can
//! run, then execute the schedule, committing every run before the next.

mod blocks;
pub mod boots;
mod crash;
mod execute;
pub mod experiment;
mod finish;
mod hooks;
pub mod machine;
mod prepare;
pub mod progress;
pub mod schedule;
mod shell_cost;
pub mod signals;
pub mod slot;
pub mod streaks;
pub mod telemetry;

pub use crash::{teardown_after_crash, Entered};
pub use execute::execute;
pub(crate) use execute::settle_after_enter;
pub use finish::cells_without_success;
pub(crate) use finish::{declare_metrics, finish};
pub use prepare::{config_has_teardown, create, prepare, prepare_guest};

use std::collections::HashSet;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use crate::builtins;
use crate::config::journal::{Journal, JournalHandle, UndoAction};
use crate::config::kind::ConfigKind;
use crate::config::runtime::ConfigRuntime;
use crate::config::shell::{ShellKind, StepState, SHELL_STEP_TIMEOUT};
use crate::error::{bad, bad_all};
use crate::metric::MetricSpec;
use crate::monitor::Monitor;
use crate::plan::{Plan, WorkloadDef, WorkloadKind};
use crate::status::ExperimentStatus;
use crate::store::{NewExperiment, RunRecord, Store};
use crate::workload::command::CommandWorkload;
use crate::workload::{RunOutcome, Workload};
use progress::Progress;
use schedule::Slot;

/// A plan with its workloads, configs and monitors built and preflighted.
pub struct Prepared {
    pub plan: Plan,
    workloads: Vec<(WorkloadDef, Box<dyn Workload>)>,
    /// The command workloads a config with its own `command` runs in
    /// place of the plan's, by (config, workload) index.
    by_config: std::collections::HashMap<(usize, usize), Box<dyn Workload>>,
    configs: Vec<ConfigRuntime>,
    monitors: Vec<Box<dyn Monitor>>,
    /// Monitors of one config only, by config index.
    config_monitors: Vec<Vec<Box<dyn Monitor>>>,
    journal: JournalHandle,
    journal_path: PathBuf,
    /// The journal entry that removes `scratch` after a crash, once
    /// [`Prepared::arm`] has recorded it (and made the directory).
    scratch_entry: Option<u64>,
    scratch: PathBuf,
    /// What kernel configs need for their boots (plans whose configs name
    /// a kernel, on the host; None in the guest and for host plans).
    kernels: Option<boots::KernelSetup>,
}

impl Drop for Prepared {
    /// The scratch directory is removed first and its journal entry cleared
    /// after: a process that dies in between leaves the entry, and the
    /// next run or `sysdelta restore` removes the directory.
    fn drop(&mut self) {
        if let Some(id) = self.scratch_entry {
            let _ = std::fs::remove_dir_all(&self.scratch);
            let _ = self
                .journal
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .done(id);
        }
    }
}

impl Prepared {
    /// Make the prepared plan ready to change the system; the caller holds
    /// the store's lock. The journal is read again (another run may have
    /// used it since `prepare` read it), a dead run's scratch directory is
    /// removed, anything else a dead run left refuses the run, and this
    /// run's scratch directory is journaled, then made, so that a SIGKILL
    /// does not leave it (or what workloads generated in it) behind.
    /// Called once the locks are held, before anything else is done.
    pub fn arm(&mut self) -> Result<()> {
        if self.scratch_entry.is_some() {
            return Ok(());
        }
        let mut j = self.journal.lock().unwrap_or_else(|e| e.into_inner());
        *j = Journal::open(&self.journal_path)?;
        j.undo_owned_by("scratch")?;
        j.refuse_pending(None).map_err(|e| bad(format!("{e:#}")))?;
        self.scratch_entry = Some(
            j.record_all(
                "scratch",
                vec![UndoAction::RemovePath {
                    path: self.scratch.clone(),
                    recursive: true,
                }],
            )?[0],
        );
        drop(j);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&self.scratch)
            .map_err(|e| {
                bad(format!(
                    "cannot create the scratch directory {}: {e}",
                    self.scratch.display()
                ))
            })?;
        Ok(())
    }

    /// Refuse (bad input) to resume an experiment whose kernel configs now
    /// resolve to other images (an image glob that matches a kernel
    /// installed since, a tree rebuilt): its boots would pool two kernels.
    pub fn check_resume(&self, info: &crate::store::ExperimentInfo) -> Result<()> {
        let Some(k) = &self.kernels else {
            return Ok(());
        };
        for (c, kp) in self.plan.configs.iter().zip(&k.kernels) {
            let now = boots::kernel_identity(kp);
            match info.fingerprint.get(&format!("vm_kernel.{}", c.name)) {
                Some(then) if *then != now => {
                    return Err(bad(format!(
                        "config '{}', kernel.image: experiment {} booted {then}; it now resolves \
                         to {now}; start a new experiment to compare them",
                        c.name, info.id
                    )))
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The experiment's scratch directory (made by [`Prepared::arm`]).
    pub fn scratch(&self) -> &Path {
        &self.scratch
    }

    /// True when a config kind (sysctl, ftrace, cgroups, swap, ...) or a
    /// workload (fsops) changes state every other run on this machine
    /// sees: such a run holds the machine-wide lock
    /// ([`machine::MachineLock`]).
    pub fn changes_system(&self) -> bool {
        self.configs
            .iter()
            .any(|c| c.kinds.iter().any(|k| k.changes_system()))
            || self.workloads.iter().any(|(_, w)| w.changes_system())
            // VMs under TCG take the host's CPUs: one experiment at a time.
            || self.kernels.is_some()
    }
}

/// [`Prepared::changes_system`] of `plan` without preparing it here: its
/// config kinds and workloads built but neither preflighted nor entered,
/// nothing on this machine read (the journal they are built with is
/// empty and never written). For a plan that runs elsewhere: `fleet`
/// needs root on each host for one that changes the system.
pub fn plan_changes_system(plan: &Plan) -> bool {
    if plan.has_kernels() {
        return true;
    }
    let journal = Journal::detached();
    let kinds = plan.configs.iter().flat_map(|c| &c.kinds).any(|d| {
        crate::config::kinds::build(&d.kind, &d.value, journal.clone())
            .map_or(true, |k| k.changes_system())
    });
    let ctx = builtins::BuildContext::default();
    kinds
        || plan.workloads.iter().any(|w| {
            prepare::build_workload(w, &ctx, &plan.overrides).map_or(true, |w| w.changes_system())
        })
}

/// The state journal of a store: `<store>.journal`, next to it.
pub fn journal_path(store: &Path) -> PathBuf {
    Store::beside(store, ".journal")
}

/// Where the entered config's setup dumps its environment:
/// `<store>.setup-env`, next to the store, so that it outlives a crash.
/// Absolute: the setup shell writes it, after whatever `cd` it did.
pub fn setup_env_path(store: &Path) -> PathBuf {
    Store::beside(store, ".setup-env")
}

/// `<store>.step`: which setup or teardown shell runs, its pid, and
/// whether it ran to its end (see `ShellKind::with_crash_files`).
pub fn step_path(store: &Path) -> PathBuf {
    Store::beside(store, ".step")
}

// `SYSDELTA_SCRATCH` is defined by the workloads, which hand it to their
// commands; the runner gives it to setups and teardowns too. Re-exported so
// that `runner::scratch_var` keeps working.
pub use crate::workload::scratch_var;

#[derive(Debug)]
pub struct Outcome {
    pub experiment_id: i64,
    pub status: ExperimentStatus,
    pub runs_done: usize,
    pub runs_failed: usize,
    /// Why the experiment stopped before its end (a cell failing
    /// `max_failures` runs in a row); status "failed".
    pub stopped: Option<String>,
    /// What a team store's server did not take before the end (it
    /// stopped answering): on this machine, for `sysdelta flush`.
    pub left_local: Option<crate::store::LeftLocal>,
}

pub struct ExecOptions<'a> {
    pub cancel: &'a AtomicBool,
    pub quiet: bool,
}

pub(crate) fn now_unix() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

/// CPU time (user + system) this process has used so far.
pub(crate) fn self_cpu() -> Duration {
    let ru = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF);
    ru.map(|r| {
        let tv = |t: nix::sys::time::TimeVal| {
            Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000)
        };
        tv(r.user_time()) + tv(r.system_time())
    })
    .unwrap_or_default()
}

/// What sysdelta's own process used while it ran an experiment, stored
/// with it for the report's last line.
pub(crate) fn usage(wall: f64, cpu: f64, runs: usize) -> serde_json::Value {
    serde_json::json!({
        "wall_s": wall,
        "cpu_s": cpu,
        "cpu_share_of_one_core": if wall > 0.0 { cpu / wall } else { 0.0 },
        "peak_rss_kib": self_peak_rss_kib(),
        "runs": runs,
    })
}

/// Peak resident set of this process, KiB (VmHWM).
fn self_peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("VmHWM:")
                    .map(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            })
        })
        .flatten()
        .unwrap_or(0)
}
