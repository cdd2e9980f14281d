//! `save-baseline NAME [EXPERIMENT]`: a stored experiment (here an
//! imported one, as a Go CI job keeps the main branch's benchmarks) named
//! a baseline after the fact, then a later import compared against it.

use crate::common;

use common::{stderr, stdout, Sandbox};

/// Go output of one benchmark, `scale` times 1 µs with a little spread.
fn go(sb: &Sandbox, name: &str, scale: f64) -> String {
    let mut s = String::from("goos: linux\npkg: example.com/ci\n");
    for i in 0..12 {
        let v = 1000.0 * scale * (1.0 + 0.01 * (i % 5) as f64);
        s.push_str(&format!("BenchmarkParse-2\t1000\t{v:.1} ns/op\n"));
    }
    let path = sb.write(name, &(s + "PASS\n"));
    path.to_str().unwrap().to_string()
}

/// The ids baseline `main` has pointed at, as the store holds them.
fn main_ids(sb: &Sandbox) -> String {
    let c = rusqlite::Connection::open(sb.store()).unwrap();
    c.query_row(
        "SELECT value FROM meta WHERE key = 'baseline:main'",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

#[test]
fn an_imported_experiment_becomes_the_baseline_a_later_one_is_gated_against() {
    let sb = Sandbox::new();
    let main = go(&sb, "main.txt", 1.0);
    assert!(sb.run(&["import", "gobench", &main]).status.success());
    let saved = sb.run(&["save-baseline", "main"]);
    assert!(saved.status.success(), "{}", stderr(&saved));
    assert!(
        stderr(&saved).contains("baseline 'main' is experiment 1"),
        "{}",
        stderr(&saved)
    );
    assert!(stdout(&sb.run(&["list"])).contains("baseline main: experiment 1"));
    // The next commit's benchmarks, twice as slow, judged against main's.
    let pr = go(&sb, "pr.txt", 2.0);
    assert!(sb.run(&["import", "gobench", &pr]).status.success());
    let gated = sb.run(&[
        "compare",
        "--against-baseline",
        "main",
        "2",
        "--fail-on",
        "worse",
    ]);
    assert_eq!(gated.status.code(), Some(3), "{}", stderr(&gated));
    // Saving it again by id or label moves the name on, the old id kept.
    let moved = sb.run(&["save-baseline", "main", "2"]);
    assert!(
        stderr(&moved).contains("moved from experiment 1 (kept) to experiment 2"),
        "{}",
        stderr(&moved)
    );
}

/// A bad name, an experiment the store does not have, one that is not
/// complete or one with a cell whose runs all failed: exit 2, one line,
/// and no baseline is made or moved. A store that does not exist is not
/// made.
#[test]
fn a_bad_name_or_experiment_changes_nothing() {
    let sb = Sandbox::new();
    let out = sb.run(&["save-baseline", "main"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!sb.store().exists(), "save-baseline made a store");
    let main = go(&sb, "main.txt", 1.0);
    assert!(sb.run(&["import", "gobench", &main]).status.success());
    assert!(sb.run(&["save-baseline", "main", "1"]).status.success());
    // Experiment 2: hyperfine runs of one command that all failed.
    let failed = sb.write(
        "failed.json",
        r#"{"results": [{"command": "a", "times": [0.1, 0.2], "exit_codes": [1, 1]}]}"#,
    );
    assert!(sb
        .run(&["import", "hyperfine", failed.to_str().unwrap()])
        .status
        .success());
    // Experiment 3: interrupted, as a killed run leaves one.
    let c = rusqlite::Connection::open(sb.store()).unwrap();
    c.execute_batch(
        "INSERT INTO experiments (name, plan_source, plan_text, overrides, host, fingerprint, seed,
             run_order, runs_per_cell, warmup, baseline, status)
         SELECT name, plan_source, plan_text, overrides, host, fingerprint, seed, run_order,
             runs_per_cell, warmup, baseline, 'interrupted' FROM experiments WHERE id = 1",
    )
    .unwrap();
    drop(c);
    for (args, says) in [
        (vec!["save-baseline", "bad name"], "baseline name"),
        (vec!["save-baseline", "../main"], "baseline name"),
        (
            vec!["save-baseline", "main", "7"],
            "no experiment with id 7",
        ),
        (
            vec!["save-baseline", "other", "no-such-label"],
            "no-such-label",
        ),
        (
            vec!["save-baseline", "main", "2"],
            "has no result in a/hyperfine",
        ),
        (vec!["save-baseline", "main", "3"], "is interrupted"),
    ] {
        let out = sb.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
        assert_eq!(main_ids(&sb), "1", "{args:?} moved main");
    }
}
