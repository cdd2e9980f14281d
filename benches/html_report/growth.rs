//! How the HTML report's cost grows: with workloads, then with runs. Each
//! size's store is written whole through the import path
//! (`Store::insert_whole`), then one `sysdelta report --format html`
//! process is timed from exec to exit with its peak resident memory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use sysdelta::metric::{Direction, MetricSpec};
use sysdelta::plan::{Order, Overrides};
use sysdelta::store::whole::WholeExperiment;
use sysdelta::store::{NewExperiment, RunRecord, RunResult, Store};
use sysdelta::workload::MetricSamples;

/// xorshift64: a fixed stream of uniforms in [0, 1).
struct Noise(u64);
impl Noise {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A store of 2 configs x `workloads` x `per_cell` runs of `metrics`;
/// one workload in ten is 10% slower under the second config, so the
/// page has verdicts as well as noise.
fn store_of(dir: &Path, workloads: usize, per_cell: u32, metrics: &[&str]) -> PathBuf {
    let path = dir.join(format!("growth-{workloads}-{per_cell}.db"));
    let store = Store::open(&path, true).unwrap();
    let (fp, ov) = (BTreeMap::new(), Overrides::default());
    let configs = vec!["a".to_string(), "b".to_string()];
    let names: Vec<String> = (0..workloads).map(|w| format!("Benchmark{w}-8")).collect();
    let specs: Vec<MetricSpec> = metrics
        .iter()
        .map(|m| MetricSpec::new(m, "ns", Direction::Lower))
        .collect();
    let declared: Vec<(String, Vec<MetricSpec>)> =
        names.iter().map(|w| (w.clone(), specs.clone())).collect();
    let mut noise = Noise(0x2545_F491_4F6C_DD1D);
    let mut all = Vec::new();
    for b in 0..per_cell {
        for wi in 0..workloads {
            for ci in 0..configs.len() {
                let shift = if ci == 1 && wi % 10 == 0 { 1.1 } else { 1.0 };
                let s: Vec<MetricSamples> = metrics
                    .iter()
                    .enumerate()
                    .map(|(i, m)| MetricSamples {
                        metric: m.to_string(),
                        values: vec![(1.0 + i as f64) * shift * (1.0 + 0.03 * noise.next())],
                    })
                    .collect();
                all.push((b, (wi * configs.len() + ci) as u32, ci, wi, s));
            }
        }
    }
    let runs: Vec<RunRecord> = all
        .iter()
        .map(|(b, seq, ci, wi, s)| RunRecord {
            experiment_id: 0,
            block: *b,
            seq: *seq,
            config: &configs[*ci],
            workload: &names[*wi],
            warmup: false,
            started_at: f64::from(*b),
            result: RunResult::Ok(s),
            series: &[],
            profile: &[],
        })
        .collect();
    let experiment = NewExperiment {
        name: "growth",
        label: None,
        plan_source: "bench",
        plan_text: "",
        overrides: &ov,
        host: "bench",
        fingerprint: &fp,
        seed: 1,
        order: Order::RandomBlocks,
        runs: per_cell,
        warmup: 0,
        baseline: "a",
        configs: configs.clone(),
        workloads: names.clone(),
    };
    store
        .insert_whole(&WholeExperiment {
            experiment,
            metrics: &declared,
            runs,
            source: "generated",
            events: Vec::new(),
        })
        .unwrap();
    path
}

/// One `sysdelta report --format html` process, exec to exit: seconds,
/// peak resident memory in MiB (the child's `VmHWM`, read every 2 ms:
/// `ru_maxrss` from `wait4` would carry this benchmark's own peak across
/// the spawn) and the page's size in MB.
fn report(dir: &Path, path: &Path) -> (f64, f64, f64) {
    let page = dir.join("growth.html");
    let err = std::fs::File::create(dir.join("growth.err")).unwrap();
    let t = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sysdelta"))
        .arg("--store")
        .arg(path)
        .args(["report", "last", "--format", "html"])
        .stdout(std::fs::File::create(&page).unwrap())
        .stderr(err)
        .spawn()
        .unwrap();
    let (status, peak_kib) = super::peak::wait_with_peak(&mut child);
    // The exit is seen up to 2 ms late.
    let s = t.elapsed().as_secs_f64();
    assert!(
        status.success(),
        "{}",
        std::fs::read_to_string(dir.join("growth.err")).unwrap_or_default()
    );
    let mb = std::fs::metadata(&page).unwrap().len() as f64 / 1e6;
    (s, peak_kib as f64 / 1024.0, mb)
}

/// Time, peak RSS and page size against workloads, then against runs.
pub fn run() {
    let dir = tempfile::tempdir().unwrap();
    let shapes: [(&str, [usize; 3]); 2] = [
        ("workloads", [10, 100, 1_000]),
        ("runs", [100, 1_000, 10_000]),
    ];
    for (what, sizes) in shapes {
        println!(
            "HTML report against the number of {what} (2 configs); each step's growth over the size before, per {}: 1.00 is linear, target <= 1.3:",
            &what[..what.len() - 1]
        );
        let mut prev: Option<(f64, f64, usize)> = None;
        for n in sizes {
            let path = match what {
                "workloads" => store_of(dir.path(), n, 10, &["sec/op", "B/op", "allocs/op"]),
                _ => store_of(
                    dir.path(),
                    1,
                    (n / 2) as u32,
                    &["wall", "user", "sys", "maxrss"],
                ),
            };
            let (s, rss, mb) = report(dir.path(), &path);
            // Each step against the one before: (time ratio) / (size ratio).
            // The smallest size is mostly the process's fixed start-up,
            // so the first step reads low; the last is the one to judge.
            let step = prev.map_or(String::new(), |(s0, rss0, n0)| {
                let k = n as f64 / n0 as f64;
                format!(
                    "; step ratio: time {:.2}, RSS {:.2}",
                    s / s0 / k,
                    rss / rss0 / k
                )
            });
            prev = Some((s, rss, n));
            println!(
                "  {n:>6} {what}: {s:>7.3} s, peak RSS {rss:>6.1} MiB, page {mb:>6.2} MB{step}",
            );
            if let Some(keep) = std::env::var_os("SYSDELTA_BENCH_KEEP_STORES") {
                std::fs::copy(&path, PathBuf::from(keep).join(path.file_name().unwrap())).unwrap();
            }
            let _ = std::fs::remove_file(&path);
        }
    }
}
