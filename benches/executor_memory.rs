//! The executor's memory against the number of runs (issue 34, item 3):
//! a `sysdelta run` must hold what it needs at any moment (the current
//! block, per-cell running state), not what it has run: the runs are in
//! the store.
//!
//! The plan: 2 configs x 1 workload that prints 20 `mN=value` lines, each
//! a regex metric (24 metrics a run with wall, user, sys and maxrss), at
//! 1,000 and at 10,000 runs per config, fixed (no adaptive stop), each in
//! a new store. Each is run twice: with `--no-report` (the executor alone:
//! its runs, the run log folded, the counts it says at the end) and with
//! its text report (the report reads every stored sample, as `sysdelta
//! report` does, through the same path). Sizes alternate (small, large,
//! small, large) and each pair's ratio of peaks is printed: the target is
//! the 10x plan within 1.3x of the small one's peak without the report
//! (flat, not linear). The report's own peak grows with the samples it
//! analyses; its ratio is printed for what it is.
//!
//! A peak is the child's `VmHWM`, read from /proc every 5 ms until it
//! exits (`ru_maxrss` from `wait4` would carry this process's own peak
//! across the spawn). The machine may be loaded: only ratios within a
//! pair are compared, and nothing here asserts a figure.
//!
//! Run: `cargo bench --bench executor_memory`.

use std::path::Path;
use std::process::{Command, Stdio};

#[path = "common/peak.rs"]
mod peak;

const SMALL: u32 = 1_000;
const LARGE: u32 = 10_000;
const METRICS: usize = 20;
const PAIRS: usize = 2;

/// The plan text at `runs` per config.
fn plan(runs: u32) -> String {
    let lines: String = (0..METRICS).map(|i| format!("m{i}={i}.5\\n")).collect();
    let metrics: Vec<String> = (0..METRICS)
        .map(|i| format!("  {{ name = \"m{i}\", regex = 'm{i}=(?P<value>[0-9.]+)' }}"))
        .collect();
    format!(
        "runs = {runs}\nwarmup = 0\nseed = 1\n\n[[config]]\nname = \"a\"\n\n[[config]]\nname = \"b\"\n\n\
         [[workload]]\nname = \"w\"\ncommand = \"printf '{lines}'\"\nmetrics = [\n{}\n]\n",
        metrics.join(",\n")
    )
}

/// The peak resident memory of one `sysdelta run` of the plan at `runs`
/// per config, in a new store under `dir`, MiB.
fn peak_mib(dir: &Path, runs: u32, report: bool) -> f64 {
    let plan_path = dir.join(format!("plan-{runs}.toml"));
    std::fs::write(&plan_path, plan(runs)).unwrap();
    // A new store each time, with whatever lies beside it (run log,
    // journal, lock): removed when this returns.
    let fresh = tempfile::tempdir_in(dir).unwrap();
    let store = fresh.path().join("s.db");
    let err_path = dir.join("err");
    let mut c = Command::new(env!("CARGO_BIN_EXE_sysdelta"));
    c.arg("--store")
        .arg(&store)
        .arg("run")
        .arg(&plan_path)
        .arg("--quiet");
    if !report {
        c.arg("--no-report");
    }
    let mut child = c
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let (status, peak_kib) = peak::wait_with_peak(&mut child);
    assert!(
        status.success(),
        "{}",
        std::fs::read_to_string(&err_path).unwrap_or_default()
    );
    peak_kib as f64 / 1024.0
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    println!(
        "sysdelta run, peak RSS against runs per config (2 configs, 1 workload, {} metrics a run; pairs in turn, machine possibly loaded):",
        METRICS + 4
    );
    for (what, report) in [
        ("--no-report (the executor)", false),
        ("with its report", true),
    ] {
        let pairs = if report { 1 } else { PAIRS };
        let mut ratios = Vec::new();
        for pair in 0..pairs {
            let small = peak_mib(dir.path(), SMALL, report);
            let large = peak_mib(dir.path(), LARGE, report);
            let ratio = large / small;
            ratios.push(ratio);
            println!(
                "  {what}, pair {}: {SMALL} runs {small:.1} MiB, {LARGE} runs {large:.1} MiB, ratio {ratio:.2}",
                pair + 1
            );
        }
        let worst = ratios.iter().cloned().fold(0.0, f64::max);
        let verdict = match (report, worst <= 1.3) {
            (false, true) => "flat: within the 1.3x target",
            (false, false) => "ABOVE the 1.3x target",
            (true, _) => "the report's samples, read as `sysdelta report` reads them",
        };
        println!("  {what}: largest ratio {worst:.2} ({verdict})");
    }
}
