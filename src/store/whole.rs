//! Storing an experiment measured elsewhere (an import) whole, in one
//! transaction: either every row of it is stored, as `complete`, or
//! nothing is. It is never `running`, so there is nothing to resume.
//!
//! The inserts mirror [`Store::create_experiment`] and
//! [`Store::declare_metrics`], which commit on their own and so cannot
//! run inside this transaction.

use anyhow::Result;
use rusqlite::params;

use super::runlog::RunRow;
use super::{NewExperiment, RunRecord, Store};
use crate::metric::MetricSpec;

/// Everything an imported experiment stores.
pub struct WholeExperiment<'a> {
    pub experiment: NewExperiment<'a>,
    /// (workload, its metrics), in the order they are declared.
    pub metrics: &'a [(String, Vec<MetricSpec>)],
    /// The runs; their `experiment_id` is ignored (the new experiment's is
    /// used).
    pub runs: Vec<RunRecord<'a>>,
    /// Where the samples came from (`experiments.source`).
    pub source: &'a str,
    /// Events to record: (kind, message).
    pub events: Vec<(&'a str, String)>,
}

impl Store {
    /// Store `w` as one `complete` experiment in one transaction; returns
    /// its id. Every run is checked before anything is written.
    pub fn insert_whole(&self, w: &WholeExperiment) -> Result<i64> {
        let mut rows = w.runs.iter().map(RunRow::of).collect::<Result<Vec<_>>>()?;
        self.in_transaction(|| {
            let id = self.insert_complete_row(&w.experiment, w.source)?;
            for (i, c) in w.experiment.configs.iter().enumerate() {
                self.conn
                    .execute("INSERT INTO configs VALUES (?1, ?2, ?3)", params![id, i, c])?;
            }
            for (i, name) in w.experiment.workloads.iter().enumerate() {
                self.conn.execute(
                    "INSERT INTO workloads VALUES (?1, ?2, ?3)",
                    params![id, i, name],
                )?;
            }
            for (workload, specs) in w.metrics {
                for (ord, m) in specs.iter().enumerate() {
                    self.conn.execute(
                        "INSERT INTO metrics VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                        params![id, workload, m.name, m.unit, m.direction.as_str(), ord],
                    )?;
                }
            }
            for row in &mut rows {
                row.experiment_id = id;
                self.insert_row(row)?;
            }
            for (kind, message) in &w.events {
                self.add_event(id, kind, message)?;
            }
            Ok(id)
        })
    }

    /// The experiment's row, already `complete` and finished.
    fn insert_complete_row(&self, e: &NewExperiment, source: &str) -> Result<i64> {
        self.conn.execute(
            "INSERT INTO experiments (name, label, plan_source, plan_text, overrides, host, fingerprint, seed,
                 run_order, runs_per_cell, warmup, baseline, status, finished_at, source)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 'complete',
                 strftime('%Y-%m-%dT%H:%M:%SZ','now'), ?13)",
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
                source,
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }
}
