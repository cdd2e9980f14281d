//! The pooling's tests, against statsmodels' reference values.

use super::*;
use crate::store::ExperimentInfo;

fn est(ratio: f64, lo: f64, hi: f64) -> Option<HostEstimate> {
    Some(HostEstimate {
        ratio,
        ratio_ci: (lo, hi),
        base_sign: 1.0,
        df: None,
    })
}

fn close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 1e-9 * want.abs().max(1e-3),
        "{what}: got {got:.15}, want {want:.15}"
    );
}

// The reference values below are statsmodels 0.15.0's, with SciPy
// 1.17.1's normal quantile for the standard errors, as printed by
// tests/reference/make_meta_analysis.py: it feeds y_i = ln r_i and
// se_i = (ln hi - ln lo) / (2 norm.ppf(0.975)) to `combine_effects(y,
// se**2, method_re="dl", use_t=True)` and reads `tau2`, `q`,
// `mean_effect_re`, `var_eff_w_re` and `conf_int(alpha=0.05,
// use_t=True)[3]` (the random-effects HKSJ interval); where DL's tau^2
// comes out negative (statsmodels does not truncate it), the
// fixed-effect `mean_effect_fe`, `var_eff_w_fe` and `conf_int(...)[2]`,
// which are the random-effects values with tau^2 truncated at 0. The
// leave-one-out values are the same call on the other hosts, and the
// residual (y_i - mu) / sqrt(se_i^2 + tau2 + var) is computed there
// from them.
struct Case {
    rows: [(f64, f64, f64); 4],
    k: usize,
    tau2: f64,
    q: f64,
    mu: f64,
    var: f64,
    ci: (f64, f64),
    /// Leaving each host out: (mu, tau2, var, the host's residual).
    loo: [(f64, f64, f64, f64); 4],
    differs: [bool; 4],
}

const CASES: [Case; 3] = [
    // Four hosts, heterogeneous (Q = 27.5 on 3 df); the last one is
    // 2.2 standard errors from the other three.
    Case {
        rows: [
            (1.020, 1.010, 1.030),
            (1.035, 1.020, 1.050),
            (1.005, 0.995, 1.015),
            (1.060, 1.040, 1.081),
        ],
        k: 4,
        tau2: 0.000330316823663719,
        q: 27.54905371487795,
        mu: 0.027973336964685416,
        var: 9.471108184086688e-05,
        ci: (-0.00745399580910034, 0.06340066973847117),
        loo: [
            (
                0.03168219562547372,
                0.0006627901380678324,
                0.0002402857748064499,
                -0.38994525199022523,
            ),
            (
                0.026152090250572267,
                0.00040297056969079806,
                0.00014997444707132528,
                0.3346566713031418,
            ),
            (
                0.036111662096823004,
                0.0002758636525927171,
                0.00011075909743937572,
                -1.532635542904769,
            ),
            (
                0.019018207375494735,
                0.00015310221970453995,
                6.243332456525921e-05,
                2.2191753233205267,
            ),
        ],
        // 2.22 standard errors is p 0.026, 0.106 after Holm over four
        // hosts: not named (it was, before the correction).
        differs: [false, false, false, false],
    },
    // Three hosts, one far below the others.
    Case {
        rows: [
            (0.97, 0.95, 0.99),
            (1.01, 0.99, 1.03),
            (0.92, 0.90, 0.94),
            (1.0, 1.0, 1.0),
        ],
        k: 3,
        tau2: 0.0020487782837916644,
        q: 38.7085941648979,
        mu: -0.034478174334303384,
        var: 0.0007202328332680903,
        ci: (-0.15070742107853355, 0.08175107240992677),
        loo: [
            (
                -0.03660335052520662,
                0.004242843302480447,
                0.0021777001376333885,
                0.07602622339178434,
            ),
            (
                -0.056803601734291866,
                0.0012835096717613232,
                0.00070018150017044,
                1.4616427147223006,
            ),
            (
                -0.010148066749699133,
                0.0007100648834307781,
                0.0004082213822600126,
                -2.0785628848943065,
            ),
            (0.0, 0.0, 0.0, 0.0),
        ],
        // -2.08 is p 0.038, 0.113 after Holm over three hosts.
        differs: [false, false, false, false],
    },
    // Three hosts that agree: DL's tau^2 is negative before truncation
    // (statsmodels: -2.511442693547211e-05), so the weights are the
    // fixed-effect ones; so in each leave-one-out fit.
    Case {
        rows: [
            (1.010, 1.000, 1.020),
            (1.012, 1.002, 1.022),
            (1.008, 0.996, 1.020),
            (1.0, 1.0, 1.0),
        ],
        k: 3,
        tau2: 0.0,
        q: 0.2549392046523682,
        mu: 0.01017850219314264,
        var: 9.46732638261417e-06,
        ci: (0.005451853926573281, 0.014905150459711998),
        loo: [
            (
                0.010313065639724256,
                0.0,
                1.505065717297431e-05,
                -0.05694825522946672,
            ),
            (
                0.009139883579299526,
                0.0,
                1.5085929561389363e-05,
                0.4381692753627974,
            ),
            (
                0.010941407701076343,
                0.0,
                1.2735013619279265e-05,
                -0.4220369827316007,
            ),
            (0.0, 0.0, 0.0, 0.0),
        ],
        differs: [false, false, false, false],
    },
];

