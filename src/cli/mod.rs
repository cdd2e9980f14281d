//! The `sysdelta` command line: one file per group of subcommands, each
//! parsing its flags and calling the library; this file dispatches and maps
//! errors to exit codes (2: bad input, 1: failure, 130: interrupted,
//! 141: stdout closed). `main.rs` only calls [`main`].

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{FromArgMatches as _, Parser, Subcommand};

pub mod args;
pub mod baseline;
pub mod bisect;
pub mod env;
pub mod fleet;
pub mod flush;
pub mod import;
pub mod kexec;
pub mod output;
pub mod push;
pub mod report;
pub mod restore;
pub mod run;
pub mod shell;
pub mod trust;

use crate::error::{self, Error};
use crate::report::escape::terminal_safe;
use crate::runner;
use crate::store::DEFAULT_PATH;
use output::{die_of_broken_pipe, quiet_on_broken_pipe};

#[derive(Parser)]
#[command(
    name = "sysdelta",
    version = env!("SYSDELTA_VERSION"),
    about = "What did the change cost, and is it beyond the noise?"
)]
pub struct Cli {
    /// Where experiments are kept and read: an SQLite file, or a team's
    /// PostgreSQL database as postgresql://USER@HOST[:PORT]/DB or a libpq
    /// string ('host=HOST dbname=DB user=USER', 'service=NAME'), its
    /// password from PGPASSWORD, ~/.pgpass or the service file
    /// [default: $SYSDELTA_STORE, else sysdelta.db]; micro, transport and
    /// import --no-store keep none.
    #[arg(long, global = true, value_name = "FILE|URL")]
    pub store: Option<PathBuf>,
    /// Colours and progress, as hyperfine's --style: auto (on a terminal,
    /// unless NO_COLOR is set), full, basic, nocolor, color or none.
    #[arg(long, global = true, value_enum, default_value = "auto")]
    pub style: output::Style,
    #[command(subcommand)]
    pub cmd: Cmd,
}

// Parsed once per process: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
pub enum Cmd {
    /// Run an experiment plan (TOML) and print its report.
    Run(run::RunArgs),
    /// Quick A/B: `sysdelta ab 'CMD1' 'CMD2'` (commands compared, as hyperfine),
    /// or `sysdelta ab --config base= --config 'slow=export X=1' -- CMD`.
    Ab(Box<run::AbArgs>),
    /// Print the report of a stored experiment.
    Report(report::ReportArgs),
    /// List stored experiments: configs, host, label and runs of each.
    List(report::ListArgs),
    /// Print this machine's environment fingerprint, or what differs from
    /// a stored experiment's.
    Env(env::EnvArgs),
    /// The built-in OS micro-benchmark suite (LMbench 2.0 summary layout).
    Micro(crate::micro::cli::MicroArgs),
    /// Compare experiments run separately (e.g. kernel A vs B across a reboot).
    Compare(report::CompareArgs),
    /// Copy experiments from this store to a team's (PostgreSQL), once.
    Push(push::PushArgs),
    /// Copy experiments from a team's store (PostgreSQL) into this one, once.
    Pull(push::PullArgs),
    /// A metric across labelled experiments, with change points marked.
    History(report::HistoryArgs),
    /// One plan on several hosts at once over ssh, into one team store:
    /// run, resume, status, report.
    Fleet(fleet::FleetArgs),
    /// Which commit between --good and --bad changed a metric, each step
    /// decided beyond the noise; each round an experiment in the store.
    Bisect(Box<bisect::BisectArgs>),
    /// Import hyperfine JSON, Go benchmark output or LMbench results as an experiment.
    Import(import::ImportArgs),
    /// Name a stored experiment baseline NAME, as a run's --save-baseline
    /// does (an imported or pulled one, say), for --against-baseline NAME.
    SaveBaseline(baseline::SaveBaselineArgs),
    /// Tracer transports under overload (the 2005 netlink vs relayfs study).
    Transport(crate::transport::cli::TransportArgs),
    /// Runs needed to detect a given shift, from a pilot or finished experiment.
    PlanRuns(crate::commands::plan_runs::PlanRunsArgs),
    /// Check the statistics on this machine and in simulation.
    Calibrate(crate::commands::calibrate::CalibrateArgs),
    /// Send what waits on this machine for the store: runs and writes an
    /// experiment kept here while its team store's server did not answer.
    Flush,
    /// Put back every system change a crashed or killed run left in the
    /// journal next to the store (tracers, sysctls, mounts, loop devices, ...).
    Restore,
    /// Kernel configs on this machine, one kexec per boot (docs/kexec.md).
    Kexec(kexec::KexecArgs),
    /// Print a shell completion script: `sysdelta completions bash >
    /// /etc/bash_completion.d/sysdelta` (zsh: a `_sysdelta` file on $fpath).
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), or a subcommand's: `sysdelta man run |
    /// man -l -`.
    Man {
        /// The subcommand whose page is printed (default: sysdelta's own).
        subcommand: Option<String>,
    },
    /// Inside a kernel config's VM: run the runs the host assigns (started
    /// by the VM's init, not by users).
    #[command(hide = true)]
    Guest {
        /// The virtio-serial port to the host.
        #[arg(long, default_value = crate::vm::PORT_NAME)]
        port: String,
    },
}

