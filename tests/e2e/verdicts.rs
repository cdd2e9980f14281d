//! A config that really slows the workload is reported `worse`; two
//! identical configs are reported `~`.

use crate::common;
use common::*;

const SLOW_PLAN: &str = r#"
name = "slowdown"
runs = 10
seed = 7

[[config]]
name = "base"

[[config]]
name = "slow"
setup = "export SLOW=1"

[[workload]]
name = "nap"
command = 'if [ -n "$SLOW" ]; then sleep 0.06; else sleep 0.03; fi'
"#;

#[test]
fn a_config_that_slows_the_workload_is_worse() {
    let sb = Sandbox::new();
    let plan = sb.write("plan.toml", SLOW_PLAN);
    let out = sb.run(&["run", plan.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("worse"),
        "text report marks the slowdown:\n{text}"
    );
    let r = sb.json_report("last");
    let c = comparison(&r, "nap", "wall", "slow");
    assert_eq!(c["verdict"], "worse", "{c}");
    let d = c["delta_mean_pct"].as_f64().unwrap();
    assert!(
        d > 50.0 && d < 150.0,
        "sleep 0.06 vs 0.03 is about +100%, got {d}"
    );
    let ci = c["ratio_ci"].as_array().unwrap();
    assert!(ci[0].as_f64().unwrap() > 1.0);
    // Every raw sample is in the JSON: 10 runs x 2 configs.
    assert_eq!(r["runs"].as_array().unwrap().len(), 20);
    // Mail-ready: plain ASCII, no line over 80 columns, with every section.
    let full = sb.run(&[
        "report",
        "last",
        "--detail",
        "--trim",
        "1",
        "--equivalence",
        "7%",
    ]);
    let full = stdout(&full);
    assert!(full.contains("Min val") && full.contains("equiv"), "{full}");
    for line in full.lines() {
        assert!(line.is_ascii(), "non-ASCII: {line}");
        assert!(line.len() <= 80, "{} columns: {line}", line.len());
    }
}

#[test]
fn a_config_whose_setup_fails_never_yields_samples() {
    // Each run of a config whose setup fails is a failed run, also the
    // runs after the first (the config is entered afresh every time).
    let sb = Sandbox::new();
    let out = sb.run(&[
        "ab",
        "--config",
        "base=",
        "--config",
        "broken=export X=1; false",
        "--runs",
        "3",
        "--order",
        "sequential",
        "--quiet",
        "--format",
        "json",
        "--",
        "true",
    ]);
    // No run of `broken` succeeds: the report is printed, and the exit
    // status says the experiment has no result for it.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no successful run of broken/true"),
        "{}",
        stderr(&out)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let broken: Vec<&serde_json::Value> = r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["config"] == "broken")
        .collect();
    assert_eq!(broken.len(), 3);
    assert!(broken.iter().all(|x| x["status"] == "failed"), "{broken:?}");
}

