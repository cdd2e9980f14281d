//! `sysdelta bisect`: which commit between a good and a bad one changed a
//! metric, each step decided with statistics that know noise, each round
//! an experiment in the store (`docs/bisect.md`).
//!
//! range.rs: the first-parent commits good..bad; subject.rs: how a commit
//! becomes a config (built once, cached); subject_kernel.rs: a kernel
//! config's commit built with kbuild first (a failed build skipped); step.rs: one round as an
//! experiment; decide.rs: the statistics (pure); state.rs: the parameters
//! and labels `--resume` needs; report.rs: the answer.
//!
//! The driver below is deterministic given the stored runs: resuming
//! replays it, reading every round the store already holds, so no finished
//! step runs again and the answer is the same.

pub mod decide;
pub mod range;
pub mod report;
pub mod state;
pub mod step;
pub mod subject;
pub mod subject_kernel;

use std::path::Path;
use std::sync::atomic::AtomicBool;

use anyhow::Result;

use decide::{Delta, Look, Verdict};
use report::{Answer, Decision, Summary};
use state::{Params, Stage};
use step::{Ended, Side};
use subject::{Built, Subject};

/// How a bisection ended.
pub enum Outcome {
    Answered(Box<Summary>),
    /// Stopped by a signal: resume with `bisect --resume ID`.
    Interrupted,
}

/// Running totals, and where rounds go.
struct Walk<'a> {
    store: &'a Path,
    p: &'a Params,
    subject: &'a dyn Subject,
    cancel: &'a AtomicBool,
    runs: usize,
    experiments: usize,
}

/// A stage's result: its looks' last, the sides' pooled units.
struct Staged {
    look: Option<Look>,
    units: Vec<Vec<f64>>,
    looks: u32,
}

impl Walk<'_> {
    /// Rounds of `sides` until `decided` says so or the budget is spent;
    /// None when interrupted.
    fn stage(
        &mut self,
        stage: Stage,
        sides: &[Side],
        mut decided: impl FnMut(&[Vec<f64>], u32) -> Option<Look>,
        max_looks: u32,
    ) -> Result<Option<Staged>> {
        let mut units: Vec<Vec<f64>> = vec![Vec::new(); sides.len()];
        let mut look = None;
        for round in 1..=max_looks {
            let r = match step::run_round(
                self.store,
                self.p,
                self.subject,
                (stage, round),
                sides,
                self.cancel,
            )? {
                Ended::Done(r) => r,
                Ended::Interrupted(_) => return Ok(None),
            };
            self.runs += r.runs;
            self.experiments += 1;
            for (all, new) in units.iter_mut().zip(r.units) {
                all.extend(new);
            }
            look = decided(&units, round);
            if look.as_ref().is_some_and(|l| l.verdict != Verdict::Unknown) {
                return Ok(Some(Staged {
                    look,
                    units,
                    looks: round,
                }));
            }
        }
        Ok(Some(Staged {
            look,
            units,
            looks: max_looks,
        }))
    }

    /// `commit` built (or found built) for the `what` end of a step; None
    /// when a Ctrl-C came during its build: whatever the build ended with
    /// (a failure, an error), the bisection stops as interrupted, to be
    /// resumed, and never reads it as the end not building.
    fn built(&self, commit: &str, what: &str) -> Result<Option<std::path::PathBuf>> {
        let Some(built) = self.build(commit)? else {
            return Ok(None);
        };
        match built {
            Built::Ready(d) => Ok(Some(d)),
            Built::Failed(log) => Err(crate::error::bad(format!(
                "the {what} commit {} does not build (its log: {})",
                range::short(commit),
                log.display()
            ))),
        }
    }
}

impl Walk<'_> {
    /// `commit` built, or found built; None when a Ctrl-C came during the
    /// build, whatever the build ended with: a failure or an error then
    /// says nothing about the commit (the terminal's SIGINT killed the
    /// build too), and the bisection stops as interrupted, to be resumed.
    fn build(&self, commit: &str) -> Result<Option<Built>> {
        let built = self.subject.build(commit);
        if subject::interrupted(self.cancel) {
            return Ok(None);
        }
        built.map(Some)
    }
}

/// Step 0's look: whether bad differs from good (Mann-Whitney at the
/// per-look alpha; the fixed-runs mode looks once at alpha).
fn differs(p: &Params, units: &[Vec<f64>]) -> Option<Look> {
    let d = decide::delta(&units[0], &units[1], 0.95, p.seed);
    let verdict = match d.p < p.alpha_look() {
        true => Verdict::LikeBad,
        false => Verdict::Unknown,
    };
    Some(Look {
        verdict,
        theta: d.delta,
        ci: d.ci.unwrap_or((f64::NAN, f64::NAN)),
        wrong_mass: d.p,
    })
}