#[test]
fn pooled_matches_statsmodels_dl_hksj() {
    let z = normal_quantile(0.975);
    for (n, c) in CASES.iter().enumerate() {
        let ests: Vec<Option<HostEstimate>> =
            c.rows[..c.k].iter().map(|r| est(r.0, r.1, r.2)).collect();
        let p = pool(&ests, 0.95);
        let fit = p.fit.unwrap();
        let what = |x: &str| format!("case {n} {x}");
        assert_eq!((p.hosts, fit.df), (c.k, c.k - 1), "case {n}");
        close(fit.tau2, c.tau2, &what("tau2"));
        close(fit.q, c.q, &what("Q"));
        close(fit.mu, c.mu, &what("mu"));
        close(fit.var_re, c.var, &what("var"));
        close(fit.ci.0, c.ci.0, &what("ci low"));
        close(fit.ci.1, c.ci.1, &what("ci high"));
        close(p.ratio.unwrap(), c.mu.exp(), &what("ratio"));
        close(
            p.delta_pct.unwrap(),
            100.0 * (c.mu.exp() - 1.0),
            &what("pct"),
        );
        let (lo, hi) = p.ratio_ci.unwrap();
        close(lo, c.ci.0.exp(), &what("ratio ci low"));
        close(hi, c.ci.1.exp(), &what("ratio ci high"));
        for i in 0..c.k {
            let (y, se): (Vec<f64>, Vec<f64>) = ests
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, e)| e.unwrap().log(z))
                .unzip();
            let loo = random_effects(&y, &se, 0.95).unwrap();
            let (mu, tau2, var, resid) = c.loo[i];
            close(loo.mu, mu, &what(&format!("leave out {i}: mu")));
            close(loo.tau2, tau2, &what(&format!("leave out {i}: tau2")));
            close(loo.var_re, var, &what(&format!("leave out {i}: var")));
            close(
                p.residual[i].unwrap(),
                resid,
                &what(&format!("residual {i}")),
            );
            assert_eq!(p.differs[i], Some(c.differs[i]), "case {n} host {i}");
            // Without degrees of freedom the residual is judged on the
            // normal.
            close(
                p.residual_p[i].unwrap(),
                2.0 * normal_sf(resid.abs()),
                &what(&format!("residual p {i}")),
            );
        }
    }
}

#[test]
fn the_fleet_name_is_the_host_when_there_is_one() {
    let mut info = ExperimentInfo {
        id: 1,
        name: "n".into(),
        label: None,
        plan_source: String::new(),
        plan_text: String::new(),
        overrides: Default::default(),
        host: "node-7.example".into(),
        fingerprint: Default::default(),
        seed: 1,
        order: String::new(),
        runs_per_cell: 1,
        warmup: 0,
        baseline: "b".into(),
        created_at: String::new(),
        finished_at: None,
        status: crate::status::ExperimentStatus::Complete,
        entered_config: None,
        self_usage: None,
        configs: vec!["b".into()],
        workloads: vec![],
        fleet_host: None,
        fleet_id: None,
    };
    assert_eq!(info.ran_on(), "node-7.example");
    info.fleet_host = Some("c".into());
    assert_eq!(info.ran_on(), "c");
}

#[test]
fn two_hosts_pool_with_t_on_one_df() {
    // statsmodels, as above: tau2 0.00032284935004711976.
    let p = pool(&[est(1.02, 1.00, 1.04), est(1.05, 1.03, 1.07)], 0.95);
    let fit = p.fit.unwrap();
    close(fit.tau2, 0.00032284935004711976, "tau2");
    close(fit.mu, 0.03439368200370531, "mu");
    close(fit.ci.0, -0.14976295844591442, "ci low");
    close(fit.ci.1, 0.21855032245332506, "ci high");
    // Fewer than 3 hosts: nobody is judged.
    assert_eq!(p.differs, [None, None]);
}

#[test]
fn one_host_has_no_pooled_ci_and_none_is_judged() {
    let p = pool(&[None, est(1.1, 1.05, 1.15), None], 0.95);
    assert_eq!(p.hosts, 1);
    assert_eq!(p.ratio, Some(1.1));
    assert!(p.ratio_ci.is_none() && p.fit.is_none());
    assert!(p.note.unwrap().contains("no pooled CI"));
    assert_eq!(p.differs, [None, None, None]);
    let p = pool(&[None, None], 0.95);
    assert_eq!((p.hosts, p.ratio), (0, None));
}

#[test]
fn hosts_without_an_estimate_keep_their_place() {
    let p = pool(
        &[
            est(1.01, 1.00, 1.02),
            None,
            est(1.30, 1.28, 1.32),
            est(1.012, 1.002, 1.022),
        ],
        0.95,
    );
    assert_eq!(p.hosts, 3);
    assert_eq!(p.differs, [Some(false), None, Some(true), Some(false)]);
}

#[test]
fn a_negative_baseline_gives_the_change_its_sign() {
    // Values around -50 going to -51: the ratio is 1.02, the change -2%.
    let e = |r: f64, lo: f64, hi: f64| {
        Some(HostEstimate {
            ratio: r,
            ratio_ci: (lo, hi),
            base_sign: -1.0,
            df: None,
        })
    };
    let p = pool(&[e(1.02, 1.01, 1.03), e(1.02, 1.01, 1.03)], 0.95);
    close(p.delta_pct.unwrap(), -2.0, "pct");
    let p = pool(&[e(1.01, 1.00, 1.02), e(1.03, 1.02, 1.04)], 0.95);
    let (lo, hi) = p.delta_ci_pct.unwrap();
    let d = p.delta_pct.unwrap();
    assert!(d < 0.0 && lo < d && d < hi, "{lo} {d} {hi}");
    let mixed = pool(&[e(1.02, 1.01, 1.03), est(1.02, 1.01, 1.03)], 0.95);
    assert_eq!((mixed.hosts, mixed.ratio), (0, None));
}
