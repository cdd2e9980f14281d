//! One round of a bisection: an experiment of two or three commits'
//! configs, randomized and interleaved as every sysdelta run, stored under
//! a label naming the bisection, step and round. A round already complete
//! in the store is read, not run again; one a kill cut short is finished
//! with the runner's resume; otherwise it is run.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::state::{find, label, Params, Stage};
use super::subject::Subject;
use crate::error::Error;
use crate::overrides::Overrides;
use crate::runner::experiment::{run_plan, Finished, Request};
use crate::status::ExperimentStatus;
use crate::store::{ExperimentData, Store};

/// One side of a round: its role in the config's name, its commit and
/// its built directory.
pub struct Side<'a> {
    pub role: &'a str,
    pub commit: &'a str,
    pub dir: &'a Path,
}

/// What a round gave: each side's unit values, in the sides' order.
pub struct Round {
    pub experiment: i64,
    pub units: Vec<Vec<f64>>,
    /// Measured runs stored (failed ones too).
    pub runs: usize,
    /// Whether this process ran it (false: it was in the store).
    pub ran: bool,
}

/// How a round ended.
pub enum Ended {
    Done(Round),
    /// Stopped by a signal: the experiment to resume, if one was stored.
    Interrupted(Option<i64>),
}

/// A config's name in a round.
pub fn config_name(role: &str, commit: &str) -> String {
    format!("{role}-{}", &commit[..commit.len().min(10)])
}

/// The seed of a stage's round: every round its own schedule.
fn round_seed(p: &Params, stage: Stage, round: u32) -> u64 {
    let s = match stage {
        Stage::Step(s) => u64::from(s),
        Stage::Final => 9_999,
    };
    p.seed
        .wrapping_mul(1_000_003)
        .wrapping_add(s * 1_000 + u64::from(round))
}

/// Run (or read, or finish) one round.
pub fn run_round(
    store_path: &Path,
    p: &Params,
    subject: &dyn Subject,
    (stage, round): (Stage, u32),
    sides: &[Side],
    cancel: &AtomicBool,
) -> Result<Ended> {
    let name = label(&p.id, stage, round);
    let stored = match store_path.exists() {
        true => {
            // Made if need be, as the run below would: a team store's
            // anchor exists before its database has tables.
            let store = Store::open(store_path, true)?;
            match find(&store, &name)? {
                Some(id) => Some((id, store.info(id)?)),
                None => None,
            }
        }
        false => None,
    };
    // The plan this round runs, always made here: a stored Running or
    // Interrupted round is finished only when it holds this very text
    // (anyone who can write the store can name a round by its label).
    let mut text = p.header();
    text.push_str(&p.workloads_toml);
    for s in sides {
        text.push_str(&subject.config_toml(&config_name(s.role, s.commit), s.commit, s.dir));
    }
    let ov = Overrides {
        runs: Some(p.round_runs()),
        warmup: Some(0),
        seed: Some(round_seed(p, stage, round)),
        ..Overrides::default()
    };
    let resume = match stored {
        Some((id, info))
            if info.status != ExperimentStatus::Running
                && info.status != ExperimentStatus::Interrupted =>
        {
            let store = Store::open(store_path, false)?;
            let data = store.load(id)?;
            return Ok(Ended::Done(units_of(&data, p, sides, false)?));
        }
        Some((id, info)) if info.plan_text != text => {
            return Err(crate::error::bad(format!(
                "experiment {id} ('{name}') holds another plan than this round's; nothing was run"
            )));
        }
        Some((id, _)) => Some(id),
        None => None,
    };
    let plan = crate::plan::parse(&format!("bisect-{}", p.id), &text, &ov)
        .map_err(Error::into_bad_input)?;
    let request = Request {
        resume,
        checked: None,
        force: false,
        label: Some(&name),
        quiet: true,
        cancel,
        fleet: None,
        // A round is sized by the bisection's own decision rule, not judged
        // by the report's: no reach warning.
        warning: None,
    };
    let ran = match run_plan(store_path, plan, &request)? {
        Finished::NotStarted => return Ok(Ended::Interrupted(resume)),
        Finished::Ran(r) => r,
    };
    let id = ran.outcome.experiment_id;
    if ran.outcome.status == ExperimentStatus::Interrupted {
        return Ok(Ended::Interrupted(Some(id)));
    }
    let data = ran.store.load(id)?;
    Ok(Ended::Done(units_of(&data, p, sides, true)?))
}

/// Each side's units: one value a run (the median of its samples of the
/// metric), or, when the runs ran in booted kernels, one a boot (the
/// median of its runs' values): the unit of replication.
fn units_of(data: &ExperimentData, p: &Params, sides: &[Side], ran: bool) -> Result<Round> {
    let mut units = Vec::new();
    for s in sides {
        let name = config_name(s.role, s.commit);
        let mut per_boot: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
        let mut values = Vec::new();
        for r in data
            .runs
            .iter()
            .filter(|r| r.is_measured_ok() && r.config == name && r.workload == p.workload)
        {
            let Some(v) = r.samples.get(&p.metric).and_then(|xs| median(xs)) else {
                continue;
            };
            match r.boot_id {
                Some(b) => per_boot.entry(b).or_default().push(v),
                None => values.push(v),
            }
        }
        values.extend(per_boot.values().filter_map(|vs| median(vs)));
        if values.is_empty() {
            return Err(anyhow::anyhow!(
                "experiment {}: no successful run of {}/{} in config {name}",
                data.info.id,
                p.workload,
                p.metric
            ));
        }
        units.push(values);
    }
    Ok(Round {
        experiment: data.info.id,
        units,
        runs: data.runs.iter().filter(|r| !r.warmup).count(),
        ran,
    })
}

fn median(xs: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}
