//! `sysdelta import`: hyperfine JSON, Go benchmark output or LMbench 3
//! results, checked whole, then stored as one experiment.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::args::{report_options, ReportFlags};
use super::report::{
    check_exports, gate_code, outputs, render_stored, render_unstored, write_and_end,
};
use crate::error::Error;
use crate::import;
use crate::store::Store;

/// The formats `import` takes, from the importers' registry, each with
/// its line of help.
fn formats() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        import::IMPORTERS
            .iter()
            .map(|i| clap::builder::PossibleValue::new(i.name).help(i.help)),
    )
}

#[derive(Args)]
pub struct ImportArgs {
    /// What the files hold.
    #[arg(value_name = "TOOL", value_parser = formats())]
    pub what: String,
    /// The files to import.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Label the experiment (for `compare` and `history`).
    #[arg(long)]
    pub label: Option<String>,
    /// hyperfine: the workload name of the imported `wall` metric.
    #[arg(long, default_value = "hyperfine")]
    pub workload: String,
    /// Then print the new experiment's report, as `sysdelta report` with
    /// the options below would (stdout is the report; the id is on the
    /// line on stderr): one command for a CI job, `--fail-on` included.
    #[arg(long)]
    pub report: bool,
    /// With --report: judge the files without keeping them, as benchstat
    /// does: no store is opened, made or written; the report names no
    /// experiment.
    #[arg(long, requires = "report")]
    pub no_store: bool,
    #[command(flatten, next_help_heading = "Report options (with --report)")]
    pub flags: ReportFlags,
}

/// `import`'s command as clap builds it, with each report option
/// ([`ReportFlags`]) needing `--report`: they would otherwise be taken
/// and ignored.
pub fn report_needs_flag(cmd: clap::Command) -> clap::Command {
    use clap::Args as _;
    let flags = ReportFlags::augment_args(clap::Command::new("report"));
    let ids: Vec<String> = (flags.get_arguments())
        .map(|a| a.get_id().to_string())
        .collect();
    ids.iter()
        .fold(cmd, |c, id| c.mut_arg(id, |a| a.requires("report")))
}

/// `sysdelta import`; prints the new experiment's id, or with `--report`
/// its report (exit status 3 when `--fail-on`'s gate fails).
pub fn run(a: &ImportArgs, store_path: &Path) -> Result<ExitCode> {
    // Report options that cannot work are refused before anything is
    // stored: an export's directory, benchstat's layout.
    if a.report {
        check_exports(&a.flags)?;
        a.flags.benchstat.layout()?;
        report_options(&a.flags)?;
    }
    let mut files = Vec::new();
    for f in &a.files {
        files.push((f.display().to_string(), import::read(f)?));
    }
    let importer = import::find(&a.what).expect("clap takes only registered formats");
    let options = import::ImportOptions {
        workload: &a.workload,
    };
    let imp = (importer.parse)(&files, &options).map_err(Error::into_bad_input)?;
    if a.report {
        fits(&a.flags, &imp)?;
    }
    let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
    let (label, source) = (a.label.as_deref(), names.join(", "));
    if a.no_store {
        let note = import::source_note(&imp, &source);
        let data = import::unstored(imp, label, &source)?;
        return write_and_end(render_unstored(data, note, &a.flags)?).map(gate_code);
    }
    let store = Store::open(store_path, true)?;
    let say = |id: i64| {
        crate::sys::stderr::say!(
            "sysdelta: imported {} of {} as experiment {id} in {}",
            crate::words::count(imp.runs.len(), "run"),
            crate::words::count(imp.configs.len(), "config"),
            store_path.display()
        )
    };
    if !a.report {
        let id = import::store(&store, &imp, label, &source)?;
        say(id);
        println!("{id}");
        return Ok(ExitCode::SUCCESS);
    }
    // The runs just written are reported as they are, not read back, and
    // the report is made before they are committed: a report option that
    // fits no result stores nothing.
    let (id, rendered) = import::store_reported(&store, &imp, label, &source, |store, data| {
        Ok((data.info.id, render_stored(store, data, &a.flags)?))
    })?;
    say(id);
    drop(imp);
    write_and_end(rendered).map(gate_code)
}

/// Refuse, before a store is opened, report options that fit none of the
/// parsed results: a `--baseline` that is no config, a benchstat
/// `--filter` that keeps nothing. (The report is also made before the
/// experiment is committed, so whatever else fails stores nothing.)
fn fits(f: &ReportFlags, imp: &import::Imported) -> Result<()> {
    if let Some(b) = f
        .baseline
        .as_deref()
        .filter(|b| !imp.configs.iter().any(|c| c == b))
    {
        return Err(crate::error::bad(format!(
            "--baseline '{}' is not a config of the import (configs: {})",
            crate::sys::visible::terminal_safe(b),
            crate::sys::visible::terminal_safe(&imp.configs.join(", "))
        )));
    }
    let benchstat = outputs(f, true)
        .iter()
        .any(|(format, _)| *format == crate::report::Format::Benchstat);
    let results = (imp.metrics.iter()).flat_map(|(w, specs)| {
        specs.iter().flat_map(move |m| {
            imp.configs
                .iter()
                .map(move |c| (w.as_str(), c.as_str(), m.name.as_str()))
        })
    });
    if benchstat && !f.benchstat.layout()?.keeps_any(results) {
        return Err(crate::error::bad("--filter: no result matches"));
    }
    Ok(())
}
