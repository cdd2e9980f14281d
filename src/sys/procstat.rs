//! Processes seen through /proc/PID/stat: a process's start time (which,
//! with its pid, names it across pid reuse) and stopping a process that
//! is usually not our child. Separate from the journal, which records the
//! start time to kill only the process it started; the VM launcher and
//! the child config kind read start times too.

use std::fs;
use std::time::{Duration, Instant};

use anyhow::Result;

/// Field 22 of /proc/PID/stat: start time in clock ticks since boot.
pub fn process_start_time(pid: i32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces and parentheses: fields
    // after it start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// SIGTERM, wait up to 2 s for the process to go away, then SIGKILL.
/// The process is usually not our child (a crashed run's), so its exit
/// is observed by polling /proc rather than waitpid.
pub fn kill_and_wait(pid: i32, start: u64, group: bool) -> Result<()> {
    let target = if group { -pid } else { pid };
    // SAFETY: plain kill(2).
    unsafe { libc::kill(target, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        // Reap it if it happens to be our child; ignore errors otherwise.
        // SAFETY: non-blocking waitpid on a specific pid.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
        if process_start_time(pid) != Some(start) || is_zombie(pid) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: plain kill(2).
    unsafe { libc::kill(target, libc::SIGKILL) };
    Ok(())
}

fn is_zombie(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let rest = s[s.rfind(')')? + 1..].to_string();
            rest.split_whitespace().next().map(|st| st == "Z")
        })
        .unwrap_or(false)
}
