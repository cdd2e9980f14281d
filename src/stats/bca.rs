//! Bias-corrected and accelerated (BCa) bootstrap CI of the ratio of means.
//!
//! Method (Efron & Tibshirani 1993, 14.3 and eq. 15.36; the two-sample
//! form of `scipy.stats.bootstrap(..., method='BCa')`):
//!
//! * theta = mean(other) / mean(base); theta*_i the B bootstrap ratios
//!   (the same streams as the percentile CI, so both come from one set of
//!   resamples).
//! * Bias correction z0 = Phi^-1((#{theta* < theta} + #{theta* <= theta}) /
//!   (2B)).
//! * Acceleration from the jackknife of each sample separately: for sample
//!   j of size n_j, theta_(j,i) is the ratio with value i of that sample
//!   left out, U_(j,i) = (n_j - 1)(mean_i theta_(j,i) - theta_(j,i)) and
//!   a = sum_j(sum_i U^3 / n_j^3) / (6 (sum_j(sum_i U^2 / n_j^2))^(3/2)).
//!   Leaving one value out of a mean is (S - x_i) / (n - 1), so the whole
//!   jackknife costs O(n), not O(n^2).
//! * With z = Phi^-1((1 - confidence) / 2), the CI is the bootstrap
//!   quantiles at Phi(z0 + (z0 + z) / (1 - a (z0 + z))) and
//!   Phi(z0 + (z0 - z) / (1 - a (z0 - z))), linear interpolation.

use crate::stats::bootstrap::{quantile_linear, resample_means, stream_seed};
use crate::stats::special::{normal_cdf, normal_quantile};

/// Jackknife acceleration of mean(other) / mean(base) (the `a_hat` SciPy
/// computes for two independent samples). None when a side has fewer than
/// 2 values, the base mean (or a leave-one-out base mean) is 0, or every
/// jackknife value is equal (a is then 0/0).
///
/// Assumes the two samples are independent and each i.i.d.; the jackknife
/// treats each value as exchangeable with the others of its sample. Not
/// checked.
pub fn ratio_acceleration(base: &[f64], other: &[f64]) -> Option<f64> {
    if base.len() < 2 || other.len() < 2 {
        return None;
    }
    let (nb, no) = (base.len() as f64, other.len() as f64);
    let (sb, so): (f64, f64) = (base.iter().sum(), other.iter().sum());
    let (mb, mo) = (sb / nb, so / no);
    if mb == 0.0 {
        return None;
    }
    let mut num = 0.0;
    let mut den = 0.0;
    // Leave one base value out: the other mean is fixed.
    let base_jack: Vec<f64> = base.iter().map(|b| mo / ((sb - b) / (nb - 1.0))).collect();
    // Leave one other value out: the base mean is fixed.
    let other_jack: Vec<f64> = other.iter().map(|o| ((so - o) / (no - 1.0)) / mb).collect();
    for (jack, n) in [(&base_jack, nb), (&other_jack, no)] {
        if jack.iter().any(|t| !t.is_finite()) {
            return None;
        }
        let dot = jack.iter().sum::<f64>() / n;
        let (mut s2, mut s3) = (0.0, 0.0);
        for t in jack {
            let u = (n - 1.0) * (dot - t);
            s2 += u * u;
            s3 += u * u * u;
        }
        num += s3 / (n * n * n);
        den += s2 / (n * n);
    }
    if den == 0.0 {
        return None;
    }
    Some(num / (6.0 * den.powf(1.5)))
}

