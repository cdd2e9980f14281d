//! `swap`: swap space the config adds, on a zram device or in a swap file,
//! so a workload squeezed by `memory_limit` swaps as the 2001 SAP study's
//! 4 GB system did on 1 GB of RAM.
//!
//! zram: a new device from `/sys/class/zram-control/hot_add` (never one
//! that existed before), sized `size` (uncompressed capacity; RAM is used
//! only for what is stored, compressed), mkswap'ed and swapped on; leave
//! swaps it off and hot-removes it. File: `<dir>/sysdelta-swap-<pid>-<n>`
//! (mode 0600, allocated with fallocate), mkswap'ed and swapped on; leave
//! swaps it off and deletes it. Every step is journaled before it is made.
//! Swap that was already on stays on and is reported once.

use std::fs;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::memory_limit::{parse_size, show_size};
use super::{check, value};
use crate::config::journal::{self, EntryId, JournalHandle, UndoAction};
use crate::config::kind::{ConfigKind, LaunchMods};
use crate::error::Error;

const KEYS: &[&str] = &["size", "device", "dir", "priority", "algorithm"];
const ZRAM_CONTROL: &str = "/sys/class/zram-control";
/// From <linux/swap.h>: use the priority in the low 15 bits.
const SWAP_FLAG_PREFER: i32 = 0x8000;
const SWAP_FLAG_PRIO_MASK: i32 = 0x7fff;

#[derive(Clone, Debug, PartialEq)]
pub enum Backing {
    Zram,
    File { dir: PathBuf },
}

/// One line of /proc/swaps.
#[derive(Clone, Debug, PartialEq)]
pub struct ActiveSwap {
    pub name: String,
    pub kib: u64,
    pub priority: i32,
}

/// The swap areas now on, from /proc/swaps.
pub fn active_swaps() -> Vec<ActiveSwap> {
    fs::read_to_string("/proc/swaps")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some(ActiveSwap {
                name: f.first()?.to_string(),
                kib: f.get(2)?.parse().ok()?,
                priority: f.get(4)?.parse().ok()?,
            })
        })
        .collect()
}

