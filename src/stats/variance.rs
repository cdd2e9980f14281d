//! Variance components of runs grouped by boot.
//!
//! A kernel config's runs come in boots: a VM booted for the config runs
//! several runs of each workload, then goes away. Runs of one boot share
//! its page placement, ASLR, IRQ and cache layout, so they are not
//! independent replicates of the config (per-boot medians of one
//! benchmark ranged from 24 µs to 7.5 ms at 2 vCPUs, docs/kernels.md A.9).
//! How the spread of runs splits into a between-boot and a within-boot
//! part says how far the boots differ, and how to spend more time: on
//! more boots, or on more runs per boot (`sysdelta plan-runs`).

use serde::Serialize;

use crate::stats::special::f_sf;
use crate::stats::summary::median;

/// The one-way random-effects ANOVA of values in groups (runs in boots).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VarianceComponents {
    /// Groups (boots), k.
    pub groups: usize,
    /// Values (runs), N.
    pub n: usize,
    /// n0 = (N - sum n_i^2 / N) / (k - 1): the group size the between mean
    /// square's expectation weighs the between variance with (n for k
    /// groups of n).
    pub n0: f64,
    /// Mean of all values (each run once).
    pub grand_mean: f64,
    /// MSB = sum n_i (mean_i - grand mean)^2 / (k - 1).
    pub ms_between: f64,
    /// MSW = sum (x_ij - mean_i)^2 / (N - k).
    pub ms_within: f64,
    /// sigma_b^2 = max(0, (MSB - MSW) / n0).
    pub between: f64,
    /// sigma_w^2 = MSW.
    pub within: f64,
    /// sigma_b^2 / (sigma_b^2 + sigma_w^2), ICC(1); None when both are 0.
    pub between_share: Option<f64>,
    /// F = MSB / MSW; None when MSW is 0.
    pub f: Option<f64>,
    /// P(F(k - 1, N - k) > f): the test of sigma_b^2 = 0 (normal errors).
    pub p: Option<f64>,
    /// Brown-Forsythe p-value for equal within-group variances (Levene's
    /// test on |x - group median|); None when no group has any spread.
    pub equal_within_p: Option<f64>,
}

impl VarianceComponents {
    /// The variance of the mean of `m` runs of one boot, as a new boot
    /// would give it: sigma_b^2 + sigma_w^2 / m. More runs per boot shrink
    /// only the second term: when sigma_b^2 dominates, only more boots
    /// narrow a comparison.
    pub fn boot_mean_variance(&self, m: f64) -> f64 {
        self.between + self.within / m
    }
}

/// Sums of squares of values in groups: (k, N, grand mean, SSB, SSW,
/// sum n_i^2), group means first, then squared deviations from them (two
/// passes, so a large level does not swallow a small spread).
fn sums(groups: &[&[f64]]) -> (usize, usize, f64, f64, f64, f64) {
    let k = groups.len();
    let n: usize = groups.iter().map(|g| g.len()).sum();
    let means: Vec<f64> = groups
        .iter()
        .map(|g| g.iter().sum::<f64>() / g.len() as f64)
        .collect();
    let grand = groups.iter().flat_map(|g| g.iter()).sum::<f64>() / n as f64;
    let ssb: f64 = groups
        .iter()
        .zip(&means)
        .map(|(g, m)| g.len() as f64 * (m - grand) * (m - grand))
        .sum();
    let ssw: f64 = groups
        .iter()
        .zip(&means)
        .map(|(g, m)| g.iter().map(|x| (x - m) * (x - m)).sum::<f64>())
        .sum();
    let sq: f64 = groups.iter().map(|g| (g.len() * g.len()) as f64).sum();
    (k, n, grand, ssb, ssw, sq)
}

