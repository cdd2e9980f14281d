//! A look into another store without opening it as a [`Store`]: no
//! migration, no fold of its run log, not a byte written in or next to it
//! (see [`read_only_connection`]), even when the run that looks is root
//! and the store another user's. Used by the machine-wide checks before a
//! run (`runner::machine`), which must learn whether some other store was
//! left with a config entered, whatever state it is in.
//!
//! [`Store`]: super::Store

use std::fs::File;
use std::path::Path;

use nix::fcntl::Flock;

use super::{read_only_connection, Store};

/// An experiment a run left inside a config, with its plan (to tell
/// whether that config has a teardown still to run).
pub struct Entered {
    pub id: i64,
    pub name: String,
    pub config: String,
    pub plan_source: String,
    pub plan_text: String,
    pub overrides: crate::overrides::Overrides,
}

/// The experiments of the store at `path` that a run left inside a config
/// (`entered_config` set, whatever the experiment's status: a teardown
/// cut short leaves it set on a finished experiment too). Empty when the
/// file cannot be read as a store: what cannot be read cannot be resumed
/// either.
pub fn entered_configs(path: &Path) -> Vec<Entered> {
    entered_as(path)
}

/// [`entered_configs`] of a store file read by a process holding its
/// lock (from [`super::Store::try_lock_shared`]): no run changes the
/// experiments while they are read.
pub fn entered_configs_locked(path: &Path, _lock: &Flock<File>) -> Vec<Entered> {
    entered_as(path)
}

/// [`entered_configs`] of a team store connected already
/// ([`Store::connect_team`]) by a process that has since taken its
/// anchor's lock (`lock`): what a dead run here left is taken in, then
/// read, in one state no other process changes. Empty when that fails.
pub fn entered_configs_of_team(store: &Store, lock: &Flock<File>) -> Vec<Entered> {
    if store.take_in_left(lock).is_err() {
        return Vec::new();
    }
    entered_in(&store.db, Some(&crate::monitor::fingerprint::hostname()))
}

fn entered_as(path: &Path) -> Vec<Entered> {
    if super::pg::pointer_url(path).is_some() {
        return entered_on_server(path);
    }
    let Ok(conn) = read_only_connection(path) else {
        return Vec::new();
    };
    entered_in(&super::db::Db::Sqlite(conn), None)
}

/// [`entered_configs`] of a PostgreSQL store (see [`super::pg`]): the
/// experiments of this machine's host name that a run left inside a
/// config (other hosts' are theirs to resume). Opening it folds what a
/// dead run here left in the local run log, which is this machine's own,
/// and applies the state writes it left deferred (its entered config may
/// be only there).
fn entered_on_server(anchor: &Path) -> Vec<Entered> {
    let Ok(store) = Store::open(anchor, false) else {
        return Vec::new();
    };
    entered_in(&store.db, Some(&crate::monitor::fingerprint::hostname()))
}

/// The experiments of `db` left inside a config, of host `host` if given;
/// none when they cannot be read.
fn entered_in(db: &super::db::Db, host: Option<&str>) -> Vec<Entered> {
    db.query(
        "SELECT id, name, entered_config, plan_source, plan_text, overrides FROM experiments
         WHERE entered_config IS NOT NULL AND (CAST(?1 AS TEXT) IS NULL OR host = ?1) ORDER BY id",
        &super::db::vals![host],
        |r| {
            let overrides: String = r.get(5)?;
            Ok(Entered {
                id: r.get(0)?,
                name: r.get(1)?,
                config: r.get(2)?,
                plan_source: r.get(3)?,
                plan_text: r.get(4)?,
                overrides: serde_json::from_str(&overrides).unwrap_or_default(),
            })
        },
    )
    .unwrap_or_default()
}
