//! Costs that should grow linearly, or not at all, measured in one run.
//!
//! 1. **Adaptive stopping's check, per block** (`--until ci=W`), at blocks
//!    5, 50 and 200 of one experiment (2 configs x 1 workload x 4 metrics,
//!    as `ab` stores a command): the check as the runner makes it now
//!    (read the block's new runs from the store, update each cell, compute
//!    the intervals the rule reads: `analysis::precision`) against the
//!    check as it was (load the whole experiment, analyse all of it at
//!    2,000 resamples), alternated block by block (A B A B), median of 5
//!    consecutive blocks each. The check now is a streaming Poisson
//!    bootstrap (2,000 replicate sums per cell and metric that each run
//!    adds to), so its cost should stay flat from block 5 to block 200:
//!    the ratio printed, near 1.0, is what to read.
//! 2. **`sysdelta report`** (one process, exec to exit; text, then JSON)
//!    on generated stores of 1,000 / 10,000 / 100,000 runs (2 configs x 1
//!    workload x 4 metrics) and of 1,000 / 10,000 / 100,000 workloads (2
//!    configs x 2 runs each x 1 metric), as the ratio of each size's time
//!    per run (or per workload) to the smallest's: 1.00 is linear. Stores
//!    are written whole through the store's import path
//!    (`Store::insert_whole`). `SYSDELTA_BENCH_MAX=N` caps the sizes.
//!    Each report's peak resident memory is printed beside its time.
//! 3. **Every format and `compare`** (text, markdown, csv, json, html,
//!    benchstat, hyperfine; `compare 1:a 1:b`) on stores of 100 / 1,000 /
//!    10,000 runs and of 10 / 100 / 1,000 workloads, shaped as in part 2:
//!    time (median of 5) and peak RSS, the ratio of time per run or
//!    workload to the smallest size's, and the last step's time per added
//!    run or workload against the step before's (the fixed start-up cost
//!    makes the first ratio fall below 1 even for a superlinear cost; the
//!    marginal one does not), with the RSS each added one costs. The
//!    target is every ratio within 1.3 of linear; the line after each
//!    table names the largest of each (the marginal one is a ratio of two
//!    differences of a few ms at the smaller step: read it over runs).
//!
//! Run: `cargo bench --bench linear_costs`. Times depend on the machine
//! and its load; the ratios are what to read.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use sysdelta::analysis::precision::{Precision, RESAMPLES};
use sysdelta::analysis::{analyze, Options};
use sysdelta::metric::{Direction, MetricSpec};
use sysdelta::plan::{Order, Overrides};
use sysdelta::store::whole::WholeExperiment;
use sysdelta::store::{NewExperiment, RunRecord, RunResult, Store};
use sysdelta::workload::MetricSamples;

#[path = "common/peak.rs"]
mod peak;

const METRICS: [&str; 4] = ["wall", "user", "sys", "maxrss"];

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

fn experiment<'a>(
    fp: &'a BTreeMap<String, String>,
    ov: &'a Overrides,
    configs: &[String],
    workloads: Vec<String>,
    runs: u32,
) -> NewExperiment<'a> {
    NewExperiment {
        name: "bench",
        label: None,
        plan_source: "bench",
        plan_text: "",
        overrides: ov,
        host: "bench",
        fingerprint: fp,
        seed: 1,
        order: Order::RandomBlocks,
        runs,
        warmup: 0,
        baseline: "a",
        configs: configs.to_vec(),
        workloads,
    }
}

