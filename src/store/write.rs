//! Writing an experiment: its row, its metrics, each run, its events and
//! the state `--resume` needs (entered config, status).

// The types and imports of the store, whose impl this file continues.
use super::*;

impl Store {
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
    pub(super) fn insert_row(&self, r: &runlog::RunRow) -> Result<()> {
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

    pub fn add_event(&self, exp: i64, kind: &str, message: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO events (experiment_id, kind, message) VALUES (?1, ?2, ?3)",
            params![exp, kind, message],
        )?;
        Ok(())
    }

    pub fn finish(
        &self,
        exp: i64,
        status: ExperimentStatus,
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

    pub fn set_status(&self, exp: i64, status: ExperimentStatus) -> Result<()> {
        self.conn.execute(
            "UPDATE experiments SET status = ?2 WHERE id = ?1",
            params![exp, status],
        )?;
        Ok(())
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
}

/// Insert `e`'s row, configs and workloads on `conn`, inside a transaction
/// the caller opens and commits (an import stores its runs in the same one);
/// returns the new id. Measured here (`imported_from` is `None`) it starts
/// `running`; imported, it is stored `complete` and finished now, with where
/// its samples came from (`experiments.source`).
pub(super) fn insert_experiment(
    conn: &Connection,
    e: &NewExperiment,
    imported_from: Option<&str>,
) -> Result<i64> {
    let status = if imported_from.is_some() {
        ExperimentStatus::Complete
    } else {
        ExperimentStatus::Running
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
