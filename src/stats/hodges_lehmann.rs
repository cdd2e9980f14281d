//! Hodges-Lehmann shift with its rank-based CI, and the median ratio.
//!
//! The shift estimate is the median of all n_b * n_o pairwise differences
//! other_j - base_i. Its CI is Moses' distribution-free interval: the
//! order statistics D_(k) and D_(N + 1 - k) of the N = n_b n_o sorted
//! differences (1-based), with k chosen from the Mann-Whitney null
//! distribution:
//!
//! * exact (as R's `wilcox.test(other, base, conf.int = TRUE)` when both
//!   samples have fewer than 50 values and there are no ties in the pooled
//!   sample): k = qwilcox(alpha/2, n_o, n_b), the smallest k with
//!   P(U <= k) >= alpha/2, and k = 1 if that is 0;
//! * otherwise the normal approximation of Hollander & Wolfe:
//!   k = floor(N/2 - z_{1-alpha/2} s), s the tie-corrected standard
//!   deviation of U, at least 1. (R's large-sample branch instead inverts
//!   the continuity-corrected test by root finding; its interval differs
//!   slightly, and its point estimate is not the median of differences.)
//!
//! Order statistics are found by selection over the implicit matrix of
//! differences (bisection on the f64 order, counting pairs with two
//! pointers), so memory is O(n_b + n_o) and time O((n_b + n_o) * 64), never
//! O(n_b n_o).

use crate::stats::mannwhitney::{midranks, shared_cdf_table};
use crate::stats::special::normal_quantile;
use crate::stats::summary::median;

/// Hodges-Lehmann estimate and Moses CI of the shift other - base.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct ShiftEstimate {
    /// Median of the pairwise differences other_j - base_i.
    pub shift: f64,
    pub lo: f64,
    pub hi: f64,
    /// 1-based rank k of the lower bound among the sorted differences.
    pub k: usize,
    /// Whether k came from the exact null distribution.
    pub exact: bool,
}

/// Per row i of the implicit difference matrix (row i holds o_j - b_i for
/// ascending j), how many entries are at most `v`; returns their sum. With
/// `b` and `o` sorted ascending each row is ascending, and a row's count can
/// only grow as b_i grows (rounded subtraction is monotone), so one pointer
/// sweeps `o` once for all rows.
fn row_counts(b: &[f64], o: &[f64], v: f64, counts: &mut [usize]) -> usize {
    let mut j = 0;
    let mut total = 0;
    for (c, &bi) in counts.iter_mut().zip(b) {
        while j < o.len() && o[j] - bi <= v {
            j += 1;
        }
        *c = j;
        total += j;
    }
    total
}

