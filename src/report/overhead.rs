//! The monitor overhead lines as the reports print them (computed by
//! `analysis::overhead`).

use std::fmt::Write;

use crate::analysis::{Analysis, Verdict};

/// The overhead as text lines (no trailing blank line); empty without one.
pub fn text_lines(a: &Analysis) -> Vec<String> {
    let Some(o) = &a.monitor_overhead else {
        return Vec::new();
    };
    let mut out = vec![format!(
        "Monitor overhead: '{}' with its monitors against '{}', randomized and interleaved like every config; {:.0}% CI:",
        a.baseline, o.control, a.confidence * 100.0
    )];
    for l in &o.lines {
        let c = &l.comparison;
        let mut s = format!("  monitor overhead, {}/{}: ", l.workload, l.spec.name);
        match (c.delta_mean_pct, c.delta_ci_pct) {
            (Some(d), Some((lo, hi))) => {
                let _ = write!(s, "{d:+.1}% [{lo:+.1}, {hi:+.1}]");
            }
            (Some(d), None) => {
                let _ = write!(
                    s,
                    "{d:+.1}% (no CI: {})",
                    c.ci_note.as_deref().unwrap_or("-")
                );
            }
            _ => s.push_str(c.note.as_deref().unwrap_or("n/a")),
        }
        let v = match c.verdict {
            Verdict::Worse | Verdict::Better => c.verdict.word(),
            _ => "within noise",
        };
        let _ = write!(
            s,
            " {v} ({} runs with, {} without; {} is {} better)",
            l.runs_with,
            l.runs_without,
            l.spec.unit,
            match l.spec.direction {
                crate::metric::Direction::Lower => "lower",
                crate::metric::Direction::Higher => "higher",
            }
        );
        out.push(s);
    }
    for p in &o.profile_rate {
        out.push(format!("  {p}"));
    }
    out
}
