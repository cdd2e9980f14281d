//! Equivalence (TOST) on the ratio of means.
//!
//! Rule (the confidence-interval form of two one-sided tests at level
//! alpha = 5%): take the 90% CI (1 - 2 alpha) of mean(other) / mean(base)
//! and the equivalence band [1 - margin, 1 + margin]:
//!
//! * CI inside the band: **Equivalent** (both one-sided tests reject
//!   "the change is at least the margin");
//! * CI entirely outside the band (hi < 1 - margin or lo > 1 + margin):
//!   **NotEquivalent** (the change exceeds the margin, at the same level);
//! * otherwise **Undecided**: the data cannot tell; more runs would.

use crate::stats::bootstrap::ratio_of_means_ci;
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Equivalence {
    Equivalent,
    NotEquivalent,
    Undecided,
}

/// Confidence level of the CI the TOST rule uses (1 - 2 * 0.05).
pub const TOST_CONFIDENCE: f64 = 0.90;

/// Classify a 90% CI of a ratio against the band 1 +/- `margin`
/// (margin 0.01 = 1%). An endpoint exactly on the band edge counts as
/// inside.
///
/// Assumes the CI has its nominal 90% coverage (then each one-sided test has
/// level 5%); a CI too narrow at small n makes "equivalent" too easy. The
/// caller chooses the CI and its level.
pub fn tost_from_ci(ci: (f64, f64), margin: f64) -> Equivalence {
    let (lo, hi) = ci;
    let (band_lo, band_hi) = (1.0 - margin, 1.0 + margin);
    if lo >= band_lo && hi <= band_hi {
        Equivalence::Equivalent
    } else if hi < band_lo || lo > band_hi {
        Equivalence::NotEquivalent
    } else {
        Equivalence::Undecided
    }
}

/// TOST of mean(other) / mean(base) against 1 +/- `margin`, with the 90%
/// percentile bootstrap CI (`resamples`, `seed`). None when the CI is
/// undefined (see `ratio_of_means_ci`) or margin is not positive.
///
/// Assumes what the percentile CI assumes ([`crate::stats::bootstrap::ratio_ci`]):
/// i.i.d. runs, independent sides, a base mean away from 0 (checked). The
/// CI is read at exactly 90%, not expanded, so at small n it is too narrow
/// and the rule leans toward a decision. Not corrected here.
pub fn tost_ratio(
    base: &[f64],
    other: &[f64],
    margin: f64,
    resamples: usize,
    seed: u64,
) -> Option<Equivalence> {
    if margin.is_nan() || margin <= 0.0 {
        return None;
    }
    let ci = ratio_of_means_ci(base, other, resamples, TOST_CONFIDENCE, seed)?;
    Some(tost_from_ci(ci, margin))
}
