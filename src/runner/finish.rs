//! The end of an experiment and the questions asked along the way: which
//! cells have no successful run, whether adaptive stopping has reached its
//! precision (asked of `analysis`), the metrics to declare, and the status
//! it ends with.

// The runner's shared types and imports, which this file continues.
use super::*;
use std::collections::HashMap;

/// The cells (config/workload) of an experiment without one successful
/// measured run, each with its last failure: such an experiment has no
/// result for them, and `run` exits non-zero. Of the data `run` loaded
/// once for its counts and its report.
pub fn cells_without_success(d: &crate::store::ExperimentData) -> Vec<String> {
    let mut out = Vec::new();
    for (c, w) in crate::monitor::control::distinct_cells(&d.info.configs, &d.info.workloads) {
        let (c, w) = (&d.info.configs[c], &d.info.workloads[w]);
        let runs: Vec<_> = d
            .runs
            .iter()
            .filter(|r| &r.config == c && &r.workload == w && !r.warmup)
            .collect();
        if runs.iter().any(|r| r.status == RunStatus::Ok) {
            continue;
        }
        let last = runs
            .iter()
            .rev()
            .find_map(|r| r.reason.as_deref())
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

/// The `--min-time` rule, hyperfine's: each cell runs until its measured
/// successful runs add up to `secs` of wall time. Returns the measured
/// blocks still needed, estimated from each cell's mean wall time so far
/// (0: every cell has its time, or the slowest cell reached
/// [`MIN_TIME_SLOWEST_FACTOR`] x `secs`), and the line that says why it
/// stopped. Cells without a successful run or without a wall time
/// (built-ins that time themselves) ask for nothing: their count stays the
/// planned one.
pub(super) fn blocks_for_min_time(store: &Store, exp: i64, secs: f64) -> Result<(u32, String)> {
    let data = store.load(exp)?;
    let mut sums: HashMap<(&str, &str), (u32, f64)> = HashMap::new();
    for r in data.runs.iter().filter(|r| r.is_measured_ok()) {
        let Some(w) = r.samples.get("wall").and_then(|v| v.first()) else {
            continue;
        };
        let e = sums.entry((&r.config, &r.workload)).or_default();
        e.0 += 1;
        e.1 += w;
    }
    let mut need = 0u32;
    let mut shortest = f64::INFINITY;
    // The most blocks any cell may still add before it reaches the bound.
    let mut room = u32::MAX;
    let mut slowest: Option<((&str, &str), f64)> = None;
    let limit = MIN_TIME_SLOWEST_FACTOR * secs;
    for (cell, (n, total)) in &sums {
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
        return Ok((room, why));
    }
    let why = format!("every cell ran at least {shortest:.3} s (--min-time {secs} s)");
    Ok((need, why))
}

/// The adaptive stopping rule, a precision rule: stop when every defined
/// ratio CI (every metric, every config against the baseline) is narrower
/// than `target` (as a fraction of the baseline mean). It looks only at the
/// widths, never at whether a difference is significant, so stopping does
/// not bias the tests (a "stop when significant" rule would). Uses 2,000
/// resamples per check; the final report uses the full count.
pub(super) fn precision_check(
    store: &Store,
    exp: i64,
    target: f64,
    only: &[String],
) -> Result<(bool, String)> {
    let data = store.load(exp)?;
    let opts = crate::analysis::Options {
        resamples: 2000,
        ..Default::default()
    };
    let a = crate::analysis::analyze(&data, &opts).map_err(crate::error::Error::into_failure)?;
    let mut widest: Option<(f64, String)> = None;
    let mut undefined = 0usize;
    let wanted = |workload: &str, metric: &str| {
        only.is_empty()
            || only
                .iter()
                .any(|o| o == metric || *o == format!("{workload}/{metric}"))
    };
    for m in a
        .metrics
        .iter()
        .filter(|m| wanted(&m.workload, &m.spec.name))
    {
        for c in &m.comparisons {
            match c.ratio_ci {
                Some((lo, hi)) => {
                    let w = hi - lo;
                    if widest.as_ref().is_none_or(|(x, _)| w > *x) {
                        widest = Some((w, format!("{}/{} {}", m.workload, m.spec.name, c.config)));
                    }
                }
                None => undefined += 1,
            }
        }
    }
    Ok(match widest {
        None => (false, "no confidence interval defined yet".into()),
        Some((w, what)) => (
            w <= target,
            format!(
                "widest 95% CI of a ratio {:.2}% ({what}), target {:.2}%{}",
                100.0 * w,
                100.0 * target,
                if undefined > 0 {
                    format!("; {undefined} comparisons without a CI not counted")
                } else {
                    String::new()
                }
            ),
        ),
    })
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
