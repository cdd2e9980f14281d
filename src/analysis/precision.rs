//! Adaptive stopping's precision rule, kept up to date run by run.
//!
//! `--until ci=W` asks, after every block, whether every ratio CI (every
//! metric, every config against the baseline) is at most W wide. That
//! question used to reload the whole experiment and analyse all of it (the
//! report's tests, every CI method, warnings) after each block, so a
//! block's check cost grew with every block before it. [`Precision`] keeps
//! each (config, workload) cell's values as the runs arrive, so a check
//! reads only the runs a block added and computes only the intervals the
//! rule looks at, from exactly the values, seeds and functions the report's
//! analysis uses (`cis::cell_means`, the same small-sample and expanded
//! levels): its answer is the full analysis's, bit for bit (the test below
//! checks it against [`crate::analysis::analyze`] block after block).
//!
//! What stays proportional to the runs is the bootstrap itself: a
//! percentile interval of 2,000 resamples of n runs draws 2,000 x n run
//! indices, and no cheaper draw gives the same interval.

use std::collections::{HashMap, HashSet};

use super::cis;
use super::model::{run_value, Options};
use crate::error::Error;
use crate::monitor::{control::PROBE_WORKLOAD, CONTROL_SUFFIX};
use crate::stats;
use crate::store::{ExperimentInfo, StoredMetric, StoredRun};

/// Resamples per check; the final report uses its full count.
pub const RESAMPLES: usize = 2000;

/// One (config, workload) cell's successful measured runs so far.
#[derive(Default)]
struct CellState {
    /// Its units: one per successful measured run.
    runs: usize,
    /// Each metric's values, one per run that reported it, in run order.
    values: HashMap<String, Vec<f64>>,
    /// Successful measured runs with a wall time, and their sum (the
    /// first sample of `wall`, as `--min-time` counts it).
    wall: (u32, f64),
}

/// The running state of one experiment's cells, fed the runs in run
/// order ([`Precision::add`]).
pub struct Precision {
    opts: Options,
    /// Baseline first, then the other configs in plan order, without a
    /// monitors-off control (as the analysis orders them).
    configs: Vec<String>,
    /// The monitor probe's metrics are reported only against the control.
    probe_reported: bool,
    cells: HashMap<(String, String), CellState>,
    /// The lowest block whose runs may not all have been read yet.
    from: u32,
    /// Ids of the runs read in blocks `from` and later.
    seen: HashMap<i64, u32>,
}

impl Precision {
    /// Empty state for `info`'s experiment, compared against its stored
    /// baseline, as adaptive stopping always is.
    pub fn new(info: &ExperimentInfo) -> Result<Precision, Error> {
        let opts = Options {
            resamples: RESAMPLES,
            ..Default::default()
        };
        let baseline = info.baseline.clone();
        if !info.configs.contains(&baseline) {
            return Err(Error::bad(format!(
                "baseline '{baseline}' is not a config of experiment {}",
                info.id
            )));
        }
        let mut configs = vec![baseline.clone()];
        configs.extend(
            info.configs
                .iter()
                .filter(|c| **c != baseline && !c.ends_with(CONTROL_SUFFIX))
                .cloned(),
        );
        Ok(Precision {
            opts,
            probe_reported: baseline.ends_with(CONTROL_SUFFIX),
            configs,
            cells: HashMap::new(),
            from: 0,
            seen: HashMap::new(),
        })
    }

    /// The first block to read the runs of: the store's runs from there on
    /// hold every run [`Precision::add`] has not seen.
    pub fn from_block(&self) -> u32 {
        self.from
    }

    /// Take in runs read from [`Precision::from_block`] on, in run order
    /// (block, seq); runs already taken in, and runs of earlier blocks
    /// (taken in before), are skipped.
    pub fn add(&mut self, runs: &[StoredRun]) {
        for r in runs {
            if r.block < self.from || self.seen.insert(r.id, r.block).is_some() {
                continue;
            }
            self.from = self.from.max(r.block);
            // Adaptive stopping runs on the host; runs in boots (kernel
            // configs) would count once per boot, which this state does
            // not do.
            debug_assert!(r.boot_id.is_none(), "a run in a boot");
            if !r.is_measured_ok() {
                continue;
            }
            let cell = self
                .cells
                .entry((r.config.clone(), r.workload.clone()))
                .or_default();
            cell.runs += 1;
            for metric in r.samples.keys() {
                if let Some(v) = run_value(r, metric) {
                    cell.values.entry(metric.clone()).or_default().push(v);
                }
            }
            if let Some(w) = r.samples.get("wall").and_then(|v| v.first()) {
                cell.wall.0 += 1;
                cell.wall.1 += w;
            }
        }
        let from = self.from;
        self.seen.retain(|_, block| *block >= from);
    }

    /// Per (config, workload) with a wall time: its successful measured
    /// runs that have one, and their sum, seconds.
    pub fn wall_sums(&self) -> HashMap<(&str, &str), (u32, f64)> {
        self.cells
            .iter()
            .filter(|(_, c)| c.wall.0 > 0)
            .map(|((c, w), s)| ((c.as_str(), w.as_str()), s.wall))
            .collect()
    }

    fn values(&self, config: &str, workload: &str, metric: &str) -> &[f64] {
        self.cells
            .get(&(config.to_string(), workload.to_string()))
            .and_then(|c| c.values.get(metric))
            .map_or(&[], Vec::as_slice)
    }

