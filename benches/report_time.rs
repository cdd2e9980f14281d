//! Time of `sysdelta report` for 100 metrics x 4 configs x 1,000 runs each,
//! bootstraps (10,000 resamples per comparison) included.
//!
//! One operation is one `sysdelta report` process on a store holding that
//! experiment (10 workloads x 10 metrics, 4 configs, 1,000 runs per cell:
//! 400,000 samples), from exec to exit. The peer measured in the same run is
//! the bare load of the same samples from SQLite (`Store::load`), the floor
//! any report must pay; the ratio shows what the statistics add.
//!
//! Run: `cargo bench --bench report_time`.

use std::process::{Command, Stdio};
use std::time::Instant;

use sysdelta::metric::{Direction, MetricSpec};
use sysdelta::plan::{Order, Overrides};
use sysdelta::store::{NewExperiment, RunRecord, RunResult, Store};
use sysdelta::workload::MetricSamples;

const WORKLOADS: usize = 10;
const METRICS: usize = 10;
const CONFIGS: usize = 4;
const RUNS: usize = 1000;

/// CPU seconds used by waited-for children so far.
fn children_cpu() -> f64 {
    let r = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).unwrap();
    let s = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 * 1e-6;
    s(r.user_time()) + s(r.system_time())
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let keep = std::env::var_os("SYSDELTA_BENCH_KEEP");
    let path = keep
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.path().join("bench.db"));
    let _ = std::fs::remove_file(&path);
    let store = Store::open(&path, true).unwrap();
    let configs: Vec<String> = (0..CONFIGS).map(|c| format!("c{c}")).collect();
    let workloads: Vec<String> = (0..WORKLOADS).map(|w| format!("w{w}")).collect();
    let fp = sysdelta::monitor::fingerprint::collect();
    let id = store
        .create_experiment(&NewExperiment {
            name: "bench",
            label: None,
            plan_source: "bench",
            plan_text: "",
            overrides: &Overrides::default(),
            host: "bench",
            fingerprint: &fp,
            seed: 1,
            order: Order::RandomBlocks,
            runs: RUNS as u32,
            warmup: 0,
            baseline: "c0",
            configs: configs.clone(),
            workloads: workloads.clone(),
        })
        .unwrap();
    let specs: Vec<MetricSpec> = (0..METRICS)
        .map(|m| MetricSpec::new(&format!("m{m}"), "s", Direction::Lower))
        .collect();
    for w in &workloads {
        store.declare_metrics(id, w, &specs).unwrap();
    }
    eprintln!(
        "building the store ({} runs) ...",
        WORKLOADS * CONFIGS * RUNS
    );
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
                        metric: format!("m{m}"),
                        values: vec![1.0 + 0.01 * ci as f64 * (m % 3) as f64 + 0.02 * noise()],
                    })
                    .collect();
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
                        series: &[],
                        profile: &[],
                    })
                    .unwrap();
            }
        }
    }
    store
        .finish(id, sysdelta::status::ExperimentStatus::Complete, None)
        .unwrap();

    let mut load = Vec::new();
    let mut report = Vec::new();
    let mut report_cpu = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let data = store.load(id).unwrap();
        load.push(t.elapsed().as_secs_f64());
        assert_eq!(data.runs.len(), WORKLOADS * CONFIGS * RUNS);
        let cpu0 = children_cpu();
        let t = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_sysdelta"))
            .arg("--store")
            .arg(&path)
            .args(["report", &id.to_string()])
            .stdout(Stdio::piped())
            .output()
            .unwrap();
        report.push(t.elapsed().as_secs_f64());
        report_cpu.push(children_cpu() - cpu0);
        assert!(out.status.success());
        assert!(String::from_utf8_lossy(&out.stdout).contains("delta (%)"));
    }
    let med = |mut v: Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let (l, r, rc) = (med(load), med(report), med(report_cpu));
    println!(
        "report of {} metrics x {CONFIGS} configs x {RUNS} runs ({} comparisons, 10,000 resamples each), median of 3:",
        WORKLOADS * METRICS,
        WORKLOADS * METRICS * (CONFIGS - 1)
    );
    println!("  sysdelta report (process, end to end) {r:.3} s   (target < 1 s)");
    println!(
        "  its CPU time (user + sys, all threads)  {rc:.3} s   (on {} cores; wall suffers when others use them)",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    );
    println!("  peer: bare load of the samples          {l:.3} s");
    println!("  ratio report / load                     {:.2}", r / l);
}
