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
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::Serialize;

use super::analysis::{self, Analysis};
use super::escape::{self, terminal_safe as safe};
use super::{csv, html, json, markdown, sections, text, Format, ReportOptions};
use crate::error::bad;
use crate::monitor::fingerprint;
use crate::store::{ExperimentData, ExperimentInfo, Store, StoredMetric, StoredRun};

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

/// Resolve `LABEL_OR_ID` or `LABEL_OR_ID:CONFIG`. The whole string is tried
/// first, so labels containing ':' still work.
fn resolve_pick(store: &Store, spec: &str) -> Result<(i64, Option<String>)> {
    match store.resolve(spec) {
        Ok(id) => Ok((id, None)),
        Err(e) => match spec.rsplit_once(':') {
            Some((what, config)) if !what.is_empty() => {
                Ok((store.resolve(what)?, Some(config.to_string())))
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

/// Word-wrap `text` to 78 columns, continuation lines indented by `indent`.
fn wrap(text: &str, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > 78 {
            out.push_str(&line);
            out.push('\n');
            line = indent.to_string();
        } else if !line.is_empty() && line != indent {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
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
    if specs.len() < 2 {
        return Err(bad(
            "compare needs at least two experiments (LABEL, ID, or LABEL:CONFIG)",
        ));
    }
    let mut picked: Vec<(ExperimentData, String, String, Option<String>)> = Vec::new();
    for spec in specs {
        let (id, config) = resolve_pick(store, spec)?;
        let data = store.load(id)?;
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
    }
    for (d, name, _, source) in &picked {
        if let Some(s) = source {
            warnings.push(format!(
                "{}: samples imported from {}, not measured by sysdelta",
                safe(name),
                safe(s)
            ));
        }
        if d.info.status != "complete" {
            warnings.push(format!(
                "{} (#{}) is {}, not complete",
                safe(name),
                d.info.id,
                safe(&d.info.status)
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
        block_offset += max_block + 1;
        for e in &d.events {
            let mut e = e.clone();
            e.message = format!("[{name}] {}", e.message);
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
        status: "complete".into(),
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
            boots: Vec::new(),
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
pub fn render(c: &Compared, opts: &ReportOptions) -> Result<String> {
    let mut a: Analysis = analysis::analyze(&c.data, &opts.analysis).map_err(bad)?;
    if opts.format == Format::Html {
        return html::render(&c.data, &a, &c.extras);
    }
    a.warnings.splice(0..0, c.warnings.iter().cloned());
    let lead: String = c
        .warnings
        .iter()
        .map(|w| wrap(&format!("WARNING: {w}"), "  "))
        .collect();
    Ok(match opts.format {
        Format::Text => escape::terminal_safe_lines(&format!(
            "{lead}{}{}",
            if lead.is_empty() { "" } else { "\n" },
            text::render(
                &a,
                opts.detail,
                &format!(
                    "{}{}",
                    sections::workload_series(&c.data, &a.configs),
                    sections::profiles(&c.data, &a.configs, 10)
                )
            )
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
                markdown::render(&a)
            ))
        }
        Format::Json => json::render(&c.data, &a)?,
        Format::Csv => csv::render(&a)?,
        Format::Html => unreachable!("handled above"),
    })
}

/// One experiment in a metric's history.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryPoint {
    pub id: i64,
    pub label: String,
    pub n: usize,
    pub median: f64,
    /// Per-run values in run order.
    pub values: Vec<f64>,
}

/// A change between `points[index - 1]` and `points[index]`.
#[derive(Clone, Debug, Serialize)]
pub struct ChangePoint {
    pub index: usize,
    pub p: f64,
    pub median_before: f64,
    pub median_after: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct History {
    pub workload: String,
    pub metric: String,
    pub unit: String,
    pub direction: String,
    pub points: Vec<HistoryPoint>,
    pub change_points: Vec<ChangePoint>,
    /// Experiments with the label prefix that lack the metric.
    pub skipped: Vec<String>,
    pub alpha: f64,
    pub permutations: usize,
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// The split statistic of `x` at `k`: |mean(x[..k]) - mean(x[k..])| *
/// sqrt(k (n-k) / n) (a standardised CUSUM), maximised over k; (k, stat).
fn best_split(x: &[f64]) -> (usize, f64) {
    let n = x.len() as f64;
    (1..x.len())
        .map(|k| {
            let (l, r) = x.split_at(k);
            let s = (mean(l) - mean(r)).abs() * ((k as f64) * (n - k as f64) / n).sqrt();
            (k, s)
        })
        .fold((0, f64::NEG_INFINITY), |b, c| if c.1 > b.1 { c } else { b })
}

/// Change points of a sequence of per-experiment medians by binary
/// segmentation: the best split of a segment (see [`best_split`]) is kept
/// when a permutation test (the segment's medians shuffled `perms` times,
/// seeded) finds a split statistic at least as large in fewer than `alpha`
/// of the orderings; both halves are then searched again. The experiment,
/// not the run, is the unit here (boots differ more than runs), so a
/// segment needs at least 5 experiments before any split can reach p < 0.05
/// (4! = 24 orderings). Returns (index of first point after the change, p).
pub fn change_points(medians: &[f64], alpha: f64, perms: usize, seed: u64) -> Vec<(usize, f64)> {
    let mut out = Vec::new();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut stack = vec![(0usize, medians.len())];
    while let Some((lo, hi)) = stack.pop() {
        if hi - lo < 2 {
            continue;
        }
        let seg = &medians[lo..hi];
        let (k, obs) = best_split(seg);
        if obs.is_nan() || obs <= 0.0 {
            continue;
        }
        let mut shuffled = seg.to_vec();
        let mut ge = 0usize;
        for _ in 0..perms {
            shuffled.shuffle(&mut rng);
            if best_split(&shuffled).1 >= obs * (1.0 - 1e-12) {
                ge += 1;
            }
        }
        let p = (ge + 1) as f64 / (perms + 1) as f64;
        if p < alpha {
            out.push((lo + k, p));
            stack.push((lo, lo + k));
            stack.push((lo + k, hi));
        }
    }
    out.sort_by_key(|c| c.0);
    out
}

/// The history of `metric` (`WORKLOAD/METRIC`, or `METRIC` when one
/// workload has it) across experiments whose label starts with `prefix`,
/// oldest first.
pub fn history(store: &Store, metric: &str, prefix: &str, alpha: f64) -> Result<History> {
    let exps = store.labelled(prefix)?;
    if exps.is_empty() {
        return Err(bad(format!(
            "no experiment has a label starting with '{}' in {}",
            safe(prefix),
            safe(&store.path().display().to_string())
        )));
    }
    let (want_w, want_m) = match metric.split_once('/') {
        Some((w, m)) => (Some(w), m),
        None => (None, metric),
    };
    let mut h = History {
        workload: String::new(),
        metric: want_m.to_string(),
        unit: String::new(),
        direction: String::new(),
        points: Vec::new(),
        change_points: Vec::new(),
        skipped: Vec::new(),
        alpha,
        permutations: 999,
    };
    for (id, label) in exps {
        let d = store.load(id)?;
        let found: Vec<&StoredMetric> = d
            .metrics
            .iter()
            .filter(|m| m.spec.name == want_m && want_w.is_none_or(|w| m.workload == w))
            .collect();
        let m = match found.as_slice() {
            [] => {
                h.skipped.push(format!("{label} (#{id})"));
                continue;
            }
            [m] => *m,
            many => {
                return Err(bad(format!(
                "metric '{}' is in several workloads of {} (#{id}): {}; name one as WORKLOAD/{}",
                safe(metric),
                safe(&label),
                safe(
                    &many
                        .iter()
                        .map(|m| m.workload.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                safe(want_m)
            )))
            }
        };
        if h.workload.is_empty() {
            h.workload = m.workload.clone();
            h.unit = m.spec.unit.clone();
            h.direction = m.spec.direction.as_str().into();
        }
        let values: Vec<f64> = d
            .runs
            .iter()
            .filter(|r| !r.warmup && r.status == "ok" && r.workload == m.workload)
            .filter_map(|r| {
                r.samples
                    .get(want_m)
                    .and_then(|v| crate::stats::summary::median(v))
            })
            .collect();
        let Some(median) = crate::stats::summary::median(&values) else {
            h.skipped.push(format!("{label} (#{id})"));
            continue;
        };
        h.points.push(HistoryPoint {
            id,
            label,
            n: values.len(),
            median,
            values,
        });
    }
    if h.points.is_empty() {
        return Err(bad(format!(
            "no experiment labelled '{}*' has samples of '{}'",
            safe(prefix),
            safe(metric)
        )));
    }
    let medians: Vec<f64> = h.points.iter().map(|p| p.median).collect();
    for (index, p) in change_points(&medians, alpha, h.permutations, 0x5d_e17a) {
        let before = crate::stats::summary::median(&medians[..index]).unwrap_or(f64::NAN);
        let after = crate::stats::summary::median(&medians[index..]).unwrap_or(f64::NAN);
        h.change_points.push(ChangePoint {
            index,
            p,
            median_before: before,
            median_after: after,
        });
    }
    Ok(h)
}

/// The history as JSON (`history --json`), terminal-safe like the JSON
/// report (see [`escape::json_text`]).
pub fn history_json(h: &History) -> Result<String> {
    Ok(escape::json_text(serde_json::to_string_pretty(h)?) + "\n")
}

/// The history as mail-ready text: one line per experiment, change points
/// marked between the lines where they fall. Labels and names are shown
/// terminal-safe.
pub fn history_text(h: &History) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "history of {}/{} ({}, {} is better): {} experiments",
        safe(&h.workload),
        safe(&h.metric),
        safe(&h.unit),
        h.direction,
        h.points.len()
    );
    let _ = writeln!(
        o,
        "{:>5}  {:<24} {:>4} {:>12} {:>10}",
        "id", "label", "n", "median", "vs prev"
    );
    for (i, p) in h.points.iter().enumerate() {
        if let Some(c) = h.change_points.iter().find(|c| c.index == i) {
            let _ = writeln!(
                o,
                "  ---- change point (p = {:.3}): median {} -> {} ({:+.1}%)",
                c.p,
                text::fmt_num(c.median_before),
                text::fmt_num(c.median_after),
                100.0 * (c.median_after / c.median_before - 1.0)
            );
        }
        let vs = if i == 0 || h.points[i - 1].median == 0.0 {
            String::new()
        } else {
            format!("{:+.1}%", 100.0 * (p.median / h.points[i - 1].median - 1.0))
        };
        let _ = writeln!(
            o,
            "{:>5}  {:<24} {:>4} {:>12} {:>10}",
            p.id,
            safe(&p.label),
            p.n,
            text::fmt_num(p.median),
            vs
        );
    }
    let _ = writeln!(
        o,
        "\nChange points: binary segmentation of the per-experiment medians, each split kept when a\n\
         permutation test ({} orderings) gives p < {}; needs >= 5 experiments per segment to fire.",
        h.permutations, h.alpha
    );
    if !h.skipped.is_empty() {
        let _ = writeln!(
            o,
            "Without this metric (skipped): {}",
            safe(&h.skipped.join(", "))
        );
    }
    escape::terminal_safe_lines(&o)
}
