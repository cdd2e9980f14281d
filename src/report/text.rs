//! The mail-ready text report: at most 80 columns, plain ASCII, rows are
//! configs and columns are metrics, like test set #1 of the 2002 LTT
//! posting: each config's value, then its delta (%) with the verdict and
//! the confidence interval, or `~` when it is within noise.

use std::fmt::Write as _;

use crate::stats::tost::Equivalence;

use super::escape::ascii;
use crate::analysis::{Analysis, CiMethod, Correction, MetricAnalysis};

pub use super::detail::{detail, trimmed_tables};
// The cell and line formatting lives in `cells`, below this file and
// `detail`, which both use it; re-exported where the other reports (and
// code being written against `text::`) look for it.
pub use super::cells::{ci_cell, delta_cell, fmt_num, WIDTH};
pub(super) use super::cells::{clip, column_title, wrap};

const LABEL: usize = 12;
const COL: usize = 13;
const COLS_PER_TABLE: usize = (WIDTH - (LABEL + 4)) / (COL + 3);

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
    let f = |k: &str| ascii(i.fingerprint.get(k).map(String::as_str).unwrap_or("-"));
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
        ascii(i.status.as_str())
    );
    let _ = writeln!(
        h,
        "started {} on {}: Linux {} ({})",
        ascii(&i.created_at),
        ascii(&i.host),
        f("kernel"),
        f("arch")
    );
    let _ = writeln!(h, "cpu: {} x {}", f("cpus_online"), f("cpu_model"));
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
    // Successful measured runs per (config, workload) cell (of the table's
    // configs: a monitors-off control has no cells).
    let counts: Vec<usize> = a
        .configs
        .iter()
        .flat_map(|c| {
            i.workloads.iter().map(move |w| {
                a.metrics
                    .iter()
                    .filter(|m| m.workload == *w)
                    .filter_map(|m| m.cells.iter().find(|x| x.config == *c))
                    .map(|x| x.values.len())
                    .max()
                    .unwrap_or(0)
            })
        })
        .collect();
    let (lo, hi) = (
        counts.iter().copied().min().unwrap_or(0),
        counts.iter().copied().max().unwrap_or(0),
    );
    let per_cell = if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}-{hi}")
    };
    let adaptive = match i.overrides.until_ci {
        Some(t) => format!(" (adaptive: until every CI < {:.2}%)", t * 100.0),
        None => String::new(),
    };
    let by_boot = super::boots_text::by_boot(a);
    if by_boot {
        h.push_str(&super::boots_text::header_line(a));
    } else {
        let _ = writeln!(
            h,
            "runs: {per_cell} per cell{}{adaptive}, {} order, seed {}; {} ok, {} failed",
            if i.warmup > 0 {
                format!(" + {} warm-up", i.warmup)
            } else {
                String::new()
            },
            ascii(&i.order),
            i.seed,
            a.runs_ok,
            a.runs_failed
        );
    }
    let method = match a.ci_method {
        CiMethod::Percentile => "percentile",
        CiMethod::Bca => "BCa",
    };
    let correction = match a.correction {
        Correction::Holm => "Holm correction",
        Correction::Bh => "Benjamini-Hochberg correction",
    };
    let text = format!(
        "Baseline {}. Values are means over {}; delta is the mean against the \
         baseline's, with its {:.0}% {method} bootstrap CI ({} resamples). A verdict \
         needs a Mann-Whitney p < {} after {correction} over {} comparisons, with \
         the mean and the rank (Hodges-Lehmann) shift pointing the same way; \
         otherwise the delta is marked ~ (within noise). The CI is widened for small \
         samples so that it keeps its level. Unit of replication: {}.",
        ascii(&a.baseline),
        if by_boot {
            "boots (a boot's value is the mean of its runs)"
        } else {
            "runs"
        },
        a.confidence * 100.0,
        a.resamples,
        a.alpha,
        a.n_comparisons,
        a.unit_of_replication,
    );
    h.push_str(&wrap(&text, ""));
    let chance = match a.correction {
        Correction::Holm => format!(
            "If nothing changed, {:.1} of {} comparisons would fall below p < {} by chance; \
             with the correction the chance of any false flag is at most {:.0}%.",
            a.alpha * a.n_comparisons as f64,
            a.n_comparisons,
            a.alpha,
            a.alpha * 100.0
        ),
        Correction::Bh => format!(
            "If nothing changed, {:.1} of {} comparisons would fall below p < {} by chance; \
             with the correction at most {:.0}% of the flags are expected to be false.",
            a.alpha * a.n_comparisons as f64,
            a.n_comparisons,
            a.alpha,
            a.alpha * 100.0
        ),
    };
    h.push_str(&wrap(&chance, ""));
    if let Some(t) = crate::analysis::families::telemetry_note(
        a.n_telemetry_comparisons,
        a.correction == crate::analysis::Correction::Bh,
    ) {
        h.push_str(&wrap(&t, ""));
    }
    let mut mde: Vec<f64> = a
        .metrics
        .iter()
        .flat_map(|m| m.comparisons.iter().filter_map(|c| c.mde_pct))
        .collect();
    if !mde.is_empty() {
        mde.sort_by(|x, y| x.total_cmp(y));
        h.push_str(&wrap(
            &format!(
                "Smallest shift detectable with 80% power at the observed noise: {:.2}% to {:.2}% \
                 (median {:.2}%) over the comparisons.",
                mde[0],
                mde[mde.len() - 1],
                mde[mde.len() / 2]
            ),
            "",
        ));
    }
    if by_boot || a.boots.is_some() {
        h.push_str(&super::boots_text::header_note(a));
    }
    if let Some(m) = a.equivalence {
        h.push_str(&wrap(
            &format!(
                "Equivalence (TOST, 90% CI within +-{:.2}%): equivalent, not equiv. (CI \
                 entirely outside) or undecided.",
                m * 100.0
            ),
            "",
        ));
    }
    h
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
                if let Some(margin) = a.equivalence {
                    let eq: Vec<String> = chunk
                        .iter()
                        .map(|m| match m.comparisons[ci - 1].equivalence {
                            Some(Equivalence::Equivalent) => "equivalent".into(),
                            Some(Equivalence::NotEquivalent) => "not equiv.".into(),
                            Some(Equivalence::Undecided) => "undecided".into(),
                            None => "n/a".into(),
                        })
                        .collect();
                    row(&mut out, &format!("  equiv +-{:.1}%", margin * 100.0), &eq);
                }
            }
            if chunk.iter().any(|m| m.cells[ci].boots.is_some()) {
                let shares: Vec<String> = chunk
                    .iter()
                    .map(|m| super::boots_text::share_cell(&m.cells[ci]))
                    .collect();
                row(&mut out, "  boot share", &shares);
            }
        }
        rule(&mut out, n);
        out.push('\n');
    }
    out
}

