//! A team store on PostgreSQL: a server that stops and comes back while
//! an experiment runs loses no run and stores none twice; several
//! machines write at once without clashing ids; push and pull copy an
//! experiment once; bad URLs and newer schemas are refused in one line.
//! Each test starts a throwaway server of its own (tests/common/pg.rs) and
//! skips, saying why, where there is none.

use crate::common;
use common::*;

use std::process::Stdio;
use std::time::{Duration, Instant};

/// Two configs x `runs` runs of a 20 ms command.
fn plan(sb: &Sandbox, runs: u32) -> std::path::PathBuf {
    sb.write(
        "plan.toml",
        &format!(
            "runs = {runs}\nseed = 5\n[[config]]\nname = \"a\"\n[[config]]\nname = \"b\"\n\
             [[workload]]\nname = \"w\"\ncommand = \"sleep 0.02\"\n"
        ),
    )
}

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < Duration::from_secs(90), "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_server_stopped_and_started_again_mid_experiment_loses_no_run() {
    let Some(sb) = Sandbox::postgresql() else {
        return;
    };
    let pg = sb.pg.as_ref().unwrap();
    let p = plan(&sb, 60);
    let child = sb
        .command()
        .args(["run", p.to_str().unwrap(), "--quiet", "--no-report"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stored = || {
        if !sb.store_exists() {
            return 0;
        }
        sb.sql_number("SELECT COUNT(*) FROM runs")
    };
    wait_until("runs stored", || stored() >= 10);
    pg.stop();
    // Runs go on meanwhile, into the local run log: it grows.
    let log = sysdelta::store::runlog::path_for(&sb.store());
    let lines = || {
        std::fs::read(&log)
            .map(|b| b.iter().filter(|&&c| c == b'\n').count())
            .unwrap_or(0)
    };
    std::thread::sleep(Duration::from_millis(1500));
    let early = lines();
    std::thread::sleep(Duration::from_millis(1500));
    let late = lines();
    assert!(
        late > early,
        "the run went on while the server was down: {early} then {late} runs kept"
    );
    pg.start_again();
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("the database cannot be reached"), "{err}");
    assert!(err.contains("reachable again"), "{err}");
    assert_eq!(sb.sql_number("SELECT COUNT(*) FROM runs"), 120, "{err}");
    assert_eq!(
        sb.sql_number(
            "SELECT COUNT(*) FROM (SELECT DISTINCT experiment_id, block, seq FROM runs) AS d"
        ),
        120,
        "each run once"
    );
    assert_eq!(
        sb.sql_number("SELECT COUNT(*) FROM experiments WHERE status = 'complete'"),
        1
    );
    assert!(!log.exists(), "the log is folded and gone at the end");
}

