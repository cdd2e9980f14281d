//! The flags `run` and `ab` share (how to run, how to report), and the
//! parsers and conversions of flag values into the library's options.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::analysis;
use crate::error::{bad, Error};
use crate::overrides::{CommandOutput, Order, Overrides};
use crate::report::{Format, ReportOptions};

#[derive(Args, Clone)]
pub struct ExecArgs {
    /// Runs per (config, workload) cell (exactly; without it, at least
    /// --min-runs and as many as fill --min-time).
    #[arg(long, short = 'r')]
    pub runs: Option<u32>,
    /// Warm-up runs per cell (recorded, not used as samples); with kernel
    /// configs, per boot.
    #[arg(long, short = 'w')]
    pub warmup: Option<u32>,
    /// The fewest measured runs per cell when the count is not given with
    /// --runs (default: 10).
    #[arg(long, short = 'm')]
    pub min_runs: Option<u32>,
    /// Measured time each cell fills at least when the count is not given
    /// with --runs, as hyperfine's 3 s ("3s", "500ms", "0": off; off for
    /// plans). ab's default: 3s, or fewer runs once every wall time
    /// comparison's 95% CI is narrower than 2% (at least --min-runs).
    #[arg(long, value_parser = parse_min_time)]
    pub min_time: Option<f64>,
    /// Boots per kernel config (plans whose configs name a kernel).
    #[arg(long)]
    pub boots: Option<u32>,
    /// Seed of the run order (and nothing else).
    #[arg(long)]
    pub seed: Option<u64>,
    /// random-blocks (default) or sequential.
    #[arg(long, value_parser = parse_order)]
    pub order: Option<Order>,
    /// Scaled-down plan: the plan's [quick] settings and built-ins' quick mode.
    #[arg(long)]
    pub quick: bool,
    /// Adaptive stopping: add randomized blocks until every ratio CI is
    /// narrower than this, e.g. ci=1% (starts with 10 runs per cell).
    #[arg(long, value_parser = parse_until)]
    pub until: Option<f64>,
    /// The most measured runs per cell that --until or --min-time may reach.
    #[arg(long, short = 'M')]
    pub max_runs: Option<u32>,
    /// With --until: only this metric (METRIC or WORKLOAD/METRIC) must reach
    /// the target; repeat for several. Default: every compared metric.
    #[arg(long = "until-metric")]
    pub until_metrics: Vec<String>,
    /// Label the experiment (e.g. the kernel under test), for comparisons across reboots.
    #[arg(long)]
    pub label: Option<String>,
    /// This run is one host's part of a fleet run, FLEET_ID:HOST (given by
    /// `sysdelta fleet` to the sysdelta it starts on each host).
    #[arg(long, hide = true, value_name = "FLEET_ID:HOST")]
    pub fleet_member: Option<String>,
    /// Keep a command's non-zero exit status as a result (its times are
    /// stored) instead of failing the run, as hyperfine's -i.
    #[arg(long = "ignore-failure", short = 'i')]
    pub ignore_failure: bool,
    /// Stop once a cell has failed this many runs in a row (0: never).
    #[arg(long, value_name = "N")]
    pub max_failures: Option<u32>,
    /// Run even though an experiment was stopped inside a config whose
    /// teardown has not run (its state may still be there).
    #[arg(long)]
    pub force: bool,
    /// No progress and no summary line on stderr: the report (and
    /// --fail-on's line) only, unless something went wrong.
    #[arg(long, short)]
    pub quiet: bool,
    /// Do not print the report at the end.
    #[arg(long)]
    pub no_report: bool,
    /// Where a measured command's stdout and stderr go, as hyperfine's
    /// --output: null (default), pipe (read and discarded by sysdelta),
    /// inherit (this terminal) or a FILE (each run appends its stdout).
    #[arg(long, short = 'o', value_name = "WHERE")]
    pub output: Option<String>,
    /// Show the measured command's output on the terminal (--output inherit).
    #[arg(long, conflicts_with = "output")]
    pub show_output: bool,
    /// Save this experiment as baseline NAME: a named pointer in the store
    /// (moved here if it pointed elsewhere; that experiment is kept).
    #[arg(long, value_name = "NAME")]
    pub save_baseline: Option<String>,
    /// Compare this experiment with the one baseline NAME points at, as
    /// `compare` does (--baseline names the reference config instead).
    #[arg(long, value_name = "NAME")]
    pub against_baseline: Option<String>,
    #[command(flatten)]
    pub report: ReportFlags,
}

#[derive(Args, Clone)]
pub struct ReportFlags {
    /// Config every other one is compared against (default: the plan's baseline).
    #[arg(long)]
    pub baseline: Option<String>,
    /// The report's format on stdout (files: --export-*).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Also print per-cell statistics (n, mean, median, min, max, stddev, CoV, trimmed mean).
    #[arg(long)]
    pub detail: bool,
    /// Significance level of the verdicts (family-wise with Holm).
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Correction for testing every metric at once: holm (family-wise) or bh
    /// (Benjamini-Hochberg false discovery rate).
    #[arg(long, value_enum, default_value = "holm")]
    pub correction: analysis::Correction,
    /// Bootstrap CI of the ratio of means: percentile or bca.
    #[arg(long, value_enum, default_value = "percentile")]
    pub ci: analysis::CiMethod,
    /// Answer "is the difference under this margin?" with a TOST, e.g. 1%.
    #[arg(long, value_parser = parse_percent)]
    pub equivalence: Option<f64>,
    /// Also print min/avg/max/stddev per config with the N highest and N
    /// lowest runs dropped (the 2007 blktrace posting's table), with the
    /// verdict and the runs a 1% difference would need.
    #[arg(long)]
    pub trim: Option<usize>,
    /// Show times in this unit (nanosecond, microsecond, millisecond,
    /// second) instead of the one each metric's values pick.
    #[arg(long, short = 'u', value_enum)]
    pub time_unit: Option<crate::report::units::TimeUnit>,
    /// Exit with status 3 when a headline comparison's verdict is worse
    /// (a regression), better, or either (any); a line on stderr states
    /// the threshold and the family. `worse:wall,build/maxrss` gates on
    /// those metrics only (METRIC or WORKLOAD/METRIC): the others are
    /// still reported but do not fail the job. For CI jobs.
    #[arg(long, value_name = "VERDICT[:METRICS]", value_parser = analysis::gate::Gate::parse)]
    pub fail_on: Option<analysis::gate::Gate>,
    #[command(flatten)]
    pub export: ExportFlags,
    #[command(flatten)]
    pub benchstat: BenchstatFlags,
}

