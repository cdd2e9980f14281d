//! The short text report `ab` prints: what a hyperfine user reads on
//! screen after comparing commands. The runs, how to read a verdict in
//! one line, the table, and what must be known (failures, events,
//! warnings); the machine, the method's full statement and the shell's
//! start-up stay in `sysdelta report N`, which the last line names.
//! A run of `true` under two configs took 49 lines; this takes about 20.

use std::fmt::Write as _;

use super::cells::wrap;
use super::escape::ascii;
use crate::analysis::view::ReportView;
use crate::analysis::{Analysis, Correction};

/// The short report of `v`, or None where it would leave out what the
/// reader needs (configs that booted kernels: their boots section).
pub fn render(v: &ReportView) -> Option<String> {
    let a = &v.shown;
    if super::boots_text::by_boot(a) || a.boots.is_some() {
        return None;
    }
    let mut out = head(a);
    out.push('\n');
    let metrics: Vec<_> = a.metrics.iter().collect();
    if metrics.is_empty() {
        out.push_str("No successful runs: nothing to compare.\n\n");
    } else {
        out.push_str(&super::text::tables(a, &metrics));
    }
    let geo = super::geomean::lines(a);
    if !geo.is_empty() {
        out.push_str(&wrap(&super::geomean::title(a), ""));
        for l in &geo {
            out.push_str(&wrap(&format!("- {l}"), "  "));
        }
        out.push('\n');
    }
    for l in super::overhead::text_lines(a) {
        out.push_str(&wrap(&ascii(&l), "    "));
    }
    // Failures, events and warnings as the full report has them, without
    // sysdelta's own cost (the full report's last paragraph).
    let mut quiet = a.clone();
    quiet.info.self_usage = None;
    out.push_str(&super::text::footer(&quiet));
    let _ = writeln!(
        out,
        "Machine, method and shell start-up: sysdelta report {}",
        a.info.id
    );
    Some(super::escape::terminal_safe_lines(&super::text::fit(&out)))
}

/// Two or three lines: the experiment and its runs, and how to read the
/// table.
fn head(a: &Analysis) -> String {
    let i = &a.info;
    let mut h = String::new();
    let warm = match i.warmup {
        0 => String::new(),
        w => format!(" + {w} warm-up"),
    };
    let mut counts: Vec<usize> = a
        .metrics
        .iter()
        .flat_map(|m| m.cells.iter().map(|c| c.values.len()))
        .collect();
    counts.sort_unstable();
    let per_cell = match (counts.first(), counts.last()) {
        (Some(lo), Some(hi)) if lo != hi => format!("{lo}-{hi}"),
        (Some(n), _) => n.to_string(),
        _ => "0".to_string(),
    };
    // The order and seed only when they are not the defaults' shape.
    let order = match i.order.as_str() {
        "random-blocks" => String::new(),
        o => format!(", {} order", ascii(o)),
    };
    h.push_str(&wrap(
        &format!(
            "sysdelta ab: experiment {}{} {}, seed {}{order}",
            i.id,
            i.label
                .as_ref()
                .map(|l| format!(" label {}", ascii(l)))
                .unwrap_or_default(),
            ascii(i.status.as_str()),
            i.seed,
        ),
        "",
    ));
    // As the full report's runs line counts them.
    let _ = writeln!(
        h,
        "runs: {per_cell} per cell{warm}; {}",
        crate::words::runs_tally(a.runs_ok, a.runs_left_out, a.runs_failed)
    );
    let correction = match a.correction {
        Correction::Holm => "Holm",
        Correction::Bh => "Benjamini-Hochberg",
    };
    h.push_str(&wrap(
        &format!(
            "Baseline {}. Delta: mean against the baseline's, {:.0}% CI; worse or \
             better: Mann-Whitney p < {}, {correction} over {}; else ~ (noise).",
            ascii(&a.baseline),
            a.confidence * 100.0,
            a.alpha,
            crate::words::count(a.n_comparisons, "comparison"),
        ),
        "",
    ));
    h
}