/// Run (or resume) bisection `p` over `commits` (good first, bad last).
pub fn run(
    store: &Path,
    p: &Params,
    subject: &dyn Subject,
    commits: &[String],
    cancel: &AtomicBool,
) -> Result<Outcome> {
    let mut w = Walk {
        store,
        p,
        subject,
        cancel,
        runs: 0,
        experiments: 0,
    };
    let n = commits.len() - 1;
    let Some(dirs_good) = w.built(&commits[0], "good")? else {
        return Ok(Outcome::Interrupted);
    };
    let Some(dirs_bad) = w.built(&commits[n], "bad")? else {
        return Ok(Outcome::Interrupted);
    };
    let ends = [
        Side {
            role: "good",
            commit: &commits[0],
            dir: &dirs_good,
        },
        Side {
            role: "bad",
            commit: &commits[n],
            dir: &dirs_bad,
        },
    ];
    let Some(zero) = w.stage(Stage::Step(0), &ends, |u, _| differs(p, u), p.looks())? else {
        return Ok(Outcome::Interrupted);
    };
    let whole = decide::delta(&zero.units[0], &zero.units[1], 0.95, p.seed);
    let zero_look = zero.look.clone().expect("a stage looks at least once");
    let mut summary = Summary {
        id: p.id.clone(),
        metric: format!("{}/{}", p.workload, p.metric),
        whole: whole.clone(),
        answer: Answer::NoRegression(whole),
        decisions: Vec::new(),
        skipped: Vec::new(),
        runs: 0,
        experiments: 0,
    };
    if zero_look.verdict == Verdict::Unknown {
        summary.runs = w.runs;
        summary.experiments = w.experiments;
        return Ok(Outcome::Answered(Box::new(summary)));
    }
    summary.decisions.push(Decision {
        step: 0,
        commit: commits[n].clone(),
        units: zero.units[0].len(),
        looks: zero.looks,
        // The step's whole allowance, whatever look it stopped at: the
        // looks it took depend on the data, so only the sum over every
        // look it could take (Bonferroni) bounds its error.
        error: p.alpha_look() * f64::from(p.looks()),
        look: zero_look,
    });
    crate::sys::stderr::say!(
        "sysdelta: bisect {}: good -> bad {} ({} commits to search)",
        p.id,
        report::delta_text(&summary.whole),
        n - 1
    );
    let Some(ends) = walk(&mut w, commits, &mut summary)? else {
        return Ok(Outcome::Interrupted);
    };
    if let Some((lo, hi)) = ends {
        let Some(answer) = finish(&mut w, commits, (lo, hi), &zero.units, &summary.skipped)? else {
            return Ok(Outcome::Interrupted);
        };
        summary.answer = answer;
    }
    summary.runs = w.runs;
    summary.experiments = w.experiments;
    Ok(Outcome::Answered(Box::new(summary)))
}

/// The untested, unskipped commit nearest the middle of (lo, hi).
fn midpoint(lo: usize, hi: usize, skipped: &[usize]) -> Option<usize> {
    let mid = (lo + hi) / 2;
    (0..hi - lo)
        .flat_map(|d| [mid.checked_sub(d), Some(mid + d)])
        .flatten()
        .find(|&c| c > lo && c < hi && !skipped.contains(&c))
}

