//! Joint bootstrap of many metrics measured on the same runs.
//!
//! The run is the unit of replication: a bootstrap resample draws runs with
//! replacement. When one cell (config x workload) reports m metrics on the
//! same n runs, one resample of run indices serves all m metrics, so each
//! index draw feeds m values that sit next to each other in memory and are
//! added with vector instructions. Each metric's resampled means have
//! exactly the bootstrap distribution they would have alone (every index is
//! uniform in 0..n and independent, see [`Indices`]); only the dependence
//! between metrics' CIs changes, which no single CI depends on.
//!
//! One operation is one resampled index: n of them per resample, each adding
//! one run's row of m values into m accumulators.
//!
//! The values added are each metric's deviations from its own mean, in f32,
//! and the mean is added back in f64. This halves the memory per row and
//! doubles the values per vector instruction. The rounding it adds is
//! relative to the deviations, whose spread is what the bootstrap measures:
//! with n = 1,000 and deviations of the order of the standard deviation,
//! the summation error is typically a few 1e-6 (at worst 1e-3) of the
//! resampled means' standard deviation, far below the Monte Carlo error of
//! 10,000 resamples, whatever the values' offset; a far outlier widens
//! both alike. Two exceptions keep what the ratio CI relies on exact (see
//! [`anchor_and_range`]): a metric with a zero among its values is summed
//! from 0, so an all-zero resample has mean exactly 0, and every resampled
//! mean is clamped to the values' range, so a positive metric's never
//! rounds to 0 or below. Values must be finite (the analysis passes only
//! finite samples): one infinity would make every resampled mean of its
//! column NaN.

use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};

/// f32 lanes added together (one 256-bit register); rows are padded to a
/// multiple of this.
const LANES: usize = 8;

/// Uniform indices in 0..n, exactly, by Lemire's multiply-shift method: a
/// 32-bit random x maps to (x * n) >> 32, and x is rejected when the low 32
/// bits of x * n fall below 2^32 mod n, which removes the bias of the plain
/// multiply (each index then has exactly floor(2^32 / n) preimages). For
/// n = 1,000 a draw is rejected with probability 296 / 2^32 = 6.9e-8, so
/// the branch is free; each 64-bit word of the generator gives two draws.
struct Indices {
    rng: SmallRng,
    word: u64,
    have_half: bool,
    n: u64,
    /// 2^32 mod n: low products below it are rejected.
    reject_below: u64,
}

impl Indices {
    fn new(n: usize, seed: u64) -> Indices {
        let n = n.max(1) as u64;
        Indices {
            rng: SmallRng::seed_from_u64(seed),
            word: 0,
            have_half: false,
            n,
            reject_below: (1u64 << 32) % n,
        }
    }

    #[inline(always)]
    fn next(&mut self) -> usize {
        loop {
            let x = if self.have_half {
                self.have_half = false;
                self.word >> 32
            } else {
                self.word = self.rng.next_u64();
                self.have_half = true;
                self.word & 0xffff_ffff
            };
            let m = x * self.n;
            if m & 0xffff_ffff >= self.reject_below {
                return (m >> 32) as usize;
            }
        }
    }
}

/// The value a column's deviations are taken from, and the range its
/// resampled means must lie in (a mean of drawn values is never outside
/// their minimum and maximum, so clamping to it only removes rounding).
///
/// The anchor is the column's mean (the deviations then sum to small
/// numbers and round least), except that a column holding a 0 is anchored
/// at 0: a resample that drew only zeros then has mean exactly 0, which the
/// ratio CI must see as 0, not as a rounding residue of either sign. The
/// clamp keeps every resampled mean of a positive (negative) column
/// positive (negative).
fn anchor_and_range(column: impl Iterator<Item = f64>) -> (f64, f64, f64) {
    let (mut lo, mut hi, mut sum, mut n, mut zero) =
        (f64::INFINITY, f64::NEG_INFINITY, 0.0, 0, false);
    for x in column {
        lo = lo.min(x);
        hi = hi.max(x);
        sum += x;
        n += 1;
        zero |= x == 0.0;
    }
    let anchor = if zero { 0.0 } else { sum / n.max(1) as f64 };
    (anchor, lo, hi)
}

