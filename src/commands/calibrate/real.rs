//! Part (c) of calibrate: real A/A experiments on this machine through the
//! library (plan, runner, store, analysis), with a workload whose cost
//! drifts by construction. Separate because it is the one part that runs
//! processes and writes a store.

use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::analysis::{self, Verdict};
use crate::plan::{self, Overrides};
use crate::runner::{self, ExecOptions};
use crate::stats::bootstrap::stream_seed;
use crate::store::Store;

use super::Sizes;

/// The real A/A plan: two identical configs `a` and `b`, one command
/// workload. Each run appends `chunk` bytes of zeros to a file in the
/// experiment's scratch directory and then MD5-sums the whole file (about
/// 3 ms per MiB here: slow enough that the growth outweighs process
/// start-up noise, unlike `cksum`), so one run costs more than the one
/// before it: a drift as real as a growing log
/// or an aging file system, and large by construction (the last run reads
/// 2 x runs times as much as the first). `wall` is the metric that drifts.
pub fn real_plan_text(order: plan::Order, runs: u32, seed: u64, chunk: usize) -> String {
    format!(
        r#"name = "calibrate-aa"
runs = {runs}
warmup = 0
order = "{order}"
seed = {seed}

[[config]]
name = "a"

[[config]]
name = "b"

[[workload]]
name = "growing-file"
command = 'head -c {chunk} /dev/zero >> "$SYSDELTA_SCRATCH/grow" && md5sum "$SYSDELTA_SCRATCH/grow" > /dev/null'
"#,
        order = order.as_str()
    )
}

/// One real A/A experiment: the comparison of `b` with `a`.
#[derive(Clone, Debug, Serialize)]
pub struct RealOutcome {
    /// The report flags `wall` (better or worse).
    pub wall_flagged: bool,
    /// The report flags any metric (wall, user, sys, maxrss; Holm over all).
    pub any_flagged: bool,
    /// Delta of mean wall, b vs a, %.
    pub wall_delta_pct: Option<f64>,
}

/// Run one real A/A experiment into a temporary store and analyze it.
pub fn real_aa_once(order: plan::Order, runs: u32, seed: u64, chunk: usize) -> Result<RealOutcome> {
    let dir = tempfile::Builder::new()
        .prefix("sysdelta-calibrate-")
        .tempdir()
        .context("temporary store directory")?;
    let store_path = dir.path().join("calibrate.db");
    let text = real_plan_text(order, runs, seed, chunk);
    let plan = plan::parse("(calibrate)", &text, &Overrides::default())
        .map_err(|e| anyhow::anyhow!("calibrate's own plan is invalid: {e}"))?;
    let mut prepared = runner::prepare(plan, &store_path)?;
    let store = Store::open(&store_path, true)?;
    let id = runner::create(&store, &prepared, Some("calibrate"))?;
    let cancel = AtomicBool::new(false);
    let outcome = runner::execute(
        &store,
        id,
        &mut prepared,
        &ExecOptions {
            cancel: &cancel,
            quiet: true,
        },
    )?;
    if outcome.runs_failed > 0 {
        anyhow::bail!(
            "real A/A experiment: {} of {} runs failed",
            outcome.runs_failed,
            outcome.runs_done
        );
    }
    let data = store.load(id)?;
    let a = analysis::analyze(&data, &analysis::Options::default())
        .map_err(crate::error::Error::into_failure)?;
    let flagged = |v: Verdict| matches!(v, Verdict::Better | Verdict::Worse);
    let mut out = RealOutcome {
        wall_flagged: false,
        any_flagged: false,
        wall_delta_pct: None,
    };
    for m in &a.metrics {
        for c in &m.comparisons {
            out.any_flagged |= flagged(c.verdict);
            if m.spec.name == "wall" {
                out.wall_flagged |= flagged(c.verdict);
                out.wall_delta_pct = c.delta_mean_pct;
            }
        }
    }
    Ok(out)
}

#[derive(Clone, Debug, Serialize)]
pub struct RealRow {
    pub order: String,
    pub experiments: usize,
    pub wall_flagged: usize,
    pub any_flagged: usize,
    /// Mean over the experiments of |delta of mean wall|, %.
    pub mean_abs_wall_delta_pct: f64,
}

/// `reps` real A/A experiments in each order (sequential first, then
/// random-blocks, alternating so that machine-wide changes hit both).
pub fn real_table(s: &Sizes, seed: u64) -> Result<Vec<RealRow>> {
    let orders = [plan::Order::Sequential, plan::Order::RandomBlocks];
    let mut rows: Vec<RealRow> = orders
        .iter()
        .map(|o| RealRow {
            order: o.as_str().to_string(),
            experiments: 0,
            wall_flagged: 0,
            any_flagged: 0,
            mean_abs_wall_delta_pct: 0.0,
        })
        .collect();
    for rep in 0..s.real_reps {
        for (oi, &order) in orders.iter().enumerate() {
            let o = real_aa_once(
                order,
                s.real_runs,
                stream_seed(seed, 200 + rep as u64) % (1 << 62),
                s.real_chunk,
            )?;
            let r = &mut rows[oi];
            r.experiments += 1;
            r.wall_flagged += usize::from(o.wall_flagged);
            r.any_flagged += usize::from(o.any_flagged);
            r.mean_abs_wall_delta_pct += o.wall_delta_pct.unwrap_or(0.0).abs();
        }
    }
    for r in &mut rows {
        if r.experiments > 0 {
            r.mean_abs_wall_delta_pct /= r.experiments as f64;
        }
    }
    Ok(rows)
}
