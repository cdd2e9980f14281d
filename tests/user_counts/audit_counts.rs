//! Runs of a kexec boot that failed its machine audit are "left out" in
//! the report's header; every other count a user reads says the same:
//! `sysdelta list` (text and JSON), the warning on runs that exited
//! non-zero, and the shell start-up's share of the wall time.

use crate::common;
use crate::kernels;

use sysdelta::analysis::shell_cost;
use sysdelta::store::boots::BootEnd;
use sysdelta::store::runlog::RunRow;
use sysdelta::store::{RunResult, Store};
use sysdelta::workload::MetricSamples;

/// A boot of `config` in block `block` whose `n` runs (of `wall` seconds)
/// exited with `exit` (kept, as under `-i`); its machine audit failed
/// when `audit_failed`.
fn exited_boot(
    store: &Store,
    exp: i64,
    block: u32,
    config: &str,
    n: u32,
    exit: i32,
    audit_failed: bool,
) {
    let boot = store
        .begin_boot(exp, config, block, 0, "kexec", 1.95e9)
        .unwrap();
    let samples = [
        MetricSamples {
            metric: "wall".into(),
            values: vec![1.0],
        },
        MetricSamples {
            metric: "ops".into(),
            values: vec![1000.0],
        },
    ];
    for seq in 0..n {
        let rec = common::run_record(
            exp,
            block,
            seq,
            config,
            RunResult::Exited {
                samples: &samples,
                exit_code: exit,
            },
        );
        let mut row = RunRow::of(&rec).unwrap();
        row.boot = Some(boot);
        store.record_row(row).unwrap();
    }
    let reason =
        audit_failed.then(|| format!("{}: dmesg: 1 error", sysdelta::status::AUDIT_FAILED));
    store
        .end_boot(
            boot,
            &BootEnd {
                ok: !audit_failed,
                reason,
                runs: n,
                ..Default::default()
            },
        )
        .unwrap();
}

/// 6 boots x 5 runs of each kernel; the helper's audit-failed boot of k2
/// (2 runs); a good boot of k1 with 1 run that exited 1; and a second
/// audit-failed boot of k2 with 2 runs that exited 3. Counted: 61 ok, 4
/// left out, 1 exited non-zero.
fn store(sb: &common::Sandbox) -> i64 {
    let (store, exp) = kernels::aa_with_audit_failed_boot(&sb.store());
    exited_boot(&store, exp, 7, "k1", 1, 1, false);
    exited_boot(&store, exp, 8, "k2", 2, 3, true);
    exp
}

fn ok(sb: &common::Sandbox, args: &[&str]) -> String {
    let o = sb.run(args);
    assert!(o.status.success(), "{args:?}: {}", common::stderr(&o));
    common::stdout(&o)
}

#[test]
fn list_counts_runs_as_the_report_header_does() {
    let sb = common::Sandbox::new();
    let exp = store(&sb);
    let report = sb.json_report(&exp.to_string());
    assert_eq!(report["analysis"]["runs_ok"], 61);
    assert_eq!(report["analysis"]["runs_left_out"], 4);

    let json: serde_json::Value =
        serde_json::from_str(&ok(&sb, &["list", "--format", "json"])).unwrap();
    assert_eq!(json[0]["runs_ok"], 61, "{json}");
    assert_eq!(json[0]["runs_left_out"], 4, "{json}");

    let text = ok(&sb, &["list"]);
    let row = text.lines().nth(1).unwrap();
    assert_eq!(
        row.split_whitespace().nth(4),
        Some("61"),
        "the ok column: {text}"
    );
    assert!(
        text.contains(&format!(
            "experiment {exp}: 4 runs left out (machine audit failed), not counted as ok"
        )),
        "{text}"
    );
    for line in text.lines() {
        assert!(line.chars().count() <= 80, "{text}");
    }
}

#[test]
fn the_non_zero_exit_warning_counts_only_the_runs_the_header_calls_ok() {
    let sb = common::Sandbox::new();
    let exp = store(&sb);
    let report = sb.json_report(&exp.to_string());
    let warnings: Vec<&str> = report["analysis"]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .collect();
    let exited: Vec<&&str> = warnings
        .iter()
        .filter(|w| w.contains("non-zero status"))
        .collect();
    assert_eq!(exited.len(), 1, "{warnings:?}");
    assert!(
        exited[0].starts_with("1 of 61 measured runs exited"),
        "{warnings:?}"
    );
    assert!(
        exited[0].ends_with("k1/w: 1 (exit status 1)"),
        "{warnings:?}"
    );
}

#[test]
fn the_shell_share_is_of_the_wall_time_of_counted_runs() {
    let sb = common::Sandbox::new();
    let exp = store(&sb);
    let store = Store::open(&sb.store(), true).unwrap();
    let samples = shell_cost::Samples {
        config: "k2".into(),
        shell: "/bin/sh".into(),
        workloads: vec!["w".into()],
        samples_s: vec![0.001; 5],
    };
    store
        .add_event(
            exp,
            shell_cost::EVENT_KIND,
            &serde_json::to_string(&samples).unwrap(),
        )
        .unwrap();
    drop(store);
    let report = sb.json_report(&exp.to_string());
    let share = &report["analysis"]["shell_startup"][0]["workloads"][0];
    // k2's counted runs: its 30 in boots that passed, none of the 4 at 50 s
    // and 1 s in the boots whose audit failed.
    let mut walls: Vec<f64> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["config"] == "k2" && r["boot_id"].as_i64().is_some_and(|b| b <= 12))
        .map(|r| r["samples"]["wall"][0].as_f64().unwrap())
        .collect();
    assert_eq!(walls.len(), 30);
    walls.sort_by(f64::total_cmp);
    let median = (walls[14] + walls[15]) / 2.0;
    let got = share["wall_median_s"].as_f64().unwrap();
    assert!((got - median).abs() < 1e-12, "{got} vs {median}: {share}");
}
