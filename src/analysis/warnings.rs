//! The report's warnings about the data: what a reader needs to know
//! before trusting the table.

use std::collections::BTreeMap;

use super::model::{MetricAnalysis, NOT_ESTIMABLE};
use crate::stats;
use crate::store::StoredRun;

/// One warning counting the measured runs kept as results although their
/// command exited with a non-zero status (`-i`, as hyperfine warns): their
/// times are a failing command's, which a reader must know before trusting
/// them (the README's own `grep -q x FILE` failed every run silently).
/// `counted` are the runs the analysis counts (`boots::counted_runs`):
/// those of a boot that failed its machine audit are left out here too, so
/// "N of M measured runs" never counts runs the header calls left out.
pub(super) fn exit_status_warnings(counted: &[&StoredRun]) -> Vec<String> {
    // (config, workload) -> (runs that exited non-zero, their statuses).
    let mut cells: BTreeMap<(&str, &str), (usize, Vec<i32>)> = BTreeMap::new();
    let measured = counted.len();
    for r in counted {
        if let Some(code) = r.exit_code.filter(|c| *c != 0) {
            let cell = cells.entry((&r.config, &r.workload)).or_default();
            cell.0 += 1;
            if !cell.1.contains(&code) {
                cell.1.push(code);
            }
        }
    }
    let nonzero: usize = cells.values().map(|(n, _)| n).sum();
    if nonzero == 0 {
        return Vec::new();
    }
    let items = cells
        .into_iter()
        .map(|((c, w), (n, mut codes))| {
            codes.sort_unstable();
            let codes: Vec<String> = codes.iter().map(i32::to_string).collect();
            let s = if codes.len() == 1 { "" } else { "es" };
            format!("{c}/{w}: {n} (exit status{s} {})", codes.join(", "))
        })
        .collect();
    let mut out = Vec::new();
    push_grouped(
        &mut out,
        &format!(
            "{nonzero} of {measured} measured runs exited with a non-zero status and were kept \
             as results (-i, --ignore-failure): their times are those of a failing command"
        ),
        items,
    );
    out
}

/// One warning line listing the comparisons whose CI is not estimable, with
/// the reason of each (the table marks them "not estimable").
pub(super) fn ci_warnings(metrics: &[MetricAnalysis]) -> Vec<String> {
    let mut items = Vec::new();
    for m in metrics {
        for c in &m.comparisons {
            if let Some(why) = c
                .ci_note
                .as_deref()
                .and_then(|n| n.strip_prefix(NOT_ESTIMABLE))
            {
                items.push(format!(
                    "{}/{} in {}{}",
                    m.workload, m.spec.name, c.config, why
                ));
            }
        }
    }
    let mut out = Vec::new();
    push_grouped(
        &mut out,
        "CI of the ratio of means not estimable (marked in the table, no verdict)",
        items,
    );
    out
}

/// Most warnings of one kind listed before "... and N more".
const WARNINGS_PER_KIND: usize = 5;

fn push_grouped(out: &mut Vec<String>, what: &str, items: Vec<String>) {
    if items.is_empty() {
        return;
    }
    let more = items.len().saturating_sub(WARNINGS_PER_KIND);
    let mut line = format!(
        "{what}: {}",
        items
            .into_iter()
            .take(WARNINGS_PER_KIND)
            .collect::<Vec<_>>()
            .join("; ")
    );
    if more > 0 {
        line.push_str(&format!("; and {more} more"));
    }
    out.push(line);
}

