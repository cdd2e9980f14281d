//! Theil-Sen slope estimator with Sen's (1968) confidence interval.
//!
//! Matches `scipy.stats.theilslopes(y, x, alpha)`: the slope is the median of
//! all pairwise slopes (y_j - y_i) / (x_j - x_i) over pairs with x_j > x_i;
//! the interval takes order statistics of the sorted slopes at ranks derived
//! from the Kendall-S variance with tie corrections (Sen 1968, eq. 2.6), with
//! NumPy's round-half-to-even.

use statrs::distribution::{ContinuousCDF, Normal};

/// Result of [`theil_sen`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TheilSen {
    /// Median pairwise slope, in units of y per unit of x.
    pub slope: f64,
    /// median(y) - slope * median(x), as scipy's default `method="separate"`.
    pub intercept: f64,
    /// Lower and upper bound of the slope's confidence interval.
    pub low: f64,
    pub high: f64,
}

/// Median of a slice (sorted copy); None when empty.
pub(crate) fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Sizes of groups of equal values (only groups of 2 or more matter).
pub(crate) fn tie_groups(xs: &[f64]) -> Vec<usize> {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
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

/// Theil-Sen fit of `y` against `x` with a `confidence` (e.g. 0.95) interval.
/// None when fewer than two distinct x values or any value is not finite.
///
/// What it assumes, and which of it is checked:
///
/// * A linear trend with independent errors of one distribution (not
///   necessarily normal); the slope is robust to up to 29% outliers. Not
///   checked: serial correlation makes the interval too narrow.
/// * Sen's interval uses the Kendall-S variance (normal approximation, tie
///   corrected), accurate from about 10 points.
pub fn theil_sen(x: &[f64], y: &[f64], confidence: f64) -> Option<TheilSen> {
    if x.len() != y.len() || x.len() < 2 || x.iter().chain(y).any(|v| !v.is_finite()) {
        return None;
    }
    let n = x.len();
    let mut slopes = Vec::with_capacity(n * (n - 1) / 2);
    for i in 0..n {
        for j in 0..n {
            let dx = x[j] - x[i];
            if dx > 0.0 {
                slopes.push((y[j] - y[i]) / dx);
            }
        }
    }
    if slopes.is_empty() {
        return None;
    }
    slopes.sort_by(f64::total_cmp);
    let slope = median(&slopes)?;
    let intercept = median(y)? - slope * median(x)?;

    let alpha = if confidence > 0.5 {
        1.0 - confidence
    } else {
        confidence
    };
    let z = Normal::standard().inverse_cdf(alpha / 2.0); // negative
    let term = |k: usize| {
        let k = k as f64;
        k * (k - 1.0) * (2.0 * k + 5.0)
    };
    let sigsq = (term(n)
        - tie_groups(x).into_iter().map(term).sum::<f64>()
        - tie_groups(y).into_iter().map(term).sum::<f64>())
        / 18.0;
    let nt = slopes.len() as f64;
    let sigma = sigsq.max(0.0).sqrt();
    let last = slopes.len() as i64 - 1;
    let ru = (((nt - z * sigma) / 2.0).round_ties_even() as i64).min(last);
    let rl = ((((nt + z * sigma) / 2.0).round_ties_even() as i64) - 1).max(0);
    let (low, high) = (
        slopes[rl.clamp(0, last) as usize],
        slopes[ru.clamp(0, last) as usize],
    );
    Some(TheilSen {
        slope,
        intercept,
        low,
        high,
    })
}
