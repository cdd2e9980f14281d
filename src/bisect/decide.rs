//! The statistics of a bisection: pure functions of the units' values (one
//! value per run, or per boot for kernels) and a seed.
//!
//! Step 0 asks whether the bad end differs from the good end at all (a
//! Mann-Whitney test, as `compare` prints it). Each later step places the
//! midpoint between the two ends: theta = (m - g) / (b - g) over the means
//! of the units, 0 where the midpoint looks like the good end and 1 where
//! it looks like the bad one, with a percentile bootstrap over the units of
//! each side. A step looks again after every round of runs, so each look
//! gets `alpha / looks` (Bonferroni over the looks a step may take), and a
//! decision's error bound is the per-look alpha times the looks it could
//! take (the step's alpha): how many it took depends on the data.

use serde::{Deserialize, Serialize};

use crate::stats::bootstrap::{
    expanded_confidence, quantile_linear, ratio_ci, resample_means, stream_seed,
};
use crate::stats::mannwhitney::mann_whitney_u;

/// Bootstrap resamples per look (the report's default).
const RESAMPLES: usize = crate::stats::bootstrap::DEFAULT_RESAMPLES;

/// What a step concluded about its midpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    LikeGood,
    LikeBad,
    /// Confidently between the ends (theta's interval inside 0..1): the
    /// change is spread over several commits.
    Between,
    Unknown,
}

/// One look at a step's three sides.
#[derive(Clone, Debug, PartialEq)]
pub struct Look {
    pub verdict: Verdict,
    /// theta from the sides' means.
    pub theta: f64,
    /// theta's bootstrap interval at the per-look level (one-sided each way).
    pub ci: (f64, f64),
    /// The bootstrap mass on the side of 0.5 opposite the verdict (for
    /// Between: outside 0..1; for Unknown: the smaller side of 0.5).
    pub wrong_mass: f64,
}

/// Place the midpoint `m` between `g` and `b`. `alpha_look` is this look's
/// error allowance on each side; `forced` decides by theta's estimate alone
/// (the fixed-runs mode, which never answers Unknown).
pub fn place(g: &[f64], m: &[f64], b: &[f64], alpha_look: f64, seed: u64, forced: bool) -> Look {
    let theta = theta_of(mean(g), mean(m), mean(b));
    if g.len() < 2 || m.len() < 2 || b.len() < 2 {
        return Look {
            verdict: Verdict::Unknown,
            theta,
            ci: (f64::NAN, f64::NAN),
            wrong_mass: 1.0,
        };
    }
    let gs = resample_means(g, RESAMPLES, stream_seed(seed, 0));
    let ms = resample_means(m, RESAMPLES, stream_seed(seed, 1));
    let bs = resample_means(b, RESAMPLES, stream_seed(seed, 2));
    // A resample whose ends coincide places the midpoint nowhere: it counts
    // on both wrong sides (NaN sorts last, so it is kept out and counted).
    let mut thetas: Vec<f64> = Vec::with_capacity(RESAMPLES);
    let mut nowhere = 0usize;
    for i in 0..RESAMPLES {
        let t = theta_of(gs[i], ms[i], bs[i]);
        if t.is_finite() {
            thetas.push(t);
        } else {
            nowhere += 1;
        }
    }
    // The percentile bootstrap is too narrow with few units: read it at
    // the level the report's small-sample correction expands to (the
    // midpoint against the good end: theta's numerator), so that an early
    // look is not bolder than its alpha.
    let alpha_look = small_sample(g, m, alpha_look);
    let n = RESAMPLES as f64;
    let above = (thetas.iter().filter(|&&t| t >= 0.5).count() + nowhere) as f64 / n;
    let below = (thetas.iter().filter(|&&t| t < 0.5).count() + nowhere) as f64 / n;
    let outside = (thetas.iter().filter(|&&t| t <= 0.0 || t >= 1.0).count() + nowhere) as f64 / n;
    let ci = if thetas.len() >= 2 {
        (
            quantile_linear(&mut thetas, alpha_look),
            quantile_linear(&mut thetas, 1.0 - alpha_look),
        )
    } else {
        (f64::NAN, f64::NAN)
    };
    let verdict = if forced {
        if theta < 0.5 {
            Verdict::LikeGood
        } else {
            Verdict::LikeBad
        }
    } else if above < alpha_look {
        Verdict::LikeGood
    } else if below < alpha_look {
        Verdict::LikeBad
    } else if ci.0 > 0.0 && ci.1 < 1.0 {
        Verdict::Between
    } else {
        Verdict::Unknown
    };
    let wrong_mass = match verdict {
        Verdict::LikeGood => above,
        Verdict::LikeBad => below,
        Verdict::Between => outside,
        Verdict::Unknown => above.min(below),
    };
    Look {
        verdict,
        theta,
        ci,
        wrong_mass,
    }
}

/// The one-sided allowance `alpha` as `expanded_confidence` widens the
/// two-sided level 1 - 2 alpha for `a` against `b`.
fn small_sample(a: &[f64], b: &[f64], alpha: f64) -> f64 {
    let level = expanded_confidence(a, b, 1.0 - 2.0 * alpha);
    ((1.0 - level) / 2.0).min(alpha)
}