fn samples(noise: &mut Noise, names: &[&str], shift: f64) -> Vec<MetricSamples> {
    names
        .iter()
        .enumerate()
        .map(|(i, m)| MetricSamples {
            metric: m.to_string(),
            values: vec![(1.0 + i as f64) * shift * (1.0 + 0.05 * noise.next())],
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Part 1: the check per block, new and old, at blocks 5, 50 and 200.
fn adaptive(dir: &Path) {
    let store = Store::open(&dir.join("adaptive.db"), true).unwrap();
    let (fp, ov) = (BTreeMap::new(), Overrides::default());
    let configs = vec!["a".to_string(), "b".to_string()];
    let id = store
        .create_experiment(&experiment(&fp, &ov, &configs, vec!["cmd".into()], 5))
        .unwrap();
    let specs: Vec<MetricSpec> = METRICS
        .iter()
        .map(|m| MetricSpec::new(m, "s", Direction::Lower))
        .collect();
    store.declare_metrics(id, "cmd", &specs).unwrap();
    let mut noise = Noise(0x9E37_79B9_7F4A_7C15);
    let mut p = Precision::new(&store.info(id).unwrap()).unwrap();
    let opts = Options {
        resamples: RESAMPLES,
        ..Default::default()
    };
    let (target, only) = (0.001, Vec::<String>::new());
    let mut rows = Vec::new();
    let mut block = 0u32;
    for at in [5u32, 50, 200] {
        let (mut new, mut read, mut old, mut warm) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        while block < at + 5 {
            for (seq, c) in configs.iter().enumerate() {
                let s = samples(&mut noise, &METRICS, 1.0 + 0.01 * seq as f64);
                store
                    .record_run(&RunRecord {
                        experiment_id: id,
                        block,
                        seq: seq as u32,
                        config: c,
                        workload: "cmd",
                        warmup: false,
                        started_at: f64::from(block),
                        result: RunResult::Ok(&s),
                        series: &[],
                        profile: &[],
                    })
                    .unwrap();
            }
            block += 1;
            if block <= at {
                // Up to the block measured, the state follows untimed.
                p.add(&store.runs_from_block(id, p.from_block()).unwrap());
                continue;
            }
            // A B A B: the order of the two alternates block by block.
            let mut time_new = || {
                let t = Instant::now();
                p.add(&store.runs_from_block(id, p.from_block()).unwrap());
                let metrics = store.metrics(id).unwrap();
                let r = t.elapsed().as_secs_f64();
                let d = p.check(&metrics, target, &only);
                let total = t.elapsed().as_secs_f64();
                // The same check again at once, its caches warm: what is
                // left of its growth once the other method's pass over
                // the whole experiment has not just evicted its state.
                let t = Instant::now();
                assert_eq!(p.check(&metrics, target, &only), d);
                (total, r, d, t.elapsed().as_secs_f64())
            };
            let time_old = || {
                let t = Instant::now();
                let a = analyze(&store.load(id).unwrap(), &opts).unwrap();
                let n = a.metrics.len();
                (t.elapsed().as_secs_f64(), n)
            };
            let ((tn, r, d, w), (to, n)) = if block % 2 == 0 {
                let x = time_new();
                (x, time_old())
            } else {
                let y = time_old();
                (time_new(), y)
            };
            assert!(n == METRICS.len() && !d.0);
            new.push(tn);
            read.push(r);
            old.push(to);
            warm.push(w);
        }
        rows.push((at, median(new), median(read), median(old), median(warm)));
    }
    println!("adaptive stopping, cost of one block's check (2 configs x 1 workload x 4 metrics, 2,000 replicates / resamples; median of 5 blocks):");
    println!("  block   now: total   of it: reading the block   the check again, warm   before: load + full analysis");
    for (at, n, r, o, w) in &rows {
        println!(
            "  {at:>5}   {:>8.3} ms   {:>8.3} ms                {:>8.3} ms              {:>8.3} ms",
            n * 1e3,
            r * 1e3,
            w * 1e3,
            o * 1e3
        );
    }
    let (first, last) = (rows[0], rows[rows.len() - 1]);
    println!(
        "  ratio block 200 / block 5: now {:.2} (reading the block {:.2}; the rest is the streaming bootstrap, 2,000 replicates a cell), before {:.2}; runs per cell grew {:.0}x",
        last.1 / first.1,
        last.2 / first.2,
        last.3 / first.3,
        f64::from(last.0) / f64::from(first.0)
    );
    println!(
        "  ratio block 200 / block 5 of the check again, warm: {:.2}",
        last.4 / first.4
    );
}

/// A store of 2 configs x `workloads` x `per_cell` runs of `metrics`,
/// written whole. Returns its path.
fn store_of(
    dir: &Path,
    name: &str,
    workloads: usize,
    per_cell: u32,
    metrics: &[&str],
) -> std::path::PathBuf {
    let path = dir.join(name);
    let store = Store::open(&path, true).unwrap();
    let (fp, ov) = (BTreeMap::new(), Overrides::default());
    let configs = vec!["a".to_string(), "b".to_string()];
    let names: Vec<String> = (0..workloads).map(|w| format!("w{w}")).collect();
    let specs: Vec<MetricSpec> = metrics
        .iter()
        .map(|m| MetricSpec::new(m, "s", Direction::Lower))
        .collect();
    let declared: Vec<(String, Vec<MetricSpec>)> =
        names.iter().map(|w| (w.clone(), specs.clone())).collect();
    let mut noise = Noise(0x2545_F491_4F6C_DD1D);
    let mut all = Vec::new();
    for b in 0..per_cell {
        for (wi, _) in names.iter().enumerate() {
            for ci in 0..configs.len() {
                let s = samples(&mut noise, metrics, 1.0 + 0.01 * ci as f64);
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
    store
        .insert_whole(&WholeExperiment {
            experiment: experiment(&fp, &ov, &configs, names.clone(), per_cell),
            metrics: &declared,
            runs,
            source: "generated",
            events: Vec::new(),
        })
        .unwrap();
    path
}

/// One `sysdelta report` process, exec to exit: seconds, and its peak
/// resident memory in MiB. The peak is the child's `VmHWM` read from
/// /proc every 2 ms until it exits (its own address space's high-water
/// mark; `ru_maxrss` from `wait4` would carry this benchmark's own peak
/// across the spawn). The output goes to a file, so nothing waits on a pipe.
fn report(dir: &Path, path: &Path, format: &str) -> (f64, f64) {
    sysdelta(dir, path, &["report", "last", "--format", format])
}

/// One sysdelta process on the store `path` with `args`, as [`report`].
fn sysdelta(dir: &Path, path: &Path, args: &[&str]) -> (f64, f64) {
    let out = std::fs::File::create(dir.join("report.out")).unwrap();
    let err = std::fs::File::create(dir.join("report.err")).unwrap();
    let t = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sysdelta"))
        .arg("--store")
        .arg(path)
        .args(args)
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap();
    let (status, peak_kib) = peak::wait_with_peak(&mut child);
    // The exit is seen up to 2 ms late: at most 2 ms more than the process took.
    let s = t.elapsed().as_secs_f64();
    assert!(
        status.success(),
        "{}",
        std::fs::read_to_string(dir.join("report.err")).unwrap_or_default()
    );
    (s, peak_kib as f64 / 1024.0)
}

/// Part 2: report time against the number of runs, then of workloads.
fn reports(dir: &Path, max: usize) {
    let sizes: Vec<usize> = [1_000, 10_000, 100_000]
        .into_iter()
        .filter(|&n| n <= max)
        .collect();
    for (what, shape) in [("runs", 0), ("workloads", 1)] {
        println!("sysdelta report against the number of {what} (2 configs; time, and time per {} as a ratio to the smallest size's: 1.00 is linear):", &what[..what.len() - 1]);
        let mut first: Option<(f64, f64, usize)> = None;
        for &n in &sizes {
            let t = Instant::now();
            let path = match shape {
                0 => store_of(dir, &format!("runs{n}.db"), 1, (n / 2) as u32, &METRICS),
                _ => store_of(dir, &format!("workloads{n}.db"), n, 2, &["wall"]),
            };
            let built = t.elapsed().as_secs_f64();
            let ((text, text_rss), (json, json_rss)) =
                (report(dir, &path, "text"), report(dir, &path, "json"));
            let (t0, j0, n0) = *first.get_or_insert((text, json, n));
            let scale = n as f64 / n0 as f64;
            println!(
                "  {n:>7} {what}: text {text:>8.3} s (ratio {:>5.2}), json {json:>8.3} s (ratio {:>5.2}); peak RSS text {text_rss:.0} MiB, json {json_rss:.0} MiB; store written in {built:.1} s",
                text / t0 / scale,
                json / j0 / scale
            );
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// What part 3 runs on each store: every report format, then `compare`
/// of the store's two configs (`1:a 1:b`, the experiment's configs as two
/// compared experiments would be).
const COMMANDS: [(&str, &[&str]); 8] = [
    ("text", &["report", "last", "--format", "text"]),
    ("markdown", &["report", "last", "--format", "markdown"]),
    ("csv", &["report", "last", "--format", "csv"]),
    ("json", &["report", "last", "--format", "json"]),
    ("html", &["report", "last", "--format", "html"]),
    ("benchstat", &["report", "last", "--format", "benchstat"]),
    ("hyperfine", &["report", "last", "--format", "hyperfine"]),
    ("compare", &["compare", "1:a", "1:b"]),
];

/// Part 3: every format and `compare`, from 100 to 10,000 runs and from
/// 10 to 1,000 workloads (each size x10 the one before), with time and
/// peak RSS, and each one's growth as ratios to the smallest size's cost
/// per run (or workload): 1.00 is linear, above 1.30 is the target missed.
/// Each command's sizes run back to back on stores built beforehand, so
/// its three sizes see the same load.
fn every_format(dir: &Path, max: usize) {
    for (what, sizes, shape) in [
        ("runs", [100usize, 1_000, 10_000], 0),
        ("workloads", [10, 100, 1_000], 1),
    ] {
        let sizes: Vec<usize> = sizes.into_iter().filter(|&n| n <= max).collect();
        let stores: Vec<std::path::PathBuf> = sizes
            .iter()
            .map(|&n| match shape {
                0 => store_of(dir, &format!("f-runs{n}.db"), 1, (n / 2) as u32, &METRICS),
                _ => store_of(dir, &format!("f-workloads{n}.db"), n, 2, &["wall"]),
            })
            .collect();
        let unit = &what[..what.len() - 1];
        println!(
            "every format against the number of {what} ({}; {}): median of 5 time s, peak RSS MiB, time per {unit} as a ratio to the smallest size's; the last step's cost per added {unit} against the step before's (marginal), and its RSS per added {unit}:",
            match shape {
                0 => "2 configs x 1 workload x 4 metrics",
                _ => "2 configs x 2 runs x 1 metric",
            },
            sizes
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(" / ")
        );
        let (mut worst, mut worst_marginal) = ((0.0f64, ""), (0.0f64, ""));
        for (name, args) in COMMANDS {
            // Median of 5 per size, the sizes back to back each time.
            let mut times = vec![Vec::new(); stores.len()];
            let mut rss = vec![0.0f64; stores.len()];
            for _ in 0..5 {
                for (k, p) in stores.iter().enumerate() {
                    let (t, r) = sysdelta(dir, p, args);
                    times[k].push(t);
                    rss[k] = rss[k].max(r);
                }
            }
            let t: Vec<f64> = times.into_iter().map(median).collect();
            let n: Vec<f64> = sizes.iter().map(|&n| n as f64).collect();
            let last = t.len() - 1;
            let mut line = format!("  {name:<10}");
            for k in 0..t.len() {
                let ratio = t[k] / t[0] / (n[k] / n[0]);
                if k > 0 && ratio > worst.0 {
                    worst = (ratio, name);
                }
                // 0: the process ended before its memory was first read.
                let shown = match rss[k] {
                    0.0 => "   - MiB".to_string(),
                    r => format!("{r:>4.0} MiB"),
                };
                line += &format!("  {:>6}: {:>6.3} s {shown} x{ratio:.2}", sizes[k], t[k]);
            }
            // The cost of the last step's added units against the step
            // before's: 1.00 is linear, whatever the fixed start-up cost
            // (which makes the ratios above fall below 1).
            let marginal = if last >= 2 {
                let step = |k: usize| (t[k] - t[k - 1]) / (n[k] - n[k - 1]);
                let m = step(last) / step(last - 1);
                if m > worst_marginal.0 {
                    worst_marginal = (m, name);
                }
                format!("{m:.2}")
            } else {
                "-".into()
            };
            let per_unit = if last >= 1 && rss[last] > 0.0 && rss[last - 1] > 0.0 {
                format!(
                    "{:.1}",
                    (rss[last] - rss[last - 1]) * 1024.0 / (n[last] - n[last - 1])
                )
            } else {
                "-".into()
            };
            println!("{line}; marginal x{marginal}, {per_unit} KiB/{unit}");
        }
        println!(
            "  largest ratio of time per {unit}: {:.2} ({}), within 1.3x of linear: {}; largest marginal: {:.2} ({}; a ratio of two differences, noisy on a loaded machine where the first step costs a few ms)",
            worst.0,
            worst.1,
            if worst.0 <= 1.3 { "yes" } else { "NO" },
            worst_marginal.0,
            worst_marginal.1,
        );
        for p in stores {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let max = std::env::var("SYSDELTA_BENCH_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at start: {}", load.trim());
    adaptive(dir.path());
    reports(dir.path(), max);
    every_format(dir.path(), max);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at end: {}", load.trim());
}
