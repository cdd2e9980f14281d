//! One slot of the schedule, measured: the workload's `prepare`, the
//! entered config's before-run hook, the monitors around the workload, its
//! after-run hook, the workload's `conclude`; then what
//! the store needs of it (new metric specs, series, profile). Shared by
//! the host's loop (`runner::execute`) and the guest's (`runner::boots`),
//! so that a run in a VM is measured exactly as a run on the host.

use std::sync::atomic::AtomicBool;

use crate::metric::MetricSpec;
use crate::monitor::MonitorData;
use crate::store::{RunResult, SeriesRecord};
use crate::workload::{MetricSamples, RunContext, RunOutcome};

use super::schedule::Slot;
use super::Prepared;

/// What one run produced, before it is stored.
pub struct Measured {
    pub outcome: RunOutcome,
    /// The status the workload's process exited with
    /// ([`crate::workload::Workload::exit_status`]), kept with an ok run.
    pub exit_code: Option<i32>,
    pub monitor_data: Vec<MonitorData>,
    /// Lines to record as events: monitors that failed to start or stop.
    pub monitor_errors: Vec<String>,
    /// What the workload could not measure, one line each, as
    /// "WORKLOAD under CONFIG: NOTE".
    pub notes: Vec<String>,
}

impl Measured {
    /// A run that failed before the workload ran (its config did not enter).
    pub fn failed(reason: String) -> Measured {
        Measured {
            outcome: RunOutcome::Failed {
                reason,
                stderr_tail: String::new(),
                exit_code: None,
            },
            exit_code: None,
            monitor_data: Vec::new(),
            monitor_errors: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// True for a run cut short by a stop request: not a result, not stored
    /// (`--resume` runs the slot again).
    pub fn interrupted(&self, cancel: &AtomicBool) -> bool {
        match &self.outcome {
            RunOutcome::Failed { reason, .. } => {
                reason == "interrupted" || cancel.load(std::sync::atomic::Ordering::SeqCst)
            }
            RunOutcome::Ok(_) => false,
        }
    }
}

/// Run `slot` in its config, which the caller entered.
pub fn measure(p: &mut Prepared, slot: &Slot, cancel: &AtomicBool) -> Measured {
    let plan = &p.plan;
    let cfg_name = plan.configs[slot.config].name.clone();
    let (wdef, own) = &mut p.workloads[slot.workload];
    // A config with its own command runs it in place of the workload's.
    let workload = match p.by_config.get_mut(&(slot.config, slot.workload)) {
        Some(w) => w,
        None => own,
    };
    let cfg = &mut p.configs[slot.config];
    let mods = cfg.mods.clone();
    let ctx = RunContext {
        env: &mods.env,
        cwd: wdef
            .workdir
            .as_deref()
            .or(plan.configs[slot.config].workdir.as_deref()),
        timeout: wdef.timeout,
        cancel,
        cpus: mods.cpus.as_deref(),
        cgroup_procs: mods.cgroup_procs.as_deref(),
        scratch: &p.scratch,
    };
    // Before the config's own hook, so that what it resets or starts
    // (tracers, counters) does not see the prepare command.
    if let Some(hook) = &wdef.prepare {
        if let Err(failed) = super::hooks::run("prepare", hook, &ctx, cancel) {
            return Measured {
                outcome: failed,
                ..Measured::failed(String::new())
            };
        }
    }
    if let Err(e) = cfg.before_run() {
        return Measured::failed(format!("config '{cfg_name}' before run: {e:#}"));
    }
    let mut monitor_errors = Vec::new();
    let mut monitor_data = Vec::new();
    // The control config runs with no monitor at all (plan::telemetry).
    let plan_monitors = if plan.configs[slot.config].monitors_off {
        0
    } else {
        p.monitors.len()
    };
    for m in p.monitors[..plan_monitors]
        .iter_mut()
        .chain(p.config_monitors[slot.config].iter_mut())
    {
        if let Err(e) = m.start() {
            monitor_errors.push(format!("monitor '{}': {e:#}", m.name()));
        }
    }
    let out = workload.run(&ctx);
    let exit_code = workload.exit_status();
    let notes = workload
        .notes()
        .into_iter()
        .map(|note| format!("{} under {cfg_name}: {note}", wdef.name))
        .collect();
    for m in p.monitors[..plan_monitors]
        .iter_mut()
        .chain(p.config_monitors[slot.config].iter_mut())
    {
        match m.stop() {
            Ok(d) => monitor_data.push(d),
            Err(e) => monitor_errors.push(format!("monitor '{}': {e:#}", m.name())),
        }
    }
    let outcome = match (out, cfg.after_run()) {
        (RunOutcome::Ok(mut s), Ok(extra)) => {
            s.extend(extra);
            for d in &monitor_data {
                s.extend(d.summaries.iter().map(|(spec, v)| MetricSamples {
                    metric: spec.name.clone(),
                    values: vec![*v],
                }));
            }
            RunOutcome::Ok(s)
        }
        (RunOutcome::Ok(_), Err(e)) => RunOutcome::Failed {
            reason: format!("config '{cfg_name}' after run: {e:#}"),
            stderr_tail: String::new(),
            exit_code: None,
        },
        (failed, _) => failed,
    };
    // After the run whatever its outcome, as hyperfine does; its failure
    // fails a run that had succeeded.
    let outcome = match &wdef.conclude {
        Some(hook) if !cancel.load(std::sync::atomic::Ordering::SeqCst) => {
            match (super::hooks::run("conclude", hook, &ctx, cancel), outcome) {
                (Err(failed), RunOutcome::Ok(_)) => failed,
                (_, outcome) => outcome,
            }
        }
        _ => outcome,
    };
    Measured {
        outcome,
        exit_code,
        monitor_data,
        monitor_errors,
        notes,
    }
}

/// What the store keeps of a measured run besides its samples.
pub struct Extras {
    /// Monitor summary metrics this workload had not reported before.
    pub new_specs: Vec<MetricSpec>,
    pub series: Vec<SeriesRecord>,
    pub profile: Vec<(String, bool, u64)>,
}

/// The extras of `m`, a run of `slot`; `declared` holds the (workload,
/// metric) pairs already declared and learns the new ones.
pub fn extras(
    p: &Prepared,
    slot: &Slot,
    m: &Measured,
    declared: &mut std::collections::HashSet<(usize, String)>,
) -> Extras {
    let workload = &p.workloads[slot.workload].1;
    // Monitor summaries become metrics of the workload: declare new ones.
    let new_specs: Vec<MetricSpec> = m
        .monitor_data
        .iter()
        .flat_map(|d| d.summaries.iter().map(|(spec, _)| spec.clone()))
        .filter(|spec| declared.insert((slot.workload, spec.name.clone())))
        .collect();
    let mut series: Vec<SeriesRecord> = m
        .monitor_data
        .iter()
        .flat_map(|d| d.series.iter())
        .map(|x| SeriesRecord {
            name: x.name.clone(),
            unit: x.unit.clone(),
            t: x.t_offsets_s.clone(),
            v: x.values.clone(),
        })
        .collect();
    if let RunOutcome::Ok(samples) = &m.outcome {
        for (metric, interval) in workload.series() {
            if let Some(ms) = samples.iter().find(|s| s.metric == metric) {
                let unit = workload
                    .metrics()
                    .into_iter()
                    .find(|s| s.name == metric)
                    .map(|s| s.unit)
                    .unwrap_or_default();
                series.push(SeriesRecord {
                    name: metric,
                    unit,
                    t: (1..=ms.values.len()).map(|i| i as f64 * interval).collect(),
                    v: ms.values.clone(),
                });
            }
        }
    }
    let profile = m
        .monitor_data
        .iter()
        .filter_map(|d| d.profile.as_ref())
        .flat_map(|p| p.symbols.iter().cloned())
        .collect();
    Extras {
        new_specs,
        series,
        profile,
    }
}

/// A run's outcome as the store records it: an ok run with the status its
/// process exited with, where it has one; a failed run with its own.
pub fn result_of(m: &Measured) -> RunResult<'_> {
    match &m.outcome {
        RunOutcome::Ok(s) => match m.exit_code {
            Some(exit_code) => RunResult::Exited {
                samples: s,
                exit_code,
            },
            None => RunResult::Ok(s),
        },
        RunOutcome::Failed {
            reason,
            stderr_tail,
            exit_code,
        } => RunResult::Failed {
            reason,
            stderr_tail,
            exit_code: *exit_code,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::runlog::RunRow;
    use crate::store::RunRecord;

    /// The row a run becomes, on the host's run log and in the guest's
    /// message alike.
    fn row_of(m: &Measured) -> RunRow {
        RunRow::of(&RunRecord {
            experiment_id: 1,
            block: 0,
            seq: 0,
            config: "a",
            workload: "w",
            warmup: false,
            started_at: 0.0,
            result: result_of(m),
            series: &[],
            profile: &[],
        })
        .unwrap()
    }

    #[test]
    fn an_ok_run_keeps_its_exit_status_and_a_failed_run_its_own() {
        let samples = vec![MetricSamples {
            metric: "wall".into(),
            values: vec![0.5],
        }];
        let mut m = Measured::failed(String::new());
        m.outcome = RunOutcome::Ok(samples);
        m.exit_code = Some(3);
        let r = row_of(&m);
        assert_eq!((r.status.as_str(), r.exit_code), ("ok", Some(3)));
        m.exit_code = None;
        assert_eq!(row_of(&m).exit_code, None, "a built-in has none");
        // A conclude hook that failed the run: its status, not the command's.
        m.outcome = RunOutcome::Failed {
            reason: "conclude failed".into(),
            stderr_tail: String::new(),
            exit_code: Some(7),
        };
        m.exit_code = Some(0);
        let r = row_of(&m);
        assert_eq!((r.status.as_str(), r.exit_code), ("failed", Some(7)));
    }
}
