//! SIGKILL mid-experiment, then --resume: planned counts, no duplicates,
//! and the interrupted config's teardown ran. SIGINT: clean stop.

mod common;
use common::*;

use std::process::{Command, Stdio};
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
command = "sleep 0.05"
"#,
            log = log.display()
        ),
    )
}

fn ok_runs(store: &std::path::Path) -> i64 {
    let Ok(c) =
        rusqlite::Connection::open_with_flags(store, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return 0;
    };
    c.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0))
        .unwrap_or(0)
}

fn steps(sb: &Sandbox) -> (usize, usize) {
    let log = std::fs::read_to_string(sb.path("steps.log")).unwrap_or_default();
    (
        log.lines().filter(|l| l.starts_with("setup")).count(),
        log.lines().filter(|l| l.starts_with("teardown")).count(),
    )
}

#[test]
fn sigkill_then_resume_reaches_planned_counts_without_duplicates() {
    let sb = Sandbox::new();
    let p = plan(&sb, 15);
    let mut child = Command::new(bin())
        .arg("--store")
        .arg(sb.store())
        .args(["run", p.to_str().unwrap(), "--quiet", "--no-report"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while ok_runs(&sb.store()) < 8 {
        assert!(start.elapsed() < Duration::from_secs(60), "no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = ok_runs(&sb.store());
    assert!(
        (8..30).contains(&before),
        "killed mid-experiment: {before} runs"
    );
    let (setups, teardowns) = steps(&sb);

    let out = sb.run(&["run", "--resume", "1", "--quiet", "--no-report"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);

    let c = rusqlite::Connection::open(sb.store()).unwrap();
    let total: i64 = c
        .query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0))
        .unwrap();
    let distinct: i64 = c
        .query_row(
            "SELECT COUNT(*) FROM (SELECT DISTINCT block, seq FROM runs)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(total, 30, "2 configs x 15 runs");
    assert_eq!(distinct, 30, "no slot ran twice");
    for cfg in ["a", "b"] {
        let n: i64 = c
            .query_row(
                "SELECT COUNT(*) FROM runs WHERE config = ?1 AND status = 'ok'",
                [cfg],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(n, 15, "config {cfg}");
    }
    let status: String = c
        .query_row("SELECT status FROM experiments WHERE id = 1", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(status, "complete");

    // The config entered at the kill was torn down on resume, and that was reported.
    if setups > teardowns {
        assert!(err.contains("its teardown ran on resume"), "{err}");
        let ev: i64 = c
            .query_row(
                "SELECT COUNT(*) FROM events WHERE kind = 'teardown'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(ev, 1);
    }
    let (s, t) = steps(&sb);
    assert_eq!(s, t, "every setup has its teardown");
    teardowns_see_their_setups_exports(&sb);
}

/// A SIGKILL while a setup runs: the setup shell (in its own process group)
/// finishes without sysdelta, so sysdelta never stored what it exported;
/// the teardown on `--resume` must still see it.
#[test]
fn sigkill_during_a_setup_then_resume_gives_the_teardown_its_exports() {
    let sb = Sandbox::new();
    let log = sb.path("steps.log");
    let p = sb.write(
        "plan.toml",
        &format!(
            r#"
runs = 2
order = "sequential"
[[config]]
name = "a"
[[config]]
name = "b"
setup = 'export TOKEN=b$$; echo "setup b $TOKEN" >> {log}; sleep 1'
teardown = 'echo "teardown b $TOKEN" >> {log}'
[[workload]]
name = "w"
command = "true"
"#,
            log = log.display()
        ),
    );
    let mut child = Command::new(bin())
        .arg("--store")
        .arg(sb.store())
        .args(["run", p.to_str().unwrap(), "--quiet", "--no-report"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while steps(&sb).0 == 0 {
        assert!(start.elapsed() < Duration::from_secs(60), "no setup ran");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap(); // SIGKILL, inside b's setup
    child.wait().unwrap();
    // The orphaned setup finishes (and dumps its environment) by itself.
    std::thread::sleep(Duration::from_millis(1500));
    let out = sb.run(&["run", "--resume", "1", "--quiet", "--no-report"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("its teardown ran on resume"),
        "{}",
        stderr(&out)
    );
    teardowns_see_their_setups_exports(&sb);
    let (s, t) = steps(&sb);
    assert_eq!(
        (s, t),
        (2, 2),
        "b entered twice (before the kill, on resume), left twice"
    );
    assert!(
        !setup_env_left(&sb),
        "the setup's environment dump is removed once the config is left"
    );
}

fn setup_env_left(sb: &Sandbox) -> bool {
    let mut p = sb.store().into_os_string();
    p.push(".setup-env");
    std::path::Path::new(&p).exists()
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

#[test]
fn first_sigint_tears_down_and_stops_cleanly() {
    let sb = Sandbox::new();
    let p = plan(&sb, 200);
    let child = Command::new(bin())
        .arg("--store")
        .arg(sb.store())
        .args(["run", p.to_str().unwrap(), "--quiet", "--no-report"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while ok_runs(&sb.store()) < 4 {
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
    let (s, t) = steps(&sb);
    assert_eq!(s, t, "teardown ran after the signal");
    let c = rusqlite::Connection::open(sb.store()).unwrap();
    let (status, entered): (String, Option<String>) = c
        .query_row(
            "SELECT status, entered_config FROM experiments WHERE id = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(status, "interrupted");
    assert_eq!(entered, None);
}
