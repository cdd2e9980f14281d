//! The fleet report's view: one plan run on several hosts, one experiment
//! per host, analysed together. Per workload/metric and config: a row per
//! host (its own analysis: delta and CI against the baseline, runs) and the
//! hosts pooled (`analysis::hosts`: random-effects on the log ratio, HKSJ
//! CI), with the hosts that differ from the others named; the hosts'
//! fingerprints side by side where they differ, and a warning when they
//! differ in what changes a measurement (kernel, CPU, governor,
//! mitigations, SMT, THP). Rendered by `report::fleet`.

use std::collections::BTreeMap;

use anyhow::Result;
use serde::Serialize;

use super::hosts::{self, HostEstimate, Pooled};
use super::{Analysis, MetricAnalysis, Options, Verdict};
use crate::error::{bad, Error};
use crate::metric::Direction;
use crate::monitor::fingerprint;
use crate::status::ExperimentStatus;
use crate::store::ExperimentData;
use crate::sys::visible::terminal_safe as safe;

/// One host's experiment of a fleet: the host's name in the fleet and
/// everything stored about its experiment.
pub struct HostExperiment {
    pub host: String,
    pub data: ExperimentData,
}

impl HostExperiment {
    /// `data` under its host's name (`ExperimentInfo::ran_on`: the fleet
    /// host name, else the recorded host).
    pub fn new(data: ExperimentData) -> HostExperiment {
        HostExperiment {
            host: data.info.ran_on().to_string(),
            data,
        }
    }
}

/// Fingerprint keys whose difference between hosts changes what a run
/// measures, with the words the warning uses.
pub const CONFOUNDERS: &[(&str, &str)] = &[
    ("kernel", "kernel release"),
    ("cpu_model", "CPU model"),
    ("cpufreq_governor", "cpufreq governor"),
    ("mitigations", "vulnerability mitigations"),
    ("smt", "SMT"),
    ("thp", "THP"),
];

/// Fingerprint keys that differ between hosts by definition.
const HOST_KEYS: &[&str] = &["host"];

/// One host of the fleet, as the report shows it.
#[derive(Clone, Debug, Serialize)]
pub struct FleetHost {
    pub host: String,
    pub experiment_id: i64,
    pub status: ExperimentStatus,
    /// Successful measured runs.
    pub runs_ok: usize,
    /// Runs the plan asked for (None for an adaptive run count, or when
    /// the host's experiment could not be analysed).
    pub runs_planned: Option<usize>,
    /// The host's own analysis' warnings.
    pub warnings: Vec<String>,
    /// Why the host's experiment could not be analysed (a missing
    /// baseline config), when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The host's own analysis (as `sysdelta report` gives it), when its
    /// experiment could be analysed.
    #[serde(skip)]
    pub analysis: Option<Analysis>,
}

/// One host's row of a comparison.
#[derive(Clone, Debug, Serialize)]
pub struct HostRow {
    pub host: String,
    /// Runs (for kernel configs, boots) with a value: baseline, config.
    pub n_baseline: usize,
    pub n: usize,
    /// Means in the metric's stored unit.
    pub baseline_mean: Option<f64>,
    pub mean: Option<f64>,
    pub delta_mean_pct: Option<f64>,
    pub delta_ci_pct: Option<(f64, f64)>,
    pub ratio_ci: Option<(f64, f64)>,
    /// The host's own verdict (`worse`, `better`, `noise`, `undefined`).
    pub verdict: Verdict,
    /// Why the host has no estimate or no CI, when it has none.
    pub note: Option<String>,
    /// Whether the host's estimate is in the pooled one.
    pub pooled: bool,
    /// `analysis::hosts::Pooled::differs` of this host.
    pub differs: Option<bool>,
    /// Its studentized deleted residual.
    pub residual: Option<f64>,
}

/// One config against the baseline on one workload/metric, across hosts.
#[derive(Clone, Debug, Serialize)]
pub struct FleetComparison {
    pub workload: String,
    pub metric: String,
    pub unit: String,
    pub direction: Direction,
    pub config: String,
    pub rows: Vec<HostRow>,
    pub pooled: Pooled,
}

/// A fleet analysed: every host's own analysis and the comparisons
/// pooled across them. Computed once, rendered in any format.
#[derive(Clone, Debug, Serialize)]
pub struct Fleet {
    /// The fleet run, when every host's experiment names the same one.
    pub fleet_id: Option<i64>,
    /// The plan's name (the first host's experiment's).
    pub name: String,
    pub baseline: String,
    pub confidence: f64,
    pub hosts: Vec<FleetHost>,
    /// Fingerprint keys whose values differ between hosts (the host name
    /// aside), each with every host's value (None: not recorded there).
    pub fingerprint_differences: BTreeMap<String, Vec<Option<String>>>,
    /// Keys some hosts recorded and others did not.
    pub fingerprint_unrecorded: Vec<String>,
    /// The keys of `fingerprint_differences` that change a measurement.
    pub confounders: Vec<String>,
    pub comparisons: Vec<FleetComparison>,
    /// What the reader must know first (confounders, hosts not analysed).
    pub warnings: Vec<String>,
}

