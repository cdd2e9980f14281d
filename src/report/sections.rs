//! Text sections that appear when an experiment recorded them: kernel
//! profiles per config (the 2001 and 2002 postings' evidence), and time
//! series side by side with their trend flags (the 2001 SAP table).

use super::escape::ascii;
use crate::analysis::view::micro::MicroRow;
use crate::analysis::view::sections::WorkloadSeries;
use crate::monitor::profile::{print_diff_labeled, print_top, Profile};
use crate::series::table::print_side_by_side_with;

/// Top symbols per config, then each config's differential view against
/// the baseline (the first config). Empty when no profile was recorded.
pub fn profiles(per_config: &[(String, Profile)], top: usize) -> String {
    if per_config.is_empty() {
        return String::new();
    }
    let mut out = Vec::new();
    out.extend_from_slice(
        format!(
            "Profile: top {top} symbols by samples over all measured runs ([k] kernel, [u] user)\n"
        )
        .as_bytes(),
    );
    for (c, p) in per_config {
        out.extend_from_slice(format!("\n{}:\n", ascii(c)).as_bytes());
        let _ = print_top(p, top, &mut out);
    }
    let base = &per_config[0];
    for (c, p) in per_config.iter().skip(1) {
        out.extend_from_slice(
            format!("\nShare changes, {} -> {}:\n", ascii(&base.0), ascii(c)).as_bytes(),
        );
        let _ = print_diff_labeled(&ascii(&base.0), &base.1, &ascii(c), p, top, &mut out);
    }
    out.push(b'\n');
    String::from_utf8_lossy(&out).into_owned()
}

/// Series a workload reported as metrics (not monitor telemetry), per
/// config side by side: the per-interval median over measured runs, its
/// trend flag, and the asymptotic level's ratio to the baseline.
pub fn workload_series(all: &[WorkloadSeries]) -> String {
    let mut out = Vec::new();
    for s in all {
        let cols: Vec<(String, Vec<f64>)> = s
            .columns
            .iter()
            .map(|(c, n, v)| (format!("{} (n={n})", ascii(c)), v.clone()))
            .collect();
        out.extend_from_slice(
            format!(
                "Time series: {} / {} ({}) per {} s interval, median over runs\n",
                ascii(&s.workload),
                ascii(&s.name),
                ascii(&s.unit),
                s.interval
            )
            .as_bytes(),
        );
        let _ = print_side_by_side_with(&cols, s.interval, "s", &mut out);
        out.push(b'\n');
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// For metrics of the built-in micro suite: the LMbench 2.0 summary tables
/// with one row per config (its mean over runs) and a delta row under each
/// non-baseline config. The verdicts and CIs are in the main table above.
/// `rows` hold each figure in the unit its table's heading names
/// (`analysis::view::micro`), never the main table's display unit.
pub fn micro_tables(rows: &[MicroRow]) -> String {
    use crate::micro::{pin::Pinning, MicroResult};
    if rows.is_empty() {
        return String::new();
    }
    let rows: Vec<(String, Vec<MicroResult>)> = rows
        .iter()
        .map(|r| {
            let results = r
                .cells
                .iter()
                .map(|m| MicroResult {
                    group: String::new(),
                    name: m.name.clone(),
                    column: String::new(),
                    unit: m.unit.clone(),
                    direction: m.direction,
                    pinning: Pinning::Unpinned,
                    samples: m.samples.clone(),
                    median: m.mean,
                    detail: String::new(),
                })
                .collect();
            (ascii(&r.config), results)
        })
        .collect();
    let mut out = Vec::new();
    let _ = crate::micro::table::print_lmbench_tables(&rows, rows.len() > 1, &mut out);
    out.push(b'\n');
    String::from_utf8_lossy(&out).into_owned()
}
