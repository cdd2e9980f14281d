//! Monitors sampling the live system for a fraction of a second.

mod common;

use std::time::{Duration, Instant};

use sysdelta::monitor::profile::{print_diff, print_top};
use sysdelta::monitor::{build, names, MonitorData};

fn busy(d: Duration) -> u64 {
    let t = Instant::now();
    let mut x = 1u64;
    while t.elapsed() < d {
        for _ in 0..10_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        // One system call per round, so the profile always has kernel
        // samples to resolve (an idle CPU may not be sampled at all).
        std::hint::black_box(std::fs::metadata("/").is_ok());
    }
    x
}

fn run(name: &str, interval_ms: u64, work: Duration) -> Option<MonitorData> {
    let mut m = build(name, Duration::from_millis(interval_ms)).unwrap();
    let pf = m.preflight();
    if !pf.is_empty() {
        common::skip(format!("{name}: {}", pf.join("; ")));
        return None;
    }
    m.start().unwrap();
    busy(work);
    Some(m.stop().unwrap())
}

#[test]
fn bad_names_and_intervals_are_one_clear_error() {
    let e = build("vmstat", Duration::from_millis(5)).err().unwrap();
    assert!(
        e.to_string().contains("vmstat") && e.to_string().contains("10ms"),
        "{e}"
    );
    let e = build("iostat", Duration::from_secs(1)).err().unwrap();
    assert!(
        e.to_string().contains("iostat") && e.to_string().contains("vmstat, meminfo, profile"),
        "{e}"
    );
    for n in names() {
        assert!(build(n, Duration::from_millis(10)).is_ok());
    }
}

#[test]
fn vmstat_samples_every_interval() {
    let d = run("vmstat", 50, Duration::from_millis(400)).unwrap();
    let us = d.series.iter().find(|s| s.name == "vmstat.us").unwrap();
    // 400 ms at 50 ms: about 8 intervals plus the partial last one.
    assert!(us.values.len() >= 4, "{} samples", us.values.len());
    assert!(us.t_offsets_s.windows(2).all(|w| w[1] > w[0]));
    let sum = |n: &str| d.summaries.iter().find(|s| s.0.name == n).unwrap().1;
    assert!(sum("vmstat.cs_per_s") > 0.0);
    assert!(
        sum("vmstat.us_pct") > 10.0,
        "a busy thread shows as user time"
    );
    let cpu: f64 = ["us", "sy", "id", "wa", "st"]
        .iter()
        .map(|c| sum(&format!("vmstat.{c}_pct")))
        .sum();
    assert!((cpu - 100.0).abs() < 1e-6);
    assert!(d.self_cpu_s < d.wall_s);
}

#[test]
fn meminfo_series_per_field() {
    let d = run("meminfo", 50, Duration::from_millis(200)).unwrap();
    let total = d
        .series
        .iter()
        .find(|s| s.name == "meminfo.MemTotal")
        .unwrap();
    assert_eq!(total.unit, "KiB");
    assert!(total.values.len() >= 3);
    assert!(total
        .values
        .iter()
        .all(|v| *v == total.values[0] && *v > 0.0));
    assert!(d
        .summaries
        .iter()
        .any(|s| s.0.name == "meminfo.memavailable_min_kb"));
}

#[test]
fn profile_attributes_samples_to_symbols() {
    let Some(d) = run("profile", 100, Duration::from_millis(600)) else {
        return;
    };
    let p = d.profile.unwrap();
    // 2 CPUs x 1 kHz x 0.6 s; allow wide slack for timer coalescing.
    assert!(p.total_samples > 300, "{} samples", p.total_samples);
    assert!(p.symbols.windows(2).all(|w| w[0].2 >= w[1].2));
    assert!(
        p.symbols.iter().any(|s| s.1 && !s.0.starts_with("0x")),
        "kernel samples resolve through kallsyms"
    );
    // The busy test thread runs in user mode in this test binary.
    let ours = p
        .symbols
        .iter()
        .find(|s| !s.1 && s.0.starts_with("monitor_live") && s.0.contains("(monitor_live-"));
    assert!(
        ours.is_some(),
        "{:?}",
        &p.symbols[..p.symbols.len().min(10)]
    );
    let mut out = Vec::new();
    print_top(&p, 10, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    eprint!("{text}");
    assert!(text.lines().count() <= 12 && text.contains("total samples"));
    let mut out = Vec::new();
    print_diff(&p, &sysdelta::monitor::Profile::default(), 5, &mut out).unwrap();
    // A header, then one line per changed symbol, at most 5 (an idle
    // machine may show fewer distinct symbols in 0.6 s).
    assert_eq!(
        String::from_utf8(out).unwrap().lines().count(),
        1 + p.symbols.len().min(5)
    );
}
