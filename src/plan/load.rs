//! TOML plan text -> validated [`Plan`]. Every error names file:line:col.

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use super::bounds::{bounded, duration_at, flag_bounded, timeout_at};
pub use super::duration::parse_duration;
use super::items::{build_config, build_workload, default_name};
use super::model::*;
use super::position::Origin;
use super::raw::RawPlan;
use crate::error::Error;

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// Runs per cell when neither the plan nor a flag says (and `ab`'s first
/// look at its precision, without --runs).
pub const DEFAULT_RUNS: u32 = 10;
const DEFAULT_SEED: u64 = 1;

/// Read and validate a plan file.
pub fn load_file(path: &Path, ov: &Overrides) -> Result<Plan, Error> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::bad(format!("{}: cannot read plan: {e}", path.display())))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let origin = Origin {
            name: path.display().to_string(),
            text: String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        origin.bad_at(e.utf8_error().valid_up_to(), "plan is not valid UTF-8")
    })?;
    parse(&path.display().to_string(), &text, ov)
}

/// Validate plan text; `source_name` is used in messages.
pub fn parse(source_name: &str, text: &str, ov: &Overrides) -> Result<Plan, Error> {
    let origin = Origin {
        name: source_name.to_string(),
        text: text.to_string(),
    };
    let raw: RawPlan = toml::from_str(text).map_err(|e| {
        let at = e.span().map(|s| s.start).unwrap_or(0);
        origin.bad_at(at, e.message().trim())
    })?;
    build(&origin, raw, ov)
}

/// Refuse a schedule that cannot be held: configs x workloads x blocks
/// runs, counted without overflow. `at` is where the run count was set.
fn check_schedule_size(
    origin: &Origin,
    at: usize,
    configs: usize,
    workloads: usize,
    cells: usize,
    blocks: u64,
) -> Result<(), Error> {
    let total = (cells as u128) * u128::from(blocks);
    if total > MAX_SCHEDULED_RUNS.into() {
        return Err(origin.bad_at(
            at,
            format!(
                "the schedule is too large (at most {MAX_SCHEDULED_RUNS} runs): \
                 {cells} cells of {configs} configs and {workloads} workloads x {blocks} runs and \
                 warm-ups per cell = {total}; lower runs or warmup"
            ),
        ));
    }
    Ok(())
}

fn build(origin: &Origin, raw: RawPlan, ov: &Overrides) -> Result<Plan, Error> {
    let top = |m: &str| origin.bad_at(0, m);
    let mut raw = raw;
    raw.config = super::matrix::configs(origin, std::mem::take(&mut raw.config))?;
    raw.workload = super::matrix::workloads(origin, std::mem::take(&mut raw.workload))?;
    if raw.config.is_empty() {
        return Err(top(
            "plan has no [[config]]: at least one configuration is needed",
        ));
    }
    if raw.workload.is_empty() {
        return Err(top(
            "plan has no [[workload]]: at least one workload is needed",
        ));
    }

    let mut counts = run_counts(origin, &raw, ov)?;
    let order = order_of(origin, &raw, ov)?;
    let seed = match (ov.seed, &raw.seed) {
        (Some(s), _) => s,
        (None, Some(s)) => bounded(origin, s, "seed", 0, u64::MAX)?,
        (None, None) => DEFAULT_SEED,
    };
    let timeout = match &raw.timeout {
        Some(t) => timeout_at(origin, t)?,
        None => DEFAULT_TIMEOUT,
    };

    let mut configs = Vec::new();
    let mut seen = HashSet::new();
    for c in &raw.config {
        configs.push(build_config(origin, c, &mut seen)?);
    }
    let boots = kernel_boots(origin, &raw, &configs, ov)?;
    if boots > 0 {
        fit_to_boots(&mut counts, boots, ov)?;
    }
    let mut workloads = Vec::new();
    let mut seen = HashSet::new();
    let defaults = super::launch::Defaults {
        shell: raw.shell.as_ref(),
        prepare: raw.prepare.as_ref(),
        conclude: raw.conclude.as_ref(),
    };
    for w in std::mem::take(&mut raw.workload) {
        workloads.push(build_workload(
            origin, w, timeout, defaults, ov.quick, &mut seen,
        )?);
    }
    super::items::check_config_commands(origin, &raw.config, &workloads)?;
    // Kernel configs warm up in every boot; on the host, once per cell.
    let warmups = u64::from(counts.warmup) * u64::from(boots.max(1));
    let baseline = baseline_of(origin, &raw, &configs)?;
    let (monitors, monitor_interval) = monitors_of(origin, &mut raw)?;

    let telemetry = super::telemetry::parse(
        origin,
        &raw.profile_hz,
        &raw.monitor_budget,
        &raw.monitor_control,
    )?;
    super::telemetry::add_control(
        &mut configs,
        &mut workloads,
        &baseline,
        &monitors,
        &telemetry,
    );
    let cells = super::model::cells_of(&configs, &workloads, counts.runs);
    check_schedule_size(
        origin,
        counts.runs_at,
        configs.len(),
        workloads.len(),
        cells.len(),
        warmups + u64::from(counts.most_runs),
    )?;

    let name = raw
        .name
        .map(|n| n.into_inner())
        .unwrap_or_else(|| default_name(&origin.name));
    Ok(Plan {
        name,
        source_name: origin.name.clone(),
        text: origin.text.clone(),
        runs: counts.runs,
        warmup: counts.warmup,
        order,
        seed,
        baseline,
        setup: raw.setup.map(|s| s.into_inner()),
        teardown: raw.teardown.map(|s| s.into_inner()),
        configs,
        workloads,
        monitors,
        monitor_interval,
        telemetry,
        overrides: ov.clone(),
        boots,
    })
}

