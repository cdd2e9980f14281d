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

#[path = "common/peak.rs"]
mod peak;

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

/// What one `history` process took: wall seconds (exec to exit), CPU
/// seconds (user + system, from `wait4`: what the machine's other load
/// changes least) and peak resident memory in MiB (0 when the process
/// ended before the first look).
#[derive(Clone, Copy)]
struct Took {
    wall: f64,
    cpu: f64,
    rss: f64,
}

/// One `history` process of `bin`, exec to exit. The peak is the child's
/// `VmHWM` read from /proc every 2 ms until it exits (its own address
/// space's high-water mark; `ru_maxrss` would carry this benchmark's own
/// peak across the spawn). Output goes to files: nothing waits on a pipe.
// The child is reaped by the `wait4` below (which also gives its CPU
// time), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn history(bin: &Path, dir: &Path, store: &Path, args: &[&str]) -> Took {
    let out = std::fs::File::create(dir.join("history.out")).unwrap();
    let err = std::fs::File::create(dir.join("history.err")).unwrap();
    let t = Instant::now();
    let child = Command::new(bin)
        .arg("--store")
        .arg(store)
        .arg("history")
        .args(args)
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut peak_kib = 0u64;
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let (status, cpu) = loop {
        let mut status = 0;
        // SAFETY: a plain struct of integers, filled in by wait4.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: pid is this process's child; both pointers are valid.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            break (status, secs(ru.ru_utime) + secs(ru.ru_stime));
        }
        assert_eq!(r, 0, "wait4: {}", std::io::Error::last_os_error());
        let hwm = peak::vm_hwm_kib(pid as u32);
        peak_kib = peak_kib.max(hwm);
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    // The exit is seen up to 2 ms late: at most 2 ms more than the process took.
    let wall = t.elapsed().as_secs_f64();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{} history {args:?}: {}",
        bin.display(),
        std::fs::read_to_string(dir.join("history.err")).unwrap_or_default()
    );
    Took {
        wall,
        cpu,
        rss: peak_kib as f64 / 1024.0,
    }
}

/// A peak in MiB, or a note when the process ended before the first look.
fn mib(peak: f64) -> String {
    if peak > 0.0 {
        format!("{peak:>5.1} MiB")
    } else {
        "(gone < 2 ms)".into()
    }
}

/// The median of `runs` by wall time, and the median CPU time apart.
fn median(runs: &[Took]) -> Took {
    let mut by_wall = runs.to_vec();
    by_wall.sort_by(|a, b| a.wall.total_cmp(&b.wall));
    let mut cpu: Vec<f64> = runs.iter().map(|t| t.cpu).collect();
    cpu.sort_by(f64::total_cmp);
    Took {
        cpu: cpu[cpu.len() / 2],
        ..by_wall[by_wall.len() / 2]
    }
}

/// One size's line for one binary: wall and CPU time with their ratios
/// per experiment to the first size (`first`) and to the size before
/// (`prev`), each (n, took), and the peak.
fn size_line(n: usize, t: Took, first: (usize, Took), prev: Option<(usize, Took)>) -> String {
    let per = |x: f64, x0: f64, n0: usize| x / x0 / (n as f64 / n0 as f64);
    let (p_n, p) = prev.unwrap_or(first);
    format!(
        "wall {:>7.3} s (ratio {:>5.2}, step {:>5.2}), CPU {:>7.3} s (ratio {:>5.2}, step {:>5.2}), peak RSS {}",
        t.wall,
        per(t.wall, first.1.wall, first.0),
        if prev.is_some() { per(t.wall, p.wall, p_n) } else { 1.0 },
        t.cpu,
        per(t.cpu, first.1.cpu, first.0),
        if prev.is_some() { per(t.cpu, p.cpu, p_n) } else { 1.0 },
        mib(t.rss)
    )
}

/// Part 1: time and peak memory against the number of experiments.
fn growth(dir: &Path, new: &Path, old: Option<&Path>, max: usize) {
    println!(
        "sysdelta history wall against the number of experiments (2 configs x 1 workload x 10 runs x 4 metrics each; median of 3; ratio: time per experiment over the smallest size's, step: over the size before's; 1.00 is linear):"
    );
    // (first size, its times), (size before, its times): this binary's, the old one's.
    let mut first: [Option<(usize, Took)>; 2] = [None, None];
    let mut prev: [Option<(usize, Took)>; 2] = [None, None];
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
        let mut took: [Vec<Took>; 2] = [Vec::new(), Vec::new()];
        for round in 0..3 {
            // A B, then B A: neither binary always runs second.
            let mut order = vec![0];
            if old.is_some() {
                order.push(1);
            }
            if round % 2 == 1 {
                order.reverse();
            }
            for which in order {
                let bin = if which == 0 { new } else { old.unwrap() };
                took[which].push(history(bin, dir, &path, &args));
                if which == 0 && round == 0 {
                    assert_split(dir, n);
                }
            }
        }
        let mut line = format!("  {n:>5} experiments: ");
        for (which, name) in [(0, "this binary"), (1, "old binary")] {
            if took[which].is_empty() {
                continue;
            }
            let t = median(&took[which]);
            let f = *first[which].get_or_insert((n, t));
            if which == 1 {
                line.push_str(&format!("\n                     {name}: "));
            } else {
                line.push_str(&format!("{name}: "));
            }
            line.push_str(&size_line(n, t, f, prev[which]));
            prev[which] = Some((n, t));
        }
        if let (Some((_, a)), Some((_, b))) = (prev[0], prev[1].filter(|p| p.0 == n)) {
            line.push_str(&format!(
                "; new/old wall {:.3}, CPU {:.3}",
                a.wall / b.wall,
                a.cpu / b.cpu
            ));
        }
        println!("{line}; store written in {built:.1} s");
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
    let mut pairs: Vec<(Took, Option<Took>)> = Vec::new();
    for round in 0..rounds {
        let pair = match (old, round % 2) {
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
        pairs.push(pair);
    }
    let news: Vec<Took> = pairs.iter().map(|p| p.0).collect();
    let t = median(&news);
    print!(
        "  this binary: wall {:.3} s, CPU {:.3} s, peak RSS {} (median of {rounds})",
        t.wall,
        t.cpu,
        mib(t.rss)
    );
    let olds: Vec<Took> = pairs.iter().filter_map(|p| p.1).collect();
    if !olds.is_empty() {
        let o = median(&olds);
        let mut ratios: Vec<f64> = pairs
            .iter()
            .filter_map(|(a, b)| b.map(|b| a.wall / b.wall))
            .collect();
        ratios.sort_by(f64::total_cmp);
        println!(
            "\n  old binary:  wall {:.3} s, CPU {:.3} s, peak RSS {}\n  new/old wall pair by pair: median {:.3} (min {:.3}, max {:.3}); CPU {:.3}; peak RSS {:.3}",
            o.wall,
            o.cpu,
            mib(o.rss),
            ratios[ratios.len() / 2],
            ratios[0],
            ratios[ratios.len() - 1],
            t.cpu / o.cpu,
            t.rss / o.rss
        );
    } else {
        println!();
    }
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
