//! The `sysdelta` command line: parses, calls the library, maps errors to
//! exit codes (2: bad input, 1: failure, 130: interrupted).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

use sysdelta::analysis;
use sysdelta::error::{bad, is_user_error, user_problems};
use sysdelta::plan::{self, Order, Overrides};
use sysdelta::report::escape::terminal_safe;
use sysdelta::report::{self, Format, ReportOptions};
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
    /// The built-in OS micro-benchmark suite (LMbench 2.0 summary layout).
    Micro(sysdelta::micro::cli::MicroArgs),
    /// Compare experiments run separately (e.g. kernel A vs B across a reboot).
    Compare(CompareArgs),
    /// A metric across labelled experiments, with change points marked.
    History(HistoryArgs),
    /// Import hyperfine JSON, Go benchmark output or LMbench results as an experiment.
    Import(ImportArgs),
    /// Tracer transports under overload (the 2005 netlink vs relayfs study).
    Transport(sysdelta::transport::cli::TransportArgs),
    /// Runs needed to detect a given shift, from a pilot or finished experiment.
    PlanRuns(sysdelta::commands::plan_runs::PlanRunsArgs),
    /// Check the statistics on this machine and in simulation.
    Calibrate(sysdelta::commands::calibrate::CalibrateArgs),
    /// Put back every system change a crashed or killed run left in the
    /// journal next to the store (tracers, sysctls, mounts, loop devices, ...).
    Restore,
    /// Inside a kernel config's VM: run the runs the host assigns (started
    /// by the VM's init, not by users).
    #[command(hide = true)]
    Guest {
        /// The virtio-serial port to the host.
        #[arg(long, default_value = sysdelta::vm::PORT_NAME)]
        port: String,
    },
}

#[derive(Args)]
struct CompareArgs {
    /// Experiments as LABEL, ID, or LABEL:CONFIG; the first is the baseline.
    #[arg(required = true, num_args = 2..)]
    experiments: Vec<String>,
    #[command(flatten)]
    flags: ReportFlags,
}

