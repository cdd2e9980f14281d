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
use crate::store::ExperimentInfo;

/// The host an experiment ran on: its name in the fleet when it is one
/// host's part of a fleet run (`fleet_host`), else the machine's name it
/// recorded (`host`). Fleet reports and the `--host` filters go by this.
pub fn host_of(info: &ExperimentInfo) -> &str {
    info.fleet_host.as_deref().unwrap_or(&info.host)
}

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

/// The random-effects estimate of k >= 2 effects (see [`random_effects`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RandomEffects {
    /// The pooled effect (the weighted mean with weights 1 / (se_i^2 + tau^2)).
    pub mu: f64,
    /// DerSimonian-Laird's between-study variance, truncated at 0.
    pub tau2: f64,
    /// Cochran's Q of the fixed-effect fit.
    pub q: f64,
    /// I^2 = max(0, (Q - (k - 1)) / Q): the share of the spread beyond the
    /// hosts' own uncertainty (None when Q is 0).
    pub i2: Option<f64>,
    /// The Hartung-Knapp-Sidik-Jonkman standard error of `mu`.
    pub se: f64,
    /// The random-effects variance of `mu` with the weights taken as known,
    /// 1 / sum w*_i (the DerSimonian-Laird one, under the HKSJ `se`).
    pub var_re: f64,
    /// Degrees of freedom of the t quantile: k - 1.
    pub df: usize,
    /// mu +- t_{df, 1-(1-confidence)/2} se.
    pub ci: (f64, f64),
}

