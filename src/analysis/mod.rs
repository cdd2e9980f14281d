//! From stored runs to the numbers a report prints: per-cell summaries and
//! each config against the baseline, with the verdict.

use std::collections::HashMap;

/// Successful measured runs per (config, workload).
type CellRuns<'a> = HashMap<(&'a str, &'a str), Vec<&'a StoredRun>>;

use serde::Serialize;

pub mod boots;
mod cis;
pub mod compare;
mod comparison;
pub mod families;
pub mod fleet;
pub mod gate;
pub mod geomean;
pub mod history;
pub mod hosts;
pub mod list;
mod model;
pub mod newest;
pub mod overhead;
pub mod precision;
pub mod shell_cost;
pub mod view;
mod warnings;

pub use model::*;

use crate::error::Error;
use crate::status::{ExperimentStatus, RunStatus};
use crate::store::{Event, ExperimentData, ExperimentInfo, StoredRun};
use boots::CellUnits;

#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    pub info: ExperimentInfo,
    pub baseline: String,
    pub configs: Vec<String>,
    pub metrics: Vec<MetricAnalysis>,
    /// Measured runs that succeeded and are counted (in the statistics).
    pub runs_ok: usize,
    /// Measured runs that succeeded but are left out of the statistics,
    /// as they are of a boot that failed its machine audit (a kexec
    /// session's; `boots::audit_failed_boots`). Not in `runs_ok`.
    #[serde(skip_serializing_if = "is_zero")]
    pub runs_left_out: usize,
    pub runs_failed: usize,
    pub runs_planned: usize,
    /// Comparisons of the headline family (the workloads' own metrics).
    pub n_comparisons: usize,
    /// Comparisons of the telemetry family (monitors' metrics), corrected
    /// on their own (`analysis::families`).
    #[serde(skip_serializing_if = "is_zero")]
    pub n_telemetry_comparisons: usize,
    pub alpha: f64,
    pub confidence: f64,
    pub resamples: usize,
    pub correction: Correction,
    pub ci_method: CiMethod,
    /// TOST margin (fraction), when asked for.
    pub equivalence: Option<f64>,
    /// What one independent observation is in the statistics.
    pub unit_of_replication: String,
    /// Configs that ran in VMs: their boots (absent for host experiments).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boots: Option<boots::BootsReport>,
    pub failed: Vec<FailedRun>,
    pub events: Vec<Event>,
    pub warnings: Vec<String>,
    /// What the monitors cost: the baseline against its monitors-off
    /// control (`analysis::overhead`), when the plan had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub monitor_overhead: Option<MonitorOverhead>,
    /// What starting the shell costs, per config (`analysis::shell_cost`);
    /// empty when no command ran under a shell.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shell_startup: Vec<shell_cost::ShellStartup>,
    /// Per metric shared by several workloads and per config: the
    /// geometric mean of the ratios to the baseline, with its CI.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub geomean: Vec<geomean::GeoMean>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

