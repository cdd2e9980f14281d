//! Stored strings cannot drive the terminal or inject markup or formulas.
//!
//! An experiment whose name, label, configs, workload, metric, host,
//! fingerprint, events, failure reason and stderr tail hold ESC, BEL, CR,
//! newline, DEL, a C1 control, `<script>`, `=cmd()` and `|` is stored
//! through the library (as a crafted plan or import could store it); then
//! every output of `list`, `report` (text, markdown, csv, html, json),
//! `compare` and `history`, on stdout and stderr, is checked.

use crate::common;

use std::collections::BTreeMap;
use std::process::Output;

use common::{run_record, stdout, Sandbox};
use sysdelta::metric::{Direction, MetricSpec};
use sysdelta::plan::{Order, Overrides};
use sysdelta::store::{NewExperiment, RunRecord, RunResult, Store};
use sysdelta::workload::MetricSamples;

/// Sets the terminal title, rings, starts a new line, returns the cursor,
/// deletes, and opens a C1 CSI; then markup, a formula and a table pipe,
/// and a right-to-left override that reverses what follows it on screen.
/// (No '/': `history` reads WORKLOAD/METRIC.)
const EVIL: &str = "\x1b]0;pwned\x07\r\n\x7f\u{9b}2J<script>alert(1)|x\u{202e}y";

fn name(prefix: &str) -> String {
    format!("{prefix}{EVIL}")
}

/// One experiment labelled `=lab{EVIL}{n}` with two configs, one workload
/// and two metrics (one negative, so the CSV has negative numbers), a failed
/// run, events, and a hostile host and fingerprint.
fn store_experiment(store: &Store, n: u32, configs: &[String]) -> i64 {
    let mut fingerprint = BTreeMap::new();
    fingerprint.insert("kernel".to_string(), name("6.1"));
    fingerprint.insert("cpu_model".to_string(), name("=cpu"));
    fingerprint.insert("memory".to_string(), name("+mem"));
    let label = format!("{}{n}", name("=lab"));
    let plan_text = name("# plan ");
    let host = name("@host");
    let workload = name("@w");
    let id = store
        .create_experiment(&NewExperiment {
            name: &name("=exp"),
            label: Some(&label),
            plan_source: &name("plan.toml"),
            plan_text: &plan_text,
            overrides: &Overrides::default(),
            host: &host,
            fingerprint: &fingerprint,
            seed: 1,
            order: Order::RandomBlocks,
            runs: 12,
            warmup: 0,
            baseline: &configs[0],
            configs: configs.to_vec(),
            workloads: vec![workload.clone()],
        })
        .unwrap();
    let metrics = [
        MetricSpec::new(&name("-wall"), &name("s"), Direction::Lower),
        MetricSpec::new(&name("offset"), "ns", Direction::Higher),
    ];
    store.declare_metrics(id, &workload, &metrics).unwrap();
    for block in 0..12u32 {
        for (seq, config) in configs.iter().enumerate() {
            let x = f64::from(block % 4) * 0.01 + seq as f64 * 0.2 + f64::from(n) * 0.1;
            let samples = [
                MetricSamples {
                    metric: metrics[0].name.clone(),
                    values: vec![10.0 + x],
                },
                MetricSamples {
                    metric: metrics[1].name.clone(),
                    values: vec![-50.0 - x],
                },
            ];
            let reason = name("=failed");
            let tail = name("stderr ");
            let result = if block == 5 && seq == 1 {
                RunResult::Failed {
                    reason: &reason,
                    stderr_tail: &tail,
                    exit_code: Some(1),
                }
            } else {
                RunResult::Ok(&samples)
            };
            store
                .record_run(&RunRecord {
                    workload: &workload,
                    started_at: f64::from(block),
                    ..run_record(id, block, seq as u32, config, result)
                })
                .unwrap();
        }
    }
    store.add_event(id, &name("kind"), &name("=event")).unwrap();
    store
        .finish(id, sysdelta::status::ExperimentStatus::Complete, None)
        .unwrap();
    id
}

fn hostile_store(sb: &Sandbox) {
    let store = Store::open(&sb.store(), true).unwrap();
    let configs = [name("=base"), name("+other")];
    store_experiment(&store, 1, &configs);
    store_experiment(&store, 2, &configs);
}

