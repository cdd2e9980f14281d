//! Whether a plan's units per config can ever give a verdict, said before
//! anything runs.
//!
//! The report warns afterwards when a comparison's test could never have
//! rejected (`analysis::warnings`); by then the runs, or the boots of a
//! kernel plan, have been paid for. The same rule is applied here to the
//! plan as written, so a plan that can never flag anything is named before
//! its first run (`examples/kernels.toml --quick` once made 3 boots a
//! config and took 17 minutes to flag nothing).
//!
//! The rule is the report's (docs/statistics.md): runs are tested with the
//! Mann-Whitney U test, whose smallest two-sided p is 2 / C(2n, n) with n a
//! side (0.1 at 3), and Holm's strictest step multiplies it by the
//! headline family's size; boots are tested with Welch's t on boot means
//! below 8 a side (no floor on p: any 2 boots a side can reach a verdict)
//! and with the U test from 8. Fewer than 2 units a side allow no test.

use super::model::{Plan, WorkloadKind};
use crate::stats;

/// The warning line for `plan` at significance `alpha`, or None when the
/// report's test can reach alpha with the plan's units per config.
///
/// The family is counted from the workloads' declared metrics times the
/// configs compared with the baseline (the monitor-overhead control and
/// probe are not in it, as in the report). Metrics a config kind adds
/// are not counted, and a metric that a config does not report would
/// leave the family, so the report's own family may differ a little; its
/// warning says the final word. Plans whose run count adapts (`--until`,
/// `--min-time`) are not judged: their runs grow as they go.
pub fn warning(plan: &Plan, alpha: f64) -> Option<String> {
    let adaptive =
        plan.overrides.until_ci.is_some() || plan.overrides.min_time.is_some_and(|t| t > 0.0);
    if adaptive && !plan.has_kernels() {
        return None;
    }
    let (n, unit) = units_per_config(plan);
    let compared = compared_configs(plan);
    if compared == 0 {
        return None;
    }
    let family = compared * headline_metrics(plan);
    let by_boot = unit == "boots";
    if n >= 2 && !unreachable(n, by_boot, alpha, family) {
        return None;
    }
    // The fewest units per config that can reach alpha, to say what to do
    // (a bounded search: each step is one U test of 2m values).
    let enough = (n.max(1) + 1..)
        .take(1000)
        .find(|&m| !unreachable(m, by_boot, alpha, family));
    let add = match enough {
        Some(m) => format!("{m} {unit} per config can"),
        None => format!("add {unit}"),
    };
    if n < 2 {
        return Some(format!(
            "{n} {} per config: no test is possible with fewer than 2 a side, so no difference \
             can be flagged; {add}",
            singular(unit, n)
        ));
    }
    let p = stats::detect::min_achievable_p(n, n).unwrap_or(1.0);
    Some(format!(
        "{n} {unit} per config: the smallest possible p-value is {}, above alpha {alpha} after \
         correction over {family} comparisons, so no difference can be flagged; {add}",
        p_text(p)
    ))
}

/// Units per config the report tests: boots for a kernel plan, else the
/// measured runs per (config, workload).
fn units_per_config(plan: &Plan) -> (usize, &'static str) {
    if plan.has_kernels() {
        (plan.boots as usize, "boots")
    } else {
        (plan.runs as usize, "runs")
    }
}

/// True when even completely separated sides give a p above alpha after
/// the correction: the report's own rule (the U test, or Welch's t below
/// 8 boots a side, which has no floor).
fn unreachable(n: usize, by_boot: bool, alpha: f64, family: usize) -> bool {
    !stats::welch::boot_level_uses_welch(by_boot, n, n)
        && stats::detect::too_few_runs(n, n, alpha, family)
}

/// The plan's configs compared with its baseline (not the baseline, not
/// the monitors-off control the plan may have added).
fn compared_configs(plan: &Plan) -> usize {
    plan.configs
        .iter()
        .filter(|c| !c.name.ends_with(crate::monitor::control::CONTROL_SUFFIX))
        .count()
        .saturating_sub(1)
}

/// The headline metrics of the plan's workloads (not the monitor probe's,
/// not telemetry), each at least one.
fn headline_metrics(plan: &Plan) -> usize {
    plan.workloads
        .iter()
        .filter(|w| w.name != crate::monitor::control::PROBE_WORKLOAD)
        .map(|w| match &w.kind {
            WorkloadKind::Command { metrics, .. } => {
                crate::workload::command::TIMING_METRICS.len() + metrics.len()
            }
            // Built without side effects, as the plan's validation builds it.
            WorkloadKind::Builtin { name, params } => {
                crate::builtins::build(name, params, &Default::default())
                    .map(|w| {
                        w.metrics()
                            .iter()
                            .filter(|s| !crate::monitor::is_telemetry_metric(&s.name))
                            .count()
                    })
                    .unwrap_or(1)
                    .max(1)
            }
        })
        .sum()
}

fn singular(unit: &str, n: usize) -> &str {
    if n == 1 {
        unit.trim_end_matches('s')
    } else {
        unit
    }
}

/// A p-value in plain decimals as the report's warning writes it: three
/// significant digits, no `e` notation.
fn p_text(p: f64) -> String {
    if p.is_nan() || p <= 0.0 || p >= 0.1 {
        format!("{p:.3}")
    } else {
        let decimals = (-p.log10()).ceil() as usize + 2;
        format!("{p:.decimals$}")
    }
}
