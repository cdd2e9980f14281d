//! Results across hosts: the same plan run on several machines (a fleet,
//! one experiment per host), each config's change pooled with the host as
//! the top level of the hierarchy (runs within a host, hosts within the
//! fleet).
//!
//! Each host's experiment is analysed on its own (`analysis::analyze`): its
//! comparison of a config with the baseline gives a ratio of means r_i with
//! a bootstrap CI. This module pools those per-host estimates by a
//! random-effects meta-analysis on the log ratio, and flags a host whose
//! estimate differs from what the others say. Pure: no I/O, no output
//! format.

use serde::Serialize;

use super::model::MetricAnalysis;
use crate::stats::special::{normal_quantile, normal_sf, t_quantile};

mod random_effects;
pub use random_effects::{random_effects, RandomEffects};

/// One host's estimate of one config against the baseline, for one
/// workload and metric: the ratio of means and its CI, as that host's own
/// analysis gives them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct HostEstimate {
    /// mean(config) / mean(baseline).
    pub ratio: f64,
    /// Its CI (low, high), at the analysis' confidence.
    pub ratio_ci: (f64, f64),
    /// The sign of the baseline's mean: a change in percent is
    /// 100 (ratio - 1) times it (see `analysis::Comparison::delta_mean_pct`).
    pub base_sign: f64,
    /// Degrees of freedom of the host's own standard error: units of the
    /// baseline and the config minus 2. The host's CI is t-based on them
    /// (Welch's at few units, the bootstrap widened by a t factor above),
    /// so its residual is judged on Student's t, not the normal (see
    /// [`pool`]). None: judged on the normal.
    pub df: Option<f64>,
}

impl HostEstimate {
    /// The estimate of `m`'s comparison `ci` (0: the first config after the
    /// baseline), or None where there is none to pool: a side without runs,
    /// a CI that is not estimable, a ratio that is not positive (the means
    /// of opposite signs), or a CI of zero width (every value the same,
    /// which would weigh infinitely).
    pub fn from_comparison(m: &MetricAnalysis, ci: usize) -> Option<HostEstimate> {
        let base = m.cells.first()?.summary.as_ref()?.mean;
        let mean = m.cells.get(ci + 1)?.summary.as_ref()?.mean;
        let (lo, hi) = m.comparisons.get(ci)?.ratio_ci?;
        let units = m.cells[0].values.len() + m.cells[ci + 1].values.len();
        let ratio = mean / base;
        let ok = base != 0.0 && ratio > 0.0 && lo > 0.0 && hi > lo && ratio.is_finite();
        ok.then_some(HostEstimate {
            ratio,
            ratio_ci: (lo, hi),
            base_sign: base.signum(),
            df: (units > 2).then(|| (units - 2) as f64),
        })
    }

    /// (ln ratio, its standard error): the standard error is the CI's
    /// half-width on the log scale over the normal quantile `z`.
    fn log(&self, z: f64) -> (f64, f64) {
        let (lo, hi) = self.ratio_ci;
        (self.ratio.ln(), (hi.ln() - lo.ln()) / (2.0 * z))
    }
}

/// The hosts' estimates of one comparison pooled (see [`pool`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pooled {
    /// Hosts whose estimates are pooled (k).
    pub hosts: usize,
    /// The pooled ratio of means, exp(mu); with one host, that host's own.
    /// None when no host has an estimate.
    pub ratio: Option<f64>,
    /// The pooled ratio's HKSJ CI; None with fewer than 2 hosts.
    pub ratio_ci: Option<(f64, f64)>,
    /// `ratio` as a change in percent (signed as the change, as a host's
    /// `delta_mean_pct`).
    pub delta_pct: Option<f64>,
    /// `ratio_ci` in percent, low end first.
    pub delta_ci_pct: Option<(f64, f64)>,
    /// The random-effects fit on the log ratios (with 2 hosts or more).
    pub fit: Option<RandomEffects>,
    /// Per host, in the order given: Some(true) when the host differs from
    /// the others (see [`pool`]); None when not judged (the host has no
    /// estimate, or fewer than 3 hosts have one).
    pub differs: Vec<Option<bool>>,
    /// Per host: its studentized deleted residual, the distance of its log
    /// ratio from the others' pooled one in standard errors (see [`pool`]);
    /// None where `differs` is.
    pub residual: Vec<Option<f64>>,
    /// Per host: the two-sided p of its residual (Student's t on the host's
    /// degrees of freedom, or the normal), before any correction; None
    /// where `residual` is.
    pub residual_p: Vec<Option<f64>>,
    /// Why there is no pooled estimate or CI, when there is none.
    pub note: Option<String>,
}

