//! Random-effects meta-analysis of k effects with known standard errors:
//! DerSimonian-Laird's between-study variance, the Hartung-Knapp-Sidik-
//! Jonkman CI. Pure; `hosts::pool` applies it to a fleet's hosts.

use serde::Serialize;

use crate::stats::special::t_quantile;

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