/// The mail-ready promise: no line over 80 columns. Tables are built to fit;
/// any other line that does not (a long host or CPU name, a title) is
/// re-wrapped with a two-space continuation indent.
pub fn fit(text: &str) -> String {
    let mut out = String::new();
    for l in text.lines() {
        if l.chars().count() <= WIDTH {
            out.push_str(l);
            out.push('\n');
        } else {
            let lead: String = l.chars().take_while(|c| *c == ' ').collect();
            let mut w = wrap(l, &lead);
            // Continuation lines get two more spaces than the first.
            let cont = format!("{lead}  ");
            let mut first = true;
            for piece in std::mem::take(&mut w).lines() {
                if first {
                    out.push_str(piece);
                    first = false;
                } else {
                    out.push_str(&cont);
                    out.push_str(piece.trim_start());
                }
                out.push('\n');
            }
        }
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
                    &format!(
                        "- {} {}: {}",
                        ascii(&e.at),
                        ascii(&e.kind),
                        ascii(&e.message)
                    ),
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
        out.push_str(&wrap(
            &format!(
                "sysdelta's own process used {:.2}% of one core and {:.1} MiB peak RSS while \
                 running (built-in workloads run inside it and count here; command workloads \
                 do not).",
                share * 100.0,
                rss / 1024.0
            ),
            "",
        ));
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
    let overhead = super::overhead::text_lines(a);
    if !overhead.is_empty() {
        for l in &overhead {
            out.push_str(&wrap(&ascii(l), "    "));
        }
        out.push('\n');
    }
    let shell = super::shell_cost::text_lines(a);
    if !shell.is_empty() {
        for l in &shell {
            out.push_str(&wrap(&ascii(l), "    "));
        }
        out.push('\n');
    }
    out.push_str(&super::boots_text::text_section(a));
    if with_detail {
        out.push_str(&detail(a));
    }
    out.push_str(sections);
    out.push_str(&footer(a));
    out
}
