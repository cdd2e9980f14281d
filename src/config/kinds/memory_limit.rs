//! `memory_limit`: run the workload's process tree in a memory cgroup of
//! its own with a hard limit, as the 2001 SAP study ran a system configured
//! for 4 GB with 1 GB of RAM at boot.
//!
//! Each `enter` creates `sysdelta-<pid>-<n>` (journaled first as a
//! `RemoveCgroup`), writes the limits into it and hands its `cgroup.procs`
//! to the launcher, which moves each workload process in before exec.
//! cgroup v2 is used when its hierarchy has the memory controller, else the
//! v1 memory hierarchy. `leave` kills whatever is still in the group (it
//! belongs to the run) and removes it.

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::{check, value};
use crate::config::journal::{self, EntryId, JournalHandle, UndoAction};
use crate::config::kind::{ConfigKind, LaunchMods};
use crate::metric::{Direction, MetricSamples, MetricSpec};

pub const PEAK_METRIC: &str = "memory_limit.peak_mib";
pub const OOM_METRIC: &str = "memory_limit.oom_kills";

const KEYS: &[&str] = &["limit", "swap"];

// One grammar for every size in sysdelta (`crate::sys::size`); re-exported
// because the swap kind and kernel configs name it from here.
pub use crate::sys::size::parse_size;

/// A size for messages: "1.0 GiB", "64 MiB".
pub fn show_size(bytes: u64) -> String {
    let mib = bytes as f64 / (1u64 << 20) as f64;
    if mib >= 1024.0 {
        format!("{:.1} GiB", mib / 1024.0)
    } else {
        format!("{mib:.0} MiB")
    }
}

