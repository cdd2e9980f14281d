//! Comparisons across experiments run separately (kernel A on one boot,
//! kernel B on the next, or two machines): the view `sysdelta compare`
//! renders.
//!
//! A comparison builds a virtual [`ExperimentData`] in which each picked
//! experiment (named by its label, or `#id`) is one config, the first the
//! baseline, and runs the ordinary analysis on it. Its runs keep their
//! order: all of the first experiment's, then the next one's. What the
//! reader must be warned about (fingerprints that differ beyond the
//! kernel, imported samples, incomplete experiments) is said once here, as
//! one-line messages with every stored string terminal-safe.

use std::collections::BTreeMap;

use anyhow::Result;

use super::Analysis;
use crate::error::{bad, Error};
use crate::monitor::fingerprint;
use crate::status::ExperimentStatus;
use crate::store::{ExperimentData, ExperimentInfo, SeriesRecord, Store, StoredMetric, StoredRun};
use crate::sys::visible::terminal_safe as safe;

/// Fingerprint keys that are expected to differ across a kernel comparison.
pub const KERNEL_KEYS: &[&str] = &["kernel", "kernel_version"];

/// One experiment picked for a comparison, as the comparison names it.
#[derive(Clone, Debug)]
pub struct Source {
    /// Its config's name in the comparison: the label (or `#id`), with
    /// `:CONFIG` when the experiment has several configs.
    pub title: String,
    pub info: ExperimentInfo,
    /// What it was imported from; None when sysdelta measured it.
    pub imported_from: Option<String>,
}

/// Experiments turned into one virtual experiment, plus what the reader
/// must be warned about.
pub struct Compared {
    /// The virtual experiment: one config per picked experiment.
    pub data: ExperimentData,
    /// The picked experiments, baseline first.
    pub sources: Vec<Source>,
    /// (config, workload, series) of every measured run that recorded one.
    pub series: Vec<(String, String, SeriesRecord)>,
    /// Fingerprint differences beyond the kernel, imports, incomplete experiments.
    pub warnings: Vec<String>,
}

/// A comparison analysed: what every format of `sysdelta compare` shows.
pub struct CompareView {
    pub compared: Compared,
    /// The analysis of the virtual experiment, in stored units.
    pub analysis: Analysis,
}

/// One picked experiment: its data (monitor probe and control left out),
/// its name in the comparison, the config picked, where it was imported
/// from.
struct Picked {
    data: ExperimentData,
    name: String,
    config: String,
    source: Option<String>,
}

/// Resolve `LABEL_OR_ID` or `LABEL_OR_ID:CONFIG`, among the experiments of
/// one host (`host`: its name and its experiments' ids) when one is given.
/// The whole string is tried first, so labels containing ':' still work.
fn resolve_pick(
    store: &Store,
    spec: &str,
    host: Option<(&str, &[i64])>,
) -> Result<(i64, Option<String>)> {
    let resolve = |what: &str| match host {
        Some((name, ids)) => store.resolve_on(what, name, ids),
        None => store.resolve(what),
    };
    match resolve(spec) {
        Ok(id) => Ok((id, None)),
        Err(e) => match spec.rsplit_once(':') {
            Some((what, config)) if !what.is_empty() => {
                Ok((resolve(what)?, Some(config.to_string())))
            }
            _ => Err(e),
        },
    }
}

/// Fingerprint values (a kernel cmdline can be 500 characters) shortened
/// for a warning line; the HTML environment table shows them whole.
fn clip(v: &str) -> String {
    const MAX: usize = 40;
    if v.chars().count() <= MAX {
        v.to_string()
    } else {
        format!("{}...", v.chars().take(MAX - 3).collect::<String>())
    }
}

fn title(info: &ExperimentInfo) -> String {
    info.label
        .clone()
        .unwrap_or_else(|| format!("#{}", info.id))
}

/// Config names for a one-line message, terminal-safe.
fn config_list(configs: &[String]) -> String {
    safe(&configs.join(", "))
}

/// Build the virtual experiment of `specs` (at least two).
pub fn build(store: &Store, specs: &[String]) -> Result<Compared> {
    build_on(store, specs, None)
}

/// [`build`] with each of `specs` resolved among the experiments that ran
/// on host `host` (`compare --host`: a label a fleet gave every host's
/// experiment names this host's), when one is given. A host no experiment
/// ran on is bad input.
pub fn build_on(store: &Store, specs: &[String], host: Option<&str>) -> Result<Compared> {
    if specs.len() < 2 {
        return Err(bad(
            "compare needs at least two experiments (LABEL, ID, or LABEL:CONFIG)",
        ));
    }
    let on_host = match host {
        Some(h) => Some((h, store.experiments_on(h)?)),
        None => None,
    };
    let on_host = on_host.as_ref().map(|(h, ids)| (*h, ids.as_slice()));
    let mut picked: Vec<Picked> = Vec::new();
    for spec in specs {
        let p = pick(store, spec, on_host, &picked)?;
        picked.push(p);
    }
    let warnings = warnings(&picked);
    Ok(merge(picked, warnings))
}

