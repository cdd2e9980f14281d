//! `--fail-on`: the report's own verdicts as an exit status, for a CI job.
//!
//! Only the headline family counts (the workloads' own metrics, the
//! comparisons the report's correction is stated over): telemetry is
//! corrected apart and says how the machine behaved, not whether the
//! change cost anything. Nothing is re-tested here; a comparison fails the
//! gate exactly when the report prints its verdict. `--fail-on
//! worse:wall,build/maxrss` gates on those metrics only: the others are
//! still reported, and named on the gate's line, but do not fail it; the
//! correction stays the whole family's, as the report states it.

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

/// `--fail-on VERDICT[:METRIC,...]`: the verdicts that fail the gate, and
/// the metrics it gates on (`METRIC`, any workload's, or
/// `WORKLOAD/METRIC`, as `--until-metric` and `history` name them);
/// every headline metric when none is named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gate {
    pub on: FailOn,
    pub metrics: Vec<String>,
}

impl Gate {
    /// The flag's value parsed; bad input naming what is wrong.
    pub fn parse(s: &str) -> Result<Gate, crate::error::Error> {
        use clap::ValueEnum as _;
        let bad = |why: &str| {
            crate::error::Error::bad(format!(
                "'{s}': {why}; expected worse, better or any, optionally followed by \
                 :METRIC[,METRIC...] (e.g. worse:wall or worse:build/wall,maxrss)"
            ))
        };
        let (verdict, metrics) = match s.split_once(':') {
            Some((v, m)) => (v, Some(m)),
            None => (s, None),
        };
        let on = FailOn::from_str(verdict, true).map_err(|_| bad("no such verdict"))?;
        let mut names = Vec::new();
        if let Some(m) = metrics {
            // No rule on '/': metric and workload names may hold any
            // number of them (Go's `sec/op`, a sub-benchmark `Enc/json-2`,
            // an `ab` workload named after a path), so a name is matched
            // whole against each comparison (see `names`), never split.
            for name in m.split(',').map(str::trim) {
                if name.is_empty() {
                    return Err(bad("an empty name is not METRIC or WORKLOAD/METRIC"));
                }
                if !names.iter().any(|n| n == name) {
                    names.push(name.to_string());
                }
            }
        }
        Ok(Gate { on, metrics: names })
    }

    /// The flag as a user writes it.
    fn text(&self) -> String {
        match self.metrics.is_empty() {
            true => self.on.word().to_string(),
            false => format!("{}:{}", self.on.word(), self.metrics.join(",")),
        }
    }

    /// Whether `selector` names `workload`'s metric `metric`: it is the
    /// metric's name (that metric of every workload) or `WORKLOAD/METRIC`
    /// exactly, as `--until-metric` matches. A selector that is both
    /// (`sec/op` where a workload `sec` has a metric `op`) names both:
    /// a gate that counts one comparison too many can fail a job it need
    /// not, one that counts too few could pass a regression.
    fn names(selector: &str, workload: &str, metric: &str) -> bool {
        selector == metric
            || selector
                .strip_prefix(workload)
                .and_then(|rest| rest.strip_prefix('/'))
                == Some(metric)
    }

    /// Whether the gate counts `workload`'s metric `metric`.
    fn gates(&self, workload: &str, metric: &str) -> bool {
        self.metrics.is_empty()
            || self
                .metrics
                .iter()
                .any(|s| Gate::names(s, workload, metric))
    }
}

