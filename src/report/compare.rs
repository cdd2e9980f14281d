//! A comparison across experiments (`sysdelta compare`) in every report
//! format, from the view `analysis::compare` builds: each metric in the
//! unit its values read best in (JSON keeps the stored units, as `report`
//! does), text fitted to 80 columns as `report`'s. The comparison's
//! warnings lead the text and markdown outputs and join the analysis'
//! warnings in JSON and CSV.

use anyhow::Result;

use super::escape;
use super::wrap::wrap;
use super::{csv as csv_format, html as html_format, json as json_format};
use super::{markdown as markdown_format, sections, text as text_format, Format, ReportOptions};
use crate::analysis::compare::CompareView;
use crate::analysis::Analysis;

/// The analysis in the units a reader sees (every format but JSON).
fn rescaled(v: &CompareView, opts: &ReportOptions) -> Analysis {
    super::units::rescale(&v.analysis, opts.time_unit)
}

/// The analysis with the comparison's warnings first (JSON and CSV carry
/// them in the analysis' list; text and markdown lead with them instead).
fn with_warnings(v: &CompareView, mut a: Analysis) -> Analysis {
    a.warnings.splice(0..0, v.compared.warnings.iter().cloned());
    a
}

/// Mail-ready text, 80 columns, the warnings first.
pub fn text(v: &CompareView, opts: &ReportOptions) -> String {
    let a = rescaled(v, opts);
    let c = &v.compared;
    let lead: String = c
        .warnings
        .iter()
        .map(|w| wrap(&format!("WARNING: {w}"), "  "))
        .collect();
    escape::terminal_safe_lines(&format!(
        "{lead}{}{}",
        if lead.is_empty() { "" } else { "\n" },
        text_format::fit(&text_format::render(
            &a,
            opts.detail,
            &format!(
                "{}{}",
                sections::workload_series(&c.data, &a.configs),
                sections::profiles(&c.data, &a.configs, 10)
            )
        ))
    ))
}

/// Markdown, the warnings first as quoted lines.
pub fn markdown(v: &CompareView, opts: &ReportOptions) -> String {
    let a = rescaled(v, opts);
    let q: String = v
        .compared
        .warnings
        .iter()
        .map(|w| format!("> **WARNING:** {}\n", escape::markdown(w)))
        .collect();
    escape::terminal_safe_lines(&format!(
        "{q}{}{}",
        if q.is_empty() { "" } else { "\n" },
        markdown_format::render(&a)
    ))
}

/// JSON in stored units, with every raw sample.
pub fn json(v: &CompareView) -> Result<String> {
    let a = with_warnings(v, v.analysis.clone());
    json_format::render(&v.compared.data, &a)
}

/// CSV, in the units the other formats show.
pub fn csv(v: &CompareView, opts: &ReportOptions) -> Result<String> {
    csv_format::render(&with_warnings(v, rescaled(v, opts)))
}

/// One self-contained HTML page: every picked experiment's environment,
/// the series its runs recorded, the warnings as a banner.
pub fn html(v: &CompareView, opts: &ReportOptions) -> Result<String> {
    let c = &v.compared;
    let extras = html_format::Extras {
        sources: c
            .sources
            .iter()
            .map(|s| html_format::SourceExperiment {
                title: s.title.clone(),
                info: s.info.clone(),
                imported_from: s.imported_from.clone(),
            })
            .collect(),
        series: c.series.clone(),
        banner: c.warnings.clone(),
    };
    html_format::render(&c.data, &rescaled(v, opts), &extras)
}

/// The comparison in `opts.format`.
pub fn render(v: &CompareView, opts: &ReportOptions) -> Result<String> {
    Ok(match opts.format {
        Format::Text => text(v, opts),
        Format::Markdown => markdown(v, opts),
        Format::Json => json(v)?,
        Format::Csv => csv(v, opts)?,
        Format::Html => html(v, opts)?,
    })
}
