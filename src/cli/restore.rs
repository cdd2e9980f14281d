//! `sysdelta restore`: put back what the journal next to a store holds (a
//! crashed or killed run's changes), and say which experiments are left to
//! resume. The journal is local: a team store whose server is out of reach
//! is restored all the same, and only the experiments left to resume go
//! unlisted.

use std::path::Path;

use anyhow::Result;

use crate::config::journal::Journal;
use crate::runner;
use crate::status::ExperimentStatus;
use crate::store::{lock::lock_waiting, Store};

/// `sysdelta restore`.
pub fn run(store_path: &Path) -> Result<()> {
    // Nothing is put back from, or reported of, a store that is not ours.
    Store::check_trusted(store_path)?;
    let _lock = if store_path.exists() {
        Some(lock_waiting(store_path)?)
    } else {
        None
    };
    let jpath = runner::journal_path(store_path);
    let mut j = Journal::open(&jpath)?;
    let pending = j.pending();
    // Putting back is changing: not while another run changes the
    // machine.
    let _machine = if pending.is_empty() {
        None
    } else {
        Some(runner::machine::MachineLock::acquire(
            Some(store_path),
            "restore",
        )?)
    };
    if pending.is_empty() {
        println!("nothing to restore ({} holds no changes)", jpath.display());
    } else {
        for line in j.restore_all()? {
            println!("restored: {line}");
        }
    }
    if store_path.exists() {
        let store = match Store::open(store_path, false) {
            Ok(store) => store,
            // The journal is this machine's: what it held is back, server
            // or not. Only the experiments left to resume are the store's.
            Err(e)
                if crate::store::is_unreachable(&e)
                    && crate::store::pg::pointer_url(store_path).is_some() =>
            {
                crate::sys::stderr::say!(
                    "sysdelta: {e:#}; the experiments left to resume are not listed until it answers (sysdelta list)"
                );
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        for id in store.experiment_ids()? {
            let mut i = store.info(id)?;
            if let Some(c) = &i.entered_config {
                if !runner::config_has_teardown(&i.plan_source, &i.plan_text, &i.overrides, c) {
                    // What its built-in kinds changed is put back
                    // above; with no teardown to run, it is left.
                    store.set_entered_config(id, None)?;
                    println!("experiment {id}: config '{c}' was left by this restore (it has no teardown)");
                    i.entered_config = None;
                }
            }
            if i.status == ExperimentStatus::Running || i.entered_config.is_some() {
                println!(
                    "experiment {id} was interrupted{}; finish it with: sysdelta run --resume {id}",
                    i.entered_config
                        .map(|c| format!(" inside config '{c}' (its teardown runs on resume)"))
                        .unwrap_or_default()
                );
            }
        }
    }
    Ok(())
}
