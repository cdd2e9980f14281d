//! The built-in workload `builtin = "micro"`: the micro suite as one run of
//! a plan, every sample of every selected metric reported.
//!
//! Params table: `{ filter = ["proc", "lat.pipe"], quick = true }`, and
//! optionally `samples = 21`, `pin = "same-cpu"`,
//! `semring = { groups = 4, sems = 8, laps = 1000 }`, and the precision
//! settings of `sysdelta micro`: `min_sample_ms = 1000`, `target_cov = 2.0`
//! (percent) with `budget = "10m"` (or seconds), both or neither.
//!
//! Metrics that cannot run here are left out of the run's samples (they
//! would otherwise be read as zero-cost); their reasons are kept and
//! available from [`MicroWorkload::skipped`] after each run.

use std::time::Instant;

use crate::metric::MetricSpec;
use crate::workload::{MetricSamples, RunContext, RunOutcome, Workload};

use super::{run_suite, Cancelled, MicroOptions, MicroOutcome, Pinning, Selection};
use crate::error::Error;

pub struct MicroWorkload {
    sel: Selection,
    opts: MicroOptions,
    skipped: Vec<(String, String)>,
}

impl MicroWorkload {
    /// Build from the plan's params table; errors are one line for the user.
    pub fn from_params(params: &toml::Value) -> Result<MicroWorkload, Error> {
        let empty = toml::value::Table::new();
        let t = match params {
            toml::Value::Table(t) => t,
            _ => &empty,
        };
        let bad = |m: String| Error::bad(format!("micro workload params: {m}"));
        const KEYS: [&str; 8] = [
            "filter",
            "quick",
            "samples",
            "pin",
            "semring",
            "min_sample_ms",
            "target_cov",
            "budget",
        ];
        for k in t.keys() {
            if !KEYS.contains(&k.as_str()) {
                return Err(bad(format!(
                    "unknown key {k:?} (expected {})",
                    KEYS.join(", ")
                )));
            }
        }
        let filter: Vec<String> = match t.get("filter") {
            None => Vec::new(),
            Some(toml::Value::String(s)) => vec![s.clone()],
            Some(toml::Value::Array(a)) => a
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| bad("filter must be a list of strings".into()))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(bad("filter must be a list of strings".into())),
        };
        let quick = match t.get("quick") {
            None => false,
            Some(v) => v
                .as_bool()
                .ok_or_else(|| bad("quick must be true or false".into()))?,
        };
        let sel = Selection::parse(&filter).map_err(|e| bad(e.to_string()))?;
        let mut opts = if quick {
            MicroOptions::quick()
        } else {
            MicroOptions::full()
        };
        let int = |v: &toml::Value, what: &str| -> Result<usize, Error> {
            match v.as_integer() {
                Some(i) if i > 0 => Ok(i as usize),
                _ => Err(bad(format!("{what} must be a positive integer, got {v}"))),
            }
        };
        if let Some(v) = t.get("samples") {
            opts.samples = int(v, "samples")?;
        }
        if let Some(v) = t.get("min_sample_ms") {
            opts.min_sample = std::time::Duration::from_millis(int(v, "min_sample_ms")? as u64);
        }
        let target_cov = match t.get("target_cov") {
            None => None,
            Some(v) => Some(
                v.as_float()
                    .or_else(|| v.as_integer().map(|i| i as f64))
                    .ok_or_else(|| bad(format!("target_cov must be a percentage, got {v}")))?,
            ),
        };
        let budget = match t.get("budget") {
            None => None,
            Some(toml::Value::String(s)) => Some(s.clone()),
            Some(v @ (toml::Value::Integer(_) | toml::Value::Float(_))) => Some(v.to_string()),
            Some(v) => {
                return Err(bad(format!(
                    "budget must be a duration such as 600 or \"10m\", got {v}"
                )))
            }
        };
        opts.precision = super::cli::precision(
            target_cov,
            budget.as_deref(),
            t.contains_key("min_sample_ms"),
            "target_cov",
            "budget",
        )
        .map_err(|e| bad(e.to_string().trim_start_matches("micro: ").to_string()))?;
        if let Some(v) = t.get("pin") {
            opts.pin = v
                .as_str()
                .and_then(Pinning::parse)
                .ok_or_else(|| bad(format!("pin must be \"unpinned\" or \"same-cpu\", got {v}")))?;
        }
        if let Some(v) = t.get("semring") {
            let st = v
                .as_table()
                .ok_or_else(|| bad("semring must be a table {groups, sems, laps}".into()))?;
            for (k, x) in st {
                let n = int(x, &format!("semring.{k}"))?;
                match k.as_str() {
                    "groups" => opts.semring.groups = n,
                    "sems" => opts.semring.sems = n,
                    "laps" => opts.semring.laps = n,
                    _ => return Err(bad(format!("unknown semring key {k:?}"))),
                }
            }
        }
        opts.validate().map_err(|e| bad(e.to_string()))?;
        Ok(MicroWorkload {
            sel,
            opts,
            skipped: Vec::new(),
        })
    }

    /// (metric, reason) for each metric the last run could not measure.
    pub fn skipped(&self) -> &[(String, String)] {
        &self.skipped
    }

    pub fn selection(&self) -> &Selection {
        &self.sel
    }

    /// The options the params set (precision mode included).
    pub fn options(&self) -> &MicroOptions {
        &self.opts
    }
}

impl Workload for MicroWorkload {
    fn metrics(&self) -> Vec<MetricSpec> {
        self.sel
            .entries()
            .iter()
            .map(|e| MetricSpec::new(&e.name, e.unit, e.direction))
            .collect()
    }

    fn notes(&self) -> Vec<String> {
        self.skipped
            .iter()
            .map(|(name, reason)| format!("{name} skipped: {reason}"))
            .collect()
    }

    fn run(&mut self, ctx: &RunContext) -> RunOutcome {
        let mut opts = self.opts.clone();
        opts.tmpdir = ctx.scratch.to_path_buf();
        opts.cpus = ctx.cpus.map(|c| c.to_vec());
        opts.deadline = Some(Instant::now() + ctx.timeout);
        match run_suite(&self.sel, &opts, ctx.cancel) {
            Ok(outcomes) => {
                self.skipped.clear();
                let mut samples = Vec::new();
                for o in outcomes {
                    match o {
                        MicroOutcome::Measured(r) => samples.push(MetricSamples {
                            metric: r.name,
                            values: r.samples,
                        }),
                        MicroOutcome::Skipped { name, reason } => self.skipped.push((name, reason)),
                    }
                }
                RunOutcome::Ok(samples)
            }
            Err(e) => {
                let reason = match e.downcast_ref::<Cancelled>() {
                    Some(c) if c.timed_out => format!("timeout after {:?}", ctx.timeout),
                    Some(_) => "cancelled".to_string(),
                    None => format!("{e:#}"),
                };
                RunOutcome::Failed {
                    reason,
                    stderr_tail: String::new(),
                    exit_code: None,
                }
            }
        }
    }
}
