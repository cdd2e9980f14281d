//! Measurement tool, not a check (it asserts nothing about time): the cost
//! of vmstat at 1 s plus profile at 1 kHz on a CPU-bound thread.
//!
//! Run: cargo test --release --test monitor_overhead -- --ignored --nocapture
//!
//! One operation = a fixed amount of integer work (LCG steps) on one thread
//! pinned to CPU 0, timed by that thread's CPU clock (CLOCK_THREAD_CPUTIME_ID:
//! time on CPU, which without CONFIG_IRQ_TIME_ACCOUNTING includes the
//! sampling interrupts that hit it, and excludes waiting for the CPU on a
//! shared machine). Pairs of runs, monitors off and on (order alternating),
//! each ~0.3 s; the figure is the median over pairs of (on - off) / off.
//! Nothing is subtracted. The monitor threads' own CPU time over wall is
//! reported separately. A second set runs the profiler at 10 kHz to amplify
//! its per-sample cost ten times above the noise.

mod common;

use std::time::Duration;

use sysdelta::monitor::profile::ProfileMonitor;
use sysdelta::monitor::{build, Monitor};

fn pin0() {
    // SAFETY: cpu_set_t is plain data.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn work(iters: u64) -> Duration {
    let c0 = sysdelta::monitor::sampler::thread_cpu_s();
    let mut x = 1u64;
    for _ in 0..iters {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x ^= x >> 29;
    }
    std::hint::black_box(x);
    Duration::from_secs_f64(sysdelta::monitor::sampler::thread_cpu_s() - c0)
}

#[test]
#[ignore]
fn overhead_of_vmstat_1s_and_profile_1khz() {
    let mons = vec![
        build("vmstat", Duration::from_secs(1)).unwrap(),
        build("profile", Duration::from_secs(1)).unwrap(),
    ];
    measure("vmstat 1 s + profile 1 kHz", mons);
    let amp: Vec<Box<dyn Monitor>> = vec![Box::new(ProfileMonitor::new(
        10_000,
        Duration::from_secs(1),
    ))];
    measure("profile 10 kHz (amplified)", amp);
}

fn measure(label: &str, mut mons: Vec<Box<dyn Monitor>>) {
    for m in &mons {
        let pf = m.preflight();
        if !pf.is_empty() {
            common::skip(pf.join("; "));
            return;
        }
    }
    pin0();
    // Calibrate to ~0.5 s of work.
    let mut iters = 1_000_000u64;
    while work(iters) < Duration::from_millis(100) {
        iters *= 2;
    }
    iters *= 3;
    let pairs = 30;
    let mut rel = Vec::new();
    let (mut mon_cpu, mut mon_wall) = (0.0, 0.0);
    for i in 0..pairs {
        let mut on = || {
            for m in mons.iter_mut() {
                m.start().unwrap();
            }
            let d = work(iters);
            for m in mons.iter_mut() {
                let data = m.stop().unwrap();
                mon_cpu += data.self_cpu_s;
                mon_wall += data.wall_s;
            }
            d
        };
        let (off, on) = if i % 2 == 0 {
            let off = work(iters);
            (off, on())
        } else {
            let on = on();
            (work(iters), on)
        };
        rel.push((on.as_secs_f64() - off.as_secs_f64()) / off.as_secs_f64());
    }
    rel.sort_by(f64::total_cmp);
    let med = (rel[pairs / 2 - 1] + rel[pairs / 2]) / 2.0;
    eprintln!(
        "{label}: median {:+.3}% thread CPU time over {pairs} pairs (min {:+.3}%, max {:+.3}%); \
         monitor threads used {:.4}% of one CPU ({:.1} ms CPU over {:.1} s of monitor wall, {} monitors)",
        100.0 * med,
        100.0 * rel[0],
        100.0 * rel[pairs - 1],
        100.0 * mon_cpu / (mon_wall / mons.len() as f64),
        1e3 * mon_cpu,
        mon_wall / mons.len() as f64,
        mons.len()
    );
}
