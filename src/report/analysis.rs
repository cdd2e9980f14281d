//! From stored runs to the numbers a report prints: per-cell summaries and
//! each config against the baseline, with the verdict.

use std::collections::{BTreeMap, HashMap};

/// Successful measured runs per (config, workload).
type CellRuns<'a> = HashMap<(&'a str, &'a str), Vec<&'a StoredRun>>;

use serde::Serialize;

use crate::metric::{Direction, MetricSpec};
use crate::stats;
use crate::stats::summary::Summary;
use crate::store::{Event, ExperimentData, ExperimentInfo, StoredRun};

#[derive(Clone, Debug)]
pub struct Options {
    pub baseline: Option<String>,
    pub alpha: f64,
    pub confidence: f64,
    pub resamples: usize,
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            baseline: None,
            alpha: 0.05,
            confidence: 0.95,
            resamples: 10_000,
            seed: 0x5d_e17a,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Better,
    Worse,
    /// Not beyond noise: printed as `~`.
    Noise,
    /// The statistics are undefined here (too few samples, zero baseline).
    Undefined,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Noise => "~",
            Verdict::Undefined => "n/a",
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub config: String,
    /// One value per successful non-warmup run, in run order (a run with
    /// several samples of the metric contributes their median).
    pub values: Vec<f64>,
    pub summary: Option<Summary>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub config: String,
    /// 100 * (mean / baseline mean - 1).
    pub delta_mean_pct: Option<f64>,
    pub delta_median_pct: Option<f64>,
    /// CI of mean / baseline mean.
    pub ratio_ci: Option<(f64, f64)>,
    pub p: Option<f64>,
    pub p_adjusted: Option<f64>,
    pub verdict: Verdict,
    /// Why the verdict is undefined, when it is.
    pub note: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct MetricAnalysis {
    pub workload: String,
    #[serde(flatten)]
    pub spec: MetricSpec,
    pub cells: Vec<Cell>,
    pub comparisons: Vec<Comparison>,
}

#[derive(Clone, Debug, Serialize)]
pub struct FailedRun {
    pub block: u32,
    pub config: String,
    pub workload: String,
    pub warmup: bool,
    pub reason: String,
    pub stderr_tail: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    pub info: ExperimentInfo,
    pub baseline: String,
    pub configs: Vec<String>,
    pub metrics: Vec<MetricAnalysis>,
    pub runs_ok: usize,
    pub runs_failed: usize,
    pub runs_planned: usize,
    pub n_comparisons: usize,
    pub alpha: f64,
    pub confidence: f64,
    pub resamples: usize,
    pub failed: Vec<FailedRun>,
    pub events: Vec<Event>,
    pub warnings: Vec<String>,
}

fn median_of(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// Per-run value of a metric: the median of its samples in that run.
fn run_value(r: &StoredRun, metric: &str) -> Option<f64> {
    r.samples
        .get(metric)
        .filter(|v| !v.is_empty())
        .map(|v| median_of(v))
}

fn verdict(direction: Direction, ratio: f64, ci: (f64, f64), p_adj: f64, alpha: f64) -> Verdict {
    let excludes_one = ci.0 > 1.0 || ci.1 < 1.0;
    if p_adj < alpha && excludes_one {
        let up = ratio > 1.0;
        match (direction, up) {
            (Direction::Lower, true) | (Direction::Higher, false) => Verdict::Worse,
            _ => Verdict::Better,
        }
    } else {
        Verdict::Noise
    }
}

/// Bootstrap CIs of mean(config) / mean(baseline) for every comparison:
/// `result[metric][config - 1]`.
///
/// Runs are the unit of resampling. Within one (workload, config) cell all
/// metrics that every successful run reported are resampled jointly (one
/// draw of run indices serves them all, see [`stats::joint`]); a metric some
/// runs lack is resampled alone. Cells run in parallel; every cell has its
/// own seed stream, so results do not depend on the thread count.
fn bootstrap_cis(
    metrics: &[MetricAnalysis],
    by_cell: &CellRuns,
    configs: &[String],
    opts: &Options,
) -> Vec<Vec<Option<(f64, f64)>>> {
    use rayon::prelude::*;

    let mut workloads: Vec<&str> = metrics.iter().map(|m| m.workload.as_str()).collect();
    workloads.sort();
    workloads.dedup();
    let cells: Vec<(usize, usize)> = (0..workloads.len())
        .flat_map(|w| (0..configs.len()).map(move |c| (w, c)))
        .collect();
    // (metric index, config index) -> resampled means.
    let means: HashMap<(usize, usize), Vec<f64>> = cells
        .par_iter()
        .flat_map_iter(|&(wi, ci)| {
            let w = workloads[wi];
            let runs = by_cell
                .get(&(configs[ci].as_str(), w))
                .map(Vec::len)
                .unwrap_or(0);
            let (joint, alone): (Vec<usize>, Vec<usize>) = metrics
                .iter()
                .enumerate()
                .filter(|(_, m)| m.workload == w && m.cells[ci].values.len() >= 2)
                .map(|(mi, _)| mi)
                .partition(|&mi| metrics[mi].cells[ci].values.len() == runs);
            let seed = stats::bootstrap::stream_seed(opts.seed, (wi * configs.len() + ci) as u64);
            let n = runs;
            let mut rows = vec![0.0; n * joint.len()];
            for (j, &mi) in joint.iter().enumerate() {
                for (i, v) in metrics[mi].cells[ci].values.iter().enumerate() {
                    rows[i * joint.len() + j] = *v;
                }
            }
            let joint_means =
                stats::joint::resample_column_means(&rows, n, joint.len(), opts.resamples, seed);
            let mut out: Vec<((usize, usize), Vec<f64>)> = joint
                .iter()
                .copied()
                .zip(joint_means)
                .map(|(mi, m)| ((mi, ci), m))
                .collect();
            for (k, &mi) in alone.iter().enumerate() {
                let s = stats::bootstrap::stream_seed(seed, k as u64 + 1);
                out.push((
                    (mi, ci),
                    stats::bootstrap::resample_means(
                        &metrics[mi].cells[ci].values,
                        opts.resamples,
                        s,
                    ),
                ));
            }
            out
        })
        .collect();
    metrics
        .iter()
        .enumerate()
        .map(|(mi, m)| {
            (1..configs.len())
                .map(|ci| {
                    let base_mean = m.cells[0].summary.as_ref()?.mean;
                    if base_mean == 0.0 {
                        return None;
                    }
                    stats::bootstrap::ratio_ci(
                        means.get(&(mi, 0))?,
                        means.get(&(mi, ci))?,
                        opts.confidence,
                    )
                })
                .collect()
        })
        .collect()
}

pub fn analyze(data: &ExperimentData, opts: &Options) -> Result<Analysis, String> {
    let info = &data.info;
    let baseline = opts
        .baseline
        .clone()
        .unwrap_or_else(|| info.baseline.clone());
    if !info.configs.contains(&baseline) {
        return Err(format!(
            "baseline '{baseline}' is not a config of experiment {} (configs: {})",
            info.id,
            info.configs.join(", ")
        ));
    }
    // Baseline first, then the others in plan order.
    let mut configs = vec![baseline.clone()];
    configs.extend(info.configs.iter().filter(|c| **c != baseline).cloned());

    let measured: Vec<&StoredRun> = data
        .runs
        .iter()
        .filter(|r| !r.warmup && r.status == "ok")
        .collect();
    // Successful measured runs of each (config, workload) cell, in run order.
    let mut by_cell: CellRuns = HashMap::new();
    for r in &measured {
        by_cell
            .entry((r.config.as_str(), r.workload.as_str()))
            .or_default()
            .push(r);
    }
    let mut metrics = Vec::new();
    for m in &data.metrics {
        let cells: Vec<Cell> = configs
            .iter()
            .map(|c| {
                let values: Vec<f64> = by_cell
                    .get(&(c.as_str(), m.workload.as_str()))
                    .map(|runs| {
                        runs.iter()
                            .filter_map(|r| run_value(r, &m.spec.name))
                            .collect()
                    })
                    .unwrap_or_default();
                Cell {
                    config: c.clone(),
                    summary: stats::summary::summarize(&values),
                    values,
                }
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

    let cis = bootstrap_cis(&metrics, &by_cell, &configs, opts);

    // Raw comparisons, then one Holm correction over all of them.
    let mut pvals: Vec<(usize, usize, f64)> = Vec::new();
    for (mi, m) in metrics.iter_mut().enumerate() {
        let base = m.cells[0].values.clone();
        let base_sum = m.cells[0].summary.clone();
        for (ci, cell) in m.cells.iter().enumerate().skip(1) {
            let mut cmp = Comparison {
                config: cell.config.clone(),
                delta_mean_pct: None,
                delta_median_pct: None,
                ratio_ci: None,
                p: None,
                p_adjusted: None,
                verdict: Verdict::Undefined,
                note: None,
            };
            match (&base_sum, &cell.summary) {
                (Some(b), Some(o)) if b.mean != 0.0 => {
                    cmp.delta_mean_pct = Some(100.0 * (o.mean / b.mean - 1.0));
                    if b.median != 0.0 {
                        cmp.delta_median_pct = Some(100.0 * (o.median / b.median - 1.0));
                    }
                    if base.len() >= 2 && cell.values.len() >= 2 {
                        cmp.ratio_ci = cis[mi][ci - 1];
                        cmp.p =
                            stats::mannwhitney::mann_whitney_u(&cell.values, &base).map(|r| r.p);
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
            m.comparisons.push(cmp);
        }
    }
    let adjusted = stats::multiple::holm(&pvals.iter().map(|x| x.2).collect::<Vec<_>>());
    for ((mi, ci, _), padj) in pvals.iter().zip(adjusted) {
        let m = &mut metrics[*mi];
        let dir = m.spec.direction;
        let c = &mut m.comparisons[*ci];
        c.p_adjusted = Some(padj);
        c.verdict = match (c.delta_mean_pct, c.ratio_ci) {
            (Some(d), Some(ci)) => verdict(dir, 1.0 + d / 100.0, ci, padj, opts.alpha),
            _ => {
                c.note
                    .get_or_insert_with(|| "no confidence interval".into());
                Verdict::Undefined
            }
        };
    }

    let runs_ok = data
        .runs
        .iter()
        .filter(|r| !r.warmup && r.status == "ok")
        .count();
    let failed: Vec<FailedRun> = data
        .runs
        .iter()
        .filter(|r| r.status != "ok")
        .map(|r| FailedRun {
            block: r.block,
            config: r.config.clone(),
            workload: r.workload.clone(),
            warmup: r.warmup,
            reason: r.reason.clone().unwrap_or_default(),
            stderr_tail: r.stderr_tail.clone().unwrap_or_default(),
        })
        .collect();
    let runs_planned = info.runs_per_cell as usize * info.configs.len() * info.workloads.len();
    let mut warnings = Vec::new();
    if info.status != "complete" {
        warnings.push(format!(
            "experiment is {}: {} of {} planned runs done (resume with `sysdelta run --resume {}`)",
            info.status, runs_ok, runs_planned, info.id
        ));
    }
    let mut per_cell: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for r in data.runs.iter().filter(|r| !r.warmup && r.status == "ok") {
        *per_cell.entry((&r.config, &r.workload)).or_default() += 1;
    }
    for c in &info.configs {
        for w in &info.workloads {
            let n = per_cell
                .get(&(c.as_str(), w.as_str()))
                .copied()
                .unwrap_or(0);
            if n < 2 {
                warnings.push(format!(
                    "{c}/{w}: {n} successful runs; no statistics possible"
                ));
            }
        }
    }
    Ok(Analysis {
        info: info.clone(),
        baseline,
        configs,
        n_comparisons: pvals.len(),
        metrics,
        runs_ok,
        runs_failed: failed.iter().filter(|f| !f.warmup).count(),
        runs_planned,
        alpha: opts.alpha,
        confidence: opts.confidence,
        resamples: opts.resamples,
        failed,
        events: data.events.clone(),
        warnings,
    })
}
