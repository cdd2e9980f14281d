//! After SIGKILL, the journal puts everything back: a child process (this
//! test binary re-run on `crash_helper`) enters `memory_limit`, `swap` on
//! zram and `swap` in a file, starts a process in the group, and is killed;
//! `Journal::restore_all` then leaves no cgroup, no zram device, no swap
//! file and the swap list as before. Needs root (CI); skips otherwise.

mod common;
mod memkinds_support;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use memkinds_support::*;
use sysdelta::config::journal::{self, Journal};

const DIR: &str = "SYSDELTA_MEMKINDS_CRASH_DIR";

/// The child side: enter the kinds, report what was made, wait to be killed.
#[test]
fn crash_helper() {
    let Ok(dir) = std::env::var(DIR) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let j = Journal::open_shared(&dir.join("store.journal")).unwrap();
    let mut mem = build("memory_limit", "limit = \"64M\"\nswap = \"64M\"", &j);
    let mut zram = build("swap", "size = \"64M\"\ndevice = \"zram\"", &j);
    let file_src = format!("size = \"32M\"\ndir = \"{}\"", dir.display());
    let mut file = build("swap", &file_src, &j);
    zram.enter().unwrap();
    file.enter().unwrap();
    let procs = mem.enter().unwrap().cgroup_procs.unwrap();
    // A workload process the crash leaves running in the group.
    let mut sleep = Command::new("sleep");
    sleep.arg("60");
    // Never waited for: the helper is SIGKILLed and the process outlives it.
    #[allow(clippy::zombie_processes)]
    let pid = spawn_in(&procs, sleep).id();
    std::fs::write(
        dir.join("ready"),
        format!("{}\n{pid}\n", procs.parent().unwrap().display()),
    )
    .unwrap();
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Kills the helper and the process it left, and restores, on drop.
struct Helper {
    child: Child,
    journal: PathBuf,
    leftover: Option<(i32, u64)>,
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some((pid, start)) = self.leftover {
            let _ = journal::apply(&journal::UndoAction::KillProcess {
                pid,
                start_time: start,
                group: false,
            });
        }
        if let Ok(mut j) = Journal::open(&self.journal) {
            if let Err(e) = j.restore_all() {
                eprintln!("cleanup restore: {e:#}");
            }
        }
    }
}

fn spawn_helper(dir: &Path) -> Helper {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "crash_helper", "--nocapture", "--test-threads=1"])
        .env(DIR, dir);
    // SAFETY: prctl is async-signal-safe. The helper dies with this test.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    Helper {
        child: cmd.spawn().unwrap(),
        journal: dir.join("store.journal"),
        leftover: None,
    }
}

#[test]
fn sigkill_with_cgroup_and_swaps_then_restore_leaves_nothing() {
    if let Some(why) = skip_reason(true) {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP memkinds crash test: {why}\n"),
        )
        .unwrap_or(());
        return;
    }
    let Some(_s) = serial() else {
        return;
    };
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let before = mem_state();
    let mut h = spawn_helper(dir.path());
    let ready = dir.path().join("ready");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ready.exists() {
        if let Some(st) = h.child.try_wait().unwrap() {
            panic!("helper exited ({st}) before it was ready");
        }
        assert!(Instant::now() < deadline, "helper never got ready");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(20)); // the write is complete
    let text = std::fs::read_to_string(&ready).unwrap();
    let mut lines = text.lines();
    let group = PathBuf::from(lines.next().unwrap());
    let pid: i32 = lines.next().unwrap().parse().unwrap();
    h.leftover = journal::process_start_time(pid).map(|s| (pid, s));

    let during = mem_state();
    assert!(group.is_dir());
    assert_eq!(during.swaps.len(), before.swaps.len() + 2, "{during:?}");
    assert_eq!(during.zram.len(), before.zram.len() + 1, "{during:?}");

    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(h.child.id() as i32, libc::SIGKILL) };
    h.child.wait().unwrap();
    let jpath = dir.path().join("store.journal");
    assert!(Journal::is_pending(&jpath).unwrap());
    let lines = Journal::open(&jpath).unwrap().restore_all().unwrap();
    eprintln!("restore:\n  {}", lines.join("\n  "));

    assert!(!group.exists(), "{} is left", group.display());
    assert_eq!(mem_state(), before);
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("sysdelta-swap-")
        })
        .collect();
    assert!(files.is_empty(), "swap file left");
    assert!(!Journal::is_pending(&jpath).unwrap());
    // The group's process outlived the crash: restore moved it out of the
    // group (the journal only removes the group); the guard stops it.
}
