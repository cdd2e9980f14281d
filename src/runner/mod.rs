//! Running an experiment: build everything the plan names, check it can
//! run, then execute the schedule, committing every run before the next.

pub mod boots;
pub mod machine;
pub mod progress;
pub mod schedule;
pub mod signals;
pub mod slot;
pub mod streaks;
pub mod telemetry;

use std::collections::HashSet;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use crate::config::journal::{Journal, JournalHandle, UndoAction};
use crate::config::kind::ConfigKind;
use crate::config::runtime::ConfigRuntime;
use crate::config::shell::{ShellKind, StepState, SHELL_STEP_TIMEOUT};
use crate::error::{bad, bad_all};
use crate::metric::MetricSpec;
use crate::monitor::Monitor;
use crate::plan::{Plan, WorkloadDef, WorkloadKind};
use crate::store::{NewExperiment, RunRecord, Store};
use crate::workload::command::CommandWorkload;
use crate::workload::{registry, RunOutcome, Workload};
use progress::Progress;
use schedule::Slot;

/// A plan with its workloads, configs and monitors built and preflighted.
pub struct Prepared {
    pub plan: Plan,
    workloads: Vec<(WorkloadDef, Box<dyn Workload>)>,
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

/// The state journal of a store: `<store>.journal`, next to it.
pub fn journal_path(store: &Path) -> PathBuf {
    Store::beside(store, ".journal")
}

fn build_workload(
    def: &WorkloadDef,
    ctx: &registry::BuildContext,
    ignore_exit_status: bool,
) -> Result<Box<dyn Workload>, String> {
    match &def.kind {
        WorkloadKind::Command { command, metrics } => Ok(Box::new(CommandWorkload {
            command: command.clone(),
            extract: metrics.clone(),
            ignore_exit_status,
        })),
        WorkloadKind::Builtin { name, params } => registry::build(name, params, ctx),
    }
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

/// Build workloads, configs and monitors and run every preflight; nothing on
/// the system, in the temporary directory or next to the store is changed
/// (the scratch directory is only named here; [`Prepared::arm`] makes it,
/// journaled). All problems are reported together as bad input. Refuses while the store's journal holds
/// changes a crashed run left (other than its scratch directory, which
/// [`Prepared::arm`] removes).
pub fn prepare(plan: Plan, store_path: &Path) -> Result<Prepared> {
    prepare_for(plan, store_path, false)
}

/// [`prepare`] inside a kernel config's VM (`sysdelta guest`): the kernel
/// is already booted, so its checks are the host's, not the guest's.
pub fn prepare_guest(plan: Plan, store_path: &Path) -> Result<Prepared> {
    prepare_for(plan, store_path, true)
}

fn prepare_for(plan: Plan, store_path: &Path, in_guest: bool) -> Result<Prepared> {
    let jpath = journal_path(store_path);
    refuse_pending_changes(&jpath)?;
    let journal = Journal::open_shared(&jpath)?;
    let tmp = std::env::temp_dir();
    // `arm` makes the scratch directory there once the store exists: a
    // place it cannot be made is bad input now, before anything is stored.
    if let Err(e) = nix::unistd::access(
        &tmp,
        nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK,
    )
    .map_err(std::io::Error::from)
    .and_then(|()| {
        if tmp.is_dir() {
            Ok(())
        } else {
            Err(std::io::Error::other("not a directory"))
        }
    }) {
        return Err(bad(format!(
            "cannot make a scratch directory in {} (TMPDIR): {e}",
            tmp.display()
        )));
    }
    let scratch = scratch_name(&tmp);
    let mut problems = Vec::new();
    let mut workloads = Vec::new();
    let ctx = registry::BuildContext {
        journal: Some(journal.clone()),
    };
    for def in &plan.workloads {
        match build_workload(def, &ctx, plan.overrides.ignore_failure) {
            Ok(w) => {
                // The scratch directory's file system is its parent's.
                for p in w.preflight(&tmp) {
                    problems.push(format!("workload '{}': {p}", def.name));
                }
                workloads.push((def.clone(), w))
            }
            Err(e) => problems.push(format!("workload '{}': {e}", def.name)),
        }
    }
    let mut configs = Vec::new();
    for c in &plan.configs {
        let mut env = vec![scratch_var(&scratch)];
        env.extend(c.env.iter().cloned());
        let mut kinds: Vec<Box<dyn ConfigKind>> = vec![Box::new(
            ShellKind::new(
                c.setup.clone(),
                c.teardown.clone(),
                env,
                c.workdir.clone(),
                &scratch,
            )
            .with_crash_files(setup_env_path(store_path), step_path(store_path)),
        )];
        for decl in &c.kinds {
            match crate::config::kinds::build(&decl.kind, &decl.value, journal.clone()) {
                Ok(k) => {
                    for p in k.preflight() {
                        problems.push(format!("config '{}', {}: {p}", c.name, k.kind()));
                    }
                    kinds.push(k)
                }
                Err(e) => problems.push(format!("{}: {e}", decl.at)),
            }
        }
        configs.push(ConfigRuntime::new(&c.name, kinds));
    }
    let mut monitors = Vec::new();
    for name in &plan.monitors {
        match crate::monitor::build(name, plan.monitor_interval) {
            Ok(m) => {
                for p in m.preflight() {
                    problems.push(format!("monitor '{name}': {p}"));
                }
                monitors.push(m)
            }
            Err(e) => problems.push(e),
        }
    }
    let mut config_monitors = Vec::new();
    for c in &plan.configs {
        let mut ms = Vec::new();
        for name in &c.monitors {
            match crate::monitor::build(name, plan.monitor_interval) {
                Ok(m) => {
                    for p in m.preflight() {
                        problems.push(format!("config '{}', monitor '{name}': {p}", c.name));
                    }
                    ms.push(m)
                }
                Err(e) => problems.push(e),
            }
        }
        config_monitors.push(ms);
    }
    let mut kernels = None;
    if plan.has_kernels() && !in_guest {
        match boots::preflight(&plan) {
            Ok(k) => kernels = Some(k),
            Err(p) => problems.extend(p),
        }
    }
    if !problems.is_empty() {
        return Err(bad_all(problems));
    }
    Ok(Prepared {
        plan,
        workloads,
        configs,
        monitors,
        config_monitors,
        journal,
        journal_path: jpath,
        scratch_entry: None,
        scratch,
        kernels,
    })
}

/// A fresh name for a scratch directory in `tmp`: `sysdelta-` and 12
/// random characters, as `mkdtemp` makes them (made later, by `arm`).
fn scratch_name(tmp: &Path) -> PathBuf {
    use rand::distr::{Alphanumeric, SampleString};
    tmp.join(format!(
        "sysdelta-{}",
        Alphanumeric.sample_string(&mut rand::rng(), 12)
    ))
}

/// Refuse (bad input) while the journal at `jpath` holds a change other
/// than a dead run's scratch directory; reads only.
fn refuse_pending_changes(jpath: &Path) -> Result<()> {
    Journal::open(jpath)?
        .refuse_pending(Some("scratch"))
        .map_err(|e| bad(format!("{e:#}")))
}

/// Record a new experiment for a prepared plan; returns its id.
pub fn create(store: &Store, p: &Prepared, label: Option<&str>) -> Result<i64> {
    let mut fp = crate::monitor::fingerprint::collect();
    if let Some(k) = &p.kernels {
        // Which image each kernel config boots, as preflight resolved it:
        // `--resume` must boot the same ones (see `check_resume`).
        for (c, kp) in p.plan.configs.iter().zip(&k.kernels) {
            fp.insert(format!("vm_kernel.{}", c.name), boots::kernel_identity(kp));
        }
        // Whether the guests' times are a CPU's or an emulator's.
        fp.insert(
            "vm_accel".into(),
            match &k.accel_note {
                Some(n) => format!("{} ({n})", k.accel),
                None => k.accel.to_string(),
            },
        );
    }
    let plan = &p.plan;
    store.create_experiment(&NewExperiment {
        name: &plan.name,
        label,
        plan_source: &plan.source_name,
        plan_text: &plan.text,
        overrides: &plan.overrides,
        host: &crate::monitor::fingerprint::hostname(),
        fingerprint: &fp,
        seed: plan.seed,
        order: plan.order,
        runs: plan.runs,
        warmup: plan.warmup,
        baseline: &plan.baseline,
        configs: plan.configs.iter().map(|c| c.name.clone()).collect(),
        workloads: plan.workloads.iter().map(|w| w.name.clone()).collect(),
    })
}

#[derive(Debug)]
pub struct Outcome {
    pub experiment_id: i64,
    pub status: &'static str,
    pub runs_done: usize,
    pub runs_failed: usize,
    /// Why the experiment stopped before its end (a cell failing
    /// `max_failures` runs in a row); status "failed".
    pub stopped: Option<String>,
}

/// True unless the stored plan says that config `name` has no shell
/// teardown (a plan that no longer parses counts as having one: its
/// teardown then runs on `--resume`, as before).
pub fn config_has_teardown(
    source: &str,
    text: &str,
    overrides: &crate::plan::Overrides,
    name: &str,
) -> bool {
    crate::plan::parse(source, text, overrides)
        .ok()
        .and_then(|p| p.configs.into_iter().find(|c| c.name == name))
        .is_none_or(|c| c.teardown.is_some())
}

/// The cells (config/workload) of an experiment without one successful
/// measured run, each with its last failure: such an experiment has no
/// result for them, and `run` exits non-zero.
pub fn cells_without_success(store: &Store, exp: i64) -> Result<Vec<String>> {
    let d = store.load(exp)?;
    let mut out = Vec::new();
    for c in &d.info.configs {
        for w in &d.info.workloads {
            let runs: Vec<_> = d
                .runs
                .iter()
                .filter(|r| &r.config == c && &r.workload == w && !r.warmup)
                .collect();
            if runs.iter().any(|r| r.status == "ok") {
                continue;
            }
            let last = runs
                .iter()
                .rev()
                .find_map(|r| r.reason.as_deref())
                .map(|r| format!(" (last failure: {r})"))
                .unwrap_or_else(|| " (no measured run)".into());
            out.push(format!("{c}/{w}{last}"));
        }
    }
    Ok(out)
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

/// The adaptive stopping rule, a precision rule: stop when every defined
/// ratio CI (every metric, every config against the baseline) is narrower
/// than `target` (as a fraction of the baseline mean). It looks only at the
/// widths, never at whether a difference is significant, so stopping does
/// not bias the tests (a "stop when significant" rule would). Uses 2,000
/// resamples per check; the final report uses the full count.
fn precision_check(
    store: &Store,
    exp: i64,
    target: f64,
    only: &[String],
) -> Result<(bool, String)> {
    let data = store.load(exp)?;
    let opts = crate::report::analysis::Options {
        resamples: 2000,
        ..Default::default()
    };
    let a = crate::report::analysis::analyze(&data, &opts).map_err(|e| anyhow::anyhow!(e))?;
    let mut widest: Option<(f64, String)> = None;
    let mut undefined = 0usize;
    let wanted = |workload: &str, metric: &str| {
        only.is_empty()
            || only
                .iter()
                .any(|o| o == metric || *o == format!("{workload}/{metric}"))
    };
    for m in a
        .metrics
        .iter()
        .filter(|m| wanted(&m.workload, &m.spec.name))
    {
        for c in &m.comparisons {
            match c.ratio_ci {
                Some((lo, hi)) => {
                    let w = hi - lo;
                    if widest.as_ref().is_none_or(|(x, _)| w > *x) {
                        widest = Some((w, format!("{}/{} {}", m.workload, m.spec.name, c.config)));
                    }
                }
                None => undefined += 1,
            }
        }
    }
    Ok(match widest {
        None => (false, "no confidence interval defined yet".into()),
        Some((w, what)) => (
            w <= target,
            format!(
                "widest 95% CI of a ratio {:.2}% ({what}), target {:.2}%{}",
                100.0 * w,
                100.0 * target,
                if undefined > 0 {
                    format!("; {undefined} comparisons without a CI not counted")
                } else {
                    String::new()
                }
            ),
        ),
    })
}

/// After a config is entered, and before its first run, spawn one empty
/// shell with its environment. A config's setup is itself a shell that
/// warms the exec path right before the config's first run, so a config
/// with a setup ran faster than one without: -0.4% [-0.8, -0.0] on a 30 ms
/// command here, 30 runs each, for configs that differ only in
/// `export OTHER=1`. With this step every run that follows a config switch
/// follows the same spawn, whatever the config's setup.
pub(crate) fn settle_after_enter(env: &[(String, String)]) {
    let spec = crate::process::ShellSpec {
        command: ":",
        env,
        timeout: Some(Duration::from_secs(10)),
        ..Default::default()
    };
    let _ = crate::process::run_shell(&spec, &AtomicBool::new(false));
}

/// A config whose teardown was killed before its end is still entered: the
/// experiment stops there (the store keeps naming the config, for
/// `restore` to report and `--resume` to finish leaving it).
fn refuse_cut_short(c: &ConfigRuntime) -> Result<()> {
    if c.left_cleanly() {
        return Ok(());
    }
    anyhow::bail!(
        "config '{}': its teardown was killed before its end; `sysdelta run --resume` runs it again",
        c.name
    )
}

/// Crash recovery for `--resume`: if the store says a config was entered
/// when the previous sysdelta died, run that config's shell teardown now.
pub fn teardown_after_crash(store: &Store, exp: i64, p: &mut Prepared) -> Result<Option<String>> {
    let info = store.info(exp)?;
    let Some(name) = info.entered_config else {
        return Ok(None);
    };
    let dump = setup_env_path(store.path());
    let step_file = step_path(store.path());
    // A setup or teardown shell that was running when sysdelta stopped goes
    // on by itself (its own process group): let it end first, so that its
    // environment dump is complete and two shells never overlap.
    let step = StepState::read(&step_file).and_then(|st| {
        if st.done {
            return Some(st);
        }
        if let Some(pid) = st.pid {
            eprintln!(
                "sysdelta: waiting for the {} shell (pid {pid}) that was running when sysdelta stopped",
                st.step
            );
        }
        StepState::wait_for_shell(&step_file, SHELL_STEP_TIMEOUT)
    });
    let msg = match p.plan.configs.iter().find(|c| c.name == name) {
        Some(c)
            if c.teardown.is_some()
                && step
                    .as_ref()
                    .is_some_and(|st| st.step == "teardown" && st.done) =>
        {
            format!("config '{name}' was being left when sysdelta stopped; its teardown ran to its end by itself (its shell outlives sysdelta), so it did not run again")
        }
        Some(c) if c.teardown.is_some() => {
            let mut env = vec![scratch_var(p.scratch())];
            env.extend(c.env.iter().cloned());
            // What the setup exported in the run that died (later entries
            // win): as stored, or, when the kill came before sysdelta
            // stored it, from the dump the setup shell left.
            let mut exported = store.entered_env(exp)?;
            if exported.is_empty() {
                exported = crate::config::shell::exported_by_setup(&dump, &env);
            }
            env.extend(exported);
            let mut k = ShellKind::new(
                None,
                c.teardown.clone(),
                env,
                c.workdir.clone(),
                p.scratch(),
            )
            .with_crash_files(dump.clone(), step_file.clone());
            match k.leave() {
                Ok(()) => format!("config '{name}' was entered when sysdelta stopped; its teardown ran on resume"),
                Err(e) => format!("config '{name}' was entered when sysdelta stopped; its teardown on resume failed: {e:#}"),
            }
        }
        _ => format!("config '{name}' was entered when sysdelta stopped; it has no teardown"),
    };
    let _ = std::fs::remove_file(&step_file);
    let _ = std::fs::remove_file(&dump);
    store.add_event(exp, "teardown", &msg)?;
    store.set_entered_config(exp, None)?;
    Ok(Some(msg))
}

/// Record how an experiment that ran to its end (or was stopped) ended:
/// `interrupted` (resume it), `failed` (a cell failed too often in a row)
/// or `complete`.
pub(crate) fn finish(
    store: &Store,
    exp: i64,
    interrupted: bool,
    stopped: Option<String>,
    usage: &serde_json::Value,
    (runs_done, runs_failed): (usize, usize),
) -> Result<Outcome> {
    let status = if interrupted {
        "interrupted"
    } else if stopped.is_some() {
        "failed"
    } else {
        "complete"
    };
    store.finish(exp, status, Some(usage))?;
    Ok(Outcome {
        experiment_id: exp,
        status,
        runs_done,
        runs_failed,
        stopped,
    })
}

/// Declare every workload's metrics, with the metrics config kinds add to
/// each run (trace bytes, events lost), before the first run.
pub(crate) fn declare_metrics(store: &Store, exp: i64, p: &Prepared) -> Result<()> {
    let kind_metrics: Vec<MetricSpec> = p
        .configs
        .iter()
        .flat_map(|c| c.kinds.iter().flat_map(|k| k.metrics()))
        .collect();
    for (def, w) in &p.workloads {
        let mut specs = w.metrics();
        for m in &kind_metrics {
            if !specs.iter().any(|s| s.name == m.name) {
                specs.push(m.clone());
            }
        }
        store.declare_metrics(exp, &def.name, &specs)?;
    }
    Ok(())
}

/// Execute the runs of `exp` that are not yet in the store.
pub fn execute(store: &Store, exp: i64, p: &mut Prepared, opts: &ExecOptions) -> Result<Outcome> {
    if p.kernels.is_some() {
        return boots::host::execute(store, exp, p, opts);
    }
    p.arm()?;
    let cpu0 = self_cpu();
    let t0 = Instant::now();
    // A copy: the loop below lends `p` whole to each run.
    let plan = &p.plan.clone();
    let slots = schedule::schedule(
        plan.configs.len(),
        plan.workloads.len(),
        plan.runs,
        plan.warmup,
        plan.order,
        plan.seed,
    );
    // Runs go to the store's run log, one line each, folded into the
    // tables in batches (see store::runlog).
    store.log_runs()?;
    let done: HashSet<(u32, u32)> = store.done_slots(exp)?;
    let mut next_block = slots
        .iter()
        .map(|s| s.block + 1)
        .chain(done.iter().map(|d| d.0 + 1))
        .max()
        .unwrap_or(0);
    // Blocks an adaptive experiment added beyond the planned ones are
    // rebuilt too, so a block interrupted half-way is completed on resume.
    let planned_blocks = plan.warmup + plan.runs;
    let extra: Vec<Slot> = (planned_blocks..next_block)
        .flat_map(|b| {
            schedule::random_block(
                plan.configs.len(),
                plan.workloads.len(),
                plan.seed,
                b,
                b < plan.warmup,
            )
        })
        .collect();
    let todo: Vec<Slot> = slots
        .into_iter()
        .chain(extra)
        .filter(|s| !done.contains(&(s.block, s.seq)))
        .collect();
    let adaptive = plan.overrides.until_ci.map(|target| {
        let max = plan
            .overrides
            .max_runs
            .unwrap_or(crate::plan::ADAPTIVE_MAX_RUNS);
        (target, plan.warmup + max)
    });

    declare_metrics(store, exp, p)?;
    telemetry::before_first_block(store, exp, p)?;

    let mut declared: HashSet<(usize, String)> = HashSet::new();
    // Workload notes already recorded as events (each distinct line once,
    // also across --resume).
    let mut noted: HashSet<String> = store.event_messages(exp, "skipped")?.into_iter().collect();
    let total = match adaptive {
        Some((_, max_blocks)) => (max_blocks as usize * plan.configs.len() * plan.workloads.len())
            .saturating_sub(done.len()),
        None => todo.len(),
    };
    let mut progress = Progress::new(total as u64, opts.quiet);
    let mut current: Option<usize> = None;
    let mut runs_done = 0usize;
    let mut runs_failed = 0usize;
    // Fail fast: runs each cell failed in a row, and why the experiment
    // stopped when one reached the limit.
    let mut failing = streaks::Streaks::new(plan);
    let mut stopped: Option<String> = None;

    // Everything that changes the system happens inside; whatever happens
    // (error or panic), the entered config is left and workloads cleaned up.
    let result = catch_unwind(AssertUnwindSafe(|| -> Result<()> {
        for (def, w) in p.workloads.iter_mut() {
            w.prepare(&p.scratch)
                .with_context(|| format!("preparing workload '{}'", def.name))?;
        }
        if let Some(setup) = &plan.setup {
            let env = vec![scratch_var(&p.scratch)];
            let mut k = ShellKind::new(Some(setup.clone()), None, env, None, &p.scratch);
            k.enter().context("plan setup")?;
        }
        let mut queue: std::collections::VecDeque<Slot> = todo.into();
        loop {
            if queue.is_empty() {
                // Adaptive stopping: check precision, then add one block.
                let Some((target, max_blocks)) = adaptive else {
                    break;
                };
                if opts.cancel.load(Ordering::SeqCst) {
                    break;
                }
                let (reached, why) =
                    precision_check(store, exp, target, &plan.overrides.until_metrics)?;
                if reached || next_block >= max_blocks {
                    let msg = if reached {
                        format!(
                            "stopped after {} measured runs per cell: {why}",
                            next_block - plan.warmup
                        )
                    } else {
                        format!(
                            "stopped at --max-runs ({} per cell) before the target: {why}",
                            next_block - plan.warmup
                        )
                    };
                    store.add_event(exp, "stop", &msg)?;
                    progress.note(&msg);
                    break;
                }
                let cells = plan.configs.len() * plan.workloads.len();
                let b = next_block;
                next_block += 1;
                queue.extend(schedule::random_block(
                    plan.configs.len(),
                    plan.workloads.len(),
                    plan.seed,
                    b,
                    b < plan.warmup,
                ));
                debug_assert_eq!(queue.len(), cells);
            }
            let Some(slot) = queue.pop_front() else { break };
            let slot = &slot;
            if opts.cancel.load(Ordering::SeqCst) {
                break;
            }
            let cfg_name = plan.configs[slot.config].name.clone();
            let started_at = now_unix();
            let mut failure: Option<String> = None;
            if current != Some(slot.config) {
                if let Some(c) = current.take() {
                    if let Err(e) = p.configs[c].leave() {
                        store.add_event(exp, "teardown", &format!("{e:#}"))?;
                        progress.note(&format!("{e:#}"));
                    }
                    refuse_cut_short(&p.configs[c])?;
                    store.set_entered_config(exp, None)?;
                }
                store.set_entered_config(exp, Some(&cfg_name))?;
                current = Some(slot.config);
                if let Err(e) = p.configs[slot.config].enter() {
                    failure = Some(format!("config '{cfg_name}': {e:#}"));
                    // Leave at once (undoing what the failed enter did) so
                    // that the next run of this config enters it afresh
                    // instead of running in a half-entered state.
                    current = None;
                    if let Err(e) = p.configs[slot.config].leave() {
                        store.add_event(exp, "teardown", &format!("{e:#}"))?;
                    }
                    refuse_cut_short(&p.configs[slot.config])?;
                    store.set_entered_config(exp, None)?;
                } else {
                    store.set_entered_env(exp, &p.configs[slot.config].mods.env)?;
                    settle_after_enter(&p.configs[slot.config].mods.env);
                }
            }
            let measured = match failure {
                Some(reason) => slot::Measured::failed(reason),
                None => slot::measure(p, slot, opts.cancel),
            };
            for line in &measured.notes {
                if noted.insert(line.clone()) {
                    store.add_event(exp, "skipped", line)?;
                    progress.note(line);
                }
            }
            for e in &measured.monitor_errors {
                store.add_event(exp, "monitor", e)?;
                progress.note(e);
            }
            if measured.interrupted(opts.cancel) {
                break;
            }
            let wname = &p.workloads[slot.workload].0.name;
            let outcome = &measured.outcome;
            let what = || match outcome {
                RunOutcome::Ok(s) => {
                    let first = s
                        .first()
                        .and_then(|m| m.values.first())
                        .copied()
                        .unwrap_or(f64::NAN);
                    format!("block {} {}/{}: {:.4}", slot.block, cfg_name, wname, first)
                }
                RunOutcome::Failed { reason, .. } => {
                    format!("block {} {}/{}: {reason}", slot.block, cfg_name, wname)
                }
            };
            let extras = slot::extras(p, slot, &measured, &mut declared);
            if !extras.new_specs.is_empty() {
                store.declare_metrics(exp, wname, &extras.new_specs)?;
            }
            store.record_run(&RunRecord {
                experiment_id: exp,
                block: slot.block,
                seq: slot.seq,
                config: &cfg_name,
                workload: wname,
                warmup: slot.warmup,
                started_at,
                result: slot::result_of(outcome),
                series: &extras.series,
                profile: &extras.profile,
            })?;
            let failed = matches!(outcome, RunOutcome::Failed { .. });
            runs_done += 1;
            runs_failed += failed as usize;
            progress.run_done(what, failed);
            let reason = match outcome {
                RunOutcome::Failed { reason, .. } => Some(reason.as_str()),
                RunOutcome::Ok(_) => None,
            };
            if let Some(msg) = failing.record(plan, exp, (slot.config, slot.workload), reason) {
                store.add_event(exp, "stop", &msg)?;
                progress.note(&msg);
                stopped = Some(msg);
                break;
            }
        }
        Ok(())
    }));

    // Always: leave the entered config, run the plan teardown, clean up.
    let mut cleanup_errors = Vec::new();
    if let Some(c) = current.take() {
        match p.configs[c].leave() {
            Ok(()) => {}
            Err(e) => cleanup_errors.push(format!("{e:#}")),
        }
        // A teardown killed before its end leaves the config entered, for
        // `restore` to report and `--resume` to finish.
        if p.configs[c].left_cleanly() {
            let _ = store.set_entered_config(exp, None);
        }
    }
    if let Some(t) = &plan.teardown {
        let env = vec![scratch_var(&p.scratch)];
        let mut k = ShellKind::new(None, Some(t.clone()), env, None, &p.scratch);
        if let Err(e) = k.leave() {
            cleanup_errors.push(format!("plan teardown: {e:#}"));
        }
    }
    for (_, w) in p.workloads.iter_mut() {
        w.cleanup();
    }
    // Every kind undid its own changes on leave; anything still journaled
    // (a failed undo) gets one more try, and is reported if it stays. The
    // scratch directory's entry is not such a leftover: it stays until the
    // directory is gone, when `p` is dropped.
    {
        let mut j = p.journal.lock().unwrap_or_else(|e| e.into_inner());
        if j.pending_owned_by_others("scratch") {
            match j.restore_all_but("scratch") {
                Ok(lines) => lines
                    .into_iter()
                    .for_each(|l| cleanup_errors.push(format!("restored: {l}"))),
                Err(e) => cleanup_errors.push(format!("{e:#}; run `sysdelta restore`")),
            }
        }
    }
    progress.finish();
    for e in &cleanup_errors {
        let _ = store.add_event(exp, "teardown", e);
        eprintln!("sysdelta: {e}");
    }

    let cancelled = opts.cancel.load(Ordering::SeqCst);
    // A teardown killed before its end (a second signal, its timeout)
    // leaves its config entered: the experiment is interrupted, whatever
    // else happened, so that `restore` reports it and `--resume` finishes
    // leaving it.
    let still_entered = p.configs.iter().any(|c| !c.left_cleanly());
    let wall = t0.elapsed().as_secs_f64();
    let cpu = (self_cpu() - cpu0).as_secs_f64();
    let usage = usage(wall, cpu, runs_done);
    // Every run into the tables and the log file removed; if that fails the
    // log stays, and the next sysdelta to open the store folds it.
    let closed = store.close_run_log();
    match result {
        Err(panic) => {
            let _ = store.finish(exp, "failed", Some(&usage));
            resume_unwind(panic)
        }
        Ok(Err(e)) => {
            let _ = store.add_event(exp, "error", &format!("{e:#}"));
            let status = if still_entered {
                "interrupted"
            } else {
                "failed"
            };
            let _ = store.finish(exp, status, Some(&usage));
            Err(e)
        }
        Ok(Ok(())) => {
            closed?;
            finish(
                store,
                exp,
                cancelled || still_entered,
                stopped,
                &usage,
                (runs_done, runs_failed),
            )
        }
    }
}
