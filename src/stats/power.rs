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

/// Runs per config past which there is no plan to give (forty million:
/// no one runs a benchmark so often); the functions below answer None
/// beyond it.
pub const MOST_RUNS: f64 = 4e7;

/// Real-valued runs per config at which the t-test reaches `power`
/// (statsmodels `solve_power(nobs1=None)`), found by bisection to 1e-10.
/// None when `d` or `cov` is not positive or the inputs are out of range,
/// or when it is more than [`MOST_RUNS`].
///
/// Assumes what [`t_test_power`] assumes, and that `cov` (usually observed on
/// a few runs) is the true relative spread; its own uncertainty is not
/// carried into the answer.
pub fn runs_for_power_exact(d: f64, cov: f64, alpha: f64, power: f64) -> Option<f64> {
    if !(d > 0.0 && cov > 0.0 && power > alpha && power < 1.0 && alpha > 0.0 && alpha < 1.0) {
        return None;
    }
    // Far beyond MOST_RUNS there is no plan to give, and the search below
    // would evaluate t quantiles at billions of degrees of freedom: a
    // metric whose runs straddle zero (its CoV near infinite) once kept
    // `report --trim` busy for minutes. The known-variance formula drops
    // the far tail, so it can exceed the exact answer (by 1.9x at power
    // 0.06, alpha 0.05; by a few runs in ten million at power 0.8): above
    // twice MOST_RUNS by it the search is skipped; below, the search and
    // the check at its end decide.
    if !cov.is_finite() || runs_known_variance(d, cov, alpha, power)? as f64 > 2.0 * MOST_RUNS {
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
        if hi > MOST_RUNS {
            return None;
        }
        hi *= 2.0;
    }
    while hi - lo > 1e-10 * hi {
        let mid = 0.5 * (lo + hi);
        if f(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let n = 0.5 * (lo + hi);
    (n <= MOST_RUNS).then_some(n)
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
    Some(detectable_effect_size(n, alpha, power)? * cov)
}

/// The standardized effect size (shift / sd) at which the t-test with `n`
/// runs per config has `power`, by bisection to 1e-12. It depends on `n`,
/// `alpha` and `power` only, so it is remembered per thread: a report of
/// 100 benchmarks with 30 runs each solved the same equation 100 times
/// (13% of its time, in the incomplete beta function).
fn detectable_effect_size(n: usize, alpha: f64, power: f64) -> Option<f64> {
    use std::cell::RefCell;
    use std::collections::HashMap;
    thread_local! {
        static SOLVED: RefCell<HashMap<(usize, u64, u64), Option<f64>>> = RefCell::new(HashMap::new());
    }
    let key = (n, alpha.to_bits(), power.to_bits());
    if let Some(es) = SOLVED.with(|m| m.borrow().get(&key).copied()) {
        return es;
    }
    let nf = n as f64;
    let f = |es: f64| t_test_power(es, nf, alpha).unwrap() - power;
    let (mut lo, mut hi) = (0.0, 1.0);
    let mut es = None;
    let mut bounded = true;
    while f(hi) < 0.0 {
        hi *= 2.0;
        if hi > 1e6 {
            bounded = false;
            break;
        }
    }
    if bounded {
        while hi - lo > 1e-12 * hi {
            let mid = 0.5 * (lo + hi);
            if f(mid) < 0.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        es = Some(0.5 * (lo + hi));
    }
    SOLVED.with(|m| m.borrow_mut().insert(key, es));
    es
}

/// The test the report applies to a comparison (see
/// [`crate::stats::welch::boot_level_uses_welch`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportTest {
    /// The Mann-Whitney U test (runs; boots from 8 a side).
    Rank,
    /// Welch's t on boot means (fewer than 8 boots on a side).
    Welch,
}

/// Smallest two-sided p the exact U test can give with n values a side:
/// 2 / C(2n, n) (0.33 at 2, 0.1 at 3, 0.029 at 4, 0.0079 at 5).
pub fn u_test_smallest_p(n: usize) -> f64 {
    // C(2n, n) by the product formula, in f64 (exact far beyond any n here).
    let c = (1..=n).fold(1.0f64, |c, i| c * (n + i) as f64 / i as f64);
    (2.0 / c).min(1.0)
}

/// Fewest units a side at which `test` can reject at all at level `alpha`
/// (a p strictly below it): for the U test the smallest n with
/// [`u_test_smallest_p`] < alpha (4 at 0.05, 5 at 0.05 / 3, 7 at 0.05 / 50);
/// Welch's t can reject from 2 a side.
pub fn fewest_units_to_reject(test: ReportTest, alpha: f64) -> usize {
    match test {
        ReportTest::Welch => 2,
        ReportTest::Rank => (2..).find(|&n| u_test_smallest_p(n) < alpha).unwrap_or(2),
    }
}

/// Seed `plan-runs` simulates power with (`calibrate` checks its answers
/// with other draws).
pub const PLAN_SEED: u64 = 31;

/// Simulated experiments per power figure of [`simulated_power`]: its
/// Monte-Carlo standard error is 0.63 points at 80%.
pub const POWER_TRIALS: usize = 4000;

/// How far above the asked power the simulated one must be for
/// [`units_for_power`] to accept a size: one and a half Monte-Carlo
/// standard errors at 80%, so that the effect at which the plan steps down
/// to a smaller n is not one where its draws happened to be lucky (at 4 a
/// side the U test's exact power there was 78.8% when the plan said 80%).
pub const POWER_MARGIN: f64 = 0.01;

/// Whether the report's `test` reaches `power` (plus [`POWER_MARGIN`]) at
/// n a side for a shift of `es` standard deviations, by
/// [`simulated_power`]: the criterion [`units_for_power`] decides by.
pub fn planner_reaches(
    test: ReportTest,
    es: f64,
    n: usize,
    alpha: f64,
    power: f64,
    seed: u64,
) -> bool {
    simulated_power(test, es, n, alpha, seed) >= power + POWER_MARGIN
}

/// Power of the report's `test` at level `alpha` with n units a side, for
/// a shift of `es` standard deviations, by simulation of the test itself on
/// normal values (seeded: the same inputs give the same answer, and every n
/// uses the same draws, so power grows with n without Monte-Carlo wiggles
/// between neighbours). The U test's discreteness at small n, which the
/// normal approximation misses (it promised 80% at 3 a side, where the test
/// cannot reject at all), is in the figure.
///
/// Assumes normal units (boot means are averages of runs), independent,
/// with equal spread on both sides and a pure shift; for heavier tails the
/// U test has more power than this says.
pub fn simulated_power(test: ReportTest, es: f64, n: usize, alpha: f64, seed: u64) -> f64 {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use rayon::prelude::*;
    if n < 2 {
        return 0.0;
    }
    let hits: usize = (0..POWER_TRIALS as u64)
        .into_par_iter()
        .map(|t| {
            let mut rng = SmallRng::seed_from_u64(crate::stats::bootstrap::stream_seed(seed, t));
            let mut normal = || {
                let (u, v): (f64, f64) = (rng.random(), rng.random());
                (-2.0 * (1.0 - u).ln()).sqrt() * (std::f64::consts::TAU * v).cos()
            };
            let mut base = Vec::with_capacity(n);
            let mut other = Vec::with_capacity(n);
            for _ in 0..n {
                base.push(normal());
                other.push(normal() + es);
            }
            let p = match test {
                ReportTest::Rank => {
                    crate::stats::mannwhitney::mann_whitney_u(&other, &base).map(|r| r.p)
                }
                ReportTest::Welch => crate::stats::welch::welch_test(&base, &other).map(|w| w.p),
            };
            let up = other.iter().sum::<f64>() > base.iter().sum::<f64>();
            usize::from(p.is_some_and(|p| p < alpha) && up)
        })
        .sum();
    hits as f64 / POWER_TRIALS as f64
}

/// Up to this many units a side [`units_for_power`] simulates the test;
/// beyond, the normal-approximation formulas are within a unit of it.
pub const SIMULATE_UP_TO: usize = 40;

/// Units a side (runs, or boots) at which the report's `test` reaches
/// `power` for a relative shift `d` at CoV `cov` and level `alpha` (the
/// per-comparison level the correction leaves, see `plan-runs`). Never
/// fewer than [`fewest_units_to_reject`]. Up to [`SIMULATE_UP_TO`] the
/// power is [`simulated_power`] (bisection over n); beyond, the formula:
/// t-test runs ([`runs_for_power`]), times pi / 3 for the U test.
///
/// Assumes what [`simulated_power`] assumes, and that `cov` (observed on a
/// pilot) is the true spread; its uncertainty is not carried into the
/// answer.
pub fn units_for_power(
    test: ReportTest,
    d: f64,
    cov: f64,
    alpha: f64,
    power: f64,
    seed: u64,
) -> Option<usize> {
    let formula = match test {
        ReportTest::Rank => runs_for_power_u_test(d, cov, alpha, power)?,
        ReportTest::Welch => runs_for_power(d, cov, alpha, power)?,
    };
    let floor = fewest_units_to_reject(test, alpha);
    if formula > SIMULATE_UP_TO {
        return Some(formula.max(floor));
    }
    let es = d / cov;
    let ok = |n: usize| planner_reaches(test, es, n, alpha, power, seed);
    if ok(floor) {
        return Some(floor);
    }
    // Smallest n in (lo, hi] that reaches the power.
    let (mut lo, mut hi) = (floor, SIMULATE_UP_TO.max(floor + 1));
    if !ok(hi) {
        return Some(formula.max(hi + 1));
    }
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// Boots a side for `power`, with the test the report will apply at that
/// count: Welch's t on boot means while it needs fewer than
/// [`crate::stats::welch::BOOT_WELCH_BELOW`] boots, the U test (from that
/// count on) otherwise. See [`units_for_power`].
pub fn boots_for_power(d: f64, cov: f64, alpha: f64, power: f64, seed: u64) -> Option<usize> {
    let below = crate::stats::welch::BOOT_WELCH_BELOW;
    let welch = units_for_power(ReportTest::Welch, d, cov, alpha, power, seed)?;
    if welch < below {
        return Some(welch);
    }
    units_for_power(ReportTest::Rank, d, cov, alpha, power, seed).map(|n| n.max(below))
}
