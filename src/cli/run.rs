//! `sysdelta run` and `sysdelta ab`: build or reload a plan, run it as an
//! experiment ([`crate::runner::experiment::run_plan`]), print its report
//! and say which cells have no result.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::args::{overrides, report_options, ExecArgs};
use crate::error::{bad, Error};
use crate::plan;
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
    /// With --resume: the plan, given again; its text must be the one the
    /// experiment stored (how a store you do not own is resumed).
    #[arg(long = "plan", value_name = "FILE", requires = "resume")]
    pub plan_again: Option<PathBuf>,
    /// With --resume: run the stored plan of a store you do not own (a
    /// team store, another user's file) after showing it.
    #[arg(long, requires = "resume")]
    pub trust_stored_plan: bool,
    #[command(flatten)]
    pub exec: ExecArgs,
}

/// Without --runs, --min-time or --until, ab runs at least --min-runs (10)
/// of each command, interleaved, then adds runs until every wall time
/// comparison's 95% CI is narrower than 2% of the reference's mean, or
/// until each command has run 3 s (hyperfine's time), whichever comes
/// first; the report says the count and which rule stopped it.
#[derive(Args)]
#[command(
    after_long_help = "How many runs: without --runs, --min-time or --until, at least --min-runs (10) of each command, interleaved, then more until every wall time comparison's 95% CI is narrower than 2% of the reference's mean, or until each command has run 3 s (hyperfine's time), whichever comes first. The report says the count (\"runs: N per cell\") and which rule stopped it."
)]
pub struct AbArgs {
    /// Commands to compare, as hyperfine's: each a config of its own (the
    /// first, or --reference, the baseline). With --config or -k, each is
    /// a workload measured under every config.
    #[arg(value_name = "COMMAND")]
    pub commands: Vec<String>,
    /// A config: NAME=SETUP (SETUP may be empty). The first is the baseline.
    #[arg(long = "config", value_name = "NAME=SETUP")]
    pub configs: Vec<String>,
    /// Run CMD once per command, before the first run of any (untimed; the
    /// runs of all commands are interleaved), as hyperfine's --setup;
    /// {NAME} is filled with the command's scan values.
    #[arg(short = 's', long = "setup", value_name = "CMD")]
    pub setup: Option<String>,
    /// Run CMD once per command after the last run of all, as hyperfine's
    /// --cleanup. NAME=CMD, where NAME is a --config config, is that
    /// config's teardown instead: run each time sysdelta leaves it.
    #[arg(short = 'c', long = "cleanup", value_name = "CMD|NAME=CMD")]
    pub cleanups: Vec<String>,
    /// The command the others are compared with, as hyperfine's: one of
    /// the commands (its text or -n name), else a command measured too;
    /// with --config, a config's name. (--baseline NAME says the same.)
    #[arg(long = "reference", value_name = "CMD")]
    pub reference: Option<String>,
    /// A config that boots a kernel in a VM: 'NAME=IMAGE [cpus=N]
    /// [memory=SIZE] [cmdline="OPTIONS"] [modules=DIR]' (a new config, or
    /// one given with --config, whose setup then runs in the guest).
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
    /// A command's name in reports, once per command (default: after the
    /// command); with -P/-L, `{NAME}` in it is replaced by each value.
    #[arg(short = 'n', long = "command-name", value_name = "NAME")]
    pub names: Vec<String>,
    /// Scan a parameter over MIN..=MAX (step 1, or -D): `{NAME}` in the
    /// command replaced by each value (one command per value; or one
    /// config per value, when a config's setup holds `{NAME}`). Several
    /// -P and -L give their cross product.
    #[arg(
        short = 'P',
        long = "parameter-scan",
        num_args = 3,
        value_names = ["NAME", "MIN", "MAX"]
    )]
    pub parameter_scan: Vec<String>,
    /// The step of -P (decimals allowed): once for every -P, or once per -P.
    #[arg(
        short = 'D',
        long = "parameter-step-size",
        value_name = "STEP",
        requires = "parameter_scan"
    )]
    pub parameter_step: Vec<String>,
    /// As -P, over the listed values: -L NAME a,b,c.
    #[arg(short = 'L', long = "parameter-list", num_args = 2, value_names = ["NAME", "VALUES"])]
    pub parameter_list: Vec<String>,
    #[command(flatten)]
    pub exec: ExecArgs,
    /// One command, as words (`-- sh -c 'x y' z`): with --config.
    #[arg(last = true, value_name = "WORDS")]
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
            (e.min_runs.is_some(), "--min-runs"),
            (e.min_time.is_some(), "--min-time"),
            (e.output.is_some(), "--output"),
            (e.show_output, "--show-output"),
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
        // A store that is not ours names no plan to run as us (its
        // teardown included): refused before its plan is read.
        Store::check_trusted(store_path)?;
        let store = Store::open(store_path, false)?;
        let id = store.resolve(r)?;
        let info = store.info(id)?;
        if info.status == ExperimentStatus::Complete {
            return Err(bad(format!("experiment {id} is already complete")));
        }
        let plan = plan::parse(&info.plan_source, &info.plan_text, &info.overrides)
            .map_err(Error::into_bad_input)?;
        let entered = stored_entered(&store, &info, &plan)?;
        let not_owned = match super::trust::not_owned(&store) {
            None => super::trust::not_written_here(&store, id)?,
            why => why,
        };
        super::trust::decide(
            &stored_of(&info, &entered),
            not_owned,
            super::trust::Consent {
                plan: a.plan_again.as_deref(),
                trust_stored: a.trust_stored_plan,
            },
        )?;
        drop(store);
        return execute(store_path, plan, &a.exec, Some((id, entered)), false);
    }
    let Some(path) = &a.plan else {
        return Err(bad("run needs a plan file (or --resume ID)"));
    };
    let plan = plan::load_file(path, &overrides(&a.exec)).map_err(Error::into_bad_input)?;
    execute(store_path, plan, &a.exec, None, false)
}

