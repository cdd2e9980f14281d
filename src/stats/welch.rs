//! Welch's t: the test of the boot level at few boots, and the interval of
//! the ratio of means at 2-4 units per side.
//!
//! Two jobs, one model (each side's values independent and roughly normal,
//! variances free to differ):
//!
//! * [`welch_test`]: two-sided p of mean(other) - mean(base) = 0 with the
//!   Welch-Satterthwaite degrees of freedom (`scipy.stats.ttest_ind(other,
//!   base, equal_var=False)`). The report uses it on boot means when a side
//!   has fewer than [`crate::stats::welch::BOOT_WELCH_BELOW`] boots: a
//!   boot's value is the mean of its runs, so it is close to normal even
//!   when runs are not, and the rank test cannot reject at all at 3 boots a
//!   side (smallest two-sided p 0.1) and hardly after a correction at 4-5.
//! * [`log_ratio_ci`]: the CI of mean(other) / mean(base) as exp(ln r +-
//!   t_q(df) sqrt(v_b + v_o)), v = s^2 / (n mean^2) the delta-method
//!   variance of a side's log mean, df by Welch-Satterthwaite from v_b and
//!   v_o. Unlike a percentile bootstrap it is not confined to the hull of
//!   the between-side ratios, which at n per side misses the truth with
//!   probability 2 / C(2n, n) (33% at 2, 10% at 3, 2.9% at 4).

use crate::stats::special::{t_cdf, t_quantile};

/// Below this many boots on a side (either side), the boot-level test is
/// [`welch_test`] on the boot means; from it on, the Mann-Whitney U test.
/// A rule by count fixed before any data is seen: at 8 boots a side the
/// rank test's smallest two-sided p is 2 / C(16, 8) = 1.6e-4, small
/// enough for a Holm correction over a few hundred comparisons, and it no
/// longer needs the boot means to be normal.
pub const BOOT_WELCH_BELOW: usize = 8;

/// Below this many units (runs, or boots) on a side, the report's CI of
/// the ratio of means is [`log_ratio_ci`] instead of the bootstrap: the
/// percentile bootstrap cannot reach 95% there (see the module doc).
pub const SMALL_CI_BELOW: usize = 5;

/// Welch's unequal-variance t-test of two independent samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Welch {
    /// (mean(other) - mean(base)) / sqrt(s_o^2 / n_o + s_b^2 / n_b).
    pub t: f64,
    /// Welch-Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

fn mean_var(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    (m, ss / (n - 1.0))
}

fn usable(xs: &[f64]) -> bool {
    xs.len() >= 2 && xs.iter().all(|x| x.is_finite())
}

/// Welch's t-test of mean(other) against mean(base), two-sided. None when a
/// side has fewer than 2 values or a non-finite one. When neither side
/// varies, p is 1 for equal means and 0 for different ones (the limit of
/// the test as the spread goes to 0).
///
/// Assumes independent values on each side, the two sides independent, and
/// each side's mean close to normal (exact for normal values; for boot
/// means, their runs' averaging helps). Not checked; `sysdelta calibrate`
/// measures its A/A rate and power at 3 to 10 boots.
pub fn welch_test(base: &[f64], other: &[f64]) -> Option<Welch> {
    if !usable(base) || !usable(other) {
        return None;
    }
    let (mb, vb) = mean_var(base);
    let (mo, vo) = mean_var(other);
    let (nb, no) = (base.len() as f64, other.len() as f64);
    let (sb, so) = (vb / nb, vo / no);
    let se2 = sb + so;
    if se2 == 0.0 {
        let p = if mo == mb { 1.0 } else { 0.0 };
        let t = if mo == mb {
            0.0
        } else {
            (mo - mb).signum() * f64::INFINITY
        };
        return Some(Welch {
            t,
            df: nb + no - 2.0,
            p,
        });
    }
    let t = (mo - mb) / se2.sqrt();
    let df = se2 * se2 / (sb * sb / (nb - 1.0) + so * so / (no - 1.0));
    let p = (2.0 * t_cdf(-t.abs(), df)).min(1.0);
    Some(Welch { t, df, p })
}

