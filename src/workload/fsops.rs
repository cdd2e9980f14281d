//! `fsops`: the 2007 blktrace study's workload. `prepare` creates N volumes
//! (default 10), each a sparse file on a loop device; each run does, in
//! parallel on all volumes, mkfs, mount, an optional write phase, unmount.
//! The loop devices are published in the device registry as "fsops", so
//! `[config.blktrace] devices = "fsops"` traces exactly them.
//!
//! Everything prepare creates (backing files, mount points, loop devices,
//! and the mounts of a run) is journaled first, so a crashed run's
//! leftovers are removed by `sysdelta restore`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::compile::{check_keys, launch, param_str, param_usize};
use crate::config::journal::{self, EntryId, JournalHandle, UndoAction};
use crate::config::kinds::registry;
use crate::metric::{Direction, MetricSpec};
use crate::workload::{MetricSamples, RunContext, RunOutcome, Workload};

/// The name the devices are published under.
pub const REGISTRY_NAME: &str = "fsops";

const KEYS: &[&str] = &[
    "volumes",
    "size_mb",
    "fstype",
    "mkfs_options",
    "mount_options",
    "write_files",
    "file_size_kb",
    "dir",
];

/// <linux/loop.h>
const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;
const LOOP_CONFIGURE: libc::c_ulong = 0x4C0A;
const LOOP_CLR_FD: libc::c_ulong = 0x4C01;
const LO_FLAGS_AUTOCLEAR: u32 = 4;

#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

#[repr(C)]
struct LoopConfig {
    fd: u32,
    block_size: u32,
    info: LoopInfo64,
    reserved: [u64; 8],
}

struct Volume {
    backing: PathBuf,
    mountpoint: PathBuf,
    device: PathBuf,
    /// Held open for the whole experiment: with LO_FLAGS_AUTOCLEAR the
    /// device detaches by itself once this closes and nothing is mounted,
    /// which also covers a SIGKILL of sysdelta.
    fd: File,
    /// The device did not exist before (GET_FREE created it): remove it
    /// in teardown so the machine keeps the loop devices it had.
    created: bool,
}

pub struct FsopsWorkload {
    volumes: usize,
    size_mb: u64,
    fstype: String,
    mkfs_options: Vec<String>,
    mount_options: String,
    write_files: usize,
    file_size_kb: usize,
    dir: Option<PathBuf>,
    journal: Option<JournalHandle>,
    base: Option<PathBuf>,
    vols: Vec<Volume>,
    entries: Vec<EntryId>,
}

/// Per-volume phase times of one run.
#[derive(Default, Clone, Copy)]
struct Phases {
    mkfs: f64,
    mount: f64,
    write: f64,
    umount: f64,
}

