//! Calibration at the edges (issue 31): what the report's statistics do
//! with 2 to 10 units a side, with few noisy boots, and with heavy right
//! tails. Pure, seeded simulations that `sysdelta calibrate` prints and
//! `tests/stats/edges.rs` checks at a modest size.
//!
//! * [`report_ratio_ci`]: the report's CI of the ratio of means with its
//!   rule by size (Welch's t on the log ratio below
//!   [`crate::stats::welch::SMALL_CI_BELOW`] a side, the expanded
//!   percentile bootstrap from there), and [`small_coverage`] its coverage.
//! * [`boot_level`]: the boot-level test (Welch's t on boot means below 8
//!   boots, the U test from 8) on runs nested in boots, with a given
//!   between-boot share of the variance: its A/A rate and power.
//! * [`heavy_tail_power`]: what requiring the mean and the Hodges-Lehmann
//!   shift to agree costs on Pareto-like data, against the U test alone
//!   (benchstat's rule).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use serde::Serialize;

use crate::stats::bootstrap::{expanded_confidence, ratio_of_means_ci, stream_seed};
use crate::stats::calibrate::{draw, verdict, Shape};
use crate::stats::mannwhitney::mann_whitney_u;
use crate::stats::welch::{boot_level_uses_welch, log_ratio_ci, welch_test, SMALL_CI_BELOW};

/// The report's CI of mean(other) / mean(base) at 95%: Welch's t on the log
/// ratio when a side has fewer than [`SMALL_CI_BELOW`] values, else the
/// percentile bootstrap read at [`expanded_confidence`].
pub fn report_ratio_ci(
    base: &[f64],
    other: &[f64],
    resamples: usize,
    seed: u64,
) -> Option<(f64, f64)> {
    if base.len().min(other.len()) < SMALL_CI_BELOW {
        log_ratio_ci(base, other, 0.95)
    } else {
        ratio_of_means_ci(
            base,
            other,
            resamples,
            expanded_confidence(base, other, 0.95),
            seed,
        )
    }
}