fn label(n: u32) -> String {
    format!("{}{n}", name("=lab"))
}

/// No byte a terminal acts on: C0 controls but newline, DEL, the C1
/// controls (U+0080-U+009F, UTF-8 C2 80-9F), and the bidi overrides and
/// line separators (U+202A-U+202E, U+2028, U+2029: E2 80 A8-AE).
fn assert_terminal_safe(what: &str, bytes: &[u8]) {
    for (i, w) in bytes.windows(2).enumerate() {
        assert!(
            !(w[0] == 0xc2 && (0x80..=0x9f).contains(&w[1])),
            "{what}: C1 control at byte {i}"
        );
    }
    for (i, w) in bytes.windows(3).enumerate() {
        assert!(
            !(w[0] == 0xe2 && w[1] == 0x80 && (0xa8..=0xae).contains(&w[2])),
            "{what}: a bidi override or line separator at byte {i}"
        );
    }
    if let Some(i) = bytes
        .iter()
        .position(|&b| (b < 0x20 && b != b'\n') || b == 0x7f)
    {
        let from = i.saturating_sub(60);
        panic!(
            "{what}: byte {:#04x} at {i}, after {:?}",
            bytes[i],
            String::from_utf8_lossy(&bytes[from..i])
        );
    }
}

fn checked(what: &str, out: &Output) -> String {
    assert_terminal_safe(&format!("{what} stdout"), &out.stdout);
    assert_terminal_safe(&format!("{what} stderr"), &out.stderr);
    stdout(out)
}

#[test]
fn list_shows_controls_visibly_one_line_per_experiment() {
    let sb = Sandbox::new();
    hostile_store(&sb);
    let out = sb.run(&["list"]);
    assert!(out.status.success());
    let text = checked("list", &out);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        text.contains("\\x1b]0;pwned\\x07\\r\\n\\x7f\\u{9b}2J"),
        "{text}"
    );
}

#[test]
fn every_other_reading_command_is_terminal_safe() {
    // The commands beside `report`: the list as JSON, the run planner in
    // both formats, the environment's differences; and a report whose
    // profile names a hostile symbol (written with rusqlite: SQLite).
    let sb = Sandbox::sqlite();
    hostile_store(&sb);
    let db = rusqlite::Connection::open(sb.store()).unwrap();
    db.execute(
        "INSERT INTO profiles SELECT id, ?1, 1, 10 FROM runs WHERE status = 'ok'",
        [name("sym")],
    )
    .unwrap();
    drop(db);
    for args in [
        &["list", "--format", "json"][..],
        &["plan-runs", "1"],
        &["plan-runs", "1", "--format", "json"],
        &["env", "1"],
        &["env", "1", "--format", "json"],
        &["report", "1"],
    ] {
        let out = sb.run(args);
        assert!(out.status.success(), "{args:?}: {}", common::stderr(&out));
        let text = checked(&format!("{args:?}"), &out);
        if args[0] == "list" {
            let rows: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(rows[0]["label"], label(1), "JSON keeps the label itself");
        }
    }
}

