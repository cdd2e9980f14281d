//! What the shell costs against the commands it starts: the runner times
//! `SHELL -c ''` after each run of a command workload that uses a shell
//! (`runner::shell_cost`) and stores the samples as events; here they
//! become one line per config and shell, with each workload's share, and
//! a warning where the shell is a large part of what was measured. The
//! runs keep the shell's time (nothing is subtracted); `-N` or
//! `shell = "none"` measures the command alone.

use serde::{Deserialize, Serialize};

use crate::store::{Event, ExperimentData, StoredRun};

/// The event kind the samples are stored under.
pub const EVENT_KIND: &str = "shell_startup";

/// A share of a workload's median wall time above which the report warns.
pub const WARN_SHARE: f64 = 0.10;

/// One event's message: a config's samples of one shell.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Samples {
    pub config: String,
    pub shell: String,
    pub workloads: Vec<String>,
    pub samples_s: Vec<f64>,
}

/// The shell's start-up in one config.
#[derive(Clone, Debug, Serialize)]
pub struct ShellStartup {
    pub config: String,
    pub shell: String,
    pub n: usize,
    pub median_s: f64,
    pub workloads: Vec<Share>,
}

/// The start-up against one workload's median wall time in that config.
#[derive(Clone, Debug, Serialize)]
pub struct Share {
    pub workload: String,
    pub wall_median_s: f64,
    /// median start-up / median wall.
    pub share: f64,
}

pub fn is_event(e: &Event) -> bool {
    e.kind == EVENT_KIND
}

/// A stored event's samples if they are `config`'s, as `name`'s (a
/// comparison across experiments renames the config it picks).
pub fn renamed(message: &str, config: &str, name: &str) -> Option<String> {
    let mut s: Samples = serde_json::from_str(message).ok()?;
    if s.config != config {
        return None;
    }
    s.config = name.to_string();
    serde_json::to_string(&s).ok()
}

/// The start-up per config (of `configs`, in their order) and shell, and
/// the warnings; samples of one config and shell stored by several
/// sessions (`--resume`) are pooled. The workloads' wall times are those of
/// `counted`, the runs the analysis counts (`boots::counted_runs`: not a
/// boot's that failed its machine audit), so a share is of the median the
/// table shows.
pub fn compute(
    data: &ExperimentData,
    counted: &[&StoredRun],
    configs: &[String],
) -> (Vec<ShellStartup>, Vec<String>) {
    let mut pooled: Vec<Samples> = Vec::new();
    for e in data.events.iter().filter(|e| is_event(e)) {
        let Ok(s) = serde_json::from_str::<Samples>(&e.message) else {
            continue;
        };
        match pooled
            .iter_mut()
            .find(|p| p.config == s.config && p.shell == s.shell)
        {
            Some(p) => {
                p.samples_s.extend(s.samples_s);
                for w in s.workloads {
                    if !p.workloads.contains(&w) {
                        p.workloads.push(w);
                    }
                }
            }
            None => pooled.push(s),
        }
    }
    // Each cell's wall times, in run order, gathered once (a scan of every
    // run per cell made W workloads cost W^2).
    let mut walls_of: std::collections::HashMap<(&str, &str), Vec<f64>> =
        std::collections::HashMap::new();
    for r in counted {
        if let Some(w) = r.samples.get("wall").and_then(|v| v.first().copied()) {
            walls_of
                .entry((r.config.as_str(), r.workload.as_str()))
                .or_default()
                .push(w);
        }
    }
    let mut out = Vec::new();
    // Workloads where the shell is a large share, with where.
    let mut large: Vec<(String, Vec<String>)> = Vec::new();
    for c in configs {
        for s in pooled.iter().filter(|s| s.config == *c) {
            let Some(median_s) = crate::stats::summary::median(&s.samples_s) else {
                continue;
            };
            let mut shares = Vec::new();
            for w in &s.workloads {
                let walls = walls_of
                    .get(&(c.as_str(), w.as_str()))
                    .map_or(&[][..], Vec::as_slice);
                let Some(wall) = crate::stats::summary::median(walls).filter(|m| *m > 0.0) else {
                    continue;
                };
                let share = median_s / wall;
                if share > WARN_SHARE {
                    let at = format!("{:.0}% under {c}", share * 100.0);
                    match large.iter_mut().find(|(lw, _)| lw == w) {
                        Some((_, list)) => list.push(at),
                        None => large.push((w.clone(), vec![at])),
                    }
                }
                shares.push(Share {
                    workload: w.clone(),
                    wall_median_s: wall,
                    share,
                });
            }
            out.push(ShellStartup {
                config: c.clone(),
                shell: s.shell.clone(),
                n: s.samples_s.len(),
                median_s,
                workloads: shares,
            });
        }
    }
    let warnings = large
        .into_iter()
        .map(|(w, at)| {
            format!(
                "{w}: starting the shell takes {} of the median wall time; run it without a \
                 shell (ab -N, shell = \"none\") to measure the command alone",
                at.join(", ")
            )
        })
        .collect();
    (out, warnings)
}