/// The zram device numbers that exist now.
pub fn zram_devices() -> Vec<u32> {
    let mut v: Vec<u32> = fs::read_dir("/sys/block")
        .map(|d| {
            d.filter_map(|e| {
                e.ok()?
                    .file_name()
                    .to_str()?
                    .strip_prefix("zram")?
                    .parse()
                    .ok()
            })
            .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Whether zram can be had: the control directory exists (built in or
/// loaded), or modprobe can load a zram module of this kernel.
fn zram_available() -> Result<(), Error> {
    if Path::new(ZRAM_CONTROL).exists() {
        return Ok(());
    }
    if sbin_tool("modprobe").is_none() {
        return Err(Error::bad(
            "zram is not loaded and modprobe is not installed to load it",
        ));
    }
    let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let dir = PathBuf::from("/lib/modules").join(release.trim());
    let listed = ["modules.dep", "modules.builtin"].iter().any(|f| {
        fs::read_to_string(dir.join(f))
            .unwrap_or_default()
            .lines()
            .any(|l| l.contains("/zram.ko"))
    });
    if listed {
        Ok(())
    } else {
        Err(Error::bad(format!(
            "this kernel ({}) has no zram module (not in {})",
            release.trim(),
            dir.join("modules.dep").display()
        )))
    }
}

/// A system tool by PATH, else in the sbin directories (a root shell's
/// PATH does not always have them).
fn sbin_tool(name: &str) -> Option<PathBuf> {
    check::which(name).or_else(|| {
        ["/usr/sbin", "/sbin"]
            .iter()
            .map(|d| Path::new(d).join(name))
            .find(|p| p.is_file())
    })
}

fn cstring(p: &Path) -> Result<std::ffi::CString> {
    std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).map_err(|_| anyhow!("NUL in path"))
}

static NEXT: AtomicU64 = AtomicU64::new(0);

pub struct Swap {
    size: u64,
    backing: Backing,
    priority: Option<i32>,
    algorithm: Option<String>,
    journal: JournalHandle,
    entries: Vec<EntryId>,
    /// The swap device or file while entered.
    area: Option<PathBuf>,
    /// zram was loaded by us (modprobe): unloaded on leave.
    loaded_zram: bool,
    others: Vec<ActiveSwap>,
    told: bool,
}

impl Swap {
    /// `swap = "4G"` (a file in /var/tmp) or `[config.swap] size = "4G",
    /// device = "zram"|"file", dir = "/var/tmp", priority = 10,
    /// algorithm = "lz4"`.
    pub fn from_value(v: &toml::Value, journal: JournalHandle) -> Result<Swap, Error> {
        let size_of = |s: &str| {
            parse_size(s).ok_or_else(|| {
                Error::bad(format!(
                    "swap.size: `{s}` is not a size (e.g. \"4G\", \"512M\")"
                ))
            })
        };
        let mut swap = Swap {
            size: 0,
            backing: Backing::File {
                dir: PathBuf::from("/var/tmp"),
            },
            priority: None,
            algorithm: None,
            journal,
            entries: Vec::new(),
            area: None,
            loaded_zram: false,
            others: Vec::new(),
            told: false,
        };
        match v {
            toml::Value::String(s) => swap.size = size_of(s)?,
            toml::Value::Table(_) => {
                let t = value::table("swap", v, KEYS)?;
                let size = value::string("swap", t, "size")?
                    .ok_or_else(|| Error::bad("swap needs `size`, e.g. size = \"4G\""))?;
                swap.size = size_of(&size)?;
                let dir = value::string("swap", t, "dir")?;
                match value::string("swap", t, "device")?.as_deref() {
                    None | Some("file") => {
                        if let Some(d) = dir {
                            if !Path::new(&d).is_absolute() {
                                return Err(Error::bad(format!(
                                    "swap.dir must be an absolute path, not `{d}`"
                                )));
                            }
                            swap.backing = Backing::File { dir: d.into() };
                        }
                    }
                    Some("zram") => {
                        if dir.is_some() {
                            return Err(Error::bad("swap.dir is for device = \"file\", not zram"));
                        }
                        swap.backing = Backing::Zram;
                    }
                    Some(other) => {
                        return Err(Error::bad(format!(
                            "swap.device must be \"zram\" or \"file\", not `{other}`"
                        )))
                    }
                }
                swap.algorithm = value::string("swap", t, "algorithm")?;
                if swap.algorithm.is_some() && swap.backing != Backing::Zram {
                    return Err(Error::bad("swap.algorithm is for device = \"zram\""));
                }
                swap.priority = match t.get("priority") {
                    None => None,
                    Some(toml::Value::Integer(p)) if (0..=32767).contains(p) => Some(*p as i32),
                    Some(other) => {
                        return Err(Error::bad(format!(
                            "swap.priority must be an integer from 0 to 32767, not {other}"
                        )))
                    }
                };
            }
            other => {
                return Err(Error::bad(format!(
                    "swap must be a size string such as \"4G\" or a table [config.swap], not {}",
                    other.type_str()
                )))
            }
        }
        if swap.size < 1 << 20 {
            return Err(Error::bad(format!(
                "swap.size must be at least 1M, not {} bytes",
                swap.size
            )));
        }
        Ok(swap)
    }

    /// The swap device or file while entered.
    pub fn area(&self) -> Option<&Path> {
        self.area.as_deref()
    }

    /// Swap areas that were on before `enter` (left on; the workload may
    /// swap to them too).
    pub fn others(&self) -> &[ActiveSwap] {
        &self.others
    }

    /// One line saying what is in force, e.g. for the run log.
    pub fn describe(&self) -> String {
        let what = match (&self.area, &self.backing) {
            (Some(a), _) => a.display().to_string(),
            (None, Backing::Zram) => "zram (not entered)".into(),
            (None, Backing::File { dir }) => format!("file in {} (not entered)", dir.display()),
        };
        let others = if self.others.is_empty() {
            "no other swap on".to_string()
        } else {
            format!(
                "other swap already on, left on: {}",
                self.others
                    .iter()
                    .map(|o| format!(
                        "{} ({}, priority {})",
                        o.name,
                        show_size(o.kib * 1024),
                        o.priority
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        format!("swap: {} on {what}; {others}", show_size(self.size))
    }

    fn enter_zram(&mut self) -> Result<PathBuf> {
        if !Path::new(ZRAM_CONTROL).exists() {
            // num_devices=0: only the device we hot-add below exists.
            let modprobe = sbin_tool("modprobe").ok_or_else(|| anyhow!("modprobe not found"))?;
            let out = Command::new(modprobe)
                .args(["zram", "num_devices=0"])
                .output()
                .context("cannot run modprobe")?;
            if !out.status.success() {
                bail!(
                    "modprobe zram failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
            self.loaded_zram = true;
        }
        let ctl = Path::new(ZRAM_CONTROL);
        // Reading hot_add creates a device and gives its number, so it can
        // only be journaled right after (a crash in between leaves an empty
        // zram device, which holds no memory).
        let id: u32 = fs::read_to_string(ctl.join("hot_add"))
            .context("cannot add a zram device")?
            .trim()
            .parse()
            .context("hot_add gave no device number")?;
        let dev = PathBuf::from(format!("/dev/zram{id}"));
        self.entries.extend(self.journal.lock().unwrap().record_all(
            "swap",
            vec![
                UndoAction::RemoveZram { id },
                UndoAction::Swapoff { path: dev.clone() },
            ],
        )?);
        let sys = PathBuf::from(format!("/sys/block/zram{id}"));
        if let Some(alg) = &self.algorithm {
            journal::write_value(&sys.join("comp_algorithm"), alg).with_context(|| {
                let offer = fs::read_to_string(sys.join("comp_algorithm")).unwrap_or_default();
                format!("zram has no algorithm `{alg}` (offers: {})", offer.trim())
            })?;
        }
        journal::write_value(&sys.join("disksize"), &self.size.to_string())?;
        // devtmpfs makes the node; wait for it briefly.
        let deadline = Instant::now() + Duration::from_secs(2);
        while !dev.exists() {
            if Instant::now() > deadline {
                bail!("{} did not appear", dev.display());
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(dev)
    }

    fn enter_file(&mut self, dir: &Path) -> Result<PathBuf> {
        let path = dir.join(format!(
            "sysdelta-swap-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        self.entries.extend(self.journal.lock().unwrap().record_all(
            "swap",
            vec![
                UndoAction::RemovePath {
                    path: path.clone(),
                    recursive: false,
                },
                UndoAction::Swapoff { path: path.clone() },
            ],
        )?);
        let f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        // SAFETY: fallocate on an fd we own.
        if unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, self.size as libc::off_t) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EOPNOTSUPP) {
                return Err(e).context(format!(
                    "cannot allocate {} for {}",
                    show_size(self.size),
                    path.display()
                ));
            }
            // No fallocate here: write zeros (swap files must have no holes).
            use std::io::Write;
            let zeros = vec![0u8; 1 << 20];
            let mut w = std::io::BufWriter::new(&f);
            let mut left = self.size;
            while left > 0 {
                let n = left.min(zeros.len() as u64) as usize;
                w.write_all(&zeros[..n])?;
                left -= n as u64;
            }
            w.flush()?;
        }
        f.sync_all()?;
        Ok(path)
    }

    fn mkswap_and_swapon(&self, area: &Path) -> Result<()> {
        let mkswap = sbin_tool("mkswap").ok_or_else(|| anyhow!("mkswap not found"))?;
        let out = Command::new(mkswap)
            .arg(area)
            .output()
            .context("cannot run mkswap")?;
        if !out.status.success() {
            bail!(
                "mkswap {} failed: {}",
                area.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        let flags = self
            .priority
            .map_or(0, |p| SWAP_FLAG_PREFER | (p & SWAP_FLAG_PRIO_MASK));
        let c = cstring(area)?;
        // SAFETY: valid NUL-terminated path.
        if unsafe { libc::swapon(c.as_ptr(), flags) } != 0 {
            return Err(std::io::Error::last_os_error())
                .context(format!("swapon {}", area.display()));
        }
        Ok(())
    }
}

impl ConfigKind for Swap {
    fn kind(&self) -> &'static str {
        "swap"
    }

    fn preflight(&self) -> Vec<String> {
        let mut out: Vec<String> = check::root("swap", "to swapon").into_iter().collect();
        if !Path::new("/proc/swaps").exists() {
            out.push(
                "swap: this kernel has no swap support (no /proc/swaps; CONFIG_SWAP off)".into(),
            );
        }
        if sbin_tool("mkswap").is_none() {
            out.push("swap: mkswap is not installed (util-linux)".into());
        }
        match &self.backing {
            Backing::Zram => {
                if let Err(e) = zram_available() {
                    out.push(format!("swap: device = \"zram\" but {e}"));
                }
            }
            Backing::File { dir } => {
                if !dir.is_dir() {
                    out.push(format!("swap: directory {} does not exist", dir.display()));
                    return out;
                }
                out.extend(check::writable_dir("swap", dir));
                // The file is made with O_EXCL, but mkswap and swapon take
                // its path: in a directory others can change, they could
                // put a symlink to a disk there in between.
                out.extend(check::private_dir("swap", "dir", dir));
                if let Ok(fs) = nix::sys::statfs::statfs(dir) {
                    let t = fs.filesystem_type().0;
                    // tmpfs, overlayfs, NFS and btrfs (needs nodatacow files)
                    // cannot hold a plain swap file.
                    let bad = [
                        (0x0102_1994, "tmpfs"),
                        (0x794c_7630, "overlayfs"),
                        (0x6969, "nfs"),
                        (0x9123_683e, "btrfs"),
                    ];
                    if let Some((_, name)) = bad.iter().find(|(m, _)| *m == t) {
                        out.push(format!(
                            "swap: {} is on {name}, which cannot hold a swap file here; use another dir or device = \"zram\"",
                            dir.display()
                        ));
                    }
                }
                if let Ok(s) = nix::sys::statvfs::statvfs(dir) {
                    let free = s.blocks_available() * s.fragment_size();
                    // Keep 1 GiB spare so the swap file does not fill the disk.
                    if free < self.size + (1 << 30) {
                        out.push(format!(
                            "swap: {} has {} free; a {} swap file needs that plus 1 GiB to spare",
                            dir.display(),
                            show_size(free),
                            show_size(self.size)
                        ));
                    }
                }
            }
        }
        out
    }

    fn enter(&mut self) -> Result<LaunchMods> {
        self.others = active_swaps();
        let area = match self.backing.clone() {
            Backing::Zram => self.enter_zram(),
            Backing::File { dir } => self.enter_file(&dir),
        }
        .context("swap")?;
        self.area = Some(area.clone());
        self.mkswap_and_swapon(&area).context("swap")?;
        if !self.told {
            self.told = true;
            eprintln!("sysdelta: {}", self.describe());
        }
        Ok(LaunchMods::default())
    }

    fn leave(&mut self) -> Result<()> {
        self.area = None;
        let ids = std::mem::take(&mut self.entries);
        // hot_remove answers EBUSY while the device is still being
        // released after swapoff: entries whose undo failed stay pending
        // and are tried again (undo_entries skips those already done).
        let mut tries = 0;
        let r = loop {
            let r = self.journal.lock().unwrap().undo_entries(&ids);
            tries += 1;
            if r.is_ok() || tries == 5 {
                break r;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        r?;
        if std::mem::take(&mut self.loaded_zram) {
            let modprobe = sbin_tool("modprobe").ok_or_else(|| anyhow!("modprobe not found"))?;
            let out = Command::new(modprobe).args(["-r", "zram"]).output()?;
            if !out.status.success() {
                bail!(
                    "swap: modprobe -r zram failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(src: &str) -> Result<Swap, Error> {
        let d = tempfile::tempdir().unwrap();
        let j = crate::config::journal::Journal::open_shared(&d.path().join("j")).unwrap();
        let v: toml::Value = toml::from_str(src).unwrap();
        Swap::from_value(&v, j)
    }

    #[test]
    fn plan_values() {
        let s =
            build("size = \"4G\"\ndevice = \"zram\"\nalgorithm = \"lz4\"\npriority = 5").unwrap();
        assert_eq!(s.size, 4 << 30);
        assert_eq!(s.backing, Backing::Zram);
        assert_eq!(s.priority, Some(5));
        let s = build("size = \"64M\"\ndir = \"/srv\"").unwrap();
        assert_eq!(s.backing, Backing::File { dir: "/srv".into() });
        let err = |src: &str| build(src).err().unwrap();
        assert!(err("device = \"zram\"")
            .to_string()
            .contains("needs `size`"));
        assert!(err("size = \"1G\"\ndevice = \"disk\"")
            .to_string()
            .contains("\"zram\" or \"file\""));
        assert!(err("size = \"1G\"\ndir = \"rel\"")
            .to_string()
            .contains("absolute"));
        assert!(err("size = \"1G\"\npriority = -1")
            .to_string()
            .contains("0 to 32767"));
        assert!(err("size = \"1G\"\nalgorithm = \"lz4\"")
            .to_string()
            .contains("for device = \"zram\""));
        assert!(err("size = \"1K\"").to_string().contains("at least 1M"));
    }

    #[test]
    fn a_dir_others_can_write_is_a_preflight_line() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let open = d.path().join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
        let s = build(&format!("size = \"64M\"\ndir = \"{}\"", open.display())).unwrap();
        let lines = s.preflight();
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("swap: dir ") && l.contains("can be written by other users")),
            "{lines:?}"
        );
    }

    #[test]
    fn proc_swaps_parses() {
        // Whatever is on, each line has a name and a size.
        for s in active_swaps() {
            assert!(s.name.starts_with('/'), "{s:?}");
        }
    }
}