impl FsopsWorkload {
    /// Parameters: `volumes` (10), `size_mb` per volume (256), `fstype`
    /// ("ext4"), `mkfs_options` (for ext*: lazy init off, so mkfs does all
    /// its writing inside the run), `mount_options` (""), `write_files` per
    /// volume (0: no write phase), `file_size_kb` (1024), `dir` for the
    /// backing files (the experiment's scratch directory).
    /// Call [`FsopsWorkload::with_journal`] before `prepare`.
    pub fn from_params(v: &toml::Value) -> Result<Self, String> {
        let empty = toml::Table::new();
        let t = match v {
            toml::Value::Table(t) => t,
            _ => &empty,
        };
        check_keys("fsops", t, KEYS)?;
        let fstype = param_str("fsops", t, "fstype", "ext4")?;
        if fstype.is_empty() || !fstype.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(format!(
                "fsops.fstype `{fstype}` is not a filesystem type name"
            ));
        }
        let mkfs_options = match t.get("mkfs_options") {
            None if fstype.starts_with("ext") => vec![
                "-E".to_string(),
                "lazy_itable_init=0,lazy_journal_init=0".to_string(),
            ],
            None => Vec::new(),
            Some(toml::Value::String(s)) => {
                shlex::split(s).ok_or_else(|| format!("fsops.mkfs_options: cannot split `{s}`"))?
            }
            Some(toml::Value::Array(a)) => a
                .iter()
                .map(|x| {
                    x.as_str()
                        .map(String::from)
                        .ok_or_else(|| format!("fsops.mkfs_options must be strings, found {x}"))
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(other) => return Err(format!("fsops.mkfs_options must be a list, not {other}")),
        };
        let dir = match t.get("dir") {
            None => None,
            Some(toml::Value::String(s)) if s.starts_with('/') => Some(PathBuf::from(s)),
            Some(other) => return Err(format!("fsops.dir must be an absolute path, not {other}")),
        };
        Ok(FsopsWorkload {
            volumes: param_usize("fsops", t, "volumes", 10, 1, 256)?,
            size_mb: param_usize("fsops", t, "size_mb", 256, 16, 1 << 20)? as u64,
            fstype,
            mkfs_options,
            mount_options: param_str("fsops", t, "mount_options", "")?,
            write_files: param_usize("fsops", t, "write_files", 0, 0, 1_000_000)?,
            file_size_kb: param_usize("fsops", t, "file_size_kb", 1024, 1, 1 << 24)?,
            dir,
            journal: None,
            base: None,
            vols: Vec::new(),
            entries: Vec::new(),
        })
    }

    /// The journal that records what prepare creates (required).
    pub fn with_journal(mut self, journal: JournalHandle) -> Self {
        self.journal = Some(journal);
        self
    }

    /// The loop devices of the prepared volumes.
    pub fn devices(&self) -> Vec<PathBuf> {
        self.vols.iter().map(|v| v.device.clone()).collect()
    }

    fn mkfs_tool(&self) -> String {
        format!("mkfs.{}", self.fstype)
    }

    /// Everything that must hold before anything is created; one line each.
    pub fn preflight(&self, scratch: &Path) -> Vec<String> {
        let mut out = Vec::new();
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            out.push("fsops: must run as root (loop devices, mkfs, mount)".into());
            return out;
        }
        // max_loop only limits the devices made at boot and by mknod;
        // LOOP_CTL_GET_FREE creates more on demand, so no count check.
        if !Path::new("/dev/loop-control").exists() {
            out.push(
                "fsops: no loop device support (/dev/loop-control missing; modprobe loop)".into(),
            );
        }
        if launch::which(&self.mkfs_tool()).is_none() {
            out.push(format!(
                "fsops: `{}` is not installed (not in PATH)",
                self.mkfs_tool()
            ));
        }
        let dir = self.dir.clone().unwrap_or_else(|| scratch.to_path_buf());
        let need = self.volumes as u64 * self.size_mb;
        match free_mb(&dir) {
            Some(free) if free < need => out.push(format!(
                "fsops: needs {need} MiB free in {} for {} sparse volumes of {} MiB, {free} MiB free",
                dir.display(),
                self.volumes,
                self.size_mb
            )),
            None => out.push(format!("fsops: cannot stat {}", dir.display())),
            _ => {}
        }
        out
    }

