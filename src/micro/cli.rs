//! `sysdelta micro`: run the suite once (or `--repeat N` times) and print
//! the LMbench 2.0 summary tables; `--export-json FILE` writes every sample.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::catalog::catalog;
use super::harness::cov;
use super::selection::Selection;
use super::table::{fmt_value, print_lmbench_tables};
use super::{
    run_suite_with_plans, MicroOptions, MicroOutcome, MicroResult, Pinning, PrecisionOptions,
    SamplePlan, SemRingParams,
};
use crate::error::Error;

#[derive(clap::Args, Debug, Clone, Default)]
pub struct MicroArgs {
    /// Benchmarks to run: metric names (proc.null_call), groups (proc,
    /// select, ctx, lat, bw, fs, vm, mem, sem, floor) or `prefix*`; all if none.
    pub filter: Vec<String>,
    /// Quick mode: 11 samples of >= 10 ms per metric (the full suite uses 21
    /// of >= 20 ms).
    #[arg(long)]
    pub quick: bool,
    /// Run the suite this many times and report run-to-run variation.
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Write every sample of every run as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Placement of single-process and ring benchmarks: unpinned or same-cpu
    /// (two-process IPC benchmarks always also run same-cpu and cross-cpu).
    #[arg(long, default_value = "unpinned")]
    pub pin: String,
    /// Samples kept per metric (at least 11).
    #[arg(long)]
    pub samples: Option<usize>,
    /// Minimum sample duration in milliseconds (at least 10).
    #[arg(long)]
    pub min_sample_ms: Option<u64>,
    /// Precision mode: target run-to-run CoV of each metric's value, in
    /// percent. Sample length and count are chosen per metric from a pilot
    /// so that the expected CoV meets it within --budget (with
    /// --min-sample-ms the sample length is fixed and only the count is
    /// chosen). Prints the expected and the measured spread.
    #[arg(long, value_name = "PERCENT", allow_negative_numbers = true)]
    pub target_cov: Option<f64>,
    /// Precision mode: time for the kept samples of the whole selection per
    /// run ("600", "90s", "10m"), shared equally among the metrics;
    /// calibration and the pilot (5 samples per metric) come on top.
    #[arg(long, value_name = "DURATION")]
    pub budget: Option<String>,
    /// Run each metric that has an LMbench 3 counterpart side by side with
    /// the LMbench binary in DIR (its bin/<os> directory), interleaved,
    /// --repeat rounds (at least 5), and print the sysdelta/LMbench ratio
    /// table. LMbench's sample length (ENOUGH) is set to --min-sample-ms.
    #[arg(long, value_name = "DIR")]
    pub against_lmbench: Option<PathBuf>,
    /// Directory for scratch files (default: $TMPDIR or /tmp).
    #[arg(long)]
    pub tmpdir: Option<PathBuf>,
    /// Restrict the suite to these CPUs, e.g. "0,1".
    #[arg(long)]
    pub cpus: Option<String>,
    /// semring: number of semaphore groups (semopbench -g).
    #[arg(long, allow_negative_numbers = true)]
    pub sem_groups: Option<i64>,
    /// semring: semaphores (= processes) per group (semopbench -s).
    #[arg(long, allow_negative_numbers = true)]
    pub sem_sems: Option<i64>,
    /// semring: laps of the token around each ring (semopbench -n).
    #[arg(long, allow_negative_numbers = true)]
    pub sem_laps: Option<i64>,
    /// List the benchmark names and exit.
    #[arg(long)]
    pub list: bool,
    /// No progress lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

fn positive(v: Option<i64>, what: &str, default: usize) -> Result<usize, Error> {
    match v {
        None => Ok(default),
        Some(x) if x > 0 => Ok(x as usize),
        Some(x) => Err(Error::bad(format!(
            "micro: --{what} must be positive, got {x}"
        ))),
    }
}

/// Precision mode from a target CoV (percent) and a budget, both or
/// neither; `fix_sample`: the user set the sample length. `cov_key` and
/// `budget_key` name the settings in messages (CLI flags or plan keys).
pub fn precision(
    target_cov: Option<f64>,
    budget: Option<&str>,
    fix_sample: bool,
    cov_key: &str,
    budget_key: &str,
) -> Result<Option<PrecisionOptions>, Error> {
    match (target_cov, budget) {
        (None, None) => Ok(None),
        (Some(_), None) | (None, Some(_)) => Err(Error::bad(format!(
            "micro: precision mode needs both {cov_key} and {budget_key}"
        ))),
        (Some(c), Some(b)) => {
            let budget = crate::workload::memsweep::parse_duration(b)
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    Error::bad(format!(
                        "micro: {budget_key} {b:?}: expected a positive duration such as 600, \"90s\" or \"10m\""
                    ))
                })?;
            if !(c > 0.0 && c <= 100.0) {
                return Err(Error::bad(format!(
                    "micro: {cov_key} must be a percentage above 0 and at most 100, got {c}"
                )));
            }
            Ok(Some(PrecisionOptions {
                target_cov: c / 100.0,
                budget,
                fix_sample,
            }))
        }
    }
}

