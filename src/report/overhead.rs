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
        "Monitor overhead: a fixed CPU loop (the `{}` probe) in '{}' with its monitors against '{}', \
         randomized and interleaved with the plan's runs; what the monitors took from a CPU-bound \
         process: the Hodges-Lehmann median shift with its {:.0}% CI (the verdict's rank statistics; \
         the probe's rare slow runs on a shared machine move the mean, given after it):",
        crate::monitor::control::PROBE_BUILTIN,
        a.baseline,
        o.control,
        a.confidence * 100.0
    )];
    for l in &o.lines {
        let c = &l.comparison;
        // Two decimals: the figure is a fraction of a percent and the
        // target (under 1%) is read off the CI's upper end.
        let mut s = format!("  monitor overhead, {}/{}: ", l.workload, l.spec.name);
        match l.shift_pct {
            Some([d, lo, hi]) => {
                let _ = write!(s, "{d:+.2}% [{lo:+.2}, {hi:+.2}] (median shift)");
            }
            None => s.push_str(c.note.as_deref().unwrap_or("n/a")),
        }
        let v = match c.verdict {
            Verdict::Worse | Verdict::Better => c.verdict.word(),
            _ => "within noise",
        };
        let _ = write!(s, " {v}; mean ");
        match (c.delta_mean_pct, c.delta_ci_pct) {
            (Some(d), Some((lo, hi))) => {
                let _ = write!(s, "{d:+.2}% [{lo:+.2}, {hi:+.2}]");
            }
            (Some(d), None) => {
                let _ = write!(
                    s,
                    "{d:+.2}% (no CI: {})",
                    c.ci_note.as_deref().unwrap_or("-")
                );
            }
            _ => s.push_str("n/a"),
        }
        let _ = write!(
            s,
            " ({} runs with, {} without; {} is {} better)",
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
