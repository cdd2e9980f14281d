//! SIGKILL mid-experiment, then --resume: planned counts, no duplicates,
//! and the interrupted config's teardown ran. SIGINT: clean stop. Each
//! test runs twice: on an SQLite store, and on a PostgreSQL one (where the
//! run log a SIGKILL leaves is folded into the server).

use crate::common;
use common::*;

use std::process::Stdio;
use std::time::{Duration, Instant};

fn plan(sb: &Sandbox, runs: u32) -> std::path::PathBuf {
    let log = sb.path("steps.log");
    sb.write(
        "plan.toml",
        &format!(
            r#"
runs = {runs}
seed = 3
[[config]]
name = "a"
setup = 'export TOKEN=a$$; echo "setup a $TOKEN" >> {log}'
teardown = 'echo "teardown a $TOKEN" >> {log}'
[[config]]
name = "b"
setup = 'export TOKEN=b$$; echo "setup b $TOKEN" >> {log}'
teardown = 'echo "teardown b $TOKEN" >> {log}'
[[workload]]
name = "w"
command = "echo started >> {started}; sleep 0.05"
"#,
            log = log.display(),
            started = sb.path("started.log").display()
        ),
    )
}

fn ok_runs(sb: &Sandbox) -> i64 {
    if !sb.store_exists() {
        return 0;
    }
    sb.sql_number("SELECT COUNT(*) FROM runs")
}

fn steps(sb: &Sandbox) -> (usize, usize) {
    let log = std::fs::read_to_string(sb.path("steps.log")).unwrap_or_default();
    (
        log.lines().filter(|l| l.starts_with("setup")).count(),
        log.lines().filter(|l| l.starts_with("teardown")).count(),
    )
}

