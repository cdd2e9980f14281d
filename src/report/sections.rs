//! Text sections that appear when an experiment recorded them: kernel
//! profiles per config (the 2001 and 2002 postings' evidence), and time
//! series side by side with their trend flags (the 2001 SAP table).

use std::collections::HashMap;

use super::escape::ascii;
use crate::monitor::profile::{print_diff_labeled, print_top, Profile};
use crate::series::table::print_side_by_side_with;
use crate::store::ExperimentData;

/// Top symbols per config, then each config's differential view against
/// the baseline. Empty when no profile was recorded.
pub fn profiles(data: &ExperimentData, configs: &[String], top: usize) -> String {
    if data.profiles.is_empty() {
        return String::new();
    }
    let per_config: HashMap<&str, Profile> = configs
        .iter()
        .map(|c| {
            let mut symbols: Vec<(String, bool, u64)> = data
                .profiles
                .iter()
                .filter(|p| p.0 == *c)
                .map(|p| (p.1.clone(), p.2, p.3))
                .collect();
            symbols.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
            let total_samples = symbols.iter().map(|s| s.2).sum();
            (
                c.as_str(),
                Profile {
                    total_samples,
                    symbols,
                    lost: 0,
                },
            )
        })
        .collect();
    let mut out = Vec::new();
    out.extend_from_slice(
        format!(
            "Profile: top {top} symbols by samples over all measured runs ([k] kernel, [u] user)\n"
        )
        .as_bytes(),
    );
    for c in configs {
        let p = &per_config[c.as_str()];
        out.extend_from_slice(format!("\n{}:\n", ascii(c)).as_bytes());
        let _ = print_top(p, top, &mut out);
    }
    for c in configs.iter().skip(1) {
        out.extend_from_slice(
            format!("\nShare changes, {} -> {}:\n", ascii(&configs[0]), ascii(c)).as_bytes(),
        );
        let _ = print_diff_labeled(
            &ascii(&configs[0]),
            &per_config[configs[0].as_str()],
            &ascii(c),
            &per_config[c.as_str()],
            top,
            &mut out,
        );
    }
    out.push(b'\n');
    String::from_utf8_lossy(&out).into_owned()
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

/// Series a workload reported as metrics (not monitor telemetry), per
/// config side by side: the per-interval median over measured runs, its
/// trend flag, and the asymptotic level's ratio to the baseline.
pub fn workload_series(data: &ExperimentData, configs: &[String]) -> String {
    let runs: HashMap<i64, &crate::store::StoredRun> = data
        .runs
        .iter()
        .filter(|r| r.is_measured_ok())
        .map(|r| (r.id, r))
        .collect();
    let mut names: Vec<(&str, &str)> = data
        .series
        .iter()
        .filter_map(|(id, s)| {
            // A workload's time series is a metric with one sample per
            // interval; monitor telemetry has its own series and per-run
            // summaries, shown as metrics.
            let r = runs.get(id)?;
            let is_metric = data
                .metrics
                .iter()
                .any(|m| m.workload == r.workload && m.spec.name == s.name);
            let per_interval = r.samples.get(&s.name).is_some_and(|v| v.len() > 1);
            (is_metric && per_interval).then_some((r.workload.as_str(), s.name.as_str()))
        })
        .collect();
    names.sort();
    names.dedup();
    let mut out = Vec::new();
    for (workload, name) in names {
        let mut interval = 1.0;
        let mut unit = String::new();
        let mut cols = Vec::new();
        for c in configs {
            let series: Vec<&Vec<f64>> = data
                .series
                .iter()
                .filter(|(id, s)| {
                    s.name == name
                        && runs
                            .get(id)
                            .is_some_and(|r| r.config == *c && r.workload == workload)
                })
                .map(|(_, s)| {
                    if let (Some(a), Some(b)) = (s.t.first(), s.t.get(1)) {
                        interval = b - a;
                    } else if let Some(a) = s.t.first() {
                        interval = *a;
                    }
                    unit = s.unit.clone();
                    &s.v
                })
                .collect();
            cols.push((
                format!("{} (n={})", ascii(c), series.len()),
                median_series(&series),
            ));
        }
        out.extend_from_slice(
            format!(
                "Time series: {} / {} ({}) per {interval} s interval, median over runs\n",
                ascii(workload),
                ascii(name),
                ascii(&unit)
            )
            .as_bytes(),
        );
        let _ = print_side_by_side_with(&cols, interval, "s", &mut out);
        out.push(b'\n');
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// For metrics of the built-in micro suite: the LMbench 2.0 summary tables
/// with one row per config (its mean over runs) and a delta row under each
/// non-baseline config. The verdicts and CIs are in the main table above.
pub fn micro_tables(a: &crate::analysis::Analysis) -> String {
    use crate::micro::{catalog::catalog, pin::Pinning, MicroResult};
    let names: std::collections::HashSet<String> = catalog().into_iter().map(|e| e.name).collect();
    let micro: Vec<_> = a
        .metrics
        .iter()
        .filter(|m| names.contains(&m.spec.name))
        .collect();
    if micro.is_empty() {
        return String::new();
    }
    let rows: Vec<(String, Vec<MicroResult>)> = a
        .configs
        .iter()
        .enumerate()
        .map(|(ci, c)| {
            let results = micro
                .iter()
                .filter_map(|m| {
                    let s = m.cells[ci].summary.as_ref()?;
                    Some(MicroResult {
                        group: String::new(),
                        name: m.spec.name.clone(),
                        column: String::new(),
                        unit: m.spec.unit.clone(),
                        direction: m.spec.direction,
                        pinning: Pinning::Unpinned,
                        samples: m.cells[ci].values.clone(),
                        median: s.mean,
                        detail: String::new(),
                    })
                })
                .collect();
            (ascii(c), results)
        })
        .collect();
    let mut out = Vec::new();
    let _ = crate::micro::table::print_lmbench_tables(&rows, rows.len() > 1, &mut out);
    out.push(b'\n');
    String::from_utf8_lossy(&out).into_owned()
}
