//! Reports: text (mail-ready), markdown, json, csv, html.
//!
//! Every stored string goes out through [`escape`]: no format lets a name,
//! label, message or stderr tail put a control character on the terminal,
//! markup into markdown or HTML, or a formula into a spreadsheet.

pub mod boots_text;
mod cells;
pub mod compare;
pub mod csv;
pub mod detail;
pub mod escape;
pub mod fleet;
mod geomean;
pub mod history;
pub mod html;
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
use crate::error::Error;
use crate::store::ExperimentData;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Markdown,
    Json,
    Csv,
    /// One self-contained HTML file with plots (no scripts, no network).
    Html,
}

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
    let overhead = analysis::overhead::compute(data, opts);
    let data = analysis::overhead::reportable(data);
    let mut a = analysis::analyze(&data, opts).map_err(Error::into_bad_input)?;
    a.monitor_overhead = overhead;
    Ok(Analyzed { data, analysis: a })
}

pub fn render(data: &ExperimentData, opts: &ReportOptions) -> Result<String> {
    render_analyzed(&analyze(data, &opts.analysis)?, opts, None)
}

/// `x` in `opts.format`. `extras` is what HTML draws besides the analysis
/// (the series, where imported samples came from: `Extras::from_store`);
/// None takes what the data alone says.
pub fn render_analyzed(
    x: &Analyzed,
    opts: &ReportOptions,
    extras: Option<&html::Extras>,
) -> Result<String> {
    let data = &x.data;
    // JSON keeps the stored units (it carries the raw samples too); every
    // other format shows each metric in the unit its values read best in.
    let rescaled;
    let a = if opts.format == Format::Json {
        &x.analysis
    } else {
        rescaled = units::rescale(&x.analysis, opts.time_unit);
        &rescaled
    };
    Ok(match opts.format {
        Format::Text => {
            let mut extra = match opts.trim {
                Some(t) => text::trimmed_tables(a, t, opts.detail),
                None => String::new(),
            };
            extra.push_str(&sections::micro_tables(a));
            extra.push_str(&sections::workload_series(data, &a.configs));
            extra.push_str(&sections::profiles(data, &a.configs, 10));
            escape::terminal_safe_lines(&text::fit(&text::render(a, opts.detail, &extra)))
        }
        Format::Markdown => escape::terminal_safe_lines(&markdown::render(a)),
        Format::Json => json::render(data, a)?,
        Format::Csv => csv::render(a)?,
        Format::Html => match extras {
            Some(e) => html::render(data, a, e)?,
            None => html::render(data, a, &html::Extras::from_data(data))?,
        },
    })
}
