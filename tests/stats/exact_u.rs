//! The Mann-Whitney p-value from the exact null distribution, up to 50 runs
//! a side without ties, against SciPy's `mannwhitneyu(..., method='exact')`
//! (tests/reference/make_mwu_exact.py writes the vectors).

use serde_json::Value;
use sysdelta::stats::detect::min_achievable_p;
use sysdelta::stats::mannwhitney::{mann_whitney_u, Method, EXACT_MAX_PER_SIDE};

fn reference() -> Value {
    let path = format!(
        "{}/tests/reference/mannwhitney_exact.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn float(v: &Value) -> f64 {
    v.as_str().unwrap().parse().unwrap()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(float).collect()
}

fn assert_close(what: &str, got: f64, want: f64) {
    assert!(
        got == want || (got - want).abs() <= 1e-9 * want.abs(),
        "{what}: got {got:e}, want {want:e}"
    );
}

/// Every size from 1 to 50 a side, unequal sizes, both tails, every U whose
/// exact p lies in [0.04, 0.06], separated and centred samples.
#[test]
fn exact_p_matches_scipy_up_to_50_a_side() {
    let r = reference();
    assert_eq!(
        r["exact_max_per_side"].as_u64(),
        Some(EXACT_MAX_PER_SIDE as u64)
    );
    let cases = r["cases"].as_array().unwrap();
    assert!(cases.len() > 500, "{} cases", cases.len());
    let mut sizes = std::collections::BTreeSet::new();
    for c in cases {
        let label = c["label"].as_str().unwrap();
        let (a, b) = (floats(&c["a"]), floats(&c["b"]));
        sizes.insert(a.len());
        let got = mann_whitney_u(&a, &b).unwrap();
        assert_eq!(got.method, Method::Exact, "{label}");
        assert_close(&format!("{label}: U"), got.u, float(&c["u"]));
        assert_close(&format!("{label}: p"), got.p, float(&c["p"]));
    }
    assert_eq!(sizes, (1..=50).collect());
}

/// Where the exact and the normal-approximation p-values fall on opposite
/// sides of 0.05, the verdict follows the exact one.
#[test]
fn near_the_threshold_the_exact_p_decides() {
    let r = reference();
    let flips: Vec<&Value> = r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| (float(&c["p"]) < 0.05) != (float(&c["p_asymptotic"]) < 0.05))
        .collect();
    assert!(!flips.is_empty());
    for c in flips {
        let got = mann_whitney_u(&floats(&c["a"]), &floats(&c["b"])).unwrap();
        assert_eq!(
            got.p < 0.05,
            float(&c["p"]) < 0.05,
            "{}",
            c["label"].as_str().unwrap()
        );
    }
}

/// Ties, or more than 50 values on both sides, keep the normal
/// approximation (the exact distribution assumes no ties).
#[test]
fn ties_and_large_samples_stay_asymptotic() {
    let a: Vec<f64> = (0..20).map(|i| (i / 2) as f64).collect();
    let b: Vec<f64> = (0..20).map(|i| (i / 2) as f64 + 0.5).collect();
    assert_eq!(mann_whitney_u(&a, &b).unwrap().method, Method::Asymptotic);
    let a: Vec<f64> = (0..51).map(|i| i as f64).collect();
    let b: Vec<f64> = (0..51).map(|i| i as f64 + 0.5).collect();
    assert_eq!(mann_whitney_u(&a, &b).unwrap().method, Method::Asymptotic);
    let b50: Vec<f64> = (0..50).map(|i| i as f64 + 0.5).collect();
    assert_eq!(mann_whitney_u(&a, &b50).unwrap().method, Method::Asymptotic);
    assert_eq!(
        mann_whitney_u(&a[..50], &b50).unwrap().method,
        Method::Exact
    );
}

/// The report's "smallest possible p-value" warning reads the same test:
/// complete separation at n1 x n2 <= 50 x 50 gives 2 / C(n1 + n2, n1).
#[test]
fn smallest_possible_p_is_the_exact_one() {
    let binom = |n: u32, k: u32| (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64);
    for (n1, n2) in [(3usize, 3usize), (9, 9), (12, 20), (50, 50)] {
        let want = 2.0 / binom((n1 + n2) as u32, n1 as u32);
        assert_close(
            &format!("{n1}x{n2}"),
            min_achievable_p(n1, n2).unwrap(),
            want.min(1.0),
        );
    }
}
