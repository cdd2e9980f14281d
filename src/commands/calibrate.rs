//! `sysdelta calibrate [--quick]`: checks, on this machine and in
//! simulation, that the report's statistics keep their promises.
//!
//! (a) A/A false-positive rate of the verdict (U test p < 0.05, the mean
//!     and the Hodges-Lehmann shift pointing the same way) and the coverage
//!     of the 95% CI of the ratio of means (expanded percentile), for
//!     normal, log-normal, bimodal and heavy-tailed (t, 3 df) noise
//!     (`stats::calibrate`).
//! (b) Injected shifts at CoV 1%: the verdict's detection rate at the
//!     known-variance minimum run count, and the run count it really needs
//!     for 80% detection (found by search over simulated experiments).
//! (c) Real A/A experiments on this machine, through the library (plan,
//!     runner, store, analysis), in sequential and in random-blocks order,
//!     with a workload whose cost drifts by construction.
//! (d) Adaptive stopping on precision: add one run per side until the CI
//!     is narrow enough, and compare the runs it uses with the
//!     known-variance t-test runs.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use rayon::prelude::*;
use serde::Serialize;

use crate::analysis::{self, Verdict};
use crate::plan::{self, Overrides};
use crate::runner::{self, ExecOptions};
use crate::stats::bootstrap::{expanded_confidence, ratio_of_means_ci, stream_seed};
use crate::stats::calibrate::{
    aa_false_positive_rate, calibration_cov, ci_coverage, detection_rate, draw, verdict, Shape,
    SHAPES,
};
use crate::stats::power::{runs_for_power_u_test, runs_known_variance};
use crate::stats::special::normal_quantile;
use crate::store::Store;

#[derive(Args, Debug, Clone)]
pub struct CalibrateArgs {
    /// Smaller sizes (1,000 trials still; fewer n, fewer real experiments).
    #[arg(long)]
    pub quick: bool,
    /// Skip the real A/A experiments on this machine (part c).
    #[arg(long)]
    pub no_real: bool,
    /// Seed of every simulation (the figures are reproducible given it).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// How big each part is.
#[derive(Clone, Debug, Serialize)]
pub struct Sizes {
    /// Simulated experiments per figure in (a) and (b).
    pub trials: usize,
    /// Bootstrap resamples per CI in (a) and (b).
    pub resamples: usize,
    /// Runs per side in (a).
    pub ns: Vec<usize>,
    /// Real A/A experiments per order in (c).
    pub real_reps: usize,
    /// Runs per config in each real experiment.
    pub real_runs: u32,
    /// Bytes each real run appends to the file it reads.
    pub real_chunk: usize,
    /// Simulated experiments per figure in (d).
    pub adaptive_trials: usize,
    /// Resamples per CI in (d), where a CI follows every added run.
    pub adaptive_resamples: usize,
}

impl Sizes {
    pub fn quick() -> Sizes {
        Sizes {
            trials: 1000,
            resamples: 10_000,
            ns: vec![5, 10, 20],
            real_reps: 20,
            real_runs: 8,
            real_chunk: 1 << 20,
            adaptive_trials: 2000,
            adaptive_resamples: 2000,
        }
    }

