//! `plan-runs` for kernel configs: boots per config from the variance
//! components of runs grouped by boot (see the parent module's doc).

use serde::Serialize;

use super::{count, effective_n, pct, pct_short, power, Row, RunPlan, POWER, POWER_SEED};
use crate::analysis::Cell;

/// What the variance components of a kernel comparison say about boots and
/// runs per boot. The components are relative (over each config's mean
/// squared), so that two configs at different levels pool as their CoVs
/// do in [`super::pooled_cov`].
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct BootPlan {
    /// Runs per boot of the boots done, m (their harmonic mean: what a
    /// boot mean's variance depends on).
    pub runs_per_boot: f64,
    /// How much boots differ: sqrt(sigma_b^2) / |mean|, pooled over the
    /// two configs (0.05: boots' true means differ by about 5%).
    pub cov_between: f64,
    /// How much runs of one boot differ: sqrt(sigma_w^2) / |mean|, pooled.
    pub cov_within: f64,
    /// sigma_b^2 / (sigma_b^2 + sigma_w^2), of the pooled components.
    pub between_share: Option<f64>,
    /// Boots per config for 80% power (U test) with 2m runs per boot.
    pub boots_double_runs: Option<usize>,
    /// The same with unlimited runs per boot (sigma_b^2 alone): the fewest
    /// boots any number of runs per boot can do with. None when sigma_b^2
    /// is 0.
    pub boots_unlimited_runs: Option<usize>,
    /// Whether doubling the runs per boot would save at least a tenth of
    /// the boots (a boot or two of a hundred is not worth the time).
    pub more_runs_help: bool,
}

/// The relative components B = sigma_b^2 / mean^2 and W = sigma_w^2 /
/// mean^2 of each config, pooled with weights k - 1 (boots - 1, the
/// weights [`super::pooled_cov`] gives each side's CoV^2), and the harmonic
/// mean m of runs per boot: a boot mean's CoV is then sqrt(B + W / m). On
/// balanced boots with positive sigma_b^2 estimates this CoV at the m done
/// equals the pooled CoV of the boot means themselves, since sigma_b^2 +
/// sigma_w^2 / m is then exactly MSB / m. None when a side has no variance
/// components (fewer than 2 boots, or one run each) or a zero mean.
fn components(a: &Cell, b: &Cell) -> Option<(f64, f64, f64)> {
    let sides = if std::ptr::eq(a, b) {
        vec![a]
    } else {
        vec![a, b]
    };
    let (mut bsum, mut wsum, mut weight, mut inv, mut boots) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for c in &sides {
        let v = c.boot_variance.as_ref()?;
        let mean = c.summary.as_ref()?.mean;
        if mean == 0.0 {
            return None;
        }
        let k = (v.groups - 1) as f64;
        bsum += k * v.between / (mean * mean);
        wsum += k * v.within / (mean * mean);
        weight += k;
        for &r in c.boot_runs.as_ref()? {
            inv += 1.0 / r as f64;
            boots += 1.0;
        }
    }
    (weight > 0.0 && inv > 0.0).then(|| (bsum / weight, wsum / weight, boots / inv))
}

/// A kernel row: boots per config from the variance of a boot's mean of m
/// runs (see the module doc), at m, 2m and unlimited m.
pub(super) fn boot_row(r: &mut Row, base: &Cell, cfg: &Cell, d: f64, alpha: f64) {
    let Some((vb, vw, m)) = components(base, cfg) else {
        return;
    };
    let cov = |m: f64| (vb + vw / m).sqrt();
    // The test the report applies at the boots recommended: Welch's t on
    // boot means below 8 a side, the U test from 8 on.
    let boots =
        |c: f64| (c > 0.0).then(|| power::boots_for_power(d, c, alpha, POWER, POWER_SEED))?;
    r.cov = Some(cov(m));
    r.note = None;
    if cov(m) == 0.0 {
        r.note = Some("no spread (all runs equal)".into());
        r.runs_u_test = None;
        r.runs_t_test = None;
        r.detectable = None;
    } else {
        r.runs_u_test = boots(cov(m));
        r.runs_t_test = power::runs_for_power(d, cov(m), alpha, POWER);
        r.detectable = power::minimum_detectable_effect(
            effective_n(r.n_baseline, r.n_config),
            cov(m),
            alpha,
            POWER,
        );
    }
    let double = boots(cov(2.0 * m));
    let total = vb + vw;
    r.boots = Some(BootPlan {
        runs_per_boot: m,
        cov_between: vb.sqrt(),
        cov_within: vw.sqrt(),
        between_share: (total > 0.0).then(|| vb / total),
        boots_double_runs: double,
        boots_unlimited_runs: boots(vb.sqrt()),
        more_runs_help: matches!(
            (double, r.runs_u_test),
            (Some(a), Some(b)) if a < b && a as f64 <= 0.9 * b as f64
        ),
    });
}

