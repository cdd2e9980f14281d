//! One interface for every output format. A format is a type implementing
//! [`ReportFormat`] in its own file (text, markdown, json, csv, html) and
//! one line of `report::REGISTRY` (in `report/mod.rs`, which may name its
//! children: the formats use this file, so the list cannot live here).

use anyhow::Result;

use super::ReportOptions;
use crate::analysis::view::ReportView;

/// One output format of the reports. A comparison is rendered through it
/// too (`report::compare` makes its combined experiment a report's view).
/// The history and the fleet report are views of their own
/// (`analysis::history`, `analysis::fleet`) that only some formats show:
/// `report::history` (text, JSON; HTML in `html/history.rs`) and
/// `report::fleet` (text, markdown, JSON) each choose among them in one
/// `match`, where a new format that shows them is one more line.
pub trait ReportFormat: Sync {
    /// An experiment's report (`report`, `run`, `ab`; `compare` renders
    /// its combined experiment through this too).
    fn report(&self, view: &ReportView, opts: &ReportOptions) -> Result<String>;
}

#[cfg(test)]
mod tests {
    use super::super::{Format, REGISTRY};
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
