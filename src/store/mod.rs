//! The SQLite store: experiments, runs and every raw sample.
//!
//! While an experiment runs, each run is appended to the store's run log
//! (`runlog`) before the next run starts, so a SIGKILL loses at most the run
//! in flight, and the log is folded into the tables (WAL mode,
//! `synchronous=NORMAL`) in one transaction at least once a second, before
//! any read of runs, and at the end; the next sysdelta to open the store
//! folds what a dead run left. Outside a run, each run is its own
//! transaction; an import is stored whole in one (`whole`). Opening a file
//! that is not a sysdelta store, or one with a newer schema, is refused
//! before anything is written to it; so is opening an empty file to read
//! it. A store this process cannot write (another user's, a read-only
//! mount) is opened read-only, and then nothing is written in or next to
//! it.

pub mod boots;
pub mod lock;
pub mod peek;
pub mod runlog;
pub mod schema;
pub mod whole;

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use serde::Serialize;

use crate::error::bad;
use crate::metric::MetricSamples;
use crate::metric::{Direction, MetricSpec};
use crate::overrides::{Order, Overrides};
pub use boots::{BootEnd, StoredBoot};

pub const DEFAULT_PATH: &str = "sysdelta.db";

pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// Open while an experiment runs: where [`Store::record_run`] appends.
    log: RefCell<Option<runlog::RunLog>>,
    /// Why this process cannot write the store, if it cannot: it is then
    /// open read-only (see [`Store::open`]).
    read_only: Option<String>,
}

pub struct NewExperiment<'a> {
    pub name: &'a str,
    pub label: Option<&'a str>,
    pub plan_source: &'a str,
    pub plan_text: &'a str,
    pub overrides: &'a Overrides,
    pub host: &'a str,
    pub fingerprint: &'a BTreeMap<String, String>,
    pub seed: u64,
    pub order: Order,
    pub runs: u32,
    pub warmup: u32,
    pub baseline: &'a str,
    pub configs: Vec<String>,
    pub workloads: Vec<String>,
}

/// A time series a monitor or workload recorded during one run.
#[derive(Clone, Debug, Serialize)]
pub struct SeriesRecord {
    pub name: String,
    pub unit: String,
    pub t: Vec<f64>,
    pub v: Vec<f64>,
}

pub enum RunResult<'a> {
    Ok(&'a [MetricSamples]),
    Failed {
        reason: &'a str,
        stderr_tail: &'a str,
        exit_code: Option<i32>,
    },
}

pub struct RunRecord<'a> {
    pub experiment_id: i64,
    pub block: u32,
    pub seq: u32,
    pub config: &'a str,
    pub workload: &'a str,
    pub warmup: bool,
    pub started_at: f64,
    pub result: RunResult<'a>,
    pub series: &'a [SeriesRecord],
    /// Profile samples: (symbol, kernel?, count).
    pub profile: &'a [(String, bool, u64)],
}

#[derive(Clone, Debug, Serialize)]
pub struct ExperimentInfo {
    pub id: i64,
    pub name: String,
    pub label: Option<String>,
    pub plan_source: String,
    pub plan_text: String,
    pub overrides: Overrides,
    pub host: String,
    pub fingerprint: BTreeMap<String, String>,
    pub seed: u64,
    pub order: String,
    pub runs_per_cell: u32,
    pub warmup: u32,
    pub baseline: String,
    pub created_at: String,
    pub finished_at: Option<String>,
    pub status: String,
    pub entered_config: Option<String>,
    pub self_usage: Option<serde_json::Value>,
    pub configs: Vec<String>,
    pub workloads: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct StoredRun {
    pub id: i64,
    pub block: u32,
    pub seq: u32,
    pub config: String,
    pub workload: String,
    pub warmup: bool,
    pub status: String,
    pub reason: Option<String>,
    pub stderr_tail: Option<String>,
    pub exit_code: Option<i32>,
    pub started_at: f64,
    pub samples: BTreeMap<String, Vec<f64>>,
    /// The boot (`boots.id`) a run of a kernel config ran in; None on the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<i64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct StoredMetric {
    pub workload: String,
    #[serde(flatten)]
    pub spec: MetricSpec,
}

#[derive(Clone, Debug, Serialize)]
pub struct Event {
    pub at: String,
    pub kind: String,
    pub message: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct ExperimentData {
    pub info: ExperimentInfo,
    pub metrics: Vec<StoredMetric>,
    pub runs: Vec<StoredRun>,
    pub events: Vec<Event>,
    /// Time series recorded during runs: (run id, series).
    pub series: Vec<(i64, SeriesRecord)>,
    /// Profile samples of measured runs summed per config:
    /// (config, symbol, kernel?, samples).
    pub profiles: Vec<(String, String, bool, u64)>,
    /// Boots of kernel configs, in the order they ran (empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub boots: Vec<StoredBoot>,
}

impl Store {
    /// Open a store. With `create` (commands that write: run, import), a
    /// missing file becomes a new store, and a store this process cannot
    /// write is refused. Without (commands that read), a missing or empty
    /// file is bad input, and a store this process cannot write is opened
    /// read-only: nothing is migrated or folded, and not a byte is written
    /// in or next to it.
    pub fn open(path: &Path, create: bool) -> Result<Store> {
        let p = path.display();
        if create && !path.exists() && Store::why_not_writable(path, false).is_none() {
            Store::create_whole(path)?;
        }
        let exists = path.exists();
        if !exists && !create {
            return Err(bad(format!(
                "{p}: no such store (run an experiment first, or pass --store)"
            )));
        }
        if exists && path.is_dir() {
            return Err(bad(format!("{p}: is a directory, not a sysdelta store")));
        }
        // SQLite reads an empty file as an empty database, and the
        // migrations would then write a schema into it.
        if exists && !create && std::fs::metadata(path).is_ok_and(|m| m.len() == 0) {
            return Err(bad(format!("{p}: not a sysdelta store (empty file)")));
        }
        let read_only = Store::why_not_writable(path, exists);
        if let (Some(why), true) = (&read_only, create) {
            return Err(bad(format!("{p}: cannot write the store ({why})")));
        }
        let conn = match read_only {
            None => Connection::open_with_flags(
                path,
                if exists {
                    OpenFlags::SQLITE_OPEN_READ_WRITE
                } else {
                    OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE
                } | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            ),
            Some(_) => Store::connect_read_only(path),
        }
        .map_err(|e| bad(format!("{p}: cannot open store: {e}")))?;
        let store = Store {
            conn,
            path: path.to_path_buf(),
            log: RefCell::new(None),
            read_only,
        };
        store.check_and_migrate(create)?;
        store.fold_orphaned_log()?;
        Ok(store)
    }