impl From<FailOn> for Gate {
    fn from(on: FailOn) -> Gate {
        Gate {
            on,
            metrics: Vec::new(),
        }
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

/// Judge `a` under `gate`. A metric the gate names that no headline
/// comparison of `a` has fails it (a misspelt name must not pass a CI job
/// by gating nothing), and the line says which and what there is.
pub fn judge(a: &Analysis, gate: &Gate) -> GateResult {
    let rule = gate.on;
    // (gating?, "w/m worse in c +x%") of every comparison the rule hits.
    let mut hits: Vec<(bool, String)> = Vec::new();
    let mut headline: Vec<(&str, &str)> = Vec::new();
    let mut gating = 0usize;
    for m in &a.metrics {
        if crate::monitor::is_telemetry_metric(&m.spec.name) {
            continue;
        }
        headline.push((&m.workload, &m.spec.name));
        let gated = gate.gates(&m.workload, &m.spec.name);
        gating += if gated { m.comparisons.len() } else { 0 };
        for c in m.comparisons.iter().filter(|c| rule.hits(c.verdict)) {
            let delta = c
                .delta_mean_pct
                .map(|d| format!(" {d:+.1}%"))
                .unwrap_or_default();
            let hit = format!(
                "{}/{} {} in {}{delta}",
                m.workload,
                m.spec.name,
                c.verdict.word(),
                c.config
            );
            hits.push((gated, hit));
        }
    }
    let family = match a.correction {
        Correction::Holm => "Holm",
        Correction::Bh => "Benjamini-Hochberg",
    };
    let n = a.n_comparisons;
    let mut rule_text = format!(
        "--fail-on {}: alpha {} with {family} over the {n} headline comparison{} against {}",
        gate.text(),
        a.alpha,
        plural(n),
        a.baseline
    );
    if !gate.metrics.is_empty() {
        rule_text.push_str(&format!(", {gating} of them gating"));
    }
    let unknown: Vec<&str> = gate
        .metrics
        .iter()
        .filter(|s| !headline.iter().any(|(w, m)| Gate::names(s, w, m)))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        let mut there: Vec<String> = headline.iter().map(|(w, m)| format!("{w}/{m}")).collect();
        there.dedup();
        return GateResult {
            failed: true,
            line: format!(
                "{rule_text}: FAILED: no headline metric {} in this report (it has {})",
                unknown.join(", "),
                if there.is_empty() {
                    "none".to_string()
                } else {
                    there.join(", ")
                }
            ),
        };
    }
    let list = |v: Vec<&str>| {
        let more = match v.len() {
            k if k > 3 => format!(" and {} more", k - 3),
            _ => String::new(),
        };
        format!("{}{more}", v[..v.len().min(3)].join("; "))
    };
    let failing: Vec<&str> = hits.iter().filter(|h| h.0).map(|h| h.1.as_str()).collect();
    let other: Vec<&str> = hits.iter().filter(|h| !h.0).map(|h| h.1.as_str()).collect();
    let failed = !failing.is_empty();
    let mut line = match failed {
        true => format!("{rule_text}: FAILED by {}", list(failing)),
        false => format!("{rule_text}: passed"),
    };
    if !other.is_empty() {
        line.push_str(&format!(" (not gating: {})", list(other)));
    }
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

    #[test]
    fn the_flag_names_a_verdict_and_maybe_metrics() {
        let g = Gate::parse("worse:wall, build/maxrss,wall").unwrap();
        assert_eq!(g.on, FailOn::Worse);
        assert_eq!(g.metrics, ["wall", "build/maxrss"]);
        assert_eq!(g.text(), "worse:wall,build/maxrss");
        assert!(g.gates("any", "wall") && g.gates("build", "maxrss"));
        assert!(!g.gates("other", "maxrss") && !g.gates("build", "user"));
        assert_eq!(Gate::parse("any").unwrap(), Gate::from(FailOn::Any));
        assert!(Gate::parse("any").unwrap().gates("w", "x"));
        for bad in ["worst", "worse:", "worse:a,,b", "worse: ,wall"] {
            assert!(Gate::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn names_with_slashes_are_matched_whole() {
        let g = Gate::parse("worse:sec/op,Enc/json-2/B/op").unwrap();
        assert_eq!(g.metrics, ["sec/op", "Enc/json-2/B/op"]);
        // Go's metric of every workload, a sub-benchmark's metric.
        assert!(g.gates("Dec-2", "sec/op") && g.gates("Enc/json-2", "sec/op"));
        assert!(g.gates("Enc/json-2", "B/op"));
        assert!(!g.gates("Dec-2", "B/op") && !g.gates("Enc/json-2", "allocs/op"));
        // Not a prefix or a part of either name.
        assert!(!g.gates("Enc", "json-2/B") && !g.gates("sec", "opx"));
        // Both readings of an ambiguous selector gate.
        let g = Gate::parse("any:sec/op").unwrap();
        assert!(g.gates("sec", "op") && g.gates("w", "sec/op"));
        // A workload `Enc` with a metric `json-2/B/op` is that name too.
        assert!(Gate::parse("any:Enc/json-2/B/op")
            .unwrap()
            .gates("Enc", "json-2/B/op"));
    }
}
