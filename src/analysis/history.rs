//! A metric's history across many labelled experiments, with change
//! points (`sysdelta history`): which experiments, which values, where the
//! level changed. The view a renderer (`report::history`) shows; the change
//! points are `series::changepoint::binary_segmentation`'s.

use anyhow::Result;
use serde::Serialize;

use crate::error::bad;
use crate::series::changepoint::binary_segmentation;
use crate::series::newest::Experiment;
use crate::stats::summary::median;
use crate::store::{Store, StoredMetric};
use crate::sys::visible::terminal_safe as safe;

/// The permutation test's seed: a history's change points are the same
/// every time it is asked for.
const SEED: u64 = 0x5d_e17a;

/// One experiment in a metric's history.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryPoint {
    pub id: i64,
    pub label: String,
    /// The config of this experiment the values are from.
    pub config: String,
    pub n: usize,
    pub median: f64,
    /// Per-run values in run order.
    pub values: Vec<f64>,
}

/// A change between `points[index - 1]` and `points[index]`.
#[derive(Clone, Debug, Serialize)]
pub struct ChangePoint {
    pub index: usize,
    pub p: f64,
    pub median_before: f64,
    pub median_after: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct History {
    pub workload: String,
    pub metric: String,
    pub unit: String,
    pub direction: String,
    /// The config followed (`--config`); None: each experiment's baseline.
    pub config: Option<String>,
    pub points: Vec<HistoryPoint>,
    pub change_points: Vec<ChangePoint>,
    /// Experiments with the label prefix that lack the metric.
    pub skipped: Vec<String>,
    pub alpha: f64,
    pub permutations: usize,
    /// The newest experiment judged against those before it.
    pub newest: super::newest::Newest,
}

/// The history of `metric` (`WORKLOAD/METRIC`, or `METRIC` when one
/// workload has it) under one config (`config`, or each experiment's
/// baseline) across experiments whose label starts with `prefix`, oldest
/// first. One config only: pooling a patched config with its baseline, or
/// an A/A control, would blur the very steps the history looks for.
pub fn history(
    store: &Store,
    metric: &str,
    prefix: &str,
    config: Option<&str>,
    alpha: f64,
) -> Result<History> {
    history_on(store, metric, prefix, config, alpha, None)
}

/// [`history`] over the experiments that ran on host `host` only
/// (`history --host`), when one is given: a fleet's hosts each have an
/// experiment of every label, and one host's history is one machine's. A
/// host no experiment ran on is bad input.
pub fn history_on(
    store: &Store,
    metric: &str,
    prefix: &str,
    config: Option<&str>,
    alpha: f64,
    host: Option<&str>,
) -> Result<History> {
    let exps = labelled_on(store, prefix, host)?;
    let ids: Vec<i64> = exps.iter().map(|(id, _)| *id).collect();
    // Only this metric's runs of the experiments asked for: see
    // `store::metric_runs`.
    let loaded = store.metric_runs(&ids, metric, config)?;
    let mut labels: std::collections::HashMap<i64, String> = exps.into_iter().collect();
    let mut h = History {
        workload: String::new(),
        metric: metric.to_string(),
        unit: String::new(),
        direction: String::new(),
        config: config.map(str::to_string),
        points: Vec::new(),
        change_points: Vec::new(),
        skipped: Vec::new(),
        alpha,
        permutations: 999,
        newest: super::newest::judge_newest(&[], &[], &[], alpha, true),
    };
    let mut without_config = Vec::new();
    for d in loaded {
        let id = d.id;
        let label = labels.remove(&id).unwrap_or_default();
        let cfg = config.unwrap_or(&d.baseline).to_string();
        if !d.configs.contains(&cfg) {
            without_config.push(format!("{label} (#{id})"));
            continue;
        }
        let m = match d.metrics.as_slice() {
            [] => {
                h.skipped.push(format!("{label} (#{id})"));
                continue;
            }
            [m] => m,
            many => return Err(ambiguous(metric, &label, id, many)),
        };
        if h.workload.is_empty() {
            h.workload = m.workload.clone();
            h.metric = m.spec.name.clone();
            h.unit = m.spec.unit.clone();
            h.direction = m.spec.direction.as_str().into();
        }
        let values: Vec<f64> = d
            .runs
            .iter()
            .filter(|r| r.workload == m.workload && r.metric == m.spec.name)
            .filter_map(|r| median(&r.values))
            .collect();
        let Some(mid) = median(&values) else {
            h.skipped.push(format!("{label} (#{id})"));
            continue;
        };
        h.points.push(HistoryPoint {
            id,
            label,
            config: cfg,
            n: values.len(),
            median: mid,
            values,
        });
    }
    if h.points.is_empty() {
        let why = match config {
            Some(c) if !without_config.is_empty() => format!(
                "; {} have no config '{}'",
                safe(&without_config.join(", ")),
                safe(c)
            ),
            _ => String::new(),
        };
        return Err(bad(format!(
            "no experiment labelled '{}*' has samples of '{}'{why}",
            safe(prefix),
            safe(metric)
        )));
    }
    h.skipped.extend(without_config);
    h.change_points = change_points(&h.points, alpha, h.permutations);
    h.newest = newest(&h);
    Ok(h)
}

/// Bad input: `metric` alone names a metric of several workloads of
/// experiment `id` (`many`, its matches).
fn ambiguous(metric: &str, label: &str, id: i64, many: &[StoredMetric]) -> anyhow::Error {
    let workloads: Vec<&str> = many.iter().map(|m| m.workload.as_str()).collect();
    bad(format!(
        "metric '{}' is in several workloads of {} (#{id}): {}; name one as WORKLOAD/{}",
        safe(metric),
        safe(label),
        safe(&workloads.join(", ")),
        safe(metric)
    ))
}

/// The ids and labels of the experiments whose label starts with
/// `prefix`, oldest first, of host `host` only when one is given; bad input
/// when there are none.
fn labelled_on(store: &Store, prefix: &str, host: Option<&str>) -> Result<Vec<(i64, String)>> {
    let mut exps = store.labelled(prefix)?;
    if let Some(h) = host {
        let ids = store.experiments_on(h)?;
        exps.retain(|(id, _)| ids.contains(id));
        if exps.is_empty() {
            return Err(bad(format!(
                "no experiment on host {} has a label starting with '{}' in {}",
                safe(h),
                safe(prefix),
                safe(&store.path().display().to_string())
            )));
        }
    }
    if exps.is_empty() {
        return Err(bad(format!(
            "no experiment has a label starting with '{}' in {}",
            safe(prefix),
            safe(&store.path().display().to_string())
        )));
    }
    Ok(exps)
}

/// The verdict on `h`'s newest experiment (or two), from its points and
/// change points.
fn newest(h: &History) -> super::newest::Newest {
    let exps: Vec<Experiment> = h
        .points
        .iter()
        .map(|p| Experiment {
            median: p.median,
            values: &p.values,
        })
        .collect();
    let labels: Vec<String> = h.points.iter().map(|p| p.label.clone()).collect();
    let cps: Vec<usize> = h.change_points.iter().map(|c| c.index).collect();
    super::newest::judge_newest(&exps, &labels, &cps, h.alpha, h.direction == "lower")
}

/// The change points of the points' medians, each with the median of the
/// medians before and after it.
fn change_points(points: &[HistoryPoint], alpha: f64, permutations: usize) -> Vec<ChangePoint> {
    let mut out = Vec::new();
    let medians: Vec<f64> = points.iter().map(|p| p.median).collect();
    for (index, p) in binary_segmentation(&medians, alpha, permutations, SEED) {
        let before = median(&medians[..index]).unwrap_or(f64::NAN);
        let after = median(&medians[index..]).unwrap_or(f64::NAN);
        out.push(ChangePoint {
            index,
            p,
            median_before: before,
            median_after: after,
        });
    }
    out
}
