//! Mann-Whitney U test (two-sided), matching scipy.stats.mannwhitneyu.
//!
//! `mann_whitney_u(a, b)` reproduces
//! `scipy.stats.mannwhitneyu(a, b, alternative='two-sided',
//! use_continuity=True, method=M)` (SciPy 1.17), with M chosen as below
//! (SciPy's 'auto', widened to the exact method up to 50 a side):
//!
//! * U is U1 = R1 - n1 (n1 + 1) / 2, R1 the sum of the mid-ranks of `a` in
//!   the pooled sample (ties share the average rank).
//! * The exact null distribution is used whenever there are no ties in the
//!   pooled sample and either sample has at most 8 values (SciPy's 'auto'
//!   rule, `_mwu_choose_method`) or both have at most [`EXACT_MAX_PER_SIDE`]
//!   (50) values. This is where sysdelta departs from SciPy's 'auto': from
//!   9 to 50 runs a side SciPy uses the normal approximation, whose p-value
//!   can sit on the other side of 0.05 from the exact one; the p-value here
//!   then equals `scipy.stats.mannwhitneyu(..., method='exact')` (and
//!   benchstat's). With any tie, or more than 50 values on both sides, the
//!   normal approximation is used, as in SciPy.
//! * Exact: p = 2 P(U >= max(U1, U2)) under H0, clipped to 1, with the null
//!   distribution counted exactly (see [`exact_cdf`]); at 50 x 50 that is
//!   50 x 1,250 integer additions, a few microseconds.
//! * Asymptotic: z = (max(U1, U2) - n1 n2 / 2 - 0.5) / s with
//!   s^2 = n1 n2 / 12 * ((n + 1) - sum(t^3 - t) / (n (n - 1))), t the tie
//!   group sizes; p = 2 * (1 - Phi(z)), clipped to 1. When every value is
//!   identical s is 0, z is -inf and p is 1 (as in SciPy), not NaN.

use crate::stats::special::normal_sf;
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

/// Mid-ranks (1-based, ties averaged) of the pooled sample, and the sizes of
/// the tie groups larger than one. Values must be finite; -0.0 and 0.0 tie.
pub fn midranks(xs: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut idx: Vec<usize> = (0..xs.len()).collect();
    // Finite values only, so partial_cmp never fails; it also makes -0 == 0.
    idx.sort_by(|&i, &j| xs[i].partial_cmp(&xs[j]).unwrap());
    let mut ranks = vec![0.0; xs.len()];
    let mut ties = Vec::new();
    let mut start = 0;
    while start < idx.len() {
        let mut end = start + 1;
        while end < idx.len() && xs[idx[end]] == xs[idx[start]] {
            end += 1;
        }
        // Ranks start+1 ..= end share their average.
        let avg = (start + 1 + end) as f64 / 2.0;
        for &i in &idx[start..end] {
            ranks[i] = avg;
        }
        if end - start > 1 {
            ties.push(end - start);
        }
        start = end;
    }
    (ranks, ties)
}

/// Up to this many values on both sides (and no ties), the p-value comes
/// from the exact null distribution even where SciPy's 'auto' would use the
/// normal approximation. C(100, 50) fits u128, so the counts stay exact.
pub const EXACT_MAX_PER_SIDE: usize = 50;

/// Which p-value [`mann_whitney_u`] computes for samples of sizes n1 and n2
/// with (`ties`) or without ties in the pooled sample.
pub fn choose_method(n1: usize, n2: usize, ties: bool) -> Method {
    let scipy_exact = n1 <= 8 || n2 <= 8;
    let small = n1 <= EXACT_MAX_PER_SIDE && n2 <= EXACT_MAX_PER_SIDE;
    if !ties && (scipy_exact || small) {
        Method::Exact
    } else {
        Method::Asymptotic
    }
}

/// Two-sided Mann-Whitney U test of `a` against `b`.
///
/// None when either sample is empty or any value is not finite.
///
/// Method: the rank-sum test of the module doc (exact null distribution or
/// the tie- and continuity-corrected normal approximation).
///
/// What it assumes, and which of it is checked:
///
/// * Runs are independent within and across samples. Not checked here;
///   randomized interleaved blocks make it plausible, and the report's drift
///   check (Mann-Kendall over a config's runs) catches a trend over time.
/// * Under H0 both samples come from one distribution (exchangeable runs):
///   the p-value is that of "same distribution", not of "same median" or
///   "same mean". Samples of equal location but different spread or shape
///   are rejected more often than alpha. Not checked.
/// * A continuous distribution, hence no ties, for the exact p-value. Checked:
///   any tie switches to the tie-corrected normal approximation, which is
///   approximate at small n (heavily tied data, e.g. maxrss in KiB, get a
///   p-value that is only roughly calibrated). No warning is given.
/// * Enough runs to reject at all: checked by the report
///   ([`crate::stats::detect::too_few_runs`]).
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    if a.is_empty() || b.is_empty() || a.iter().chain(b).any(|x| !x.is_finite()) {
        return None;
    }
    let (n1, n2) = (a.len(), b.len());
    let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let (ranks, ties) = midranks(&pooled);
    let r1: f64 = ranks[..n1].iter().sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let u2 = (n1 * n2) as f64 - u1;
    let u = u1.max(u2);
    let method = choose_method(n1, n2, !ties.is_empty());
    let p = if method == Method::Exact {
        // Without ties U is an integer; kc = n1 n2 - U <= n1 n2 / 2 and by
        // symmetry P(U >= u) = P(U <= n1 n2 - u).
        let kc = (n1 * n2) as u64 - u.round() as u64;
        2.0 * exact_cdf(n1, n2, kc)
    } else {
        2.0 * normal_sf(asymptotic_z(u, n1, n2, &ties))
    };
    Some(MannWhitney {
        u: u1,
        p: p.clamp(0.0, 1.0),
        method,
    })
}

