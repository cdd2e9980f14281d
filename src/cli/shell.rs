//! `sysdelta completions SHELL` and `sysdelta man`: what a shell and `man`
//! need, made from the command line's own definition (clap_complete,
//! clap_mangen), so they never fall behind a new flag.

use anyhow::Result;

use super::output::emit;

/// The completion script for `shell`, on stdout.
pub fn completions(shell: clap_complete::Shell) -> Result<()> {
    let full = super::command();
    // Without the hidden subcommands (the guest's): clap_complete offers
    // every subcommand it is given.
    let mut cmd = clap::Command::new("sysdelta")
        .version(env!("SYSDELTA_VERSION"))
        .args(full.get_arguments().cloned())
        .subcommands(full.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "sysdelta", &mut out);
    emit(&String::from_utf8_lossy(&out), None)
}

/// The man page (roff) of sysdelta, or of one of its subcommands
/// (`sysdelta-run(1)`, as git's pages), on stdout:
/// `sysdelta man > sysdelta.1; man -l sysdelta.1`.
pub fn man(sub: Option<&str>) -> Result<()> {
    let mut cmd = super::command();
    cmd.build();
    let page = match sub {
        None => cmd,
        Some(name) => {
            let Some(s) = cmd
                .get_subcommands()
                .find(|s| s.get_name() == name && !s.is_hide_set())
            else {
                let names: Vec<&str> = cmd
                    .get_subcommands()
                    .filter(|s| !s.is_hide_set())
                    .map(|s| s.get_name())
                    .collect();
                return Err(crate::error::bad(format!(
                    "man: no subcommand '{name}' (one of: {})",
                    names.join(", ")
                )));
            };
            s.clone()
        }
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page).render(&mut out)?;
    emit(&String::from_utf8_lossy(&out), None)
}
