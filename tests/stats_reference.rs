//! Every statistics function against reference values computed by an
//! independent implementation (numpy, SciPy, statsmodels) in
//! tests/reference/make_vectors.py.

use serde_json::Value;
use sysdelta::stats::bootstrap::ratio_of_means_ci;
use sysdelta::stats::mannwhitney::{mann_whitney_u, Method};
use sysdelta::stats::multiple::{benjamini_hochberg, holm};
use sysdelta::stats::summary::summarize;

fn load(name: &str) -> Vec<Value> {
    let path = format!("{}/tests/reference/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let v: Value = serde_json::from_str(&text).unwrap();
    v["cases"].as_array().unwrap().clone()
}

/// Floats are stored as decimal strings (Python repr), which str::parse
/// reads bit-exactly; null stands for "undefined".
fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))),
        other => panic!("expected a float string, got {other}"),
    }
}

fn float(v: &Value) -> f64 {
    num(v).unwrap()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(float).collect()
}

/// Relative closeness, with an absolute floor for values at or near 0.
fn close(got: f64, want: f64, rel: f64) -> bool {
    got == want || (got - want).abs() <= rel * want.abs().max(1e-300)
}

fn check(what: &str, got: f64, want: f64, rel: f64) {
    assert!(
        close(got, want, rel),
        "{what}: got {got:e}, want {want:e} (rel tol {rel:e})"
    );
}

fn check_opt(what: &str, got: Option<f64>, want: &Value, rel: f64) {
    match (got, num(want)) {
        (Some(g), Some(w)) => check(what, g, w, rel),
        (None, None) => {}
        (g, _) => panic!("{what}: got {g:?}, want {want}"),
    }
}

#[test]
fn summary_matches_numpy() {
    for case in load("summary.json") {
        let xs = floats(&case["xs"]);
        let s = summarize(&xs).unwrap();
        let what = format!("summary of {xs:?}");
        assert_eq!(s.n as u64, case["n"].as_u64().unwrap(), "{what}");
        check(&format!("{what} mean"), s.mean, float(&case["mean"]), 1e-12);
        check(
            &format!("{what} median"),
            s.median,
            float(&case["median"]),
            1e-12,
        );
        check(&format!("{what} min"), s.min, float(&case["min"]), 0.0);
        check(&format!("{what} max"), s.max, float(&case["max"]), 0.0);
        check_opt(&format!("{what} stddev"), s.stddev, &case["stddev"], 1e-9);
        check_opt(&format!("{what} cov"), s.cov, &case["cov"], 1e-9);
        check_opt(
            &format!("{what} trimmed"),
            s.trimmed_mean,
            &case["trimmed_mean"],
            1e-12,
        );
    }
}

#[test]
fn summary_rejects_empty_and_non_finite() {
    assert!(summarize(&[]).is_none());
    assert!(summarize(&[1.0, f64::NAN]).is_none());
    assert!(summarize(&[1.0, f64::INFINITY]).is_none());
}

#[test]
fn mann_whitney_matches_scipy() {
    let cases = load("mannwhitney.json");
    assert!(cases.len() > 80);
    for case in cases {
        let label = case["label"].as_str().unwrap();
        let a = floats(&case["a"]);
        let b = floats(&case["b"]);
        let r = mann_whitney_u(&a, &b).unwrap();
        let method = match case["method"].as_str().unwrap() {
            "exact" => Method::Exact,
            _ => Method::Asymptotic,
        };
        assert_eq!(r.method, method, "{label}: method");
        check(&format!("{label}: U"), r.u, float(&case["u"]), 1e-12);
        check(&format!("{label}: p"), r.p, float(&case["p"]), 1e-9);
    }
}

#[test]
fn mann_whitney_edge_cases() {
    assert!(mann_whitney_u(&[], &[1.0]).is_none());
    assert!(mann_whitney_u(&[1.0], &[]).is_none());
    assert!(mann_whitney_u(&[1.0, f64::NAN], &[2.0]).is_none());
    let same = mann_whitney_u(&[3.0; 10], &[3.0; 10]).unwrap();
    assert_eq!(same.p, 1.0);
}

#[test]
fn multiple_testing_matches_statsmodels() {
    for case in load("multiple.json") {
        let p = floats(&case["p"]);
        for (name, got) in [("holm", holm(&p)), ("fdr_bh", benjamini_hochberg(&p))] {
            let want = floats(&case[name]);
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                check(&format!("{name} of {p:?}"), *g, *w, 1e-12);
            }
        }
    }
}

#[test]
fn multiple_testing_leaves_nan_out_of_the_family() {
    let h = holm(&[0.01, f64::NAN, 0.02]);
    assert!(h[1].is_nan());
    assert_eq!((h[0], h[2]), (0.02, 0.02));
    let b = benjamini_hochberg(&[0.01, f64::NAN, 0.02]);
    assert!(b[1].is_nan());
    assert_eq!((b[0], b[2]), (0.02, 0.02));
}

/// The bootstrap cannot reproduce SciPy's random stream, so each endpoint
/// must agree within Monte-Carlo error: SciPy used 100,000 resamples, we use
/// 20,000; the standard error of a 2.5% quantile is then about 1.5% of the
/// CI width, and we allow 6%.
#[test]
fn bootstrap_percentile_ci_agrees_with_scipy() {
    for case in load("bootstrap.json") {
        let base = floats(&case["base"]);
        let other = floats(&case["other"]);
        let (lo, hi) = ratio_of_means_ci(&base, &other, 20_000, 0.95, 7).unwrap();
        let (want_lo, want_hi) = (float(&case["lo"]), float(&case["hi"]));
        let width = want_hi - want_lo;
        assert!(
            (lo - want_lo).abs() < 0.06 * width && (hi - want_hi).abs() < 0.06 * width,
            "n={}: got ({lo}, {hi}), scipy ({want_lo}, {want_hi})",
            base.len()
        );
    }
}
