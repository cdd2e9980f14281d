//! Reports: text (mail-ready), markdown, json, csv, html.
//!
//! Every stored string goes out through [`escape`]: no format lets a name,
//! label, message or stderr tail put a control character on the terminal,
//! markup into markdown or HTML, or a formula into a spreadsheet.

pub mod benchstat;
pub mod boots_text;
pub mod brief;
mod cells;
pub mod compare;
pub mod csv;
pub mod detail;
pub mod escape;
pub mod fleet;
pub mod format;
mod geomean;
mod header;
pub mod history;
pub mod html;
pub mod hyperfine;
pub mod json;
pub mod list;
pub mod markdown;
pub mod overhead;
pub mod sections;
pub mod shell_cost;
pub mod text;
pub mod units;
mod wrap;

use anyhow::Result;

use crate::analysis;
use crate::analysis::view::{self, ExperimentData, ReportView};
use crate::error::{bad, Error};

/// The report formats. Their command-line names, help, files and
/// renderers are [`REGISTRY`]'s (`--format`'s values come from it too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Markdown,
    Json,
    Csv,
    Html,
    Hyperfine,
    Benchstat,
}

impl clap::ValueEnum for Format {
    fn value_variants<'a>() -> &'a [Self] {
        &FORMATS
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let r = REGISTRY.iter().find(|r| r.format == *self)?;
        let v = clap::builder::PossibleValue::new(r.name);
        Some(match r.help {
            Some(h) => v.help(h),
            None => v,
        })
    }
}

/// Every registered format, in the registry's order.
const FORMATS: [Format; REGISTRY.len()] = {
    let mut out = [Format::Text; REGISTRY.len()];
    let mut i = 0;
    while i < REGISTRY.len() {
        out[i] = REGISTRY[i].format;
        i += 1;
    }
    out
};

pub struct ReportOptions {
    pub format: Format,
    pub detail: bool,
    /// Print the 2007-style min/avg/max/stddev table dropping this many
    /// highest and lowest runs.
    pub trim: Option<usize>,
    pub analysis: analysis::Options,
    /// Show time metrics in this unit instead of the one their values pick.
    pub time_unit: Option<units::TimeUnit>,
}

/// An experiment's reportable data and its analysis: computed once (the
/// bootstraps are most of a report's time), rendered in as many formats
/// as are asked for.
#[derive(Clone, Debug)]
pub struct Analyzed {
    /// The data the reports show (monitor probe and control left out).
    pub data: ExperimentData,
    pub analysis: analysis::Analysis,
}

/// Analyze `data` for reports: the monitors' overhead from all of it, the
/// rest from its reportable part.
pub fn analyze(data: &ExperimentData, opts: &analysis::Options) -> Result<Analyzed> {
    analyze_owned(data.clone(), opts)
}

/// [`analyze`], taking `data` over, so that a report holds one copy of
/// its runs, not two.
pub fn analyze_owned(data: ExperimentData, opts: &analysis::Options) -> Result<Analyzed> {
    let overhead = analysis::overhead::compute(&data, opts);
    let data = analysis::overhead::into_reportable(data);
    let mut a = analysis::analyze(&data, opts).map_err(Error::into_bad_input)?;
    a.monitor_overhead = overhead;
    Ok(Analyzed { data, analysis: a })
}

pub fn render(data: &ExperimentData, opts: &ReportOptions) -> Result<String> {
    let x = analyze(data, &opts.analysis)?;
    let extras = html::Extras::from_data(&x.data);
    render_view(&x.into_view(opts.time_unit, extras), opts)
}

impl Analyzed {
    /// The report's view of `self`: every format renders it.
    pub fn into_view(self, time_unit: Option<units::TimeUnit>, extras: html::Extras) -> ReportView {
        view::from_parts(self.data, self.analysis, time_unit, extras)
    }
}

/// `v` in `opts.format` (the registry's renderer of it).
pub fn render_view(v: &ReportView, opts: &ReportOptions) -> Result<String> {
    registered(opts.format)?.renderer.report(v, opts)
}

/// A format as the command line knows it.
pub struct Registered {
    pub format: Format,
    /// Its `--format` value, and what `--help` says of it.
    pub name: &'static str,
    pub help: Option<&'static str>,
    /// The extension its files usually have.
    pub extension: &'static str,
    /// Its `--export-*` flag and the flag's help, or None when it is only
    /// printed (text).
    pub export: Option<(&'static str, &'static str)>,
    pub renderer: &'static dyn format::ReportFormat,
}

/// The formats: a new one is its file (a [`format::ReportFormat`]), its
/// line here, and its name in [`Format`]. `--format`'s dispatch and every
/// `--export-*` flag (`cli::args::ExportFlags`) are made from this list,
/// in its order.
pub const REGISTRY: &[Registered] = &[
    Registered {
        format: Format::Text,
        name: "text",
        help: None,
        extension: "txt",
        export: None,
        renderer: &text::Text,
    },
    Registered {
        format: Format::Markdown,
        name: "markdown",
        help: None,
        extension: "md",
        export: Some((
            "export-markdown",
            "Also write the report as Markdown to this file",
        )),
        renderer: &markdown::Markdown,
    },
    Registered {
        format: Format::Json,
        name: "json",
        help: None,
        extension: "json",
        export: Some(("export-json", "Also write the report as JSON to this file")),
        renderer: &json::Json,
    },
    Registered {
        format: Format::Csv,
        name: "csv",
        help: None,
        extension: "csv",
        export: Some(("export-csv", "Also write the report as CSV to this file")),
        renderer: &csv::Csv,
    },
    Registered {
        format: Format::Html,
        name: "html",
        help: Some("One self-contained HTML file with plots (no scripts, no network)"),
        extension: "html",
        export: Some((
            "export-html",
            "Also write the report as HTML (with its plots) to this file",
        )),
        renderer: &html::Html,
    },
    Registered {
        format: Format::Hyperfine,
        name: "hyperfine",
        help: Some("hyperfine's --export-json schema (wall times in s), for its scripts"),
        extension: "json",
        export: Some((
            "export-hyperfine",
            "Also write the runs' wall times in hyperfine's JSON schema to this file",
        )),
        renderer: &hyperfine::Hyperfine,
    },
    Registered {
        format: Format::Benchstat,
        name: "benchstat",
        help: Some(
            "benchstat's layout: a table per unit, a row per benchmark (--filter, --row, --col)",
        ),
        extension: "txt",
        export: Some((
            "export-benchstat",
            "Also write the report in benchstat's layout to this file",
        )),
        renderer: &benchstat::Benchstat,
    },
];

/// The registry's line of `f`.
pub fn registered(f: Format) -> Result<&'static Registered> {
    REGISTRY
        .iter()
        .find(|r| r.format == f)
        .ok_or_else(|| bad(format!("format {f:?} is not registered")))
}
