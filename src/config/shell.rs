//! The shell config kind: a config's `setup` and `teardown` commands.
//!
//! `setup` runs in `/bin/sh` with `set -e`; whatever environment it leaves
//! (e.g. `export X=1`) is captured and given to the workload, so the `ab`
//! shorthand `-c 'slow=export X=1'` works as a reader expects. `teardown`
//! runs with the same environment when the config is left.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{anyhow, Result};

use super::kind::{ConfigKind, LaunchMods};
use crate::process::{run_shell, Exit, ShellSpec};

/// Setup and teardown each get this long before they are killed.
pub const SHELL_STEP_TIMEOUT: Duration = Duration::from_secs(600);

/// Variables the shell sets itself, which are not the setup's doing.
const SHELL_OWN_VARS: &[&str] = &[
    "PWD",
    "OLDPWD",
    "SHLVL",
    "_",
    "SYSDELTA_ENV_OUT",
    "SYSDELTA_STEP",
];

pub struct ShellKind {
    pub setup: Option<String>,
    pub teardown: Option<String>,
    pub env: Vec<(String, String)>,
    pub workdir: Option<PathBuf>,
    pub scratch: PathBuf,
    /// Set while entered: the environment the setup left.
    captured: Vec<(String, String)>,
    /// Where the setup's environment is dumped: kept while the config is
    /// entered (None: in the scratch directory, removed at once).
    env_dump: Option<PathBuf>,
    /// The step file (see [`ShellKind::with_crash_files`]).
    step_file: Option<PathBuf>,
    /// The last teardown was killed (a second Ctrl-C, its timeout) before
    /// its end: the config is not left, and resume runs it again.
    cut_short: bool,
}

/// Never set: setup and teardown are not cut short by Ctrl-C (teardown must
/// finish); they have their own timeout.
static NOT_CANCELLED: AtomicBool = AtomicBool::new(false);

impl ShellKind {
    pub fn new(
        setup: Option<String>,
        teardown: Option<String>,
        env: Vec<(String, String)>,
        workdir: Option<PathBuf>,
        scratch: &Path,
    ) -> ShellKind {
        ShellKind {
            setup,
            teardown,
            env,
            workdir,
            scratch: scratch.to_path_buf(),
            captured: Vec::new(),
            env_dump: None,
            step_file: None,
            cut_short: false,
        }
    }

    /// Files that outlive a SIGKILLed sysdelta (next to the store), for
    /// `--resume`. Setup and teardown shells run in their own process group,
    /// so a SIGKILL of sysdelta does not stop them: they go on to their end.
    /// `env_dump` receives the setup's environment and is kept until the
    /// config is left, so a teardown on resume sees what the setup exported
    /// ([`exported_by_setup`]) even when the kill came before sysdelta
    /// stored it. `step` says which step runs (written by sysdelta before
    /// it starts the shell), the shell's pid (written by the shell) and
    /// `done` once the shell ran to its end (its exit trap, after the
    /// environment dump), so that resume can wait for a step still running
    /// and does not repeat a teardown that ended ([`StepState`]).
    pub fn with_crash_files(mut self, env_dump: PathBuf, step: PathBuf) -> ShellKind {
        self.env_dump = Some(env_dump);
        self.step_file = Some(step);
        self
    }

    /// True when the step file of the last step is still there: its shell
    /// was killed before its end (see `run_step`).
    fn step_was_cut_short(&self) -> bool {
        self.step_file.as_ref().is_some_and(|p| p.exists())
    }

    /// The config is left: its setup's environment is no longer needed.
    fn forget_env_dump(&mut self) {
        self.captured.clear();
        if let Some(p) = &self.env_dump {
            let _ = std::fs::remove_file(p);
        }
    }

