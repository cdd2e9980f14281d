//! Writing an experiment: its row, its metrics, each run, its events and
//! the state `--resume` needs (entered config, status).

// The types and imports of the store, whose impl this file continues.
use super::*;

impl Store {
    pub fn create_experiment(&self, e: &NewExperiment) -> Result<i64> {
        self.patiently(|| self.in_transaction(|| insert_experiment(&self.db, e, None)))
    }

    /// `f`, a transaction whose answer the runner needs now, tried again
    /// while a PostgreSQL server is out of reach, up to [`db::PATIENCE`]
    /// (a transaction is not retried on a new connection by the database
    /// layer: its work went with the old one).
    fn patiently<T>(&self, mut f: impl FnMut() -> Result<T>) -> Result<T> {
        let deadline = std::time::Instant::now() + db::PATIENCE;
        loop {
            match f() {
                Err(e) if db::is_unreachable(&e) && std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(500));
                }
                done => return done,
            }
        }
    }

    /// Declare metrics of a workload (idempotent; keeps the first order seen).
    pub fn declare_metrics(&self, exp: i64, workload: &str, specs: &[MetricSpec]) -> Result<()> {
        self.patiently(|| self.in_transaction(|| {
            let base: i64 = self.db.value(
                "SELECT COALESCE(MAX(ord) + 1, 0) FROM metrics WHERE experiment_id = ?1 AND workload = ?2",
                &vals![exp, workload],
            )?;
            for (i, m) in specs.iter().enumerate() {
                self.db.execute(
                    "INSERT INTO metrics VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING",
                    &vals![
                        exp,
                        workload,
                        &m.name,
                        &m.unit,
                        m.direction.as_str(),
                        base + i as i64
                    ],
                )?;
            }
            Ok(())
        }))
    }

    /// Record one run: appended to the run log while one is open (see
    /// [`Store::log_runs`]; folded when due), else committed at once.
    pub fn record_run(&self, r: &RunRecord) -> Result<()> {
        self.record_row(runlog::RunRow::of(r)?)
    }

    /// Record one run already in its run-log shape (a guest's run, which
    /// arrives as a row): as [`Store::record_run`].
    pub fn record_row(&self, row: runlog::RunRow) -> Result<()> {
        if self.has_writer() {
            // What the writer stored since the last run leaves the log
            // before this run is appended (no wait: the answer is there
            // or not).
            self.take_answer(std::time::Duration::ZERO)?;
        }
        let due = match self.log.borrow_mut().as_mut() {
            Some(log) => {
                log.append(row)?;
                log.fold_due()
            }
            None => return self.in_transaction(|| self.insert_row(&row).map(drop)),
        };
        if due {
            self.fold_when_reachable()?;
        }
        Ok(())
    }

    /// The inserts of one run, inside the caller's transaction; nothing
    /// when that (experiment, block, seq) is already stored. Whether it
    /// was stored now.
    ///
    /// This is on the path between two runs, so every statement comes
    /// from the prepared-statement cache: parsing them afresh cost more
    /// than the commit's WAL writes.
    pub(super) fn insert_row(&self, r: &runlog::RunRow) -> Result<bool> {
        let Some(run_id) = self.db.query_opt(
            "INSERT INTO runs (experiment_id, block, seq, config, workload, warmup, status,
             reason, stderr_tail, exit_code, started_at, boot_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
             ON CONFLICT (experiment_id, block, seq) DO NOTHING RETURNING id",
            &run_values(r),
            |row| row.get::<i64>(0),
        )?
        else {
            return Ok(false);
        };
        for (metric, values) in &r.samples {
            for (i, v) in values.iter().enumerate() {
                self.db.execute(
                    "INSERT INTO samples VALUES (?1, ?2, ?3, ?4)",
                    &vals![run_id, metric, i, f64::from_bits(*v)],
                )?;
            }
        }
        self.insert_extras(run_id, r)?;
        Ok(true)
    }

    /// A run's series and profile, once its row is stored as `run_id`.
    fn insert_extras(&self, run_id: i64, r: &runlog::RunRow) -> Result<()> {
        for (name, unit, t, v) in &r.series {
            self.db.execute(
                "INSERT INTO series VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (run_id, name)
                 DO UPDATE SET unit = excluded.unit, t_json = excluded.t_json, v_json = excluded.v_json",
                &vals![run_id, name, unit, t, v],
            )?;
        }
        for (sym, kernel, n) in &r.profile {
            self.db.execute(
                "INSERT INTO profiles VALUES (?1, ?2, ?3, ?4) ON CONFLICT (run_id, symbol, kernel)
                 DO UPDATE SET samples = excluded.samples",
                &vals![run_id, sym, *kernel, *n as i64],
            )?;
        }
        Ok(())
    }

    /// [`Store::insert_row`] of many rows, inside the caller's
    /// transaction. On PostgreSQL, where each statement is a round trip to
    /// the server, a few hundred runs go in one multi-row insert and their
    /// samples in a few more: a fold then costs a few round trips, not
    /// several per run. SQLite, in this process, takes them one by one.
    /// Returns each row's new id, None where it was already stored.
    pub(super) fn insert_rows(&self, all: &[runlog::RunRow]) -> Result<Vec<Option<i64>>> {
        if let Db::Sqlite(conn) = &self.db {
            return self.insert_rows_sqlite(conn, all);
        }
        let mut ids = vec![None; all.len()];
        // A run twice in one statement would map both rows to one id (and
        // its samples twice): keep the first, as insert_row would.
        let mut seen = std::collections::HashSet::new();
        let rows: Vec<(usize, &runlog::RunRow)> = (all.iter().enumerate())
            .filter(|(_, r)| seen.insert((r.experiment_id, r.block, r.seq)))
            .collect();
        // 12 parameters a run, 4 a sample: far below PostgreSQL's 65535.
        for chunk in rows.chunks(500) {
            let mut sql = String::from(
                "INSERT INTO runs (experiment_id, block, seq, config, workload, warmup, status,
                 reason, stderr_tail, exit_code, started_at, boot_id) VALUES ",
            );
            let mut params = Vec::with_capacity(chunk.len() * 12);
            for (i, (_, r)) in chunk.iter().enumerate() {
                sql.push_str(if i == 0 { "(" } else { ", (" });
                let p: Vec<String> = (1..=12).map(|k| format!("?{}", i * 12 + k)).collect();
                sql.push_str(&p.join(", "));
                sql.push(')');
                params.extend(run_values(r));
            }
            sql.push_str(
                " ON CONFLICT (experiment_id, block, seq) DO NOTHING RETURNING id, experiment_id, block, seq",
            );
            let stored: std::collections::HashMap<(i64, u32, u32), i64> = self
                .db
                .query_once(&sql, &params, |row| {
                    Ok(((row.get(1)?, row.get(2)?, row.get(3)?), row.get(0)?))
                })?
                .into_iter()
                .collect();
            let mut samples = Vec::new();
            for &(at, r) in chunk {
                let Some(&id) = stored.get(&(r.experiment_id, r.block, r.seq)) else {
                    continue;
                };
                ids[at] = Some(id);
                for (metric, values) in &r.samples {
                    for (i, v) in values.iter().enumerate() {
                        samples.push((id, metric.as_str(), i, f64::from_bits(*v)));
                    }
                }
                self.insert_extras(id, r)?;
            }
            for part in samples.chunks(2000) {
                let mut sql = String::from("INSERT INTO samples VALUES ");
                let mut params = Vec::with_capacity(part.len() * 4);
                for (i, (id, metric, idx, v)) in part.iter().enumerate() {
                    let k = i * 4;
                    sql.push_str(&format!(
                        "{}(?{}, ?{}, ?{}, ?{})",
                        if i == 0 { "" } else { ", " },
                        k + 1,
                        k + 2,
                        k + 3,
                        k + 4
                    ));
                    params.extend(vals![*id, *metric, *idx, *v]);
                }
                self.db.query_once(&sql, &params, |_| Ok(()))?;
            }
        }
        Ok(ids)
    }

    /// SQLite's [`Store::insert_rows`]: what [`Store::insert_row`] does
    /// per run, through its two statements prepared once for all the rows
    /// (an import of 6,000 runs spent half its time finding them again in
    /// the statement cache), and the run's id read back from the
    /// connection (`last_insert_rowid`) instead of a `RETURNING` clause. A
    /// run already stored changes no row and is skipped, as there.
    fn insert_rows_sqlite(
        &self,
        conn: &rusqlite::Connection,
        rows: &[runlog::RunRow],
    ) -> Result<Vec<Option<i64>>> {
        let mut run = conn.prepare_cached(
            "INSERT INTO runs (experiment_id, block, seq, config, workload, warmup, status,
             reason, stderr_tail, exit_code, started_at, boot_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
             ON CONFLICT (experiment_id, block, seq) DO NOTHING",
        )?;
        let mut sample = conn.prepare_cached("INSERT INTO samples VALUES (?1, ?2, ?3, ?4)")?;
        let mut ids = Vec::with_capacity(rows.len());
        for r in rows {
            if run.execute(rusqlite::params_from_iter(run_values(r).iter()))? == 0 {
                ids.push(None);
                continue;
            }
            let run_id = conn.last_insert_rowid();
            ids.push(Some(run_id));
            for (metric, values) in &r.samples {
                for (i, v) in values.iter().enumerate() {
                    sample.execute(rusqlite::params![run_id, metric, i, f64::from_bits(*v)])?;
                }
            }
            self.insert_extras(run_id, r)?;
        }
        Ok(ids)
    }

    /// Record which config is entered (None: none). Its environment is
    /// cleared: [`Store::set_entered_env`] sets it once the enter succeeded.
    pub fn set_entered_config(&self, exp: i64, config: Option<&str>) -> Result<()> {
        self.state_write(deferred::Write::Entered {
            exp,
            config: config.map(str::to_string),
        })
    }

    /// The environment the entered config gives its processes (what its
    /// setup exported included), for a teardown after a crash.
    pub fn set_entered_env(&self, exp: i64, env: &[(String, String)]) -> Result<()> {
        self.state_write(deferred::Write::EnteredEnv {
            exp,
            env: serde_json::to_string(env)?,
        })
    }

    pub fn add_event(&self, exp: i64, kind: &str, message: &str) -> Result<()> {
        self.state_write(deferred::Write::Event {
            exp,
            kind: kind.to_string(),
            message: message.to_string(),
        })
    }

    pub fn finish(
        &self,
        exp: i64,
        status: ExperimentStatus,
        self_usage: Option<&serde_json::Value>,
    ) -> Result<()> {
        if self.has_writer() {
            // After the runs, through the writer; a server out of reach
            // is waited for a bounded time, then it is left on this
            // machine with them (see `send`).
            self.state_write(deferred::Write::Finish {
                exp,
                status: status.as_str().to_string(),
                self_usage: self_usage.map(|v| v.to_string()),
            })?;
            self.catch_up_at_end()?;
            return Ok(());
        }
        // The experiment's runs go into the tables before it is marked
        // done; its status is recorded even when that fails (the log stays
        // for the next open, and the error is returned).
        let flushed = self.flush_runs();
        // Kept beside the anchor if the server is away, as the runs are.
        self.state_write(deferred::Write::Finish {
            exp,
            status: status.as_str().to_string(),
            self_usage: self_usage.map(|v| v.to_string()),
        })?;
        flushed
    }

    pub fn set_status(&self, exp: i64, status: ExperimentStatus) -> Result<()> {
        self.state_write(deferred::Write::Status {
            exp,
            status: status.as_str().to_string(),
        })
    }

    /// Mark an experiment as imported: `source` says from what (shown by
    /// every report). NULL (the default) means sysdelta measured it.
    pub fn set_source(&self, exp: i64, source: &str) -> Result<()> {
        self.db.execute(
            "UPDATE experiments SET source = ?2 WHERE id = ?1",
            &vals![exp, source],
        )?;
        Ok(())
    }

    /// Make this experiment one host's part of fleet run `fleet`, the
    /// host being called `host` there.
    pub fn set_fleet(&self, exp: i64, fleet: i64, host: &str) -> Result<()> {
        self.db.execute(
            "UPDATE experiments SET fleet_id = ?2, fleet_host = ?3 WHERE id = ?1",
            &vals![exp, fleet, host],
        )?;
        Ok(())
    }
}

