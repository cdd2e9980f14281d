//! Expedited RCU grace periods while a config is entered or left.
//!
//! Switching tracers, enabling or disabling block tracing, swapoff and
//! removing a cgroup each wait for RCU grace periods (unregistering a
//! tracepoint waits for two of them). A normal grace period takes tens of
//! milliseconds on an idle machine, so these waits, not the work, made
//! entering and leaving the tracing configs cost 15 to 75 ms.
//! `/sys/kernel/rcu_expedited` makes the kernel end grace periods at once
//! (by IPIs to every CPU) instead. Measured here: blk tracer to nop 30 ms ->
//! 3 ms, disabling a device's block trace 57-81 ms -> 11-30 ms (each
//! including a 2 ms shell spawn).
//!
//! The switch is on only inside `enter` and `leave` of the kinds that wait
//! on grace periods (ftrace, blktrace), never while a workload runs, so the
//! IPIs cannot disturb a measurement. The previous value is journaled
//! before it is changed, like any other setting, so `sysdelta restore` puts
//! it back after a crash.

use std::path::Path;

use anyhow::Result;

use super::journal::{self, EntryId, JournalHandle, UndoAction};

const RCU_EXPEDITED: &str = "/sys/kernel/rcu_expedited";

/// Undoes the journal entry when dropped: after `f` returns, and also when
/// it panics, so the switch never outlives the enter or leave it sped up.
struct Restore<'a> {
    journal: &'a JournalHandle,
    ids: Vec<EntryId>,
}

impl Restore<'_> {
    fn finish(mut self) -> Result<()> {
        let ids = std::mem::take(&mut self.ids);
        let mut j = self.journal.lock().unwrap_or_else(|e| e.into_inner());
        j.undo_entries(&ids).map(|_| ())
    }
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        if !self.ids.is_empty() {
            let mut j = self.journal.lock().unwrap_or_else(|e| e.into_inner());
            let _ = j.undo_entries(&self.ids);
        }
    }
}

/// Run `f` with RCU grace periods expedited, then put the previous setting
/// back. When the switch is missing, not writable (not root) or already on,
/// or the journal cannot record it, `f` simply runs: expediting is an
/// optimisation, never a requirement. `f` runs without the journal lock
/// held (the kinds lock it themselves).
pub fn expedited<T>(journal: &JournalHandle, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let path = Path::new(RCU_EXPEDITED);
    let old = match std::fs::read_to_string(path) {
        Ok(v) if v.trim() == "0" => v,
        _ => return f(),
    };
    let recorded = journal.lock().unwrap().record_all(
        "rcu",
        vec![UndoAction::WriteFile {
            path: path.to_path_buf(),
            contents: old,
        }],
    );
    let Ok(ids) = recorded else {
        return f();
    };
    let restore = Restore { journal, ids };
    // A failed write (no permission) leaves the value as it was; the journal
    // entry then restores what is already there.
    let _ = journal::write_value(path, "1");
    let out = f();
    let restored = restore.finish();
    match (out, restored) {
        (Ok(v), Ok(())) => Ok(v),
        (Ok(_), Err(e)) => Err(e.context("restoring /sys/kernel/rcu_expedited")),
        (Err(e), Ok(())) => Err(e),
        (Err(e), Err(r)) => Err(anyhow::anyhow!(
            "{e:#}; and restoring /sys/kernel/rcu_expedited failed: {r:#}"
        )),
    }
}