/// Between- and within-group variance of `groups` (one slice of per-run
/// values per boot), by one-way random-effects ANOVA.
///
/// Method: the model is x_ij = mu + b_i + e_ij, with boot effects b_i of
/// variance sigma_b^2 and run errors e_ij of variance sigma_w^2. The
/// within mean square MSW estimates sigma_w^2 and the between mean square
/// MSB has expectation sigma_w^2 + n0 sigma_b^2, so the moment estimates
/// are sigma_w^2 = MSW and sigma_b^2 = (MSB - MSW) / n0, with n0 = (N -
/// sum n_i^2 / N) / (k - 1) for groups of unequal sizes n_i (Searle,
/// Casella & McCulloch 1992, "Variance Components", ch. 3, the 1-way
/// classification). When the
/// boots differ less than their runs' noise alone would make them, MSB <
/// MSW and the estimate is negative; it is set to 0, where REML puts it
/// too. On balanced groups a positive estimate equals the REML estimate
/// (statsmodels `MixedLM`, lme4), which the tests check; on unbalanced
/// groups (a boot that failed part way delivers fewer runs) it is the
/// unbiased ANOVA estimator, not REML. The between-boot share
/// sigma_b^2 / (sigma_b^2 + sigma_w^2) is ICC(1): the share of one run's
/// variance that comes from its boot, and the correlation of two runs of
/// one boot. F = MSB / MSW with (k - 1, N - k) degrees of freedom tests
/// sigma_b^2 = 0.
///
/// What it assumes, and which of it is checked:
///
/// * Boots are independent of each other, and runs of a boot independent
///   given the boot. Not checked here: randomized boot blocks make it
///   plausible, and the report's drift check (Mann-Kendall over the
///   per-boot values in boot order) catches a trend across boots.
/// * The within-boot variance is the same in every boot (MSW pools it).
///   Checked: `equal_within_p` is the Brown-Forsythe test (Levene's with
///   group medians, robust to skewed run times). A small p says some boots
///   are noisier than others; sigma_w^2 is then their average.
/// * Normal boot effects and errors: needed only for the F test's p and
///   for the usual confidence statements about the share; the estimates
///   themselves are moments and need only finite variances. Not checked:
///   with a handful of boots no test could tell.
///
/// None with fewer than 2 groups, an empty group, no group of 2 or more
/// values (N = k: nothing to estimate sigma_w^2 from), or a non-finite
/// value.
pub fn one_way(groups: &[&[f64]]) -> Option<VarianceComponents> {
    if groups.len() < 2
        || groups.iter().any(|g| g.is_empty())
        || groups.iter().flat_map(|g| g.iter()).any(|x| !x.is_finite())
    {
        return None;
    }
    let (k, n, grand, ssb, ssw, sq) = sums(groups);
    if n <= k {
        return None;
    }
    let (df_b, df_w) = ((k - 1) as f64, (n - k) as f64);
    let (msb, msw) = (ssb / df_b, ssw / df_w);
    let n0 = (n as f64 - sq / n as f64) / df_b;
    let between = ((msb - msw) / n0).max(0.0);
    let total = between + msw;
    let f = (msw > 0.0).then(|| msb / msw);
    Some(VarianceComponents {
        groups: k,
        n,
        n0,
        grand_mean: grand,
        ms_between: msb,
        ms_within: msw,
        between,
        within: msw,
        between_share: (total > 0.0).then(|| between / total),
        f,
        p: f.map(|f| f_sf(f, df_b, df_w)),
        equal_within_p: brown_forsythe_p(groups),
    })
}

/// Brown-Forsythe test of equal variances across groups: the one-way
/// ANOVA F test on the absolute deviations from each group's median
/// (scipy.stats.levene(center='median')). None when the deviations have no
/// spread within groups (every group constant, or of one or two values
/// placed alike), or for fewer than 2 groups or N <= k.
///
/// Assumes independent values and groups; robust to non-normal (skewed)
/// data, which is why the median centre is used; its F p-value is
/// approximate for small groups. Not checked.
pub fn brown_forsythe_p(groups: &[&[f64]]) -> Option<f64> {
    if groups.len() < 2 || groups.iter().any(|g| g.is_empty()) {
        return None;
    }
    let dev: Vec<Vec<f64>> = groups
        .iter()
        .map(|g| {
            let m = median(g)?;
            Some(g.iter().map(|x| (x - m).abs()).collect())
        })
        .collect::<Option<_>>()?;
    let refs: Vec<&[f64]> = dev.iter().map(Vec::as_slice).collect();
    let (k, n, _, ssb, ssw, _) = sums(&refs);
    if n <= k || ssw <= 0.0 {
        return None;
    }
    let (df_b, df_w) = ((k - 1) as f64, (n - k) as f64);
    Some(f_sf((ssb / df_b) / (ssw / df_w), df_b, df_w))
}

/// Coefficient of variation of a boot's mean of `m` runs: sqrt(sigma_b^2 +
/// sigma_w^2 / m) / |mean|, the noise a comparison of boot means works
/// against. None for a zero mean or m = 0.
///
/// Assumes what [`one_way`] assumes (independent boots, the same within-boot
/// variance in every boot), with the estimates taken as the true variances.
pub fn boot_mean_cov(vc: &VarianceComponents, m: f64) -> Option<f64> {
    (vc.grand_mean != 0.0 && m > 0.0).then(|| vc.boot_mean_variance(m).sqrt() / vc.grand_mean.abs())
}