    /// Make a new store at `path` whole or not at all: its schema is
    /// written to a file beside it, which is then linked into place, so a
    /// kill during the creation never leaves a half-made store that every
    /// later command refuses. A store another process made meanwhile is
    /// kept (the link fails, and that one is used).
    fn create_whole(path: &Path) -> Result<()> {
        let tmp = Store::beside(path, &format!(".creating-{}", std::process::id()));
        let remove_tmp = || {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let mut f = tmp.clone().into_os_string();
                f.push(suffix);
                let _ = std::fs::remove_file(f);
            }
        };
        remove_tmp();
        let made = (|| -> Result<()> {
            let conn = Connection::open_with_flags(
                &tmp,
                OpenFlags::SQLITE_OPEN_READ_WRITE
                    | OpenFlags::SQLITE_OPEN_CREATE
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(|e| bad(format!("{}: cannot create store: {e}", path.display())))?;
            let store = Store {
                conn,
                path: tmp.clone(),
                log: RefCell::new(None),
                read_only: None,
            };
            store.check_and_migrate(true)?;
            // Closing the only connection checkpoints the WAL into the file.
            drop(store);
            match std::fs::hard_link(&tmp, path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
                Err(e) => Err(bad(format!("{}: cannot create store: {e}", path.display()))),
            }
        })();
        remove_tmp();
        made
    }

    /// Why this process cannot write the store at `path`: the file, or
    /// the directory where SQLite keeps its `-wal` and `-shm` files and
    /// sysdelta the run log. None when it can.
    fn why_not_writable(path: &Path, exists: bool) -> Option<String> {
        use nix::unistd::{access, AccessFlags};
        let file = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        if exists {
            if let Err(e) = access(&file, AccessFlags::W_OK) {
                return Some(format!(
                    "no write access to {}: {}",
                    file.display(),
                    e.desc()
                ));
            }
        }
        let dir = file.parent().unwrap_or(Path::new("/"));
        access(dir, AccessFlags::W_OK | AccessFlags::X_OK)
            .err()
            .map(|e| {
                format!(
                    "no write access to its directory {}: {}",
                    dir.display(),
                    e.desc()
                )
            })
    }

    /// A read-only connection that writes nothing in or next to the store
    /// (see [`read_only_connection`]), after one warning if the store's
    /// last changes are in a `-wal` it cannot read.
    fn connect_read_only(path: &Path) -> rusqlite::Result<Connection> {
        let wal = Store::beside(path, "-wal");
        if !wal_is_shared(path) && std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
            eprintln!(
                "sysdelta: warning: {}: the store's last changes are in its write-ahead log, which cannot be read without write access; they are not shown until someone with write access opens the store",
                wal.display()
            );
        }
        read_only_connection(path)
    }

    /// Fold the run log a dead `sysdelta run` left, unless a live one holds
    /// the store (it folds its own log; a reader then sees the runs up to
    /// its last fold, at most about a second old). Best effort, so that a
    /// log never stands in the way of the store: its records are folded up
    /// to the first that is damaged or does not belong to this store, and
    /// the lines from there on are set aside (see [`Store::set_aside`]).
    /// A store opened read-only folds nothing and says that the log's runs
    /// are not shown.
    fn fold_orphaned_log(&self) -> Result<()> {
        let log = runlog::path_for(&self.path);
        if !log.exists() {
            return Ok(());
        }
        let Ok(Some(_lock)) = Store::try_lock(&self.path) else {
            return Ok(());
        };
        let (contents, bytes) = match runlog::Contents::read(&log) {
            Ok(read) => read,
            Err(e) => {
                eprintln!("sysdelta: warning: {e:#}; the runs in it are not in the store");
                return Ok(());
            }
        };
        if let Some(why) = &self.read_only {
            return self.warn_not_folded(&log, &contents, why);
        }
        let refused = match self.fold_records(&contents.records) {
            Ok(refused) => refused,
            Err(e) => {
                eprintln!(
                    "sysdelta: warning: {}: the runs a stopped sysdelta left could not be added to the store ({e:#}); the log stays for the next open",
                    log.display()
                );
                return Ok(());
            }
        };
        // The first line not folded: a record the store refused (records
        // all come before a damaged line), else the damaged line.
        let (folded, first_unfolded) = match (refused, &contents.damage) {
            (Some((i, e)), _) => {
                let r = &contents.records[i];
                let what = format!("{}:{}: {e:#}", log.display(), r.line);
                (i, Some((r.line, r.offset, what)))
            }
            (None, Some(d)) => {
                let what = format!(
                    "{}:{}:{}: not a run record ({})",
                    log.display(),
                    d.line,
                    d.column,
                    d.error
                );
                (contents.records.len(), Some((d.line, d.offset, what)))
            }
            (None, None) => (contents.records.len(), None),
        };
        match first_unfolded {
            None => std::fs::remove_file(&log)
                .with_context(|| format!("{}: cannot remove the folded run log", log.display())),
            Some((line, offset, what)) => {
                let lines = line..=contents.lines;
                let rest = &bytes[offset..contents.end];
                Store::set_aside(&log, rest, lines, folded, &what);
                Ok(())
            }
        }
    }

