//! The monitor overhead line: the probe (a fixed CPU loop) in the baseline
//! (with its monitors) against the same in the plan's control config, the
//! baseline with monitors off, scheduled in the same randomized blocks
//! (`monitor::control`). It is an ordinary comparison, made by the same
//! analysis, with the control as the reference: "+0.4% [-0.2, +1.0]" is
//! what the monitors took from a CPU-bound process.

use super::{MonitorOverhead, Options, OverheadLine};
use crate::store::ExperimentData;

/// The overhead of `data`'s plan, or None when it has no control config
/// (no monitors on the baseline, `monitor_control = false`, an older
/// experiment) or the comparison cannot be made.
pub fn compute(data: &ExperimentData, opts: &Options) -> Option<MonitorOverhead> {
    let base = &data.info.baseline;
    let control = crate::monitor::control_config(base);
    if !data.info.configs.contains(&control) {
        return None;
    }
    // Only the two configs and the probe's own metric (telemetry does not
    // exist in the control's runs; config kinds' metrics are no cost).
    // Only those runs are copied, not the whole experiment: a report's
    // memory is bounded by what it shows.
    let probe = crate::monitor::control::PROBE_WORKLOAD;
    let mut info = data.info.clone();
    info.configs = vec![control.clone(), base.clone()];
    info.baseline = control.clone();
    let d = ExperimentData {
        info,
        runs: (data.runs.iter())
            .filter(|r| (r.config == *base || r.config == control) && r.workload == probe)
            .cloned()
            .collect(),
        metrics: (data.metrics.iter())
            .filter(|m| m.workload == probe && m.spec.name == crate::monitor::control::PROBE_METRIC)
            .cloned()
            .collect(),
        events: data.events.clone(),
        series: Vec::new(),
        profiles: Vec::new(),
        boots: data.boots.clone(),
    };
    let a = super::analyze(&d, opts).ok()?;
    let lines = a
        .metrics
        .into_iter()
        .filter_map(|m| {
            let comparison = m.comparisons.into_iter().next()?;
            let control_median = m.cells.first()?.summary.as_ref()?.median;
            let shift_pct = comparison.hl_shift.as_ref().and_then(|h| {
                (control_median != 0.0).then(|| {
                    let pct = |v: f64| 100.0 * v / control_median.abs();
                    [pct(h.shift), pct(h.lo), pct(h.hi)]
                })
            });
            Some(OverheadLine {
                workload: m.workload,
                spec: m.spec,
                runs_with: m.cells.get(1).map_or(0, |c| c.values.len()),
                runs_without: m.cells.first().map_or(0, |c| c.values.len()),
                shift_pct,
                comparison,
            })
        })
        .collect();
    let profile_rate = data
        .events
        .iter()
        .filter(|e| e.kind == "profile")
        .map(|e| e.message.clone())
        .collect();
    Some(MonitorOverhead {
        control,
        lines,
        profile_rate,
    })
}

/// `data` as the reports show it: without the probe's runs, metrics and
/// series and without the control config, which only the overhead line
/// (from [`compute`] on the whole data) reports.
pub fn reportable(data: &ExperimentData) -> ExperimentData {
    into_reportable(data.clone())
}

/// [`reportable`], taking `d` over: a report that owns its loaded data
/// filters it in place instead of holding two copies of every run.
pub fn into_reportable(mut d: ExperimentData) -> ExperimentData {
    let probe = crate::monitor::control::PROBE_WORKLOAD;
    let control = crate::monitor::control_config(&d.info.baseline);
    let dropped: std::collections::HashSet<i64> = d
        .runs
        .iter()
        .filter(|r| r.workload == probe || r.config == control)
        .map(|r| r.id)
        .collect();
    if dropped.is_empty() && !d.info.workloads.iter().any(|w| w == probe) {
        return d;
    }
    d.runs.retain(|r| !dropped.contains(&r.id));
    d.series.retain(|(run, _)| !dropped.contains(run));
    d.metrics.retain(|m| m.workload != probe);
    d.info.workloads.retain(|w| w != probe);
    d.info.configs.retain(|c| *c != control);
    d
}
