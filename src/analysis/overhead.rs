//! The monitor overhead line: the baseline (with its monitors) against the
//! plan's control config, the same config with monitors off, scheduled in
//! the same randomized blocks (`plan::telemetry::add_control`). It is an
//! ordinary comparison, made by the same analysis, with the control as
//! the reference: "+0.4% [-0.2, +1.0]" is what the monitors added to each
//! of the workloads' own metrics.

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
    // Only the two configs and the workloads' own metrics: telemetry does
    // not exist in the control's runs.
    let mut d = data.clone();
    d.info.configs = vec![control.clone(), base.clone()];
    d.info.baseline = control.clone();
    d.runs.retain(|r| r.config == *base || r.config == control);
    d.metrics
        .retain(|m| !crate::monitor::is_telemetry_metric(&m.spec.name));
    d.series.clear();
    d.profiles.clear();
    let a = super::analyze(&d, opts).ok()?;
    let lines = a
        .metrics
        .into_iter()
        .filter_map(|m| {
            let comparison = m.comparisons.into_iter().next()?;
            Some(OverheadLine {
                workload: m.workload,
                spec: m.spec,
                runs_with: m.cells.get(1).map_or(0, |c| c.values.len()),
                runs_without: m.cells.first().map_or(0, |c| c.values.len()),
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