    fn setup_volume(&mut self, i: usize, base: &Path) -> Result<()> {
        let journal = self.journal.clone().expect("checked in prepare");
        let backing = base.join(format!("vol{i}.img"));
        let mountpoint = base.join(format!("mnt{i}"));
        self.entries.extend(journal.lock().unwrap().record_all(
            "fsops",
            vec![
                UndoAction::RemovePath {
                    path: backing.clone(),
                    recursive: false,
                },
                UndoAction::RemovePath {
                    path: mountpoint.clone(),
                    recursive: false,
                },
            ],
        )?);
        let bf = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&backing)
            .with_context(|| format!("fsops: cannot create {}", backing.display()))?;
        bf.set_len(self.size_mb * 1024 * 1024)?;
        std::fs::create_dir(&mountpoint)
            .with_context(|| format!("fsops: cannot create {}", mountpoint.display()))?;
        let ctl =
            File::open("/dev/loop-control").context("fsops: cannot open /dev/loop-control")?;
        for _attempt in 0..8 {
            let existing = loop_numbers();
            // SAFETY: LOOP_CTL_GET_FREE takes no argument.
            let n = unsafe { libc::ioctl(ctl.as_raw_fd(), LOOP_CTL_GET_FREE as _) };
            if n < 0 {
                return Err(std::io::Error::last_os_error()).context("fsops: no free loop device");
            }
            let created = !existing.contains(&(n as u32));
            let device = PathBuf::from(format!("/dev/loop{n}"));
            let mut undos = Vec::new();
            if created {
                undos.push(UndoAction::RemoveLoop { number: n as u32 });
            }
            undos.extend([
                UndoAction::DetachLoop {
                    device: device.clone(),
                    backing_file: backing.clone(),
                },
                UndoAction::Unmount {
                    target: mountpoint.clone(),
                    source: Some(device.to_string_lossy().into_owned()),
                },
            ]);
            let ids = journal.lock().unwrap().record_all("fsops", undos)?;
            let fd = open_loop(&device)?;
            // SAFETY: LoopConfig is plain data; zeroed is a valid start.
            let mut cfg: LoopConfig = unsafe { std::mem::zeroed() };
            cfg.fd = bf.as_raw_fd() as u32;
            cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
            let name = backing.to_string_lossy();
            let len = name.len().min(63);
            cfg.info.lo_file_name[..len].copy_from_slice(&name.as_bytes()[..len]);
            // SAFETY: cfg is a valid loop_config for the call.
            let r = unsafe { libc::ioctl(fd.as_raw_fd(), LOOP_CONFIGURE as _, &cfg) };
            if r != 0 {
                let e = std::io::Error::last_os_error();
                journal.lock().unwrap().done_all(&ids)?;
                if e.raw_os_error() == Some(libc::EBUSY) {
                    continue; // someone else took it meanwhile
                }
                return Err(e).context(format!("fsops: cannot attach {}", device.display()));
            }
            self.entries.extend(ids);
            self.vols.push(Volume {
                backing,
                mountpoint,
                device,
                fd,
                created,
            });
            return Ok(());
        }
        bail!("fsops: no free loop device after 8 attempts")
    }

    /// Unmount what is mounted, detach, remove files: the normal undo of
    /// prepare. Returns the first error but always tries everything.
    fn teardown(&mut self) -> Result<()> {
        // One thread per volume: detaching a loop device waits on the
        // kernel, and ten of them in a row add up.
        let vols: Vec<Volume> = self.vols.drain(..).collect();
        let errors: Vec<anyhow::Error> = std::thread::scope(|s| {
            let hs: Vec<_> = vols
                .into_iter()
                .map(|v| s.spawn(move || teardown_volume(v)))
                .collect();
            hs.into_iter()
                .filter_map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("teardown panicked")))
                        .err()
                })
                .collect()
        });
        let mut first: Option<anyhow::Error> = errors.into_iter().next();
        registry::withdraw(REGISTRY_NAME);
        if let Some(j) = &self.journal {
            // Anything teardown could not do is done (or reported) by the
            // journal's own undo of the remaining entries.
            let ids = std::mem::take(&mut self.entries);
            if let Err(e) = j.lock().unwrap().undo_entries(&ids) {
                first.get_or_insert(e);
            }
        }
        self.base = None;
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// One volume's mkfs, mount, write, umount, each timed.
    fn one_volume(&self, v: &Volume, ctx: &RunContext) -> Result<Phases, RunOutcome> {
        let mut p = Phases::default();
        let t = Instant::now();
        let mut cmd = Command::new(self.mkfs_tool());
        cmd.args(force_flags(&self.fstype))
            .args(&self.mkfs_options)
            .arg(&v.device);
        match launch::run(cmd, ctx) {
            Ok(d) if d.status.success() => {}
            Ok(d) => {
                return Err(d.failure(&format!("fsops: mkfs of {} failed", v.device.display())))
            }
            Err(o) => return Err(o),
        }
        p.mkfs = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let data = (!self.mount_options.is_empty()).then_some(self.mount_options.as_str());
        nix::mount::mount(
            Some(&v.device),
            &v.mountpoint,
            Some(self.fstype.as_str()),
            nix::mount::MsFlags::empty(),
            data,
        )
        .map_err(|e| launch::failed(&format!("fsops: mount {} failed: {e}", v.device.display())))?;
        p.mount = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let wrote = self.write_phase(&v.mountpoint, ctx);
        p.write = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let un = journal::unmount(&v.mountpoint);
        p.umount = t.elapsed().as_secs_f64();
        wrote.map_err(|e| launch::failed(&format!("fsops: write phase: {e:#}")))?;
        un.map_err(|e| launch::failed(&format!("fsops: {e:#}")))?;
        Ok(p)
    }

    /// `write_files` files of `file_size_kb` each, not synced (the unmount
    /// writes them out, as in the 2007 study).
    fn write_phase(&self, dir: &Path, ctx: &RunContext) -> Result<()> {
        let chunk: Vec<u8> = (0..64 * 1024).map(|i| (i * 7 % 251) as u8).collect();
        for k in 0..self.write_files {
            if ctx.cancel.load(Ordering::SeqCst) {
                bail!("cancelled");
            }
            let mut f = File::create(dir.join(format!("f{k}")))?;
            let mut left = self.file_size_kb * 1024;
            while left > 0 {
                let n = left.min(chunk.len());
                f.write_all(&chunk[..n])?;
                left -= n;
            }
        }
        Ok(())
    }
}

