//! Per-cell descriptive statistics.

use serde::Serialize;

/// Descriptive statistics of one cell's samples.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation (n - 1 denominator); None when n < 2.
    pub stddev: Option<f64>,
    /// Coefficient of variation, stddev / |mean|; None when undefined.
    pub cov: Option<f64>,
    /// Mean with the single highest and lowest sample dropped (the 2007
    /// blktrace study's "dropped hi/lo"); None when n < 3.
    pub trimmed_mean: Option<f64>,
}

/// Summarize samples; None when there are none or any is not finite.
///
/// The standard deviation uses the two-pass formula (sum of squared
/// deviations from the mean, divided by n - 1), which does not lose
/// precision when the mean is large relative to the spread, as timings are.
/// The median of an even count is the mean of the two middle values
/// (numpy.median). CoV is None when the mean is 0.
///
/// Descriptive: assumes nothing about the distribution. The standard
/// deviation and CoV describe spread usefully only for a roughly unimodal
/// sample (the report warns on bimodality and outliers).
pub fn summarize(xs: &[f64]) -> Option<Summary> {
    if xs.is_empty() || xs.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let n = xs.len();
    let sum: f64 = xs.iter().sum();
    let mean = sum / n as f64;
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let min = sorted[0];
    let max = sorted[n - 1];
    let median = median_of_sorted(&sorted);
    let stddev = if n >= 2 {
        let ss: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
        Some((ss / (n - 1) as f64).sqrt())
    } else {
        None
    };
    let cov = match stddev {
        Some(s) if mean != 0.0 => Some(s / mean.abs()),
        _ => None,
    };
    let trimmed_mean = if n >= 3 {
        let inner: f64 = sorted[1..n - 1].iter().sum();
        Some(inner / (n - 2) as f64)
    } else {
        None
    };
    Some(Summary {
        n,
        mean,
        median,
        min,
        max,
        stddev,
        cov,
        trimmed_mean,
    })
}

/// Median of an already sorted, non-empty slice (mean of the two middle
/// values when the length is even).
pub fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// Median of finite values; None when empty or any value is not finite.
///
/// Descriptive: assumes nothing about the distribution.
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || xs.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(median_of_sorted(&sorted))
}
