//! Processes as /proc shows them, for the fixtures that start servers
//! (pg.rs, sshd.rs): which processes a server spawned, and killing exactly
//! those, never anything found by name.

use std::collections::BTreeSet;
use std::process::Child;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// One live process: its pid, parent and session (zombies are left out:
/// they are dead already and their children have been reparented).
#[derive(Clone, Copy, Debug)]
pub struct Proc {
    pub pid: i32,
    pub ppid: i32,
    pub sid: i32,
}

/// `/proc/PID/stat` of a live process, or None (gone, or a zombie).
pub fn stat(pid: i32) -> Option<Proc> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid pgrp session ...": comm may hold spaces and
    // parentheses, so the fields are counted from its last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    if f.first() == Some(&"Z") || f.first() == Some(&"X") {
        return None;
    }
    Some(Proc {
        pid,
        ppid: f.get(1)?.parse().ok()?,
        sid: f.get(3)?.parse().ok()?,
    })
}

pub fn all() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter_map(stat)
        .collect()
}

pub fn alive(pid: i32) -> bool {
    stat(pid).is_some()
}

/// The command line of `pid`, its arguments joined by spaces.
pub fn cmdline(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

/// `root` and what it spawned: its descendants, and every process of a
/// session that one of them leads (sshd and its sessions call setsid(), so
/// a command's background children that outlived their parent, reparented
/// to init, are found through their session).
pub fn tree(root: i32) -> BTreeSet<i32> {
    let procs = all();
    let mut members = BTreeSet::new();
    if !alive(root) {
        return members;
    }
    members.insert(root);
    loop {
        let new: Vec<i32> = procs
            .iter()
            .filter(|p| {
                !members.contains(&p.pid) && (members.contains(&p.ppid) || members.contains(&p.sid))
            })
            .map(|p| p.pid)
            .collect();
        if new.is_empty() {
            return members;
        }
        members.extend(new);
    }
}

/// SIGKILL `root` and everything `tree` finds under it. Each process is
/// stopped (SIGSTOP) as it is found, so none forks while the rest are
/// looked for; then they all get SIGKILL. Returns the pids killed.
pub fn kill_tree(root: i32) -> BTreeSet<i32> {
    let mut stopped = BTreeSet::new();
    loop {
        let new: Vec<i32> = tree(root).difference(&stopped).copied().collect();
        if new.is_empty() {
            break;
        }
        for p in &new {
            let _ = kill(Pid::from_raw(*p), Signal::SIGSTOP);
        }
        stopped.extend(new);
    }
    for p in &stopped {
        let _ = kill(Pid::from_raw(*p), Signal::SIGKILL);
    }
    stopped
}

/// Wait until none of `pids` is alive; false after `timeout`.
pub fn wait_gone(pids: &BTreeSet<i32>, timeout: Duration) -> bool {
    let until = Instant::now() + timeout;
    loop {
        if !pids.iter().any(|p| alive(*p)) {
            return true;
        }
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A child process killed (with what it spawned) and reaped when dropped,
/// also when the test panics: for a client left running in the background.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            kill_tree(self.0.id() as i32);
        }
        let _ = self.0.wait();
    }
}
