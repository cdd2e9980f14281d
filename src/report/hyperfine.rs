//! hyperfine's `--export-json` schema (`{"results": [...]}`), so that the
//! scripts people keep for hyperfine (its `scripts/plot_whisker.py`,
//! `plot_histogram.py`, `advanced_statistics.py`, ...) read a sysdelta
//! run unchanged. One result per (config, workload) whose workload has a
//! `wall` metric (else another metric in a unit of time), in seconds; the fields are those of
//! hyperfine's `BenchmarkResult` (hyperfine 1.19, `src/benchmark/
//! benchmark_result.rs`): `command`, `mean`, `stddev`, `median`, `user`,
//! `system`, `min`, `max`, `times`, `memory_usage_byte`, `exit_codes`,
//! `parameters` (for a result of `ab`'s `-P`/`-L` scans: each parameter's
//! value, as hyperfine gives them, from what the stored plan recorded:
//! `plan::scan_params`; absent otherwise, as in hyperfine).

use std::collections::BTreeMap;

use serde::Serialize;

use super::units::convert;
use crate::analysis::view::{Raw, ReportView};
use crate::error::bad;

/// The hyperfine-schema format.
pub struct Hyperfine;

impl super::format::ReportFormat for Hyperfine {
    fn report(&self, v: &ReportView, _: &super::ReportOptions) -> anyhow::Result<String> {
        render(&v.raw)
    }
}

/// hyperfine's `HyperfineSummary`.
#[derive(Serialize)]
struct Summary {
    results: Vec<Result>,
}

/// hyperfine's `BenchmarkResult`, as its JSON exporter writes it.
#[derive(Serialize)]
struct Result {
    command: String,
    mean: f64,
    /// None (null) with one run, as hyperfine writes it.
    stddev: Option<f64>,
    median: f64,
    user: f64,
    system: f64,
    min: f64,
    max: f64,
    times: Vec<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory_usage_byte: Option<Vec<u64>>,
    exit_codes: Vec<Option<i32>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    parameters: BTreeMap<String, String>,
}

/// The export of `raw`: every measured run (warm-ups left out, as
/// hyperfine leaves them out) that gave a wall time, failed ones too with
/// their exit code, as hyperfine's `-i` keeps them.
pub fn render(raw: &Raw) -> anyhow::Result<String> {
    let info = &raw.info;
    // The values `ab`'s -P/-L scans gave each config or workload.
    let scanned = crate::plan::scan_params::ScanParameters::of(&info.plan_text);
    let mut results = Vec::new();
    for w in &info.workloads {
        let Some((wall, unit)) = time_metric(raw, w) else {
            continue;
        };
        for c in &info.configs {
            let runs: Vec<_> = raw
                .runs
                .iter()
                .filter(|r| !r.warmup && r.config == *c && r.workload == *w)
                .filter(|r| r.samples.get(&wall).is_some_and(|v| !v.is_empty()))
                .collect();
            if runs.is_empty() {
                continue;
            }
            let secs = |metric: &str, r: &crate::store::StoredRun| -> Option<f64> {
                let from = unit_of(raw, w, metric)?;
                // ns/op to s/op is ns to s: the tail is kept.
                let tail = from.find('/').map_or("", |i| &from[i..]);
                convert(median(r.samples.get(metric)?)?, &from, &format!("s{tail}"))
            };
            let times: Vec<f64> = runs.iter().filter_map(|r| secs(&wall, r)).collect();
            debug_assert_eq!(times.len(), runs.len(), "{unit} is a time");
            let mean_of =
                |m: &str| mean(&runs.iter().filter_map(|r| secs(m, r)).collect::<Vec<_>>());
            let rss: Option<Vec<u64>> = runs
                .iter()
                .map(|r| {
                    let kib = median(r.samples.get("maxrss")?)?;
                    convert(kib, &unit_of(raw, w, "maxrss")?, "B").map(|b| b.round() as u64)
                })
                .collect();
            let mut sorted = times.clone();
            sorted.sort_by(f64::total_cmp);
            results.push(Result {
                command: label(info, c, w),
                mean: mean(&times),
                stddev: stddev(&times),
                median: median(&sorted).unwrap_or(0.0),
                user: mean_of("user"),
                system: mean_of("sys"),
                min: sorted[0],
                max: sorted[sorted.len() - 1],
                times,
                memory_usage_byte: rss,
                exit_codes: runs.iter().map(|r| exit_code(r)).collect(),
                parameters: scanned.of_cell(c, w),
            });
        }
    }
    if results.is_empty() {
        return Err(bad(
            "no workload of this experiment has a time metric to export in hyperfine's format",
        ));
    }
    // serde_json escapes C0 controls; json_text the DEL and C1 controls
    // it leaves raw, so `cat` of the file is terminal-safe too.
    Ok(super::escape::json_text(serde_json::to_string_pretty(&Summary { results })?) + "\n")
}

