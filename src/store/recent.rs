//! The runs of one experiment from a block on, each with every sample:
//! what `load` reads from block 0, and what adaptive stopping reads after
//! each block (only the blocks it has not seen), so that its cost follows
//! the runs a block added, not the whole experiment.

// The types and imports of the store, whose impl this file continues.
use super::*;

impl Store {
    /// The runs of `exp` in block `from` and later (measured, warm-up and
    /// failed alike), in run order, each with its samples.
    pub fn runs_from_block(&self, exp: i64, from: u32) -> Result<Vec<StoredRun>> {
        self.flush_runs()?;
        // Both statements walk the runs' (experiment_id, block, seq) index
        // from `from` on, and the samples' key under each run.
        let mut runs: Vec<StoredRun> = self.db.query(
            "SELECT id, block, seq, config, workload, warmup, status, reason, stderr_tail, exit_code, started_at, boot_id
             FROM runs WHERE experiment_id = ?1 AND block >= ?2 ORDER BY block, seq",
            &vals![exp, from],
            |r| {
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
            },
        )?;
        // Both statements go in run order, so a run's samples come right
        // after the previous run's: a cursor finds their run, and the map
        // of ids (a hash per sample) is built only if one ever does not.
        let ids: Vec<i64> = runs.iter().map(|r| r.id).collect();
        let mut cursor = 0;
        let mut index: Option<std::collections::HashMap<i64, usize>> = None;
        let mut find = |run_id: i64| -> Option<usize> {
            if let Some(i) = (cursor..ids.len().min(cursor + 2)).find(|&i| ids[i] == run_id) {
                cursor = i;
                return Some(i);
            }
            let index = index
                .get_or_insert_with(|| ids.iter().enumerate().map(|(i, &id)| (id, i)).collect());
            let found = index.get(&run_id).copied();
            // Past a run without samples (a failed one) the cursor follows.
            if let Some(i) = found {
                cursor = i;
            }
            found
        };
        self.db.for_each(
            // Ordered along the runs index and the samples key, so SQLite
            // streams the rows without a temporary sort of all samples.
            "SELECT s.run_id, s.metric, s.value FROM samples s JOIN runs r ON r.id = s.run_id
             WHERE r.experiment_id = ?1 AND r.block >= ?2 ORDER BY r.block, r.seq, s.metric, s.idx",
            &vals![exp, from],
            |row| {
                let run_id: i64 = row.get(0)?;
                let v: f64 = row.get(2)?;
                if let Some(i) = find(run_id) {
                    let samples = &mut runs[i].samples;
                    // Borrow the name; allocate only for a run's first sample of it.
                    row.with_cell(1, |c| {
                        let db::CellRef::Text(metric) = c else {
                            return Err(row.damaged(1, "not text"));
                        };
                        match samples.get_mut(metric) {
                            Some(values) => values.push(v),
                            None => {
                                samples.insert(metric.to_string(), vec![v]);
                            }
                        }
                        Ok(())
                    })?;
                }
                Ok(())
            },
        )?;
        Ok(runs)
    }
}
