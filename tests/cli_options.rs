//! The command line speaks one convention (hyperfine's where it has one):
//! every option has a help line, `-c` is cleanup, `--store` only where a
//! store is used, `--output` is where the command writes, reports go to
//! stdout in `--format` and to files with `--export-*`, and `ab` runs at
//! least `--min-time` of each command.

mod common;

use std::process::Command;

use clap::CommandFactory;
use common::{bin, stderr, stdout, Sandbox};

/// Every argument of every subcommand, with the path to it, that has no
/// help line.
fn without_help(c: &clap::Command, path: &str, out: &mut Vec<String>) {
    for a in c.get_arguments() {
        let id = a.get_id().as_str();
        if id == "help" || id == "version" {
            continue;
        }
        if a.get_help().is_none_or(|h| h.to_string().trim().is_empty()) {
            out.push(format!("{path} {id}"));
        }
    }
    for s in c.get_subcommands() {
        without_help(s, &format!("{path} {}", s.get_name()), out);
    }
}

#[test]
fn every_option_of_every_subcommand_has_a_help_line() {
    let mut missing = Vec::new();
    without_help(&sysdelta::cli::Cli::command(), "sysdelta", &mut missing);
    assert!(missing.is_empty(), "arguments without help: {missing:?}");
}

#[test]
fn hyperfine_short_options_mean_what_they_mean_there() {
    let sb = Sandbox::new();
    let cleaned = sb.path("cleaned");
    let out = sb.run(&[
        "ab",
        "-q",
        "-r",
        "3",
        "-w",
        "1",
        "--config",
        "a=",
        "-c",
        &format!("a=touch {}", cleaned.display()),
        "--",
        "true",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(cleaned.exists(), "-c is the cleanup, as in hyperfine");
    let r = sb.json_report("last");
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.iter().filter(|r| r["warmup"] == true).count(), 1);
    assert_eq!(runs.iter().filter(|r| r["warmup"] == false).count(), 3);
    // -c no longer names a config.
    let out = sb.run(&["ab", "-r", "2", "-c", "a=", "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn store_is_refused_where_nothing_is_stored() {
    let sb = Sandbox::new();
    for args in [
        &["micro", "--list"][..],
        &["transport", "--quick", "--transports", "pipe"][..],
        &["env"][..],
    ] {
        let out = sb.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("--store"), "{}", stderr(&out));
    }
    // Without --store they run.
    let out = Command::new(bin())
        .args(["micro", "--list"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&out).is_empty());
}

#[test]
fn one_run_writes_several_exports_and_prints_its_format() {
    let sb = Sandbox::new();
    let (json, csv, md, html) = (
        sb.path("r.json"),
        sb.path("r.csv"),
        sb.path("r.md"),
        sb.path("r.html"),
    );
    let out = sb.run(&[
        "ab",
        "-q",
        "-r",
        "3",
        "--config",
        "a=",
        "--config",
        "b=",
        "--export-json",
        json.to_str().unwrap(),
        "--export-csv",
        csv.to_str().unwrap(),
        "--",
        "true",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert!(
        j["format"].as_str().unwrap().starts_with("sysdelta-report"),
        "{j}"
    );
    let c = std::fs::read_to_string(&csv).unwrap();
    assert!(c.lines().next().unwrap().contains(','), "{c}");
    assert!(c.contains("true"), "{c}");
    // The text report still went to stdout.
    assert!(stdout(&out).contains("Baseline a"), "{}", stdout(&out));
    // report and compare take the same exports.
    let out = sb.run(&[
        "report",
        "--last",
        "--export-markdown",
        md.to_str().unwrap(),
        "--export-html",
        html.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::read_to_string(&md).unwrap().contains('|'));
    assert!(std::fs::read_to_string(&html)
        .unwrap()
        .starts_with("<!DOCTYPE html>"));
    // An export that cannot be written is refused before anything runs.
    let out = sb.run(&[
        "ab",
        "-r",
        "2",
        "--config",
        "a=",
        "--export-json",
        sb.path("no/such/dir/x.json").to_str().unwrap(),
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let list = stdout(&sb.run(&["list"]));
    assert_eq!(list.lines().count(), 2, "one experiment stored: {list}");
}

#[test]
fn output_says_where_the_command_writes() {
    let sb = Sandbox::new();
    let ab = |extra: &[&str]| {
        let mut args = vec!["ab", "-q", "-r", "2", "--config", "a="];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "echo measured-output; echo measured-err >&2"]);
        sb.run(&args)
    };
    // --output null: nothing shown, no file named `null`.
    let out = ab(&["--output", "null"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!sb.path("null").exists(), "--output null wrote a file");
    assert!(!stdout(&out).contains("measured-output"));
    // --show-output: on the terminal.
    let out = ab(&["--show-output"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).matches("measured-output").count(), 2);
    assert_eq!(stderr(&out).matches("measured-err").count(), 2);
    // --output FILE: every run's stdout in the file, not on the terminal.
    let out = ab(&["--output", "cmd.out"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let f = std::fs::read_to_string(sb.path("cmd.out")).unwrap();
    assert_eq!(f, "measured-output\nmeasured-output\n");
    assert!(!stdout(&out).contains("measured-output"));
    // --output pipe: read and discarded.
    let out = ab(&["--output", "pipe"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&out).contains("measured-output"));
}

/// Measured runs and their summed wall time of each cell of the last
/// experiment.
fn cells(sb: &Sandbox) -> Vec<(String, usize, f64)> {
    let r = sb.json_report("last");
    let mut out: Vec<(String, usize, f64)> = Vec::new();
    for run in r["runs"].as_array().unwrap() {
        if run["warmup"] == true || run["status"] != "ok" {
            continue;
        }
        let key = format!("{}/{}", run["config"], run["workload"]);
        let wall = run["samples"]["wall"][0].as_f64().unwrap();
        match out.iter_mut().find(|c| c.0 == key) {
            Some(c) => {
                c.1 += 1;
                c.2 += wall;
            }
            None => out.push((key, 1, wall)),
        }
    }
    out
}

#[test]
fn ab_runs_at_least_the_minimum_time_of_a_short_command() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "ab",
        "-q",
        "--no-report",
        "--min-time",
        "0.4s",
        "--config",
        "a=",
        "--config",
        "b=",
        "--",
        "sleep 0.005",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let c = cells(&sb);
    assert_eq!(c.len(), 2);
    for (cell, n, wall) in &c {
        // Not 10 runs of a 5 ms command: at least 0.4 s of them (how many
        // that takes depends on the machine: on a loaded one, 10 runs of
        // `sleep 0.005` under a shell can already last 0.4 s).
        assert!(*n >= 10, "{cell}: {n} runs");
        assert!(*wall >= 0.4, "{cell}: {wall} s in {n} runs");
    }
    // --min-runs is a floor; --max-runs a ceiling.
    let out = sb.run(&[
        "ab",
        "-q",
        "--no-report",
        "--min-time",
        "0.2s",
        "-M",
        "12",
        "--config",
        "a=",
        "--",
        "sleep 0.005",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(cells(&sb)[0].1, 12);
    let out = sb.run(&[
        "ab",
        "-q",
        "--no-report",
        "-m",
        "15",
        "--config",
        "a=",
        "--",
        "sleep 0.3",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        cells(&sb)[0].1,
        15,
        "3 s are reached by 10 runs; -m 15 asks 15"
    );
    // A slow cell bounds the fast one's count: every block holds every
    // cell, so the slow cell stops at 20 x --min-time (here 1 s: ten runs
    // of 0.1 s), and the stop event says the fast cell got less.
    let out = sb.run(&[
        "ab",
        "-q",
        "--no-report",
        "--min-time",
        "0.05s",
        "-L",
        "d",
        "0,0.1",
        "--config",
        "a=",
        "--",
        "sleep {d}",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let c = cells(&sb);
    assert_eq!(c.len(), 2, "{c:?}");
    assert!(
        c.iter().all(|x| x.1 == c[0].1),
        "one count for every cell: {c:?}"
    );
    assert!(
        c[0].1 <= 12,
        "the 0.1 s cell ran 20 x 0.05 s at most: {c:?}"
    );
    let events = sb.json_report("last")["events"].to_string();
    // Whether the fast cell was still short of --min-time when the slow
    // one stopped depends on the machine: on a loaded one ten `sleep 0`
    // runs under a shell last longer than 0.05 s. Either way the stop
    // event says which it was.
    let fast_wall = c.iter().map(|x| x.2).fold(f64::INFINITY, f64::min);
    if fast_wall < 0.05 {
        assert!(
            events.contains("the most --min-time") && events.contains("sleep_0.1"),
            "{events}"
        );
    } else {
        assert!(events.contains("every cell ran at least"), "{events}");
    }
    // An exact count is exact.
    let out = sb.run(&[
        "ab",
        "-q",
        "--no-report",
        "-r",
        "4",
        "--config",
        "a=",
        "--",
        "true",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(cells(&sb)[0].1, 4);
    // A sequential order runs the planned count (min-time needs blocks).
    let out = sb.run(&[
        "ab",
        "-q",
        "--no-report",
        "--order",
        "sequential",
        "--config",
        "a=",
        "--",
        "true",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(cells(&sb)[0].1, 10);
    let out = sb.run(&[
        "ab",
        "-r",
        "4",
        "--min-time",
        "1s",
        "--config",
        "a=",
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn ab_with_defaults_says_how_many_runs_it_chose_and_why() {
    // ab's default rule: at least 10 runs of each command, then more until
    // the wall time comparison's 95% CI is narrower than 2% or each
    // command ran 3 s. Which comes first depends on the machine's noise;
    // either way the count is one for every command, and the output says
    // it and the rule that chose it.
    let sb = Sandbox::new();
    let out = sb.run(&["ab", "sleep 0.1", "sleep 0.1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let c = cells(&sb);
    assert_eq!(c.len(), 2, "{c:?}");
    let n = c[0].1;
    assert!(c.iter().all(|x| x.1 == n), "one count for both: {c:?}");
    let text = stdout(&out);
    assert!(text.contains(&format!("runs: {n} per cell")), "{text}");
    assert!(
        text.contains("stop:"),
        "the reason is in the report: {text}"
    );
    let events = sb.json_report("last")["events"].to_string();
    if events.contains("precise enough") {
        assert!((10..30).contains(&n), "{n} runs: {events}");
        assert!(events.contains("target 2.00%"), "{events}");
    } else {
        assert!(events.contains("every cell ran at least"), "{events}");
        assert!(c.iter().all(|x| x.2 >= 3.0), "{c:?}");
    }
}

#[test]
fn every_command_that_takes_an_experiment_takes_the_same_selectors() {
    let sb = Sandbox::new();
    for label in ["first", "second"] {
        let out = sb.run(&[
            "ab",
            "-q",
            "--no-report",
            "-r",
            "3",
            "--label",
            label,
            "--config",
            "a=",
            "--config",
            "b=",
            "--",
            "true",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    // id, label, `last` and --last, wherever an experiment is named.
    for sel in [&["1"][..], &["first"], &["last"], &["--last"]] {
        for cmd in [&["report"][..], &["plan-runs"], &["env"]] {
            let mut args = cmd.to_vec();
            args.extend_from_slice(sel);
            let out = sb.run(&args);
            assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        }
    }
    let out = sb.run(&["compare", "first:b", "last:b"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // `run --resume` takes them too (a complete experiment is refused as such).
    let out = sb.run(&["run", "--resume", "second"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("experiment 2 is already complete"),
        "{}",
        stderr(&out)
    );
    // env against a stored experiment says what differs, or that nothing does.
    let out = sb.run(&["env", "--last", "--format", "json"]);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["experiment"], 2);
    assert!(
        j["differs"].is_object() && j["same"].as_array().unwrap().len() > 3,
        "{j}"
    );
    let text = stdout(&sb.run(&["env", "1"]));
    assert!(text.starts_with("experiment 1 ("), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    // list: configs, host and label within 80 columns.
    let list = stdout(&sb.run(&["list"]));
    assert!(list.lines().all(|l| l.chars().count() <= 80), "{list}");
    let row = list.lines().nth(1).unwrap();
    assert!(row.contains("first") && row.contains("a, b"), "{list}");
    assert!(row.split_whitespace().any(|w| w == "6"), "{list}");
}

#[test]
fn env_prints_json_without_a_store() {
    let out = Command::new(bin())
        .args(["env", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(j["kernel"].is_string(), "{j}");
}

#[test]
fn the_run_line_the_report_and_list_count_runs_alike() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "ab", "-r", "3", "-w", "1", "--config", "a=", "--config", "b=", "--", "true",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // 2 cells x 3 measured runs, and 2 warm-ups apart.
    assert!(
        stderr(&out).contains("6 measured runs ok, 0 failed, 2 warm-up"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).contains("6 ok, 0 failed"), "{}", stdout(&out));
    let list = stdout(&sb.run(&["list"]));
    let row = list.lines().nth(1).unwrap();
    assert!(row.split_whitespace().any(|w| w == "6"), "{list}");
}

/// `-i` keeps a command's non-zero exit as a result, so the store keeps
/// every run's exit status and every format's warnings count the runs that
/// exited non-zero (the README's `grep -q x FILE` failed all its runs and
/// the report said nothing).
#[test]
fn ignore_failure_stores_each_exit_status_and_every_format_counts_the_non_zero() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "ab",
        "-q",
        "-i",
        "-r",
        "4",
        "--config",
        "a=",
        "--config",
        "b=export SD_OK=1",
        "--",
        "[ \"$SD_OK\" = 1 ]",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = sb.json_report("last");
    let codes: Vec<(String, serde_json::Value)> = r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["warmup"] == false)
        .map(|r| {
            (
                r["config"].as_str().unwrap().to_string(),
                r["exit_code"].clone(),
            )
        })
        .collect();
    assert_eq!(codes.len(), 8, "{codes:?}");
    for (config, code) in &codes {
        let want = if config == "a" { 1 } else { 0 };
        assert_eq!(code, &serde_json::json!(want), "{codes:?}");
    }
    let want = "4 of 8 measured runs exited with a non-zero status";
    let warnings = r["analysis"]["warnings"].to_string();
    assert!(warnings.contains(want), "json: {warnings}");
    assert!(warnings.contains("a/"), "json names the cell: {warnings}");
    assert!(!warnings.contains("b/"), "b's runs exited 0: {warnings}");
    for format in ["text", "markdown", "html"] {
        let out = sb.run(&["report", "last", "--format", format]);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        // Text wraps warnings at 80 columns: compare words.
        let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.contains(want), "{format}: {text}");
    }
}

/// `--until` decides on the runs it stored, from a streaming bootstrap
/// (`analysis::precision`): its stop line names a width that the full
/// analysis of all the experiment's runs (the report's bootstrap, here at
/// the rule's 2,000 resamples) gives to within the two draws' Monte Carlo
/// error, and the decision is the one that width gives.
#[test]
fn until_stops_on_what_the_full_analysis_of_its_runs_says() {
    use sysdelta::analysis::{analyze, precision::RESAMPLES, Options};
    let sb = Sandbox::new();
    let out = sb.run(&[
        "ab",
        "-q",
        "--no-report",
        "--until",
        "ci=5%",
        // At least 20 runs a side, where the streaming and the full
        // bootstraps agree within the 20% this test allows (at 8 a side
        // they once differed by 27%); the rule alone may stop from 10.
        "-m",
        "20",
        "-M",
        "30",
        "--config",
        "a=",
        "--config",
        "b=",
        "--",
        "true",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let store = sysdelta::store::Store::open(&sb.store(), false).unwrap();
    let data = store.load(store.resolve("last").unwrap()).unwrap();
    let stop = &data
        .events
        .iter()
        .find(|e| e.kind == "stop")
        .expect("a stop event")
        .message;
    // "widest 95% CI of a ratio W% (what), target 5.00%"
    let (_, rest) = stop
        .split_once("widest 95% CI of a ratio ")
        .unwrap_or_else(|| panic!("{stop}"));
    let (pct, rest) = rest.split_once("% (").unwrap();
    let (what, rest) = rest.split_once(')').unwrap();
    assert!(rest.starts_with(", target 5.00%"), "{stop}");
    let got: f64 = pct.parse::<f64>().unwrap() / 100.0;
    assert_eq!(stop.starts_with("stopped after"), got <= 0.05, "{stop}");
    let opts = Options {
        resamples: RESAMPLES,
        ..Default::default()
    };
    let a = analyze(&data, &opts).unwrap();
    let ci = a
        .metrics
        .iter()
        .flat_map(|m| m.comparisons.iter().map(move |c| (m, c)))
        .find(|(m, c)| format!("{}/{} {}", m.workload, m.spec.name, c.config) == what)
        .and_then(|(_, c)| c.ratio_ci)
        .unwrap_or_else(|| panic!("the report has no CI for {what}: {stop}"));
    let full = ci.1 - ci.0;
    // Both ends within 10% of the width each (see precision's tests) from
    // 20 runs a side: the widths within 20% of the full one, plus the
    // line's rounding. (At 8 runs a side of a command's heavy-tailed wall
    // times, read at the expanded level near 99%, the two draws' extremes
    // differed by 27%: the Poisson replicates' sizes vary by about 1/n.)
    assert!(
        (got - full).abs() <= 0.2 * full + 0.00005,
        "stop line {got}, full analysis {full}: {stop}"
    );
}
