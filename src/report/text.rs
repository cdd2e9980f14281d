//! The mail-ready text report: at most 80 columns, plain ASCII, rows are
//! configs and columns are metrics, like test set #1 of the 2002 LTT
//! posting: each config's value, then its delta (%) with the verdict and
//! the confidence interval, or `~` when it is within noise.

use std::fmt::Write as _;

use crate::stats::tost::Equivalence;

use super::escape::ascii;
use crate::analysis::{Analysis, CiMethod, Comparison, Correction, MetricAnalysis};

pub use super::detail::{detail, trimmed_tables};
// The cell and line formatting lives in `cells`, below this file and
// `detail`, which both use it; re-exported where the other reports (and
// code being written against `text::`) look for it.
pub use super::cells::{ci_cell, delta_cell, fmt_num, WIDTH};
pub(super) use super::cells::{clip, column_title, wrap};
use super::cells::{disagreement, footnotes, marked_delta_cell, Disagreement};

/// Narrowest label and metric columns (the widths the tables had when
/// they were fixed); both grow to fit what they hold, never clip it.
const LABEL: usize = 12;
const COL: usize = 13;
/// Widest a column grows for one unbreakable piece of a metric's name
/// before that piece is broken at `_`.
const HEAD_PIECE: usize = 20;

/// Widest the label column grows: room for three metric columns stays.
const LABEL_MAX: usize = 30;

/// The row labels' width: the longest label up to `LABEL_MAX` (a longer
/// config name goes on a line of its own above its row, whole).
fn label_width(labels: &[String]) -> usize {
    let widest = labels
        .iter()
        .map(String::len)
        .filter(|l| *l <= LABEL_MAX)
        .max()
        .unwrap_or(0);
    widest.max(LABEL)
}

fn row(out: &mut String, lw: usize, label: &str, cells: &[String], widths: &[usize]) {
    let _ = write!(out, "| {label:<lw$} |");
    for (c, w) in cells.iter().zip(widths) {
        let _ = write!(out, " {c:>w$} |");
    }
    out.push('\n');
}

fn rule(out: &mut String, lw: usize, widths: &[usize]) {
    let n = lw + 4 + widths.iter().map(|w| w + 3).sum::<usize>();
    out.push_str(&"-".repeat(n));
    out.push('\n');
}

