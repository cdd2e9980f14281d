//! One interface for every output format, and the one registry of them.
//!
//! A format is a type implementing [`ReportFormat`] in its own file (text,
//! markdown, json, csv, html) and one line of [`REGISTRY`]: `--format`'s
//! dispatch and every `--export-*` flag (`cli::args::ExportFlags`) are made
//! from that list, so a new format is that file, its line, and its name in
//! [`Format`].

use anyhow::Result;

use super::{Format, ReportOptions};
use crate::analysis::view::ReportView;
use crate::error::bad;

/// One output format of the reports. The comparison, history and fleet
/// views get their methods here when their views leave `report/` for
/// `analysis/` (issue 29's compare part); the lead wires them.
pub trait ReportFormat: Sync {
    /// An experiment's report (`report`, `run`, `ab`; `compare` renders
    /// its combined experiment through this too).
    fn report(&self, view: &ReportView, opts: &ReportOptions) -> Result<String>;
}

/// A format as the command line knows it.
pub struct Registered {
    pub format: Format,
    /// Its `--format` value.
    pub name: &'static str,
    /// The extension its files usually have.
    pub extension: &'static str,
    /// Its `--export-*` flag and the flag's help, or None when it is only
    /// printed (text).
    pub export: Option<(&'static str, &'static str)>,
    pub renderer: &'static dyn ReportFormat,
}

/// Every format, in the order their `--export-*` files are written.
pub const REGISTRY: &[Registered] = &[
    Registered {
        format: Format::Text,
        name: "text",
        extension: "txt",
        export: None,
        renderer: &super::text::Text,
    },
    Registered {
        format: Format::Json,
        name: "json",
        extension: "json",
        export: Some(("export-json", "Also write the report as JSON to this file")),
        renderer: &super::json::Json,
    },
    Registered {
        format: Format::Markdown,
        name: "markdown",
        extension: "md",
        export: Some((
            "export-markdown",
            "Also write the report as Markdown to this file",
        )),
        renderer: &super::markdown::Markdown,
    },
    Registered {
        format: Format::Csv,
        name: "csv",
        extension: "csv",
        export: Some(("export-csv", "Also write the report as CSV to this file")),
        renderer: &super::csv::Csv,
    },
    Registered {
        format: Format::Html,
        name: "html",
        extension: "html",
        export: Some((
            "export-html",
            "Also write the report as HTML (with its plots) to this file",
        )),
        renderer: &super::html::Html,
    },
];

/// The registry's line of `f`.
pub fn registered(f: Format) -> Result<&'static Registered> {
    REGISTRY
        .iter()
        .find(|r| r.format == f)
        .ok_or_else(|| bad(format!("format {f:?} is not registered")).into())
}

/// `view` rendered in `opts.format`.
pub fn render(view: &ReportView, opts: &ReportOptions) -> Result<String> {
    registered(opts.format)?.renderer.report(view, opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn every_format_is_registered_once_under_its_command_line_name() {
        for f in Format::value_variants() {
            let lines: Vec<_> = REGISTRY.iter().filter(|r| r.format == *f).collect();
            assert_eq!(lines.len(), 1, "{f:?}");
            let name = f.to_possible_value().unwrap();
            assert_eq!(name.get_name(), lines[0].name);
        }
        assert_eq!(REGISTRY.len(), Format::value_variants().len());
    }
}
