//! The commands that read the store and print: `report`, `list`,
//! `compare` and `history`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

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
    /// A bare LABEL of a multi-config experiment takes its baseline config.
    #[arg(required = true, num_args = 1..)]
    pub experiments: Vec<String>,
    /// Compare against the experiment baseline NAME points at (saved with
    /// `run --save-baseline NAME`), put first; NAME:CONFIG picks its config.
    #[arg(long, value_name = "NAME[:CONFIG]")]
    pub against_baseline: Option<String>,
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
    /// Exit with status 1 when the newest experiment (or the newest two)
    /// regressed against those before it: a CI job's verdict on a commit.
    #[arg(long)]
    pub fail_on_newest: bool,
    /// With --fail-on-newest: fail only on a regression of at least this
    /// much (e.g. 5%), as well as beyond noise and drift.
    #[arg(long, value_name = "PCT", requires = "fail_on_newest",
          value_parser = super::args::parse_percent)]
    pub fail_min_change: Option<f64>,
}

/// What `list` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ListFormat {
    /// One line per experiment, within 80 columns.
    Text,
    /// A JSON array of experiments, oldest first (docs/reports.md).
    Json,
}

#[derive(Args)]
pub struct ListArgs {
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = ListFormat::Text)]
    pub format: ListFormat,
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

/// Print the report of stored experiment `data` in `--format` (unless
/// `stdout` is false) and write each `--export-*` file; with `--fail-on`,
/// state the gate's line on stderr. True when the gate failed. The data
/// is handed over (analysed without a copy of its runs, as `report` does:
/// the end of `run` holds one copy, not two); `brief`: the text on stdout
/// is `ab`'s short report (`report::brief`) where it applies.
pub fn print_report_as(
    store: &Store,
    data: crate::store::ExperimentData,
    f: &ReportFlags,
    stdout: bool,
    brief: bool,
) -> Result<bool> {
    render(Origin::Stored(store), data, f, stdout, brief)?
        .write()
        .map(|(failed, _)| failed)
}

/// The report of an experiment in no store (`import --no-store`), whose
/// samples came from `imported_from`, rendered for stdout.
pub fn render_unstored<'f>(
    data: crate::store::ExperimentData,
    imported_from: String,
    f: &'f ReportFlags,
) -> Result<Rendered<'f>> {
    render(Origin::Unstored(imported_from), data, f, true, false)
}

/// The report of `data`, stored in `store`, rendered for stdout.
pub fn render_stored<'f>(
    store: &Store,
    data: crate::store::ExperimentData,
    f: &'f ReportFlags,
) -> Result<Rendered<'f>> {
    render(Origin::Stored(store), data, f, true, false)
}

/// Where a reported experiment is.
enum Origin<'a> {
    /// In this store.
    Stored(&'a Store),
    /// In none (`import --no-store`): its samples came from this source.
    Unstored(String),
}

/// A report made and not yet written: every output's text, made before
/// any is written, so that a report option that fits no result (a
/// `--filter` that matches nothing, `--baseline` of no config) fails with
/// nothing printed, and `import --report` with nothing stored.
pub struct Rendered<'f> {
    /// None when nothing is written and nothing is gated.
    view: Option<crate::analysis::view::ReportView>,
    /// Each output: its format, file (None: stdout) and text (None: JSON,
    /// streamed from the view as it is written: the document of every
    /// run is never held whole).
    texts: Vec<(Format, Option<&'f Path>, Option<String>)>,
    flags: &'f ReportFlags,
}

/// Analyse `data` once and render each output `f` asks for (`--format`
/// on stdout when `stdout`; `brief`: `ab`'s short text where it applies).
fn render<'f>(
    origin: Origin,
    data: crate::store::ExperimentData,
    f: &'f ReportFlags,
    stdout: bool,
    brief: bool,
) -> Result<Rendered<'f>> {
    // Nothing is printed when one of the files cannot be written.
    check_exports(f)?;
    let mut opts = report_options(f)?;
    let layout = f.benchstat.layout()?;
    let formats = outputs(f, stdout);
    let mut out = Rendered {
        view: None,
        texts: Vec::new(),
        flags: f,
    };
    if formats.is_empty() && f.fail_on.is_none() {
        return Ok(out);
    }
    // benchstat's layout and the --fail-on gate show no CI of the mean,
    // detectable effect or warning: without another format none is
    // computed where it cannot change a verdict (analysis::Options::full).
    opts.analysis.full = formats
        .iter()
        .any(|(format, _)| *format != Format::Benchstat);
    // Analyzed once, however many formats are written, without a copy of its runs.
    let x = report::analyze_owned(data, &opts.analysis)?;
    // HTML also draws the stored series and says where imported samples came from.
    let extras = match origin {
        Origin::Stored(store) => report::html::Extras::from_store(store, &x.data)?,
        Origin::Unstored(source) => report::html::Extras::imported(&x.data, source),
    };
    // One view, however many formats render it.
    let view = x.into_view(opts.time_unit, extras);
    // --detail and --trim ask for more than the short report has.
    let brief = brief && !f.detail && f.trim.is_none();
    for (format, path) in formats {
        opts.format = format;
        let short = match (format, path) {
            (Format::Text, None) if brief => report::brief::render(&view),
            _ => None,
        };
        let text = match (short, format) {
            (_, Format::Json) => None,
            (Some(t), _) => Some(t),
            (None, Format::Benchstat) => Some(report::benchstat::render(&view, &layout)?),
            (None, _) => Some(report::render_view(&view, &opts)?),
        };
        out.texts.push((format, path, text));
    }
    out.view = Some(view);
    Ok(out)
}