/// Continuity-corrected, tie-corrected z of U (SciPy's `_get_mwu_z`).
fn asymptotic_z(u: f64, n1: usize, n2: usize, ties: &[usize]) -> f64 {
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let n = n1f + n2f;
    let tie_term: f64 = ties
        .iter()
        .map(|&t| {
            let t = t as f64;
            t * t * t - t
        })
        .sum();
    let s = (n1f * n2f / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)))).sqrt();
    let numerator = u - n1f * n2f / 2.0 - 0.5;
    if s == 0.0 {
        // All values tie: numerator is -0.5, so z = -inf and p = 1.
        return if numerator < 0.0 {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
    }
    numerator / s
}

/// P(U <= k) under H0 for samples of sizes n1 and n2 without ties.
///
/// The number of arrangements with U = u is the coefficient of q^u in the
/// Gaussian binomial [n1 + n2 choose m]_q = prod_{i=1..m} (1 - q^(M+i)) /
/// (1 - q^i), with m = min(n1, n2) and M = max(n1, n2). We build it by
/// dynamic programming, one factor at a time, keeping only the coefficients
/// 0..=k: dividing by (1 - q^i) is a running sum with stride i, multiplying
/// by (1 - q^(M+i)) a shifted subtraction. Cost O(m * k), memory O(k).
/// Counts are exact in u128 while the total C(n1 + n2, m) fits (always up
/// to 50 x 50; with m <= 8 up to M of about 200,000); beyond that the same
/// recurrence runs in f64.
pub fn exact_cdf(n1: usize, n2: usize, k: u64) -> f64 {
    let m = n1.min(n2);
    let big = n1.max(n2);
    let total_max = (m * big) as u64;
    if k >= total_max {
        return 1.0;
    }
    let k = k as usize;
    if let Some(table) = shared_cdf_table(n1, n2) {
        return table[k];
    }
    match gaussian_binomial_u128(m, big, k) {
        Some(coeffs) => {
            let total = binomial_u128(n1 + n2, m).expect("fits when coefficients fit");
            let below: u128 = coeffs.iter().sum();
            below as f64 / total as f64
        }
        None => {
            let coeffs = gaussian_binomial_f64(m, big, k);
            let total = binomial_f64(n1 + n2, m);
            coeffs.iter().sum::<f64>() / total
        }
    }
}

/// C(n, k) in u128, None on overflow.
fn binomial_u128(n: usize, k: usize) -> Option<u128> {
    let k = k.min(n - k);
    let mut acc: u128 = 1;
    for i in 0..k {
        // acc * (n - i) / (i + 1) stays an integer at every step.
        acc = acc.checked_mul((n - i) as u128)? / (i as u128 + 1);
    }
    Some(acc)
}

fn binomial_f64(n: usize, k: usize) -> f64 {
    let k = k.min(n - k);
    let mut ln = 0.0;
    for i in 0..k {
        ln += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
    }
    ln.exp()
}

/// Coefficients 0..=k of [m + big choose m]_q, None if a count overflows.
fn gaussian_binomial_u128(m: usize, big: usize, k: usize) -> Option<Vec<u128>> {
    // The full polynomial's coefficients never exceed C(m + big, m).
    binomial_u128(m + big, m)?;
    let mut c = vec![0u128; k + 1];
    c[0] = 1;
    for i in 1..=m {
        // Divide by (1 - q^i): running sum with stride i.
        for u in i..=k {
            c[u] = c[u].checked_add(c[u - i])?;
        }
        // Multiply by (1 - q^(big + i)). The result has non-negative
        // coefficients, so processing u downwards reads unmodified values.
        let shift = big + i;
        for u in (shift..=k).rev() {
            c[u] -= c[u - shift];
        }
    }
    Some(c)
}

