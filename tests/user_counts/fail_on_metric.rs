//! `--fail-on VERDICT:METRIC,...` gates a CI job on the metrics it names:
//! a regression in another metric is still in the report, and named on
//! the gate's line, but does not fail the job; a misspelt metric fails it
//! rather than gate nothing.

use crate::common::{self, create_experiment, record_ok, stderr, stdout, Sandbox};

use sysdelta::metric::{Direction, MetricSpec};
use sysdelta::store::Store;
use sysdelta::workload::MetricSamples;

const RUNS: u32 = 20;

/// Configs a and b of workload w: b's wall is 20% above a's (a
/// regression the report calls worse), its rss the same as a's.
fn store(sb: &Sandbox) {
    let store = Store::open(&sb.store(), true).unwrap();
    let specs = [
        MetricSpec::new("wall", "s", Direction::Lower),
        MetricSpec::new("rss", "KiB", Direction::Lower),
    ];
    let id = create_experiment(&store, "gate", &["a", "b"], RUNS, &specs);
    for block in 0..RUNS {
        for (seq, config) in ["a", "b"].into_iter().enumerate() {
            let jitter = f64::from((block * 7 + seq as u32 * 3) % 11) * 0.001;
            let slower = if config == "b" { 1.2 } else { 1.0 };
            let samples = [
                MetricSamples {
                    metric: "wall".into(),
                    values: vec![slower * (1.0 + jitter)],
                },
                MetricSamples {
                    metric: "rss".into(),
                    values: vec![1000.0 + f64::from((block * 5 + seq as u32) % 9)],
                },
            ];
            record_ok(&store, id, (block, seq as u32), config, &samples);
        }
    }
    store
        .finish(id, sysdelta::status::ExperimentStatus::Complete, None)
        .unwrap();
}

/// `report last --fail-on RULE`: (exit code, the gate's line, stdout).
fn gated(sb: &Sandbox, rule: &str) -> (Option<i32>, String, String) {
    let out = sb.run(&["report", "last", "--fail-on", rule]);
    let err = stderr(&out);
    let line = err
        .lines()
        .find(|l| l.contains("--fail-on"))
        .unwrap_or_else(|| panic!("{rule}: no gate line: {err}"))
        .to_string();
    (out.status.code(), line, stdout(&out))
}

#[test]
fn a_regression_in_a_metric_the_gate_does_not_name_is_reported_but_passes() {
    let sb = Sandbox::new();
    store(&sb);
    let (code, line, report) = gated(&sb, "worse:rss");
    assert_eq!(code, Some(0), "{line}");
    assert!(line.contains("--fail-on worse:rss: alpha 0.05"), "{line}");
    assert!(line.contains(", 1 of them gating: passed"), "{line}");
    assert!(line.contains("(not gating: w/wall worse in b +"), "{line}");
    assert!(
        report.contains("worse"),
        "the report still says it: {report}"
    );
}

#[test]
fn a_regression_in_a_metric_the_gate_names_fails_the_job() {
    let sb = Sandbox::new();
    store(&sb);
    for rule in [
        "worse:wall",
        "worse:w/wall",
        "worse:rss,wall",
        "worse",
        "any:wall",
    ] {
        let (code, line, _) = gated(&sb, rule);
        assert_eq!(code, Some(3), "{rule}: {line}");
        assert!(
            line.contains("FAILED by w/wall worse in b +"),
            "{rule}: {line}"
        );
        assert!(!line.contains("not gating"), "{rule}: {line}");
    }
    // Another workload's wall is not this one's.
    let (code, line, _) = gated(&sb, "worse:other/wall");
    assert_eq!(code, Some(3), "{line}");
    assert!(
        line.contains(
            "FAILED: no headline metric other/wall in this report (it has w/wall, w/rss)"
        ),
        "{line}"
    );
}