/// How many runs a plan asks for, as the plan and the flags decide it.
struct RunCounts {
    /// Measured runs per cell to schedule first.
    runs: u32,
    /// Where the run count was set (0: by a flag), for the schedule-size
    /// error.
    runs_at: usize,
    warmup: u32,
    /// The most measured runs per cell the schedule may reach (adaptive
    /// stopping and --min-time add blocks up to it).
    most_runs: u32,
}

/// The run and warm-up counts: the plan's, its `quick` table's under
/// `--quick`, then the flags', with adaptive stopping's and --min-time's
/// bounds.
fn run_counts(origin: &Origin, raw: &RawPlan, ov: &Overrides) -> Result<RunCounts, Error> {
    let mut runs_at = raw.runs.as_ref().map_or(0, |r| r.span().start);
    let mut runs = match &raw.runs {
        Some(r) => bounded(origin, r, "runs", 1, MAX_RUNS)?,
        None => DEFAULT_RUNS,
    };
    let mut warmup = match &raw.warmup {
        Some(w) => bounded(origin, w, "warmup", 0, MAX_WARMUP)?,
        None => 0,
    };
    if let Some(q) = &raw.quick {
        // Checked also without --quick: a plan is valid or not as a whole.
        let q = q.get_ref();
        let quick_runs = match &q.runs {
            Some(r) => Some(bounded(origin, r, "quick.runs", 1, MAX_RUNS)?),
            None => None,
        };
        let quick_warmup = match &q.warmup {
            Some(w) => Some(bounded(origin, w, "quick.warmup", 0, MAX_WARMUP)?),
            None => None,
        };
        if ov.quick {
            if let (Some(r), Some(at)) = (quick_runs, &q.runs) {
                runs = r;
                runs_at = at.span().start;
            }
            warmup = quick_warmup.unwrap_or(warmup);
        }
    }
    if let Some(r) = ov.runs {
        runs = flag_bounded("--runs", r, 1, MAX_RUNS)?;
        runs_at = 0;
    }
    let mut counts = RunCounts {
        runs,
        runs_at,
        warmup,
        most_runs: runs,
    };
    stopping_bounds(&mut counts, ov)?;
    if let Some(w) = ov.warmup {
        counts.warmup = flag_bounded("--warmup", w, 0, MAX_WARMUP)?;
    }
    Ok(counts)
}