/// The advice under a kernel row: whether more runs per boot would help,
/// and what the boots done can detect.
fn boot_advice(r: &Row, b: &BootPlan) -> String {
    let share = b
        .between_share
        .map(|s| format!("{:.0}%", 100.0 * s))
        .unwrap_or_else(|| "-".into());
    let runs = |m: f64| {
        let m = (m * 10.0).round() / 10.0;
        if m.fract() == 0.0 {
            format!("{m:.0}")
        } else {
            format!("{m:.1}")
        }
    };
    let now = r
        .detectable
        .map(|d| format!("; the boots done detect {}", pct(d)))
        .unwrap_or_default();
    if b.more_runs_help {
        format!(
            "more runs per boot help: with {} runs per boot {} boots, with unlimited runs {} \
             ({share} of the variance is between boots){now}",
            runs(2.0 * b.runs_per_boot),
            count(b.boots_double_runs),
            count(b.boots_unlimited_runs)
        )
    } else {
        format!(
            "more runs per boot would not help: {share} of the variance is between boots, so \
             add boots{now}"
        )
    }
}

/// Greedy word wrap at 80 columns with `indent` on every line.
fn wrap80(text: &str, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::from(indent);
    for w in text.split_whitespace() {
        if line.len() > indent.len() && line.len() + 1 + w.len() > 80 {
            out.push_str(&line);
            out.push('\n');
            line = String::from(indent);
        }
        if line.len() > indent.len() {
            line.push(' ');
        }
        line.push_str(w);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// Plain text for a kernel experiment: boots, not runs, per config.
pub(super) fn render_boot_text(p: &RunPlan) -> String {
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
    out.push_str(&wrap80(
        &format!(
            "boots per config for {:.0}% power to detect a {} shift (two-sided, alpha {}, \
             {:.2e} per comparison: Holm over {} comparisons, its first step; Welch's t on boot \
             means below 8 boots a side, the U test from 8, power simulated), from the variance components of the boots done (pooled with the \
             baseline's): a boot's mean of m runs has CoV sqrt(B^2 + W^2 / m), B and W the \
             CoVs between boots and between runs of a boot. \
             m: runs per boot; share: between-boot share of the variance; CoV: of a boot's \
             mean; 2m, inf: boots needed with twice or unlimited runs per boot",
            p.power * 100.0,
            pct_short(p.detect),
            p.alpha,
            p.alpha_per_comparison,
            p.comparisons
        ),
        "",
    ));
    out.push('\n');
    const MW: usize = 14;
    const CW: usize = 14;
    let mut workload: Option<&str> = None;
    for r in &p.rows {
        if workload != Some(r.workload.as_str()) {
            workload = Some(&r.workload);
            out.push_str(&format!(
                "workload {} (baseline {})\n",
                r.workload, r.baseline
            ));
            out.push_str(&format!(
                "  {:<MW$} {:<CW$} {:>7} {:>4} {:>5} {:>7} {:>6} {:>6} {:>6}\n",
                "metric", "config", "boots", "m", "share", "CoV", "boots", "2m", "inf"
            ));
        }
        let mut metric = r.metric.clone();
        if metric.chars().count() > MW {
            out.push_str(&format!("  {metric}\n"));
            metric.clear();
        }
        let mut config = r.config.clone();
        if config.chars().count() > CW {
            out.push_str(&format!("  {metric:<MW$} {config}\n"));
            metric.clear();
            config.clear();
        }
        let boots = if r.config == r.baseline {
            format!("{}", r.n_baseline)
        } else {
            format!("{}/{}", r.n_baseline, r.n_config)
        };
        let rest = match (&r.boots, &r.note) {
            (Some(b), None) => format!(
                "{:>7} {:>4.1} {:>5} {:>7} {:>6} {:>6} {:>6}",
                boots,
                b.runs_per_boot,
                b.between_share
                    .map(|s| format!("{:.0}%", 100.0 * s))
                    .unwrap_or_else(|| "-".into()),
                r.cov.map(pct).unwrap_or_else(|| "-".into()),
                count(r.runs_u_test),
                count(b.boots_double_runs),
                count(b.boots_unlimited_runs)
            ),
            (_, Some(note)) => format!("{boots:>7}  {note}"),
            (None, None) => format!(
                "{boots:>7}  one run per boot: no split of the variance; CoV {}, {} boots",
                r.cov.map(pct).unwrap_or_else(|| "-".into()),
                count(r.runs_u_test)
            ),
        };
        out.push_str(&format!("  {metric:<MW$} {config:<CW$} {rest}\n"));
        if let (Some(b), None) = (&r.boots, &r.note) {
            out.push_str(&wrap80(&boot_advice(r, b), "    "));
        }
    }
    out
}
