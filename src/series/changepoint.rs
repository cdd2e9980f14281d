//! Change points in the mean of a series: PELT (Killick, Fearnhead & Eckley
//! 2012) with a Gaussian mean-shift cost for a run's long per-interval
//! series, and binary segmentation with a permutation test
//! ([`binary_segmentation`]) for a history's few per-experiment medians.
//!
//! Cost of a segment = sum of squared deviations from its mean, divided by
//! sigma^2, where sigma is estimated robustly from the first differences
//! (1.4826 * MAD(diff) / sqrt(2)), so a drift or a step does not inflate it.
//! Penalty per change point: 3 ln n (the "modified BIC" of the R package
//! `changepoint`), deliberately conservative so that noise alone rarely yields
//! a change point. Segments are at least [`MIN_SEGMENT`] values long.

use super::theilsen::median;

/// Shortest segment PELT may cut; a single outlier is not a regime.
pub const MIN_SEGMENT: usize = 2;

/// Penalty per change point for a series of `n` values (see module doc).
pub fn penalty(n: usize) -> f64 {
    3.0 * (n.max(2) as f64).ln()
}

/// Robust noise scale of a series: 1.4826 * MAD of first differences / sqrt 2,
/// falling back to the sample standard deviation when that is zero.
///
/// Assumes independent noise whose first differences have variance
/// 2 sigma^2 (no autocorrelation), and normal noise for the 1.4826 factor.
pub fn noise_sigma(xs: &[f64]) -> f64 {
    if xs.len() < 3 {
        return 0.0;
    }
    let d: Vec<f64> = xs.windows(2).map(|w| w[1] - w[0]).collect();
    let md = median(&d).unwrap_or(0.0);
    let dev: Vec<f64> = d.iter().map(|v| (v - md).abs()).collect();
    let s = 1.4826 * median(&dev).unwrap_or(0.0) / 2f64.sqrt();
    if s > 0.0 {
        return s;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    (xs.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
}

/// Indices where a new segment starts (each in 1..n), in increasing order.
/// Empty when the series is too short, constant, or not finite.
///
/// What it assumes, and which of it is checked:
///
/// * Piecewise-constant mean with independent Gaussian noise of one variance
///   (the cost function's model). Not checked; the robust sigma keeps a step
///   or drift from inflating the noise estimate, and the 3 ln n penalty keeps
///   heavy-tailed noise from producing change points easily.
/// * A slow drift is not a step: it may be cut into several segments.
pub fn change_points(xs: &[f64]) -> Vec<usize> {
    let n = xs.len();
    if n < 2 * MIN_SEGMENT || xs.iter().any(|v| !v.is_finite()) {
        return Vec::new();
    }
    let sigma = noise_sigma(xs);
    if sigma <= 0.0 || !sigma.is_finite() {
        return Vec::new();
    }
    // Standardize so the prefix sums do not lose precision.
    let mean = xs.iter().sum::<f64>() / n as f64;
    let mut s1 = vec![0.0; n + 1];
    let mut s2 = vec![0.0; n + 1];
    for (i, v) in xs.iter().enumerate() {
        let z = (v - mean) / sigma;
        s1[i + 1] = s1[i] + z;
        s2[i + 1] = s2[i] + z * z;
    }
    let cost = |s: usize, t: usize| {
        let m = (t - s) as f64;
        let a = s1[t] - s1[s];
        (s2[t] - s2[s]) - a * a / m
    };
    let beta = penalty(n);
    let mut f = vec![f64::INFINITY; n + 1];
    let mut last = vec![0usize; n + 1];
    f[0] = -beta;
    let mut cands: Vec<usize> = vec![0];
    for t in MIN_SEGMENT..=n {
        if t >= 2 * MIN_SEGMENT {
            cands.push(t - MIN_SEGMENT);
        }
        let (mut best, mut arg) = (f64::INFINITY, 0);
        for &s in &cands {
            let v = f[s] + cost(s, t) + beta;
            if v < best {
                best = v;
                arg = s;
            }
        }
        f[t] = best;
        last[t] = arg;
        // PELT pruning: a start that cannot beat the optimum now never will.
        let ft = f[t];
        cands.retain(|&s| f[s] + cost(s, t) <= ft);
    }
    let mut cps = Vec::new();
    let mut t = n;
    while t > 0 {
        let s = last[t];
        if s > 0 {
            cps.push(s);
        }
        t = s;
    }
    cps.reverse();
    cps
}

/// The split statistic of `x` at `k`: |mean(x[..k]) - mean(x[k..])| *
/// sqrt(k (n-k) / n) (a standardised CUSUM), maximised over k by trying
/// each k term by term; (k, stat). O(n^2): only for values that are not
/// all finite, where prefix sums are undefined (see [`best_split`]).
fn best_split_direct(x: &[f64]) -> (usize, f64) {
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let n = x.len() as f64;
    (1..x.len())
        .map(|k| {
            let (l, r) = x.split_at(k);
            let s = (mean(l) - mean(r)).abs() * ((k as f64) * (n - k as f64) / n).sqrt();
            (k, s)
        })
        .fold((0, f64::NEG_INFINITY), |b, c| if c.1 > b.1 { c } else { b })
}

/// Relative distance from the largest statistic within which two splits
/// count as tied (the first is taken): far above the rounding of the prefix
/// sums (about 1e-13 relative for thousands of values), far below any
/// difference a permutation test could tell.
const TIE: f64 = 1e-9;

/// Every split's statistic of `x`, from prefix sums of the values centred on
/// their mean: with S_k the sum of the first k, the statistic at k is
/// |n S_k - k S_n| / sqrt(n k (n-k)), the quantity [`best_split_direct`]
/// computes term by term, in O(1) per k. Calls `each(k, stat)` for k in 1..n and returns the
/// largest statistic (NaN when the values are not all finite).
fn for_each_split(x: &[f64], mut each: impl FnMut(usize, f64)) -> f64 {
    let n = x.len();
    let nf = n as f64;
    let c = x.iter().sum::<f64>() / nf;
    if !c.is_finite() {
        return f64::NAN;
    }
    let total: f64 = x.iter().map(|v| v - c).sum();
    let (mut s, mut max) = (0.0, f64::NEG_INFINITY);
    for k in 1..n {
        s += x[k - 1] - c;
        let kf = k as f64;
        let stat = (nf * s - kf * total).abs() / (nf * kf * (nf - kf)).sqrt();
        max = max.max(stat);
        each(k, stat);
    }
    max
}

/// The largest split statistic of `x` (see [`best_split`]); O(n) for
/// finite values.
fn max_split(x: &[f64]) -> f64 {
    let max = for_each_split(x, |_, _| {});
    if max.is_finite() {
        max
    } else {
        best_split_direct(x).1
    }
}

/// The split of `x` with the largest statistic, |mean(x[..k]) -
/// mean(x[k..])| * sqrt(k (n-k) / n) (a standardised CUSUM), ties (within
/// [`TIE`]) to the first; (k, the largest statistic). O(n) by prefix sums
/// (see [`for_each_split`]), where trying each k term by term was O(n^2)
/// per call and made `history` quadratic in experiments. The permutation
/// test compares statistics computed the same way on both sides, so a
/// shuffle that leaves the values as they were (all equal, say) ties with
/// the observed statistic exactly.
fn best_split(x: &[f64]) -> (usize, f64) {
    let max = for_each_split(x, |_, _| {});
    if !max.is_finite() {
        return best_split_direct(x);
    }
    let floor = max - TIE * max;
    let mut first = None;
    for_each_split(x, |k, stat| {
        if first.is_none() && stat >= floor {
            first = Some(k);
        }
    });
    // The finite maximum was reached at some k, so `first` is set.
    (first.unwrap_or(1), max)
}

/// Change points of a short sequence of independent values (a history's
/// per-experiment medians) by binary segmentation, where [`change_points`]
/// (PELT) would need a noise scale that a handful of values cannot give:
/// the best split of a segment (see [`best_split`]) is kept when a
/// permutation test (the segment's values shuffled `perms` times, seeded)
/// finds a split statistic at least as large in fewer than `alpha` of the
/// orderings; both halves are then searched again. A segment needs at
/// least 5 values before any split can reach p < 0.05 (4! = 24
/// orderings). Each segment costs O(perms n), so one level of the search
/// costs O(perms n) however the segments fall. Returns (index of the first value after the change, p), in
/// increasing order of index.
///
/// Assumes the values are exchangeable when there is no change (checked by
/// nothing: the permutation test is exact under that assumption only).
pub fn binary_segmentation(xs: &[f64], alpha: f64, perms: usize, seed: u64) -> Vec<(usize, f64)> {
    segment(xs, (alpha, perms, seed), best_split, max_split)
}

/// [`binary_segmentation`] with its split search given: `split` finds a
/// segment's best split and its statistic, `stat` the largest statistic
/// of a shuffled copy (the tests give the term-by-term search for both).
fn segment(
    xs: &[f64],
    (alpha, perms, seed): (f64, usize, u64),
    split: impl Fn(&[f64]) -> (usize, f64),
    stat: impl Fn(&[f64]) -> f64,
) -> Vec<(usize, f64)> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let mut out = Vec::new();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut stack = vec![(0usize, xs.len())];
    while let Some((lo, hi)) = stack.pop() {
        if hi - lo < 2 {
            continue;
        }
        let seg = &xs[lo..hi];
        let (k, obs) = split(seg);
        if obs.is_nan() || obs <= 0.0 {
            continue;
        }
        let mut shuffled = seg.to_vec();
        let mut ge = 0usize;
        for _ in 0..perms {
            shuffled.shuffle(&mut rng);
            if stat(&shuffled) >= obs * (1.0 - 1e-12) {
                ge += 1;
            }
        }
        let p = (ge + 1) as f64 / (perms + 1) as f64;
        if p < alpha {
            out.push((lo + k, p));
            stack.push((lo, lo + k));
            stack.push((lo + k, hi));
        }
    }
    out.sort_by_key(|c| c.0);
    out
}

#[cfg(test)]
mod tests {
    use super::{best_split, best_split_direct, binary_segmentation};
    use rand::{Rng, SeedableRng};

    #[test]
    fn a_step_in_a_short_sequence_is_found_where_it_is_and_a_level_has_none() {
        // Ten medians with a 10% step after the fifth, noise well below it.
        let noise = [0.3, -0.2, 0.1, -0.4, 0.2, -0.1, 0.4, -0.3, 0.0, 0.2];
        let step: Vec<f64> = (0..10)
            .map(|i| if i < 5 { 100.0 } else { 110.0 } + noise[i])
            .collect();
        let found = binary_segmentation(&step, 0.05, 999, 7);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, 5);
        assert!(found[0].1 < 0.05);
        let level: Vec<f64> = noise.iter().map(|e| 100.0 + e).collect();
        assert!(binary_segmentation(&level, 0.05, 999, 7).is_empty());
        // Equal values give no split statistic at all.
        assert!(binary_segmentation(&[3.0; 8], 0.05, 999, 7).is_empty());
    }

    /// The search as it was before prefix sums: every split tried term by
    /// term, in every permutation too. The reference the O(n) one must
    /// agree with.
    fn binary_segmentation_direct(
        xs: &[f64],
        alpha: f64,
        perms: usize,
        seed: u64,
    ) -> Vec<(usize, f64)> {
        super::segment(xs, (alpha, perms, seed), best_split_direct, |s| {
            best_split_direct(s).1
        })
    }

    /// Series of 5 to 80 values: noise alone, one step, several steps,
    /// values on a coarse grid (many equal values), a drift; seeded.
    fn series(rng: &mut rand_chacha::ChaCha8Rng, case: usize) -> Vec<f64> {
        let n = rng.random_range(5..80);
        let steps: Vec<usize> = (0..case % 4).map(|_| rng.random_range(1..n)).collect();
        (0..n)
            .map(|i| {
                let level = 100.0 + 7.0 * steps.iter().filter(|&&s| i >= s).count() as f64;
                let noise: f64 = rng.random_range(-3.0..3.0);
                let v = level + noise + if case % 5 == 4 { 0.2 * i as f64 } else { 0.0 };
                if case % 3 == 2 {
                    v.round()
                } else {
                    v
                }
            })
            .collect()
    }

    #[test]
    fn prefix_sums_find_the_splits_and_p_values_that_trying_every_split_found() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(34);
        let mut found = 0;
        for case in 0..300 {
            let xs = series(&mut rng, case);
            let fast = binary_segmentation(&xs, 0.05, 199, case as u64);
            let direct = binary_segmentation_direct(&xs, 0.05, 199, case as u64);
            assert_eq!(fast, direct, "case {case}: {xs:?}");
            found += fast.len();
            // The best split itself, on every prefix of the series.
            for end in 2..=xs.len() {
                let (k, stat) = best_split(&xs[..end]);
                let (kd, statd) = best_split_direct(&xs[..end]);
                assert_eq!(k, kd, "case {case}, first {end}: {:?}", &xs[..end]);
                assert!(
                    (stat - statd).abs() <= 1e-9 * statd.max(1e-300),
                    "{stat} {statd}"
                );
            }
        }
        // The comparison is not vacuous: most stepped series were split.
        assert!(found > 150, "{found} splits");
    }

    /// The best split of each of 60 series (3 to 119 values; noise, a
    /// step, many equal values) is ruptures' single split (Binseg, l2
    /// cost, which maximises the square of this statistic), from
    /// tests/reference/changepoint_binseg.json, or, where two splits tie
    /// exactly (equal values make equal means), one of equal statistic:
    /// which of the tied ones each takes is its own rounding's choice.
    #[test]
    fn the_best_split_is_ruptures_binseg_split() {
        let text = include_str!("../../tests/reference/changepoint_binseg.json");
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        let cases = v["single"].as_array().unwrap();
        assert_eq!(cases.len(), 60);
        let mut same = 0;
        for c in cases {
            let x: Vec<f64> = c["x"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            let want = c["split"].as_u64().unwrap() as usize;
            let (k, stat) = best_split(&x);
            // The statistic at ruptures' split, term by term.
            let at = |k: usize| {
                let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
                let n = x.len() as f64;
                (mean(&x[..k]) - mean(&x[k..])).abs() * (k as f64 * (n - k as f64) / n).sqrt()
            };
            if k == want {
                same += 1;
            } else {
                assert!(
                    (at(want) - stat).abs() <= 1e-9 * stat,
                    "{}: ours {k} ({stat}), ruptures {want} ({}): {x:?}",
                    c["name"],
                    at(want)
                );
            }
        }
        assert!(same >= 50, "{same} of 60 the same split");
    }
}
