//! `--fail-on`: the report's own verdicts as an exit status, for a CI job.
//!
//! Only the headline family counts (the workloads' own metrics, the
//! comparisons the report's correction is stated over): telemetry is
//! corrected apart and says how the machine behaved, not whether the
//! change cost anything. Nothing is re-tested here; a comparison fails the
//! gate exactly when the report prints its verdict.

use super::{Analysis, Correction, Verdict};
use crate::words::plural;

/// Which verdicts fail the gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// A headline comparison judged worse (a regression).
    Worse,
    /// A headline comparison judged better (e.g. a job that expects no
    /// change and wants to hear of an unexplained speed-up).
    Better,
    /// Any headline comparison judged beyond noise, either way.
    Any,
}

impl FailOn {
    fn word(self) -> &'static str {
        match self {
            FailOn::Worse => "worse",
            FailOn::Better => "better",
            FailOn::Any => "any",
        }
    }

    fn hits(self, v: Verdict) -> bool {
        matches!(
            (self, v),
            (FailOn::Worse | FailOn::Any, Verdict::Worse)
                | (FailOn::Better | FailOn::Any, Verdict::Better)
        )
    }
}

/// What the gate found: the line that states it, and whether it failed.
#[derive(Clone, Debug, PartialEq)]
pub struct GateResult {
    pub failed: bool,
    /// One line: the rule, its threshold and family, and the comparisons
    /// that failed it (at most three named, then a count).
    pub line: String,
}

/// Judge `a` under `rule`.
pub fn judge(a: &Analysis, rule: FailOn) -> GateResult {
    let mut hits = Vec::new();
    for m in &a.metrics {
        if crate::monitor::is_telemetry_metric(&m.spec.name) {
            continue;
        }
        for c in m.comparisons.iter().filter(|c| rule.hits(c.verdict)) {
            let delta = c
                .delta_mean_pct
                .map(|d| format!(" {d:+.1}%"))
                .unwrap_or_default();
            hits.push(format!(
                "{}/{} {} in {}{delta}",
                m.workload,
                m.spec.name,
                c.verdict.word(),
                c.config
            ));
        }
    }
    let family = match a.correction {
        Correction::Holm => "Holm",
        Correction::Bh => "Benjamini-Hochberg",
    };
    let n = a.n_comparisons;
    let rule_text = format!(
        "--fail-on {}: alpha {} with {family} over the {n} headline comparison{} against {}",
        rule.word(),
        a.alpha,
        plural(n),
        a.baseline
    );
    let failed = !hits.is_empty();
    let line = if failed {
        let shown: Vec<&str> = hits.iter().take(3).map(String::as_str).collect();
        let more = match hits.len() {
            k if k > 3 => format!(" and {} more", k - 3),
            _ => String::new(),
        };
        format!("{rule_text}: FAILED by {}{more}", shown.join("; "))
    } else {
        format!("{rule_text}: passed")
    };
    GateResult { failed, line }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_pick_their_verdicts() {
        assert!(FailOn::Worse.hits(Verdict::Worse));
        assert!(!FailOn::Worse.hits(Verdict::Better));
        assert!(!FailOn::Worse.hits(Verdict::Noise));
        assert!(FailOn::Better.hits(Verdict::Better));
        assert!(!FailOn::Better.hits(Verdict::Worse));
        assert!(FailOn::Any.hits(Verdict::Worse) && FailOn::Any.hits(Verdict::Better));
        assert!(!FailOn::Any.hits(Verdict::Undefined));
    }
}
