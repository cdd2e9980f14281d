//! The text calibrate prints for each part, with marks for figures outside
//! their bands. Separate from the computations, which tests call without
//! printing.

use crate::stats::calibrate::Shape;

use super::adaptive::*;
use super::edges::*;
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

/// Part (e): the statistics at the edges (issue 31).
pub fn render_edges(e: &Edges, s: &EdgeSizes) -> String {
    let mut out = format!(
        "(e) The edges: {} experiments per figure, {} resamples per CI.\n\n\
         \x20   95% CI coverage of the true ratio 1.02 at 2-10 units a side: the\n\
         \x20   report's CI (Welch's t on the log ratio below 5 a side, the widened\n\
         \x20   bootstrap from 5) / the widened percentile bootstrap alone, which\n\
         \x20   cannot leave the hull of the between-side ratios (< below 94%):\n",
        s.trials, s.resamples
    );
    out.push_str(&format!("    {:<12}", "shape"));
    for n in SMALL_NS {
        out.push_str(&format!("{:>13}", format!("n={n}")));
    }
    out.push('\n');
    for r in &e.coverage {
        out.push_str(&format!("    {:<12}", shape_name(r.shape)));
        for (_, rep, boot) in &r.cells {
            let mark = if *rep < 0.94 { "<" } else { " " };
            out.push_str(&format!(
                "{:>13}",
                format!("{:.1}{mark}/{:.1}", 100.0 * rep, 100.0 * boot)
            ));
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "\n    Boot-level test ({} runs per boot, run CoV 1%; Welch's t on boot means\n\
         \x20   below 8 boots a side, U test from 8): A/A flagged, and power for a\n\
         \x20   {:.1}% shift (the U test's power at the same boots after the slash).\n",
        RUNS_PER_BOOT,
        100.0 * BOOT_SHIFT
    ));
    out.push_str(&format!("    {:<8}{:<7}", "share", ""));
    for b in BOOTS {
        out.push_str(&format!("{:>13}", format!("{b} boots")));
    }
    out.push('\n');
    for share in SHARES {
        let row: Vec<&crate::stats::edges::BootLevel> = e
            .boots
            .iter()
            .filter(|b| b.between_share == share)
            .collect();
        out.push_str(&format!("    {:<8}{:<7}", format!("{share}"), "A/A"));
        for b in &row {
            out.push_str(&format!("{:>13}", banded(b.aa_rate, Some(AA_BAND))));
        }
        out.push('\n');
        out.push_str(&format!("    {:<8}{:<7}", "", "power"));
        for b in &row {
            out.push_str(&format!(
                "{:>13}",
                format!("{:.1}/{:.1}", 100.0 * b.power, 100.0 * b.rank_power)
            ));
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "\n    plan-runs: at the effect where the plan's own power at n is 80%, the\n\
         \x20   n it recommends and the verdict's power there with other draws\n\
         \x20   ({} experiments each; band 78-85%):\n",
        s.plan_trials
    ));
    for c in &e.plans {
        let test = match c.test {
            crate::stats::power::ReportTest::Rank => "U test",
            crate::stats::power::ReportTest::Welch => "Welch",
        };
        let mark = if (0.78..=0.85).contains(&c.realised) {
            " "
        } else {
            "!"
        };
        out.push_str(&format!(
            "    {test:<7} n={:<3} effect {:.2} sd: recommends {:<3} power {:.1}%{mark}\n",
            c.n,
            c.es,
            c.recommended,
            100.0 * c.realised
        ));
    }
    out.push_str(&format!(
        "\n    A/A fleets: reports of {} metrics, {} runs a side per host, {} reports\n\
         \x20   each; a host named (Holm over the report) / named without correction;\n\
         \x20   the pooled 95% CI's coverage:\n",
        FLEET_METRICS, FLEET_RUNS, s.fleet_trials
    ));
    for f in &e.fleets {
        out.push_str(&format!(
            "    {} hosts: named {} / {:.1}%, pooled coverage {:.1}%\n",
            f.hosts,
            banded(f.named, Some((0.0, 0.05))),
            100.0 * f.named_uncorrected,
            100.0 * f.pooled_coverage
        ));
    }
    out.push_str(
        "\n    Heavy right tails (Pareto, n=30 a side): the verdict's power (the mean\n\
         \x20   must move with the rank shift) / the U test alone (benchstat's rule):\n",
    );
    for (tail, shift, v, u) in &e.heavy {
        out.push_str(&format!(
            "    tail index {tail}: +{:.0}%: {:.1}% / {:.1}%\n",
            100.0 * shift,
            100.0 * v,
            100.0 * u
        ));
    }
    out
}
