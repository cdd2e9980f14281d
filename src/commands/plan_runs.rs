//! `sysdelta plan-runs [ID|LABEL|last] --detect 1%`: how many runs a
//! comparison needs, judged from the noise of an experiment already in the
//! store (a pilot or a finished one).
//!
//! For each metric and each config compared with the baseline it prints:
//!
//! * the observed CoV, pooled from the baseline's and the config's run
//!   values (a run's value is the median of its samples, as in the report):
//!   sqrt(((n1 - 1) c1^2 + (n2 - 1) c2^2) / (n1 + n2 - 2)), c = sd / |mean|
//!   of each side;
//! * the runs per config needed for 80% power to detect the given relative
//!   shift, two-sided, at the level the report's Holm correction leaves one
//!   change (alpha 0.05 over the pilot's comparisons, [`alpha_per_comparison`]):
//!   for the report's own test its power simulated, never below the size at
//!   which it can reject at all (`stats::power::units_for_power`; for boots
//!   `boots_for_power`: Welch's t below 8 boots, the U test from 8), and
//!   for the t-test (`runs_for_power`);
//! * the smallest shift the experiment as run could detect with 80% power
//!   at that level (`minimum_detectable_effect` at its run count; with unequal counts, at
//!   the floor of their harmonic mean, the equal-n design of the same
//!   precision).
//!
//! An experiment with a single config has nothing to compare: its rows use
//! the baseline's own CoV, which is what a comparison with a similar config
//! would see.
//!
//! Kernel configs (runs in boots) count boots, not runs: the report's unit
//! is the boot, whose value is the mean of its m runs. From the variance
//! components of the runs grouped by boot (`stats::variance`) the variance
//! of a boot's mean is sigma_b^2 + sigma_w^2 / m, so its CoV is
//! sqrt(sigma_b^2 + sigma_w^2 / m) / |mean| (each config's components over
//! its own mean squared, pooled with the baseline's with weights boots - 1,
//! as the CoVs above are), and the boots per config follow as runs do
//! above. The same at 2m and with unlimited runs per boot (sigma_b^2 alone)
//! says whether more runs per boot would help: when sigma_b^2 dominates,
//! they would not, and only more boots narrow the comparison (`boots.rs`).

use std::path::Path;

use anyhow::Result;
use clap::{Args, ValueEnum};
use serde::Serialize;

use crate::analysis::{self, Cell};
use crate::error::Error;
use crate::stats::power;
use crate::store::{ExperimentData, Store};

mod boots;
pub use boots::BootPlan;
use boots::{boot_row, render_boot_text};

pub const ALPHA: f64 = 0.05;
pub const POWER: f64 = 0.8;
/// Seed of the power simulations: the same pilot always gives the same plan.
pub const POWER_SEED: u64 = power::PLAN_SEED;

/// The level one comparison must reach in a report of `comparisons`
/// comparisons: alpha / m, the first step of Holm's correction (the one a
/// single real change among unchanged metrics must pass). Planning at 0.05
/// while the report corrects over m comparisons promised power the report
/// could not deliver; at m = 6 the U test cannot reject with fewer than 5
/// units a side.
pub fn alpha_per_comparison(comparisons: usize) -> f64 {
    ALPHA / comparisons.max(1) as f64
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    Text,
    Json,
}

#[derive(Args, Debug, Clone)]
pub struct PlanRunsArgs {
    /// Experiment id, label or `last` (default: the last one).
    pub experiment: Option<String>,
    /// The last experiment (as `report --last`).
    #[arg(long, conflicts_with = "experiment")]
    pub last: bool,
    /// The relative shift to detect, as a percentage: `1%`, `0.5%` (or `1`).
    #[arg(long, default_value = "1%")]
    pub detect: String,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value = "text")]
    pub format: PlanFormat,
}