/// The experiment `spec` names, under a name no earlier pick has.
fn pick(
    store: &Store,
    spec: &str,
    on_host: Option<(&str, &[i64])>,
    picked: &[Picked],
) -> Result<Picked> {
    let (id, config) = resolve_pick(store, spec, on_host)?;
    // The monitor probe and its control are no part of a comparison.
    let data = super::overhead::reportable(&store.load(id)?);
    let t = title(&data.info);
    let config = match config {
        Some(c) if data.info.configs.contains(&c) => c,
        Some(c) => {
            return Err(bad(format!(
                "{}: experiment {} (#{id}) has no config '{}' (configs: {})",
                safe(spec),
                safe(&t),
                safe(&c),
                config_list(&data.info.configs)
            )))
        }
        None if data.info.configs.len() == 1 => data.info.configs[0].clone(),
        // A bare label of a multi-config experiment follows its baseline,
        // as `history` does: `compare rc1 rc2` is what a user types for
        // two kernels, and the name below says which config was taken.
        None if data.info.configs.contains(&data.info.baseline) => data.info.baseline.clone(),
        None => {
            return Err(bad(format!(
                "{}: experiment {} (#{id}) has configs {}; pick one as {}:CONFIG",
                safe(spec),
                safe(&t),
                config_list(&data.info.configs),
                safe(&t)
            )))
        }
    };
    let mut name = if data.info.configs.len() > 1 {
        format!("{t}:{config}")
    } else {
        t
    };
    if picked.iter().any(|p| p.name == name) {
        name = format!("{name}#{id}");
    }
    if picked.iter().any(|p| p.name == name) {
        return Err(bad(format!(
            "{}: named twice in the comparison",
            safe(spec)
        )));
    }
    let source = store.source(id)?;
    Ok(Picked {
        data,
        name,
        config,
        source,
    })
}

/// What the reader must know before trusting the comparison: one-line
/// messages for the terminal (main prints them on stderr) and for the
/// report, every stored string in them terminal-safe.
fn warnings(picked: &[Picked]) -> Vec<String> {
    let mut warnings = Vec::new();
    let (base_fp, base_name) = (&picked[0].data.info.fingerprint, &picked[0].name);
    for p in &picked[1..] {
        let (fp, name) = (&p.data.info.fingerprint, &p.name);
        let diffs: Vec<String> = fingerprint::differences(base_fp, fp)
            .into_iter()
            .filter(|k| !KERNEL_KEYS.contains(&k.as_str()))
            .collect();
        if !diffs.is_empty() {
            let detail: Vec<String> = diffs
                .iter()
                .map(|k| {
                    let g = |f: &BTreeMap<String, String>| {
                        f.get(k).cloned().unwrap_or_else(|| "-".into())
                    };
                    format!(
                        "{} ({} vs {})",
                        safe(k),
                        safe(&clip(&g(base_fp))),
                        safe(&clip(&g(fp)))
                    )
                })
                .collect();
            warnings.push(format!(
                "{} differs from {} in more than the kernel: {}; a delta may come from these, not the kernel",
                safe(name),
                safe(base_name),
                detail.join("; ")
            ));
        }
        // Unknown on one side (an import has no fingerprint): said once,
        // as a list of keys, never as a "difference".
        let unknown = fingerprint::unrecorded(base_fp, fp);
        let (here, there): (Vec<String>, Vec<String>) = unknown
            .into_iter()
            .partition(|k| fingerprint::known(fp, k).is_none());
        for (who, other, keys) in [(name, base_name, here), (base_name, name, there)] {
            if !keys.is_empty() {
                warnings.push(format!(
                    "{}: not recorded: {}; whether it matches {} there is unknown",
                    safe(who),
                    safe(&keys.join(", ")),
                    safe(other)
                ));
            }
        }
    }
    for p in picked {
        if let Some(s) = &p.source {
            warnings.push(format!(
                "{}: samples imported from {}, not measured by sysdelta",
                safe(&p.name),
                safe(s)
            ));
        }
        if p.data.info.status != ExperimentStatus::Complete {
            warnings.push(format!(
                "{} (#{}) is {}, not complete",
                safe(&p.name),
                p.data.info.id,
                safe(p.data.info.status.as_str())
            ));
        }
    }
    warnings
}

