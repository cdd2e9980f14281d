//! The `sysdelta` command line: parses, calls the library, maps errors to
//! exit codes (2: bad input, 1: failure, 130: interrupted).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

use sysdelta::error::{bad, is_user_error};
use sysdelta::plan::{self, Order, Overrides};
use sysdelta::report::{self, analysis, Format, ReportOptions};
use sysdelta::runner::{self, ExecOptions};
use sysdelta::store::{Store, DEFAULT_PATH};

#[derive(Parser)]
#[command(
    name = "sysdelta",
    version,
    about = "What did the change cost, and is it beyond the noise?"
)]
struct Cli {
    /// The SQLite store.
    #[arg(long, global = true, default_value = DEFAULT_PATH)]
    store: PathBuf,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run an experiment plan (TOML) and print its report.
    Run(RunArgs),
    /// Quick A/B: `sysdelta ab -c base= -c 'slow=export X=1' -- CMD`.
    Ab(AbArgs),
    /// Print the report of a stored experiment.
    Report(ReportArgs),
    /// List stored experiments.
    List,
    /// Print this machine's environment fingerprint.
    Env,
    /// Tracer transports under overload (the 2005 netlink vs relayfs study).
    Transport(sysdelta::transport::cli::TransportArgs),
    /// Runs needed to detect a given shift, from a pilot or finished experiment.
    PlanRuns(sysdelta::commands::plan_runs::PlanRunsArgs),
    /// Check the statistics on this machine and in simulation.
    Calibrate(sysdelta::commands::calibrate::CalibrateArgs),
    /// Put back every system change a crashed or killed run left in the
    /// journal next to the store (tracers, sysctls, mounts, loop devices, ...).
    Restore,
}

#[derive(Args, Clone)]
struct ExecArgs {
    /// Runs per (config, workload) cell.
    #[arg(long)]
    runs: Option<u32>,
    /// Warm-up runs per cell (recorded, not used as samples).
    #[arg(long)]
    warmup: Option<u32>,
    /// Seed of the run order (and nothing else).
    #[arg(long)]
    seed: Option<u64>,
    /// random-blocks (default) or sequential.
    #[arg(long, value_parser = parse_order)]
    order: Option<Order>,
    /// Scaled-down plan: the plan's [quick] settings and built-ins' quick mode.
    #[arg(long)]
    quick: bool,
    /// Label the experiment (e.g. the kernel under test), for comparisons across reboots.
    #[arg(long)]
    label: Option<String>,
    /// No progress output.
    #[arg(long, short)]
    quiet: bool,
    /// Do not print the report at the end.
    #[arg(long)]
    no_report: bool,
    #[command(flatten)]
    report: ReportFlags,
}

#[derive(Args, Clone)]
struct ReportFlags {
    /// Config every other one is compared against (default: the plan's baseline).
    #[arg(long)]
    baseline: Option<String>,
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Also print per-cell statistics (n, mean, median, min, max, stddev, CoV, trimmed mean).
    #[arg(long)]
    detail: bool,
    /// Family-wise significance level of the verdicts.
    #[arg(long, default_value_t = 0.05)]
    alpha: f64,
    /// Write the report to this file (atomically) instead of stdout.
    #[arg(long, short)]
    output: Option<PathBuf>,
}

#[derive(Args)]
struct RunArgs {
    /// The plan file.
    plan: Option<PathBuf>,
    /// Finish an interrupted experiment to its planned counts.
    #[arg(long, conflicts_with = "plan")]
    resume: Option<String>,
    #[command(flatten)]
    exec: ExecArgs,
}

