//! A metric's history across many labelled experiments, with change
//! points (`sysdelta history`).

use anyhow::Result;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::Serialize;

use super::escape::{self, terminal_safe as safe};
use super::text;
use super::wrap::wrap;
use crate::error::bad;
use crate::store::{Store, StoredMetric};

/// One experiment in a metric's history.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryPoint {
    pub id: i64,
    pub label: String,
    /// The config of this experiment the values are from.
    pub config: String,
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
    /// The config followed (`--config`); None: each experiment's baseline.
    pub config: Option<String>,
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
/// workload has it) under one config (`config`, or each experiment's
/// baseline) across experiments whose label starts with `prefix`, oldest
/// first. One config only: pooling a patched config with its baseline, or
/// an A/A control, would blur the very steps the history looks for.
pub fn history(
    store: &Store,
    metric: &str,
    prefix: &str,
    config: Option<&str>,
    alpha: f64,
) -> Result<History> {
    history_on(store, metric, prefix, config, alpha, None)
}

/// [`history`] over the experiments that ran on host `host` only
/// (`history --host`), when one is given: a fleet's hosts each have an
/// experiment of every label, and one host's history is one machine's. A
/// host no experiment ran on is bad input.
pub fn history_on(
    store: &Store,
    metric: &str,
    prefix: &str,
    config: Option<&str>,
    alpha: f64,
    host: Option<&str>,
) -> Result<History> {
    let mut exps = store.labelled(prefix)?;
    if let Some(h) = host {
        let ids = super::on_host::experiments_on(store, h)?;
        exps.retain(|(id, _)| ids.contains(id));
        if exps.is_empty() {
            return Err(bad(format!(
                "no experiment on host {} has a label starting with '{}' in {}",
                safe(h),
                safe(prefix),
                safe(&store.path().display().to_string())
            )));
        }
    }
    if exps.is_empty() {
        return Err(bad(format!(
            "no experiment has a label starting with '{}' in {}",
            safe(prefix),
            safe(&store.path().display().to_string())
        )));
    }
    // METRIC alone, or WORKLOAD/METRIC: both names may hold '/' (an `ab`
    // workload `./bench`, a Go metric `ns/op`), so the whole text is
    // matched against each stored pair rather than split at a '/'.
    let wanted = |m: &StoredMetric| {
        m.spec.name == metric || format!("{}/{}", m.workload, m.spec.name) == metric
    };
    let mut h = History {
        workload: String::new(),
        metric: metric.to_string(),
        unit: String::new(),
        direction: String::new(),
        config: config.map(str::to_string),
        points: Vec::new(),
        change_points: Vec::new(),
        skipped: Vec::new(),
        alpha,
        permutations: 999,
    };
    let mut without_config = Vec::new();
    for (id, label) in exps {
        let d = crate::analysis::overhead::reportable(&store.load(id)?);
        let cfg = config.unwrap_or(&d.info.baseline).to_string();
        if !d.info.configs.contains(&cfg) {
            without_config.push(format!("{label} (#{id})"));
            continue;
        }
        let found: Vec<&StoredMetric> = d.metrics.iter().filter(|m| wanted(m)).collect();
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
                safe(metric)
            )))
            }
        };
        if h.workload.is_empty() {
            h.workload = m.workload.clone();
            h.metric = m.spec.name.clone();
            h.unit = m.spec.unit.clone();
            h.direction = m.spec.direction.as_str().into();
        }
        let values: Vec<f64> = d
            .runs
            .iter()
            .filter(|r| r.is_measured_ok() && r.workload == m.workload && r.config == cfg)
            .filter_map(|r| {
                r.samples
                    .get(&m.spec.name)
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
            config: cfg,
            n: values.len(),
            median,
            values,
        });
    }
    if h.points.is_empty() {
        let why = match config {
            Some(c) if !without_config.is_empty() => format!(
                "; {} have no config '{}'",
                safe(&without_config.join(", ")),
                safe(c)
            ),
            _ => String::new(),
        };
        return Err(bad(format!(
            "no experiment labelled '{}*' has samples of '{}'{why}",
            safe(prefix),
            safe(metric)
        )));
    }
    h.skipped.extend(without_config);
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

/// The history as JSON (`history --format json`), terminal-safe like the
/// JSON report (see [`escape::json_text`]).
pub fn history_json(h: &History) -> Result<String> {
    Ok(escape::json_text(serde_json::to_string_pretty(h)?) + "\n")
}

/// Widest label column that keeps a row within 80 columns; a longer label
/// gets a line of its own rather than being cut (a cut label can read as
/// another one).
const LABEL_MAX: usize = 42;

/// The history as mail-ready text within 80 columns: one line per
/// experiment, change points marked between the lines where they fall, and
/// "no change found" when there is none. Labels and names are shown
/// terminal-safe.
pub fn history_text(h: &History) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    o.push_str(&wrap(
        &format!(
            "history of {}/{} ({}, {} is better), {}: {} experiments",
            safe(&h.workload),
            safe(&h.metric),
            safe(&h.unit),
            h.direction,
            config_phrase(h),
            h.points.len()
        ),
        "  ",
    ));
    let labels: Vec<String> = h.points.iter().map(|p| safe(&p.label)).collect();
    let w = labels
        .iter()
        .map(|l| l.chars().count())
        .filter(|n| *n <= LABEL_MAX)
        .max()
        .unwrap_or(0)
        .max(5);
    let _ = writeln!(
        o,
        "{:>5}  {:<w$} {:>4} {:>12} {:>10}",
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
        // A label too long for its column gets a line of its own above.
        let own_line = labels[i].chars().count() > w;
        if own_line {
            let _ = writeln!(o, "{:>5}  {}", p.id, labels[i]);
        }
        let (id, label) = if own_line {
            (String::new(), "")
        } else {
            (p.id.to_string(), labels[i].as_str())
        };
        let _ = writeln!(
            o,
            "{:>5}  {:<w$} {:>4} {:>12} {:>10}",
            id,
            label,
            p.n,
            text::fmt_num(p.median),
            vs
        );
    }
    o.push('\n');
    let found = match h.change_points.len() {
        0 => "No change found".to_string(),
        1 => "1 change point".to_string(),
        n => format!("{n} change points"),
    };
    o.push_str(&wrap(
        &format!(
            "{found} (binary segmentation of the per-experiment medians, each split kept \
             when a permutation test of {} orderings gives p < {}; a segment needs >= 5 \
             experiments before a split can reach p < 0.05, and a change with fewer \
             than 3 experiments after it is rarely found).",
            h.permutations, h.alpha
        ),
        "  ",
    ));
    if !h.skipped.is_empty() {
        o.push_str(&wrap(
            &format!(
                "Skipped (no such metric or config): {}",
                safe(&h.skipped.join(", "))
            ),
            "  ",
        ));
    }
    escape::terminal_safe_lines(&o)
}

/// Which config the history follows, in words.
pub fn config_phrase(h: &History) -> String {
    match &h.config {
        Some(c) => format!("config {}", safe(c)),
        None => {
            let mut names: Vec<&str> = h.points.iter().map(|p| p.config.as_str()).collect();
            names.dedup();
            match names.as_slice() {
                [one] => format!("config {} (the baseline)", safe(one)),
                _ => "each experiment's baseline config".to_string(),
            }
        }
    }
}
