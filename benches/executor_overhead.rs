//! Per-run overhead of sysdelta's executor against hyperfine's, measured
//! side by side on the same machine in the same run.
//!
//! One operation is one run of `/bin/sh -c true`, started without a
//! shell of the tool's own (`-N` in both: under a shell, sysdelta also
//! times the shell's start-up after each run, which is a measurement, not
//! per-run overhead to compare). Each tool runs it
//! `SMALL` and `LARGE` times, each count as one process whose whole wall
//! time is taken (start-up, storage and exit included). A tool's cost per
//! run is the slope `(T(LARGE) - T(SMALL)) / (LARGE - SMALL)`: what one
//! more run costs, without what the tool pays once per invocation, which is
//! reported apart as its start-up, `T(SMALL) - SMALL x slope` (sysdelta
//! creates a store, its state journal and the environment fingerprint;
//! hyperfine sets up little). The floor is the cost per run of a bare loop
//! that spawns `sh -c true` and waits for it; a tool's per-run overhead is
//! its slope minus the floor. Rounds run the tools in turn, in alternating
//! order. The verdict rests on the paired difference of the two tools' cost
//! per run within each round: its median over rounds, with a
//! distribution-free 95% confidence interval (the sign test's order
//! statistics), since the machines are shared and one round's slope can be
//! off by tens of µs. Medians over rounds are given for the rest, and the
//! ratio of total times at `LARGE` runs, start-up included.
//!
//! A second section is the whole-process target of issue 34: 1,000 runs
//! of `true` without a shell, `sysdelta ab -N --config a= --runs 1000
//! --quiet --no-report -- true` (a new store each time: the store, its
//! journal, the fingerprint and the run log's folds included) against
//! `hyperfine -N --runs 1000 --style none true`, in pairs (A B, B A, ...),
//! each pair's wall and CPU ratio printed, then their medians.
//!
//! Run: `cargo bench --bench executor_overhead`. hyperfine is installed with
//! apt-get when missing and this runs as root; otherwise the comparison is
//! skipped with the reason.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SMALL: u32 = 50;
const LARGE: u32 = 800;
const ROUNDS: usize = 15;

fn hyperfine_version() -> Result<String, String> {
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
    // Installing is the install step's job (scripts/install-bench-peers.sh,
    // run by .ci/run), never a bench's.
    Err("hyperfine is not installed (scripts/install-bench-peers.sh installs it)".into())
}

/// CPU time (user + system) of all reaped children so far.
fn children_cpu() -> Duration {
    let ru = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .expect("getrusage");
    let tv = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(t.tv_sec() as u64) + Duration::from_micros(t.tv_usec() as u64)
    };
    tv(ru.user_time()) + tv(ru.system_time())
}

/// Wall and CPU time of one invocation (CPU: the tool's and that of every
/// child it reaped).
fn timed(mut c: Command) -> Cost {
    let c0 = children_cpu();
    let t = Instant::now();
    let st = c
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("spawn");
    assert!(st.success(), "{c:?} failed");
    Cost {
        wall: t.elapsed(),
        cpu: children_cpu() - c0,
    }
}

#[derive(Clone, Copy)]
struct Cost {
    wall: Duration,
    cpu: Duration,
}

