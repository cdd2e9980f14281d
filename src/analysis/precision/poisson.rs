//! A streaming Poisson bootstrap (Hanley & MacGibbon 2006; Chamandy et al.
//! 2012, "Estimating uncertainty for massive data streams"): the running
//! state that lets adaptive stopping's check cost the same at block 200 as
//! at block 5.
//!
//! The report's percentile bootstrap draws, for each of B resamples, n run
//! indices with replacement: a check costs B x n. The Poisson bootstrap
//! instead gives each arriving run an independent Poisson(1) weight in each
//! of B replicates (the limit of the multinomial counts a resample of n
//! gives one run), so each replicate is a running (weighted sum, weight
//! total) pair: a run costs B draws and B additions per metric when it
//! arrives, and a replicate's mean is one division whenever it is asked.
//!
//! What it assumes: the runs are independent (as the report's bootstrap
//! does); the interval is a bootstrap interval of the same quantity as the
//! report's (the ratio of means, percentile, at the same expanded level),
//! not the same numbers: a replicate's size is random (its weight total)
//! rather than exactly n, and a replicate with a zero weight total on
//! either side (probability e^-n) has no mean and is skipped. Its ends
//! agree with the full bootstrap's within the two draws' Monte Carlo error
//! (the tests check 10% of the width at 20 to 500 runs a side).
//!
//! Deterministic: each cell draws from its own ChaCha8 stream, so the
//! weights, and every interval, depend only on the seed and the order the
//! cell's runs arrived in.

use rand::RngCore;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// P(K <= k) for K ~ Poisson(1), k = 0, 1, ..., as fractions of 2^64:
/// a weight is the first k whose threshold a uniform u64 is below. Past
/// the last entry (probability below 1e-12) the weight is its length.
fn thresholds() -> Vec<u64> {
    let mut out = Vec::new();
    let (mut p, mut cdf) = ((-1.0f64).exp(), 0.0f64);
    for k in 0..15 {
        cdf += p;
        out.push((cdf * 18_446_744_073_709_551_616.0).min(u64::MAX as f64) as u64);
        p /= f64::from(k + 1);
    }
    out
}

/// One cell's weight source: B Poisson(1) weights per arriving run, from
/// the cell's own ChaCha8 stream.
pub(super) struct Weights {
    rng: ChaCha8Rng,
    thresholds: Vec<u64>,
    /// The last run's weights, one per replicate.
    last: Vec<u32>,
}

impl Weights {
    /// `replicates` weights per run, drawn from `seed`'s stream `stream`.
    pub(super) fn new(replicates: usize, seed: u64, stream: u64) -> Weights {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        Weights {
            rng,
            thresholds: thresholds(),
            last: vec![0; replicates],
        }
    }

    /// Draw the next run's weights.
    pub(super) fn draw(&mut self) -> &[u32] {
        for w in &mut self.last {
            let u = self.rng.next_u64();
            // Most weights are 0 or 1 (74%): the scan stops early.
            *w = self
                .thresholds
                .iter()
                .position(|&t| u < t)
                .unwrap_or(self.thresholds.len()) as u32;
        }
        &self.last
    }
}

/// One metric's replicates in one cell: per replicate, the weighted sum of
/// the values and the weight total.
#[derive(Clone)]
pub(super) struct Replicates {
    sums: Vec<f64>,
    totals: Vec<u32>,
}

impl Replicates {
    /// Empty, `replicates` of them.
    pub(super) fn new(replicates: usize) -> Replicates {
        Replicates {
            sums: vec![0.0; replicates],
            totals: vec![0; replicates],
        }
    }

    /// Take in one run's value `x` with its weights (one per replicate).
    pub(super) fn add(&mut self, x: f64, weights: &[u32]) {
        for ((s, t), &w) in self.sums.iter_mut().zip(&mut self.totals).zip(weights) {
            *s += f64::from(w) * x;
            *t += w;
        }
    }

    /// Each replicate's mean, None where its weight total is 0.
    fn mean(&self, i: usize) -> Option<f64> {
        (self.totals[i] > 0).then(|| self.sums[i] / f64::from(self.totals[i]))
    }
}

/// Percentile interval of mean(other) / mean(base) at `confidence`, from
/// replicate i of each side paired (the two cells' streams are independent),
/// skipping pairs where a side has no mean. None, as
/// `stats::bootstrap::ratio_ci`, when fewer than 2 pairs are left,
/// `confidence` is not in (0, 1), or a base mean is 0, non-finite, or of
/// the other sign than the first (the ratio is then no continuous function
/// of the data).
pub(super) fn ratio_ci(
    base: &Replicates,
    other: &Replicates,
    confidence: f64,
) -> Option<(f64, f64)> {
    if !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let mut ratios = Vec::with_capacity(base.sums.len());
    let mut positive = None;
    for i in 0..base.sums.len().min(other.sums.len()) {
        let (Some(b), Some(o)) = (base.mean(i), other.mean(i)) else {
            continue;
        };
        let sign = *positive.get_or_insert(b > 0.0);
        if !b.is_finite() || !o.is_finite() || b == 0.0 || (b > 0.0) != sign {
            return None;
        }
        ratios.push(o / b);
    }
    if ratios.len() < 2 {
        return None;
    }
    let alpha = (1.0 - confidence) / 2.0;
    let lo = crate::stats::bootstrap::quantile_linear(&mut ratios, alpha);
    let hi = crate::stats::bootstrap::quantile_linear(&mut ratios, 1.0 - alpha);
    Some((lo, hi))
}