/// A run's row, in the order of the runs columns both inserts name.
fn run_values(r: &runlog::RunRow) -> [db::Value<'_>; 12] {
    vals![
        r.experiment_id,
        r.block,
        r.seq,
        &r.config,
        &r.workload,
        r.warmup,
        r.status.as_str(),
        r.reason.as_deref(),
        r.stderr_tail.as_deref(),
        r.exit_code,
        r.started_at,
        r.boot
    ]
}

/// Insert `e`'s row, configs and workloads, inside a transaction the
/// caller opens and commits (an import stores its runs in the same one);
/// returns the new id. Measured here (`imported_from` is `None`) it starts
/// `running`; imported, it is stored `complete` and finished now, with where
/// its samples came from (`experiments.source`). Each experiment gets a
/// random `uid`, by which `push` and `pull` know it in any store.
pub(super) fn insert_experiment(
    db: &Db,
    e: &NewExperiment,
    imported_from: Option<&str>,
) -> Result<i64> {
    let status = if imported_from.is_some() {
        ExperimentStatus::Complete
    } else {
        ExperimentStatus::Running
    };
    let overrides = serde_json::to_string(e.overrides)?;
    let fingerprint = serde_json::to_string(e.fingerprint)?;
    let uid = new_uid();
    let id: i64 = db.value(
        "INSERT INTO experiments (name, label, plan_source, plan_text, overrides, host, fingerprint, seed,
             run_order, runs_per_cell, warmup, baseline, status, finished_at, source, uid, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13,
             CASE WHEN ?13 = 'complete' THEN {now} END, ?14, ?15, {now}) RETURNING id",
        &vals![
            e.name,
            e.label,
            e.plan_source,
            e.plan_text,
            &overrides,
            e.host,
            &fingerprint,
            e.seed as i64,
            e.order.as_str(),
            e.runs,
            e.warmup,
            e.baseline,
            status,
            imported_from,
            &uid,
        ],
    )?;
    for (i, c) in e.configs.iter().enumerate() {
        db.execute("INSERT INTO configs VALUES (?1, ?2, ?3)", &vals![id, i, c])?;
    }
    for (i, w) in e.workloads.iter().enumerate() {
        db.execute(
            "INSERT INTO workloads VALUES (?1, ?2, ?3)",
            &vals![id, i, w],
        )?;
    }
    Ok(id)
}

/// 128 random bits as 32 hex digits: an experiment's or fleet's name in
/// every store it is copied to.
pub(crate) fn new_uid() -> String {
    use rand::Rng;
    let bits: u128 = rand::rng().random();
    format!("{bits:032x}")
}