both_stores! {
fn sigkill_then_resume_reaches_planned_counts_without_duplicates(sb) {
    let p = plan(sb, 15);
    // Kill after 10 runs started: before the first fold (a second in), so
    // most of them are in the run log only.
    let started = || {
        std::fs::read_to_string(sb.path("started.log"))
            .unwrap_or_default()
            .lines()
            .count() as i64
    };
    sigkill_run_when(sb, &p, "10 runs started", || started() >= 10);
    // Any sysdelta that opens the store folds the runs the killed one had
    // only in its run log: every run that started is stored but the one in
    // flight.
    assert!(sb.run(&["list"]).status.success());
    let started = started();
    let before = ok_runs(sb);
    assert!(
        before >= started - 1,
        "{started} runs started, {before} stored: more than the run in flight was lost"
    );
    assert!(
        (8..30).contains(&before),
        "killed mid-experiment: {before} runs"
    );
    let (setups, teardowns) = steps(sb);

    let out = sb.run(&["run", "--resume", "1", "--trust-stored-plan", "--quiet", "--no-report"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);

    let total = sb.sql_number("SELECT COUNT(*) FROM runs");
    let distinct = sb.sql_number("SELECT COUNT(*) FROM (SELECT DISTINCT block, seq FROM runs) AS d");
    assert_eq!(total, 30, "2 configs x 15 runs");
    assert_eq!(distinct, 30, "no slot ran twice");
    for cfg in ["a", "b"] {
        let n = sb.sql_number(&format!(
            "SELECT COUNT(*) FROM runs WHERE config = '{cfg}' AND status = 'ok'"
        ));
        assert_eq!(n, 15, "config {cfg}");
    }
    let complete = sb.sql_number("SELECT COUNT(*) FROM experiments WHERE id = 1 AND status = 'complete'");
    assert_eq!(complete, 1, "the experiment is complete");

    // The config entered at the kill was torn down on resume, or its
    // teardown had started before the kill and finished by itself; either
    // way that was reported, once.
    if setups > teardowns {
        assert!(
            err.contains("its teardown ran on resume") || err.contains("its teardown had started"),
            "{err}"
        );
        let ev = sb.sql_number("SELECT COUNT(*) FROM events WHERE kind = 'teardown'");
        assert_eq!(ev, 1);
    }
    let (s, t) = steps(sb);
    assert_eq!(s, t, "every setup has its teardown");
    teardowns_see_their_setups_exports(sb);
}
}

both_stores! {
/// A SIGKILL while a setup runs: the setup shell (in its own process group)
/// finishes without sysdelta, so sysdelta never stored what it exported;
/// the teardown on `--resume` must still see it.
fn sigkill_during_a_setup_then_resume_gives_the_teardown_its_exports(sb) {
    let p = b_plan(sb, 2, false, "; sleep 1", "");
    sigkill_run_when(sb, &p, "b's setup", || steps(sb).0 > 0);
    // The orphaned setup goes on (and dumps its environment) by itself;
    // resume waits for it.
    resume_saying(sb, "its teardown ran on resume");
    teardowns_see_their_setups_exports(sb);
    let (s, t) = steps(sb);
    assert_eq!(
        (s, t),
        (2, 2),
        "b entered twice (before the kill, on resume), left twice"
    );
    assert!(
        !setup_env_left(sb),
        "the setup's environment dump is removed once the config is left"
    );
}
}

both_stores! {
/// A SIGKILL while a teardown runs: the teardown shell finishes by
/// itself, so `--resume` must not run it a second time.
fn sigkill_during_a_teardown_then_resume_does_not_repeat_it(sb) {
    let p = b_plan(sb, 2, true, "", "; sleep 1");
    sigkill_run_when(sb, &p, "b's teardown", || steps(sb).1 > 0);
    // Resume waits for the orphaned teardown, which ends by itself.
    resume_saying(sb, "ran to its end by itself");
    assert_eq!(steps(sb), (1, 1), "one setup, one teardown");
    teardowns_see_their_setups_exports(sb);
    assert!(!crash_file(sb, ".step").exists());
    assert!(!setup_env_left(sb));
}
}

both_stores! {
/// A teardown killed before its end (the second Ctrl-C kills the shell in
/// flight, as does a crash of the machine) runs again on resume.
fn a_teardown_killed_before_its_end_runs_again_on_resume(sb) {
    let slept = sb.path("slept");
    let p = b_plan(
        sb,
        1,
        true,
        "",
        &format!(
            "; if [ ! -e {s} ]; then touch {s}; sleep 30; fi",
            s = slept.display()
        ),
    );
    let mut pid = 0;
    // Inside the teardown's sleep: its shell wrote its pid, and `slept`
    // exists, so the repeated teardown does not sleep.
    sigkill_run_when(sb, &p, "b's teardown shell asleep", || {
        if !slept.exists() {
            return false;
        }
        let step = std::fs::read_to_string(crash_file(sb, ".step")).unwrap_or_default();
        pid = step
            .lines()
            .filter(|_| step.starts_with("teardown"))
            .find_map(|l| l.strip_prefix("pid ")?.trim().parse().ok())
            .unwrap_or(0);
        pid > 0
    });
    // What the second signal does to the shell in flight.
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    resume_saying(sb, "its teardown ran on resume");
    assert_eq!(steps(sb), (1, 2), "the cut teardown ran again, to its end");
    teardowns_see_their_setups_exports(sb);
    assert!(!crash_file(sb, ".step").exists());
}
}

/// A sequential plan running `true` under a bare config `a` and a config
/// `b` (first when `b_first`) whose setup exports a fresh TOKEN and logs
/// it, and whose teardown logs the TOKEN it sees; `setup_tail` and
/// `teardown_tail` follow the logging.
fn b_plan(
    sb: &Sandbox,
    runs: u32,
    b_first: bool,
    setup_tail: &str,
    teardown_tail: &str,
) -> std::path::PathBuf {
    let log = sb.path("steps.log").display().to_string();
    let a = "[[config]]\nname = \"a\"\n".to_string();
    let b = format!(
        "[[config]]\nname = \"b\"\n\
         setup = 'export TOKEN=b$$; echo \"setup b $TOKEN\" >> {log}{setup_tail}'\n\
         teardown = 'echo \"teardown b $TOKEN\" >> {log}{teardown_tail}'\n"
    );
    let (first, second) = if b_first { (b, a) } else { (a, b) };
    sb.write(
        "plan.toml",
        &format!(
            "runs = {runs}\norder = \"sequential\"\n{first}{second}\
             [[workload]]\nname = \"w\"\ncommand = \"true\"\n"
        ),
    )
}

/// `run --resume 1`: it succeeds, and its stderr says `said`.
fn resume_saying(sb: &Sandbox, said: &str) {
    let out = sb.run(&[
        "run",
        "--resume",
        "1",
        "--trust-stored-plan",
        "--quiet",
        "--no-report",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains(said), "{}", stderr(&out));
}

/// Start `sysdelta run PLAN` on the sandbox's store and SIGKILL it as soon
/// as `ready` holds (checked every 5 ms, for at most a minute). Its scratch
/// directory is made inside the sandbox, so that it goes with the sandbox
/// even when the test fails before a resume could remove it.
fn sigkill_run_when(
    sb: &Sandbox,
    plan: &std::path::Path,
    what: &str,
    mut ready: impl FnMut() -> bool,
) {
    let mut child = sb
        .command()
        .args(["run", plan.to_str().unwrap(), "--quiet", "--no-report"])
        .env("TMPDIR", sb.dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !ready() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "never reached: {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
}

fn crash_file(sb: &Sandbox, suffix: &str) -> std::path::PathBuf {
    let mut p = sb.store().into_os_string();
    p.push(suffix);
    p.into()
}

fn setup_env_left(sb: &Sandbox) -> bool {
    crash_file(sb, ".setup-env").exists()
}

/// Each teardown saw the TOKEN its setup exported (a fresh one per setup:
/// the setup shell's pid), also the teardown run on resume after SIGKILL.
fn teardowns_see_their_setups_exports(sb: &Sandbox) {
    let log = std::fs::read_to_string(sb.path("steps.log")).unwrap();
    let mut last_setup = std::collections::HashMap::new();
    for line in log.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        match f.as_slice() {
            ["setup", cfg, token] => {
                last_setup.insert(cfg.to_string(), token.to_string());
            }
            ["teardown", cfg, token] => {
                assert_eq!(
                    last_setup.get(*cfg).map(String::as_str),
                    Some(*token),
                    "teardown of {cfg} saw another setup's export:\n{log}"
                );
            }
            _ => panic!("teardown without the setup's export: {line:?}\n{log}"),
        }
    }
}

both_stores! {
fn first_sigint_tears_down_and_stops_cleanly(sb) {
    let p = plan(sb, 200);
    let child = sb
        .command()
        .args(["run", p.to_str().unwrap(), "--quiet", "--no-report"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while ok_runs(sb) < 4 {
        assert!(start.elapsed() < Duration::from_secs(60), "no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(stderr(&out).contains("--resume 1"), "{}", stderr(&out));
    let (s, t) = steps(sb);
    assert_eq!(s, t, "teardown ran after the signal");
    let left = sb.sql_number(
        "SELECT COUNT(*) FROM experiments WHERE id = 1 AND status = 'interrupted' AND entered_config IS NULL",
    );
    assert_eq!(left, 1, "interrupted, and no config left entered");
}
}
