//! Comparisons across experiments run separately (kernel A on one boot,
//! kernel B on the next, or two machines), and a metric's history across
//! many labelled experiments.
//!
//! A comparison builds a virtual [`ExperimentData`] in which each picked
//! experiment (named by its label, or `#id`) is one config, the first the
//! baseline, and runs the ordinary analysis and renderers on it. Its runs
//! keep their order: all of the first experiment's, then the next one's.

use std::collections::BTreeMap;

use anyhow::Result;

use super::escape::{self, terminal_safe as safe};
use super::wrap::wrap;
use super::{html, markdown, sections, text, Format, ReportOptions};
use crate::analysis::{self, Analysis};
use crate::error::{bad, Error};
use crate::monitor::fingerprint;
use crate::status::ExperimentStatus;
use crate::store::{ExperimentData, ExperimentInfo, Store, StoredMetric, StoredRun};

// The history lives in its own file; its paths stay those it always had.
pub use super::history::{
    change_points, history, history_json, history_on, history_text, ChangePoint, History,
    HistoryPoint,
};

/// Fingerprint keys that are expected to differ across a kernel comparison.
pub const KERNEL_KEYS: &[&str] = &["kernel", "kernel_version"];

/// Experiments turned into one virtual experiment, plus what the reader
/// must be warned about.
pub struct Compared {
    pub data: ExperimentData,
    pub extras: html::Extras,
    /// Fingerprint differences beyond the kernel, imports, incomplete experiments.
    pub warnings: Vec<String>,
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
        Some((name, ids)) => super::on_host::resolve_on(store, what, name, ids),
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
        Some(h) => Some((h, super::on_host::experiments_on(store, h)?)),
        None => None,
    };
    let on_host = on_host.as_ref().map(|(h, ids)| (*h, ids.as_slice()));
    let mut picked: Vec<(ExperimentData, String, String, Option<String>)> = Vec::new();
    for spec in specs {
        let (id, config) = resolve_pick(store, spec, on_host)?;
        // The monitor probe and its control are no part of a comparison.
        let data = crate::analysis::overhead::reportable(&store.load(id)?);
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
        if picked.iter().any(|p| p.1 == name) {
            name = format!("{name}#{id}");
        }
        if picked.iter().any(|p| p.1 == name) {
            return Err(bad(format!(
                "{}: named twice in the comparison",
                safe(spec)
            )));
        }
        let source = store.source(id)?;
        picked.push((data, name, config, source));
    }

    // Warnings are one-line messages for the terminal (main prints them on
    // stderr) and for the report: every stored string in them is shown
    // terminal-safe.
    let mut warnings = Vec::new();
    let base_fp = picked[0].0.info.fingerprint.clone();
    for (d, name, _, _) in &picked[1..] {
        let diffs: Vec<String> = fingerprint::differences(&base_fp, &d.info.fingerprint)
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
                        safe(&clip(&g(&base_fp))),
                        safe(&clip(&g(&d.info.fingerprint)))
                    )
                })
                .collect();
            warnings.push(format!(
                "{} differs from {} in more than the kernel: {}; a delta may come from these, not the kernel",
                safe(name),
                safe(&picked[0].1),
                detail.join("; ")
            ));
        }
        // Unknown on one side (an import has no fingerprint): said once,
        // as a list of keys, never as a "difference".
        let unknown = fingerprint::unrecorded(&base_fp, &d.info.fingerprint);
        let (here, there): (Vec<String>, Vec<String>) = unknown
            .into_iter()
            .partition(|k| fingerprint::known(&d.info.fingerprint, k).is_none());
        for (who, other, keys) in [(name, &picked[0].1, here), (&picked[0].1, name, there)] {
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
    for (d, name, _, source) in &picked {
        if let Some(s) = source {
            warnings.push(format!(
                "{}: samples imported from {}, not measured by sysdelta",
                safe(name),
                safe(s)
            ));
        }
        if d.info.status != ExperimentStatus::Complete {
            warnings.push(format!(
                "{} (#{}) is {}, not complete",
                safe(name),
                d.info.id,
                safe(d.info.status.as_str())
            ));
        }
    }

    let mut metrics: Vec<StoredMetric> = Vec::new();
    let mut workloads: Vec<String> = Vec::new();
    let mut runs: Vec<StoredRun> = Vec::new();
    let mut events = Vec::new();
    let mut series = Vec::new();
    let mut run_series = Vec::new();
    let mut profiles = Vec::new();
    let mut boots = Vec::new();
    let mut block_offset = 0u32;
    let mut sources = Vec::new();
    for (d, name, config, source) in &picked {
        for m in &d.metrics {
            if !metrics
                .iter()
                .any(|x| x.workload == m.workload && x.spec.name == m.spec.name)
            {
                metrics.push(m.clone());
            }
        }
        for w in &d.info.workloads {
            if !workloads.contains(w) {
                workloads.push(w.clone());
            }
        }
        let mine: Vec<&StoredRun> = d.runs.iter().filter(|r| r.config == *config).collect();
        let mut max_block = 0;
        for r in mine {
            let mut r = r.clone();
            r.config = name.clone();
            max_block = max_block.max(r.block);
            r.block += block_offset;
            runs.push(r);
        }
        // Kernel experiments: the picked config's boots, under its new
        // name, so the comparison shows them (and TCG) as a report does.
        for b in d.boots.iter().filter(|b| b.config == *config) {
            let mut b = b.clone();
            b.config = name.clone();
            max_block = max_block.max(b.block);
            b.block += block_offset;
            boots.push(b);
        }
        block_offset += max_block + 1;
        for e in &d.events {
            let mut e = e.clone();
            if crate::analysis::shell_cost::is_event(&e) {
                // The picked config's shell start-up, under its new name.
                match crate::analysis::shell_cost::renamed(&e.message, config, name) {
                    Some(m) => e.message = m,
                    None => continue,
                }
            } else {
                e.message = format!("[{name}] {}", e.message);
            }
            events.push(e);
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
                run_series.push((*run, s.clone()));
                if !warm {
                    series.push((name.clone(), w.to_string(), s.clone()));
                }
            }
        }
        for (c, sym, kernel, n) in &d.profiles {
            if c == config {
                profiles.push((name.clone(), sym.clone(), *kernel, *n));
            }
        }
        sources.push(html::SourceExperiment {
            title: name.clone(),
            info: d.info.clone(),
            imported_from: source.clone(),
        });
    }
    // Run ids must be unique: the experiments' own ids are, across one store.
    let first = &picked[0].0.info;
    let names: Vec<String> = picked.iter().map(|p| p.1.clone()).collect();
    let mut hosts: Vec<String> = picked.iter().map(|p| p.0.info.host.clone()).collect();
    hosts.dedup();
    let info = ExperimentInfo {
        id: first.id,
        name: format!("comparison of {}", names.join(", ")),
        label: None,
        plan_source: "sysdelta compare".into(),
        plan_text: picked
            .iter()
            .map(|p| {
                format!(
                    "# {} (#{}): {}\n{}",
                    p.1, p.0.info.id, p.0.info.plan_source, p.0.info.plan_text
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
            .map(|p| p.0.info.runs_per_cell)
            .max()
            .unwrap_or(0),
        warmup: first.warmup,
        baseline: names[0].clone(),
        created_at: first.created_at.clone(),
        finished_at: picked.last().and_then(|p| p.0.info.finished_at.clone()),
        // Incomplete members are warned about above; the virtual experiment
        // cannot be resumed as a whole.
        status: ExperimentStatus::Complete,
        entered_config: None,
        self_usage: None,
        configs: names,
        workloads,
    };
    Ok(Compared {
        data: ExperimentData {
            info,
            metrics,
            runs,
            events,
            series: run_series,
            profiles,
            boots,
        },
        extras: html::Extras {
            sources,
            series,
            banner: warnings.clone(),
        },
        warnings,
    })
}

/// Render a comparison in any report format. The comparison's warnings
/// lead the text and markdown outputs and join the analysis warnings.
/// The comparison's analysis, computed once for every format written.
pub fn analyze(c: &Compared, opts: &analysis::Options) -> Result<Analysis> {
    Ok(analysis::analyze(&c.data, opts).map_err(Error::into_bad_input)?)
}

/// `c` with its analysis `a` in `opts.format`: each metric in the unit its
/// values read best in (JSON keeps the stored units, as `report` does), and
/// text fitted to 80 columns as `report`'s.
pub fn render(c: &Compared, a: &Analysis, opts: &ReportOptions) -> Result<String> {
    // Text and markdown lead with the warnings; their own warnings section
    // must not print them a second time. JSON and CSV carry them in the
    // analysis' list; HTML shows them as its banner.
    let mut a = a.clone();
    if matches!(opts.format, Format::Json | Format::Csv) {
        a.warnings.splice(0..0, c.warnings.iter().cloned());
    }
    let v = crate::analysis::view::build(&c.data, &a, opts.time_unit, c.extras.clone());
    let lead: String = c
        .warnings
        .iter()
        .map(|w| wrap(&format!("WARNING: {w}"), "  "))
        .collect();
    Ok(match opts.format {
        Format::Text => escape::terminal_safe_lines(&format!(
            "{lead}{}{}",
            if lead.is_empty() { "" } else { "\n" },
            text::fit(&text::render(
                &v.shown,
                opts.detail,
                &format!(
                    "{}{}",
                    sections::workload_series(&v.workload_series),
                    sections::profiles(&v.profiles, 10)
                )
            ))
        )),
        Format::Markdown => {
            let q: String = c
                .warnings
                .iter()
                .map(|w| format!("> **WARNING:** {}\n", escape::markdown(w)))
                .collect();
            escape::terminal_safe_lines(&format!(
                "{q}{}{}",
                if q.is_empty() { "" } else { "\n" },
                markdown::render(&v.shown)
            ))
        }
        Format::Json | Format::Csv | Format::Html => super::render_view(&v, opts)?,
    })
}
