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
//!
//! Finding the hierarchy is in `hierarchy.rs`, one group's interface
//! files in `group.rs`; this file is the config kind itself.

mod group;
mod hierarchy;

use std::fs::{self, File};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{anyhow, Context, Result};

use super::{check, value};
use crate::config::journal::{self, EntryId, JournalHandle, UndoAction};
use crate::config::kind::{ConfigKind, LaunchMods};
use crate::error::Error;
use crate::metric::{Direction, MetricSamples, MetricSpec};
pub use group::Group;
use hierarchy::memory_controller_enabled;
pub use hierarchy::{locate, locate_here, Hierarchy, Version};

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

/// MemTotal from /proc/meminfo, in bytes (the one meminfo reader is the
/// fingerprint's).
pub fn mem_total() -> Option<u64> {
    crate::monitor::fingerprint::meminfo_kib("MemTotal").map(|kb| kb * 1024)
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
    pub fn from_value(v: &toml::Value, journal: JournalHandle) -> Result<MemoryLimit, Error> {
        let size = |key: &str, s: &str| {
            parse_size(s).ok_or_else(|| {
                Error::bad(format!(
                    "memory_limit.{key}: `{s}` is not a size (e.g. \"1G\", \"512M\")"
                ))
            })
        };
        let (limit, swap) = match v {
            toml::Value::String(s) => (size("limit", s)?, None),
            toml::Value::Table(_) => {
                let t = value::table("memory_limit", v, KEYS)?;
                let limit = value::string("memory_limit", t, "limit")?
                    .ok_or_else(|| Error::bad("memory_limit needs `limit`, e.g. limit = \"1G\""))?;
                let swap = value::string("memory_limit", t, "swap")?;
                (
                    size("limit", &limit)?,
                    swap.map(|s| size("swap", &s)).transpose()?,
                )
            }
            other => {
                return Err(Error::bad(format!(
                    "memory_limit must be a size string such as \"1G\" or a table [config.memory_limit], not {}",
                    other.type_str()
                )))
            }
        };
        if limit < 1 << 20 {
            return Err(Error::bad(format!(
                "memory_limit.limit must be at least 1M, not {limit} bytes"
            )));
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
        assert!(err("swap = \"1G\"").to_string().contains("needs `limit`"));
        assert!(err("limit = \"lots\"")
            .to_string()
            .contains("`lots` is not a size"));
        assert!(err("limit = \"1G\"\nswapp = \"1G\"")
            .to_string()
            .contains("unknown key `swapp`"));
        let e = MemoryLimit::from_value(&toml::Value::Integer(1024), j)
            .err()
            .unwrap();
        assert!(e.to_string().contains("size string"), "{e}");
    }
}
