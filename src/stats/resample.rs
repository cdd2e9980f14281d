//! The inner loop of the bootstrap: sums of n values drawn uniformly with
//! replacement, fast and exactly uniform, with identical results on every
//! x86-64 CPU (an AVX2 kernel where the CPU has it, the same arithmetic in
//! scalar code elsewhere).
//!
//! Random words come from four independent Xoshiro256++ generators run in
//! lockstep ("lanes"), seeded from one u64 by SplitMix64. Each word is cut
//! into floor(64 / k) fields of k = ceil(log2 n) bits; a field below n is an
//! index, a field at or above n is rejected (rejection sampling: every index
//! is exactly uniform and independent). Values are read from a table padded
//! with zeros up to 2^k, so a rejected field adds 0 and only a count of
//! accepted fields decides when n indices have been drawn: the loop has no
//! data-dependent branch. It runs in rounds: with r indices still to draw,
//! r / (4 fields-per-word) steps can never overshoot; then the count is read
//! back; the last few indices are drawn field by field.
//!
//! Determinism: lane l, field j adds into accumulator (j mod 2, l), in the
//! same order in both kernels, and the accumulators are combined in one
//! fixed order, so the AVX2 and scalar kernels return bit-identical sums.

/// Four Xoshiro256++ generators; `s[i][l]` is state word i of lane l.
#[derive(Clone, Debug)]
pub struct Lanes {
    s: [[u64; 4]; 4],
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Lanes {
    /// Seed all 16 state words from SplitMix64 started at `seed` (never all
    /// zero in practice: SplitMix64 outputs are a bijection of distinct
    /// counters).
    pub fn new(seed: u64) -> Lanes {
        let mut sm = seed;
        let mut s = [[0u64; 4]; 4];
        for l in 0..4 {
            for row in s.iter_mut() {
                row[l] = splitmix64(&mut sm);
            }
        }
        Lanes { s }
    }

    /// One Xoshiro256++ step of every lane: one 64-bit word per lane.
    #[inline(always)]
    pub fn step(&mut self) -> [u64; 4] {
        let mut out = [0u64; 4];
        for (l, o) in out.iter_mut().enumerate() {
            let [s0, s1, s2, s3] = [self.s[0][l], self.s[1][l], self.s[2][l], self.s[3][l]];
            *o = s0.wrapping_add(s3).rotate_left(23).wrapping_add(s0);
            let t = s1 << 17;
            let s2 = s2 ^ s0;
            let s3 = s3 ^ s1;
            let s1 = s1 ^ s2;
            let s0 = s0 ^ s3;
            let s2 = s2 ^ t;
            let s3 = s3.rotate_left(45);
            self.s[0][l] = s0;
            self.s[1][l] = s1;
            self.s[2][l] = s2;
            self.s[3][l] = s3;
        }
        out
    }
}

/// `xs` followed by zeros up to 2^k entries (k = ceil(log2 n)).
pub fn padded_table(xs: &[f64], k: u32) -> Vec<f64> {
    let mut t = vec![0.0; 1usize << k];
    t[..xs.len()].copy_from_slice(xs);
    t
}

/// Bits per field for n values: ceil(log2 n), at least 1.
pub fn field_bits(n: usize) -> u32 {
    (usize::BITS - (n.max(2) - 1).leading_zeros()).max(1)
}

/// Largest n the field kernels handle (k <= 16: at least 4 fields a word).
pub const MAX_FIELD_N: usize = 1 << 16;

/// Sum of n values drawn with replacement from `table[..n]` (`table` from
/// [`padded_table`]), 2 <= n <= MAX_FIELD_N. Uses the AVX2 kernel when the
/// CPU has AVX2; the result is the same either way.
pub fn resample_sum(table: &[f64], n: usize, k: u32, rng: &mut Lanes) -> f64 {
    assert!(table.len() == 1 << k && (2..=MAX_FIELD_N).contains(&n) && k <= 16);
    let mut st = RoundState::default();
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is present (checked above); the kernel reads
            // table[idx] only for idx <= 2^k - 1 = table.len() - 1.
            unsafe { avx2::rounds(table, n, k, rng, &mut st) };
            return finish(table, n, k, rng, st);
        }
    }
    scalar_rounds(table, n, k, rng, &mut st);
    finish(table, n, k, rng, st)
}

/// Accumulators after the blind rounds: acc[j mod 2][lane], and the
/// number of accepted fields per lane.
#[derive(Default, Clone, Copy)]
struct RoundState {
    acc: [[f64; 4]; 2],
    count: [u64; 4],
}

fn scalar_rounds(table: &[f64], n: usize, k: u32, rng: &mut Lanes, st: &mut RoundState) {
    let per_word = (64 / k) as usize;
    let mask = (1u64 << k) - 1;
    let mut remaining = n;
    loop {
        let steps = remaining / (4 * per_word);
        if steps == 0 {
            break;
        }
        for _ in 0..steps {
            let w = rng.step();
            for j in 0..per_word {
                for (l, &wl) in w.iter().enumerate() {
                    let c = ((wl >> (j as u32 * k)) & mask) as usize;
                    st.acc[j & 1][l] += table[c];
                    st.count[l] += u64::from(c < n);
                }
            }
        }
        remaining = n - st.count.iter().sum::<u64>() as usize;
    }
}

