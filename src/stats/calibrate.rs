//! Calibration by simulation: does the report's verdict keep its promises?
//!
//! The report marks a delta as beyond noise when the Mann-Whitney U test
//! gives p < 0.05 and the ratio of means points the same way as the
//! Hodges-Lehmann shift ([`verdict`]). These pure, seeded functions
//! measure, on synthetic data whose truth is known:
//!
//! * the A/A false-positive rate of that verdict (both configs drawn from
//!   the same distribution), which should be near 5%;
//! * the coverage of the 95% CI of the ratio of means, read at the
//!   expanded level ([`crate::stats::bootstrap::expanded_confidence`]);
//! * the detection rate for an injected relative shift.
//!
//! Every sample has mean exactly 100 before the shift (so the true ratio is
//! exactly 1 + shift) and coefficient of variation `cov`, from one of four
//! shapes ([`Shape`]). Trials run in parallel (rayon); each trial has its
//! own seed derived from (seed, trial), so results do not depend on the
//! thread count.

use crate::stats::bootstrap::{expanded_confidence, ratio_of_means_ci, stream_seed};
use crate::stats::mannwhitney::mann_whitney_u;
use crate::stats::power::runs_known_variance;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use serde::Serialize;

/// Shape of the simulated noise; every shape has mean 100 and CoV `cov`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// 100 (1 + cov Z).
    Normal,
    /// 100 exp(s Z - s^2 / 2), s^2 = ln(1 + cov^2): right-skewed.
    LogNormal,
    /// 100 (1 + cov (0.9 S + 0.436 Z)), S = +/-1 with equal odds: two modes
    /// 1.8 sd apart (unit variance: 0.81 + 0.19).
    Bimodal,
    /// 100 (1 + cov T / sqrt(3)), T Student t with 3 degrees of freedom:
    /// heavy tails (infinite kurtosis), symmetric around 100.
    StudentT3,
}

pub const SHAPES: [Shape; 4] = [
    Shape::Normal,
    Shape::LogNormal,
    Shape::Bimodal,
    Shape::StudentT3,
];

/// CoV the calibration figures use for `shape`: 1%, the typical benchmark
/// noise, except 25% for the log-normal, whose shape at 1% cannot be told
/// from normal (skewness 0.03; at 25% it is 0.77). The other shapes are
/// scale-free for a ratio of means, so their CoV hardly matters.
pub fn calibration_cov(shape: Shape) -> f64 {
    match shape {
        Shape::LogNormal => 0.25,
        _ => 0.01,
    }
}

