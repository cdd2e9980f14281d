//! A process launched into a `memory_limit` group of 64M that touches
//! 256M is OOM-killed when the group may not swap, and swaps (and lives)
//! when `swap` gives it a zram device to swap to; the run metrics
//! `memory_limit.peak_mib` and `memory_limit.oom_kills` show which.
//! Needs root (CI); skips with a printed reason otherwise.

mod common;
mod memkinds_support;

use std::process::{Command, Stdio};

use memkinds_support::*;
use sysdelta::config::kind::ConfigKind;
use sysdelta::config::kinds::memory_limit::{OOM_METRIC, PEAK_METRIC};

const ALLOC: &str = "SYSDELTA_MEMKINDS_ALLOC_MIB";

/// The child side: touch every page of ALLOC MiB, then print VmSwap.
#[test]
fn alloc_helper() {
    let Ok(mib) = std::env::var(ALLOC) else {
        return;
    };
    let n: usize = mib.parse::<usize>().unwrap() << 20;
    let mut v = vec![0u8; n];
    // One varied byte per page: every page is really allocated.
    for (i, b) in v.iter_mut().step_by(4096).enumerate() {
        *b = (i % 251) as u8 + 1;
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let swap = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSwap:"))
        .unwrap()
        .trim();
    println!("VMSWAP {swap}");
    std::hint::black_box(&v);
}

fn alloc_cmd(mib: u32) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "alloc_helper", "--nocapture", "--test-threads=1"])
        .env(ALLOC, mib.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    cmd
}

fn metric(k: &mut Box<dyn ConfigKind>) -> (f64, f64) {
    let m = k.after_run().unwrap();
    let get = |name: &str| m.iter().find(|s| s.metric == name).unwrap().values[0];
    (get(PEAK_METRIC), get(OOM_METRIC))
}

#[test]
fn over_the_limit_without_swap_is_oom_killed_and_counted() {
    if let Some(why) = skip_reason(false) {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP oom test: {why}\n"),
        )
        .unwrap_or(());
        return;
    }
    let Some(_s) = serial() else {
        return;
    };
    let mut g = Guard::new();
    // swap = "0": no swapping even if the machine has swap on.
    let mut k = build("memory_limit", "limit = \"64M\"\nswap = \"0\"", &g.journal);
    let procs = k.enter().unwrap().cgroup_procs.unwrap();
    g.groups.push(procs.parent().unwrap().to_path_buf());
    k.before_run().unwrap();
    g.children.push(spawn_in(&procs, alloc_cmd(256)));
    let out = g.children.pop().unwrap().wait_with_output().unwrap();
    let (peak, ooms) = metric(&mut k);
    eprintln!(
        "no swap: status {:?}, peak {peak:.1} MiB, oom kills {ooms}",
        out.status
    );
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(libc::SIGKILL),
        "the 256M process was not killed"
    );
    assert!(ooms >= 1.0, "oom kills {ooms}");
    assert!(peak > 48.0 && peak <= 64.0, "peak {peak} MiB");
    // The next run starts from zero.
    k.before_run().unwrap();
    let (peak2, ooms2) = metric(&mut k);
    assert_eq!(ooms2, 0.0);
    assert!(peak2 < peak, "peak was not reset: {peak2}");
    k.leave().unwrap();
}

#[test]
fn over_the_limit_with_swap_on_swaps_and_lives() {
    if let Some(why) = skip_reason(true) {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP swap test: {why}\n"),
        )
        .unwrap_or(());
        return;
    }
    let Some(_s) = serial() else {
        return;
    };
    let mut g = Guard::new();
    let before = mem_state();
    let mut sw = build("swap", "size = \"512M\"\ndevice = \"zram\"", &g.journal);
    sw.enter().unwrap();
    let mut k = build(
        "memory_limit",
        "limit = \"64M\"\nswap = \"512M\"",
        &g.journal,
    );
    let procs = k.enter().unwrap().cgroup_procs.unwrap();
    g.groups.push(procs.parent().unwrap().to_path_buf());
    k.before_run().unwrap();
    g.children.push(spawn_in(&procs, alloc_cmd(256)));
    let out = g.children.pop().unwrap().wait_with_output().unwrap();
    let (peak, ooms) = metric(&mut k);
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!(
        "with swap: status {:?}, peak {peak:.1} MiB, oom kills {ooms}, {}",
        out.status,
        stdout
            .lines()
            .find(|l| l.contains("VMSWAP"))
            .unwrap_or("no VmSwap line")
    );
    assert!(out.status.success(), "{:?}", out.status);
    // The harness prints "test alloc_helper ... " on the same line.
    let swapped_kib: u64 = stdout
        .lines()
        .find_map(|l| l.split("VMSWAP ").nth(1))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("the helper printed its VmSwap");
    // 256M touched in a 64M group: at least 150M must have gone to swap.
    assert!(swapped_kib > 150 * 1024, "VmSwap {swapped_kib} kB");
    assert_eq!(ooms, 0.0);
    assert!(peak > 48.0 && peak <= 64.0, "peak {peak} MiB");
    k.leave().unwrap();
    sw.leave().unwrap();
    assert_eq!(mem_state(), before);
}