/// Analyse every host's experiment (as `sysdelta report` does: the
/// monitors' overhead aside) against one baseline (`opts.baseline`, else
/// the first host's) and pool each comparison across hosts.
pub fn analyze(hosts_in: &[HostExperiment], opts: &Options) -> Result<Fleet> {
    let Some(first) = hosts_in.first() else {
        return Err(bad("a fleet report needs at least one host's experiment"));
    };
    for (i, h) in hosts_in.iter().enumerate() {
        if hosts_in[..i].iter().any(|o| o.host == h.host) {
            return Err(bad(format!(
                "host '{}' is named twice in the fleet",
                safe(&h.host)
            )));
        }
    }
    let baseline = opts
        .baseline
        .clone()
        .unwrap_or_else(|| first.data.info.baseline.clone());
    let opts = Options {
        baseline: Some(baseline.clone()),
        ..opts.clone()
    };
    let hosts: Vec<FleetHost> = hosts_in.iter().map(|h| host(h, &opts)).collect();
    let comparisons = comparisons(&hosts, opts.confidence);
    let prints: Vec<&BTreeMap<String, String>> =
        hosts_in.iter().map(|h| &h.data.info.fingerprint).collect();
    let (fingerprint_differences, unrecorded) = fingerprints(&prints);
    let confounders: Vec<String> = CONFOUNDERS
        .iter()
        .filter(|(k, _)| fingerprint_differences.contains_key(*k))
        .map(|(k, _)| k.to_string())
        .collect();
    let warnings = warnings(&hosts, &confounders);
    let ids: Vec<Option<i64>> = hosts_in.iter().map(|h| h.data.info.fleet_id).collect();
    let fleet_id = ids[0].filter(|_| ids.iter().all(|i| *i == ids[0]));
    Ok(Fleet {
        fleet_id,
        name: first.data.info.name.clone(),
        baseline,
        confidence: opts.confidence,
        hosts,
        fingerprint_differences,
        fingerprint_unrecorded: unrecorded,
        confounders,
        comparisons,
        warnings,
    })
}

/// One host's experiment analysed on its own, as `sysdelta report` does:
/// the monitors' overhead from all of it, the rest from its reportable part.
fn analyze_one(data: &ExperimentData, opts: &Options) -> Result<Analysis> {
    let overhead = super::overhead::compute(data, opts);
    let data = super::overhead::reportable(data);
    let mut a = super::analyze(&data, opts).map_err(Error::into_bad_input)?;
    a.monitor_overhead = overhead;
    Ok(a)
}

