//! The geometric-mean row benchstat prints under a table: per config and
//! per metric shared by two or more workloads, the geometric mean over
//! those workloads of the ratio of means to the baseline, here with a CI.
//!
//! The CI combines the workloads' own CIs on the log scale: each
//! workload's log ratio ln r_w is taken as approximately normal with a
//! standard error recovered from its CI, se_w = (ln hi - ln lo) / (2 z);
//! the workloads are independent samples (different runs), so the mean of
//! the k log ratios has standard error sqrt(sum se_w^2) / k, and the CI is
//! exp(mean +- z se). It assumes what it says: independent workloads and a
//! log ratio near normal (true for the run counts a verdict needs; a CI
//! that is far from symmetric on the log scale is averaged). The workloads'
//! CIs are the small-sample-widened ones, so at few runs se_w is overstated
//! and this CI is wider than its nominal level (conservative). A workload
//! whose ratio or CI is missing (too few runs, a non-positive mean) is
//! left out, and the row says over how many workloads it is.

use serde::Serialize;

use super::model::MetricAnalysis;
use crate::stats::special::normal_quantile;

#[derive(Clone, Debug, Serialize)]
pub struct GeoMean {
    /// The metric whose ratios are averaged (its name, in every workload).
    pub metric: String,
    pub config: String,
    /// Workloads the mean is over.
    pub workloads: usize,
    /// Geometric mean of the ratios of means (config / baseline).
    pub ratio: f64,
    /// Its CI, at the report's confidence.
    pub ratio_ci: (f64, f64),
    /// `ratio` and `ratio_ci` as percent changes (100 * (ratio - 1)).
    pub delta_mean_pct: f64,
    pub delta_ci_pct: (f64, f64),
}

/// Geometric means of every (non-telemetry) metric name that two or more
/// workloads share, for each compared config, in metric then config order.
pub fn compute(metrics: &[MetricAnalysis], confidence: f64) -> Vec<GeoMean> {
    let z = normal_quantile(1.0 - (1.0 - confidence) / 2.0);
    let mut names: Vec<&str> = Vec::new();
    for m in metrics {
        let name = m.spec.name.as_str();
        if !crate::monitor::is_telemetry_metric(name) && !names.contains(&name) {
            names.push(name);
        }
    }
    let mut out = Vec::new();
    for name in names {
        let ms: Vec<&MetricAnalysis> = metrics.iter().filter(|m| m.spec.name == name).collect();
        if ms.len() < 2 {
            continue;
        }
        let configs = ms[0].comparisons.iter().map(|c| c.config.clone());
        for (ci, config) in configs.enumerate() {
            // (log ratio, its standard error) per workload.
            let logs: Vec<(f64, f64)> = ms
                .iter()
                .filter_map(|m| {
                    let base = m.cells.first()?.summary.as_ref()?.mean;
                    let c = m.comparisons.get(ci)?;
                    let mean = m.cells.get(ci + 1)?.summary.as_ref()?.mean;
                    let (lo, hi) = c.ratio_ci?;
                    let r = mean / base;
                    (base > 0.0 && r > 0.0 && lo > 0.0 && hi >= lo)
                        .then(|| (r.ln(), (hi.ln() - lo.ln()) / (2.0 * z)))
                })
                .collect();
            if logs.len() < 2 {
                continue;
            }
            let k = logs.len() as f64;
            let mean = logs.iter().map(|l| l.0).sum::<f64>() / k;
            let se = logs.iter().map(|l| l.1 * l.1).sum::<f64>().sqrt() / k;
            let (ratio, lo, hi) = (mean.exp(), (mean - z * se).exp(), (mean + z * se).exp());
            let pct = |r: f64| 100.0 * (r - 1.0);
            out.push(GeoMean {
                metric: name.to_string(),
                config,
                workloads: logs.len(),
                ratio,
                ratio_ci: (lo, hi),
                delta_mean_pct: pct(ratio),
                delta_ci_pct: (pct(lo), pct(hi)),
            });
        }
    }
    out
}
