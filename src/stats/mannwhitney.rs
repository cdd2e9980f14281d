//! Mann-Whitney U test (two-sided), matching scipy.stats.mannwhitneyu.

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    Exact,
    Asymptotic,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MannWhitney {
    /// U statistic of the first sample (as scipy reports it).
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    pub method: Method,
}

/// Two-sided Mann-Whitney U test of `a` against `b`.
pub fn mann_whitney_u(_a: &[f64], _b: &[f64]) -> Option<MannWhitney> {
    todo!("stats helper")
}
