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
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use serde::{Deserialize, Serialize};

use super::{RunRecord, RunResult};

/// Fold at least this often while runs go on, so that a report of a
/// running experiment lags by at most about this much (runs this far apart
/// or more are folded one by one).
pub const FOLD_EVERY: Duration = Duration::from_secs(1);
/// ... and at least every this many runs, so that a fold stays short.
pub const FOLD_AT_ROWS: usize = 2048;

/// `<store>.runlog`, next to the store.
pub fn path_for(store: &Path) -> PathBuf {
    super::Store::beside(store, ".runlog")
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
                let what = || {
                    format!(
                        "run block {} seq {} ({}/{})",
                        r.block, r.seq, r.config, r.workload
                    )
                };
                let mut names = std::collections::HashSet::new();
                for ms in s.iter() {
                    // What the tables would refuse, refused now: a fold holds
                    // many runs, and one bad row must not hold back the rest.
                    if ms.values.iter().any(|v| v.is_nan()) {
                        return Err(anyhow!(
                            "{}: metric '{}' has a NaN value",
                            what(),
                            ms.metric
                        ));
                    }
                    if !names.insert(ms.metric.as_str()) {
                        return Err(anyhow!(
                            "{}: metric '{}' is reported twice (a config kind and the workload may give it the same name)",
                            what(),
                            ms.metric
                        ));
                    }
                }
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

/// Initial size of the log file, which is mapped into memory.
const INITIAL_BYTES: usize = 1 << 20;
/// Fold once the rows since the last fold take this much.
pub const FOLD_AT_BYTES: usize = 8 << 20;

/// The open log of a running experiment.
///
/// The file is mapped into memory (`MAP_SHARED`) and a row is appended
/// with a copy into the mapping: a write to the page cache without a system
/// call, as safe against a SIGKILL as `write`, since the pages belong to the
/// file, not the process. Why not `write`: right after a measured child ran,
/// sysdelta's caches are cold, and one `write` through ext4 took about
/// 7 µs there against 1 µs in a tight loop. The file is zero beyond the
/// rows, and JSON never holds a NUL byte, so a row the kill cut short is
/// recognised and dropped by [`Contents::parse`]. Where a file cannot be
/// mapped, rows are written with `pwrite` at the same offsets.
pub struct RunLog {
    path: PathBuf,
    file: File,
    map: Option<Mapping>,
    /// The file's length.
    cap: usize,
    /// Bytes of rows in the file.
    used: usize,
    /// The rows in the file, kept in memory too so that a fold need not
    /// read and parse them back; the file is for the next sysdelta after a
    /// crash.
    pub pending: Vec<RunRow>,
    last_fold: Instant,
    last_append: Instant,
    /// The last append came at least half of [`FOLD_EVERY`] after the one
    /// before: runs are slow, so each is folded at once (a report of the
    /// running experiment then lags by no run).
    slow: bool,
}

/// The file's bytes, mapped shared and writable.
struct Mapping {
    ptr: std::ptr::NonNull<std::ffi::c_void>,
    len: usize,
}

impl Mapping {
    fn new(file: &File, len: usize) -> Option<Mapping> {
        use nix::sys::mman::{mmap, MapFlags, ProtFlags};
        // SAFETY: a fresh shared mapping of our own file; it is only
        // accessed through `bytes` while this Mapping lives.
        let ptr = unsafe {
            mmap(
                None,
                std::num::NonZeroUsize::new(len)?,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                file,
                0,
            )
        }
        .ok()?;
        Some(Mapping { ptr, len })
    }

    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: `len` bytes mapped at `ptr`, writable, ours alone.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().cast(), self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `new` mapped.
        let _ = unsafe { nix::sys::mman::munmap(self.ptr, self.len) };
    }
}

