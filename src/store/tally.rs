//! What the end of `run` says of an experiment without reading its
//! samples: per (config, workload) cell, its runs counted by kind and the
//! last failure's reason. Its size follows the cells, not the runs, so a
//! run that prints no report (`--no-report`) ends in the memory its runs
//! took, however many there were.

// The types and imports of the store, whose impl this file continues.
use super::*;
use std::collections::HashMap;

/// One cell's runs, counted as `report` and `list` count them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CellTally {
    /// Measured (not warm-up) runs that succeeded.
    pub measured_ok: usize,
    /// Measured runs that did not.
    pub measured_failed: usize,
    /// Warm-up runs, whatever their status.
    pub warmup: usize,
    /// The reason of the last measured run (in run order) that has one.
    pub last_reason: Option<String>,
}

impl Store {
    /// Every cell of `exp` that has a run, keyed (config, workload).
    pub fn cell_tallies(&self, exp: i64) -> Result<HashMap<(String, String), CellTally>> {
        self.flush_runs()?;
        let mut out: HashMap<(String, String), CellTally> = HashMap::new();
        // Counted by the database: one row per cell, warm-up and status.
        let groups = self.db.query(
            "SELECT config, workload, warmup, status, COUNT(*) FROM runs
             WHERE experiment_id = ?1 GROUP BY config, workload, warmup, status",
            &vals![exp],
            |r| {
                let n: i64 = r.get(4)?;
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, n as usize))
            },
        )?;
        for (config, workload, warmup, status, n) in groups {
            let status: RunStatus = status;
            let t = out.entry((config, workload)).or_default();
            match (warmup, status == RunStatus::Ok) {
                (true, _) => t.warmup += n,
                (false, true) => t.measured_ok += n,
                (false, false) => t.measured_failed += n,
            }
        }
        // Streamed in run order, each cell keeping only its latest reason.
        self.db.for_each(
            "SELECT config, workload, warmup, reason FROM runs
             WHERE experiment_id = ?1 AND reason IS NOT NULL ORDER BY block, seq",
            &vals![exp],
            |r| {
                let warmup: bool = r.get(2)?;
                if !warmup {
                    let t = out.entry((r.get(0)?, r.get(1)?)).or_default();
                    t.last_reason = r.get(3)?;
                }
                Ok(())
            },
        )?;
        Ok(out)
    }
}
