//! Comparisons across separately run experiments (as across a reboot),
//! against an imported hyperfine file, and a metric's history.

use crate::common;

use common::{stdout, Sandbox};

/// One config, one workload whose cost the environment variable COST sets:
/// two separate processes stand in for kernel A and kernel B.
fn plan(cost: u32) -> String {
    format!(
        r#"
name = "one-boot"
runs = 8
seed = 3
[[config]]
name = "this-boot"
setup = ""
[[workload]]
name = "loop"
command = 'i=0; while [ $i -lt {cost} ]; do i=$((i+1)); done'
"#
    )
}

fn run_labelled(sb: &Sandbox, cost: u32, label: &str) {
    let p = sb.write(&format!("{label}.toml"), &plan(cost));
    let out = sb.run(&[
        "run",
        p.to_str().unwrap(),
        "-q",
        "--no-report",
        "--label",
        label,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn json(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn comparison<'a>(v: &'a serde_json::Value, workload: &str, metric: &str) -> &'a serde_json::Value {
    v["analysis"]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["workload"] == workload && m["name"] == metric)
        .unwrap_or_else(|| panic!("no {workload}/{metric}"))
}

#[test]
fn two_labelled_experiments_from_separate_processes() {
    let sb = Sandbox::new();
    run_labelled(&sb, 2000, "kernel-a");
    run_labelled(&sb, 12000, "kernel-b");

    let v = json(&sb.run(&["compare", "kernel-a", "kernel-b", "--format", "json"]));
    assert_eq!(
        v["analysis"]["configs"],
        serde_json::json!(["kernel-a", "kernel-b"])
    );
    let wall = comparison(&v, "loop", "wall");
    let c = &wall["comparisons"][0];
    assert_eq!(c["config"], "kernel-b");
    assert_eq!(
        c["verdict"], "worse",
        "6x the work must come out worse: {c}"
    );
    assert_eq!(wall["cells"][0]["values"].as_array().unwrap().len(), 8);

    // Same machine, same boot: no fingerprint warning.
    let out = sb.run(&["compare", "kernel-a", "kernel-b"]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(!text.contains("WARNING"), "{text}");
    // As `report`'s: within 80 columns, units a person reads, no e-notation.
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    let e_notation = regex::Regex::new(r"[0-9]e[-+]?[0-9]").unwrap();
    assert!(!e_notation.is_match(&text), "{text}");

    // Every format works on a comparison.
    for f in ["text", "markdown", "csv", "html"] {
        let out = sb.run(&["compare", "kernel-a", "kernel-b", "--format", f]);
        assert!(
            out.status.success(),
            "{f}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout(&out).contains("kernel-b"), "{f}");
    }

    // A fingerprint that differs in more than the kernel is warned about
    // prominently: first line of the text, stderr, and the HTML banner.
    let db = rusqlite::Connection::open(sb.store()).unwrap();
    db.execute(
        "UPDATE experiments SET fingerprint = json_set(fingerprint, '$.thp', 'never', '$.kernel', '9.9.9') WHERE label = 'kernel-b'",
        [],
    )
    .unwrap();
    drop(db);
    let out = sb.run(&["compare", "kernel-a", "kernel-b"]);
    assert!(out.status.success());
    let text = stdout(&out);
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with("WARNING: kernel-b differs from kernel-a in more than the kernel: thp"),
        "{first}"
    );
    assert!(
        !first.contains("kernel ("),
        "the kernel itself is expected to differ: {first}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning: kernel-b differs"));
    assert_eq!(
        text.matches("differs from kernel-a").count(),
        1,
        "the warning is printed once: {text}"
    );
    let html = stdout(&sb.run(&["compare", "kernel-a", "kernel-b", "--format", "html"]));
    assert!(html.contains("role=\"alert\"") && html.contains("more than the kernel"));
    assert!(
        html.contains("class=\"diff\""),
        "differing fingerprint rows are highlighted"
    );
}

#[test]
fn bad_comparisons_are_bad_input() {
    let sb = Sandbox::new();
    run_labelled(&sb, 1000, "a");
    run_labelled(&sb, 1000, "dup");
    run_labelled(&sb, 1000, "dup");
    for (args, want) in [
        (
            vec!["compare", "a", "nothing"],
            "no experiment has id or label 'nothing'",
        ),
        (
            vec!["compare", "a", "dup"],
            "label 'dup' matches 2 experiments",
        ),
        (vec!["compare", "a", "a:nope"], "has no config 'nope'"),
    ] {
        let out = sb.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{err}");
    }
    let target = sb.path("no/such/dir/c.html");
    let out = sb.run(&[
        "compare",
        "a",
        "2",
        "--export-html",
        target.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!sb.path("no").exists());
}

#[test]
fn compare_with_an_imported_hyperfine_file() {
    let sb = Sandbox::new();
    run_labelled(&sb, 3000, "native");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/hyperfine-one.json"
    );
    let out = sb.run(&[
        "import",
        "hyperfine",
        fixture,
        "--label",
        "hf",
        "--workload",
        "loop",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let v = json(&sb.run(&["compare", "native", "hf", "--format", "json"]));
    let wall = comparison(&v, "loop", "wall");
    assert_eq!(wall["cells"][1]["config"], "hf");
    assert_eq!(
        wall["cells"][1]["values"].as_array().unwrap().len(),
        10,
        "hyperfine's 10 times"
    );
    assert!(wall["comparisons"][0]["delta_mean_pct"].is_number());
    let warnings = v["analysis"]["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("hf: samples imported from hyperfine JSON")),
        "{warnings:?}"
    );
    let html = stdout(&sb.run(&["compare", "native", "hf", "--format", "html"]));
    assert!(html.contains("Imported samples."));
    // The import recorded no environment: unknown is not "different".
    assert!(
        !html.contains("class=\"diff\""),
        "no environment row is marked as differing"
    );

    // The text: fields unknown on one side are "not recorded", said once,
    // never listed as differences ("cpufreq_governor (- vs -)"), and each
    // warning is printed once.
    let out = sb.run(&["compare", "native", "hf"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let text = stdout(&out);
    assert!(!text.contains("differs from"), "{text}");
    assert!(!text.contains("vs -)"), "{text}");
    assert_eq!(text.matches("not recorded").count(), 1, "{text}");
    assert!(
        text.starts_with("WARNING: hf: not recorded: ") && text.contains("kernel"),
        "{text}"
    );
    assert_eq!(
        text.matches("samples imported from hyperfine JSON").count(),
        1,
        "{text}"
    );
}

#[test]
fn history_marks_the_change_point() {
    let sb = Sandbox::new();
    // Eight "kernel versions" as hyperfine imports: 10 ms until v5, 13 ms from v5 on.
    for k in 1..=8 {
        let base = if k >= 5 { 0.013 } else { 0.010 };
        let times: Vec<String> = (0..6)
            .map(|i| format!("{:.6}", base + 0.0001 * ((i * 7 + k) % 5) as f64))
            .collect();
        let f = sb.write(
            &format!("v{k}.json"),
            &format!(
                r#"{{"results":[{{"command":"make","times":[{}]}}]}}"#,
                times.join(",")
            ),
        );
        let out = sb.run(&[
            "import",
            "hyperfine",
            f.to_str().unwrap(),
            "--label",
            &format!("6.{k}"),
        ]);
        assert!(out.status.success());
    }
    let out = sb.run(&[
        "history",
        "hyperfine/wall",
        "--label-prefix",
        "6.",
        "--format",
        "json",
    ]);
    let v = json(&out);
    assert_eq!(v["points"].as_array().unwrap().len(), 8);
    let cps = v["change_points"].as_array().unwrap();
    assert_eq!(cps.len(), 1, "{cps:?}");
    assert_eq!(cps[0]["index"], 4, "the change is between 6.4 and 6.5");
    let text = stdout(&sb.run(&["history", "wall", "--label-prefix", "6."]));
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("change point"))
        .unwrap();
    assert!(
        lines[at - 1].contains("6.4") && lines[at + 1].contains("6.5"),
        "{text}"
    );

    let out = sb.run(&["history", "wall", "--label-prefix", "7."]);
    assert_eq!(out.status.code(), Some(2));
}

/// `compare rc1 rc2` on experiments of several configs, as the README
/// shows it after its quickstart: each label stands for its baseline
/// config (as `history` follows the baseline), and the report names it;
/// `LABEL:CONFIG` still picks another.
#[test]
fn bare_labels_of_multi_config_experiments_compare_their_baselines() {
    let sb = Sandbox::new();
    let two = "name = \"two\"\nruns = 4\nbaseline = \"base\"\n\
               [[config]]\nname = \"other\"\nsetup = \"\"\n\
               [[config]]\nname = \"base\"\nsetup = \"\"\n\
               [[workload]]\nname = \"loop\"\ncommand = \"true\"\n";
    let p = sb.write("two.toml", two);
    for label in ["rc1", "rc2"] {
        let out = sb.run(&[
            "run",
            p.to_str().unwrap(),
            "-q",
            "--no-report",
            "--label",
            label,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = sb.run(&["compare", "rc1", "rc2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    assert!(
        text.contains("rc1:base") && text.contains("rc2:base"),
        "{text}"
    );
    assert!(!text.contains(":other"), "{text}");
    let out = sb.run(&["compare", "rc1:other", "rc2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout(&out).contains("rc1:other"));
}
