//! Starting one host's part: what it needs is put there first (the
//! forwarded socket's directory, the anchor holding its URL, the plan),
//! then one ssh connection runs its sysdelta and carries, for as long as
//! that runs, the host's way to the database (`ssh -R`, see `team`).
//!
//! The store's password is the first line of that connection's stdin:
//! the remote script reads it into a shell variable and gives it to the
//! host's sysdelta as `PGPASSWORD`, which that sysdelta takes out of the
//! environment it gives its children (`store::conninfo`). It is written
//! to no file on the host, and is gone when the run ends.
//!
//! The connection's stdin stays open while the host runs. When it ends
//! (this sysdelta was stopped or died, the connection was lost), the host's
//! sysdelta gets SIGTERM and stops as after a Ctrl-C: the run in flight is
//! killed, the config left, the experiment marked interrupted. So a host
//! never runs on for a fleet run that is gone, holding its store's lock
//! against the resume.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};

use anyhow::Result;

use super::checks::Ready;
use super::ssh::{self, Input};
use super::team::{HostPaths, Team};

/// What a host's sysdelta is to do.
pub enum What<'a> {
    /// A new experiment: the fleet's plan with its flags, as that host's
    /// part of fleet `fleet` with its own seed.
    Fresh {
        fleet: i64,
        seed: u64,
        flags: &'a [String],
    },
    /// Finish experiment `experiment` (`run --resume`), with the consent
    /// the user gave `fleet resume` (a team store is never the host's own:
    /// without it the host's sysdelta refuses the stored plan).
    Resume { experiment: i64, consent: Consent },
}

/// How the user of `fleet resume` consented to the stored plan
/// (`cli::trust`), passed on to each host's `run --resume`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Consent {
    /// The plan was given again and is the fleet's: the host gets the copy
    /// put there (`--plan`), which its experiment's stored text must be.
    pub plan_given: bool,
    /// `--trust-stored-plan`: what the host's store holds runs, shown in
    /// the host's output.
    pub trust_stored: bool,
}

/// Put on the host what its run reads: the socket's directory (a socket
/// a dead session left there removed: sshd does not replace one unless
/// its StreamLocalBindUnlink says so), the state dir, the anchor with the
/// URL and the plan, both through stdin. Why not, as the remote said it.
pub fn put(ready: &Ready, paths: &HostPaths, plan_text: &str) -> std::result::Result<(), String> {
    let mut input = crate::store::pg::anchor_text(&paths.url).into_bytes();
    input.extend_from_slice(plan_text.as_bytes());
    let cmd = ssh::command(
        &ready.host,
        &[],
        &[
            "sh",
            "-c",
            PUT,
            "sysdelta-fleet",
            &paths.socket_dir,
            &paths.socket,
            &paths.state_dir,
            &paths.anchor,
            &paths.plan,
        ],
    )
    .map_err(|e| e.to_string())?;
    let out = ssh::output(cmd, Input::Bytes(&input)).map_err(|e| format!("cannot run ssh: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "cannot put the plan there: {}",
            ssh::last_line(&out)
        ))
    }
}

/// A host's run connection, running.
pub struct Connection {
    pub child: Child,
    /// Closed to stop the host's sysdelta cleanly.
    pub stdin: Option<ChildStdin>,
    /// The last lines the remote wrote to stderr.
    pub tail: Arc<Mutex<Vec<String>>>,
}

/// The words of the remote command: the watch script, then the host's
/// sysdelta with its state dir, environment and store.
pub fn remote_words(ready: &Ready, paths: &HostPaths, what: &What) -> Vec<String> {
    let mut w: Vec<String> = ["sh", "-c", RUN, "sysdelta-fleet", "env"]
        .map(String::from)
        .to_vec();
    w.push(format!("SYSDELTA_STATE_DIR={}", paths.state_dir));
    for (k, v) in &ready.host.env {
        w.push(format!("{k}={v}"));
    }
    w.push(ready.sysdelta.clone());
    w.extend(["--store".to_string(), paths.anchor.clone(), "run".into()]);
    match what {
        What::Fresh { fleet, seed, flags } => {
            w.push(paths.plan.clone());
            w.push("--fleet-member".into());
            w.push(format!("{fleet}:{}", ready.host.name));
            w.push("--seed".into());
            w.push(seed.to_string());
            w.extend(["--quiet".to_string(), "--no-report".into()]);
            w.extend(flags.iter().cloned());
        }
        What::Resume {
            experiment,
            consent,
        } => {
            w.push("--resume".into());
            w.push(experiment.to_string());
            if consent.plan_given {
                w.extend(["--plan".to_string(), paths.plan.clone()]);
            }
            if consent.trust_stored {
                w.push("--trust-stored-plan".into());
            }
            w.extend(["--quiet".to_string(), "--no-report".into()]);
        }
    }
    w
}

