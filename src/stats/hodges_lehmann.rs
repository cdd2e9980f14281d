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

use crate::stats::mannwhitney::{exact_cdf_table, midranks};
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

/// Number of pairs with fl(o_j - b_i) <= v; `b` and `o` sorted ascending.
/// For fixed i the qualifying j form a prefix of `o`, and that prefix can
/// only grow as b_i grows (rounded subtraction is monotone).
fn count_le(b: &[f64], o: &[f64], v: f64) -> usize {
    let mut j = 0;
    let mut total = 0;
    for &bi in b {
        while j < o.len() && o[j] - bi <= v {
            j += 1;
        }
        total += j;
    }
    total
}

/// The k-th smallest (1-based) pairwise difference o_j - b_i.
fn kth_difference(b: &[f64], o: &[f64], k: usize) -> f64 {
    // Smallest v (in f64 order) with count_le(v) >= k is the answer, since
    // count_le only changes at attained differences.
    let mut lo = key(o[0] - b[b.len() - 1]); // the minimum difference
    let mut hi = key(o[o.len() - 1] - b[0]); // the maximum difference
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if count_le(b, o, unkey(mid)) >= k {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    unkey(lo)
}

fn sorted(xs: &[f64]) -> Vec<f64> {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// Hodges-Lehmann shift other - base with its Moses CI at `confidence`.
/// None when a side is empty, a value is not finite, or confidence is not
/// in (0, 1).
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
        exact_cdf_table(no, nb, total)
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
pub fn median_ratio(base: &[f64], other: &[f64]) -> Option<f64> {
    let mb = median(base)?;
    let mo = median(other)?;
    if mb == 0.0 {
        None
    } else {
        Some(mo / mb)
    }
}