/// Host `h` with its own analysis, or why it has none.
fn host(h: &HostExperiment, opts: &Options) -> FleetHost {
    let info = &h.data.info;
    let (analysis, error) = match analyze_one(&h.data, opts) {
        Ok(x) => (Some(x), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let adaptive =
        info.overrides.until_ci.is_some() || info.overrides.min_time.is_some_and(|t| t > 0.0);
    let (runs_ok, planned, warnings) = match &analysis {
        Some(a) => (
            a.runs_ok,
            (!adaptive).then_some(a.runs_planned),
            a.warnings.clone(),
        ),
        None => (
            h.data.runs.iter().filter(|r| r.is_measured_ok()).count(),
            None,
            Vec::new(),
        ),
    };
    FleetHost {
        host: h.host.clone(),
        experiment_id: info.id,
        status: info.status,
        runs_ok,
        runs_planned: planned,
        warnings,
        error,
        analysis,
    }
}

/// Every config against the baseline on every workload/metric, in the
/// order the hosts have them, pooled across hosts; which hosts differ is
/// decided over the report's whole family.
fn comparisons(hosts: &[FleetHost], confidence: f64) -> Vec<FleetComparison> {
    let mut metrics: Vec<(String, String)> = Vec::new();
    let mut configs: Vec<String> = Vec::new();
    for a in hosts.iter().filter_map(|h| h.analysis.as_ref()) {
        for m in &a.metrics {
            let key = (m.workload.clone(), m.spec.name.clone());
            if !metrics.contains(&key) {
                metrics.push(key);
            }
        }
        for c in &a.configs[1..] {
            if !configs.contains(c) {
                configs.push(c.clone());
            }
        }
    }
    let mut comparisons = Vec::new();
    for (workload, metric) in &metrics {
        for config in &configs {
            if let Some(c) = comparison(hosts, workload, metric, config, confidence) {
                comparisons.push(c);
            }
        }
    }
    {
        let mut pools: Vec<&mut Pooled> = comparisons.iter_mut().map(|c| &mut c.pooled).collect();
        hosts::correct_differs(&mut pools, confidence);
    }
    for c in &mut comparisons {
        for (row, d) in c.rows.iter_mut().zip(&c.pooled.differs) {
            row.differs = *d;
        }
    }
    comparisons
}

/// `config` against the baseline on `workload`/`metric` across hosts;
/// None when no host has it.
fn comparison(
    hosts: &[FleetHost],
    workload: &str,
    metric: &str,
    config: &str,
    confidence: f64,
) -> Option<FleetComparison> {
    // Per host: its metric and the index of the config's comparison.
    let found: Vec<Option<(&MetricAnalysis, usize)>> = hosts
        .iter()
        .map(|h| {
            let a = h.analysis.as_ref()?;
            let m = a
                .metrics
                .iter()
                .find(|m| m.workload == workload && m.spec.name == metric)?;
            let ci = a.configs.iter().position(|c| c == config)?;
            Some((m, ci.checked_sub(1)?))
        })
        .collect();
    let spec = found.iter().flatten().map(|(m, _)| &m.spec).next()?;
    let estimates: Vec<Option<HostEstimate>> = found
        .iter()
        .map(|f| f.and_then(|(m, ci)| HostEstimate::from_comparison(m, ci)))
        .collect();
    let pooled = hosts::pool(&estimates, confidence);
    let rows = hosts
        .iter()
        .zip(&found)
        .enumerate()
        .map(|(i, (h, f))| {
            host_row(
                h,
                *f,
                estimates[i].is_some(),
                pooled.differs[i],
                pooled.residual[i],
            )
        })
        .collect();
    Some(FleetComparison {
        workload: workload.to_string(),
        metric: metric.to_string(),
        unit: spec.unit.clone(),
        direction: spec.direction,
        config: config.to_string(),
        rows,
        pooled,
    })
}

/// The fingerprint keys whose values differ between hosts (the host name
/// aside), each with every host's value, and the keys some hosts recorded
/// and others did not.
fn fingerprints(
    prints: &[&BTreeMap<String, String>],
) -> (BTreeMap<String, Vec<Option<String>>>, Vec<String>) {
    let mut differ: Vec<String> = Vec::new();
    let mut unrecorded: Vec<String> = Vec::new();
    for (i, a) in prints.iter().enumerate() {
        for b in &prints[i + 1..] {
            differ.extend(fingerprint::differences(a, b));
            unrecorded.extend(fingerprint::unrecorded(a, b));
        }
    }
    for v in [&mut differ, &mut unrecorded] {
        v.retain(|k| !HOST_KEYS.contains(&k.as_str()));
        v.sort();
        v.dedup();
    }
    unrecorded.retain(|k| !differ.contains(k));
    let differences = differ
        .iter()
        .map(|k| {
            let values = prints
                .iter()
                .map(|p| fingerprint::known(p, k).map(str::to_string))
                .collect();
            (k.clone(), values)
        })
        .collect();
    (differences, unrecorded)
}

/// What the reader must know first: confounders, hosts not analysed.
fn warnings(hosts: &[FleetHost], confounders: &[String]) -> Vec<String> {
    let mut warnings = Vec::new();
    if !confounders.is_empty() {
        let words: Vec<&str> = CONFOUNDERS
            .iter()
            .filter(|(k, _)| confounders.iter().any(|c| c == k))
            .map(|(_, w)| *w)
            .collect();
        warnings.push(format!(
            "the hosts differ in {} ({}): a host's delta that differs from the others' \
             may come from these, and the pooled delta averages over them",
            words.join(", "),
            confounders.join(", ")
        ));
    }
    for h in hosts {
        if let Some(e) = &h.error {
            warnings.push(format!(
                "host {} (experiment {}) is not analysed: {}",
                safe(&h.host),
                h.experiment_id,
                safe(e)
            ));
        }
    }
    warnings
}

/// The row of host `h`, whose metric and comparison index are `found`.
fn host_row(
    h: &FleetHost,
    found: Option<(&MetricAnalysis, usize)>,
    pooled: bool,
    differs: Option<bool>,
    residual: Option<f64>,
) -> HostRow {
    let mut row = HostRow {
        host: h.host.clone(),
        n_baseline: 0,
        n: 0,
        baseline_mean: None,
        mean: None,
        delta_mean_pct: None,
        delta_ci_pct: None,
        ratio_ci: None,
        verdict: Verdict::Undefined,
        note: None,
        pooled,
        differs,
        residual,
    };
    let Some((m, ci)) = found else {
        row.note = Some(match &h.error {
            Some(_) => "not analysed".into(),
            None => "no runs of this metric and config".into(),
        });
        return row;
    };
    let (base, cell) = (&m.cells[0], &m.cells[ci + 1]);
    let c = &m.comparisons[ci];
    row.n_baseline = base.values.len();
    row.n = cell.values.len();
    row.baseline_mean = base.summary.as_ref().map(|s| s.mean);
    row.mean = cell.summary.as_ref().map(|s| s.mean);
    row.delta_mean_pct = c.delta_mean_pct;
    row.delta_ci_pct = c.delta_ci_pct;
    row.ratio_ci = c.ratio_ci;
    row.verdict = c.verdict;
    row.note = c.ci_note.clone().or_else(|| c.note.clone());
    if !pooled && row.note.is_none() {
        row.note = Some("no estimate to pool".into());
    }
    row
}