    /// Keep `rest`, lines `lines` of a dead run's log that were not folded,
    /// as `<log>.unfolded-<time>`, remove the log, and say in one warning
    /// what was wrong at the first of them (`what`), how many runs before
    /// it are in the store, and what was set aside where. If that fails
    /// the log stays, and the next open folds it again (adding nothing
    /// twice).
    ///
    /// The records after the first unfolded line are set aside too, not
    /// folded: the log is written in order by one process, and a crash
    /// tears at most its last line (which is no record, and dropped). A
    /// complete line that is not a record, or that the store refuses, is
    /// damage from outside (a bad block, an editor, a second writer), and
    /// nothing tells how far it goes: a changed digit in a sample still
    /// parses. A wrong sample in the store is worse than a missing one,
    /// which `--resume` measures again.
    fn set_aside(
        log: &Path,
        rest: &[u8],
        lines: std::ops::RangeInclusive<usize>,
        folded: usize,
        what: &str,
    ) {
        let aside = aside_path(log);
        let moved = std::fs::write(&aside, rest).and_then(|()| std::fs::remove_file(log));
        let lines = if lines.start() == lines.end() {
            format!("line {}", lines.start())
        } else {
            format!("lines {}-{}", lines.start(), lines.end())
        };
        eprintln!(
            "sysdelta: warning: {what}; {} before it {} in the store; {}",
            plural(folded, "run"),
            if folded == 1 { "is" } else { "are" },
            match moved {
                Ok(()) => format!("{lines} set aside in {}", aside.display()),
                Err(e) => format!(
                    "{lines} could not be set aside in {} ({e}) and stay in the log",
                    aside.display()
                ),
            }
        );
    }

    /// What a read-only store says about a dead run's log it cannot fold:
    /// one warning, if the log holds runs the store does not.
    fn warn_not_folded(&self, log: &Path, contents: &runlog::Contents, why: &str) -> Result<()> {
        let mut stored = self.conn.prepare_cached(
            "SELECT 1 FROM runs WHERE experiment_id = ?1 AND block = ?2 AND seq = ?3",
        )?;
        let mut missing = 0;
        for r in &contents.records {
            if !stored.exists(params![r.row.experiment_id, r.row.block, r.row.seq])? {
                missing += 1;
            }
        }
        if missing > 0 {
            eprintln!(
                "sysdelta: warning: {}: {} a stopped sysdelta left {} not in the store and not shown until someone with write access opens it ({why})",
                log.display(),
                plural(missing, "run"),
                if missing == 1 { "is" } else { "are" },
            );
        }
        Ok(())
    }

    /// Insert a dead run's records in file order, in one transaction, up
    /// to the first the store refuses (see [`Store::check_fits`]): its
    /// index and why, if there is one. Each record has its own savepoint,
    /// so a refused one leaves nothing behind.
    fn fold_records(&self, records: &[runlog::Record]) -> Result<Option<(usize, anyhow::Error)>> {
        if records.is_empty() {
            return Ok(None);
        }
        self.in_transaction(|| {
            for (i, record) in records.iter().enumerate() {
                self.conn.execute_batch("SAVEPOINT fold_record")?;
                let inserted = self
                    .check_fits(&record.row)
                    .and_then(|()| self.insert_row(&record.row));
                if let Err(e) = inserted {
                    self.conn
                        .execute_batch("ROLLBACK TO fold_record; RELEASE fold_record")?;
                    return Ok(Some((i, e)));
                }
                self.conn.execute_batch("RELEASE fold_record")?;
            }
            Ok(None)
        })
    }

    /// A record of a dead run's log belongs in the store: its experiment,
    /// config and workload are there, its status is one the store knows,
    /// and no sample is NaN. A log found after a crash may be damaged in
    /// ways JSON still parses; the running sysdelta's own rows need no
    /// such check.
    fn check_fits(&self, r: &runlog::RunRow) -> Result<()> {
        let exp = r.experiment_id;
        let has = |sql: &str, name: &str| -> Result<bool> {
            Ok(self.conn.prepare_cached(sql)?.exists(params![exp, name])?)
        };
        if !self
            .conn
            .prepare_cached("SELECT 1 FROM experiments WHERE id = ?1")?
            .exists([exp])?
        {
            return Err(anyhow::anyhow!("experiment {exp} is not in this store"));
        }
        if !has(
            "SELECT 1 FROM configs WHERE experiment_id = ?1 AND name = ?2",
            &r.config,
        )? {
            return Err(anyhow::anyhow!(
                "config '{}' is not one of experiment {exp}'s",
                r.config
            ));
        }
        if !has(
            "SELECT 1 FROM workloads WHERE experiment_id = ?1 AND name = ?2",
            &r.workload,
        )? {
            return Err(anyhow::anyhow!(
                "workload '{}' is not one of experiment {exp}'s",
                r.workload
            ));
        }
        if r.status != "ok" && r.status != "failed" {
            return Err(anyhow::anyhow!(
                "run status '{}' is neither ok nor failed",
                r.status
            ));
        }
        if let Some((metric, _)) = r
            .samples
            .iter()
            .find(|(_, bits)| bits.iter().any(|b| f64::from_bits(*b).is_nan()))
        {
            return Err(anyhow::anyhow!("metric '{metric}' has a NaN sample"));
        }
        Ok(())
    }