/// Resampled means of every column of a row-major `n x m` matrix
/// (`rows[i * m + j]` is metric j of run i): `result[j][b]` is the mean of
/// metric j in resample b. All columns use the same resampled runs.
///
/// Columns are processed in blocks of up to `LANES * MAX_CHUNKS` so that the
/// block's accumulators stay in registers; every block regenerates the same
/// index stream from `seed`. Empty when n is 0. Deterministic for a seed.
///
/// Assumes, like any bootstrap of runs, that the runs are independent and
/// identically distributed (not checked); finite values (the caller's
/// duty, see the module doc).
pub fn resample_column_means(
    rows: &[f64],
    n: usize,
    m: usize,
    resamples: usize,
    seed: u64,
) -> Vec<Vec<f64>> {
    assert_eq!(rows.len(), n * m, "matrix shape");
    let mut out = vec![vec![0.0; resamples]; m];
    if n == 0 || m == 0 {
        return vec![Vec::new(); m];
    }
    let block = LANES * MAX_CHUNKS;
    for first in (0..m).step_by(block) {
        let cols = (m - first).min(block);
        let outs = &mut out[first..first + cols];
        match cols.div_ceil(LANES) {
            1 => dispatch::<1>(rows, n, m, first, cols, resamples, seed, outs),
            2 => dispatch::<2>(rows, n, m, first, cols, resamples, seed, outs),
            3 => dispatch::<3>(rows, n, m, first, cols, resamples, seed, outs),
            _ => dispatch::<4>(rows, n, m, first, cols, resamples, seed, outs),
        }
    }
    out
}

/// Most chunks of LANES columns resampled in one pass.
const MAX_CHUNKS: usize = 4;

