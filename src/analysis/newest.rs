//! The verdict on a history's newest experiment (`history`'s "regressed at
//! the newest"): `series::newest`'s test of the newest one, then of the
//! newest two, against the experiments before them, each at half the
//! significance level (two looks, Bonferroni), in the metric's direction.

use serde::Serialize;

use super::history::{ChangePoint, HistoryPoint};
use crate::series::newest::{judge, Experiment, NewestTest, MIN_EARLIER};
use crate::stats::special::t_cdf;

/// What the newest experiment (or two) did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Judged {
    /// Worse beyond noise and drift, in the metric's direction.
    Regressed,
    /// Better beyond noise and drift.
    Improved,
    /// Within noise and drift.
    NoChange,
    /// Too few experiments before it to judge.
    NotJudged,
}

/// The newest experiment's verdict, with the test behind it.
#[derive(Clone, Debug, Serialize)]
pub struct Newest {
    pub judged: Judged,
    /// The labels of the experiments judged (the newest one, or two).
    pub labels: Vec<String>,
    /// The test (absent when not judged).
    pub test: Option<NewestTest>,
    /// Two-sided p-value of the test.
    pub p: Option<f64>,
    /// The level each test is held to: the history's alpha / 2.
    pub level: f64,
}

/// Judge the newest experiment of `points` (oldest first), then the newest
/// two pooled: a step in the second newest makes the newest's reference
/// noisy, and the two together show it. Earlier experiments start after
/// the last change point before the judged ones. `lower_is_better` gives
/// the direction of a regression.
pub fn judge_newest(
    points: &[HistoryPoint],
    change_points: &[ChangePoint],
    alpha: f64,
    lower_is_better: bool,
) -> Newest {
    let exps: Vec<Experiment> = points
        .iter()
        .map(|p| Experiment {
            median: p.median,
            values: &p.values,
        })
        .collect();
    let level = alpha / 2.0;
    let n = points.len();
    let tested: Vec<(NewestTest, f64)> = [1, 2]
        .into_iter()
        .filter_map(|j| {
            let end = n.checked_sub(j)?;
            let from = change_points
                .iter()
                .map(|c| c.index)
                .filter(|&c| c < end)
                .max()
                .unwrap_or(0);
            let t = judge(&exps, from, j)?;
            let p = 2.0 * (1.0 - t_cdf(t.t.abs(), t.df));
            Some((t, p))
        })
        .collect();
    // Two newest pooled count only when both moved the same way.
    let same_side = |t: &NewestTest| {
        points[n - t.newest..]
            .iter()
            .all(|p| (p.median - t.reference).signum() == (t.level - t.reference).signum())
    };
    let chosen = tested
        .iter()
        .find(|(t, p)| *p < level && same_side(t))
        .or(tested.first());
    let Some((t, p)) = chosen.cloned() else {
        return Newest {
            judged: Judged::NotJudged,
            labels: points.last().map(|p| p.label.clone()).into_iter().collect(),
            test: None,
            p: None,
            level,
        };
    };
    let judged = match (p < level, (t.level > t.reference) == lower_is_better) {
        (false, _) => Judged::NoChange,
        (true, true) => Judged::Regressed,
        (true, false) => Judged::Improved,
    };
    Newest {
        judged,
        labels: points[n - t.newest..]
            .iter()
            .map(|p| p.label.clone())
            .collect(),
        test: Some(t),
        p: Some(p),
        level,
    }
}

/// The fewest experiments before the newest that a verdict needs.
pub const NEEDED: usize = MIN_EARLIER;
