//! Warning detectors: conditions under which a cell's numbers should not be
//! taken at face value. Each is a pure function the report turns into a
//! one-line warning.

use crate::stats::mannwhitney::mann_whitney_u;
use crate::stats::summary::median;

/// The smallest two-sided Mann-Whitney p-value this implementation can
/// return for samples of sizes n1 and n2: the p of two completely
/// separated samples (exact 2 / C(n1 + n2, n1) where the test uses the
/// exact method, e.g. up to 50 a side; the normal approximation's
/// otherwise). None if a size is 0.
///
/// Assumes no ties: with ties the normal approximation gives a different (not
/// always larger) minimum. Only the sizes are used.
pub fn min_achievable_p(n1: usize, n2: usize) -> Option<f64> {
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let a: Vec<f64> = (0..n1).map(|i| i as f64).collect();
    let b: Vec<f64> = (0..n2).map(|i| (n1 + i) as f64).collect();
    mann_whitney_u(&a, &b).map(|r| r.p)
}

/// True when the test can never reject: even complete separation gives a
/// p-value above `alpha` after the Holm correction over `family_size`
/// tests (whose strictest step multiplies the smallest p by the family
/// size). E.g. 3 vs 3 runs: min p = 0.1 > 0.05 even alone.
///
/// Assumes the tie-free minimum of [`min_achievable_p`] and Holm's
/// strictest step; with ties, or under BH (whose strictest step is the same
/// but whose later ones are milder), the true bound differs a little.
/// Nothing about the data is used, only the sizes.
pub fn too_few_runs(n1: usize, n2: usize, alpha: f64, family_size: usize) -> bool {
    match min_achievable_p(n1, n2) {
        Some(p) => (p * family_size.max(1) as f64).min(1.0) > alpha,
        None => true,
    }
}

/// Sarle's bimodality coefficient (g^2 + 1) / (k + 3 (n-1)^2 / ((n-2)(n-3)))
/// with g the bias-corrected sample skewness and k the bias-corrected
/// excess kurtosis (scipy.stats.skew / kurtosis with bias=False). A uniform
/// distribution gives 5/9; larger values suggest two modes. None for n < 4,
/// non-finite values or zero variance.
///
/// Assumes independent values; a heuristic with no test behind it: heavy
/// skew alone (e.g. log-normal with a large CoV) also raises it above 5/9,
/// so a warning says "look", not "two modes".
pub fn bimodality_coefficient(xs: &[f64]) -> Option<f64> {
    let n = xs.len();
    if n < 4 || xs.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let nf = n as f64;
    let mean = xs.iter().sum::<f64>() / nf;
    let (mut m2, mut m3, mut m4) = (0.0, 0.0, 0.0);
    for x in xs {
        let d = x - mean;
        m2 += d * d;
        m3 += d * d * d;
        m4 += d * d * d * d;
    }
    m2 /= nf;
    m3 /= nf;
    m4 /= nf;
    if m2 == 0.0 {
        return None;
    }
    let g1 = m3 / m2.powf(1.5);
    let skew = g1 * (nf * (nf - 1.0)).sqrt() / (nf - 2.0);
    let g2 = m4 / (m2 * m2) - 3.0;
    let kurt = ((nf + 1.0) * g2 + 6.0) * (nf - 1.0) / ((nf - 2.0) * (nf - 3.0));
    Some((skew * skew + 1.0) / (kurt + 3.0 * (nf - 1.0) * (nf - 1.0) / ((nf - 2.0) * (nf - 3.0))))
}

/// Bimodality warning: n >= 10 and bimodality coefficient > 5/9 (0.555).
///
/// Assumes what [`bimodality_coefficient`] assumes; the n >= 10 floor keeps
/// its sampling noise (large at small n) from raising warnings.
pub fn looks_bimodal(xs: &[f64]) -> bool {
    xs.len() >= 10 && bimodality_coefficient(xs).is_some_and(|b| b > 5.0 / 9.0)
}

/// Indices of outliers by the median absolute deviation rule
/// |x - median| > 3.5 * 1.4826 * MAD (Iglewicz & Hoaglin's modified
/// z-score above 3.5, 1.4826 scaling MAD to a normal sigma). When MAD is 0
/// (more than half the values equal) the rule has no scale and nothing is
/// flagged. Empty for empty or non-finite input.
///
/// Assumes the bulk of the values is roughly normal (the 1.4826 factor and
/// the 3.5 cut-off are calibrated for it); in a skewed sample the long side
/// gets flagged more often. Not checked.
pub fn mad_outliers(xs: &[f64]) -> Vec<usize> {
    let Some(med) = median(xs) else {
        return Vec::new();
    };
    let dev: Vec<f64> = xs.iter().map(|x| (x - med).abs()).collect();
    let mad = median(&dev).unwrap_or(0.0);
    if mad == 0.0 {
        return Vec::new();
    }
    let limit = 3.5 * 1.4826 * mad;
    (0..xs.len()).filter(|&i| dev[i] > limit).collect()
}
