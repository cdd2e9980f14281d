//! The undo actions the journal records, one human line for each, and
//! running one. Separate from the log (mod.rs), which only stores and
//! replays them; the OS calls the actions make live in `crate::sys`.
//!
//! Every action is written so that running it when the change never
//! happened (a crash between `record` and the change) is harmless.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use serde::{Deserialize, Serialize};

use crate::sys::loopdev::{detach_loop, loop_backing_file, loop_bound_to, remove_loop};
use crate::sys::mount::{is_mounted, unmount};
use crate::sys::procstat::{kill_and_wait, process_start_time};
use crate::sys::sysfs::{with_tracefs, write_lines, write_value};

/// How to undo one change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum UndoAction {
    /// Write `contents` back into `path` in one write (sysctls, tracefs
    /// values such as `current_tracer`, `tracing_on`, `buffer_size_kb`).
    WriteFile { path: PathBuf, contents: String },
    /// Truncate `path`, then write each line with its own write: the shape
    /// of tracefs `set_event`, where truncation disables every event and
    /// each write enables one.
    WriteLines { path: PathBuf, lines: Vec<String> },
    /// Unmount `target` if it is mounted (and, when `source` is given, if
    /// its source is that device), so an unrelated mount is left alone.
    Unmount {
        target: PathBuf,
        source: Option<String>,
    },
    /// Detach loop device `device` if it is still bound to `backing_file`.
    DetachLoop {
        device: PathBuf,
        backing_file: PathBuf,
    },
    /// Remove loop device `number` (LOOP_CTL_REMOVE) if it is unbound: for
    /// devices sysdelta itself created beyond those that existed before.
    RemoveLoop { number: u32 },
    /// Remove a file, or a directory (recursively when `recursive`).
    RemovePath { path: PathBuf, recursive: bool },
    /// Kill process `pid` (its process group when `group`), but only if its
    /// start time (field 22 of /proc/PID/stat) is still `start_time`.
    KillProcess {
        pid: i32,
        start_time: u64,
        group: bool,
    },
    /// `swapoff` the swap file or device at `path` if it is active.
    Swapoff { path: PathBuf },
    /// Move every task of cgroup `path` to its parent, then remove it.
    RemoveCgroup { path: PathBuf },
    /// Hot-remove zram device `id` (one sysdelta added) if it still exists;
    /// already gone is done, so a restore after a crash between the removal
    /// and its journal update does not fail forever.
    RemoveZram { id: u32 },
}

/// How long a restore waits for a loop device that another process still
/// holds open to be released after the detach.
const LOOP_RELEASE_WAIT: Duration = Duration::from_secs(10);

/// One human line saying what an undo action does.
pub fn describe(undo: &UndoAction) -> String {
    match undo {
        UndoAction::WriteFile { path, contents } => {
            format!("write {:?} to {}", contents.trim_end(), path.display())
        }
        UndoAction::WriteLines { path, lines } => {
            format!("reset {} to {} line(s)", path.display(), lines.len())
        }
        UndoAction::Unmount { target, .. } => format!("unmount {}", target.display()),
        UndoAction::DetachLoop {
            device,
            backing_file,
        } => format!(
            "detach {} (backed by {})",
            device.display(),
            backing_file.display()
        ),
        UndoAction::RemoveLoop { number } => format!("remove loop device loop{number}"),
        UndoAction::RemovePath { path, .. } => format!("remove {}", path.display()),
        UndoAction::KillProcess { pid, .. } => format!("kill process {pid}"),
        UndoAction::Swapoff { path } => format!("swapoff {}", path.display()),
        UndoAction::RemoveCgroup { path } => format!("remove cgroup {}", path.display()),
        UndoAction::RemoveZram { id } => format!("hot-remove /dev/zram{id}"),
    }
}

