//! The run log through the store: runs recorded while an experiment runs
//! reach the tables, a report-side read sees them, and the log a crash left
//! is folded by the next open without duplicating a run. The tests of
//! `both_stores!` run on an SQLite store and on a PostgreSQL one.

use crate::common;

#[allow(unused_imports)]
use common::Sandbox;
use common::{create_experiment, run_record};
use sysdelta::metric::{Direction, MetricSpec};
use sysdelta::store::{runlog, RunResult, Store};
use sysdelta::workload::MetricSamples;

/// Experiment `t`: config a, 3 runs of workload w reporting `wall`.
fn experiment(store: &Store) -> i64 {
    let wall = MetricSpec::new("wall", "s", Direction::Lower);
    create_experiment(store, "t", &["a"], 3, &[wall])
}

/// A new store at `path` with one experiment, its runs going to the run log.
fn logging_store(path: &std::path::Path) -> (Store, i64) {
    let store = Store::open(path, true).unwrap();
    let exp = experiment(&store);
    store.log_runs().unwrap();
    (store, exp)
}

fn record(store: &Store, exp: i64, block: u32) {
    let samples = [MetricSamples {
        metric: "wall".into(),
        values: vec![0.5 + f64::from(block)],
    }];
    store
        .record_run(&run_record(exp, block, 0, "a", RunResult::Ok(&samples)))
        .unwrap();
}

fn walls(store: &Store, exp: i64) -> Vec<f64> {
    store
        .load(exp)
        .unwrap()
        .runs
        .iter()
        .map(|r| r.samples["wall"][0])
        .collect()
}

both_stores! {
fn logged_runs_are_read_back_and_a_repeated_fold_adds_nothing(sb) {
    let dir = &sb.dir;
    let path = sb.store();
    let log = runlog::path_for(&path);
    {
        let (store, exp) = logging_store(&path);
        record(&store, exp, 0);
        record(&store, exp, 1);
        // Reading the runs folds what is pending first.
        assert_eq!(walls(&store, exp), vec![0.5, 1.5]);
        record(&store, exp, 2);
        // A crash after the next fold committed, before the log was
        // emptied: keep the log as it is now.
        std::fs::copy(&log, dir.path().join("kept")).unwrap();
        store.close_run_log().unwrap();
        assert!(!log.exists(), "the log goes when the experiment ends");
        assert_eq!(walls(&store, exp), vec![0.5, 1.5, 2.5]);
    }
    std::fs::rename(dir.path().join("kept"), &log).unwrap();
    let store = Store::open(&path, false).unwrap();
    assert_eq!(
        walls(&store, 1),
        vec![0.5, 1.5, 2.5],
        "the repeated fold skipped the stored run"
    );
    assert!(
        !log.exists(),
        "the next open folds and removes a dead run's log"
    );
}
}

#[test]
fn a_dead_runs_log_is_folded_by_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let log = runlog::path_for(&path);
    {
        let (store, exp) = logging_store(&path);
        record(&store, exp, 0);
        record(&store, exp, 1);
        // What a SIGKILL leaves: the log file as it is, nothing folded.
        std::fs::copy(&log, dir.path().join("kept")).unwrap();
    }
    // (Dropping the store folded; start from what the kill left instead.)
    let fresh = dir.path().join("fresh.db");
    {
        let store = Store::open(&fresh, true).unwrap();
        experiment(&store);
    }
    std::fs::rename(dir.path().join("kept"), runlog::path_for(&fresh)).unwrap();
    let store = Store::open(&fresh, false).unwrap();
    assert_eq!(walls(&store, 1), vec![0.5, 1.5]);
    assert!(!runlog::path_for(&fresh).exists());
    assert!(!log.exists());
}

both_stores! {
fn a_reader_leaves_a_live_runs_log_to_it(sb) {
    let path = sb.store();
    let (store, exp) = logging_store(&path);
    record(&store, exp, 0);
    // The running sysdelta holds the store's flock (main.rs lock_store).
    let lock = nix::fcntl::Flock::lock(
        std::fs::File::open(&path).unwrap(),
        nix::fcntl::FlockArg::LockExclusiveNonblock,
    )
    .unwrap();
    let reader = Store::open(&path, false).unwrap();
    assert!(
        runlog::path_for(&path).exists(),
        "the reader did not fold or remove the live log"
    );
    assert_eq!(reader.load(exp).unwrap().runs.len(), 0, "not folded yet");
    drop(lock);
    store.flush_runs().unwrap();
    assert_eq!(reader.load(exp).unwrap().runs.len(), 1);
}
}

