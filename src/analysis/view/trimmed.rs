//! The numbers of the 2007 blktrace posting's table (`--trim`): each
//! config's min/avg/max/stddev after dropping its highest and lowest
//! values, and the runs (or boots) a 1% difference would need. The text
//! report asks for them per table; they are computed here, where the
//! statistics are, so that the renderer only formats them.

use crate::analysis::{pooled_cov, Comparison, MetricAnalysis};
use crate::stats;

/// A config's values with the `trim` highest and lowest dropped.
#[derive(Clone, Copy, Debug)]
pub struct Trimmed {
    pub min: f64,
    /// NaN when a value is not finite.
    pub mean: f64,
    pub max: f64,
    pub stddev: Option<f64>,
}

/// `values` (in any order) with `trim` dropped at each end; None when
/// nothing is left.
pub fn trimmed(values: &[f64], trim: usize) -> Option<Trimmed> {
    let mut v = values.to_vec();
    v.sort_by(|x, y| x.total_cmp(y));
    if v.len() <= 2 * trim {
        return None;
    }
    let t = &v[trim..v.len() - trim];
    let s = stats::summary::summarize(t);
    Some(Trimmed {
        min: t[0],
        mean: s.as_ref().map_or(f64::NAN, |s| s.mean),
        max: t[t.len() - 1],
        stddev: s.and_then(|s| s.stddev),
    })
}

/// As plan-runs: the runs (boots, for kernel configs) per config the
/// report's own test needs to find a 1% change with 80% power at the
/// level Holm leaves one of `n_comparisons`, never below the size at which
/// it can reject; None without a positive pooled CoV.
pub fn units_for_one_percent(
    m: &MetricAnalysis,
    cmp: &Comparison,
    alpha: f64,
    n_comparisons: usize,
) -> Option<usize> {
    use stats::power::{self, ReportTest, PLAN_SEED};
    let base = &m.cells[0].values;
    let other = m
        .cells
        .iter()
        .find(|c| c.config == cmp.config)
        .map(|c| c.values.clone())
        .unwrap_or_default();
    let by_boot = m.cells.iter().any(|c| c.boots.is_some());
    let level = alpha / n_comparisons.max(1) as f64;
    pooled_cov(base, &other)
        .filter(|cov| *cov > 0.0)
        .and_then(|cov| {
            if by_boot {
                power::boots_for_power(0.01, cov, level, 0.8, PLAN_SEED)
            } else {
                power::units_for_power(ReportTest::Rank, 0.01, cov, level, 0.8, PLAN_SEED)
            }
        })
}
