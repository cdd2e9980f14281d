//! `sysdelta history` against the number of experiments, and a history of
//! one metric in a store of large experiments, measured in one run.
//!
//! 1. **Growth**: `sysdelta history wall` (one process, exec to exit) on
//!    generated stores of 10 / 100 / 1,000 / 3,000 labelled experiments
//!    (each: 2 configs x 1 workload x 10 runs x 4 metrics; the baseline's
//!    level steps up 10% half way, so the change-point search splits once
//!    and searches both halves), printed as time and peak resident memory,
//!    and as each size's time per experiment over the smallest size's
//!    ("ratio": 1.00 is linear, below 1 is the fixed cost of a process
//!    spread over more experiments) and over the size before it ("step":
//!    the growth from 1,000 to 3,000 experiments, where the fixed cost no
//!    longer hides it). The median of 3 runs per size.
//! 2. **One metric of large experiments**: a two-point history of one
//!    benchmark's metric (`history w7/sec/op`) in a store of two
//!    experiments of 1,000 benchmarks each (2 configs x 30 runs x 3
//!    metrics: 60,000 runs each, as a Go import of `-count 30 -benchmem`
//!    stores them), time and peak resident memory.
//!
//! With `SYSDELTA_BENCH_OLD=PATH` (another build of sysdelta, e.g. main's
//! `target/release/sysdelta` copied aside), both parts also run that
//! binary, alternated with this one (A B, B A, ...), and print the ratio
//! pair by pair. Stores are written whole through the store's import path
//! (`Store::insert_whole`). `SYSDELTA_BENCH_MAX=N` caps the sizes;
//! `SYSDELTA_BENCH_KEEP=DIR` writes the stores into DIR and keeps them
//! (to profile one).
//!
//! Run: `cargo bench --bench history_growth`. Times depend on the machine
//! and its load; the ratios are what to read.

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
    /// `level` with about 2% noise (a sum of 4 uniforms).
    fn around(&mut self, level: f64) -> f64 {
        let n: f64 = (0..4).map(|_| self.next()).sum::<f64>() - 2.0;
        level * (1.0 + 0.035 * n)
    }
}

/// One generated experiment: `workloads` x 2 configs (`a`, the baseline,
/// and `b`) x `runs` runs of `metrics`, each around `level`.
struct Shape<'a> {
    label: &'a str,
    workloads: usize,
    runs: u32,
    metrics: &'a [&'a str],
    level: f64,
}

/// Store `s` whole into `store`.
fn insert(store: &Store, noise: &mut Noise, s: &Shape) {
    let (fp, ov) = (BTreeMap::new(), Overrides::default());
    let configs = vec!["a".to_string(), "b".to_string()];
    let names: Vec<String> = (0..s.workloads).map(|w| format!("w{w}")).collect();
    let specs: Vec<MetricSpec> = s
        .metrics
        .iter()
        .map(|m| MetricSpec::new(m, "s", Direction::Lower))
        .collect();
    let declared: Vec<(String, Vec<MetricSpec>)> =
        names.iter().map(|w| (w.clone(), specs.clone())).collect();
    let mut all = Vec::new();
    for b in 0..s.runs {
        for wi in 0..names.len() {
            for ci in 0..configs.len() {
                let samples: Vec<MetricSamples> = s
                    .metrics
                    .iter()
                    .map(|m| MetricSamples {
                        metric: m.to_string(),
                        values: vec![noise.around(s.level * (wi + 1) as f64)],
                    })
                    .collect();
                all.push((b, (wi * configs.len() + ci) as u32, ci, wi, samples));
            }
        }
    }
    let runs: Vec<RunRecord> = all
        .iter()
        .map(|(b, seq, ci, wi, samples)| RunRecord {
            experiment_id: 0,
            block: *b,
            seq: *seq,
            config: &configs[*ci],
            workload: &names[*wi],
            warmup: false,
            started_at: f64::from(*b),
            result: RunResult::Ok(samples),
            series: &[],
            profile: &[],
        })
        .collect();
    store
        .insert_whole(&WholeExperiment {
            experiment: NewExperiment {
                name: "bench",
                label: Some(s.label),
                plan_source: "bench",
                plan_text: "",
                overrides: &ov,
                host: "bench",
                fingerprint: &fp,
                seed: 1,
                order: Order::RandomBlocks,
                runs: s.runs,
                warmup: 0,
                baseline: "a",
                configs: configs.clone(),
                workloads: names.clone(),
            },
            metrics: &declared,
            runs,
            source: "generated",
            events: Vec::new(),
        })
        .unwrap();
}

