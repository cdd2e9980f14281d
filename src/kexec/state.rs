//! The session's state on disk: what survives each kexec.
//!
//! A directory only root can use (`sys::private_dir`: made 0700, refused
//! when a symlink or another user's, files opened with O_NOFOLLOW) holds
//! `session.json` (the plan, the store, the starting kernel and the whole
//! boot schedule, written once by `start`) and `journal` (one JSON line per
//! step: armed, up, done, failed, returning, finished), each line fsynced
//! with its directory before the machine is allowed to kexec. Where the
//! session is (its position) is read from the journal, never kept apart.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use crate::overrides::Overrides;
use crate::runner::boots::protocol::AssignedSlot;
use crate::sys::private_dir::PrivateDir;

const SESSION: &str = "session.json";
const JOURNAL: &str = "journal";
const LOCK: &str = "lock";

/// A kernel the session boots: its image, the initrd the machine has for
/// it, and what its image says it is.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Kernel {
    pub image: PathBuf,
    pub initrd: Option<PathBuf>,
    /// `uname -r` (the image header's first word).
    pub release: String,
    /// The image header's whole version string (names the build).
    pub banner: String,
    /// SHA-256 (hex) of the image and of the initrd when `start` checked
    /// them: every load re-hashes what it opened and refuses a change.
    #[serde(default)]
    pub sha256: String,
    #[serde(default)]
    pub initrd_sha256: Option<String>,
}

/// One boot of the schedule.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PlannedBoot {
    pub config: String,
    pub block: u32,
    pub position: u32,
    pub kernel: Kernel,
    /// The whole command line passed to it (checked byte for byte).
    pub cmdline: String,
    pub slots: Vec<AssignedSlot>,
}

/// What `start` decided, read by every later boot.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Session {
    pub store: PathBuf,
    pub experiment: i64,
    pub plan_source: String,
    pub plan_text: String,
    pub overrides: Overrides,
    pub cwd: Option<String>,
    /// `start`'s environment (less a login's own sockets and terminal):
    /// the hook runs under systemd's, but the plan's commands were checked
    /// against this PATH, so every step runs with it ([`apply_env`]).
    #[serde(default)]
    pub env: Vec<(String, String)>,
    /// The kernel the machine started with, and its command line (without
    /// sysdelta's words): where the session ends.
    pub start: Kernel,
    pub start_cmdline: String,
    /// Where the hook (a systemd unit) is installed.
    pub hook_dir: PathBuf,
    /// `panic=N` of every kexec'd kernel: seconds before a panicked kernel
    /// reboots into the machine's default (starting) kernel.
    pub panic_s: u32,
    /// Kernel error messages that do not fail the audit (regexes the user
    /// gave: lines this machine prints at every boot).
    #[serde(default)]
    pub audit_ignore: Vec<String>,
    pub boots: Vec<PlannedBoot>,
}

/// One journal line.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Boot `n`'s kernel is about to be loaded and executed, from the boot
    /// whose `/proc/sys/kernel/random/boot_id` is `from`.
    Armed {
        n: usize,
        #[serde(default)]
        from: String,
    },
    /// Boot `n` came up as planned: its row in the store is `boot`.
    Up {
        n: usize,
        boot: i64,
    },
    Done {
        n: usize,
    },
    Failed {
        n: usize,
        reason: String,
    },
    /// Every boot is resolved; the kexec back to the starting kernel.
    Returning,
    /// The hook is removed and the experiment finished.
    Finished,
}

/// Where each boot of the schedule stands, read from the journal.
#[derive(Clone, Debug, PartialEq)]
pub enum Standing {
    Todo,
    /// Armed from the boot named (its boot_id).
    Armed(String),
    Up(i64),
    Done,
    Failed,
}

/// An opened state directory.
pub struct State {
    dir: PrivateDir,
}

impl State {
    /// Make the state directory (new sessions only: one that holds a
    /// session is refused).
    pub fn create(path: &Path) -> Result<State> {
        let dir = PrivateDir::make(path).map_err(crate::error::bad)?;
        if dir.read_trusted(SESSION).is_some() {
            return Err(crate::error::bad(format!(
                "{} already holds a kexec session: `sysdelta kexec stop --state {0}` ends it",
                path.display()
            )));
        }
        Ok(State { dir })
    }

    /// Open the state directory of a session `start` made.
    pub fn open(path: &Path) -> Result<State> {
        match PrivateDir::existing(path).map_err(crate::error::bad)? {
            Some(dir) => Ok(State { dir }),
            None => Err(crate::error::bad(format!(
                "{}: no kexec session state there",
                path.display()
            ))),
        }
    }

    /// The state directory of a session, None when there is none (it
    /// ended, or was stopped).
    pub fn find(path: &Path) -> Result<Option<State>> {
        Ok(PrivateDir::existing(path)
            .map_err(crate::error::bad)?
            .map(|dir| State { dir }))
    }