/// The config a dead run of `info` was stopped inside, when the plan gives
/// it a teardown (which resume then runs), with the environment stored as
/// its setup's: what resume executes beside the plan.
fn stored_entered(
    store: &Store,
    info: &crate::store::ExperimentInfo,
    plan: &plan::Plan,
) -> Result<runner::Entered> {
    let config = info.entered_config.clone();
    let env = match &config {
        Some(c)
            if plan
                .configs
                .iter()
                .any(|d| &d.name == c && d.teardown.is_some()) =>
        {
            store.entered_env(info.id)?
        }
        _ => Vec::new(),
    };
    Ok(runner::Entered { config, env })
}

/// What resuming `info` executes, for the trust rule.
fn stored_of<'a>(
    info: &'a crate::store::ExperimentInfo,
    entered: &runner::Entered,
) -> super::trust::Stored<'a> {
    let mut beside = Vec::new();
    if let crate::overrides::CommandOutput::File(p) = &info.overrides.output {
        beside.push((
            "the file every run's output is appended to (--output)".to_string(),
            p.display().to_string(),
        ));
    }
    if !entered.env.is_empty() {
        let env: Vec<String> = entered
            .env
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        beside.push((
            format!(
                "the environment config '{}''s teardown would run with",
                entered.config.as_deref().unwrap_or_default()
            ),
            env.join(" "),
        ));
    }
    super::trust::Stored {
        what: format!("experiment {}", info.id),
        plan_source: &info.plan_source,
        plan_text: &info.plan_text,
        beside,
    }
}

/// `ab`'s default --min-time, seconds (hyperfine's).
pub const AB_MIN_TIME: f64 = 3.0;
/// `ab`'s default precision: with no count given, it stops before
/// [`AB_MIN_TIME`] once every wall time comparison's 95% CI is narrower
/// than this (a fraction of the reference's mean: about ±1%).
pub const AB_ENOUGH_CI: f64 = 0.02;

