//! Loop devices: which file one is bound to (sysfs), detaching it
//! (LOOP_CLR_FD) and removing it (LOOP_CTL_REMOVE). Separate from the
//! journal, which only decides when to call these; the fsops workload
//! sets up and tears down its volumes with them too, and attaches its
//! backing files (LOOP_CTL_GET_FREE, LOOP_CONFIGURE) with what is here.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// The backing file the kernel reports for a loop device, if bound.
pub fn loop_backing_file(device: &Path) -> Option<PathBuf> {
    let name = device.file_name()?.to_string_lossy().into_owned();
    let text = fs::read_to_string(format!("/sys/block/{name}/loop/backing_file")).ok()?;
    Some(PathBuf::from(
        text.trim_end_matches('\n').trim_end_matches(" (deleted)"),
    ))
}

/// Whether `device` is still bound to `backing` (as given or canonical).
pub fn loop_bound_to(device: &Path, backing: &Path) -> bool {
    let want = fs::canonicalize(backing).unwrap_or_else(|_| backing.to_path_buf());
    loop_backing_file(device).is_some_and(|b| b == want || b == backing)
}

/// LOOP_CLR_FD from <linux/loop.h>.
pub const LOOP_CLR_FD: libc::c_ulong = 0x4C01;

pub fn detach_loop(device: &Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    let f = File::open(device).with_context(|| format!("cannot open {}", device.display()))?;
    // SAFETY: LOOP_CLR_FD takes no argument; fd is valid for the call.
    if unsafe { libc::ioctl(f.as_raw_fd(), LOOP_CLR_FD as _, 0) } != 0 {
        let e = std::io::Error::last_os_error();
        // ENXIO: already unbound.
        if e.raw_os_error() != Some(libc::ENXIO) {
            return Err(e).context(format!("cannot detach {}", device.display()));
        }
    }
    Ok(())
}

/// LOOP_CTL_REMOVE from <linux/loop.h>.
const LOOP_CTL_REMOVE: libc::c_ulong = 0x4C81;

/// Remove an unbound loop device; retried briefly while the kernel is
/// still finishing an autoclear detach (EBUSY).
pub fn remove_loop(number: u32) -> Result<()> {
    use std::os::fd::AsRawFd;
    let ctl = File::open("/dev/loop-control").context("cannot open /dev/loop-control")?;
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        // SAFETY: LOOP_CTL_REMOVE takes the device number as its argument.
        if unsafe {
            libc::ioctl(
                ctl.as_raw_fd(),
                LOOP_CTL_REMOVE as _,
                number as libc::c_ulong,
            )
        } >= 0
        {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::ENODEV) => return Ok(()),
            Some(libc::EBUSY) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5))
            }
            _ => return Err(e).context(format!("cannot remove loop{number}")),
        }
    }
}

/// <linux/loop.h>
pub const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;
pub const LOOP_CONFIGURE: libc::c_ulong = 0x4C0A;
pub const LO_FLAGS_AUTOCLEAR: u32 = 4;

/// struct loop_info64 from <linux/loop.h>.
#[repr(C)]
pub struct LoopInfo64 {
    pub lo_device: u64,
    pub lo_inode: u64,
    pub lo_rdevice: u64,
    pub lo_offset: u64,
    pub lo_sizelimit: u64,
    pub lo_number: u32,
    pub lo_encrypt_type: u32,
    pub lo_encrypt_key_size: u32,
    pub lo_flags: u32,
    pub lo_file_name: [u8; 64],
    pub lo_crypt_name: [u8; 64],
    pub lo_encrypt_key: [u8; 32],
    pub lo_init: [u64; 2],
}

/// struct loop_config from <linux/loop.h>, the argument of LOOP_CONFIGURE.
#[repr(C)]
pub struct LoopConfig {
    pub fd: u32,
    pub block_size: u32,
    pub info: LoopInfo64,
    pub reserved: [u64; 8],
}

/// Open a loop device read-write; the node appears via devtmpfs right
/// after LOOP_CTL_GET_FREE, so a missing one is waited for briefly.
pub fn open_loop(device: &Path) -> std::io::Result<File> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        match OpenOptions::new().read(true).write(true).open(device) {
            Ok(f) => return Ok(f),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(e) => return Err(e),
        }
    }
}

/// Numbers of the loop devices that exist now.
pub fn loop_numbers() -> Vec<u32> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_config_has_the_kernel_layout() {
        // struct loop_config is 304 bytes in <linux/loop.h>.
        assert_eq!(std::mem::size_of::<LoopConfig>(), 304);
    }
}