    fn run_step(
        &self,
        what: &str,
        script: &str,
        env: &[(String, String)],
        capture_to: Option<&Path>,
    ) -> Result<()> {
        let mut full_env = env.to_vec();
        let mut prologue = String::new();
        let mut on_exit = Vec::new();
        if let Some(p) = capture_to {
            full_env.push(("SYSDELTA_ENV_OUT".into(), p.display().to_string()));
            // Readable by its owner only: it holds the whole environment.
            on_exit.push("umask 077; env -0 > \"$SYSDELTA_ENV_OUT\"");
        }
        // Best effort: without a step file, resume falls back to running
        // the teardown (see `with_crash_files`).
        let step = self
            .step_file
            .as_ref()
            // Made anew, 0600, never through a link planted in its place.
            .filter(|p| crate::sys::trust::replace(p, format!("{what}\n").as_bytes()).is_ok());
        if let Some(p) = step {
            full_env.push(("SYSDELTA_STEP".into(), p.display().to_string()));
            prologue.push_str("echo \"pid $$\" >> \"$SYSDELTA_STEP\"\n");
            on_exit.push("echo done >> \"$SYSDELTA_STEP\"");
        }
        let trap = if on_exit.is_empty() {
            String::new()
        } else {
            format!("trap '{}' EXIT\n", on_exit.join("; "))
        };
        let body = format!("{prologue}{trap}set -e\n{script}\n");
        let spec = ShellSpec {
            command: &body,
            env: &full_env,
            cwd: self.workdir.as_deref(),
            timeout: Some(SHELL_STEP_TIMEOUT),
            ..Default::default()
        };
        let r = run_shell(&spec, &NOT_CANCELLED);
        // A shell killed before its end keeps its step file (no `done` in
        // it): resume runs that step again.
        let cut_short = r
            .as_ref()
            .is_ok_and(|r| r.timed_out || matches!(r.exit, Exit::Signal(_)));
        if let Some(p) = step.filter(|_| !cut_short) {
            let _ = std::fs::remove_file(p);
        }
        let r = r.map_err(|e| anyhow!("{what}: cannot start /bin/sh: {e}"))?;
        if let Some(reason) = r.failure_reason() {
            let tail = r.stderr_tail.trim();
            let last = tail.lines().last().unwrap_or("");
            return Err(anyhow!(
                "{what} failed ({reason}){}",
                if last.is_empty() {
                    String::new()
                } else {
                    format!(": {last}")
                }
            ));
        }
        Ok(())
    }
}

/// What a step file says of the setup or teardown that was running when
/// sysdelta stopped (see [`ShellKind::with_crash_files`]).
#[derive(Debug, PartialEq)]
pub struct StepState {
    /// `setup` or `teardown`.
    pub step: String,
    /// The shell's pid, once it wrote it.
    pub pid: Option<i32>,
    /// The shell ran to its end (whether its commands succeeded or not).
    pub done: bool,
}

impl StepState {
    /// None when there is no step file: no step was running.
    pub fn read(path: &Path) -> Option<StepState> {
        // Only a step file that is ours says which shell ran.
        let bytes = crate::sys::trust::read(path).ok()??;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let mut lines = text.lines();
        Some(StepState {
            step: lines.next().unwrap_or("").to_string(),
            pid: text
                .lines()
                .find_map(|l| l.strip_prefix("pid ").and_then(|p| p.trim().parse().ok())),
            done: text.lines().any(|l| l == "done"),
        })
    }