/// What a reader needs to know before trusting the table: comparisons that
/// can never reject at these run counts, bimodal cells, drift within a
/// config's runs (what interleaving protects the comparison from, but which
/// still widens it), and outliers by MAD. None are looked for where no
/// output shows them (`opts.full` false).
pub(super) fn data_warnings(
    metrics: &[MetricAnalysis],
    configs: &[String],
    family: usize,
    telemetry_family: usize,
    opts: &super::Options,
) -> Vec<String> {
    let mut out = Vec::new();
    if !opts.full {
        return out;
    }
    let alpha = opts.alpha;
    // (n0, n, unit, telemetry): telemetry is corrected over its own family.
    let mut too_few: Vec<(usize, usize, &str, bool)> = Vec::new();
    let (mut bimodal, mut drift, mut outliers) = (Vec::new(), Vec::new(), Vec::new());
    let mut boot_drift = Vec::new();
    for m in metrics {
        // Runs in boots count by boot: the tests see one value per boot.
        let unit = if m.cells.iter().any(|c| c.boots.is_some()) {
            "boots"
        } else {
            "runs"
        };
        let n0 = m.cells[0].values.len();
        let tele = crate::monitor::is_telemetry_metric(&m.spec.name);
        let fam = if tele { telemetry_family } else { family };
        for c in m.cells.iter().skip(1) {
            let n = c.values.len();
            // Below 8 boots a side the boot level is tested by Welch's t,
            // which has no floor on its p-value: the U test's floor does
            // not apply there.
            let welch = stats::welch::boot_level_uses_welch(unit == "boots", n0, n);
            if n0 >= 2
                && n >= 2
                && !welch
                && stats::detect::too_few_runs(n0, n, alpha, fam)
                && !too_few.contains(&(n0, n, unit, tele))
            {
                too_few.push((n0, n, unit, tele));
            }
        }
        for (ci, c) in m.cells.iter().enumerate() {
            let name = format!("{}/{} in {}", m.workload, m.spec.name, configs[ci]);
            if stats::detect::looks_bimodal(&c.values) {
                let bc = stats::detect::bimodality_coefficient(&c.values).unwrap_or(f64::NAN);
                bimodal.push(format!("{name} (BC {bc:.2})"));
            }
            let by_boot = c.boots.is_some();
            // From 6 values on Mann-Kendall can reach p < 0.01 (a boot cell
            // has few, and the default of 6 boots must be checked); runs
            // keep the threshold of 8 they always had.
            if c.values.len() >= if by_boot { 6 } else { 8 } {
                // Mann-Kendall is O(n^2): long cells are tested on the
                // medians of at most 200 consecutive bins of runs.
                let bins = c.values.len().div_ceil(200);
                let series: Vec<f64> = c
                    .values
                    .chunks(bins)
                    .filter_map(stats::summary::median)
                    .collect();
                if let Some(mk) = crate::series::mannkendall::mann_kendall(&series) {
                    if mk.p < 0.01 {
                        let dir = if mk.s > 0.0 { "rising" } else { "falling" };
                        let (list, order) = if by_boot {
                            (&mut boot_drift, "boot")
                        } else {
                            (&mut drift, "run")
                        };
                        list.push(format!(
                            "{name} {dir} over {order} order (Mann-Kendall p {})",
                            if mk.p < 1e-3 {
                                "< 0.001".to_string()
                            } else {
                                format!("{:.3}", mk.p)
                            }
                        ));
                    }
                }
            }
            let o = if c.values.len() >= 8 {
                stats::detect::mad_outliers(&c.values)
            } else {
                Vec::new()
            };
            if !o.is_empty() {
                let of = if by_boot { " boots" } else { "" };
                outliers.push(format!("{name}: {} of {}{of}", o.len(), c.values.len()));
            }
        }
    }
    for (a, b, unit, tele) in too_few {
        let p = stats::detect::min_achievable_p(a, b).unwrap_or(1.0);
        let (what, fam) = if tele {
            (" of telemetry", telemetry_family)
        } else {
            ("", family)
        };
        out.push(format!(
            "{a} vs {b} {unit}{what}: the smallest possible p-value is {}, above alpha {alpha} after \
             correction over {fam} comparisons, so no difference can be flagged; add {unit}",
            p_text(p)
        ));
    }
    push_grouped(
        &mut out,
        "bimodal samples (bimodality coefficient > 0.555)",
        bimodal,
    );
    push_grouped(&mut out, "drift within a config's runs", drift);
    push_grouped(&mut out, "drift across a config's boots", boot_drift);
    push_grouped(
        &mut out,
        "outliers by MAD (|x - median| > 3.5 x 1.4826 MAD)",
        outliers,
    );
    out
}

/// A p-value in plain decimals (no `e` notation in a report): three
/// significant digits.
fn p_text(p: f64) -> String {
    if p.is_nan() || p <= 0.0 || p >= 0.1 {
        format!("{p:.3}")
    } else {
        let decimals = (-p.log10()).ceil() as usize + 2;
        format!("{p:.decimals$}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::RunStatus;

    fn run(config: &str, warmup: bool, status: RunStatus, exit_code: Option<i32>) -> StoredRun {
        StoredRun {
            warmup,
            status,
            exit_code,
            ..StoredRun::ok(0, 0, 0, config, "w", Default::default())
        }
    }

    #[test]
    fn only_measured_ok_runs_that_exited_non_zero_count() {
        let ok = RunStatus::Ok;
        let runs = [
            run("a", false, ok, Some(1)),
            run("a", false, ok, Some(2)),
            run("a", true, ok, Some(1)),
            run("a", false, RunStatus::Failed, Some(1)),
            run("b", false, ok, Some(0)),
            run("b", false, ok, None),
        ];
        // As analyze gives them: what boots::counted_runs keeps.
        let apart = Default::default();
        let counted: Vec<&StoredRun> = runs
            .iter()
            .filter(|r| crate::analysis::boots::is_counted(r, &apart))
            .collect();
        let w = exit_status_warnings(&counted);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("2 of 4 measured runs exited with a non-zero status"),
            "{w:?}"
        );
        assert!(w[0].ends_with(": a/w: 2 (exit statuses 1, 2)"), "{w:?}");
        assert!(exit_status_warnings(&counted[2..]).is_empty());
    }
}