#[derive(Args)]
struct HistoryArgs {
    /// The metric, as WORKLOAD/METRIC or METRIC.
    metric: String,
    /// Experiments whose label starts with this, oldest first.
    #[arg(long, default_value = "")]
    label_prefix: String,
    /// Significance level of a change point.
    #[arg(long, default_value_t = 0.05)]
    alpha: f64,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[arg(long, short)]
    output: Option<PathBuf>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ImportFormat {
    /// hyperfine --export-json: each command a config.
    Hyperfine,
    /// go test -bench output: each file a config.
    Gobench,
    /// LMbench 3 results/<os>/<host>.N files: each file a run, configs by <os>/<host>.
    Lmbench,
}

#[derive(Args)]
struct ImportArgs {
    #[arg(value_enum)]
    format: ImportFormat,
    /// The files to import.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Label the experiment (for `compare` and `history`).
    #[arg(long)]
    label: Option<String>,
    /// hyperfine: the workload name of the imported `wall` metric.
    #[arg(long, default_value = "hyperfine")]
    workload: String,
}

#[derive(Args, Clone)]
struct ExecArgs {
    /// Runs per (config, workload) cell.
    #[arg(long)]
    runs: Option<u32>,
    /// Warm-up runs per cell (recorded, not used as samples); with kernel
    /// configs, per boot.
    #[arg(long)]
    warmup: Option<u32>,
    /// Boots per kernel config (plans whose configs name a kernel).
    #[arg(long)]
    boots: Option<u32>,
    /// Seed of the run order (and nothing else).
    #[arg(long)]
    seed: Option<u64>,
    /// random-blocks (default) or sequential.
    #[arg(long, value_parser = parse_order)]
    order: Option<Order>,
    /// Scaled-down plan: the plan's [quick] settings and built-ins' quick mode.
    #[arg(long)]
    quick: bool,
    /// Adaptive stopping: add randomized blocks until every ratio CI is
    /// narrower than this, e.g. ci=1% (starts with 10 runs per cell).
    #[arg(long, value_parser = parse_until)]
    until: Option<f64>,
    /// With --until: the most runs per cell.
    #[arg(long)]
    max_runs: Option<u32>,
    /// With --until: only this metric (METRIC or WORKLOAD/METRIC) must reach
    /// the target; repeat for several. Default: every compared metric.
    #[arg(long = "until-metric")]
    until_metrics: Vec<String>,
    /// Label the experiment (e.g. the kernel under test), for comparisons across reboots.
    #[arg(long)]
    label: Option<String>,
    /// Keep a command's non-zero exit status as a result (its times are
    /// stored) instead of failing the run, as hyperfine's -i.
    #[arg(long = "ignore-failure", short = 'i')]
    ignore_failure: bool,
    /// Stop once a cell has failed this many runs in a row (0: never).
    #[arg(long, value_name = "N")]
    max_failures: Option<u32>,
    /// Run even though an experiment was stopped inside a config whose
    /// teardown has not run (its state may still be there).
    #[arg(long)]
    force: bool,
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
    /// Significance level of the verdicts (family-wise with Holm).
    #[arg(long, default_value_t = 0.05)]
    alpha: f64,
    /// Correction for testing every metric at once: holm (family-wise) or bh
    /// (Benjamini-Hochberg false discovery rate).
    #[arg(long, value_enum, default_value = "holm")]
    correction: analysis::Correction,
    /// Bootstrap CI of the ratio of means: percentile or bca.
    #[arg(long, value_enum, default_value = "percentile")]
    ci: analysis::CiMethod,
    /// Answer "is the difference under this margin?" with a TOST, e.g. 1%.
    #[arg(long, value_parser = parse_percent)]
    equivalence: Option<f64>,
    /// Also print min/avg/max/stddev per config with the N highest and N
    /// lowest runs dropped (the 2007 blktrace posting's table), with the
    /// verdict and the runs a 1% difference would need.
    #[arg(long)]
    trim: Option<usize>,
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
    #[arg(short = 'c', long = "config", required_unless_present = "kernels")]
    configs: Vec<String>,
    /// A config's teardown: NAME=CMD, run when sysdelta leaves that config
    /// (always, also after failures and signals).
    #[arg(short = 't', long = "teardown")]
    teardowns: Vec<String>,
    /// A config that boots a kernel in a VM: 'NAME=IMAGE [cpus=N]
    /// [memory=SIZE] [cmdline="OPTIONS"] [modules=DIR]' (a new config, or
    /// one given with -c, whose setup then runs in the guest).
    #[arg(short = 'k', long = "kernel")]
    kernels: Vec<String>,
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

/// "ci=1%" -> 0.01.
fn parse_until(s: &str) -> Result<f64, String> {
    let Some(v) = s.strip_prefix("ci=") else {
        return Err(format!("'{s}': expected ci=WIDTH, e.g. ci=1%"));
    };
    parse_percent(v)
}

/// "1%" or "1" -> 0.01.
fn parse_percent(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("'{s}' is not a percentage (e.g. 1%)"))?;
    if !(v > 0.0 && v < 100.0) {
        return Err(format!("'{s}': the margin must be between 0% and 100%"));
    }
    Ok(v / 100.0)
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
        until_ci: e.until,
        max_runs: e.max_runs,
        until_metrics: e.until_metrics.clone(),
        ignore_failure: e.ignore_failure,
        max_failures: e.max_failures,
        boots: e.boots,
    }
}

/// Write `text` to `path` atomically (temporary file in the same directory,
/// then rename; mode 0666 less the umask, as any file a command writes),
/// or to stdout.
fn emit(text: &str, path: Option<&Path>) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    match path {
        None => {
            let mut out = std::io::stdout().lock();
            if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                if e.kind() == std::io::ErrorKind::BrokenPipe {
                    // Ended in `main`, once everything a run holds (its
                    // scratch directory, its locks) is put away.
                    return Err(anyhow::Error::new(BrokenPipe));
                }
                return Err(e.into());
            }
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
            let mut tmp = tempfile::Builder::new()
                .permissions(std::fs::Permissions::from_mode(0o666))
                .tempfile_in(dir)
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
        trim: f.trim,
        analysis: analysis::Options {
            baseline: f.baseline.clone(),
            alpha: f.alpha,
            correction: f.correction,
            ci_method: f.ci,
            equivalence: f.equivalence,
            ..Default::default()
        },
    })
}

