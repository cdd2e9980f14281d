//! Time and size of the HTML report for 500 metrics x 4 configs x 40 runs.
//!
//! One operation is one `sysdelta report --format html > FILE` process on a
//! store holding that experiment (10 workloads x 50 metrics, 4 configs, 40
//! runs per cell, each run also recording a 30-point `vmstat.cs` series),
//! from exec to exit, bootstraps (10,000 resamples per comparison) included.
//! The peer measured in the same run is the text report of the same store
//! (`sysdelta report --format text`): the difference is what drawing the
//! ~1,000 plots and writing the page costs. Size is the HTML file's bytes.
//! Targets: under 3 s and under 5 MB.
//!
//! Then the **growth** of the same command (`html_report/growth.rs`): time, peak RSS
//! and page size for 10 -> 100 -> 1,000 workloads (3 metrics each, as Go
//! benchmarks have, 2 configs x 10 runs) and 100 -> 1,000 -> 10,000 runs
//! (1 workload x 4 metrics x 2 configs), as each step's growth over the
//! size before it, per workload (or run): 1.00 is linear, the target is
//! 1.3 or under. `SYSDELTA_BENCH_PART=growth` (or `size`) runs one part;
//! `SYSDELTA_BENCH_KEEP_STORES=DIR` keeps the growth part's stores.
//!
//! Run: `cargo bench --bench html_report`.

#[path = "html_report/growth.rs"]
mod growth;

use std::process::Command;
use std::time::Instant;

use sysdelta::metric::{Direction, MetricSpec};
use sysdelta::plan::{Order, Overrides};
use sysdelta::store::{NewExperiment, RunRecord, RunResult, SeriesRecord, Store};
use sysdelta::workload::MetricSamples;

#[path = "common/peak.rs"]
mod peak;

const METRICS: usize = 50;
const CONFIGS: usize = 4;
const RUNS: usize = 40;

fn main() {
    let part = std::env::var("SYSDELTA_BENCH_PART").unwrap_or_default();
    if part != "growth" {
        size();
    }
    if part != "size" {
        growth::run();
    }
}

/// The 500-metric report's time and size against the text report's.
fn size() {
    // SYSDELTA_BENCH_WORKLOADS scales the data down (50 metrics each) for a quick look;
    // SYSDELTA_BENCH_KEEP=PATH keeps a copy of the HTML page.
    let workloads_n: usize = std::env::var("SYSDELTA_BENCH_WORKLOADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.db");
    let store = Store::open(&path, true).unwrap();
    let configs: Vec<String> = (0..CONFIGS).map(|c| format!("config-{c}")).collect();
    let workloads: Vec<String> = (0..workloads_n).map(|w| format!("workload-{w}")).collect();
    let fp = sysdelta::monitor::fingerprint::collect();
    let id = store
        .create_experiment(&NewExperiment {
            name: "html bench",
            label: Some("bench"),
            plan_source: "bench",
            plan_text: "# synthetic",
            overrides: &Overrides::default(),
            host: "bench",
            fingerprint: &fp,
            seed: 1,
            order: Order::RandomBlocks,
            runs: RUNS as u32,
            warmup: 0,
            baseline: "config-0",
            configs: configs.clone(),
            workloads: workloads.clone(),
        })
        .unwrap();
    let specs: Vec<MetricSpec> = (0..METRICS)
        .map(|m| MetricSpec::new(&format!("metric-{m}"), "us", Direction::Lower))
        .collect();
    for w in &workloads {
        store.declare_metrics(id, w, &specs).unwrap();
    }
    let mut x: u64 = 0x9E3779B97F4A7C15;
    let mut noise = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    for b in 0..RUNS {
        for (wi, w) in workloads.iter().enumerate() {
            for (ci, c) in configs.iter().enumerate() {
                let samples: Vec<MetricSamples> = (0..METRICS)
                    .map(|m| MetricSamples {
                        metric: format!("metric-{m}"),
                        values: vec![
                            100.0 * (1.0 + 0.01 * ci as f64 * (m % 3) as f64 + 0.02 * noise()),
                        ],
                    })
                    .collect();
                let series = [SeriesRecord {
                    name: "vmstat.cs".into(),
                    unit: "1/s".into(),
                    t: (0..30).map(|i| i as f64 * 0.5).collect(),
                    v: (0..30)
                        .map(|_| 1000.0 + 50.0 * noise() + 20.0 * ci as f64)
                        .collect(),
                }];
                store
                    .record_run(&RunRecord {
                        experiment_id: id,
                        block: b as u32,
                        seq: (wi * CONFIGS + ci) as u32,
                        config: c,
                        workload: w,
                        warmup: false,
                        started_at: b as f64,
                        result: RunResult::Ok(&samples),
                        series: &series,
                        profile: &[],
                    })
                    .unwrap();
            }
        }
    }
    store
        .finish(id, sysdelta::status::ExperimentStatus::Complete, None)
        .unwrap();
    drop(store);

    let time = |format: &str, out: &std::path::Path| {
        let t = Instant::now();
        let o = Command::new(env!("CARGO_BIN_EXE_sysdelta"))
            .arg("--store")
            .arg(&path)
            .args(["report", &id.to_string(), "--format", format])
            .stdout(std::fs::File::create(out).unwrap())
            .output()
            .unwrap();
        let s = t.elapsed().as_secs_f64();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        s
    };
    let html = dir.path().join("report.html");
    let text = dir.path().join("report.txt");
    let (mut th, mut tt) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        th.push(time("html", &html));
        tt.push(time("text", &text));
    }
    let med = |mut v: Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let size = std::fs::metadata(&html).unwrap().len();
    let tsize = std::fs::metadata(&text).unwrap().len();
    let page = std::fs::read_to_string(&html).unwrap();
    if let Some(keep) = std::env::var_os("SYSDELTA_BENCH_KEEP") {
        std::fs::copy(&html, keep).unwrap();
    }
    println!(
        "HTML report of {} metrics x {CONFIGS} configs x {RUNS} runs ({} comparisons), median of 3:",
        workloads_n * METRICS,
        workloads_n * METRICS * (CONFIGS - 1)
    );
    println!(
        "  sysdelta report --format html  {:.3} s, {:.2} MB, {} SVG plots   (targets < 3 s, < 5 MB)",
        med(th),
        size as f64 / 1e6,
        page.matches("<svg").count()
    );
    println!(
        "  peer: --format text            {:.3} s, {:.2} MB",
        med(tt),
        tsize as f64 / 1e6
    );
}
