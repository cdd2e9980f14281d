//! Reading experiments back: ids and labels, one experiment's info, its
//! runs with every sample, series and profiles.

// The types and imports of the store, whose impl this file continues.
use super::*;

impl Store {
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

    /// The messages of one experiment's events of one kind, oldest first.
    pub fn event_messages(&self, exp: i64, kind: &str) -> Result<Vec<String>> {
        let mut st = self.conn.prepare_cached(
            "SELECT message FROM events WHERE experiment_id = ?1 AND kind = ?2 ORDER BY id",
        )?;
        let rows = st.query_map(params![exp, kind], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
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
                    fleet_host: None,
                    fleet_id: None,
                })
            },
        )?;
        info.configs = self.names("configs", id)?;
        info.workloads = self.names("workloads", id)?;
        Ok(info)
    }

    pub(super) fn names(&self, table: &str, id: i64) -> Result<Vec<String>> {
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

    /// Profile samples summed per (config, symbol, kernel) for one
    /// experiment, over the plan's workloads: the monitor probe's runs
    /// (`monitor::control`) would add sysdelta's own loop to the baseline.
    pub fn profile_totals(&self, exp: i64) -> Result<Vec<(String, String, bool, u64)>> {
        self.flush_runs()?;
        let mut st = self.conn.prepare(
            "SELECT r.config, p.symbol, p.kernel, SUM(p.samples) FROM profiles p JOIN runs r ON r.id = p.run_id
             WHERE r.experiment_id = ?1 AND r.warmup = 0 AND r.workload <> ?2
             GROUP BY r.config, p.symbol, p.kernel",
        )?;
        let probe = crate::monitor::control::PROBE_WORKLOAD;
        let rows = st.query_map(rusqlite::params![exp, probe], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get::<_, i64>(3)? as u64))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
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