    pub fn full() -> Sizes {
        Sizes {
            trials: 1000,
            resamples: 10_000,
            ns: vec![5, 10, 20, 40],
            real_reps: 50,
            real_runs: 10,
            real_chunk: 1 << 20,
            adaptive_trials: 2000,
            adaptive_resamples: 10_000,
        }
    }
}

pub const AA_BAND: (f64, f64) = (0.036, 0.064);
pub const COVERAGE_BAND: (f64, f64) = (0.93, 0.97);
/// True shift of the coverage simulations (the ratio CI must contain 1.02).
pub const COVERAGE_SHIFT: f64 = 0.02;

// ---------------------------------------------------------------- (a)

#[derive(Clone, Debug, Serialize)]
pub struct AaCell {
    pub n: usize,
    pub false_positive: f64,
    pub coverage: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct AaRow {
    pub shape: Shape,
    pub cov: f64,
    pub cells: Vec<AaCell>,
}

/// A/A false-positive rate and CI coverage for every shape and n.
pub fn aa_table(s: &Sizes, seed: u64) -> Vec<AaRow> {
    SHAPES
        .iter()
        .enumerate()
        .map(|(si, &shape)| {
            let cov = calibration_cov(shape);
            let cells =
                s.ns.iter()
                    .enumerate()
                    .map(|(ni, &n)| {
                        let k = (si * 16 + ni) as u64;
                        AaCell {
                            n,
                            false_positive: aa_false_positive_rate(
                                shape,
                                n,
                                cov,
                                s.trials,
                                s.resamples,
                                stream_seed(seed, 2 * k),
                            ),
                            coverage: ci_coverage(
                                shape,
                                n,
                                cov,
                                COVERAGE_SHIFT,
                                s.trials,
                                s.resamples,
                                stream_seed(seed, 2 * k + 1),
                            ),
                        }
                    })
                    .collect();
            AaRow { shape, cov, cells }
        })
        .collect()
}

// ---------------------------------------------------------------- (b)

pub const SHIFTS: [f64; 4] = [0.005, 0.01, 0.02, 0.05];
pub const SHIFT_COV: f64 = 0.01;

#[derive(Clone, Debug, Serialize)]
pub struct ShiftRow {
    pub shift: f64,
    /// Known-variance t-test (z-test) runs per side for 80% power: the
    /// theoretical minimum.
    pub known_variance_runs: usize,
    /// Detection rate of the verdict at that many runs.
    pub rate_at_known_variance: f64,
    /// The U-test-aware formula (t-test runs x pi/3).
    pub u_test_runs: usize,
    /// Smallest n at which the simulated verdict detects >= 80%.
    pub runs_needed: usize,
    pub rate_at_needed: f64,
}

/// Smallest n >= `start` at which `rate(n) >= 0.8`: doubling, then
/// bisection. `rate` is a simulation with a fixed seed, so the answer is
/// exact up to its Monte-Carlo noise (about 1.3 points at 80%).
fn search_runs(start: usize, rate: impl Fn(usize) -> f64) -> (usize, f64) {
    let start = start.max(2);
    let r0 = rate(start);
    if r0 >= 0.8 {
        return (start, r0);
    }
    let (mut lo, mut hi) = (start, start * 2);
    let mut r_hi = rate(hi);
    while r_hi < 0.8 && hi < 4096 {
        lo = hi;
        hi *= 2;
        r_hi = rate(hi);
    }
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        let r = rate(mid);
        if r >= 0.8 {
            hi = mid;
            r_hi = r;
        } else {
            lo = mid;
        }
    }
    (hi, r_hi)
}

pub fn shift_table(s: &Sizes, seed: u64) -> Vec<ShiftRow> {
    SHIFTS
        .iter()
        .enumerate()
        .map(|(i, &shift)| {
            let kv = runs_known_variance(shift, SHIFT_COV, 0.05, 0.8)
                .unwrap_or(2)
                .max(2);
            let sd = stream_seed(seed, 100 + i as u64);
            let rate = |n: usize| {
                detection_rate(
                    Shape::Normal,
                    n,
                    SHIFT_COV,
                    shift,
                    s.trials,
                    s.resamples,
                    sd,
                )
            };
            let rate_kv = rate(kv);
            let (needed, rate_needed) = if rate_kv >= 0.8 {
                (kv, rate_kv)
            } else {
                search_runs(kv + 1, rate)
            };
            ShiftRow {
                shift,
                known_variance_runs: kv,
                rate_at_known_variance: rate_kv,
                u_test_runs: runs_for_power_u_test(shift, SHIFT_COV, 0.05, 0.8).unwrap_or(2),
                runs_needed: needed,
                rate_at_needed: rate_needed,
            }
        })
        .collect()
}

// ---------------------------------------------------------------- (c)

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
    let a = analysis::analyze(&data, &analysis::Options::default()).map_err(anyhow::Error::msg)?;
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

// ---------------------------------------------------------------- (d)

/// The CI width that stopping aims for: a CI of this width around a true
/// shift `d` keeps 1 outside with 80% probability under a known-variance
/// normal model: width = 2 d z_{1-alpha/2} / (z_{1-alpha/2} + z_power).
pub fn target_width(d: f64, alpha: f64, power: f64) -> f64 {
    let za = normal_quantile(1.0 - alpha / 2.0);
    let zb = normal_quantile(power);
    2.0 * d * za / (za + zb)
}

pub const ADAPTIVE_MAX_RUNS: usize = 200;

/// A precision stopping rule: start with `min_runs` per side, add one run
/// per side until the 95% CI of the ratio is narrower than
/// `width_factor` x [`target_width`].
#[derive(Clone, Copy, Debug, Serialize)]
pub struct StopRule {
    pub min_runs: usize,
    pub width_factor: f64,
}

/// The rule as specified (start at 5 runs, the plain target width), the
/// same aiming 10% narrower, and both starting at 10 runs. Starting at 5
/// lets the rule stop when the first few runs' spread is low by chance;
/// the U test then sees a mean difference against an underestimated spread
/// and the A/A rate creeps up (5.4-5.6% in 10,000 simulated experiments,
/// against 4.7% when starting at 10). The last rule is the one to use.
pub const RULES: [StopRule; 4] = [
    StopRule {
        min_runs: 5,
        width_factor: 1.0,
    },
    StopRule {
        min_runs: 5,
        width_factor: 0.9,
    },
    StopRule {
        min_runs: 10,
        width_factor: 1.0,
    },
    StopRule {
        min_runs: 10,
        width_factor: 0.9,
    },
];

#[derive(Clone, Debug, Serialize)]
pub struct AdaptiveResult {
    pub rule: StopRule,
    pub shift: f64,
    pub cov: f64,
    /// The CI width the rule stops at (ratio units).
    pub width: f64,
    pub max_runs: usize,
    pub trials: usize,
    pub resamples: usize,
    /// Known-variance t-test runs for 80% power.
    pub known_variance_runs: usize,
    /// Mean runs per side at stopping, with the shift / A/A.
    pub mean_runs: f64,
    pub mean_runs_aa: f64,
    /// mean_runs / known_variance_runs.
    pub ratio: f64,
    /// The verdict at stopping, with the shift / A/A.
    pub detection: f64,
    pub false_positive: f64,
}

/// One trial: draw `min_runs` per side, add one run per side until the 95%
/// (expanded) percentile CI of the ratio of means is narrower than `width` (or
/// `ADAPTIVE_MAX_RUNS`), then apply the report's verdict.
/// Returns (runs per side, verdict).
pub fn adaptive_trial(
    shape: Shape,
    cov: f64,
    shift: f64,
    min_runs: usize,
    width: f64,
    resamples: usize,
    seed: u64,
) -> (usize, bool) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut base = Vec::with_capacity(64);
    let mut other = Vec::with_capacity(64);
    loop {
        base.push(draw(shape, cov, &mut rng));
        other.push((1.0 + shift) * draw(shape, cov, &mut rng));
        let n = base.len();
        if n < min_runs.max(2) {
            continue;
        }
        let narrow = matches!(
            ratio_of_means_ci(
                &base,
                &other,
                resamples,
                expanded_confidence(&base, &other, 0.95),
                stream_seed(seed, n as u64)
            ),
            Some((lo, hi)) if hi - lo < width
        );
        if narrow || n >= ADAPTIVE_MAX_RUNS {
            return (n, verdict(&base, &other, resamples, stream_seed(seed, 0)));
        }
    }
}

