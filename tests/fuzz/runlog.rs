//! The fold of a dead run's log, fed anything: arbitrary bytes, and valid
//! logs with bytes changed, cut, inserted. Opening the store (which folds
//! the log) never panics and always succeeds, the runs stored before are
//! unchanged, no run that does not belong to the experiment gets in, the
//! database passes SQLite's integrity check, and the log never stays in
//! the way of the next open.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{create_experiment, run_record};
use proptest::prelude::*;
use sysdelta::metric::{Direction, MetricSpec};
use sysdelta::store::runlog::{self, RunRow};
use sysdelta::store::{RunRecord, RunResult, Store};
use sysdelta::workload::MetricSamples;

const CONFIGS: [&str; 2] = ["a", "b"];

/// A store holding experiment 1 (configs a and b, workload w) with the
/// runs of blocks 0 and 1 stored.
fn template(path: &Path) {
    let store = Store::open(path, true).unwrap();
    let wall = MetricSpec::new("wall", "s", Direction::Lower);
    let exp = create_experiment(&store, "fuzz", &CONFIGS, 4, &[wall]);
    for block in 0..2 {
        for (seq, config) in CONFIGS.iter().enumerate() {
            let samples = [MetricSamples {
                metric: "wall".into(),
                values: vec![f64::from(block) + 0.5],
            }];
            store
                .record_run(&RunRecord {
                    started_at: 1.0,
                    ..run_record(exp, block, seq as u32, config, RunResult::Ok(&samples))
                })
                .unwrap();
        }
    }
}

/// Experiment 1's runs as the store gives them, one JSON value per run,
/// by (block, seq).
fn runs(store: &Store) -> BTreeMap<(u32, u32), serde_json::Value> {
    store
        .load(1)
        .unwrap()
        .runs
        .iter()
        .map(|r| ((r.block, r.seq), serde_json::to_value(r).unwrap()))
        .collect()
}

/// A run log line as a running sysdelta writes it.
fn line(block: u32, seq: u32, config: &str, value: f64) -> Vec<u8> {
    let row = RunRow {
        experiment_id: 1,
        block,
        seq,
        config: config.into(),
        workload: "w".into(),
        warmup: false,
        started_at: 2.0,
        status: "ok".into(),
        reason: None,
        stderr_tail: None,
        exit_code: None,
        samples: vec![("wall".into(), vec![value.to_bits()])],
        series: vec![],
        profile: vec![],
        boot: None,
    };
    let mut l = serde_json::to_vec(&row).unwrap();
    l.push(b'\n');
    l
}

/// One change to a log's bytes at a position (taken modulo its length).
#[derive(Clone, Debug)]
enum Edit {
    Set(usize, u8),
    Insert(usize, u8),
    Remove(usize),
    CutAt(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
        // Bytes that matter to the format more often than one in 256.
        (
            any::<usize>(),
            prop::sample::select(vec![b'\n', 0, b'"', b'1', b'}'])
        )
            .prop_map(|(i, b)| Edit::Insert(i, b)),
        any::<usize>().prop_map(Edit::Remove),
        any::<usize>().prop_map(Edit::CutAt),
    ]
}

fn apply(bytes: &mut Vec<u8>, e: &Edit) {
    if bytes.is_empty() {
        return;
    }
    let at = |i: usize| i % bytes.len();
    match *e {
        Edit::Set(i, b) => {
            let i = at(i);
            bytes[i] = b;
        }
        Edit::Insert(i, b) => {
            let i = at(i);
            bytes.insert(i, b);
        }
        Edit::Remove(i) => {
            let i = at(i);
            bytes.remove(i);
        }
        Edit::CutAt(i) => {
            let i = at(i);
            bytes.truncate(i);
        }
    }
}

/// A valid log of runs (some already stored, some new), then edited.
fn edited_log() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec((0u32..4, 0u32..2, -1e3f64..1e3), 0..8),
        prop::collection::vec(edit(), 0..4),
    )
        .prop_map(|(rows, edits)| {
            let mut bytes: Vec<u8> = rows
                .iter()
                .flat_map(|&(block, seq, v)| line(block, seq, CONFIGS[seq as usize], v))
                .collect();
            for e in &edits {
                apply(&mut bytes, e);
            }
            bytes
        })
}

fn log_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..512),
        edited_log(),
        edited_log(),
        edited_log(),
    ]
}

/// A directory on tmpfs where there is one: each case commits and
/// checkpoints, and a disk's fsyncs would make the cases wait on it.
fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::tempdir_in(shm) {
            return d;
        }
    }
    tempfile::tempdir().unwrap()
}

#[test]
fn folding_any_log_keeps_the_store_intact() {
    let dir = scratch();
    let made = dir.path().join("template.db");
    template(&made);
    let stored = std::fs::read(&made).unwrap();
    let before = runs(&Store::open(&made, false).unwrap());
    let path = dir.path().join("s.db");
    let log = runlog::path_for(&path);
    let config = ProptestConfig {
        cases: 2048,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let outcome = proptest::test_runner::TestRunner::new(config).run(&log_bytes(), |bytes| {
        std::fs::write(&path, &stored).unwrap();
        std::fs::write(&log, &bytes).unwrap();

        let store = Store::open(&path, false).unwrap();
        let after = runs(&store);
        for (slot, run) in &before {
            prop_assert_eq!(
                after.get(slot),
                Some(run),
                "stored run {:?} unchanged",
                slot
            );
        }
        for (slot, run) in &after {
            prop_assert!(
                CONFIGS.contains(&run["config"].as_str().unwrap())
                    && run["workload"] == "w"
                    && (run["status"] == "ok" || run["status"] == "failed"),
                "run {:?} belongs to the experiment: {}",
                slot,
                run
            );
        }
        prop_assert!(!log.exists(), "the log is folded or set aside");
        drop(store);
        let check: String = rusqlite::Connection::open(&path)
            .unwrap()
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        prop_assert_eq!(check, "ok");
        prop_assert_eq!(runs(&Store::open(&path, false).unwrap()), after);
        // The next case starts from the template again.
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let p = entry.unwrap().path();
            if p != made {
                std::fs::remove_file(p).unwrap();
            }
        }
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
}