/// Map f64 to u64 so that the integer order is the numeric order.
fn key(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

fn unkey(k: u64) -> f64 {
    if k >> 63 == 1 {
        f64::from_bits(k & !(1 << 63))
    } else {
        f64::from_bits(!k)
    }
}

/// Rounds of value bisection before falling back to bisection of the f64
/// bit order, which ends within 64 rounds whatever the values' spread.
const VALUE_ROUNDS: usize = 32;

/// The k-th smallest (1-based) pairwise difference o_j - b_i, computed as
/// fl(o_j - b_i) exactly as a sort of all n_b n_o differences would give it.
///
/// Selection over the implicit matrix: each row i (entries o_j - b_i,
/// ascending in j) keeps a window [left, right) of candidate columns. A
/// round takes the midpoint of the smallest and largest candidate, counts
/// the entries at most that pivot in every row in one O(n_b + n_o) sweep,
/// and shrinks the windows to the side that holds rank k; at least one
/// candidate leaves each round. Once few candidates remain they are
/// selected directly. Bisecting values (not ranks) suits measured data,
/// which is dense where the ranks are: about ten rounds for n = 1,000
/// against 64 for bisection of the bit order, which still bounds the worst
/// case. Memory O(n_b + n_o), never O(n_b n_o).
fn kth_difference(b: &[f64], o: &[f64], k: usize) -> f64 {
    let nb = b.len();
    let mut left = vec![0usize; nb];
    let mut right = vec![o.len(); nb];
    let mut le = vec![0usize; nb];
    // How many differences rank below every window: the sum of `left`.
    let mut skipped = 0usize;
    for round in 0.. {
        let (mut candidates, mut lo, mut hi) = (0usize, f64::INFINITY, f64::NEG_INFINITY);
        for i in 0..nb {
            if left[i] < right[i] {
                candidates += right[i] - left[i];
                lo = lo.min(o[left[i]] - b[i]);
                hi = hi.max(o[right[i] - 1] - b[i]);
            }
        }
        if lo == hi {
            return lo;
        }
        let rank = k - skipped; // 1-based rank among the candidates
        if candidates <= 2 * (nb + o.len()) {
            let mut rest: Vec<f64> = left
                .iter()
                .zip(&right)
                .zip(b)
                .flat_map(|((&l, &r), &bi)| o[l..r].iter().map(move |&oj| oj - bi))
                .collect();
            let (_, v, _) = rest.select_nth_unstable_by(rank - 1, f64::total_cmp);
            return *v;
        }
        let mut pivot = if round < VALUE_ROUNDS {
            lo + (hi - lo) / 2.0
        } else {
            unkey(key(lo) + (key(hi) - key(lo)) / 2)
        };
        // lo <= pivot < hi, so either side of the split drops a candidate.
        if !(pivot >= lo && pivot < hi) {
            pivot = lo;
        }
        let at_most = row_counts(b, o, pivot, &mut le);
        if k <= at_most {
            for i in 0..nb {
                right[i] = right[i].min(le[i]);
            }
        } else {
            for i in 0..nb {
                left[i] = left[i].max(le[i]);
            }
            skipped = left.iter().sum();
        }
    }
    unreachable!("every round drops a candidate")
}

fn sorted(xs: &[f64]) -> Vec<f64> {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// Hodges-Lehmann shift other - base with its Moses CI at `confidence`.
/// None when a side is empty, a value is not finite, or confidence is not
/// in (0, 1).
///
/// Method: median of pairwise differences, Moses CI (module doc).
///
/// What it assumes, and which of it is checked:
///
/// * Independent runs, as [`crate::stats::mannwhitney::mann_whitney_u`]. Not
///   checked here (the report's drift check catches a trend).
/// * A pure shift model: other is base moved by a constant (same shape and
///   spread). Only then is the estimate "the" shift and the CI's coverage
///   nominal; with different spreads it estimates the median of the
///   differences, and the interval can cover less. Not checked.
/// * Continuity (no ties) for the exact k; with ties the tie-corrected normal
///   k is used, which is approximate at small n. Not warned.
pub fn hodges_lehmann(base: &[f64], other: &[f64], confidence: f64) -> Option<ShiftEstimate> {
    if base.is_empty()
        || other.is_empty()
        || base.iter().chain(other).any(|x| !x.is_finite())
        || !(confidence > 0.0 && confidence < 1.0)
    {
        return None;
    }
    let b = sorted(base);
    let o = sorted(other);
    let (nb, no) = (b.len(), o.len());
    let total = nb * no;
    let shift = if total % 2 == 1 {
        kth_difference(&b, &o, total / 2 + 1)
    } else {
        (kth_difference(&b, &o, total / 2) + kth_difference(&b, &o, total / 2 + 1)) / 2.0
    };
    let alpha = 1.0 - confidence;
    let pooled: Vec<f64> = base.iter().chain(other).copied().collect();
    let (_, ties) = midranks(&pooled);
    let exact_table = if nb < 50 && no < 50 && ties.is_empty() {
        shared_cdf_table(no, nb)
    } else {
        None
    };
    let (k, exact) = match exact_table {
        Some(cdf) => {
            let q = cdf.iter().position(|&p| p >= alpha / 2.0).unwrap_or(total);
            (q.max(1), true)
        }
        None => {
            let (n1, n2) = (no as f64, nb as f64);
            let n = n1 + n2;
            let tie_term: f64 = ties
                .iter()
                .map(|&t| {
                    let t = t as f64;
                    t * t * t - t
                })
                .sum();
            let s = (n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)))).sqrt();
            let z = normal_quantile(1.0 - alpha / 2.0);
            let k = (total as f64 / 2.0 - z * s).floor();
            ((k.max(1.0) as usize).min(total), false)
        }
    };
    // Upper bound is D_(N + 1 - k); for tiny samples keep lo <= hi.
    let upper_rank = (total + 1 - k).max(k);
    Some(ShiftEstimate {
        shift,
        lo: kth_difference(&b, &o, k),
        hi: kth_difference(&b, &o, upper_rank),
        k,
        exact,
    })
}