    /// Wait (at most `limit`) while the shell that was running when
    /// sysdelta stopped goes on by itself; then read the file again.
    pub fn wait_for_shell(path: &Path, limit: Duration) -> Option<StepState> {
        let until = std::time::Instant::now() + limit;
        loop {
            let st = StepState::read(path)?;
            let alive = st.pid.is_some_and(|pid| {
                // SAFETY: signal 0 only checks that the process exists.
                unsafe { libc::kill(pid, 0) == 0 }
            });
            if st.done || !alive || std::time::Instant::now() >= until {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// What a setup exported, from the dump its shell wrote to `path` on exit:
/// the variables that differ from sysdelta's environment with `env` (what
/// the setup was started with) laid over it. Empty when there is no dump.
pub fn exported_by_setup(path: &Path, env: &[(String, String)]) -> Vec<(String, String)> {
    // Only a dump that is ours is laid over a teardown's environment.
    let Ok(Some(dump)) = crate::sys::trust::read(path) else {
        return Vec::new();
    };
    let mut before: HashMap<String, String> = std::env::vars().collect();
    before.extend(env.iter().cloned());
    env_changes(&dump, &before)
}

/// Parse `env -0` output and keep what differs from `before`.
fn env_changes(dump: &[u8], before: &HashMap<String, String>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = dump
        .split(|b| *b == 0)
        .filter_map(|kv| {
            let kv = std::str::from_utf8(kv).ok()?;
            let (k, v) = kv.split_once('=')?;
            if SHELL_OWN_VARS.contains(&k) || before.get(k).map(String::as_str) == Some(v) {
                return None;
            }
            Some((k.to_string(), v.to_string()))
        })
        .collect();
    out.sort();
    out
}

impl ConfigKind for ShellKind {
    fn changes_system(&self) -> bool {
        false
    }

    fn kind(&self) -> &'static str {
        "shell"
    }

    fn enter(&mut self) -> Result<LaunchMods> {
        self.captured = self.env.clone();
        // A step file left from an earlier experiment says nothing of this one.
        if let Some(p) = &self.step_file {
            let _ = std::fs::remove_file(p);
        }
        if let Some(setup) = &self.setup {
            let out = self
                .env_dump
                .clone()
                .unwrap_or_else(|| self.scratch.join("setup-env"));
            let _ = std::fs::remove_file(&out);
            self.run_step("setup", setup, &self.env, Some(&out))?;
            let exported = exported_by_setup(&out, &self.env);
            if self.env_dump.is_none() {
                let _ = std::fs::remove_file(&out);
            }
            for (k, v) in exported {
                self.captured.retain(|(ek, _)| *ek != k);
                self.captured.push((k, v));
            }
        }
        Ok(LaunchMods {
            env: self.captured.clone(),
            ..Default::default()
        })
    }

    fn leave(&mut self) -> Result<()> {
        let done = match &self.teardown {
            Some(t) => {
                let env = if self.captured.is_empty() {
                    self.env.clone()
                } else {
                    self.captured.clone()
                };
                self.run_step("teardown", t, &env, None)
            }
            None => Ok(()),
        };
        self.cut_short = self.teardown.is_some() && self.step_was_cut_short();
        // Left, even when the teardown failed (the runner reports that),
        // unless it was killed before its end: then what its setup exported
        // stays for the teardown that resume runs.
        if !self.cut_short {
            self.forget_env_dump();
        }
        done
    }

    fn left_cleanly(&self) -> bool {
        !self.cut_short
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exported_variables_reach_the_workload() {
        let dir = tempfile::tempdir().unwrap();
        let mut k = ShellKind::new(
            Some("export SLOW=1\nexport PATH_EXTRA=/x".into()),
            None,
            vec![("A".into(), "b".into())],
            None,
            dir.path(),
        );
        let mods = k.enter().unwrap();
        assert!(
            mods.env.contains(&("SLOW".into(), "1".into())),
            "{:?}",
            mods.env
        );
        assert!(mods.env.contains(&("A".into(), "b".into())));
        assert!(!mods.env.iter().any(|(k, _)| k == "SHLVL" || k == "PWD"));
        k.leave().unwrap();
    }

    #[test]
    fn failing_setup_names_the_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut k = ShellKind::new(
            Some("echo oops >&2; false".into()),
            None,
            vec![],
            None,
            dir.path(),
        );
        let e = k.enter().unwrap_err().to_string();
        assert!(e.contains("setup failed") && e.contains("oops"), "{e}");
    }
}
