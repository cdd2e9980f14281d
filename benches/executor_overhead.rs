//! Per-run overhead of sysdelta's executor against hyperfine's, measured
//! side by side on the same machine in the same run.
//!
//! One operation is one run of `/bin/sh -c true`. For each tool the total
//! wall time of N runs is measured (process start to exit, so start-up and
//! storage are included), and the floor, a bare loop that spawns and waits
//! for `sh -c true` N times, is subtracted; what remains per run is the
//! tool's overhead. Rounds alternate tools; medians are reported.
//!
//! Run: `cargo bench --bench executor_overhead`. hyperfine is installed with
//! apt-get when missing and this runs as root; otherwise the comparison is
//! skipped with the reason.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: u32 = 300;
const ROUNDS: usize = 5;

fn ensure_hyperfine() -> Result<String, String> {
    let version = || {
        Command::new("hyperfine")
            .arg("--version")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    if let Some(v) = version() {
        return Ok(v);
    }
    if !nix::unistd::geteuid().is_root() {
        return Err("hyperfine is not installed and we are not root to apt-get install it".into());
    }
    eprintln!("installing hyperfine with apt-get ...");
    let _ = Command::new("apt-get").args(["update", "-qq"]).status();
    let _ = Command::new("apt-get")
        .args(["install", "-y", "-qq", "hyperfine"])
        .stdout(Stdio::null())
        .status();
    version().ok_or_else(|| "apt-get install hyperfine failed".into())
}

fn timed(mut c: Command) -> Duration {
    let t = Instant::now();
    let st = c
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("spawn");
    assert!(st.success(), "{c:?} failed");
    t.elapsed()
}

fn floor() -> Duration {
    let t = Instant::now();
    for _ in 0..RUNS {
        let st = Command::new("/bin/sh")
            .args(["-c", "true"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
    }
    t.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn per_run_ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0 / RUNS as f64
}

fn main() {
    let hf = match ensure_hyperfine() {
        Ok(v) => v,
        Err(why) => {
            println!("executor_overhead: SKIPPED: {why}");
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let (mut f, mut s, mut h) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        f.push(floor());
        let mut sd = Command::new(env!("CARGO_BIN_EXE_sysdelta"));
        sd.arg("--store")
            .arg(dir.path().join(format!("r{round}.db")))
            .args([
                "ab",
                "-c",
                "a=",
                "--runs",
                &RUNS.to_string(),
                "--quiet",
                "--no-report",
                "--",
                "true",
            ]);
        s.push(timed(sd));
        let mut hy = Command::new("hyperfine");
        hy.args([
            "-N",
            "--runs",
            &RUNS.to_string(),
            "--style",
            "none",
            "sh -c true",
        ]);
        h.push(timed(hy));
    }
    let (f, s, h) = (median(f), median(s), median(h));
    let so = per_run_ms(s) - per_run_ms(f);
    let ho = per_run_ms(h) - per_run_ms(f);
    println!(
        "executor overhead for one run of `sh -c true`, {RUNS} runs, median of {ROUNDS} rounds"
    );
    println!("  floor (spawn + wait only) {:8.3} ms/run", per_run_ms(f));
    println!(
        "  {hf:<25} {:8.3} ms/run, overhead {:+.3} ms/run",
        per_run_ms(h),
        ho
    );
    println!(
        "  sysdelta {:<16} {:8.3} ms/run, overhead {:+.3} ms/run",
        env!("CARGO_PKG_VERSION"),
        per_run_ms(s),
        so
    );
    println!(
        "  ratio of total time sysdelta/hyperfine: {:.3}; of overhead above the floor: {:.3} (target <= 1)",
        s.as_secs_f64() / h.as_secs_f64(),
        if ho > 0.0 { so / ho } else { f64::NAN }
    );
}
