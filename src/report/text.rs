//! The mail-ready text report: at most 80 columns, plain ASCII, rows are
//! configs and columns are metrics, like test set #1 of the 2002 LTT
//! posting: each config's value, then its delta (%) with the verdict and
//! the confidence interval, or `~` when it is within noise.

use std::fmt::Write as _;

use super::analysis::{Analysis, Comparison, MetricAnalysis, Verdict};

pub const WIDTH: usize = 80;
const LABEL: usize = 12;
const COL: usize = 13;
const COLS_PER_TABLE: usize = (WIDTH - (LABEL + 4)) / (COL + 3);

/// A number in at most about 10 characters with 4-5 significant digits.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        "n/a".into()
    } else if v == 0.0 {
        "0".into()
    } else if !(1e-3..1e7).contains(&a) {
        format!("{v:.3e}")
    } else if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else if a >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}

fn fmt_pct(p: f64) -> String {
    if p.abs() >= 100.0 {
        format!("{p:+.0}%")
    } else {
        format!("{p:+.1}%")
    }
}

fn fmt_pct_bare(p: f64) -> String {
    if p.abs() >= 100.0 {
        format!("{p:+.0}")
    } else {
        format!("{p:+.1}")
    }
}

/// "+6.7% worse", "~ +0.3%", or "n/a".
pub fn delta_cell(c: &Comparison) -> String {
    match (c.verdict, c.delta_mean_pct) {
        (Verdict::Undefined, _) | (_, None) => "n/a".into(),
        (Verdict::Noise, Some(d)) => format!("~ {}", fmt_pct(d)),
        (v, Some(d)) => format!("{} {}", fmt_pct(d), v.word()),
    }
}

/// "[+5.9,+7.4]" (percent), or "".
pub fn ci_cell(c: &Comparison) -> String {
    match c.ratio_ci {
        Some((lo, hi)) => format!(
            "[{},{}]",
            fmt_pct_bare(100.0 * (lo - 1.0)),
            fmt_pct_bare(100.0 * (hi - 1.0))
        ),
        None => String::new(),
    }
}

fn clip(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(w - 1).collect();
        t.push('~');
        t
    }
}

fn ascii(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() {
                c
            } else {
                '?'
            }
        })
        .collect()
}

fn row(out: &mut String, label: &str, cells: &[String]) {
    let _ = write!(out, "| {:<LABEL$} |", clip(label, LABEL));
    for c in cells {
        let _ = write!(out, " {:>COL$} |", clip(c, COL));
    }
    out.push('\n');
}

fn rule(out: &mut String, ncols: usize) {
    out.push_str(&"-".repeat(LABEL + 4 + ncols * (COL + 3)));
    out.push('\n');
}

/// The header block: what ran where, and how to read the numbers.
pub fn header(a: &Analysis) -> String {
    let i = &a.info;
    let f = |k: &str| i.fingerprint.get(k).map(String::as_str).unwrap_or("-");
    let mut h = String::new();
    let _ = writeln!(
        h,
        "sysdelta report: experiment {} \"{}\"{}, {}",
        i.id,
        ascii(&i.name),
        i.label
            .as_ref()
            .map(|l| format!(" label {}", ascii(l)))
            .unwrap_or_default(),
        i.status
    );
    let _ = writeln!(
        h,
        "started {} on {}: Linux {} ({})",
        i.created_at,
        ascii(&i.host),
        f("kernel"),
        f("arch")
    );
    let _ = writeln!(h, "cpu: {} x {}", f("cpus_online"), ascii(f("cpu_model")));
    let _ = writeln!(
        h,
        "memory {}, swap {}, clocksource {}, governor {}",
        f("memory"),
        f("swap"),
        f("clocksource"),
        f("cpufreq_governor")
    );
    let _ = writeln!(
        h,
        "THP {}, load at start {}",
        f("thp"),
        f("loadavg_at_start")
    );
    let _ = writeln!(
        h,
        "runs: {} per cell{}, {} order, seed {}; {} ok, {} failed",
        i.runs_per_cell,
        if i.warmup > 0 {
            format!(" + {} warm-up", i.warmup)
        } else {
            String::new()
        },
        i.order,
        i.seed,
        a.runs_ok,
        a.runs_failed
    );
    let _ = writeln!(
        h,
        "baseline {}. Values are means over runs; delta is the mean against the",
        ascii(&a.baseline)
    );
    let _ = writeln!(
        h,
        "baseline's, with its {:.0}% bootstrap CI ({} resamples). A verdict needs a",
        a.confidence * 100.0,
        a.resamples
    );
    let _ = writeln!(
        h,
        "Mann-Whitney p < {} after Holm correction over {} comparisons and a CI",
        a.alpha, a.n_comparisons
    );
    let _ = writeln!(
        h,
        "that excludes 0; otherwise the delta is marked ~ (within noise)."
    );
    h
}

