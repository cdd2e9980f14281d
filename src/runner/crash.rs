//! After a crash: finish leaving the config a dead run was stopped inside
//! (its shell teardown, with the environment its setup exported), before
//! `--resume` runs anything.

// The runner's shared types and imports, which this file continues.
use super::*;

/// A config whose teardown was killed before its end is still entered: the
/// experiment stops there (the store keeps naming the config, for
/// `restore` to report and `--resume` to finish leaving it).
pub(super) fn refuse_cut_short(c: &ConfigRuntime) -> Result<()> {
    if c.left_cleanly() {
        return Ok(());
    }
    anyhow::bail!(
        "config '{}': its teardown was killed before its end; `sysdelta run --resume` runs it again",
        c.name
    )
}

/// What a resume was allowed to run of a dead run's entered config, as
/// read from the store when the trust rule was applied (`cli::trust`):
/// the config, and the environment its teardown runs with (empty when the
/// config has no teardown).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Entered {
    pub config: Option<String>,
    pub env: Vec<(String, String)>,
}

/// Crash recovery for `--resume`: if the store says a config was entered
/// when the previous sysdelta died, run that config's shell teardown now.
/// `checked`: what the caller checked (and the user saw) of it; a store
/// that says otherwise now was written in between, and is refused.
pub fn teardown_after_crash(
    store: &Store,
    exp: i64,
    p: &mut Prepared,
    checked: Option<&Entered>,
) -> Result<Option<String>> {
    let info = store.info(exp)?;
    let changed = || {
        bad(format!(
            "experiment {exp} changed in the store since it was checked (the config it was stopped inside, or its environment); nothing was run: run the command again"
        ))
    };
    if checked.is_some_and(|c| c.config != info.entered_config) {
        return Err(changed());
    }
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
            crate::sys::stderr::say!(
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
            if checked.is_some_and(|c| c.env != exported) {
                return Err(changed());
            }
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
