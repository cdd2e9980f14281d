//! The machine is one, whatever the store: a machine-wide lock for runs that
//! change system state, and a register of the stores that ran here, so that
//! what one store's dead run left (journaled changes, a shell config whose
//! teardown never ran) stops a run on any other store.
//!
//! Everything lives in one directory, `/run/sysdelta` (a tmpfs: a reboot
//! clears it, as it clears what the runs changed), or `$SYSDELTA_RUN_DIR`:
//! - `lock`: flock'ed exclusively by a run whose configs use built-in kinds
//!   (sysctl, ftrace, cgroups, swap, ...) and by `restore` and the transport
//!   sweep, for as long as they may change the system. The kernel drops it
//!   when its holder dies, however it dies.
//! - `holder`: who holds the lock (pid, store, experiment), for the line
//!   that refuses a second run.
//! - `stores/<hash>`: the absolute path of each store a run used here,
//!   written before the run changes anything. A later run on another store
//!   reads each one: a store whose journal still holds changes refuses the
//!   run until `sysdelta restore`; a store with an experiment killed inside
//!   a config refuses it until that experiment is resumed (or `--force`).
//!   Entries that say nothing any more are removed as they are found.
//!
//! Runs whose configs are plain shells (setup/teardown scripts, exported
//! variables) take no lock and may run side by side; they are still
//! refused while another store's dead run left the system changed.

use std::fs::{self, File, OpenOptions};
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use nix::fcntl::{Flock, FlockArg};

use crate::config::journal::Journal;
use crate::error::bad;
use crate::store::{peek, Store};

/// The directory of the lock and the register.
pub fn run_dir() -> PathBuf {
    std::env::var_os("SYSDELTA_RUN_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/run/sysdelta"))
}

/// The exclusive machine-wide lock, held until dropped.
pub struct MachineLock {
    _lock: Flock<File>,
    holder: PathBuf,
    /// The store of the holder's run (None: a command that stores nothing).
    store: Option<PathBuf>,
}

impl MachineLock {
    /// Take the lock for a run (or a restore) on `store`, or refuse with one
    /// line naming the process that holds it.
    pub fn acquire(store: Option<&Path>, what: &str) -> Result<MachineLock> {
        let dir = run_dir();
        create_dir(&dir)?;
        let path = dir.join("lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o644)
            .open(&path)
            .with_context(|| format!("cannot open the machine-wide lock {}", path.display()))?;
        let holder = dir.join("holder");
        let lock = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(l) => l,
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => {
                let who = fs::read_to_string(&holder).unwrap_or_default();
                let who = who.trim();
                return Err(bad(format!(
                    "another sysdelta is changing this machine's state ({}); wait for it to end, or stop it first",
                    if who.is_empty() { "holder unknown" } else { who }
                )));
            }
            Err((_, e)) => {
                return Err(anyhow::anyhow!(
                    "cannot take the machine-wide lock {}: {e}",
                    path.display()
                ))
            }
        };
        let me = MachineLock {
            _lock: lock,
            holder,
            store: store.map(|s| Store::beside(s, "")),
        };
        me.describe(what);
        Ok(me)
    }

    /// Say who holds the lock, e.g. once the experiment has an id.
    pub fn describe(&self, what: &str) {
        let line = match &self.store {
            Some(s) => format!(
                "pid {}, store {}, {what}\n",
                std::process::id(),
                crate::store::pg::named(s)
            ),
            None => format!("pid {}, {what}\n", std::process::id()),
        };
        let _ = write_atomically(&self.holder, line.as_bytes());
    }
}

impl Drop for MachineLock {
    fn drop(&mut self) {
        // The flock goes with the file; the holder line with it.
        let _ = fs::remove_file(&self.holder);
    }
}

/// Record `store` in the register (best effort: a user who cannot write
/// the run directory changes nothing a root run could trip over).
pub fn register(store: &Path) {
    let dir = run_dir().join("stores");
    if create_dir(&dir).is_err() {
        return;
    }
    let abs = Store::beside(store, "");
    let _ = write_atomically(
        &dir.join(register_name(&abs)),
        abs.as_os_str().as_encoded_bytes(),
    );
}