/// Parse `--detect`: a positive percentage below 100, with or without `%`.
/// Returns the fraction (1% -> 0.01).
pub fn parse_detect(s: &str) -> Result<f64, Error> {
    let t = s.trim();
    let num = t.strip_suffix('%').unwrap_or(t).trim();
    match num.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v < 100.0 => Ok(v / 100.0),
        _ => Err(Error::bad(format!(
            "--detect '{s}': expected a positive percentage below 100%, such as 1% or 0.5%"
        ))),
    }
}

/// One (metric, compared config) row.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Row {
    pub workload: String,
    pub metric: String,
    pub unit: String,
    pub config: String,
    pub baseline: String,
    pub n_baseline: usize,
    pub n_config: usize,
    /// Pooled coefficient of variation (0.01 = 1%).
    pub cov: Option<f64>,
    /// Runs per config for 80% power, U test (the report's test).
    pub runs_u_test: Option<usize>,
    /// Runs per config for 80% power, two-sample t-test.
    pub runs_t_test: Option<usize>,
    /// Smallest relative shift detectable with 80% power at the runs done.
    pub detectable: Option<f64>,
    /// Why numbers are missing, when they are.
    pub note: Option<String>,
    /// Kernel configs: the boot is the unit (`n_*`, `runs_*` then count
    /// boots) and this says what more runs per boot would do. Absent for
    /// runs on the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boots: Option<BootPlan>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunPlan {
    /// Kernel configs: rows count boots (absent for host experiments).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub by_boot: bool,
    pub experiment: i64,
    pub name: String,
    pub label: Option<String>,
    pub status: String,
    pub detect: f64,
    pub alpha: f64,
    /// Comparisons the report corrects over (the pilot's headline family).
    pub comparisons: usize,
    /// The level each row is planned at: `alpha` / `comparisons`.
    pub alpha_per_comparison: f64,
    pub power: f64,
    pub rows: Vec<Row>,
}

/// Pooled CoV of two sides (see the module doc). None when a side has fewer
/// than 2 values or a zero mean.
pub fn pooled_cov(a: &Cell, b: &Cell) -> Option<f64> {
    let side = |c: &Cell| -> Option<(f64, f64)> {
        let s = c.summary.as_ref()?;
        Some(((s.n as f64 - 1.0), s.cov?))
    };
    let (da, ca) = side(a)?;
    let (db, cb) = side(b)?;
    if da < 1.0 || db < 1.0 {
        return None;
    }
    Some(((da * ca * ca + db * cb * cb) / (da + db)).sqrt())
}

/// Equal-n design as precise as n1 vs n2: floor of the harmonic mean.
fn effective_n(n1: usize, n2: usize) -> usize {
    if n1 == 0 || n2 == 0 {
        return 0;
    }
    (2.0 * n1 as f64 * n2 as f64 / (n1 + n2) as f64 + 1e-9).floor() as usize
}

fn row(
    workload: &str,
    spec: &crate::metric::MetricSpec,
    base: &Cell,
    cfg: &Cell,
    d: f64,
    alpha: f64,
) -> Row {
    let (n1, n2) = (base.values.len(), cfg.values.len());
    let mut r = Row {
        workload: workload.to_string(),
        metric: spec.name.clone(),
        unit: spec.unit.clone(),
        config: cfg.config.clone(),
        baseline: base.config.clone(),
        n_baseline: n1,
        n_config: n2,
        cov: None,
        runs_u_test: None,
        runs_t_test: None,
        detectable: None,
        note: None,
        boots: None,
    };
    let unit = if base.boots.is_some() || cfg.boots.is_some() {
        "boots"
    } else {
        "runs"
    };
    if n1 < 2 || n2 < 2 {
        r.note = Some(if base.config == cfg.config {
            format!("fewer than 2 {unit} ({n1})")
        } else {
            format!("fewer than 2 {unit} ({n1} and {n2})")
        });
        return r;
    }
    let Some(cov) = pooled_cov(base, cfg) else {
        r.note = Some("mean is zero: no CoV".into());
        return r;
    };
    r.cov = Some(cov);
    if cov == 0.0 {
        r.note = Some("no spread (all runs equal)".into());
        return r;
    }
    r.runs_u_test =
        power::units_for_power(power::ReportTest::Rank, d, cov, alpha, POWER, POWER_SEED);
    r.runs_t_test = power::runs_for_power(d, cov, alpha, POWER);
    r.detectable = power::minimum_detectable_effect(effective_n(n1, n2), cov, alpha, POWER);
    r
}

