//! A comparison across experiments (`sysdelta compare`) in every report
//! format. `analysis::compare` builds the combined experiment; here it
//! becomes the report's view ([`ReportView`]) that every registered format
//! renders, each metric in the unit its values read best in (JSON keeps
//! the stored units, as `report` does), text fitted to 80 columns as
//! `report`'s. The comparison's warnings lead the text and markdown
//! outputs, join the analysis' warnings in JSON and CSV, and are the HTML
//! page's banner.

use anyhow::Result;

use super::escape;
use super::wrap::wrap;
use super::{markdown as markdown_format, sections, text as text_format, Format, ReportOptions};
use crate::analysis::compare::CompareView;
use crate::analysis::view::{self, Extras, ReportView, SourceExperiment};

/// What the HTML page draws besides the analysis: every picked
/// experiment's environment, the series its runs recorded, the warnings
/// as a banner.
fn extras(v: &CompareView) -> Extras {
    let c = &v.compared;
    Extras {
        sources: c
            .sources
            .iter()
            .map(|s| SourceExperiment {
                title: s.title.clone(),
                info: s.info.clone(),
                imported_from: s.imported_from.clone(),
            })
            .collect(),
        series: c.series.clone(),
        banner: c.warnings.clone(),
    }
}

/// The comparison as a report's view; `warnings_in_list` puts the
/// comparison's warnings first in the analysis' own list (JSON, CSV).
fn report_view(v: &CompareView, opts: &ReportOptions, warnings_in_list: bool) -> ReportView {
    let mut a = v.analysis.clone();
    if warnings_in_list {
        a.warnings.splice(0..0, v.compared.warnings.iter().cloned());
    }
    view::build(&v.compared.data, &a, opts.time_unit, extras(v))
}

/// Mail-ready text, 80 columns, the warnings first.
pub fn text(v: &CompareView, opts: &ReportOptions) -> String {
    let rv = report_view(v, opts, false);
    let lead: String = v
        .compared
        .warnings
        .iter()
        .map(|w| wrap(&format!("WARNING: {w}"), "  "))
        .collect();
    escape::terminal_safe_lines(&format!(
        "{lead}{}{}",
        if lead.is_empty() { "" } else { "\n" },
        text_format::fit(&text_format::render(
            &rv.shown,
            opts.detail,
            &format!(
                "{}{}",
                sections::workload_series(&rv.workload_series),
                sections::profiles(&rv.profiles, 10)
            )
        ))
    ))
}

/// Markdown, the warnings first as quoted lines.
pub fn markdown(v: &CompareView, opts: &ReportOptions) -> String {
    let rv = report_view(v, opts, false);
    let q: String = v
        .compared
        .warnings
        .iter()
        .map(|w| format!("> **WARNING:** {}\n", escape::markdown(w)))
        .collect();
    escape::terminal_safe_lines(&format!(
        "{q}{}{}",
        if q.is_empty() { "" } else { "\n" },
        markdown_format::render(&rv.shown)
    ))
}

/// The comparison in `opts.format`: text and markdown lead with its
/// warnings; the other formats are the registry's renderers of its view.
pub fn render(v: &CompareView, opts: &ReportOptions) -> Result<String> {
    Ok(match opts.format {
        Format::Text => text(v, opts),
        Format::Markdown => markdown(v, opts),
        Format::Json | Format::Csv => super::render_view(&report_view(v, opts, true), opts)?,
        _ => super::render_view(&report_view(v, opts, false), opts)?,
    })
}
