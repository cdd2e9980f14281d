//! Before anything runs: build the plan's configs and workloads, preflight
//! them all (bad input is refused here, before anything is written), name
//! the scratch directory, and create the experiment's row.

use crate::error::Error;
// The runner's shared types and imports, which this file continues.
use super::*;

pub(super) fn build_workload(
    def: &WorkloadDef,
    ctx: &builtins::BuildContext,
    ov: &crate::overrides::Overrides,
) -> Result<Box<dyn Workload>, Error> {
    match &def.kind {
        WorkloadKind::Command {
            command,
            metrics,
            launch,
        } => Ok(Box::new(CommandWorkload {
            command: command.clone(),
            launch: launch.clone(),
            extract: metrics.clone(),
            ignore_exit_status: ov.ignore_failure,
            output: ov.output.clone(),
            last_exit: None,
        })),
        WorkloadKind::Builtin { name, params } => builtins::build(name, params, ctx),
    }
}

/// Command workload `def` with `command` in place of its own, as a
/// config's `command` asks (None: `def` is a built-in, which it leaves).
fn config_workload(
    def: &WorkloadDef,
    command: &str,
    ctx: &builtins::BuildContext,
    ov: &crate::overrides::Overrides,
) -> Option<Result<Box<dyn Workload>, Error>> {
    let WorkloadKind::Command {
        metrics, launch, ..
    } = &def.kind
    else {
        return None;
    };
    let launch = match launch.for_command(command) {
        Ok(l) => l,
        Err(m) => return Some(Err(Error::bad(m))),
    };
    let own = WorkloadDef {
        kind: WorkloadKind::Command {
            command: command.to_string(),
            metrics: metrics.clone(),
            launch,
        },
        ..def.clone()
    };
    Some(build_workload(&own, ctx, ov))
}

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

pub(super) fn prepare_for(plan: Plan, store_path: &Path, in_guest: bool) -> Result<Prepared> {
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
    let ctx = builtins::BuildContext {
        journal: Some(journal.clone()),
    };
    for def in &plan.workloads {
        match build_workload(def, &ctx, &plan.overrides) {
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
    let mut by_config = std::collections::HashMap::new();
    for (ci, c) in plan.configs.iter().enumerate() {
        let Some(cmd) = &c.command else { continue };
        for (wi, def) in plan.workloads.iter().enumerate() {
            match config_workload(def, cmd, &ctx, &plan.overrides) {
                Some(Ok(w)) => {
                    by_config.insert((ci, wi), w);
                }
                Some(Err(e)) => problems.push(format!("config '{}': {e}", c.name)),
                None => {}
            }
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
            Err(e) => problems.push(e.to_string()),
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
                Err(e) => problems.push(e.to_string()),
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
        by_config,
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
pub(super) fn scratch_name(tmp: &Path) -> PathBuf {
    use rand::distr::{Alphanumeric, SampleString};
    tmp.join(format!(
        "sysdelta-{}",
        Alphanumeric.sample_string(&mut rand::rng(), 12)
    ))
}

/// Refuse (bad input) while the journal at `jpath` holds a change other
/// than a dead run's scratch directory; reads only.
pub(super) fn refuse_pending_changes(jpath: &Path) -> Result<()> {
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