#[test]
fn identical_configs_are_within_noise() {
    let sb = Sandbox::new();
    // Identical configs: the same setup on both sides. (A setup on one side
    // only is a real difference: its shell runs right before that config's
    // runs; see docs/ARCHITECTURE.md on the settle step.)
    let text = SLOW_PLAN
        .replace(
            "name = \"base\"\n",
            "name = \"base\"\nsetup = \"export OTHER=1\"\n",
        )
        .replace("export SLOW=1", "export OTHER=1");
    assert_eq!(text.matches("setup = \"export OTHER=1\"").count(), 2);
    let plan = sb.write("plan.toml", &text);
    // alpha 0.001: an A/A comparison is flagged with probability alpha by
    // design; a small alpha keeps this test from failing one CI run in 20.
    let out = sb.run(&["run", plan.to_str().unwrap(), "--quiet", "--alpha", "0.001"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The verdicts read at the same alpha (a report's alpha is its own:
    // read at the default 0.05, this A/A test failed about one run in 20).
    let out = sb.run(&["report", "last", "--format", "json", "--alpha", "0.001"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for metric in ["wall", "user", "sys", "maxrss"] {
        let c = comparison(&r, "nap", metric, "slow");
        assert!(
            c["verdict"] == "noise" || c["verdict"] == "undefined",
            "{metric}: identical configs must not be flagged: {c}"
        );
    }
    assert_eq!(comparison(&r, "nap", "wall", "slow")["verdict"], "noise");
}

#[test]
fn ab_shorthand_compares_configs() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "ab",
        "--config",
        "base=",
        "--config",
        "slow=export SLOW=1",
        "--runs",
        "8",
        "--quiet",
        "--format",
        "json",
        "--",
        "if [ -n \"$SLOW\" ]; then sleep 0.05; else sleep 0.02; fi",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(comparison(&r, "cmd", "wall", "slow")["verdict"], "worse");
    // The stored plan of an ab experiment is a real plan file.
    assert!(r["experiment"]["plan_text"]
        .as_str()
        .unwrap()
        .contains("[[config]]"));
}

/// `ab -c NAME=CMD` gives a config a cleanup (its teardown): every enter of the config
/// (its setup) is matched by a leave (its teardown).
#[test]
fn ab_teardown_runs_for_every_setup() {
    let sb = Sandbox::new();
    let log = sb.path("steps.log");
    let out = sb.run(&[
        "ab",
        "--config",
        "base=",
        "--config",
        &format!("x=echo setup >> {}", log.display()),
        "-c",
        &format!("x=echo teardown >> {}", log.display()),
        "--runs",
        "4",
        "--quiet",
        "--no-report",
        "--",
        "true",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&log).unwrap();
    let setups = text.lines().filter(|l| *l == "setup").count();
    let teardowns = text.lines().filter(|l| *l == "teardown").count();
    assert!(setups >= 1, "{text}");
    assert_eq!(setups, teardowns, "{text}");
}

#[test]
fn failed_runs_are_recorded_and_shown_never_sampled() {
    let sb = Sandbox::new();
    let plan = sb.write(
        "plan.toml",
        r#"
runs = 4
timeout = "2s"
[[config]]
name = "ok"
[[config]]
name = "broken"
setup = "export BREAK=1"
[[workload]]
name = "w"
command = 'if [ -n "$BREAK" ]; then echo "disk on fire" >&2; exit 3; fi; true'
[[workload]]
name = "hang"
command = 'if [ -n "$BREAK" ]; then sleep 30; fi; true'
"#,
    );
    // Every run of `broken` fails: all are made (no fail-fast), reported,
    // and the exit status is 1.
    let out = sb.run(&[
        "run",
        plan.to_str().unwrap(),
        "--quiet",
        "--max-failures",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Failed runs (8)"), "{text}");
    assert!(
        text.contains("exit status 3") && text.contains("disk on fire"),
        "{text}"
    );
    assert!(text.contains("timed out"), "{text}");
    let r = sb.json_report("last");
    let m = r["analysis"]["metrics"].as_array().unwrap();
    let wall = m
        .iter()
        .find(|m| m["workload"] == "w" && m["name"] == "wall")
        .unwrap();
    assert_eq!(
        wall["cells"][1]["values"].as_array().unwrap().len(),
        0,
        "failed runs are not samples"
    );
    assert_eq!(wall["comparisons"][0]["verdict"], "undefined");
}

#[test]
fn regex_metrics_are_extracted_from_stdout_even_when_not_utf8() {
    let sb = Sandbox::new();
    let plan = sb.write(
        "plan.toml",
        r#"
runs = 3
[[config]]
name = "a"
[[config]]
name = "b"
setup = "export RATE=200"
[[workload]]
name = "bench"
command = 'printf "\377\376 junk\nops/s: ${RATE:-100}\n"'
metrics = [{ name = "ops", regex = 'ops/s: (?P<value>[0-9.]+)', unit = "ops/s", direction = "higher" }]
"#,
    );
    let out = sb.run(&["run", plan.to_str().unwrap(), "--quiet", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = comparison(&r, "bench", "ops", "b");
    assert!(
        (c["delta_mean_pct"].as_f64().unwrap() - 100.0).abs() < 1e-9,
        "{c}"
    );
}
