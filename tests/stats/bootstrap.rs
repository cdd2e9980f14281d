//! Bootstrap properties a report relies on: determinism, unbiased index
//! draws, batch = single, refusals. (Coverage: tests/stats/calibrate.rs.)

use sysdelta::stats::bootstrap::{
    ratio_ci, ratio_cis_batch, ratio_of_means_ci, resample_means, stream_seed, BatchItem,
};

#[test]
fn same_seed_same_ci_other_seed_other_ci() {
    let base: Vec<f64> = (0..30).map(|i| 100.0 + (i % 7) as f64).collect();
    let other: Vec<f64> = (0..30).map(|i| 103.0 + (i % 5) as f64).collect();
    let a = ratio_of_means_ci(&base, &other, 10_000, 0.95, 42).unwrap();
    let b = ratio_of_means_ci(&base, &other, 10_000, 0.95, 42).unwrap();
    let c = ratio_of_means_ci(&base, &other, 10_000, 0.95, 43).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
    let observed = other.iter().sum::<f64>() / base.iter().sum::<f64>();
    assert!(a.0 < observed && observed < a.1, "{a:?} vs {observed}");
}

#[test]
fn batch_equals_single_calls_and_shares_the_baseline() {
    let base: Vec<f64> = (0..40).map(|i| 10.0 + (i * 7 % 11) as f64).collect();
    let o1: Vec<f64> = base.iter().map(|x| x * 1.1).collect();
    let o2: Vec<f64> = base.iter().map(|x| x * 0.9 + 1.0).collect();
    let items = vec![BatchItem {
        base: &base,
        others: vec![&o1, &o2],
        seed: 9,
    }];
    let got = ratio_cis_batch(&items, 5_000, 0.95);
    // The batch reads each CI at the expanded level.
    let level = sysdelta::stats::bootstrap::expanded_confidence(&base, &o1, 0.95);
    assert_eq!(got[0][0], ratio_of_means_ci(&base, &o1, 5_000, level, 9));
    let bm = resample_means(&base, 5_000, stream_seed(9, 0));
    let om = resample_means(&o2, 5_000, stream_seed(9, 2));
    let level2 = sysdelta::stats::bootstrap::expanded_confidence(&base, &o2, 0.95);
    assert_eq!(got[0][1], ratio_ci(&bm, &om, level2));
}

#[test]
fn refuses_what_it_cannot_answer() {
    assert_eq!(ratio_of_means_ci(&[1.0], &[1.0, 2.0], 1000, 0.95, 1), None);
    assert_eq!(ratio_of_means_ci(&[1.0, 2.0], &[3.0], 1000, 0.95, 1), None);
    assert_eq!(
        ratio_of_means_ci(&[0.0, 0.0], &[1.0, 2.0], 1000, 0.95, 1),
        None
    );
    assert_eq!(
        ratio_of_means_ci(&[-1.0, 1.0], &[1.0, 2.0], 1000, 0.95, 1),
        None
    );
    assert_eq!(
        ratio_of_means_ci(&[1.0, f64::NAN], &[1.0, 2.0], 1000, 0.95, 1),
        None
    );
    // Base resamples that cross zero make the ratio meaningless.
    assert_eq!(
        ratio_of_means_ci(&[-1.0, 3.0], &[1.0, 2.0], 1000, 0.95, 1),
        None
    );
}

/// Every index must be drawn with probability 1/n, including sizes whose
/// bit fields are mostly rejected (n = 2^k + 1) and the wide path
/// (n > 2^16). A one-hot sample's resampled mean times n counts how often
/// that index was drawn: over R resamples its average is 1 with standard
/// error about 1/sqrt(R); 5 standard errors (9% at R = 3,000) catch any
/// lost, duplicated or shifted index.
#[test]
fn index_draws_are_uniform() {
    for n in [2usize, 3, 5, 17, 1000, 1025, 70_000] {
        let resamples = if n > 10_000 { 100 } else { 3_000 };
        for hot in [0, n / 2, n - 1] {
            let mut xs = vec![0.0; n];
            xs[hot] = n as f64;
            let means = resample_means(&xs, resamples, n as u64 + hot as u64);
            let avg = means.iter().sum::<f64>() / resamples as f64;
            // Draw count per resample ~ Binomial(n, 1/n): variance (n-1)/n.
            let se = ((n - 1) as f64 / n as f64 / resamples as f64).sqrt();
            assert!(
                (avg - 1.0).abs() < 5.0 * se,
                "n={n} index {hot}: mean draw count {avg}"
            );
        }
    }
}

