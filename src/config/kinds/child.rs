//! Helper processes a config runs alongside the workload (perf record):
//! started in their own process group, told to die with us (PDEATHSIG), and
//! journaled by pid + start time so `sysdelta restore` can stop one left
//! behind by a crash without ever killing a process that reused the pid.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::config::journal::{self, EntryId, JournalHandle, UndoAction};

pub struct Tracked {
    pub child: Child,
    pub entry: EntryId,
}

/// Spawn `cmd` in a new process group and journal how to kill it.
pub fn spawn(mut cmd: Command, journal: &JournalHandle, owner: &str) -> Result<Tracked> {
    // SAFETY: setpgid and prctl are async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::setpgid(0, 0);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    let program = format!("{:?}", cmd.get_program());
    let child = cmd
        .spawn()
        .with_context(|| format!("{owner}: cannot start {program}"))?;
    let pid = child.id() as i32;
    // The start time is read right after spawn; the child cannot have been
    // reaped yet (we have not waited), so the pid is still ours.
    let start_time = journal::process_start_time(pid).unwrap_or(0);
    let entry = journal.lock().unwrap().record_all(
        owner,
        vec![UndoAction::KillProcess {
            pid,
            start_time,
            group: true,
        }],
    )?[0];
    Ok(Tracked { child, entry })
}

/// Send `sig` to the child's group and wait up to `grace` for it to exit,
/// then SIGKILL. Returns whether it exited by itself within the grace time.
pub fn stop(t: &mut Tracked, sig: i32, grace: Duration) -> Result<bool> {
    let pid = t.child.id() as i32;
    // SAFETY: plain kill(2) on our own child's group.
    unsafe { libc::kill(-pid, sig) };
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if t.child.try_wait()?.is_some() {
            return Ok(true);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: as above.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    t.child.wait()?;
    Ok(false)
}
