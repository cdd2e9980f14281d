//! Before a fleet run writes anything to the store, every host is checked,
//! all at once (a thread each): that ssh reaches it, that a sysdelta of
//! this version is there or can be copied there, that its workdir can be
//! made, and that it logs in as root when the plan changes the system.
//! Every host that fails is one line (`host NAME (DEST): what`), and the
//! command ends with exit code 2 having stored nothing.

use std::process::Output;

use anyhow::Result;

use super::hosts::Host;
use super::ssh::{self, Input};
use super::team::{socket_path_len, SOCKET_PATH_MAX};
use crate::error::bad_all;

/// What this fleet run asks of every host.
pub struct Needs {
    /// Why the plan needs root there (it changes the system), if it does.
    pub root: Option<String>,
    /// The port in the forwarded socket's name (for its path's length).
    pub port: u16,
    /// What our `sysdelta --version` prints (the binary's build gives it:
    /// [`our_version`]); each host's sysdelta must say the same.
    pub version: String,
}

/// A host that passed: its workdir absolute, and the sysdelta to run.
#[derive(Clone, Debug)]
pub struct Ready {
    pub host: Host,
    pub sysdelta: String,
    /// Whether this run copied our binary there.
    pub copied: bool,
}

/// `sysdelta --version` as ours prints it, given the version the binary
/// was built as (`SYSDELTA_VERSION`, with the commit when built from a git
/// checkout: another commit's binary is another sysdelta).
pub fn our_version(built: &str) -> String {
    format!("sysdelta {built}")
}

/// Check every host in parallel; the hosts ready, in order, or one line
/// per host that is not (bad input).
pub fn check_all(hosts: &[Host], needs: &Needs) -> Result<Vec<Ready>> {
    let results: Vec<std::result::Result<Ready, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = hosts
            .iter()
            .map(|h| s.spawn(move || check_one(h, needs)))
            .collect();
        handles
            .into_iter()
            .zip(hosts)
            .map(|(t, h)| {
                t.join()
                    .unwrap_or_else(|_| Err(format!("{}: its check panicked", h.shown())))
            })
            .collect()
    });
    let problems: Vec<String> = results
        .iter()
        .filter_map(|r| r.as_ref().err().cloned())
        .collect();
    if !problems.is_empty() {
        return Err(bad_all(problems));
    }
    Ok(results.into_iter().filter_map(|r| r.ok()).collect())
}

