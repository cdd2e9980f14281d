//! `fsops`: the 2007 blktrace study's workload. `prepare` creates N volumes
//! (default 10), each a sparse file on a loop device; each run does, in
//! parallel on all volumes, mkfs, mount, an optional write phase, unmount.
//! The loop devices are published in the device registry as "fsops", so
//! `[config.blktrace] devices = "fsops"` traces exactly them.
//!
//! Everything prepare creates (backing files, mount points, loop devices,
//! and the mounts of a run) is journaled first, so a crashed run's
//! leftovers are removed by `sysdelta restore`. Creating and removing
//! the volumes is in `volume.rs`; the loop device calls in `crate::sys`.

use crate::error::Error;
mod volume;

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::compile::{launch, param_str, param_table, param_usize};
use crate::config::journal::{self, EntryId, JournalHandle, UndoAction};
use crate::config::kinds::registry;
use crate::metric::{Direction, MetricSpec};
use crate::workload::{MetricSamples, RunContext, RunOutcome, Workload};
use volume::Volume;

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
    pub fn from_params(v: &toml::Value) -> Result<Self, Error> {
        let t = param_table("fsops", v, KEYS)?;
        let fstype = param_str("fsops", t, "fstype", "ext4")?;
        if fstype.is_empty() || !fstype.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(Error::bad(format!(
                "fsops.fstype `{fstype}` is not a filesystem type name"
            )));
        }
        let mkfs_options = match t.get("mkfs_options") {
            None if fstype.starts_with("ext") => vec![
                "-E".to_string(),
                "lazy_itable_init=0,lazy_journal_init=0".to_string(),
            ],
            None => Vec::new(),
            Some(toml::Value::String(s)) => shlex::split(s)
                .ok_or_else(|| Error::bad(format!("fsops.mkfs_options: cannot split `{s}`")))?,
            Some(toml::Value::Array(a)) => a
                .iter()
                .map(|x| {
                    x.as_str().map(String::from).ok_or_else(|| {
                        Error::bad(format!("fsops.mkfs_options must be strings, found {x}"))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(other) => {
                return Err(Error::bad(format!(
                    "fsops.mkfs_options must be a list, not {other}"
                )))
            }
        };
        let dir = match t.get("dir") {
            None => None,
            Some(toml::Value::String(s)) if s.starts_with('/') => Some(PathBuf::from(s)),
            Some(other) => {
                return Err(Error::bad(format!(
                    "fsops.dir must be an absolute path, not {other}"
                )))
            }
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

fn force_flags(fstype: &str) -> Vec<&'static str> {
    if fstype.starts_with("ext") {
        vec!["-F", "-q"]
    } else if fstype == "xfs" || fstype == "btrfs" {
        vec!["-f", "-q"]
    } else {
        Vec::new()
    }
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
        assert!(e.to_string().contains("fsops.volumes"), "{e}");
    }
}
