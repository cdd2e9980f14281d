//! `import --report`: one command that stores results and prints their
//! report, for a CI job. The report is the stored experiment's, exactly
//! as `sysdelta report ID` prints it, in every format; its options are
//! refused without `--report`, and a bad one stores nothing.

use crate::common;

use common::{stderr, stdout, Sandbox};

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// hyperfine output with failed runs (`-i`: an exit status 1, and one
/// ended by a signal), which are stored as failed runs.
const FAILING: &str = r#"{"results": [
 {"command": "a", "times": [0.1, 0.2, 0.3, 0.15, 0.25], "exit_codes": [0, 1, 0, 0, 0]},
 {"command": "b", "times": [0.2, 0.3, 0.4, 0.35, 0.25], "exit_codes": [0, 0, null, 0, 0]}]}"#;

/// Go output with a metric of its own that is -0 (SQLite keeps it as 0).
const SIGNED_ZERO: &str = "pkg: example.com/z
BenchmarkZ-2\t100\t5.0 ns/op\t-0 delta/op
BenchmarkZ-2\t100\t6.0 ns/op\t1.5 delta/op
BenchmarkZ-2\t100\t5.5 ns/op\t-0.0 delta/op
";

/// The files of each import format the fixtures hold, hyperfine output
/// with failed runs and Go output with a -0 (written in `sb`).
fn imports(sb: &Sandbox) -> Vec<(&'static str, Vec<String>)> {
    let lmbench = fixture("lmbench/x86_64-linux-gnu");
    let failing = sb.write("failing.json", FAILING);
    let zero = sb.write("zero.txt", SIGNED_ZERO);
    vec![
        ("hyperfine", vec![fixture("hyperfine.json")]),
        ("hyperfine", vec![failing.to_str().unwrap().to_string()]),
        ("gobench", vec![zero.to_str().unwrap().to_string()]),
        (
            "gobench",
            vec![fixture("gobench-old.txt"), fixture("gobench-new.txt")],
        ),
        (
            "lmbench",
            (0..3).map(|i| format!("{lmbench}/bench1.{i}")).collect(),
        ),
    ]
}

/// `import --report` prints, in every format, what `report ID` then prints
/// of the experiment it stored: the runs it reports without reading them
/// back are the runs stored (ids, order, samples, statuses), and its
/// header names the stored experiment.
#[test]
fn the_report_is_the_stored_experiments_in_every_format() {
    let inputs = Sandbox::new();
    for (what, files) in imports(&inputs) {
        for format in ["text", "json", "markdown", "csv", "html", "benchstat"] {
            let sb = Sandbox::new();
            let mut args = vec!["import", what];
            args.extend(files.iter().map(String::as_str));
            args.extend(["--report", "--format", format]);
            let out = sb.run(&args);
            assert!(out.status.success(), "{what} {format}: {}", stderr(&out));
            let said = stderr(&out);
            assert!(
                said.contains("as experiment 1 in"),
                "{what} {format}: {said}"
            );
            let again = sb.run(&["report", "1", "--format", format]);
            assert!(again.status.success(), "{}", stderr(&again));
            assert!(!stdout(&out).is_empty());
            assert_eq!(
                stdout(&out),
                stdout(&again),
                "{what} --format {format}: import --report and report 1 differ"
            );
        }
    }
}