/// (mean runs, rate of the verdict) over `trials` adaptive experiments.
fn adaptive_rates(
    shift: f64,
    min_runs: usize,
    width: f64,
    (trials, resamples): (usize, usize),
    seed: u64,
) -> (f64, f64) {
    let (runs, hits) = (0..trials as u64)
        .into_par_iter()
        .map(|t| {
            let (n, v) = adaptive_trial(
                Shape::Normal,
                SHIFT_COV,
                shift,
                min_runs,
                width,
                resamples,
                stream_seed(seed, t),
            );
            (n, usize::from(v))
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    (runs as f64 / trials as f64, hits as f64 / trials as f64)
}

/// A rule for a 1% shift at CoV 1%, normal noise, with and without the
/// shift.
pub fn adaptive(rule: StopRule, trials: usize, resamples: usize, seed: u64) -> AdaptiveResult {
    let shift = 0.01;
    let width = rule.width_factor * target_width(shift, 0.05, 0.8);
    let kv = runs_known_variance(shift, SHIFT_COV, 0.05, 0.8).unwrap_or(2);
    let (mean_runs, detection) = adaptive_rates(
        shift,
        rule.min_runs,
        width,
        (trials, resamples),
        stream_seed(seed, 300),
    );
    let (mean_runs_aa, false_positive) = adaptive_rates(
        0.0,
        rule.min_runs,
        width,
        (trials, resamples),
        stream_seed(seed, 301),
    );
    AdaptiveResult {
        rule,
        shift,
        cov: SHIFT_COV,
        width,
        max_runs: ADAPTIVE_MAX_RUNS,
        trials,
        resamples,
        known_variance_runs: kv,
        mean_runs,
        mean_runs_aa,
        ratio: mean_runs / kv as f64,
        detection,
        false_positive,
    }
}

// ---------------------------------------------------------------- output

fn shape_name(s: Shape) -> &'static str {
    match s {
        Shape::Normal => "normal",
        Shape::LogNormal => "log-normal",
        Shape::Bimodal => "bimodal",
        Shape::StudentT3 => "t(3) heavy",
    }
}

/// A rate with a mark for where it stands against `band`: `<` below, `>`
/// above, nothing inside.
fn banded(x: f64, band: Option<(f64, f64)>) -> String {
    let mark = match band {
        Some((lo, _)) if x < lo => "<",
        Some((_, hi)) if x > hi => ">",
        _ => " ",
    };
    format!("{:5.1}%{mark}", 100.0 * x)
}

pub fn render_aa(rows: &[AaRow], s: &Sizes) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "(a) Simulated A/A: {} experiments per cell, {} resamples per CI.\n",
        s.trials, s.resamples
    ));
    out.push_str(
        "    Flagged = U test p < 0.05 (mean and rank shift the same way).\n\
         \x20   Band 3.6-6.4% (5% +/- 2 binomial SE); < below, > above the band.\n\
         \x20   At n=5 the exact U test can only reach 3.2% (its next level is 5.6%).\n\n",
    );
    let header = |title: &str| {
        let mut h = format!("    {:<16}{:>5}", title, "CoV");
        for n in &s.ns {
            h.push_str(&format!("{:>9}", format!("n={n}")));
        }
        h.push('\n');
        h
    };
    out.push_str(&header("A/A flagged"));
    for r in rows {
        out.push_str(&format!(
            "    {:<16}{:>4.0}%",
            shape_name(r.shape),
            100.0 * r.cov
        ));
        for c in &r.cells {
            out.push_str(&format!("{:>9}", banded(c.false_positive, Some(AA_BAND))));
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "\n    95% CI coverage of the true ratio {:.2} (band 93-97% for n >= 20):\n",
        1.0 + COVERAGE_SHIFT
    ));
    out.push_str(&header("coverage"));
    for r in rows {
        out.push_str(&format!(
            "    {:<16}{:>4.0}%",
            shape_name(r.shape),
            100.0 * r.cov
        ));
        for c in &r.cells {
            let band = (c.n >= 20).then_some(COVERAGE_BAND);
            out.push_str(&format!("{:>9}", banded(c.coverage, band)));
        }
        out.push('\n');
    }
    out
}

