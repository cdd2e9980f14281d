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
//!
//! The directory is root's alone (`sys::private_dir`): mode 0700, its files
//! 0600, never opened through a symlink, and one that another user owns or
//! others could open is replaced. A user who cannot open the lock cannot
//! hold it, and the holder line and the register are read only from there
//! (a run directory that cannot be made so is refused in one line).

use std::fs::File;
use std::hash::{Hash, Hasher};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use nix::fcntl::{Flock, FlockArg};

use crate::config::journal::Journal;
use crate::error::bad;
use crate::store::{peek, Store};
use crate::sys::private_dir::PrivateDir;

/// The directory of the lock and the register.
pub fn run_dir() -> PathBuf {
    std::env::var_os("SYSDELTA_RUN_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/run/sysdelta"))
}

/// The run directory, made or checked and fixed up; refused (bad input,
/// one line) when it cannot be made safe.
fn private_run_dir() -> Result<PrivateDir> {
    PrivateDir::make(&run_dir()).map_err(|e| bad(format!("run directory: {e}")))
}

/// The register's directory if the run directory is there and safe to
/// read (None: absent, or not this user's to read); refused as above.
fn register_dir(create: bool) -> Result<Option<PrivateDir>> {
    let Some(top) =
        PrivateDir::existing(&run_dir()).map_err(|e| bad(format!("run directory: {e}")))?
    else {
        return Ok(None);
    };
    let stores = top.path().join("stores");
    let made = match create {
        true => PrivateDir::make(&stores),
        false => match PrivateDir::existing(&stores) {
            Ok(d) => return Ok(d),
            Err(e) => Err(e),
        },
    };
    made.map(Some)
        .map_err(|e| bad(format!("run directory: {e}")))
}

/// The exclusive machine-wide lock, held until dropped.
pub struct MachineLock {
    _lock: Flock<File>,
    /// The run directory, checked: the holder line is written there.
    dir: PrivateDir,
    /// The store of the holder's run (None: a command that stores nothing).
    store: Option<PathBuf>,
}

