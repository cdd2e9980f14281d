//! The plan's telemetry settings: the profile's rate (or its budget), and
//! the control config that measures what the monitors cost.

use toml::Spanned;

use super::model::{ConfigDef, Telemetry, WorkloadDef, WorkloadKind};
use super::position::Origin;
use crate::error::Error;
use crate::monitor::control;
use crate::monitor::profile::calibrate::DEFAULT_BUDGET;

/// Highest `profile_hz` accepted: above it each CPU spends most of its
/// time in the sampling interrupt on any machine.
pub const MAX_PROFILE_HZ: i64 = 100_000;

/// `profile_hz`, `monitor_budget` and `monitor_control` as written.
pub(super) fn parse(
    origin: &Origin,
    profile_hz: &Option<Spanned<i64>>,
    budget: &Option<Spanned<String>>,
    control: &Option<Spanned<bool>>,
) -> Result<Telemetry, Error> {
    let profile_hz = match profile_hz {
        None => None,
        Some(h) if (1..=MAX_PROFILE_HZ).contains(h.get_ref()) => Some(*h.get_ref() as u64),
        Some(h) => {
            return Err(origin.bad_at(
                h.span().start,
                format!(
                    "profile_hz {} is out of range (1 to {MAX_PROFILE_HZ})",
                    h.get_ref()
                ),
            ))
        }
    };
    let budget = match budget {
        None => DEFAULT_BUDGET,
        Some(b) => parse_percent(b.get_ref()).ok_or_else(|| {
            origin.bad_at(
                b.span().start,
                format!(
                    "monitor_budget '{}' is not a share of a CPU between 0% and 100% (e.g. \"0.5%\")",
                    b.get_ref()
                ),
            )
        })?,
    };
    Ok(Telemetry {
        profile_hz,
        budget,
        control: control.as_ref().is_none_or(|c| *c.get_ref()),
    })
}

/// "0.5%" -> 0.005; only a percentage in (0, 100].
fn parse_percent(s: &str) -> Option<f64> {
    let v: f64 = s.trim().strip_suffix('%')?.trim().parse().ok()?;
    (v > 0.0 && v <= 100.0).then_some(v / 100.0)
}

/// Add the control config, the baseline with monitors off, and the probe
/// workload it runs, when the plan asks for it (the default) and the
/// baseline runs monitors. Both are scheduled like any cell (randomized,
/// interleaved blocks; `monitor::control::cells` says which) and reported
/// as the "monitor overhead" line, not as a config or a workload. Kernel
/// configs get none: their monitors run in the guest.
pub(super) fn add_control(
    configs: &mut Vec<ConfigDef>,
    workloads: &mut Vec<WorkloadDef>,
    baseline: &str,
    plan_monitors: &[String],
    t: &Telemetry,
) {
    let Some(base) = configs.iter().find(|c| c.name == baseline) else {
        return;
    };
    if !t.control || base.kernel.is_some() || (plan_monitors.is_empty() && base.monitors.is_empty())
    {
        return;
    }
    let control = ConfigDef {
        name: crate::monitor::control_config(baseline),
        monitors: Vec::new(),
        monitors_off: true,
        ..base.clone()
    };
    configs.push(control);
    workloads.push(WorkloadDef {
        name: control::PROBE_WORKLOAD.into(),
        kind: WorkloadKind::Builtin {
            name: control::PROBE_BUILTIN.into(),
            params: toml::Value::Table(Default::default()),
        },
        timeout: PROBE_TIMEOUT,
        workdir: None,
        prepare: None,
        conclude: None,
    });
}

/// The probe's run timeout: it runs a fraction of a second.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

#[cfg(test)]
mod tests {
    use super::parse_percent;
    use crate::plan::{parse, Overrides};

    const BASE: &str = "[[config]]\nname = \"a\"\n[[config]]\nname = \"b\"\n[[workload]]\nname = \"w\"\ncommand = \"true\"\n";

    fn configs(head: &str) -> Vec<(String, bool)> {
        let p = parse("p.toml", &format!("{head}\n{BASE}"), &Overrides::default()).unwrap();
        p.configs
            .into_iter()
            .map(|c| (c.name, c.monitors_off))
            .collect()
    }

    #[test]
    fn the_control_is_the_baseline_with_monitors_off() {
        let with = configs("monitors = [\"vmstat\"]");
        assert_eq!(
            with,
            vec![
                ("a".into(), false),
                ("b".into(), false),
                ("a (monitors off)".into(), true)
            ]
        );
        let p = parse(
            "p.toml",
            &format!("monitors = [\"vmstat\"]\n{BASE}"),
            &Overrides::default(),
        )
        .unwrap();
        let names: Vec<&str> = p.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["w", crate::monitor::control::PROBE_WORKLOAD]);
        // No monitors, or asked not to: no control.
        assert_eq!(configs("").len(), 2);
        assert_eq!(
            configs("monitors = [\"vmstat\"]\nmonitor_control = false").len(),
            2
        );
        let p = parse(
            "p.toml",
            &format!("monitors = [\"profile\"]\nprofile_hz = 250\nmonitor_budget = \"1%\"\n{BASE}"),
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(p.telemetry.profile_hz, Some(250));
        assert_eq!(p.telemetry.budget, 0.01);
    }

    #[test]
    fn bad_settings_are_one_line_with_their_place() {
        let e = parse(
            "p.toml",
            &format!("profile_hz = 0\n{BASE}"),
            &Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("p.toml:1:") && e.contains("profile_hz 0"),
            "{e}"
        );
        let e = parse(
            "p.toml",
            &format!("monitor_budget = \"5\"\n{BASE}"),
            &Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("monitor_budget '5'"), "{e}");
    }

    #[test]
    fn percent() {
        assert_eq!(parse_percent("0.5%"), Some(0.005));
        assert_eq!(parse_percent(" 2 % "), Some(0.02));
        assert_eq!(parse_percent("0%"), None);
        assert_eq!(parse_percent("0.5"), None);
        assert_eq!(parse_percent("101%"), None);
    }
}
