//! CSV: one row per (workload, metric, config), summary and comparison;
//! every column is listed with its unit in docs/reports.md.
//! Every cell goes through [`escape::csv_cell`]: control characters shown,
//! and a text cell starting with `=`, `+`, `-` or `@` (a formula to a
//! spreadsheet) prefixed with `'`; numbers stay numbers.

use super::escape;
use crate::analysis::{Analysis, Correction, Verdict};

/// Columns a kernel experiment adds (a host experiment's CSV has none of
/// them): `n` then counts boots, and these say how many runs they held,
/// the between-boot share of variance and its two components, the accel,
/// and the TCG note.
const BOOT_COLUMNS: [&str; 7] = [
    "boots",
    "runs",
    "boot_share",
    "var_between_boots",
    "var_within_boots",
    "accel",
    "timing_note",
];

/// The verdict as JSON spells it (`noise`, not the text report's `~`), so
/// both machine formats use one word.
fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Better => "better",
        Verdict::Worse => "worse",
        Verdict::Noise => "noise",
        Verdict::Undefined => "undefined",
    }
}

pub fn render(a: &Analysis) -> anyhow::Result<String> {
    let correction = match a.correction {
        Correction::Holm => "holm",
        Correction::Bh => "bh",
    };
    let boots = super::boots_text::by_boot(a) || a.boots.is_some();
    let (accel, note) = match &a.boots {
        Some(b) => (b.accel.join(","), b.timing_note.clone().unwrap_or_default()),
        None => (String::new(), String::new()),
    };
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec![
        "experiment",
        "workload",
        "metric",
        "unit",
        "direction",
        "config",
        "n",
        "mean",
        "median",
        "min",
        "max",
        "stddev",
        "cov",
        "trimmed_mean",
        "delta_mean_pct",
        "delta_median_pct",
        "delta_ci_low_pct",
        "delta_ci_high_pct",
        "p",
        "p_adjusted",
        "correction",
        "verdict",
        "ci_note",
    ];
    if boots {
        header.extend(BOOT_COLUMNS);
    }
    w.write_record(header)?;
    let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for m in &a.metrics {
        for (i, c) in m.cells.iter().enumerate() {
            let s = c.summary.as_ref();
            let cmp = if i == 0 {
                None
            } else {
                m.comparisons.get(i - 1)
            };
            let mut record = vec![
                a.info.id.to_string(),
                m.workload.clone(),
                m.spec.name.clone(),
                m.spec.unit.clone(),
                m.spec.direction.as_str().to_string(),
                c.config.clone(),
                s.map(|s| s.n.to_string()).unwrap_or_else(|| "0".into()),
                opt(s.map(|s| s.mean)),
                opt(s.map(|s| s.median)),
                opt(s.map(|s| s.min)),
                opt(s.map(|s| s.max)),
                opt(s.and_then(|s| s.stddev)),
                opt(s.and_then(|s| s.cov)),
                opt(s.and_then(|s| s.trimmed_mean)),
                opt(cmp.and_then(|c| c.delta_mean_pct)),
                opt(cmp.and_then(|c| c.delta_median_pct)),
                opt(cmp.and_then(|c| c.delta_ci_pct.map(|x| x.0))),
                opt(cmp.and_then(|c| c.delta_ci_pct.map(|x| x.1))),
                opt(cmp.and_then(|c| c.p)),
                opt(cmp.and_then(|c| c.p_adjusted)),
                correction.to_string(),
                cmp.map(|c| verdict_word(c.verdict).to_string())
                    .unwrap_or_else(|| "baseline".into()),
                cmp.and_then(|c| c.ci_note.clone()).unwrap_or_default(),
            ];
            if boots {
                let vc = c.boot_variance.as_ref();
                record.extend([
                    c.boots.map(|b| b.to_string()).unwrap_or_default(),
                    c.boot_runs
                        .as_ref()
                        .map(|r| r.iter().sum::<usize>().to_string())
                        .unwrap_or_default(),
                    opt(c.boot_share),
                    opt(vc.map(|v| v.between)),
                    opt(vc.map(|v| v.within)),
                    accel.clone(),
                    note.clone(),
                ]);
            }
            w.write_record(record.iter().map(|cell| escape::csv_cell(cell)))?;
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// The CSV format: one row per metric and config.
pub struct Csv;

impl super::format::ReportFormat for Csv {
    fn report(
        &self,
        v: &crate::analysis::view::ReportView,
        _: &super::ReportOptions,
    ) -> anyhow::Result<String> {
        render(&v.shown)
    }
}
