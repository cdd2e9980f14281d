//! Reading experiments back: ids and labels, one experiment's info, its
//! runs with every sample, series and profiles.

// The types and imports of the store, whose impl this file continues.
use super::*;

impl Store {
    /// What [`Store::set_entered_env`] recorded; empty when nothing was.
    pub fn entered_env(&self, exp: i64) -> Result<Vec<(String, String)>> {
        let json: Option<String> = self.db.value(
            "SELECT entered_env FROM experiments WHERE id = ?1",
            &vals![exp],
        )?;
        Ok(json
            .and_then(|j| serde_json::from_str(&j).ok())
            .unwrap_or_default())
    }

    /// The messages of one experiment's events of one kind, oldest first.
    pub fn event_messages(&self, exp: i64, kind: &str) -> Result<Vec<String>> {
        self.db.query(
            "SELECT message FROM events WHERE experiment_id = ?1 AND kind = ?2 ORDER BY id",
            &vals![exp, kind],
            |r| r.get(0),
        )
    }

    /// (block, seq) of every run already recorded.
    pub fn done_slots(&self, exp: i64) -> Result<HashSet<(u32, u32)>> {
        self.flush_runs()?;
        Ok(self
            .db
            .query(
                "SELECT block, seq FROM runs WHERE experiment_id = ?1",
                &vals![exp],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?
            .into_iter()
            .collect())
    }

    pub fn experiment_ids(&self) -> Result<Vec<i64>> {
        self.db
            .query("SELECT id FROM experiments ORDER BY id", &[], |r| r.get(0))
    }

    /// Resolve an id, `last`, or a label (newest experiment with that label).
    pub fn resolve(&self, what: &str) -> Result<i64> {
        let shown = self.shown();
        if what == "last" || what == "--last" {
            return self
                .db
                .value::<Option<i64>>("SELECT MAX(id) FROM experiments", &[])?
                .ok_or_else(|| bad(format!("{shown}: the store has no experiments")));
        }
        if let Ok(id) = what.parse::<i64>() {
            let found = self
                .db
                .exists("SELECT id FROM experiments WHERE id = ?1", &vals![id])?;
            return match found {
                true => Ok(id),
                false => Err(bad(format!("no experiment with id {id} in {shown}"))),
            };
        }
        let ids: Vec<i64> = self.db.query(
            "SELECT id FROM experiments WHERE label = ?1 ORDER BY id",
            &vals![what],
            |r| r.get(0),
        )?;
        match ids.as_slice() {
            [] => Err(bad(format!(
                "no experiment has id or label '{what}' in {shown}"
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
        let mut info = self.db.query_opt(
            "SELECT id, name, label, plan_source, plan_text, overrides, host, fingerprint, seed, run_order,
                    runs_per_cell, warmup, baseline, created_at, finished_at, status, entered_config, self_usage,
                    fleet_id, fleet_host
             FROM experiments WHERE id = ?1",
            &vals![id],
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
                    seed: r.get::<i64>(8)? as u64,
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
                    fleet_id: r.get(18)?,
                    fleet_host: r.get(19)?,
                })
            },
        )?
        .ok_or_else(|| bad(format!("no experiment with id {id} in {}", self.shown())))?;
        info.configs = self.names("configs", id)?;
        info.workloads = self.names("workloads", id)?;
        Ok(info)
    }

    pub(super) fn names(&self, table: &str, id: i64) -> Result<Vec<String>> {
        let sql = match table {
            "configs" => "SELECT name FROM configs WHERE experiment_id = ?1 ORDER BY idx",
            _ => "SELECT name FROM workloads WHERE experiment_id = ?1 ORDER BY idx",
        };
        self.db.query(sql, &vals![id], |r| r.get(0))
    }

    /// Everything stored about one experiment.
    pub fn load(&self, id: i64) -> Result<ExperimentData> {
        self.flush_runs()?;
        let mut data = self.load_without_runs(id)?;
        data.runs = self.runs_from_block(id, 0)?;
        Ok(data)
    }

    /// [`Store::load`] but for the runs (left empty).
    pub(super) fn load_without_runs(&self, id: i64) -> Result<ExperimentData> {
        let info = self.info(id)?;
        let metrics = self.metrics(id)?;
        let events = self.db.query(
            "SELECT at, kind, message FROM events WHERE experiment_id = ?1 ORDER BY id",
            &vals![id],
            |r| {
                Ok(Event {
                    at: r.get(0)?,
                    kind: r.get(1)?,
                    message: r.get(2)?,
                })
            },
        )?;
        Ok(ExperimentData {
            info,
            metrics,
            runs: Vec::new(),
            events,
            series: self.series(id)?,
            profiles: self.profile_totals(id)?,
            boots: self.boots(id)?,
        })
    }

    /// One experiment's measured ok runs (warm-ups aside), counted per
    /// boot (None: on the host), no sample read: what `list` shows.
    pub fn measured_ok_by_boot(&self, exp: i64) -> Result<Vec<(Option<i64>, usize)>> {
        self.flush_runs()?;
        self.db.query(
            "SELECT boot_id, COUNT(*) FROM runs WHERE experiment_id = ?1 AND warmup = 0 AND status = 'ok'
             GROUP BY boot_id",
            &vals![exp],
            |r| Ok((r.get(0)?, r.get::<i64>(1)? as usize)),
        )
    }

    /// One experiment's declared metrics, in its workloads' order and each
    /// workload's own.
    pub fn metrics(&self, id: i64) -> Result<Vec<StoredMetric>> {
        self.db.query(
            "SELECT m.workload, m.name, m.unit, m.direction FROM metrics m
             LEFT JOIN workloads w ON w.experiment_id = m.experiment_id AND w.name = m.workload
             WHERE m.experiment_id = ?1 ORDER BY w.idx, m.ord",
            &vals![id],
            |r| {
                Ok(StoredMetric {
                    workload: r.get(0)?,
                    spec: MetricSpec {
                        name: r.get(1)?,
                        unit: r.get(2)?,
                        direction: r.get(3)?,
                    },
                })
            },
        )
    }

    /// Series recorded for one experiment: (run id, series).
    pub fn series(&self, exp: i64) -> Result<Vec<(i64, SeriesRecord)>> {
        self.flush_runs()?;
        let mut series = self.db.query(
            "SELECT s.run_id, s.name, s.unit, s.t_json, s.v_json FROM series s JOIN runs r ON r.id = s.run_id
             WHERE r.experiment_id = ?1 ORDER BY s.run_id, s.name",
            &vals![exp],
            |r| {
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
            },
        )?;
        // In byte order whatever the database's collation (PostgreSQL's may
        // be a locale's), so both stores give the same order.
        series.sort_by(|a, b| (a.0, a.1.name.as_bytes()).cmp(&(b.0, b.1.name.as_bytes())));
        Ok(series)
    }

    /// Profile samples summed per (config, symbol, kernel) for one
    /// experiment, over the plan's workloads: the monitor probe's runs
    /// (`monitor::control`) would add sysdelta's own loop to the baseline.
    pub fn profile_totals(&self, exp: i64) -> Result<Vec<(String, String, bool, u64)>> {
        self.flush_runs()?;
        let probe = crate::monitor::control::PROBE_WORKLOAD;
        let mut totals: Vec<(String, String, bool, u64)> = self.db.query(
            // Summed as floating point, which no count overflows (an
            // integer SUM of counts another writer made huge fails with
            // an SQL error): exact up to 2^53 samples.
            "SELECT r.config, p.symbol, p.kernel, SUM(CAST(p.samples AS DOUBLE PRECISION)) AS samples, MIN(p.samples) AS least_samples FROM profiles p
             JOIN runs r ON r.id = p.run_id
             WHERE r.experiment_id = ?1 AND r.warmup = 0 AND r.workload <> ?2
             GROUP BY r.config, p.symbol, p.kernel",
            &vals![exp, probe],
            |r| {
                let (n, least): (f64, i64) = (r.get(3)?, r.get(4)?);
                if least < 0 {
                    return Err(r.damaged(3, format!("{least} is not a count of samples")));
                }
                if n > 9.0e15 {
                    return Err(r.damaged(3, format!("{n:e} samples in all is more than any profile takes")));
                }
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, n as u64))
            },
        )?;
        // One order on both stores (GROUP BY promises none).
        totals.sort_by(|a, b| (&a.0, &a.1, a.2).cmp(&(&b.0, &b.1, b.2)));
        Ok(totals)
    }

    /// Where an experiment's samples came from: None when sysdelta ran it.
    pub fn source(&self, exp: i64) -> Result<Option<String>> {
        self.db
            .value("SELECT source FROM experiments WHERE id = ?1", &vals![exp])
    }

    /// Ids and labels of experiments whose label starts with `prefix`, oldest first.
    pub fn labelled(&self, prefix: &str) -> Result<Vec<(i64, String)>> {
        let all: Vec<(i64, String)> = self.db.query(
            "SELECT id, label FROM experiments WHERE label IS NOT NULL ORDER BY id",
            &[],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok(all
            .into_iter()
            .filter(|(_, label)| label.starts_with(prefix))
            .collect())
    }
}