    /// From now on [`Store::record_run`] appends to the run log (opened or
    /// created next to the store) instead of committing each run. The
    /// caller holds the store's lock for as long as the log is open.
    pub fn log_runs(&self) -> Result<()> {
        let log = runlog::RunLog::open(&runlog::path_for(&self.path))?;
        *self.log.borrow_mut() = Some(log);
        self.flush_runs()
    }

    /// Fold the run log into the tables now, if it holds anything.
    pub fn flush_runs(&self) -> Result<()> {
        let mut guard = self.log.borrow_mut();
        let Some(log) = guard.as_mut() else {
            return Ok(());
        };
        if log.pending.is_empty() {
            return Ok(());
        }
        self.fold_rows(&log.pending)?;
        log.emptied()
    }

    /// Fold what is left, remove the log file, and go back to committing
    /// each run. The log stays if the fold fails, for the next open.
    pub fn close_run_log(&self) -> Result<()> {
        self.flush_runs()?;
        if let Some(log) = self.log.borrow_mut().take() {
            match std::fs::remove_file(log.path()) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(e).with_context(|| {
                        format!("{}: cannot remove the folded run log", log.path().display())
                    })
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Insert rows in one transaction; a row whose run is already stored is
    /// skipped, which makes a repeated fold harmless.
    fn fold_rows(&self, rows: &[runlog::RunRow]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        self.in_transaction(|| {
            for row in rows {
                self.insert_row(row)?;
            }
            Ok(())
        })
    }

    /// Run `f` inside BEGIN ... COMMIT; roll back if either fails.
    fn in_transaction<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.conn.prepare_cached("BEGIN")?.execute([])?;
        let committed = f().and_then(|v| {
            self.conn.prepare_cached("COMMIT")?.execute([])?;
            Ok(v)
        });
        if committed.is_err() && !self.conn.is_autocommit() {
            // Never leave the transaction open: later writes (the next run,
            // the experiment's status) would go into it and be lost.
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        committed
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `<store><suffix>` as an absolute path: the files kept next to a
    /// store (its run log, state journal, setup environment, step file).
    /// Absolute, because shells that may have changed directory write some.
    pub fn beside(store: &Path, suffix: &str) -> PathBuf {
        let mut p = std::path::absolute(store)
            .unwrap_or_else(|_| store.to_path_buf())
            .into_os_string();
        p.push(suffix);
        PathBuf::from(p)
    }

    /// The store's exclusive lock (flock on the store file itself; SQLite's
    /// own locks are fcntl locks and independent of it), if no other
    /// process holds it. `run` and `restore` hold it throughout; a command
    /// that folds a dead run's log holds it while it does.
    pub fn try_lock(store: &Path) -> std::io::Result<Option<nix::fcntl::Flock<std::fs::File>>> {
        let f = std::fs::File::open(store)?;
        Ok(nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock).ok())
    }

    /// Refuse what is not a sysdelta store this sysdelta can read, and
    /// bring an older schema up to date. Only `create` (a writer) makes a
    /// store of an SQLite database without tables; a read-only store is
    /// never changed: one that needs a migration is refused.
    fn check_and_migrate(&self, create: bool) -> Result<()> {
        let p = self.path.display();
        self.conn.busy_timeout(std::time::Duration::from_secs(10))?;
        // Reading the schema is the first access: a file that is not SQLite fails here, untouched.
        let tables: Vec<String> = self
            .conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| bad(format!("{p}: not a sysdelta store ({e})")))?;
        let version: i64 = if tables.iter().any(|t| t == "meta") {
            let app: Option<String> = self
                .conn
                .query_row("SELECT value FROM meta WHERE key = 'app'", [], |r| r.get(0))
                .optional()
                .map_err(|e| bad(format!("{p}: not a sysdelta store ({e})")))?;
            if app.as_deref() != Some(schema::APP_ID) {
                return Err(bad(format!(
                    "{p}: not a sysdelta store (its meta table belongs to something else)"
                )));
            }
            let v: String = self
                .conn
                .query_row(
                    "SELECT value FROM meta WHERE key = 'schema_version'",
                    [],
                    |r| r.get(0),
                )
                .map_err(|e| {
                    bad(format!(
                        "{p}: damaged sysdelta store, no schema version ({e})"
                    ))
                })?;
            v.parse()
                .map_err(|_| bad(format!("{p}: damaged sysdelta store, schema version '{v}'")))?
        } else if tables.is_empty() && create {
            0
        } else if tables.is_empty() {
            return Err(bad(format!(
                "{p}: not a sysdelta store (an SQLite database without tables)"
            )));
        } else {
            return Err(bad(format!(
                "{p}: not a sysdelta store (an SQLite database with other tables: {})",
                tables.join(", ")
            )));
        };
        let known = schema::MIGRATIONS.len() as i64;
        if version > known {
            return Err(bad(format!(
                "{p}: store schema v{version} is newer than this sysdelta understands (v{known}); upgrade sysdelta"
            )));
        }
        if let Some(why) = &self.read_only {
            if version < known {
                return Err(bad(format!(
                    "{p}: store schema v{version} must be upgraded to v{known} before this sysdelta can read it, which needs write access ({why})"
                )));
            }
            return Ok(());
        }
        self.conn
            .pragma_update(None, "journal_mode", "WAL")
            .context("setting WAL mode")?;
        self.conn.pragma_update(None, "synchronous", "NORMAL")?;
        self.conn.pragma_update(None, "foreign_keys", "ON")?;
        if version < known {
            let tx = self.conn.unchecked_transaction()?;
            for (i, m) in schema::MIGRATIONS.iter().enumerate().skip(version as usize) {
                tx.execute_batch(m)
                    .with_context(|| format!("migrating store to v{}", i + 1))?;
            }
            tx.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('app', ?1)",
                [schema::APP_ID],
            )?;
            tx.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?1)",
                [known.to_string()],
            )?;
            tx.commit()?;
        }
        Ok(())
    }

    pub fn create_experiment(&self, e: &NewExperiment) -> Result<i64> {
        let tx = self.conn.unchecked_transaction()?;
        let id = insert_experiment(&tx, e, None)?;
        tx.commit()?;
        Ok(id)
    }

    /// Declare metrics of a workload (idempotent; keeps the first order seen).
    pub fn declare_metrics(&self, exp: i64, workload: &str, specs: &[MetricSpec]) -> Result<()> {
        let tx = self.conn.unchecked_transaction()?;
        let base: i64 = tx.query_row(
            "SELECT COALESCE(MAX(ord) + 1, 0) FROM metrics WHERE experiment_id = ?1 AND workload = ?2",
            params![exp, workload],
            |r| r.get(0),
        )?;
        for (i, m) in specs.iter().enumerate() {
            tx.execute(
                "INSERT OR IGNORE INTO metrics VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    exp,
                    workload,
                    m.name,
                    m.unit,
                    m.direction.as_str(),
                    base + i as i64
                ],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Commit one run with all its samples, atomically.
    ///
    /// This is on the path between two runs, so every statement, BEGIN and
    /// COMMIT included, comes from the prepared-statement cache: parsing
    /// them afresh cost more than the commit's WAL writes.
    /// Record one run: appended to the run log while one is open (see
    /// [`Store::log_runs`]; folded when due), else committed at once.
    pub fn record_run(&self, r: &RunRecord) -> Result<()> {
        self.record_row(runlog::RunRow::of(r)?)
    }

    /// Record one run already in its run-log shape (a guest's run, which
    /// arrives as a row): as [`Store::record_run`].
    pub fn record_row(&self, row: runlog::RunRow) -> Result<()> {
        let due = match self.log.borrow_mut().as_mut() {
            Some(log) => {
                log.append(row)?;
                log.fold_due()
            }
            None => return self.in_transaction(|| self.insert_row(&row)),
        };
        if due {
            self.flush_runs()?;
        }
        Ok(())
    }

    /// The inserts of one run, inside the caller's transaction; nothing
    /// when that (experiment, block, seq) is already stored.
    fn insert_row(&self, r: &runlog::RunRow) -> Result<()> {
        let inserted = self
            .conn
            .prepare_cached(
                "INSERT INTO runs (experiment_id, block, seq, config, workload, warmup, status,
                 reason, stderr_tail, exit_code, started_at, boot_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
                 ON CONFLICT (experiment_id, block, seq) DO NOTHING",
            )?
            .execute(params![
                r.experiment_id,
                r.block,
                r.seq,
                r.config,
                r.workload,
                r.warmup,
                r.status,
                r.reason,
                r.stderr_tail,
                r.exit_code,
                r.started_at,
                r.boot
            ])?;
        if inserted == 0 {
            return Ok(());
        }
        let run_id = self.conn.last_insert_rowid();
        let mut st = self
            .conn
            .prepare_cached("INSERT INTO samples VALUES (?1, ?2, ?3, ?4)")?;
        for (metric, values) in &r.samples {
            for (i, v) in values.iter().enumerate() {
                st.execute(params![run_id, metric, i, f64::from_bits(*v)])?;
            }
        }
        if !r.series.is_empty() {
            let mut st = self
                .conn
                .prepare_cached("INSERT OR REPLACE INTO series VALUES (?1, ?2, ?3, ?4, ?5)")?;
            for (name, unit, t, v) in &r.series {
                st.execute(params![run_id, name, unit, t, v])?;
            }
        }
        if !r.profile.is_empty() {
            let mut st = self
                .conn
                .prepare_cached("INSERT OR REPLACE INTO profiles VALUES (?1, ?2, ?3, ?4)")?;
            for (sym, kernel, n) in &r.profile {
                st.execute(params![run_id, sym, kernel, *n as i64])?;
            }
        }
        Ok(())
    }

    /// Record which config is entered (None: none). Its environment is
    /// cleared: [`Store::set_entered_env`] sets it once the enter succeeded.
    pub fn set_entered_config(&self, exp: i64, config: Option<&str>) -> Result<()> {
        self.conn.execute(
            "UPDATE experiments SET entered_config = ?2, entered_env = NULL WHERE id = ?1",
            params![exp, config],
        )?;
        Ok(())
    }

    /// The environment the entered config gives its processes (what its
    /// setup exported included), for a teardown after a crash.
    pub fn set_entered_env(&self, exp: i64, env: &[(String, String)]) -> Result<()> {
        self.conn.execute(
            "UPDATE experiments SET entered_env = ?2 WHERE id = ?1",
            params![exp, serde_json::to_string(env)?],
        )?;
        Ok(())
    }

    /// What [`Store::set_entered_env`] recorded; empty when nothing was.
    pub fn entered_env(&self, exp: i64) -> Result<Vec<(String, String)>> {
        let json: Option<String> = self.conn.query_row(
            "SELECT entered_env FROM experiments WHERE id = ?1",
            [exp],
            |r| r.get(0),
        )?;
        Ok(json
            .and_then(|j| serde_json::from_str(&j).ok())
            .unwrap_or_default())
    }

    pub fn add_event(&self, exp: i64, kind: &str, message: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO events (experiment_id, kind, message) VALUES (?1, ?2, ?3)",
            params![exp, kind, message],
        )?;
        Ok(())
    }

    /// The messages of one experiment's events of one kind, oldest first.
    pub fn event_messages(&self, exp: i64, kind: &str) -> Result<Vec<String>> {
        let mut st = self.conn.prepare_cached(
            "SELECT message FROM events WHERE experiment_id = ?1 AND kind = ?2 ORDER BY id",
        )?;
        let rows = st.query_map(params![exp, kind], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub fn finish(
        &self,
        exp: i64,
        status: &str,
        self_usage: Option<&serde_json::Value>,
    ) -> Result<()> {
        // The experiment's runs go into the tables before it is marked
        // done; its status is recorded even when that fails (the log stays
        // for the next open, and the error is returned).
        let flushed = self.flush_runs();
        self.conn.execute(
            "UPDATE experiments SET status = ?2, self_usage = COALESCE(?3, self_usage),
                 finished_at = strftime('%Y-%m-%dT%H:%M:%SZ','now') WHERE id = ?1",
            params![exp, status, self_usage.map(|v| v.to_string())],
        )?;
        flushed
    }

    pub fn set_status(&self, exp: i64, status: &str) -> Result<()> {
        self.conn.execute(
            "UPDATE experiments SET status = ?2 WHERE id = ?1",
            params![exp, status],
        )?;
        Ok(())
    }

    /// (block, seq) of every run already recorded.
    pub fn done_slots(&self, exp: i64) -> Result<HashSet<(u32, u32)>> {
        self.flush_runs()?;
        let mut st = self
            .conn
            .prepare("SELECT block, seq FROM runs WHERE experiment_id = ?1")?;
        let rows = st.query_map([exp], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub fn experiment_ids(&self) -> Result<Vec<i64>> {
        let mut st = self
            .conn
            .prepare("SELECT id FROM experiments ORDER BY id")?;
        let rows = st.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Resolve an id, `last`, or a label (newest experiment with that label).
    pub fn resolve(&self, what: &str) -> Result<i64> {
        if what == "last" || what == "--last" {
            return self
                .conn
                .query_row("SELECT MAX(id) FROM experiments", [], |r| {
                    r.get::<_, Option<i64>>(0)
                })?
                .ok_or_else(|| {
                    bad(format!(
                        "{}: the store has no experiments",
                        self.path.display()
                    ))
                });
        }
        if let Ok(id) = what.parse::<i64>() {
            let found: Option<i64> = self
                .conn
                .query_row("SELECT id FROM experiments WHERE id = ?1", [id], |r| {
                    r.get(0)
                })
                .optional()?;
            return found.ok_or_else(|| {
                bad(format!(
                    "no experiment with id {id} in {}",
                    self.path.display()
                ))
            });
        }
        let ids: Vec<i64> = {
            let mut st = self
                .conn
                .prepare("SELECT id FROM experiments WHERE label = ?1 ORDER BY id")?;
            let rows = st.query_map([what], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        match ids.as_slice() {
            [] => Err(bad(format!(
                "no experiment has id or label '{what}' in {}",
                self.path.display()
            ))),
            [id] => Ok(*id),
            many => Err(bad(format!(
                "label '{what}' matches {} experiments ({}); name one by id",
                many.len(),
                many.iter()
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    pub fn info(&self, id: i64) -> Result<ExperimentInfo> {
        let mut info = self.conn.query_row(
            "SELECT id, name, label, plan_source, plan_text, overrides, host, fingerprint, seed, run_order,
                    runs_per_cell, warmup, baseline, created_at, finished_at, status, entered_config, self_usage
             FROM experiments WHERE id = ?1",
            [id],
            |r| {
                let ov: String = r.get(5)?;
                let fp: String = r.get(7)?;
                let su: Option<String> = r.get(17)?;
                Ok(ExperimentInfo {
                    id: r.get(0)?,
                    name: r.get(1)?,
                    label: r.get(2)?,
                    plan_source: r.get(3)?,
                    plan_text: r.get(4)?,
                    overrides: serde_json::from_str(&ov).unwrap_or_default(),
                    host: r.get(6)?,
                    fingerprint: serde_json::from_str(&fp).unwrap_or_default(),
                    seed: r.get::<_, i64>(8)? as u64,
                    order: r.get(9)?,
                    runs_per_cell: r.get(10)?,
                    warmup: r.get(11)?,
                    baseline: r.get(12)?,
                    created_at: r.get(13)?,
                    finished_at: r.get(14)?,
                    status: r.get(15)?,
                    entered_config: r.get(16)?,
                    self_usage: su.and_then(|s| serde_json::from_str(&s).ok()),
                    configs: Vec::new(),
                    workloads: Vec::new(),
                })
            },
        )?;
        info.configs = self.names("configs", id)?;
        info.workloads = self.names("workloads", id)?;
        Ok(info)
    }

    fn names(&self, table: &str, id: i64) -> Result<Vec<String>> {
        let mut st = self.conn.prepare(&format!(
            "SELECT name FROM {table} WHERE experiment_id = ?1 ORDER BY idx"
        ))?;
        let rows = st.query_map([id], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Everything stored about one experiment.
    pub fn load(&self, id: i64) -> Result<ExperimentData> {
        self.flush_runs()?;
        let info = self.info(id)?;
        let metrics = {
            let mut st = self.conn.prepare(
                "SELECT m.workload, m.name, m.unit, m.direction FROM metrics m
                 LEFT JOIN workloads w ON w.experiment_id = m.experiment_id AND w.name = m.workload
                 WHERE m.experiment_id = ?1 ORDER BY w.idx, m.ord",
            )?;
            let rows = st.query_map([id], |r| {
                let dir: String = r.get(3)?;
                Ok(StoredMetric {
                    workload: r.get(0)?,
                    spec: MetricSpec {
                        name: r.get(1)?,
                        unit: r.get(2)?,
                        direction: Direction::parse(&dir).unwrap_or(Direction::Lower),
                    },
                })
            })?;
            rows.collect::<rusqlite::Result<Vec<_>>>()?
        };
        let mut runs: Vec<StoredRun> = {
            let mut st = self.conn.prepare(
                "SELECT id, block, seq, config, workload, warmup, status, reason, stderr_tail, exit_code, started_at, boot_id
                 FROM runs WHERE experiment_id = ?1 ORDER BY block, seq",
            )?;
            let rows = st.query_map([id], |r| {
                Ok(StoredRun {
                    id: r.get(0)?,
                    block: r.get(1)?,
                    seq: r.get(2)?,
                    config: r.get(3)?,
                    workload: r.get(4)?,
                    warmup: r.get(5)?,
                    status: r.get(6)?,
                    reason: r.get(7)?,
                    stderr_tail: r.get(8)?,
                    exit_code: r.get(9)?,
                    started_at: r.get(10)?,
                    samples: BTreeMap::new(),
                    boot_id: r.get(11)?,
                })
            })?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        {
            let index: std::collections::HashMap<i64, usize> =
                runs.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
            let mut st = self.conn.prepare(
                // Ordered along the runs index and the samples key, so SQLite
                // streams the rows without a temporary sort of all samples.
                "SELECT s.run_id, s.metric, s.value FROM samples s JOIN runs r ON r.id = s.run_id
                 WHERE r.experiment_id = ?1 ORDER BY r.block, r.seq, s.metric, s.idx",
            )?;
            let mut rows = st.query([id])?;
            while let Some(row) = rows.next()? {
                let run_id: i64 = row.get(0)?;
                let v: f64 = row.get(2)?;
                if let Some(&i) = index.get(&run_id) {
                    // Borrow the name; allocate only for a run's first sample of it.
                    let metric = row.get_ref(1)?.as_str()?;
                    let samples = &mut runs[i].samples;
                    match samples.get_mut(metric) {
                        Some(values) => values.push(v),
                        None => {
                            samples.insert(metric.to_string(), vec![v]);
                        }
                    }
                }
            }
        }
        let events = {
            let mut st = self.conn.prepare(
                "SELECT at, kind, message FROM events WHERE experiment_id = ?1 ORDER BY id",
            )?;
            let rows = st.query_map([id], |r| {
                Ok(Event {
                    at: r.get(0)?,
                    kind: r.get(1)?,
                    message: r.get(2)?,
                })
            })?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        Ok(ExperimentData {
            info,
            metrics,
            runs,
            events,
            series: self.series(id)?,
            profiles: self.profile_totals(id)?,
            boots: self.boots(id)?,
        })
    }

    /// Series recorded for one experiment: (run id, series).
    pub fn series(&self, exp: i64) -> Result<Vec<(i64, SeriesRecord)>> {
        self.flush_runs()?;
        let mut st = self.conn.prepare(
            "SELECT s.run_id, s.name, s.unit, s.t_json, s.v_json FROM series s JOIN runs r ON r.id = s.run_id
             WHERE r.experiment_id = ?1 ORDER BY s.run_id, s.name",
        )?;
        let rows = st.query_map([exp], |r| {
            let t: String = r.get(3)?;
            let v: String = r.get(4)?;
            Ok((
                r.get(0)?,
                SeriesRecord {
                    name: r.get(1)?,
                    unit: r.get(2)?,
                    t: serde_json::from_str(&t).unwrap_or_default(),
                    v: serde_json::from_str(&v).unwrap_or_default(),
                },
            ))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Profile samples summed per (config, symbol, kernel) for one experiment.
    pub fn profile_totals(&self, exp: i64) -> Result<Vec<(String, String, bool, u64)>> {
        self.flush_runs()?;
        let mut st = self.conn.prepare(
            "SELECT r.config, p.symbol, p.kernel, SUM(p.samples) FROM profiles p JOIN runs r ON r.id = p.run_id
             WHERE r.experiment_id = ?1 AND r.warmup = 0 GROUP BY r.config, p.symbol, p.kernel",
        )?;
        let rows = st.query_map([exp], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get::<_, i64>(3)? as u64))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Mark an experiment as imported: `source` says from what (shown by
    /// every report). NULL (the default) means sysdelta measured it.
    pub fn set_source(&self, exp: i64, source: &str) -> Result<()> {
        self.conn.execute(
            "UPDATE experiments SET source = ?2 WHERE id = ?1",
            params![exp, source],
        )?;
        Ok(())
    }

    /// Where an experiment's samples came from: None when sysdelta ran it.
    pub fn source(&self, exp: i64) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row("SELECT source FROM experiments WHERE id = ?1", [exp], |r| {
                r.get(0)
            })?)
    }

    /// Ids and labels of experiments whose label starts with `prefix`, oldest first.
    pub fn labelled(&self, prefix: &str) -> Result<Vec<(i64, String)>> {
        let mut st = self.conn.prepare(
            "SELECT id, label FROM experiments WHERE label IS NOT NULL AND substr(label, 1, length(?1)) = ?1 ORDER BY id",
        )?;
        let rows = st.query_map([prefix], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

impl Drop for Store {
    /// A store dropped with its run log open (an error path) still folds
    /// it; if that fails the log stays for the next open.
    fn drop(&mut self) {
        if self.log.borrow().is_some() {
            let _ = self.close_run_log();
        }
    }
}

/// Insert `e`'s row, configs and workloads on `conn`, inside a transaction
/// the caller opens and commits (an import stores its runs in the same one);
/// returns the new id. Measured here (`imported_from` is `None`) it starts
/// `running`; imported, it is stored `complete` and finished now, with where
/// its samples came from (`experiments.source`).
fn insert_experiment(
    conn: &Connection,
    e: &NewExperiment,
    imported_from: Option<&str>,
) -> Result<i64> {
    let status = if imported_from.is_some() {
        "complete"
    } else {
        "running"
    };
    conn.execute(
        "INSERT INTO experiments (name, label, plan_source, plan_text, overrides, host, fingerprint, seed,
             run_order, runs_per_cell, warmup, baseline, status, finished_at, source)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13,
             CASE WHEN ?13 = 'complete' THEN strftime('%Y-%m-%dT%H:%M:%SZ','now') END, ?14)",
        params![
            e.name,
            e.label,
            e.plan_source,
            e.plan_text,
            serde_json::to_string(e.overrides)?,
            e.host,
            serde_json::to_string(e.fingerprint)?,
            e.seed as i64,
            e.order.as_str(),
            e.runs,
            e.warmup,
            e.baseline,
            status,
            imported_from,
        ],
    )?;
    let id = conn.last_insert_rowid();
    for (i, c) in e.configs.iter().enumerate() {
        conn.execute("INSERT INTO configs VALUES (?1, ?2, ?3)", params![id, i, c])?;
    }
    for (i, w) in e.workloads.iter().enumerate() {
        conn.execute(
            "INSERT INTO workloads VALUES (?1, ?2, ?3)",
            params![id, i, w],
        )?;
    }
    Ok(id)
}

/// A read-only connection to the SQLite database at `path` that writes
/// nothing in or next to it, whoever this process is (root included, who
/// may write everything): used to read another user's store, a store on a
/// read-only mount, and the stores of other runs (`peek`).
///
/// The store is in WAL mode, and SQLite reads such a database through its
/// `-wal` file and `-shm` index. When both exist (a writer has the store
/// open, or died with it open) they are used, the `-shm` read-only
/// (`readonly_shm`, <https://www.sqlite.org/uri.html>): with a live
/// writer SQLite reads through its index, and with none it reads the
/// `-wal` into memory, where a writable `-shm` would be truncated and
/// rebuilt. When they are not both there the store is opened `immutable`
/// (<https://www.sqlite.org/uri.html#uriimmutable>): no locks, no `-wal`,
/// no `-shm`, and it reads exactly what the file holds. (A plain read-only
/// connection would create both: as root, next to any user's store; in a
/// directory it cannot write, it fails with "attempt to write a readonly
/// database".) Its one risk is a
/// writer that starts while this one reads: a checkpoint may then change
/// pages under the reader, whose read may fail or miss the newest runs.
/// The store itself is never at risk.
pub(crate) fn read_only_connection(path: &Path) -> rusqlite::Result<Connection> {
    let file = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    Connection::open_with_flags(
        read_only_uri(&file, !wal_is_shared(&file)),
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
}

/// Whether the store at `path` has a `-wal` and a `-shm` this process can
/// read: a writer has it open, or died with it open.
fn wal_is_shared(path: &Path) -> bool {
    use nix::unistd::{access, AccessFlags};
    let readable = |suffix| access(&Store::beside(path, suffix), AccessFlags::R_OK).is_ok();
    readable("-wal") && readable("-shm")
}

/// `n thing` or `n things`.
fn plural(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

/// Where the lines of a run log that were not folded are kept:
/// `<log>.unfolded-<unix time with nanoseconds>`.
fn aside_path(log: &Path) -> PathBuf {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut aside = log.as_os_str().to_owned();
    aside.push(format!(
        ".unfolded-{}.{:09}",
        now.as_secs(),
        now.subsec_nanos()
    ));
    PathBuf::from(aside)
}

/// `path` (absolute) as an SQLite URI filename
/// (<https://www.sqlite.org/uri.html>) opened read-only: `immutable` if
/// asked, and otherwise with its `-shm` opened read-only too. Every byte
/// but unreserved ones and `/` is percent-encoded, so any file name (`?`,
/// `#`, `%`, not UTF-8) names the same file.
fn read_only_uri(path: &Path, immutable: bool) -> std::ffi::OsString {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let mut uri = b"file:".to_vec();
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b);
        } else {
            uri.extend(format!("%{b:02X}").bytes());
        }
    }
    uri.extend(b"?mode=ro");
    uri.extend(if immutable {
        &b"&immutable=1"[..]
    } else {
        &b"&readonly_shm=1"[..]
    });
    std::ffi::OsString::from_vec(uri)
}
