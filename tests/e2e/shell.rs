//! How `ab` and plans start a command: under `/bin/sh -c` by default, whose
//! start-up the report measures and shows; without a shell with `-N` or
//! `shell = "none"`, where the command's program is sysdelta's own child.

use crate::common;
use common::*;

/// The lines of a file the measured command appended to.
fn lines(sb: &Sandbox, name: &str) -> Vec<String> {
    std::fs::read_to_string(sb.path(name))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The command records the name of its parent process.
const PARENT: &str = "sh -c 'cat /proc/$PPID/comm >> parents.txt'";

#[test]
fn minus_n_starts_the_command_without_a_shell() {
    let sb = Sandbox::new();
    let args = ["ab", "-q", "--runs", "2", "--warmup", "1"];
    let out = sb.run(&[&args[..], &["-N", "--config", "a=", "--", PARENT]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    // The measured `sh` is the command itself: its parent is sysdelta.
    assert_eq!(lines(&sb, "parents.txt"), vec!["sysdelta"; 3]);
    let text = stdout(&out);
    assert!(
        !text.contains("Shell start-up"),
        "no shell, no line:\n{text}"
    );

    // Without -N the same command line is given to /bin/sh, which is the
    // measured command's parent.
    std::fs::remove_file(sb.path("parents.txt")).unwrap();
    let out = sb.run(&[&args[..], &["--config", "a=", "--", PARENT]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(lines(&sb, "parents.txt"), vec!["sh"; 3]);
}

#[test]
fn minus_n_passes_each_word_as_written() {
    let sb = Sandbox::new();
    // Several words after -- reach the program as they are, a `$` too.
    let out = sb.run(&[
        "ab",
        "-q",
        "--runs",
        "1",
        "--warmup",
        "0",
        "-N",
        "--config",
        "a=",
        "--",
        "sh",
        "-c",
        "printf '%s\\n' \"$1\" >> words.txt",
        "sh",
        "$HOME and spaces",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(lines(&sb, "words.txt"), vec!["$HOME and spaces"]);
}

#[test]
fn minus_n_refuses_a_command_that_needs_a_shell() {
    let sb = Sandbox::new();
    let out = sb.run(&["ab", "-N", "--config", "a=", "--", "echo a | wc -l"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "one line:\n{err}");
    assert!(
        err.contains("without a shell") && err.contains("'|' outside quotes"),
        "{err}"
    );
    assert!(!sb.store().exists(), "bad input stores nothing");
}

#[test]
fn a_plan_can_run_a_workload_without_a_shell() {
    let sb = Sandbox::new();
    let plan = sb.write(
        "plan.toml",
        r#"
runs = 2
warmup = 0
shell = "none"

[[config]]
name = "a"

[[workload]]
name = "direct"
command = "sh -c 'cat /proc/$PPID/comm >> parents.txt'"

[[workload]]
name = "shelled"
shell = "/bin/sh"
command = "sh -c 'cat /proc/$PPID/comm >> parents.txt'"
"#,
    );
    let out = sb.run(&["run", plan.to_str().unwrap(), "-q", "--no-report"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut parents = lines(&sb, "parents.txt");
    parents.sort();
    assert_eq!(parents, vec!["sh", "sh", "sysdelta", "sysdelta"]);

    let bad = sb.write(
        "bad.toml",
        "shell = \"none\"\n[[config]]\nname = \"a\"\n[[workload]]\nname = \"w\"\ncommand = \"make > log\"\n",
    );
    let out = sb.run(&["run", bad.to_str().unwrap(), "-q"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("bad.toml:6:11: workload 'w' runs without a shell"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_report_shows_what_the_shell_costs() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "ab", "-q", "--runs", "5", "--warmup", "1", "--config", "a=", "--config", "b=", "--",
        "true",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // `true` is a builtin of sh: the shell is about all of its run. ab's
    // short report warns; the full one has the start-up per config.
    let text = stdout(&out);
    assert!(
        text.contains("true: starting the shell takes") && text.contains("ab -N"),
        "warns and suggests -N:\n{text}"
    );
    // Stored: the full report shows it per config, one sample per run.
    let again = stdout(&sb.run(&["report", "last"]));
    for c in ["a", "b"] {
        assert!(
            again.contains(&format!("shell start-up, {c} (/bin/sh): ")),
            "{again}"
        );
    }
    let r = sb.json_report("last");
    let s = &r["analysis"]["shell_startup"];
    assert_eq!(s.as_array().unwrap().len(), 2, "{s}");
    assert_eq!(s[0]["n"], 5, "{s}");
    let median = s[0]["median_s"].as_f64().unwrap();
    // Bounded by what the runs themselves took (each run of `true` is a
    // shell's start and little more), not by a wall time: on a loaded
    // machine a shell's start alone can pass 0.1 s.
    let mut walls: Vec<f64> = r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["samples"]["wall"][0].as_f64().unwrap())
        .collect();
    walls.sort_by(f64::total_cmp);
    let run_median = walls[walls.len() / 2];
    assert!(
        median > 0.0 && median < 4.0 * run_median,
        "{s} (runs {walls:?})"
    );
    // The runs keep the shell: nothing was subtracted from any sample
    // (each is a positive time, and their median is of the shell's size;
    // one run against the shell's median is no test on a loaded machine,
    // where a single run of `true` took 0.94 ms beside a median start-up
    // over four times that).
    for run in r["runs"].as_array().unwrap() {
        assert!(run["samples"]["wall"][0].as_f64().unwrap() > 0.0, "{run}");
    }
    assert!(run_median > median / 4.0, "{s} (runs {walls:?})");
}

#[test]
fn a_comparison_shows_each_experiments_shell_start_up() {
    let sb = Sandbox::new();
    for label in ["before", "after"] {
        let out = sb.run(&[
            "ab",
            "-q",
            "--runs",
            "3",
            "--warmup",
            "0",
            "--label",
            label,
            "--no-report",
            "--config",
            "a=",
            "--",
            "true",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = sb.run(&["compare", "before", "after"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for name in ["before", "after"] {
        assert!(
            text.contains(&format!("shell start-up, {name} (/bin/sh): ")),
            "{text}"
        );
    }
    assert!(
        !text.contains("samples_s"),
        "raw samples are not events:\n{text}"
    );
}

#[test]
fn shell_samples_are_stored_at_block_ends_not_only_at_the_end() {
    // 100 runs: a sample after each of the first 64 (stored at a block's
    // end), then after every 8th (runs 72, 80, 88, 96: stored at the end),
    // and the report pools both (a crash would lose at most the samples
    // still waiting, never the stored ones).
    let sb = Sandbox::new();
    let out = sb.run(&[
        "ab",
        "-q",
        "--no-report",
        "-r",
        "100",
        "--config",
        "a=",
        "--",
        "true",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let store = sysdelta::store::Store::open(&sb.store(), false).unwrap();
    let data = store.load(1).unwrap();
    let events = data
        .events
        .iter()
        .filter(|e| sysdelta::analysis::shell_cost::is_event(e))
        .count();
    assert_eq!(events, 2, "{:?}", data.events);
    let r = sb.json_report("last");
    assert_eq!(r["analysis"]["shell_startup"][0]["n"], 68);
}
