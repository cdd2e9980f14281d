//! The answer of a bisection, as text: the first bad commit with its delta
//! against its parent and how sure the bisection is, or plainly that there
//! is no regression, that the change is spread, or that a step stayed
//! unknown and which range is left.

use std::fmt::Write;

use super::decide::{Delta, Look, Verdict};
use super::range::short;

/// One step's decision, as the answer shows it.
#[derive(Clone, Debug)]
pub struct Decision {
    pub step: u32,
    pub commit: String,
    pub look: Look,
    /// Units a side at the deciding look.
    pub units: usize,
    pub looks: u32,
    /// Its error bound: the step's alpha (the per-look alpha times the
    /// looks it could take), or the wrong side's bootstrap mass if larger.
    pub error: f64,
}

/// How the bisection ended.
#[derive(Clone, Debug)]
pub enum Answer {
    /// Good and bad do not differ beyond the noise within the budget.
    NoRegression(Delta),
    /// The first bad commit (and its parent, the last good one).
    Culprit {
        commit: String,
        subject: String,
        parent: String,
        /// Commits between parent and culprit whose builds failed: the
        /// culprit is one of them or the named one.
        skipped_between: Vec<String>,
        delta: Delta,
        /// The culprit's share of the whole change, with its interval.
        share: Option<(f64, (f64, f64))>,
    },
    /// A step stayed unknown at its budget: the culprit is in (lo, hi].
    Undecided { lo: String, hi: String, left: usize },
    /// A midpoint sat confidently between the ends: the change between
    /// lo and hi is spread over several commits.
    Spread { lo: String, hi: String },
}

/// Everything the text shows.
pub struct Summary {
    pub id: String,
    pub metric: String,
    pub whole: Delta,
    pub answer: Answer,
    pub decisions: Vec<Decision>,
    pub skipped: Vec<String>,
    pub runs: usize,
    pub experiments: usize,
}

impl Summary {
    /// 1 - the sum of the decisions' error bounds (Bonferroni), at least 0.
    pub fn how_sure(&self) -> f64 {
        (1.0 - self.decisions.iter().map(|d| d.error).sum::<f64>()).max(0.0)
    }
}

/// "+5.1% [+3.9%, +6.3%] (p 0.0001, 20 vs 20 runs)".
pub fn delta_text(d: &Delta) -> String {
    let ci = match d.ci {
        Some((lo, hi)) => format!(" [{:+.1}%, {:+.1}%]", lo * 100.0, hi * 100.0),
        None => String::new(),
    };
    format!(
        "{:+.1}%{ci} (p {:.2e}, {} vs {} units)",
        d.delta * 100.0,
        d.p,
        d.n.0,
        d.n.1
    )
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::LikeGood => "like good",
        Verdict::LikeBad => "like bad",
        Verdict::Between => "between good and bad",
        Verdict::Unknown => "unknown",
    }
}

/// One decision's line (also printed as the step ends).
pub fn decision_line(d: &Decision) -> String {
    if d.step == 0 {
        // Step 0 tests good against bad: its look holds the delta and p.
        return format!(
            "step 0: bad {} differs from good ({:+.1}%, p {:.2e}, {} units a side, {} look{}, error <= {:.3})",
            short(&d.commit),
            d.look.theta * 100.0,
            d.look.wrong_mass,
            d.units,
            d.looks,
            if d.looks == 1 { "" } else { "s" },
            d.error
        );
    }
    format!(
        "step {}: {} {} (theta {:.2} [{:.2}, {:.2}], {} units a side, {} look{}, error <= {:.3})",
        d.step,
        short(&d.commit),
        verdict_word(d.look.verdict),
        d.look.theta,
        d.look.ci.0,
        d.look.ci.1,
        d.units,
        d.looks,
        if d.looks == 1 { "" } else { "s" },
        d.error
    )
}

fn how_sure_line(s: &Summary) -> String {
    format!(
        "how sure: {:.3} (1 - the sum of {} decisions' error bounds, a Bonferroni bound)",
        s.how_sure(),
        s.decisions.len()
    )
}

/// The whole answer.
pub fn text(s: &Summary) -> String {
    let mut o = String::new();
    let m = &s.metric;
    match &s.answer {
        Answer::NoRegression(d) => {
            let _ = writeln!(
                o,
                "bisect {}: no regression between good and bad in {m}: {}",
                s.id,
                delta_text(d)
            );
        }
        Answer::Culprit {
            commit,
            subject,
            parent,
            skipped_between,
            delta,
            share,
        } => {
            let _ = writeln!(
                o,
                "bisect {}: first bad commit {} {subject}",
                s.id,
                short(commit)
            );
            if !skipped_between.is_empty() {
                let names: Vec<&str> = skipped_between.iter().map(|c| short(c)).collect();
                let _ = writeln!(
                    o,
                    "  or one of {} (builds failed, skipped) before it",
                    names.join(" ")
                );
            }
            let _ = writeln!(
                o,
                "  {m} against its parent {}: {}",
                short(parent),
                delta_text(delta)
            );
            let _ = writeln!(o, "  good -> bad: {}", delta_text(&s.whole));
            if let Some((est, (lo, hi))) = share {
                let spread = *hi < 1.0;
                let _ = writeln!(
                    o,
                    "  its share of the whole change: {:.2} [{lo:.2}, {hi:.2}]{}",
                    est,
                    if spread {
                        ": the change is spread over several commits; this one holds only part of it"
                    } else {
                        ""
                    }
                );
            }
            let between: Vec<&Decision> = s
                .decisions
                .iter()
                .filter(|d| d.step > 0 && d.look.ci.0 > 0.0 && d.look.ci.1 < 1.0)
                .collect();
            for d in between {
                let _ = writeln!(
                    o,
                    "  commit {} sits between good and bad (theta {:.2} [{:.2}, {:.2}]): the change is spread",
                    short(&d.commit),
                    d.look.theta,
                    d.look.ci.0,
                    d.look.ci.1
                );
            }
            let _ = writeln!(o, "  {}", how_sure_line(s));
        }
        Answer::Undecided { lo, hi, left } => {
            let _ = writeln!(
                o,
                "bisect {}: undecided: a step stayed unknown at its budget; the first bad commit is after {} and at or before {} ({left} commits)",
                s.id,
                short(lo),
                short(hi)
            );
            let _ = writeln!(o, "  good -> bad: {}", delta_text(&s.whole));
        }
        Answer::Spread { lo, hi } => {
            let mid = s.decisions.last().map_or("", |d| d.commit.as_str());
            let _ = writeln!(
                o,
                "bisect {}: the change is spread over several commits: {} is neither like good nor like bad but between them; the change lies in more than one commit after {} and at or before {}",
                s.id,
                short(mid),
                short(lo),
                short(hi)
            );
            let _ = writeln!(o, "  good -> bad: {}", delta_text(&s.whole));
            let _ = writeln!(o, "  {}", how_sure_line(s));
        }
    }
    for d in &s.decisions {
        let _ = writeln!(o, "  {}", decision_line(d));
    }
    if !s.skipped.is_empty() {
        let names: Vec<&str> = s.skipped.iter().map(|c| short(c)).collect();
        let _ = writeln!(o, "  skipped (build failed): {}", names.join(" "));
    }
    let _ = writeln!(
        o,
        "  runs used: {} in {} experiments",
        s.runs, s.experiments
    );
    o
}
