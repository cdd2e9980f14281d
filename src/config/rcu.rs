//! Expedited RCU grace periods while a config is entered or left.
//!
//! Switching tracers, enabling or disabling block tracing, swapoff and
//! removing a cgroup each wait for RCU grace periods (unregistering a
//! tracepoint waits for two of them). A normal grace period takes tens of
//! milliseconds on an idle machine, so these waits, not the work, made entering
//! and leaving those configs cost 50 to 120 ms. `/sys/kernel/rcu_expedited`
//! makes the kernel end grace periods at once (by IPIs to every CPU) instead.
//! Measured here: blk tracer to nop 30 ms -> 3 ms, disabling a device's block
//! trace 57-81 ms -> 11-30 ms (each including a 2 ms shell spawn).
//!
//! The switch is on only inside `enter` and `leave` of the kinds that wait on
//! RCU, never while a workload runs, so the IPIs cannot disturb a
//! measurement. The previous value is journaled before it is changed, like
//! any other setting, so `sysdelta restore` puts it back after a crash.

use std::path::Path;

use anyhow::Result;

use super::journal::{self, JournalHandle, UndoAction};

const RCU_EXPEDITED: &str = "/sys/kernel/rcu_expedited";

/// Run `f` with RCU grace periods expedited, then put the previous setting
/// back. When the switch is missing, not writable (not root) or already on,
/// `f` simply runs: expediting is an optimisation, never a requirement.
pub fn expedited<T>(journal: &JournalHandle, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let path = Path::new(RCU_EXPEDITED);
    let old = match std::fs::read_to_string(path) {
        Ok(v) if v.trim() == "0" => v,
        _ => return f(),
    };
    let ids = match journal.lock().unwrap().record_all(
        "rcu",
        vec![UndoAction::WriteFile {
            path: path.to_path_buf(),
            contents: old,
        }],
    ) {
        Ok(ids) => ids,
        Err(_) => return f(),
    };
    // A failed write (no permission) leaves the value as it was; the journal
    // entry then restores what is already there.
    let _ = journal::write_value(path, "1");
    let out = f();
    let restored = journal.lock().unwrap().undo_entries(&ids);
    match (out, restored) {
        (Ok(v), Ok(_)) => Ok(v),
        (Err(e), _) => Err(e),
        (Ok(_), Err(e)) => Err(e.context("restoring /sys/kernel/rcu_expedited")),
    }
}
