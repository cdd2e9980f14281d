//! One memory cgroup and its interface files, v1 and v2 alike: limits,
//! OOM kill count, peak use, killing what is left in it. Separate from the
//! kind (mod.rs), which decides when; the integration tests drive a
//! `Group` directly.

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::hierarchy::Version;
use crate::config::journal;

/// One memory cgroup and its interface files.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub version: Version,
    pub dir: PathBuf,
}

impl Group {
    /// The file the launcher writes workload pids to (v1 has it too).
    pub fn procs_file(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    fn file(&self, v1: &str, v2: &str) -> PathBuf {
        self.dir.join(match self.version {
            Version::V1 => v1,
            Version::V2 => v2,
        })
    }

    /// The limit, and swap use beyond it (None: as the kernel allows).
    /// v2: `memory.max` = limit, `memory.swap.max` = swap. v1:
    /// `memory.limit_in_bytes` = limit, `memory.memsw.limit_in_bytes` =
    /// limit + swap (v1 limits memory and swap together); the memory limit
    /// goes first since memsw may never be below it.
    pub fn set_limits(&self, limit: u64, swap: Option<u64>) -> Result<()> {
        let mem = self.file("memory.limit_in_bytes", "memory.max");
        journal::write_value(&mem, &limit.to_string())?;
        if let Some(s) = swap {
            let (f, v) = match self.version {
                Version::V1 => ("memory.memsw.limit_in_bytes", limit.saturating_add(s)),
                Version::V2 => ("memory.swap.max", s),
            };
            let path = self.dir.join(f);
            if !path.exists() {
                bail!(
                    "{} does not exist: this kernel does not account swap per cgroup (swapaccount=0?), so `swap` cannot be limited",
                    path.display()
                );
            }
            journal::write_value(&path, &v.to_string())?;
        }
        Ok(())
    }

    /// OOM kills counted so far (v2 `memory.events` oom_kill, which counts
    /// descendants too; v1 `memory.oom_control` oom_kill).
    pub fn oom_kills(&self) -> Result<u64> {
        let path = self.file("memory.oom_control", "memory.events");
        let text =
            fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        text.lines()
            .find_map(|l| l.strip_prefix("oom_kill "))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| anyhow!("{} has no oom_kill count", path.display()))
    }

    /// Start a peak measurement. v1: write 0 to `memory.max_usage_in_bytes`
    /// (resets it for everyone). v2: write to an open `memory.peak`, which
    /// resets the peak seen through that file descriptor (Linux 6.12+);
    /// on older kernels the file is read-only and the peak is the one since
    /// the group was made (`enter`).
    pub fn start_peak(&self) -> Result<Option<File>> {
        match self.version {
            Version::V1 => {
                journal::write_value(&self.dir.join("memory.max_usage_in_bytes"), "0")?;
                Ok(None)
            }
            Version::V2 => {
                let p = self.dir.join("memory.peak");
                let Ok(mut f) = fs::OpenOptions::new().read(true).write(true).open(&p) else {
                    return Ok(None);
                };
                Ok(f.write_all(b"reset\n").is_ok().then_some(f))
            }
        }
    }

    /// The peak since `start_peak`, in bytes (through `fd` when it gave one).
    pub fn peak(&self, fd: Option<&mut File>) -> Result<u64> {
        let path = self.file("memory.max_usage_in_bytes", "memory.peak");
        let mut text = String::new();
        match fd {
            Some(f) => {
                f.seek(SeekFrom::Start(0))?;
                f.read_to_string(&mut text)?;
            }
            None => {
                text = fs::read_to_string(&path)
                    .with_context(|| format!("cannot read {}", path.display()))?
            }
        }
        text.trim()
            .parse()
            .map_err(|_| anyhow!("{}: not a number: {:?}", path.display(), text.trim()))
    }

    fn pids(&self) -> Vec<i32> {
        fs::read_to_string(self.procs_file())
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }

    /// SIGKILL `pid` if it is still in the group. A pidfd pins the pid,
    /// so the membership check and the signal are about the same process
    /// even if the one read from `cgroup.procs` has exited and its pid
    /// been reused meanwhile. Without pidfds (before 5.3) a plain kill.
    fn kill_member(&self, pid: i32) {
        // SAFETY: pidfd_open takes a pid and flags; the fd is closed below.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
        if fd < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
                // SAFETY: plain kill(2) on a pid just read from the group.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            return;
        }
        if self.pids().contains(&pid) {
            // SAFETY: fd is a pidfd we own; no siginfo; flags 0.
            unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd,
                    libc::SIGKILL,
                    std::ptr::null::<libc::siginfo_t>(),
                    0,
                )
            };
        }
        // SAFETY: closing the fd we opened.
        unsafe { libc::close(fd) };
    }

    /// SIGKILL every process in the group and wait (up to 5 s) until it is
    /// empty. v2 has `cgroup.kill` (5.14+), which also catches processes
    /// forking meanwhile; elsewhere the list is re-read and killed until
    /// empty.
    pub fn kill_all(&self) -> Result<()> {
        let kill_file = self.dir.join("cgroup.kill");
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let pids = self.pids();
            if pids.is_empty() {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "processes {pids:?} in {} did not die within 5 s",
                    self.dir.display()
                );
            }
            if kill_file.exists() {
                let _ = journal::write_value(&kill_file, "1");
            } else {
                for pid in pids {
                    self.kill_member(pid);
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_files_per_version() {
        let d = tempfile::tempdir().unwrap();
        let g2 = Group {
            version: Version::V2,
            dir: d.path().to_path_buf(),
        };
        for f in ["memory.max", "memory.swap.max"] {
            fs::write(d.path().join(f), "max\n").unwrap();
        }
        fs::write(
            d.path().join("memory.events"),
            "low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n",
        )
        .unwrap();
        fs::write(d.path().join("memory.peak"), "67108864\n").unwrap();
        g2.set_limits(64 << 20, Some(1 << 30)).unwrap();
        assert_eq!(
            fs::read_to_string(d.path().join("memory.max")).unwrap(),
            "67108864"
        );
        assert_eq!(
            fs::read_to_string(d.path().join("memory.swap.max")).unwrap(),
            "1073741824"
        );
        assert_eq!(g2.oom_kills().unwrap(), 2);
        assert_eq!(g2.peak(None).unwrap(), 64 << 20);

        let d1 = tempfile::tempdir().unwrap();
        let g1 = Group {
            version: Version::V1,
            dir: d1.path().to_path_buf(),
        };
        fs::write(d1.path().join("memory.limit_in_bytes"), "").unwrap();
        let e = g1
            .set_limits(64 << 20, Some(1 << 30))
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not account swap"), "{e}");
        fs::write(d1.path().join("memory.memsw.limit_in_bytes"), "").unwrap();
        g1.set_limits(64 << 20, Some(1 << 30)).unwrap();
        assert_eq!(
            fs::read_to_string(d1.path().join("memory.memsw.limit_in_bytes")).unwrap(),
            ((64u64 << 20) + (1 << 30)).to_string()
        );
        fs::write(
            d1.path().join("memory.oom_control"),
            "oom_kill_disable 0\nunder_oom 0\noom_kill 5\n",
        )
        .unwrap();
        assert_eq!(g1.oom_kills().unwrap(), 5);
    }
}