/// Turn the arguments into a selection and options (all checks of user
/// input happen here or in `MicroOptions::validate`).
pub fn options(args: &MicroArgs) -> Result<(Selection, MicroOptions), Error> {
    let sel = Selection::parse(&args.filter)?;
    let mut o = if args.quick {
        MicroOptions::quick()
    } else {
        MicroOptions::full()
    };
    o.pin = Pinning::parse(&args.pin).ok_or_else(|| {
        Error::bad(format!(
            "micro: --pin {:?}: expected unpinned or same-cpu",
            args.pin
        ))
    })?;
    if let Some(s) = args.samples {
        o.samples = s;
    }
    if let Some(ms) = args.min_sample_ms {
        o.min_sample = Duration::from_millis(ms);
    }
    if let Some(t) = &args.tmpdir {
        o.tmpdir = t.clone();
    }
    if let Some(c) = &args.cpus {
        let cpus: Result<Vec<usize>, _> = c.split(',').map(|x| x.trim().parse()).collect();
        o.cpus =
            Some(cpus.map_err(|_| Error::bad(format!("micro: --cpus {c:?}: expected e.g. 0,1")))?);
    }
    o.semring = SemRingParams {
        groups: positive(args.sem_groups, "sem-groups", o.semring.groups)?,
        sems: positive(args.sem_sems, "sem-sems", o.semring.sems)?,
        laps: positive(args.sem_laps, "sem-laps", o.semring.laps)?,
    };
    if args.repeat == 0 {
        return Err(Error::bad("micro: --repeat must be at least 1"));
    }
    o.precision = precision(
        args.target_cov,
        args.budget.as_deref(),
        args.min_sample_ms.is_some(),
        "--target-cov",
        "--budget",
    )?;
    o.validate()?;
    o.progress = !args.quiet;
    Ok((sel, o))
}

/// `sysdelta micro` with its own SIGINT/SIGTERM handling.
pub fn run(args: &MicroArgs) -> anyhow::Result<()> {
    let cancel = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&cancel))?;
    }
    run_with_cancel(args, &cancel, &mut std::io::stdout().lock())
}

/// `sysdelta micro` with a caller-owned cancel flag, printing to `out`.
pub fn run_with_cancel(
    args: &MicroArgs,
    cancel: &AtomicBool,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    if args.list {
        for e in catalog() {
            writeln!(
                out,
                "{:<24} {:<7} {:<5} {}",
                e.name,
                e.group,
                e.unit,
                e.column()
            )?;
        }
        return Ok(());
    }
    let (sel, opts) = options(args)?;
    if let Some(dir) = &args.against_lmbench {
        return super::against::run(dir, args.repeat, args.quiet, &sel, &opts, cancel, out);
    }
    let t0 = Instant::now();
    let mut runs: Vec<(String, Vec<MicroOutcome>)> = Vec::new();
    let mut plans: Vec<Vec<(String, Option<SamplePlan>)>> = Vec::new();
    for i in 0..args.repeat {
        let t = Instant::now();
        let (o, p): (Vec<MicroOutcome>, Vec<Option<SamplePlan>>) =
            run_suite_with_plans(&sel, &opts, cancel)?
                .into_iter()
                .unzip();
        plans.push(
            o.iter()
                .map(|x| x.name().to_string())
                .zip(p)
                .collect::<Vec<_>>(),
        );
        if !args.quiet {
            eprintln!(
                "micro: run {} of {}: {} metrics in {:.1} s",
                i + 1,
                args.repeat,
                o.len(),
                t.elapsed().as_secs_f64()
            );
        }
        runs.push((format!("run {}", i + 1), o));
    }
    let rows: Vec<(String, Vec<MicroResult>)> = runs
        .iter()
        .map(|(l, o)| {
            let label = if args.repeat == 1 {
                hostname()
            } else {
                l.clone()
            };
            let rs = o
                .iter()
                .filter_map(|x| match x {
                    MicroOutcome::Measured(r) => Some(r.clone()),
                    MicroOutcome::Skipped { .. } => None,
                })
                .collect();
            (label, rs)
        })
        .collect();
    print_lmbench_tables(&rows, false, out)?;
    print_skipped(&runs[0].1, out)?;
    if args.repeat > 1 {
        print_variation(&rows, out)?;
    }
    if let Some(p) = &opts.precision {
        print_precision(p, &plans, &rows, out)?;
    }
    writeln!(
        out,
        "\n{} run(s), {:.1} s wall, {} mode, {}{} samples per metric",
        args.repeat,
        t0.elapsed().as_secs_f64(),
        if opts.quick { "quick" } else { "full" },
        if opts.precision.is_some() {
            "precision mode, at least "
        } else {
            ""
        },
        opts.samples
    )?;
    if let Some(p) = &args.export_json {
        let doc = serde_json::json!({
            "quick": opts.quick,
            "samples_per_metric": opts.samples,
            "min_sample_ms": opts.min_sample.as_millis() as u64,
            "semring": opts.semring,
            "precision": opts.precision.map(|p| serde_json::json!({
                "target_cov": p.target_cov,
                "budget_s": p.budget.as_secs_f64(),
                "fixed_sample": p.fix_sample,
            })),
            "sample_plans": plans.iter().map(|r| r.iter().filter_map(|(n, p)| p.as_ref().map(|p| serde_json::json!({"name": n, "plan": p}))).collect::<Vec<_>>()).collect::<Vec<_>>(),
            "runs": runs.iter().map(|(l, o)| serde_json::json!({"label": l, "outcomes": o})).collect::<Vec<_>>(),
        });
        std::fs::write(p, serde_json::to_string_pretty(&doc)?)
            .map_err(|e| anyhow::anyhow!("micro: cannot write {}: {e}", p.display()))?;
    }
    Ok(())
}

