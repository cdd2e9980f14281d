//! A metric's history (`sysdelta history`) as text and JSON, from the
//! view `analysis::history` builds.

use anyhow::Result;

use super::escape::{self, terminal_safe as safe};
use super::text;
use super::wrap::wrap;
use crate::analysis::history::History;
use crate::analysis::newest::{Judged, Newest, NEEDED};

/// The history as JSON (`history --format json`), terminal-safe like the
/// JSON report (see [`escape::json_text`]).
pub fn json(h: &History) -> Result<String> {
    Ok(escape::json_text(serde_json::to_string_pretty(h)?) + "\n")
}

/// Widest label column that keeps a row within 80 columns; a longer label
/// gets a line of its own rather than being cut (a cut label can read as
/// another one).
const LABEL_MAX: usize = 42;

/// The history as mail-ready text within 80 columns: one line per
/// experiment, change points marked between the lines where they fall, and
/// "no change found" when there is none. Labels and names are shown
/// terminal-safe.
pub fn text(h: &History) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    o.push_str(&wrap(
        &format!(
            "history of {}/{} ({}, {} is better), {}: {}",
            safe(&h.workload),
            safe(&h.metric),
            safe(&h.unit),
            h.direction,
            config_phrase(h),
            crate::words::count(h.points.len(), "experiment")
        ),
        "  ",
    ));
    let labels: Vec<String> = h.points.iter().map(|p| safe(&p.label)).collect();
    let w = labels
        .iter()
        .map(|l| l.chars().count())
        .filter(|n| *n <= LABEL_MAX)
        .max()
        .unwrap_or(0)
        .max(5);
    let _ = writeln!(
        o,
        "{:>5}  {:<w$} {:>4} {:>12} {:>10}",
        "id", "label", "n", "median", "vs prev"
    );
    for (i, p) in h.points.iter().enumerate() {
        if let Some(c) = h.change_points.iter().find(|c| c.index == i) {
            let _ = writeln!(
                o,
                "  ---- change point (p = {:.3}): median {} -> {} ({:+.1}%)",
                c.p,
                text::fmt_num(c.median_before),
                text::fmt_num(c.median_after),
                100.0 * (c.median_after / c.median_before - 1.0)
            );
        }
        let vs = if i == 0 || h.points[i - 1].median == 0.0 {
            String::new()
        } else {
            format!("{:+.1}%", 100.0 * (p.median / h.points[i - 1].median - 1.0))
        };
        // A label too long for its column gets a line of its own above.
        let own_line = labels[i].chars().count() > w;
        if own_line {
            let _ = writeln!(o, "{:>5}  {}", p.id, labels[i]);
        }
        let (id, label) = if own_line {
            (String::new(), "")
        } else {
            (p.id.to_string(), labels[i].as_str())
        };
        let _ = writeln!(
            o,
            "{:>5}  {:<w$} {:>4} {:>12} {:>10}",
            id,
            label,
            p.n,
            text::fmt_num(p.median),
            vs
        );
    }
    o.push('\n');
    o.push_str(&wrap(&newest_line(&h.newest), "  "));
    let flagged = matches!(h.newest.judged, Judged::Regressed | Judged::Improved);
    let found = match h.change_points.len() {
        0 if flagged => "No change point found".to_string(),
        0 => "No change found".to_string(),
        1 => "1 change point".to_string(),
        n => format!("{n} change points"),
    };
    o.push_str(&wrap(
        &format!(
            "{found} (binary segmentation of the per-experiment medians, each split kept \
             when a permutation test of {} orderings gives p < {}; a segment needs >= 5 \
             experiments before a split can reach p < 0.05, and a change with fewer \
             than 3 experiments after it is rarely found).",
            h.permutations, h.alpha
        ),
        "  ",
    ));
    if !h.skipped.is_empty() {
        o.push_str(&wrap(
            &format!(
                "Skipped (no such metric or config): {}",
                safe(&h.skipped.join(", "))
            ),
            "  ",
        ));
    }
    escape::terminal_safe_lines(&o)
}

/// The newest experiment's verdict in one paragraph: "regressed at the
/// newest" (or two), improved, no change, or why it was not judged.
pub fn newest_line(n: &Newest) -> String {
    let labels = safe(&n.labels.join(", "));
    let what = match n.labels.len() {
        1 => format!("Newest experiment {labels}"),
        k => format!("Newest {k} experiments {labels}"),
    };
    let (Some(t), Some(p)) = (&n.test, n.p) else {
        return format!(
            "{what}: not judged (it needs {NEEDED} experiments before it, after the last \
             change point)."
        );
    };
    let at = match t.newest {
        1 => "at the newest".to_string(),
        k => format!("at the newest {k}"),
    };
    let verdict = match n.judged {
        Judged::Regressed => format!("REGRESSED {at}"),
        Judged::Improved => format!("improved {at}"),
        _ => "no change beyond noise and drift".to_string(),
    };
    format!(
        "{what}: {verdict}, {:+.1}% (median {} against {} in the {} before; {}, \
         a t test of experiment medians, the drift between \
         experiments (sd {}) allowed for).",
        100.0 * t.relative(),
        text::fmt_num(t.level),
        text::fmt_num(t.reference),
        t.earlier,
        fmt_p(p, n.level),
        text::fmt_num(t.drift_sd),
    )
}

/// "p = 0.0123 < 0.025", or "p < 0.0001".
fn fmt_p(p: f64, level: f64) -> String {
    match p {
        p if p < 1e-4 => "p < 0.0001".into(),
        p if p < level => format!("p = {p:.4} < {level}"),
        p => format!("p = {p:.4} >= {level}"),
    }
}

/// Which config the history follows, in words.
pub fn config_phrase(h: &History) -> String {
    match &h.config {
        Some(c) => format!("config {}", safe(c)),
        None => {
            let mut names: Vec<&str> = h.points.iter().map(|p| p.config.as_str()).collect();
            names.dedup();
            match names.as_slice() {
                [one] => format!("config {} (the baseline)", safe(one)),
                _ => "each experiment's baseline config".to_string(),
            }
        }
    }
}
