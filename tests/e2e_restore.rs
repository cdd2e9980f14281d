//! Root only (CI is root): SIGKILL sysdelta while a config has changed the
//! system, then `sysdelta restore` puts everything back. Skips with a
//! printed reason where root or tracefs is missing.
//!
//! The function tracer is refused on some VMs (this one answers EPERM), so
//! the tracing state changed here is events + tracing_on, which every
//! kernel with tracefs allows.

mod common;
use common::*;

use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// These tests change global state: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn skip_reason() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root".into());
    }
    if !std::path::Path::new("/sys/kernel/tracing").exists() {
        return Some("no /sys/kernel/tracing (tracefs not built in)".into());
    }
    None
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Tracing state (set_event, tracing_on), read through a temporary tracefs
/// mount, and whether tracefs is mounted anywhere.
fn tracing_state() -> (String, String, usize) {
    let mounts = read("/proc/mounts")
        .lines()
        .filter(|l| l.contains("tracefs"))
        .count();
    let dir = tempfile::tempdir().unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tracefs", "nodev"])
        .arg(dir.path())
        .status()
        .unwrap()
        .success();
    assert!(ok, "mount tracefs for reading");
    let ev = read(&dir.path().join("set_event").display().to_string());
    let on = read(&dir.path().join("tracing_on").display().to_string());
    assert!(Command::new("umount")
        .arg(dir.path())
        .status()
        .unwrap()
        .success());
    (ev, on, mounts)
}

fn runs(store: &std::path::Path) -> i64 {
    rusqlite::Connection::open_with_flags(store, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .and_then(|c| c.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0)))
        .unwrap_or(0)
}

fn kill_after_runs(sb: &Sandbox, plan: &std::path::Path, n: i64) {
    let mut child = Command::new(bin())
        .arg("--store")
        .arg(sb.store())
        .env("SYSDELTA_RUN_DIR", sb.run_dir())
        .args(["run", plan.to_str().unwrap(), "--quiet", "--no-report"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while runs(&sb.store()) < n {
        if let Some(st) = child.try_wait().unwrap() {
            panic!("sysdelta exited early: {st}");
        }
        assert!(start.elapsed() < Duration::from_secs(120), "no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL: no teardown runs
    child.wait().unwrap();
}

#[test]
fn sigkill_with_tracing_and_a_sysctl_then_restore_puts_both_back() {
    if let Some(why) = skip_reason() {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP sigkill_with_tracing_and_a_sysctl: {why}\n"),
        )
        .unwrap_or(());
        return;
    }
    let Some(_g) = common::machine::serial(&SERIAL) else {
        return;
    };
    let sb = Sandbox::new();
    let swappiness_before = read("/proc/sys/vm/swappiness");
    let other = if swappiness_before == "37" {
        "38"
    } else {
        "37"
    };
    let tracing_before = tracing_state();
    let plan = sb.write(
        "plan.toml",
        &format!(
            r#"
runs = 50
[[config]]
name = "traced"
[config.ftrace]
events = ["sched"]
tracing_on = true
[config.sysctl]
"vm.swappiness" = {other}
[[workload]]
name = "nap"
command = "sleep 0.05"
"#
        ),
    );
    kill_after_runs(&sb, &plan, 3);
    // The kill left the system changed, and sysdelta knows it.
    assert_eq!(
        read("/proc/sys/vm/swappiness"),
        other,
        "the config was entered"
    );
    let refused = sb.run(&["run", plan.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("sysdelta restore"),
        "{}",
        stderr(&refused)
    );

    let out = sb.run(&["restore"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("restored"), "{}", stdout(&out));
    assert!(stdout(&out).contains("--resume 1"), "{}", stdout(&out));
    assert_eq!(read("/proc/sys/vm/swappiness"), swappiness_before);
    assert_eq!(
        tracing_state(),
        tracing_before,
        "set_event, tracing_on and tracefs mounts as before"
    );
    // And now the experiment can be finished.
    let resumed = Command::new(bin())
        .arg("--store")
        .arg(sb.store())
        .env("SYSDELTA_RUN_DIR", sb.run_dir())
        .args([
            "run",
            "--resume",
            "1",
            "--trust-stored-plan",
            "--quiet",
            "--no-report",
        ])
        .output()
        .unwrap();
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_eq!(runs(&sb.store()), 50);
    assert_eq!(read("/proc/sys/vm/swappiness"), swappiness_before);
    assert_eq!(tracing_state(), tracing_before);
}

fn loop_devices() -> String {
    let out = Command::new("losetup").arg("-a").output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn sigkill_during_fsops_then_restore_leaves_no_loop_device_mount_or_file() {
    if let Some(why) = skip_reason() {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP sigkill_during_fsops: {why}\n"),
        )
        .unwrap_or(());
        return;
    }
    if Command::new("mkfs.ext4").arg("-V").output().is_err() {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP sigkill_during_fsops: mkfs.ext4 not installed\n"),
        )
        .unwrap_or(());
        return;
    }
    let Some(_g) = common::machine::serial(&SERIAL) else {
        return;
    };
    let sb = Sandbox::new();
    let loops_before = loop_devices();
    let mounts_before = read("/proc/mounts");
    let backing = sb.path("volumes");
    std::fs::create_dir(&backing).unwrap();
    let plan = sb.write(
        "plan.toml",
        &format!(
            r#"
runs = 30
[[config]]
name = "plain"
[[workload]]
name = "fsops"
builtin = "fsops"
params = {{ volumes = 3, size_mb = 32, dir = "{}" }}
"#,
            backing.display()
        ),
    );
    kill_after_runs(&sb, &plan, 2);
    let out = sb.run(&["restore"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(loop_devices(), loops_before, "no loop device left");
    assert_eq!(read("/proc/mounts"), mounts_before, "no mount left");
    let left: Vec<_> = std::fs::read_dir(&backing).unwrap().collect();
    assert!(left.is_empty(), "backing files removed: {left:?}");
    // The killed run's scratch directory is gone too.
    let out = sb.run(&["restore"]);
    assert!(
        stdout(&out).contains("nothing to restore"),
        "{}",
        stdout(&out)
    );
}
