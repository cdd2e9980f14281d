//! Adaptive stopping's precision rule, kept up to date run by run.
//!
//! `--until ci=W` asks, after every block, whether every ratio CI (every
//! metric, every config against the baseline) is at most W wide. That
//! question used to reload and re-analyse the whole experiment after each
//! block, then to run the report's percentile bootstrap (2,000 resamples of
//! all n runs of each cell) on values kept as they arrived: either way a
//! block's check cost grew with every block before it. [`Precision`] keeps,
//! per (config, workload) cell and metric, a streaming Poisson bootstrap
//! ([`poisson`]): B = [`RESAMPLES`] replicate accumulators each arriving run
//! adds to, so a block costs O(B x its runs) to take in and a check O(B)
//! per comparison, whatever the number of blocks before it.
//!
//! The interval a check reads is the report's kind, of the same quantity:
//! the percentile interval of the ratio of means at the report's expanded
//! level, Welch's below `SMALL_CI_BELOW` runs a side (computed from the
//! kept values, as the report does: O(n) with n < 5), and the same rules
//! for a ratio without an interval. Its numbers are not the report's: the
//! replicates are Poisson-weighted, not resamples of exactly n runs, so
//! its ends differ from the full bootstrap's by about their Monte Carlo
//! error (tests/`precision::tests` check both ends within 10% of the
//! width at 20, 100 and 500 runs a side, and 95% coverage on A/A data).
//! The final report still computes its full bootstrap. Assumed, as the
//! report's bootstrap does: the runs of a cell are independent.

mod poisson;

use std::collections::HashMap;

use super::model::{run_value, Options};
use crate::error::Error;
use crate::monitor::{control::PROBE_WORKLOAD, CONTROL_SUFFIX};
use crate::stats;
use crate::store::{ExperimentInfo, StoredMetric, StoredRun};

/// Replicates per cell and metric (B): each run adds B weights, each check
/// reads B replicate means per side; the final report uses its full count
/// of resamples.
pub const RESAMPLES: usize = 2000;

/// The values a metric's state keeps: the first ones only, what Welch's
/// interval reads while both sides are that small. Beyond them the state
/// is its running moments and replicates, whatever the number of runs.
const KEPT: usize = stats::welch::SMALL_CI_BELOW;

/// The measured runs per cell to add, after a check at `measured` that
/// was not precise enough, before the next (`--min-time`'s early stop,
/// `ab`'s default): half as many again, so checks stay few (about 15 up
/// to 3,000 runs) and the count overshoots the one that was enough by at
/// most half. Few checks also keep the looks from adding up to a false
/// positive: `tests/calibrate_sim.rs` runs `ab`'s rule on A/A data.
pub fn runs_before_next_check(measured: u32) -> u32 {
    (measured / 2).max(1)
}

/// One metric's state in one cell: what a check reads, kept up to date run
/// by run, so a check passes over no values (only Welch's interval, below
/// 5 runs a side, reads them), and its size does not grow with the runs.
struct MetricState {
    /// The runs that reported it.
    n: usize,
    /// Its first [`KEPT`] values, in run order.
    kept: Vec<f64>,
    /// Their running mean and sum of squared deviations (Welford), for
    /// the expanded level.
    mean: f64,
    m2: f64,
    /// Whether every value is finite, whether one is negative.
    finite: bool,
    negative: bool,
    /// The streaming bootstrap's replicates of its mean.
    replicates: poisson::Replicates,
}

impl MetricState {
    fn new() -> MetricState {
        MetricState {
            n: 0,
            kept: Vec::new(),
            mean: 0.0,
            m2: 0.0,
            finite: true,
            negative: false,
            replicates: poisson::Replicates::new(RESAMPLES),
        }
    }

    /// Take in one run's value with the run's replicate weights.
    fn add(&mut self, x: f64, weights: &[u32]) {
        self.n += 1;
        if self.kept.len() < KEPT {
            self.kept.push(x);
        }
        self.finite &= x.is_finite();
        self.negative |= x < 0.0;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
        self.replicates.add(x, weights);
    }

    /// (s^2 / (n mean^2), n), as `expanded_confidence` computes it from
    /// the values; None below 2 values or at a zero or non-finite mean.
    fn rel_var(&self) -> Option<(f64, f64)> {
        let n = self.n as f64;
        (self.n >= 2 && self.mean != 0.0 && self.mean.is_finite())
            .then(|| (self.m2 / (n - 1.0) / (n * self.mean * self.mean), n))
    }
}