fn std_normal(rng: &mut SmallRng) -> f64 {
    // Box-Muller; 1 - u keeps the logarithm finite.
    let u: f64 = rng.random();
    let v: f64 = rng.random();
    (-2.0 * (1.0 - u).ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// One sample of `shape` with mean 100 and coefficient of variation `cov`.
pub fn draw(shape: Shape, cov: f64, rng: &mut SmallRng) -> f64 {
    match shape {
        Shape::Normal => 100.0 * (1.0 + cov * std_normal(rng)),
        Shape::LogNormal => {
            let s2 = (1.0 + cov * cov).ln();
            100.0 * (s2.sqrt() * std_normal(rng) - s2 / 2.0).exp()
        }
        Shape::Bimodal => {
            let side = if rng.random::<bool>() { 0.9 } else { -0.9 };
            100.0 * (1.0 + cov * (side + 0.19f64.sqrt() * std_normal(rng)))
        }
        Shape::StudentT3 => {
            let z = std_normal(rng);
            let chi2: f64 = (0..3).map(|_| std_normal(rng).powi(2)).sum();
            let t = z / (chi2 / 3.0).sqrt();
            100.0 * (1.0 + cov * t / 3f64.sqrt())
        }
    }
}

/// The report's verdict (`report::analysis`): U test p < 0.05 and the
/// ratio of means pointing the same way as the Hodges-Lehmann shift.
/// `resamples` and `seed` are unused (the verdict needs no bootstrap); they
/// keep the signature of the CI-based checks.
///
/// Assumes what [`crate::stats::mannwhitney::mann_whitney_u`] and
/// [`crate::stats::hodges_lehmann::hodges_lehmann`] assume; the simulations
/// below draw i.i.d. samples, so they measure the verdict where those
/// assumptions hold, under four distribution shapes.
pub fn verdict(base: &[f64], other: &[f64], _resamples: usize, _seed: u64) -> bool {
    let Some(u) = mann_whitney_u(base, other) else {
        return false;
    };
    if u.p >= 0.05 {
        return false;
    }
    let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
    let up = mean(other) > mean(base);
    let down = mean(other) < mean(base);
    match crate::stats::hodges_lehmann::hodges_lehmann(base, other, 0.95) {
        Some(h) => (h.shift > 0.0 && up) || (h.shift < 0.0 && down),
        None => up || down,
    }
}

/// Fraction of `trials` experiments, n runs per config, in which `test`
/// holds; the other config is scaled by 1 + shift.
fn simulate<F>(
    shape: Shape,
    n: usize,
    cov: f64,
    shift: f64,
    trials: usize,
    seed: u64,
    test: F,
) -> f64
where
    F: Fn(&[f64], &[f64], u64) -> bool + Sync,
{
    let hits: usize = (0..trials as u64)
        .into_par_iter()
        .map(|t| {
            let trial_seed = stream_seed(seed, t);
            let mut rng = SmallRng::seed_from_u64(trial_seed);
            let base: Vec<f64> = (0..n).map(|_| draw(shape, cov, &mut rng)).collect();
            let other: Vec<f64> = (0..n)
                .map(|_| (1.0 + shift) * draw(shape, cov, &mut rng))
                .collect();
            usize::from(test(&base, &other, trial_seed))
        })
        .sum();
    hits as f64 / trials as f64
}

/// A/A false-positive rate of [`verdict`]: both configs from the same
/// `shape` with CoV `cov`, n runs each, over `trials` experiments.
///
/// Assumes, by construction, what the verdict needs: i.i.d. runs from one
/// shape on both sides. The rate says nothing about drift, autocorrelation or
/// configs that differ in spread only, which real machines can add.
pub fn aa_false_positive_rate(
    shape: Shape,
    n: usize,
    cov: f64,
    trials: usize,
    resamples: usize,
    seed: u64,
) -> f64 {
    simulate(shape, n, cov, 0.0, trials, seed, |b, o, s| {
        verdict(b, o, resamples, s)
    })
}

/// Fraction of experiments whose 95% CI from `ci` (called with base,
/// other, confidence, seed) contains the true ratio 1 + shift; an undefined
/// CI counts as not covering. The CI is read at the expanded level, as the
/// report reads it.
fn coverage<F>(shape: Shape, n: usize, cov: f64, shift: f64, trials: usize, seed: u64, ci: F) -> f64
where
    F: Fn(&[f64], &[f64], f64, u64) -> Option<(f64, f64)> + Sync,
{
    let truth = 1.0 + shift;
    simulate(shape, n, cov, shift, trials, seed, |b, o, s| {
        matches!(ci(b, o, expanded_confidence(b, o, 0.95), s),
            Some((lo, hi)) if lo <= truth && truth <= hi)
    })
}

/// Coverage of the 95% percentile CI: the fraction of experiments whose CI
/// contains the true ratio 1 + shift. Experiments where the CI is
/// undefined count as not covering.
///
/// Assumes, by construction, i.i.d. runs and independent sides; real
/// coverage is lower where runs drift or correlate.
pub fn ci_coverage(
    shape: Shape,
    n: usize,
    cov: f64,
    shift: f64,
    trials: usize,
    resamples: usize,
    seed: u64,
) -> f64 {
    coverage(shape, n, cov, shift, trials, seed, |b, o, c, s| {
        ratio_of_means_ci(b, o, resamples, c, s)
    })
}

/// Coverage of the 95% BCa CI ([`crate::stats::bca::bca_ratio_ci`]), as
/// [`ci_coverage`] measures it for the percentile CI.
pub fn bca_coverage(
    shape: Shape,
    n: usize,
    cov: f64,
    shift: f64,
    trials: usize,
    resamples: usize,
    seed: u64,
) -> f64 {
    coverage(shape, n, cov, shift, trials, seed, |b, o, c, s| {
        crate::stats::bca::bca_ratio_ci(b, o, resamples, c, s)
    })
}

/// Detection rate of [`verdict`] for a true relative shift.
///
/// Assumes, by construction, i.i.d. runs and a pure multiplicative shift of
/// one shape: the case the verdict's tests are built for.
pub fn detection_rate(
    shape: Shape,
    n: usize,
    cov: f64,
    shift: f64,
    trials: usize,
    resamples: usize,
    seed: u64,
) -> f64 {
    simulate(shape, n, cov, shift, trials, seed, |b, o, s| {
        verdict(b, o, resamples, s)
    })
}

/// One row of a detection table.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct DetectionRow {
    pub shift: f64,
    /// Known-variance (z-test) runs per config for 80% power at alpha 0.05
    /// (at least 2: a U test needs two values per side to reject at all).
    pub runs: usize,
    /// Detection rate of the verdict with that many runs, normal noise.
    pub rate: f64,
}

/// For each shift, the theoretical minimum runs (known-variance t-test,
/// 80% power, alpha 0.05) and the verdict's detection rate at those runs,
/// with normal noise of CoV `cov`. The verdict estimates the variance and
/// uses a rank test, so its rate falls below the nominal 80% by how much
/// that costs at small n.
pub fn detection_table(
    cov: f64,
    shifts: &[f64],
    trials: usize,
    resamples: usize,
    seed: u64,
) -> Vec<DetectionRow> {
    shifts
        .iter()
        .enumerate()
        .map(|(i, &shift)| {
            let runs = runs_known_variance(shift, cov, 0.05, 0.8)
                .unwrap_or(2)
                .max(2);
            let rate = detection_rate(
                Shape::Normal,
                runs,
                cov,
                shift,
                trials,
                resamples,
                stream_seed(seed, i as u64),
            );
            DetectionRow { shift, runs, rate }
        })
        .collect()
}