/// One host's checks, in order; the first that fails is its line.
fn check_one(host: &Host, needs: &Needs) -> std::result::Result<Ready, String> {
    let shown = host.shown();
    let run = |remote: &[&str], input: Input| -> std::result::Result<Output, String> {
        let cmd = ssh::command(host, &[], remote).map_err(|e| format!("{shown}: {e}"))?;
        ssh::output(cmd, input).map_err(|e| format!("{shown}: cannot run ssh: {e}"))
    };
    // Reachable, with the key ssh finds, without a prompt.
    let out = run(&["true"], Input::Nothing)?;
    if !out.status.success() {
        return Err(format!(
            "{shown}: cannot reach it over ssh: {}",
            ssh::last_line(&out)
        ));
    }
    // A workdir someone else can write would let them swap the sysdelta
    // or the plan this fleet runs there (as root, perhaps).
    safe_workdir(&run, &shown, &host.workdir)?;
    let probe = run(
        &[
            "sh",
            "-c",
            PROBE,
            "sysdelta-fleet",
            host.sysdelta.as_deref().unwrap_or(""),
            &host.workdir,
        ],
        Input::Nothing,
    )?;
    if !probe.status.success() {
        return Err(format!(
            "{shown}: cannot look around there: {}",
            ssh::last_line(&probe)
        ));
    }
    let probe = Probe::parse(&String::from_utf8_lossy(&probe.stdout));
    if let (Some(why), false) = (&needs.root, probe.uid == Some(0)) {
        return Err(format!(
            "{shown}: {why}, which needs root there; ssh logs in as uid {}",
            probe
                .uid
                .map_or_else(|| "unknown".to_string(), |u| u.to_string())
        ));
    }
    let ours = needs.version.clone();
    let mut copied = false;
    let found = probe
        .found
        .iter()
        .find(|(v, _)| *v == ours)
        .map(|(_, p)| p.clone());
    let sysdelta = match found {
        Some(p) => p,
        None => {
            let local = local_arch();
            let why = if probe.arch != local {
                Err(format!("it is {}, this sysdelta is {local}", probe.arch))
            } else {
                copy_ourselves(host, &run, &needs.version)
            };
            match why {
                Ok(p) => {
                    copied = true;
                    p
                }
                Err(why) => {
                    return Err(format!(
                        "{shown}: no {ours} there and it cannot be copied ({why})"
                    ))
                }
            }
        }
    };
    // The workdir, absolute: the forwarded socket's path and the URL
    // naming it must not depend on where a session starts.
    let out = run(
        &["sh", "-c", WORKDIR, "sysdelta-fleet", &host.workdir],
        Input::Nothing,
    )?;
    let workdir = String::from_utf8_lossy(&out.stdout)
        .trim_end_matches('\n')
        .to_string();
    if !out.status.success() || !workdir.starts_with('/') {
        return Err(format!(
            "{shown}: workdir {}: cannot make it: {}",
            host.workdir,
            ssh::last_line(&out)
        ));
    }
    // Again once it exists: made meanwhile by someone else, it is theirs.
    safe_workdir(&run, &shown, &workdir)?;
    if workdir.contains(':') {
        return Err(format!(
            "{shown}: workdir {workdir} holds a ':', which ssh -R cannot forward a socket into: give another workdir"
        ));
    }
    let len = socket_path_len(&workdir, needs.port);
    if len > SOCKET_PATH_MAX {
        return Err(format!(
            "{shown}: workdir {workdir} is too long for the database's socket under it \
             ({len} bytes; a Unix socket's path takes {SOCKET_PATH_MAX}): give a shorter workdir"
        ));
    }
    // A copy went into the workdir as given; run it by its absolute path.
    let sysdelta = if copied {
        format!("{workdir}/sysdelta")
    } else {
        sysdelta
    };
    let mut host = host.clone();
    host.workdir = workdir;
    Ok(Ready {
        host,
        sysdelta,
        copied,
    })
}

/// Refuse a workdir that another user could write: it, its `state` and
/// `sysdelta`, and every directory above it (those sticky as /tmp is
/// aside) must belong to the login user or root and be writable by no
/// one else.
fn safe_workdir(run: &RunThere, shown: &str, workdir: &str) -> std::result::Result<(), String> {
    let out = run(
        &["sh", "-c", SAFE, "sysdelta-fleet", workdir],
        Input::Nothing,
    )?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{shown}: workdir {workdir} is not safe to run from: {}",
        ssh::last_line(&out)
    ))
}

/// A remote command run on the host being checked: its output, or the
/// host's line saying why ssh could not run.
type RunThere<'a> = dyn Fn(&[&str], Input) -> std::result::Result<Output, String> + 'a;

/// Copy our own binary to `workdir/sysdelta` through ssh's stdin (to a
/// temporary name, made executable, tried, then renamed); its path there,
/// or why it cannot be (the remote's last line of stderr).
fn copy_ourselves(host: &Host, run: &RunThere, ours: &str) -> std::result::Result<String, String> {
    let exe = std::path::Path::new("/proc/self/exe");
    let out = run(
        &["sh", "-c", COPY, "sysdelta-fleet", &host.workdir],
        Input::File(exe),
    )?;
    let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() {
        return Err(ssh::last_line(&out));
    }
    if said != ours {
        return Err(format!("the copy says '{said}'"));
    }
    Ok(format!("{}/sysdelta", host.workdir.trim_end_matches('/')))
}

/// What the probe found: `arch`, `uid`, and each sysdelta with its
/// `--version` line.
struct Probe {
    arch: String,
    uid: Option<u32>,
    found: Vec<(String, String)>,
}

