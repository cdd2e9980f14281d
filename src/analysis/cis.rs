//! The bootstrap CIs of the ratio of means: resampled means of every
//! cell, and whether a CI is estimable.

use std::collections::{BTreeMap, HashMap};

use super::boots::CellUnits;
use super::model::{CiMethod, MetricAnalysis, Options, NOT_ESTIMABLE};
use crate::error::Error;
use crate::stats;

/// False for an interval no ratio of these samples' means can have: one
/// reaching below 0 (-100%) when neither side has a negative value.
pub(super) fn possible(base: &[f64], other: &[f64], ci: Option<(f64, f64)>) -> bool {
    let never_negative = base.iter().chain(other).all(|&x| x >= 0.0);
    ci.is_some_and(|(lo, _)| !(never_negative && lo < 0.0))
}

/// The CI of mean(other) / mean(base), or why it is not estimable.
///
/// The ratio of means has a bootstrap CI only while the baseline's
/// resampled mean stays away from 0: a resample of the baseline with mean
/// 0 makes the ratio infinite (or 0/0), and one whose mean changes sign
/// turns the ratio over. The bootstrap routines return None then; this
/// says which happened, from the baseline's resampled means `base_means`.
/// An interval reaching below 0 (-100%) when no value is negative cannot
/// be a CI of the ratio (it would be a numerical failure) and is refused.
/// Metrics whose values are all negative have a well-defined ratio and
/// keep their CI.
pub(super) fn estimable(
    base: &[f64],
    other: &[f64],
    base_means: &[f64],
    ci: Option<(f64, f64)>,
) -> Result<(f64, f64), Error> {
    if let Some(ci) = ci {
        if possible(base, other, Some(ci)) {
            return Ok(ci);
        }
        return Err(Error::bad(format!(
            "{NOT_ESTIMABLE}: the interval reaches below -100%, which no ratio of non-negative \
             values can (a numerical failure)"
        )));
    }
    let zero_runs = base.iter().filter(|&&x| x == 0.0).count();
    let zero_means = base_means.iter().filter(|&&m| m == 0.0).count();
    let (neg, pos) = (base.iter().any(|&x| x < 0.0), base.iter().any(|&x| x > 0.0));
    Err(Error::bad(if zero_means > 0 {
        format!(
            "{NOT_ESTIMABLE}: {zero_runs} of {} baseline runs are 0, and {zero_means} of {} \
             bootstrap resamples of the baseline have mean 0, where the ratio is infinite",
            base.len(),
            base_means.len()
        )
    } else if neg && pos {
        format!(
            "{NOT_ESTIMABLE}: the baseline has values of both signs, so its resampled mean \
             crosses 0 and the ratio of means turns over"
        )
    } else {
        format!(
            "{NOT_ESTIMABLE}: a mean is 0 or the two means have opposite signs, so the ratio \
             of means has no interval"
        )
    }))
}

/// True when a workload's bootstrap CIs may be left uncomputed because no
/// output shows them (`Options::full` false): only where every one
/// of its comparisons would certainly get a CI, so that every verdict
/// (which needs one, `comparison::correct`) is what it would have been.
/// That holds for the percentile interval (the default method) without a
/// TOST margin, when both sides of every comparison have at least
/// `stats::welch::SMALL_CI_BELOW` values (below, the cheap Welch interval
/// is computed as always), all finite and above 0, and n times the
/// largest is finite: every resampled mean is then finite and positive,
/// so `bootstrap::ratio_ci` returns an interval, and it lies above 0, so
/// [`possible`] accepts it. Decided per workload, as its cells are
/// resampled jointly: a workload with one doubtful cell is resampled
/// whole, exactly as when intervals are shown.
pub(super) fn skippable(metrics: &[MetricAnalysis], of_workload: &[usize], opts: &Options) -> bool {
    if opts.ci_method != CiMethod::Percentile || opts.equivalence.is_some() {
        return false;
    }
    let certain = |values: &[f64]| {
        let n = values.len();
        let max = values.iter().copied().fold(0.0, f64::max);
        n >= crate::stats::welch::SMALL_CI_BELOW
            && values.iter().all(|&x| x.is_finite() && x > 0.0)
            && (max * n as f64).is_finite()
    };
    of_workload.iter().all(|&mi| {
        let cells = &metrics[mi].cells;
        // A comparison needs both sides; a cell compared with nothing
        // (a baseline alone) is never resampled for a CI of its own.
        cells.len() < 2 || cells.iter().all(|c| certain(&c.values))
    })
}

