//! From stored runs to the numbers a report prints: per-cell summaries and
//! each config against the baseline, with the verdict.

use std::collections::HashMap;

/// Successful measured runs per (config, workload).
type CellRuns<'a> = HashMap<(&'a str, &'a str), Vec<&'a StoredRun>>;

use serde::Serialize;

pub mod boots;
mod cis;
pub mod families;
pub mod geomean;
pub mod hosts;
mod model;
pub mod overhead;
pub mod precision;
pub mod shell_cost;
mod warnings;

pub use model::*;

use crate::error::Error;
use crate::metric::Direction;
use crate::stats;
use crate::status::{ExperimentStatus, RunStatus};
use crate::store::{Event, ExperimentData, ExperimentInfo, StoredRun};
use boots::CellUnits;

#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    pub info: ExperimentInfo,
    pub baseline: String,
    pub configs: Vec<String>,
    pub metrics: Vec<MetricAnalysis>,
    pub runs_ok: usize,
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

/// `worse` or `better` when the rank test rejects (adjusted p < alpha) and
/// the change of the mean (`delta_pct`, signed as the change: positive when
/// the mean went up, whatever the baseline's sign) and the Hodges-Lehmann
/// shift (`hl_shift`, None when undefined) point the same way; `~`
/// otherwise.
///
/// The rank test decides, not the CI: it is distribution-free, so its
/// false-positive rate stays at alpha for skewed, bimodal and heavy-tailed
/// noise. Also requiring the mean's CI to exclude 1 (as sysdelta did
/// first) made the verdict conservative where the two disagree most: 3.5%
/// instead of 5% in simulated A/A runs with t(3) noise at 20 runs a side.
/// The direction check keeps a verdict from contradicting the delta shown.
fn verdict(
    direction: Direction,
    delta_pct: f64,
    hl_shift: Option<f64>,
    p_adj: f64,
    alpha: f64,
) -> Verdict {
    let up = delta_pct > 0.0;
    let agrees = match hl_shift {
        Some(sh) => (sh > 0.0 && up) || (sh < 0.0 && delta_pct < 0.0),
        None => delta_pct != 0.0,
    };
    if p_adj < alpha && agrees {
        match (direction, up) {
            (Direction::Lower, true) | (Direction::Higher, false) => Verdict::Worse,
            _ => Verdict::Better,
        }
    } else {
        Verdict::Noise
    }
}

/// 100 * (x - base) / |base|: the change in percent of the baseline's
/// size, signed as the change itself (for a positive baseline, 100 *
/// (x / base - 1)).
fn change_pct(x: f64, base: f64) -> f64 {
    100.0 * (x - base) / base.abs()
}

