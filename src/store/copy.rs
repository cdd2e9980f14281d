//! Copying an experiment from one store to another (`push` to a team
//! store, `pull` back), by its uid: the first copy stores it whole, a
//! second stores nothing new, and a copy after the experiment went on
//! (a `--resume` since) adds the runs, boots and events it lacks and
//! takes its status. Each experiment is copied in one transaction of the
//! target: all of it or none, with the named baselines that point at it
//! (`store::baselines`: one the target has for another experiment is
//! never overwritten, and moves on only where the caller lets the
//! source's history move it: `push`, not `pull`).
//!
//! An experiment the copy stores anew gets an event of kind
//! [`COPIED`] naming where it came from: its plan was written in another
//! store, by whoever could write that one, so owning this store does not
//! make its plan this user's to run (`run --resume`, `cli::trust`).
//!
//! Ids are the target's own (a team store's server hands them out); a
//! run is known by (experiment, block, seq) as everywhere, a boot by
//! (config, block, position), an event by (time, kind, message), a fleet
//! run by its uid.

use std::collections::{BTreeMap, HashMap};

use anyhow::Result;

use super::baselines::Moves;
use super::db::vals;
use super::runlog::RunRow;
use super::Store;
use crate::status::ExperimentStatus;

/// What a copy did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copied {
    /// The experiment's id in the target.
    pub id: i64,
    /// Whether the target had no copy of it before.
    pub new: bool,
    /// Runs the target did not have.
    pub runs_added: usize,
    /// The named baselines that point at it in the source, and what the
    /// copy did with each in the target.
    pub baselines: Vec<super::baselines::BaselineCopy>,
}

/// The kind of the event a copy stores with an experiment it stores anew.
pub const COPIED: &str = "copied";

/// Every column of an experiment's row that a copy carries (the entered
/// config and its environment stay with the machine that ran it).
const EXPERIMENT_COLUMNS: &str = "name, label, plan_source, plan_text, overrides, host, fingerprint, seed, \
     run_order, runs_per_cell, warmup, baseline, created_at, finished_at, status, self_usage, source, uid, fleet_host";

impl Store {
    /// The uid of experiment `id`.
    pub fn uid(&self, id: i64) -> Result<String> {
        self.db
            .value("SELECT uid FROM experiments WHERE id = ?1", &vals![id])
    }

    /// Where experiment `id` was copied into this store from (the message
    /// of its first [`COPIED`] event), or None when it was written here.
    pub fn copied_from(&self, id: i64) -> Result<Option<String>> {
        self.db.query_opt(
            "SELECT message FROM events WHERE experiment_id = ?1 AND kind = ?2 ORDER BY id LIMIT 1",
            &vals![id, COPIED],
            |r| r.get(0),
        )
    }

    /// Copy experiment `id` of `self` into `to`; see the module docs. A
    /// named baseline `to` has is never moved ([`Moves::Never`], as
    /// `pull`); [`Store::copy_experiment_with`] says otherwise.
    pub fn copy_experiment(&self, id: i64, to: &Store) -> Result<Copied> {
        self.copy_experiment_with(id, to, Moves::Never)
    }

