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

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use serde::{Deserialize, Serialize};

use super::{RunRecord, RunResult};

/// Fold at least this often while runs go on, so that a report of a
/// running experiment lags by at most about this much.
pub const FOLD_EVERY: Duration = Duration::from_secs(1);
/// ... and at least every this many runs, so that a fold stays short.
pub const FOLD_AT_ROWS: usize = 2048;

/// `<store>.runlog`, next to the store.
pub fn path_for(store: &Path) -> PathBuf {
    let mut p = store.as_os_str().to_owned();
    p.push(".runlog");
    PathBuf::from(p)
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
    /// (metric, values); empty for a failed run.
    pub samples: Vec<(String, Vec<f64>)>,
    /// (name, unit, t as JSON, v as JSON).
    pub series: Vec<(String, String, String, String)>,
    /// (symbol, kernel?, samples).
    pub profile: Vec<(String, bool, u64)>,
}

impl RunRow {
    /// The row of a run; an error if a sample is not a finite number (the
    /// store keeps only numbers, and JSON could not carry it).
    pub fn of(r: &RunRecord) -> Result<RunRow> {
        let (status, reason, stderr_tail, exit_code, samples) = match &r.result {
            RunResult::Ok(s) => {
                for ms in s.iter() {
                    if let Some(v) = ms.values.iter().find(|v| !v.is_finite()) {
                        return Err(anyhow!(
                            "run block {} seq {} ({}/{}): metric '{}' has the value {v}, not a finite number",
                            r.block, r.seq, r.config, r.workload, ms.metric
                        ));
                    }
                }
                let samples = s
                    .iter()
                    .map(|m| (m.metric.clone(), m.values.clone()))
                    .collect();
                ("ok", None, None, None, samples)
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
        })
    }
}

/// The open log of a running experiment.
pub struct RunLog {
    path: PathBuf,
    file: File,
    /// Rows appended since the last fold.
    pub pending: usize,
    pub last_fold: Instant,
}

impl RunLog {
    /// Open (create) the log for appending. Rows a dead run left in it stay
    /// and are folded with the new ones.
    pub fn open(path: &Path) -> Result<RunLog> {
        let file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .with_context(|| format!("{}: cannot open the run log", path.display()))?;
        let pending = file.metadata().map(|m| (m.len() > 0) as usize)?;
        Ok(RunLog {
            path: path.to_path_buf(),
            file,
            pending,
            last_fold: Instant::now(),
        })
    }

    /// Append one row as one line, in one `write` for any ordinary row.
    pub fn append(&mut self, row: &RunRow) -> Result<()> {
        let mut line = serde_json::to_vec(row)?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .with_context(|| format!("{}: cannot append a run", self.path.display()))?;
        self.pending += 1;
        Ok(())
    }

    /// Whether a fold is due after this append.
    pub fn fold_due(&self) -> bool {
        self.pending >= FOLD_AT_ROWS || self.last_fold.elapsed() >= FOLD_EVERY
    }

    /// After the rows were committed to SQLite: empty the log. Appends
    /// continue at its (new) end, since it is open for appending.
    pub fn emptied(&mut self) -> Result<()> {
        self.file
            .set_len(0)
            .with_context(|| format!("{}: cannot empty the run log", self.path.display()))?;
        self.pending = 0;
        self.last_fold = Instant::now();
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The rows of a log file. A last line without its newline was cut short
/// by a crash while it was written (the run in flight): it is dropped. Any
/// other line that does not parse is an error naming file and line.
pub fn read_rows(path: &Path) -> Result<Vec<RunRow>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(anyhow!("{}: cannot read the run log: {e}", path.display())),
    };
    let complete = match bytes.iter().rposition(|b| *b == b'\n') {
        Some(i) => &bytes[..=i],
        None => &[][..],
    };
    complete
        .split(|b| *b == b'\n')
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(i, l)| {
            serde_json::from_slice(l).map_err(|e| {
                anyhow!(
                    "{}:{}: unreadable run record ({e}); the log is left as it is",
                    path.display(),
                    i + 1
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
                vec![0.1 + 0.2, 1e-300, 123_456_789.123_456_78, f64::MAX],
            )],
            series: vec![],
            profile: vec![],
        }
    }

    #[test]
    fn rows_round_trip_exactly_and_a_torn_last_line_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let p = path_for(&dir.path().join("s.db"));
        let mut log = RunLog::open(&p).unwrap();
        log.append(&row(0)).unwrap();
        log.append(&row(1)).unwrap();
        // What a kill in the middle of the third write leaves.
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(br#"{"experiment_id":1,"blo"#).unwrap();
        let rows = read_rows(&p).unwrap();
        assert_eq!(rows, vec![row(0), row(1)]);
        log.emptied().unwrap();
        assert!(read_rows(&p).unwrap().is_empty());
        log.append(&row(2)).unwrap();
        assert_eq!(
            read_rows(&p).unwrap(),
            vec![row(2)],
            "appends go on after emptying"
        );
    }

    #[test]
    fn a_damaged_line_before_the_end_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.db.runlog");
        let good = serde_json::to_string(&row(0)).unwrap();
        std::fs::write(&p, format!("{good}\nnot json\n{good}\n")).unwrap();
        let e = read_rows(&p).unwrap_err().to_string();
        assert!(e.contains("s.db.runlog:2:"), "{e}");
    }
}