/// A CI of mean / baseline mean as a CI of [`change_pct`], low end first.
fn pct_ci((lo, hi): (f64, f64), base_sign: f64) -> (f64, f64) {
    let (a, b) = (
        100.0 * (lo - 1.0) * base_sign,
        100.0 * (hi - 1.0) * base_sign,
    );
    (a.min(b), a.max(b))
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
            info.id,
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

    let measured: Vec<&StoredRun> = data.runs.iter().filter(|r| r.is_measured_ok()).collect();
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

    let means = cis::bootstrap_cis(&metrics, &units, &configs, opts);

    // Raw comparisons (metrics in parallel), then one correction over all.
    use rayon::prelude::*;
    let per_metric: Vec<Vec<(usize, usize, f64)>> = metrics
        .par_iter_mut()
        .enumerate()
        .map(|(mi, m)| {
            let mut pvals: Vec<(usize, usize, f64)> = Vec::new();
            let base = m.cells[0].values.clone();
            let base_sum = m.cells[0].summary.clone();
            for (ci, cell) in m.cells.iter().enumerate().skip(1) {
                let mut cmp = Comparison::undefined(cell.config.clone());
                match (&base_sum, &cell.summary) {
                    (Some(b), Some(o)) if b.mean != 0.0 => {
                        cmp.delta_mean_pct = Some(change_pct(o.mean, b.mean));
                        if b.median != 0.0 {
                            cmp.delta_median_pct = Some(change_pct(o.median, b.median));
                        }
                        cmp.median_ratio = stats::hodges_lehmann::median_ratio(&base, &cell.values);
                        if base.len() >= 2 && cell.values.len() >= 2 {
                            if let (Some(bm), Some(om)) =
                                (means.get(&(mi, 0)), means.get(&(mi, ci)))
                            {
                                // Both methods read at the expanded level, so a
                                // 95% CI covers 95% at small n, too. Below
                                // SMALL_CI_BELOW units a side no percentile
                                // interval can (it stays inside the hull of
                                // the between-side ratios): Welch's t on the
                                // log ratio replaces both there.
                                let small = base.len().min(cell.values.len())
                                    < stats::welch::SMALL_CI_BELOW;
                                cmp.ci_small_sample = small;
                                let level = |conf| {
                                    stats::bootstrap::expanded_confidence(&base, &cell.values, conf)
                                };
                                let pct = |conf| {
                                    if small {
                                        stats::welch::log_ratio_ci(&base, &cell.values, conf)
                                    } else {
                                        stats::bootstrap::ratio_ci(bm, om, level(conf))
                                    }
                                };
                                let bca = |conf| {
                                    if small {
                                        return stats::welch::log_ratio_ci(
                                            &base,
                                            &cell.values,
                                            conf,
                                        );
                                    }
                                    stats::bca::bca_ratio_ci_from_means(
                                        &base,
                                        &cell.values,
                                        bm,
                                        om,
                                        level(conf),
                                    )
                                };
                                let (main, other) = match opts.ci_method {
                                    CiMethod::Percentile => {
                                        (pct(opts.confidence), bca(opts.confidence))
                                    }
                                    CiMethod::Bca => (bca(opts.confidence), pct(opts.confidence)),
                                };
                                // One interval at small n: no second method.
                                let other = other.filter(|_| !small);
                                let base_sign = b.mean.signum();
                                match cis::estimable(&base, &cell.values, bm, main) {
                                    Ok(ci) => {
                                        cmp.ratio_ci = Some(ci);
                                        cmp.delta_ci_pct = Some(pct_ci(ci, base_sign));
                                        cmp.ratio_ci_other_method = other
                                            .filter(|_| cis::possible(&base, &cell.values, other));
                                        cmp.delta_ci_pct_other_method = cmp
                                            .ratio_ci_other_method
                                            .map(|ci| pct_ci(ci, base_sign));
                                    }
                                    Err(why) => cmp.ci_note = Some(why.to_string()),
                                }
                                if let Some(margin) = opts.equivalence {
                                    let ci90 = match opts.ci_method {
                                        CiMethod::Percentile => pct(stats::tost::TOST_CONFIDENCE),
                                        CiMethod::Bca => bca(stats::tost::TOST_CONFIDENCE),
                                    };
                                    cmp.equivalence = ci90
                                        .filter(|_| cmp.ratio_ci.is_some())
                                        .map(|c| stats::tost::tost_from_ci(c, margin));
                                }
                            }
                            cmp.hl_shift = stats::hodges_lehmann::hodges_lehmann(
                                &base,
                                &cell.values,
                                opts.confidence,
                            );
                            let pooled_cov = pooled_cov(&base, &cell.values);
                            cmp.mde_pct = pooled_cov.and_then(|cov| {
                                stats::power::minimum_detectable_effect(
                                    base.len().min(cell.values.len()),
                                    cov,
                                    opts.alpha,
                                    0.8,
                                )
                                .map(|d| 100.0 * d)
                            });
                            // The boot level's test is chosen by the boot
                            // counts alone (stats::welch::BOOT_WELCH_BELOW),
                            // never by the data's values.
                            let by_boot = m.cells[0].boots.is_some() || cell.boots.is_some();
                            if stats::welch::boot_level_uses_welch(
                                by_boot,
                                base.len(),
                                cell.values.len(),
                            ) {
                                cmp.test = stats::power::ReportTest::Welch;
                                cmp.p = stats::welch::welch_test(&base, &cell.values).map(|w| w.p);
                            } else {
                                cmp.p = stats::mannwhitney::mann_whitney_u(&cell.values, &base)
                                    .map(|r| r.p);
                            }
                            if let Some(p) = cmp.p {
                                pvals.push((mi, ci - 1, p));
                            }
                        } else {
                            cmp.note = Some("fewer than 2 runs on a side".into());
                        }
                    }
                    (Some(b), Some(_)) if b.mean == 0.0 => {
                        cmp.note = Some("baseline mean is zero".into())
                    }
                    _ => cmp.note = Some("no successful runs on a side".into()),
                }
                if cmp.ratio_ci.is_none() && cmp.ci_note.is_none() {
                    cmp.ci_note = cmp.note.clone();
                }
                m.comparisons.push(cmp);
            }
            pvals
        })
        .collect();
    let pvals: Vec<(usize, usize, f64)> = per_metric.into_iter().flatten().collect();
    let raw: Vec<f64> = pvals.iter().map(|x| x.2).collect();
    // Headline and telemetry metrics are corrected as two families.
    let telemetry: Vec<bool> = pvals
        .iter()
        .map(|(mi, _, _)| crate::monitor::is_telemetry_metric(&metrics[*mi].spec.name))
        .collect();
    let correct = match opts.correction {
        Correction::Holm => stats::multiple::holm,
        Correction::Bh => stats::multiple::benjamini_hochberg,
    };
    let (adjusted, n_headline, n_telemetry) = families::adjust(&raw, &telemetry, correct);
    for ((mi, ci, _), padj) in pvals.iter().zip(adjusted) {
        let m = &mut metrics[*mi];
        let dir = m.spec.direction;
        let c = &mut m.comparisons[*ci];
        c.p_adjusted = Some(padj);
        c.verdict = match (c.delta_mean_pct, c.ratio_ci) {
            (Some(d), Some(_)) => {
                // Welch's t is a test of the means: the delta's sign is its
                // direction, and the rank shift has no say.
                let shift = match c.test {
                    stats::power::ReportTest::Rank => c.hl_shift.map(|h| h.shift),
                    stats::power::ReportTest::Welch => None,
                };
                let v = verdict(dir, d, shift, padj, opts.alpha);
                // A few huge outliers can move the mean one way while most
                // runs moved the other: say so rather than pick a side.
                if v == Verdict::Noise && padj < opts.alpha {
                    c.note = Some("the mean and the rank test point in opposite directions".into());
                }
                v
            }
            _ => {
                let why = c.ci_note.clone();
                c.note
                    .get_or_insert_with(|| why.unwrap_or_else(|| "no confidence interval".into()));
                Verdict::Undefined
            }
        };
    }

    let runs_ok = data.runs.iter().filter(|r| r.is_measured_ok()).count();
    let failed: Vec<FailedRun> = data
        .runs
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
        .collect();
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
        warnings.push(format!(
            "experiment is {}: {} of {} planned runs done (resume with `sysdelta run --resume {}`)",
            info.status, runs_ok, planned, info.id
        ));
    }

    let boots = boots::report(data, &configs);
    if boots.as_ref().is_some_and(|b| b.tcg) {
        warnings.insert(0, boots::TCG_WARNING.to_string());
    }
    // The cells the plan ran: not the monitors-off control with the plan's
    // workloads, nor the probe in other configs.
    for (c, w) in crate::monitor::control::distinct_cells(&info.configs, &info.workloads) {
        let (c, w) = (&info.configs[c], &info.workloads[w]);
        let (n, what) = match units.get(&(c.as_str(), w.as_str())) {
            Some(u) if u.by_boot => (u.groups.len(), "boots with successful runs"),
            Some(u) => (u.groups.len(), "successful runs"),
            None if boots.is_some() => (0, "boots with successful runs"),
            None => (0, "successful runs"),
        };
        if n < 2 {
            warnings.push(format!("{c}/{w}: {n} {what}; no statistics possible"));
        }
    }
    warnings.extend(warnings::data_warnings(
        &metrics,
        &configs,
        n_headline,
        n_telemetry,
        opts.alpha,
    ));
    warnings.extend(warnings::ci_warnings(&metrics));
    let (shell_startup, shell_warnings) = shell_cost::compute(data, &configs);
    warnings.extend(shell_warnings);
    let max_samples_per_run = data
        .runs
        .iter()
        .flat_map(|r| r.samples.values().map(Vec::len))
        .max()
        .unwrap_or(1);
    let unit_of_replication = if let Some(u) =
        boots::unit_of_replication(&units, max_samples_per_run)
    {
        u
    } else if max_samples_per_run > 1 {
        format!(
            "the run: a run with several samples of a metric (up to {max_samples_per_run}) counts once, by their median"
        )
    } else {
        "the run (one sample per metric per run)".to_string()
    };
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
