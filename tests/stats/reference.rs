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

/// SciPy's method='auto', except where sysdelta uses the exact method by
/// design (no ties and at most 50 values a side, where SciPy's 'auto' goes
/// asymptotic above 8): those cases are checked against SciPy's
/// method='exact' p-value, listed under "changed" in
/// mannwhitney_exact.json (tests/reference/make_mwu_exact.py).
#[test]
fn mann_whitney_matches_scipy() {
    let cases = load("mannwhitney.json");
    assert!(cases.len() > 80);
    let exact_json = load_obj("mannwhitney_exact.json");
    let changed = list(&exact_json, "changed");
    let mut seen_changed = 0;
    for case in cases {
        let label = case["label"].as_str().unwrap();
        let a = floats(&case["a"]);
        let b = floats(&case["b"]);
        let r = mann_whitney_u(&a, &b).unwrap();
        let mut method = match case["method"].as_str().unwrap() {
            "exact" => Method::Exact,
            _ => Method::Asymptotic,
        };
        let mut want_p = float(&case["p"]);
        if let Some(c) = changed.iter().find(|c| c["label"] == label) {
            method = Method::Exact;
            want_p = float(&c["p"]);
            check(&format!("{label}: U"), r.u, float(&c["u"]), 1e-12);
            seen_changed += 1;
        }
        assert_eq!(r.method, method, "{label}: method");
        check(&format!("{label}: U"), r.u, float(&case["u"]), 1e-12);
        check(&format!("{label}: p"), r.p, want_p, 1e-9);
    }
    assert_eq!(seen_changed, changed.len());
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

// ------------------------------------------------------------------ phase 2

use sysdelta::series::mannkendall::mann_kendall;
use sysdelta::series::theilsen::theil_sen;
use sysdelta::stats::bca::{bca_interval, bca_levels, bca_ratio_ci, ratio_acceleration};
use sysdelta::stats::detect::{bimodality_coefficient, mad_outliers, min_achievable_p};
use sysdelta::stats::hodges_lehmann::{hodges_lehmann, median_ratio};
use sysdelta::stats::power::{
    minimum_detectable_effect, runs_for_power, runs_for_power_exact, runs_known_variance,
    t_test_power,
};
use sysdelta::stats::special::{nct_cdf, normal_quantile, t_cdf, t_quantile};

fn load_obj(name: &str) -> Value {
    let path = format!("{}/tests/reference/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn list<'a>(v: &'a Value, key: &str) -> &'a Vec<Value> {
    v[key].as_array().unwrap()
}

#[test]
fn special_functions_match_scipy() {
    let v = load_obj("special.json");
    for c in list(&v, "normal_quantile") {
        let p = float(&c["p"]);
        check(
            &format!("ndtri({p})"),
            normal_quantile(p),
            float(&c["x"]),
            1e-10,
        );
    }
    for c in list(&v, "t_cdf") {
        let (t, df) = (float(&c["t"]), float(&c["df"]));
        check(
            &format!("t.cdf({t}, {df})"),
            t_cdf(t, df),
            float(&c["p"]),
            1e-10,
        );
    }
    for c in list(&v, "t_quantile") {
        let (p, df) = (float(&c["p"]), float(&c["df"]));
        check(
            &format!("t.ppf({p}, {df})"),
            t_quantile(p, df),
            float(&c["t"]),
            1e-10,
        );
    }
    // Many degrees of freedom (a plan for millions of runs), where the
    // quantile starts from its expansion in 1/df: scipy.stats.t.ppf's
    // values (SciPy 1.10, `python3 -c "from scipy import stats;
    // print(stats.t.ppf(p, df))"`).
    for (p, df, want) in [
        (0.6, 10000.0, 0.2533538434457268),
        (0.75, 10000.0, 0.6745142844835923),
        (0.975, 10000.0, 1.960201239890626),
        (0.999, 10000.0, 3.091047516030612),
        (0.999999999999, 10000.0, 7.04337469834847),
        (0.025, 10000.0, -1.9602012398906263),
        (1e-09, 10000.0, -6.003355447947142),
        (0.6, 9999.0, 0.2533538441198359),
        (0.75, 9999.0, 0.6745142869373459),
        (0.975, 9999.0, 1.9602012636213575),
        (0.999, 9999.0, 3.091047597579455),
        (0.999999999999, 9999.0, 7.043375588173261),
        (0.025, 9999.0, -1.960201263621358),
        (1e-09, 9999.0, -6.003356003286937),
        (0.6, 100000.0, 0.2533477771571799),
        (0.75, 100000.0, 0.674492203553292),
        (0.975, 100000.0, 1.9599877075346093),
        (0.999, 100000.0, 3.090313809427237),
        (0.999999999999, 100000.0, 7.035374828293037),
        (0.025, 100000.0, -1.9599877075346097),
        (1e-09, 100000.0, -5.9983614616790755),
        (0.6, 15000000.0, 0.25334710762926854),
        (0.75, 15000000.0, 0.6744897665517436),
        (0.975, 15000000.0, 1.9599641426914816),
        (0.999, 15000000.0, 3.090232849509835),
        (0.999999999999, 15000000.0, 7.034492828870082),
        (0.025, 15000000.0, -1.959964142691482),
        (1e-09, 15000000.0, -5.997810711027164),
        (0.6, 1000000000.0, 0.25334710320320175),
        (0.75, 1000000000.0, 0.6744897504414166),
        (0.975, 1000000000.0, 1.959963986912325),
        (0.999, 1000000000.0, 3.090232314317942),
        (0.999999999999, 1000000000.0, 7.034486998830107),
        (0.025, 1000000000.0, -1.9599639869123255),
        (1e-09, 1000000000.0, -5.99780707044795),
    ] {
        check(&format!("t.ppf({p}, {df})"), t_quantile(p, df), want, 1e-10);
    }
    for c in list(&v, "nct_cdf") {
        let (t, df, nc) = (float(&c["t"]), float(&c["df"]), float(&c["nc"]));
        let want = float(&c["p"]);
        // Relative where the value is sizeable, absolute 1e-12 in the tails.
        let got = nct_cdf(t, df, nc);
        assert!(
            close(got, want, 1e-8) || (got - want).abs() < 1e-12,
            "nct.cdf({t}, {df}, {nc}): got {got:e}, want {want:e}"
        );
    }
}

#[test]
fn power_matches_statsmodels() {
    let v = load_obj("power.json");
    for c in list(&v, "power") {
        let (es, n, alpha) = (float(&c["es"]), float(&c["n"]), float(&c["alpha"]));
        let got = t_test_power(es, n, alpha).unwrap();
        check(&format!("power({es}, {n})"), got, float(&c["power"]), 1e-8);
    }
    for c in list(&v, "runs") {
        let (d, cov) = (float(&c["d"]), float(&c["cov"]));
        let want = float(&c["n_real"]);
        let got = runs_for_power_exact(d, cov, 0.05, 0.8).unwrap();
        check(&format!("runs({d}, {cov})"), got, want, 1e-7);
        assert_eq!(
            runs_for_power(d, cov, 0.05, 0.8),
            Some(want.ceil() as usize)
        );
        assert_eq!(
            runs_known_variance(d, cov, 0.05, 0.8),
            Some(c["n_known_variance"].as_u64().unwrap() as usize)
        );
    }
    for c in list(&v, "mde") {
        let (n, cov) = (c["n"].as_u64().unwrap() as usize, float(&c["cov"]));
        let got = minimum_detectable_effect(n, cov, 0.05, 0.8).unwrap();
        check(&format!("mde({n}, {cov})"), got, float(&c["d"]), 1e-7);
    }
}

#[test]
fn bca_matches_scipy() {
    for c in load("bca.json") {
        let base = floats(&c["base"]);
        let other = floats(&c["other"]);
        let what = format!("BCa n={}/{}", base.len(), other.len());
        let a_hat = ratio_acceleration(&base, &other).unwrap();
        check(&format!("{what} a_hat"), a_hat, float(&c["a_hat"]), 1e-9);
        // Deterministic part on SciPy's own bootstrap distribution.
        let mut theta_b = floats(&c["theta_b"]);
        let theta_hat = float(&c["theta_hat"]);
        let (l1, l2) = bca_levels(&theta_b, theta_hat, a_hat, 0.95).unwrap();
        check(&format!("{what} alpha_1"), l1, float(&c["alpha_1"]), 1e-9);
        check(&format!("{what} alpha_2"), l2, float(&c["alpha_2"]), 1e-9);
        let (lo, hi) = bca_interval(&mut theta_b, theta_hat, a_hat, 0.95).unwrap();
        check(&format!("{what} lo"), lo, float(&c["lo"]), 1e-9);
        check(&format!("{what} hi"), hi, float(&c["hi"]), 1e-9);
        // Whole method against scipy.stats.bootstrap(method='BCa') within
        // Monte-Carlo error (6% of the width, as for the percentile CI).
        let (lo, hi) = bca_ratio_ci(&base, &other, 20_000, 0.95, 3).unwrap();
        let (wl, wh) = (float(&c["scipy_lo"]), float(&c["scipy_hi"]));
        let w = wh - wl;
        assert!(
            (lo - wl).abs() < 0.06 * w && (hi - wh).abs() < 0.06 * w,
            "{what}: got ({lo}, {hi}), scipy ({wl}, {wh})"
        );
    }
}

#[test]
fn hodges_lehmann_matches_independent_implementation() {
    for c in load("hodges_lehmann.json") {
        let base = floats(&c["base"]);
        let other = floats(&c["other"]);
        let conf = float(&c["confidence"]);
        let what = format!("HL n={}/{} conf {conf}", base.len(), other.len());
        let r = hodges_lehmann(&base, &other, conf).unwrap();
        assert_eq!(r.exact, c["exact"].as_bool().unwrap(), "{what}");
        assert_eq!(r.k as u64, c["k"].as_u64().unwrap(), "{what}");
        check(&format!("{what} shift"), r.shift, float(&c["shift"]), 1e-12);
        check(&format!("{what} lo"), r.lo, float(&c["lo"]), 0.0);
        check(&format!("{what} hi"), r.hi, float(&c["hi"]), 0.0);
        let mr = median_ratio(&base, &other).unwrap();
        check(
            &format!("{what} median ratio"),
            mr,
            float(&c["median_ratio"]),
            1e-12,
        );
    }
}

#[test]
fn trend_matches_scipy_and_definition() {
    for c in load("trend.json") {
        let y = floats(&c["y"]);
        let x = floats(&c["x"]);
        let conf = float(&c["confidence"]);
        let what = format!("trend n={}", y.len());
        let ts = theil_sen(&x, &y, conf).unwrap();
        check(
            &format!("{what} slope"),
            ts.slope,
            float(&c["slope"]),
            1e-12,
        );
        check(
            &format!("{what} intercept"),
            ts.intercept,
            float(&c["intercept"]),
            1e-9,
        );
        check(&format!("{what} lo"), ts.low, float(&c["lo"]), 1e-12);
        check(&format!("{what} hi"), ts.high, float(&c["hi"]), 1e-12);
        let mk = mann_kendall(&y).unwrap();
        check(&format!("{what} S"), mk.s, float(&c["mk"]["s"]), 0.0);
        check(
            &format!("{what} var S"),
            mk.var_s,
            float(&c["mk"]["var_s"]),
            1e-12,
        );
        check(&format!("{what} z"), mk.z, float(&c["mk"]["z"]), 1e-12);
        check(&format!("{what} p"), mk.p, float(&c["mk"]["p"]), 1e-9);
    }
}

#[test]
fn detectors_match_scipy() {
    let v = load_obj("detect.json");
    for c in list(&v, "bimodality") {
        let xs = floats(&c["xs"]);
        let bc = bimodality_coefficient(&xs).unwrap();
        check(&format!("BC n={}", xs.len()), bc, float(&c["bc"]), 1e-9);
    }
    for c in list(&v, "mad") {
        let xs = floats(&c["xs"]);
        let want: Vec<usize> = c["outliers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i.as_u64().unwrap() as usize)
            .collect();
        assert_eq!(mad_outliers(&xs), want, "MAD outliers of {xs:?}");
    }
    // Sizes where sysdelta uses the exact U distribution by design (9 to 50
    // a side, no ties) are checked against SciPy's method='exact'.
    let exact_json = load_obj("mannwhitney_exact.json");
    let changed = list(&exact_json, "changed_min_p");
    for c in list(&v, "min_p") {
        let (n1, n2) = (
            c["n1"].as_u64().unwrap() as usize,
            c["n2"].as_u64().unwrap() as usize,
        );
        let exact = changed
            .iter()
            .find(|e| e["n1"] == c["n1"] && e["n2"] == c["n2"]);
        let want = exact.map_or(&c["p"], |e| &e["p"]);
        let p = min_achievable_p(n1, n2).unwrap();
        check(&format!("min p {n1}x{n2}"), p, float(want), 1e-9);
    }
}