/// The metric of workload `w` that hyperfine's `times` are: its `wall`,
/// else its first metric in a unit of time (`sec/op` of a Go benchmark,
/// in `ns/op`), with its unit.
fn time_metric(raw: &Raw, w: &str) -> Option<(String, String)> {
    let is_time = |u: &str| {
        let tail = u.find('/').map_or("", |i| &u[i..]);
        convert(1.0, u, &format!("s{tail}")).is_some()
    };
    let mine = || raw.metrics.iter().filter(move |m| m.workload == w);
    mine()
        .find(|m| m.spec.name == "wall" && is_time(&m.spec.unit))
        .or_else(|| mine().find(|m| is_time(&m.spec.unit)))
        .map(|m| (m.spec.name.clone(), m.spec.unit.clone()))
}

/// The unit `metric` of workload `w` is stored in.
fn unit_of(raw: &Raw, w: &str, metric: &str) -> Option<String> {
    raw.metrics
        .iter()
        .find(|m| m.workload == w && m.spec.name == metric)
        .map(|m| m.spec.unit.clone())
}

/// A run's exit code as hyperfine writes it: 0 for a run that succeeded
/// without one stored (imported runs), null for one a signal ended.
fn exit_code(r: &crate::store::StoredRun) -> Option<i32> {
    match r.exit_code {
        Some(c) => Some(c),
        None if r.status == crate::status::RunStatus::Ok => Some(0),
        None => None,
    }
}

/// What hyperfine's scripts label a result with: the command when the
/// experiment has one config (hyperfine's own case: commands compared),
/// the config when it has one workload (one command under several system
/// states), both otherwise.
fn label(info: &crate::store::ExperimentInfo, config: &str, workload: &str) -> String {
    let command = command_of(&info.plan_text, workload).unwrap_or_else(|| workload.to_string());
    match (info.configs.len(), info.workloads.len()) {
        (1, _) => command,
        (_, 1) => config.to_string(),
        _ => format!("{config}: {command}"),
    }
}

/// The command line of workload `name` in the stored plan, if it is a
/// command workload (the plan is TOML: `[[workload]]` tables).
fn command_of(plan: &str, name: &str) -> Option<String> {
    let t: toml::Table = plan.parse().ok()?;
    t.get("workload")?
        .as_array()?
        .iter()
        .find(|w| w.get("name").and_then(|n| n.as_str()) == Some(name))?
        .get("command")?
        .as_str()
        .map(str::to_string)
}

/// The median of `v` (sorted or not).
fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// The sample standard deviation (n - 1), as hyperfine's; None for one value.
fn stddev(v: &[f64]) -> Option<f64> {
    if v.len() < 2 {
        return None;
    }
    let m = mean(v);
    let ss: f64 = v.iter().map(|x| (x - m) * (x - m)).sum();
    Some((ss / (v.len() - 1) as f64).sqrt())
}

#[cfg(test)]
mod tests {
    #[test]
    fn statistics_as_hyperfine_computes_them() {
        assert_eq!(super::median(&[3.0, 1.0, 2.0, 10.0]), Some(2.5));
        assert_eq!(super::stddev(&[1.0]), None);
        let s = super::stddev(&[1.0, 2.0, 3.0]).unwrap();
        assert!((s - 1.0).abs() < 1e-12);
    }

    #[test]
    fn command_is_read_from_the_plan() {
        let plan = "[[workload]]\nname = \"t\"\ncommand = \"sleep 0.1\"\n";
        assert_eq!(super::command_of(plan, "t").as_deref(), Some("sleep 0.1"));
        assert_eq!(super::command_of(plan, "u"), None);
    }
}