impl Probe {
    fn parse(text: &str) -> Probe {
        let mut p = Probe {
            arch: String::new(),
            uid: None,
            found: Vec::new(),
        };
        for line in text.lines() {
            let mut f = line.splitn(3, '\t');
            match (f.next(), f.next(), f.next()) {
                (Some("arch"), Some(a), None) => p.arch = a.to_string(),
                (Some("uid"), Some(u), None) => p.uid = u.parse().ok(),
                (Some("found"), Some(v), Some(path)) => {
                    p.found.push((v.to_string(), path.to_string()))
                }
                _ => {}
            }
        }
        p
    }
}

fn local_arch() -> String {
    nix::sys::utsname::uname()
        .map(|u| u.machine().to_string_lossy().into_owned())
        .unwrap_or_else(|_| std::env::consts::ARCH.to_string())
}

/// `$1` the sysdelta the host's entry names (or empty), `$2` the workdir:
/// the machine, the user, and the version of each sysdelta there (the
/// given one, the one in PATH, the workdir's). Changes nothing.
const PROBE: &str = r#"printf 'arch\t%s\n' "$(uname -m)"
printf 'uid\t%s\n' "$(id -u)"
for s in "$1" "$(command -v sysdelta 2>/dev/null)" "$2/sysdelta"; do
    if [ -n "$s" ] && [ -f "$s" ] && [ -x "$s" ]; then
        printf 'found\t%s\t%s\n' "$("$s" --version </dev/null 2>/dev/null | head -n 1)" "$s"
    fi
done
exit 0"#;

/// `$1` the workdir: exit 3, saying why, when it (or its `state`,
/// `sysdelta`) or a directory above it belongs to another user or can be
/// written by others (a sticky directory above it aside). Changes nothing.
const SAFE: &str = r#"u=$(id -u)
case $1 in /*) w=$1 ;; *) w=$(pwd -P)/$1 ;; esac
bad() { printf '%s\n' "$1" >&2; exit 3; }
mine() {
    o=$(stat -L -c %u -- "$1") || return 0
    m=$(stat -L -c %a -- "$1") || return 0
    [ "$o" = "$u" ] || [ "$o" = 0 ] || bad "$1 belongs to uid $o"
    if [ $((0$m & 18)) != 0 ]; then
        [ "$2" = sticky ] && [ $((0$m & 512)) != 0 ] && return 0
        bad "$1 can be written by others (mode $m)"
    fi
}
for f in "$w/sysdelta" "$w/state" "$w"; do
    [ -e "$f" ] && mine "$f" own
done
p=$(dirname -- "$w")
while :; do
    [ -e "$p" ] && mine "$p" sticky
    [ "$p" = / ] && break
    p=$(dirname -- "$p")
done
exit 0"#;

/// `$1` the workdir: stdin becomes `$1/sysdelta`, tried before it is
/// renamed into place; prints its version.
const COPY: &str = r#"set -e
mkdir -p -- "$1"
t="$1/.sysdelta.copy.$$"
trap 'rm -f -- "$t"' EXIT
cat > "$t"
chmod 755 "$t"
"$t" --version </dev/null >/dev/null
mv -f -- "$t" "$1/sysdelta"
trap - EXIT
"$1/sysdelta" --version </dev/null"#;

/// `$1` the workdir: made (with its state dir), and printed absolute.
const WORKDIR: &str = r#"set -e
mkdir -p -- "$1/state"
chmod 700 -- "$1/state"
cd -- "$1"
pwd -P"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_parse() {
        let p = Probe::parse(
            "arch\tx86_64\nuid\t0\nfound\tsysdelta 0.0.9\t/usr/bin/sysdelta\nfound\t\t/w/sys\tdelta\n",
        );
        assert_eq!(p.arch, "x86_64");
        assert_eq!(p.uid, Some(0));
        assert_eq!(
            p.found,
            [
                (
                    "sysdelta 0.0.9".to_string(),
                    "/usr/bin/sysdelta".to_string()
                ),
                (String::new(), "/w/sys\tdelta".to_string())
            ]
        );
    }
}
