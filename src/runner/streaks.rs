//! Fail fast (`--max-failures`): failed runs in a row per (config,
//! workload) cell, and the line that stops the experiment when one cell
//! reaches the limit. One counter for runs on the host and in guests.

use std::collections::HashMap;

use crate::plan::Plan;

pub struct Streaks {
    /// The limit; 0 never stops.
    max: u32,
    by_cell: HashMap<(usize, usize), u32>,
}

impl Streaks {
    pub fn new(plan: &Plan) -> Streaks {
        Streaks {
            max: plan
                .overrides
                .max_failures
                .unwrap_or(crate::plan::MAX_CONSECUTIVE_FAILURES),
            by_cell: HashMap::new(),
        }
    }

    /// Count a run of cell (config, workload); the experiment's stop line
    /// when this failure is the cell's `max`-th in a row (`reason` is its
    /// failure's).
    pub fn record(
        &mut self,
        plan: &Plan,
        exp: i64,
        (config, workload): (usize, usize),
        failure: Option<&str>,
    ) -> Option<String> {
        let streak = self.by_cell.entry((config, workload)).or_default();
        let Some(reason) = failure else {
            *streak = 0;
            return None;
        };
        *streak += 1;
        (self.max > 0 && *streak >= self.max).then(|| {
            format!(
                "{}/{} failed {streak} runs in a row (last: {reason}); \
                 fix it and `sysdelta run --resume {exp}`, or pass -i to keep a non-zero \
                 exit as a result, or --max-failures 0 to go on",
                plan.configs[config].name, plan.workloads[workload].name
            )
        })
    }
}
