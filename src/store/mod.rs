//! The store: experiments, runs and every raw sample, in an SQLite file or
//! a team's PostgreSQL database (`db` holds the two; `pg` how a database
//! is named and anchored on each machine; everything below holds for both,
//! the file's WAL and read-only modes aside).
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

pub mod baselines;
pub mod boots;
mod copy;
pub(crate) mod db;
pub use db::is_unreachable;
mod deferred;
pub mod fleet;
pub(crate) mod value;
pub use copy::Copied;
mod fold;
pub mod lock;
mod on_host;
mod open;
mod sides;
pub(crate) use sides::read_only_connection;
pub mod conninfo;
mod connstring;
mod metric_runs;
pub mod peek;
pub mod pg;
pub mod pgpass;
mod read;
pub use metric_runs::{MetricRun, MetricRuns};
mod recent;
pub mod runlog;
pub mod schema;
mod tally;
pub use tally::CellTally;
mod send;
pub use send::{left_local_line, waiting_here, LeftLocal};
pub mod whole;
mod write;
mod writer;

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rusqlite::{Connection, OpenFlags};
use serde::Serialize;

use crate::error::bad;
use crate::metric::MetricSamples;
use crate::metric::MetricSpec;
use crate::overrides::{Order, Overrides};
pub use crate::status::{BootStatus, ExperimentStatus, RunStatus};
pub use boots::{BootEnd, StoredBoot};
use db::{vals, Db};

pub const DEFAULT_PATH: &str = "sysdelta.db";

pub struct Store {
    db: Db,
    path: PathBuf,
    /// Open while an experiment runs: where [`Store::record_run`] appends.
    log: RefCell<Option<runlog::RunLog>>,
    /// Why this process cannot write the store, if it cannot: it is then
    /// open read-only (see [`Store::open`]).
    read_only: Option<String>,
    /// A PostgreSQL server was out of reach at the last try (said once).
    unreachable: std::cell::Cell<bool>,
    /// State writes waiting for a PostgreSQL server out of reach, or,
    /// while the writer runs, for it to send them.
    deferred: RefCell<Vec<deferred::Write>>,
    /// A PostgreSQL store's background writer, while an experiment runs
    /// (see `writer`).
    writer: RefCell<Option<writer::Writer>>,
    /// The experiment's end stopped waiting for an absent server: what is
    /// left stays on this machine, and nothing more waits for it.
    gave_up: std::cell::Cell<bool>,
    /// `<anchor>.deferred` open for appending, while the writer runs.
    deferred_out: RefCell<Option<std::fs::File>>,
    /// Runs left in the run log file when the end gave up.
    left_runs: std::cell::Cell<usize>,
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
    /// A run that gave its samples, with no exit status to keep (a built-in
    /// workload measured in-process, an import that gives none).
    Ok(&'a [MetricSamples]),
    /// A run that gave its samples, and the status its process exited with
    /// (a command; not 0 only where the plan keeps such runs, `-i`).
    Exited {
        samples: &'a [MetricSamples],
        exit_code: i32,
    },
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
    pub status: ExperimentStatus,
    pub entered_config: Option<String>,
    pub self_usage: Option<serde_json::Value>,
    pub configs: Vec<String>,
    pub workloads: Vec<String>,
    /// The fleet run this experiment is one host's part of, if any
    /// (`fleets.id`), and that host's name in the fleet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fleet_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fleet_host: Option<String>,
}

/// The id of an experiment that is in no store (`import --no-store`):
/// stores number theirs from 1.
pub const UNSTORED: i64 = 0;

impl ExperimentInfo {
    /// How a report names the experiment: `#12`, or `(not stored)`.
    pub fn shown_id(&self) -> String {
        match self.id {
            UNSTORED => self.number(),
            id => format!("#{id}"),
        }
    }

    /// Its number after "experiment": `12`, or `(not stored)`.
    pub fn number(&self) -> String {
        match self.id {
            UNSTORED => "(not stored)".to_string(),
            id => id.to_string(),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct StoredRun {
    pub id: i64,
    pub block: u32,
    pub seq: u32,
    pub config: String,
    pub workload: String,
    pub warmup: bool,
    pub status: RunStatus,
    pub reason: Option<String>,
    pub stderr_tail: Option<String>,
    pub exit_code: Option<i32>,
    pub started_at: f64,
    pub samples: BTreeMap<String, Vec<f64>>,
    /// The boot (`boots.id`) a run of a kernel config ran in; None on the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<i64>,
}

impl StoredRun {
    /// A measured run on the host that gave `samples`: ok, not a warm-up,
    /// no exit code, reason or stderr, started at 0 (the epoch). What
    /// tests build runs from; any other field is set beside it
    /// (`StoredRun { warmup: true, ..StoredRun::ok(..) }`).
    pub fn ok(
        id: i64,
        block: u32,
        seq: u32,
        config: impl Into<String>,
        workload: impl Into<String>,
        samples: BTreeMap<String, Vec<f64>>,
    ) -> StoredRun {
        StoredRun {
            id,
            block,
            seq,
            config: config.into(),
            workload: workload.into(),
            warmup: false,
            status: RunStatus::Ok,
            reason: None,
            stderr_tail: None,
            exit_code: None,
            started_at: 0.0,
            samples,
            boot_id: None,
        }
    }

    /// A measured run (not a warm-up) that gave its samples: the runs the
    /// statistics use.
    pub fn is_measured_ok(&self) -> bool {
        !self.warmup && self.status == RunStatus::Ok
    }
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
    /// The store's file; for a PostgreSQL store, its local anchor (see
    /// [`pg`]): what the run log, journal and lock of this machine sit
    /// beside.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How the store is named in messages: its file, or its URL without
    /// the password.
    pub fn shown(&self) -> String {
        match &self.db {
            Db::Sqlite(_) => self.path.display().to_string(),
            Db::Pg(pg) => pg.shown().to_string(),
        }
    }

    /// Whether the store is on a PostgreSQL server.
    pub fn is_pg(&self) -> bool {
        self.db.is_pg()
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
        use std::os::unix::fs::OpenOptionsExt;
        // Not through a link, and not waiting on a FIFO planted there.
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(store)?;
        Ok(nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock).ok())
    }

    /// The store's lock shared, for a look that writes nothing (None:
    /// a process holds it exclusively, a live run): other lookers may hold
    /// it too, and a run waits to take it ([`lock::lock_waiting`]) until
    /// they are done.
    pub fn try_lock_shared(
        store: &Path,
    ) -> std::io::Result<Option<nix::fcntl::Flock<std::fs::File>>> {
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(store)?;
        Ok(nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockSharedNonblock).ok())
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
