//! The hyperfine export (`--export-hyperfine`) of `ab`'s `-P`/`-L` scans
//! gives each result hyperfine's `"parameters": {"NAME": "VALUE"}`, as
//! `hyperfine --export-json` does, so scripts that group results by
//! parameter (hyperfine's `plot_parametrized.py`) read it.

use crate::common::{stderr, Sandbox};

/// `ab ARGS --export-hyperfine FILE`, quiet, no report: the export's
/// results.
fn results(sb: &Sandbox, args: &[&str]) -> Vec<serde_json::Value> {
    let file = sb.path("hf.json");
    let mut all = vec!["ab", "-q", "--no-report", "-r", "2"];
    all.extend_from_slice(&["--export-hyperfine", file.to_str().unwrap()]);
    all.extend_from_slice(args);
    let out = sb.run(&all);
    assert!(out.status.success(), "{all:?}: {}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    v["results"].as_array().unwrap().clone()
}

fn parameters(results: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    results.iter().map(|r| &r["parameters"]).collect()
}

#[test]
fn a_scanned_command_gives_each_result_its_parameter() {
    let sb = Sandbox::new();
    let r = results(&sb, &["sleep {t}", "-L", "t", "0.01,0.02"]);
    assert_eq!(
        parameters(&r),
        [
            &serde_json::json!({"t": "0.01"}),
            &serde_json::json!({"t": "0.02"})
        ]
    );
    // Without a scan there is none, as in hyperfine.
    let r = results(&sb, &["true", "sleep 0.001"]);
    assert!(r.iter().all(|r| r.get("parameters").is_none()), "{r:?}");
}

#[test]
fn two_scans_give_each_result_both_values_of_its_point() {
    let sb = Sandbox::new();
    let r = results(
        &sb,
        &["true {a} {b}", "-L", "a", "x,y", "-P", "b", "1", "2"],
    );
    let mut got: Vec<(&str, &serde_json::Value)> = r
        .iter()
        .map(|r| (r["command"].as_str().unwrap(), &r["parameters"]))
        .collect();
    got.sort_by_key(|g| g.0);
    let want = |a: &str, b: &str| serde_json::json!({"a": a, "b": b});
    assert_eq!(
        got,
        [
            ("true_x_1", &want("x", "1")),
            ("true_x_2", &want("x", "2")),
            ("true_y_1", &want("y", "1")),
            ("true_y_2", &want("y", "2"))
        ]
    );
}

#[test]
fn a_scan_of_the_command_under_configs_gives_each_config_the_value() {
    let sb = Sandbox::new();
    let r = results(
        &sb,
        &[
            "--config", "a=", "--config", "b=", "-L", "n", "1,2", "--", "true {n}",
        ],
    );
    let got: Vec<(&str, &serde_json::Value)> = r
        .iter()
        .map(|r| (r["command"].as_str().unwrap(), &r["parameters"]))
        .collect();
    assert_eq!(got.len(), 4, "{r:?}");
    for (command, p) in got {
        // "a: true 1": the config and the command with its value.
        let n = if command.ends_with('1') { "1" } else { "2" };
        assert_eq!(p, &serde_json::json!({ "n": n }), "{command}");
    }
}
