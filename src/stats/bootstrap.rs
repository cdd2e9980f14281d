//! Bootstrap confidence intervals.

/// Percentile bootstrap CI of mean(other) / mean(base).
pub fn ratio_of_means_ci(
    _base: &[f64],
    _other: &[f64],
    _resamples: usize,
    _confidence: f64,
    _seed: u64,
) -> Option<(f64, f64)> {
    todo!("stats helper")
}
