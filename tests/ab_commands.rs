//! `ab` as a hyperfine user types it: `sysdelta ab 'CMD1' 'CMD2'` compares
//! the commands (each a config, interleaved, with a verdict),
//! `--reference` and `--baseline` pick the reference, `-s/--setup` and
//! `-c/--cleanup` run once per command, several `-L`/`-P` give their
//! cross product, and a `{NAME}` no scan fills is refused before anything
//! runs.

mod common;

use common::{stderr, stdout, Sandbox};

fn configs(sb: &Sandbox) -> (Vec<String>, String) {
    let r = sb.json_report("last");
    let a = &r["analysis"];
    let names = a["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    (names, a["baseline"].as_str().unwrap().to_string())
}

fn lines(sb: &Sandbox, file: &str) -> Vec<String> {
    std::fs::read_to_string(sb.path(file))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn two_commands_are_compared_with_a_verdict() {
    let sb = Sandbox::new();
    let out = sb.run(&["ab", "-q", "-r", "12", "sleep 0.001", "sleep 0.03"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Baseline sleep_0.001."), "{text}");
    assert!(text.contains("| sleep_0.03 "), "{text}");
    // 30 ms against 1 ms, 12 runs each: a verdict, not noise.
    assert!(text.contains("worse"), "{text}");
    let (names, baseline) = configs(&sb);
    assert_eq!(names, ["sleep_0.001", "sleep_0.03"]);
    assert_eq!(baseline, "sleep_0.001");
    // The stored plan runs again with `run`: each config has its command.
    let r = sb.json_report("last");
    let plan = r["experiment"]["plan_text"].as_str().unwrap();
    assert!(plan.contains("command = \"sleep 0.03\""), "{plan}");
}

#[test]
fn the_reference_and_the_names_are_hyperfines() {
    let sb = Sandbox::new();
    let base = ["ab", "-q", "--no-report", "-r", "2"];
    let run = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        let out = sb.run(&args);
        assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
        configs(&sb)
    };
    let (names, baseline) = run(&["-n", "one", "-n", "two", "true", "sleep 0.001"]);
    assert_eq!(
        (names, baseline.as_str()),
        (vec!["one".into(), "two".into()], "one")
    );
    // --reference names one of the commands by its text ...
    let (_, baseline) = run(&["--reference", "sleep 0.001", "true", "sleep 0.001"]);
    assert_eq!(baseline, "sleep_0.001");
    // ... or is a command of its own, measured first.
    let (names, baseline) = run(&["--reference", "sleep 0.002", "true"]);
    assert_eq!(names, ["sleep_0.002", "true"]);
    assert_eq!(baseline, "sleep_0.002");
    // --baseline takes a config's name or a command's text.
    let out = sb.run(&[
        "ab",
        "-q",
        "-r",
        "2",
        "--baseline",
        "sleep 0.001",
        "true",
        "sleep 0.001",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("Baseline sleep_0.001."),
        "{}",
        stdout(&out)
    );
}

#[test]
fn setup_and_cleanup_run_once_per_command_not_per_switch() {
    let sb = Sandbox::new();
    let log = sb.path("hooks.log");
    let log = log.to_str().unwrap();
    let out = sb.run(&[
        "ab",
        "-q",
        "--no-report",
        "-r",
        "20",
        "-w",
        "2",
        "-s",
        &format!("echo setup >> {log}"),
        "-c",
        &format!("echo cleanup >> {log}"),
        "-p",
        &format!("echo prepare >> {log}"),
        "true",
        "sleep 0.001",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let got = lines(&sb, "hooks.log");
    let count = |w: &str| got.iter().filter(|l| *l == w).count();
    // 2 commands x 22 runs, interleaved: the setups all come before the
    // first run, the cleanups after the last; --prepare before every run.
    assert_eq!(count("setup"), 2, "{got:?}");
    assert_eq!(count("cleanup"), 2, "{got:?}");
    assert_eq!(count("prepare"), 44, "{got:?}");
    assert_eq!(&got[..2], ["setup", "setup"], "{got:?}");
    assert_eq!(&got[got.len() - 2..], ["cleanup", "cleanup"], "{got:?}");
}

#[test]
fn a_config_setup_runs_at_each_entry_and_hyperfine_hooks_once() {
    // A config's setup is the state it enters: with interleaved runs it
    // runs each time its config is entered. -s and -c CMD stay once per
    // command; -c NAME=CMD is that config's teardown.
    let sb = Sandbox::new();
    let log = sb.path("hooks.log");
    let log = log.to_str().unwrap();
    let out = sb.run(&[
        "ab",
        "-q",
        "--no-report",
        "-r",
        "6",
        "--config",
        "a=",
        "--config",
        &format!("b=echo enter >> {log}"),
        "-c",
        &format!("b=echo leave >> {log}"),
        "-s",
        &format!("echo setup >> {log}"),
        "-c",
        &format!("echo cleanup >> {log}"),
        "--",
        "true",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let got = lines(&sb, "hooks.log");
    let count = |w: &str| got.iter().filter(|l| *l == w).count();
    assert_eq!(count("setup"), 1, "{got:?}");
    assert_eq!(count("cleanup"), 1, "{got:?}");
    assert!((1..=6).contains(&count("enter")), "{got:?}");
    assert_eq!(count("enter"), count("leave"), "{got:?}");
}

#[test]
fn several_scans_give_their_cross_product() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "ab",
        "-q",
        "--no-report",
        "-r",
        "2",
        "-L",
        "a",
        "x,y",
        "-L",
        "b",
        "1,2",
        "echo {a}{b}",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (names, _) = configs(&sb);
    assert_eq!(names, ["echo_x1", "echo_x2", "echo_y1", "echo_y2"]);
    // With --config: one workload per combination.
    let out = sb.run(&[
        "ab",
        "-q",
        "--no-report",
        "-r",
        "2",
        "--config",
        "c=",
        "-P",
        "n",
        "1",
        "2",
        "-L",
        "m",
        "a,b",
        "--",
        "echo {n}{m}",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = sb.json_report("last");
    let mut workloads: Vec<String> = r["analysis"]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["workload"].as_str().unwrap().to_string())
        .collect();
    workloads.dedup();
    assert_eq!(workloads, ["echo_1a", "echo_1b", "echo_2a", "echo_2b"]);
}

#[test]
fn a_placeholder_without_a_scan_is_refused_and_nothing_runs() {
    let sb = Sandbox::new();
    let marker = sb.path("ran");
    let cmd = format!("touch {} {{a}}{{b}}", marker.display());
    let out = sb.run(&["ab", "-q", "-r", "2", "-L", "a", "x,y", &cmd]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("{b} is no parameter"), "{err}");
    assert!(!marker.exists(), "nothing ran");
    assert!(!sb.store_exists() || sb.sql_number("SELECT count(*) FROM experiments") == 0);
}
