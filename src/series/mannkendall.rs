//! Mann-Kendall trend test (two-sided, normal approximation).
//!
//! Matches `pymannkendall.original_test`: S = sum over i < j of sign(x_j - x_i);
//! Var(S) = [n(n-1)(2n+5) - sum_t t(t-1)(2t+5)] / 18 over groups t of tied
//! values; Z = (S - 1)/sqrt(Var) for S > 0, (S + 1)/sqrt(Var) for S < 0, else
//! 0 (continuity correction); p = 2 (1 - Phi(|Z|)). Kendall's tau-a = S / (n(n-1)/2).

use statrs::distribution::{ContinuousCDF, Normal};

use super::theilsen::tie_groups;

/// Result of [`mann_kendall`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MannKendall {
    pub s: f64,
    pub var_s: f64,
    pub z: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// Kendall's tau-a of the series against time.
    pub tau: f64,
}

/// Mann-Kendall test of a series in time order; None for fewer than 3
/// values or non-finite values.
///
/// What it assumes, and which of it is checked:
///
/// * Values are serially independent under H0. Not checked: positive
///   autocorrelation (e.g. a sampler's smoothing) makes the test reject too
///   often; no pre-whitening is done.
/// * A continuous distribution; ties are handled by the variance correction
///   above. The normal approximation needs about 10 values to be accurate.
pub fn mann_kendall(xs: &[f64]) -> Option<MannKendall> {
    let n = xs.len();
    if n < 3 || xs.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mut s = 0i64;
    for i in 0..n {
        for j in i + 1..n {
            s += match xs[j].partial_cmp(&xs[i]) {
                Some(std::cmp::Ordering::Greater) => 1,
                Some(std::cmp::Ordering::Less) => -1,
                _ => 0,
            };
        }
    }
    let term = |k: usize| {
        let k = k as f64;
        k * (k - 1.0) * (2.0 * k + 5.0)
    };
    let var_s = (term(n) - tie_groups(xs).into_iter().map(term).sum::<f64>()) / 18.0;
    let s = s as f64;
    let z = if var_s <= 0.0 {
        0.0
    } else if s > 0.0 {
        (s - 1.0) / var_s.sqrt()
    } else if s < 0.0 {
        (s + 1.0) / var_s.sqrt()
    } else {
        0.0
    };
    let p = 2.0 * (1.0 - Normal::standard().cdf(z.abs()));
    let tau = s / (n as f64 * (n as f64 - 1.0) / 2.0);
    Some(MannKendall {
        s,
        var_s,
        z,
        p,
        tau,
    })
}