/// Run one parsed command line.
pub fn dispatch(cli: Cli) -> Result<ExitCode> {
    cli.style.set();
    let given = cli.store.is_some();
    // One way to say one thing: a store given where none is used is a
    // mistake, not an option silently ignored.
    let storeless = match &cli.cmd {
        Cmd::Micro(_) => Some("micro"),
        Cmd::Transport(_) => Some("transport"),
        Cmd::Env(e) if !e.reads_store() => Some("env without an experiment"),
        Cmd::Completions { .. } => Some("completions"),
        Cmd::Import(a) if a.no_store => Some("import --no-store"),
        Cmd::Man { .. } => Some("man"),
        _ => None,
    };
    if let (true, Some(what)) = (given, storeless) {
        return Err(error::bad(format!(
            "--store: {what} keeps and reads no experiments"
        )));
    }
    let store_path = match storeless {
        Some(_) => PathBuf::from(DEFAULT_PATH),
        None => store_location(cli.store)?,
    };
    let store = store_path.as_path();
    match cli.cmd {
        Cmd::Run(a) => run::run(&a, store),
        Cmd::Ab(a) => run::ab(&a, store),
        Cmd::Report(a) => report::report(&a, store),
        Cmd::List(a) => report::list(&a, store).map(|()| ExitCode::SUCCESS),
        Cmd::Compare(a) => report::compare(&a, store),
        Cmd::History(a) => report::history(&a, store),
        Cmd::Import(a) => import::run(&a, store),
        Cmd::SaveBaseline(a) => baseline::save_stored(&a, store).map(|()| ExitCode::SUCCESS),
        Cmd::Push(a) => push::push(&a, store).map(|()| ExitCode::SUCCESS),
        Cmd::Pull(a) => push::pull(&a, store).map(|()| ExitCode::SUCCESS),
        Cmd::Fleet(a) => fleet::run(&a, store),
        Cmd::Bisect(a) => bisect::run(&a, store),
        Cmd::Flush => flush::run(store),
        Cmd::Restore => restore::run(store).map(|()| ExitCode::SUCCESS),
        Cmd::Kexec(a) => kexec::run(a, store.to_path_buf()),
        Cmd::Guest { port } => runner::boots::guest::serve(&port).map(|()| ExitCode::SUCCESS),
        Cmd::Micro(args) => crate::micro::cli::run(&args).map(|()| ExitCode::SUCCESS),
        Cmd::PlanRuns(a) => crate::commands::plan_runs::run(&a, store).map(|()| ExitCode::SUCCESS),
        Cmd::Calibrate(a) => crate::commands::calibrate::run(&a, store).map(|()| ExitCode::SUCCESS),
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
            crate::transport::cli::run(&args).map(|()| ExitCode::SUCCESS)
        }
        Cmd::Env(a) => env::run(&a, store).map(|()| ExitCode::SUCCESS),
        Cmd::Completions { shell: sh } => shell::completions(sh).map(|()| ExitCode::SUCCESS),
        Cmd::Man { subcommand } => shell::man(subcommand.as_deref()).map(|()| ExitCode::SUCCESS),
    }
}

/// The store a command uses: `--store`, else `SYSDELTA_STORE`, else
/// `sysdelta.db`; a PostgreSQL URL becomes its anchor on this machine
/// (see `store::pg`), after the server has taken the URL.
fn store_location(given: Option<PathBuf>) -> Result<PathBuf> {
    let named = given
        .or_else(|| {
            crate::store::conninfo::var_os("SYSDELTA_STORE")
                .filter(|s| !s.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from(DEFAULT_PATH));
    crate::store::pg::path_of(&named)
}

/// The command line as parsed, helped, completed and documented: the
/// derived [`Cli`] with the rules its derive cannot say (on `import`,
/// report options need `--report`).
pub fn command() -> clap::Command {
    use clap::CommandFactory as _;
    Cli::command().mut_subcommand("import", import::report_needs_flag)
}

/// The whole program: parse, run, end with the exit code the outcome calls
/// for.
pub fn main() -> ExitCode {
    // Before anything is opened: a closed stderr (`2>&-`) must not make
    // the run log or the store fd 2, where warnings would land.
    crate::sys::stderr::keep_std_fds();
    // First, while this is the only thread: no child sysdelta starts
    // (workload, setup, monitor, guest, ssh) inherits the store's URL or
    // password.
    crate::store::conninfo::take_secrets_from_environment();
    quiet_on_broken_pipe();
    let cli = Cli::from_arg_matches(&command().get_matches()).unwrap_or_else(|e| e.exit());
    let result = dispatch(cli);
    // Reaped here, the launcher's CPU time counts as sysdelta's children's.
    crate::process::stop_launcher();
    match result {
        Ok(code) => code,
        Err(e) => match error::of(&e) {
            Some(Error::BrokenPipe) => die_of_broken_pipe(),
            Some(bad @ Error::BadInput(problems)) => {
                // One line a problem, whatever a stored name or an input
                // path holds: no control character reaches the terminal.
                let whole = [e.to_string()];
                let problems = if problems.join("\n") == whole[0] {
                    // The problems themselves, unless context was added.
                    &problems[..]
                } else {
                    &whole[..]
                };
                for p in problems {
                    crate::sys::stderr::say!("sysdelta: {}", terminal_safe(p));
                }
                ExitCode::from(bad.exit_code())
            }
            Some(Error::Failed(_)) | None => {
                crate::sys::stderr::say!("sysdelta: error: {}", terminal_safe(&format!("{e:#}")));
                ExitCode::from(error::EXIT_FAILURE)
            }
        },
    }
}
