//! Per-run `prepare` and `conclude` (`ab -p/--prepare`, `-C/--conclude`,
//! and the plan keys): run before and after every run, warm-ups included,
//! untimed, in the run's config; a failing prepare fails its run.

use crate::common;
use common::*;

fn lines(sb: &Sandbox, name: &str) -> Vec<String> {
    std::fs::read_to_string(sb.path(name))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The wall samples of every run in the last experiment.
fn walls(sb: &Sandbox) -> Vec<f64> {
    let r = sb.json_report("last");
    r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["samples"]["wall"][0].as_f64().unwrap())
        .collect()
}

#[test]
fn prepare_and_conclude_surround_every_run_and_are_not_timed() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "ab",
        "-q",
        "--runs",
        "3",
        "--warmup",
        "2",
        "--config",
        "a=",
        "--config",
        "b=export WHO=b",
        "-p",
        "echo prepare ${WHO:-a} >> log; sleep 0.3",
        "-C",
        "echo conclude ${WHO:-a} >> log; sleep 0.3",
        "--",
        "echo run ${WHO:-a} >> log",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = lines(&sb, "log");
    // (3 runs + 2 warm-ups) x 2 configs, each prepared and concluded, in
    // the run's config (its environment).
    assert_eq!(log.len(), 3 * 10, "{log:?}");
    for triple in log.chunks(3) {
        let who = triple[0].rsplit(' ').next().unwrap();
        assert_eq!(
            triple,
            [
                format!("prepare {who}"),
                format!("run {who}"),
                format!("conclude {who}")
            ],
            "{log:?}"
        );
    }
    assert_eq!(log.iter().filter(|l| *l == "run b").count(), 5);
    // The 0.3 s sleeps are outside every sample: a sample with either
    // would be at least 0.3 s, as sleep never returns early. The bound is
    // that and no less, so all a loaded machine's slowness may go to the
    // `echo` itself.
    let walls = walls(&sb);
    assert_eq!(walls.len(), 10);
    assert!(walls.iter().all(|w| *w < 0.3), "{walls:?}");
}

#[test]
fn a_failing_prepare_fails_its_run() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "ab",
        "-q",
        "--runs",
        "2",
        "--warmup",
        "0",
        "--config",
        "a=",
        "--prepare",
        "echo cannot drop caches >&2; exit 3",
        "--",
        "echo ran >> ran.txt",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!sb.path("ran.txt").exists(), "the command must not run");
    let r = sb.json_report("last");
    let runs = r["runs"].as_array().unwrap();
    assert!(!runs.is_empty());
    for run in runs {
        assert_eq!(run["status"], "failed", "{run}");
        assert_eq!(run["reason"], "prepare failed: exit status 3", "{run}");
        assert!(
            run["stderr_tail"]
                .as_str()
                .unwrap()
                .contains("cannot drop caches"),
            "{run}"
        );
    }
}

#[test]
fn a_plan_prepares_per_workload_with_a_plan_wide_default() {
    let sb = Sandbox::new();
    let plan = sb.write(
        "plan.toml",
        r#"
runs = 2
warmup = 1
prepare = "echo plan-wide >> prep.txt"
conclude = "echo done >> conc.txt"

[[config]]
name = "a"

[[workload]]
name = "inherits"
command = "true"

[[workload]]
name = "own"
prepare = "echo own >> prep.txt"
command = "true"

[[workload]]
name = "none"
prepare = ""
command = "true"
"#,
    );
    let out = sb.run(&["run", plan.to_str().unwrap(), "-q", "--no-report"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let prep = lines(&sb, "prep.txt");
    // 2 runs + 1 warm-up each.
    assert_eq!(
        prep.iter().filter(|l| *l == "plan-wide").count(),
        3,
        "{prep:?}"
    );
    assert_eq!(prep.iter().filter(|l| *l == "own").count(), 3, "{prep:?}");
    assert_eq!(prep.len(), 6, "{prep:?}");
    assert_eq!(lines(&sb, "conc.txt").len(), 9);
}