fn floor(runs: u32) -> Duration {
    let t = Instant::now();
    for _ in 0..runs {
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

fn sysdelta(store: &std::path::Path, runs: u32) -> Cost {
    let mut sd = Command::new(env!("CARGO_BIN_EXE_sysdelta"));
    sd.arg("--store").arg(store).args([
        "ab",
        "-N",
        "--config",
        "a=",
        "--runs",
        &runs.to_string(),
        "--quiet",
        "--no-report",
        "--",
        "sh",
        "-c",
        "true",
    ]);
    timed(sd)
}

fn hyperfine(runs: u32) -> Cost {
    let mut hy = Command::new("hyperfine");
    hy.args([
        "-N",
        "--runs",
        &runs.to_string(),
        "--style",
        "none",
        "sh -c true",
    ]);
    timed(hy)
}

/// The whole-process section: `WHOLE` runs of `true`, `PAIRS` pairs.
const WHOLE: u32 = 1000;
const PAIRS: usize = 10;

fn whole_process(dir: &std::path::Path) {
    let sd = |i: usize| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_sysdelta"));
        c.arg("--store")
            .arg(dir.join(format!("whole-{i}.db")))
            .args([
                "ab",
                "-N",
                "--config",
                "a=",
                "--runs",
                &WHOLE.to_string(),
                "--quiet",
                "--no-report",
                "--",
                "true",
            ]);
        timed(c)
    };
    let hf = || {
        let mut c = Command::new("hyperfine");
        c.args([
            "-N",
            "--runs",
            &WHOLE.to_string(),
            "--style",
            "none",
            "true",
        ]);
        timed(c)
    };
    println!(
        "whole process, {WHOLE} runs of `true` without a shell, sysdelta / hyperfine, pair by pair:"
    );
    let (mut walls, mut cpus) = (Vec::new(), Vec::new());
    for i in 0..PAIRS {
        let (s, h) = if i % 2 == 0 {
            let s = sd(i);
            (s, hf())
        } else {
            let h = hf();
            (sd(i), h)
        };
        let (w, c) = (
            s.wall.as_secs_f64() / h.wall.as_secs_f64(),
            s.cpu.as_secs_f64() / h.cpu.as_secs_f64(),
        );
        println!(
            "  pair {i} ({} first): sysdelta {:.3} s wall {:.3} s CPU, hyperfine {:.3} s wall {:.3} s CPU: wall {w:.3}x, CPU {c:.3}x",
            if i % 2 == 0 { "sysdelta" } else { "hyperfine" },
            s.wall.as_secs_f64(),
            s.cpu.as_secs_f64(),
            h.wall.as_secs_f64(),
            h.cpu.as_secs_f64(),
        );
        walls.push(w);
        cpus.push(c);
    }
    println!(
        "  median wall ratio {:.3}x, median CPU ratio {:.3}x (target: both <= 1.0x)",
        median(walls),
        median(cpus)
    );
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The distribution-free 95% confidence interval of the median of `v`:
/// order statistics `k` and `n + 1 - k` (1-based), with `k` the largest
/// rank whose binomial(n, 1/2) tail `P(X < k)` stays within 2.5%.
fn median_ci(mut v: Vec<f64>) -> (f64, f64) {
    use statrs::distribution::{Binomial, DiscreteCDF};
    v.sort_by(f64::total_cmp);
    let n = v.len() as u64;
    let b = Binomial::new(0.5, n).expect("valid binomial");
    let k = (1..=n / 2)
        .take_while(|&k| b.cdf(k - 1) <= 0.025)
        .last()
        .unwrap_or(1);
    (v[(k - 1) as usize], v[(n - k) as usize])
}

/// Per-run cost (µs) and start-up (ms) from the two counts' times.
fn slope_and_startup(small: Duration, large: Duration) -> (f64, f64) {
    let per_run = (large.as_secs_f64() - small.as_secs_f64()) / f64::from(LARGE - SMALL);
    let startup = small.as_secs_f64() - f64::from(SMALL) * per_run;
    (per_run * 1e6, startup * 1e3)
}

fn main() {
    let hf = match hyperfine_version() {
        Ok(v) => v,
        Err(why) => {
            println!("executor_overhead: SKIPPED: {why}");
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    whole_process(dir.path());
    let (mut fl, mut sd, mut hy) = (Vec::new(), Vec::new(), Vec::new());
    let (mut sd_start, mut hy_start) = (Vec::new(), Vec::new());
    let (mut sd_total, mut hy_total) = (Vec::new(), Vec::new());
    let mut cpu_diff = Vec::new();
    for round in 0..ROUNDS {
        let (fs, flg) = (floor(SMALL), floor(LARGE));
        fl.push(slope_and_startup(fs, flg).0);
        // A new store per invocation, as a first experiment would have.
        let store = |n: u32| dir.path().join(format!("r{round}-{n}.db"));
        let run_sysdelta = || {
            (
                sysdelta(&store(SMALL), SMALL),
                sysdelta(&store(LARGE), LARGE),
            )
        };
        let run_hyperfine = || (hyperfine(SMALL), hyperfine(LARGE));
        let ((ss, sl), (hs, hl)) = if round % 2 == 0 {
            let s = run_sysdelta();
            (s, run_hyperfine())
        } else {
            let h = run_hyperfine();
            (run_sysdelta(), h)
        };
        let (s, s0) = slope_and_startup(ss.wall, sl.wall);
        let (h, h0) = slope_and_startup(hs.wall, hl.wall);
        cpu_diff.push(slope_and_startup(ss.cpu, sl.cpu).0 - slope_and_startup(hs.cpu, hl.cpu).0);
        sd.push(s);
        hy.push(h);
        sd_start.push(s0);
        hy_start.push(h0);
        sd_total.push(sl.wall.as_secs_f64());
        hy_total.push(hl.wall.as_secs_f64());
    }
    let (clo, chi) = median_ci(cpu_diff.clone());
    let cd = median(cpu_diff);
    let diffs: Vec<f64> = sd.iter().zip(&hy).map(|(s, h)| s - h).collect();
    let (dlo, dhi) = median_ci(diffs.clone());
    let d = median(diffs);
    let (f, s, h) = (median(fl), median(sd), median(hy));
    let (so, ho) = (s - f, h - f);
    println!(
        "executor overhead for one run of `sh -c true` ({SMALL} and {LARGE} runs per invocation, {ROUNDS} rounds, medians)"
    );
    println!("  floor (spawn + wait only)      {f:8.1} us/run");
    println!(
        "  {hf:<30} {h:8.1} us/run, overhead {ho:+6.1} us/run, start-up {:5.1} ms",
        median(hy_start)
    );
    println!(
        "  sysdelta {:<21} {s:8.1} us/run, overhead {so:+6.1} us/run, start-up {:5.1} ms",
        env!("CARGO_PKG_VERSION"),
        median(sd_start)
    );
    println!(
        "  sysdelta - hyperfine per run, paired by round: median {d:+.1} us, 95% CI [{dlo:+.1}, {dhi:+.1}]"
    );
    println!(
        "  CPU time per run (tool and its children), sysdelta - hyperfine: median {cd:+.1} us, 95% CI [{clo:+.1}, {chi:+.1}]"
    );
    println!(
        "  reading (wall time): {}",
        if dhi < 0.0 {
            "sysdelta's cost per run is smaller than hyperfine's beyond the noise".to_string()
        } else if dlo > 0.0 {
            "sysdelta's cost per run is LARGER than hyperfine's beyond the noise".to_string()
        } else {
            format!(
                "no difference beyond the noise; at 95%, sysdelta costs at most {dhi:.1} us more per run (or {:.1} us less)",
                -dlo
            )
        }
    );
    println!(
        "  ratio of medians: overhead above the floor {:.2}, cost per run {:.3}",
        if ho > 0.0 { so / ho } else { f64::NAN },
        s / h
    );
    println!(
        "  total time of {LARGE} runs, start-up included, sysdelta/hyperfine: {:.3}",
        median(sd_total) / median(hy_total)
    );
}