    /// Take the session's lock, held for a whole step (or a stop): one
    /// step at a time, whoever starts it (the hook, `kexec resume`). A
    /// second is refused at once (exit 2) and changes nothing: contention
    /// is never a failed boot.
    pub fn lock(&self) -> Result<Flock<std::fs::File>> {
        let f = self.dir.open_private(LOCK)?;
        match Flock::lock(f, FlockArg::LockExclusiveNonblock) {
            Ok(l) => Ok(l),
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => Err(crate::error::bad(format!(
                "{}: another step of this kexec session is running (the hook's, or `kexec resume`); nothing done",
                self.path().display()
            ))),
            Err((_, e)) => Err(anyhow!("locking {}: {e}", self.path().display())),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write_session(&self, s: &Session) -> Result<()> {
        self.dir
            .write_atomically(SESSION, &serde_json::to_vec_pretty(s)?)
            .context("writing session.json")?;
        self.sync_dir()
    }

    pub fn session(&self) -> Result<Session> {
        let bytes = self.dir.read_trusted(SESSION).ok_or_else(|| {
            crate::error::bad(format!(
                "{}: no session.json of root's (absent, a symlink, or writable by others)",
                self.path().display()
            ))
        })?;
        serde_json::from_slice(&bytes).map_err(|e| anyhow!("session.json: {e}"))
    }

    /// Append one step, on disk (file and directory fsynced) on return.
    pub fn append(&self, step: &Step) -> Result<()> {
        let mut f = self.dir.open_private(JOURNAL)?;
        use std::io::Seek;
        f.seek(std::io::SeekFrom::End(0))?;
        let mut line = serde_json::to_vec(step)?;
        line.push(b'\n');
        f.write_all(&line)?;
        f.sync_all()?;
        self.sync_dir()
    }

    /// Every step so far. A torn last line (the machine died while
    /// writing it) is ignored: it was never fsynced, so never acted on.
    pub fn steps(&self) -> Result<Vec<Step>> {
        let bytes = self.dir.read_trusted(JOURNAL).unwrap_or_default();
        Ok(String::from_utf8_lossy(&bytes)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect())
    }

    /// A file of the session's own (root's, not a symlink), if there.
    pub fn read_file(&self, name: &str) -> Option<Vec<u8>> {
        self.dir.read_trusted(name)
    }

    /// Replace a file of the session's own, atomically.
    pub fn write_file(&self, name: &str, bytes: &[u8]) -> Result<()> {
        self.dir.write_atomically(name, bytes)?;
        Ok(())
    }

    fn sync_dir(&self) -> Result<()> {
        std::fs::File::open(self.path())?.sync_all()?;
        Ok(())
    }

    /// Remove the session's files and the directory (after `Finished`).
    pub fn remove(self) -> Result<()> {
        let p: PathBuf = self.path().to_path_buf();
        std::fs::remove_dir_all(&p).with_context(|| format!("removing {}", p.display()))
    }
}

/// Variables of a login or a terminal, meaningless at a later boot.
const NOT_KEPT: &[&str] = &[
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "SSH_CONNECTION",
    "SSH_CLIENT",
    "SSH_TTY",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
    "DBUS_SESSION_BUS_ADDRESS",
    "XDG_RUNTIME_DIR",
    "XDG_SESSION_ID",
    "TERM",
    "COLORTERM",
    "PWD",
    "OLDPWD",
    "SHLVL",
    "_",
];

/// The environment `start` records for every step (see [`Session::env`]).
pub fn session_env() -> Vec<(String, String)> {
    std::env::vars()
        .filter(|(k, _)| !NOT_KEPT.contains(&k.as_str()))
        .map(|(k, v)| match k.as_str() {
            "PATH" => (k, super::guard::existing_path(&v)),
            _ => (k, v),
        })
        .collect()
}

/// Run this step with the environment `start` had: its variables set
/// (systemd's own, such as INVOCATION_ID, stay). Called first, before any
/// thread exists.
pub fn apply_env(env: &[(String, String)]) {
    for (k, v) in env {
        if !k.is_empty() && !k.contains(['=', '\0']) && !v.contains('\0') {
            std::env::set_var(k, v);
        }
    }
}

/// Each boot's standing after `steps`.
pub fn standings(boots: usize, steps: &[Step]) -> Vec<Standing> {
    let mut s = vec![Standing::Todo; boots];
    for step in steps {
        match step {
            Step::Armed { n, from } if *n < boots => s[*n] = Standing::Armed(from.clone()),
            Step::Up { n, boot } if *n < boots => s[*n] = Standing::Up(*boot),
            Step::Done { n } if *n < boots => s[*n] = Standing::Done,
            Step::Failed { n, .. } if *n < boots => s[*n] = Standing::Failed,
            _ => {}
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_position_is_read_from_the_journal() {
        let steps = vec![
            Step::Armed {
                n: 0,
                from: "a".into(),
            },
            Step::Up { n: 0, boot: 7 },
            Step::Done { n: 0 },
            Step::Armed {
                n: 1,
                from: "b".into(),
            },
            Step::Failed {
                n: 1,
                reason: "x".into(),
            },
            Step::Armed {
                n: 2,
                from: "c".into(),
            },
            Step::Up { n: 2, boot: 9 },
            Step::Armed {
                n: 3,
                from: "d".into(),
            },
        ];
        assert_eq!(
            standings(4, &steps),
            vec![
                Standing::Done,
                Standing::Failed,
                Standing::Up(9),
                Standing::Armed("d".into())
            ]
        );
    }

    #[test]
    fn one_step_at_a_time() {
        let d = tempfile::tempdir().unwrap();
        let st = State::create(&d.path().join("s")).unwrap();
        let held = st.lock().unwrap();
        let again = State::open(st.path()).unwrap();
        let e = again.lock().unwrap_err();
        assert!(e.to_string().contains("another step"), "{e}");
        assert_eq!(crate::error::exit_code(&e), 2);
        drop(held);
        assert!(again.lock().is_ok());
    }

    #[test]
    fn a_journal_survives_a_torn_last_line() {
        let d = tempfile::tempdir().unwrap();
        let st = State::create(&d.path().join("s")).unwrap();
        let armed = Step::Armed {
            n: 0,
            from: "x".into(),
        };
        st.append(&armed).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(st.path().join(JOURNAL))
            .unwrap()
            .write_all(b"{\"up\":{\"n\":0,")
            .unwrap();
        assert_eq!(st.steps().unwrap(), vec![armed]);
    }
}