/// The midpoint steps. Some(Some((lo, hi))): the last good and first bad
/// index; Some(None): a step stayed unknown (the answer says so); None:
/// interrupted.
fn walk(
    w: &mut Walk,
    commits: &[String],
    summary: &mut Summary,
) -> Result<Option<Option<(usize, usize)>>> {
    let p = w.p;
    let (mut lo, mut hi) = (0usize, commits.len() - 1);
    let mut skipped: Vec<usize> = Vec::new();
    let mut step = 1u32;
    while let Some(mid) = midpoint(lo, hi, &skipped) {
        // A Ctrl-C during a build stops the bisection as one during a run
        // does: cleanly, to be resumed.
        let Some(built) = w.build(&commits[mid])? else {
            return Ok(None);
        };
        let dm = match built {
            Built::Ready(d) => d,
            Built::Failed(log) => {
                crate::sys::stderr::say!(
                    "sysdelta: bisect {}: {} does not build, skipped (log: {})",
                    p.id,
                    range::short(&commits[mid]),
                    log.display()
                );
                skipped.push(mid);
                summary.skipped.push(commits[mid].clone());
                continue;
            }
        };
        let (Some(dl), Some(dh)) = (
            w.built(&commits[lo], "good")?,
            w.built(&commits[hi], "bad")?,
        ) else {
            return Ok(None);
        };
        let sides = [
            Side {
                role: "good",
                commit: &commits[lo],
                dir: &dl,
            },
            Side {
                role: "mid",
                commit: &commits[mid],
                dir: &dm,
            },
            Side {
                role: "bad",
                commit: &commits[hi],
                dir: &dh,
            },
        ];
        let seed = p.seed.wrapping_add(u64::from(step));
        let forced = p.fixed_runs.is_some();
        let place = |u: &[Vec<f64>], _round: u32| {
            Some(decide::place(
                &u[0],
                &u[1],
                &u[2],
                p.alpha_look(),
                seed,
                forced,
            ))
        };
        let Some(st) = w.stage(Stage::Step(step), &sides, place, p.looks())? else {
            return Ok(None);
        };
        let look = st.look.expect("a stage looks at least once");
        let d = Decision {
            step,
            commit: commits[mid].clone(),
            units: st.units[1].len(),
            looks: st.looks,
            // As step 0's: the whole allowance (see there); with --fixed-runs
            // the bootstrap's mass on the wrong side when that is larger.
            error: (p.alpha_look() * f64::from(p.looks())).max(look.wrong_mass),
            look,
        };
        crate::sys::stderr::say!("sysdelta: bisect {}: {}", p.id, report::decision_line(&d));
        let verdict = d.look.verdict;
        summary.decisions.push(d);
        match verdict {
            Verdict::LikeGood => lo = mid,
            Verdict::LikeBad => hi = mid,
            Verdict::Between => {
                summary.answer = Answer::Spread {
                    lo: commits[lo].clone(),
                    hi: commits[hi].clone(),
                };
                return Ok(Some(None));
            }
            Verdict::Unknown => {
                summary.answer = Answer::Undecided {
                    lo: commits[lo].clone(),
                    hi: commits[hi].clone(),
                    left: hi - lo,
                };
                return Ok(Some(None));
            }
        }
        step += 1;
    }
    Ok(Some(Some((lo, hi))))
}

/// The final experiment: the culprit against its parent (the last good
/// commit), as `compare` prints a delta, and its share of the whole change.
fn finish(
    w: &mut Walk,
    commits: &[String],
    (lo, hi): (usize, usize),
    whole: &[Vec<f64>],
    skipped: &[String],
) -> Result<Option<Answer>> {
    let p = w.p;
    let (Some(dl), Some(dh)) = (
        w.built(&commits[lo], "good")?,
        w.built(&commits[hi], "bad")?,
    ) else {
        return Ok(None);
    };
    let sides = [
        Side {
            role: "parent",
            commit: &commits[lo],
            dir: &dl,
        },
        Side {
            role: "culprit",
            commit: &commits[hi],
            dir: &dh,
        },
    ];
    // Two rounds: the delta against the parent is the answer's headline.
    let Some(st) = w.stage(Stage::Final, &sides, |_, _| None, 2)? else {
        return Ok(None);
    };
    let delta: Delta = decide::delta(&st.units[0], &st.units[1], 0.95, p.seed);
    let share = decide::share(
        (&whole[0], &whole[1]),
        (&st.units[0], &st.units[1]),
        p.alpha,
        p.seed,
    );
    Ok(Some(Answer::Culprit {
        commit: commits[hi].clone(),
        subject: range::subject(&p.repo, &commits[hi]),
        parent: commits[lo].clone(),
        skipped_between: commits[lo + 1..hi]
            .iter()
            .filter(|c| skipped.contains(c))
            .cloned()
            .collect(),
        delta,
        share,
    }))
}

#[cfg(test)]
mod tests {
    use super::midpoint;

    #[test]
    fn the_midpoint_steps_around_skipped_commits() {
        assert_eq!(midpoint(0, 10, &[]), Some(5));
        assert_eq!(midpoint(0, 10, &[5]), Some(4));
        assert_eq!(midpoint(0, 10, &[5, 4]), Some(6));
        assert_eq!(midpoint(0, 1, &[]), None);
        assert_eq!(midpoint(0, 2, &[1]), None);
    }
}