/// `--format benchstat`'s projection, with benchstat's flags and syntax
/// (`report::benchstat`).
#[derive(Args, Clone, Default)]
pub struct BenchstatFlags {
    /// benchstat layout: only results matching this benchstat filter, e.g.
    /// '/format:json .unit:sec/op' (keys .name .fullname .config .unit /SUBKEY FILEKEY).
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// benchstat layout: the keys that make a row (default .fullname).
    #[arg(long, value_name = "KEYS")]
    pub row: Option<String>,
    /// benchstat layout: the keys compared across columns (default .config).
    #[arg(long, value_name = "KEYS")]
    pub col: Option<String>,
}

impl BenchstatFlags {
    /// The layout asked for; bad input when a flag does not parse.
    pub fn layout(&self) -> Result<crate::report::benchstat::Layout> {
        crate::report::benchstat::Layout::parse(
            self.filter.as_deref(),
            self.row.as_deref(),
            self.col.as_deref(),
        )
    }
}

/// Report files written besides stdout, any together, as hyperfine's
/// --export-* options: one flag per format of `report::REGISTRY`
/// that has one, so a new format brings its flag with it.
#[derive(Clone, Default)]
pub struct ExportFlags {
    /// (format, file) in the registry's order.
    files: Vec<(Format, PathBuf)>,
}

impl ExportFlags {
    /// Each file asked for, with the format it gets.
    pub fn files(&self) -> Vec<(Format, &std::path::Path)> {
        self.files.iter().map(|(f, p)| (*f, p.as_path())).collect()
    }
}

impl clap::FromArgMatches for ExportFlags {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = ExportFlags::default();
        flags.update_from_arg_matches(m)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        for r in crate::report::REGISTRY {
            if let Some((flag, _)) = r.export {
                if let Some(p) = m.get_one::<PathBuf>(flag) {
                    self.files.retain(|(f, _)| *f != r.format);
                    self.files.push((r.format, p.clone()));
                }
            }
        }
        Ok(())
    }
}

impl clap::Args for ExportFlags {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        crate::report::REGISTRY
            .iter()
            .filter_map(|r| r.export)
            .fold(cmd, |cmd, (flag, help)| {
                cmd.arg(
                    clap::Arg::new(flag)
                        .long(flag)
                        .value_name("FILE")
                        .value_parser(clap::value_parser!(PathBuf))
                        .help(help),
                )
            })
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

/// "3s", "500ms", "3" (seconds), "0" -> seconds.
pub fn parse_min_time(s: &str) -> Result<f64, Error> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else {
        (t, 1.0)
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=86_400.0).contains(&(v * scale)) => Ok(v * scale),
        _ => Err(Error::bad(format!(
            "--min-time '{s}': expected a duration such as 3s or 500ms (at most a day)"
        ))),
    }
}

/// "ci=1%" -> 0.01.
pub fn parse_until(s: &str) -> Result<f64, Error> {
    let Some(v) = s.strip_prefix("ci=") else {
        return Err(Error::bad(format!("'{s}': expected ci=WIDTH, e.g. ci=1%")));
    };
    parse_percent(v)
}

/// "1%" or "1" -> 0.01.
pub fn parse_percent(s: &str) -> Result<f64, Error> {
    let v: f64 = s
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| Error::bad(format!("'{s}' is not a percentage (e.g. 1%)")))?;
    if !(v > 0.0 && v < 100.0) {
        return Err(Error::bad(format!(
            "'{s}': the margin must be between 0% and 100%"
        )));
    }
    Ok(v / 100.0)
}

pub fn parse_order(s: &str) -> Result<Order, Error> {
    Order::parse(s).ok_or_else(|| {
        Error::bad(format!(
            "unknown order '{s}': use random-blocks or sequential"
        ))
    })
}

pub fn overrides(e: &ExecArgs) -> Overrides {
    Overrides {
        runs: e.runs,
        warmup: e.warmup,
        seed: e.seed,
        order: e.order,
        quick: e.quick,
        until_ci: e.until,
        max_runs: e.max_runs,
        min_runs: e.min_runs,
        min_time: e.min_time,
        enough_ci: None,
        until_metrics: e.until_metrics.clone(),
        ignore_failure: e.ignore_failure,
        max_failures: e.max_failures,
        boots: e.boots,
        output: if e.show_output {
            CommandOutput::Inherit
        } else {
            match e.output.as_deref().map(CommandOutput::parse) {
                // Stored with the experiment: --resume writes to the same file
                // from wherever it is started.
                Some(CommandOutput::File(p)) => {
                    CommandOutput::File(std::path::absolute(&p).unwrap_or(p))
                }
                o => o.unwrap_or_default(),
            }
        },
    }
}

pub fn report_options(f: &ReportFlags) -> Result<ReportOptions> {
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
        time_unit: f.time_unit,
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
