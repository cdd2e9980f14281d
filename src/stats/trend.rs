//! Time trend within one cell: Mann-Kendall test and Theil-Sen slope.
//!
//! Both take the samples in the order they were taken. They answer "did
//! this config drift while the experiment ran?" (thermal throttling, a
//! filling disk, page-cache warm-up), and give the slope of a throughput
//! series. Both are O(n^2) in time; Theil-Sen also in memory (all pairwise
//! slopes), which is fine for the few thousand points of a cell.

use crate::stats::special::{normal_quantile, normal_sf};
use crate::stats::summary::median_of_sorted;
use serde::Serialize;

/// Result of the Mann-Kendall trend test.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MannKendall {
    /// S = sum over i < j of sign(x_j - x_i).
    pub s: f64,
    /// Variance of S under no trend, tie-corrected.
    pub var_s: f64,
    /// Continuity-corrected z: (S - sign(S)) / sqrt(var_s).
    pub z: f64,
    /// Two-sided p-value, 2 (1 - Phi(|z|)).
    pub p: f64,
}

/// Mann-Kendall test for a monotonic trend in `xs` (time order), two-sided,
/// normal approximation with the tie correction
/// var(S) = (n(n-1)(2n+5) - sum_t t(t-1)(2t+5)) / 18 over tie groups t and
/// a continuity correction of 1 (Kendall 1975; as pymannkendall's
/// `original_test`). None for n < 3 or non-finite values. All-equal values
/// give p = 1.
pub fn mann_kendall(xs: &[f64]) -> Option<MannKendall> {
    let n = xs.len();
    if n < 3 || xs.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let mut s = 0i64;
    for i in 0..n {
        for j in i + 1..n {
            s += match xs[j].partial_cmp(&xs[i]).unwrap() {
                std::cmp::Ordering::Greater => 1,
                std::cmp::Ordering::Less => -1,
                std::cmp::Ordering::Equal => 0,
            };
        }
    }
    let nf = n as f64;
    let tie_term: f64 = tie_sizes(xs)
        .iter()
        .map(|&t| {
            let t = t as f64;
            t * (t - 1.0) * (2.0 * t + 5.0)
        })
        .sum();
    let var_s = (nf * (nf - 1.0) * (2.0 * nf + 5.0) - tie_term) / 18.0;
    let s = s as f64;
    let z = if s > 0.0 && var_s > 0.0 {
        (s - 1.0) / var_s.sqrt()
    } else if s < 0.0 && var_s > 0.0 {
        (s + 1.0) / var_s.sqrt()
    } else {
        0.0
    };
    Some(MannKendall {
        s,
        var_s,
        z,
        p: (2.0 * normal_sf(z.abs())).min(1.0),
    })
}

/// Sizes of the groups of equal values that have more than one member.
fn tie_sizes(xs: &[f64]) -> Vec<usize> {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mut out = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i + 1;
        while j < v.len() && v[j] == v[i] {
            j += 1;
        }
        if j - i > 1 {
            out.push(j - i);
        }
        i = j;
    }
    out
}

/// Theil-Sen slope with Sen's CI.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TheilSen {
    pub slope: f64,
    /// median(y) - slope * median(x).
    pub intercept: f64,
    pub lo: f64,
    pub hi: f64,
}

/// Theil-Sen estimate of the slope of `y` against `x`: the median of the
/// slopes (y_j - y_i) / (x_j - x_i) over pairs with x_j > x_i, with the CI
/// of Sen (1968, eq. 2.6) — exactly `scipy.stats.theilslopes(y, x,
/// alpha=confidence)` ('separate' intercept): with N slopes sorted,
/// sigma^2 = (n(n-1)(2n+5) - sum over x ties - sum over y ties of
/// t(t-1)(2t+5)) / 18 and z = Phi^-1((1 - confidence) / 2), the bounds are
/// the slopes at 0-based ranks max(round((N + z sigma)/2) - 1, 0) and
/// min(round((N - z sigma)/2), N - 1), rounding half to even as numpy does.
/// None when lengths differ, n < 2, a value is not finite, or all x are
/// equal.
pub fn theil_sen(y: &[f64], x: &[f64], confidence: f64) -> Option<TheilSen> {
    let n = y.len();
    if n < 2
        || x.len() != n
        || y.iter().chain(x).any(|v| !v.is_finite())
        || !(confidence > 0.0 && confidence < 1.0)
    {
        return None;
    }
    let mut slopes = Vec::with_capacity(n * (n - 1) / 2);
    for i in 0..n {
        for j in 0..n {
            let dx = x[i] - x[j];
            if dx > 0.0 {
                slopes.push((y[i] - y[j]) / dx);
            }
        }
    }
    if slopes.is_empty() {
        return None;
    }
    slopes.sort_by(f64::total_cmp);
    let slope = median_of_sorted(&slopes);
    let mut xs = x.to_vec();
    xs.sort_by(f64::total_cmp);
    let mut ys = y.to_vec();
    ys.sort_by(f64::total_cmp);
    let intercept = median_of_sorted(&ys) - slope * median_of_sorted(&xs);
    let alpha = 1.0 - confidence;
    let z = normal_quantile(alpha / 2.0);
    let nf = n as f64;
    let ties = |v: &[f64]| -> f64 {
        tie_sizes(v)
            .iter()
            .map(|&t| {
                let t = t as f64;
                t * (t - 1.0) * (2.0 * t + 5.0)
            })
            .sum()
    };
    let sigsq = (nf * (nf - 1.0) * (2.0 * nf + 5.0) - ties(x) - ties(y)) / 18.0;
    let sigma = sigsq.sqrt();
    let nt = slopes.len() as f64;
    let ru = (((nt - z * sigma) / 2.0).round_ties_even() as i64).min(slopes.len() as i64 - 1);
    let rl = ((((nt + z * sigma) / 2.0).round_ties_even() as i64) - 1).max(0);
    Some(TheilSen {
        slope,
        intercept,
        lo: slopes[rl as usize],
        hi: slopes[ru.max(0) as usize],
    })
}
