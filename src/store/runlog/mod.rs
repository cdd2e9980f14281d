//! The run log: where a running experiment records each run, in one
//! `write`, before the next run starts; the store folds it into its SQLite
//! tables in batches.
//!
//! Why not one SQLite transaction per run: that commit wrote three B-tree
//! pages to the WAL (the run, its unique index, its samples), checksummed
//! and locked, and cost about 45 µs per run here: most of what sysdelta
//! added to each run beyond spawning and reaping it. An appended line costs
//! a few µs and is as safe against a crash of sysdelta: like a WAL commit
//! at `synchronous=NORMAL`, it is in the kernel's page cache once `write`
//! returns, so a SIGKILL loses at most the run in flight (a line the kill
//! cut short is dropped when the log is folded); a power loss may lose the
//! last runs in either case.
//!
//! The log of store `S` is `S.runlog`. Its lines are JSON [`RunRow`]s. It
//! is folded (one transaction, then emptied) at least once a second while
//! runs go on, before anything reads runs from the store, when the
//! experiment ends, and, after a crash, by the next sysdelta that opens the
//! store. Folding is idempotent: a row whose run is already stored (same
//! experiment, block and seq, as after a crash between a fold's commit and
//! the emptying of the log) is skipped.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, Result};
use serde::{Deserialize, Serialize};

use crate::metric::MetricSamples;
use crate::store::{RunRecord, RunResult};

mod contents;
mod file;
pub use contents::{Contents, Damage, Record};
pub use file::{RunLog, FOLD_AT_BYTES};

/// Fold at least this often while runs go on, so that a report of a
/// running experiment lags by at most about this much (runs this far apart
/// or more are folded one by one).
pub const FOLD_EVERY: Duration = Duration::from_secs(1);
/// ... and at least every this many runs, so that a fold stays short.
pub const FOLD_AT_ROWS: usize = 2048;

/// `<store>.runlog`, next to the store.
pub fn path_for(store: &Path) -> PathBuf {
    crate::store::Store::beside(store, ".runlog")
}

/// One run as the store keeps it: a [`RunRecord`] with owned fields and
/// its series already in their stored JSON form.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    pub experiment_id: i64,
    pub block: u32,
    pub seq: u32,
    pub config: String,
    pub workload: String,
    pub warmup: bool,
    pub started_at: f64,
    /// `ok` or `failed`.
    pub status: String,
    pub reason: Option<String>,
    pub stderr_tail: Option<String>,
    pub exit_code: Option<i32>,
    /// (metric, values as `f64::to_bits`: exact, and infinities survive
    /// JSON); empty for a failed run.
    pub samples: Vec<(String, Vec<u64>)>,
    /// (name, unit, t as JSON, v as JSON).
    pub series: Vec<(String, String, String, String)>,
    /// (symbol, kernel?, samples).
    pub profile: Vec<(String, bool, u64)>,
    /// The boot (`boots.id`) a guest ran this run in; None on the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot: Option<i64>,
}

/// Refuse, as the store's tables would, samples of run `r` that are NaN
/// or a metric reported twice: a fold holds many runs, and one bad row
/// must not hold back the rest.
pub fn check_samples(r: &RunRecord, s: &[MetricSamples]) -> Result<()> {
    let what = || {
        format!(
            "run block {} seq {} ({}/{})",
            r.block, r.seq, r.config, r.workload
        )
    };
    // Few metrics a run as a rule: compared pairwise, as a hash set per
    // run cost an import of 6,000 runs a millisecond.
    let mut names = std::collections::HashSet::new();
    let mut twice = |i: usize| match s.len() {
        0..=16 => s[..i].iter().any(|m| m.metric == s[i].metric),
        _ => !names.insert(s[i].metric.as_str()),
    };
    for (i, ms) in s.iter().enumerate() {
        if ms.values.iter().any(|v| v.is_nan()) {
            return Err(anyhow!(
                "{}: metric '{}' has a NaN value",
                what(),
                ms.metric
            ));
        }
        if twice(i) {
            return Err(anyhow!(
                "{}: metric '{}' is reported twice (a config kind and the workload may give it the same name)",
                what(),
                ms.metric
            ));
        }
    }
    Ok(())
}