/// [`row`], and for kernel configs the same from the variance components.
fn any_row(
    workload: &str,
    spec: &crate::metric::MetricSpec,
    base: &Cell,
    cfg: &Cell,
    d: f64,
    alpha: f64,
) -> Row {
    let mut r = row(workload, spec, base, cfg, d, alpha);
    if r.n_baseline >= 2 && r.n_config >= 2 {
        boot_row(&mut r, base, cfg, d, alpha);
    }
    r
}

/// Rows for every metric and compared config of a loaded experiment.
pub fn plan(data: &ExperimentData, detect: f64) -> Result<RunPlan, Error> {
    // The run values and summaries are the report's; its CIs are not used,
    // so a few resamples keep this fast.
    let opts = analysis::Options {
        resamples: 100,
        ..Default::default()
    };
    let a = analysis::analyze(data, &opts)?;
    let comparisons = a.n_comparisons.max(1);
    let alpha = alpha_per_comparison(comparisons);
    let mut rows = Vec::new();
    for m in &a.metrics {
        let base = &m.cells[0];
        if m.cells.len() == 1 {
            rows.push(any_row(&m.workload, &m.spec, base, base, detect, alpha));
        }
        for cfg in &m.cells[1..] {
            rows.push(any_row(&m.workload, &m.spec, base, cfg, detect, alpha));
        }
    }
    Ok(RunPlan {
        by_boot: crate::report::boots_text::by_boot(&a),
        experiment: a.info.id,
        name: a.info.name.clone(),
        label: a.info.label.clone(),
        status: a.info.status.to_string(),
        detect,
        alpha: ALPHA,
        comparisons,
        alpha_per_comparison: alpha,
        power: POWER,
        rows,
    })
}

/// A percentage with enough digits to be useful for small and large values.
fn pct(x: f64) -> String {
    let p = 100.0 * x;
    if p < 1.0 {
        format!("{p:.3}%")
    } else if p < 100.0 {
        format!("{p:.2}%")
    } else {
        format!("{p:.0}%")
    }
}

/// A percentage without trailing zeros: 0.01 -> "1%", 0.005 -> "0.5%".
fn pct_short(x: f64) -> String {
    let s = format!("{:.4}", 100.0 * x);
    format!("{}%", s.trim_end_matches('0').trim_end_matches('.'))
}

fn count(n: Option<usize>) -> String {
    match n {
        Some(n) if n <= 10_000_000 => n.to_string(),
        Some(_) => ">1e7".into(),
        None => "-".into(),
    }
}

const METRIC_W: usize = 16;
const CONFIG_W: usize = 14;