    /// The rule: reached when every defined ratio CI of the metrics in
    /// `only` (all when empty; "metric" or "workload/metric") is at most
    /// `target` wide (a fraction of the baseline mean), with the line that
    /// says why. It looks only at the widths, never at whether a difference
    /// is significant, so stopping does not bias the tests (a "stop when
    /// significant" rule would). `metrics` are the experiment's declared
    /// metrics, in the store's order.
    pub fn check(&self, metrics: &[StoredMetric], target: f64, only: &[String]) -> (bool, String) {
        let wanted = |workload: &str, metric: &str| {
            only.is_empty()
                || only
                    .iter()
                    .any(|o| o == metric || *o == format!("{workload}/{metric}"))
        };
        // The analysis's metrics: declared, reported in some cell, the
        // probe's only against its control.
        let reported: Vec<(&StoredMetric, Vec<&[f64]>)> = metrics
            .iter()
            .filter(|m| m.workload != PROBE_WORKLOAD || self.probe_reported)
            .map(|m| {
                let cells = self
                    .configs
                    .iter()
                    .map(|c| self.values(c, &m.workload, &m.spec.name))
                    .collect::<Vec<_>>();
                (m, cells)
            })
            .filter(|(_, cells)| cells.iter().any(|v| !v.is_empty()))
            .collect();
        // Each cell's seed stream is numbered by its workload's place among
        // the reported metrics' workloads, sorted, as the analysis's.
        let mut workloads: Vec<&str> = reported.iter().map(|(m, _)| m.workload.as_str()).collect();
        workloads.sort();
        workloads.dedup();
        // Each workload's metrics, found once (not a scan per cell).
        let mut of_workload: HashMap<&str, Vec<usize>> = HashMap::new();
        for (mi, (m, _)) in reported.iter().enumerate() {
            of_workload.entry(m.workload.as_str()).or_default().push(mi);
        }
        let mut means: HashMap<(usize, usize), Vec<f64>> = HashMap::new();
        let mut done: HashSet<(usize, usize)> = HashSet::new();
        let mut widest: Option<(f64, String)> = None;
        let mut undefined = 0usize;
        for (mi, (m, cells)) in reported.iter().enumerate() {
            if !wanted(&m.workload, &m.spec.name) {
                continue;
            }
            let wi = workloads
                .binary_search(&m.workload.as_str())
                .expect("a reported metric's workload");
            for ci in 1..self.configs.len() {
                for side in [0, ci] {
                    if done.insert((wi, side)) {
                        let of = &of_workload[m.workload.as_str()];
                        means.extend(self.cell_means(&reported, of, &workloads, wi, side));
                    }
                }
                let ci_of = self.ratio_ci(cells[0], cells[ci], (mi, ci), &means);
                match ci_of {
                    Some((lo, hi)) => {
                        let w = hi - lo;
                        if widest.as_ref().is_none_or(|(x, _)| w > *x) {
                            let what =
                                format!("{}/{} {}", m.workload, m.spec.name, self.configs[ci]);
                            widest = Some((w, what));
                        }
                    }
                    None => undefined += 1,
                }
            }
        }
        match widest {
            None => (false, "no confidence interval defined yet".into()),
            Some((w, what)) => (
                w <= target,
                format!(
                    "widest 95% CI of a ratio {:.2}% ({what}), target {:.2}%{}",
                    100.0 * w,
                    100.0 * target,
                    if undefined > 0 {
                        format!("; {undefined} comparisons without a CI not counted")
                    } else {
                        String::new()
                    }
                ),
            ),
        }
    }

    /// The resampled means of cell (workload `wi`, config `ci`), keyed by
    /// (metric index in `reported`, config index), as `cis::bootstrap_cis`
    /// computes them; `of` holds the workload's metrics' indices.
    fn cell_means(
        &self,
        reported: &[(&StoredMetric, Vec<&[f64]>)],
        of: &[usize],
        workloads: &[&str],
        wi: usize,
        ci: usize,
    ) -> Vec<((usize, usize), Vec<f64>)> {
        let w = workloads[wi];
        let units = self
            .cells
            .get(&(self.configs[ci].clone(), w.to_string()))
            .map_or(0, |c| c.runs);
        let columns: Vec<(usize, &[f64])> = of
            .iter()
            .map(|&mi| (mi, reported[mi].1[ci]))
            .filter(|(_, values)| values.len() >= 2)
            .collect();
        let seed =
            stats::bootstrap::stream_seed(self.opts.seed, (wi * self.configs.len() + ci) as u64);
        cis::cell_means(&columns, units, self.opts.resamples, seed)
            .into_iter()
            .map(|(mi, m)| ((mi, ci), m))
            .collect()
    }

    /// The ratio CI the analysis reports for `other` against `base` (the
    /// percentile interval at the expanded level, Welch's below
    /// `SMALL_CI_BELOW` units a side), None where it has none.
    fn ratio_ci(
        &self,
        base: &[f64],
        other: &[f64],
        (mi, ci): (usize, usize),
        means: &HashMap<(usize, usize), Vec<f64>>,
    ) -> Option<(f64, f64)> {
        let conf = self.opts.confidence;
        // As `stats::summary::summarize`: no mean with a non-finite value.
        let mean = |xs: &[f64]| -> Option<f64> {
            (!xs.is_empty() && xs.iter().all(|x| x.is_finite()))
                .then(|| xs.iter().sum::<f64>() / xs.len() as f64)
        };
        let (b, _) = (mean(base)?, mean(other)?);
        if b == 0.0 || base.len() < 2 || other.len() < 2 {
            return None;
        }
        let (bm, om) = (means.get(&(mi, 0))?, means.get(&(mi, ci))?);
        let main = if base.len().min(other.len()) < stats::welch::SMALL_CI_BELOW {
            stats::welch::log_ratio_ci(base, other, conf)
        } else {
            let level = stats::bootstrap::expanded_confidence(base, other, conf);
            stats::bootstrap::ratio_ci(bm, om, level)
        };
        cis::estimable(base, other, bm, main).ok()
    }
}

#[cfg(test)]
mod tests;