#[test]
fn a_misspelt_metric_fails_the_gate_and_a_bad_flag_is_refused() {
    let sb = Sandbox::new();
    store(&sb);
    let (code, line, _) = gated(&sb, "worse:walll");
    assert_eq!(code, Some(3), "{line}");
    assert!(line.contains("no headline metric walll"), "{line}");
    let out = sb.run(&["report", "last", "--fail-on", "worse:"]);
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    assert!(stderr(&out).contains("is not METRIC or WORKLOAD/METRIC"));
}

/// Go benchmark output of one config, as `go test -bench -count 10
/// -benchmem` prints it: `Dec-2` takes `dec` ns/op; the sub-benchmark
/// `Enc/json-2` 400 ns/op and `enc_bytes` B/op (a little jitter in each,
/// as real runs have), 3 allocs/op always.
fn gobench(dec: f64, enc_bytes: f64) -> String {
    let mut out = String::from("goos: linux\ngoarch: amd64\npkg: example.com/codec\n");
    for i in 0..10 {
        let jitter = 1.0 + f64::from((i * 7) % 11) * 0.002;
        out.push_str(&format!(
            "BenchmarkDec-2   \t  100000\t {:.1} ns/op\n",
            dec * jitter
        ));
        out.push_str(&format!(
            "BenchmarkEnc/json-2   \t  100000\t {:.1} ns/op\t {:.0} B/op\t 3 allocs/op\n",
            400.0 * (1.0 + f64::from((i * 5) % 9) * 0.002),
            enc_bytes + f64::from((i * 3) % 7)
        ));
    }
    out.push_str("PASS\nok  \texample.com/codec\t3.210s\n");
    out
}

/// A gobench import gates on Go's metrics and sub-benchmarks, whose names
/// hold '/': `worse:sec/op` is the metric `sec/op` of every benchmark,
/// `worse:Enc/json-2/sec/op` that one benchmark's. The new side makes
/// `Dec-2` 20% slower and `Enc/json-2` allocate 20% more bytes.
#[test]
fn go_metrics_and_sub_benchmarks_are_named_whole() {
    let sb = Sandbox::new();
    sb.import_go(&gobench(1000.0, 1000.0), &gobench(1200.0, 1200.0));

    // Every benchmark's time: Dec-2's regression fails it; Enc/json-2's
    // bytes are reported beside it but do not gate.
    let (code, line, _) = gated(&sb, "worse:sec/op");
    assert_eq!(code, Some(3), "{line}");
    assert!(
        line.contains(", 2 of them gating: FAILED by Dec-2/sec/op worse in new +"),
        "{line}"
    );
    assert!(
        line.contains("(not gating: Enc/json-2/B/op worse in new +"),
        "{line}"
    );

    // One sub-benchmark's time, which did not move: the job passes,
    // though both regressions are named on the line.
    let (code, line, _) = gated(&sb, "worse:Enc/json-2/sec/op");
    assert_eq!(code, Some(0), "{line}");
    assert!(
        line.contains(", 1 of them gating: passed (not gating: "),
        "{line}"
    );
    assert!(line.contains("Dec-2/sec/op worse in new +"), "{line}");
    assert!(line.contains("Enc/json-2/B/op worse in new +"), "{line}");

    // A regression in B/op fails a gate that names it, and only that one.
    for (rule, code_wanted) in [
        ("worse:allocs/op", 0),
        ("worse:Enc/json-2/allocs/op,Enc/json-2/sec/op", 0),
        ("worse:B/op", 3),
        ("worse:Enc/json-2/B/op", 3),
        ("worse:Dec-2/sec/op", 3),
    ] {
        let (code, line, _) = gated(&sb, rule);
        assert_eq!(code, Some(code_wanted), "{rule}: {line}");
    }

    // A name no benchmark has, slashes or not, still fails the gate.
    let (code, line, _) = gated(&sb, "worse:Enc/json-2/ns/op");
    assert_eq!(code, Some(3), "{line}");
    assert!(
        line.contains("no headline metric Enc/json-2/ns/op in this report"),
        "{line}"
    );
}
