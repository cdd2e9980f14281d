//! The commands that read the store and print: `report`, `list`,
//! `compare` and `history`.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;

use super::args::{report_options, ReportFlags};
use super::output::{emit, existing_dir};
use crate::analysis;
use crate::error::bad;
use crate::report::{self, Format};
use crate::store::Store;

#[derive(Args)]
pub struct CompareArgs {
    /// Experiments as LABEL, ID, or LABEL:CONFIG; the first is the baseline.
    #[arg(required = true, num_args = 2..)]
    pub experiments: Vec<String>,
    /// Only experiments that ran on host NAME (its name in a fleet, else
    /// the machine's): a label every host of a fleet has names this one's.
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    #[command(flatten)]
    pub flags: ReportFlags,
}

/// What `history` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum HistoryFormat {
    /// One line per experiment, change points between them (80 columns).
    Text,
    /// Every experiment's per-run values, medians and change points.
    Json,
    /// One self-contained page with a plot of the metric over experiments.
    Html,
}

#[derive(Args)]
pub struct HistoryArgs {
    /// The metric, as WORKLOAD/METRIC or METRIC.
    pub metric: String,
    /// Experiments whose label starts with this, oldest first.
    #[arg(long, default_value = "")]
    pub label_prefix: String,
    /// The config to follow in each experiment (default: each experiment's
    /// baseline); experiments without it are skipped.
    #[arg(long, value_name = "NAME")]
    pub config: Option<String>,
    /// Only experiments that ran on host NAME (its name in a fleet, else
    /// the machine's).
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// Significance level of a change point.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = HistoryFormat::Text)]
    pub format: HistoryFormat,
    /// Also write the JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Also write the HTML page to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_html: Option<PathBuf>,
}

#[derive(Args)]
pub struct ReportArgs {
    /// Experiment id or label (default: the last one).
    pub experiment: Option<String>,
    /// The last experiment.
    #[arg(long, conflicts_with = "experiment")]
    pub last: bool,
    #[command(flatten)]
    pub flags: ReportFlags,
}

/// Print the report of stored experiment `id` in `--format` (unless
/// `stdout` is false) and write each `--export-*` file.
pub fn print_report(
    store: &Store,
    data: &crate::store::ExperimentData,
    f: &ReportFlags,
    stdout: bool,
) -> Result<()> {
    // Nothing is printed when one of the files cannot be written.
    check_exports(f)?;
    let mut opts = report_options(f)?;
    let layout = f.benchstat.layout()?;
    let formats = outputs(f, stdout);
    if formats.is_empty() {
        return Ok(());
    }
    // Analyzed once, however many formats are written.
    let x = report::analyze(data, &opts.analysis)?;
    // HTML also draws the stored series and says where imported samples came from.
    let extras = report::html::Extras::from_store(store, &x.data)?;
    // One view, however many formats render it.
    let view = x.into_view(opts.time_unit, extras);
    for (format, path) in formats {
        opts.format = format;
        let text = match format {
            Format::Benchstat => report::benchstat::render(&view, &layout)?,
            _ => report::render_view(&view, &opts)?,
        };
        emit(&text, path)?;
    }
    Ok(())
}

/// Where a report goes: `--format` on stdout (when `stdout`), then each
/// `--export-*` file in its format.
pub fn outputs(f: &ReportFlags, stdout: bool) -> Vec<(Format, Option<&Path>)> {
    stdout
        .then_some((f.format, None))
        .into_iter()
        .chain(f.export.files().into_iter().map(|(g, p)| (g, Some(p))))
        .collect()
}

/// Refuse, before anything runs, an export that cannot be written: its
/// directory must exist.
pub fn check_exports(f: &ReportFlags) -> Result<()> {
    for (_, p) in f.export.files() {
        existing_dir(p)?;
    }
    Ok(())
}

/// `sysdelta report`.
pub fn report(a: &ReportArgs, store_path: &Path) -> Result<()> {
    let store = Store::open(store_path, false)?;
    let id = store.resolve(a.experiment.as_deref().unwrap_or("last"))?;
    print_report(&store, &store.load(id)?, &a.flags, true)
}

/// `sysdelta list`.
///
/// A team store whose server is out of reach: one line saying so, and
/// what waits on this machine for it (from its run log and deferred
/// writes), with the command that sends it.
pub fn list(store_path: &Path) -> Result<()> {
    let store = match Store::open(store_path, false) {
        Ok(store) => store,
        Err(e)
            if crate::store::db::is_unreachable(&e)
                && crate::store::pg::pointer_url(store_path).is_some() =>
        {
            crate::sys::stderr::say!(
                "sysdelta: {e:#}; shown: what waits on this machine for it (sysdelta flush --store {} sends it)",
                store_path.display()
            );
            let (runs, writes) = crate::store::waiting_here(store_path);
            return emit(&report::list::render_local(&runs, writes), None);
        }
        Err(e) => return Err(e),
    };
    emit(&report::list::render(&analysis::list::list(&store)?), None)
}

/// `sysdelta compare`.
pub fn compare(a: &CompareArgs, store_path: &Path) -> Result<()> {
    let opts = report_options(&a.flags)?;
    let store = Store::open(store_path, false)?;
    check_exports(&a.flags)?;
    let c = analysis::compare::build_on(&store, &a.experiments, a.host.as_deref())?;
    // Text on a terminal already leads with the warnings: stderr repeats
    // them only where stdout is not what the user is reading.
    use std::io::IsTerminal as _;
    if !std::io::stdout().is_terminal() {
        for w in &c.warnings {
            crate::sys::stderr::say!("sysdelta: warning: {w}");
        }
    }
    // Analyzed once, however many formats are written.
    let view = analysis::compare::analyze(c, &opts.analysis)?;
    let mut opts = opts;
    for (format, path) in outputs(&a.flags, true) {
        opts.format = format;
        emit(&report::compare::render(&view, &opts)?, path)?;
    }
    Ok(())
}

/// `sysdelta history`.
pub fn history(a: &HistoryArgs, store_path: &Path) -> Result<()> {
    if !(a.alpha > 0.0 && a.alpha < 1.0) {
        return Err(bad(format!(
            "--alpha must be between 0 and 1, got {}",
            a.alpha
        )));
    }
    let store = Store::open(store_path, false)?;
    let h = analysis::history::history_on(
        &store,
        &a.metric,
        &a.label_prefix,
        a.config.as_deref(),
        a.alpha,
        a.host.as_deref(),
    )?;
    let render = |f: HistoryFormat| match f {
        HistoryFormat::Text => Ok(report::history::text(&h)),
        HistoryFormat::Json => report::history::json(&h),
        HistoryFormat::Html => report::html::history_page(&h),
    };
    // Every output is rendered before any is written, so a failing one
    // leaves no partial set behind.
    let exports = [
        (a.export_json.as_deref(), HistoryFormat::Json),
        (a.export_html.as_deref(), HistoryFormat::Html),
    ];
    let mut texts = Vec::new();
    for (path, f) in exports {
        if let Some(p) = path {
            texts.push((render(f)?, Some(p)));
        }
    }
    texts.push((render(a.format)?, None));
    // A missing directory for any of them is bad input before anything is written.
    for p in texts.iter().filter_map(|t| t.1) {
        existing_dir(p)?;
    }
    for (text, path) in texts {
        emit(&text, path)?;
    }
    Ok(())
}