#[test]
fn three_machines_write_one_store_at_once_without_clashing_ids() {
    let Some(sb) = Sandbox::postgresql() else {
        return;
    };
    let p = plan(&sb, 10);
    // Three machines: each its own state directory (the store's anchor and
    // run log) and run directory.
    let children: Vec<_> = (0..3)
        .map(|i| {
            sb.command()
                .env("SYSDELTA_STATE_DIR", sb.path(&format!("state{i}")))
                .env("SYSDELTA_RUN_DIR", sb.path(&format!("run{i}")))
                .args(["run", p.to_str().unwrap(), "--quiet", "--no-report"])
                .args(["--label", &format!("m{i}")])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    assert_eq!(
        sb.sql_number("SELECT COUNT(DISTINCT id) FROM experiments"),
        3
    );
    assert_eq!(
        sb.sql_number("SELECT COUNT(DISTINCT uid) FROM experiments"),
        3
    );
    for i in 0..3 {
        let runs = sb.sql_number(&format!(
            "SELECT COUNT(*) FROM runs r JOIN experiments e ON e.id = r.experiment_id WHERE e.label = 'm{i}'"
        ));
        assert_eq!(runs, 20, "machine {i}");
    }
}

#[test]
fn push_twice_stores_once_and_pull_gives_the_same_report() {
    let Some(team) = Sandbox::postgresql() else {
        return;
    };
    let local = Sandbox::new();
    let p = plan(&local, 5);
    let out = local.run(&["run", p.to_str().unwrap(), "--quiet", "--no-report"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let push = |sb: &Sandbox| {
        let out = sb
            .command()
            .env("SYSDELTA_STATE_DIR", team.state_dir())
            .args(["push", "--to", &team.store_arg()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    assert!(push(&local).contains("stored as 1, 10 runs"));
    assert!(push(&local).contains("already there as 1"));
    assert_eq!(team.sql_number("SELECT COUNT(*) FROM experiments"), 1);
    assert_eq!(team.sql_number("SELECT COUNT(*) FROM runs"), 10);
    let samples = team.sql_number("SELECT COUNT(*) FROM samples");
    assert!(samples > 10, "every sample went: {samples}");

    // The copy reads as the original, but for the event each copy adds
    // (where it came from: the original has no event); pulled into a new
    // file, too.
    let text = |sb: &Sandbox| {
        let report = stdout(&sb.run(&["report", "1"]));
        let mut kept = Vec::new();
        let mut in_events = false;
        for l in report.lines() {
            if l == "Events:" {
                in_events = true;
            } else if in_events && l.is_empty() {
                // The section's end: its blank line goes with it.
                in_events = false;
            } else if in_events {
                let copied = !l.starts_with("  - ") || l.contains(" copied: from");
                assert!(copied, "only copies' events: {l}");
            } else {
                kept.push(l);
            }
        }
        kept.join("\n")
    };
    let said = stdout(&team.run(&["report", "1"]));
    assert!(
        said.contains(&format!(" copied: from {}", local.store().display())),
        "{said}"
    );
    assert_eq!(text(&team), text(&local));
    let other = Sandbox::new();
    let out = other
        .command()
        .env("SYSDELTA_STATE_DIR", team.state_dir())
        .args(["pull", "--from", &team.store_arg()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(text(&other), text(&local));
    // Its uid came along: pushing the pulled copy stores nothing new.
    assert!(push(&other).contains("already there as 1"));
    assert_eq!(team.sql_number("SELECT COUNT(*) FROM runs"), 10);
}

#[test]
fn a_push_to_a_newer_schema_is_refused_in_one_line_and_changes_nothing() {
    let Some(team) = Sandbox::postgresql() else {
        return;
    };
    let local = Sandbox::new();
    let p = plan(&local, 3);
    assert!(local
        .run(&["run", p.to_str().unwrap(), "--quiet", "--no-report"])
        .status
        .success());
    let push = || {
        local
            .command()
            .env("SYSDELTA_STATE_DIR", team.state_dir())
            .args(["push", "--to", &team.store_arg()])
            .output()
            .unwrap()
    };
    assert!(push().status.success());
    // Meanwhile a newer sysdelta moved the team store on, and this one
    // ran another experiment.
    let pg = team.pg.as_ref().unwrap();
    pg.psql("UPDATE meta SET value = '99' WHERE key = 'schema_version'");
    assert!(local
        .run(&["run", p.to_str().unwrap(), "--quiet", "--no-report"])
        .status
        .success());
    let out = push();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("store schema v99 is newer than this sysdelta understands"),
        "{err}"
    );
    assert!(!err.contains(pg.password()), "{err}");
    assert_eq!(team.sql_number("SELECT COUNT(*) FROM experiments"), 1);
    assert_eq!(team.sql_number("SELECT COUNT(*) FROM runs"), 6);
}

#[test]
fn bad_urls_are_one_line_exit_2_and_write_nothing() {
    let Some(sb) = Sandbox::postgresql() else {
        return;
    };
    let pg = sb.pg.as_ref().unwrap();
    let p = plan(&sb, 3);
    let wrong = pg.url_with_password("not-the-password");
    let nowhere = format!(
        "postgresql://postgres:x@/sysdelta?host={}&port=5999",
        sb.dir.path().display()
    );
    let cases = [
        (wrong.as_str(), "password authentication failed"),
        (
            "postgresql://postgres:pw@/sysdelta?port=notaport",
            "not a PostgreSQL URL",
        ),
        // A libpq string is a store, never a file name: one it cannot
        // read is refused as one.
        (
            "host=/nonexistent password=pw bogus=1",
            "not a PostgreSQL connection string",
        ),
        (nowhere.as_str(), "cannot connect"),
    ];
    for (url, said) in cases {
        for args in [
            vec!["run", p.to_str().unwrap(), "--quiet"],
            vec!["report", "last"],
        ] {
            let out = std::process::Command::new(bin())
                .env("SYSDELTA_STATE_DIR", sb.state_dir())
                .env("SYSDELTA_RUN_DIR", sb.run_dir())
                .current_dir(sb.dir.path())
                .args(["--store", url])
                .args(&args)
                .output()
                .unwrap();
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{url}: {err}");
            assert_eq!(err.trim().lines().count(), 1, "{url}: {err}");
            assert!(err.contains(said), "{url}: {err}");
            assert!(
                !err.contains("not-the-password") && !err.contains("pw@") && !err.contains("=pw"),
                "{err}"
            );
        }
    }
    assert!(!sb.store_exists(), "nothing was written to the server");
    let anchors = std::fs::read_dir(sb.state_dir()).unwrap().count();
    assert_eq!(anchors, 1, "no anchor was made for a refused URL");
    // SYSDELTA_STORE serves as --store does, which wins over it.
    let env_run = |store: Option<&str>| {
        let mut c = std::process::Command::new(bin());
        c.env("SYSDELTA_STATE_DIR", sb.state_dir())
            .env("SYSDELTA_RUN_DIR", sb.run_dir())
            .env("SYSDELTA_STORE", sb.store_arg())
            .current_dir(sb.dir.path());
        if let Some(s) = store {
            c.args(["--store", s]);
        }
        c.args(["run", p.to_str().unwrap(), "--quiet", "--no-report"])
            .output()
            .unwrap()
    };
    let out = env_run(None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(sb.sql_number("SELECT COUNT(*) FROM runs"), 6);
    let out = env_run(Some("local.db"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(sb.path("local.db").exists());
    assert_eq!(sb.sql_number("SELECT COUNT(*) FROM runs"), 6);
}

#[test]
fn writes_kept_while_the_server_was_away_reach_it_with_the_next_open_after_a_crash() {
    use sysdelta::metric::{Direction, MetricSpec};
    use sysdelta::store::{runlog, RunResult, Store};
    use sysdelta::workload::MetricSamples;
    let Some(sb) = Sandbox::postgresql() else {
        return;
    };
    let pg = sb.pg.as_ref().unwrap();
    let store = Store::open(&sb.store(), true).unwrap();
    let wall = MetricSpec::new("wall", "s", Direction::Lower);
    let exp = create_experiment(&store, "t", &["a"], 3, &[wall]);
    store.log_runs().unwrap();
    let samples = [MetricSamples {
        metric: "wall".into(),
        values: vec![0.5],
    }];
    let run = |block| {
        store
            .record_run(&run_record(exp, block, 0, "a", RunResult::Ok(&samples)))
            .unwrap()
    };
    run(0);
    pg.stop();
    let start = std::time::Instant::now();
    store.set_entered_config(exp, Some("a")).unwrap();
    store.add_event(exp, "note", "while away").unwrap();
    run(1);
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "nothing waited for the server"
    );
    let deferred = Store::beside(&sb.store(), ".deferred");
    assert!(deferred.exists());
    // A SIGKILL now: nothing folded or applied on the way out.
    std::mem::forget(store);
    pg.start_again();
    let store = Store::open(&sb.store(), false).unwrap();
    assert_eq!(
        store.info(exp).unwrap().entered_config.as_deref(),
        Some("a")
    );
    assert_eq!(store.event_messages(exp, "note").unwrap(), ["while away"]);
    assert_eq!(store.load(exp).unwrap().runs.len(), 2);
    assert!(!deferred.exists());
    assert!(!runlog::path_for(&sb.store()).exists());
}

#[test]
fn an_experiment_of_another_host_is_resumed_only_with_force() {
    let Some(sb) = Sandbox::postgresql() else {
        return;
    };
    let p = plan(&sb, 3);
    let out = sb.run(&["run", p.to_str().unwrap(), "--quiet", "--no-report"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let pg = sb.pg.as_ref().unwrap();
    // Ran elsewhere and stopped there.
    pg.psql("UPDATE experiments SET host = 'lab-7', status = 'interrupted'");
    let out = sb.run(&[
        "run",
        "--resume",
        "1",
        "--trust-stored-plan",
        "--quiet",
        "--no-report",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("experiment 1 ran on host lab-7, not on this one"),
        "{err}"
    );
    assert_eq!(
        sb.sql_number("SELECT COUNT(*) FROM experiments WHERE status = 'interrupted'"),
        1
    );
    let out = sb.run(&[
        "run",
        "--resume",
        "1",
        "--trust-stored-plan",
        "--quiet",
        "--no-report",
        "--force",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_copy_never_sets_a_complete_experiment_back() {
    use sysdelta::store::{ExperimentStatus, RunResult, Store};
    use sysdelta::workload::MetricSamples;
    let dir = tempfile::tempdir().unwrap();
    let (laptop, team) = (dir.path().join("laptop.db"), dir.path().join("team.db"));
    let wall = sysdelta::metric::MetricSpec::new("wall", "s", sysdelta::metric::Direction::Lower);
    let team_store = Store::open(&team, true).unwrap();
    let exp = create_experiment(&team_store, "t", &["a"], 2, &[wall]);
    let samples = [MetricSamples {
        metric: "wall".into(),
        values: vec![0.5],
    }];
    let run = |s: &Store, block| {
        s.record_run(&run_record(exp, block, 0, "a", RunResult::Ok(&samples)))
            .unwrap()
    };
    run(&team_store, 0);
    // Pulled while it ran: the laptop's copy says running, one run.
    let laptop_store = Store::open(&laptop, true).unwrap();
    team_store.copy_experiment(exp, &laptop_store).unwrap();
    run(&team_store, 1);
    team_store
        .finish(exp, ExperimentStatus::Complete, None)
        .unwrap();
    // Pushing the older copy back adds nothing and undoes nothing.
    let c = laptop_store.copy_experiment(1, &team_store).unwrap();
    assert_eq!((c.new, c.runs_added), (false, 0));
    let info = team_store.info(exp).unwrap();
    assert_eq!(info.status, ExperimentStatus::Complete);
    assert!(info.finished_at.is_some());
    assert_eq!(team_store.load(exp).unwrap().runs.len(), 2);
}
