//! benchstat's layout shows sysdelta's own verdicts and corrected p: the
//! same as every other format's, although it computes no bootstrap
//! interval where none is shown (`analysis::Options::full`). A
//! benchmark whose interval may not exist (zeros in a cell, a zero
//! baseline) is still judged as the full report judges it, so its `n/a`
//! stays `n/a`.

use crate::common::{comparison, stderr, stdout, Sandbox};

/// Go output of `file` (0: old, 1: new), 12 runs of four benchmarks:
/// `Fast` 10% slower in new, `Same` unchanged, `Zeros` with 0 B/op in
/// every run of old (a zero baseline: no ratio) and in most of new, and
/// `Rare` with B/op zero in all but two runs a side (its resampled mean
/// can be 0: not estimable).
fn go_output(file: usize) -> String {
    let mut s = String::from("goos: linux\ngoarch: amd64\npkg: example.com/v\n");
    for i in 0..12u32 {
        let wobble = f64::from((i * 7) % 5) * 0.4;
        let fast = 100.0 + wobble + if file == 1 { 10.0 } else { 0.0 };
        let same = 200.0 + f64::from((i * 3 + file as u32) % 7) * 0.5;
        let zeros = if file == 1 && i % 5 == 0 { 16 } else { 0 };
        let rare = if i == 3 + file as u32 || i == 9 {
            64
        } else {
            0
        };
        s.push_str(&format!(
            "BenchmarkFast-2  1000  {fast:.1} ns/op\n\
             BenchmarkSame-2  1000  {same:.1} ns/op\n\
             BenchmarkZeros-2  1000  {} ns/op  {zeros} B/op\n\
             BenchmarkRare-2  1000  {} ns/op  {rare} B/op\n",
            50.0 + wobble,
            70.0 + wobble,
        ));
    }
    s
}

/// The "vs base" text of `workload`'s row in the table of `unit`.
fn vs_base<'a>(layout: &'a str, unit: &str, workload: &str) -> &'a str {
    let table = layout
        .split("\n\n")
        .find(|t| t.lines().take(2).any(|l| l.contains(unit)))
        .unwrap_or_else(|| panic!("no table of {unit} in:\n{layout}"));
    let row = table
        .lines()
        .find(|l| l.starts_with(workload))
        .unwrap_or_else(|| panic!("no row {workload} in:\n{table}"));
    // The last cell: a change, `~` or `n/a`, then (p=... n=...).
    let at = ["~ ", "n/a", "+", "-"]
        .iter()
        .filter_map(|m| row.rfind(m))
        .max()
        .unwrap();
    let start = row[..at].rfind("  ").map_or(at, |s| s + 2);
    row[start.min(at)..].trim()
}

#[test]
fn benchstats_layout_judges_as_the_full_report() {
    let sb = Sandbox::new();
    sb.import_go(&go_output(0), &go_output(1));
    let json = sb.run(&["report", "--last", "--format", "json"]);
    assert!(json.status.success(), "{}", stderr(&json));
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let out = sb.run(&["report", "--last", "--format", "benchstat"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let layout = stdout(&out);
    let mut verdicts = Vec::new();
    for (workload, metric, unit) in [
        ("Fast-2", "sec/op", "sec/op"),
        ("Same-2", "sec/op", "sec/op"),
        ("Zeros-2", "sec/op", "sec/op"),
        ("Rare-2", "sec/op", "sec/op"),
        ("Zeros-2", "B/op", "B/op"),
        ("Rare-2", "B/op", "B/op"),
    ] {
        let c = comparison(&report, workload, metric, "new");
        let verdict = c["verdict"].as_str().unwrap();
        let shown = vs_base(&layout, unit, workload);
        let as_json = match verdict {
            "worse" | "better" => format!(
                "{:+.2}% (p={:.3} n=12)",
                c["delta_median_pct"].as_f64().unwrap(),
                c["p_adjusted"].as_f64().unwrap()
            ),
            "noise" => format!("~ (p={:.3} n=12)", c["p_adjusted"].as_f64().unwrap()),
            _ => "n/a".to_string(),
        };
        assert_eq!(shown, as_json, "{workload} {metric}:\n{layout}");
        verdicts.push(verdict.to_string());
    }
    // The cases the fixture is for: a regression, noise, and the two whose
    // interval does not exist stay without a verdict.
    assert_eq!(verdicts[0], "worse", "{layout}");
    assert_eq!(verdicts[1], "noise", "{layout}");
    assert_eq!(&verdicts[4..], ["undefined", "undefined"], "{layout}");
    let rare = comparison(&report, "Rare-2", "B/op", "new");
    assert!(
        rare["ci_note"]
            .as_str()
            .unwrap_or_default()
            .contains("not estimable"),
        "{rare}"
    );
}
