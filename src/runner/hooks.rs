//! A workload's `prepare` and `conclude`: shell commands run before and
//! after each of its runs (warm-ups too), untimed, as hyperfine's
//! `--prepare` and `--conclude`. They run in the run's config, with its
//! environment and working directory, but outside its CPU list and cgroup:
//! what they cost (dropping caches, say) must not reach the run's metrics,
//! a memory cgroup's peak among them.

use std::sync::atomic::AtomicBool;

use crate::process::{run_shell, ShellSpec};
use crate::workload::{RunContext, RunOutcome};

/// Run `hook` (`what` is "prepare" or "conclude") for the run `ctx`
/// describes; a failure is that run's failure, with the hook's stderr.
pub(super) fn run(
    what: &str,
    hook: &str,
    ctx: &RunContext,
    cancel: &AtomicBool,
) -> Result<(), RunOutcome> {
    let mut env = vec![crate::workload::scratch_var(ctx.scratch)];
    env.extend(ctx.env.iter().cloned());
    let spec = ShellSpec {
        command: hook,
        env: &env,
        cwd: ctx.cwd,
        timeout: Some(ctx.timeout),
        ..Default::default()
    };
    let failed = |reason: String, stderr_tail: String, exit_code| {
        Err(RunOutcome::Failed {
            reason,
            stderr_tail,
            exit_code,
        })
    };
    let result = run_shell(&spec, cancel);
    // The hook may have put a program on PATH that the run must find.
    crate::process::forget_found();
    match result {
        Err(e) => failed(format!("{what} could not start: {e}"), String::new(), None),
        Ok(r) => match r.failure_reason() {
            None => Ok(()),
            // A stop request is the run's, not the hook's: the runner does
            // not store an interrupted run.
            Some(why) if r.cancelled => failed(why, r.stderr_tail, None),
            Some(why) => failed(format!("{what} failed: {why}"), r.stderr_tail, None),
        },
    }
}
