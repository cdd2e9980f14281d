//! A ratio of means has no confidence interval when the baseline's
//! resampled mean can be 0: the report says "not estimable" and why, in
//! every format, and never prints an interval below -100% for a metric that
//! cannot be negative. Metrics that are negative keep their intervals.

use crate::common;

use common::{comparison, create_experiment, record_ok, stdout, Sandbox};
use sysdelta::metric::{Direction, MetricSpec};
use sysdelta::store::Store;
use sysdelta::workload::MetricSamples;

const RUNS: u32 = 30;

/// Config a (baseline) and b, 30 runs each, every run reporting three
/// metrics: `wall` (ordinary), `faults` (zero in all but two runs of a
/// and two of b: a resample of a's runs is all zeros one time in eight;
/// before sysdelta said "not estimable" this printed intervals such as
/// [-300%, +1.4e10%]),
/// and `offset` (negative, around -50, b 2% lower).
fn store_with_mostly_zero_metric(sb: &Sandbox) {
    let store = Store::open(&sb.store(), true).unwrap();
    let specs = [
        MetricSpec::new("wall", "s", Direction::Lower),
        MetricSpec::new("faults", "", Direction::Lower),
        MetricSpec::new("offset", "ns", Direction::Higher),
    ];
    let id = create_experiment(&store, "mostly-zero", &["a", "b"], RUNS, &specs);
    for block in 0..RUNS {
        for (seq, config) in ["a", "b"].into_iter().enumerate() {
            let i = f64::from(block);
            let b = config == "b";
            let faults = match (b, block) {
                (false, 3 | 17) => 0.9,
                (true, 11 | 23) => 2.2,
                _ => 0.0,
            };
            let samples = [
                MetricSamples {
                    metric: "wall".into(),
                    values: vec![10.0 + (i * 7.0) % 5.0 * 0.01 + if b { 0.1 } else { 0.0 }],
                },
                MetricSamples {
                    metric: "faults".into(),
                    values: vec![faults],
                },
                MetricSamples {
                    metric: "offset".into(),
                    values: vec![-50.0 + (i * 3.0) % 7.0 * 0.1 - if b { 1.0 } else { 0.0 }],
                },
            ];
            record_ok(&store, id, (block, seq as u32), config, &samples);
        }
    }
    store
        .finish(id, sysdelta::status::ExperimentStatus::Complete, None)
        .unwrap();
}

#[test]
fn a_mostly_zero_baseline_has_no_interval_and_says_why() {
    let sb = Sandbox::new();
    store_with_mostly_zero_metric(&sb);
    for method in ["percentile", "bca"] {
        let out = sb.run(&["report", "last", "--format", "json", "--ci", method]);
        assert!(out.status.success(), "{}", common::stderr(&out));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let c = comparison(&report, "w", "faults", "b");
        assert!(c["ratio_ci"].is_null(), "{method}: {}", c["ratio_ci"]);
        assert!(c["ratio_ci_other_method"].is_null(), "{method}");
        let note = c["ci_note"].as_str().unwrap_or_default();
        assert!(
            note.contains("not estimable") && note.contains("mean 0"),
            "{method}: {c}"
        );
        let warnings = report["analysis"]["warnings"].to_string();
        assert!(warnings.contains("not estimable"), "{warnings}");
        // The ordinary metric keeps its interval.
        assert!(comparison(&report, "w", "wall", "b")["ratio_ci"].is_array());
    }

    let text = stdout(&sb.run(&["report", "last"]));
    assert!(text.contains("not estimable"), "{text}");
    let warnings = text.split("Warnings:").nth(1).unwrap_or_default();
    let warnings = warnings.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        warnings.contains("not estimable")
            && warnings.contains("w/faults in b: 28 of 30 baseline runs are 0")
            && warnings.contains("mean 0"),
        "the warning names the metric and the reason:\n{text}"
    );
    let csv = stdout(&sb.run(&["report", "last", "--format", "csv"]));
    let faults_b = csv
        .lines()
        .find(|l| l.contains(",faults,") && l.contains(",b,"))
        .unwrap();
    assert!(faults_b.contains("not estimable"), "{csv}");
    let html = stdout(&sb.run(&["report", "last", "--format", "html"]));
    assert!(html.contains("not estimable"));
    let md = stdout(&sb.run(&["report", "last", "--format", "markdown"]));
    assert!(md.contains("not estimable"), "{md}");
}

/// Whatever the data, an interval of a ratio of non-negative means never
/// reaches below -100% (a ratio below 0).
#[test]
fn no_interval_of_a_non_negative_metric_is_below_minus_100_percent() {
    let sb = Sandbox::new();
    store_with_mostly_zero_metric(&sb);
    for method in ["percentile", "bca"] {
        let report = {
            let out = sb.run(&["report", "last", "--format", "json", "--ci", method]);
            serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
        };
        for m in ["wall", "faults"] {
            let c = comparison(&report, "w", m, "b");
            for key in ["ratio_ci", "ratio_ci_other_method"] {
                if let Some(ci) = c[key].as_array() {
                    assert!(ci[0].as_f64().unwrap() >= 0.0, "{method} {m} {key}: {c}");
                }
            }
        }
    }
}

/// A metric whose values are negative is not "not estimable": its ratio
/// of means is well defined, and it gets an interval and a verdict.
#[test]
fn a_negative_metric_keeps_its_interval() {
    let sb = Sandbox::new();
    store_with_mostly_zero_metric(&sb);
    let report = sb.json_report("last");
    let c = comparison(&report, "w", "offset", "b");
    let ci = c["ratio_ci"].as_array().expect("an interval");
    let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
    // b is 1 ns lower on about -50: the ratio is about 1.02.
    assert!(lo > 1.0 && hi < 1.05 && lo < hi, "{c}");
    assert!(c["ci_note"].is_null(), "{c}");
    assert_eq!(c["verdict"], "worse", "{c}");
}