/// Same recurrence in f64 for the (rare) sizes whose counts overflow u128.
/// Counts are kept unscaled (f64 reaches 1e308); the subtraction step can
/// cancel, so this path is less precise than the integer one.
fn gaussian_binomial_f64(m: usize, big: usize, k: usize) -> Vec<f64> {
    let mut c = vec![0f64; k + 1];
    c[0] = 1.0;
    for i in 1..=m {
        for u in i..=k {
            c[u] += c[u - i];
        }
        let shift = big + i;
        for u in (shift..=k).rev() {
            c[u] -= c[u - shift];
        }
    }
    c
}

/// Sizes whose whole null distribution [`shared_cdf_table`] keeps: both
/// within [`EXACT_MAX_PER_SIDE`], so a table is at most 2,501 values.
const SHARED_TABLES_MAX: usize = 64;

/// P(U <= k) for k = 0..=n1 n2 under H0 without ties, for samples of at
/// most [`EXACT_MAX_PER_SIDE`] a side, made once per process and shared:
/// a report compares many cells of the same sizes (100 Go benchmarks of
/// 30 runs a side asked for the same table 200 times, a tenth of the
/// report's time), and the rank test and the Hodges-Lehmann interval both
/// read it. The values are those [`exact_cdf_table`] makes (bit for bit:
/// the same counts, summed and divided the same way). None for larger
/// sizes; once [`SHARED_TABLES_MAX`] sizes are kept, a new size's table
/// is made for its caller and not kept.
pub fn shared_cdf_table(n1: usize, n2: usize) -> Option<std::sync::Arc<[f64]>> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    type Tables = Mutex<HashMap<(usize, usize), Arc<[f64]>>>;
    static TABLES: OnceLock<Tables> = OnceLock::new();
    if n1 > EXACT_MAX_PER_SIDE || n2 > EXACT_MAX_PER_SIDE || n1 == 0 || n2 == 0 {
        return None;
    }
    // The distribution depends on the two sizes, not on which side is which.
    let key = (n1.min(n2), n1.max(n2));
    let tables = TABLES.get_or_init(Default::default);
    // A panic elsewhere while holding the lock leaves the tables whole
    // (an insert of a finished table): use them, never fall back silently
    // to another method.
    let lock = || {
        tables
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    if let Some(t) = lock().get(&key) {
        return Some(t.clone());
    }
    // Made outside the lock: two threads may both make it; one is kept.
    let table: Arc<[f64]> = exact_cdf_table(key.0, key.1, key.0 * key.1)?.into();
    let mut kept = lock();
    if kept.len() < SHARED_TABLES_MAX {
        kept.entry(key).or_insert_with(|| table.clone());
    }
    Some(table)
}

/// P(U <= k) for k = 0..=kmax under H0 without ties, from exact counts;
/// None when the counts overflow u128 (see [`exact_cdf`]).
pub fn exact_cdf_table(n1: usize, n2: usize, kmax: usize) -> Option<Vec<f64>> {
    let m = n1.min(n2);
    let big = n1.max(n2);
    let kmax = kmax.min(m * big);
    let coeffs = gaussian_binomial_u128(m, big, kmax)?;
    let total = binomial_u128(n1 + n2, m)? as f64;
    let mut acc: u128 = 0;
    Some(
        coeffs
            .iter()
            .map(|c| {
                acc += c;
                acc as f64 / total
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The f64 fallback (used only past u128) against the exact integer
    /// counts where both work: tail sums agree to 1e-12 relative.
    #[test]
    fn f64_counts_match_exact_counts() {
        for (m, big) in [(8usize, 3000usize), (5, 20_000), (8, 40)] {
            let kmax = m * big / 2;
            let exact = gaussian_binomial_u128(m, big, kmax).unwrap();
            let approx = gaussian_binomial_f64(m, big, kmax);
            let (mut se, mut sa) = (0u128, 0f64);
            for k in 0..=kmax {
                se += exact[k];
                sa += approx[k];
                if k % 97 == 0 || k == kmax {
                    let rel = (sa - se as f64).abs() / se as f64;
                    assert!(rel < 1e-12, "m={m} big={big} k={k}: rel {rel:e}");
                }
            }
        }
    }

    /// The shared table holds, bit for bit, what each caller computed for
    /// itself before it was shared, for both orders of the sizes.
    #[test]
    fn shared_tables_equal_the_counts_computed_alone() {
        for (n1, n2) in [(1usize, 1usize), (3, 7), (30, 30), (50, 49), (12, 40)] {
            let shared = shared_cdf_table(n1, n2).unwrap();
            assert_eq!(shared, shared_cdf_table(n2, n1).unwrap());
            let total = binomial_u128(n1 + n2, n1.min(n2)).unwrap();
            for k in 0..n1 * n2 {
                let coeffs = gaussian_binomial_u128(n1.min(n2), n1.max(n2), k).unwrap();
                let alone = coeffs.iter().sum::<u128>() as f64 / total as f64;
                assert_eq!(shared[k].to_bits(), alone.to_bits(), "{n1}x{n2} k={k}");
                assert_eq!(exact_cdf(n1, n2, k as u64).to_bits(), alone.to_bits());
            }
        }
        assert!(shared_cdf_table(51, 3).is_none());
    }
}
