//! What a terminal and a CI job see of sysdelta (issue 32, items 5 and 9):
//! `--fail-on` as an exit status, `-q`, `list --format json`, completions
//! and the man page, `--version` with the commit, a stopped run's reason
//! said once, verdict colours on a terminal only, `ab`'s errors naming
//! its options, and `ab`'s short report.

mod common;

use std::process::Command;

use common::{bin, stderr, stdout, Sandbox};

/// `--fail-on worse` is a CI job's verdict as an exit status: 3 when a
/// headline comparison is a regression (a config 30 ms slower), 0 for an
/// equal pair, with one line stating the threshold and the family; report
/// and compare judge the stored experiment alike.
#[test]
fn fail_on_worse_exits_3_on_a_regression_and_0_on_an_equal_pair() {
    let sb = Sandbox::new();
    let slow = sb.run(&[
        "ab",
        "-q",
        "-r",
        "10",
        "--config",
        "fast=export D=0",
        "--config",
        "slow=export D=0.03",
        "--fail-on",
        "worse",
        "--",
        "sleep $D",
    ]);
    assert_eq!(slow.status.code(), Some(3), "{}", stderr(&slow));
    let line = stderr(&slow);
    assert!(
        line.contains("--fail-on worse: alpha 0.05 with Holm over the")
            && line.contains("FAILED by sleep/wall worse in slow"),
        "{line}"
    );
    // The same verdicts from the store; a slow-down is no speed-up. The
    // gate names the wall time: `sleep 0.03` and `sleep 0` may truly
    // differ in memory or CPU (a CI run once found the slow config's
    // maxrss 2.9% lower, a real difference that `better` rightly failed on).
    let again = sb.run(&["report", "1", "--fail-on", "worse"]);
    assert_eq!(again.status.code(), Some(3), "{}", stderr(&again));
    let better = sb.run(&["report", "1", "--fail-on", "better:wall"]);
    assert_eq!(better.status.code(), Some(0), "{}", stderr(&better));
    assert!(stderr(&better).contains("passed"), "{}", stderr(&better));
    let cmp = sb.run(&["compare", "1:fast", "1:slow", "--fail-on", "any"]);
    assert_eq!(cmp.status.code(), Some(3), "{}", stderr(&cmp));
    let equal = sb.run(&[
        "ab",
        "-q",
        "-r",
        "10",
        "--config",
        "a=",
        "--config",
        "b=",
        "--fail-on",
        "worse",
        // A false flag of an equal pair is alpha's chance: 1%, not 5%.
        "--alpha",
        "0.01",
        "--",
        "sleep 0.01",
    ]);
    assert_eq!(equal.status.code(), Some(0), "{}", stderr(&equal));
    // -q: nothing but the report and the gate's line.
    assert_eq!(stderr(&equal).lines().count(), 1, "{}", stderr(&equal));
    // `list --format json`: both experiments, for a script.
    let list: serde_json::Value =
        serde_json::from_slice(&sb.run(&["list", "--format", "json"]).stdout).unwrap();
    let configs: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["baseline"].as_str().unwrap())
        .collect();
    assert_eq!(configs, ["fast", "a"], "{list}");
}

/// `sysdelta completions bash` is a script bash sources, naming every
/// subcommand; `sysdelta man` is a page `man -l` renders (roff headers
/// checked where man is not installed), and each subcommand has its own.
#[test]
fn completions_and_man_page_come_from_the_command_line_itself() {
    let out = Command::new(bin())
        .args(["completions", "bash"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let script = stdout(&out);
    for sub in ["run", "ab", "report", "list", "compare", "history", "man"] {
        assert!(
            script.contains(&format!("sysdelta,{sub})")),
            "{sub}: {script}"
        );
    }
    assert!(!script.contains("sysdelta,guest)"), "hidden guest offered");
    for shell in ["zsh", "fish"] {
        let out = Command::new(bin())
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success() && stdout(&out).contains("fail-on"));
    }
    for page in [&["man"][..], &["man", "ab"]] {
        let out = Command::new(bin()).args(page).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let roff = stdout(&out);
        assert!(
            roff.contains(".TH sysdelta") && roff.contains(".SH NAME"),
            "{roff}"
        );
        let rendered = Command::new("man")
            .args(["-l", "-"])
            .env("MANWIDTH", "80")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn();
        let Ok(mut man) = rendered else {
            common::skip("man is not installed: roff headers checked only");
            continue;
        };
        use std::io::Write as _;
        man.stdin
            .take()
            .unwrap()
            .write_all(roff.as_bytes())
            .unwrap();
        let shown = man.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&shown.stdout);
        assert!(text.contains("NAME") && text.contains("OPTIONS"), "{text}");
    }
    let out = Command::new(bin())
        .args(["man", "nosuch"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `--version` names the commit the binary was built from, when it was
/// built from a git checkout (as this test's binary is, unless a tarball).
#[test]
fn version_names_the_commit() {
    let out = Command::new(bin()).arg("--version").output().unwrap();
    let v = stdout(&out);
    let head = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success());
    match head {
        Some(h) => {
            let commit = String::from_utf8_lossy(&h.stdout).trim().to_string();
            assert_eq!(
                v.trim(),
                format!("sysdelta {} ({commit})", env!("CARGO_PKG_VERSION"))
            );
        }
        None => assert_eq!(v.trim(), format!("sysdelta {}", env!("CARGO_PKG_VERSION"))),
    }
}

/// A run stopped by --max-failures says why once, after the report, where
/// a CI log ends (it was said twice, and its event read "stop: stopped:").
#[test]
fn a_stopped_run_says_why_once() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "ab",
        "-r",
        "5",
        "--max-failures",
        "2",
        "--config",
        "a=",
        "--",
        "false",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.matches("failed 2 runs in a row").count(), 1, "{err}");
    assert!(
        err.contains("sysdelta: stopped: a/false failed 2 runs"),
        "{err}"
    );
    let report = stdout(&out);
    assert!(!report.contains("stop: stopped:"), "{report}");
    assert!(report.contains("stop: a/false failed 2 runs"), "{report}");
}