/// The picked experiments as one virtual experiment, each picked config
/// under its name in the comparison.
fn merge(picked: Vec<Picked>, warnings: Vec<String>) -> Compared {
    let mut data = ExperimentData {
        info: virtual_info(&picked),
        metrics: Vec::new(),
        runs: Vec::new(),
        events: Vec::new(),
        series: Vec::new(),
        profiles: Vec::new(),
        boots: Vec::new(),
    };
    let mut series = Vec::new();
    let mut sources = Vec::new();
    let mut block_offset = 0u32;
    for p in &picked {
        let (d, name, config) = (&p.data, &p.name, &p.config);
        for m in &d.metrics {
            if !data
                .metrics
                .iter()
                .any(|x: &StoredMetric| x.workload == m.workload && x.spec.name == m.spec.name)
            {
                data.metrics.push(m.clone());
            }
        }
        let mut max_block = 0;
        for r in d.runs.iter().filter(|r| r.config == *config) {
            let mut r: StoredRun = r.clone();
            r.config = name.clone();
            max_block = max_block.max(r.block);
            r.block += block_offset;
            data.runs.push(r);
        }
        // Kernel experiments: the picked config's boots, under its new
        // name, so the comparison shows them (and TCG) as a report does.
        for b in d.boots.iter().filter(|b| b.config == *config) {
            let mut b = b.clone();
            b.config = name.clone();
            max_block = max_block.max(b.block);
            b.block += block_offset;
            data.boots.push(b);
        }
        block_offset += max_block + 1;
        for e in &d.events {
            let mut e = e.clone();
            if super::shell_cost::is_event(&e) {
                // The picked config's shell start-up, under its new name.
                match super::shell_cost::renamed(&e.message, config, name) {
                    Some(m) => e.message = m,
                    None => continue,
                }
            } else {
                e.message = format!("[{name}] {}", e.message);
            }
            data.events.push(e);
        }
        // Run id -> (workload, warm-up?) of the picked config's runs.
        let picked_runs: BTreeMap<i64, (&str, bool)> = d
            .runs
            .iter()
            .filter(|r| r.config == *config)
            .map(|r| (r.id, (r.workload.as_str(), r.warmup)))
            .collect();
        for (run, s) in &d.series {
            if let Some((w, warm)) = picked_runs.get(run) {
                data.series.push((*run, s.clone()));
                if !warm {
                    series.push((name.clone(), w.to_string(), s.clone()));
                }
            }
        }
        for (c, sym, kernel, n) in &d.profiles {
            if c == config {
                data.profiles.push((name.clone(), sym.clone(), *kernel, *n));
            }
        }
        sources.push(Source {
            title: name.clone(),
            info: d.info.clone(),
            imported_from: p.source.clone(),
        });
    }
    Compared {
        data,
        sources,
        series,
        warnings,
    }
}

/// The virtual experiment's info: the first experiment's, named for the
/// comparison, with every picked experiment's workloads and plan.
fn virtual_info(picked: &[Picked]) -> ExperimentInfo {
    // Run ids stay unique: the experiments' own ids are, across one store.
    let first = &picked[0].data.info;
    let names: Vec<String> = picked.iter().map(|p| p.name.clone()).collect();
    let mut hosts: Vec<String> = picked.iter().map(|p| p.data.info.host.clone()).collect();
    hosts.dedup();
    let mut workloads: Vec<String> = Vec::new();
    for w in picked.iter().flat_map(|p| &p.data.info.workloads) {
        if !workloads.contains(w) {
            workloads.push(w.clone());
        }
    }
    ExperimentInfo {
        id: first.id,
        name: format!("comparison of {}", names.join(", ")),
        label: None,
        plan_source: "sysdelta compare".into(),
        plan_text: picked
            .iter()
            .map(|p| {
                format!(
                    "# {} (#{}): {}\n{}",
                    p.name, p.data.info.id, p.data.info.plan_source, p.data.info.plan_text
                )
            })
            .collect::<Vec<_>>()
            .join("\n"),
        overrides: first.overrides.clone(),
        host: hosts.join(", "),
        fingerprint: first.fingerprint.clone(),
        seed: first.seed,
        order: "separate-experiments".into(),
        fleet_id: None,
        fleet_host: None,
        runs_per_cell: picked
            .iter()
            .map(|p| p.data.info.runs_per_cell)
            .max()
            .unwrap_or(0),
        warmup: first.warmup,
        baseline: names[0].clone(),
        created_at: first.created_at.clone(),
        finished_at: picked.last().and_then(|p| p.data.info.finished_at.clone()),
        // Incomplete members are warned about; the virtual experiment
        // cannot be resumed as a whole.
        status: ExperimentStatus::Complete,
        entered_config: None,
        self_usage: None,
        configs: names,
        workloads,
    }
}

/// The comparison's analysis, computed once for every format written.
pub fn analyze(c: Compared, opts: &super::Options) -> Result<CompareView> {
    let analysis = super::analyze(&c.data, opts).map_err(Error::into_bad_input)?;
    Ok(CompareView {
        compared: c,
        analysis,
    })
}
