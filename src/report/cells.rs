//! One table cell and one line of the text reports: numbers, percentages,
//! the delta and CI cells, clipping and wrapping to the 80 columns a mail
//! allows. Shared by the text report and its detail tables (and, through
//! `text`, by the markdown, boots and HTML reports).

use crate::analysis::{Comparison, MetricAnalysis, Verdict};

/// Width of a mail-ready line.
pub const WIDTH: usize = 80;

/// A number with 4-5 significant digits, never in `e` notation (a reader
/// should not have to decode `3.428e-4`; reports pick units that keep most
/// values between 1 and 1000, see `units`): tiny values get the decimals
/// their first four significant digits need, huge ones print whole.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        "n/a".into()
    } else if v == 0.0 {
        "0".into()
    } else if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else if a >= 1.0 {
        format!("{v:.3}")
    } else if a >= 1e-3 {
        format!("{v:.4}")
    } else {
        let decimals = (-a.log10()).ceil() as usize + 3;
        format!("{v:.decimals$}")
    }
}

pub(super) fn fmt_pct(p: f64) -> String {
    if p.abs() >= 100.0 {
        format!("{p:+.0}%")
    } else {
        format!("{p:+.1}%")
    }
}

pub(super) fn fmt_pct_bare(p: f64) -> String {
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

/// "[+5.9,+7.4]" (percent), "not estimable" (the warnings say why), or "".
pub fn ci_cell(c: &Comparison) -> String {
    match c.delta_ci_pct {
        Some((lo, hi)) => format!("[{},{}]", fmt_pct_bare(lo), fmt_pct_bare(hi)),
        None if crate::analysis::ci_not_estimable(c) => "not estimable".into(),
        None => String::new(),
    }
}

pub(super) fn clip(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(w - 1).collect();
        t.push('~');
        t
    }
}

/// Why a row's verdict and its CI seem to disagree. Both are right by the
/// documented method (the verdict is the rank test after correction with
/// the mean and the rank shift agreeing in direction; the CI is of the
/// ratio of means), and a reviewer is told which case it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Disagreement {
    /// A verdict whose mean CI includes no change.
    RankOnly,
    /// `~` with a mean CI that excludes no change: the rank test is not
    /// significant after correction.
    MeanOnly,
    /// `~` with a mean CI that excludes no change although the rank test
    /// is significant: the mean and the rank shift do not agree in direction
    /// (opposite signs, or a rank shift of exactly 0).
    Opposite,
}

impl Disagreement {
    /// The mark after the delta cell (ASCII: the text report is plain).
    pub fn mark(self) -> &'static str {
        match self {
            Disagreement::RankOnly => "*",
            Disagreement::MeanOnly => "#",
            Disagreement::Opposite => "^",
        }
    }

    pub fn note(self) -> &'static str {
        match self {
            Disagreement::RankOnly => "rank test significant, mean CI crosses 0",
            Disagreement::MeanOnly => {
                "mean CI excludes 0, rank test not significant after correction"
            }
            Disagreement::Opposite => {
                "mean CI excludes 0, rank test significant, but the mean and the rank shift do not agree in direction"
            }
        }
    }
}

/// The disagreement of a comparison, if any (`alpha`: the report's level).
pub fn disagreement(c: &Comparison, alpha: f64) -> Option<Disagreement> {
    let (lo, hi) = c.delta_ci_pct?;
    let crosses = lo <= 0.0 && hi >= 0.0;
    match c.verdict {
        Verdict::Better | Verdict::Worse if crosses => Some(Disagreement::RankOnly),
        Verdict::Noise if !crosses => Some(if c.p_adjusted.is_some_and(|p| p < alpha) {
            Disagreement::Opposite
        } else {
            Disagreement::MeanOnly
        }),
        _ => None,
    }
}

/// [`delta_cell`] with its disagreement mark, if any.
pub fn marked_delta_cell(c: &Comparison, alpha: f64) -> String {
    let mark = disagreement(c, alpha).map_or("", Disagreement::mark);
    format!("{}{mark}", delta_cell(c))
}

/// The footnote lines for the marks `used` (each once, in mark order).
pub fn footnotes(mut used: Vec<Disagreement>) -> Vec<String> {
    used.sort();
    used.dedup();
    used.iter()
        .map(|d| format!("{} {}", d.mark(), d.note()))
        .collect()
}

/// A row label padded to `w` columns; a longer one is kept whole on a line
/// of its own, the row continuing below it aligned (a clipped name could
/// read as another config's).
pub(super) fn label(name: &str, w: usize) -> String {
    if name.chars().count() <= w {
        format!("{name:<w$}")
    } else {
        format!("{name}\n{}", " ".repeat(w))
    }
}

pub(super) fn column_title(m: &MetricAnalysis) -> (String, String) {
    let unit = if m.spec.unit.is_empty() {
        String::new()
    } else {
        format!(" {}", m.spec.unit)
    };
    (m.workload.clone(), format!("{}{}", m.spec.name, unit))
}

pub(super) fn wrap(text: &str, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::from(indent);
    for word in text.split_whitespace() {
        // A word longer than a line (a path, a hash) is broken where it must.
        let mut word = word;
        while word.len() > WIDTH - indent.len() {
            if !line.trim().is_empty() {
                out.push_str(line.trim_end());
                out.push('\n');
            }
            let cut = floor_boundary(word, WIDTH - indent.len());
            out.push_str(indent);
            out.push_str(&word[..cut]);
            out.push('\n');
            word = &word[cut..];
            line = String::from(indent);
        }
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

pub(super) fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i.max(1)
}
