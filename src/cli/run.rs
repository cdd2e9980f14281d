//! `sysdelta run` and `sysdelta ab`: build or reload a plan, run it as an
//! experiment ([`crate::runner::experiment::run_plan`]), print its report
//! and say which cells have no result.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::args::{overrides, report_options, ExecArgs};
use super::output::emit;
use crate::error::{bad, Error};
use crate::plan;
use crate::report;
use crate::runner::{self, experiment};
use crate::status::ExperimentStatus;
use crate::store::Store;

#[derive(Args)]
pub struct RunArgs {
    /// The plan file.
    pub plan: Option<PathBuf>,
    /// Finish an interrupted experiment to its planned counts.
    #[arg(long, conflicts_with = "plan")]
    pub resume: Option<String>,
    #[command(flatten)]
    pub exec: ExecArgs,
}

#[derive(Args)]
pub struct AbArgs {
    /// A config: NAME=SETUP (SETUP may be empty). The first is the baseline.
    #[arg(short = 'c', long = "config", required_unless_present = "kernels")]
    pub configs: Vec<String>,
    /// A config's teardown: NAME=CMD, run when sysdelta leaves that config
    /// (always, also after failures and signals).
    #[arg(short = 't', long = "teardown")]
    pub teardowns: Vec<String>,
    /// A config that boots a kernel in a VM: 'NAME=IMAGE [cpus=N]
    /// [memory=SIZE] [cmdline="OPTIONS"] [modules=DIR]' (a new config, or
    /// one given with -c, whose setup then runs in the guest).
    #[arg(short = 'k', long = "kernel")]
    pub kernels: Vec<String>,
    /// The shell the command is given to (default /bin/sh), or "none" to
    /// exec it directly; the report says what the shell's start-up costs.
    #[arg(short = 'S', long = "shell", value_name = "SHELL")]
    pub shell: Option<String>,
    /// Run the command without a shell (as --shell none): split as a shell
    /// would, exec'd directly; a command that needs a shell is refused.
    #[arg(short = 'N', conflicts_with = "shell")]
    pub no_shell: bool,
    /// A shell command run before every run (warm-ups too), untimed, in the
    /// run's config; if it fails, so does the run. E.g. cold caches:
    /// 'sync; echo 3 > /proc/sys/vm/drop_caches'.
    #[arg(short = 'p', long = "prepare", value_name = "CMD")]
    pub prepare: Option<String>,
    /// A shell command run after every run, untimed, in the run's config.
    #[arg(short = 'C', long = "conclude", value_name = "CMD")]
    pub conclude: Option<String>,
    #[command(flatten)]
    pub exec: ExecArgs,
    /// The command to measure.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// `sysdelta run`: a plan file, or the rest of an interrupted experiment.
pub fn run(a: &RunArgs, store_path: &Path) -> Result<ExitCode> {
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
        let store = Store::open(store_path, false)?;
        let id = store.resolve(r)?;
        let info = store.info(id)?;
        if info.status == ExperimentStatus::Complete {
            return Err(bad(format!("experiment {id} is already complete")));
        }
        let plan = plan::parse(&info.plan_source, &info.plan_text, &info.overrides)
            .map_err(Error::into_bad_input)?;
        drop(store);
        return execute(store_path, plan, &a.exec, Some(id));
    }
    let Some(path) = &a.plan else {
        return Err(bad("run needs a plan file (or --resume ID)"));
    };
    let plan = plan::load_file(path, &overrides(&a.exec)).map_err(Error::into_bad_input)?;
    execute(store_path, plan, &a.exec, None)
}

/// `sysdelta ab`: the plan is built from the command line.
pub fn ab(a: &AbArgs, store_path: &Path) -> Result<ExitCode> {
    let plan = plan::shorthand::build_with_kernels(
        &a.configs,
        &a.teardowns,
        &a.kernels,
        &a.command,
        &plan::shorthand::RunOptions {
            shell: if a.no_shell {
                Some("none".into())
            } else {
                a.shell.clone()
            },
            prepare: a.prepare.clone(),
            conclude: a.conclude.clone(),
        },
        &overrides(&a.exec),
    )
    .map_err(Error::into_bad_input)?;
    execute(store_path, plan, &a.exec, None)
}

/// Run a validated plan (new experiment, or the rest of `resume`) and
/// print what came of it. The options are checked before anything runs.
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
    // From here on a signal asks for a clean stop (exit 130).
    let cancel = runner::signals::install()?;
    let request = experiment::Request {
        resume,
        force: e.force,
        label: e.label.as_deref(),
        quiet: e.quiet,
        cancel: &cancel,
    };
    let outcome = match experiment::run_plan(store_path, plan, &request)? {
        experiment::Finished::NotStarted => {
            eprintln!("sysdelta: interrupted before the first run; nothing was stored");
            return Ok(ExitCode::from(runner::signals::INTERRUPTED as u8));
        }
        experiment::Finished::Ran(o) => o,
    };
    let id = outcome.experiment_id;
    eprintln!(
        "sysdelta: experiment {} {}: {} runs ({} failed) stored in {}",
        id,
        outcome.status,
        outcome.runs_done,
        outcome.runs_failed,
        store_path.display()
    );
    if outcome.status == ExperimentStatus::Interrupted {
        eprintln!(
            "sysdelta: resume with: sysdelta run --resume {id} --store {}",
            store_path.display()
        );
        return Ok(ExitCode::from(runner::signals::INTERRUPTED as u8));
    }
    let store = Store::open(store_path, false)?;
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
