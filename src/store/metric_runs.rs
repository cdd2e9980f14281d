//! One metric's runs across many experiments: what `history` reads, and
//! nothing more. `load` reads every run, sample, series, profile and
//! event of an experiment; a history of one metric over a store of
//! 1,000-benchmark experiments spent its time and memory on the other
//! 999 benchmarks. Here each statement reads one table for a batch of
//! experiments at once (a few statements per [`BATCH`] experiments, not a
//! few per experiment: on a team's PostgreSQL store each is a round trip),
//! and the samples only of the metric asked for, of the measured runs of
//! the config asked for.

// The types and imports of the store, whose impl this file continues.
use super::*;

/// Experiments per statement: their ids are written into the statement's
/// `IN (...)` list.
const BATCH: usize = 256;

/// One experiment's part of one metric's history.
#[derive(Clone, Debug)]
pub struct MetricRuns {
    pub id: i64,
    pub baseline: String,
    /// Its configs in plan order, as the reports show them: without the
    /// monitors-off control config (`monitor::control_config`).
    pub configs: Vec<String>,
    /// Its metrics named `METRIC`, or `WORKLOAD/METRIC` as a whole, in its
    /// workloads' order; the monitor probe's are not among them. More than
    /// one is for the caller to refuse (the name is ambiguous).
    pub metrics: Vec<StoredMetric>,
    /// Each measured run that ended ok, of the config asked for (or the
    /// baseline), of a workload in `metrics`, in run order: its workload,
    /// the metric's name and its samples of that metric in order. A run
    /// with no sample of it is absent.
    pub runs: Vec<MetricRun>,
}

/// One run's samples of one metric (see [`MetricRuns::runs`]).
#[derive(Clone, Debug, PartialEq)]
pub struct MetricRun {
    pub workload: String,
    pub metric: String,
    pub values: Vec<f64>,
}

/// The SQL condition that a metric row `m` is `metric` (the statements'
/// `?1`) and not the monitor probe's (`?2`): both names may hold '/' (an
/// `ab` workload `./bench`, a Go metric `ns/op`), so the whole text is
/// matched against each stored pair rather than split at a '/'.
const NAMED: &str = "m.workload <> ?2 AND (m.name = ?1 OR m.workload || '/' || m.name = ?1)";

impl Store {
    /// [`MetricRuns`] of `metric` for each of the experiments `ids`, in
    /// that order, from the runs of `config` (None: each one's baseline).
    /// An id the store does not have is left out.
    pub fn metric_runs(
        &self,
        ids: &[i64],
        metric: &str,
        config: Option<&str>,
    ) -> Result<Vec<MetricRuns>> {
        self.flush_runs()?;
        let mut out = Vec::with_capacity(ids.len());
        for batch in ids.chunks(BATCH) {
            let mut got = self.metric_runs_batch(batch, metric, config)?;
            out.extend(batch.iter().filter_map(|id| got.remove(id)));
        }
        Ok(out)
    }

    /// [`Store::metric_runs`] of one batch, by experiment id.
    fn metric_runs_batch(
        &self,
        ids: &[i64],
        metric: &str,
        config: Option<&str>,
    ) -> Result<std::collections::HashMap<i64, MetricRuns>> {
        // Ids are integers from the store itself: written into the text,
        // they cannot change what the statement does.
        let list = ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
        let probe = crate::monitor::control::PROBE_WORKLOAD;
        let mut got: std::collections::HashMap<i64, MetricRuns> = self
            .db
            .query_once(
                &format!("SELECT id, baseline FROM experiments WHERE id IN ({list})"),
                &[],
                |r| {
                    Ok(MetricRuns {
                        id: r.get(0)?,
                        baseline: r.get(1)?,
                        configs: Vec::new(),
                        metrics: Vec::new(),
                        runs: Vec::new(),
                    })
                },
            )?
            .into_iter()
            .map(|m| (m.id, m))
            .collect();
        let configs: Vec<(i64, String)> = self.db.query_once(
            &format!(
                "SELECT experiment_id, name FROM configs WHERE experiment_id IN ({list})
                 ORDER BY experiment_id, idx"
            ),
            &[],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        for (id, name) in configs {
            if let Some(m) = got.get_mut(&id) {
                if name != crate::monitor::control_config(&m.baseline) {
                    m.configs.push(name);
                }
            }
        }
        self.db.query_once(
            &format!(
                "SELECT m.experiment_id, m.workload, m.name, m.unit, m.direction FROM metrics m
                 LEFT JOIN workloads w ON w.experiment_id = m.experiment_id AND w.name = m.workload
                 WHERE m.experiment_id IN ({list}) AND {NAMED}
                 ORDER BY m.experiment_id, w.idx, m.ord"
            ),
            &vals![metric, probe],
            |r| {
                if let Some(m) = got.get_mut(&r.get(0)?) {
                    m.metrics.push(StoredMetric {
                        workload: r.get(1)?,
                        spec: MetricSpec {
                            name: r.get(2)?,
                            unit: r.get(3)?,
                            direction: r.get(4)?,
                        },
                    });
                }
                Ok(())
            },
        )?;
        // Rows are handed on as they come: the closures keep nothing.
        self.metric_samples(&list, metric, config, &mut got)?;
        Ok(got)
    }

    /// The runs of [`MetricRuns::runs`] for the experiments in `list` (ids
    /// joined by commas), into `got`.
    fn metric_samples(
        &self,
        list: &str,
        metric: &str,
        config: Option<&str>,
        got: &mut std::collections::HashMap<i64, MetricRuns>,
    ) -> Result<()> {
        let probe = crate::monitor::control::PROBE_WORKLOAD;
        // A config given is `?4`; otherwise each experiment's baseline.
        let which = match config {
            Some(_) => "r.config = ?4",
            None => "r.config = e.baseline",
        };
        // In run order, and each run's samples in their order: the runs'
        // (experiment_id, block, seq) index, and under each run the
        // samples' (run_id, metric, idx) key.
        let sql = format!(
            "SELECT r.experiment_id, r.id, r.workload, m.name, s.value
             FROM runs r
             JOIN experiments e ON e.id = r.experiment_id
             JOIN metrics m ON m.experiment_id = r.experiment_id AND m.workload = r.workload
             JOIN samples s ON s.run_id = r.id AND s.metric = m.name
             WHERE r.experiment_id IN ({list}) AND {which} AND r.warmup = 0 AND r.status = ?3
               AND {NAMED}
             ORDER BY r.experiment_id, r.block, r.seq, m.name, s.idx"
        );
        let mut params = vals![metric, probe, RunStatus::Ok].to_vec();
        if let Some(c) = config {
            params.push(c.into());
        }
        let mut last: Option<(i64, String)> = None;
        self.db.query_once(&sql, &params, |r| {
            let (exp, run): (i64, i64) = (r.get(0)?, r.get(1)?);
            let v: f64 = r.get(4)?;
            let name: String = r.get(3)?;
            let Some(m) = got.get_mut(&exp) else {
                return Ok(());
            };
            // A new (run, metric) starts a new entry.
            let same = last
                .as_ref()
                .is_some_and(|(lr, ln)| *lr == run && *ln == name);
            match m.runs.last_mut() {
                Some(cur) if same => cur.values.push(v),
                _ => {
                    m.runs.push(MetricRun {
                        workload: r.get(2)?,
                        metric: name.clone(),
                        values: vec![v],
                    });
                    last = Some((run, name));
                }
            }
            Ok(())
        })?;
        Ok(())
    }
}
