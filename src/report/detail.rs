//! The text report's optional parts: per-cell statistics (`--detail`) and
//! the 2007 blktrace posting's trimmed min/avg/max/stddev table (`--trim`).

use std::fmt::Write as _;

use super::cells::{ci_cell, column_title, fmt_num, fmt_pct, fmt_pct_bare, label, wrap};
use super::escape::ascii;
use crate::analysis::view::trimmed::{trimmed, units_for_one_percent};
use crate::analysis::Analysis;

/// Per-cell statistics: n, mean, median, min, max, stddev, CoV and the mean
/// with the highest and lowest run dropped.
pub fn detail(a: &Analysis) -> String {
    let mut out = String::new();
    for m in &a.metrics {
        let (w, t) = column_title(m);
        let _ = writeln!(
            out,
            "{} / {} ({} is better)",
            ascii(&w),
            ascii(&t),
            m.spec.direction.as_str()
        );
        out.push_str(&cell_table(&m.cells));
        for cmp in &m.comparisons {
            let na = || "n/a".to_string();
            let line = format!(
                "{} vs {}: mean {}, median {} (ratio {}), CI {}, other-method CI {}, \
                 Hodges-Lehmann shift {} [{}, {}], p {}, adjusted p {}, 80%-power MDE {}{}",
                ascii(&cmp.config),
                ascii(&a.baseline),
                cmp.delta_mean_pct.map(fmt_pct).unwrap_or_else(na),
                cmp.delta_median_pct.map(fmt_pct).unwrap_or_else(na),
                cmp.median_ratio
                    .map(|r| format!("{r:.4}"))
                    .unwrap_or_else(na),
                Some(ci_cell(cmp))
                    .filter(|c| !c.is_empty())
                    .unwrap_or_else(na),
                cmp.delta_ci_pct_other_method
                    .map(|(lo, hi)| format!("[{},{}]", fmt_pct_bare(lo), fmt_pct_bare(hi)))
                    .unwrap_or_else(na),
                cmp.hl_shift.map(|h| fmt_num(h.shift)).unwrap_or_else(na),
                cmp.hl_shift.map(|h| fmt_num(h.lo)).unwrap_or_else(na),
                cmp.hl_shift.map(|h| fmt_num(h.hi)).unwrap_or_else(na),
                cmp.p.map(|p| format!("{p:.3}")).unwrap_or_else(na),
                cmp.p_adjusted.map(|p| format!("{p:.3}")).unwrap_or_else(na),
                cmp.mde_pct.map(|d| format!("{d:.2}%")).unwrap_or_else(na),
                cmp.note
                    .as_ref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default(),
            );
            out.push_str(&wrap(&format!("- {line}"), "  "));
        }
        out.push('\n');
    }
    out
}

/// One metric's per-cell statistics, a column as wide as its widest
/// value: fixed widths made the row 84 columns, which the 80-column fit
/// then broke into unaligned words.
fn cell_table(cells: &[crate::analysis::Cell]) -> String {
    const HEAD: [&str; 9] = [
        "config", "n", "mean", "median", "min", "max", "stddev", "CoV%", "trim1",
    ];
    let na = || "n/a".to_string();
    let rows: Vec<Vec<String>> = cells
        .iter()
        .map(|c| {
            let mut row = vec![ascii(&c.config)];
            match &c.summary {
                Some(s) => row.extend([
                    s.n.to_string(),
                    fmt_num(s.mean),
                    fmt_num(s.median),
                    fmt_num(s.min),
                    fmt_num(s.max),
                    s.stddev.map(fmt_num).unwrap_or_else(na),
                    s.cov
                        .map(|c| format!("{:.2}", c * 100.0))
                        .unwrap_or_else(na),
                    s.trimmed_mean.map(fmt_num).unwrap_or_else(na),
                ]),
                None => row.extend(["0".to_string(), "(no successful runs)".to_string()]),
            }
            row
        })
        .collect();
    // A config name over 30 characters gets a line of its own (`label`),
    // as in the main table.
    let mut widths: Vec<usize> = HEAD.iter().map(|h| h.len()).collect();
    for row in rows.iter().filter(|r| r.len() == HEAD.len()) {
        for (w, v) in widths.iter_mut().zip(row) {
            *w = (*w).max(v.chars().count());
        }
    }
    widths[0] = widths[0].min(30);
    let line = |cols: &[String]| {
        let mut l = label(&cols[0], widths[0]);
        for (i, v) in cols.iter().enumerate().skip(1) {
            match widths.get(i) {
                // The no-runs note is left-aligned after n.
                Some(w) if cols.len() == HEAD.len() => l.push_str(&format!(" {v:>w$}")),
                _ => l.push_str(&format!(" {v}")),
            }
        }
        l.trim_end().to_string() + "\n"
    };
    let head: Vec<String> = HEAD.iter().map(|h| h.to_string()).collect();
    let mut out = line(&head);
    for r in &rows {
        out.push_str(&line(r));
    }
    out
}

