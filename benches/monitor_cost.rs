//! What the monitors cost, against `perf record` at the same rate, in the
//! same run.
//!
//! 1. The profile's cost per sample, by sysdelta's own calibration
//!    (`monitor::profile::calibrate`), and the rate it would choose.
//! 2. The cost on a workload: the monitor probe's loop (a dependent chain
//!    over a 256 KiB table, `monitor::control::probe_chain`) on one thread
//!    pinned to CPU 0, timed by its thread CPU clock (which holds the sampling
//!    interrupts that land on it, not the time other tasks took), in
//!    rounds of three in rotating order: bare; under sysdelta's vmstat (1 s)
//!    and profile at RATE; under `perf record -a -e cpu-clock -F RATE`. The
//!    extra CPU time of each is the median over rounds of its time against
//!    the round's bare one. Per sample: extra time / (loop time x RATE).
//! 3. The monitors' own CPU share: their threads' CPU time over their wall
//!    time, against the `perf record` process's (user + system from wait4).
//!
//! Run as root: `cargo bench --bench monitor_cost`. Without perf (apt-get
//! install linux-perf; .ci/run installs it) or without perf_event access
//! the comparison is skipped with the reason.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sysdelta::monitor::profile::calibrate::{self, RateChoice, DEFAULT_BUDGET};
use sysdelta::monitor::sampler::thread_cpu_s;
use sysdelta::monitor::{build, Monitor};

const ROUNDS: usize = 9;
/// Loop iterations of one measurement: about 0.4 s here, so that what a
/// monitor pays once per run (its thread, the rings) weighs little.
const ITERS: u64 = 70_000_000;

use sysdelta::monitor::profile::calibrate::spin;

fn timed() -> f64 {
    let c = thread_cpu_s();
    spin(ITERS);
    thread_cpu_s() - c
}

fn pin_cpu0() {
    // SAFETY: a cpu_set_t with CPU 0 for this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

struct PerfRecord {
    child: std::process::Child,
    out: std::path::PathBuf,
}

impl PerfRecord {
    fn start(hz: u64) -> std::io::Result<PerfRecord> {
        let out = std::env::temp_dir().join(format!("sysdelta-bench-{}.perf", std::process::id()));
        let child = Command::new("perf")
            .args(["record", "-q", "-a", "-e", "cpu-clock", "-F"])
            .arg(hz.to_string())
            .arg("-o")
            .arg(&out)
            .args(["--", "sleep", "3600"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        // perf opens its events before it starts the command; give it time.
        std::thread::sleep(Duration::from_millis(400));
        Ok(PerfRecord { child, out })
    }

    /// Stop it; its CPU seconds (user + system, from wait4) and wall.
    fn stop(self, started: Instant) -> (f64, f64) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let wall = started.elapsed().as_secs_f64();
        let mut status = 0;
        // SAFETY: rusage out-pointer; waiting for our own child.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::wait4(self.child.id() as i32, &mut status, 0, &mut ru) };
        let _ = std::process::ExitStatus::from_raw(status);
        let _ = std::fs::remove_file(&self.out);
        let _ = std::fs::remove_file(self.out.with_extension("perf.old"));
        let cpu = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        (cpu(ru.ru_utime) + cpu(ru.ru_stime), wall)
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn monitors(hz: u64) -> Vec<Box<dyn Monitor>> {
    let mut ms = vec![
        build("vmstat", Duration::from_secs(1)).unwrap(),
        build("profile", Duration::from_secs(1)).unwrap(),
    ];
    ms[1].set_rate_hz(hz);
    ms
}

fn compare(hz: u64) {
    // One set of monitors for every round, as the runner keeps them for
    // every run of an experiment (the profile caches kernel symbols).
    let mut ms = monitors(hz);
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let (mut our_cpu, mut our_wall, mut perf_cpu, mut perf_wall) = (0.0, 0.0, 0.0, 0.0);
    let mut bare_t = Vec::new();
    for round in 0..ROUNDS {
        let mut bare = 0.0;
        let (mut with_ours, mut with_perf) = (0.0, 0.0);
        for k in 0..3 {
            match (round + k) % 3 {
                0 => bare = timed(),
                1 => {
                    for m in &mut ms {
                        m.start().unwrap();
                    }
                    with_ours = timed();
                    for m in &mut ms {
                        let d = m.stop().unwrap();
                        our_cpu += d.self_cpu_s;
                        our_wall += d.wall_s / 2.0; // two monitors, one wall
                    }
                }
                _ => {
                    let t = Instant::now();
                    let p = PerfRecord::start(hz).expect("perf record");
                    with_perf = timed();
                    let (c, w) = p.stop(t);
                    perf_cpu += c;
                    perf_wall += w;
                }
            }
        }
        bare_t.push(bare);
        ours.push((with_ours - bare) / bare);
        theirs.push((with_perf - bare) / bare);
    }
    let loop_s = median(bare_t);
    let (o, p) = (median(ours), median(theirs));
    println!("rate {hz} Hz, loop {loop_s:.3} s of CPU, {ROUNDS} rounds:");
    println!(
        "  extra CPU time of the loop: sysdelta vmstat+profile {:+.2}% (per sample {:.1} us), perf record {:+.2}% (per sample {:.1} us); ratio {:.2}",
        o * 100.0,
        o / hz as f64 * 1e6,
        p * 100.0,
        p / hz as f64 * 1e6,
        if p.abs() > 1e-9 { o / p } else { f64::NAN }
    );
    println!(
        "  own CPU share: sysdelta monitor threads {:.3}% of a CPU, perf record process {:.3}%",
        100.0 * our_cpu / our_wall.max(1e-9),
        100.0 * perf_cpu / perf_wall.max(1e-9)
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let pf = build("profile", Duration::from_secs(1))
        .unwrap()
        .preflight();
    if !pf.is_empty() {
        println!("monitor_cost: skipped: {}", pf.join("; "));
        return;
    }
    if Command::new("perf").arg("--version").output().is_err() {
        println!("monitor_cost: skipped: no perf here (apt-get install linux-perf)");
        return;
    }
    pin_cpu0();
    let cost = calibrate::measure().expect("calibration");
    let choice = RateChoice::choose(cost.per_sample_s, DEFAULT_BUDGET, None);
    println!("{}", choice.describe(&cost));
    for hz in [choice.hz, 1000] {
        compare(hz);
    }
}