/// What --until, --min-time, --min-runs and --max-runs make of the run
/// counts, and the contradictions between them.
fn stopping_bounds(c: &mut RunCounts, ov: &Overrides) -> Result<(), Error> {
    if ov.until_ci.is_some() {
        if ov.runs.is_some() {
            return Err(Error::bad("--until and --runs contradict each other: --until decides the runs (bound them with --max-runs)"));
        }
        let max = flag_bounded(
            "--max-runs",
            ov.max_runs.unwrap_or(ADAPTIVE_MAX_RUNS),
            2,
            MAX_RUNS,
        )?;
        c.runs = match ov.min_runs {
            Some(m) => flag_bounded("--min-runs", m, 2, max)?,
            None => ADAPTIVE_MIN_RUNS.min(max),
        };
        c.most_runs = max;
        c.runs_at = 0;
    } else if ov.min_time.is_some_and(|t| t > 0.0) {
        if ov.runs.is_some() {
            return Err(Error::bad("--min-time and --runs contradict each other: --min-time decides the runs (bound them with --min-runs and --max-runs)"));
        }
        let max = flag_bounded(
            "--max-runs",
            ov.max_runs.unwrap_or(MIN_TIME_MAX_RUNS),
            1,
            MAX_RUNS,
        )?;
        if let Some(m) = ov.min_runs {
            c.runs = flag_bounded("--min-runs", m, 1, max)?;
            c.runs_at = 0;
        }
        c.runs = c.runs.min(max);
        c.most_runs = max;
    } else if ov.max_runs.is_some() {
        return Err(Error::bad("--max-runs goes with --until or --min-time"));
    } else if let Some(m) = ov.min_runs {
        if ov.runs.is_some() {
            return Err(Error::bad("--min-runs and --runs contradict each other"));
        }
        c.runs = flag_bounded("--min-runs", m, 1, MAX_RUNS)?;
        c.most_runs = c.runs;
        c.runs_at = 0;
    }
    Ok(())
}

/// The order of runs: the flag's, else the plan's, else random blocks;
/// adaptive stopping and --min-time need random blocks.
fn order_of(origin: &Origin, raw: &RawPlan, ov: &Overrides) -> Result<Order, Error> {
    let order = match (&ov.order, &raw.order) {
        (Some(o), _) => *o,
        (None, Some(o)) => Order::parse(o.get_ref()).ok_or_else(|| {
            origin.bad_at(
                o.span().start,
                format!(
                    "unknown order '{}': use \"random-blocks\" or \"sequential\"",
                    o.get_ref()
                ),
            )
        })?,
        (None, None) => Order::RandomBlocks,
    };
    if order != Order::RandomBlocks {
        // Both add one block at a time once the last one is in.
        if ov.until_ci.is_some() {
            return Err(Error::bad(
                "--until needs random-blocks order: blocks are added one at a time",
            ));
        }
        if ov.min_time.is_some_and(|t| t > 0.0) {
            return Err(Error::bad(
                "--min-time needs random-blocks order: blocks are added one at a time (give --runs for a sequential order)",
            ));
        }
    }
    Ok(order)
}

/// Each boot runs whole rounds (every workload once per round), so the
/// runs per cell are a multiple of the boots: the next one up, or the one
/// below when that would pass the bound on runs. Adaptive stopping and
/// --min-time do not work with boots.
fn fit_to_boots(c: &mut RunCounts, boots: u32, ov: &Overrides) -> Result<(), Error> {
    c.runs = c.runs.div_ceil(boots) * boots;
    if c.runs > MAX_RUNS {
        c.runs -= boots;
    }
    c.most_runs = c.runs;
    if ov.min_time.is_some_and(|t| t > 0.0) {
        return Err(Error::bad(
            "--min-time does not work with kernel configs: give --runs and --boots",
        ));
    }
    if ov.until_ci.is_some() {
        return Err(Error::bad(
            "--until does not work with kernel configs yet: give --runs and --boots",
        ));
    }
    Ok(())
}

/// The baseline config: the plan's `baseline`, which must be one of its
/// configs, else the first.
fn baseline_of(origin: &Origin, raw: &RawPlan, configs: &[ConfigDef]) -> Result<String, Error> {
    match &raw.baseline {
        Some(b) => {
            if !configs.iter().any(|c| c.name == *b.get_ref()) {
                return Err(origin.bad_at(
                    b.span().start,
                    format!("baseline '{}' is not one of the configs", b.get_ref()),
                ));
            }
            Ok(b.get_ref().clone())
        }
        None => Ok(configs[0].name.clone()),
    }
}