#[test]
fn a_run_logs_fields_cannot_forge_a_line_of_the_warning() {
    // A run log beside the store whose status holds a newline and a line
    // of its own: the fold's warning is one line, the status escaped.
    let sb = Sandbox::sqlite();
    hostile_store(&sb);
    let mut log = sb.store().into_os_string();
    log.push(".runlog");
    let record = serde_json::json!({
        "experiment_id": 1, "block": 99, "seq": 0, "config": name("=base"),
        "workload": name("@w"), "warmup": false, "started_at": 1.0,
        "status": "ok\nsysdelta: all runs folded\x1b[31m", "reason": null,
        "stderr_tail": null, "exit_code": 0, "samples": [], "series": [], "profile": []
    });
    std::fs::write(&log, format!("{record}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = sb.run(&["list"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    checked("list with a run log", &out);
    let err = common::stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("ok\\nsysdelta: all runs folded"), "{err}");
}

#[test]
fn every_report_format_is_terminal_safe() {
    let sb = Sandbox::new();
    hostile_store(&sb);
    for format in [
        "text",
        "markdown",
        "csv",
        "html",
        "json",
        "hyperfine",
        "benchstat",
    ] {
        for extra in [&[][..], &["--detail"][..]] {
            let mut args = vec!["report", "1", "--format", format];
            args.extend_from_slice(extra);
            let out = sb.run(&args);
            assert!(out.status.success(), "{format}: {}", common::stderr(&out));
            checked(&format!("report {format} {extra:?}"), &out);
        }
    }
    // JSON keeps the strings themselves (escaped as JSON does).
    let report = sb.json_report("1");
    assert_eq!(report["experiment"]["name"], name("=exp"));
}

#[test]
fn markdown_shows_markup_as_text() {
    let sb = Sandbox::new();
    hostile_store(&sb);
    let md = checked(
        "markdown",
        &sb.run(&["report", "1", "--format", "markdown"]),
    );
    assert!(!md.contains("<script>"), "{md}");
    assert!(md.contains("&lt;script&gt;"), "{md}");
    // A name's '|' cannot end a table cell: every table row has as many
    // unescaped pipes as the header row.
    let pipes = |l: &str| l.replace("\\|", "").matches('|').count();
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
    assert!(rows.len() >= 4, "{md}");
    assert!(rows.iter().all(|r| pipes(r) == pipes(rows[0])), "{md}");
}

#[test]
fn csv_cells_cannot_run_as_formulas_but_numbers_stay_numbers() {
    let sb = Sandbox::new();
    hostile_store(&sb);
    let text = checked("csv", &sb.run(&["report", "1", "--format", "csv"]));
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let mut negative_numbers = 0;
    let mut neutralised = 0;
    for row in reader.records() {
        let row = row.unwrap();
        for (h, cell) in headers.iter().zip(row.iter()) {
            let starts_formula = cell.starts_with(['=', '+', '-', '@', '\t', '\r']);
            let number = cell.parse::<f64>().is_ok();
            assert!(!starts_formula || number, "{h}: {cell:?}");
            negative_numbers += usize::from(number && cell.starts_with('-'));
            neutralised += usize::from(cell.starts_with("'=") || cell.starts_with("'@"));
        }
    }
    assert!(negative_numbers > 0, "no negative number left as a number");
    assert!(neutralised > 0, "no formula cell was neutralised:\n{text}");
}

#[test]
fn html_escapes_markup_and_controls() {
    let sb = Sandbox::new();
    hostile_store(&sb);
    let html = checked("html", &sb.run(&["report", "1", "--format", "html"]));
    assert!(!html.contains("<script>alert"), "raw script in the HTML");
}

#[test]
fn compare_and_history_are_terminal_safe_and_their_errors_one_line() {
    let sb = Sandbox::new();
    hostile_store(&sb);
    let (l1, l2) = (label(1), label(2));
    let pick1 = format!("{l1}:{}", name("=base"));
    let pick2 = format!("{l2}:{}", name("=base"));
    for format in [
        "text",
        "markdown",
        "csv",
        "html",
        "json",
        "hyperfine",
        "benchstat",
    ] {
        let out = sb.run(&["compare", &pick1, &pick2, "--format", format]);
        assert!(out.status.success(), "{format}: {}", common::stderr(&out));
        checked(&format!("compare {format}"), &out);
    }
    let metric = name("-wall");
    let out = sb.run(&["history", "--label-prefix", "=lab", "--", &metric]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let text = checked("history", &out);
    assert!(text.contains("\\x1b]0;pwned"), "{text}");
    // `history --json` prints through main; the library's JSON of it:
    let store = Store::open(&sb.store(), false).unwrap();
    let h = sysdelta::analysis::history::history(&store, &metric, "=lab", None, 0.05).unwrap();
    let json = sysdelta::report::history::json(&h).unwrap();
    assert_terminal_safe("history json", json.as_bytes());
    let back: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(back["points"][0]["label"], label(1));

    // An error naming stored strings (the experiment's label and configs)
    // stays one line, with the controls shown.
    let out = sb.run(&["compare", &format!("{l1}:nosuch"), &pick2]);
    assert_eq!(out.status.code(), Some(2));
    let err = common::stderr(&out);
    let line = err
        .lines()
        .find(|l| l.contains("nosuch"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        line.contains("\\x1b]0;pwned") && line.contains("+other"),
        "{err}"
    );
    checked("compare error", &out);
}
