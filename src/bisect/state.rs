//! What a bisection keeps so that `bisect --resume ID` needs nothing else:
//! its parameters, as one JSON comment line at the top of every plan it
//! stores (so the store's schema is unchanged and older readers open it),
//! and its experiments' labels, which name the bisection, the step and the
//! round. Everything else (the decisions) is recomputed from the stored
//! runs: a pure function of samples and parameters.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::error::bad;
use crate::store::Store;

/// The first line of each plan a bisection stores.
const MARK: &str = "# sysdelta bisect: ";

/// A bisection's parameters, fixed when it starts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// Eight hex digits naming the bisection in its labels.
    pub id: String,
    pub repo: PathBuf,
    /// Commit ids, resolved once.
    pub good: String,
    pub bad: String,
    /// None only with a config template.
    pub build: Option<String>,
    /// `--config-template`'s text.
    #[serde(default)]
    pub config_template: Option<String>,
    /// The workload and metric decided on.
    pub workload: String,
    pub metric: String,
    /// The plan's text without configs: its workloads and settings.
    pub workloads_toml: String,
    /// Runs a config a step may spend, at most.
    pub budget: u32,
    /// Runs a config each round adds.
    pub round: u32,
    /// Error allowance of each decision.
    pub alpha: f64,
    pub seed: u64,
    /// Fixed-runs mode: this many runs a config a step, one look, decided
    /// by the estimate alone.
    pub fixed_runs: Option<u32>,
    /// Where commits are checked out and built.
    pub cache: PathBuf,
}

impl Params {
    /// Looks a step may take.
    pub fn looks(&self) -> u32 {
        match self.fixed_runs {
            Some(_) => 1,
            None => (self.budget / self.round).max(1),
        }
    }

    /// The error allowance of one look.
    pub fn alpha_look(&self) -> f64 {
        self.alpha / f64::from(self.looks())
    }

    /// Runs a config the first look of a step has, and each round adds.
    pub fn round_runs(&self) -> u32 {
        self.fixed_runs.unwrap_or(self.round)
    }

    /// The comment line that carries these parameters.
    pub fn header(&self) -> String {
        format!(
            "{MARK}{}\n",
            serde_json::to_string(self).unwrap_or_default()
        )
    }
}

/// Which experiment of a bisection: step 0 is good against bad, steps
/// 1.. place a midpoint, and the final one compares culprit and parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Step(u32),
    Final,
}

/// The label of a stage's round (1-based).
pub fn label(id: &str, stage: Stage, round: u32) -> String {
    match stage {
        Stage::Step(s) => format!("bisect {id} step {s} round {round}"),
        Stage::Final => format!("bisect {id} final round {round}"),
    }
}

/// The stored experiment with this label, if any.
pub fn find(store: &Store, label_of: &str) -> Result<Option<i64>> {
    Ok(store
        .labelled(label_of)?
        .into_iter()
        .find(|(_, l)| l == label_of)
        .map(|(id, _)| id))
}

/// The experiment of bisection `id` that holds its parameters (its first
/// step's first round), if this store has it.
pub fn first(store: &Store, id: &str) -> Result<Option<i64>> {
    find(store, &label(id, Stage::Step(0), 1))
}

/// The parameters of bisection `id`, from its first experiment's plan.
pub fn load(store_path: &Path, id: &str) -> Result<Params> {
    if !store_path.exists() {
        return Err(bad(format!(
            "--resume {id}: no store at {}",
            store_path.display()
        )));
    }
    let store = Store::open(store_path, false)?;
    let exp = first(&store, id)?
        .ok_or_else(|| bad(format!("--resume {id}: no bisection {id} in this store")))?;
    let text = store.info(exp)?.plan_text;
    let json = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix(MARK))
        .ok_or_else(|| {
            bad(format!(
                "--resume {id}: experiment {exp} holds no bisection"
            ))
        })?;
    serde_json::from_str(json)
        .map_err(|e| bad(format!("--resume {id}: experiment {exp}'s bisection: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_the_bisection_step_and_round() {
        assert_eq!(
            label("0a1b2c3d", Stage::Step(3), 2),
            "bisect 0a1b2c3d step 3 round 2"
        );
        assert_eq!(
            label("0a1b2c3d", Stage::Final, 1),
            "bisect 0a1b2c3d final round 1"
        );
    }
}
