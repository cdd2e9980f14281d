//! Mounts: is a path mounted (read through the one mountinfo parser) and
//! unmounting a path that may still be busy. Separate from the journal, whose
//! undos and the fsops workload's teardown both need them.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// Whether `target` is a mount point (with `source` as its source, if given).
pub fn is_mounted(target: &Path, source: Option<&str>) -> Result<bool> {
    let info = fs::read_to_string("/proc/self/mountinfo").context("cannot read mountinfo")?;
    let want = fs::canonicalize(target).unwrap_or_else(|_| target.to_path_buf());
    Ok(crate::sys::mountinfo::has_mount(&info, &want, source))
}

/// Unmount, retrying briefly while busy (a just-exited writer), then
/// detaching lazily so a crashed run's mount never stays behind.
pub fn unmount(target: &Path) -> Result<()> {
    use nix::mount::{umount2, MntFlags};
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        match umount2(target, MntFlags::empty()) {
            Ok(()) => return Ok(()),
            Err(nix::errno::Errno::EBUSY) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(nix::errno::Errno::EBUSY) => {
                umount2(target, MntFlags::MNT_DETACH)
                    .with_context(|| format!("cannot unmount {}", target.display()))?;
                return Ok(());
            }
            Err(e) => return Err(e).context(format!("cannot unmount {}", target.display())),
        }
    }
}
