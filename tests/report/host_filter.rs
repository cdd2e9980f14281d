//! `compare --host NAME` and `history --host NAME` consider only the
//! experiments that ran on host NAME: in a store holding two hosts'
//! experiments under the same labels (as a fleet gives them), a label
//! names that host's experiment and a history follows one machine. An
//! unknown host, or another host's experiment, is bad input in one line.

use crate::common;

use std::collections::BTreeMap;

use common::{create_experiment_on, run_record, stderr, stdout, On, Sandbox};
use sysdelta::metric::{Direction, MetricSpec};
use sysdelta::status::ExperimentStatus;
use sysdelta::store::{RunResult, Store};
use sysdelta::workload::MetricSamples;

const LABELS: usize = 10;

/// `level(k)` for the k-th experiment of each host, on hosts alpha and
/// beta: labels 6.1 .. 6.10, one config `k`, six runs of `w/wall` each,
/// created alternately (alpha's 6.1, beta's 6.1, alpha's 6.2, ...).
/// Alpha stays at 10 ms; beta steps up 25% after its seventh.
fn store_of_two_hosts(sb: &Sandbox) {
    let store = Store::open(&sb.store(), true).unwrap();
    let spec = [MetricSpec::new("wall", "s", Direction::Lower)];
    for k in 0..LABELS {
        for host in ["alpha", "beta"] {
            let fp: BTreeMap<String, String> = BTreeMap::new();
            let label = format!("6.{}", k + 1);
            let on = On {
                label: Some(&label),
                host,
                fingerprint: &fp,
            };
            let id = create_experiment_on(&store, "kernels", &on, &["k"], 6, &spec);
            let level = if host == "beta" && k >= 7 {
                0.0125
            } else {
                0.010
            };
            for block in 0..6u32 {
                let wiggle = f64::from((block * 7 + k as u32 * 3) % 11) / 10.0 - 0.5;
                let samples = [MetricSamples {
                    metric: "wall".into(),
                    values: vec![level * (1.0 + 0.02 * wiggle)],
                }];
                store
                    .record_run(&run_record(id, block, 0, "k", RunResult::Ok(&samples)))
                    .unwrap();
            }
            store.finish(id, ExperimentStatus::Complete, None).unwrap();
        }
    }
}

/// A bad-input exit: code 2 and one line on stderr containing `want`.
fn assert_bad(out: &std::process::Output, want: &str) {
    assert_eq!(out.status.code(), Some(2), "{}", stderr(out));
    let err = stderr(out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(want), "{err:?} lacks {want:?}");
    assert!(stdout(out).is_empty());
}

#[test]
fn compare_on_one_host_resolves_labels_there() {
    let sb = Sandbox::new();
    store_of_two_hosts(&sb);
    // Both hosts have a 6.8: without a host, the label is ambiguous.
    let out = sb.run(&["compare", "6.7", "6.8"]);
    assert_bad(&out, "label '6.7' matches 2 experiments");

    for (host, worse) in [("alpha", false), ("beta", true)] {
        let out = sb.run(&["compare", "6.7", "6.8", "--host", host, "--format", "json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["experiment"]["host"], host);
        let c = common::comparison(&v, "w", "wall", "6.8");
        let d = c["delta_mean_pct"].as_f64().unwrap();
        assert_eq!(d > 20.0, worse, "{host}: {c}");
        // `last` is the host's newest; an id is checked against the host.
        let out = sb.run(&["compare", "6.1", "last", "--host", host]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(stdout(&out).contains("6.10"), "{}", stdout(&out));
    }
    // Ids 1 and 3 are alpha's (experiments alternate between the hosts).
    let out = sb.run(&["compare", "1", "3", "--host", "alpha"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_bad(
        &sb.run(&["compare", "1", "4", "--host", "alpha"]),
        "experiment 4 ran on host beta, not alpha",
    );
    assert_bad(
        &sb.run(&["compare", "6.1", "6.2", "--host", "gamma"]),
        "--host gamma: no experiment in",
    );
    let out = sb.run(&["compare", "6.1", "6.2", "--host", "gamma"]);
    assert!(
        stderr(&out).contains("(hosts: alpha, beta)"),
        "{}",
        stderr(&out)
    );
    assert_bad(
        &sb.run(&["compare", "6.1", "7.2", "--host", "beta"]),
        "no experiment on host beta has id or label '7.2'",
    );
}

#[test]
fn history_on_one_host_follows_that_machine() {
    let sb = Sandbox::new();
    store_of_two_hosts(&sb);
    let json = |host: &str| {
        let out = sb.run(&[
            "history",
            "w/wall",
            "--label-prefix",
            "6.",
            "--host",
            host,
            "--format",
            "json",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    // Beta's ids are the even ones; its step after its seventh is found.
    let beta = json("beta");
    let ids: Vec<i64> = beta["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, (1..=LABELS as i64).map(|k| 2 * k).collect::<Vec<_>>());
    let cps = beta["change_points"].as_array().unwrap();
    assert_eq!(cps.len(), 1, "{cps:?}");
    assert_eq!(cps[0]["index"], 7);
    // Alpha stayed where it was.
    let alpha = json("alpha");
    assert_eq!(alpha["points"].as_array().unwrap().len(), LABELS);
    assert!(alpha["points"][0]["id"] == 1);
    assert!(alpha["change_points"].as_array().unwrap().is_empty());
    let text = stdout(&sb.run(&["history", "wall", "--host", "alpha"]));
    assert!(text.contains("No change found"), "{text}");

    assert_bad(
        &sb.run(&["history", "wall", "--host", "gamma"]),
        "--host gamma: no experiment in",
    );
    assert_bad(
        &sb.run(&["history", "wall", "--label-prefix", "7.", "--host", "alpha"]),
        "no experiment on host alpha has a label starting with '7.'",
    );
}