fn column_title(m: &MetricAnalysis) -> (String, String) {
    let unit = if m.spec.unit.is_empty() {
        String::new()
    } else {
        format!(" {}", m.spec.unit)
    };
    (m.workload.clone(), format!("{}{}", m.spec.name, unit))
}

/// Header lines of one column: the workload, then the metric name and unit
/// broken into pieces of at most COL characters (at dots and spaces where
/// possible), so long names are not cut.
fn header_lines(m: &MetricAnalysis) -> Vec<String> {
    let (w, t) = column_title(m);
    let mut lines = vec![ascii(&w)];
    let mut cur = String::new();
    for piece in ascii(&t).split_inclusive(['.', ' ', '_']) {
        if cur.len() + piece.len() > COL && !cur.is_empty() {
            lines.push(cur.trim_end().to_string());
            cur.clear();
        }
        let mut p = piece;
        while p.len() > COL {
            lines.push(p[..COL].to_string());
            p = &p[COL..];
        }
        cur.push_str(p);
    }
    if !cur.trim().is_empty() {
        lines.push(cur.trim_end().to_string());
    }
    lines
}

/// The configs x metrics tables, split to fit 80 columns.
pub fn tables(a: &Analysis, metrics: &[&MetricAnalysis]) -> String {
    let mut out = String::new();
    for chunk in metrics.chunks(COLS_PER_TABLE.max(1)) {
        let n = chunk.len();
        rule(&mut out, n);
        let heads: Vec<Vec<String>> = chunk.iter().map(|m| header_lines(m)).collect();
        let depth = heads.iter().map(Vec::len).max().unwrap_or(1);
        for l in 0..depth {
            // Workload on top; name and unit bottom-aligned above the rule.
            let cells: Vec<String> = heads
                .iter()
                .map(|h| {
                    let pad = depth - h.len();
                    match l {
                        0 => h[0].clone(),
                        _ if l <= pad => String::new(),
                        _ => h[l - pad].clone(),
                    }
                })
                .collect();
            row(&mut out, if l + 1 == depth { "config" } else { "" }, &cells);
        }
        rule(&mut out, n);
        for (ci, config) in a.configs.iter().enumerate() {
            let values: Vec<String> = chunk
                .iter()
                .map(|m| {
                    m.cells[ci]
                        .summary
                        .as_ref()
                        .map(|s| fmt_num(s.mean))
                        .unwrap_or_else(|| "n/a".into())
                })
                .collect();
            row(&mut out, &ascii(config), &values);
            if ci > 0 {
                let deltas: Vec<String> = chunk
                    .iter()
                    .map(|m| delta_cell(&m.comparisons[ci - 1]))
                    .collect();
                row(&mut out, "  delta (%)", &deltas);
                let cis: Vec<String> = chunk
                    .iter()
                    .map(|m| ci_cell(&m.comparisons[ci - 1]))
                    .collect();
                row(
                    &mut out,
                    &format!("  {:.0}% CI", a.confidence * 100.0),
                    &cis,
                );
            }
        }
        rule(&mut out, n);
        out.push('\n');
    }
    out
}

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
        let _ = writeln!(
            out,
            "{:<12} {:>4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6} {:>9}",
            "config", "n", "mean", "median", "min", "max", "stddev", "CoV%", "trim1"
        );
        for c in &m.cells {
            match &c.summary {
                Some(s) => {
                    let _ = writeln!(
                        out,
                        "{:<12} {:>4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6} {:>9}",
                        clip(&ascii(&c.config), 12),
                        s.n,
                        fmt_num(s.mean),
                        fmt_num(s.median),
                        fmt_num(s.min),
                        fmt_num(s.max),
                        s.stddev.map(fmt_num).unwrap_or_else(|| "n/a".into()),
                        s.cov
                            .map(|c| format!("{:.2}", c * 100.0))
                            .unwrap_or_else(|| "n/a".into()),
                        s.trimmed_mean.map(fmt_num).unwrap_or_else(|| "n/a".into()),
                    );
                }
                None => {
                    let _ = writeln!(
                        out,
                        "{:<12} {:>4} (no successful runs)",
                        clip(&ascii(&c.config), 12),
                        0
                    );
                }
            }
        }
        for cmp in &m.comparisons {
            let _ = writeln!(
                out,
                "  {} vs {}: mean {} median {} CI {} p {} p(Holm) {}{}",
                clip(&ascii(&cmp.config), 12),
                ascii(&a.baseline),
                cmp.delta_mean_pct
                    .map(fmt_pct)
                    .unwrap_or_else(|| "n/a".into()),
                cmp.delta_median_pct
                    .map(fmt_pct)
                    .unwrap_or_else(|| "n/a".into()),
                if cmp.ratio_ci.is_some() {
                    ci_cell(cmp)
                } else {
                    "n/a".into()
                },
                cmp.p
                    .map(|p| format!("{p:.3}"))
                    .unwrap_or_else(|| "n/a".into()),
                cmp.p_adjusted
                    .map(|p| format!("{p:.3}"))
                    .unwrap_or_else(|| "n/a".into()),
                cmp.note
                    .as_ref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default(),
            );
        }
        out.push('\n');
    }
    out
}

