//! Kernel configs: runs in boots, and the boot as the unit of replication.
//!
//! A config that names a kernel runs in VMs booted for it, several runs per
//! boot. Runs of one boot share the boot's page placement, ASLR, IRQ and
//! cache layout, so they are not independent replicates of the config (per
//! boot medians of one benchmark ranged from 24 µs to 7.5 ms at 2 vCPUs,
//! docs/kernels.md A.9): counting them as such would make every CI too
//! narrow and let boot-to-boot noise pass for a kernel difference. So a cell
//! whose runs carry boot ids has one value per boot, the mean of its runs'
//! values, and everything the report computes from `Cell::values` (the
//! bootstrap, Mann-Whitney, Hodges-Lehmann, the warnings) works on boots.
//!
//! Resampling boots alone, not boots and then runs within them, is the
//! recommended scheme for two-level data: resampling the top level only is
//! nearly unbiased for the variance of the mean, while resampling at both
//! levels counts the within-boot variance twice and overstates it (Davison
//! & Hinkley 1997, "Bootstrap Methods and their Application", 3.8; Ren,
//! Lai et al. 2010, "Nonparametric bootstrapping for hierarchical data",
//! J. Applied Statistics 37(9)). A boot's mean already carries its runs'
//! noise, once.

use std::collections::HashMap;

use serde::Serialize;

use super::model::{run_value, Cell};
use crate::stats;
use crate::store::{BootStatus, ExperimentData, StoredBoot, StoredRun};

/// The warning every format gives when any guest ran under TCG.
pub const TCG_WARNING: &str =
    "guests ran under TCG (an emulated CPU): times are emulated times, not the host's";

/// The units of replication of one (config, workload) cell: one run each
/// on the host; one boot each, holding its runs in run order, when the
/// runs carry boot ids.
#[derive(Debug)]
pub(crate) struct Units<'a> {
    pub by_boot: bool,
    pub groups: Vec<Vec<&'a StoredRun>>,
}

/// Units of every (config, workload) cell.
pub(crate) type CellUnits<'a> = HashMap<(&'a str, &'a str), Units<'a>>;

/// Group a cell's successful measured runs (in run order) into its units.
/// Boots are in boot order (their ids are given out at launch). A run
/// without a boot id in a cell of boots (which the plan's rule that every
/// config or none names a kernel rules out) counts as a unit of its own.
pub(crate) fn units<'a>(runs: &[&'a StoredRun]) -> Units<'a> {
    if runs.iter().all(|r| r.boot_id.is_none()) {
        return Units {
            by_boot: false,
            groups: runs.iter().map(|r| vec![*r]).collect(),
        };
    }
    let mut groups: Vec<(i64, Vec<&StoredRun>)> = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        match r.boot_id {
            Some(b) => match groups.iter_mut().find(|(id, _)| *id == b) {
                Some((_, g)) => g.push(r),
                None => groups.push((b, vec![*r])),
            },
            None => groups.push((i64::MAX - (runs.len() - i) as i64, vec![*r])),
        }
    }
    groups.sort_by_key(|(id, _)| *id);
    Units {
        by_boot: true,
        groups: groups.into_iter().map(|(_, g)| g).collect(),
    }
}

/// One metric's cell: a value per unit (a run's value; a boot's mean of its
/// runs' values, over the runs that reported the metric), and for boots the
/// variance components of the runs grouped by boot.
pub(crate) fn cell(config: &str, units: Option<&Units>, metric: &str) -> Cell {
    let mut c = Cell {
        config: config.to_string(),
        values: Vec::new(),
        summary: None,
        boots: None,
        boot_runs: None,
        boot_share: None,
        boot_variance: None,
    };
    let Some(u) = units else {
        return c;
    };
    if !u.by_boot {
        c.values = u
            .groups
            .iter()
            .filter_map(|g| run_value(g[0], metric))
            .collect();
    } else {
        let per_boot: Vec<Vec<f64>> = u
            .groups
            .iter()
            .map(|g| g.iter().filter_map(|r| run_value(r, metric)).collect())
            .filter(|v: &Vec<f64>| !v.is_empty())
            .collect();
        c.values = per_boot
            .iter()
            .map(|v| v.iter().sum::<f64>() / v.len() as f64)
            .collect();
        let refs: Vec<&[f64]> = per_boot.iter().map(Vec::as_slice).collect();
        c.boot_variance = stats::variance::one_way(&refs);
        c.boot_share = c.boot_variance.as_ref().and_then(|v| v.between_share);
        c.boots = Some(per_boot.len());
        c.boot_runs = Some(per_boot.iter().map(Vec::len).collect());
    }
    c.summary = stats::summary::summarize(&c.values);
    c
}

