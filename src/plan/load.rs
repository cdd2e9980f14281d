//! TOML plan text -> validated [`Plan`]. Every error names file:line:col.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

pub use super::duration::parse_duration;
use super::duration::{as_written, seconds};
use super::model::*;
use super::position::Origin;
use crate::metric::{Direction, MetricSpec};

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
const DEFAULT_RUNS: u32 = 10;
const DEFAULT_SEED: u64 = 1;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlan {
    name: Option<Spanned<String>>,
    runs: Option<Spanned<WideInt>>,
    warmup: Option<Spanned<WideInt>>,
    order: Option<Spanned<String>>,
    seed: Option<Spanned<WideInt>>,
    timeout: Option<Spanned<toml::Value>>,
    baseline: Option<Spanned<String>>,
    setup: Option<Spanned<String>>,
    teardown: Option<Spanned<String>>,
    monitors: Option<Vec<Spanned<String>>>,
    monitor_interval: Option<Spanned<toml::Value>>,
    /// See `plan::telemetry`.
    profile_hz: Option<Spanned<i64>>,
    monitor_budget: Option<Spanned<String>>,
    monitor_control: Option<Spanned<bool>>,
    quick: Option<Spanned<RawQuick>>,
    /// Boots per kernel config (plans whose configs name kernels).
    boots: Option<Spanned<WideInt>>,
    #[serde(default)]
    config: Vec<Spanned<RawConfig>>,
    #[serde(default)]
    workload: Vec<Spanned<RawWorkload>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuick {
    runs: Option<Spanned<WideInt>>,
    warmup: Option<Spanned<WideInt>>,
    boots: Option<Spanned<WideInt>>,
}

/// A count in the plan, read as any TOML integer however large, so that
/// one that does not fit its field is refused as "too large (at most N)"
/// rather than as a type error or a wrapped-around small number.
struct WideInt(i128);

impl<'de> Deserialize<'de> for WideInt {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = WideInt;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an integer")
            }
            fn visit_i64<E>(self, v: i64) -> Result<WideInt, E> {
                Ok(WideInt(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<WideInt, E> {
                Ok(WideInt(v.into()))
            }
            fn visit_i128<E>(self, v: i128) -> Result<WideInt, E> {
                Ok(WideInt(v))
            }
            fn visit_u128<E>(self, v: u128) -> Result<WideInt, E> {
                Ok(WideInt(i128::try_from(v).unwrap_or(i128::MAX)))
            }
        }
        d.deserialize_any(Visitor)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    name: Spanned<String>,
    /// Monitors only this config runs (on top of the plan's), e.g. to
    /// measure what monitoring itself costs.
    monitors: Option<Vec<Spanned<String>>>,
    setup: Option<Spanned<String>>,
    teardown: Option<Spanned<String>>,
    env: Option<BTreeMap<String, Spanned<toml::Value>>>,
    workdir: Option<Spanned<String>>,
    ftrace: Option<Spanned<toml::Value>>,
    trace_reader: Option<Spanned<toml::Value>>,
    perf_record: Option<Spanned<toml::Value>>,
    blktrace: Option<Spanned<toml::Value>>,
    sysctl: Option<Spanned<toml::Value>>,
    cpus: Option<Spanned<toml::Value>>,
    memory_limit: Option<Spanned<toml::Value>>,
    swap: Option<Spanned<toml::Value>>,
    /// The kernel this config boots (its runs happen in a VM).
    kernel: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    name: Spanned<String>,
    command: Option<Spanned<String>>,
    builtin: Option<Spanned<String>>,
    params: Option<Spanned<toml::Value>>,
    /// Parameters that replace those in `params` under `--quick`.
    quick: Option<Spanned<toml::Value>>,
    #[serde(default)]
    metrics: Vec<Spanned<RawMetric>>,
    timeout: Option<Spanned<toml::Value>>,
    workdir: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetric {
    name: Spanned<String>,
    regex: Spanned<String>,
    unit: Option<String>,
    direction: Option<Spanned<String>>,
}

/// Read and validate a plan file.
pub fn load_file(path: &Path, ov: &Overrides) -> Result<Plan, String> {
    let bytes =
        std::fs::read(path).map_err(|e| format!("{}: cannot read plan: {e}", path.display()))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let origin = Origin {
            name: path.display().to_string(),
            text: String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        origin.at(e.utf8_error().valid_up_to(), "plan is not valid UTF-8")
    })?;
    parse(&path.display().to_string(), &text, ov)
}

/// Validate plan text; `source_name` is used in messages.
pub fn parse(source_name: &str, text: &str, ov: &Overrides) -> Result<Plan, String> {
    let origin = Origin {
        name: source_name.to_string(),
        text: text.to_string(),
    };
    let raw: RawPlan = toml::from_str(text).map_err(|e| {
        let at = e.span().map(|s| s.start).unwrap_or(0);
        origin.at(at, e.message().trim())
    })?;
    build(&origin, raw, ov)
}

/// A plan's integer `what` in `min..=max`; the error names the field and
/// the bound it crosses.
fn bounded<T>(
    origin: &Origin,
    v: &Spanned<WideInt>,
    what: &str,
    min: T,
    max: T,
) -> Result<T, String>
where
    T: Copy + Into<i128> + TryFrom<i128> + std::fmt::Display,
{
    let n = v.get_ref().0;
    let at = |msg: String| origin.at(v.span().start, msg);
    if n < min.into() {
        return Err(at(format!("{what} must be at least {min}, got {n}")));
    }
    match T::try_from(n) {
        Ok(t) if n <= max.into() => Ok(t),
        _ => Err(at(format!("{what} is too large (at most {max}), got {n}"))),
    }
}

/// A CLI count override `flag` in `min..=max`.
fn flag_bounded(flag: &str, n: u32, min: u32, max: u32) -> Result<u32, String> {
    if n < min {
        return Err(format!("{flag} must be at least {min}, got {n}"));
    }
    if n > max {
        return Err(format!("{flag} is too large (at most {max}), got {n}"));
    }
    Ok(n)
}

/// The duration `what` in `min..=max`, or an error naming its position,
/// the field and the bound.
fn duration_at(
    origin: &Origin,
    v: &Spanned<toml::Value>,
    what: &str,
    min: Duration,
    max: Duration,
) -> Result<Duration, String> {
    let at = |msg: String| origin.at(v.span().start, msg);
    let written = as_written(v.get_ref());
    let secs = seconds(v.get_ref()).map_err(|m| at(format!("{what}: {m}")))?;
    if secs > max.as_secs_f64() {
        return Err(at(format!(
            "{what} is too large (at most {}s), got {written}",
            max.as_secs()
        )));
    }
    let d = Duration::from_secs_f64(secs); // at most `max`: fits
    if d < min {
        return Err(at(format!(
            "{what} must be at least {min:?}, got {written}"
        )));
    }
    Ok(d)
}

fn timeout_at(origin: &Origin, v: &Spanned<toml::Value>) -> Result<Duration, String> {
    duration_at(origin, v, "timeout", MIN_TIMEOUT, MAX_TIMEOUT)
}

/// Refuse a schedule that cannot be held: configs x workloads x blocks
/// runs, counted without overflow. `at` is where the run count was set.
fn check_schedule_size(
    origin: &Origin,
    at: usize,
    configs: usize,
    workloads: usize,
    blocks: u64,
) -> Result<(), String> {
    let total = (configs as u128) * (workloads as u128) * u128::from(blocks);
    if total > MAX_SCHEDULED_RUNS.into() {
        return Err(origin.at(
            at,
            format!(
                "the schedule is too large (at most {MAX_SCHEDULED_RUNS} runs): \
                 {configs} configs x {workloads} workloads x {blocks} runs and warm-ups per cell \
                 = {total}; lower runs or warmup"
            ),
        ));
    }
    Ok(())
}

fn build(origin: &Origin, raw: RawPlan, ov: &Overrides) -> Result<Plan, String> {
    let top = |m: &str| origin.at(0, m);
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

    // Where the run count was set, for the schedule-size error.
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
    // The most measured runs per cell the schedule may reach.
    let mut most_runs = runs;
    if ov.until_ci.is_some() {
        if ov.runs.is_some() {
            return Err("--until and --runs contradict each other: --until decides the runs (bound them with --max-runs)".into());
        }
        let max = flag_bounded(
            "--max-runs",
            ov.max_runs.unwrap_or(ADAPTIVE_MAX_RUNS),
            2,
            MAX_RUNS,
        )?;
        runs = ADAPTIVE_MIN_RUNS.min(max);
        most_runs = max;
        runs_at = 0;
    } else if ov.max_runs.is_some() {
        return Err("--max-runs goes with --until".into());
    }
    if let Some(w) = ov.warmup {
        warmup = flag_bounded("--warmup", w, 0, MAX_WARMUP)?;
    }
    let order = match (&ov.order, &raw.order) {
        (Some(o), _) => *o,
        (None, Some(o)) => Order::parse(o.get_ref()).ok_or_else(|| {
            origin.at(
                o.span().start,
                format!(
                    "unknown order '{}': use \"random-blocks\" or \"sequential\"",
                    o.get_ref()
                ),
            )
        })?,
        (None, None) => Order::RandomBlocks,
    };
    if ov.until_ci.is_some() && order != Order::RandomBlocks {
        return Err("--until needs random-blocks order: blocks are added one at a time".into());
    }
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
        // Each boot runs whole rounds (every workload once per round), so
        // the runs per cell are a multiple of the boots: the next one up,
        // or the one below when that would pass the bound on runs.
        runs = runs.div_ceil(boots) * boots;
        if runs > MAX_RUNS {
            runs -= boots;
        }
        most_runs = runs;
        if ov.until_ci.is_some() {
            return Err(
                "--until does not work with kernel configs yet: give --runs and --boots".into(),
            );
        }
    }
    let mut workloads = Vec::new();
    let mut seen = HashSet::new();
    for w in raw.workload {
        workloads.push(build_workload(origin, w, timeout, ov.quick, &mut seen)?);
    }
    // Kernel configs warm up in every boot; on the host, once per cell.
    let warmups = u64::from(warmup) * u64::from(boots.max(1));
    check_schedule_size(
        origin,
        runs_at,
        configs.len(),
        workloads.len(),
        warmups + u64::from(most_runs),
    )?;

    let baseline = match &raw.baseline {
        Some(b) => {
            if !configs.iter().any(|c| c.name == *b.get_ref()) {
                return Err(origin.at(
                    b.span().start,
                    format!("baseline '{}' is not one of the configs", b.get_ref()),
                ));
            }
            b.get_ref().clone()
        }
        None => configs[0].name.clone(),
    };

    let monitor_decls = raw.monitors.unwrap_or_default();
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
    for m in monitor_decls {
        crate::monitor::build(m.get_ref(), monitor_interval)
            .map_err(|e| origin.at(m.span().start, e))?;
        if monitors.contains(m.get_ref()) {
            return Err(origin.at(
                m.span().start,
                format!("monitor '{}' is listed twice", m.get_ref()),
            ));
        }
        monitors.push(m.into_inner());
    }

    let telemetry = super::telemetry::parse(
        origin,
        &raw.profile_hz,
        &raw.monitor_budget,
        &raw.monitor_control,
    )?;
    super::telemetry::add_control(&mut configs, &baseline, &monitors, &telemetry);
    check_schedule_size(
        origin,
        runs_at,
        configs.len(),
        workloads.len(),
        warmups + u64::from(most_runs),
    )?;

    let name = raw
        .name
        .map(|n| n.into_inner())
        .unwrap_or_else(|| default_name(&origin.name));
    Ok(Plan {
        name,
        source_name: origin.name.clone(),
        text: origin.text.clone(),
        runs,
        warmup,
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

/// Boots per kernel config: 0 when no config names a kernel. Either every
/// config names one or none does: a host baseline against configs in VMs
/// would measure the VM, not the kernel.
fn kernel_boots(
    origin: &Origin,
    raw: &RawPlan,
    configs: &[ConfigDef],
    ov: &Overrides,
) -> Result<u32, String> {
    let with = configs.iter().filter(|c| c.kernel.is_some()).count();
    if with == 0 {
        if let Some(b) = &raw.boots {
            return Err(origin.at(
                b.span().start,
                "boots is for plans whose configs name a kernel ([config.kernel])",
            ));
        }
        if let Some(b) = raw.quick.as_ref().and_then(|q| q.get_ref().boots.as_ref()) {
            return Err(origin.at(
                b.span().start,
                "quick.boots is for plans whose configs name a kernel ([config.kernel])",
            ));
        }
        if ov.boots.is_some() {
            return Err(
                "--boots is for plans whose configs name a kernel ([config.kernel])".into(),
            );
        }
        return Ok(0);
    }
    if with < configs.len() {
        let host = configs
            .iter()
            .find(|c| c.kernel.is_none())
            .map(|c| c.name.as_str());
        return Err(origin.at(
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

fn default_name(source: &str) -> String {
    Path::new(source)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "experiment".into())
}

fn check_name(
    origin: &Origin,
    n: &Spanned<String>,
    what: &str,
    seen: &mut HashSet<String>,
) -> Result<String, String> {
    let name = n.get_ref();
    if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(origin.at(
            n.span().start,
            format!("{what} name '{name}' must be non-empty without spaces"),
        ));
    }
    if !seen.insert(name.clone()) {
        return Err(origin.at(n.span().start, format!("duplicate {what} name '{name}'")));
    }
    Ok(name.clone())
}

fn build_config(
    origin: &Origin,
    c: &Spanned<RawConfig>,
    seen: &mut HashSet<String>,
) -> Result<ConfigDef, String> {
    let rc = c.get_ref();
    let name = check_name(origin, &rc.name, "config", seen)?;
    let mut env = Vec::new();
    for (k, v) in rc.env.iter().flatten() {
        let val = match v.get_ref() {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            other => {
                return Err(origin.at(
                    v.span().start,
                    format!("env {k}: expected a string, got {}", other.type_str()),
                ))
            }
        };
        if k.is_empty() || k.contains('=') || k.contains('\0') {
            return Err(origin.at(v.span().start, format!("env name '{k}' is not valid")));
        }
        env.push((k.clone(), val));
    }
    let mut kinds = Vec::new();
    let decls = [
        ("ftrace", &rc.ftrace),
        ("trace_reader", &rc.trace_reader),
        ("perf_record", &rc.perf_record),
        ("blktrace", &rc.blktrace),
        ("sysctl", &rc.sysctl),
        ("cpus", &rc.cpus),
        ("memory_limit", &rc.memory_limit),
        ("swap", &rc.swap),
    ];
    for (kind, v) in decls {
        if let Some(v) = v {
            kinds.push(KindDecl {
                kind: kind.to_string(),
                value: v.get_ref().clone(),
                at: origin.at(v.span().start, format!("config '{name}', {kind}")),
            });
        }
    }
    let kernel = rc
        .kernel
        .as_ref()
        .map(|k| super::kernel::parse(origin, &name, k))
        .transpose()?;
    let mut monitors = Vec::new();
    for m in rc.monitors.iter().flatten() {
        if !crate::monitor::NAMES.contains(&m.get_ref().as_str()) {
            return Err(origin.at(
                m.span().start,
                format!(
                    "unknown monitor '{}'; known monitors: {}",
                    m.get_ref(),
                    crate::monitor::NAMES.join(", ")
                ),
            ));
        }
        monitors.push(m.get_ref().clone());
    }
    Ok(ConfigDef {
        name,
        monitors,
        monitors_off: false,
        setup: rc.setup.as_ref().map(|s| s.get_ref().clone()),
        teardown: rc.teardown.as_ref().map(|s| s.get_ref().clone()),
        env,
        workdir: workdir(origin, &rc.workdir)?,
        kinds,
        kernel,
    })
}

fn workdir(origin: &Origin, w: &Option<Spanned<String>>) -> Result<Option<PathBuf>, String> {
    match w {
        None => Ok(None),
        Some(w) => {
            let p = PathBuf::from(w.get_ref());
            if !p.is_dir() {
                return Err(origin.at(
                    w.span().start,
                    format!("workdir '{}' is not a directory", p.display()),
                ));
            }
            Ok(Some(p))
        }
    }
}

fn build_workload(
    origin: &Origin,
    w: Spanned<RawWorkload>,
    default_timeout: Duration,
    quick: bool,
    seen: &mut HashSet<String>,
) -> Result<WorkloadDef, String> {
    let start = w.span().start;
    let rw = w.into_inner();
    let name = check_name(origin, &rw.name, "workload", seen)?;
    let timeout = match &rw.timeout {
        Some(t) => timeout_at(origin, t)?,
        None => default_timeout,
    };
    let kind = match (&rw.command, &rw.builtin) {
        (Some(_), Some(b)) => {
            return Err(origin.at(
                b.span().start,
                format!("workload '{name}' has both command and builtin"),
            ))
        }
        (None, None) => {
            return Err(origin.at(
                start,
                format!("workload '{name}' needs a command or a builtin"),
            ))
        }
        (Some(cmd), None) => {
            if let Some(p) = rw.params.as_ref().or(rw.quick.as_ref()) {
                return Err(origin.at(p.span().start, "params and quick are for builtin workloads"));
            }
            check_command_exists(cmd.get_ref()).map_err(|m| origin.at(cmd.span().start, m))?;
            let mut metrics = Vec::new();
            let mut mseen: HashSet<String> = crate::workload::command::TIMING_METRICS
                .iter()
                .map(|m| m.to_string())
                .collect();
            for m in &rw.metrics {
                metrics.push(build_regex_metric(origin, m, &mut mseen)?);
            }
            WorkloadKind::Command {
                command: cmd.get_ref().clone(),
                metrics,
            }
        }
        (None, Some(b)) => {
            if let Some(m) = rw.metrics.first() {
                return Err(origin.at(
                    m.span().start,
                    "metrics with a regex are for command workloads",
                ));
            }
            let mut params = rw
                .params
                .map(|p| p.into_inner())
                .unwrap_or_else(|| toml::Value::Table(Default::default()));
            if let Some(q) = &rw.quick {
                let (Some(qt), Some(pt)) = (q.get_ref().as_table(), params.as_table_mut()) else {
                    return Err(origin.at(q.span().start, "quick and params must be tables"));
                };
                if quick {
                    for (k, v) in qt {
                        pt.insert(k.clone(), v.clone());
                    }
                }
            }
            WorkloadKind::Builtin {
                name: b.get_ref().clone(),
                params,
            }
        }
    };
    if let WorkloadKind::Builtin { name: b, params } = &kind {
        crate::workload::registry::validate(b, params).map_err(|m| {
            let at = rw.builtin.as_ref().map(|s| s.span().start).unwrap_or(start);
            origin.at(at, format!("workload '{name}': {m}"))
        })?;
    }
    Ok(WorkloadDef {
        name,
        kind,
        timeout,
        workdir: workdir(origin, &rw.workdir)?,
    })
}

fn build_regex_metric(
    origin: &Origin,
    m: &Spanned<RawMetric>,
    seen: &mut HashSet<String>,
) -> Result<RegexMetric, String> {
    let rm = m.get_ref();
    let name = check_name(origin, &rm.name, "metric", seen)?;
    let regex = regex::bytes::Regex::new(rm.regex.get_ref()).map_err(|e| {
        origin.at(
            rm.regex.span().start,
            format!("metric '{name}': bad regex: {}", regex_error(&e)),
        )
    })?;
    let has_value_group = regex.capture_names().any(|n| n == Some("value"));
    if !has_value_group && regex.captures_len() < 2 {
        return Err(origin.at(
            rm.regex.span().start,
            format!(
                "metric '{name}': regex needs a capture group (named 'value' or the first group)"
            ),
        ));
    }
    let direction = match &rm.direction {
        None => Direction::Lower,
        Some(d) => Direction::parse(d.get_ref()).ok_or_else(|| {
            origin.at(
                d.span().start,
                format!(
                    "direction must be \"lower\" or \"higher\", got '{}'",
                    d.get_ref()
                ),
            )
        })?,
    };
    Ok(RegexMetric {
        spec: MetricSpec::new(&name, rm.unit.as_deref().unwrap_or(""), direction),
        regex,
    })
}

/// A regex error in one line: a syntax error's last line says what is
/// wrong (the lines above draw the pattern with a caret under it).
fn regex_error(e: &regex::Error) -> String {
    let text = e.to_string();
    let last = text.lines().map(str::trim).rfind(|l| !l.is_empty());
    last.unwrap_or("").trim_start_matches("error: ").to_string()
}

const SHELL_WORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "{",
    "}", "(", "!", "cd", "export", "exec", "eval", "set", "unset", "test", "[", "true", "false",
    ":", ".", "echo", "printf", "read", "exit", "return", "trap", "wait", "ulimit", "umask",
    "time", "command", "type", "kill", "shift",
];

/// Check that the first program of a shell command can be found, so a typo
/// fails validation instead of failing every run.
pub fn check_command_exists(cmd: &str) -> Result<(), String> {
    let first_line = cmd
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'));
    let Some(line) = first_line else {
        return Err("command is empty".into());
    };
    let words = match shlex::split(line) {
        Some(w) => w,
        None => return Ok(()), // unbalanced quoting on the first line of a multi-line script
    };
    let Some(prog) = words
        .into_iter()
        .find(|w| !w.contains('=') || w.starts_with('='))
    else {
        return Ok(()); // only assignments
    };
    if SHELL_WORDS.contains(&prog.as_str())
        || prog.contains('$')
        || prog.contains('`')
        || prog.starts_with('(')
    {
        return Ok(());
    }
    let prog = prog.trim_end_matches(';');
    if prog.contains('/') {
        let p = Path::new(prog);
        return if p.exists() {
            Ok(())
        } else {
            Err(format!("command not found: '{prog}' does not exist"))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let cand = dir.join(prog);
        if let Ok(md) = cand.metadata() {
            use std::os::unix::fs::PermissionsExt;
            if md.is_file() && md.permissions().mode() & 0o111 != 0 {
                return Ok(());
            }
        }
    }
    Err(format!("command not found: '{prog}' is not on PATH"))
}
