//! Reports of an experiment run on the host (no boots) are byte-identical
//! to the committed goldens in every format, plan-runs included: any
//! change to what a host report prints shows up here as a diff to review.
//! The goldens were first written before boots entered the statistics (so
//! kernels changed nothing for host experiments) and are rewritten after
//! each intended change of the host report (issue 19's units, tables,
//! marks and formats were the last) with
//! `SYSDELTA_UPDATE_GOLDEN=1 cargo test --release --test report host_golden`.

use std::collections::BTreeMap;

use sysdelta::analysis;
use sysdelta::commands::plan_runs;
use sysdelta::metric::{Direction, MetricSpec};
use sysdelta::plan::Overrides;
use sysdelta::report::{self, Format, ReportOptions};
use sysdelta::status::{ExperimentStatus, RunStatus};
use sysdelta::store::{Event, ExperimentData, ExperimentInfo, StoredMetric, StoredRun};

/// A fixed pseudo-random sequence in [0, 1) (no dependence on rand's
/// version: the data must never change).
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

/// Three configs (a copy of the baseline, and one that is 8% slower on
/// `wall`), two workloads, a metric with 3 samples per run, a failed run,
/// a warm-up run and an event.
fn host_data() -> ExperimentData {
    let configs: Vec<String> = ["base", "slow", "same"].map(String::from).to_vec();
    let metrics = vec![
        StoredMetric {
            workload: "w".into(),
            spec: MetricSpec::new("wall", "s", Direction::Lower),
        },
        StoredMetric {
            workload: "w".into(),
            spec: MetricSpec::new("ops", "ops/s", Direction::Higher),
        },
        StoredMetric {
            workload: "v".into(),
            spec: MetricSpec::new("x", "", Direction::Lower),
        },
    ];
    let mut rng = Lcg(17);
    let mut runs = Vec::new();
    let mut id = 0;
    for block in 0..9u32 {
        let mut seq = 0;
        for (ci, c) in configs.iter().enumerate() {
            for w in ["w", "v"] {
                id += 1;
                seq += 1;
                let mut samples = BTreeMap::new();
                if w == "w" {
                    let slow = if ci == 1 { 1.08 } else { 1.0 };
                    samples.insert("wall".to_string(), vec![slow * (1.0 + 0.05 * rng.next())]);
                    samples.insert(
                        "ops".to_string(),
                        (0..3).map(|_| 1000.0 + 40.0 * rng.next()).collect(),
                    );
                } else {
                    samples.insert("x".to_string(), vec![5.0 + rng.next()]);
                }
                let failed = block == 4 && ci == 2 && w == "v";
                let samples = if failed { BTreeMap::new() } else { samples };
                runs.push(StoredRun {
                    warmup: block == 0,
                    status: if failed {
                        RunStatus::Failed
                    } else {
                        RunStatus::Ok
                    },
                    reason: failed.then(|| "exit status 1".to_string()),
                    stderr_tail: failed.then(|| "oops\nline two".to_string()),
                    exit_code: failed.then_some(1),
                    started_at: 1_700_000_000.0 + id as f64,
                    ..StoredRun::ok(id, block, seq, c, w, samples)
                });
            }
        }
    }
    let info = ExperimentInfo {
        id: 3,
        name: "golden".into(),
        label: Some("host".into()),
        plan_source: "golden.toml".into(),
        plan_text: "name = \"golden\"\n".into(),
        overrides: Overrides::default(),
        host: "box".into(),
        fingerprint: BTreeMap::from([
            ("kernel".to_string(), "6.18.0".to_string()),
            ("arch".to_string(), "x86_64".to_string()),
            ("cpus_online".to_string(), "2".to_string()),
            ("cpu_model".to_string(), "Test CPU".to_string()),
        ]),
        seed: 7,
        order: "random-blocks".into(),
        runs_per_cell: 8,
        warmup: 1,
        baseline: "base".into(),
        created_at: "2026-01-01T00:00:00Z".into(),
        finished_at: Some("2026-01-01T00:01:00Z".into()),
        status: ExperimentStatus::Complete,
        entered_config: None,
        self_usage: None,
        fleet_id: None,
        fleet_host: None,
        configs,
        workloads: vec!["w".into(), "v".into()],
    };
    ExperimentData {
        info,
        metrics,
        runs,
        events: vec![Event {
            at: "2026-01-01T00:00:30Z".into(),
            kind: "note".into(),
            message: "an event".into(),
        }],
        series: vec![],
        profiles: vec![],
        boots: vec![],
    }
}

fn check(name: &str, got: &str) {
    let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
    if std::env::var_os("SYSDELTA_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    if got != want {
        let line = got
            .lines()
            .zip(want.lines())
            .position(|(g, w)| g != w)
            .unwrap_or(got.lines().count().min(want.lines().count()));
        panic!(
            "{name} differs from the golden at line {}:\n got: {:?}\nwant: {:?}",
            line + 1,
            got.lines().nth(line),
            want.lines().nth(line)
        );
    }
}

fn render(data: &ExperimentData, format: Format, detail: bool, trim: Option<usize>) -> String {
    report::render(
        data,
        &ReportOptions {
            format,
            detail,
            trim,
            time_unit: None,
            analysis: analysis::Options {
                resamples: 2000,
                ..Default::default()
            },
        },
    )
    .unwrap()
}

#[test]
fn host_reports_are_unchanged_in_every_format() {
    let data = host_data();
    check("host.txt", &render(&data, Format::Text, false, None));
    check(
        "host-detail.txt",
        &render(&data, Format::Text, true, Some(1)),
    );
    check("host.md", &render(&data, Format::Markdown, false, None));
    check("host.json", &render(&data, Format::Json, false, None));
    check("host.csv", &render(&data, Format::Csv, false, None));
    check("host.html", &render(&data, Format::Html, false, None));
}

#[test]
fn host_plan_runs_is_unchanged() {
    let p = plan_runs::plan(&host_data(), 0.01).unwrap();
    check("host-plan.txt", &plan_runs::render_text(&p));
    check("host-plan.json", &plan_runs::render_json(&p));
}