/// Each workload's metrics (indices, in order), workloads sorted by name:
/// a workload's place in this list seeds its cells' streams
/// ([`workload_means`]). Found once: a scan of all metrics per cell made a
/// report of W workloads cost W^2.
pub(super) fn by_workload(metrics: &[MetricAnalysis]) -> Vec<(&str, Vec<usize>)> {
    let mut of: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (mi, m) in metrics.iter().enumerate() {
        of.entry(m.workload.as_str()).or_default().push(mi);
    }
    of.into_iter().collect()
}

/// Resampled means of one workload's (metric, config) cells, for the
/// bootstrap CIs of mean(config) / mean(baseline): `wi` is the workload's
/// place in [`by_workload`], `of_workload` its metrics.
///
/// Runs are the unit of resampling, or boots where the runs are in boots
/// (resampling boots alone, see `report::boots`). Within one (workload,
/// config) cell all metrics that every unit reported are resampled jointly
/// (one draw of unit indices serves them all, see [`stats::joint`]); a
/// metric some units lack is resampled alone. Every cell has its own seed
/// stream, so results depend neither on the thread count nor on which
/// other workloads are analysed at the same time. A caller holds one
/// workload's means at a time (`resamples` values per cell: 10,000 x 8
/// bytes), turns them into CIs and drops them, so a report's memory does
/// not grow with resamples x workloads.
pub(super) fn workload_means(
    metrics: &[MetricAnalysis],
    (wi, w, of_workload): (usize, &str, &[usize]),
    units: &CellUnits,
    configs: &[String],
    opts: &Options,
) -> HashMap<(usize, usize), Vec<f64>> {
    let mut means = HashMap::new();
    for (ci, config) in configs.iter().enumerate() {
        // Units: runs, or boots for runs in boots (whose values are one
        // per boot), so the bootstrap resamples boots there.
        let runs = units
            .get(&(config.as_str(), w))
            .map(|u| u.groups.len())
            .unwrap_or(0);
        let columns: Vec<(usize, &[f64])> = of_workload
            .iter()
            .map(|&mi| (mi, metrics[mi].cells[ci].values.as_slice()))
            .filter(|(_, values)| values.len() >= 2)
            .collect();
        let seed = stats::bootstrap::stream_seed(opts.seed, (wi * configs.len() + ci) as u64);
        means.extend(
            cell_means(&columns, runs, opts.resamples, seed)
                .into_iter()
                .map(|(mi, m)| ((mi, ci), m)),
        );
    }
    means
}

/// Resampled means of one (workload, config) cell's metrics: `columns`
/// holds (metric index, values) of each metric with at least 2 values, in
/// the metrics' order; `units` is the cell's number of units. The metrics
/// every unit reported are resampled jointly from `seed`, each of the
/// others alone from its own stream of it. The report's CIs and adaptive
/// stopping's precision rule (`analysis::precision`) both take a cell's
/// means from here, so the two agree to the bit.
pub(super) fn cell_means(
    columns: &[(usize, &[f64])],
    units: usize,
    resamples: usize,
    seed: u64,
) -> Vec<(usize, Vec<f64>)> {
    type Columns<'a, 'b> = Vec<&'a (usize, &'b [f64])>;
    let (joint, alone): (Columns, Columns) = columns.iter().partition(|(_, v)| v.len() == units);
    let n = units;
    let mut rows = vec![0.0; n * joint.len()];
    for (j, (_, values)) in joint.iter().enumerate() {
        for (i, v) in values.iter().enumerate() {
            rows[i * joint.len() + j] = *v;
        }
    }
    let joint_means = stats::joint::resample_column_means(&rows, n, joint.len(), resamples, seed);
    let mut out: Vec<(usize, Vec<f64>)> =
        joint.iter().map(|(mi, _)| *mi).zip(joint_means).collect();
    for (k, (mi, values)) in alone.iter().enumerate() {
        let s = stats::bootstrap::stream_seed(seed, k as u64 + 1);
        out.push((*mi, stats::bootstrap::resample_means(values, resamples, s)));
    }
    out
}
