//! What the shell costs: for command workloads run under a shell, one
//! `SHELL -c ''` is timed after each of their runs, in the run's config
//! (its environment, working directory and CPUs), and the samples are
//! stored as `shell_startup` events per config and shell, at the end of a
//! block once [`FLUSH_SAMPLES`] have gathered and at the end of the
//! experiment, so a crash loses few of them (see `analysis::shell_cost`,
//! which pools the events and reports them against the workloads' wall
//! times).
//!
//! Interleaved rather than a calibration at the start: the shell's cost
//! follows whatever the machine does during the experiment (frequency,
//! page cache, other load) as the runs do, and differs between configs
//! that change the environment (an LD_PRELOAD, a CPU list), so each config
//! gets its own samples taken among its own runs. Timed after the run, so
//! the run itself always follows the same steps; the samples are never
//! subtracted from the runs, which stay as measured.
//!
//! After every run of a config until it has [`DENSE`] samples, then after
//! every [`EVERY`]th: a shell timed after each run doubles the processes a
//! short command's run costs (`ab 'true' 'true'` took 1.84x hyperfine's
//! wall), and a median of the shell's start-up needs dozens of samples,
//! not thousands. Thinned alike in every config, so each config's runs
//! follow the same steps.

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

/// Samples kept in memory before they are stored at a block's end: a
/// crash loses at most these and the current block's.
pub(super) const FLUSH_SAMPLES: usize = 64;

/// Runs of a config after each of which the shell is timed, at first.
pub(super) const DENSE: u64 = 64;
/// Then the shell is timed after every this many runs of the config.
pub(super) const EVERY: u64 = 8;

/// Samples per (config, shell), with the workloads they were taken for.
#[derive(Default)]
pub(super) struct ShellCost {
    by: BTreeMap<(String, String), (BTreeSet<String>, Vec<f64>)>,
    /// Runs so far per config index (warm-ups too): which are followed
    /// by a sample.
    runs: BTreeMap<usize, u64>,
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
        let n = self.runs.entry(slot.config).or_default();
        *n += 1;
        if *n > DENSE && *n % EVERY != 0 {
            return;
        }
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

    /// Store what was measured since the last store, one event per config
    /// and shell, and forget it; nothing when fewer than `min` samples
    /// wait.
    pub(super) fn store(&mut self, store: &Store, exp: i64, min: usize) -> Result<()> {
        let waiting: usize = self.by.values().map(|(_, s)| s.len()).sum();
        if waiting == 0 || waiting < min {
            return Ok(());
        }
        for ((config, shell), (workloads, samples)) in std::mem::take(&mut self.by) {
            let message = Samples {
                config,
                shell,
                workloads: workloads.into_iter().collect(),
                samples_s: samples,
            };
            store.add_event(exp, EVENT_KIND, &serde_json::to_string(&message)?)?;
        }
        Ok(())
    }
}