/// The AVX2 kernel (used when the CPU has it) and the scalar kernel must
/// give bit-identical sums, so a seed means the same CI on every machine.
#[test]
fn simd_and_scalar_kernels_agree_bit_for_bit() {
    use sysdelta::stats::resample::{
        field_bits, padded_table, resample_sum, resample_sum_scalar, Lanes,
    };
    for n in [2usize, 3, 5, 17, 100, 1000, 1025, 4097, 65_536] {
        let xs: Vec<f64> = (0..n).map(|i| 1.0 + (i as f64 * 0.618).fract()).collect();
        let k = field_bits(n);
        let table = padded_table(&xs, k);
        let (mut a, mut b) = (Lanes::new(n as u64), Lanes::new(n as u64));
        for _ in 0..50 {
            let x = resample_sum(&table, n, k, &mut a);
            let y = resample_sum_scalar(&table, n, k, &mut b);
            assert_eq!(x.to_bits(), y.to_bits(), "n={n}");
        }
    }
    #[cfg(target_arch = "x86_64")]
    if !std::is_x86_feature_detected!("avx2") {
        eprintln!("no AVX2 on this CPU: both calls used the scalar kernel");
    }
}

/// The random stream is part of the output: a stored experiment re-reported
/// later must give the same CIs. These values pin it; if a change to the
/// resampler moves them, that change must be deliberate (and noted).
#[test]
fn resampling_stream_is_pinned() {
    let xs: Vec<f64> = (1..=10).map(f64::from).collect();
    let got: Vec<u64> = resample_means(&xs, 4, 42)
        .iter()
        .map(|v| v.to_bits())
        .collect();
    assert_eq!(
        got,
        [
            0x401b333333333333,
            0x4018000000000000,
            0x400e666666666666,
            0x401799999999999a
        ]
    );
    let big: Vec<f64> = (0..1000).map(|i| f64::from(i).sqrt()).collect();
    let got: Vec<u64> = resample_means(&big, 2, 7)
        .iter()
        .map(|v| v.to_bits())
        .collect();
    assert_eq!(got, [0x40359c3d2d4ecb17, 0x403500173e2f313e]);
    let (lo, hi) = ratio_of_means_ci(&xs, &big[..50], 10_000, 0.95, 1).unwrap();
    assert_eq!(
        (lo.to_bits(), hi.to_bits()),
        (0x3fe408ec935ff318, 0x3ff438a213a3a123)
    );
}

/// The expanded level against SciPy 1.17 (stats.t.ppf, stats.norm.cdf, NumPy
/// variances with ddof=1) computing the same formula independently:
/// unequal n with different spreads, and 20 runs a side.
#[test]
fn expanded_confidence_matches_scipy() {
    use sysdelta::stats::bootstrap::expanded_confidence;
    let b = [10.0, 11.0, 12.5, 9.5, 10.2];
    let o = [12.0, 13.1, 11.7, 12.9, 14.0, 12.2, 13.3];
    let close = |got: f64, want: f64| assert!((got - want).abs() < 1e-9 * want, "{got} vs {want}");
    close(expanded_confidence(&b, &o, 0.95), 0.9935739391056968);
    close(expanded_confidence(&b, &o, 0.90), 0.9694186864200982);
    let b20: Vec<f64> = (0..20)
        .map(|i| 100.0 + f64::from(i * 37 % 17) / 10.0)
        .collect();
    let o20: Vec<f64> = (0..20)
        .map(|i| 101.0 + f64::from(i * 53 % 19) / 10.0)
        .collect();
    close(expanded_confidence(&b20, &o20, 0.95), 0.9622990303870795);
    // Undefined corrections leave the level alone.
    assert_eq!(expanded_confidence(&[1.0], &o, 0.95), 0.95);
    assert_eq!(expanded_confidence(&[2.0, 2.0], &[3.0, 3.0], 0.95), 0.95);
}