/// Unmount if mounted, detach, remove a loop device we created, remove
/// the mount point and the backing file.
fn teardown_volume(v: Volume) -> Result<()> {
    let mut first: Option<anyhow::Error> = None;
    if journal::is_mounted(&v.mountpoint, None).unwrap_or(false) {
        if let Err(e) = journal::unmount(&v.mountpoint) {
            first.get_or_insert(e);
        }
    }
    // SAFETY: LOOP_CLR_FD on our own open loop fd.
    unsafe { libc::ioctl(v.fd.as_raw_fd(), LOOP_CLR_FD as _, 0) };
    drop(v.fd);
    if v.created {
        let n = v
            .device
            .to_string_lossy()
            .trim_start_matches("/dev/loop")
            .parse();
        if let Err(e) = n
            .map_err(anyhow::Error::from)
            .and_then(journal::remove_loop)
        {
            first.get_or_insert(e);
        }
    }
    let _ = std::fs::remove_dir(&v.mountpoint);
    let _ = std::fs::remove_file(&v.backing);
    first.map_or(Ok(()), Err)
}

fn force_flags(fstype: &str) -> Vec<&'static str> {
    if fstype.starts_with("ext") {
        vec!["-F", "-q"]
    } else if fstype == "xfs" || fstype == "btrfs" {
        vec!["-f", "-q"]
    } else {
        Vec::new()
    }
}

fn open_loop(device: &Path) -> Result<File> {
    // The node appears via devtmpfs right after GET_FREE; wait briefly.
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        match OpenOptions::new().read(true).write(true).open(device) {
            Ok(f) => return Ok(f),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(e) => return Err(e).context(format!("fsops: cannot open {}", device.display())),
        }
    }
}

/// Numbers of the loop devices that exist now.
fn loop_numbers() -> Vec<u32> {
    std::fs::read_dir("/sys/block")
        .map(|r| {
            r.filter_map(|e| {
                e.ok()?
                    .file_name()
                    .to_str()?
                    .strip_prefix("loop")?
                    .parse()
                    .ok()
            })
            .collect()
        })
        .unwrap_or_default()
}

fn free_mb(dir: &Path) -> Option<u64> {
    let mut d = dir.to_path_buf();
    while !d.exists() {
        d.pop();
    }
    let s = nix::sys::statvfs::statvfs(&d).ok()?;
    Some(s.blocks_available() as u64 * s.fragment_size() as u64 / (1024 * 1024))
}

impl Workload for FsopsWorkload {
    fn changes_system(&self) -> bool {
        true
    }

    fn preflight(&self, scratch: &Path) -> Vec<String> {
        FsopsWorkload::preflight(self, scratch)
    }

    fn metrics(&self) -> Vec<MetricSpec> {
        let mut m = vec![
            MetricSpec::new("fsops_time", "s", Direction::Lower),
            MetricSpec::new("mkfs_time", "s", Direction::Lower),
            MetricSpec::new("mount_time", "s", Direction::Lower),
        ];
        if self.write_files > 0 {
            m.push(MetricSpec::new("write_time", "s", Direction::Lower));
        }
        m.push(MetricSpec::new("umount_time", "s", Direction::Lower));
        m
    }