/// Run one undo action; the line says what was done (or found already done).
pub fn apply(undo: &UndoAction) -> Result<String> {
    match undo {
        UndoAction::WriteFile { path, contents } => {
            with_tracefs(path, || write_value(path, contents))?;
            Ok(describe(undo))
        }
        UndoAction::WriteLines { path, lines } => {
            with_tracefs(path, || write_lines(path, lines))?;
            Ok(describe(undo))
        }
        UndoAction::Unmount { target, source } => {
            if !is_mounted(target, source.as_deref())? {
                return Ok(format!(
                    "{} is not mounted, nothing to do",
                    target.display()
                ));
            }
            unmount(target)?;
            Ok(describe(undo))
        }
        UndoAction::DetachLoop {
            device,
            backing_file,
        } => {
            if !loop_bound_to(device, backing_file) {
                return Ok(format!(
                    "{} is not bound to {}, nothing to do",
                    device.display(),
                    backing_file.display()
                ));
            }
            detach_loop(device)?;
            // With another opener (a killed run's orphaned child still
            // writing to the volume) the kernel only marks the device for
            // autoclear: wait for it to go, so that "restored" is true.
            let deadline = Instant::now() + LOOP_RELEASE_WAIT;
            while loop_bound_to(device, backing_file) {
                if Instant::now() >= deadline {
                    anyhow::bail!(
                        "{} is still in use after {}s; it detaches when its last user closes it",
                        device.display(),
                        LOOP_RELEASE_WAIT.as_secs()
                    );
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(describe(undo))
        }
        UndoAction::RemoveLoop { number } => {
            let dev = PathBuf::from(format!("/dev/loop{number}"));
            if !Path::new(&format!("/sys/block/loop{number}")).exists() {
                return Ok(format!("loop{number} is gone, nothing to do"));
            }
            // An autoclear detach (after the unmount just undone) may
            // still be finishing: give it a moment before calling it in use.
            let deadline = Instant::now() + Duration::from_secs(1);
            while loop_backing_file(&dev).is_some() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            if loop_backing_file(&dev).is_some() {
                return Ok(format!("loop{number} is in use, left alone"));
            }
            remove_loop(*number)?;
            Ok(describe(undo))
        }
        UndoAction::RemovePath { path, recursive } => {
            let res = match fs::symlink_metadata(path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Ok(format!("{} is gone, nothing to do", path.display()))
                }
                Err(e) => Err(e),
                Ok(m) if m.is_dir() && *recursive => fs::remove_dir_all(path),
                Ok(m) if m.is_dir() => fs::remove_dir(path),
                Ok(_) => fs::remove_file(path),
            };
            res.with_context(|| format!("cannot remove {}", path.display()))?;
            Ok(describe(undo))
        }
        UndoAction::KillProcess {
            pid,
            start_time,
            group,
        } => {
            if process_start_time(*pid) != Some(*start_time) {
                return Ok(format!("process {pid} is gone, nothing to do"));
            }
            kill_and_wait(*pid, *start_time, *group)?;
            Ok(describe(undo))
        }
        UndoAction::Swapoff { path } => {
            let swaps = fs::read_to_string("/proc/swaps").unwrap_or_default();
            let canon = fs::canonicalize(path).unwrap_or_else(|_| path.clone());
            let active = swaps
                .lines()
                .skip(1)
                .any(|l| l.split_whitespace().next() == Some(&*canon.to_string_lossy()));
            if !active {
                return Ok(format!(
                    "{} is not swapped on, nothing to do",
                    path.display()
                ));
            }
            let c = cstring(path)?;
            // SAFETY: c is a valid NUL-terminated path.
            if unsafe { libc::swapoff(c.as_ptr()) } != 0 {
                return Err(std::io::Error::last_os_error())
                    .context(format!("swapoff {}", path.display()));
            }
            Ok(describe(undo))
        }
        UndoAction::RemoveZram { id } => {
            if !Path::new(&format!("/sys/block/zram{id}")).exists() {
                return Ok(format!("/dev/zram{id} is gone, nothing to do"));
            }
            write_value(
                Path::new("/sys/class/zram-control/hot_remove"),
                &id.to_string(),
            )
            .with_context(|| format!("hot-removing /dev/zram{id}"))?;
            Ok(describe(undo))
        }
        UndoAction::RemoveCgroup { path } => {
            if !path.exists() {
                return Ok(format!("{} is gone, nothing to do", path.display()));
            }
            remove_cgroup(path)?;
            Ok(describe(undo))
        }
    }
}

fn cstring(p: &Path) -> Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(|_| anyhow!("path has a NUL byte"))
}

/// Move tasks to the parent cgroup, then rmdir, retried while the cgroup
/// is busy (a child that moved in after its parent was moved out), for at
/// most `sys::cgroup::REMOVE_BOUND`.
fn remove_cgroup(path: &Path) -> Result<()> {
    crate::sys::cgroup::remove(path, crate::sys::cgroup::REMOVE_BOUND)
}