fn hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .map(|h| h.chars().take(12).collect())
        .unwrap_or_else(|| "this".into())
}

fn print_skipped(o: &[MicroOutcome], out: &mut dyn Write) -> std::io::Result<()> {
    let skipped: Vec<_> = o
        .iter()
        .filter_map(|x| match x {
            MicroOutcome::Skipped { name, reason } => Some((name, reason)),
            _ => None,
        })
        .collect();
    if skipped.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nSkipped (could not run here)")?;
    writeln!(out, "----------------------------")?;
    for (n, r) in skipped {
        writeln!(out, "{n:<24} {r}")?;
    }
    Ok(())
}

/// Precision mode: per metric, the chosen sample length and count, the
/// spread the model expected, the spread this run's samples show, and with
/// --repeat the run-to-run spread of the medians (the one that matters).
fn print_precision(
    p: &PrecisionOptions,
    plans: &[Vec<(String, Option<SamplePlan>)>],
    rows: &[(String, Vec<MicroResult>)],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let title = format!(
        "Precision: target CoV {:.2} %, budget {:.0} s per run{}",
        p.target_cov * 100.0,
        p.budget.as_secs_f64(),
        if p.fix_sample {
            ", sample length fixed"
        } else {
            ""
        }
    );
    writeln!(out, "\n{title}")?;
    writeln!(out, "{}", "-".repeat(title.len()))?;
    writeln!(
        out,
        "{:<24} {:>10} {:>7} {:>9} {:>10} {:>10} {:>10}",
        "metric", "sample ms", "samples", "pilot %", "expected %", "measured %", "run-to-run %"
    )?;
    let Some(first) = plans.first() else {
        return Ok(());
    };
    for (name, plan) in first {
        let Some(pl) = plan else {
            writeln!(out, "{name:<24} (fixed workload, not planned)")?;
            continue;
        };
        // Over runs: the mean of the per-run figures.
        let all: Vec<&SamplePlan> = plans
            .iter()
            .filter_map(|r| r.iter().find(|(n, _)| n == name)?.1.as_ref())
            .collect();
        let mean = |f: &dyn Fn(&SamplePlan) -> f64| {
            all.iter().map(|x| f(x)).sum::<f64>() / all.len() as f64
        };
        let meds: Vec<f64> = rows
            .iter()
            .filter_map(|(_, rs)| rs.iter().find(|x| &x.name == name).map(|x| x.median))
            .collect();
        let r2r = if meds.len() > 1 {
            format!("{:.2}", cov(&meds) * 100.0)
        } else {
            "-".into()
        };
        writeln!(
            out,
            "{:<24} {:>10.0} {:>7} {:>9.2} {:>10.2} {:>10.2} {:>10}{}",
            name,
            mean(&|x| x.sample_ms),
            pl.samples,
            mean(&|x| x.pilot_cov) * 100.0,
            mean(&|x| x.expected_cov) * 100.0,
            mean(&|x| x.measured_cov) * 100.0,
            r2r,
            if all.iter().any(|x| x.budget_limited) {
                "  (budget-limited)"
            } else {
                ""
            }
        )?;
    }
    writeln!(
        out,
        "expected: the model (noise averaging out with sample length and count); measured: this run's samples (1.25 x CoV / sqrt(n)); run-to-run: CoV of the per-run medians (--repeat)"
    )?;
    Ok(())
}

/// Run-to-run coefficient of variation of each metric's per-run median.
fn print_variation(
    rows: &[(String, Vec<MicroResult>)],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(
        out,
        "\nRun-to-run variation of the per-run medians ({} runs)",
        rows.len()
    )?;
    writeln!(out, "-----------------------------------------------------")?;
    writeln!(
        out,
        "{:<24} {:>6} {:>12} {:>8}",
        "metric", "unit", "median", "CoV %"
    )?;
    for r in &rows[0].1 {
        let meds: Vec<f64> = rows
            .iter()
            .filter_map(|(_, rs)| rs.iter().find(|x| x.name == r.name).map(|x| x.median))
            .collect();
        writeln!(
            out,
            "{:<24} {:>6} {:>12} {:>8.2}",
            r.name,
            r.unit,
            fmt_value(super::harness::median(&meds)),
            cov(&meds) * 100.0
        )?;
    }
    Ok(())
}
