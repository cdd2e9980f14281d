//! Storing an experiment measured elsewhere (an import) whole, in one
//! transaction: either every row of it is stored, as `complete`, or
//! nothing is. It is never `running`, so there is nothing to resume.
//!
//! The experiment's row, configs and workloads go in through the same
//! insert as [`Store::create_experiment`]; the metrics' inserts mirror
//! [`Store::declare_metrics`], which commits on its own and so cannot run
//! inside this transaction.

use anyhow::Result;

use super::db::vals;
use super::runlog::RunRow;
use super::write::insert_experiment;
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
        // Sized once: collecting through a Result grows the vector by
        // doubling, and copying 6,000 rows over and over cost an import a
        // tenth of its time.
        let mut rows = Vec::with_capacity(w.runs.len());
        for r in &w.runs {
            rows.push(RunRow::of(r)?);
        }
        self.in_transaction(|| {
            let id = insert_experiment(&self.db, &w.experiment, Some(w.source))?;
            for (workload, specs) in w.metrics {
                for (ord, m) in specs.iter().enumerate() {
                    self.db.execute(
                        "INSERT INTO metrics VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                        &vals![id, workload, &m.name, &m.unit, m.direction.as_str(), ord],
                    )?;
                }
            }
            for row in &mut rows {
                row.experiment_id = id;
            }
            // Many runs at once: batched on PostgreSQL, prepared once on SQLite.
            self.insert_rows(&rows)?;
            for (kind, message) in &w.events {
                self.add_event(id, kind, message)?;
            }
            Ok(id)
        })
    }
}