pub fn render_shift(rows: &[ShiftRow], s: &Sizes) -> String {
    let mut out = format!(
        "(b) Injected shift, normal noise at CoV {:.0}%, {} experiments per figure.\n\
         \x20   known-var: runs per side a known-variance t-test needs for 80% power\n\
         \x20   (the theoretical minimum); U formula: t-test runs x pi/3; needed:\n\
         \x20   smallest n at which the verdict detects >= 80% (simulated).\n\n",
        100.0 * SHIFT_COV,
        s.trials
    );
    out.push_str(&format!(
        "    {:>6} {:>10} {:>10} {:>10} {:>8} {:>10}\n",
        "shift", "known-var", "detected", "U formula", "needed", "detected"
    ));
    for r in rows {
        out.push_str(&format!(
            "    {:>5.1}% {:>10} {:>9.1}% {:>10} {:>8} {:>9.1}%\n",
            100.0 * r.shift,
            r.known_variance_runs,
            100.0 * r.rate_at_known_variance,
            r.u_test_runs,
            r.runs_needed,
            100.0 * r.rate_at_needed
        ));
    }
    out
}

pub fn render_real(rows: &[RealRow], s: &Sizes) -> String {
    let mut out = format!(
        "(c) Real A/A experiments on this machine: configs a and b identical,\n\
         \x20   {} runs each; every run appends {} KiB to a file and MD5-sums all\n\
         \x20   of it, so each run costs more than the last (a built-in drift: the\n\
         \x20   last run reads {}x what the first does). Flagged = the report marks\n\
         \x20   b better or worse than a.\n\n",
        s.real_runs,
        s.real_chunk / 1024,
        2 * s.real_runs
    );
    out.push_str(&format!(
        "    {:<14} {:>11} {:>12} {:>12} {:>14}\n",
        "order", "experiments", "wall flagged", "any flagged", "mean |delta|"
    ));
    for r in rows {
        let frac = |k: usize| {
            format!(
                "{k}/{} {:>3.0}%",
                r.experiments,
                100.0 * k as f64 / r.experiments.max(1) as f64
            )
        };
        out.push_str(&format!(
            "    {:<14} {:>11} {:>12} {:>12} {:>13.1}%\n",
            r.order,
            r.experiments,
            frac(r.wall_flagged),
            frac(r.any_flagged),
            r.mean_abs_wall_delta_pct
        ));
    }
    out
}

