//! What the shell costs: for command workloads run under a shell, one
//! `SHELL -c ''` is timed after each of their runs, in the run's config
//! (its environment, working directory and CPUs), and the samples are
//! stored as one `shell_startup` event per config and shell at the end of
//! the experiment (see `analysis::shell_cost`, which reports them against
//! the workloads' wall times).
//!
//! Interleaved rather than a calibration at the start: the shell's cost
//! follows whatever the machine does during the experiment (frequency,
//! page cache, other load) as the runs do, and differs between configs
//! that change the environment (an LD_PRELOAD, a CPU list), so each config
//! gets its own samples taken among its own runs. Timed after the run, so
//! the run itself always follows the same steps; the samples are never
//! subtracted from the runs, which stay as measured.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::Result;

use super::schedule::Slot;
use super::Prepared;
use crate::analysis::shell_cost::{Samples, EVENT_KIND};
use crate::plan::WorkloadKind;
use crate::process::{run_shell, Launch, ShellSpec};
use crate::store::Store;

/// Samples per (config, shell), with the workloads they were taken for.
#[derive(Default)]
pub(super) struct ShellCost {
    by: BTreeMap<(String, String), (BTreeSet<String>, Vec<f64>)>,
}

impl ShellCost {
    /// After a run of `slot` (in its config, still entered): time its
    /// workload's shell once, if it has one. Warm-up runs are followed by
    /// the same step, but their sample is not kept.
    pub(super) fn after_run(&mut self, p: &Prepared, slot: &Slot, cancel: &AtomicBool) {
        let (wdef, _) = &p.workloads[slot.workload];
        let WorkloadKind::Command { launch, .. } = &wdef.kind else {
            return;
        };
        let Some(shell) = launch.shell() else { return };
        let cfg = &p.plan.configs[slot.config];
        let mods = &p.configs[slot.config].mods;
        let mut env = vec![crate::workload::scratch_var(&p.scratch)];
        env.extend(mods.env.iter().cloned());
        let spec = ShellSpec {
            command: "",
            launch: Launch::Shell(shell),
            env: &env,
            cwd: wdef.workdir.as_deref().or(cfg.workdir.as_deref()),
            cpus: mods.cpus.as_deref(),
            timeout: Some(Duration::from_secs(10)),
            ..Default::default()
        };
        let Ok(r) = run_shell(&spec, cancel) else {
            return;
        };
        if !r.success() || slot.warmup {
            return;
        }
        let (workloads, samples) = self
            .by
            .entry((cfg.name.clone(), shell.to_string()))
            .or_default();
        workloads.insert(wdef.name.clone());
        samples.push(r.wall.as_secs_f64());
    }

    /// Store what was measured, one event per config and shell.
    pub(super) fn store(&self, store: &Store, exp: i64) -> Result<()> {
        for ((config, shell), (workloads, samples)) in &self.by {
            let message = Samples {
                config: config.clone(),
                shell: shell.clone(),
                workloads: workloads.iter().cloned().collect(),
                samples_s: samples.clone(),
            };
            store.add_event(exp, EVENT_KIND, &serde_json::to_string(&message)?)?;
        }
        Ok(())
    }
}
