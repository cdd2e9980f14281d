//! `sysdelta flush`: send what waits on this machine for a store: the
//! runs in its run log and, for a team store, the writes in
//! `<anchor>.deferred` that an experiment left when its server stopped
//! answering (any command that opens the store sends them; this one says
//! what it sent). Runs are known by (experiment, block, seq), so nothing
//! is stored twice.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use crate::store::{waiting_here, Store};

/// `sysdelta flush`.
pub fn run(store_path: &Path) -> Result<ExitCode> {
    let (runs_before, writes_before) = waiting_here(store_path);
    let store = Store::open(store_path, false)?;
    let (runs_after, writes_after) = waiting_here(store_path);
    let count = |m: &std::collections::BTreeMap<i64, usize>| m.values().sum::<usize>();
    let (before, after) = (count(&runs_before), count(&runs_after));
    let shown = store.shown();
    if before + writes_before == 0 {
        println!("nothing waited on this machine for {shown}");
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "sent to {shown}: {} run(s) and {} other write(s)",
        before.saturating_sub(after),
        writes_before.saturating_sub(writes_after)
    );
    if after + writes_after > 0 {
        crate::sys::stderr::say!(
            "sysdelta: {after} run(s) and {writes_after} other write(s) still wait on this machine (a running sysdelta holds the store, or they were set aside: see above)"
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
