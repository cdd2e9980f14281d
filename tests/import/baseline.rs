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

fn baselines_row_count(sb: &Sandbox) -> i64 {
    sb.sql_number("SELECT COUNT(*) FROM meta WHERE key LIKE 'baseline%'")
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

/// A bad name or an experiment the store does not have: exit 2, one line,
/// and no baseline is made or moved.
#[test]
fn a_bad_name_or_a_missing_experiment_changes_nothing() {
    let sb = Sandbox::new();
    let main = go(&sb, "main.txt", 1.0);
    assert!(sb.run(&["import", "gobench", &main]).status.success());
    assert!(sb.run(&["save-baseline", "main", "1"]).status.success());
    let before = baselines_row_count(&sb);
    for args in [
        vec!["save-baseline", "bad name"],
        vec!["save-baseline", "../main"],
        vec!["save-baseline", "main", "7"],
        vec!["save-baseline", "other", "no-such-label"],
    ] {
        let out = sb.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
        assert_eq!(baselines_row_count(&sb), before, "{args:?}");
    }
    assert!(stdout(&sb.run(&["list"])).contains("baseline main: experiment 1"));
}