/// What one independent observation is, when some cell's runs are in
/// boots (None otherwise).
pub(crate) fn unit_of_replication(units: &CellUnits, max_samples_per_run: usize) -> Option<String> {
    let most = units
        .values()
        .filter(|u| u.by_boot)
        .flat_map(|u| u.groups.iter().map(Vec::len))
        .max()?;
    let samples = if max_samples_per_run > 1 {
        format!(
            "; a run with several samples of a metric (up to {max_samples_per_run}) counts by \
             their median"
        )
    } else {
        String::new()
    };
    Some(format!(
        "the boot: runs in one boot (up to {most}) count once, by their mean{samples}"
    ))
}

/// The boots whose machine audit failed (a kexec session's): their runs
/// are stored, and left out of everything a report computes, counts as
/// ok or draws, as a run on a machine that was not as the others is no
/// sample of the same thing.
pub(crate) fn audit_failed_boots(data: &ExperimentData) -> std::collections::HashSet<i64> {
    audit_failed(&data.boots)
}

/// [`audit_failed_boots`] of these boots.
pub(crate) fn audit_failed(boots: &[StoredBoot]) -> std::collections::HashSet<i64> {
    boots
        .iter()
        .filter(|b| b.status == BootStatus::Failed)
        .filter(|b| {
            b.reason
                .as_deref()
                .is_some_and(|r| r.starts_with(crate::status::AUDIT_FAILED))
        })
        .map(|b| b.id)
        .collect()
}

/// A run the analysis counts: measured, ok, and not of a boot in `apart`
/// ([`audit_failed_boots`]).
pub(crate) fn is_counted(r: &StoredRun, apart: &std::collections::HashSet<i64>) -> bool {
    r.is_measured_ok() && !r.boot_id.is_some_and(|b| apart.contains(&b))
}

/// The measured ok runs the analysis counts, and a warning when some are
/// left out: those of a boot whose machine audit failed
/// ([`audit_failed_boots`]), stored but not counted.
pub fn counted_runs(data: &ExperimentData) -> (Vec<&StoredRun>, Option<String>) {
    let apart = audit_failed_boots(data);
    let (kept, left): (Vec<&StoredRun>, Vec<&StoredRun>) = data
        .runs
        .iter()
        .filter(|r| r.is_measured_ok())
        .partition(|r| is_counted(r, &apart));
    let warning = (!left.is_empty()).then(|| {
        format!(
            "{} left out of the analysis: {} failed the machine audit (see the boots)",
            crate::words::count(left.len(), "run"),
            crate::words::count(
                left.iter()
                    .filter_map(|r| r.boot_id)
                    .collect::<std::collections::HashSet<_>>()
                    .len(),
                "boot"
            ),
        )
    });
    (kept, warning)
}