/// What a dead run on some store left that stops a new run on `store`:
/// refused (bad input) with one line naming the store and what to do.
/// Called before the run opens (or creates) its own store: it reads only.
/// `force` lets a run start beside a config whose teardown never ran
/// (journaled changes are never overridden: `sysdelta restore` puts them
/// back in a second).
pub fn refuse_leftovers(store: &Path, resuming: Option<i64>, force: bool) -> Result<()> {
    let own = Store::beside(store, "");
    // (register entry, store): the own store first, with no entry.
    let mut stores: Vec<(Option<PathBuf>, PathBuf)> = vec![(None, own.clone())];
    if let Ok(rd) = fs::read_dir(run_dir().join("stores")) {
        for e in rd.flatten() {
            let Ok(text) = fs::read(e.path()) else {
                continue;
            };
            let p = PathBuf::from(std::ffi::OsString::from_vec(text));
            if p == own {
                continue;
            }
            if !p.exists() {
                let _ = fs::remove_file(e.path());
                continue;
            }
            stores.push((Some(e.path()), p));
        }
    }
    for (entry, s) in &stores {
        let is_own = entry.is_none();
        // A store that a live sysdelta holds is in use, not left behind
        // (for the own store, taking its lock then says so); a store that
        // is not there holds nothing.
        if !matches!(Store::try_lock(s), Ok(Some(_))) {
            continue;
        }
        if !is_own && journal_changed(s) {
            return Err(bad(format!(
                "{} holds system changes left by an interrupted run on store {}; run `sysdelta restore --store {}` first",
                super::journal_path(s).display(),
                crate::store::pg::named(s),
                s.display()
            )));
        }
        let entered: Vec<_> = entered_with_teardown(s)
            .into_iter()
            .filter(|e| !(is_own && Some(e.id) == resuming))
            .collect();
        if let Some(peek::Entered {
            id, name, config, ..
        }) = entered.first()
        {
            let msg = format!(
                "experiment {id} ('{name}') in store {} was stopped inside config '{config}' and its teardown has not run; finish it with `sysdelta run --resume {id} --store {}`",
                crate::store::pg::named(s),
                s.display()
            );
            if !force {
                return Err(bad(format!("{msg}, or pass --force to run anyway")));
            }
            crate::sys::stderr::say!("sysdelta: warning: {msg} (--force: running anyway)");
        } else if let Some(e) = entry {
            // Nothing left there: the entry has said all it had to say.
            let _ = fs::remove_file(e);
        }
    }
    Ok(())
}

/// Remove `store` from the register when it holds nothing a later run must
/// be stopped for: called at the end of a run, so that a machine where
/// every run ended well keeps no entry.
pub fn unregister_if_clean(store: &Path) {
    if !journal_changed(store) && entered_with_teardown(store).is_empty() {
        let abs = Store::beside(store, "");
        let _ = fs::remove_file(run_dir().join("stores").join(register_name(&abs)));
    }
}

/// The store's journal holds a change a dead run left (its scratch
/// directory is no system change: the next run on that store removes it).
fn journal_changed(store: &Path) -> bool {
    Journal::open(&super::journal_path(store)).is_ok_and(|j| j.pending_owned_by_others("scratch"))
}

/// The store's experiments left inside a config with a teardown still to
/// run: the state only that teardown (not `restore`) can put back.
fn entered_with_teardown(store: &Path) -> Vec<peek::Entered> {
    peek::entered_configs(store)
        .into_iter()
        .filter(|e| {
            super::config_has_teardown(&e.plan_source, &e.plan_text, &e.overrides, &e.config)
        })
        .collect()
}

fn register_name(store: &Path) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    store.hash(&mut h);
    format!("{:016x}", h.finish())
}

fn create_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the run directory {}", dir.display()))
}

/// Replace `path` with `bytes` (temporary file, then rename): a reader sees
/// the old or the new content, never half.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o644)
        .open(&tmp)?;
    f.write_all(bytes)?;
    drop(f);
    fs::rename(&tmp, path)
}