/// Plain text, at most 80 columns (a name wider than its column goes on a
/// line of its own, so nothing is cut).
pub fn render_text(p: &RunPlan) -> String {
    if p.by_boot {
        return render_boot_text(p);
    }
    let mut out = String::new();
    let label = p
        .label
        .as_ref()
        .map(|l| format!(" ({l})"))
        .unwrap_or_default();
    out.push_str(&format!(
        "experiment {} {}{}, {}\n",
        p.experiment, p.name, label, p.status
    ));
    out.push_str(&format!(
        "runs per config for {:.0}% power to detect a {} shift (two-sided, alpha {}),\n",
        p.power * 100.0,
        pct_short(p.detect),
        p.alpha
    ));
    out.push_str(&format!(
        "at {:.2e} per comparison (Holm over {} comparisons, its first step);\n",
        p.alpha_per_comparison, p.comparisons
    ));
    out.push_str("U test: its power simulated, never below the runs it can reject with;\n");
    out.push_str("from the CoV of the runs done (pooled with the baseline's);\n");
    out.push_str("detectable: smallest shift found with 80% power at the runs done\n\n");
    let mut workload: Option<&str> = None;
    for r in &p.rows {
        if workload != Some(r.workload.as_str()) {
            workload = Some(&r.workload);
            out.push_str(&format!(
                "workload {} (baseline {})\n",
                r.workload, r.baseline
            ));
            out.push_str(&format!(
                "  {:<mw$} {:<cw$} {:>7} {:>7} {:>7} {:>7} {:>10}\n",
                "metric",
                "config",
                "runs",
                "CoV",
                "U test",
                "t-test",
                "detectable",
                mw = METRIC_W,
                cw = CONFIG_W
            ));
        }
        let mut metric = r.metric.clone();
        if metric.chars().count() > METRIC_W {
            out.push_str(&format!("  {metric}\n"));
            metric.clear();
        }
        let mut config = r.config.clone();
        if config.chars().count() > CONFIG_W {
            out.push_str(&format!("  {:<mw$} {config}\n", metric, mw = METRIC_W));
            metric.clear();
            config.clear();
        }
        let runs = if r.config == r.baseline {
            format!("{}", r.n_baseline)
        } else {
            format!("{}/{}", r.n_baseline, r.n_config)
        };
        let rest = match (&r.note, r.cov) {
            (Some(note), Some(c)) => format!("{:>7} {:>7}  {note}", runs, pct(c)),
            (Some(note), None) => format!("{:>7}  {note}", runs),
            (None, c) => format!(
                "{:>7} {:>7} {:>7} {:>7} {:>10}",
                runs,
                c.map(pct).unwrap_or_else(|| "-".into()),
                count(r.runs_u_test),
                count(r.runs_t_test),
                r.detectable.map(pct).unwrap_or_else(|| "-".into())
            ),
        };
        out.push_str(&format!(
            "  {:<mw$} {:<cw$} {rest}\n",
            metric,
            config,
            mw = METRIC_W,
            cw = CONFIG_W
        ));
    }
    if p.rows.is_empty() {
        out.push_str("no metric has any successful run: nothing to plan from\n");
    }
    out
}

/// JSON, with the characters a terminal acts on escaped in every string
/// (a store's writer chose the names: `report::escape::json_text`).
pub fn render_json(p: &RunPlan) -> String {
    crate::report::escape::json_text(
        serde_json::to_string_pretty(p).expect("plain data serializes") + "\n",
    )
}

impl RunPlan {
    /// The plan with every stored name shown as the terminal may print
    /// it (control characters, line breaks and bidi overrides escaped):
    /// whoever can write the store chose them, and the text is printed as
    /// rendered.
    fn shown(&self) -> RunPlan {
        let safe = |s: &String| crate::sys::visible::terminal_safe(s);
        let mut p = self.clone();
        p.name = safe(&p.name);
        p.label = p.label.as_ref().map(safe);
        p.status = safe(&p.status);
        for r in &mut p.rows {
            for s in [
                &mut r.workload,
                &mut r.metric,
                &mut r.unit,
                &mut r.config,
                &mut r.baseline,
            ] {
                *s = safe(s);
            }
            r.note = r.note.as_ref().map(safe);
        }
        p
    }
}

pub fn run(args: &PlanRunsArgs, store_path: &Path) -> Result<()> {
    let detect = parse_detect(&args.detect).map_err(Error::into_bad_input)?;
    let store = Store::open(store_path, false)?;
    let id = store.resolve(args.experiment.as_deref().unwrap_or("last"))?;
    let data = store.load(id)?;
    let p = plan(&data, detect).map_err(Error::into_bad_input)?;
    let text = match args.format {
        PlanFormat::Text => crate::sys::visible::terminal_safe_lines(&render_text(&p.shown())),
        PlanFormat::Json => render_json(&p),
    };
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}