    /// [`Store::copy_experiment`], the baselines `to` has moved on as
    /// `moves` allows (`push`: [`Moves::FollowSource`]).
    pub fn copy_experiment_with(&self, id: i64, to: &Store, moves: Moves) -> Result<Copied> {
        let data = self.load(id)?;
        let uid = self.uid(id)?;
        // The experiment's row as text and numbers, column by column.
        let row: Vec<Owned> = self.db.query_one(
            &format!("SELECT {EXPERIMENT_COLUMNS} FROM experiments WHERE id = ?1"),
            &vals![id],
            |r| {
                (0..19)
                    .map(|i| r.with_cell(i, |c| Ok(Owned::of(c))))
                    .collect()
            },
        )?;
        let fleet = match data.info.fleet_id {
            Some(f) => Some(self.fleet(&f.to_string())?),
            None => None,
        };
        let profiles: HashMap<i64, Vec<(String, bool, u64)>> = {
            let mut by_run: HashMap<i64, Vec<(String, bool, u64)>> = HashMap::new();
            for (run, sym, kernel, n) in self.db.query(
                "SELECT p.run_id, p.symbol, p.kernel, p.samples FROM profiles p JOIN runs r ON r.id = p.run_id
                 WHERE r.experiment_id = ?1",
                &vals![id],
                |r| Ok((r.get::<i64>(0)?, r.get(1)?, r.get(2)?, r.get::<i64>(3)? as u64)),
            )? {
                by_run.entry(run).or_default().push((sym, kernel, n));
            }
            by_run
        };
        let mut series: HashMap<i64, Vec<(String, String, String, String)>> = HashMap::new();
        for (run, s) in &data.series {
            series.entry(*run).or_default().push((
                s.name.clone(),
                s.unit.clone(),
                serde_json::to_string(&s.t)?,
                serde_json::to_string(&s.v)?,
            ));
        }
        to.in_transaction(|| {
            let existing: Option<i64> = to.db.query_opt(
                "SELECT id FROM experiments WHERE uid = ?1",
                &vals![&uid],
                |r| r.get(0),
            )?;
            let fleet_id = match &fleet {
                Some(f) => Some(to.fleet_copy(f)?),
                None => None,
            };
            let params: Vec<_> = row.iter().map(Owned::value).collect();
            let (dst, new) = match existing {
                None => {
                    let placeholders: Vec<String> = (1..=19).map(|i| format!("?{i}")).collect();
                    let mut p = params.clone();
                    p.push(fleet_id.into());
                    let id: i64 = to.db.value(
                        &format!(
                            "INSERT INTO experiments ({EXPERIMENT_COLUMNS}, fleet_id) VALUES ({}, ?20) RETURNING id",
                            placeholders.join(", ")
                        ),
                        &p,
                    )?;
                    for (i, c) in data.info.configs.iter().enumerate() {
                        to.db
                            .execute("INSERT INTO configs VALUES (?1, ?2, ?3)", &vals![id, i, c])?;
                    }
                    for (i, w) in data.info.workloads.iter().enumerate() {
                        to.db
                            .execute("INSERT INTO workloads VALUES (?1, ?2, ?3)", &vals![id, i, w])?;
                    }
                    (id, true)
                }
                Some(id) => (id, false),
            };
            let mut ord: BTreeMap<&str, usize> = BTreeMap::new();
            for m in &data.metrics {
                let n = ord.entry(m.workload.as_str()).or_default();
                to.db.execute(
                    "INSERT INTO metrics VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING",
                    &vals![dst, &m.workload, &m.spec.name, &m.spec.unit, m.spec.direction.as_str(), *n],
                )?;
                *n += 1;
            }
            let boots = to.boots_copy(dst, &data.boots)?;
            let mut runs_added = 0;
            for r in &data.runs {
                let row = RunRow {
                    experiment_id: dst,
                    block: r.block,
                    seq: r.seq,
                    config: r.config.clone(),
                    workload: r.workload.clone(),
                    warmup: r.warmup,
                    started_at: r.started_at,
                    status: r.status.as_str().to_string(),
                    reason: r.reason.clone(),
                    stderr_tail: r.stderr_tail.clone(),
                    exit_code: r.exit_code,
                    samples: r
                        .samples
                        .iter()
                        .map(|(m, v)| (m.clone(), v.iter().map(|x| x.to_bits()).collect()))
                        .collect(),
                    series: series.remove(&r.id).unwrap_or_default(),
                    profile: profiles.get(&r.id).cloned().unwrap_or_default(),
                    boot: r.boot_id.and_then(|b| boots.get(&b).copied()),
                };
                if to.insert_row(&row)? {
                    runs_added += 1;
                }
            }
            // It went on since the last copy (a resume): its status now.
            // Only forward: a copy that has no run the target lacks, and
            // is not complete, is an older view (pulled while it ran), and
            // never undoes a `complete`.
            let complete = data.info.status == ExperimentStatus::Complete;
            if !new && (runs_added > 0 || complete) {
                to.db.execute(
                    "UPDATE experiments SET status = ?2, finished_at = COALESCE(?3, finished_at),
                     self_usage = COALESCE(?4, self_usage) WHERE id = ?1 AND status <> 'complete'",
                    &[dst.into(), params[14], params[13], params[15]],
                )?;
            }
            for e in &data.events {
                let there = to.db.exists(
                    "SELECT 1 FROM events WHERE experiment_id = ?1 AND at = ?2 AND kind = ?3 AND message = ?4",
                    &vals![dst, &e.at, &e.kind, &e.message],
                )?;
                if !there {
                    to.db.execute(
                        "INSERT INTO events (experiment_id, at, kind, message) VALUES (?1, ?2, ?3, ?4)",
                        &vals![dst, &e.at, &e.kind, &e.message],
                    )?;
                }
            }
            if new {
                to.db.execute(
                    "INSERT INTO events (experiment_id, kind, message) VALUES (?1, ?2, ?3)",
                    &vals![dst, COPIED, &format!("from {}", self.shown())],
                )?;
            }
            let baselines = self.copy_baselines(id, to, dst, moves)?;
            Ok(Copied {
                id: dst,
                new,
                runs_added,
                baselines,
            })
        })
    }