pub fn analyze(data: &ExperimentData, opts: &Options) -> Result<Analysis, Error> {
    let info = &data.info;
    let baseline = opts
        .baseline
        .clone()
        .unwrap_or_else(|| info.baseline.clone());
    if !info.configs.contains(&baseline) {
        return Err(Error::bad(format!(
            "baseline '{baseline}' is not a config of experiment {} (configs: {})",
            info.number(),
            info.configs.join(", ")
        )));
    }
    // Baseline first, then the others in plan order.
    let mut configs = vec![baseline.clone()];
    // A plan's monitors-off control config is not a config of the table:
    // it is reported as the monitor overhead (`report::overhead`).
    configs.extend(
        info.configs
            .iter()
            .filter(|c| **c != baseline && !c.ends_with(crate::monitor::CONTROL_SUFFIX))
            .cloned(),
    );

    let (measured, kept_apart) = boots::counted_runs(data);
    // Successful measured runs of each (config, workload) cell, in run order.
    let mut by_cell: CellRuns = HashMap::new();
    for r in &measured {
        by_cell
            .entry((r.config.as_str(), r.workload.as_str()))
            .or_default()
            .push(r);
    }
    // Its units of replication: runs, or boots of runs.
    let units: CellUnits = by_cell
        .iter()
        .map(|(k, runs)| (*k, boots::units(runs)))
        .collect();
    // The monitor probe is no workload of the plan: only the overhead line
    // (which analyzes with the control as its baseline) reports it.
    let probe_reported = baseline.ends_with(crate::monitor::CONTROL_SUFFIX);
    let mut metrics = Vec::new();
    for m in &data.metrics {
        if m.workload == crate::monitor::control::PROBE_WORKLOAD && !probe_reported {
            continue;
        }
        let cells: Vec<Cell> = configs
            .iter()
            .map(|c| {
                let u = units.get(&(c.as_str(), m.workload.as_str()));
                boots::cell(c, u, &m.spec.name)
            })
            .collect();
        if cells.iter().all(|c| c.values.is_empty()) {
            continue; // declared but never reported (e.g. every run failed)
        }
        metrics.push(MetricAnalysis {
            workload: m.workload.clone(),
            spec: m.spec.clone(),
            cells,
            comparisons: Vec::new(),
        });
    }

    // Raw comparisons (workloads in parallel, each workload's bootstrap
    // means made and dropped in turn), then one correction over all.
    let pvals = comparison::compare_all(&mut metrics, &units, &configs, opts);
    let (n_headline, n_telemetry) = comparison::correct(&mut metrics, &pvals, opts);

    let runs_ok = measured.len();
    let runs_left_out = data.runs.iter().filter(|r| r.is_measured_ok()).count() - runs_ok;
    let failed = failed_runs(data);
    let runs_planned = info.runs_per_cell as usize
        * crate::monitor::control::cells(&info.configs, &info.workloads, info.runs_per_cell).len();
    let mut warnings = Vec::new();
    if info.status != ExperimentStatus::Complete {
        // --until and --min-time decide the count as they go.
        let adaptive =
            info.overrides.until_ci.is_some() || info.overrides.min_time.is_some_and(|t| t > 0.0);
        let planned = if adaptive {
            "an adaptive number of".to_string()
        } else {
            runs_planned.to_string()
        };
        // A kexec session is resumed by its own command, not `run`.
        let resume = if data.boots.iter().any(|b| b.accel == "kexec") {
            "sysdelta kexec resume --state <its state directory>".to_string()
        } else {
            format!("sysdelta run --resume {}", info.id)
        };
        warnings.push(format!(
            "experiment is {}: {} of {} planned runs done (resume with `{resume}`)",
            info.status,
            // Done whether counted or not: a resume does not run them again.
            runs_ok + runs_left_out,
            planned
        ));
    }

    let boots = boots::report(data, &configs);
    if boots.as_ref().is_some_and(|b| b.tcg) {
        warnings.insert(0, boots::TCG_WARNING.to_string());
    }
    warnings.extend(kept_apart);
    warnings.extend(few_units(info, &units, boots.is_some()));
    warnings.extend(warnings::data_warnings(
        &metrics,
        &configs,
        n_headline,
        n_telemetry,
        opts,
    ));
    warnings.extend(warnings::ci_warnings(&metrics));
    warnings.extend(warnings::exit_status_warnings(&measured));
    let (shell_startup, shell_warnings) = shell_cost::compute(data, &measured, &configs);
    warnings.extend(shell_warnings);
    let unit_of_replication = unit_of_replication(data, &units);
    Ok(Analysis {
        info: info.clone(),
        baseline,
        configs,
        n_comparisons: n_headline,
        n_telemetry_comparisons: n_telemetry,
        correction: opts.correction,
        ci_method: opts.ci_method,
        equivalence: opts.equivalence,
        unit_of_replication,
        boots,
        runs_ok,
        runs_left_out,
        runs_failed: failed.iter().filter(|f| !f.warmup).count(),
        runs_planned,
        alpha: opts.alpha,
        confidence: opts.confidence,
        resamples: opts.resamples,
        failed,
        // The shell's samples are shown as its own line, not as events.
        events: data
            .events
            .iter()
            .filter(|e| !shell_cost::is_event(e))
            .cloned()
            .collect(),
        warnings,
        monitor_overhead: None,
        shell_startup,
        geomean: geomean::compute(&metrics, opts.confidence),
        metrics,
    })
}

/// Every run that did not succeed, warm-up or measured.
fn failed_runs(data: &ExperimentData) -> Vec<FailedRun> {
    data.runs
        .iter()
        .filter(|r| r.status != RunStatus::Ok)
        .map(|r| FailedRun {
            block: r.block,
            config: r.config.clone(),
            workload: r.workload.clone(),
            warmup: r.warmup,
            reason: r.reason.clone().unwrap_or_default(),
            stderr_tail: r.stderr_tail.clone().unwrap_or_default(),
        })
        .collect()
}

/// A warning per cell the plan ran with fewer than 2 units of
/// replication: not the monitors-off control with the plan's workloads,
/// nor the probe in other configs.
fn few_units(info: &ExperimentInfo, units: &CellUnits, has_boots: bool) -> Vec<String> {
    let mut warnings = Vec::new();
    for (c, w) in crate::monitor::control::distinct_cells(&info.configs, &info.workloads) {
        let (c, w) = (&info.configs[c], &info.workloads[w]);
        let (n, what) = match units.get(&(c.as_str(), w.as_str())) {
            Some(u) if u.by_boot => (u.groups.len(), "boots with successful runs"),
            Some(u) => (u.groups.len(), "successful runs"),
            None if has_boots => (0, "boots with successful runs"),
            None => (0, "successful runs"),
        };
        if n < 2 {
            warnings.push(format!("{c}/{w}: {n} {what}; no statistics possible"));
        }
    }
    warnings
}

/// What one independent observation is: the boot (kernel configs), or the
/// run, by the median of its samples when it has several.
fn unit_of_replication(data: &ExperimentData, units: &CellUnits) -> String {
    let max_samples_per_run = data
        .runs
        .iter()
        .flat_map(|r| r.samples.values().map(Vec::len))
        .max()
        .unwrap_or(1);
    if let Some(u) = boots::unit_of_replication(units, max_samples_per_run) {
        u
    } else if max_samples_per_run > 1 {
        format!(
            "the run: a run with several samples of a metric (up to {max_samples_per_run}) counts once, by their median"
        )
    } else {
        "the run (one sample per metric per run)".to_string()
    }
}