/// Launch-to-hello times of a config's boots, seconds.
#[derive(Clone, Debug, Serialize)]
pub struct HelloTimes {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

/// A boot that failed: why, and the end of its console.
#[derive(Clone, Debug, Serialize)]
pub struct FailedBoot {
    pub id: i64,
    pub block: u32,
    pub position: u32,
    pub reason: String,
    /// The console tail as stored (the text report shows its last lines).
    pub console_tail: String,
    /// Runs the guest delivered before it failed (kept as results).
    pub runs: u32,
}

/// One config's boots.
#[derive(Clone, Debug, Serialize)]
pub struct ConfigBoots {
    pub config: String,
    pub boots: usize,
    pub ok: usize,
    pub failed: usize,
    /// Still `running`: a live experiment, or one whose sysdelta died
    /// (`--resume` marks them failed).
    pub running: usize,
    /// The guests' `uname -r` of the boots that ended ok (each checked
    /// against the config's image before any run was assigned), distinct.
    pub kernels: Vec<String>,
    /// Their online CPU counts (checked against `cpus`), distinct.
    pub cpus: Vec<u32>,
    /// `KVM` or `TCG`, distinct, over all boots.
    pub accel: Vec<String>,
    pub launch_to_hello_s: Option<HelloTimes>,
    pub failed_boots: Vec<FailedBoot>,
}

/// The boots of an experiment, per config (baseline first).
#[derive(Clone, Debug, Serialize)]
pub struct BootsReport {
    pub configs: Vec<ConfigBoots>,
    /// Every accel any boot ran under, distinct.
    pub accel: Vec<String>,
    /// True when any guest ran under TCG: its times are emulated times.
    pub tcg: bool,
    /// [`TCG_WARNING`] when `tcg`.
    pub timing_note: Option<String>,
}

fn push_distinct<T: PartialEq>(v: &mut Vec<T>, x: T) {
    if !v.contains(&x) {
        v.push(x);
    }
}

fn config_boots(config: &str, boots: &[&StoredBoot]) -> ConfigBoots {
    let mut c = ConfigBoots {
        config: config.to_string(),
        boots: boots.len(),
        ok: 0,
        failed: 0,
        running: 0,
        kernels: Vec::new(),
        cpus: Vec::new(),
        accel: Vec::new(),
        launch_to_hello_s: None,
        failed_boots: Vec::new(),
    };
    let mut hello = Vec::new();
    for b in boots {
        push_distinct(&mut c.accel, b.accel.clone());
        hello.extend(b.launch_to_hello_s.filter(|t| t.is_finite()));
        match b.status {
            BootStatus::Ok => {
                c.ok += 1;
                if let Some(u) = &b.uname {
                    push_distinct(&mut c.kernels, u.clone());
                }
                if let Some(n) = b.cpus {
                    push_distinct(&mut c.cpus, n);
                }
            }
            BootStatus::Failed => {
                c.failed += 1;
                c.failed_boots.push(FailedBoot {
                    id: b.id,
                    block: b.block,
                    position: b.position,
                    reason: b.reason.clone().unwrap_or_default(),
                    console_tail: b.console_tail.clone().unwrap_or_default(),
                    runs: b.runs,
                });
            }
            BootStatus::Running => c.running += 1,
        }
    }
    c.launch_to_hello_s = stats::summary::summarize(&hello).map(|s| HelloTimes {
        median: s.median,
        min: s.min,
        max: s.max,
    });
    c
}

/// The boots section of an experiment whose configs ran in VMs; None for
/// one that ran on the host.
pub(crate) fn report(data: &ExperimentData, configs: &[String]) -> Option<BootsReport> {
    if data.boots.is_empty() {
        return None;
    }
    let mut out = BootsReport {
        configs: Vec::new(),
        accel: Vec::new(),
        tcg: false,
        timing_note: None,
    };
    // Configs of the analysis first (baseline first), then any other a
    // boot names (none, unless the plan changed).
    let mut names: Vec<&str> = configs.iter().map(String::as_str).collect();
    for b in &data.boots {
        push_distinct(&mut names, b.config.as_str());
    }
    for name in names {
        let mine: Vec<&StoredBoot> = data.boots.iter().filter(|b| b.config == name).collect();
        out.configs.push(config_boots(name, &mine));
    }
    for b in &data.boots {
        push_distinct(&mut out.accel, b.accel.clone());
    }
    out.tcg = out.accel.iter().any(|a| a.eq_ignore_ascii_case("tcg"));
    out.timing_note = out.tcg.then(|| TCG_WARNING.to_string());
    Some(out)
}