    /// Checks (see [`FsopsWorkload::preflight`]), then creates the volumes.
    /// On any error what was created is removed again.
    fn prepare(&mut self, scratch: &Path) -> Result<()> {
        if self.journal.is_none() {
            bail!("fsops: internal error: no journal attached (FsopsWorkload::with_journal)");
        }
        let problems = self.preflight(scratch);
        if !problems.is_empty() {
            bail!("{}", problems.join("; "));
        }
        let base = self
            .dir
            .clone()
            .unwrap_or_else(|| scratch.to_path_buf())
            .join(format!("sysdelta-fsops-{}", std::process::id()));
        let journal = self.journal.clone().expect("checked above");
        self.entries = journal.lock().unwrap().record_all(
            "fsops",
            vec![UndoAction::RemovePath {
                path: base.clone(),
                recursive: false,
            }],
        )?;
        std::fs::create_dir_all(&base)
            .with_context(|| format!("fsops: cannot create {}", base.display()))?;
        self.base = Some(base.clone());
        for i in 0..self.volumes {
            if let Err(e) = self.setup_volume(i, &base) {
                let _ = self.teardown();
                return Err(e);
            }
        }
        registry::publish(REGISTRY_NAME, self.devices());
        Ok(())
    }

    /// One run: all volumes in parallel, one thread each (pinned to
    /// ctx.cpus when given). fsops_time is the wall time from starting the
    /// threads to the last one finishing; the phase metrics are the mean
    /// over volumes of each phase's time. Nothing is subtracted.
    fn run(&mut self, ctx: &RunContext) -> RunOutcome {
        if self.vols.is_empty() {
            return launch::failed("fsops: run before prepare");
        }
        let this: &FsopsWorkload = self;
        let start = Instant::now();
        let results: Vec<Result<Phases, RunOutcome>> = std::thread::scope(|s| {
            let handles: Vec<_> = this
                .vols
                .iter()
                .map(|v| {
                    s.spawn(move || {
                        if let Some(cpus) = ctx.cpus {
                            pin_thread(cpus);
                        }
                        this.one_volume(v, ctx)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(launch::failed("fsops: volume thread panicked")))
                })
                .collect()
        });
        let wall = start.elapsed().as_secs_f64();
        // A failed volume may have left its filesystem mounted.
        for v in &self.vols {
            if journal::is_mounted(&v.mountpoint, None).unwrap_or(false) {
                let _ = journal::unmount(&v.mountpoint);
            }
        }
        let mut phases = Vec::new();
        for r in results {
            match r {
                Ok(p) => phases.push(p),
                Err(o) => return o,
            }
        }
        let mean = |f: fn(&Phases) -> f64| phases.iter().map(f).sum::<f64>() / phases.len() as f64;
        let mut out = vec![
            MetricSamples {
                metric: "fsops_time".into(),
                values: vec![wall],
            },
            MetricSamples {
                metric: "mkfs_time".into(),
                values: vec![mean(|p| p.mkfs)],
            },
            MetricSamples {
                metric: "mount_time".into(),
                values: vec![mean(|p| p.mount)],
            },
        ];
        if self.write_files > 0 {
            out.push(MetricSamples {
                metric: "write_time".into(),
                values: vec![mean(|p| p.write)],
            });
        }
        out.push(MetricSamples {
            metric: "umount_time".into(),
            values: vec![mean(|p| p.umount)],
        });
        RunOutcome::Ok(out)
    }

    fn cleanup(&mut self) {
        if let Err(e) = self.teardown() {
            eprintln!("fsops: cleanup: {e:#}");
        }
    }
}

impl Drop for FsopsWorkload {
    fn drop(&mut self) {
        if !self.vols.is_empty() || !self.entries.is_empty() {
            let _ = self.teardown();
        }
    }
}

fn pin_thread(cpus: &[usize]) {
    // Best effort, as before: an unpinned worker still measures.
    let _ = crate::sys::affinity::pin_current(cpus);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_and_defaults() {
        let w = FsopsWorkload::from_params(&toml::Value::Table(Default::default())).unwrap();
        assert_eq!(w.volumes, 10);
        assert_eq!(w.fstype, "ext4");
        assert!(w
            .mkfs_options
            .iter()
            .any(|o| o.contains("lazy_itable_init=0")));
        let v: toml::Value = toml::from_str("fstype = \"ext4; rm\"").unwrap();
        assert!(FsopsWorkload::from_params(&v).is_err());
        let v: toml::Value = toml::from_str("volumes = 0").unwrap();
        let e = FsopsWorkload::from_params(&v).err().unwrap();
        assert!(e.contains("fsops.volumes"), "{e}");
    }

    #[test]
    fn loop_config_has_the_kernel_layout() {
        // struct loop_config is 304 bytes in <linux/loop.h>.
        assert_eq!(std::mem::size_of::<LoopConfig>(), 304);
    }
}
