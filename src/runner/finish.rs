//! The end of an experiment and the questions asked along the way: which
//! cells have no successful run, whether adaptive stopping has reached its
//! precision (asked of `analysis`), the metrics to declare, and the status
//! it ends with.

// The runner's shared types and imports, which this file continues.
use super::*;
use crate::analysis::precision::Precision;
use std::collections::HashMap;

/// The cells (config/workload) of an experiment without one successful
/// measured run, each with its last failure: such an experiment has no
/// result for them, and `run` exits non-zero. Of the store's tally per
/// cell (`Store::cell_tallies`), which reads no samples.
pub fn cells_without_success(
    info: &crate::store::ExperimentInfo,
    tallies: &HashMap<(String, String), crate::store::CellTally>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (c, w) in crate::monitor::control::distinct_cells(&info.configs, &info.workloads) {
        let (c, w) = (&info.configs[c], &info.workloads[w]);
        let tally = tallies.get(&(c.clone(), w.clone()));
        if tally.is_some_and(|t| t.measured_ok > 0) {
            continue;
        }
        let last = tally
            .and_then(|t| t.last_reason.as_deref())
            .map(|r| format!(" (last failure: {r})"))
            .unwrap_or_else(|| " (no measured run)".into());
        out.push(format!("{c}/{w}{last}"));
    }
    out
}

/// How long the slowest cell may run under `--min-time`, as a multiple of
/// it: every block holds every cell (so each comparison stays balanced and
/// resume can rebuild the blocks), so the fast cells' count is also the
/// slow ones'. Without a bound, a 1 ms and a 1 s workload in one plan
/// would run the 1 s one 3,000 times; with it, that plan stops once the
/// 1 s cell has run 60 s and says that the fast cell got less than its
/// minimum time.
pub(super) const MIN_TIME_SLOWEST_FACTOR: f64 = 20.0;

/// What `--min-time` and `--until` ask after each block, answered from
/// the runs so far: kept up to date by reading from the store only the
/// blocks not yet seen (`Store::runs_from_block`), so a block's check
/// costs what that block added, not everything before it.
pub(super) struct SoFar {
    exp: i64,
    cells: Precision,
}

impl SoFar {
    /// Nothing seen yet of experiment `exp`.
    pub(super) fn new(store: &Store, exp: i64) -> Result<SoFar> {
        let info = store.info(exp)?;
        let cells = Precision::new(&info).map_err(crate::error::Error::into_failure)?;
        Ok(SoFar { exp, cells })
    }

    /// Take in the runs stored since the last look.
    fn update(&mut self, store: &Store) -> Result<()> {
        let runs = store.runs_from_block(self.exp, self.cells.from_block())?;
        self.cells.add(&runs);
        Ok(())
    }

    /// The `--min-time` rule (see [`blocks_for_min_time`]) on the runs so
    /// far.
    pub(super) fn blocks_for_min_time(
        &mut self,
        store: &Store,
        secs: f64,
    ) -> Result<(u32, String)> {
        self.update(store)?;
        Ok(blocks_for_min_time(&self.cells.wall_sums(), secs))
    }

    /// The adaptive stopping rule, a precision rule: stop when every
    /// defined ratio CI (every metric, every config against the baseline)
    /// is narrower than `target` (as a fraction of the baseline mean); see
    /// [`Precision::check`]. Reads a streaming bootstrap of 2,000
    /// replicates per cell (a check's cost does not grow with the blocks);
    /// the final report computes its full bootstrap.
    pub(super) fn precision_check(
        &mut self,
        store: &Store,
        target: f64,
        only: &[String],
    ) -> Result<(bool, String)> {
        self.update(store)?;
        let metrics = store.metrics(self.exp)?;
        Ok(self.cells.check(&metrics, target, only))
    }
}

/// The `--min-time` rule, hyperfine's: each cell runs until its measured
/// successful runs add up to `secs` of wall time. `sums` holds, per
/// cell, its successful measured runs with a wall time and their sum.
/// Returns the measured blocks still needed, estimated from each cell's
/// mean wall time so far (0: every cell has its time, or the slowest cell
/// reached [`MIN_TIME_SLOWEST_FACTOR`] x `secs`), and the line that says
/// why it stopped. Cells without a successful run or without a wall time
/// (built-ins that time themselves) ask for nothing: their count stays
/// the planned one.
fn blocks_for_min_time(sums: &HashMap<(&str, &str), (u32, f64)>, secs: f64) -> (u32, String) {
    let mut need = 0u32;
    let mut shortest = f64::INFINITY;
    // The most blocks any cell may still add before it reaches the bound.
    let mut room = u32::MAX;
    let mut slowest: Option<((&str, &str), f64)> = None;
    let limit = MIN_TIME_SLOWEST_FACTOR * secs;
    for (cell, (n, total)) in sums {
        shortest = shortest.min(*total);
        if *total <= 0.0 {
            continue;
        }
        let mean = total / f64::from(*n);
        if *total < secs {
            let runs = (secs / mean).ceil().min(f64::from(u32::MAX)) as u32;
            need = need.max(runs.saturating_sub(*n));
        }
        let more = ((limit - total) / mean)
            .floor()
            .clamp(0.0, f64::from(u32::MAX)) as u32;
        if more < room {
            room = more;
            slowest = Some((*cell, *total));
        }
    }
    if need > room {
        let ((c, w), total) = slowest.expect("room is bounded by a cell");
        let why = format!(
            "{c}/{w} ran {total:.1} s, the most --min-time {secs} s lets the slowest cell run              ({MIN_TIME_SLOWEST_FACTOR} x); the shortest cell ran {shortest:.3} s"
        );
        return (room, why);
    }
    let why = format!("every cell ran at least {shortest:.3} s (--min-time {secs} s)");
    (need, why)
}

/// Record how an experiment that ran to its end (or was stopped) ended:
/// `interrupted` (resume it), `failed` (a cell failed too often in a row)
/// or `complete`.
pub(crate) fn finish(
    store: &Store,
    exp: i64,
    interrupted: bool,
    stopped: Option<String>,
    usage: &serde_json::Value,
    (runs_done, runs_failed): (usize, usize),
) -> Result<Outcome> {
    let status = if interrupted {
        ExperimentStatus::Interrupted
    } else if stopped.is_some() {
        ExperimentStatus::Failed
    } else {
        ExperimentStatus::Complete
    };
    store.finish(exp, status, Some(usage))?;
    Ok(Outcome {
        experiment_id: exp,
        status,
        runs_done,
        runs_failed,
        stopped,
        left_local: store.left_local(),
    })
}

/// Declare every workload's metrics, with the metrics config kinds add to
/// each run (trace bytes, events lost), before the first run.
pub(crate) fn declare_metrics(store: &Store, exp: i64, p: &Prepared) -> Result<()> {
    let kind_metrics: Vec<MetricSpec> = p
        .configs
        .iter()
        .flat_map(|c| c.kinds.iter().flat_map(|k| k.metrics()))
        .collect();
    for (def, w) in &p.workloads {
        let mut specs = w.metrics();
        for m in &kind_metrics {
            if !specs.iter().any(|s| s.name == m.name) {
                specs.push(m.clone());
            }
        }
        store.declare_metrics(exp, &def.name, &specs)?;
    }
    Ok(())
}