/// One (config, workload) cell's successful measured runs so far.
struct CellState {
    /// The source of each run's replicate weights: one per run, shared by
    /// the run's metrics (as the report resamples runs, not values).
    weights: poisson::Weights,
    /// Each metric's values and replicates.
    metrics: HashMap<String, MetricState>,
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
    /// Each cell's weight stream: (workload's place, config's place) in
    /// the experiment's lists.
    streams: HashMap<(String, String), u64>,
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
        let n = info.configs.len();
        let streams = info
            .workloads
            .iter()
            .enumerate()
            .flat_map(|(wi, w)| {
                info.configs
                    .iter()
                    .enumerate()
                    .map(move |(ci, c)| ((c.clone(), w.clone()), (wi * n + ci) as u64))
            })
            .collect();
        Ok(Precision {
            opts,
            probe_reported: baseline.ends_with(CONTROL_SUFFIX),
            configs,
            streams,
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
            let key = (r.config.clone(), r.workload.clone());
            // A cell outside the experiment's lists (none is) still gets
            // a stream of its own, past theirs.
            let stream = self
                .streams
                .get(&key)
                .copied()
                .unwrap_or_else(|| (self.streams.len() + self.cells.len()) as u64);
            let seed = self.opts.seed;
            let cell = self.cells.entry(key).or_insert_with(|| CellState {
                weights: poisson::Weights::new(RESAMPLES, seed, stream),
                metrics: HashMap::new(),
                wall: (0, 0.0),
            });
            let weights = cell.weights.draw();
            for metric in r.samples.keys() {
                if let Some(v) = run_value(r, metric) {
                    cell.metrics
                        .entry(metric.clone())
                        .or_insert_with(MetricState::new)
                        .add(v, weights);
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

    fn metric(&self, config: &str, workload: &str, metric: &str) -> Option<&MetricState> {
        self.cells
            .get(&(config.to_string(), workload.to_string()))
            .and_then(|c| c.metrics.get(metric))
    }

    /// The rule: reached when every defined ratio CI of the metrics in
    /// `only` (all when empty; "metric" or "workload/metric") is at most
    /// `target` wide (a fraction of the baseline mean), with the line that
    /// says why. It looks only at the widths, never at whether a difference
    /// is significant, so stopping does not bias the tests (a "stop when
    /// significant" rule would). `metrics` are the experiment's declared
    /// metrics, in the store's order.
    pub fn check(&self, metrics: &[StoredMetric], target: f64, only: &[String]) -> (bool, String) {
        let mut widest: Option<(f64, String)> = None;
        let mut undefined = 0usize;
        for (what, ci) in self.intervals(metrics, only) {
            match ci {
                Some((lo, hi)) => {
                    let w = hi - lo;
                    if widest.as_ref().is_none_or(|(x, _)| w > *x) {
                        widest = Some((w, what));
                    }
                }
                None => undefined += 1,
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

    /// Every comparison the rule reads ("workload/metric config"), in the
    /// store's metric order then plan order, with its interval (None: the
    /// report would have none either). O(B) per comparison: the level
    /// comes from running moments, and only Welch's interval (below 5 runs
    /// a side) reads values.
    fn intervals(
        &self,
        metrics: &[StoredMetric],
        only: &[String],
    ) -> Vec<(String, Option<(f64, f64)>)> {
        let wanted = |workload: &str, metric: &str| {
            only.is_empty()
                || only
                    .iter()
                    .any(|o| o == metric || *o == format!("{workload}/{metric}"))
        };
        let mut out = Vec::new();
        // The analysis's metrics: declared, reported in some cell, the
        // probe's only against its control.
        for m in metrics
            .iter()
            .filter(|m| m.workload != PROBE_WORKLOAD || self.probe_reported)
            .filter(|m| wanted(&m.workload, &m.spec.name))
        {
            let cells: Vec<Option<&MetricState>> = self
                .configs
                .iter()
                .map(|c| self.metric(c, &m.workload, &m.spec.name))
                .collect();
            if cells.iter().all(Option::is_none) {
                continue;
            }
            for ci in 1..self.configs.len() {
                let what = format!("{}/{} {}", m.workload, m.spec.name, self.configs[ci]);
                let interval = match (cells[0], cells[ci]) {
                    (Some(base), Some(other)) => self.ratio_ci(base, other),
                    _ => None,
                };
                out.push((what, interval));
            }
        }
        out
    }

    /// The ratio CI of `other` against `base` the rule reads: the
    /// streaming bootstrap's percentile interval at the report's expanded
    /// level, Welch's below `SMALL_CI_BELOW` runs a side (as the report),
    /// None where the report has none.
    fn ratio_ci(&self, base: &MetricState, other: &MetricState) -> Option<(f64, f64)> {
        let conf = self.opts.confidence;
        let (nb, no) = (base.n, other.n);
        // As `stats::summary::summarize`: no mean with a non-finite value.
        if !base.finite || !other.finite || nb < 2 || no < 2 || base.mean == 0.0 {
            return None;
        }
        let (lo, hi) = if nb.min(no) < stats::welch::SMALL_CI_BELOW {
            if nb == base.kept.len() && no == other.kept.len() {
                stats::welch::log_ratio_ci(&base.kept, &other.kept, conf)?
            } else {
                // One side past the values kept (a cell whose runs
                // mostly failed against one that ran): Welch's from the
                // running moments, equal to the report's but for rounding.
                welch_from_moments(base, other, conf)?
            }
        } else {
            // `expanded_confidence`'s level, from the running moments.
            let level = match (base.rel_var(), other.rel_var()) {
                (Some(b), Some(o)) => stats::bootstrap::expanded_level(b, o, conf),
                _ => conf,
            };
            poisson::ratio_ci(&base.replicates, &other.replicates, level)?
        };
        // The report's refusal (`cis::estimable`): an interval reaching
        // below -100% when no value is negative is a numerical failure.
        (base.negative || other.negative || lo >= 0.0).then_some((lo, hi))
    }
}

/// `stats::welch::log_ratio_ci` from each side's count, running mean and
/// sum of squared deviations instead of its values (both sides finite, at
/// least 2 runs, checked by the caller).
fn welch_from_moments(base: &MetricState, other: &MetricState, conf: f64) -> Option<(f64, f64)> {
    let moments = |m: &MetricState| {
        let n = m.n as f64;
        stats::welch::Moments {
            n,
            mean: m.mean,
            var: m.m2 / (n - 1.0),
        }
    };
    stats::welch::log_ratio_ci_of(moments(base), moments(other), conf)
}

#[cfg(test)]
mod tests;
