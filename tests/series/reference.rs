//! Theil-Sen and Mann-Kendall against SciPy / pymannkendall values committed
//! in tests/reference/ (made by tests/reference/make_series_vectors.py);
//! binary segmentation against ruptures' Binseg
//! (tests/reference/make_changepoint_vectors.py).

use serde_json::Value;
use sysdelta::series::changepoint::binary_segmentation;
use sysdelta::series::mannkendall::mann_kendall;
use sysdelta::series::theilsen::theil_sen;

fn load(name: &str) -> Vec<Value> {
    let path = format!("{}/tests/reference/{name}", env!("CARGO_MANIFEST_DIR"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    v["cases"].as_array().unwrap().clone()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn close(a: f64, b: f64, what: &str) {
    let tol = 1e-9 * b.abs().max(1.0);
    assert!((a - b).abs() <= tol, "{what}: ours {a} vs reference {b}");
}

#[test]
fn theil_sen_matches_scipy_theilslopes() {
    let cases = load("series_theilsen.json");
    assert!(cases.len() >= 10);
    for c in cases {
        let y = floats(&c["y"]);
        let dt = c["interval_s"].as_f64().unwrap();
        let x: Vec<f64> = (0..y.len()).map(|i| i as f64 * dt).collect();
        let name = format!("{} dt={dt}", c["name"]);
        let r = theil_sen(&x, &y, 0.95).unwrap();
        close(
            r.slope,
            c["slope"].as_f64().unwrap(),
            &format!("{name} slope"),
        );
        close(
            r.intercept,
            c["intercept"].as_f64().unwrap(),
            &format!("{name} intercept"),
        );
        close(r.low, c["low"].as_f64().unwrap(), &format!("{name} low"));
        close(r.high, c["high"].as_f64().unwrap(), &format!("{name} high"));
    }
}

#[test]
fn mann_kendall_matches_pymannkendall() {
    for c in load("series_mannkendall.json") {
        let y = floats(&c["y"]);
        let name = c["name"].to_string();
        let r = mann_kendall(&y).unwrap();
        close(r.s, c["s"].as_f64().unwrap(), &format!("{name} S"));
        close(
            r.var_s,
            c["var_s"].as_f64().unwrap(),
            &format!("{name} Var(S)"),
        );
        close(r.z, c["z"].as_f64().unwrap(), &format!("{name} Z"));
        assert!(
            (r.p - c["p"].as_f64().unwrap()).abs() < 1e-9,
            "{name} p: {} vs {}",
            r.p,
            c["p"]
        );
        close(r.tau, c["tau"].as_f64().unwrap(), &format!("{name} tau"));
    }
}

/// Series with steps: the search finds at least that many splits, and
/// the splits it keeps are ruptures' Binseg's for as many breakpoints
/// (two_steps_60 has a third, smaller shift by chance, which both find).
#[test]
fn binary_segmentation_keeps_the_splits_ruptures_binseg_makes() {
    let path = format!(
        "{}/tests/reference/changepoint_binseg.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let cases = v["stepped"].as_array().unwrap();
    assert!(cases.len() >= 4);
    for c in cases {
        let x = floats(&c["x"]);
        let got: Vec<usize> = binary_segmentation(&x, 0.05, 999, 7)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        let steps = c["steps"].as_u64().unwrap() as usize;
        assert!(got.len() >= steps, "{}: {got:?}", c["name"]);
        let want: Vec<usize> = c["by_count"][got.len().to_string()]
            .as_array()
            .unwrap_or_else(|| panic!("{}: {} splits", c["name"], got.len()))
            .iter()
            .map(|s| s.as_u64().unwrap() as usize)
            .collect();
        assert_eq!(got, want, "{}", c["name"]);
    }
}