/// MemTotal from /proc/meminfo, in bytes.
pub fn mem_total() -> Option<u64> {
    let text = fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// Which cgroup interface a group uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// Where this process's memory cgroups are made.
#[derive(Clone, Debug, PartialEq)]
pub struct Hierarchy {
    pub version: Version,
    /// The mount point of the hierarchy.
    pub mount: PathBuf,
    /// The cgroup new groups are made in.
    pub parent: PathBuf,
}

/// Find the memory hierarchy from /proc/self/mountinfo and
/// /proc/self/cgroup texts. v2 is used when its root lists `memory` in
/// `cgroup.controllers`; otherwise the v1 hierarchy mounted with `memory`.
///
/// The parent is chosen so the workload stays under the limits the caller
/// is already under: on v1 it is the caller's own memory cgroup (v1 allows
/// children next to processes); on v2, where a cgroup with processes cannot
/// hand the memory controller to children, it is the nearest ancestor of
/// the caller's cgroup that already does (memory in its
/// `cgroup.subtree_control`), or the root.
pub fn locate(mountinfo: &str, self_cgroup: &str) -> Result<Hierarchy, String> {
    let mut v1 = None;
    let mut v2 = None;
    // Root and mount point are taken as written (escaped), as they always
    // were here.
    for m in crate::sys::mountinfo::parse(mountinfo) {
        let (root, mp, supers) = (m.root, m.mount_point, m.super_options);
        match m.fstype {
            "cgroup2" if v2.is_none() => v2 = Some((root.to_string(), PathBuf::from(mp))),
            "cgroup" if v1.is_none() && supers.split(',').any(|o| o == "memory") => {
                v1 = Some((root.to_string(), PathBuf::from(mp)))
            }
            _ => {}
        }
    }
    if let Some((root, mount)) = &v2 {
        let ctl = fs::read_to_string(mount.join("cgroup.controllers")).unwrap_or_default();
        if ctl.split_whitespace().any(|c| c == "memory") {
            let own = self_cgroup
                .lines()
                .find_map(|l| l.strip_prefix("0::"))
                .unwrap_or("/");
            let mut dir = mount.join(relative(own, root));
            while dir != *mount {
                let sub =
                    fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
                if sub.split_whitespace().any(|c| c == "memory") {
                    break;
                }
                if !dir.pop() || !dir.starts_with(mount) {
                    dir = mount.clone();
                    break;
                }
            }
            return Ok(Hierarchy {
                version: Version::V2,
                mount: mount.clone(),
                parent: dir,
            });
        }
    }
    if let Some((root, mount)) = v1 {
        let own = self_cgroup
            .lines()
            .find_map(|l| {
                let mut f = l.splitn(3, ':');
                let (_, ctl, path) = (f.next()?, f.next()?, f.next()?);
                ctl.split(',').any(|c| c == "memory").then_some(path)
            })
            .unwrap_or("/");
        return Ok(Hierarchy {
            version: Version::V1,
            parent: mount.join(relative(own, &root)),
            mount,
        });
    }
    Err(match v2 {
        Some(_) => "no memory cgroup controller: cgroup v2 is mounted without `memory` and no v1 memory hierarchy is mounted".into(),
        None => "no memory cgroup controller mounted (neither cgroup v2 nor a v1 memory hierarchy)".into(),
    })
}

/// A cgroup path from /proc/self/cgroup, relative to the mount's root.
fn relative(own: &str, mount_root: &str) -> PathBuf {
    let own = Path::new(own);
    let rel = own.strip_prefix(mount_root).unwrap_or(own);
    rel.strip_prefix("/").unwrap_or(rel).to_path_buf()
}

/// The hierarchy of the running process.
pub fn locate_here() -> Result<Hierarchy, String> {
    let mi = fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    let cg = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    locate(&mi, &cg)
}

/// The memory controller's "enabled" column in /proc/cgroups (None when
/// the file or the line is missing).
fn memory_controller_enabled() -> Option<bool> {
    let text = fs::read_to_string("/proc/cgroups").ok()?;
    text.lines()
        .find(|l| l.split_whitespace().next() == Some("memory"))
        .and_then(|l| l.split_whitespace().nth(3))
        .map(|v| v == "1")
}

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

/// Distinguishes the groups one sysdelta process makes.
static NEXT: AtomicU64 = AtomicU64::new(0);

pub struct MemoryLimit {
    limit: u64,
    swap: Option<u64>,
    journal: JournalHandle,
    entries: Vec<EntryId>,
    group: Option<Group>,
    peak_fd: Option<File>,
    oom_before: u64,
    told: bool,
}

impl MemoryLimit {
    /// `memory_limit = "1G"` or `[config.memory_limit] limit = "1G", swap = "4G"`.
    pub fn from_value(v: &toml::Value, journal: JournalHandle) -> Result<MemoryLimit, String> {
        let size = |key: &str, s: &str| {
            parse_size(s).ok_or_else(|| {
                format!("memory_limit.{key}: `{s}` is not a size (e.g. \"1G\", \"512M\")")
            })
        };
        let (limit, swap) = match v {
            toml::Value::String(s) => (size("limit", s)?, None),
            toml::Value::Table(_) => {
                let t = value::table("memory_limit", v, KEYS)?;
                let limit = value::string("memory_limit", t, "limit")?
                    .ok_or("memory_limit needs `limit`, e.g. limit = \"1G\"")?;
                let swap = value::string("memory_limit", t, "swap")?;
                (
                    size("limit", &limit)?,
                    swap.map(|s| size("swap", &s)).transpose()?,
                )
            }
            other => {
                return Err(format!(
                    "memory_limit must be a size string such as \"1G\" or a table [config.memory_limit], not {}",
                    other.type_str()
                ))
            }
        };
        if limit < 1 << 20 {
            return Err(format!(
                "memory_limit.limit must be at least 1M, not {limit} bytes"
            ));
        }
        Ok(MemoryLimit {
            limit,
            swap,
            journal,
            entries: Vec::new(),
            group: None,
            peak_fd: None,
            oom_before: 0,
            told: false,
        })
    }

    /// The group while entered.
    pub fn group(&self) -> Option<&Group> {
        self.group.as_ref()
    }

    /// One line saying what is in force, e.g. for the run log.
    pub fn describe(&self) -> String {
        let Some(g) = &self.group else {
            return format!("memory_limit {} (not entered)", show_size(self.limit));
        };
        let swap = match (self.swap, g.version) {
            (None, _) => "swap as the system allows".to_string(),
            (Some(s), Version::V2) => format!("memory.swap.max {}", show_size(s)),
            (Some(s), Version::V1) => format!(
                "swap {} (memory.memsw.limit_in_bytes {})",
                show_size(s),
                show_size(self.limit + s)
            ),
        };
        format!(
            "memory_limit: cgroup {} group {}, limit {}, {swap}",
            match g.version {
                Version::V1 => "v1",
                Version::V2 => "v2",
            },
            g.dir.display(),
            show_size(self.limit)
        )
    }
}

impl ConfigKind for MemoryLimit {
    fn kind(&self) -> &'static str {
        "memory_limit"
    }

    fn preflight(&self) -> Vec<String> {
        let mut out: Vec<String> = check::root("memory_limit", "to create cgroups")
            .into_iter()
            .collect();
        if memory_controller_enabled() == Some(false) {
            out.push(
                "memory_limit: the memory cgroup controller is disabled (cgroup_disable=memory on the kernel command line?)"
                    .into(),
            );
            return out;
        }
        match locate_here() {
            Err(e) => out.push(format!("memory_limit: {e}")),
            Ok(h) => {
                if !h.parent.is_dir() {
                    out.push(format!(
                        "memory_limit: cgroup {} does not exist",
                        h.parent.display()
                    ));
                } else if self.swap.is_some()
                    && h.version == Version::V1
                    && !h.parent.join("memory.memsw.limit_in_bytes").exists()
                {
                    out.push("memory_limit: `swap` is set but this kernel does not account swap per cgroup (no memory.memsw.limit_in_bytes; boot with swapaccount=1)".into());
                }
            }
        }
        if let Some(total) = mem_total() {
            if self.limit > total {
                out.push(format!(
                    "memory_limit: limit {} is above this machine's memory ({} MemTotal)",
                    show_size(self.limit),
                    show_size(total)
                ));
            }
        }
        out
    }

    fn enter(&mut self) -> Result<LaunchMods> {
        let h = locate_here().map_err(|e| anyhow!("memory_limit: {e}"))?;
        let name = format!(
            "sysdelta-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let group = Group {
            version: h.version,
            dir: h.parent.join(name),
        };
        let mut undos = Vec::new();
        // Only the v2 root may need the controller handed down; undoing
        // that takes it back (the kernel refuses while other children use it).
        let enable = h.version == Version::V2
            && h.parent == h.mount
            && !fs::read_to_string(h.mount.join("cgroup.subtree_control"))
                .unwrap_or_default()
                .split_whitespace()
                .any(|c| c == "memory");
        if enable {
            undos.push(UndoAction::WriteFile {
                path: h.mount.join("cgroup.subtree_control"),
                contents: "-memory".into(),
            });
        }
        undos.push(UndoAction::RemoveCgroup {
            path: group.dir.clone(),
        });
        self.entries = self
            .journal
            .lock()
            .unwrap()
            .record_all("memory_limit", undos)?;
        if enable {
            journal::write_value(&h.mount.join("cgroup.subtree_control"), "+memory")
                .context("memory_limit: cannot enable the memory controller")?;
        }
        fs::create_dir(&group.dir).with_context(|| {
            format!("memory_limit: cannot create cgroup {}", group.dir.display())
        })?;
        self.group = Some(group.clone());
        group
            .set_limits(self.limit, self.swap)
            .context("memory_limit")?;
        if !self.told {
            self.told = true;
            eprintln!("sysdelta: {}", self.describe());
        }
        Ok(LaunchMods {
            cgroup_procs: Some(group.procs_file()),
            ..LaunchMods::default()
        })
    }

    fn before_run(&mut self) -> Result<()> {
        let Some(g) = &self.group else { return Ok(()) };
        self.oom_before = g.oom_kills().context("memory_limit")?;
        self.peak_fd = g
            .start_peak()
            .context("memory_limit: cannot reset the peak")?;
        Ok(())
    }

    fn after_run(&mut self) -> Result<Vec<MetricSamples>> {
        let Some(g) = &self.group else {
            return Ok(Vec::new());
        };
        let peak = g.peak(self.peak_fd.as_mut()).context("memory_limit")?;
        self.peak_fd = None;
        let ooms = g.oom_kills().context("memory_limit")?;
        Ok(vec![
            MetricSamples {
                metric: PEAK_METRIC.into(),
                values: vec![peak as f64 / (1u64 << 20) as f64],
            },
            MetricSamples {
                metric: OOM_METRIC.into(),
                values: vec![ooms.saturating_sub(self.oom_before) as f64],
            },
        ])
    }

    fn metrics(&self) -> Vec<MetricSpec> {
        vec![
            MetricSpec::new(PEAK_METRIC, "MiB", Direction::Lower),
            MetricSpec::new(OOM_METRIC, "kills", Direction::Lower),
        ]
    }

    fn leave(&mut self) -> Result<()> {
        self.peak_fd = None;
        let killed = match self.group.take() {
            Some(g) if g.dir.exists() => g.kill_all().context("memory_limit"),
            _ => Ok(()),
        };
        let ids = std::mem::take(&mut self.entries);
        // The journal's undo removes the group (moving anything that
        // escaped the kill to the parent) even if the kill timed out.
        self.journal.lock().unwrap().undo_entries(&ids)?;
        killed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1G"), Some(1 << 30));
        assert_eq!(parse_size("512m"), Some(512 << 20));
        assert_eq!(parse_size("1.5GiB"), Some(3 << 29));
        assert_eq!(parse_size("4096 K"), Some(4 << 20));
        assert_eq!(parse_size("65536"), Some(65536));
        for bad in ["", "G", "1X", "1..2G", "-1G", "1 G B"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
        assert_eq!(show_size(64 << 20), "64 MiB");
        assert_eq!(show_size(3 << 29), "1.5 GiB");
    }

    fn journal() -> (tempfile::TempDir, JournalHandle) {
        let d = tempfile::tempdir().unwrap();
        let j = crate::config::journal::Journal::open_shared(&d.path().join("j")).unwrap();
        (d, j)
    }

    #[test]
    fn plan_values() {
        let (_d, j) = journal();
        let m = MemoryLimit::from_value(&toml::Value::String("1G".into()), j.clone()).unwrap();
        assert_eq!((m.limit, m.swap), (1 << 30, None));
        let v: toml::Value = toml::from_str("limit = \"64M\"\nswap = \"4G\"").unwrap();
        let m = MemoryLimit::from_value(&v, j.clone()).unwrap();
        assert_eq!((m.limit, m.swap), (64 << 20, Some(4 << 30)));
        let err = |src: &str| {
            let v: toml::Value = toml::from_str(src).unwrap();
            MemoryLimit::from_value(&v, j.clone()).err().unwrap()
        };
        assert!(err("swap = \"1G\"").contains("needs `limit`"));
        assert!(err("limit = \"lots\"").contains("`lots` is not a size"));
        assert!(err("limit = \"1G\"\nswapp = \"1G\"").contains("unknown key `swapp`"));
        let e = MemoryLimit::from_value(&toml::Value::Integer(1024), j)
            .err()
            .unwrap();
        assert!(e.contains("size string"), "{e}");
    }

    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / MNT/memory rw,relatime - cgroup cgroup rw,memory
36 31 0:33 / MNT/devices rw,relatime - cgroup cgroup rw,devices
41 31 0:38 / MNT/unified rw,relatime - cgroup2 cgroup2 rw
";

    fn fake(dir: &Path) -> String {
        MOUNTINFO.replace("MNT", &dir.display().to_string())
    }

    #[test]
    fn hybrid_without_v2_memory_uses_own_v1_group() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("unified")).unwrap();
        fs::write(d.path().join("unified/cgroup.controllers"), "hugetlb\n").unwrap();
        let cg = "4:memory:/jobs/a\n0::/\n";
        let h = locate(&fake(d.path()), cg).unwrap();
        assert_eq!(h.version, Version::V1);
        assert_eq!(h.parent, d.path().join("memory/jobs/a"));
    }

    #[test]
    fn v2_uses_nearest_ancestor_that_delegates_memory() {
        let d = tempfile::tempdir().unwrap();
        let u = d.path().join("unified");
        fs::create_dir_all(u.join("user.slice/session.scope")).unwrap();
        fs::write(u.join("cgroup.controllers"), "cpu memory io\n").unwrap();
        fs::write(u.join("cgroup.subtree_control"), "memory\n").unwrap();
        fs::write(u.join("user.slice/cgroup.subtree_control"), "cpu memory\n").unwrap();
        fs::write(
            u.join("user.slice/session.scope/cgroup.subtree_control"),
            "",
        )
        .unwrap();
        let cg = "4:memory:/x\n0::/user.slice/session.scope\n";
        let h = locate(&fake(d.path()), cg).unwrap();
        assert_eq!(h.version, Version::V2);
        assert_eq!(h.parent, u.join("user.slice"));
        // Nothing delegates: the root.
        fs::write(u.join("user.slice/cgroup.subtree_control"), "cpu\n").unwrap();
        let h = locate(&fake(d.path()), cg).unwrap();
        assert_eq!(h.parent, u);
    }

    #[test]
    fn no_memory_controller_is_one_line() {
        let mi = "41 31 0:38 / /nonexistent/unified rw - cgroup2 cgroup2 rw\n";
        let e = locate(mi, "0::/\n").unwrap_err();
        assert!(
            e.contains("no memory cgroup controller") && !e.contains('\n'),
            "{e}"
        );
    }

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