/// The runs' ids of experiment `exp` in `sb`'s store, in their order.
fn run_ids(sb: &Sandbox, exp: i64) -> Vec<i64> {
    let c = rusqlite::Connection::open(sb.store()).unwrap();
    let mut q = c
        .prepare("SELECT id FROM runs WHERE experiment_id = ?1 ORDER BY block, seq")
        .unwrap();
    q.query_map([exp], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Into a store that already holds runs, the ids `import --report` shows
/// without reading its runs back are the ones the store gave: the next
/// ones, and where they are not (a trigger that takes one midway, or a
/// largest id of i64::MAX, after which SQLite gives random ones), those
/// given.
#[test]
fn the_reported_run_ids_are_the_stored_ones_in_a_store_that_has_runs() {
    let go = [fixture("gobench-old.txt"), fixture("gobench-new.txt")];
    let import = |sb: &Sandbox| {
        let out = sb.run(&[
            "import", "gobench", &go[0], &go[1], "--report", "--format", "json",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        out
    };
    for case in ["next", "one taken midway", "largest is i64::MAX"] {
        let sb = Sandbox::new();
        import(&sb);
        let first = run_ids(&sb, 1);
        let c = rusqlite::Connection::open(sb.store()).unwrap();
        c.pragma_update(None, "foreign_keys", "OFF").unwrap();
        match case {
            "one taken midway" => c
                .execute_batch(
                    "CREATE TRIGGER take AFTER INSERT ON runs WHEN NEW.experiment_id = 2 AND NEW.block = 3
                     BEGIN INSERT INTO runs (experiment_id, block, seq, config, workload, warmup, status, started_at)
                     VALUES (1, 100000, 0, 'x', 'x', 0, 'failed', 0); END;",
                )
                .unwrap(),
            "largest is i64::MAX" => {
                // The last run and its samples move to the largest id.
                let last = *first.last().unwrap();
                for sql in [
                    "UPDATE runs SET id = ?2 WHERE id = ?1",
                    "UPDATE samples SET run_id = ?2 WHERE run_id = ?1",
                ] {
                    c.execute(sql, [last, i64::MAX]).unwrap();
                }
            }
            _ => {}
        }
        drop(c);
        let out = import(&sb);
        let again = sb.run(&["report", "2", "--format", "json"]);
        assert!(again.status.success(), "{}", stderr(&again));
        assert_eq!(stdout(&out), stdout(&again), "{case}");
        let ids = run_ids(&sb, 2);
        let next: Vec<i64> = (1..=ids.len() as i64)
            .map(|i| first.len() as i64 + i)
            .collect();
        // Each case gives the ids it is meant to.
        assert_eq!(ids == next, case == "next", "{case}: {ids:?}");
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let shown: Vec<i64> = (json["runs"].as_array().unwrap().iter())
            .map(|r| r["id"].as_i64().unwrap())
            .collect();
        assert_eq!(shown, ids, "{case}");
    }
}

/// sysdelta run in `sb` with `args` and no `--store`, as `--no-store`
/// takes none; `SYSDELTA_STORE` names a server that is not there, which
/// it must not try.
fn without_store(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    std::process::Command::new(common::bin())
        .args(args)
        .env(
            "SYSDELTA_STORE",
            "postgresql://nobody:x@127.0.0.1:1/nothing",
        )
        .env("SYSDELTA_RUN_DIR", sb.run_dir())
        .current_dir(sb.path("."))
        .output()
        .unwrap()
}

/// Go output with one benchmark twice as slow in `new`.
fn regressed(sb: &Sandbox) -> (String, String) {
    let lines = |scale: f64| -> String {
        let mut s = String::from("goos: linux\npkg: example.com/ci\n");
        for i in 0..12 {
            let jitter = 1.0 + 0.01 * (i % 5) as f64;
            s.push_str(&format!(
                "BenchmarkSlow-2\t1000\t{:.1} ns/op\nBenchmarkSame-2\t1000\t{:.1} ns/op\n",
                1000.0 * scale * jitter,
                500.0 * jitter
            ));
        }
        s + "PASS\n"
    };
    let old = sb.write("old.txt", &lines(1.0));
    let new = sb.write("new.txt", &lines(2.0));
    (
        old.to_str().unwrap().to_string(),
        new.to_str().unwrap().to_string(),
    )
}

/// `--fail-on` gates the import as it gates `report`: exit status 3 when
/// the named metric regressed, with the experiment stored all the same.
#[test]
fn fail_on_gates_the_import_and_the_results_are_kept() {
    let sb = Sandbox::new();
    let (old, new) = regressed(&sb);
    let args = [
        "import",
        "gobench",
        &old,
        &new,
        "--report",
        "--format",
        "benchstat",
    ];
    let gated = sb.run(&[&args[..], &["--fail-on", "worse:sec/op"]].concat());
    assert_eq!(gated.status.code(), Some(3), "{}", stderr(&gated));
    assert!(
        stderr(&gated).contains("FAILED by Slow-2/sec/op worse"),
        "{}",
        stderr(&gated)
    );
    assert!(stdout(&gated).contains("Slow-2"), "{}", stdout(&gated));
    assert_eq!(sb.sql_number("SELECT COUNT(*) FROM experiments"), 1);
    let passed = sb.run(&[&args[..], &["--fail-on", "better"]].concat());
    assert_eq!(passed.status.code(), Some(0), "{}", stderr(&passed));
    assert_eq!(sb.sql_number("SELECT COUNT(*) FROM experiments"), 2);
}

/// A report option without `--report` is refused (it would be taken and
/// ignored), and so is a report option that cannot work (an export into
/// a missing directory, a benchstat filter that does not parse or keeps
/// no result, a baseline that is no config): exit 2, and nothing is
/// stored, not even a new store file.
#[test]
fn report_options_without_report_or_that_cannot_work_store_nothing() {
    let sb = Sandbox::new();
    let (old, new) = regressed(&sb);
    let missing = sb.path("nowhere/report.html");
    for extra in [
        vec!["--format", "json"],
        vec!["--fail-on", "worse"],
        vec!["--export-html", "x.html"],
        vec!["--report", "--export-html", missing.to_str().unwrap()],
        vec!["--report", "--format", "benchstat", "--filter", "x("],
        vec![
            "--report",
            "--format",
            "benchstat",
            "--filter",
            ".unit:nosuch",
        ],
        vec!["--report", "--baseline", "nosuch"],
    ] {
        let out = sb.run(&[&["import", "gobench", &old, &new][..], &extra].concat());
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", stderr(&out));
        assert!(!sb.store().exists(), "{extra:?} made a store");
        assert!(!sb.path("x.html").exists());
    }
}

/// `text` with the stored experiment's id and every time made as an
/// experiment in no store shows them.
fn as_unstored(text: &str, format: &str) -> String {
    let times = regex::Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z").unwrap();
    let text = times.replace_all(text, "TIME");
    match format {
        // The first column is the experiment's id (0: in no store).
        "csv" => text
            .lines()
            .map(|l| l.split_once(',').map_or(l, |(_, rest)| rest).to_string() + "\n")
            .collect(),
        "json" => {
            let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
            v["experiment"]["id"] = serde_json::json!(0);
            v["analysis"]["info"]["id"] = serde_json::json!(0);
            v.to_string()
        }
        _ => {
            let text = text.replace("xperiment 1 ", "xperiment (not stored) ");
            let id = regex::Regex::new(r"#1\b").unwrap();
            id.replace_all(&text, "(not stored)").into_owned()
        }
    }
}

/// `--no-store` judges the files as benchstat does, keeping nothing: no
/// store, no file, no directory is made, and its report is the one the
/// stored import prints but for the experiment's id (none) and times.
#[test]
fn no_store_prints_the_same_report_and_keeps_nothing() {
    let inputs = Sandbox::new();
    for (what, files) in imports(&inputs) {
        for format in ["text", "json", "markdown", "csv", "html", "benchstat"] {
            let (stored, unstored) = (Sandbox::new(), Sandbox::new());
            let mut args = vec!["import", what];
            args.extend(files.iter().map(String::as_str));
            args.extend(["--report", "--format", format]);
            let kept = stored.run(&args);
            assert!(kept.status.success(), "{}", stderr(&kept));
            let before: Vec<_> = std::fs::read_dir(unstored.path(".")).unwrap().collect();
            let out = without_store(&unstored, &[&args[..], &["--no-store"]].concat());
            assert!(out.status.success(), "{what} {format}: {}", stderr(&out));
            let after: Vec<_> = std::fs::read_dir(unstored.path(".")).unwrap().collect();
            assert_eq!(before.len(), after.len(), "{what} {format} left a file");
            assert!(!unstored.store().exists());
            assert_eq!(
                as_unstored(&stdout(&kept), format),
                as_unstored(&stdout(&out), format),
                "{what} --format {format}: --no-store and the stored import differ"
            );
        }
    }
}

/// `--no-store` takes no store from anywhere: with `SYSDELTA_STORE`
/// naming a server that is not there, it judges the files all the same
/// (and `--fail-on` gates it: exit 3), connecting to nothing; `--store`
/// beside it is refused.
#[test]
fn no_store_reads_no_store_setting_and_gates() {
    let sb = Sandbox::new();
    let (old, new) = regressed(&sb);
    let run = |extra: &[&str]| {
        let args = [
            &["import", "gobench", &old, &new, "--report", "--no-store"],
            extra,
        ]
        .concat();
        without_store(&sb, &args)
    };
    let out = run(&["--format", "benchstat"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("Slow-2"), "{}", stdout(&out));
    let gated = run(&["--fail-on", "worse:sec/op"]);
    assert_eq!(gated.status.code(), Some(3), "{}", stderr(&gated));
    assert!(
        stderr(&gated).contains("FAILED by Slow-2/sec/op worse"),
        "{}",
        stderr(&gated)
    );
    let given = sb.run(&["import", "gobench", &old, &new, "--report", "--no-store"]);
    assert_eq!(given.status.code(), Some(2), "{}", stderr(&given));
    assert!(!sb.store().exists());
}