/// Run the block with AVX2 where the CPU has it (detected at run time), else
/// with the baseline instruction set. Both add the same values in the same
/// order per lane, so their results are identical.
#[allow(clippy::too_many_arguments)]
fn dispatch<const W: usize>(
    rows: &[f64],
    n: usize,
    m: usize,
    first: usize,
    cols: usize,
    resamples: usize,
    seed: u64,
    out: &mut [Vec<f64>],
) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            unsafe { block_means_avx2::<W>(rows, n, m, first, cols, resamples, seed, out) };
            return;
        }
    }
    block_means::<W>(rows, n, m, first, cols, resamples, seed, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
unsafe fn block_means_avx2<const W: usize>(
    rows: &[f64],
    n: usize,
    m: usize,
    first: usize,
    cols: usize,
    resamples: usize,
    seed: u64,
    out: &mut [Vec<f64>],
) {
    block_means::<W>(rows, n, m, first, cols, resamples, seed, out)
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn block_means<const W: usize>(
    rows: &[f64],
    n: usize,
    m: usize,
    first: usize,
    cols: usize,
    resamples: usize,
    seed: u64,
    out: &mut [Vec<f64>],
) {
    let anchors: Vec<(f64, f64, f64)> = (0..cols)
        .map(|j| anchor_and_range((0..n).map(|i| rows[i * m + first + j])))
        .collect();
    // Row i of the block: W chunks of LANES deviations, zero-padded.
    let mut padded = vec![[[0.0f32; LANES]; W]; n];
    for (i, row) in padded.iter_mut().enumerate() {
        for j in 0..cols {
            row[j / LANES][j % LANES] = (rows[i * m + first + j] - anchors[j].0) as f32;
        }
    }
    let mut indices = Indices::new(n, seed);
    let inv_n = 1.0 / n as f64;
    // Draw order per resample: even draws into `even`, odd into `odd` (two
    // add chains instead of one), the same in every block and code path.
    for b in 0..resamples {
        let mut even = [[0.0f32; LANES]; W];
        let mut odd = [[0.0f32; LANES]; W];
        for _ in 0..n / 2 {
            let (i, j) = (indices.next(), indices.next());
            let (ri, rj) = (&padded[i], &padded[j]);
            for c in 0..W {
                for l in 0..LANES {
                    even[c][l] += ri[c][l];
                    odd[c][l] += rj[c][l];
                }
            }
        }
        if n % 2 == 1 {
            let ri = &padded[indices.next()];
            for c in 0..W {
                for l in 0..LANES {
                    even[c][l] += ri[c][l];
                }
            }
        }
        for (j, col) in out.iter_mut().enumerate() {
            let (c, l) = (j / LANES, j % LANES);
            let (anchor, lo, hi) = anchors[j];
            col[b] = (anchor + (even[c][l] as f64 + odd[c][l] as f64) * inv_n).clamp(lo, hi);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_column_has_the_bootstrap_distribution_of_its_mean() {
        // Bootstrap mean of column j: expectation = sample mean, variance =
        // plug-in variance / n.
        let n = 50;
        let rows: Vec<f64> = (0..n)
            .flat_map(|i| [i as f64, (i * i) as f64 * 0.01, 5.0])
            .collect();
        let out = resample_column_means(&rows, n, 3, 20_000, 9);
        for j in 0..3 {
            let col: Vec<f64> = (0..n).map(|i| rows[i * 3 + j]).collect();
            let mean = col.iter().sum::<f64>() / n as f64;
            let var = col.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64 / n as f64;
            let bm = out[j].iter().sum::<f64>() / out[j].len() as f64;
            let bv = out[j].iter().map(|x| (x - bm).powi(2)).sum::<f64>() / out[j].len() as f64;
            assert!(
                (bm - mean).abs() <= 4.0 * (var / 20_000.0).sqrt() + 1e-12,
                "col {j}: {bm} vs {mean}"
            );
            if var > 0.0 {
                assert!(
                    (bv / var - 1.0).abs() < 0.05,
                    "col {j}: variance {bv} vs {var}"
                );
            } else {
                assert!(out[j].iter().all(|&x| x == 5.0));
            }
        }
    }

    #[test]
    fn a_large_offset_costs_no_precision() {
        // 1e9 + a spread of 1e-3: an f32 sum of the raw values would lose
        // the spread entirely; sums of deviations keep it.
        let n = 200;
        let rows: Vec<f64> = (0..n).map(|i| 1e9 + (i % 10) as f64 * 1e-4).collect();
        let out = resample_column_means(&rows, n, 1, 20_000, 3);
        // Check in offsets from 1e9 (x - 1e9 is exact here), so that the
        // test's own sums do not lose what it checks.
        let d: Vec<f64> = rows.iter().map(|x| x - 1e9).collect();
        let o: Vec<f64> = out[0].iter().map(|x| x - 1e9).collect();
        let mean = d.iter().sum::<f64>() / n as f64;
        let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n * n) as f64;
        let bm = o.iter().sum::<f64>() / o.len() as f64;
        let bv = o.iter().map(|x| (x - bm).powi(2)).sum::<f64>() / o.len() as f64;
        assert!(
            (bm - mean).abs() < 4.0 * (var / 20_000.0).sqrt(),
            "{bm} vs {mean}"
        );
        assert!((bv / var - 1.0).abs() < 0.05, "variance {bv} vs {var}");
    }

    /// The means of the same resamples in f64, replaying the index stream
    /// in the kernel's draw order. Sums are of offsets from the value
    /// nearest zero (exact for the columns here), so that the reference
    /// itself does not round away a small spread on a large offset.
    fn exact_means(col: &[f64], resamples: usize, seed: u64) -> Vec<f64> {
        let n = col.len();
        let x0 = col
            .iter()
            .copied()
            .fold(f64::INFINITY, |a, x| if x.abs() < a.abs() { x } else { a });
        let mut idx = Indices::new(n, seed);
        (0..resamples)
            .map(|_| x0 + (0..n).map(|_| col[idx.next()] - x0).sum::<f64>() / n as f64)
            .collect()
    }

    /// The f32 deviations cost at most a few 1e-6 of the resampled means'
    /// spread (typically a few 1e-7), far below the Monte Carlo error of
    /// 10,000 resamples (1e-2), for an ordinary metric, a large offset, a
    /// far outlier, a mostly-zero count and a negative metric.
    #[test]
    fn rounding_is_far_below_the_bootstrap_spread() {
        let n = 1000;
        let noise = |i: usize| ((i * 7919) % 1009) as f64 / 1009.0 - 0.5;
        let columns: Vec<(&str, Vec<f64>)> = vec![
            ("ordinary", (0..n).map(|i| 100.0 + noise(i)).collect()),
            (
                "offset 1e9",
                (0..n).map(|i| 1e9 + noise(i) * 1e-3).collect(),
            ),
            (
                "outlier",
                (0..n)
                    .map(|i| if i == 17 { 1e4 } else { 100.0 + noise(i) })
                    .collect(),
            ),
            (
                "mostly zero",
                (0..n)
                    .map(|i| if i % 97 == 0 { 3.0 } else { 0.0 })
                    .collect(),
            ),
            ("negative", (0..n).map(|i| -50.0 + noise(i)).collect()),
        ];
        for (name, col) in columns {
            let got = &resample_column_means(&col, n, 1, 2000, 21)[0];
            let want = exact_means(&col, 2000, 21);
            let mean = want.iter().sum::<f64>() / want.len() as f64;
            let sd =
                (want.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / want.len() as f64).sqrt();
            let errs: Vec<f64> = got
                .iter()
                .zip(&want)
                .map(|(g, w)| (g - w).abs() / sd)
                .collect();
            let max = errs.iter().copied().fold(0.0, f64::max);
            let avg = errs.iter().sum::<f64>() / errs.len() as f64;
            eprintln!("{name}: rounding / spread mean {avg:.1e} max {max:.1e}");
            assert!(max < 2e-5 && avg < 2e-6, "{name}: mean {avg:e} max {max:e}");
        }
    }

    /// A resampled mean of values of one sign keeps that sign, and one that
    /// drew only zeros is exactly 0: the ratio CI tells "the baseline's
    /// mean can be 0" from a rounding residue only if it is exact.
    #[test]
    fn zeros_stay_exact_and_signs_stay() {
        let n = 40;
        let mostly_zero: Vec<f64> = (0..n).map(|i| if i < 2 { 1.7 } else { 0.0 }).collect();
        let negative: Vec<f64> = mostly_zero.iter().map(|x| -x).collect();
        let far: Vec<f64> = (0..n).map(|i| 1e6 + i as f64 * 0.37).collect();
        let rows: Vec<f64> = (0..n)
            .flat_map(|i| [mostly_zero[i], negative[i], far[i]])
            .collect();
        let out = resample_column_means(&rows, n, 3, 20_000, 5);
        let exact = exact_means(&mostly_zero, 20_000, 5);
        let zeros = exact.iter().filter(|&&x| x == 0.0).count();
        assert!(zeros > 100, "{zeros} all-zero resamples");
        for b in 0..20_000 {
            assert_eq!(out[0][b] == 0.0, exact[b] == 0.0, "resample {b}");
            assert!(out[0][b] >= 0.0 && out[1][b] <= 0.0);
            assert_eq!(out[1][b] == 0.0, exact[b] == 0.0);
            assert!(out[2][b] >= 1e6);
        }
    }

    #[test]
    fn multiply_shift_rejects_exactly_the_surplus() {
        // 2^32 = 4,294,967 * 1,000 + 296: the 296 lowest low-products are
        // the surplus that would favour some indices.
        assert_eq!(Indices::new(1000, 1).reject_below, 296);
        assert_eq!(Indices::new(1 << 10, 1).reject_below, 0);
        // For n = 3 every index has exactly floor(2^32 / 3) accepted x: count
        // over a scaled-down 2^8 space with the same rule.
        let n = 3u64;
        let reject_below = (1u64 << 8) % n;
        let mut hits = [0u32; 3];
        for x in 0..256u64 {
            let m = x * n;
            if m & 0xff >= reject_below {
                hits[(m >> 8) as usize] += 1;
            }
        }
        assert_eq!(hits, [85, 85, 85]);
    }

    #[test]
    fn indices_are_uniform() {
        let mut idx = Indices::new(7, 1);
        let mut counts = [0usize; 7];
        for _ in 0..70_000 {
            counts[idx.next()] += 1;
        }
        let mut one = Indices::new(1, 1);
        assert!((0..100).all(|_| one.next() == 0));
        for c in counts {
            assert!((c as f64 - 10_000.0).abs() < 400.0, "{counts:?}");
        }
    }

    #[test]
    fn wide_matrices_match_column_by_column() {
        // 37 columns span three blocks; each column alone (m = 1) with the
        // same seed draws the same indices, so the means agree exactly up to
        // summation order.
        let n = 30;
        let m = 37;
        let rows: Vec<f64> = (0..n * m).map(|k| ((k * 7919) % 101) as f64).collect();
        let all = resample_column_means(&rows, n, m, 200, 5);
        for j in [0, 15, 16, 36] {
            let col: Vec<f64> = (0..n).map(|i| rows[i * m + j]).collect();
            let alone = resample_column_means(&col, n, 1, 200, 5);
            for b in 0..200 {
                assert!(
                    (all[j][b] - alone[0][b]).abs() < 1e-9,
                    "col {j} resample {b}"
                );
            }
        }
    }

    #[test]
    fn deterministic_for_a_seed() {
        let rows: Vec<f64> = (0..40).map(|i| i as f64).collect();
        assert_eq!(
            resample_column_means(&rows, 20, 2, 100, 3),
            resample_column_means(&rows, 20, 2, 100, 3)
        );
        assert_ne!(
            resample_column_means(&rows, 20, 2, 100, 3),
            resample_column_means(&rows, 20, 2, 100, 4)
        );
    }
}