impl RunRow {
    /// The row of a run; an error if a sample is not a finite number (the
    /// store keeps only numbers, and JSON could not carry it).
    pub fn of(r: &RunRecord) -> Result<RunRow> {
        let (status, reason, stderr_tail, exit_code, samples) = match &r.result {
            RunResult::Ok(s)
            | RunResult::Exited {
                samples: s,
                exit_code: _,
            } => {
                check_samples(r, s)?;
                let samples = s
                    .iter()
                    .map(|m| {
                        (
                            m.metric.clone(),
                            m.values.iter().map(|v| v.to_bits()).collect(),
                        )
                    })
                    .collect();
                let exit_code = match r.result {
                    RunResult::Exited { exit_code, .. } => Some(exit_code),
                    _ => None,
                };
                ("ok", None, None, exit_code, samples)
            }
            RunResult::Failed {
                reason,
                stderr_tail,
                exit_code,
            } => (
                "failed",
                Some(reason.to_string()),
                Some(stderr_tail.to_string()),
                *exit_code,
                Vec::new(),
            ),
        };
        let series = r
            .series
            .iter()
            .map(|s| {
                Ok((
                    s.name.clone(),
                    s.unit.clone(),
                    serde_json::to_string(&s.t)?,
                    serde_json::to_string(&s.v)?,
                ))
            })
            .collect::<Result<_>>()?;
        Ok(RunRow {
            experiment_id: r.experiment_id,
            block: r.block,
            seq: r.seq,
            config: r.config.to_string(),
            workload: r.workload.to_string(),
            warmup: r.warmup,
            started_at: r.started_at,
            status: status.into(),
            reason,
            stderr_tail,
            exit_code,
            samples,
            series,
            profile: r.profile.to_vec(),
            boot: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_rows(p: &Path) -> Result<Vec<RunRow>> {
        Contents::read(p)?.0.rows(p)
    }

    fn row(block: u32) -> RunRow {
        RunRow {
            experiment_id: 1,
            block,
            seq: 0,
            config: "a".into(),
            workload: "w".into(),
            warmup: false,
            started_at: 1.5,
            status: "ok".into(),
            reason: None,
            stderr_tail: None,
            exit_code: None,
            samples: vec![(
                "wall".into(),
                // Values a decimal round trip can get wrong by an ulp, and
                // one JSON has no number for.
                [
                    0.1 + 0.2,
                    1.0 / 3.0,
                    123_456_789.123_456_78,
                    f64::MAX,
                    f64::INFINITY,
                ]
                .iter()
                .map(|v| v.to_bits())
                .chain([0x41D6_F345_6789_ABCD])
                .collect(),
            )],
            series: vec![],
            profile: vec![],
            boot: None,
        }
    }

    /// Bytes `at..` of the file become `bytes`, as a copy cut short by a
    /// kill would leave them.
    fn scribble(p: &Path, at: usize, bytes: &[u8]) {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
        f.write_all_at(bytes, at as u64).unwrap();
    }

    #[test]
    fn rows_round_trip_exactly_and_a_torn_last_row_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let p = path_for(&dir.path().join("s.db"));
        let mut log = RunLog::open(&p).unwrap();
        log.append(row(0)).unwrap();
        log.append(row(1)).unwrap();
        assert_eq!(read_rows(&p).unwrap(), vec![row(0), row(1)]);
        assert_eq!(log.pending, vec![row(0), row(1)], "what a fold inserts");
        // A kill in the middle of the third copy: its start is there...
        let third = serde_json::to_vec(&row(2)).unwrap();
        scribble(&p, log.used(), &third[..20]);
        assert_eq!(read_rows(&p).unwrap(), vec![row(0), row(1)]);
        // ... or its end and newline, with a gap in the middle.
        let mut gap = third.clone();
        gap.push(b'\n');
        gap[10..30].fill(0);
        scribble(&p, log.used(), &gap);
        assert_eq!(read_rows(&p).unwrap(), vec![row(0), row(1)]);
        drop(log);

        // The next sysdelta keeps the complete rows, clears the cut one
        // and appends after them.
        let mut log = RunLog::open(&p).unwrap();
        assert_eq!(log.pending, vec![row(0), row(1)]);
        // A shorter row than the cut one: what remained of the cut row after
        // its gap must not show behind it.
        let short = RunRow {
            samples: vec![],
            ..row(3)
        };
        log.append(short.clone()).unwrap();
        assert_eq!(read_rows(&p).unwrap(), vec![row(0), row(1), short]);
        log.emptied().unwrap();
        assert!(read_rows(&p).unwrap().is_empty());
        log.append(row(4)).unwrap();
        assert_eq!(
            read_rows(&p).unwrap(),
            vec![row(4)],
            "rows start again after emptying"
        );
    }

    #[test]
    fn a_row_larger_than_the_file_grows_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = path_for(&dir.path().join("s.db"));
        let mut log = RunLog::open(&p).unwrap();
        let mut big = row(0);
        big.stderr_tail = Some("e".repeat(3 * file::INITIAL_BYTES));
        log.append(row(1)).unwrap();
        log.append(big.clone()).unwrap();
        log.append(row(2)).unwrap();
        assert_eq!(read_rows(&p).unwrap(), vec![row(1), big, row(2)]);
    }

    #[test]
    fn a_damaged_line_ends_the_records_and_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.db.runlog");
        let good = serde_json::to_string(&row(0)).unwrap();
        let text = format!("{good}\nnot json\n{good}\n{{\"torn");
        std::fs::write(&p, &text).unwrap();
        let (c, _) = Contents::read(&p).unwrap();
        assert_eq!(c.records.len(), 1, "the record before the damage");
        assert_eq!(c.records[0].row, row(0));
        let d = c.damage.clone().unwrap();
        assert_eq!((d.line, d.column, d.offset), (2, 2, good.len() + 1));
        assert_eq!(d.error, "expected ident", "without the position");
        assert_eq!((c.lines, c.end), (4, text.len()));
        let e = c.rows(&p).unwrap_err().to_string();
        assert!(e.contains("s.db.runlog:2:"), "{e}");
    }
}