#[test]
fn a_log_that_cannot_be_folded_is_moved_aside_and_the_store_still_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let log = runlog::path_for(&path);
    // Rows of an experiment this store does not have (the user removed the
    // store after a crash, not its log) ...
    {
        let other = dir.path().join("other.db");
        let (store, exp) = logging_store(&other);
        record(&store, exp, 0);
        std::fs::copy(runlog::path_for(&other), &log).unwrap();
    }
    let store = Store::open(&path, true).unwrap();
    let aside = |d: &std::path::Path| {
        std::fs::read_dir(d)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .contains(".runlog.unfolded-")
            })
            .count()
    };
    assert!(!log.exists());
    assert_eq!(aside(dir.path()), 1);
    let exp = experiment(&store);
    record(&store, exp, 0);
    assert_eq!(walls(&store, exp), vec![0.5], "the store works");
    drop(store);
    // ... and a damaged one.
    std::fs::write(&log, "{not json\n{\"x\":1}\n").unwrap();
    let store = Store::open(&path, false).unwrap();
    assert!(!log.exists());
    assert_eq!(aside(dir.path()), 2);
    assert_eq!(walls(&store, 1), vec![0.5]);
}

#[test]
fn what_the_tables_would_refuse_is_refused_when_recorded_and_infinities_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (store, exp) = logging_store(&dir.path().join("s.db"));
    let run = |block: u32, samples: &[MetricSamples]| {
        store.record_run(&run_record(exp, block, 0, "a", RunResult::Ok(samples)))
    };
    let m = |name: &str, v: f64| MetricSamples {
        metric: name.into(),
        values: vec![v],
    };
    let e = run(0, &[m("wall", f64::NAN)]).unwrap_err().to_string();
    assert!(e.contains("NaN") && e.contains("block 0"), "{e}");
    let e = run(1, &[m("wall", 1.0), m("wall", 2.0)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("reported twice"), "{e}");
    run(2, &[m("wall", f64::INFINITY)]).unwrap();
    assert_eq!(walls(&store, exp), vec![f64::INFINITY]);
}

/// The complete lines of a run log file, without their newlines.
fn log_lines(log: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap();
    let text = text.split('\0').next().unwrap();
    text.lines().map(String::from).collect()
}

#[test]
fn the_runs_before_a_damaged_line_are_folded_and_the_rest_set_aside_with_one_warning() {
    let dir = tempfile::tempdir().unwrap();
    let kept = dir.path().join("kept");
    {
        let (store, exp) = logging_store(&dir.path().join("dead.db"));
        for block in 0..3 {
            record(&store, exp, block);
        }
        // What a SIGKILL leaves: the log file as it is, nothing folded.
        std::fs::copy(runlog::path_for(store.path()), &kept).unwrap();
    }
    let lines = log_lines(&kept);
    assert_eq!(lines.len(), 3);
    // The dead run's store, without the runs (dropping the store above
    // folded them into dead.db), and its log with a garbage line after
    // two runs.
    let path = dir.path().join("s.db");
    experiment(&Store::open(&path, true).unwrap());
    let log = runlog::path_for(&path);
    let rest = format!("garbage\n{}\n", lines[2]);
    std::fs::write(&log, format!("{}\n{}\n{rest}", lines[0], lines[1])).unwrap();

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sysdelta"))
        .arg("--store")
        .arg(&path)
        .arg("list")
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "one warning: {err}");
    let aside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".runlog.unfolded-"))
        .collect();
    assert_eq!(aside.len(), 1);
    let expected = format!(
        "sysdelta: warning: {}:3:1: not a run record (expected value); ",
        log.display()
    );
    assert!(err.starts_with(&expected), "{err}");
    assert!(
        err.trim_end().ends_with(&format!(
            "; 2 runs before it are in the store; lines 3-4 set aside in {}",
            aside[0].display()
        )),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&aside[0]).unwrap(),
        rest,
        "what was not folded"
    );
    assert!(!log.exists());
    let store = Store::open(&path, false).unwrap();
    assert_eq!(
        walls(&store, 1),
        vec![0.5, 1.5],
        "the runs before the damage"
    );
}
