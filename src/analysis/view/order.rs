//! The "run in execution order" points of a metric: each measured run's
//! value (the median of its samples, as the statistics use) against its
//! index among the workload's measured runs, per config, in the metric's
//! display unit. The HTML report plots them on the same axis as the
//! metric's other values, so they must be in that axis' unit: they are
//! converted here, with the metric's [`Scale`], and never by a renderer.

use std::collections::HashMap;

use serde::Serialize;

use super::units::Scale;
use crate::store::{ExperimentData, StoredRun};

/// One metric's runs in execution order.
#[derive(Clone, Debug, Serialize)]
pub struct ExecutionOrder {
    /// The unit of every value below: the metric's display unit.
    pub unit: String,
    /// Per config of the report (baseline first): (run index, value).
    pub points: Vec<Vec<(usize, f64)>>,
}

/// Each workload's measured successful runs that the analysis counts, in
/// execution order: found once for all of a report's metrics (a scan of
/// every run per metric made a report of W workloads cost W^2). The runs
/// of a boot that failed its machine audit are left out here as they are
/// of the statistics (the plot would show what the table does not use).
pub fn measured_by_workload(data: &ExperimentData) -> HashMap<&str, Vec<&StoredRun>> {
    let apart = crate::analysis::boots::audit_failed_boots(data);
    let mut of: HashMap<&str, Vec<&StoredRun>> = HashMap::new();
    for r in data
        .runs
        .iter()
        .filter(|r| crate::analysis::boots::is_counted(r, &apart))
    {
        of.entry(r.workload.as_str()).or_default().push(r);
    }
    of
}

/// The execution-order points of `metric`, per config of `configs`, from
/// its workload's measured runs (`measured`, in execution order, as
/// [`measured_by_workload`] gives them), scaled by `scale` (the metric's
/// display scale).
pub fn points(
    measured: &[&StoredRun],
    configs: &[String],
    metric: &str,
    scale: &Scale,
) -> ExecutionOrder {
    let mut seq = vec![Vec::new(); configs.len()];
    for (i, r) in measured.iter().enumerate() {
        if let (Some(ci), Some(v)) = (
            configs.iter().position(|c| *c == r.config),
            r.samples
                .get(metric)
                .and_then(|v| crate::stats::summary::median(v)),
        ) {
            seq[ci].push((i, v * scale.factor));
        }
    }
    ExecutionOrder {
        unit: scale.unit.clone(),
        points: seq,
    }
}