/// (m - g) / (b - g); not finite when the ends coincide.
fn theta_of(g: f64, m: f64, b: f64) -> f64 {
    (m - g) / (b - g)
}

/// The mean of the values (NaN for none).
pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Two sides compared as `compare` prints a delta: the ratio of means with
/// its percentile bootstrap CI, and the Mann-Whitney p-value.
#[derive(Clone, Debug, PartialEq)]
pub struct Delta {
    /// other / base - 1.
    pub delta: f64,
    pub ci: Option<(f64, f64)>,
    pub p: f64,
    pub n: (usize, usize),
}

/// `other` against `base` at `confidence`.
pub fn delta(base: &[f64], other: &[f64], confidence: f64, seed: u64) -> Delta {
    let bm = resample_means(base, RESAMPLES, stream_seed(seed, 0));
    let om = resample_means(other, RESAMPLES, stream_seed(seed, 1));
    Delta {
        delta: mean(other) / mean(base) - 1.0,
        ci: ratio_ci(&bm, &om, confidence).map(|(lo, hi)| (lo - 1.0, hi - 1.0)),
        p: mann_whitney_u(base, other).map_or(1.0, |t| t.p),
        n: (base.len(), other.len()),
    }
}

/// Whether the culprit's step (`parent` -> `culprit`) is clearly smaller
/// than the whole change (`good` -> `bad`): the bootstrap interval of the
/// share (culprit's difference / whole difference) at `1 - alpha` lies
/// below 1. Returns the share and its interval.
pub fn share(
    (good, bad): (&[f64], &[f64]),
    (parent, culprit): (&[f64], &[f64]),
    alpha: f64,
    seed: u64,
) -> Option<(f64, (f64, f64))> {
    if [good, bad, parent, culprit].iter().any(|s| s.len() < 2) {
        return None;
    }
    let r = |xs: &[f64], s: u64| resample_means(xs, RESAMPLES, stream_seed(seed, s));
    let (g, b, p, c) = (r(good, 0), r(bad, 1), r(parent, 2), r(culprit, 3));
    let mut shares: Vec<f64> = (0..RESAMPLES)
        .map(|i| (c[i] - p[i]) / (b[i] - g[i]))
        .filter(|s| s.is_finite())
        .collect();
    if shares.len() < RESAMPLES / 2 {
        return None;
    }
    let est = (mean(culprit) - mean(parent)) / (mean(bad) - mean(good));
    let lo = quantile_linear(&mut shares, alpha / 2.0);
    let hi = quantile_linear(&mut shares, 1.0 - alpha / 2.0);
    Some((est, (lo, hi)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noisy(center: f64, n: usize, k: u64) -> Vec<f64> {
        // A fixed spread around the center: deterministic, symmetric.
        (0..n)
            .map(|i| center * (1.0 + 0.02 * (((i as u64 * 7 + k) % 11) as f64 - 5.0) / 5.0))
            .collect()
    }

    #[test]
    fn a_midpoint_like_one_end_is_placed_there() {
        let (g, b) = (noisy(100.0, 20, 1), noisy(110.0, 20, 2));
        let good = place(&g, &noisy(100.0, 20, 3), &b, 0.005, 1, false);
        assert_eq!(good.verdict, Verdict::LikeGood, "{good:?}");
        assert!(good.wrong_mass < 0.005);
        let bad = place(&g, &noisy(110.0, 20, 4), &b, 0.005, 1, false);
        assert_eq!(bad.verdict, Verdict::LikeBad, "{bad:?}");
    }

    #[test]
    fn a_midpoint_halfway_is_between_and_a_vague_one_unknown_unless_forced() {
        let (g, b) = (noisy(100.0, 20, 1), noisy(110.0, 20, 2));
        let half = noisy(105.0, 20, 5);
        assert_eq!(
            place(&g, &half, &b, 0.005, 1, false).verdict,
            Verdict::Between
        );
        let few = [100.0, 106.0, 104.0];
        assert_eq!(
            place(&g, &few, &b, 0.005, 1, false).verdict,
            Verdict::Unknown
        );
        assert_ne!(
            place(&g, &half, &b, 0.005, 1, true).verdict,
            Verdict::Unknown
        );
    }

    #[test]
    fn too_few_units_decide_nothing() {
        let look = place(&[1.0], &[1.0, 2.0], &[3.0, 4.0], 0.01, 1, false);
        assert_eq!(look.verdict, Verdict::Unknown);
    }

    #[test]
    fn a_share_below_one_is_seen() {
        let (g, b) = (noisy(100.0, 30, 1), noisy(120.0, 30, 2));
        let (p, c) = (noisy(100.0, 30, 3), noisy(110.0, 30, 4));
        let (est, (_, hi)) = share((&g, &b), (&p, &c), 0.01, 7).unwrap();
        assert!((est - 0.5).abs() < 0.05 && hi < 1.0, "{est} {hi}");
        let (_, (lo, hi)) = share((&g, &b), (&g, &b), 0.01, 7).unwrap();
        assert!(lo < 1.0 && hi > 1.0);
    }
}