/// The plan's monitors (each known, none twice) and their interval.
fn monitors_of(origin: &Origin, raw: &mut RawPlan) -> Result<(Vec<String>, Duration), Error> {
    let monitor_interval = match &raw.monitor_interval {
        Some(v) => duration_at(
            origin,
            v,
            "monitor_interval",
            crate::monitor::MIN_INTERVAL,
            MAX_MONITOR_INTERVAL,
        )?,
        None => Duration::from_secs(1),
    };
    let mut monitors = Vec::new();
    for m in raw.monitors.take().unwrap_or_default() {
        crate::monitor::build(m.get_ref(), monitor_interval)
            .map_err(|e| origin.bad_at(m.span().start, e))?;
        if monitors.contains(m.get_ref()) {
            return Err(origin.bad_at(
                m.span().start,
                format!("monitor '{}' is listed twice", m.get_ref()),
            ));
        }
        monitors.push(m.into_inner());
    }
    Ok((monitors, monitor_interval))
}

/// Boots per kernel config: 0 when no config names a kernel. Either every
/// config names one or none does: a host baseline against configs in VMs
/// would measure the VM, not the kernel.
fn kernel_boots(
    origin: &Origin,
    raw: &RawPlan,
    configs: &[ConfigDef],
    ov: &Overrides,
) -> Result<u32, Error> {
    let with = configs.iter().filter(|c| c.kernel.is_some()).count();
    if with == 0 {
        if let Some(b) = &raw.boots {
            return Err(origin.bad_at(
                b.span().start,
                "boots is for plans whose configs name a kernel ([config.kernel])",
            ));
        }
        if let Some(b) = raw.quick.as_ref().and_then(|q| q.get_ref().boots.as_ref()) {
            return Err(origin.bad_at(
                b.span().start,
                "quick.boots is for plans whose configs name a kernel ([config.kernel])",
            ));
        }
        if ov.boots.is_some() {
            return Err(Error::bad(
                "--boots is for plans whose configs name a kernel ([config.kernel])",
            ));
        }
        return Ok(0);
    }
    if with < configs.len() {
        let host = configs
            .iter()
            .find(|c| c.kernel.is_none())
            .map(|c| c.name.as_str());
        return Err(origin.bad_at(
            0,
            format!(
                "config '{}' has no [config.kernel] while others do: either every config boots a \
                 kernel or none does (a host baseline against VMs would measure the VM)",
                host.unwrap_or("?")
            ),
        ));
    }
    let mut boots = match &raw.boots {
        Some(b) => bounded(origin, b, "boots", 1, MAX_BOOTS)?,
        None => DEFAULT_BOOTS,
    };
    if let Some(q) = &raw.quick {
        if let Some(b) = &q.get_ref().boots {
            let qb = bounded(origin, b, "quick.boots", 1, MAX_BOOTS)?;
            if ov.quick {
                boots = qb;
            }
        }
    }
    if ov.quick
        && raw
            .quick
            .as_ref()
            .is_none_or(|q| q.get_ref().boots.is_none())
    {
        boots = boots.min(DEFAULT_QUICK_BOOTS);
    }
    if let Some(b) = ov.boots {
        boots = flag_bounded("--boots", b, 1, MAX_BOOTS)?;
    }
    Ok(boots)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan of one config and `n` workloads running `true`.
    fn plan(n: usize) -> String {
        let mut t = String::from("[[config]]\nname = \"a\"\n");
        for i in 0..n {
            t.push_str(&format!(
                "[[workload]]\nname = \"w{i}\"\ncommand = \"true\"\n"
            ));
        }
        t
    }

    #[test]
    fn min_runs_alone_counts_in_the_schedules_size() {
        // --min-runs alone sets the runs every cell gets: a schedule it
        // makes too large is refused like one --runs makes too large.
        for ov in [
            Overrides {
                min_runs: Some(MAX_RUNS),
                ..Default::default()
            },
            Overrides {
                runs: Some(MAX_RUNS),
                ..Default::default()
            },
        ] {
            let e = parse("p.toml", &plan(11), &ov).err().unwrap().to_string();
            assert!(e.contains("the schedule is too large"), "{e}");
        }
        let ov = Overrides {
            min_runs: Some(MAX_RUNS),
            ..Default::default()
        };
        assert_eq!(parse("p.toml", &plan(2), &ov).unwrap().runs, MAX_RUNS);
    }
}
