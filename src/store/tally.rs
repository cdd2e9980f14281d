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
        // One pass in run order along the runs' (experiment_id, block,
        // seq) index: no sort, and no row kept past its own step.
        self.db.for_each(
            "SELECT config, workload, warmup, status, reason FROM runs
             WHERE experiment_id = ?1 ORDER BY block, seq",
            &vals![exp],
            |r| {
                let (warmup, status): (bool, RunStatus) = (r.get(2)?, r.get(3)?);
                let t = out.entry((r.get(0)?, r.get(1)?)).or_default();
                match (warmup, status == RunStatus::Ok) {
                    (true, _) => t.warmup += 1,
                    (false, true) => t.measured_ok += 1,
                    (false, false) => t.measured_failed += 1,
                }
                let reason: Option<String> = r.get(4)?;
                if let (false, Some(reason)) = (warmup, reason) {
                    t.last_reason = Some(reason);
                }
                Ok(())
            },
        )?;
        Ok(out)
    }
}