/// `sysdelta ab`: the plan is built from the command line.
pub fn ab(a: &AbArgs, store_path: &Path) -> Result<ExitCode> {
    let mut ov = overrides(&a.exec);
    // hyperfine's default: at least 10 runs and 3 s of runs per cell,
    // unless the count is given (kernel configs count boots: they take
    // --runs) or the order is sequential (min-time adds randomized blocks;
    // sequential runs the planned count). Where hyperfine takes its count
    // from the first run's time (a cold run, so its count varies from one
    // invocation to the next), ab stops before the 3 s once the wall time
    // comparison is precise to about ±1%: what the verdict needs, and a
    // quick, steady command's comparison takes a fraction of the time.
    let sequential = ov.order == Some(crate::overrides::Order::Sequential);
    if ov.runs.is_none()
        && ov.until_ci.is_none()
        && ov.min_time.is_none()
        && a.kernels.is_empty()
        && !sequential
    {
        ov.min_time = Some(AB_MIN_TIME);
        ov.enough_ci = Some(AB_ENOUGH_CI);
    }
    let ab = plan::shorthand::Ab {
        configs: &a.configs,
        cleanups: &a.cleanups,
        kernels: &a.kernels,
        command: &a.command,
        commands: &a.commands,
        names: &a.names,
        scans: scans(a)?,
        setup: a.setup.as_deref(),
        reference: a.reference.as_deref(),
        run: plan::shorthand::RunOptions {
            shell: if a.no_shell {
                Some("none".into())
            } else {
                a.shell.clone()
            },
            prepare: a.prepare.clone(),
            conclude: a.conclude.clone(),
        },
    };
    let plan = plan::shorthand::build_ab(&ab, &ov).map_err(Error::into_bad_input)?;
    // --baseline may name a command as hyperfine users write it: its config.
    let mut exec = a.exec.clone();
    if let Some(b) = &exec.report.baseline {
        if plan.config_index(b).is_none() {
            if let Some(c) = plan
                .configs
                .iter()
                .find(|c| c.command.as_deref() == Some(b))
            {
                exec.report.baseline = Some(c.name.clone());
            }
        }
    }
    // ab prints the short report a hyperfine user reads (report::brief).
    execute(store_path, plan, &exec, None, true)
}

/// Every -P and -L, in the order given within each kind (-P first): one
/// scan each, their cross product the items.
fn scans(a: &AbArgs) -> Result<Vec<plan::scan::Scan>> {
    let ranges = a.parameter_scan.chunks(3);
    let steps = &a.parameter_step;
    if steps.len() > 1 && steps.len() != ranges.len() {
        return Err(bad(format!(
            "-D: {} steps for {} -P scans; give one for all, or one per -P",
            steps.len(),
            ranges.len()
        )));
    }
    let mut out = Vec::new();
    for (i, r) in ranges.enumerate() {
        let step = steps.get(i).or(steps.first()).map(String::as_str);
        out.push(plan::scan::range(&r[0], &r[1], &r[2], step)?);
    }
    for l in a.parameter_list.chunks(2) {
        out.push(plan::scan::list(&l[0], &l[1])?);
    }
    Ok(out)
}

