//! Bad input: one clear line on stderr, exit 2, nothing recorded, the store
//! unchanged.

use crate::common;
use common::*;

fn assert_bad(out: &std::process::Output, needle: &str) {
    let err = stderr(out);
    assert_eq!(
        out.status.code(),
        Some(2),
        "exit 2 for bad input; stderr: {err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "expected '{needle}' in: {err}");
}

const GOOD: &str = "[[config]]\nname = \"a\"\n[[workload]]\nname = \"w\"\ncommand = \"true\"\n";

#[test]
fn missing_plan() {
    let sb = Sandbox::new();
    assert_bad(
        &sb.run(&["run", "nope.toml"]),
        "nope.toml: cannot read plan",
    );
    assert!(!sb.store().exists(), "no store created");
}

#[test]
fn plan_errors_name_file_line_and_column() {
    let sb = Sandbox::new();
    let cases = [
        (
            "unknown.toml",
            format!("{GOOD}colour = \"red\"\n"),
            "unknown.toml:6:1: unknown field `colour`",
        ),
        (
            "dup.toml",
            format!("{GOOD}[[config]]\nname = \"a\"\n"),
            "dup.toml:7:8: duplicate config name 'a'",
        ),
        (
            "zero.toml",
            format!("runs = 0\n{GOOD}"),
            "zero.toml:1:8: runs must be at least 1",
        ),
        (
            "nocmd.toml",
            GOOD.replace(
                "command = \"true\"",
                "command = \"no-such-program-xyz --fast\"",
            ),
            "nocmd.toml:5:11: command not found: 'no-such-program-xyz'",
        ),
        (
            "order.toml",
            format!("order = \"shuffled\"\n{GOOD}"),
            "order.toml:1:9: unknown order",
        ),
        ("syntax.toml", "runs = = 3\n".to_string(), "syntax.toml:1:"),
        (
            "base.toml",
            format!("baseline = \"zz\"\n{GOOD}"),
            "base.toml:1:12: baseline 'zz' is not one of the configs",
        ),
    ];
    for (name, text, needle) in cases {
        let p = sb.write(name, &text);
        assert_bad(&sb.run(&["run", p.to_str().unwrap()]), needle);
    }
    assert!(!sb.store().exists(), "nothing recorded for invalid plans");
}

#[test]
fn non_utf8_plan() {
    let sb = Sandbox::new();
    let p = sb.path("bin.toml");
    std::fs::write(&p, b"name = \"x\"\n\xff\xfe").unwrap();
    assert_bad(
        &sb.run(&["run", p.to_str().unwrap()]),
        "bin.toml:2:1: plan is not valid UTF-8",
    );
}

#[test]
fn a_store_that_is_not_sysdelta_is_left_unchanged() {
    let sb = Sandbox::new();
    let plan = sb.write("plan.toml", GOOD);
    std::fs::write(sb.store(), b"my precious notes\n").unwrap();
    assert_bad(
        &sb.run(&["run", plan.to_str().unwrap(), "--runs", "2"]),
        "not a sysdelta store",
    );
    assert_eq!(file_bytes(&sb.store()), b"my precious notes\n");

    // Another program's SQLite database.
    std::fs::remove_file(sb.store()).unwrap();
    {
        let c = rusqlite::Connection::open(sb.store()).unwrap();
        c.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
    }
    let before = file_bytes(&sb.store());
    assert_bad(
        &sb.run(&["run", plan.to_str().unwrap(), "--runs", "2"]),
        "not a sysdelta store",
    );
    assert_eq!(file_bytes(&sb.store()), before);
}

#[test]
fn a_newer_schema_is_refused_unchanged() {
    let sb = Sandbox::new();
    let plan = sb.write("plan.toml", GOOD);
    let ok = sb.run(&[
        "run",
        plan.to_str().unwrap(),
        "--runs",
        "2",
        "--quiet",
        "--no-report",
    ]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    {
        let c = rusqlite::Connection::open(sb.store()).unwrap();
        c.execute(
            "UPDATE meta SET value = '999' WHERE key = 'schema_version'",
            [],
        )
        .unwrap();
        c.pragma_update(None, "journal_mode", "DELETE").unwrap();
    }
    let before = file_bytes(&sb.store());
    assert_bad(
        &sb.run(&["run", plan.to_str().unwrap(), "--runs", "2"]),
        "schema v999 is newer",
    );
    assert_bad(&sb.run(&["report"]), "schema v999 is newer");
    assert_eq!(file_bytes(&sb.store()), before);
}

#[test]
fn reports_of_missing_things() {
    let sb = Sandbox::new();
    assert_bad(&sb.run(&["report"]), "no such store");
    let plan = sb.write("plan.toml", GOOD);
    let ok = sb.run(&[
        "run",
        plan.to_str().unwrap(),
        "--runs",
        "2",
        "--quiet",
        "--no-report",
    ]);
    assert!(ok.status.success());
    assert_bad(&sb.run(&["report", "42"]), "no experiment with id 42");
    assert_bad(
        &sb.run(&["report", "1", "--baseline", "zz"]),
        "baseline 'zz' is not a config",
    );
    assert_bad(
        &sb.run(&[
            "report",
            "1",
            "--export-csv",
            sb.path("no/such/dir/r.txt").to_str().unwrap(),
        ]),
        "does not exist",
    );
    assert_bad(
        &sb.run(&["ab", "--config", "=x", "--", "true"]),
        "expected NAME=SETUP",
    );
}
