//! The cells that both the summary table (`page.rs`) and each metric's
//! table (`metrics.rs`) print: delta, CI and verdict words, the footnote on
//! disagreement marks, and the config legend. Kept apart so those two files
//! import this one instead of each other.

use std::fmt::Write as _;

use super::{esc, plot};
use crate::analysis::{Comparison, Verdict};
use crate::report::cells::{disagreement, footnotes};

pub(super) fn delta_text(c: &Comparison) -> String {
    match c.delta_mean_pct {
        Some(d) => format!("{d:+.1}%"),
        None => "n/a".into(),
    }
}

pub(super) fn ci_text(c: &Comparison) -> String {
    match c.delta_ci_pct {
        Some((lo, hi)) => format!("[{lo:+.1}%, {hi:+.1}%]"),
        None if crate::analysis::ci_not_estimable(c) => "not estimable".into(),
        None => "-".into(),
    }
}

pub(super) fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Better => "better",
        Verdict::Worse => "worse",
        _ => "noise",
    }
}

pub(super) fn verdict_text(c: &Comparison, alpha: f64) -> String {
    let mark = disagreement(c, alpha).map_or("", |d| d.mark());
    match (c.verdict, &c.note) {
        (Verdict::Noise, _) => format!("~ within noise{mark}"),
        (Verdict::Undefined, Some(n)) => format!("n/a ({n})"),
        (v, _) => format!("{}{mark}", v.word()),
    }
}

/// Under a table: what its verdict/CI disagreement marks mean.
pub(super) fn footnote_html<'a>(
    o: &mut String,
    cs: impl Iterator<Item = &'a Comparison>,
    alpha: f64,
) {
    let notes = footnotes(cs.filter_map(|c| disagreement(c, alpha)).collect());
    if !notes.is_empty() {
        let _ = write!(o, "<p class=\"meta\">{}</p>", esc(&notes.join("; ")));
    }
}

pub(super) fn legend(configs: &[String]) -> String {
    let mut s = String::from("<p class=\"legend\">");
    for (i, c) in configs.iter().enumerate() {
        let _ = write!(
            s,
            "<span><b style=\"color:{}\">{}</b> {}{}</span>",
            plot::css_color(i),
            plot::marker_glyph(i),
            esc(c),
            if i == 0 { " (baseline)" } else { "" }
        );
    }
    s.push_str("</p>");
    s
}