#[derive(Args)]
struct AbArgs {
    /// A config: NAME=SETUP (SETUP may be empty). The first is the baseline.
    #[arg(short = 'c', long = "config", required = true)]
    configs: Vec<String>,
    #[command(flatten)]
    exec: ExecArgs,
    /// The command to measure.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

#[derive(Args)]
struct ReportArgs {
    /// Experiment id or label (default: the last one).
    experiment: Option<String>,
    /// The last experiment.
    #[arg(long, conflicts_with = "experiment")]
    last: bool,
    #[command(flatten)]
    flags: ReportFlags,
}

fn parse_order(s: &str) -> Result<Order, String> {
    Order::parse(s).ok_or_else(|| format!("unknown order '{s}': use random-blocks or sequential"))
}

fn overrides(e: &ExecArgs) -> Overrides {
    Overrides {
        runs: e.runs,
        warmup: e.warmup,
        seed: e.seed,
        order: e.order,
        quick: e.quick,
    }
}

/// Write `text` to `path` atomically (temporary file in the same directory,
/// then rename), or to stdout.
fn emit(text: &str, path: Option<&Path>) -> Result<()> {
    use std::io::Write;
    match path {
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
        Some(p) => {
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
            let mut tmp = tempfile::NamedTempFile::new_in(dir)
                .map_err(|e| bad(format!("{}: cannot write there: {e}", p.display())))?;
            tmp.write_all(text.as_bytes())?;
            tmp.persist(p)
                .map_err(|e| bad(format!("{}: {}", p.display(), e.error)))?;
        }
    }
    Ok(())
}

fn report_options(f: &ReportFlags) -> Result<ReportOptions> {
    if !(f.alpha > 0.0 && f.alpha < 1.0) {
        return Err(bad(format!(
            "--alpha must be between 0 and 1, got {}",
            f.alpha
        )));
    }
    Ok(ReportOptions {
        format: f.format,
        detail: f.detail,
        analysis: analysis::Options {
            baseline: f.baseline.clone(),
            alpha: f.alpha,
            ..Default::default()
        },
    })
}

fn print_report(store: &Store, id: i64, f: &ReportFlags) -> Result<()> {
    let opts = report_options(f)?;
    let data = store.load(id)?;
    let text = report::render(&data, &opts)?;
    emit(&text, f.output.as_deref())
}

/// Run a validated plan (new experiment, or the rest of `resume`).
fn execute(
    store_path: &Path,
    plan: plan::Plan,
    e: &ExecArgs,
    resume: Option<i64>,
) -> Result<ExitCode> {
    let opts = report_options(&e.report)?;
    if let Some(b) = &opts.analysis.baseline {
        if plan.config_index(b).is_none() {
            return Err(bad(format!(
                "--baseline '{b}' is not one of the plan's configs"
            )));
        }
    }
    let mut prepared = runner::prepare(plan, store_path)?;
    let store = Store::open(store_path, true)?;
    let cancel = runner::signals::install()?;
    let id = match resume {
        Some(id) => {
            if let Some(msg) = runner::teardown_after_crash(&store, id, &mut prepared)? {
                eprintln!("sysdelta: {msg}");
            }
            store.set_status(id, "running")?;
            id
        }
        None => runner::create(&store, &prepared, e.label.as_deref())?,
    };
    let outcome = runner::execute(
        &store,
        id,
        &mut prepared,
        &ExecOptions {
            cancel: &cancel,
            quiet: e.quiet,
        },
    )?;
    eprintln!(
        "sysdelta: experiment {} {}: {} runs ({} failed) stored in {}",
        id,
        outcome.status,
        outcome.runs_done,
        outcome.runs_failed,
        store_path.display()
    );
    if outcome.status == "interrupted" {
        eprintln!(
            "sysdelta: resume with: sysdelta run --resume {id} --store {}",
            store_path.display()
        );
        return Ok(ExitCode::from(130));
    }
    if !e.no_report {
        let data = store.load(id)?;
        emit(&report::render(&data, &opts)?, e.report.output.as_deref())?;
    }
    Ok(ExitCode::SUCCESS)
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.cmd {
        Cmd::Run(a) => {
            if let Some(r) = &a.resume {
                let store = Store::open(&cli.store, false)?;
                let id = store.resolve(r)?;
                let info = store.info(id)?;
                if info.status == "complete" {
                    return Err(bad(format!("experiment {id} is already complete")));
                }
                let mut ov = info.overrides.clone();
                ov.quick |= a.exec.quick;
                let plan = plan::parse(&info.plan_source, &info.plan_text, &ov).map_err(bad)?;
                drop(store);
                return execute(&cli.store, plan, &a.exec, Some(id));
            }
            let Some(path) = &a.plan else {
                return Err(bad("run needs a plan file (or --resume ID)"));
            };
            let plan = plan::load_file(path, &overrides(&a.exec)).map_err(bad)?;
            execute(&cli.store, plan, &a.exec, None)
        }
        Cmd::Ab(a) => {
            let plan =
                plan::shorthand::build(&a.configs, &a.command, &overrides(&a.exec)).map_err(bad)?;
            execute(&cli.store, plan, &a.exec, None)
        }
        Cmd::Report(a) => {
            let store = Store::open(&cli.store, false)?;
            let id = store.resolve(a.experiment.as_deref().unwrap_or("last"))?;
            print_report(&store, id, &a.flags)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::List => {
            let store = Store::open(&cli.store, false)?;
            println!(
                "{:>4}  {:<20} {:<16} {:<12} {:<20} {:>5}",
                "id", "name", "label", "status", "created", "runs"
            );
            for id in store.experiment_ids()? {
                let d = store.load(id)?;
                let i = &d.info;
                let ok = d
                    .runs
                    .iter()
                    .filter(|r| r.status == "ok" && !r.warmup)
                    .count();
                println!(
                    "{:>4}  {:<20} {:<16} {:<12} {:<20} {:>5}",
                    i.id,
                    i.name,
                    i.label.as_deref().unwrap_or("-"),
                    i.status,
                    i.created_at,
                    ok
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::PlanRuns(a) => {
            sysdelta::commands::plan_runs::run(&a, &cli.store).map(|()| ExitCode::SUCCESS)
        }
        Cmd::Calibrate(a) => {
            sysdelta::commands::calibrate::run(&a, &cli.store).map(|()| ExitCode::SUCCESS)
        }
        Cmd::Transport(args) => {
            sysdelta::transport::cli::run(&args)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Restore => {
            let jpath = runner::journal_path(&cli.store);
            let mut j = sysdelta::config::journal::Journal::open(&jpath)?;
            let pending = j.pending();
            if pending.is_empty() {
                println!("nothing to restore ({} holds no changes)", jpath.display());
            } else {
                for line in j.restore_all()? {
                    println!("restored: {line}");
                }
            }
            if cli.store.exists() {
                let store = Store::open(&cli.store, false)?;
                for id in store.experiment_ids()? {
                    let i = store.info(id)?;
                    if i.status == "running" {
                        println!(
                            "experiment {id} was interrupted{}; finish it with: sysdelta run --resume {id}",
                            i.entered_config
                                .map(|c| format!(" inside config '{c}' (its teardown runs on resume)"))
                                .unwrap_or_default()
                        );
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Env => {
            for (k, v) in sysdelta::monitor::fingerprint::collect() {
                println!("{k:<18} {v}");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            if is_user_error(&e) || e.is::<sysdelta::transport::BadInput>() {
                eprintln!("sysdelta: {e}");
                ExitCode::from(2)
            } else {
                eprintln!("sysdelta: error: {e:#}");
                ExitCode::from(1)
            }
        }
    }
}
