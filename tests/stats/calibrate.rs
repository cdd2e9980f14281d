//! Calibration of the report's verdict by simulation (fixed seeds): the
//! A/A false-positive rate and the 95% CI coverage the issue asks for.
//! Figures for more settings: `cargo bench --bench stats -- --calibrate`.

use sysdelta::stats::calibrate::{
    aa_false_positive_rate, calibration_cov, ci_coverage, detection_rate, Shape, SHAPES,
};

/// A/A: 1,000 experiments of 20 runs per config. The band 3.6-6.4% is 5%
/// plus or minus two binomial standard errors; the verdict is the rank
/// test, whose false-positive rate does not depend on the noise's shape.
#[test]
fn aa_false_positive_rate_is_near_five_percent() {
    for shape in SHAPES {
        let fpr = aa_false_positive_rate(shape, 20, calibration_cov(shape), 1000, 2000, 11);
        eprintln!(
            "A/A false-positive rate {shape:?} n=20: {:.1}%",
            fpr * 100.0
        );
        assert!((0.036..=0.064).contains(&fpr), "{shape:?}: {fpr}");
    }
}

/// Coverage of the 95% CI (expanded percentile) with a 2% true shift:
/// 93-97% at n = 10 and 20 for every shape (2,000 resamples per CI keep the
/// test fast; coverage barely depends on it).
#[test]
fn ci_coverage_is_within_band() {
    for shape in SHAPES {
        for n in [10, 20] {
            let c = ci_coverage(shape, n, calibration_cov(shape), 0.02, 1000, 2000, 12);
            eprintln!("coverage {shape:?} n={n}: {:.1}%", c * 100.0);
            assert!((0.93..=0.97).contains(&c), "{shape:?} n={n}: coverage {c}");
        }
    }
}

/// A 2% shift at CoV 1% with 10 runs per config (the t-test has about 99%
/// power there) is detected almost always; with 2 runs per config the U
/// test can never reject, so nothing is detected, however large the shift.
#[test]
fn detection_needs_enough_runs() {
    let high = detection_rate(Shape::Normal, 10, 0.01, 0.02, 300, 1000, 13);
    assert!(high > 0.9, "detection {high}");
    let none = detection_rate(Shape::Normal, 2, 0.01, 0.5, 100, 1000, 14);
    assert_eq!(none, 0.0);
}