/// 100 (ratio - 1), signed as the change (the baseline's sign).
fn pct(ratio: f64, base_sign: f64) -> f64 {
    100.0 * (ratio - 1.0) * base_sign
}

/// Pool the hosts' estimates of one comparison (None: the host has none)
/// at `confidence`, the level of the hosts' own CIs.
///
/// Each host's log ratio y_i = ln r_i is taken as normal with standard
/// error se_i = (ln hi_i - ln lo_i) / (2 z), z = Phi^-1(1 - (1 -
/// confidence) / 2) (1.96 at 95%): the assumption is that the host's CI
/// is a normal CI on the log scale, symmetric there about ln r_i. Its
/// bootstrap CI is of the ratio itself and need not be; a skewed one is
/// averaged into one half-width. The hosts' CIs are the small-sample
/// widened ones (`stats::bootstrap::expanded_confidence`), so se_i is
/// overstated at few runs. That does not make the pooled CI
/// conservative: HKSJ's variance is scale-free in the se_i when tau^2 is
/// 0 (widening all alike changes nothing), and uneven widening (hosts
/// with fewer runs widened more) only shifts the weights toward hosts with
/// more runs. The pooled CI's width comes from how the hosts' estimates
/// scatter, on k - 1 degrees of freedom. The
/// log ratios are pooled by [`random_effects`] (DerSimonian-Laird tau^2,
/// HKSJ CI on k - 1 degrees of freedom).
///
/// With one host there is no pooled CI (one value says nothing of the
/// spread between hosts), and none is made up: the pooled ratio is that
/// host's and `note` says so.
///
/// A host "differs" (judged with k >= 3 hosts) when its own CI, widened by
/// what the other hosts leave unknown, excludes the pooled estimate of
/// the other hosts: leaving host i out, the others give mu_(-i), tau^2_(-i)
/// and var(mu_(-i)) = 1 / sum w*_(-i), and host i differs when |y_i -
/// mu_(-i)| > z sqrt(se_i^2 + tau^2_(-i) + var(mu_(-i))), the studentized
/// deleted residual of Viechtbauer and Cheung (2010, metafor's `rstudent`)
/// beyond what chance allows: its p ([`residual_p`]) below 1 -
/// `confidence` after Holm's correction over the comparison's hosts (and,
/// in a fleet report, over all its comparisons: [`correct_differs`]). Where the others agree (tau^2_(-i) =
/// 0) and are precise, this is the host's own CI excluding their pooled
/// estimate. The widening is what makes the check usable with few hosts:
/// with three, one of them 30% off, the pooled estimate of the two others
/// of a typical host lies half-way to the odd one, outside that typical
/// host's own CI, and the bare test would flag every host; their
/// disagreement (tau^2_(-i)) widens the interval, and only the odd host,
/// whose two others agree, is flagged. Hosts whose baselines have
/// opposite signs are not pooled.
pub fn pool(estimates: &[Option<HostEstimate>], confidence: f64) -> Pooled {
    let z = normal_quantile(1.0 - (1.0 - confidence) / 2.0);
    let used: Vec<(usize, &HostEstimate)> = estimates
        .iter()
        .enumerate()
        .filter_map(|(i, e)| e.as_ref().map(|e| (i, e)))
        .collect();
    let mut out = Pooled {
        hosts: used.len(),
        ratio: None,
        ratio_ci: None,
        delta_pct: None,
        delta_ci_pct: None,
        fit: None,
        differs: vec![None; estimates.len()],
        residual: vec![None; estimates.len()],
        residual_p: vec![None; estimates.len()],
        note: None,
    };
    let sign = match used.first() {
        None => {
            out.note = Some("no host has an estimate with a CI".into());
            return out;
        }
        Some((_, e)) => e.base_sign,
    };
    if used.iter().any(|(_, e)| e.base_sign != sign) {
        out.hosts = 0;
        out.note = Some("the hosts' baseline means have opposite signs: not pooled".into());
        return out;
    }
    let logs: Vec<(f64, f64)> = used.iter().map(|(_, e)| e.log(z)).collect();
    if used.len() == 1 {
        let r = used[0].1.ratio;
        out.ratio = Some(r);
        out.delta_pct = Some(pct(r, sign));
        out.note = Some("one host with an estimate: no pooled CI".into());
        return out;
    }
    let (y, se): (Vec<f64>, Vec<f64>) = logs.iter().copied().unzip();
    let Some(fit) = random_effects(&y, &se, confidence) else {
        out.note = Some("no pooled estimate (a host's standard error is not positive)".into());
        return out;
    };
    let (r, lo, hi) = (fit.mu.exp(), fit.ci.0.exp(), fit.ci.1.exp());
    out.ratio = Some(r);
    out.ratio_ci = Some((lo, hi));
    out.delta_pct = Some(pct(r, sign));
    let (a, b) = (pct(lo, sign), pct(hi, sign));
    out.delta_ci_pct = Some((a.min(b), a.max(b)));
    out.fit = Some(fit);
    if used.len() >= 3 {
        for (j, (i, _)) in used.iter().enumerate() {
            let (oy, ose): (Vec<f64>, Vec<f64>) = logs
                .iter()
                .enumerate()
                .filter(|(l, _)| *l != j)
                .map(|(_, x)| *x)
                .unzip();
            if let Some(o) = random_effects(&oy, &ose, confidence) {
                let (y, se) = logs[j];
                let r = (y - o.mu) / (se * se + o.tau2 + o.var_re).sqrt();
                out.residual[*i] = Some(r);
                out.residual_p[*i] = Some(residual_p(r, used[j].1.df, confidence));
            }
        }
        // Corrected over this comparison's hosts; a fleet report corrects
        // again over all its comparisons (`correct_differs`).
        correct_differs(&mut [&mut out], confidence);
    }
    out
}

