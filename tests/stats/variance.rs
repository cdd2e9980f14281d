//! Variance components (`stats::variance`) against statsmodels' MixedLM
//! (REML), the ANOVA table by hand in NumPy, scipy.stats.f_oneway and
//! scipy.stats.levene, from tests/reference/make_variance.py.

use serde_json::Value;
use sysdelta::stats::variance::{boot_mean_cov, one_way};

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))),
        other => panic!("expected a float string, got {other}"),
    }
}

fn check(what: &str, got: Option<f64>, want: Option<f64>, rel: f64) {
    match (got, want) {
        (Some(g), Some(w)) => assert!(
            g == w || (g - w).abs() <= rel * w.abs().max(1e-300),
            "{what}: got {g:e}, want {w:e} (rel tol {rel:e})"
        ),
        (None, None) => {}
        (g, w) => panic!("{what}: got {g:?}, want {w:?}"),
    }
}

fn cases() -> Vec<Value> {
    let path = format!(
        "{}/tests/reference/variance.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["cases"].as_array().unwrap().clone()
}

#[test]
fn anova_table_matches_numpy_and_scipy() {
    for c in cases() {
        let name = c["name"].as_str().unwrap();
        let groups: Vec<Vec<f64>> = c["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                g.as_array()
                    .unwrap()
                    .iter()
                    .map(|x| num(x).unwrap())
                    .collect()
            })
            .collect();
        let refs: Vec<&[f64]> = groups.iter().map(Vec::as_slice).collect();
        let v = one_way(&refs).unwrap_or_else(|| panic!("{name}: undefined"));
        assert_eq!(v.groups as u64, c["k"].as_u64().unwrap(), "{name}");
        assert_eq!(v.n as u64, c["n"].as_u64().unwrap(), "{name}");
        let at = |k: &str| num(&c[k]);
        check(&format!("{name} n0"), Some(v.n0), at("n0"), 1e-12);
        check(
            &format!("{name} mean"),
            Some(v.grand_mean),
            at("grand_mean"),
            1e-12,
        );
        check(
            &format!("{name} MSB"),
            Some(v.ms_between),
            at("ms_between"),
            1e-9,
        );
        check(
            &format!("{name} MSW"),
            Some(v.ms_within),
            at("ms_within"),
            1e-9,
        );
        check(
            &format!("{name} between"),
            Some(v.between),
            at("between"),
            1e-9,
        );
        check(
            &format!("{name} within"),
            Some(v.within),
            at("within"),
            1e-9,
        );
        check(&format!("{name} share"), v.between_share, at("share"), 1e-9);
        // f_oneway sums squares in one pass: at a level of 1e6 with a
        // spread of 1e-2 its F is 4e-9 off the two-pass MSB / MSW above.
        check(&format!("{name} F (f_oneway)"), v.f, at("f"), 1e-7);
        check(&format!("{name} p (f_oneway)"), v.p, at("p"), 1e-7);
        check(
            &format!("{name} Brown-Forsythe p (levene)"),
            v.equal_within_p,
            at("equal_within_p"),
            1e-8,
        );
    }
}

/// REML is an optimisation: statsmodels' Powell fit at tight tolerances
/// stops within about 1e-6 of the optimum, which on balanced groups is the
/// ANOVA estimate (or 0 for the between variance when MSB < MSW).
#[test]
fn balanced_estimates_equal_statsmodels_reml() {
    let mut compared = 0;
    for c in cases() {
        let Some(ml) = c.get("mixedlm") else { continue };
        let name = c["name"].as_str().unwrap();
        let groups: Vec<Vec<f64>> = c["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                g.as_array()
                    .unwrap()
                    .iter()
                    .map(|x| num(x).unwrap())
                    .collect()
            })
            .collect();
        let refs: Vec<&[f64]> = groups.iter().map(Vec::as_slice).collect();
        let v = one_way(&refs).unwrap();
        let (b, w) = (num(&ml["between"]).unwrap(), num(&ml["within"]).unwrap());
        if ml["boundary"].as_bool().unwrap() {
            assert_eq!(v.between, 0.0, "{name}");
            assert!(b <= 1e-6 * w, "{name}: REML between {b:e} is not at 0");
        } else {
            check(
                &format!("{name} REML between"),
                Some(v.between),
                Some(b),
                1e-5,
            );
            check(
                &format!("{name} REML within"),
                Some(v.within),
                Some(w),
                1e-5,
            );
        }
        compared += 1;
    }
    assert!(compared >= 10, "only {compared} balanced cases");
}

#[test]
fn boot_mean_noise_shrinks_with_runs_only_down_to_the_boots() {
    let g: [&[f64]; 3] = [
        &[10.0, 11.0, 12.0],
        &[20.0, 21.0, 22.0],
        &[30.0, 31.0, 32.0],
    ];
    let v = one_way(&g).unwrap();
    let (c1, c100) = (
        boot_mean_cov(&v, 1.0).unwrap(),
        boot_mean_cov(&v, 100.0).unwrap(),
    );
    let floor = v.between.sqrt() / v.grand_mean;
    assert!(c1 > c100 && c100 > floor && (c100 - floor) / floor < 1e-3);
}

#[test]
fn balanced_groups_give_the_textbook_table() {
    // Means 2 and 5, grand mean 3.5: SSB = 3 * 2.25 * 2 = 13.5, SSW = 4.
    let g: [&[f64]; 2] = [&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]];
    let v = one_way(&g).unwrap();
    assert_eq!((v.groups, v.n, v.n0), (2, 6, 3.0));
    assert_eq!((v.ms_between, v.ms_within), (13.5, 1.0));
    assert!((v.between - 12.5 / 3.0).abs() < 1e-12);
    assert_eq!(v.f, Some(13.5));
    assert!((v.boot_mean_variance(2.0) - (12.5 / 3.0 + 0.5)).abs() < 1e-12);
}

#[test]
fn boots_alike_give_no_between_variance() {
    // Group means equal: MSB = 0 < MSW, so sigma_b^2 is 0, not negative.
    let g: [&[f64]; 3] = [&[1.0, 3.0], &[0.0, 4.0], &[2.0, 2.0]];
    let v = one_way(&g).unwrap();
    assert_eq!(v.between, 0.0);
    assert_eq!(v.between_share, Some(0.0));
    assert_eq!(v.p, Some(1.0));
}

#[test]
fn undefined_inputs_give_none() {
    assert!(one_way(&[&[1.0, 2.0]]).is_none());
    assert!(one_way(&[&[1.0], &[2.0]]).is_none());
    assert!(one_way(&[&[1.0, 2.0], &[]]).is_none());
    assert!(one_way(&[&[1.0, f64::NAN], &[2.0, 3.0]]).is_none());
    // No spread anywhere: both components 0, no share, no F.
    let v = one_way(&[&[2.0, 2.0], &[2.0, 2.0]]).unwrap();
    assert_eq!((v.between_share, v.f, v.equal_within_p), (None, None, None));
}
