//! Trend flags, change points and asymptotic levels on synthetic series and
//! on the two series of the 2001 SAP posting.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sysdelta::metric::Direction;
use sysdelta::series::{analyze, analyze_dir, asymptotic_ratio, print_side_by_side, Flag};

const SAP_247: [f64; 14] = [
    8.59, 4.40, 2.67, 2.30, 1.87, 1.65, 1.26, 1.68, 1.17, 1.80, 1.10, 1.20, 1.26, 1.34,
];
const SAP_2414: [f64; 14] = [
    15.47, 14.76, 11.61, 14.63, 14.42, 15.30, 15.02, 14.53, 15.23, 12.82, 14.59, 16.09, 14.38,
    15.41,
];

/// Gaussian noise (Box-Muller) from a fixed seed.
fn noise(seed: u64, n: usize, sd: f64) -> Vec<f64> {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let (u1, u2): (f64, f64) = (r.random::<f64>().max(1e-12), r.random());
            sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        })
        .collect()
}

#[test]
fn sap_2001_series_degrading_flat_and_ratio_near_ten() {
    let old = analyze(&SAP_247, 5.0);
    let new = analyze(&SAP_2414, 5.0);
    assert_eq!(old.flag, Flag::Degrading, "{old:?}");
    assert_eq!(new.flag, Flag::Flat, "{new:?}");
    let ratio = asymptotic_ratio(&old, &new).unwrap();
    assert!((8.0..14.0).contains(&ratio), "asymptotic ratio {ratio}");
    // Median of the last ceil(14/3) = 5 values.
    assert_eq!(old.asymptotic_level, 1.26);
    assert_eq!(new.asymptotic_level, 14.59);
}

#[test]
fn flat_noise_is_flat_with_no_change_points() {
    let y: Vec<f64> = noise(1, 120, 2.0).iter().map(|e| 100.0 + e).collect();
    let t = analyze(&y, 1.0);
    assert_eq!(t.flag, Flag::Flat, "{t:?}");
    assert!(t.change_points.is_empty(), "{:?}", t.change_points);
    assert!(t.slope_ci.0 <= 0.0 && t.slope_ci.1 >= 0.0);
}

#[test]
fn linear_decline_is_degrading_with_slope_recovered() {
    // 100 -> 70 over 60 samples at 2 s: slope -0.25 per second.
    let y: Vec<f64> = noise(2, 60, 1.0)
        .iter()
        .enumerate()
        .map(|(i, e)| 100.0 - 0.5 * i as f64 + e)
        .collect();
    let t = analyze(&y, 2.0);
    assert_eq!(t.flag, Flag::Degrading);
    assert!(
        t.slope_ci.0 < -0.25 && -0.25 < t.slope_ci.1,
        "{:?}",
        t.slope_ci
    );
    assert!(t.mann_kendall_p < 1e-6);
    // The same decline is an improvement for a lower-is-better metric.
    assert_eq!(analyze_dir(&y, 2.0, Direction::Lower).flag, Flag::Improving);
}

#[test]
fn tiny_but_significant_drift_is_flat() {
    // 1% change over the run: significant, but below the 5% rule.
    let y: Vec<f64> = (0..200).map(|i| 100.0 - 0.005 * i as f64).collect();
    let t = analyze(&y, 1.0);
    assert!(t.mann_kendall_p < 0.05);
    assert_eq!(t.flag, Flag::Flat);
}

#[test]
fn step_change_is_located() {
    let y: Vec<f64> = noise(3, 80, 0.5)
        .iter()
        .enumerate()
        .map(|(i, e)| if i < 50 { 10.0 } else { 6.0 } + e)
        .collect();
    let t = analyze(&y, 1.0);
    assert_eq!(t.change_points, vec![50]);
    assert_eq!(t.flag, Flag::Degrading);
    assert!((t.asymptotic_level - 6.0).abs() < 0.5);
}

#[test]
fn short_series_get_no_verdict() {
    assert_eq!(analyze(&[1.0, 2.0], 1.0).flag, Flag::TooShort);
    assert_eq!(analyze(&[], 1.0).flag, Flag::TooShort);
    assert_eq!(analyze(&[1.0, f64::NAN, 3.0], 1.0).flag, Flag::TooShort);
}

#[test]
fn side_by_side_table_shows_values_flags_and_ratio() {
    let cols = vec![
        ("2.4.7".to_string(), SAP_247.to_vec()),
        ("2.4.14".to_string(), SAP_2414.to_vec()),
    ];
    let mut out = Vec::new();
    print_side_by_side(&cols, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    print!("{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains("2.4.7") && lines[0].contains("2.4.14"));
    assert_eq!(
        lines[2].split_whitespace().collect::<Vec<_>>(),
        ["8.59", "15.47"]
    );
    assert_eq!(lines.len(), 2 + 14 + 1 + 5);
    let flag_line = lines[17];
    assert!(
        flag_line.contains("degrading") && flag_line.contains("flat"),
        "{flag_line}"
    );
    assert!(text.contains("11.58x"), "{text}");
}

#[test]
fn long_series_are_binned_and_still_flagged() {
    // 10 000 points (about 2.8 h at 1 s): a 10% decline plus noise.
    let y: Vec<f64> = noise(4, 10_000, 1.0)
        .iter()
        .enumerate()
        .map(|(i, e)| 100.0 - 10.0 * i as f64 / 10_000.0 + e)
        .collect();
    let t = analyze(&y, 1.0);
    assert_eq!(t.bin, 5);
    assert_eq!(t.flag, Flag::Degrading);
    assert!(
        t.slope_ci.0 < -0.001 && -0.001 < t.slope_ci.1,
        "{:?}",
        t.slope_ci
    );
}
