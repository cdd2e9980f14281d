//! Storing an experiment measured elsewhere (an import) whole, in one
//! transaction: either every row of it is stored, as `complete`, or
//! nothing is. It is never `running`, so there is nothing to resume.
//!
//! The experiment's row, configs and workloads go in through the same
//! insert as [`Store::create_experiment`]; the metrics' inserts mirror
//! [`Store::declare_metrics`], which commits on its own and so cannot run
//! inside this transaction.

use anyhow::Result;

use std::collections::BTreeMap;

use super::db::vals;
use super::runlog::{check_samples, RunRow};
use super::write::insert_experiment;
use super::{
    Event, ExperimentData, ExperimentInfo, ExperimentStatus, NewExperiment, RunRecord, RunResult,
    RunStatus, Store, StoredMetric, StoredRun, UNSTORED,
};
use crate::metric::MetricSpec;

/// Each run row written, with the id it was given (None: already stored).
type Written = Vec<(RunRow, Option<i64>)>;

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
        self.insert_whole_then(w, |id, _| Ok(id))
    }

    /// [`Store::insert_whole`], handing `report` what [`Store::load`] of
    /// the new experiment returns, before the transaction commits: an
    /// error of `report` (a report option that fits no result) stores
    /// nothing. Its runs are not read back: they are the rows just
    /// written, each with the id it was given (`import --report` reports
    /// what it stores in the same process). Its info, metrics and events
    /// are read back, as they hold what the database filled in (id,
    /// times).
    pub fn insert_whole_reported<T>(
        &self,
        w: &WholeExperiment,
        report: impl FnOnce(&Store, ExperimentData) -> Result<T>,
    ) -> Result<T> {
        let signed_zero = self.db.is_pg();
        self.insert_whole_then(w, |id, written| {
            let mut runs: Vec<StoredRun> = written
                .into_iter()
                .filter_map(|(row, id)| Some(stored_run(row, id?, signed_zero)))
                .collect::<Result<_>>()?;
            // As load orders them (the runs' (experiment_id, block, seq) key).
            runs.sort_by_key(|r| (r.block, r.seq));
            let mut data = self.load_without_runs(id)?;
            data.runs = runs;
            report(self, data)
        })
    }

    /// The work of [`Store::insert_whole`]: `then` is handed the new id
    /// and each row written with the id it was given (None: it was
    /// already stored), inside the transaction, which commits only if it
    /// succeeds.
    fn insert_whole_then<T>(
        &self,
        w: &WholeExperiment,
        then: impl FnOnce(i64, Written) -> Result<T>,
    ) -> Result<T> {
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
            let ids = self.insert_rows(&rows)?;
            for (kind, message) in &w.events {
                self.add_event(id, kind, message)?;
            }
            then(id, rows.into_iter().zip(ids).collect())
        })
    }
}

/// What [`Store::insert_whole_reported`] hands on of `w`, without a store
/// and but for its runs, which the caller makes (its own records, taken
/// over rather than copied: `import --no-store`, which judges files as
/// benchstat does). Nothing is written. Every run is checked as the store
/// checks it; the id is [`UNSTORED`], the times now, as the store would
/// write them.
pub fn unstored_without_runs(w: &WholeExperiment) -> Result<ExperimentData> {
    for r in &w.runs {
        if let RunResult::Ok(s) | RunResult::Exited { samples: s, .. } = &r.result {
            check_samples(r, s)?;
        }
    }
    let now = crate::sys::utc::now();
    let e = &w.experiment;
    let info = ExperimentInfo {
        id: UNSTORED,
        name: e.name.to_string(),
        label: e.label.map(str::to_string),
        plan_source: e.plan_source.to_string(),
        plan_text: e.plan_text.to_string(),
        overrides: e.overrides.clone(),
        host: e.host.to_string(),
        fingerprint: e.fingerprint.clone(),
        seed: e.seed,
        order: e.order.as_str().to_string(),
        runs_per_cell: e.runs,
        warmup: e.warmup,
        baseline: e.baseline.to_string(),
        created_at: now.clone(),
        finished_at: Some(now.clone()),
        status: ExperimentStatus::Complete,
        entered_config: None,
        self_usage: None,
        configs: e.configs.clone(),
        workloads: e.workloads.clone(),
        fleet_id: None,
        fleet_host: None,
    };
    let metrics = (w.metrics.iter())
        .flat_map(|(workload, specs)| {
            specs.iter().map(|spec| StoredMetric {
                workload: workload.clone(),
                spec: spec.clone(),
            })
        })
        .collect();
    let events = (w.events.iter())
        .map(|(kind, message)| Event {
            at: now.clone(),
            kind: kind.to_string(),
            message: message.clone(),
        })
        .collect();
    Ok(ExperimentData {
        info,
        metrics,
        runs: Vec::new(),
        events,
        series: Vec::new(),
        profiles: Vec::new(),
        boots: Vec::new(),
    })
}

/// Sample `v` as a store reads it back: SQLite keeps -0.0 as 0 (it stores
/// an integral REAL as an integer), PostgreSQL as it is (`signed_zero`).
pub fn as_read_back(v: f64, signed_zero: bool) -> f64 {
    match signed_zero {
        true => v,
        false => v + 0.0,
    }
}

/// The run `row`, stored as `id`, as [`Store::load`] reads it back: every
/// column as written, the samples by metric in their order.
fn stored_run(row: RunRow, id: i64, signed_zero: bool) -> Result<StoredRun> {
    let status = RunStatus::parse(&row.status).ok_or_else(|| {
        crate::error::bad(format!(
            "damaged store: run {id}: unknown status '{}'",
            row.status
        ))
    })?;
    let mut samples: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (metric, bits) in row.samples {
        // Collected in place (u64 to f64, one allocation reused); a metric
        // twice, which the row's checks refuse, would be appended.
        let values: Vec<f64> = (bits.into_iter())
            .map(|b| as_read_back(f64::from_bits(b), signed_zero))
            .collect();
        match samples.get_mut(&metric) {
            Some(known) => known.extend(values),
            None => {
                samples.insert(metric, values);
            }
        }
    }
    Ok(StoredRun {
        id,
        block: row.block,
        seq: row.seq,
        config: row.config,
        workload: row.workload,
        warmup: row.warmup,
        status,
        reason: row.reason,
        stderr_tail: row.stderr_tail,
        exit_code: row.exit_code,
        started_at: row.started_at,
        samples,
        boot_id: row.boot,
    })
}