/// The BCa quantile levels (alpha_1, alpha_2) for a bootstrap
/// distribution `theta_b` of an estimate `theta_hat` with acceleration
/// `a_hat`. None when z0 is infinite (theta_hat outside the distribution).
///
/// Assumes Efron's BCa model (a monotone normalizing transform with constant
/// bias and a variance linear in the parameter); see [`bca_ratio_ci`].
pub fn bca_levels(
    theta_b: &[f64],
    theta_hat: f64,
    a_hat: f64,
    confidence: f64,
) -> Option<(f64, f64)> {
    if theta_b.is_empty() || !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let below = theta_b.iter().filter(|&&t| t < theta_hat).count();
    let at_or_below = theta_b.iter().filter(|&&t| t <= theta_hat).count();
    let z0 = normal_quantile((below + at_or_below) as f64 / (2.0 * theta_b.len() as f64));
    if !z0.is_finite() {
        return None;
    }
    let z = normal_quantile((1.0 - confidence) / 2.0);
    let level = |zz: f64| {
        let num = z0 + zz;
        normal_cdf(z0 + num / (1.0 - a_hat * num))
    };
    Some((level(z), level(-z)))
}

/// BCa CI from a bootstrap distribution: the quantiles of `theta_b` at
/// [`bca_levels`]. Reorders `theta_b`.
///
/// Assumes what [`bca_levels`] assumes, and enough resamples that the
/// quantiles at the adjusted levels are stable (none is checked).
pub fn bca_interval(
    theta_b: &mut [f64],
    theta_hat: f64,
    a_hat: f64,
    confidence: f64,
) -> Option<(f64, f64)> {
    let (l1, l2) = bca_levels(theta_b, theta_hat, a_hat, confidence)?;
    Some((quantile_linear(theta_b, l1), quantile_linear(theta_b, l2)))
}

/// BCa CI of mean(other) / mean(base) from resampled means the caller
/// already has (e.g. the baseline's, shared across configs as in
/// `ratio_cis_batch`, from `resample_means` with `stream_seed(seed, 0)` and
/// `stream_seed(seed, j)`). Same None cases as [`bca_ratio_ci`].
///
/// Assumes what [`bca_ratio_ci`] assumes.
pub fn bca_ratio_ci_from_means(
    base: &[f64],
    other: &[f64],
    base_means: &[f64],
    other_means: &[f64],
    confidence: f64,
) -> Option<(f64, f64)> {
    if base.len() < 2
        || other.len() < 2
        || base_means.len() != other_means.len()
        || base_means.is_empty()
        || base.iter().chain(other).any(|x| !x.is_finite())
    {
        return None;
    }
    let a_hat = ratio_acceleration(base, other)?;
    let mb = base.iter().sum::<f64>() / base.len() as f64;
    let mo = other.iter().sum::<f64>() / other.len() as f64;
    let positive = mb > 0.0;
    let mut theta_b = Vec::with_capacity(base_means.len());
    for (b, o) in base_means.iter().zip(other_means) {
        if *b == 0.0 || (*b > 0.0) != positive || !b.is_finite() || !o.is_finite() {
            return None;
        }
        theta_b.push(o / b);
    }
    bca_interval(&mut theta_b, mo / mb, a_hat, confidence)
}

/// BCa bootstrap CI of mean(other) / mean(base) with `resamples` resamples
/// from `seed` (streams 0 and 1, as the percentile CI uses). None when a
/// side has fewer than 2 values or a non-finite one, the base mean is 0 or
/// a resampled base mean crosses 0, or the acceleration is undefined.
///
/// What it assumes, and which of it is checked:
///
/// * Independent, identically distributed runs on each side, the sides
///   independent. Not checked.
/// * A monotone transform of the ratio that makes its distribution normal
///   with a bias and a variance linear in the parameter (Efron's BCa model);
///   z0 and a estimate that transform's bias and skew. Not checked: BCa
///   corrects for skew a percentile CI ignores, but like it stays too narrow
///   at small n (`sysdelta calibrate` measures its coverage).
/// * A base mean away from 0: checked (None).
pub fn bca_ratio_ci(
    base: &[f64],
    other: &[f64],
    resamples: usize,
    confidence: f64,
    seed: u64,
) -> Option<(f64, f64)> {
    if base.len() < 2 || other.len() < 2 {
        return None;
    }
    let bm = resample_means(base, resamples, stream_seed(seed, 0));
    let om = resample_means(other, resamples, stream_seed(seed, 1));
    bca_ratio_ci_from_means(base, other, &bm, &om, confidence)
}