impl Rendered<'_> {
    /// Write each output, then judge `--fail-on` (its line on stderr):
    /// whether the gate failed, and the view, for the caller to free or
    /// leave to its process's exit.
    pub fn write(self) -> Result<(bool, Option<crate::analysis::view::ReportView>)> {
        let Some(view) = self.view else {
            return Ok((false, None));
        };
        for (format, path, text) in self.texts {
            match text {
                Some(text) => emit(&on_screen(text, format, path), path)?,
                None => {
                    let write = |w: &mut dyn std::io::Write| {
                        report::json::write(&view.raw, &view.stored, w)
                    };
                    match path {
                        None => super::output::stream(write)?,
                        Some(p) => super::output::write_file(p, write)?,
                    }
                }
            }
        }
        Ok((gate(&view.stored, self.flags), Some(view)))
    }
}

/// [`Rendered::write`] at the end of a command: the view's thousands of
/// runs and samples are left to the process's exit, not freed one by one
/// (that was 4% of an import's report in benchstat's layout).
pub fn write_and_end(r: Rendered) -> Result<bool> {
    let (failed, view) = r.write()?;
    std::mem::forget(view);
    Ok(failed)
}

/// A report as it goes out: the text format on stdout gets its verdicts
/// coloured where `--style` says so; files and other formats never.
fn on_screen(text: String, format: Format, path: Option<&Path>) -> String {
    match (format, path) {
        (Format::Text, None) => super::output::paint_verdicts(&text),
        _ => text,
    }
}

/// `--fail-on`'s verdict on `a`, its line said on stderr (after the
/// report, where a CI log's reader finds it). True when it failed.
pub fn gate(a: &analysis::Analysis, f: &ReportFlags) -> bool {
    let Some(rule) = &f.fail_on else {
        return false;
    };
    let g = analysis::gate::judge(a, rule);
    crate::sys::stderr::say!(
        "sysdelta: {}",
        crate::report::escape::terminal_safe(&g.line)
    );
    g.failed
}

/// The exit code of a command whose report `failed` the `--fail-on` gate.
pub fn gate_code(failed: bool) -> ExitCode {
    if failed {
        ExitCode::from(crate::error::EXIT_GATE)
    } else {
        ExitCode::SUCCESS
    }
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
pub fn report(a: &ReportArgs, store_path: &Path) -> Result<ExitCode> {
    let store = Store::open(store_path, false)?;
    let id = store.resolve(a.experiment.as_deref().unwrap_or("last"))?;
    // The loaded data is handed over, not borrowed: one copy of the runs.
    let data = store.load(id)?;
    write_and_end(render(Origin::Stored(&store), data, &a.flags, true, false)?).map(gate_code)
}

/// `sysdelta list`.
///
/// A team store whose server is out of reach: one line saying so, and
/// what waits on this machine for it (from its run log and deferred
/// writes), with the command that sends it.
pub fn list(a: &ListArgs, store_path: &Path) -> Result<()> {
    let store = match Store::open(store_path, false) {
        Ok(store) => store,
        Err(e)
            if crate::store::is_unreachable(&e)
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
    let rows = analysis::list::list(&store)?;
    match a.format {
        ListFormat::Text => emit(&report::list::render(&rows), None),
        ListFormat::Json => emit(&report::list::json(&rows)?, None),
    }
}

/// `sysdelta compare`.
pub fn compare(a: &CompareArgs, store_path: &Path) -> Result<ExitCode> {
    let opts = report_options(&a.flags)?;
    let store = Store::open(store_path, false)?;
    check_exports(&a.flags)?;
    let mut specs = a.experiments.clone();
    if let Some(b) = &a.against_baseline {
        let (name, config) = match b.split_once(':') {
            Some((n, c)) => (n, format!(":{c}")),
            None => (b.as_str(), String::new()),
        };
        specs.insert(0, format!("{}{config}", store.baseline(name)?));
    }
    let c = analysis::compare::build_on(&store, &specs, a.host.as_deref())?;
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
        emit(
            &on_screen(report::compare::render(&view, &opts)?, format, path),
            path,
        )?;
    }
    Ok(gate_code(gate(&view.analysis, &a.flags)))
}

/// `sysdelta history`: exit status 1 with `--fail-on-newest` when the
/// newest experiment regressed.
pub fn history(a: &HistoryArgs, store_path: &Path) -> Result<std::process::ExitCode> {
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
    let big = |t: &crate::series::newest::NewestTest| {
        t.relative().abs() >= a.fail_min_change.unwrap_or(0.0)
    };
    let regressed = h.newest.judged == analysis::newest::Judged::Regressed
        && h.newest.test.as_ref().is_some_and(big);
    if a.fail_on_newest && regressed {
        crate::sys::stderr::say!(
            "sysdelta: {} regressed at the newest (--fail-on-newest{})",
            crate::report::escape::terminal_safe(&h.newest.labels.join(", ")),
            a.fail_min_change
                .map(|m| format!(", at least {}%", (1e6 * m).round() / 1e4))
                .unwrap_or_default()
        );
        return Ok(std::process::ExitCode::FAILURE);
    }
    Ok(std::process::ExitCode::SUCCESS)
}