    /// The id here of fleet run `f` (copied from another store), stored
    /// now if it is not yet.
    fn fleet_copy(&self, f: &super::fleet::FleetInfo) -> Result<i64> {
        if let Some(id) = self.db.query_opt(
            "SELECT id FROM fleets WHERE uid = ?1",
            &vals![&f.uid],
            |r| r.get(0),
        )? {
            return Ok(id);
        }
        self.db.value(
            "INSERT INTO fleets (uid, name, plan_source, plan_text, overrides, hosts, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
            &vals![
                &f.uid,
                &f.name,
                &f.plan_source,
                &f.plan_text,
                &f.overrides,
                &f.hosts,
                &f.created_at
            ],
        )
    }

    /// Store the boots of experiment `dst` it lacks, and bring those it
    /// has up to date; source boot id -> id here.
    fn boots_copy(&self, dst: i64, boots: &[super::StoredBoot]) -> Result<HashMap<i64, i64>> {
        let mut ids = HashMap::new();
        for b in boots {
            let here: Option<i64> = self.db.query_opt(
                "SELECT id FROM boots WHERE experiment_id = ?1 AND config = ?2 AND block = ?3 AND position = ?4",
                &vals![dst, &b.config, b.block, b.position],
                |r| r.get(0),
            )?;
            let id = match here {
                Some(id) => id,
                None => self.db.value(
                    "INSERT INTO boots (experiment_id, config, block, position, accel, started_at, status)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
                    &vals![dst, &b.config, b.block, b.position, &b.accel, b.started_at, b.status],
                )?,
            };
            self.db.execute(
                "UPDATE boots SET status = ?2, launch_to_hello_s = ?3, reason = ?4, console_tail = ?5,
                 uname = ?6, proc_version = ?7, cmdline = ?8, cpus = ?9, mem_total_kib = ?10, runs = ?11
                 WHERE id = ?1",
                &vals![
                    id,
                    b.status,
                    b.launch_to_hello_s,
                    b.reason.as_deref(),
                    b.console_tail.as_deref(),
                    b.uname.as_deref(),
                    b.proc_version.as_deref(),
                    b.cmdline.as_deref(),
                    b.cpus,
                    b.mem_total_kib.map(|v| v as i64),
                    b.runs
                ],
            )?;
            ids.insert(b.id, id);
        }
        Ok(ids)
    }
}

/// A cell read from one store, to be written to another.
#[derive(Clone, Debug)]
enum Owned {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl Owned {
    fn of(c: super::db::CellRef<'_>) -> Owned {
        use super::db::CellRef;
        match c {
            CellRef::Null => Owned::Null,
            CellRef::Int(i) => Owned::Int(i),
            CellRef::Real(f) => Owned::Real(f),
            CellRef::Text(s) => Owned::Text(s.to_string()),
        }
    }

    fn value(&self) -> super::db::Value<'_> {
        use super::db::Value;
        match self {
            Owned::Null => Value::Null,
            Owned::Int(i) => Value::Int(*i),
            Owned::Real(f) => Value::Real(*f),
            Owned::Text(s) => Value::Text(s),
        }
    }
}