/// Run a validated plan (new experiment, or the rest of `resume`) and
/// print what came of it (`brief`: `ab`'s short text report). The
/// options are checked before anything runs.
fn execute(
    store_path: &Path,
    plan: plan::Plan,
    e: &ExecArgs,
    resume: Option<(i64, runner::Entered)>,
    brief: bool,
) -> Result<ExitCode> {
    let opts = report_options(&e.report)?;
    // The benchstat layout's flags are read only by the report at the end
    // (and by none under --no-report): a typo in them is refused now, not
    // after the runs it would have wasted.
    e.report.benchstat.layout()?;
    if let Some(b) = &opts.analysis.baseline {
        if plan.config_index(b).is_none() {
            return Err(bad(format!(
                "--baseline '{b}' is not one of the plan's configs"
            )));
        }
    }
    super::report::check_exports(&e.report)?;
    super::baseline::check(e, store_path)?;
    // A plan too small for any verdict is named before its runs are paid
    // for, not only in the report after them.
    let warning = plan::reach::warning(&plan, opts.analysis.alpha);
    if let crate::overrides::CommandOutput::File(p) = &plan.overrides.output {
        // Emptied once, as hyperfine does; each run (and a resume) appends.
        // A file that is not the user's to write is refused before any run.
        crate::process::open_output(p, resume.is_none())
            .map_err(|err| bad(format!("--output {}: {err}", p.display())))?;
    }
    let fleet = match &e.fleet_member {
        None => None,
        Some(m) => {
            let parsed = m
                .split_once(':')
                .and_then(|(id, host)| Some((id.parse::<i64>().ok()?, host)));
            Some(
                parsed
                    .ok_or_else(|| bad(format!("--fleet-member '{m}': expected FLEET_ID:HOST")))?,
            )
        }
    };
    // From here on a signal asks for a clean stop (exit 130).
    let cancel = runner::signals::install()?;
    let (resume, checked) = match resume {
        Some((id, entered)) => (Some(id), Some(entered)),
        None => (None, None),
    };
    let request = experiment::Request {
        resume,
        checked: checked.as_ref(),
        force: e.force,
        label: e.label.as_deref(),
        quiet: e.quiet || !super::output::Style::get().progress(),
        cancel: &cancel,
        fleet,
        warning: warning.as_deref(),
    };
    let ran = match experiment::run_plan(store_path, plan, &request)? {
        experiment::Finished::NotStarted => {
            crate::sys::stderr::say!(
                "sysdelta: interrupted before the first run; nothing was stored"
            );
            return Ok(ExitCode::from(runner::signals::INTERRUPTED as u8));
        }
        experiment::Finished::Ran(ran) => ran,
    };
    let (outcome, store) = (&ran.outcome, &ran.store);
    let id = outcome.experiment_id;
    if let Some(left) = outcome.left_local {
        // The server stopped answering and did not come back in time: the
        // runs are safe here, not yet in the store; no report of a store
        // that cannot be read.
        let store_named = crate::store::pg::named(store_path);
        crate::sys::stderr::say!(
            "sysdelta: experiment {id} {}: {} measured or warm-up runs done, {} failed; not all stored in {store_named}",
            outcome.status,
            outcome.runs_done,
            outcome.runs_failed
        );
        crate::sys::stderr::say!("{}", crate::store::left_local_line(id, store_path, left));
        return Ok(ExitCode::from(crate::error::EXIT_ONLY_LOCAL));
    }
    // Counted as the report and `list` count (from the store, measured
    // runs apart from warm-ups; the progress line counted every run), from
    // a tally per cell: no sample is read unless a report is printed.
    let tallies = store.cell_tallies(id)?;
    let ok: usize = tallies.values().map(|t| t.measured_ok).sum();
    let failed_runs: usize = tallies.values().map(|t| t.measured_failed).sum();
    let warm: usize = tallies.values().map(|t| t.warmup).sum();
    // -q: the report (or the --fail-on line) is all a quiet run says,
    // unless something went wrong.
    if !e.quiet || outcome.status != ExperimentStatus::Complete {
        crate::sys::stderr::say!(
            "sysdelta: experiment {id} {}: {ok} measured run{} ok, {} failed, {warm} warm-up; stored in {}",
            outcome.status,
            crate::words::plural(ok),
            failed_runs,
            store.shown()
        );
    }
    if outcome.status == ExperimentStatus::Interrupted {
        // A team store's anchor names it with no password on the line.
        let named = match store.is_pg() {
            true => store.path().display().to_string(),
            false => store.shown(),
        };
        // A team store's plan runs on resume only given again (cli::trust).
        let again = match store.is_pg() {
            true => " --plan PLAN",
            false => "",
        };
        crate::sys::stderr::say!(
            "sysdelta: resume with: sysdelta run --resume {id} --store {named}{again}"
        );
        return Ok(ExitCode::from(runner::signals::INTERRUPTED as u8));
    }
    let without_success = runner::cells_without_success(&store.info(id)?, &tallies);
    // Loaded only for a report or a gate, and handed over: the report
    // analyses it without a copy of its runs.
    let stdout = !e.no_report;
    let wanted =
        !super::report::outputs(&e.report, stdout).is_empty() || e.report.fail_on.is_some();
    let mut gate_failed =
        wanted && super::report::print_report_as(store, store.load(id)?, &e.report, stdout, brief)?;
    // A result is only a result where each cell has one: say which have
    // none, and fail.
    let mut failed = outcome.stopped.is_some();
    if let Some(why) = &outcome.stopped {
        crate::sys::stderr::say!("sysdelta: stopped: {why}");
    }
    for cell in without_success {
        crate::sys::stderr::say!("sysdelta: no successful run of {cell}");
        failed = true;
    }
    if failed && (e.save_baseline.is_some() || e.against_baseline.is_some()) {
        crate::sys::stderr::say!(
            "sysdelta: a cell has no result: not compared with or saved as a baseline"
        );
    } else if super::baseline::after(store, id, e)? {
        // The comparison with the baseline is gated as the run's own report is.
        gate_failed = true;
    }
    // A run that failed is a failure (1) before its verdicts are a gate's (3).
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        super::report::gate_code(gate_failed)
    })
}
