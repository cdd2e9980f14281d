//! Hierarchical (two-level) bootstrap for runs that each hold many samples.
//!
//! Method: each resample draws as many runs as there are, with replacement,
//! then, inside each drawn run, as many samples as that run has, with
//! replacement; its statistic is the mean of all samples drawn (the grand
//! mean, which equals the mean of run means when runs have equal sizes).
//! Resampling runs first keeps run-to-run variation (boot, cache and
//! placement effects) in the interval, which a flat bootstrap of all
//! samples would ignore. One resample costs one draw per run plus one per
//! sample, so the work is linear in the total sample count.
//! CIs are percentile intervals of mean(other*) / mean(base*), as
//! [`crate::stats::bootstrap::ratio_ci`] computes them. The generator is
//! rand's `SmallRng`, so results are deterministic for a seed and the rand
//! version pinned in Cargo.lock.

use crate::stats::bootstrap::{ratio_ci, stream_seed};
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};

/// Uniform index in 0..n (n >= 1), Lemire's multiply-shift with rejection
/// of the biased low range, so exactly uniform.
pub(crate) fn uniform_index(rng: &mut SmallRng, n: usize) -> usize {
    let n = n as u64;
    let threshold = n.wrapping_neg() % n;
    loop {
        let m = rng.next_u64() as u128 * n as u128;
        if (m as u64) >= threshold {
            return (m >> 64) as usize;
        }
    }
}

/// Grand means of `resamples` two-level resamples of `runs` (each run a
/// slice of samples). Empty when there are no runs or a run is empty.
///
/// Assumes runs independent of each other and samples independent given
/// their run; see [`hierarchical_ratio_ci`] for what follows.
pub fn hierarchical_resample_means(runs: &[&[f64]], resamples: usize, seed: u64) -> Vec<f64> {
    if runs.is_empty() || runs.iter().any(|r| r.is_empty()) {
        return Vec::new();
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let mut sum = 0.0;
        let mut count = 0usize;
        for _ in 0..runs.len() {
            let run = runs[uniform_index(&mut rng, runs.len())];
            for _ in 0..run.len() {
                sum += run[uniform_index(&mut rng, run.len())];
            }
            count += run.len();
        }
        out.push(sum / count as f64);
    }
    out
}

/// Percentile CI of the ratio of grand means, other / base, by the
/// two-level bootstrap. None when a side has fewer than 2 runs, an empty
/// run, a non-finite value, or a zero base mean (see `ratio_ci`).
///
/// What it assumes, and which of it is checked:
///
/// * Runs are independent of each other, and samples independent given
///   their run (two-level exchangeability). Not checked.
/// * Resampling samples inside runs as well as runs adds the within-run
///   variance a second time, so the interval is conservative (wider) when
///   runs hold few samples; the percentile interval's small-n narrowness
///   ([`crate::stats::bootstrap::ratio_ci`]) pulls the other way. Neither is
///   corrected here.
/// * A base mean away from 0: checked (None).
pub fn hierarchical_ratio_ci(
    base_runs: &[&[f64]],
    other_runs: &[&[f64]],
    resamples: usize,
    confidence: f64,
    seed: u64,
) -> Option<(f64, f64)> {
    let ok = |runs: &[&[f64]]| {
        runs.len() >= 2
            && runs
                .iter()
                .all(|r| !r.is_empty() && r.iter().all(|x| x.is_finite()))
    };
    if !ok(base_runs) || !ok(other_runs) {
        return None;
    }
    let b = hierarchical_resample_means(base_runs, resamples, stream_seed(seed, 0));
    let o = hierarchical_resample_means(other_runs, resamples, stream_seed(seed, 1));
    ratio_ci(&b, &o, confidence)
}
