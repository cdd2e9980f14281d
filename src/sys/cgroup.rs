//! Removing a cgroup that may still be busy: its tasks are moved to the
//! parent and the directory removed, again and again until it goes or a
//! bound passes. One pass is not enough: after a SIGKILL of sysdelta, a
//! child of a task it moved out (forked just before the move) can land in
//! the cgroup after the move, and `rmdir` then fails with EBUSY; the next
//! pass moves it out too.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};

use super::sysfs::write_value;

/// How long a busy cgroup is retried before the removal fails.
pub const REMOVE_BOUND: Duration = Duration::from_secs(5);

/// The pause between two passes.
const PASS_PAUSE: Duration = Duration::from_millis(10);

/// Move every task of cgroup `path` to its parent (`cgroup.procs` on v2,
/// `tasks` on v1), then remove it; while `rmdir` says EBUSY, do both
/// again, for at most `bound`. Fails with one line naming the cgroup and
/// the tasks still in it.
pub fn remove(path: &Path, bound: Duration) -> Result<()> {
    let parent = path
        .parent()
        .ok_or_else(|| anyhow!("cgroup {} has no parent", path.display()))?;
    let procs_name = if path.join("cgroup.procs").exists() {
        "cgroup.procs"
    } else {
        "tasks"
    };
    let pass = || {
        let procs = fs::read_to_string(path.join(procs_name)).unwrap_or_default();
        for pid in procs.split_whitespace() {
            // A task may exit meanwhile; the next pass sees what remains.
            let _ = write_value(&parent.join(procs_name), pid);
        }
        match fs::remove_dir(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            r => r,
        }
    };
    retry_busy(bound, PASS_PAUSE, pass).map_err(|e| {
        let left = fs::read_to_string(path.join(procs_name)).unwrap_or_default();
        let left: Vec<&str> = left.split_whitespace().collect();
        if e.raw_os_error() == Some(libc::EBUSY) {
            anyhow!(
                "cannot remove cgroup {}: still busy after {} s of moving its tasks out (tasks left: {})",
                path.display(),
                bound.as_secs_f64(),
                if left.is_empty() { "none listed".into() } else { left.join(" ") }
            )
        } else {
            anyhow!("cannot remove cgroup {}: {e}", path.display())
        }
    })
}

/// Run `pass` until it succeeds, fails with anything but EBUSY, or
/// `bound` has passed since the first try (then its last EBUSY is
/// returned); `pause` between tries. Always tries at least once.
pub fn retry_busy(
    bound: Duration,
    pause: Duration,
    mut pass: impl FnMut() -> std::io::Result<()>,
) -> std::io::Result<()> {
    let start = Instant::now();
    loop {
        match pass() {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && start.elapsed() < bound => {
                std::thread::sleep(pause)
            }
            r => return r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn busy() -> std::io::Error {
        std::io::Error::from_raw_os_error(libc::EBUSY)
    }

    #[test]
    fn a_cgroup_busy_for_a_few_passes_is_removed() {
        let mut tries = 0;
        let r = retry_busy(Duration::from_secs(60), Duration::ZERO, || {
            tries += 1;
            if tries < 4 {
                Err(busy())
            } else {
                Ok(())
            }
        });
        assert!(r.is_ok());
        assert_eq!(tries, 4, "retried until the pass succeeded, then stopped");
    }

    #[test]
    fn a_cgroup_busy_for_good_fails_once_the_bound_has_passed() {
        let mut tries = 0;
        let r = retry_busy(Duration::from_millis(30), Duration::from_millis(1), || {
            tries += 1;
            Err(busy())
        });
        assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EBUSY));
        assert!(tries >= 2, "retried before giving up");
    }

    #[test]
    fn other_errors_are_not_retried() {
        let mut tries = 0;
        let r = retry_busy(Duration::from_secs(60), Duration::ZERO, || {
            tries += 1;
            Err(std::io::Error::from_raw_os_error(libc::EACCES))
        });
        assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EACCES));
        assert_eq!(tries, 1);
    }

    #[test]
    fn a_busy_cgroup_that_never_empties_is_named_in_one_line() {
        // A plain directory with a file in it stands for the cgroup: rmdir
        // says ENOTEMPTY, not EBUSY, so this checks the message's shape
        // for a failure that is not retried.
        let dir = tempfile::tempdir().unwrap();
        let cg = dir.path().join("sysdelta-x");
        fs::create_dir(&cg).unwrap();
        fs::write(cg.join("cgroup.procs"), "").unwrap();
        let e = remove(&cg, Duration::from_millis(20)).unwrap_err();
        let msg = format!("{e:#}");
        assert!(msg.contains(&cg.display().to_string()), "{msg}");
        assert_eq!(msg.lines().count(), 1, "{msg}");
    }
}