/// Start the host's run connection, the database's socket forwarded.
/// Its own process group: a Ctrl-C at the terminal reaches this
/// sysdelta, which stops the hosts through their stdin, not ssh.
pub fn spawn(ready: &Ready, team: &Team, paths: &HostPaths, what: &What) -> Result<Connection> {
    let words = remote_words(ready, paths, what);
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let extra = [
        "-o".to_string(),
        "ExitOnForwardFailure=yes".into(),
        "-o".into(),
        "StreamLocalBindUnlink=yes".into(),
        "-R".into(),
        format!("{}:{}", paths.socket, team.target),
    ];
    let mut cmd: Command = ssh::command(&ready.host, &extra, &words)?;
    use std::os::unix::process::CommandExt;
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let password = team.password()?;
    let mut child = cmd
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot run ssh: {e}"))?;
    if let Some(stdin) = child.stdin.as_mut() {
        use std::io::Write;
        // A pipe's buffer takes the line whatever ssh does; an error
        // here is a connection already gone, which supervise sees.
        let _ = stdin
            .write_all(format!("{password}\n").as_bytes())
            .and_then(|()| stdin.flush());
    }
    let tail = Arc::new(Mutex::new(Vec::new()));
    let name = ready.host.name.clone();
    if let Some(err) = child.stderr.take() {
        let (tail, name) = (tail.clone(), name.clone());
        std::thread::spawn(move || follow(err, &name, &tail, true));
    }
    if let Some(out) = child.stdout.take() {
        let tail = tail.clone();
        std::thread::spawn(move || follow(out, &name, &tail, false));
    }
    Ok(Connection {
        stdin: child.stdin.take(),
        child,
        tail,
    })
}

/// Keep the last lines of a remote stream; stderr's are also shown, after
/// the host's name.
fn follow(r: impl Read, name: &str, tail: &Mutex<Vec<String>>, show: bool) {
    for line in BufReader::new(r).lines() {
        let Ok(line) = line else { break };
        // A host's own resume line names its experiment and URL there:
        // the fleet says how to resume the fleet instead.
        if line.trim().is_empty() || line.contains("resume with: sysdelta run --resume") {
            continue;
        }
        if show {
            crate::sys::stderr::say!("[{name}] {}", crate::sys::visible::terminal_safe(&line));
        }
        let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
        t.push(line);
        let n = t.len();
        if n > 20 {
            t.drain(..n - 20);
        }
    }
}

/// `$1` the socket's dir, `$2` the socket, `$3` the state dir, `$4` the
/// anchor, `$5` the plan; stdin: the anchor's two lines, then the plan.
const PUT: &str = r#"set -e
umask 077
mkdir -p -- "$1" "$3"
chmod 700 -- "$1" "$3"
rm -f -- "$2"
IFS= read -r m
IFS= read -r u
printf '%s\n%s\n' "$m" "$u" > "$4.tmp.$$"
mv -f -- "$4.tmp.$$" "$4"
cat > "$5.tmp.$$"
mv -f -- "$5.tmp.$$" "$5""#;

/// Read the store's password, the first line of stdin (`read` takes no
/// byte past it), then run `"$@"` (the host's sysdelta) with it as
/// PGPASSWORD (empty: none, the host's own password file may serve) and
/// stdin closed, and send it SIGTERM when the connection's
/// stdin ends before it does; its exit status is the script's. (A
/// background job's stdin would be /dev/null: the watcher gets the
/// connection's through fd 3.)
const RUN: &str = r#"IFS= read -r pw || exit 1
exec 3<&0
PGPASSWORD=$pw "$@" 3<&- </dev/null &
p=$!
pw=
{ cat >/dev/null 2>&1; kill -TERM "$p" 2>/dev/null; } <&3 >/dev/null 2>&1 &
w=$!
exec 3<&-
wait "$p"
r=$?
kill "$w" 2>/dev/null
exit "$r""#;

#[cfg(test)]
mod tests {
    use super::*;

    fn ready() -> Ready {
        Ready {
            host: crate::fleet::hosts::from_list(&["h1".to_string()])
                .unwrap()
                .into_iter()
                .next()
                .unwrap(),
            sysdelta: "/usr/bin/sysdelta".into(),
            copied: false,
        }
    }

    fn paths() -> HostPaths {
        HostPaths {
            workdir: "/w".into(),
            socket_dir: "/w/pg-u".into(),
            socket: "/w/pg-u/.s.PGSQL.5432".into(),
            state_dir: "/w/state".into(),
            anchor: "/w/state/a".into(),
            plan: "/w/plan-u.toml".into(),
            url: "postgresql://x".into(),
        }
    }

    #[test]
    fn a_resumed_host_gets_the_consent_the_user_gave() {
        let words = |consent| {
            remote_words(
                &ready(),
                &paths(),
                &What::Resume {
                    experiment: 7,
                    consent,
                },
            )
        };
        let none = words(Consent::default());
        assert!(!none
            .iter()
            .any(|w| w == "--plan" || w == "--trust-stored-plan"));
        let given = words(Consent {
            plan_given: true,
            trust_stored: false,
        });
        let at = given.iter().position(|w| w == "--plan").unwrap();
        assert_eq!(given[at + 1], "/w/plan-u.toml", "the copy put there");
        assert!(!given.iter().any(|w| w == "--trust-stored-plan"));
        let trusted = words(Consent {
            plan_given: false,
            trust_stored: true,
        });
        assert!(trusted.iter().any(|w| w == "--trust-stored-plan"));
    }
}