/// CI of mean(other) / mean(base) at `confidence` from Welch's t on the
/// log scale (see the module doc). None when a side has fewer than 2 values
/// or a non-finite one, a mean is 0, the means have opposite signs (no
/// positive ratio), or `confidence` is not in (0, 1). When neither side
/// varies the interval is the ratio itself.
///
/// Assumes what [`welch_test`] assumes, and that the log of a side's mean
/// is near linear over its spread (the delta method: CoV of the mean well
/// below 1). The t quantile on few degrees of freedom makes it wide at 2
/// per side (12.7 standard errors at 95% on 1 df), as two values per side
/// demand. Coverage at 2, 3, 4, 6 and 10 per side is measured by
/// `stats::calibrate::small_coverage` under four noise shapes.
pub fn log_ratio_ci(base: &[f64], other: &[f64], confidence: f64) -> Option<(f64, f64)> {
    if !(usable(base) && usable(other)) {
        return None;
    }
    let (mb, vb) = mean_var(base);
    let (mo, vo) = mean_var(other);
    log_ratio_ci_of(
        Moments {
            n: base.len() as f64,
            mean: mb,
            var: vb,
        },
        Moments {
            n: other.len() as f64,
            mean: mo,
            var: vo,
        },
        confidence,
    )
}

/// A side's count, mean and sample variance: all [`log_ratio_ci_of`]
/// reads of its values (a running state keeps them without the values).
#[derive(Clone, Copy, Debug)]
pub struct Moments {
    pub n: f64,
    pub mean: f64,
    pub var: f64,
}

/// [`log_ratio_ci`] from each side's moments (at least 2 finite values a
/// side, checked by the caller); the same conditions give None.
pub fn log_ratio_ci_of(base: Moments, other: Moments, confidence: f64) -> Option<(f64, f64)> {
    let (mb, mo) = (base.mean, other.mean);
    if !(confidence > 0.0 && confidence < 1.0) || mb == 0.0 || mo == 0.0 || (mb > 0.0) != (mo > 0.0)
    {
        return None;
    }
    let (nb, no) = (base.n, other.n);
    let (rb, ro) = (base.var / (nb * mb * mb), other.var / (no * mo * mo));
    let r = mo / mb;
    let v = rb + ro;
    if v == 0.0 {
        return Some((r, r));
    }
    let df = v * v / (rb * rb / (nb - 1.0) + ro * ro / (no - 1.0));
    let half = t_quantile((1.0 + confidence) / 2.0, df) * v.sqrt();
    let (lo, hi) = ((r.ln() - half).exp(), (r.ln() + half).exp());
    (lo.is_finite() && hi.is_finite()).then_some((lo, hi))
}

/// True when a comparison of these unit counts is tested with Welch's t on
/// boot means rather than the rank test: units are boots and either side
/// has fewer than [`BOOT_WELCH_BELOW`].
pub fn boot_level_uses_welch(by_boot: bool, n_base: usize, n_other: usize) -> bool {
    by_boot && n_base.min(n_other) < BOOT_WELCH_BELOW
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_sides_give_the_limit() {
        let w = welch_test(&[1.0, 1.0], &[1.0, 1.0]).unwrap();
        assert_eq!(w.p, 1.0);
        let w = welch_test(&[1.0, 1.0], &[2.0, 2.0]).unwrap();
        assert_eq!(w.p, 0.0);
        assert_eq!(
            log_ratio_ci(&[2.0, 2.0], &[3.0, 3.0], 0.95),
            Some((1.5, 1.5))
        );
    }

    #[test]
    fn refuses_what_has_no_ratio() {
        assert_eq!(log_ratio_ci(&[1.0], &[1.0, 2.0], 0.95), None);
        assert_eq!(log_ratio_ci(&[-1.0, 1.0], &[1.0, 2.0], 0.95), None);
        assert_eq!(log_ratio_ci(&[-1.0, -2.0], &[1.0, 2.0], 0.95), None);
        assert!(log_ratio_ci(&[-1.0, -2.0], &[-1.5, -2.5], 0.95).is_some());
        assert_eq!(welch_test(&[1.0, f64::NAN], &[1.0, 2.0]), None);
    }

    #[test]
    fn the_interval_contains_the_ratio_and_widens_with_confidence() {
        let (b, o) = ([10.0, 11.0], [12.0, 12.5]);
        let r = 12.25 / 10.5;
        let (l95, h95) = log_ratio_ci(&b, &o, 0.95).unwrap();
        let (l90, h90) = log_ratio_ci(&b, &o, 0.90).unwrap();
        assert!(l95 < l90 && l90 < r && r < h90 && h90 < h95);
        // Symmetric on the log scale.
        assert!(((r / l95).ln() - (h95 / r).ln()).abs() < 1e-12);
    }

    #[test]
    fn the_rule_is_by_count() {
        assert!(boot_level_uses_welch(true, 3, 10));
        assert!(boot_level_uses_welch(true, 7, 7));
        assert!(!boot_level_uses_welch(true, 8, 8));
        assert!(!boot_level_uses_welch(false, 3, 3));
    }
}