/// One `history` process of `bin`, exec to exit: seconds, and its peak
/// resident memory in MiB: the child's `VmHWM` read from /proc every 2 ms
/// until it exits (`ru_maxrss` from `wait4` would carry this benchmark's
/// own peak across the spawn). Output goes to files: nothing waits on a pipe.
fn history(bin: &Path, dir: &Path, store: &Path, args: &[&str]) -> (f64, f64) {
    let out = std::fs::File::create(dir.join("history.out")).unwrap();
    let err = std::fs::File::create(dir.join("history.err")).unwrap();
    let t = Instant::now();
    let mut child = Command::new(bin)
        .arg("--store")
        .arg(store)
        .arg("history")
        .args(args)
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap();
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0u64;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        let hwm = std::fs::read_to_string(&status_file)
            .ok()
            .and_then(|s| {
                let line = s.lines().find(|l| l.starts_with("VmHWM:"))?.to_string();
                line.split_whitespace().nth(1)?.parse::<u64>().ok()
            })
            .unwrap_or(0);
        peak_kib = peak_kib.max(hwm);
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    // The exit is seen up to 2 ms late: at most 2 ms more than the process took.
    let s = t.elapsed().as_secs_f64();
    assert!(
        status.success(),
        "{} history {args:?}: {}",
        bin.display(),
        std::fs::read_to_string(dir.join("history.err")).unwrap_or_default()
    );
    (s, peak_kib as f64 / 1024.0)
}

/// A peak in MiB, or "< 2 ms" when the process ended before the first
/// look at it.
fn mib(peak: f64) -> String {
    if peak > 0.0 {
        format!("{peak:>5.0} MiB")
    } else {
        "(gone < 2 ms)".into()
    }
}

/// The median of `runs` (time, peak) pairs, by time.
fn median(mut runs: Vec<(f64, f64)>) -> (f64, f64) {
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    runs[runs.len() / 2]
}

/// Part 1: time and peak memory against the number of experiments.
fn growth(dir: &Path, new: &Path, old: Option<&Path>, max: usize) {
    println!(
        "sysdelta history wall against the number of experiments (2 configs x 1 workload x 10 runs x 4 metrics each; median of 3; ratio: time per experiment over the smallest size's, 1.00 is linear):"
    );
    let mut first: Option<(f64, usize)> = None;
    let mut first_old: Option<(f64, usize)> = None;
    // The size before, for the step ratios: (n, time, old binary's time).
    let mut prev: Option<(usize, f64, f64)> = None;
    for n in [10usize, 100, 1_000, 3_000]
        .into_iter()
        .filter(|&n| n <= max)
    {
        let path = dir.join(format!("exps{n}.db"));
        let t = Instant::now();
        let store = Store::open(&path, true).unwrap();
        let mut noise = Noise(0x2545_F491_4F6C_DD1D);
        for k in 0..n {
            let label = format!("e{k:05}");
            let level = if k < n / 2 { 1.0 } else { 1.1 };
            let s = Shape {
                label: &label,
                workloads: 1,
                runs: 10,
                metrics: &["wall", "user", "sys", "maxrss"],
                level,
            };
            insert(&store, &mut noise, &s);
        }
        drop(store);
        let built = t.elapsed().as_secs_f64();
        let args = ["wall", "--label-prefix", "e"];
        let mut news = Vec::new();
        let mut olds = Vec::new();
        for round in 0..3 {
            // A B, then B A: neither binary always runs second.
            let mut order = vec![true];
            if old.is_some() {
                order.push(false);
            }
            if round % 2 == 1 {
                order.reverse();
            }
            for is_new in order {
                match (is_new, old) {
                    (false, Some(o)) => olds.push(history(o, dir, &path, &args)),
                    _ => {
                        news.push(history(new, dir, &path, &args));
                        if round == 0 {
                            assert_split(dir, n);
                        }
                    }
                }
            }
        }
        let (s, rss) = median(news);
        let (s0, n0) = *first.get_or_insert((s, n));
        let scale = n as f64 / n0 as f64;
        let step = |t: f64, before: f64, m: usize| t / before / (n as f64 / m as f64);
        print!(
            "  {n:>5} experiments: {s:>7.3} s (ratio {:>5.2}, step {:>5.2}), peak RSS {}",
            s / s0 / scale,
            prev.map_or(1.0, |(m, t, _)| step(s, t, m)),
            mib(rss)
        );
        let mut so = f64::NAN;
        if !olds.is_empty() {
            let (o, rsso) = median(olds);
            so = o;
            let (so0, m0) = *first_old.get_or_insert((so, n));
            print!(
                "; old binary {so:>7.3} s (ratio {:>5.2}, step {:>5.2}), peak RSS {}; new/old time {:.3}",
                so / so0 / (n as f64 / m0 as f64),
                prev.map_or(1.0, |(m, _, t)| step(so, t, m)),
                mib(rsso),
                s / so
            );
        }
        prev = Some((n, s, so));
        println!("; store written in {built:.1} s");
        remove(&path);
    }
}