impl MachineLock {
    /// Take the lock for a run (or a restore) on `store`, or refuse with one
    /// line naming the process that holds it.
    pub fn acquire(store: Option<&Path>, what: &str) -> Result<MachineLock> {
        let dir = private_run_dir()?;
        let path = dir.path().join("lock");
        let mut tries = 0;
        let lock = loop {
            tries += 1;
            let file = dir
                .open_private("lock")
                .with_context(|| format!("cannot open the machine-wide lock {}", path.display()))?;
            let lock = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(l) => l,
                Err((_, nix::errno::Errno::EWOULDBLOCK)) => {
                    let who = dir.read_trusted("holder").unwrap_or_default();
                    let who = String::from_utf8_lossy(&who);
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
            // Another run may have replaced the file between our open and
            // our flock (it found it wrong): the lock is the one the name
            // gives.
            if dir.names("lock", &lock) {
                break lock;
            }
            if tries >= 10 {
                return Err(anyhow::anyhow!(
                    "cannot take the machine-wide lock {}: it keeps being replaced",
                    path.display()
                ));
            }
        };
        // Holding the lock, this process is the holder line's only writer:
        // what a killed holder left half-written goes.
        dir.sweep();
        let me = MachineLock {
            _lock: lock,
            dir,
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
        let _ = self.dir.write_atomically("holder", line.as_bytes());
    }
}

impl Drop for MachineLock {
    fn drop(&mut self) {
        // The flock goes with the file; the holder line with it.
        let _ = std::fs::remove_file(self.dir.path().join("holder"));
    }
}

/// Record `store` in the register (best effort: a user who cannot write
/// the run directory changes nothing a root run could trip over).
pub fn register(store: &Path) {
    let Ok(Some(dir)) = private_run_dir().and_then(|_| register_dir(true)) else {
        return;
    };
    let abs = Store::beside(store, "");
    let _ = dir.write_atomically(&register_name(&abs), abs.as_os_str().as_encoded_bytes());
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
    if let Some(dir) = register_dir(false)? {
        dir.sweep();
        for e in std::fs::read_dir(dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = e.file_name().to_string_lossy().into_owned();
            // Entries only: a temporary file is swept once its writer is
            // gone; an entry that is not this user's or root's (or a
            // symlink) is not read.
            if crate::sys::private_dir::temp_pid(&name).is_some() {
                continue;
            }
            let Some(text) = dir.read_trusted(&name) else {
                continue;
            };
            let p = PathBuf::from(std::ffi::OsString::from_vec(text));
            if p == own {
                continue;
            }
            if !p.exists() {
                let _ = std::fs::remove_file(e.path());
                continue;
            }
            // A store that is not ours (an entry pointing at a planted
            // one) is neither read nor locked: nothing it says is obeyed.
            if Store::check_trusted(&p).is_err() {
                continue;
            }
            stores.push((Some(e.path()), p));
        }
    }
    for (entry, s) in &stores {
        let left = left_in(s, entry.is_none(), resuming, &|_| {});
        if let Left::Journal = left {
            return Err(bad(format!(
                "{} holds system changes left by an interrupted run on store {}; run `sysdelta restore --store {}` first",
                super::journal_path(s).display(),
                crate::store::pg::named(s),
                s.display()
            )));
        }
        if let Left::Entered(e) = &left {
            let peek::Entered {
                id, name, config, ..
            } = &**e;
            let msg = format!(
                "experiment {id} ('{name}') in store {} was stopped inside config '{config}' and its teardown has not run; finish it with `sysdelta run --resume {id} --store {}`",
                crate::store::pg::named(s),
                s.display()
            );
            if !force {
                return Err(bad(format!("{msg}, or pass --force to run anyway")));
            }
            crate::sys::stderr::say!("sysdelta: warning: {msg} (--force: running anyway)");
        } else if let (Left::Nothing, Some(e)) = (&left, entry) {
            // Nothing left there: the entry has said all it had to say.
            let _ = std::fs::remove_file(e);
        }
    }
    Ok(())
}

/// What [`left_in`] found in one store.
enum Left {
    /// A live sysdelta holds the store: in use, not left behind.
    InUse,
    /// Nothing a new run must wait for.
    Nothing,
    /// Its journal holds system changes (another store's: `restore`).
    Journal,
    /// An experiment stopped inside a config whose teardown has not run.
    Entered(Box<peek::Entered>),
}

/// What a dead run left in store `s` (`own`: the run's own store, whose
/// journal its own run puts back, and whose experiment `resuming` is the
/// one being resumed), read as one state: holding the store's lock from
/// before the first read to after the last. A run starting on `s` in the
/// meantime waits for the lock (`store::lock::lock_waiting`) instead of
/// being read half-way, its config entered but not yet its lock taken, or
/// its teardown run but not yet recorded. The lock is shared where the
/// store is a file (read without a write: two runs starting at once do not
/// take each other's look for a live run), exclusive for a team store's
/// anchor (what a dead run here left, its log and deferred writes, is
/// taken in under it and then read in the same state). A team store is
/// connected before the lock is taken, not under it: the connect may wait
/// its timeout (5 s) on a slow or unreachable server, where a run starting
/// on that store waits a second for the lock (`store::lock::lock_waiting`)
/// before it says the store is in use. `between` runs once the lock is
/// held, before the reads (the tests' look at that moment).
fn left_in(s: &Path, own: bool, resuming: Option<i64>, between: &dyn Fn(&Path)) -> Left {
    // Some(connection) for a team store; a server out of reach holds
    // nothing this check can read (the journal is still looked at). One a
    // live run holds is in use, and not connected to.
    let team = match crate::store::pg::pointer_url(s) {
        None => None,
        Some(_) if !matches!(Store::try_lock(s), Ok(Some(_))) => return Left::InUse,
        Some(_) => Some(Store::connect_team(s).ok()),
    };
    let lock = match team {
        Some(_) => Store::try_lock(s),
        None => Store::try_lock_shared(s),
    };
    // A store that a live sysdelta holds is in use, not left behind (for
    // the own store, taking its lock then says so); a store that is not
    // there holds nothing.
    let Ok(Some(lock)) = lock else {
        return Left::InUse;
    };
    between(s);
    if !own && journal_changed(s) {
        return Left::Journal;
    }
    let entered = match &team {
        Some(Some(store)) => peek::entered_configs_of_team(store, &lock),
        Some(None) => Vec::new(),
        None => peek::entered_configs_locked(s, &lock),
    };
    let entered = entered
        .into_iter()
        .filter(|e| !(own && Some(e.id) == resuming))
        .find(|e| {
            super::config_has_teardown(&e.plan_source, &e.plan_text, &e.overrides, &e.config)
        });
    drop(lock);
    match entered {
        Some(e) => Left::Entered(Box::new(e)),
        None => Left::Nothing,
    }
}

/// Remove `store` from the register when it holds nothing a later run must
/// be stopped for: called at the end of a run, so that a machine where
/// every run ended well keeps no entry.
pub fn unregister_if_clean(store: &Path) {
    if !journal_changed(store) && entered_with_teardown(store).is_empty() {
        let abs = Store::beside(store, "");
        let _ = std::fs::remove_file(run_dir().join("stores").join(register_name(&abs)));
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A store whose experiment 1 a dead run left inside config `a`, which
    /// has a teardown.
    fn store_left_inside_a_config(dir: &Path) -> PathBuf {
        let path = dir.join("s.db");
        let store = Store::open(&path, true).unwrap();
        let text = "[[config]]\nname = \"a\"\nsetup = 'true'\nteardown = 'true'\n\
                    [[workload]]\nname = \"w\"\ncommand = \"true\"\n";
        let plan = crate::plan::parse("p.toml", text, &Default::default()).unwrap();
        let id = store
            .create_experiment(&crate::store::NewExperiment {
                name: "p",
                label: None,
                plan_source: "p.toml",
                plan_text: text,
                overrides: &plan.overrides,
                host: "h",
                fingerprint: &Default::default(),
                seed: 1,
                order: plan.order,
                runs: 1,
                warmup: 0,
                baseline: "a",
                configs: vec!["a".into()],
                workloads: vec!["w".into()],
            })
            .unwrap();
        store.set_entered_config(id, Some("a")).unwrap();
        path
    }

    #[test]
    fn a_store_is_read_under_its_lock_so_a_run_starting_on_it_waits_for_the_check() {
        let dir = tempfile::tempdir().unwrap();
        let s = store_left_inside_a_config(dir.path());
        let looked = Cell::new(false);
        let left = left_in(&s, false, None, &|s| {
            looked.set(true);
            // A run starting on the store now (its exclusive lock) cannot
            // take it until the check has read; another check can look.
            assert!(Store::try_lock(s).unwrap().is_none());
            assert!(Store::try_lock_shared(s).unwrap().is_some());
        });
        assert!(looked.get());
        assert!(matches!(left, Left::Entered(e) if e.id == 1 && e.config == "a"));
        // And the check lets go of it.
        assert!(Store::try_lock(&s).unwrap().is_some());
    }

    #[test]
    fn a_store_a_live_run_holds_is_in_use_not_left_behind() {
        let dir = tempfile::tempdir().unwrap();
        let s = store_left_inside_a_config(dir.path());
        let _live = Store::try_lock(&s).unwrap().unwrap();
        let left = left_in(&s, false, None, &|_| panic!("read a store in use"));
        assert!(matches!(left, Left::InUse));
    }

    /// The connect to a team store's server is made before the anchor's
    /// lock is taken: a run starting on that store meanwhile does not
    /// find it held (and say "in use") while the server is slow.
    #[test]
    fn a_team_store_is_connected_before_its_lock_is_taken() {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        use std::sync::atomic::{AtomicBool, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let anchor = dir.path().join("pg.store");
        // A "server" that takes the connection, looks at the lock, and
        // goes away: the connect then fails, as to a server out of reach.
        let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        server.set_nonblocking(true).unwrap();
        let port = server.local_addr().unwrap().port();
        let url = format!("postgresql://u@127.0.0.1:{port}/d?sslmode=disable");
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&anchor)
            .unwrap()
            .write_all(crate::store::pg::anchor_text(&url).as_bytes())
            .unwrap();
        let done = std::sync::Arc::new(AtomicBool::new(false));
        let (a, d) = (anchor.clone(), done.clone());
        let server = std::thread::spawn(move || loop {
            match server.accept() {
                Ok((conn, _)) => {
                    let free = Store::try_lock(&a).unwrap().is_some();
                    drop(conn);
                    return Some(free);
                }
                Err(_) if d.load(Ordering::SeqCst) => return None,
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        });
        let looked = Cell::new(false);
        let left = left_in(&anchor, false, None, &|_| looked.set(true));
        done.store(true, Ordering::SeqCst);
        let free = server.join().unwrap();
        assert_eq!(free, Some(true), "the lock was free during the connect");
        // The lock was taken after: the check still ran, and found nothing
        // it could read on a server out of reach.
        assert!(looked.get());
        assert!(matches!(left, Left::Nothing));
        assert!(Store::try_lock(&anchor).unwrap().is_some());
    }

    #[test]
    fn the_experiment_being_resumed_is_not_in_its_own_way() {
        let dir = tempfile::tempdir().unwrap();
        let s = store_left_inside_a_config(dir.path());
        assert!(matches!(left_in(&s, true, Some(1), &|_| {}), Left::Nothing));
        assert!(matches!(left_in(&s, true, None, &|_| {}), Left::Entered(_)));
    }
}