/// A config name wider than the label column, on a line of its own (lines
/// when it is longer than one, broken as names are).
fn name_lines(out: &mut String, name: &str) {
    for p in break_name(name, WIDTH - 2) {
        let _ = writeln!(out, "| {p}");
    }
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
    // configs: a monitors-off control has no cells): the most values any
    // of the workload's metrics has there, from one pass over the metrics
    // (a scan of them per cell made a report of W workloads cost W^2).
    let mut most: std::collections::HashMap<(&str, &str), usize> = std::collections::HashMap::new();
    for m in &a.metrics {
        for x in &m.cells {
            let n = most
                .entry((x.config.as_str(), m.workload.as_str()))
                .or_default();
            *n = (*n).max(x.values.len());
        }
    }
    let most = &most;
    let counts: Vec<usize> = a
        .configs
        .iter()
        .flat_map(|c| {
            i.workloads
                .iter()
                .map(move |w| most.get(&(c.as_str(), w.as_str())).copied().unwrap_or(0))
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
         samples so that it keeps its level; below 5 {} a side it is Welch's t \
         interval of the log ratio.{} Unit of replication: {}.",
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
        if by_boot { "boots" } else { "runs" },
        if by_boot {
            " With fewer than 8 boots a side the test is Welch's t on the boot means \
             instead of Mann-Whitney, and the mean's direction alone must agree."
        } else {
            ""
        },
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

/// `text` in lines of at most `w` characters, broken after `.`, `/`, `-`
/// or a space where possible, then after `_`, and only mid-word for a piece
/// longer than a line (so `vmstat.si_per_s` reads `vmstat.` / `si_per_s`).
fn break_name(text: &str, w: usize) -> Vec<String> {
    let mut pieces: Vec<&str> = Vec::new();
    for p in text.split_inclusive(BREAKS) {
        if p.len() > w {
            pieces.extend(p.split_inclusive('_'));
        } else {
            pieces.push(p);
        }
    }
    let mut lines = Vec::new();
    let mut cur = String::new();
    for piece in pieces {
        if cur.len() + piece.trim_end().len() > w && !cur.is_empty() {
            lines.push(cur.trim_end().to_string());
            cur.clear();
        }
        let mut p = piece;
        while p.trim_end().len() > w {
            let cut = super::cells::floor_boundary(p, w);
            lines.push(p[..cut].to_string());
            p = &p[cut..];
        }
        cur.push_str(p);
    }
    if !cur.trim().is_empty() {
        lines.push(cur.trim_end().to_string());
    }
    lines
}

/// The longest piece of a name that `break_name` keeps whole at best.
fn longest_piece(text: &str) -> usize {
    text.split_inclusive(BREAKS)
        .map(|p| p.trim_end().len())
        .max()
        .unwrap_or(0)
}

/// Where a name may be broken (after the character).
const BREAKS: [char; 4] = ['.', '/', '-', ' '];

/// One metric column of a table: header lines (workload on top, then the
/// name and unit) and its cells, one per row of the body.
struct Column {
    width: usize,
    workload: Vec<String>,
    title: Vec<String>,
}

fn column(m: &MetricAnalysis, cells: &[&String], max: usize) -> Column {
    let (w, t) = column_title(m);
    let (w, t) = (ascii(&w), ascii(&t));
    let widest_cell = cells.iter().map(|c| c.len()).max().unwrap_or(0);
    let piece = longest_piece(&t).max(longest_piece(&w)).min(HEAD_PIECE);
    let width = COL.max(widest_cell).max(piece).min(max);
    Column {
        width,
        workload: break_name(&w, width),
        title: break_name(&t, width),
    }
}

/// The body of a table for the metrics `ms`: (label, config index, cells)
/// per row; the index is set on a config's own row (whose label is its
/// name).
type Body = Vec<(String, Option<usize>, Vec<String>)>;

fn body(a: &Analysis, ms: &[&MetricAnalysis]) -> Body {
    let mut rows: Body = Vec::new();
    for (ci, config) in a.configs.iter().enumerate() {
        let values: Vec<String> = ms
            .iter()
            .map(|m| {
                m.cells[ci]
                    .summary
                    .as_ref()
                    .map(|s| fmt_num(s.mean))
                    .unwrap_or_else(|| "n/a".into())
            })
            .collect();
        rows.push((ascii(config), Some(ci), values));
        if ci > 0 {
            fn cmp(m: &MetricAnalysis, ci: usize) -> &Comparison {
                &m.comparisons[ci - 1]
            }
            let deltas = ms.iter().map(|m| marked_delta_cell(cmp(m, ci), a.alpha));
            rows.push(("  delta (%)".into(), None, deltas.collect()));
            let cis = ms.iter().map(|m| ci_cell(cmp(m, ci))).collect();
            rows.push((format!("  {:.0}% CI", a.confidence * 100.0), None, cis));
            if let Some(margin) = a.equivalence {
                let eq = ms
                    .iter()
                    .map(|m| match cmp(m, ci).equivalence {
                        Some(Equivalence::Equivalent) => "equivalent".into(),
                        Some(Equivalence::NotEquivalent) => "not equiv.".into(),
                        Some(Equivalence::Undecided) => "undecided".into(),
                        None => "n/a".into(),
                    })
                    .collect();
                rows.push((format!("  equiv +-{:.1}%", margin * 100.0), None, eq));
            }
        }
        if ms.iter().any(|m| m.cells[ci].boots.is_some()) {
            let shares = ms
                .iter()
                .map(|m| super::boots_text::share_cell(&m.cells[ci]))
                .collect();
            rows.push(("  boot share".into(), None, shares));
        }
    }
    rows
}

/// The configs x metrics tables, as many metric columns to a table as fit
/// in 80 columns (the config column repeated in each). Nothing is clipped:
/// columns widen to their widest cell, names wrap at `.`/`/`/`_`, and a
/// config name too long for the label column gets lines of its own.
pub fn tables(a: &Analysis, metrics: &[&MetricAnalysis]) -> String {
    let all = body(a, metrics);
    let mut labels: Vec<String> = all.iter().map(|r| r.0.clone()).collect();
    labels.push("config".into());
    let lw = label_width(&labels);
    let max = WIDTH - lw - 7;
    let cols: Vec<Column> = metrics
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let cells: Vec<&String> = all.iter().map(|r| &r.2[i]).collect();
            column(m, &cells, max)
        })
        .collect();
    // Greedy blocks of columns that fit the line.
    let mut blocks: Vec<std::ops::Range<usize>> = Vec::new();
    let mut start = 0;
    let mut used_width = lw + 4;
    for (i, c) in cols.iter().enumerate() {
        if i > start && used_width + c.width + 3 > WIDTH {
            blocks.push(start..i);
            start = i;
            used_width = lw + 4;
        }
        used_width += c.width + 3;
    }
    if start < cols.len() {
        blocks.push(start..cols.len());
    }
    let mut out = String::new();
    for block in blocks {
        let cs = &cols[block.clone()];
        let widths: Vec<usize> = cs.iter().map(|c| c.width).collect();
        rule(&mut out, lw, &widths);
        let top = cs.iter().map(|c| c.workload.len()).max().unwrap_or(1);
        let bottom = cs.iter().map(|c| c.title.len()).max().unwrap_or(1);
        // Workload on top; name and unit bottom-aligned above the rule.
        for l in 0..top {
            let cells: Vec<String> = cs
                .iter()
                .map(|c| c.workload.get(l).cloned().unwrap_or_default())
                .collect();
            row(&mut out, lw, "", &cells, &widths);
        }
        for l in 0..bottom {
            let cells: Vec<String> = cs
                .iter()
                .map(|c| {
                    let pad = bottom - c.title.len();
                    if l < pad {
                        String::new()
                    } else {
                        c.title[l - pad].clone()
                    }
                })
                .collect();
            let label = if l + 1 == bottom { "config" } else { "" };
            row(&mut out, lw, label, &cells, &widths);
        }
        rule(&mut out, lw, &widths);
        for (label, config, cells) in &all {
            let mut label = label.as_str();
            if config.is_some() && label.len() > lw {
                name_lines(&mut out, label);
                label = "";
            }
            row(&mut out, lw, label, &cells[block.clone()], &widths);
        }
        rule(&mut out, lw, &widths);
        let marks: Vec<Disagreement> = used_in(a, &metrics[block]);
        for note in footnotes(marks) {
            out.push_str(&wrap(&note, "  "));
        }
        out.push('\n');
    }
    out
}

/// The disagreement marks among the comparisons of `ms`.
fn used_in(a: &Analysis, ms: &[&MetricAnalysis]) -> Vec<Disagreement> {
    ms.iter()
        .flat_map(|m| m.comparisons.iter())
        .filter_map(|c| disagreement(c, a.alpha))
        .collect()
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
    let geo = super::geomean::lines(a);
    if !geo.is_empty() {
        out.push_str(&wrap(&super::geomean::title(a), ""));
        for l in &geo {
            out.push_str(&wrap(&format!("- {l}"), "  "));
        }
        out.push('\n');
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