/// The 2007 blktrace posting's table for each workload's primary metric
/// (every metric with `all`): min / avg / max / stddev per config after
/// dropping the `trim` highest and lowest runs, and under it what the
/// author lacked: delta with CI, corrected p, verdict, and how many runs per
/// config a 1% difference would need at this noise (80% power).
pub fn trimmed_tables(a: &Analysis, trim: usize, all: bool) -> String {
    let mut out = String::new();
    let mut seen_workloads = Vec::new();
    for m in &a.metrics {
        if !all && seen_workloads.contains(&m.workload) {
            continue;
        }
        seen_workloads.push(m.workload.clone());
        let n_all = m.cells.iter().map(|c| c.values.len()).max().unwrap_or(0);
        // Kernel configs: the values, and the power calculation, are boots.
        let unit = if m.cells.iter().any(|c| c.boots.is_some()) {
            "boots"
        } else {
            "runs"
        };
        let kept = n_all.saturating_sub(2 * trim);
        let _ = writeln!(
            out,
            "{} / {} ({}): {kept} {unit} per config (dropped the {trim} highest and {trim} lowest of {n_all})\n",
            ascii(&m.workload),
            ascii(&m.spec.name),
            if m.spec.unit.is_empty() { "-".to_string() } else { ascii(&m.spec.unit) },
        );
        let _ = writeln!(
            out,
            "{:<18} {:>11} {:>11} {:>11} {:>11}",
            "config", "Min val", "Avg val", "Max val", "Std Dev"
        );
        let _ = writeln!(
            out,
            "{} {} {} {} {}",
            "-".repeat(18),
            "-".repeat(11),
            "-".repeat(11),
            "-".repeat(11),
            "-".repeat(11)
        );
        for c in &m.cells {
            let Some(t) = trimmed(&c.values, trim) else {
                let _ = writeln!(
                    out,
                    "{} (only {} {unit}: nothing left after trimming)",
                    label(&ascii(&c.config), 18),
                    c.values.len()
                );
                continue;
            };
            let _ = writeln!(
                out,
                "{} {:>11.6} {:>11.6} {:>11.6} {:>11}",
                label(&ascii(&c.config), 18),
                t.min,
                t.mean,
                t.max,
                t.stddev
                    .map(|s| format!("{s:.6}"))
                    .unwrap_or_else(|| "n/a".into())
            );
        }
        let _ = writeln!(
            out,
            "\nAgainst {} (all {unit}; trimming above is for display only):",
            ascii(&a.baseline)
        );
        let _ = writeln!(
            out,
            "{:<18} {:>8} {:>15} {:>9} {:>8} {:>12}",
            "config",
            "delta",
            "95% CI",
            "p (corr.)",
            "verdict",
            format!("{unit} for 1%")
        );
        for cmp in &m.comparisons {
            let needed = units_for_one_percent(m, cmp, a.alpha, a.n_comparisons)
                .map(|n| n.to_string())
                .unwrap_or_else(|| "n/a".into());
            let _ = writeln!(
                out,
                "{} {:>8} {:>15} {:>9} {:>8} {:>12}",
                label(&ascii(&cmp.config), 18),
                cmp.delta_mean_pct
                    .map(fmt_pct)
                    .unwrap_or_else(|| "n/a".into()),
                Some(ci_cell(cmp))
                    .filter(|c| !c.is_empty())
                    .unwrap_or_else(|| "n/a".into()),
                cmp.p_adjusted
                    .map(|p| if p < 1e-3 {
                        "<0.001".into()
                    } else {
                        format!("{p:.3}")
                    })
                    .unwrap_or_else(|| "n/a".into()),
                cmp.verdict.word(),
                needed
            );
        }
        out.push('\n');
    }
    out
}
