//! The counters monitor (`perf stat -a` over a run) works with and without
//! a PMU: where hardware counters are missing (this VM: `perf stat -e
//! instructions true` says "not supported") it says so once and counts the
//! software events; its context-switch count agrees with the kernel's own
//! (/proc/stat `ctxt`) over the same window. Needs root or
//! perf_event_paranoid <= 0; skips with the reason otherwise.

mod common;

use std::time::{Duration, Instant};

use sysdelta::monitor::build;

fn proc_ctxt() -> u64 {
    std::fs::read_to_string("/proc/stat")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("ctxt "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Work that switches context: a thread that sleeps 1 ms at a time.
fn switching(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Whether the kernel offers a hardware cycles counter, asked through
/// perf_event_open on our own thread (the same question `perf stat -e
/// cycles` asks).
fn pmu_present() -> bool {
    let out = std::process::Command::new("perf")
        .args(["stat", "-x,", "-e", "cycles", "true"])
        .output();
    match out {
        Ok(o) => !String::from_utf8_lossy(&o.stderr).contains("not supported"),
        Err(_) => std::path::Path::new("/sys/bus/event_source/devices/cpu").exists(),
    }
}

#[test]
fn counters_fall_back_to_software_events_without_a_pmu_and_count_what_the_kernel_counts() {
    let mut m = build("counters", Duration::from_secs(1)).unwrap();
    let pf = m.preflight();
    if !pf.is_empty() {
        common::skip(pf.join("; "));
        return;
    }
    let notes = m.notes();
    let pmu = pmu_present();
    if pmu {
        assert!(notes.is_empty(), "{notes:?}");
    } else {
        assert_eq!(notes.len(), 1, "said once: {notes:?}");
        assert!(
            notes[0].contains("no hardware counters") && notes[0].contains("context_switches"),
            "{}",
            notes[0]
        );
        // Said once per monitor, not per run.
        assert_eq!(m.notes(), notes);
    }
    let c0 = proc_ctxt();
    m.start().unwrap();
    switching(Duration::from_millis(300));
    let d = m.stop().unwrap();
    let c1 = proc_ctxt();
    let get = |n: &str| d.summaries.iter().find(|s| s.0.name == n).map(|s| s.1);
    let cs = get("counters.context_switches").expect("context switches counted");
    let kernel = (c1 - c0) as f64;
    eprintln!("counters.context_switches {cs}, /proc/stat ctxt {kernel}");
    // Our thread alone switches about 300 times; the machine's count over
    // the window is the same quantity the kernel keeps, read a moment
    // earlier and later.
    assert!(cs >= 250.0, "{cs}");
    assert!(
        cs <= kernel * 1.05 + 20.0 && cs >= kernel * 0.8 - 20.0,
        "perf {cs} vs /proc/stat {kernel}"
    );
    assert!(get("counters.page_faults").is_some());
    if pmu {
        assert!(get("counters.cycles").unwrap() > 0.0);
        assert!(get("counters.instructions").unwrap() > 0.0);
        assert!(get("counters.ipc").is_some());
    } else {
        assert!(get("counters.cycles").is_none(), "no hardware counter here");
    }
    // Nothing stays open between runs: a second run works the same.
    m.start().unwrap();
    switching(Duration::from_millis(20));
    assert!(m.stop().is_ok());
}
