//! The "run in execution order" points of a metric: each measured run's
//! value (the median of its samples, as the statistics use) against its
//! index among the workload's measured runs, per config, in the metric's
//! display unit. The HTML report plots them on the same axis as the
//! metric's other values, so they must be in that axis' unit: they are
//! converted here, with the metric's [`Scale`], and never by a renderer.

use serde::Serialize;

use super::units::Scale;
use crate::store::StoredRun;

/// One metric's runs in execution order.
#[derive(Clone, Debug, Serialize)]
pub struct ExecutionOrder {
    /// The unit of every value below: the metric's display unit.
    pub unit: String,
    /// Per config of the report (baseline first): (run index, value).
    pub points: Vec<Vec<(usize, f64)>>,
}

/// The execution-order points of `metric` of `workload`, per config of
/// `configs`, scaled by `scale` (the metric's display scale).
pub fn points(
    runs: &[StoredRun],
    configs: &[String],
    workload: &str,
    metric: &str,
    scale: &Scale,
) -> ExecutionOrder {
    let mut seq = vec![Vec::new(); configs.len()];
    let measured = runs
        .iter()
        .filter(|r| r.is_measured_ok() && r.workload == workload);
    for (i, r) in measured.enumerate() {
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