pub fn render_adaptive(rows: &[AdaptiveResult]) -> String {
    let Some(a) = rows.first() else {
        return String::new();
    };
    let mut out = format!(
        "(d) Adaptive stopping on precision, normal noise at CoV {cov:.0}%, d = {d:.0}% shift;\n\
         \x20   {t} experiments per figure, {r} resamples per CI. A rule starts at\n\
         \x20   `min` runs per side and adds one per side until the 95% CI of the ratio\n\
         \x20   is narrower than `width` (cap {max}), then applies the verdict.\n\
         \x20   2 d z_a/2 / (z_a/2 + z_b) = {w:.2}%; known-variance t-test runs for 80%\n\
         \x20   power: {kv}. ratio = mean runs / {kv} (target <= 1.3); A/A band 3.6-6.4%.\n\n",
        cov = 100.0 * a.cov,
        d = 100.0 * a.shift,
        t = a.trials,
        r = a.resamples,
        max = a.max_runs,
        w = 100.0 * target_width(a.shift, 0.05, 0.8),
        kv = a.known_variance_runs,
    );
    out.push_str(&format!(
        "    {:>4} {:>7} {:>10} {:>6} {:>9} {:>9} {:>9}\n",
        "min", "width", "mean runs", "ratio", "detected", "A/A runs", "A/A flag"
    ));
    for a in rows {
        out.push_str(&format!(
            "    {:>4} {:>6.2}% {:>10.2} {:>6.2} {:>8.1}% {:>9.2} {:>8.1}%\n",
            a.rule.min_runs,
            100.0 * a.width,
            a.mean_runs,
            a.ratio,
            100.0 * a.detection,
            a.mean_runs_aa,
            100.0 * a.false_positive
        ));
    }
    out
}

fn took(since: Instant) -> String {
    format!("    ({:.1} s)\n", since.elapsed().as_secs_f64())
}

/// Print one part as soon as it is done, so a long run shows progress.
fn emit(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    // The band marks leave a blank at the end of some lines: drop it.
    for line in text.lines() {
        let _ = out.write_all(line.trim_end().as_bytes());
        let _ = out.write_all(b"\n");
    }
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

/// The store is not used: the real experiments go into a temporary store.
pub fn run(args: &CalibrateArgs, _store_path: &Path) -> Result<()> {
    let t0 = Instant::now();
    let s = if args.quick {
        Sizes::quick()
    } else {
        Sizes::full()
    };
    emit(&format!(
        "sysdelta calibrate{}: seed {}, {} threads\n",
        if args.quick { " --quick" } else { "" },
        args.seed,
        rayon::current_num_threads()
    ));
    let part = Instant::now();
    emit(&(render_aa(&aa_table(&s, args.seed), &s) + &took(part)));
    let part = Instant::now();
    emit(&(render_shift(&shift_table(&s, args.seed), &s) + &took(part)));
    let part = Instant::now();
    if args.no_real {
        emit("(c) Real A/A experiments: skipped (--no-real).\n");
    } else {
        emit(&(render_real(&real_table(&s, args.seed)?, &s) + &took(part)));
    }
    let part = Instant::now();
    let rows: Vec<AdaptiveResult> = RULES
        .iter()
        .map(|&r| adaptive(r, s.adaptive_trials, s.adaptive_resamples, args.seed))
        .collect();
    emit(&(render_adaptive(&rows) + &took(part)));
    emit(&format!("wall time: {:.1} s", t0.elapsed().as_secs_f64()));
    Ok(())
}
