//! Shared by the memkinds_* tests: skip reasons, building kinds, launching
//! a process into a cgroup, and a guard that puts the machine back (kills
//! what it started, restores the journal) even when a test panics.

#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Mutex;

use sysdelta::config::journal::{Journal, JournalHandle};
use sysdelta::config::kind::ConfigKind;
use sysdelta::config::kinds::{self, memory_limit, swap};

/// The tests of one binary change global state (swap list, zram devices):
/// one at a time.
pub static SERIAL: Mutex<()> = Mutex::new(());

/// One test at a time, and none beside a real experiment (the machine
/// lock, see tests/common/machine.rs); None after a `SKIP:` line.
pub fn serial() -> Option<crate::common::machine::Serial> {
    crate::common::machine::serial(&SERIAL)
}

/// Why these tests cannot run here, if they cannot.
pub fn skip_reason(need_zram: bool) -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    if let Err(e) = memory_limit::locate_here() {
        return Some(e.to_string());
    }
    if !Path::new("/proc/swaps").exists() {
        return Some("kernel without swap".into());
    }
    if kinds::check::which("mkswap").is_none() {
        return Some("mkswap not installed".into());
    }
    if need_zram && !Path::new("/sys/class/zram-control").exists() {
        return Some("zram not loaded (these tests do not load modules)".into());
    }
    None
}

pub fn build(kind: &str, src: &str, j: &JournalHandle) -> Box<dyn ConfigKind> {
    let v: toml::Value = if src.starts_with('"') {
        toml::Value::String(src.trim_matches('"').to_string())
    } else {
        toml::from_str(src).unwrap()
    };
    let k = kinds::build(kind, &v, j.clone()).unwrap_or_else(|e| panic!("{kind}: {e}"));
    let pre = k.preflight();
    assert!(pre.is_empty(), "{kind} preflight: {pre:?}");
    k
}

/// `cmd` started inside the cgroup of `procs`, joined before exec as the
/// runner does.
pub fn spawn_in(procs: &Path, mut cmd: Command) -> Child {
    let path = std::ffi::CString::new(procs.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: open/write/close are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let ok = libc::write(fd, b"0\n".as_ptr().cast(), 2) == 2;
            libc::close(fd);
            if ok {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    cmd.spawn().unwrap()
}

/// The groups a process made under `parent` (`sysdelta-<pid>-*`).
pub fn groups_of(parent: &Path, pid: u32) -> Vec<PathBuf> {
    let prefix = format!("sysdelta-{pid}-");
    std::fs::read_dir(parent)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// What these kinds can leave behind, to compare before and after.
#[derive(Debug, PartialEq)]
pub struct MemState {
    pub swaps: Vec<String>,
    pub zram: Vec<u32>,
}

pub fn mem_state() -> MemState {
    MemState {
        swaps: swap::active_swaps().into_iter().map(|s| s.name).collect(),
        zram: swap::zram_devices(),
    }
}

/// Puts things back on drop: kills the children, then restores whatever
/// the journal still holds.
pub struct Guard {
    pub dir: tempfile::TempDir,
    pub journal: JournalHandle,
    pub children: Vec<Child>,
    /// Memory cgroups whose processes are killed on drop.
    pub groups: Vec<PathBuf>,
}

impl Guard {
    pub fn new() -> Guard {
        // Under /var/tmp: swap files cannot live on tmpfs.
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let journal = Journal::open_shared(&dir.path().join("store.journal")).unwrap();
        Guard {
            dir,
            journal,
            children: Vec::new(),
            groups: Vec::new(),
        }
    }

    pub fn journal_path(&self) -> PathBuf {
        self.dir.path().join("store.journal")
    }

    pub fn pending(&self) -> Vec<String> {
        Journal::open(&self.journal_path()).unwrap().pending()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for dir in &self.groups {
            if dir.is_dir() {
                let g = memory_limit::Group {
                    version: memory_limit::locate_here().unwrap().version,
                    dir: dir.clone(),
                };
                let _ = g.kill_all();
            }
        }
        if let Ok(mut j) = Journal::open(&self.journal_path()) {
            if let Err(e) = j.restore_all() {
                eprintln!("cleanup restore: {e:#}");
            }
        }
    }
}
