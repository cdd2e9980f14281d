//! fsops volumes: creating one (backing file, mount point, loop device,
//! each journaled before it exists) and taking them all down again.
//! Separate from mod.rs, which parses the parameters and times the runs;
//! this is the part that changes the system.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::{FsopsWorkload, REGISTRY_NAME};
use crate::config::journal::{self, UndoAction};
use crate::config::kinds::registry;
use crate::sys::loopdev::{
    loop_numbers, open_loop, LoopConfig, LOOP_CLR_FD, LOOP_CONFIGURE, LOOP_CTL_GET_FREE,
    LO_FLAGS_AUTOCLEAR,
};

pub(super) struct Volume {
    pub(super) backing: PathBuf,
    pub(super) mountpoint: PathBuf,
    pub(super) device: PathBuf,
    /// Held open for the whole experiment: with LO_FLAGS_AUTOCLEAR the
    /// device detaches by itself once this closes and nothing is mounted,
    /// which also covers a SIGKILL of sysdelta.
    pub(super) fd: File,
    /// The device did not exist before (GET_FREE created it): remove it
    /// in teardown so the machine keeps the loop devices it had.
    pub(super) created: bool,
}

impl FsopsWorkload {
    pub(super) fn setup_volume(&mut self, i: usize, base: &Path) -> Result<()> {
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
            let fd = open_loop(&device)
                .with_context(|| format!("fsops: cannot open {}", device.display()))?;
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
    pub(super) fn teardown(&mut self) -> Result<()> {
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
