//! `--format benchstat`: Go benchmarks imported and shown as benchstat
//! shows them (a table per unit, a row per benchmark, a column per file
//! with its change against the first, a geomean row), with `--filter`,
//! `--row` and `--col`; where benchstat is installed, its own output on the
//! same files has the same tables, rows and cells.

use std::path::PathBuf;
use std::process::Command;

use crate::common::{self, stderr, stdout, Sandbox};

/// benchstat's doc example, 10 runs a side: Encode/format=json 17% faster,
/// format=gob unchanged.
const OLD: &str = "goos: linux\ngoarch: amd64\npkg: golang.org/x/perf/cmd/benchstat/testdata\n";
const JSON_OLD: [u32; 10] = [1726, 1723, 1707, 1707, 1713, 1729, 1736, 1707, 1705, 1774];
const GOB_OLD: [u32; 10] = [3069, 3075, 3069, 3067, 3207, 3064, 3064, 3058, 3059, 3062];
const JSON_NEW: [u32; 10] = [1423, 1416, 1411, 1413, 1412, 1426, 1422, 1424, 1447, 1425];
const GOB_NEW: [u32; 10] = [3075, 3065, 3059, 3065, 3060, 3081, 3186, 3135, 3087, 3062];

fn go_file(json: &[u32], gob: &[u32]) -> String {
    let mut s = OLD.to_string();
    for v in json {
        s.push_str(&format!(
            "BenchmarkEncode/format=json-48   690848   {v} ns/op\n"
        ));
    }
    for v in gob {
        s.push_str(&format!(
            "BenchmarkEncode/format=gob-48    372699   {v} ns/op\n"
        ));
    }
    s
}

/// A store holding old.txt and new.txt imported; their paths.
fn imported() -> (Sandbox, PathBuf, PathBuf) {
    let sb = Sandbox::new();
    let (old, new) = sb.import_go(&go_file(&JSON_OLD, &GOB_OLD), &go_file(&JSON_NEW, &GOB_NEW));
    (sb, old, new)
}

fn report(sb: &Sandbox, extra: &[&str]) -> String {
    let mut args = vec!["report", "--format", "benchstat"];
    args.extend_from_slice(extra);
    let out = sb.run(&args);
    assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
    stdout(&out)
}

/// The lines of `text` that are table rows (not headers, notes or keys).
fn rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| {
            !l.contains('│')
                && !l.contains(": ")
                && !l.is_empty()
                && !l.starts_with(['¹', '²', '±'])
        })
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

#[test]
fn one_row_per_benchmark_one_column_per_file() {
    let (sb, ..) = imported();
    let text = report(&sb, &[]);
    let r = rows(&text);
    let names: Vec<&str> = r.iter().map(|l| l[0].as_str()).collect();
    assert_eq!(
        names,
        ["Encode/format=json-48", "Encode/format=gob-48", "geomean"],
        "{text}"
    );
    // benchstat's documented cells: medians with their CI, the change.
    assert_eq!(r[0][1..4], ["1.718µ", "±", "1%"], "{text}");
    assert_eq!(r[0][4..7], ["1.423µ", "±", "1%"], "{text}");
    assert_eq!(r[0][7], "-17.20%", "{text}");
    assert_eq!(r[1][7], "~", "{text}");
    assert_eq!(r[2][1..], ["2.295µ", "2.090µ", "-8.94%"], "{text}");
    assert!(
        text.contains(" old ") && text.contains(" new ") && text.contains("sec/op"),
        "{text}"
    );
}

#[test]
fn filter_row_and_col_project_as_benchstats() {
    let (sb, ..) = imported();
    let text = report(&sb, &["--filter", "/format:json .unit:sec/op"]);
    let names: Vec<String> = rows(&text).into_iter().map(|l| l[0].clone()).collect();
    assert_eq!(names, ["Encode/format=json-48"], "{text}");
    // Formats side by side: one row per file, json against gob.
    let text = report(&sb, &["--row", ".config", "--col", "/format"]);
    let r = rows(&text);
    let names: Vec<&str> = r.iter().map(|l| l[0].as_str()).collect();
    assert_eq!(names, ["old", "new", "geomean"], "{text}");
    assert!(
        text.contains("│ json ") || text.contains(" json "),
        "{text}"
    );
    assert!(
        text.contains("Mann-Whitney U"),
        "columns that are not configs say whose p it is: {text}"
    );
    assert_eq!(
        r[0][7], "+78.43%",
        "old: gob's median 3.066µ over json's 1.718µ: {text}"
    );
}

#[test]
fn a_malformed_filter_or_key_is_bad_input() {
    let (sb, ..) = imported();
    for args in [
        &["--filter", ".name:(a OR"][..],
        &["--row", ".nosuch"],
        &["--row", ".name", "--col", ".name"],
    ] {
        let mut a = vec!["report", "--format", "benchstat"];
        a.extend_from_slice(args);
        let out = sb.run(&a);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    }
}

/// benchstat on PATH or in ~/go/bin; None (after a SKIP line) without it.
fn benchstat() -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("benchstat"))
                .find(|p| p.is_file())
        })
        .or_else(|| {
            let p = PathBuf::from(std::env::var_os("HOME")?).join("go/bin/benchstat");
            p.is_file().then_some(p)
        });
    if found.is_none() {
        common::skip("benchstat layout against benchstat: no benchstat (go install golang.org/x/perf/cmd/benchstat@latest)");
    }
    found
}

#[test]
fn the_same_rows_and_cells_as_benchstat_itself() {
    let Some(bs) = benchstat() else { return };
    let (sb, old, new) = imported();
    let theirs = Command::new(bs)
        .args(["old.txt", "new.txt"])
        .current_dir(old.parent().unwrap())
        .output()
        .unwrap();
    assert!(theirs.status.success());
    let theirs = String::from_utf8_lossy(&theirs.stdout).into_owned();
    let ours = report(&sb, &[]);
    let cells = |t: &str| -> Vec<Vec<String>> {
        // Row name, then medians and CIs; the p-values differ by design
        // (sysdelta's are corrected for the family).
        rows(t)
            .into_iter()
            .map(|l| {
                l.into_iter()
                    .filter(|w| {
                        !w.starts_with("(p=") && !w.starts_with("n=") && *w != "¹" && *w != "~"
                    })
                    .collect()
            })
            .collect()
    };
    assert_eq!(
        cells(&ours),
        cells(&theirs),
        "ours:\n{ours}\nbenchstat's:\n{theirs}"
    );
    let _ = new;
}

#[test]
fn pooled_cells_say_their_p_is_not_sysdeltas() {
    // Rows of the benchmark's name alone pool json and gob: no comparison
    // sysdelta made, so the footnote's "rank test, Holm-adjusted" is not
    // their p; they are marked and the mark is said.
    let (sb, ..) = imported();
    let text = report(&sb, &["--row", ".name"]);
    let r = rows(&text);
    assert!(r[0].last().unwrap().ends_with(")‡"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("‡: ") && l.contains("Mann-Whitney U test, not corrected")),
        "{text}"
    );
    // Cells sysdelta compared carry no mark.
    let text = report(&sb, &[]);
    assert!(!text.contains('‡') && !text.contains('†'), "{text}");
}
