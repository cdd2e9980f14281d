//! Finding (or privately mounting) tracefs, and private ftrace instances.
//!
//! We never change the top-level tracer: every ftrace step runs in its own
//! instance (`instances/sysdelta-<pid>-<n>`), whose buffer size and
//! tracing_on are its own, and which is removed when its guard drops (also
//! on error and panic). If tracefs is not mounted we mount it on a private
//! temporary directory and unmount it when the [`Tracefs`] drops.

use std::ffi::CString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Why tracefs cannot be used.
#[derive(Debug, Clone, PartialEq)]
pub enum TracefsError {
    /// Not allowed (not root): a bad-input error when ftrace was asked for.
    NoPermission(String),
    /// The kernel does not offer it: the transport is skipped.
    Unavailable(String),
}

impl std::fmt::Display for TracefsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TracefsError::NoPermission(s) | TracefsError::Unavailable(s) => f.write_str(s),
        }
    }
}

/// A usable tracefs root.
#[derive(Debug)]
pub struct Tracefs {
    root: PathBuf,
    mounted_by_us: bool,
}

const CANDIDATES: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

impl Tracefs {
    /// Find a mounted tracefs, or mount one privately.
    pub fn open() -> Result<Tracefs, TracefsError> {
        for c in CANDIDATES {
            let marker = Path::new(c).join("trace_marker");
            match fs::metadata(&marker) {
                Ok(_) => {
                    return Tracefs::checked(PathBuf::from(c), false);
                }
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                    return Err(TracefsError::NoPermission(format!(
                        "no permission for tracefs at {c} (run as root)"
                    )));
                }
                Err(_) => {}
            }
        }
        let fss = fs::read_to_string("/proc/filesystems").unwrap_or_default();
        if !fss
            .lines()
            .any(|l| l.split_whitespace().last() == Some("tracefs"))
        {
            return Err(TracefsError::Unavailable(
                "kernel has no tracefs (CONFIG_TRACING off)".into(),
            ));
        }
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("sysdelta-tracefs-{}-{n}", std::process::id()));
        fs::create_dir(&dir).map_err(|e| {
            TracefsError::Unavailable(format!("cannot create {}: {e}", dir.display()))
        })?;
        let r = nix::mount::mount(
            Some("nodev"),
            &dir,
            Some("tracefs"),
            nix::mount::MsFlags::empty(),
            None::<&str>,
        );
        if let Err(e) = r {
            let _ = fs::remove_dir(&dir);
            let msg = format!("cannot mount tracefs at {}: {e}", dir.display());
            return Err(
                if e == nix::errno::Errno::EPERM || e == nix::errno::Errno::EACCES {
                    TracefsError::NoPermission(format!(
                        "no permission for tracefs: {msg} (run as root)"
                    ))
                } else {
                    TracefsError::Unavailable(msg)
                },
            );
        }
        Tracefs::checked(dir, true)
    }

    fn checked(root: PathBuf, mounted_by_us: bool) -> Result<Tracefs, TracefsError> {
        let t = Tracefs {
            root,
            mounted_by_us,
        };
        if !t.root.join("instances").is_dir() {
            return Err(TracefsError::Unavailable(format!(
                "{} has no instances/ directory (needed to leave the global tracer alone)",
                t.root.display()
            )));
        }
        let probe = t.root.join("trace_marker");
        if let Err(e) = fs::OpenOptions::new().write(true).open(&probe) {
            return Err(if e.kind() == io::ErrorKind::PermissionDenied {
                TracefsError::NoPermission(format!(
                    "no permission for tracefs: cannot open {} for writing (run as root)",
                    probe.display()
                ))
            } else {
                TracefsError::Unavailable(format!("{}: {e}", probe.display()))
            });
        }
        t.remove_stale_instances();
        Ok(t)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Remove instances left by a sysdelta process that no longer exists
    /// (killed with SIGKILL mid-run).
    pub fn remove_stale_instances(&self) {
        let Ok(rd) = fs::read_dir(self.root.join("instances")) else {
            return;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(rest) = name.strip_prefix("sysdelta-") else {
                continue;
            };
            let pid = rest.split('-').next().unwrap_or("");
            if !pid.is_empty()
                && pid.chars().all(|c| c.is_ascii_digit())
                && !Path::new("/proc").join(pid).exists()
            {
                let _ = fs::remove_dir(e.path());
            }
        }
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        if self.mounted_by_us {
            if let Ok(c) = CString::new(self.root.as_os_str().as_encoded_bytes()) {
                // SAFETY: umount2 on a path we mounted; lazy so open fds do not block it.
                unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
            }
            let _ = fs::remove_dir(&self.root);
        }
    }
}

/// A private ftrace instance, removed on drop. Drop every fd opened inside
/// it before the guard (declare the guard first), or rmdir fails with EBUSY.
pub struct Instance {
    dir: PathBuf,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

impl Instance {
    pub fn create(fs: &Tracefs) -> io::Result<Instance> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = fs
            .root()
            .join("instances")
            .join(format!("sysdelta-{}-{n}", std::process::id()));
        fs::create_dir(&dir)?;
        Ok(Instance { dir })
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    pub fn write(&self, file: &str, value: &str) -> io::Result<()> {
        fs::write(self.path(file), value)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.path(file).display())))
    }

    pub fn read(&self, file: &str) -> io::Result<String> {
        fs::read_to_string(self.path(file))
    }

    /// CPU numbers that have a per_cpu directory.
    pub fn cpus(&self) -> Vec<usize> {
        let mut v: Vec<usize> = fs::read_dir(self.path("per_cpu"))
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| {
                        e.file_name()
                            .to_string_lossy()
                            .strip_prefix("cpu")
                            .and_then(|n| n.parse().ok())
                    })
                    .collect()
            })
            .unwrap_or_default();
        v.sort_unstable();
        v
    }

    /// Sum of one counter of per_cpu/cpuN/stats over all CPUs.
    pub fn stat_sum(&self, key: &str) -> u64 {
        self.cpus()
            .iter()
            .filter_map(|c| self.read(&format!("per_cpu/cpu{c}/stats")).ok())
            .map(|s| parse_stat(&s, key))
            .sum()
    }
}

/// One counter from a per-CPU stats file ("dropped events: 907").
pub fn parse_stat(text: &str, key: &str) -> u64 {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim() == key)
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0)
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.write("tracing_on", "0");
        // A just-closed reader may hold the instance for a moment.
        for _ in 0..100 {
            match fs::remove_dir(&self.dir) {
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => return,
            }
        }
        eprintln!(
            "sysdelta: could not remove ftrace instance {} (busy); remove it with rmdir",
            self.dir.display()
        );
    }
}
