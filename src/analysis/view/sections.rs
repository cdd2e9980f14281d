//! The data of a report's sections beside its main table, gathered from
//! the stored experiment so that no renderer reads the store: the kernel
//! profile per config, the series workloads reported per interval (as
//! medians over runs per config), the series every run recorded, and the
//! run counts per config and workload.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::monitor::profile::Profile;
use crate::status::RunStatus;
use crate::store::{ExperimentData, SeriesRecord, StoredRun};

/// Per config of the report, its profile's symbols over all measured
/// runs; empty when no profile was recorded.
pub fn profiles(data: &ExperimentData, configs: &[String]) -> Vec<(String, Profile)> {
    if data.profiles.is_empty() {
        return Vec::new();
    }
    configs
        .iter()
        .map(|c| {
            let mut symbols: Vec<(String, bool, u64)> = data
                .profiles
                .iter()
                .filter(|p| p.0 == *c)
                .map(|p| (p.1.clone(), p.2, p.3))
                .collect();
            symbols.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
            let total_samples = symbols.iter().fold(0u64, |t, s| t.saturating_add(s.2));
            let p = Profile {
                total_samples,
                symbols,
                lost: 0,
            };
            (c.clone(), p)
        })
        .collect()
}

/// A series a workload reported as a metric, one sample per interval:
/// per config, the per-interval median over its measured runs.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadSeries {
    pub workload: String,
    pub name: String,
    pub unit: String,
    /// Seconds between two values.
    pub interval: f64,
    /// (config, runs it has, per-interval medians), baseline first.
    pub columns: Vec<(String, usize, Vec<f64>)>,
}

/// Element-wise median of several runs' series (truncated to the shortest).
fn median_series(runs: &[&Vec<f64>]) -> Vec<f64> {
    let len = runs.iter().map(|v| v.len()).min().unwrap_or(0);
    (0..len)
        .filter_map(|i| {
            let col: Vec<f64> = runs.iter().map(|v| v[i]).collect();
            crate::stats::summary::median(&col)
        })
        .collect()
}

/// The series workloads reported as metrics (not monitor telemetry).
pub fn workload_series(data: &ExperimentData, configs: &[String]) -> Vec<WorkloadSeries> {
    // The runs the analysis counts (not those of a boot that failed its
    // machine audit).
    let apart = crate::analysis::boots::audit_failed_boots(data);
    let runs: HashMap<i64, &StoredRun> = data
        .runs
        .iter()
        .filter(|r| crate::analysis::boots::is_counted(r, &apart))
        .map(|r| (r.id, r))
        .collect();
    // The workloads' declared metrics, and each (workload, series,
    // config)'s series in stored order, found once: a scan of all metrics
    // per series, or of all series per (workload, series, config), made a
    // report of W workloads cost W^2.
    let declared: HashSet<(&str, &str)> = data
        .metrics
        .iter()
        .map(|m| (m.workload.as_str(), m.spec.name.as_str()))
        .collect();
    type Key<'a> = (&'a str, &'a str, &'a str);
    let mut of_cell: HashMap<Key, Vec<&SeriesRecord>> = HashMap::new();
    let mut names: Vec<(&str, &str)> = Vec::new();
    for (id, s) in &data.series {
        let Some(r) = runs.get(id) else { continue };
        let (w, name) = (r.workload.as_str(), s.name.as_str());
        of_cell
            .entry((w, name, r.config.as_str()))
            .or_default()
            .push(s);
        // A workload's time series is a metric with one sample per
        // interval; monitor telemetry has its own series and per-run
        // summaries, shown as metrics.
        let per_interval = r.samples.get(name).is_some_and(|v| v.len() > 1);
        if declared.contains(&(w, name)) && per_interval {
            names.push((w, name));
        }
    }
    names.sort();
    names.dedup();
    let mut out = Vec::new();
    for (workload, name) in names {
        let mut interval = 1.0;
        let mut unit = String::new();
        let mut columns = Vec::new();
        for c in configs {
            let series: Vec<&Vec<f64>> = of_cell
                .get(&(workload, name, c.as_str()))
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .map(|s| {
                    if let (Some(a), Some(b)) = (s.t.first(), s.t.get(1)) {
                        interval = b - a;
                    } else if let Some(a) = s.t.first() {
                        interval = *a;
                    }
                    unit = s.unit.clone();
                    &s.v
                })
                .collect();
            columns.push((c.clone(), series.len(), median_series(&series)));
        }
        out.push(WorkloadSeries {
            workload: workload.to_string(),
            name: name.to_string(),
            unit,
            interval,
            columns,
        });
    }
    out
}

/// (config, workload, series) of every measured run that recorded one.
pub fn run_series(data: &ExperimentData) -> Vec<(String, String, SeriesRecord)> {
    // Most experiments record none: no map of every run for nothing.
    if data.series.is_empty() {
        return Vec::new();
    }
    let runs: HashMap<i64, (&str, &str, bool)> = data
        .runs
        .iter()
        .map(|r| (r.id, (r.config.as_str(), r.workload.as_str(), r.warmup)))
        .collect();
    data.series
        .iter()
        .filter_map(|(run, s)| {
            let (c, w, warm) = runs.get(run)?;
            (!warm).then(|| (c.to_string(), w.to_string(), s.clone()))
        })
        .collect()
}

/// Runs per config and workload: ok, failed, warm-up (either).
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunCounts {
    /// Workloads in the order their first run ran.
    pub workloads: Vec<String>,
    /// Per config of the report, per workload.
    pub counts: Vec<Vec<CellCounts>>,
}

/// One (config, workload)'s runs, each counted once.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct CellCounts {
    /// Measured runs that succeeded and are counted.
    pub ok: usize,
    /// Measured runs that succeeded, of a boot that failed its machine
    /// audit: left out of the statistics.
    pub left_out: usize,
    /// Measured runs that failed.
    pub failed: usize,
    /// Warm-up runs, whatever their end.
    pub warmup: usize,
}

/// The run counts of `data` per config of `configs`.
pub fn run_counts(data: &ExperimentData, configs: &[String]) -> RunCounts {
    // Workloads in order of their first run, each found by name in one
    // look-up (a scan of the list per run made W workloads cost W^2).
    let mut workloads: Vec<String> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for r in &data.runs {
        index.entry(r.workload.as_str()).or_insert_with(|| {
            workloads.push(r.workload.clone());
            workloads.len() - 1
        });
    }
    let apart = crate::analysis::boots::audit_failed_boots(data);
    let mut counts = vec![vec![CellCounts::default(); workloads.len()]; configs.len()];
    for r in &data.runs {
        let (Some(ci), Some(&wi)) = (
            configs.iter().position(|c| *c == r.config),
            index.get(r.workload.as_str()),
        ) else {
            continue;
        };
        let n = &mut counts[ci][wi];
        match (r.warmup, r.status == RunStatus::Ok) {
            (true, _) => n.warmup += 1,
            (false, true) if crate::analysis::boots::is_counted(r, &apart) => n.ok += 1,
            (false, true) => n.left_out += 1,
            (false, false) => n.failed += 1,
        }
    }
    RunCounts { workloads, counts }
}