impl RunLog {
    /// Open (create) the log. Rows a dead run left in it stay and are
    /// folded with the new ones; a row it cut short is cleared.
    pub fn open(path: &Path) -> Result<RunLog> {
        // Ours only (a link or another user's file is refused), made 0600.
        let mut file = crate::sys::trust::open_write(path, false).map_err(crate::error::bad)?;
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut file, &mut bytes)
            .with_context(|| format!("{}: cannot read the run log", path.display()))?;
        let contents = Contents::parse(&bytes);
        let used = contents.used;
        let pending = contents.rows(path)?;
        // Everything after the rows (a row a kill cut short, with gaps in
        // it or not) goes, so the file is zero beyond them again.
        file.set_len(used as u64)
            .with_context(|| format!("{}: cannot cut the run log", path.display()))?;
        let mut log = RunLog {
            path: path.to_path_buf(),
            file,
            map: None,
            cap: used,
            used,
            pending,
            last_fold: Instant::now(),
            last_append: Instant::now(),
            slow: false,
        };
        log.resize(bytes.len().max(INITIAL_BYTES))?;
        Ok(log)
    }

    /// Make the file `len` bytes long, its blocks allocated, and map it.
    /// Allocating first matters: a store of the mapping into a sparse page
    /// on a full disk would kill sysdelta with SIGBUS. Where allocation
    /// fails (full disk, or a file system without it), rows are written
    /// with `pwrite`, which reports a full disk as an error.
    fn resize(&mut self, len: usize) -> Result<()> {
        use nix::fcntl::{fallocate, FallocateFlags};
        self.map = None;
        let grown = fallocate(&self.file, FallocateFlags::empty(), 0, len as libc::off_t);
        if grown.is_err() {
            self.file
                .set_len(len as u64)
                .with_context(|| format!("{}: cannot size the run log", self.path.display()))?;
        }
        self.cap = len;
        if grown.is_ok() {
            self.map = Mapping::new(&self.file, len);
        }
        Ok(())
    }

    /// Zero bytes `from..to` of the file.
    fn zero(&mut self, from: usize, to: usize) -> Result<()> {
        if to <= from {
            return Ok(());
        }
        match self.map.as_mut() {
            Some(m) => m.bytes()[from..to].fill(0),
            None => {
                use std::os::unix::fs::FileExt;
                self.file.write_all_at(&vec![0; to - from], from as u64)?
            }
        }
        Ok(())
    }

    /// Append one row as one line.
    pub fn append(&mut self, row: RunRow) -> Result<()> {
        let mut line = serde_json::to_vec(&row)?;
        line.push(b'\n');
        let end = self.used + line.len();
        if end > self.cap {
            self.resize((2 * end).max(INITIAL_BYTES))?;
        }
        match self.map.as_mut() {
            Some(m) => m.bytes()[self.used..end].copy_from_slice(&line),
            None => {
                use std::os::unix::fs::FileExt;
                self.file
                    .write_all_at(&line, self.used as u64)
                    .with_context(|| format!("{}: cannot append a run", self.path.display()))?
            }
        }
        self.used = end;
        self.pending.push(row);
        self.slow = self.last_append.elapsed() >= FOLD_EVERY / 2;
        self.last_append = Instant::now();
        Ok(())
    }

    /// Whether a fold is due after this append.
    pub fn fold_due(&self) -> bool {
        self.slow
            || self.pending.len() >= FOLD_AT_ROWS
            || self.used >= FOLD_AT_BYTES
            || self.last_fold.elapsed() >= FOLD_EVERY
    }

    /// After the rows were committed to SQLite: clear them from the file
    /// (rows start again at its beginning).
    pub fn emptied(&mut self) -> Result<()> {
        self.zero(0, self.used)
            .with_context(|| format!("{}: cannot empty the run log", self.path.display()))?;
        self.used = 0;
        self.pending.clear();
        self.last_fold = Instant::now();
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The first `n` pending rows are in the tables (the store's writer
    /// said so). Once none is left the file is emptied; until then the
    /// stored rows stay in it too, which a fold after a crash skips.
    pub fn acked(&mut self, n: usize) -> Result<()> {
        self.pending.drain(..n.min(self.pending.len()));
        match self.pending.is_empty() {
            true => self.emptied(),
            false => Ok(()),
        }
    }

    /// Bytes of rows in the file (stored ones included).
    pub fn used(&self) -> usize {
        self.used
    }

    /// A fold failed (a server out of reach): the rows stay, and the next
    /// fold is due a full [`FOLD_EVERY`] from now, not at the next run.
    pub fn retry_later(&mut self) {
        self.last_fold = Instant::now();
        self.slow = false;
    }
}

/// One run record of a log file and where its line is.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// 1-based line number.
    pub line: usize,
    /// Byte offset of the line's start.
    pub offset: usize,
    pub row: RunRow,
}