fn wrap(text: &str, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::from(indent);
    for word in text.split_whitespace() {
        if line.len() + word.len() + 1 > WIDTH && !line.trim().is_empty() {
            out.push_str(line.trim_end());
            out.push('\n');
            line = String::from(indent);
        }
        line.push_str(word);
        line.push(' ');
    }
    if !line.trim().is_empty() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Failed runs with the tail of their stderr, events and warnings.
pub fn footer(a: &Analysis) -> String {
    let mut out = String::new();
    if !a.failed.is_empty() {
        let _ = writeln!(
            out,
            "Failed runs ({}), never used as samples:",
            a.failed.len()
        );
        for f in &a.failed {
            let _ = write!(
                out,
                "{}",
                wrap(
                    &format!(
                        "- block {}{} {}/{}: {}",
                        f.block,
                        if f.warmup { " (warm-up)" } else { "" },
                        ascii(&f.config),
                        ascii(&f.workload),
                        ascii(&f.reason)
                    ),
                    ""
                )
            );
            let lines: Vec<&str> = f
                .stderr_tail
                .lines()
                .filter(|l| !l.trim().is_empty())
                .collect();
            for l in &lines[lines.len().saturating_sub(3)..] {
                let _ = writeln!(out, "    | {}", clip(&ascii(l), WIDTH - 6));
            }
        }
        out.push('\n');
    }
    if !a.events.is_empty() {
        let _ = writeln!(out, "Events:");
        for e in &a.events {
            let _ = write!(
                out,
                "{}",
                wrap(
                    &format!("- {} {}: {}", e.at, e.kind, ascii(&e.message)),
                    "  "
                )
            );
        }
        out.push('\n');
    }
    if !a.warnings.is_empty() {
        let _ = writeln!(out, "Warnings:");
        for w in &a.warnings {
            let _ = write!(out, "{}", wrap(&format!("- {}", ascii(w)), "  "));
        }
        out.push('\n');
    }
    if let Some(u) = &a.info.self_usage {
        let share = u
            .get("cpu_share_of_one_core")
            .and_then(|v| v.as_f64())
            .unwrap_or(f64::NAN);
        let rss = u
            .get("peak_rss_kib")
            .and_then(|v| v.as_f64())
            .unwrap_or(f64::NAN);
        let _ = writeln!(
            out,
            "sysdelta itself used {:.2}% of one core and {:.1} MiB peak RSS while running.",
            share * 100.0,
            rss / 1024.0
        );
    }
    out
}

/// The whole text report; `sections` (profiles, series) go before the footer.
pub fn render(a: &Analysis, with_detail: bool, sections: &str) -> String {
    let mut out = header(a);
    out.push('\n');
    let metrics: Vec<&MetricAnalysis> = a.metrics.iter().collect();
    if metrics.is_empty() {
        out.push_str("No successful runs: nothing to compare.\n\n");
    } else {
        out.push_str(&tables(a, &metrics));
    }
    if with_detail {
        out.push_str(&detail(a));
    }
    out.push_str(sections);
    out.push_str(&footer(a));
    out
}
