//! The text calibrate prints for each part, with marks for figures outside
//! their bands. Separate from the computations, which tests call without
//! printing.

use crate::stats::calibrate::Shape;

use super::adaptive::*;
use super::real::*;
use super::sim::*;
use super::Sizes;

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
    // One table per figure: a row per noise shape, a column per n.
    let table = |out: &mut String, title: &str, cell: &dyn Fn(&AaCell) -> String| {
        out.push_str(&format!("    {:<16}{:>5}", title, "CoV"));
        for n in &s.ns {
            out.push_str(&format!("{:>9}", format!("n={n}")));
        }
        out.push('\n');
        for r in rows {
            out.push_str(&format!(
                "    {:<16}{:>4.0}%",
                shape_name(r.shape),
                100.0 * r.cov
            ));
            for c in &r.cells {
                out.push_str(&format!("{:>9}", cell(c)));
            }
            out.push('\n');
        }
    };
    table(&mut out, "A/A flagged", &|c| {
        banded(c.false_positive, Some(AA_BAND))
    });
    out.push_str(&format!(
        "\n    95% CI coverage of the true ratio {:.2} (band 93-97% for n >= 20):\n",
        1.0 + COVERAGE_SHIFT
    ));
    table(&mut out, "coverage", &|c| {
        banded(c.coverage, (c.n >= 20).then_some(COVERAGE_BAND))
    });
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