/// The first complete line of a log file that is not a run record.
#[derive(Clone, Debug, PartialEq)]
pub struct Damage {
    pub line: usize,
    /// 1-based column where parsing it failed.
    pub column: usize,
    pub offset: usize,
    /// What is wrong there (the JSON parser's message, without position).
    pub error: String,
}

/// What a log file holds. The rows end at the first NUL byte (the file is
/// zero beyond them) or at the end of the file; a last line without its
/// newline was cut short by a crash while it was written (the run in
/// flight) and is not a record. A complete line that is not a record is
/// damage: the records before it are kept, nothing from it on is read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Contents {
    /// The records before the first damaged line, in file order.
    pub records: Vec<Record>,
    pub damage: Option<Damage>,
    /// Bytes of the complete lines (a torn last line starts here).
    pub used: usize,
    /// Bytes before the first NUL: the complete lines and a torn one.
    pub end: usize,
    /// Lines in `..end`, a torn last line included.
    pub lines: usize,
}

impl Contents {
    /// The contents of the log at `path`; a missing log holds nothing.
    pub fn read(path: &Path) -> Result<(Contents, Vec<u8>)> {
        // Only a log that is ours is read (never through a link).
        match crate::sys::trust::read(path) {
            Ok(Some(b)) => Ok((Contents::parse(&b), b)),
            Ok(None) => Ok((Contents::default(), Vec::new())),
            Err(e) => Err(anyhow!("cannot read the run log: {e}")),
        }
    }

    /// The contents of a log file's bytes; never fails, whatever they are.
    pub fn parse(bytes: &[u8]) -> Contents {
        let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
        let content = &bytes[..end];
        let used = content
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        let newlines = content[..used].iter().filter(|b| **b == b'\n').count();
        let mut contents = Contents {
            records: Vec::new(),
            damage: None,
            used,
            end,
            lines: newlines + usize::from(used < end),
        };
        let mut offset = 0;
        for (i, line) in content[..used].split(|b| *b == b'\n').enumerate() {
            let start = offset;
            offset += line.len() + 1;
            if line.is_empty() {
                continue;
            }
            match serde_json::from_slice(line) {
                Ok(row) => contents.records.push(Record {
                    line: i + 1,
                    offset: start,
                    row,
                }),
                Err(e) => {
                    let message = e.to_string();
                    let position = format!(" at line {} column {}", e.line(), e.column());
                    contents.damage = Some(Damage {
                        line: i + 1,
                        column: e.column(),
                        offset: start,
                        error: message
                            .strip_suffix(&position)
                            .unwrap_or(&message)
                            .to_string(),
                    });
                    break;
                }
            }
        }
        contents
    }

    /// The rows, or an error naming the damaged line if there is one.
    pub fn rows(self, path: &Path) -> Result<Vec<RunRow>> {
        if let Some(d) = &self.damage {
            return Err(anyhow!(
                "{}:{}:{}: not a run record ({}); the log is left as it is",
                path.display(),
                d.line,
                d.column,
                d.error
            ));
        }
        Ok(self.records.into_iter().map(|r| r.row).collect())
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
        scribble(&p, log.used, &third[..20]);
        assert_eq!(read_rows(&p).unwrap(), vec![row(0), row(1)]);
        // ... or its end and newline, with a gap in the middle.
        let mut gap = third.clone();
        gap.push(b'\n');
        gap[10..30].fill(0);
        scribble(&p, log.used, &gap);
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
        big.stderr_tail = Some("e".repeat(3 * INITIAL_BYTES));
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
