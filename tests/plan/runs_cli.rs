//! `sysdelta plan-runs` on small real experiments run through the library
//! into a temporary store, and its bad input through the binary.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::AtomicBool;

use sysdelta::plan::{self, Overrides};
use sysdelta::runner::{self, ExecOptions};
use sysdelta::stats::power;
use sysdelta::store::Store;

/// A plan whose metric `v` is known exactly: each config counts its own
/// runs in the scratch directory and prints 100, 102, 100, 102, ... So each
/// config's run values have mean 101 and (with an even count of runs) sd
/// sqrt(n/(n-1)), whatever the run order.
fn plan_text(runs: u32) -> String {
    format!(
        r#"name = "pilot"
runs = {runs}
seed = 5

[[config]]
name = "a"
env = {{ CFG = "a" }}

[[config]]
name = "b"
env = {{ CFG = "b" }}

[[workload]]
name = "count"
command = 'f="$SYSDELTA_SCRATCH/$CFG"; n=$(cat "$f" 2>/dev/null || echo 0); echo $((n + 1)) > "$f"; echo "v=$((100 + n % 2 * 2))"'
metrics = [ {{ name = "v", regex = 'v=([0-9]+)', unit = "ms" }} ]
"#
    )
}

fn run_experiment(store_path: &Path, runs: u32) -> i64 {
    let plan = plan::parse("pilot.toml", &plan_text(runs), &Overrides::default()).unwrap();
    let mut prepared = runner::prepare(plan, store_path).unwrap();
    let store = Store::open(store_path, true).unwrap();
    let id = runner::create(&store, &prepared, Some("pilot")).unwrap();
    let cancel = AtomicBool::new(false);
    let out = runner::execute(
        &store,
        id,
        &mut prepared,
        &ExecOptions {
            cancel: &cancel,
            quiet: true,
        },
    )
    .unwrap();
    assert_eq!(out.runs_failed, 0);
    id
}

fn sysdelta(store: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sysdelta"))
        .arg("--store")
        .arg(store)
        .args(args)
        .output()
        .unwrap()
}

/// The CoV, the runs needed (U test and t-test) and the detectable shift
/// are those of the known run values: 4 runs of 100, 102, 100, 102 per
/// config give CoV sqrt(4/3)/101 = 1.1433% on both sides.
#[test]
fn plan_runs_reports_cov_runs_and_detectable_shift() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let id = run_experiment(&store, 4);

    let out = sysdelta(
        &store,
        &["plan-runs", "last", "--detect", "1%", "--format", "json"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["experiment"], id);
    assert_eq!(j["detect"], 0.01);
    let rows = j["rows"].as_array().unwrap();
    let v = rows
        .iter()
        .find(|r| r["metric"] == "v")
        .expect("a row for metric v");
    assert_eq!(v["config"], "b");
    assert_eq!(v["baseline"], "a");
    assert_eq!(v["n_baseline"], 4);
    assert_eq!(v["n_config"], 4);
    let cov = (4.0f64 / 3.0).sqrt() / 101.0;
    assert!((v["cov"].as_f64().unwrap() - cov).abs() < 1e-12);
    // Planned at the level the report's Holm correction leaves one change.
    let alpha = j["alpha_per_comparison"].as_f64().unwrap();
    let m = j["comparisons"].as_u64().unwrap() as f64;
    assert!((alpha - 0.05 / m).abs() < 1e-15);
    let u = power::units_for_power(
        power::ReportTest::Rank,
        0.01,
        cov,
        alpha,
        0.8,
        power::PLAN_SEED,
    )
    .unwrap();
    let t = power::runs_for_power(0.01, cov, alpha, 0.8).unwrap();
    assert_eq!(v["runs_u_test"], u);
    assert_eq!(v["runs_t_test"], t);
    assert!(u >= t && t >= 21, "u {u} t {t}");
    let mde = power::minimum_detectable_effect(4, cov, alpha, 0.8).unwrap();
    assert!((v["detectable"].as_f64().unwrap() - mde).abs() < 1e-12);
    // wall, user, sys, maxrss are there too, one row each.
    assert_eq!(rows.len(), 5);

    // The same in text, by label, within 80 columns.
    let out = sysdelta(&store, &["plan-runs", "pilot", "--detect", "1"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    eprintln!("{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("v "))
        .expect("a line for metric v");
    let cols: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        cols,
        [
            "v",
            "b",
            "4/4",
            "1.14%",
            &u.to_string(),
            &t.to_string(),
            &format!("{:.2}%", mde * 100.0)
        ]
    );
}

/// With one run per config there is no spread to plan from: the row says
/// so in place of the numbers.
#[test]
fn plan_runs_says_when_there_are_too_few_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    run_experiment(&store, 1);
    let out = sysdelta(&store, &["plan-runs"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("v "))
        .expect("a line for metric v");
    assert!(line.contains("fewer than 2 runs (1 and 1)"), "{line}");
}

#[test]
fn plan_runs_takes_last_as_report_does() {
    // The README's own command: `sysdelta plan-runs --last --detect 1%`.
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    run_experiment(&store, 4);
    let flag = sysdelta(&store, &["plan-runs", "--last", "--detect", "1%"]);
    assert!(
        flag.status.success(),
        "{}",
        String::from_utf8_lossy(&flag.stderr)
    );
    let word = sysdelta(&store, &["plan-runs", "last", "--detect", "1%"]);
    assert_eq!(flag.stdout, word.stdout);
}

fn assert_bad(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(err.contains(needle), "stderr: {err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
}

/// Bad input exits 2 with one line naming what is wrong.
#[test]
fn plan_runs_bad_input_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    assert_bad(&sysdelta(&store, &["plan-runs"]), "s.db");
    run_experiment(&store, 2);
    assert_bad(
        &sysdelta(&store, &["plan-runs", "7"]),
        "no experiment with id 7",
    );
    assert_bad(&sysdelta(&store, &["plan-runs", "nolabel"]), "nolabel");
    for d in ["abc", "-1%", "0%", "0", "150%", "nan"] {
        assert_bad(
            &sysdelta(&store, &["plan-runs", &format!("--detect={d}")]),
            &format!("--detect '{d}'"),
        );
    }
}