/// Combine the accumulators in a fixed order, then draw the last indices
/// field by field (lane 0's word first) until n were accepted.
fn finish(table: &[f64], n: usize, k: u32, rng: &mut Lanes, st: RoundState) -> f64 {
    let lane = |l: usize| st.acc[0][l] + st.acc[1][l];
    let mut sum = (lane(0) + lane(1)) + (lane(2) + lane(3));
    let mut remaining = n - st.count.iter().sum::<u64>() as usize;
    let per_word = 64 / k;
    let mask = (1u64 << k) - 1;
    'outer: while remaining > 0 {
        for mut w in rng.step() {
            for _ in 0..per_word {
                let c = (w & mask) as usize;
                w >>= k;
                if c < n {
                    sum += table[c];
                    remaining -= 1;
                    if remaining == 0 {
                        break 'outer;
                    }
                }
            }
        }
    }
    sum
}

/// Sum of n = xs.len() values drawn with replacement for n > MAX_FIELD_N:
/// one 64-bit word per index (lanes in order), Lemire's multiply-shift with
/// rejection of the biased low range (exactly uniform).
pub fn resample_sum_wide(xs: &[f64], rng: &mut Lanes) -> f64 {
    let n = xs.len() as u64;
    let threshold = n.wrapping_neg() % n;
    let mut acc = [0.0f64; 4];
    let mut i = 0;
    while i < xs.len() {
        for w in rng.step() {
            let m = w as u128 * n as u128;
            if (m as u64) >= threshold && i < xs.len() {
                acc[i & 3] += xs[(m >> 64) as usize];
                i += 1;
            }
        }
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3])
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Lanes, RoundState};
    use std::arch::x86_64::*;

    /// rotate_left by L (R = 64 - L) on each 64-bit lane.
    macro_rules! rotl {
        ($x:expr, $l:literal, $r:literal) => {{
            let x = $x;
            _mm256_or_si256(_mm256_slli_epi64::<$l>(x), _mm256_srli_epi64::<$r>(x))
        }};
    }

    /// The blind rounds of `scalar_rounds`, four lanes per instruction.
    ///
    /// # Safety
    /// The CPU must support AVX2, and `table.len()` must be 2^k.
    #[target_feature(enable = "avx2")]
    pub unsafe fn rounds(table: &[f64], n: usize, k: u32, rng: &mut Lanes, st: &mut RoundState) {
        let per_word = (64 / k) as usize;
        let load = |row: &[u64; 4]| _mm256_loadu_si256(row.as_ptr() as *const __m256i);
        let (mut s0, mut s1, mut s2, mut s3) = (
            load(&rng.s[0]),
            load(&rng.s[1]),
            load(&rng.s[2]),
            load(&rng.s[3]),
        );
        let mask = _mm256_set1_epi64x(((1u64 << k) - 1) as i64);
        let nvec = _mm256_set1_epi64x(n as i64);
        let shift = _mm_set_epi64x(0, k as i64);
        let mut acc0 = _mm256_setzero_pd();
        let mut acc1 = _mm256_setzero_pd();
        let mut count = _mm256_setzero_si256();
        let base = table.as_ptr();
        let mut remaining = n;
        loop {
            let steps = remaining / (4 * per_word);
            if steps == 0 {
                break;
            }
            for _ in 0..steps {
                // Xoshiro256++ on four lanes.
                let mut w = _mm256_add_epi64(rotl!(_mm256_add_epi64(s0, s3), 23, 41), s0);
                let t = _mm256_slli_epi64::<17>(s1);
                s2 = _mm256_xor_si256(s2, s0);
                s3 = _mm256_xor_si256(s3, s1);
                s1 = _mm256_xor_si256(s1, s2);
                s0 = _mm256_xor_si256(s0, s3);
                s2 = _mm256_xor_si256(s2, t);
                s3 = rotl!(s3, 45, 19);
                let mut j = 0;
                while j + 1 < per_word {
                    let c = _mm256_and_si256(w, mask);
                    w = _mm256_srl_epi64(w, shift);
                    acc0 = _mm256_add_pd(acc0, _mm256_i64gather_pd::<8>(base, c));
                    count = _mm256_sub_epi64(count, _mm256_cmpgt_epi64(nvec, c));
                    let c = _mm256_and_si256(w, mask);
                    w = _mm256_srl_epi64(w, shift);
                    acc1 = _mm256_add_pd(acc1, _mm256_i64gather_pd::<8>(base, c));
                    count = _mm256_sub_epi64(count, _mm256_cmpgt_epi64(nvec, c));
                    j += 2;
                }
                if j < per_word {
                    let c = _mm256_and_si256(w, mask);
                    acc0 = _mm256_add_pd(acc0, _mm256_i64gather_pd::<8>(base, c));
                    count = _mm256_sub_epi64(count, _mm256_cmpgt_epi64(nvec, c));
                }
            }
            let mut c = [0u64; 4];
            _mm256_storeu_si256(c.as_mut_ptr() as *mut __m256i, count);
            remaining = n - c.iter().sum::<u64>() as usize;
        }
        let store = |row: &mut [u64; 4], v: __m256i| {
            _mm256_storeu_si256(row.as_mut_ptr() as *mut __m256i, v)
        };
        store(&mut rng.s[0], s0);
        store(&mut rng.s[1], s1);
        store(&mut rng.s[2], s2);
        store(&mut rng.s[3], s3);
        _mm256_storeu_pd(st.acc[0].as_mut_ptr(), acc0);
        _mm256_storeu_pd(st.acc[1].as_mut_ptr(), acc1);
        _mm256_storeu_si256(st.count.as_mut_ptr() as *mut __m256i, count);
    }
}

/// The scalar kernel alone, for tests that compare it with the dispatched
/// one.
pub fn resample_sum_scalar(table: &[f64], n: usize, k: u32, rng: &mut Lanes) -> f64 {
    let mut st = RoundState::default();
    scalar_rounds(table, n, k, rng, &mut st);
    finish(table, n, k, rng, st)
}