/// Two-sided p of a host's studentized deleted residual `r`. Its standard
/// error was read off a CI built on Student's t with `df` degrees of
/// freedom (se = half-width / z, so se is the estimated standard error
/// times t_q(df) / z): so r t_q(df) / z is then
/// close to t on df when the host dominates the residual's variance, and
/// the p is that t's. Judging it on the normal instead named identical
/// hosts in 9.8% of 8-host, 8-metric reports even after Holm (the tails of
/// t on 18 df beyond 3.4 are several times the normal's). The other terms
/// (tau^2 of the others, their pooled variance) only shrink r, so this
/// errs on the safe side. Without df, the normal.
fn residual_p(r: f64, df: Option<f64>, confidence: f64) -> f64 {
    let q = 1.0 - (1.0 - confidence) / 2.0;
    match df.filter(|d| *d >= 1.0) {
        Some(df) => {
            let x = r.abs() * t_quantile(q, df) / normal_quantile(q);
            (2.0 * crate::stats::special::t_cdf(-x, df)).min(1.0)
        }
        None => (2.0 * normal_sf(r.abs())).min(1.0),
    }
}

/// Decide which hosts differ over a whole family of pooled comparisons
/// (every host of every workload, metric and config of a fleet report):
/// Holm's step-down correction over all their residuals' p-values, a host
/// differing where its adjusted p is below 1 - `confidence`. Holm holds the
/// chance that any host is named in a report where no host differs at 1 -
/// `confidence` (5%), whatever the dependence between the tests; without
/// it, identical hosts were named in 6.5% of comparisons at 3 hosts, 18.5%
/// at 5 and 26.5% at 8, and in 62-94% of 8-metric reports.
///
/// Assumes each residual is standard normal when its host does not differ
/// (the hosts' log ratios normal with the standard errors their CIs imply;
/// DerSimonian-Laird's tau^2 of the others, never below 0, only widens).
pub fn correct_differs(pools: &mut [&mut Pooled], confidence: f64) {
    let mut at: Vec<(usize, usize)> = Vec::new();
    let mut p: Vec<f64> = Vec::new();
    for (c, pool) in pools.iter().enumerate() {
        for (h, q) in pool.residual_p.iter().enumerate() {
            if let Some(q) = q {
                at.push((c, h));
                p.push(*q);
            }
        }
    }
    let adjusted = crate::stats::multiple::holm(&p);
    for ((c, h), q) in at.into_iter().zip(adjusted) {
        pools[c].differs[h] = Some(q < 1.0 - confidence);
    }
}

#[cfg(test)]
mod tests;
