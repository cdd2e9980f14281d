//! Loading and executing a kernel with `kexec_file_load(2)` and
//! `reboot(LINUX_REBOOT_CMD_KEXEC)` (no kexec-tools needed), the command
//! lines sysdelta passes, and the check of who came up.

use std::os::fd::AsRawFd;

use anyhow::{anyhow, Result};

use super::state::Kernel;

/// The kernel command-line word that names the boot of a session:
/// `sysdelta.kexec=<n>` for boot n, `sysdelta.kexec=end` for the kexec
/// back to the starting kernel. A kernel whose command line has none was
/// booted by the firmware (the machine's default kernel).
pub const MARK: &str = "sysdelta.kexec=";

/// What this boot's command line says: None (the firmware booted the
/// machine), Some(None) (the end of the session), Some(Some(n)).
pub fn marker(cmdline: &str) -> Option<Option<usize>> {
    let v = cmdline
        .split_whitespace()
        .find_map(|w| w.strip_prefix(MARK))?;
    Some(v.parse().ok())
}

/// The machine's own command line, without the words a boot loader or
/// sysdelta adds per boot (`BOOT_IMAGE=`, `initrd=`, `panic=`,
/// `sysdelta.kexec=`): what every kexec'd kernel starts from.
pub fn base_cmdline(proc_cmdline: &str) -> String {
    proc_cmdline
        .split_whitespace()
        .filter(|w| {
            !["BOOT_IMAGE=", "initrd=", "panic=", MARK]
                .iter()
                .any(|p| w.starts_with(p))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The whole command line of a kexec: the machine's, the config's, then
/// sysdelta's `panic=N` and mark.
pub fn cmdline(base: &str, config: &str, panic_s: u32, mark: &str) -> String {
    [base, config, &format!("panic={panic_s} {MARK}{mark}")]
        .iter()
        .filter(|s| !s.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Copy all of `src` into a new in-memory file, sealed against any
/// change (`F_SEAL_WRITE|SHRINK|GROW|SEAL`), hashing it on the way: what
/// is hashed is what the kernel later reads, whoever writes the original
/// file meanwhile. The copy (open read-only, at its start) and its
/// SHA-256 (hex).
pub fn sealed_copy(src: &mut impl std::io::Read) -> std::io::Result<(std::fs::File, String)> {
    use sha2::Digest;
    use std::io::Write;
    let name = c"sysdelta-kexec";
    let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    // MFD_NOEXEC_SEAL (6.3+) keeps it usable under vm.memfd_noexec=2;
    // older kernels refuse the flag (EINVAL) and take the plain one.
    const MFD_NOEXEC_SEAL: libc::c_uint = 0x8;
    // SAFETY: a NUL-terminated name; the fd is owned right below.
    let mut fd = unsafe { libc::memfd_create(name.as_ptr(), flags | MFD_NOEXEC_SEAL) };
    if fd < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        // SAFETY: as above.
        fd = unsafe { libc::memfd_create(name.as_ptr(), flags) };
    }
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a new descriptor nothing else owns.
    let mut f = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match src.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                h.update(&buf[..n]);
                f.write_all(&buf[..n])?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let seals = libc::F_SEAL_WRITE | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
    // SAFETY: a plain fcntl on an fd we own.
    if unsafe { libc::fcntl(f.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // kexec_file_load denies writes to what it reads (ETXTBSY while any
    // descriptor is open for writing): handed on is a read-only opening of
    // the same sealed file, the writable one closed.
    let read_only = std::fs::File::open(format!("/proc/self/fd/{}", f.as_raw_fd()))?;
    drop(f);
    Ok((
        read_only,
        h.finalize().iter().map(|b| format!("{b:02x}")).collect(),
    ))
}

/// Open a kernel image or an initrd the session boots, as root obeys a
/// file: not through a symlink, judged as opened (owned by root or the
/// user, and neither it nor its directory writable by anyone else, a
/// shared directory's group included: `sys::trust::open_read_private`),
/// and copied into a sealed in-memory file ([`sealed_copy`]): the copy,
/// which is what is inspected and loaded, and its SHA-256. Err: why not,
/// one line.
pub fn open_trusted(path: &std::path::Path) -> Result<(std::fs::File, String), String> {
    let mut f = crate::sys::trust::open_read_private(path)?
        .ok_or_else(|| format!("{}: no such file", path.display()))?;
    sealed_copy(&mut f).map_err(|e| format!("{}: {e}", path.display()))
}

/// [`open_trusted`], refused unless it still holds what `start` hashed:
/// a file swapped or rewritten since is never kexec'd.
fn open_same(path: &std::path::Path, want: &str) -> Result<std::fs::File> {
    let (f, got) = open_trusted(path).map_err(|e| anyhow!("{e}"))?;
    if got != want {
        return Err(anyhow!(
            "{} changed since `kexec start` (SHA-256 {got}, recorded {want}): not booted",
            path.display()
        ));
    }
    Ok(f)
}

/// Load `k` with `cmdline` for the next kexec, from the files `start`
/// hashed (checked again here, on the descriptors loaded). Err: why it
/// cannot be loaded (a file changed, the kernel refuses an unsigned image
/// under lockdown, ...).
pub fn load(k: &Kernel, cmdline: &str) -> Result<()> {
    let kernel = open_same(&k.image, &k.sha256)?;
    let initrd = match &k.initrd {
        Some(p) => Some(open_same(p, k.initrd_sha256.as_deref().unwrap_or(""))?),
        None => None,
    };
    let c = std::ffi::CString::new(cmdline).map_err(|_| anyhow!("the command line has a NUL"))?;
    const KEXEC_FILE_NO_INITRAMFS: libc::c_ulong = 0x4;
    let (fd, flags) = match &initrd {
        Some(f) => (f.as_raw_fd(), 0),
        None => (-1, KEXEC_FILE_NO_INITRAMFS),
    };
    // SAFETY: the fds are open for the call; the length counts the NUL,
    // as the kernel requires.
    let r = unsafe {
        libc::syscall(
            libc::SYS_kexec_file_load,
            kernel.as_raw_fd(),
            fd,
            c.as_bytes_with_nul().len() as libc::c_ulong,
            c.as_ptr(),
            flags,
        )
    };
    if r != 0 {
        return Err(anyhow!(
            "kexec_file_load of {}: {}",
            k.image.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Unload a kernel loaded for kexec (nothing when none is).
pub fn unload() {
    const KEXEC_FILE_UNLOAD: libc::c_ulong = 0x1;
    // SAFETY: no fds nor buffers are read with KEXEC_FILE_UNLOAD.
    unsafe {
        libc::syscall(
            libc::SYS_kexec_file_load,
            -1,
            -1,
            0 as libc::c_ulong,
            std::ptr::null::<libc::c_char>(),
            KEXEC_FILE_UNLOAD,
        )
    };
}

/// Execute the loaded kernel. Under systemd (PID 1 is systemd, as on a
/// machine whose hook is a unit) by `systemctl --no-block kexec`: services
/// stop and file systems unmount before the kexec, and this returns Ok at
/// once (the step then exits). Elsewhere (the test machine's busybox
/// init), or when systemctl fails: file systems synced, then
/// `reboot(LINUX_REBOOT_CMD_KEXEC)`, which does not return on success.
pub fn execute() -> Result<()> {
    nix::unistd::sync();
    if under_systemd() {
        let ok = std::process::Command::new("/bin/systemctl")
            .args(["--no-block", "kexec"])
            .env_clear()
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Ok(());
        }
    }
    // SAFETY: a plain system call; it returns only on failure.
    let r = unsafe { libc::reboot(libc::LINUX_REBOOT_CMD_KEXEC) };
    Err(anyhow!(
        "reboot(LINUX_REBOOT_CMD_KEXEC) returned {r}: {}",
        std::io::Error::last_os_error()
    ))
}

/// PID 1 is systemd (sd_booted's test).
fn under_systemd() -> bool {
    std::fs::symlink_metadata("/run/systemd/system").is_ok_and(|m| m.is_dir())
}

/// Who came up, as the VM path checks a guest: the release, the build in
/// /proc/version, and the command line byte for byte (it carries this
/// boot's mark, so it is this boot and not an earlier one's kernel).
pub fn check_identity(k: &Kernel, want_cmdline: &str, got: &Identity) -> Result<(), String> {
    if got.uname != k.release {
        return Err(format!(
            "the machine runs kernel {}, the boot asked for {} ({})",
            got.uname,
            k.release,
            k.image.display()
        ));
    }
    if let Some(build) = k.banner.find('#').map(|i| k.banner[i..].trim()) {
        if !got.proc_version.contains(build) {
            return Err(format!(
                "/proc/version ({}) is not the build of {} ({build})",
                got.proc_version,
                k.image.display()
            ));
        }
    }
    if got.cmdline != want_cmdline {
        return Err(format!(
            "/proc/cmdline is '{}', sysdelta passed '{want_cmdline}'",
            got.cmdline
        ));
    }
    Ok(())
}

/// What the running kernel says it is.
#[derive(Clone, Debug)]
pub struct Identity {
    pub uname: String,
    pub proc_version: String,
    pub cmdline: String,
}

impl Identity {
    pub fn read() -> Result<Identity> {
        let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_string());
        Ok(Identity {
            uname: nix::sys::utsname::uname()?
                .release()
                .to_string_lossy()
                .into_owned(),
            proc_version: read("/proc/version")?,
            cmdline: read("/proc/cmdline")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_changed_since_start_is_never_loaded() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("bzImage");
        std::fs::write(&p, b"kernel one").unwrap();
        let (_, sha) = open_trusted(&p).unwrap();
        assert!(open_same(&p, &sha).is_ok());
        std::fs::write(&p, b"kernel two").unwrap();
        let e = open_same(&p, &sha).unwrap_err().to_string();
        assert!(e.contains("changed since `kexec start`"), "{e}");
        // Nor through a symlink, nor from a directory others can write.
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        assert!(open_trusted(&link).unwrap_err().contains("symbolic link"));
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(open_trusted(&p).unwrap_err().contains("written by others"));
    }

    #[test]
    fn what_is_loaded_is_a_sealed_copy_of_what_was_hashed() {
        use std::io::{Read, Write};
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("bzImage");
        std::fs::write(&p, b"kernel one").unwrap();
        let (mut copy, sha) = open_trusted(&p).unwrap();
        // The descriptor loaded is the in-memory copy, not the file.
        let link = std::fs::read_link(format!("/proc/self/fd/{}", copy.as_raw_fd())).unwrap();
        assert!(link.to_string_lossy().starts_with("/memfd:"), "{link:?}");
        // SAFETY: a plain fcntl on an open fd.
        let seals = unsafe { libc::fcntl(copy.as_raw_fd(), libc::F_GET_SEALS) };
        let all = libc::F_SEAL_WRITE | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
        assert_eq!(seals & all, all);
        assert!(copy.write_all(b"x").is_err());
        assert!(copy.set_len(1).is_err());
        // Nor through another opening of it; and the descriptor handed on
        // is not open for writing (kexec_file_load would refuse it).
        let again = std::fs::OpenOptions::new()
            .write(true)
            .open(format!("/proc/self/fd/{}", copy.as_raw_fd()));
        assert!(again.is_ok_and(|mut f| f.write_all(b"x").is_err()));
        // SAFETY: a plain fcntl on an open fd.
        let mode = unsafe { libc::fcntl(copy.as_raw_fd(), libc::F_GETFL) } & libc::O_ACCMODE;
        assert_eq!(mode, libc::O_RDONLY);
        // Whatever the file holds later, the copy is what was hashed.
        std::fs::write(&p, b"kernel two, longer").unwrap();
        let mut got = Vec::new();
        copy.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"kernel one");
        assert_eq!(sha, sealed_copy(&mut &b"kernel one"[..]).unwrap().1);
    }

    #[test]
    fn the_mark_names_the_boot_or_the_end() {
        assert_eq!(marker("console=ttyS0 quiet"), None);
        assert_eq!(marker("quiet sysdelta.kexec=3 panic=5"), Some(Some(3)));
        assert_eq!(marker("sysdelta.kexec=end"), Some(None));
    }

    #[test]
    fn the_machine_line_drops_what_each_boot_adds() {
        let base = base_cmdline("BOOT_IMAGE=/vmlinuz root=/dev/sda1 panic=5 sysdelta.kexec=2 ro");
        assert_eq!(base, "root=/dev/sda1 ro");
        assert_eq!(
            cmdline(&base, "mitigations=off", 10, "4"),
            "root=/dev/sda1 ro mitigations=off panic=10 sysdelta.kexec=4"
        );
        assert_eq!(cmdline("", "", 10, "end"), "panic=10 sysdelta.kexec=end");
    }
}