/// Random-effects meta-analysis of effects `y` with standard errors `se`
/// (each > 0 and finite), at `confidence`; None for fewer than 2 effects.
///
/// DerSimonian-Laird: with fixed-effect weights w_i = 1 / se_i^2, the
/// fixed-effect mean m, Q = sum w_i (y_i - m)^2 and C = sum w_i - sum w_i^2
/// / sum w_i, tau^2 = max(0, (Q - (k - 1)) / C). The pooled effect mu is
/// the mean with weights w*_i = 1 / (se_i^2 + tau^2).
///
/// Hartung-Knapp-Sidik-Jonkman: var(mu) = sum w*_i (y_i - mu)^2 / ((k - 1)
/// sum w*_i), and the CI is mu +- t_{k-1} sqrt(var), with the quantile of
/// Student's t on k - 1 degrees of freedom. Unlike the normal-quantile CI
/// of DerSimonian-Laird, it keeps its level with few studies (here: hosts);
/// with 2 hosts the quantile is 12.7 at 95% and the CI is wide, as it
/// should be from two values. This is the unmodified HKSJ (no max(1, .)
/// floor on the scale), as statsmodels' `combine_effects(..., method_re=
/// "dl").conf_int(use_t=True)` gives it; when tau^2 is truncated to 0 the
/// weights are the fixed-effect ones (statsmodels does not truncate: its
/// fixed-effect HKSJ interval is then the same number). It assumes the
/// effects are independent (different machines, different runs) and each
/// y_i normal with the given standard error.
pub fn random_effects(y: &[f64], se: &[f64], confidence: f64) -> Option<RandomEffects> {
    let k = y.len();
    if k < 2 || se.len() != k || se.iter().any(|s| !(s.is_finite() && *s > 0.0)) {
        return None;
    }
    let w: Vec<f64> = se.iter().map(|s| 1.0 / (s * s)).collect();
    let sw: f64 = w.iter().sum();
    let m = w.iter().zip(y).map(|(w, y)| w * y).sum::<f64>() / sw;
    let q: f64 = w.iter().zip(y).map(|(w, y)| w * (y - m) * (y - m)).sum();
    let c = sw - w.iter().map(|w| w * w).sum::<f64>() / sw;
    let df = k - 1;
    let tau2 = if c > 0.0 {
        ((q - df as f64) / c).max(0.0)
    } else {
        0.0
    };
    let ws: Vec<f64> = se.iter().map(|s| 1.0 / (s * s + tau2)).collect();
    let sws: f64 = ws.iter().sum();
    let mu = ws.iter().zip(y).map(|(w, y)| w * y).sum::<f64>() / sws;
    let var = ws
        .iter()
        .zip(y)
        .map(|(w, y)| w * (y - mu) * (y - mu))
        .sum::<f64>()
        / (df as f64 * sws);
    let se_mu = var.sqrt();
    let t = t_quantile(1.0 - (1.0 - confidence) / 2.0, df as f64);
    Some(RandomEffects {
        mu,
        tau2,
        q,
        i2: (q > 0.0).then(|| ((q - df as f64) / q).max(0.0)),
        se: se_mu,
        var_re: 1.0 / sws,
        df,
        ci: (mu - t * se_mu, mu + t * se_mu),
    })
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
mod tests {
    use super::*;

    fn est(ratio: f64, lo: f64, hi: f64) -> Option<HostEstimate> {
        Some(HostEstimate {
            ratio,
            ratio_ci: (lo, hi),
            base_sign: 1.0,
            df: None,
        })
    }

    fn close(got: f64, want: f64, what: &str) {
        assert!(
            (got - want).abs() <= 1e-9 * want.abs().max(1e-3),
            "{what}: got {got:.15}, want {want:.15}"
        );
    }

    // The reference values below are statsmodels 0.15.0's, with SciPy
    // 1.17.1's normal quantile for the standard errors, as printed by
    // tests/reference/make_meta_analysis.py: it feeds y_i = ln r_i and
    // se_i = (ln hi - ln lo) / (2 norm.ppf(0.975)) to `combine_effects(y,
    // se**2, method_re="dl", use_t=True)` and reads `tau2`, `q`,
    // `mean_effect_re`, `var_eff_w_re` and `conf_int(alpha=0.05,
    // use_t=True)[3]` (the random-effects HKSJ interval); where DL's tau^2
    // comes out negative (statsmodels does not truncate it), the
    // fixed-effect `mean_effect_fe`, `var_eff_w_fe` and `conf_int(...)[2]`,
    // which are the random-effects values with tau^2 truncated at 0. The
    // leave-one-out values are the same call on the other hosts, and the
    // residual (y_i - mu) / sqrt(se_i^2 + tau2 + var) is computed there
    // from them.
    struct Case {
        rows: [(f64, f64, f64); 4],
        k: usize,
        tau2: f64,
        q: f64,
        mu: f64,
        var: f64,
        ci: (f64, f64),
        /// Leaving each host out: (mu, tau2, var, the host's residual).
        loo: [(f64, f64, f64, f64); 4],
        differs: [bool; 4],
    }

    const CASES: [Case; 3] = [
        // Four hosts, heterogeneous (Q = 27.5 on 3 df); the last one is
        // 2.2 standard errors from the other three.
        Case {
            rows: [
                (1.020, 1.010, 1.030),
                (1.035, 1.020, 1.050),
                (1.005, 0.995, 1.015),
                (1.060, 1.040, 1.081),
            ],
            k: 4,
            tau2: 0.000330316823663719,
            q: 27.54905371487795,
            mu: 0.027973336964685416,
            var: 9.471108184086688e-05,
            ci: (-0.00745399580910034, 0.06340066973847117),
            loo: [
                (
                    0.03168219562547372,
                    0.0006627901380678324,
                    0.0002402857748064499,
                    -0.38994525199022523,
                ),
                (
                    0.026152090250572267,
                    0.00040297056969079806,
                    0.00014997444707132528,
                    0.3346566713031418,
                ),
                (
                    0.036111662096823004,
                    0.0002758636525927171,
                    0.00011075909743937572,
                    -1.532635542904769,
                ),
                (
                    0.019018207375494735,
                    0.00015310221970453995,
                    6.243332456525921e-05,
                    2.2191753233205267,
                ),
            ],
            // 2.22 standard errors is p 0.026, 0.106 after Holm over four
            // hosts: not named (it was, before the correction).
            differs: [false, false, false, false],
        },
        // Three hosts, one far below the others.
        Case {
            rows: [
                (0.97, 0.95, 0.99),
                (1.01, 0.99, 1.03),
                (0.92, 0.90, 0.94),
                (1.0, 1.0, 1.0),
            ],
            k: 3,
            tau2: 0.0020487782837916644,
            q: 38.7085941648979,
            mu: -0.034478174334303384,
            var: 0.0007202328332680903,
            ci: (-0.15070742107853355, 0.08175107240992677),
            loo: [
                (
                    -0.03660335052520662,
                    0.004242843302480447,
                    0.0021777001376333885,
                    0.07602622339178434,
                ),
                (
                    -0.056803601734291866,
                    0.0012835096717613232,
                    0.00070018150017044,
                    1.4616427147223006,
                ),
                (
                    -0.010148066749699133,
                    0.0007100648834307781,
                    0.0004082213822600126,
                    -2.0785628848943065,
                ),
                (0.0, 0.0, 0.0, 0.0),
            ],
            // -2.08 is p 0.038, 0.113 after Holm over three hosts.
            differs: [false, false, false, false],
        },
        // Three hosts that agree: DL's tau^2 is negative before truncation
        // (statsmodels: -2.511442693547211e-05), so the weights are the
        // fixed-effect ones; so in each leave-one-out fit.
        Case {
            rows: [
                (1.010, 1.000, 1.020),
                (1.012, 1.002, 1.022),
                (1.008, 0.996, 1.020),
                (1.0, 1.0, 1.0),
            ],
            k: 3,
            tau2: 0.0,
            q: 0.2549392046523682,
            mu: 0.01017850219314264,
            var: 9.46732638261417e-06,
            ci: (0.005451853926573281, 0.014905150459711998),
            loo: [
                (
                    0.010313065639724256,
                    0.0,
                    1.505065717297431e-05,
                    -0.05694825522946672,
                ),
                (
                    0.009139883579299526,
                    0.0,
                    1.5085929561389363e-05,
                    0.4381692753627974,
                ),
                (
                    0.010941407701076343,
                    0.0,
                    1.2735013619279265e-05,
                    -0.4220369827316007,
                ),
                (0.0, 0.0, 0.0, 0.0),
            ],
            differs: [false, false, false, false],
        },
    ];

    #[test]
    fn pooled_matches_statsmodels_dl_hksj() {
        let z = normal_quantile(0.975);
        for (n, c) in CASES.iter().enumerate() {
            let ests: Vec<Option<HostEstimate>> =
                c.rows[..c.k].iter().map(|r| est(r.0, r.1, r.2)).collect();
            let p = pool(&ests, 0.95);
            let fit = p.fit.unwrap();
            let what = |x: &str| format!("case {n} {x}");
            assert_eq!((p.hosts, fit.df), (c.k, c.k - 1), "case {n}");
            close(fit.tau2, c.tau2, &what("tau2"));
            close(fit.q, c.q, &what("Q"));
            close(fit.mu, c.mu, &what("mu"));
            close(fit.var_re, c.var, &what("var"));
            close(fit.ci.0, c.ci.0, &what("ci low"));
            close(fit.ci.1, c.ci.1, &what("ci high"));
            close(p.ratio.unwrap(), c.mu.exp(), &what("ratio"));
            close(
                p.delta_pct.unwrap(),
                100.0 * (c.mu.exp() - 1.0),
                &what("pct"),
            );
            let (lo, hi) = p.ratio_ci.unwrap();
            close(lo, c.ci.0.exp(), &what("ratio ci low"));
            close(hi, c.ci.1.exp(), &what("ratio ci high"));
            for i in 0..c.k {
                let (y, se): (Vec<f64>, Vec<f64>) = ests
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .map(|(_, e)| e.unwrap().log(z))
                    .unzip();
                let loo = random_effects(&y, &se, 0.95).unwrap();
                let (mu, tau2, var, resid) = c.loo[i];
                close(loo.mu, mu, &what(&format!("leave out {i}: mu")));
                close(loo.tau2, tau2, &what(&format!("leave out {i}: tau2")));
                close(loo.var_re, var, &what(&format!("leave out {i}: var")));
                close(
                    p.residual[i].unwrap(),
                    resid,
                    &what(&format!("residual {i}")),
                );
                assert_eq!(p.differs[i], Some(c.differs[i]), "case {n} host {i}");
                // Without degrees of freedom the residual is judged on the
                // normal.
                close(
                    p.residual_p[i].unwrap(),
                    2.0 * normal_sf(resid.abs()),
                    &what(&format!("residual p {i}")),
                );
            }
        }
    }

    #[test]
    fn the_fleet_name_is_the_host_when_there_is_one() {
        let mut info = ExperimentInfo {
            id: 1,
            name: "n".into(),
            label: None,
            plan_source: String::new(),
            plan_text: String::new(),
            overrides: Default::default(),
            host: "node-7.example".into(),
            fingerprint: Default::default(),
            seed: 1,
            order: String::new(),
            runs_per_cell: 1,
            warmup: 0,
            baseline: "b".into(),
            created_at: String::new(),
            finished_at: None,
            status: crate::status::ExperimentStatus::Complete,
            entered_config: None,
            self_usage: None,
            configs: vec!["b".into()],
            workloads: vec![],
            fleet_host: None,
            fleet_id: None,
        };
        assert_eq!(host_of(&info), "node-7.example");
        info.fleet_host = Some("c".into());
        assert_eq!(host_of(&info), "c");
    }

    #[test]
    fn two_hosts_pool_with_t_on_one_df() {
        // statsmodels, as above: tau2 0.00032284935004711976.
        let p = pool(&[est(1.02, 1.00, 1.04), est(1.05, 1.03, 1.07)], 0.95);
        let fit = p.fit.unwrap();
        close(fit.tau2, 0.00032284935004711976, "tau2");
        close(fit.mu, 0.03439368200370531, "mu");
        close(fit.ci.0, -0.14976295844591442, "ci low");
        close(fit.ci.1, 0.21855032245332506, "ci high");
        // Fewer than 3 hosts: nobody is judged.
        assert_eq!(p.differs, [None, None]);
    }

    #[test]
    fn one_host_has_no_pooled_ci_and_none_is_judged() {
        let p = pool(&[None, est(1.1, 1.05, 1.15), None], 0.95);
        assert_eq!(p.hosts, 1);
        assert_eq!(p.ratio, Some(1.1));
        assert!(p.ratio_ci.is_none() && p.fit.is_none());
        assert!(p.note.unwrap().contains("no pooled CI"));
        assert_eq!(p.differs, [None, None, None]);
        let p = pool(&[None, None], 0.95);
        assert_eq!((p.hosts, p.ratio), (0, None));
    }

    #[test]
    fn hosts_without_an_estimate_keep_their_place() {
        let p = pool(
            &[
                est(1.01, 1.00, 1.02),
                None,
                est(1.30, 1.28, 1.32),
                est(1.012, 1.002, 1.022),
            ],
            0.95,
        );
        assert_eq!(p.hosts, 3);
        assert_eq!(p.differs, [Some(false), None, Some(true), Some(false)]);
    }

    #[test]
    fn a_negative_baseline_gives_the_change_its_sign() {
        // Values around -50 going to -51: the ratio is 1.02, the change -2%.
        let e = |r: f64, lo: f64, hi: f64| {
            Some(HostEstimate {
                ratio: r,
                ratio_ci: (lo, hi),
                base_sign: -1.0,
                df: None,
            })
        };
        let p = pool(&[e(1.02, 1.01, 1.03), e(1.02, 1.01, 1.03)], 0.95);
        close(p.delta_pct.unwrap(), -2.0, "pct");
        let p = pool(&[e(1.01, 1.00, 1.02), e(1.03, 1.02, 1.04)], 0.95);
        let (lo, hi) = p.delta_ci_pct.unwrap();
        let d = p.delta_pct.unwrap();
        assert!(d < 0.0 && lo < d && d < hi, "{lo} {d} {hi}");
        let mixed = pool(&[e(1.02, 1.01, 1.03), est(1.02, 1.01, 1.03)], 0.95);
        assert_eq!((mixed.hosts, mixed.ratio), (0, None));
    }
}
