//! `sysdelta plan-runs` on kernel experiments: boots per config from the
//! variance components, and whether more runs per boot would help.

use crate::common;
use crate::kernels;

use kernels::{Shape, AA};
use sysdelta::analysis;
use sysdelta::commands::plan_runs;
use sysdelta::stats::power;

fn plan(shape: &Shape, detect: f64) -> (common::Sandbox, plan_runs::RunPlan) {
    let sb = common::Sandbox::new();
    let (store, exp) = kernels::store_with(&sb.store(), &AA, shape);
    let p = plan_runs::plan(&store.load(exp).unwrap(), detect).unwrap();
    (sb, p)
}

fn shape(sd_boot: f64, sd_run: f64) -> Shape {
    Shape {
        boots: 6,
        runs: 5,
        sd_boot,
        sd_run,
        accel: "KVM",
        seed: 1,
    }
}

#[test]
fn boots_that_differ_need_more_boots_not_more_runs() {
    let (_sb, p) = plan(&shape(0.2, 0.02), 0.05);
    assert!(p.by_boot);
    for r in &p.rows {
        let b = r.boots.as_ref().unwrap();
        assert_eq!((r.n_baseline, r.n_config, b.runs_per_boot), (6, 6, 5.0));
        assert!(b.between_share.unwrap() > 0.9, "{b:?}");
        assert!(!b.more_runs_help, "{b:?}");
        // The boots needed follow the report's boot-level test (Welch's t
        // below 8 boots, the U test from 8) at the CoV of a boot's mean and
        // the level the report's correction leaves; unlimited runs per
        // boot save almost nothing.
        let cov = r.cov.unwrap();
        assert_eq!(
            r.runs_u_test,
            power::boots_for_power(0.05, cov, p.alpha_per_comparison, 0.8, power::PLAN_SEED)
        );
        let (n, inf) = (r.runs_u_test.unwrap(), b.boots_unlimited_runs.unwrap());
        assert!(
            inf <= n && inf as f64 > 0.9 * n as f64,
            "{n} boots, {inf} at best"
        );
    }
    let text = plan_runs::render_text(&p);
    assert!(text.lines().all(|l| l.len() <= 80), "{text}");
    assert!(text.contains("more runs per boot would not help: 99% of the variance is between boots, so\n    add boots"), "{text}");
}

#[test]
fn noisy_runs_in_alike_boots_do_better_with_more_runs_per_boot() {
    let (_sb, p) = plan(&shape(0.002, 0.05), 0.05);
    let r = &p.rows[0];
    let b = r.boots.as_ref().unwrap();
    assert!(b.between_share.unwrap() < 0.5, "{b:?}");
    assert!(b.more_runs_help, "{b:?}");
    assert!(b.boots_double_runs.unwrap() < r.runs_u_test.unwrap());
    assert!(plan_runs::render_text(&p).contains("more runs per boot help: with 10 runs per boot"));
}

/// On balanced boots (and a positive between-boot estimate) the variance
/// of a boot's mean from the components, sigma_b^2 + sigma_w^2 / m, is
/// exactly MSB / m, the variance of the boot means themselves: the model's
/// CoV equals the CoV of the per-boot values the report tests.
#[test]
fn the_components_reproduce_the_noise_of_boot_means() {
    let sb = common::Sandbox::new();
    let (store, exp) = kernels::store_with(&sb.store(), &AA, &shape(0.2, 0.02));
    let data = store.load(exp).unwrap();
    let p = plan_runs::plan(&data, 0.05).unwrap();
    let a = analysis::analyze(&data, &analysis::Options::default()).unwrap();
    let m = &a.metrics[0];
    let empirical = plan_runs::pooled_cov(&m.cells[0], &m.cells[1]).unwrap();
    let model = p.rows[0].cov.unwrap();
    assert!(
        (model - empirical).abs() <= 1e-12 * empirical,
        "{model} vs {empirical}"
    );
}

#[test]
fn the_command_counts_boots() {
    let sb = common::Sandbox::new();
    kernels::store_with(&sb.store(), &AA, &shape(0.2, 0.02));
    let out = sb.run(&["plan-runs", "--detect", "5%"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let text = common::stdout(&out);
    assert!(
        text.contains("boots per config for 80% power to detect a 5% shift"),
        "{text}"
    );
    let out = sb.run(&["plan-runs", "--detect", "5%", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["by_boot"], true);
    assert_eq!(v["rows"][0]["boots"]["more_runs_help"], false);
}

#[test]
fn a_single_boot_a_side_says_so() {
    let s = Shape {
        boots: 1,
        ..shape(0.2, 0.02)
    };
    let (_sb, p) = plan(&s, 0.05);
    assert_eq!(
        p.rows[0].note.as_deref(),
        Some("fewer than 2 boots (1 and 1)")
    );
    assert!(p.rows[0].boots.is_none());
}