/// Coverage of a 95% CI at n a side: (the report's CI, the expanded
/// percentile bootstrap alone), as fractions of `trials` experiments whose
/// CI holds the true ratio 1 + `shift`; a CI not given counts as a miss.
///
/// Assumes i.i.d. values of `shape` (mean 100, CoV `cov`) on each side and
/// a pure multiplicative shift: the model the intervals are built for.
pub fn small_coverage(
    shape: Shape,
    n: usize,
    cov: f64,
    shift: f64,
    trials: usize,
    resamples: usize,
    seed: u64,
) -> (f64, f64) {
    let truth = 1.0 + shift;
    let inside =
        |ci: Option<(f64, f64)>| usize::from(ci.is_some_and(|(l, h)| l <= truth && truth <= h));
    let (report, boot): (usize, usize) = (0..trials as u64)
        .into_par_iter()
        .map(|t| {
            let s = stream_seed(seed, t);
            let mut rng = SmallRng::seed_from_u64(s);
            let base: Vec<f64> = (0..n).map(|_| draw(shape, cov, &mut rng)).collect();
            let other: Vec<f64> = (0..n).map(|_| truth * draw(shape, cov, &mut rng)).collect();
            let boot = ratio_of_means_ci(
                &base,
                &other,
                resamples,
                expanded_confidence(&base, &other, 0.95),
                s,
            );
            (
                inside(report_ratio_ci(&base, &other, resamples, s)),
                inside(boot),
            )
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    (report as f64 / trials as f64, boot as f64 / trials as f64)
}

/// One cell of the boot-level table.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BootLevel {
    pub boots: usize,
    pub between_share: f64,
    /// Whether the report's rule tests these boots with Welch's t.
    pub welch: bool,
    /// Fraction of A/A experiments the report's boot-level test flags (p <
    /// alpha and the mean moving the flagged way: any flag counts).
    pub aa_rate: f64,
    /// Fraction of shifted experiments it flags in the shift's direction.
    pub power: f64,
    /// The same power for the U test at these boots (what the report used
    /// before; 0 at 3 boots, where it cannot reject).
    pub rank_power: f64,
}

fn std_normal(rng: &mut SmallRng) -> f64 {
    let (u, v): (f64, f64) = (rng.random(), rng.random());
    (-2.0 * (1.0 - u).ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// One side of a nested experiment: `boots` boots of `runs` runs, each run
/// 100 (1 + cov (b + w)) with b ~ N(0, share) per boot and w ~ N(0, 1 -
/// share) per run (so a run's CoV is `cov`), times `scale`; the boot means.
fn boot_means(
    boots: usize,
    runs: usize,
    share: f64,
    cov: f64,
    scale: f64,
    rng: &mut SmallRng,
) -> Vec<f64> {
    (0..boots)
        .map(|_| {
            let b = share.sqrt() * std_normal(rng);
            let sum: f64 = (0..runs)
                .map(|_| 100.0 * (1.0 + cov * (b + (1.0 - share).sqrt() * std_normal(rng))))
                .sum();
            scale * sum / runs as f64
        })
        .collect()
}

/// The report's boot-level test on boot means at `alpha`: Some(+1) or
/// Some(-1) for a flag up or down, None for no flag. `rank` forces the U
/// test (with the Hodges-Lehmann agreement the verdict asks of it).
fn boot_flag(base: &[f64], other: &[f64], alpha: f64, rank: bool) -> Option<i8> {
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
    let dir = if mean(other) > mean(base) { 1 } else { -1 };
    if !rank && boot_level_uses_welch(true, base.len(), other.len()) {
        let w = welch_test(base, other)?;
        return (w.p < alpha).then_some(dir);
    }
    let p = mann_whitney_u(other, base)?.p;
    let hl = crate::stats::hodges_lehmann::hodges_lehmann(base, other, 0.95)?.shift;
    (p < alpha && (hl > 0.0) == (dir > 0)).then_some(dir)
}

/// A/A rate and power of the boot-level test at `boots` boots a side of
/// `runs` runs, between-boot share `share` of a run's variance (run CoV
/// 1%), for a true shift of `shift` (0.01 = 1%), at `alpha`, over `trials`
/// experiments each.
///
/// Assumes normal boot effects and run noise, boots independent, the same
/// components on both sides: the model under which Welch's t on boot means
/// is near exact (a boot mean is normal with variance sigma_b^2 +
/// sigma_w^2 / m). Skewed boot effects would make its small-sample rate
/// drift from alpha; the U test from 8 boots does not need them normal.
pub fn boot_level(
    boots: usize,
    runs: usize,
    share: f64,
    shift: f64,
    alpha: f64,
    trials: usize,
    seed: u64,
) -> BootLevel {
    const COV: f64 = 0.01;
    let (aa, hit, rank_hit): (usize, usize, usize) = (0..trials as u64)
        .into_par_iter()
        .map(|t| {
            let mut rng = SmallRng::seed_from_u64(stream_seed(seed, t));
            let b = boot_means(boots, runs, share, COV, 1.0, &mut rng);
            let o = boot_means(boots, runs, share, COV, 1.0, &mut rng);
            let aa = usize::from(boot_flag(&b, &o, alpha, false).is_some());
            let b = boot_means(boots, runs, share, COV, 1.0, &mut rng);
            let o = boot_means(boots, runs, share, COV, 1.0 + shift, &mut rng);
            let hit = usize::from(boot_flag(&b, &o, alpha, false) == Some(1));
            let rank_hit = usize::from(boot_flag(&b, &o, alpha, true) == Some(1));
            (aa, hit, rank_hit)
        })
        .reduce(|| (0, 0, 0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2));
    let f = |k: usize| k as f64 / trials as f64;
    BootLevel {
        boots,
        between_share: share,
        welch: boot_level_uses_welch(true, boots, boots),
        aa_rate: f(aa),
        power: f(hit),
        rank_power: f(rank_hit),
    }
}

/// One Pareto-like value with mean 100: 100 (X / E[X]) for X Pareto with
/// tail index `tail` (> 1; finite variance above 2) and minimum 1, X =
/// U^(-1 / tail). Right-skewed, as latencies with rare long waits are.
pub fn pareto(tail: f64, rng: &mut SmallRng) -> f64 {
    let u: f64 = rng.random();
    let x = (1.0 - u).powf(-1.0 / tail);
    100.0 * x * (tail - 1.0) / tail
}

/// Power on Pareto-like data (tail index `tail`), n a side, true shift
/// `shift` (a multiplicative one: every value times 1 + shift): (the
/// report's verdict, the U test alone at p < 0.05 in the right direction of
/// the Hodges-Lehmann shift, as benchstat decides). The difference is the
/// cost of also asking the mean to move the same way: on heavy right tails
/// a few large values pull the mean against the bulk.
pub fn heavy_tail_power(tail: f64, n: usize, shift: f64, trials: usize, seed: u64) -> (f64, f64) {
    let (v, u): (usize, usize) = (0..trials as u64)
        .into_par_iter()
        .map(|t| {
            let mut rng = SmallRng::seed_from_u64(stream_seed(seed, t));
            let base: Vec<f64> = (0..n).map(|_| pareto(tail, &mut rng)).collect();
            let other: Vec<f64> = (0..n)
                .map(|_| (1.0 + shift) * pareto(tail, &mut rng))
                .collect();
            let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
            let up_mean = mean(&other) > mean(&base);
            let v = usize::from(verdict(&base, &other, 0, 0) && up_mean);
            let u = mann_whitney_u(&other, &base).is_some_and(|r| r.p < 0.05)
                && crate::stats::hodges_lehmann::hodges_lehmann(&base, &other, 0.95)
                    .is_some_and(|h| h.shift > 0.0);
            (v, usize::from(u))
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    (v as f64 / trials as f64, u as f64 / trials as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pareto_values_have_mean_100() {
        let mut rng = SmallRng::seed_from_u64(5);
        let n = 400_000;
        let m: f64 = (0..n).map(|_| pareto(3.0, &mut rng)).sum::<f64>() / n as f64;
        assert!((m - 100.0).abs() < 1.0, "mean {m}");
    }

    #[test]
    fn the_report_ci_switches_by_size() {
        let b = [10.0, 11.0, 10.5, 10.2];
        let o = [12.0, 12.5, 12.2, 11.9];
        assert_eq!(report_ratio_ci(&b, &o, 1000, 1), log_ratio_ci(&b, &o, 0.95));
        let b5 = [10.0, 11.0, 10.5, 10.2, 10.4];
        let o5 = [12.0, 12.5, 12.2, 11.9, 12.1];
        assert_ne!(
            report_ratio_ci(&b5, &o5, 1000, 1),
            log_ratio_ci(&b5, &o5, 0.95)
        );
    }
}
