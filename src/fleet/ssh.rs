//! Reaching a host: always the system's `ssh`, so that what users set up
//! for it (`~/.ssh/config`, agents, jump hosts, known hosts) works as it
//! does in their shell, with options that make it fail rather than ask
//! (`BatchMode`), give up on a host that does not answer, and notice a
//! connection that died.
//!
//! A remote command is one string that the remote user's shell parses, so
//! it is built from words each quoted for a POSIX shell (`shlex`), never
//! from pasted text; values travel as arguments of a fixed `sh -c` script
//! (`$1`, `$2`, ...) or on stdin.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use anyhow::Result;

use super::hosts::Host;
use super::ssh_allow;
use crate::error::bad;

/// Options every connection gets: never a prompt, a bounded connect, and
/// a dead connection noticed within about 15 s. `BatchMode` comes before
/// the host's options, so it holds whatever they say (ssh takes an
/// option's first value); the others after, so a host may set its own.
const FIRST: &[&str] = &["-o", "BatchMode=yes"];
const DEFAULTS: &[&str] = &[
    "-o",
    "ConnectTimeout=10",
    "-o",
    "ServerAliveInterval=5",
    "-o",
    "ServerAliveCountMax=3",
];

/// `ssh` to `host` with `extra` options, running `remote` (words, quoted
/// here) there. Stdio is left to the caller.
///
/// The host's options are checked against the allowlist here too, so no
/// ssh runs with options that did not pass it, wherever the host came
/// from; a host that names its known-hosts files or key alias gets
/// [`ssh_allow::PINNED`] before its options.
pub fn command(host: &Host, extra: &[String], remote: &[&str]) -> Result<Command> {
    let allowed = ssh_allow::check(&host.ssh_options)
        .map_err(|why| bad(format!("{}: {why}", host.shown())))?;
    let mut c = Command::new("ssh");
    c.args(FIRST);
    if allowed.pinned {
        c.args(ssh_allow::PINNED);
    }
    c.args(&host.ssh_options)
        .args(DEFAULTS)
        .args(extra)
        .arg("--")
        .arg(&host.destination)
        .arg(remote_line(remote)?);
    Ok(c)
}

/// One command line for the remote shell, each word quoted.
pub fn remote_line(words: &[&str]) -> Result<String> {
    shlex::try_join(words.iter().copied())
        .map_err(|_| bad(format!("a remote command's word holds a NUL: {words:?}")))
}

/// What to give a remote command on its stdin.
pub enum Input<'a> {
    Nothing,
    Bytes(&'a [u8]),
    File(&'a std::path::Path),
}

/// Run `cmd` to its end with `input` on its stdin, its stdout and stderr
/// collected. The input is written from its own thread, so a remote that
/// stops reading early (its script failed) cannot block it.
pub fn output(mut cmd: Command, input: Input) -> std::io::Result<Output> {
    cmd.stdin(match input {
        Input::Nothing => Stdio::null(),
        _ => Stdio::piped(),
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn()?;
    let stdin = child.stdin.take();
    std::thread::scope(|s| {
        if let Some(mut w) = stdin {
            s.spawn(move || {
                // A write error is the remote gone: its exit says why.
                let _ = match input {
                    Input::Nothing => Ok(()),
                    Input::Bytes(b) => w.write_all(b),
                    Input::File(p) => std::fs::File::open(p)
                        .and_then(|mut f| std::io::copy(&mut f, &mut w).map(drop)),
                };
            });
        }
        child.wait_with_output()
    })
}

/// The last line with something in it (ssh's own error comes last), or
/// how the command ended when it said nothing.
pub fn last_line(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(String::from)
        .unwrap_or_else(|| match out.status.code() {
            Some(c) => format!("exit status {c}"),
            None => format!("{}", out.status),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_not_pasted() {
        let line = remote_line(&["sh", "-c", "echo \"$1\"", "x", "a b; rm -rf ~", "it's"]).unwrap();
        let back = shlex::split(&line).unwrap();
        assert_eq!(
            back,
            ["sh", "-c", "echo \"$1\"", "x", "a b; rm -rf ~", "it's"]
        );
    }

    #[test]
    fn batch_mode_first_host_options_before_defaults() {
        let h = Host {
            name: "a".into(),
            destination: "root@h".into(),
            ssh_options: vec!["-o".into(), "ConnectTimeout=3".into()],
            workdir: "w".into(),
            env: Default::default(),
            sysdelta: None,
            seed: None,
        };
        let c = command(&h, &[], &["true"]).unwrap();
        let args: Vec<_> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let at = |s: &str| args.iter().position(|a| a == s).unwrap();
        assert!(at("BatchMode=yes") < at("ConnectTimeout=3"));
        assert!(at("ConnectTimeout=3") < at("ConnectTimeout=10"));
        assert_eq!(&args[args.len() - 3..], ["--", "root@h", "true"]);
    }

    #[test]
    fn no_ssh_runs_with_options_the_allowlist_refuses_and_known_hosts_are_pinned() {
        let mut h = Host {
            name: "a".into(),
            destination: "root@h".into(),
            ssh_options: vec!["-voProxyCommand=x".into()],
            workdir: "w".into(),
            env: Default::default(),
            sysdelta: None,
            seed: None,
        };
        let e = command(&h, &[], &["true"]).unwrap_err().to_string();
        assert!(
            e.starts_with("host a (root@h): ssh option '-voProxyCommand=x'"),
            "{e}"
        );
        h.ssh_options = vec!["-o".into(), "UserKnownHostsFile=/k".into()];
        let c = command(&h, &[], &["true"]).unwrap();
        let args: Vec<_> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let at = |s: &str| args.iter().position(|a| a == s).unwrap();
        assert!(at("StrictHostKeyChecking=yes") < at("UserKnownHostsFile=/k"));
        assert!(at("UpdateHostKeys=no") < at("UserKnownHostsFile=/k"));
    }
}