/// median(other) / median(base); None when either is empty or not finite,
/// or the base median is 0.
///
/// A point estimate only: it assumes nothing beyond a positive base median
/// and carries no interval; the report uses it for display, not for the
/// verdict.
pub fn median_ratio(base: &[f64], other: &[f64]) -> Option<f64> {
    let mb = median(base)?;
    let mo = median(other)?;
    if mb == 0.0 {
        None
    } else {
        Some(mo / mb)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// Every k, against a sort of all differences, on samples with ties,
    /// negative values and unequal sizes (the selection must give exactly
    /// the value a sort gives, rounding included).
    #[test]
    fn kth_difference_matches_sorting_all_differences() {
        let mut rng = SmallRng::seed_from_u64(7);
        for (nb, no, levels) in [
            (1, 1, 3),
            (3, 8, 4),
            (20, 13, 5),
            (40, 60, 1000),
            (90, 70, 7),
        ] {
            let draw = |rng: &mut SmallRng, n: usize| -> Vec<f64> {
                let mut v: Vec<f64> = (0..n)
                    .map(|_| (rng.random_range(0..levels) as f64 - 2.0) * 0.37 + 1e3)
                    .collect();
                v.sort_by(f64::total_cmp);
                v
            };
            let b = draw(&mut rng, nb);
            let o = draw(&mut rng, no);
            let mut all: Vec<f64> = b
                .iter()
                .flat_map(|&bi| o.iter().map(move |&oj| oj - bi))
                .collect();
            all.sort_by(f64::total_cmp);
            for k in 1..=all.len() {
                assert_eq!(
                    kth_difference(&b, &o, k),
                    all[k - 1],
                    "nb {nb} no {no} k {k}"
                );
            }
        }
        // Large enough for many pivot rounds: a sample of ranks, both ends.
        let b: Vec<f64> = {
            let mut v: Vec<f64> = (0..700).map(|_| rng.random_range(-5.0..5.0)).collect();
            v.sort_by(f64::total_cmp);
            v
        };
        let o: Vec<f64> = {
            let mut v: Vec<f64> = (0..600)
                .map(|_| rng.random_range(-4.0..6.0f64).round())
                .collect();
            v.sort_by(f64::total_cmp);
            v
        };
        let mut all: Vec<f64> = b
            .iter()
            .flat_map(|&bi| o.iter().map(move |&oj| oj - bi))
            .collect();
        all.sort_by(f64::total_cmp);
        for k in [1, 2, 999, 210_000, 210_001, 419_999, 420_000] {
            assert_eq!(kth_difference(&b, &o, k), all[k - 1], "k {k}");
        }
    }

    /// Values over 600 decades with both signs: halving the value range
    /// barely moves the ranks, so selection runs past VALUE_ROUNDS into
    /// bisection of the bit order, which must still give the exact answer.
    #[test]
    fn kth_difference_is_exact_over_extreme_spreads() {
        let mut rng = SmallRng::seed_from_u64(11);
        let mut draw = |n: usize| -> Vec<f64> {
            let mut v: Vec<f64> = (0..n)
                .map(|_| {
                    let x = 10f64.powf(rng.random_range(-300.0..300.0));
                    if rng.random_bool(0.5) {
                        x
                    } else {
                        -x
                    }
                })
                .collect();
            v.sort_by(f64::total_cmp);
            v
        };
        let (b, o) = (draw(120), draw(100));
        let mut all: Vec<f64> = b
            .iter()
            .flat_map(|&bi| o.iter().map(move |&oj| oj - bi))
            .collect();
        all.sort_by(f64::total_cmp);
        for k in (1..=all.len()).step_by(397).chain([6000, 6001, all.len()]) {
            assert_eq!(kth_difference(&b, &o, k), all[k - 1], "k {k}");
        }
    }
}
