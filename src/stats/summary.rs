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
pub fn summarize(_xs: &[f64]) -> Option<Summary> {
    todo!("stats helper")
}
