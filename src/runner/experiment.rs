//! Running a plan as one experiment, start to end: the library's entry
//! point for `run`, `ab` and `calibrate`.
//!
//! Order matters: everything that can refuse the run as bad input (the
//! plan's preflight, what a dead run left here or on another store, a
//! second system-changing run) does so before anything is written, so a
//! refused run leaves no store, no experiment and no journal.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;

use super::{machine, ExecOptions, Outcome};
use crate::plan::Plan;
use crate::store::{lock::lock_waiting, ExperimentStatus, Store};

/// What the caller asks of the experiment besides its plan.
pub struct Request<'a> {
    /// Finish this stored experiment instead of creating one.
    pub resume: Option<i64>,
    /// With `resume`: the entered config and environment the caller
    /// checked against the trust rule; None: read from the store as is.
    pub checked: Option<&'a super::Entered>,
    /// Run although a dead run's config teardown has not run.
    pub force: bool,
    /// The experiment's label (a new experiment only).
    pub label: Option<&'a str>,
    /// No progress output.
    pub quiet: bool,
    /// Set by a signal: stop cleanly.
    pub cancel: &'a AtomicBool,
    /// A new experiment is this host's part of a fleet run: (fleet id,
    /// the host's name in it). See `fleet`.
    pub fleet: Option<(i64, &'a str)>,
    /// A warning about the plan (`plan::reach`: no verdict possible),
    /// said once nothing can refuse a new experiment as bad input, so a
    /// refused run still says one line.
    pub warning: Option<&'a str>,
}

/// How it went.
pub enum Finished {
    /// Stopped by a signal before the first run: nothing was stored.
    NotStarted,
    /// The experiment ran (to its end, or until stopped); its runs are in
    /// the store.
    Ran(Box<Ran>),
}

/// An experiment that ran, and its store still open and locked, so the
/// caller reads the result without opening the store again (a team
/// store's connection is made once per command). The machine-wide lock
/// and the scratch directory are already gone; the store's lock goes
/// when this is dropped, after the store (fields drop in order).
pub struct Ran {
    pub outcome: Outcome,
    pub store: Store,
    _lock: nix::fcntl::Flock<std::fs::File>,
}

/// Prepare, lock, create (or reopen) and execute one experiment in the
/// store at `store_path`.
pub fn run_plan(store_path: &Path, plan: Plan, req: &Request) -> Result<Finished> {
    // Declared first so that they are released last: dropping the store
    // folds and removes the run log, and dropping the prepared plan removes
    // the scratch directory and clears its journal entry; both belong to
    // the locks' holder.
    let (machine_lock, _lock);
    // A store (or a file beside it) that is not ours is refused before
    // anything of it is read or acted on: its journal, its teardowns.
    Store::check_trusted(store_path)?;
    let mut prepared = super::prepare(plan, store_path)?;
    machine::refuse_leftovers(store_path, req.resume, req.force)?;
    // One system-changing run per machine, whatever its store.
    machine_lock = if prepared.changes_system() {
        Some(machine::MachineLock::acquire(
            Some(store_path),
            &match req.resume {
                Some(id) => format!("experiment {id}"),
                None => "a new experiment".into(),
            },
        )?)
    } else {
        None
    };
    let store = Store::open(store_path, true)?;
    // One sysdelta per store at a time: the journal next to it, the run log
    // and the run slots of an experiment belong to the process holding this
    // lock.
    _lock = lock_waiting(store_path)?;
    machine::register(store_path);
    prepared.arm()?;
    if req.cancel.load(Ordering::SeqCst) {
        return Ok(Finished::NotStarted);
    }
    let id = match req.resume {
        Some(id) => {
            let info = store.info(id)?;
            // A team store's experiment belongs to the machine that ran it:
            // its run log, journal and entered config's shells are there.
            let here = crate::monitor::fingerprint::hostname();
            if store.is_pg() && info.host != here && !req.force {
                return Err(crate::error::bad(format!(
                    "experiment {id} ran on host {}, not on this one ({here}): resume it there, where its run log and journal are, or pass --force",
                    info.host
                )));
            }
            prepared.check_resume(&info)?;
            if let Some(msg) = super::teardown_after_crash(&store, id, &mut prepared, req.checked)?
            {
                crate::sys::stderr::say!("sysdelta: {msg}");
            }
            store.set_status(id, ExperimentStatus::Running)?;
            id
        }
        None => {
            if let Some((fleet, _)) = req.fleet {
                // Before the experiment exists: a fleet that is not there
                // leaves nothing behind.
                store.fleet(&fleet.to_string())?;
            }
            if let Some(w) = req.warning {
                crate::sys::stderr::say!("sysdelta: warning: {w}");
            }
            let id = super::create(&store, &prepared, req.label)?;
            if let Some((fleet, host)) = req.fleet {
                store.set_fleet(id, fleet, host)?;
            }
            id
        }
    };
    if let Some(m) = &machine_lock {
        m.describe(&format!("experiment {id}"));
    }
    let outcome = super::execute(
        &store,
        id,
        &mut prepared,
        &ExecOptions {
            cancel: req.cancel,
            quiet: req.quiet,
        },
    )?;
    machine::unregister_if_clean(store_path);
    // The scratch directory goes, then the machine's lock, as before; the
    // store (its run log closed: execute ends with every run folded) and
    // its lock are handed on.
    drop(prepared);
    drop(machine_lock);
    Ok(Finished::Ran(Box::new(Ran {
        outcome,
        store,
        _lock,
    })))
}
