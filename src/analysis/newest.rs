//! The verdict on a history's newest experiment (`history`'s "regressed at
//! the newest"): `series::newest`'s test of the newest one, then of the
//! newest two, against the experiments before them, each at half the
//! significance level (two looks, Bonferroni), in the metric's direction.

use serde::Serialize;

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
/// noisy, and the two together show it. `exps` and `labels` are the
/// history's experiments, oldest first; earlier experiments start after
/// the last of `change_points` (indexes of a history's change points)
/// before the judged ones. `lower_is_better` gives the direction of a
/// regression.
pub fn judge_newest(
    exps: &[Experiment],
    labels: &[String],
    change_points: &[usize],
    alpha: f64,
    lower_is_better: bool,
) -> Newest {
    let level = alpha / 2.0;
    let n = exps.len();
    let tested: Vec<(NewestTest, f64)> = [1, 2]
        .into_iter()
        .filter_map(|j| {
            let end = n.checked_sub(j)?;
            let from = change_points
                .iter()
                .copied()
                .filter(|&c| c < end)
                .max()
                .unwrap_or(0);
            let t = judge(exps, from, j)?;
            let p = 2.0 * (1.0 - t_cdf(t.t.abs(), t.df));
            Some((t, p))
        })
        .collect();
    // Two newest pooled count only when both moved the same way.
    let same_side = |t: &NewestTest| {
        exps[n - t.newest..]
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
            labels: labels.last().cloned().into_iter().collect(),
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
        labels: labels[n - t.newest..].to_vec(),
        test: Some(t),
        p: Some(p),
        level,
    }
}

/// The fewest experiments before the newest that a verdict needs.
pub const NEEDED: usize = MIN_EARLIER;

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// `levels.len()` experiments of 10 runs each, 3% normal noise around
    /// each level times a per-experiment drift of `drift` (sd, relative).
    fn history(rng: &mut ChaCha8Rng, levels: &[f64], drift: f64) -> Vec<(f64, Vec<f64>)> {
        let mut normal = || {
            let (u, v): (f64, f64) = (rng.random_range(1e-12..1.0), rng.random());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        };
        levels
            .iter()
            .map(|l| {
                let d = 1.0 + drift * normal();
                let values: Vec<f64> = (0..10).map(|_| l * d * (1.0 + 0.03 * normal())).collect();
                (crate::stats::summary::median(&values).unwrap(), values)
            })
            .collect()
    }

    /// The share of `trials` simulated histories whose newest is flagged.
    fn flagged(levels: &[f64], drift: f64, trials: usize) -> f64 {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let hits = (0..trials)
            .filter(|_| {
                let h = history(&mut rng, levels, drift);
                let exps: Vec<Experiment> = h
                    .iter()
                    .map(|(median, values)| Experiment {
                        median: *median,
                        values,
                    })
                    .collect();
                let labels: Vec<String> = (0..h.len()).map(|i| format!("e{i}")).collect();
                judge_newest(&exps, &labels, &[], 0.05, true).judged != Judged::NoChange
            })
            .count();
        hits as f64 / trials as f64
    }

    /// A/A: no step, with and without drift between experiments, flags the
    /// newest in about alpha of histories (two looks at alpha / 2 each);
    /// a +30% step in the newest, or the newest two, is always flagged.
    #[test]
    fn false_flags_stay_near_alpha_and_a_30_percent_step_is_found() {
        let flat = [1.0; 10];
        for drift in [0.0, 0.02] {
            let rate = flagged(&flat, drift, 2000);
            eprintln!("A/A, drift {drift}: {rate:.4} flagged");
            assert!(rate < 0.07, "A/A drift {drift}: {rate}");
        }
        let mut one = [1.0; 10];
        one[9] = 1.3;
        let mut two = [1.0; 10];
        two[8] = 1.3;
        two[9] = 1.3;
        for (what, levels) in [("newest", one), ("newest two", two)] {
            let power = flagged(&levels, 0.0, 500);
            eprintln!("+30% at the {what}: {power:.4} flagged");
            assert!(power > 0.99, "{what}: {power}");
        }
    }
}
