//! The commands that read the store and print: `report`, `list`,
//! `compare` and `history`.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;

use super::args::{report_options, ReportFlags};
use super::output::emit;
use crate::error::bad;
use crate::report::{self, Format};
use crate::store::Store;

#[derive(Args)]
pub struct CompareArgs {
    /// Experiments as LABEL, ID, or LABEL:CONFIG; the first is the baseline.
    #[arg(required = true, num_args = 2..)]
    pub experiments: Vec<String>,
    #[command(flatten)]
    pub flags: ReportFlags,
}

#[derive(Args)]
pub struct HistoryArgs {
    /// The metric, as WORKLOAD/METRIC or METRIC.
    pub metric: String,
    /// Experiments whose label starts with this, oldest first.
    #[arg(long, default_value = "")]
    pub label_prefix: String,
    /// Significance level of a change point.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Write to this file instead of stdout.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
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
pub fn print_report(store: &Store, id: i64, f: &ReportFlags, stdout: bool) -> Result<()> {
    let render = |format: Format| -> Result<String> {
        let mut opts = report_options(f)?;
        opts.format = format;
        // HTML also draws the stored series and says where imported samples came from.
        if format == Format::Html {
            report::html::render_stored(store, id, &opts.analysis)
        } else {
            report::render(&store.load(id)?, &opts)
        }
    };
    // Nothing is printed when one of the files cannot be written.
    check_exports(f)?;
    if stdout {
        emit(&render(f.format)?, None)?;
    }
    for (format, path) in f.export.files() {
        emit(&render(format)?, Some(path))?;
    }
    Ok(())
}

/// Refuse, before anything runs, an export that cannot be written: its
/// directory must exist.
pub fn check_exports(f: &ReportFlags) -> Result<()> {
    for (_, p) in f.export.files() {
        let dir = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !dir.is_dir() {
            return Err(bad(format!(
                "{}: directory {} does not exist",
                p.display(),
                dir.display()
            )));
        }
    }
    Ok(())
}

/// `sysdelta report`.
pub fn report(a: &ReportArgs, store_path: &Path) -> Result<()> {
    let store = Store::open(store_path, false)?;
    let id = store.resolve(a.experiment.as_deref().unwrap_or("last"))?;
    print_report(&store, id, &a.flags, true)
}

/// `sysdelta list`.
pub fn list(store_path: &Path) -> Result<()> {
    let store = Store::open(store_path, false)?;
    emit(&report::list::render(&store)?, None)
}

/// `sysdelta compare`.
pub fn compare(a: &CompareArgs, store_path: &Path) -> Result<()> {
    let opts = report_options(&a.flags)?;
    let store = Store::open(store_path, false)?;
    check_exports(&a.flags)?;
    let c = report::compare::build(&store, &a.experiments)?;
    for w in &c.warnings {
        eprintln!("sysdelta: warning: {w}");
    }
    emit(&report::compare::render(&c, &opts)?, None)?;
    for (format, path) in a.flags.export.files() {
        let mut opts = report_options(&a.flags)?;
        opts.format = format;
        emit(&report::compare::render(&c, &opts)?, Some(path))?;
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
    let h = report::compare::history(&store, &a.metric, &a.label_prefix, a.alpha)?;
    let text = if a.json {
        report::compare::history_json(&h)?
    } else {
        report::compare::history_text(&h)
    };
    emit(&text, a.output.as_deref())
}
