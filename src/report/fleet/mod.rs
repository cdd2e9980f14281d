//! The fleet report (one plan's experiments on several hosts, analysed by
//! `analysis::fleet`) in text (80 columns), markdown and JSON.

use std::fmt::Write as _;

use anyhow::Result;

use super::cells::{clip, delta_cell, fmt_num, fmt_pct, fmt_pct_bare, WIDTH};
use super::escape::{self, ascii};
use super::{units, Format, ReportOptions};
use crate::analysis;
use crate::error::bad;
use crate::status::ExperimentStatus;

pub use crate::analysis::fleet::{
    Fleet, FleetComparison, FleetHost, HostExperiment, HostRow, CONFOUNDERS,
};

mod words;

/// The fleet of `hosts` in `opts.format` (text, markdown or JSON),
/// analysed and rendered at once.
pub fn render(hosts: &[HostExperiment], opts: &ReportOptions) -> Result<String> {
    check_format(opts.format)?;
    render_analyzed(&analysis::fleet::analyze(hosts, &opts.analysis)?, opts)
}

/// A fleet report has no CSV or HTML form: bad input, said before
/// anything is written.
pub fn check_format(f: Format) -> Result<()> {
    match f {
        Format::Text | Format::Markdown | Format::Json => Ok(()),
        Format::Csv | Format::Html | Format::Hyperfine | Format::Benchstat => Err(bad(
            "a fleet report is text, markdown or json (each host's own report has the other formats)",
        )),
    }
}

/// An analysed fleet in `opts.format`.
pub fn render_analyzed(f: &Fleet, opts: &ReportOptions) -> Result<String> {
    check_format(opts.format)?;
    Ok(match opts.format {
        Format::Text => text(f, opts),
        Format::Markdown => markdown(f, opts),
        _ => json(f)?,
    })
}

/// Mail-ready text within 80 columns, in the units the values read best in.
pub fn text(f: &Fleet, opts: &ReportOptions) -> String {
    escape::terminal_safe_lines(&super::text::fit(&words::text(f, opts)))
}

/// Markdown, in the units the values read best in.
pub fn markdown(f: &Fleet, opts: &ReportOptions) -> String {
    escape::terminal_safe_lines(&words::markdown(f, opts))
}

/// JSON: the [`Fleet`] as it is (stored units), terminal-safe.
pub fn json(f: &Fleet) -> Result<String> {
    let mut v = serde_json::to_value(f)?;
    v["format"] = "sysdelta-fleet-report-1".into();
    Ok(escape::json_text(serde_json::to_string_pretty(&v)?) + "\n")
}