/// Verdicts are coloured on a terminal only: never in a pipe or a file,
/// never with NO_COLOR set, TERM=dumb or --style basic; --style color
/// forces them. The terminal script(1) gives is an xterm whatever TERM
/// the test itself runs under (CI's is `dumb`).
#[test]
fn verdict_colours_on_a_terminal_only() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "ab",
        "-q",
        "-r",
        "6",
        "--config",
        "fast=export D=0",
        "--config",
        "slow=export D=0.03",
        "--",
        "sleep $D",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let esc = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).contains('\x1b');
    assert!(!esc(&out), "a pipe got colours");
    assert!(esc(&sb.run(&["report", "1", "--style", "color"])));
    assert!(!esc(&sb.run(&[
        "report", "1", "--format", "markdown", "--style", "color"
    ])));
    // On a terminal (script(1) gives the command one).
    let on_tty = |extra: &[(&str, &str)], style: &str| {
        let mut c = Command::new("script");
        c.args(["-qec"])
            .arg(format!(
                "{} --store {} report 1 --style {style}",
                bin(),
                sb.store_arg()
            ))
            .arg("/dev/null")
            .env_remove("NO_COLOR")
            .env("TERM", "xterm");
        for (k, v) in extra {
            c.env(k, v);
        }
        c.output().ok().filter(|o| o.status.success())
    };
    let Some(tty) = on_tty(&[], "auto") else {
        common::skip("script(1) is not installed or gives no terminal");
        return;
    };
    assert!(
        String::from_utf8_lossy(&tty.stdout).contains("\x1b[1m\x1b[31m"),
        "{}",
        String::from_utf8_lossy(&tty.stdout)
    );
    for (env, style) in [
        (&[("NO_COLOR", "1")][..], "auto"),
        (&[("TERM", "dumb")][..], "auto"),
        (&[][..], "basic"),
    ] {
        let o = on_tty(env, style).unwrap();
        assert!(
            !String::from_utf8_lossy(&o.stdout).contains('\x1b'),
            "{style}"
        );
    }
}

/// A problem with `ab`'s input names the option the user wrote, not a
/// position inside the plan sysdelta generated from it (`(ab):7:8:`).
#[test]
fn ab_errors_name_the_option_not_the_generated_plan() {
    let sb = Sandbox::new();
    for (args, says) in [
        (
            &["--config", "a=", "--config", "a="][..],
            "sysdelta: --config: duplicate config name 'a'",
        ),
        (
            &["--config", "a b="][..],
            "sysdelta: --config: config name 'a b' must be non-empty",
        ),
    ] {
        let mut all = vec!["ab", "-r", "1"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--", "true"]);
        let out = sb.run(&all);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(err.starts_with(says) && !err.contains("(ab)"), "{err}");
    }
}

/// What a hyperfine user reads after `ab`: a short report (the runs, how
/// to read a verdict, the table, the warnings, where the full one is),
/// not the full one's machine, method and shell sections; `report N`
/// still prints those, and --detail asks ab for them.
#[test]
fn ab_prints_a_short_report_and_names_the_full_one() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "ab", "-q", "-r", "5", "--config", "a=", "--config", "b=", "--", "true",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let short = stdout(&out);
    // Not the full report's machine, method statement, shell section or
    // sysdelta's own cost (the warnings vary with the noise: no count).
    for full_only in [
        "started ",
        "Unit of replication",
        "Shell start-up:",
        "own process",
    ] {
        assert!(!short.contains(full_only), "{full_only}: {short}");
    }
    assert!(
        short.starts_with("sysdelta ab: experiment 1 complete, seed 1\nruns: 5 per cell; 10 ok"),
        "{short}"
    );
    assert!(
        short.contains("| config ") && short.contains("delta (%)"),
        "{short}"
    );
    assert!(
        short.contains("Mann-Whitney p < 0.05, Holm over"),
        "{short}"
    );
    assert!(short.trim_end().ends_with("sysdelta report 1"), "{short}");
    let full = stdout(&sb.run(&["report", "1"]));
    assert!(
        full.contains("started ") && full.contains("Shell start-up"),
        "{full}"
    );
    assert!(full.lines().count() > short.lines().count() + 10, "{full}");
    let detail = stdout(&sb.run(&[
        "ab", "-q", "-r", "3", "--detail", "--config", "a=", "--", "true",
    ]));
    assert!(
        detail.starts_with("sysdelta report: experiment 2"),
        "{detail}"
    );
}
