//! How a workload is run, beyond what it runs: the shell its command line
//! is given to (`shell`, or none), and the untimed commands around each of
//! its runs (`prepare`, `conclude`). Each is a plan-wide default that a
//! workload may override; an empty `prepare` or `conclude` on a workload
//! turns the plan's off for it.

use toml::Spanned;

use super::model::CommandLaunch;
use super::position::Origin;
use crate::error::Error;
use crate::process::program;

/// The plan-wide values, which workloads inherit.
#[derive(Clone, Copy, Default)]
pub(super) struct Defaults<'a> {
    pub shell: Option<&'a Spanned<String>>,
    pub prepare: Option<&'a Spanned<String>>,
    pub conclude: Option<&'a Spanned<String>>,
}

/// A hook (prepare or conclude) of a workload: its own, else the plan's;
/// an empty (or blank) one is none.
pub(super) fn hook(
    own: Option<&Spanned<String>>,
    plan: Option<&Spanned<String>>,
) -> Option<String> {
    own.or(plan)
        .map(|s| s.get_ref().clone())
        .filter(|s| !s.trim().is_empty())
}

/// How `command` is started under `shell` (the workload's, else the
/// plan's; default `/bin/sh`). `shell = "none"` splits the command line
/// now, so a command that needs a shell is refused before anything runs.
pub(super) fn command_launch(
    origin: &Origin,
    workload: &str,
    command: &Spanned<String>,
    shell: Option<&Spanned<String>>,
) -> Result<CommandLaunch, Error> {
    let Some(shell) = shell else {
        return Ok(CommandLaunch::Shell(program::DEFAULT_SHELL.into()));
    };
    let name = shell.get_ref().trim();
    if name == "none" {
        return program::split_for_exec(command.get_ref())
            .map(CommandLaunch::Direct)
            .map_err(|m| {
                origin.bad_at(
                    command.span().start,
                    format!("workload '{workload}' runs without a shell: {m}"),
                )
            });
    }
    if name.is_empty() || name.chars().any(char::is_whitespace) {
        return Err(origin.bad_at(
            shell.span().start,
            format!("shell '{name}': expected \"none\" or a shell program such as /bin/bash"),
        ));
    }
    program::resolve(name, &[])
        .map_err(|e| origin.bad_at(shell.span().start, format!("shell '{name}': {e}")))?;
    Ok(CommandLaunch::Shell(name.to_string()))
}
