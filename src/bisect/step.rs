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
/// median of its runs' values): the unit of replication. Only the runs a
/// report counts (`analysis::boots::counted_runs`: not those of a kexec
/// boot that failed its machine audit), so a step judges what its
/// experiment's report shows.
fn units_of(data: &ExperimentData, p: &Params, sides: &[Side], ran: bool) -> Result<Round> {
    let (counted, _) = crate::analysis::boots::counted_runs(data);
    let mut units = Vec::new();
    for s in sides {
        let name = config_name(s.role, s.commit);
        let mut per_boot: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
        let mut values = Vec::new();
        for r in counted
            .iter()
            .filter(|r| r.config == name && r.workload == p.workload)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::MetricSamples;
    use crate::overrides::Order;
    use crate::store::boots::BootEnd;
    use crate::store::{NewExperiment, RunRecord, RunResult};

    /// A step's units are the runs its experiment's report counts: a kexec
    /// boot that failed its machine audit is left out, as the report's
    /// header and every other count leave it out.
    #[test]
    fn a_boot_that_failed_its_audit_is_no_unit_of_a_step() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db"), true).unwrap();
        let (good, bad) = ("a".repeat(40), "b".repeat(40));
        let configs = vec![config_name("good", &good), config_name("bad", &bad)];
        let exp = store
            .create_experiment(&NewExperiment {
                name: "bisect",
                label: None,
                plan_source: "test",
                plan_text: "",
                overrides: &Default::default(),
                host: "h",
                fingerprint: &Default::default(),
                seed: 0,
                order: Order::Sequential,
                runs: 2,
                warmup: 0,
                baseline: &configs[0],
                configs: configs.clone(),
                workloads: vec!["w".into()],
            })
            .unwrap();
        // Two boots a config, one run each; the bad side's second boot
        // (a run of 50, far from the rest) fails its audit.
        for (block, wall) in [(0u32, [1.0, 2.0]), (1, [1.1, 50.0])] {
            for (pos, config) in configs.iter().enumerate() {
                let boot = store
                    .begin_boot(exp, config, block, pos as u32, "kexec", 1.9e9)
                    .unwrap();
                let samples = [MetricSamples {
                    metric: "wall".into(),
                    values: vec![wall[pos]],
                }];
                let rec = RunRecord {
                    experiment_id: exp,
                    block,
                    seq: pos as u32,
                    config,
                    workload: "w",
                    warmup: false,
                    started_at: 0.0,
                    result: RunResult::Ok(&samples),
                    series: &[],
                    profile: &[],
                };
                let mut row = crate::store::runlog::RunRow::of(&rec).unwrap();
                row.boot = Some(boot);
                store.record_row(row).unwrap();
                let failed = block == 1 && pos == 1;
                let reason = format!("{}: dmesg: 1 error", crate::status::AUDIT_FAILED);
                let end = BootEnd {
                    ok: !failed,
                    reason: failed.then_some(reason),
                    runs: 1,
                    ..Default::default()
                };
                store.end_boot(boot, &end).unwrap();
            }
        }
        let p = Params {
            id: "0a1b2c3d".into(),
            repo: dir.path().into(),
            good: good.clone(),
            bad: bad.clone(),
            build: None,
            config_template: None,
            workload: "w".into(),
            metric: "wall".into(),
            workloads_toml: String::new(),
            budget: 2,
            round: 2,
            alpha: 0.05,
            seed: 0,
            fixed_runs: None,
            cache: dir.path().into(),
        };
        let sides = [("good", &good), ("bad", &bad)].map(|(role, commit)| Side {
            role,
            commit,
            dir: dir.path(),
        });
        let round = units_of(&store.load(exp).unwrap(), &p, &sides, false).unwrap();
        assert_eq!(round.units, vec![vec![1.0, 1.1], vec![2.0]]);
    }
}
