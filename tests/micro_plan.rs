//! The micro suite as a plan's workload (`builtin = "micro"`).

mod common;
use common::*;

/// A micro benchmark this config cannot run is left out of the samples and
/// the reason reaches the report as an event, once, not silently.
#[test]
fn skipped_micro_benchmarks_are_reported_with_their_reason() {
    let sb = Sandbox::new();
    let plan = sb.write(
        "plan.toml",
        r#"
name = "micro-skip"
runs = 2

[[config]]
name = "one-cpu"
cpus = "0"

[[workload]]
name = "lm"
builtin = "micro"
[workload.params]
filter = ["proc.null_call", "lat.pipe.cross_cpu"]
quick = true
"#,
    );
    let out = sb.run(&["run", plan.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = sb.json_report("last");
    let events: Vec<String> = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "skipped")
        .map(|e| e["message"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(
        events[0]
            .starts_with("lm under one-cpu: lat.pipe.cross_cpu skipped: cross-cpu needs 2 CPUs"),
        "{events:?}"
    );
    assert!(stdout(&out).contains("lat.pipe.cross_cpu skipped"));
}
