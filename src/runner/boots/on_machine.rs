//! A kexec session's boot (`crate::kexec`): its share of the runs, measured
//! on the machine itself with the code every other run uses
//! (`runner::slot::measure`, as `guest.rs` does in a VM) and stored with
//! the boot as each ends. A run already in the store (a step killed and
//! resumed) is not measured again, so none is lost and none duplicated.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use anyhow::{anyhow, Context, Result};

use super::protocol::AssignedSlot;
use crate::overrides::Overrides;
use crate::runner::schedule::Slot;
use crate::runner::{now_unix, settle_after_enter, slot};
use crate::store::runlog::RunRow;
use crate::store::{RunRecord, Store};

/// What a boot on the machine runs: the experiment's plan, the config it
/// enters and its slots.
pub struct MachineBoot<'a> {
    pub store_path: &'a Path,
    pub experiment: i64,
    pub plan_source: &'a str,
    pub plan_text: &'a str,
    pub overrides: &'a Overrides,
    pub cwd: Option<&'a str>,
    pub config: &'a str,
    pub slots: &'a [AssignedSlot],
}

/// Measure and store the runs of `b` (boot row `boot`) not yet stored;
/// the number of runs stored now. The caller holds the machine-wide lock
/// (`runner::machine::MachineLock`) and the session's.
pub fn runs(b: &MachineBoot, store: &Store, boot: i64) -> Result<u32> {
    if let Some(d) = b.cwd {
        std::env::set_current_dir(d).with_context(|| format!("the session's directory {d}"))?;
    }
    let plan = crate::plan::parse(b.plan_source, b.plan_text, b.overrides)
        .map_err(|e| anyhow!("the session's plan: {e}"))?;
    let config = plan
        .config_index(b.config)
        .ok_or_else(|| anyhow!("the plan has no config '{}'", b.config))?;
    let done = store.done_slots(b.experiment)?;
    let todo: Vec<_> = b
        .slots
        .iter()
        .filter(|x| !done.contains(&(x.block, x.seq)))
        .collect();
    if todo.is_empty() {
        return Ok(0);
    }
    // What a step killed in this boot (or a kernel that went down in the
    // middle of a config) left journaled is put back first, as `sysdelta
    // restore` would: a pending change would refuse every later boot.
    let mut j = crate::config::journal::Journal::open(&crate::runner::journal_path(b.store_path))?;
    for line in j.restore_all()? {
        store.add_event(b.experiment, "restore", &format!("restored: {line}"))?;
    }
    drop(j);
    // The kernel is already booted: its checks are the VM path's guest's.
    let mut p = crate::runner::prepare_guest(plan, b.store_path)?;
    p.arm()?;
    crate::runner::declare_metrics(store, b.experiment, &p)?;
    for (def, w) in p.workloads.iter_mut() {
        w.prepare(&p.scratch)
            .with_context(|| format!("preparing workload '{}'", def.name))?;
    }
    let entered = p.configs[config].enter();
    // What the config's setup put on PATH (and what `prepare` found
    // before it) is looked up afresh.
    crate::process::forget_found();
    if entered.is_ok() {
        settle_after_enter(&p.configs[config].mods.env);
    }
    let cancel = AtomicBool::new(false);
    let mut declared: HashSet<(usize, String)> = HashSet::new();
    let mut stored = 0;
    let result = (|| -> Result<()> {
        for x in todo {
            let slot = Slot {
                block: x.block,
                seq: x.seq,
                config,
                workload: x.workload,
                warmup: x.warmup,
            };
            let started_at = now_unix();
            let measured = match &entered {
                Ok(()) => slot::measure(&mut p, &slot, &cancel),
                Err(e) => slot::Measured::failed(format!("config '{}': {e:#}", b.config)),
            };
            let wname = p.workloads[x.workload].0.name.clone();
            let extras = slot::extras(&p, &slot, &measured, &mut declared);
            if !extras.new_specs.is_empty() {
                store.declare_metrics(b.experiment, &wname, &extras.new_specs)?;
            }
            let mut row = RunRow::of(&RunRecord {
                experiment_id: b.experiment,
                block: x.block,
                seq: x.seq,
                config: b.config,
                workload: &wname,
                warmup: x.warmup,
                started_at,
                result: slot::result_of(&measured),
                series: &extras.series,
                profile: &extras.profile,
            })?;
            row.boot = Some(boot);
            store.record_row(row)?;
            stored += 1;
        }
        Ok(())
    })();
    let left = p.configs[config].leave();
    for (_, w) in p.workloads.iter_mut() {
        w.cleanup();
    }
    result?;
    left.map_err(|e| anyhow!("leaving config '{}': {e:#}", b.config))?;
    Ok(stored)
}