fn print_report(store: &Store, id: i64, f: &ReportFlags) -> Result<()> {
    let opts = report_options(f)?;
    // HTML also draws the stored series and says where imported samples came from.
    let text = if opts.format == Format::Html {
        report::html::render_stored(store, id, &opts.analysis)?
    } else {
        report::render(&store.load(id)?, &opts)?
    };
    emit(&text, f.output.as_deref())
}

/// Take the store's exclusive lock ([`Store::try_lock`]), or say who has it.
///
/// Tried for a second before refusing: another sysdelta's check of what
/// dead runs left (`runner::machine::refuse_leftovers`) holds a store's
/// lock for an instant, and folding a dead run's log for a moment.
fn lock_store(path: &Path) -> Result<nix::fcntl::Flock<std::fs::File>> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    loop {
        if let Some(l) = Store::try_lock(path)? {
            return Ok(l);
        }
        if std::time::Instant::now() >= deadline {
            return Err(bad(format!(
                "{}: in use by another running sysdelta; wait for it or stop it first",
                path.display()
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Run a validated plan (new experiment, or the rest of `resume`).
///
/// Order matters: everything that can refuse the run as bad input (options,
/// the plan's preflight, what a dead run left here or on another store, a
/// second system-changing run) does so before anything is written, so a
/// refused run leaves no store, no experiment and no journal.
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
    // Declared first so that they are released last: dropping the store
    // folds and removes the run log, and dropping the prepared plan removes
    // the scratch directory and clears its journal entry; both belong to
    // the locks' holder.
    let (_machine, _lock);
    // From here on a signal asks for a clean stop (exit 130).
    let cancel = runner::signals::install()?;
    let mut prepared = runner::prepare(plan, store_path)?;
    runner::machine::refuse_leftovers(store_path, resume, e.force)?;
    // One system-changing run per machine, whatever its store.
    _machine = if prepared.changes_system() {
        Some(runner::machine::MachineLock::acquire(
            Some(store_path),
            &match resume {
                Some(id) => format!("experiment {id}"),
                None => "a new experiment".into(),
            },
        )?)
    } else {
        None
    };
    let store = Store::open(store_path, true)?;
    // One sysdelta per store at a time: the journal next to it, the run log
    // and the run slots of an experiment belong to the process holding this
    // lock.
    _lock = lock_store(store_path)?;
    runner::machine::register(store_path);
    prepared.arm()?;
    if cancel.load(std::sync::atomic::Ordering::SeqCst) {
        // Stopped before anything ran: no experiment to resume.
        eprintln!("sysdelta: interrupted before the first run; nothing was stored");
        return Ok(ExitCode::from(runner::signals::INTERRUPTED as u8));
    }
    let id = match resume {
        Some(id) => {
            prepared.check_resume(&store.info(id)?)?;
            if let Some(msg) = runner::teardown_after_crash(&store, id, &mut prepared)? {
                eprintln!("sysdelta: {msg}");
            }
            store.set_status(id, "running")?;
            id
        }
        None => runner::create(&store, &prepared, e.label.as_deref())?,
    };
    if let Some(m) = &_machine {
        m.describe(&format!("experiment {id}"));
    }
    let outcome = runner::execute(
        &store,
        id,
        &mut prepared,
        &ExecOptions {
            cancel: &cancel,
            quiet: e.quiet,
        },
    )?;
    runner::machine::unregister_if_clean(store_path);
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
        return Ok(ExitCode::from(runner::signals::INTERRUPTED as u8));
    }
    if !e.no_report {
        let data = store.load(id)?;
        emit(&report::render(&data, &opts)?, e.report.output.as_deref())?;
    }
    // A result is only a result where each cell has one: say which have
    // none, and fail.
    let mut failed = outcome.stopped.is_some();
    if let Some(why) = &outcome.stopped {
        eprintln!("sysdelta: {why}");
    }
    for cell in runner::cells_without_success(&store, id)? {
        eprintln!("sysdelta: no successful run of {cell}");
        failed = true;
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.cmd {
        Cmd::Run(a) => {
            if let Some(r) = &a.resume {
                let e = &a.exec;
                let changes = [
                    (e.runs.is_some(), "--runs"),
                    (e.warmup.is_some(), "--warmup"),
                    (e.seed.is_some(), "--seed"),
                    (e.order.is_some(), "--order"),
                    (e.quick, "--quick"),
                    (e.until.is_some(), "--until"),
                    (e.max_runs.is_some(), "--max-runs"),
                    (!e.until_metrics.is_empty(), "--until-metric"),
                    (e.label.is_some(), "--label"),
                    (e.ignore_failure, "--ignore-failure"),
                    (e.max_failures.is_some(), "--max-failures"),
                    (e.boots.is_some(), "--boots"),
                ];
                if let Some((_, opt)) = changes.iter().find(|c| c.0) {
                    return Err(bad(format!(
                        "--resume finishes the experiment as it was planned; {opt} cannot change it"
                    )));
                }
                let store = Store::open(&cli.store, false)?;
                let id = store.resolve(r)?;
                let info = store.info(id)?;
                if info.status == "complete" {
                    return Err(bad(format!("experiment {id} is already complete")));
                }
                let plan = plan::parse(&info.plan_source, &info.plan_text, &info.overrides)
                    .map_err(bad)?;
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
            let plan = plan::shorthand::build_with_kernels(
                &a.configs,
                &a.teardowns,
                &a.kernels,
                &a.command,
                &overrides(&a.exec),
            )
            .map_err(bad)?;
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
            emit(&report::list::render(&store)?, None)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Guest { port } => {
            runner::boots::guest::serve(&port)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Micro(args) => {
            sysdelta::micro::cli::run(&args)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Compare(a) => {
            let opts = report_options(&a.flags)?;
            let store = Store::open(&cli.store, false)?;
            let c = report::compare::build(&store, &a.experiments)?;
            for w in &c.warnings {
                eprintln!("sysdelta: warning: {w}");
            }
            emit(
                &report::compare::render(&c, &opts)?,
                a.flags.output.as_deref(),
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::History(a) => {
            if !(a.alpha > 0.0 && a.alpha < 1.0) {
                return Err(bad(format!(
                    "--alpha must be between 0 and 1, got {}",
                    a.alpha
                )));
            }
            let store = Store::open(&cli.store, false)?;
            let h = report::compare::history(&store, &a.metric, &a.label_prefix, a.alpha)?;
            let text = if a.json {
                report::compare::history_json(&h)?
            } else {
                report::compare::history_text(&h)
            };
            emit(&text, a.output.as_deref())?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Import(a) => {
            use sysdelta::import;
            let mut files = Vec::new();
            for f in &a.files {
                files.push((f.display().to_string(), import::read(f)?));
            }
            let imp = match a.format {
                ImportFormat::Hyperfine => {
                    let [(p, t)] = files.as_slice() else {
                        return Err(bad("import hyperfine takes one JSON file"));
                    };
                    import::hyperfine::parse(p, t, &a.workload)
                }
                ImportFormat::Gobench => import::gobench::parse(&files),
                ImportFormat::Lmbench => import::lmbench::parse(&files),
            }
            .map_err(bad)?;
            let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
            let store = Store::open(&cli.store, true)?;
            let id = import::store(&store, &imp, a.label.as_deref(), &names.join(", "))?;
            eprintln!(
                "sysdelta: imported {} runs of {} configs as experiment {id} in {}",
                imp.runs.len(),
                imp.configs.len(),
                cli.store.display()
            );
            println!("{id}");
            Ok(ExitCode::SUCCESS)
        }
        Cmd::PlanRuns(a) => {
            sysdelta::commands::plan_runs::run(&a, &cli.store).map(|()| ExitCode::SUCCESS)
        }
        Cmd::Calibrate(a) => {
            sysdelta::commands::calibrate::run(&a, &cli.store).map(|()| ExitCode::SUCCESS)
        }
        Cmd::Transport(args) => {
            // The sweep writes tracefs (ftrace buffers, events): one
            // system-changing sysdelta at a time (only root can write it).
            let _machine = if nix::unistd::geteuid().is_root() {
                Some(runner::machine::MachineLock::acquire(
                    None,
                    "transport sweep",
                )?)
            } else {
                None
            };
            sysdelta::transport::cli::run(&args)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Restore => {
            let _lock = if cli.store.exists() {
                Some(lock_store(&cli.store)?)
            } else {
                None
            };
            let jpath = runner::journal_path(&cli.store);
            let mut j = sysdelta::config::journal::Journal::open(&jpath)?;
            let pending = j.pending();
            // Putting back is changing: not while another run changes the
            // machine.
            let _machine = if pending.is_empty() {
                None
            } else {
                Some(runner::machine::MachineLock::acquire(
                    Some(&cli.store),
                    "restore",
                )?)
            };
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
                    let mut i = store.info(id)?;
                    if let Some(c) = &i.entered_config {
                        if !runner::config_has_teardown(
                            &i.plan_source,
                            &i.plan_text,
                            &i.overrides,
                            c,
                        ) {
                            // What its built-in kinds changed is put back
                            // above; with no teardown to run, it is left.
                            store.set_entered_config(id, None)?;
                            println!("experiment {id}: config '{c}' was left by this restore (it has no teardown)");
                            i.entered_config = None;
                        }
                    }
                    if i.status == "running" || i.entered_config.is_some() {
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

/// The reader of stdout went away: `emit` returns this, and `main` ends
/// the process as coreutils do once the command has cleaned up.
#[derive(Debug)]
struct BrokenPipe;

impl std::fmt::Display for BrokenPipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("broken pipe")
    }
}

impl std::error::Error for BrokenPipe {}

/// The reader of stdout went away (`sysdelta list | head -1`): end as
/// coreutils do, killed by SIGPIPE, with nothing on stderr. Rust ignores
/// SIGPIPE (so that sockets and pipes inside the benchmarks report EPIPE);
/// it is put back to its default only here.
fn die_of_broken_pipe() -> ! {
    // SAFETY: plain calls; nothing runs after the signal.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    std::process::exit(141)
}

/// `println!` panics when stdout is a closed pipe; the subcommands that
/// print as they go (micro, transport) end like `emit` then.
fn quiet_on_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe") {
            die_of_broken_pipe();
        }
        default(info)
    }));
}

fn main() -> ExitCode {
    quiet_on_broken_pipe();
    let cli = Cli::parse();
    let result = run(cli);
    // Reaped here, the launcher's CPU time counts as sysdelta's children's.
    sysdelta::process::stop_launcher();
    match result {
        Ok(code) => code,
        Err(e) if e.is::<BrokenPipe>() => die_of_broken_pipe(),
        Err(e) => {
            if is_user_error(&e)
                || e.is::<sysdelta::transport::BadInput>()
                || e.is::<sysdelta::micro::BadInput>()
            {
                // One line a problem, whatever a stored name or an input
                // path holds: no control character reaches the terminal.
                let whole = [e.to_string()];
                let problems = match user_problems(&e) {
                    // The problems themselves, unless context was added.
                    Some(p) if p.join("\n") == whole[0] => p,
                    _ => &whole[..],
                };
                for p in problems {
                    eprintln!("sysdelta: {}", terminal_safe(p));
                }
                ExitCode::from(2)
            } else {
                eprintln!("sysdelta: error: {}", terminal_safe(&format!("{e:#}")));
                ExitCode::from(1)
            }
        }
    }
}
