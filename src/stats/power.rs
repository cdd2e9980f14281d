//! Power and sample size for comparing two configs' means.
//!
//! Method: the two-sided two-sample t-test with equal group sizes n and a
//! common relative spread. A relative shift `d` (0.01 = 1%) measured with
//! coefficient of variation `cov` is the standardized effect size
//! es = d / cov. With df = 2n - 2, noncentrality nc = es * sqrt(n / 2) and
//! c = t_{1 - alpha/2, df}, the power is
//! P(T' > c) + P(T' < -c), T' noncentral t(df, nc) — exactly
//! statsmodels' `TTestIndPower().power(es, n, alpha, ratio=1)`.
//!
//! The Mann-Whitney U test the report uses has asymptotic relative
//! efficiency 3/pi = 0.955 against the t-test for normal data (and is more
//! efficient for heavy tails), so it needs about pi/3 = 1.047 times the
//! runs the t-test does: [`runs_for_power_u_test`].

use crate::stats::special::{nct_cdf, normal_quantile, t_quantile};

/// Power of the two-sided two-sample t-test at level `alpha` with `n` runs
/// per config, for standardized effect size `es` (shift / sd). None for
/// n < 2 or non-positive alpha/effect inputs that make it undefined.
///
/// Assumes normal runs, independent, with equal variances in both configs
/// (the pooled t-test's model). Not checked; for the rank test the report
/// uses see [`runs_for_power_u_test`].
pub fn t_test_power(es: f64, n: f64, alpha: f64) -> Option<f64> {
    if n < 2.0 || !(alpha > 0.0 && alpha < 1.0) || !es.is_finite() {
        return None;
    }
    let df = 2.0 * n - 2.0;
    let nc = es * (n / 2.0).sqrt();
    let crit = t_quantile(1.0 - alpha / 2.0, df);
    Some((1.0 - nct_cdf(crit, df, nc)) + nct_cdf(-crit, df, nc))
}

/// Real-valued runs per config at which the t-test reaches `power`
/// (statsmodels `solve_power(nobs1=None)`), found by bisection to 1e-10.
/// None when `d` or `cov` is not positive or the inputs are out of range.
///
/// Assumes what [`t_test_power`] assumes, and that `cov` (usually observed on
/// a few runs) is the true relative spread; its own uncertainty is not
/// carried into the answer.
pub fn runs_for_power_exact(d: f64, cov: f64, alpha: f64, power: f64) -> Option<f64> {
    if !(d > 0.0 && cov > 0.0 && power > alpha && power < 1.0 && alpha > 0.0 && alpha < 1.0) {
        return None;
    }
    let es = d / cov;
    let f = |n: f64| t_test_power(es, n, alpha).unwrap() - power;
    let mut lo = 2.0;
    if f(lo) >= 0.0 {
        return Some(lo);
    }
    let mut hi = 4.0;
    while f(hi) < 0.0 {
        hi *= 2.0;
        if hi > 1e12 {
            return None;
        }
    }
    while hi - lo > 1e-10 * hi {
        let mid = 0.5 * (lo + hi);
        if f(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(0.5 * (lo + hi))
}

/// Whole runs per config the t-test needs for `power` (the ceiling of
/// [`runs_for_power_exact`]).
pub fn runs_for_power(d: f64, cov: f64, alpha: f64, power: f64) -> Option<usize> {
    runs_for_power_exact(d, cov, alpha, power).map(|n| (n - 1e-9).ceil() as usize)
}

/// Runs per config for the Mann-Whitney U test: the t-test runs scaled by
/// pi / 3 (its efficiency for normal data), rounded up.
///
/// Assumes normal data (where the efficiency is 3/pi) and a pure shift;
/// for heavier tails the U test needs fewer runs, so the answer is then
/// conservative. Not checked.
pub fn runs_for_power_u_test(d: f64, cov: f64, alpha: f64, power: f64) -> Option<usize> {
    runs_for_power_exact(d, cov, alpha, power)
        .map(|n| (n * std::f64::consts::PI / 3.0 - 1e-9).ceil() as usize)
}

/// Known-variance (z-test) runs per config:
/// n = 2 (z_{1-alpha/2} + z_power)^2 (cov / d)^2, rounded up. The
/// theoretical minimum: any test that estimates the variance needs more.
///
/// Assumes normal runs with a known, common `cov`: a lower bound, not a plan.
pub fn runs_known_variance(d: f64, cov: f64, alpha: f64, power: f64) -> Option<usize> {
    if !(d > 0.0 && cov > 0.0 && power > 0.0 && power < 1.0 && alpha > 0.0 && alpha < 1.0) {
        return None;
    }
    let z = normal_quantile(1.0 - alpha / 2.0) + normal_quantile(power);
    let n = 2.0 * z * z * (cov / d) * (cov / d);
    Some((n - 1e-9).ceil().max(1.0) as usize)
}

/// Minimum detectable relative shift with `n` runs per config: the d at
/// which the t-test has `power` (statsmodels `solve_power(effect_size=None)`
/// times `cov`). None for n < 2 or out-of-range inputs.
///
/// Assumes what [`t_test_power`] assumes, with `cov` taken as the true
/// relative spread.
pub fn minimum_detectable_effect(n: usize, cov: f64, alpha: f64, power: f64) -> Option<f64> {
    if n < 2 || !(cov > 0.0 && power > alpha && power < 1.0 && alpha > 0.0 && alpha < 1.0) {
        return None;
    }
    let n = n as f64;
    let f = |es: f64| t_test_power(es, n, alpha).unwrap() - power;
    let (mut lo, mut hi) = (0.0, 1.0);
    while f(hi) < 0.0 {
        hi *= 2.0;
        if hi > 1e6 {
            return None;
        }
    }
    while hi - lo > 1e-12 * hi {
        let mid = 0.5 * (lo + hi);
        if f(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(0.5 * (lo + hi) * cov)
}
