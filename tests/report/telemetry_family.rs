//! Telemetry is its own family: the report of a plan with a monitor gives
//! the workload's own metrics exactly the verdicts and p-values of the same
//! plan without it. Before, one monitor's few dozen metrics joined the Holm
//! family and took the power from the headline: a true +1.5% shift that a
//! plan without monitors flags became "~".

use std::collections::BTreeMap;

use sysdelta::analysis::{self, Analysis, Options, Verdict};
use sysdelta::metric::{Direction, MetricSpec};
use sysdelta::plan::Overrides;
use sysdelta::report::{self, Format, ReportOptions};
use sysdelta::store::{ExperimentData, ExperimentInfo, StoredMetric, StoredRun};

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// 4 configs x 2 workloads, 12 runs each; `slow` is +1.5% on wall (CoV
/// about 1%). With `monitor`, every run also has 40 vmstat-like metrics.
fn data(monitor: bool) -> ExperimentData {
    let configs: Vec<String> = ["base", "slow", "same", "other"].map(String::from).to_vec();
    let mut metrics = Vec::new();
    for w in ["a", "b"] {
        metrics.push(StoredMetric {
            workload: w.into(),
            spec: MetricSpec::new("wall", "s", Direction::Lower),
        });
        metrics.push(StoredMetric {
            workload: w.into(),
            spec: MetricSpec::new("user", "s", Direction::Lower),
        });
        if monitor {
            for k in 0..40 {
                metrics.push(StoredMetric {
                    workload: w.into(),
                    spec: MetricSpec::new(&format!("vmstat.m{k}"), "1/s", Direction::Lower),
                });
            }
        }
    }
    // The headline values come from their own stream, so they are the
    // same with and without the monitor's.
    let mut head = Lcg(7);
    let mut tele = Lcg(99);
    let mut runs = Vec::new();
    let mut id = 0;
    for block in 0..12u32 {
        for (ci, c) in configs.iter().enumerate() {
            for w in ["a", "b"] {
                id += 1;
                let mut samples = BTreeMap::new();
                let f = if ci == 1 { 1.015 } else { 1.0 };
                samples.insert("wall".into(), vec![f * (1.0 + 0.03 * head.next())]);
                samples.insert("user".into(), vec![0.5 + 0.02 * head.next()]);
                if monitor {
                    for k in 0..40 {
                        samples.insert(format!("vmstat.m{k}"), vec![100.0 + 10.0 * tele.next()]);
                    }
                }
                runs.push(StoredRun {
                    started_at: id as f64,
                    ..StoredRun::ok(id, block, id as u32, c, w, samples)
                });
            }
        }
    }
    ExperimentData {
        info: ExperimentInfo {
            id: 1,
            name: "family".into(),
            label: None,
            plan_source: "family.toml".into(),
            plan_text: String::new(),
            overrides: Overrides::default(),
            host: "h".into(),
            fingerprint: BTreeMap::new(),
            seed: 1,
            order: "random-blocks".into(),
            runs_per_cell: 12,
            warmup: 0,
            baseline: "base".into(),
            created_at: "2026-01-01 00:00:00".into(),
            finished_at: None,
            status: sysdelta::status::ExperimentStatus::Complete,
            entered_config: None,
            self_usage: None,
            fleet_id: None,
            fleet_host: None,
            configs,
            workloads: vec!["a".into(), "b".into()],
        },
        metrics,
        runs,
        events: Vec::new(),
        series: Vec::new(),
        profiles: Vec::new(),
        boots: Vec::new(),
    }
}

/// (workload, metric, config, p, adjusted p, verdict) of a comparison.
type Row = (String, String, String, Option<f64>, Option<f64>, Verdict);

fn headline(a: &Analysis) -> Vec<Row> {
    a.metrics
        .iter()
        .filter(|m| !m.spec.name.starts_with("vmstat."))
        .flat_map(|m| {
            m.comparisons.iter().map(move |c| {
                (
                    m.workload.clone(),
                    m.spec.name.clone(),
                    c.config.clone(),
                    c.p,
                    c.p_adjusted,
                    c.verdict,
                )
            })
        })
        .collect()
}

#[test]
fn a_monitor_changes_no_headline_p_value_or_verdict() {
    let opts = Options::default();
    let without = analysis::analyze(&data(false), &opts).unwrap();
    let with = analysis::analyze(&data(true), &opts).unwrap();
    assert_eq!(headline(&without), headline(&with));
    assert_eq!(without.n_comparisons, with.n_comparisons);
    assert_eq!(with.n_telemetry_comparisons, 2 * 40 * 3);
    // And the shift is found: the family is not just equal, it has power.
    let slow_wall = headline(&with)
        .into_iter()
        .filter(|h| h.1 == "wall" && h.2 == "slow")
        .map(|h| h.5)
        .collect::<Vec<_>>();
    assert_eq!(slow_wall, vec![Verdict::Worse, Verdict::Worse]);
    // One Holm family over all 252 comparisons would have lost one of
    // the two (its p of 0.00066 x 252 is 0.17).
    let all: Vec<f64> = with
        .metrics
        .iter()
        .flat_map(|m| m.comparisons.iter().filter_map(|c| c.p))
        .collect();
    let pooled = sysdelta::stats::multiple::holm(&all);
    let lost = with
        .metrics
        .iter()
        .flat_map(|m| m.comparisons.iter().map(move |c| (m, c)))
        .zip(&pooled)
        .filter(|((m, c), _)| m.spec.name == "wall" && c.config == "slow")
        .any(|(_, p)| *p >= 0.05);
    let p: Vec<_> = headline(&with)
        .into_iter()
        .filter(|h| h.1 == "wall" && h.2 == "slow")
        .map(|h| (h.3, h.4))
        .collect();
    assert!(lost, "one family should have masked the +1.5% shift: {p:?}");
}

#[test]
fn the_report_says_telemetry_is_its_own_family() {
    let opts = ReportOptions {
        format: Format::Text,
        detail: false,
        trim: None,
        time_unit: None,
        analysis: Options::default(),
    };
    let with = report::render(&data(true), &opts).unwrap();
    assert!(
        with.contains("Telemetry (the monitors' metrics") && with.contains("240 comparisons"),
        "{with}"
    );
    // A plan without monitors reads as before.
    let without = report::render(&data(false), &opts).unwrap();
    assert!(!without.contains("Telemetry"), "{without}");
}
