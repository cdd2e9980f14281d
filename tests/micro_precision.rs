//! Precision mode (`--target-cov`, `--budget`): the sample length and count
//! are chosen per metric within the budget, and the expected and measured
//! spread are printed; MB/s figures use LMbench's MB (10^6 bytes).

use std::process::Command;

fn sysdelta(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sysdelta"))
        .args(args)
        .output()
        .expect("run sysdelta")
}

fn plans(json: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
    json["sample_plans"][0]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap().to_string(), p["plan"].clone()))
        .collect()
}

fn samples_of(json: &serde_json::Value, name: &str) -> usize {
    json["runs"][0]["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == name)
        .unwrap()["samples"]
        .as_array()
        .unwrap()
        .len()
}

#[test]
fn precision_mode_plans_within_budget_and_prints_expected_and_measured_spread() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("p.json");
    // 2 metrics, 4 s: 2 s of kept samples each.
    let o = sysdelta(&[
        "micro",
        "--quiet",
        "--quick",
        "--target-cov",
        "0.5",
        "--budget",
        "4s",
        "--export-json",
        json.to_str().unwrap(),
        "proc.null_call",
        "proc.null_io",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains("Precision: target CoV 0.50 %, budget 4 s per run"),
        "{out}"
    );
    assert!(
        out.contains("expected %") && out.contains("measured %"),
        "{out}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let ps = plans(&doc);
    assert_eq!(ps.len(), 2, "{ps:?}");
    for (name, p) in &ps {
        let ms = p["sample_ms"].as_f64().unwrap();
        let n = p["samples"].as_u64().unwrap() as usize;
        // Never fewer samples than asked for, never shorter than the minimum
        // sample (10 ms in quick mode), and within this metric's 2 s share
        // (one sample of slack for the rounding up of iterations).
        assert!(n >= 11, "{name}: {n}");
        assert!(ms >= 10.0, "{name}: {ms}");
        assert!(ms * n as f64 <= 2000.0 + ms, "{name}: {n} x {ms} ms");
        assert_eq!(
            samples_of(&doc, name),
            n,
            "{name}: the plan's count is kept"
        );
        let exp = p["expected_cov"].as_f64().unwrap();
        let got = p["measured_cov"].as_f64().unwrap();
        assert!(exp.is_finite() && exp >= 0.0, "{name}: {exp}");
        assert!(got.is_finite() && got >= 0.0, "{name}: {got}");
        // The row prints both, as percentages.
        let row = out
            .lines()
            .find(|l| l.starts_with(name.as_str()) && l.split_whitespace().count() >= 7)
            .unwrap_or_else(|| panic!("no precision row for {name}: {out}"));
        let cells: Vec<&str> = row.split_whitespace().collect();
        let e: f64 = cells[4].parse().unwrap();
        let m: f64 = cells[5].parse().unwrap();
        assert!((e - exp * 100.0).abs() < 0.01, "{row}");
        assert!((m - got * 100.0).abs() < 0.01, "{row}");
    }
}

#[test]
fn a_fixed_sample_length_is_kept_and_only_the_count_chosen() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("p.json");
    let o = sysdelta(&[
        "micro",
        "--quiet",
        "--quick",
        "--min-sample-ms",
        "40",
        "--target-cov",
        "50",
        "--budget",
        "10s",
        "--export-json",
        json.to_str().unwrap(),
        "proc.null_call",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("sample length fixed"), "{out}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let (_, p) = &plans(&doc)[0];
    // A 50 % target is met by the fewest samples; their length is the
    // calibrated one (at least 40 ms, not stretched to fill the budget).
    assert_eq!(p["samples"].as_u64(), Some(11), "{p}");
    let ms = p["sample_ms"].as_f64().unwrap();
    assert!((40.0..200.0).contains(&ms), "{p}");
}

#[test]
fn bandwidth_tables_say_mb_is_ten_to_the_sixth() {
    let o = sysdelta(&["micro", "--quiet", "--quick", "bw.pipe.same_cpu"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("bandwidths by CPU placement in MB/s (MB = 10^6 bytes)"),
        "{out}"
    );
    assert!(!out.contains("2^20"), "{out}");
}