/// The last history's output found the step half way (from 100
/// experiments on; 10 are too few for every seed): the bench measures
/// the search that splits, not one that gave up at once.
fn assert_split(dir: &Path, n: usize) {
    let out = std::fs::read_to_string(dir.join("history.out")).unwrap_or_default();
    if n >= 100 {
        assert!(out.contains("change point ("), "no split at {n}:\n{out}");
    }
}

/// Part 2: two experiments of 1,000 benchmarks; one benchmark's metric.
fn large(dir: &Path, new: &Path, old: Option<&Path>) {
    let path = dir.join("large.db");
    let t = Instant::now();
    let store = Store::open(&path, true).unwrap();
    let mut noise = Noise(0x9E37_79B9_7F4A_7C15);
    for (label, level) in [("g1", 1000.0), ("g2", 1020.0)] {
        let s = Shape {
            label,
            workloads: 1_000,
            runs: 30,
            metrics: &["sec/op", "B/op", "allocs/op"],
            level,
        };
        insert(&store, &mut noise, &s);
    }
    drop(store);
    println!(
        "two-point history of one metric (history w7/sec/op), 2 experiments x 1,000 benchmarks x 2 configs x 30 runs x 3 metrics (store written in {:.1} s):",
        t.elapsed().as_secs_f64()
    );
    let args = ["w7/sec/op", "--label-prefix", "g"];
    let rounds = 5;
    let mut pairs = Vec::new();
    for round in 0..rounds {
        let (a, b) = match (old, round % 2) {
            (None, _) => (history(new, dir, &path, &args), None),
            (Some(o), 0) => {
                let a = history(new, dir, &path, &args);
                (a, Some(history(o, dir, &path, &args)))
            }
            (Some(o), _) => {
                let b = history(o, dir, &path, &args);
                (history(new, dir, &path, &args), Some(b))
            }
        };
        pairs.push((a, b));
    }
    let (s, rss) = median(pairs.iter().map(|p| p.0).collect());
    print!(
        "  this binary: {s:.3} s, peak RSS {} (median of {rounds})",
        mib(rss)
    );
    if old.is_some() {
        let olds: Vec<(f64, f64)> = pairs.iter().filter_map(|p| p.1).collect();
        let (so, rsso) = median(olds);
        let mut ratios: Vec<f64> = pairs
            .iter()
            .filter_map(|(a, b)| b.map(|b| a.0 / b.0))
            .collect();
        ratios.sort_by(f64::total_cmp);
        print!(
            "; old binary: {so:.3} s, peak RSS {}; new/old time pair by pair: median {:.3} (min {:.3}, max {:.3}); RSS new/old {:.3}",
            mib(rsso),
            ratios[ratios.len() / 2],
            ratios[0],
            ratios[ratios.len() - 1],
            rss / rsso
        );
    }
    println!();
    remove(&path);
}

/// Remove a generated store, unless `SYSDELTA_BENCH_KEEP` asks to keep it.
fn remove(path: &Path) {
    if std::env::var_os("SYSDELTA_BENCH_KEEP").is_none() {
        let _ = std::fs::remove_file(path);
    }
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let keep = std::env::var_os("SYSDELTA_BENCH_KEEP").map(PathBuf::from);
    let dir = keep.as_deref().unwrap_or(tmp.path());
    let max = std::env::var("SYSDELTA_BENCH_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000);
    let new = PathBuf::from(env!("CARGO_BIN_EXE_sysdelta"));
    let old = std::env::var_os("SYSDELTA_BENCH_OLD").map(PathBuf::from);
    match &old {
        Some(o) => println!("old binary (SYSDELTA_BENCH_OLD): {}", o.display()),
        None => println!("SYSDELTA_BENCH_OLD not set: this binary alone"),
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at start: {}", load.trim());
    growth(dir, &new, old.as_deref(), max);
    large(dir, &new, old.as_deref());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at end: {}", load.trim());
}
