//! The text report's header: what ran where (experiment, machine), the
//! runs, and how to read the numbers (CI, test, correction, notes).

use std::fmt::Write as _;

use super::cells::wrap;
use super::escape::ascii;
use crate::analysis::{Analysis, CiMethod, Correction};

/// The header block: what ran where, and how to read the numbers.
pub fn header(a: &Analysis) -> String {
    let mut h = machine(a);
    let by_boot = super::boots_text::by_boot(a);
    if by_boot {
        h.push_str(&super::boots_text::header_line(a));
    } else {
        h.push_str(&runs_line(a));
    }
    h.push_str(&method(a, by_boot));
    h.push_str(&notes(a, by_boot));
    h
}

/// What ran where: the experiment, the machine, its memory and clocks.
fn machine(a: &Analysis) -> String {
    let i = &a.info;
    let f = |k: &str| ascii(i.fingerprint.get(k).map(String::as_str).unwrap_or("-"));
    let mut h = String::new();
    let _ = writeln!(
        h,
        "sysdelta report: experiment {} \"{}\"{}, {}",
        i.number(),
        ascii(&i.name),
        i.label
            .as_ref()
            .map(|l| format!(" label {}", ascii(l)))
            .unwrap_or_default(),
        ascii(i.status.as_str())
    );
    let _ = writeln!(
        h,
        "started {} on {}: Linux {} ({})",
        ascii(&i.created_at),
        ascii(&i.host),
        f("kernel"),
        f("arch")
    );
    let _ = writeln!(h, "cpu: {} x {}", f("cpus_online"), f("cpu_model"));
    let _ = writeln!(
        h,
        "memory {}, swap {}, clocksource {}, governor {}",
        f("memory"),
        f("swap"),
        f("clocksource"),
        f("cpufreq_governor")
    );
    let _ = writeln!(
        h,
        "THP {}, load at start {}",
        f("thp"),
        f("loadavg_at_start")
    );
    h
}

/// The runs: per cell, warm-up, order, seed, ok and failed (host runs).
fn runs_line(a: &Analysis) -> String {
    let i = &a.info;
    // Successful measured runs per (config, workload) cell (of the table's
    // configs: a monitors-off control has no cells): the most values any
    // of the workload's metrics has there, from one pass over the metrics
    // (a scan of them per cell made a report of W workloads cost W^2).
    let mut most: std::collections::HashMap<(&str, &str), usize> = std::collections::HashMap::new();
    for m in &a.metrics {
        for x in &m.cells {
            let n = most
                .entry((x.config.as_str(), m.workload.as_str()))
                .or_default();
            *n = (*n).max(x.values.len());
        }
    }
    let most = &most;
    let counts: Vec<usize> = a
        .configs
        .iter()
        .flat_map(|c| {
            i.workloads
                .iter()
                .map(move |w| most.get(&(c.as_str(), w.as_str())).copied().unwrap_or(0))
        })
        .collect();
    let (lo, hi) = (
        counts.iter().copied().min().unwrap_or(0),
        counts.iter().copied().max().unwrap_or(0),
    );
    let per_cell = if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}-{hi}")
    };
    let adaptive = match i.overrides.until_ci {
        Some(t) => format!(" (adaptive: until every CI < {:.2}%)", t * 100.0),
        None => String::new(),
    };
    format!(
        "runs: {per_cell} per cell{}{adaptive}, {} order, seed {}; {}\n",
        if i.warmup > 0 {
            format!(" + {} warm-up", i.warmup)
        } else {
            String::new()
        },
        ascii(&i.order),
        i.seed,
        crate::words::runs_tally(a.runs_ok, a.runs_left_out, a.runs_failed)
    )
}

/// How to read the numbers: the baseline, the CI, the test and its correction.
fn method(a: &Analysis, by_boot: bool) -> String {
    let mut h = String::new();
    let method = match a.ci_method {
        CiMethod::Percentile => "percentile",
        CiMethod::Bca => "BCa",
    };
    let correction = match a.correction {
        Correction::Holm => "Holm correction",
        Correction::Bh => "Benjamini-Hochberg correction",
    };
    let text = format!(
        "Baseline {}. Values are means over {}; delta is the mean against the \
         baseline's, with its {:.0}% {method} bootstrap CI ({} resamples). A verdict \
         needs a Mann-Whitney p < {} after {correction} over {}, with \
         the mean and the rank (Hodges-Lehmann) shift pointing the same way; \
         otherwise the delta is marked ~ (within noise). The CI is widened for small \
         samples so that it keeps its level; below 5 {} a side it is Welch's t \
         interval of the log ratio.{} Unit of replication: {}.",
        ascii(&a.baseline),
        if by_boot {
            "boots (a boot's value is the mean of its runs)"
        } else {
            "runs"
        },
        a.confidence * 100.0,
        a.resamples,
        a.alpha,
        crate::words::count(a.n_comparisons, "comparison"),
        if by_boot { "boots" } else { "runs" },
        if by_boot {
            " With fewer than 8 boots a side the test is Welch's t on the boot means \
             instead of Mann-Whitney, and the mean's direction alone must agree."
        } else {
            ""
        },
        a.unit_of_replication,
    );
    h.push_str(&wrap(&text, ""));
    let chance = match a.correction {
        Correction::Holm => format!(
            "If nothing changed, {:.1} of {} would fall below p < {} by chance; \
             with the correction the chance of any false flag is at most {:.0}%.",
            a.alpha * a.n_comparisons as f64,
            crate::words::count(a.n_comparisons, "comparison"),
            a.alpha,
            a.alpha * 100.0
        ),
        Correction::Bh => format!(
            "If nothing changed, {:.1} of {} would fall below p < {} by chance; \
             with the correction at most {:.0}% of the flags are expected to be false.",
            a.alpha * a.n_comparisons as f64,
            crate::words::count(a.n_comparisons, "comparison"),
            a.alpha,
            a.alpha * 100.0
        ),
    };
    h.push_str(&wrap(&chance, ""));
    h
}

/// The notes that apply: telemetry family, detectable shift, boots, TOST.
fn notes(a: &Analysis, by_boot: bool) -> String {
    let mut h = String::new();
    if let Some(t) = crate::analysis::families::telemetry_note(
        a.n_telemetry_comparisons,
        a.correction == crate::analysis::Correction::Bh,
    ) {
        h.push_str(&wrap(&t, ""));
    }
    let mut mde: Vec<f64> = a
        .metrics
        .iter()
        .flat_map(|m| m.comparisons.iter().filter_map(|c| c.mde_pct))
        .collect();
    if !mde.is_empty() {
        mde.sort_by(|x, y| x.total_cmp(y));
        h.push_str(&wrap(
            &format!(
                "Smallest shift detectable with 80% power at the observed noise: {:.2}% to {:.2}% \
                 (median {:.2}%) over the comparisons.",
                mde[0],
                mde[mde.len() - 1],
                mde[mde.len() / 2]
            ),
            "",
        ));
    }
    if by_boot || a.boots.is_some() {
        h.push_str(&super::boots_text::header_note(a));
    }
    if let Some(m) = a.equivalence {
        h.push_str(&wrap(
            &format!(
                "Equivalence (TOST, 90% CI within +-{:.2}%): equivalent, not equiv. (CI \
                 entirely outside) or undecided.",
                m * 100.0
            ),
            "",
        ));
    }
    h
}
