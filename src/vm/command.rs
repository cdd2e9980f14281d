//! The command lines of a boot's two children, virtiofsd and QEMU
//! (docs/kernels.md A.4), and what each child does before its exec.

use std::ffi::CString;
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};
use nix::sys::signal::Signal;

use super::accel::Accel;
use super::PORT_NAME;
use crate::error::Error;

/// What one boot is: the kernel, its initramfs and command line, the
/// CPUs, the memory and the accel.
#[derive(Clone, Debug)]
pub struct VmSpec {
    pub kernel: PathBuf,
    pub initramfs: PathBuf,
    pub cmdline: String,
    pub cpus: u32,
    pub memory_mib: u64,
    pub accel: Accel,
}

/// `sun_path` holds 108 bytes with its NUL.
const SUN_PATH_MAX: usize = 107;

/// The first executable `name` in PATH.
fn in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/sbin:/usr/bin:/sbin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// QEMU's x86-64 system emulator.
pub fn find_qemu() -> Result<PathBuf, Error> {
    in_path("qemu-system-x86_64").ok_or_else(|| {
        Error::failed(
            "qemu-system-x86_64 not found in PATH (Debian 12: apt-get install qemu-system-x86)",
        )
    })
}

/// The C virtiofsd of QEMU up to 7.2, whose `-o` options this module
/// passes. (The Rust virtiofsd spells some of them differently; it is not
/// told apart yet.)
pub fn find_virtiofsd() -> Result<PathBuf, Error> {
    ["/usr/lib/qemu/virtiofsd", "/usr/libexec/virtiofsd"]
        .iter()
        .map(PathBuf::from)
        .find(|p| is_executable(p))
        .or_else(|| in_path("virtiofsd"))
        .ok_or_else(|| {
            Error::failed("virtiofsd not found in /usr/lib/qemu, /usr/libexec or PATH (Debian 12: apt-get install qemu-system-x86)")
        })
}

/// QEMU's arguments for `spec`, with the boot directory `dir` (after the
/// program name).
pub fn qemu_args(spec: &VmSpec, dir: &Path) -> Vec<String> {
    let d = dir.display();
    let mut a: Vec<String> = [
        "-nodefaults",
        "-no-user-config",
        "-display",
        "none",
        "-no-reboot",
        "-machine",
        "pc",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.extend(spec.accel.qemu_args().iter().map(|s| s.to_string()));
    a.extend(guest_args(
        (spec.cpus, spec.memory_mib),
        (&spec.kernel, &spec.initramfs, &spec.cmdline),
        &dir.join("hostroot.sock"),
    ));
    a.extend([
        "-device".into(),
        "virtio-serial-pci,id=vser".into(),
        // wait=off: QEMU does not wait for the host end before booting.
        "-chardev".into(),
        format!("socket,id=runs,path={d}/runs.sock,server=on,wait=off"),
        "-device".into(),
        format!("virtserialport,bus=vser.0,chardev=runs,name={PORT_NAME}"),
        "-device".into(),
        "pvpanic-pci".into(),
        "-action".into(),
        "panic=exit-failure".into(),
    ]);
    a
}

/// The arguments every guest of sysdelta's has, whatever else its VM
/// does: CPUs and RAM (shared: vhost-user needs the guest's RAM shared
/// with virtiofsd), kernel, initramfs and command line, the console on
/// stdio, and the host's root from the virtiofsd listening on `root_sock`
/// (tag `hostroot`).
pub(crate) fn guest_args(
    (cpus, memory_mib): (u32, u64),
    (kernel, initramfs, cmdline): (&Path, &Path, &str),
    root_sock: &Path,
) -> Vec<String> {
    let m = memory_mib;
    vec![
        "-smp".into(),
        cpus.to_string(),
        "-m".into(),
        m.to_string(),
        "-object".into(),
        format!("memory-backend-memfd,id=mem,size={m}M,share=on"),
        "-numa".into(),
        "node,memdev=mem".into(),
        "-kernel".into(),
        kernel.display().to_string(),
        "-initrd".into(),
        initramfs.display().to_string(),
        "-append".into(),
        cmdline.to_string(),
        "-serial".into(),
        "stdio".into(),
        "-chardev".into(),
        format!("socket,id=fs0,path={}", root_sock.display()),
        "-device".into(),
        "vhost-user-fs-pci,chardev=fs0,tag=hostroot".into(),
    ]
}

pub fn check_spec(spec: &VmSpec, dir: &Path) -> Result<(), Error> {
    if !(1..=255).contains(&spec.cpus) {
        return Err(Error::failed(format!(
            "vm: cpus must be 1 to 255, not {}",
            spec.cpus
        )));
    }
    if spec.memory_mib < 128 {
        return Err(Error::failed(format!(
            "vm: memory must be at least 128 MiB, not {}",
            spec.memory_mib
        )));
    }
    for (what, p) in [("kernel", &spec.kernel), ("initramfs", &spec.initramfs)] {
        if !p.is_file() {
            return Err(Error::failed(format!(
                "vm: {what} {} is not a file",
                p.display()
            )));
        }
    }
    let d = dir.to_str().ok_or_else(|| {
        Error::failed(format!("vm: boot directory {} is not UTF-8", dir.display()))
    })?;
    // Commas separate QEMU's and virtiofsd's sub-options.
    if d.contains(',') {
        return Err(Error::failed(format!("vm: boot directory {d} contains a comma, which QEMU and virtiofsd options cannot carry")));
    }
    let longest = d.len() + "/hostroot.sock".len();
    if longest > SUN_PATH_MAX {
        return Err(Error::failed(format!(
            "vm: boot directory {d} is too long for its unix sockets ({longest} bytes, at most {SUN_PATH_MAX})"
        )));
    }
    if !dir.is_dir() {
        return Err(Error::failed(format!(
            "vm: boot directory {d} is not a directory"
        )));
    }
    Ok(())
}

/// In the child, before exec: own session, death with the spawning
/// thread, and no orphan if the parent died before the prctl. Only
/// async-signal-safe calls: the parent may have other threads.
pub fn child_setup(parent: i32) -> std::io::Result<()> {
    nix::unistd::setsid()?;
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
    if nix::unistd::getppid().as_raw() != parent {
        // SAFETY: _exit is async-signal-safe; the parent is already gone.
        unsafe { libc::_exit(1) };
    }
    Ok(())
}

/// virtiofsd serving `ro`, which its pre-exec turns into a read-only bind
/// mount of `/` in a mount namespace of its own: virtiofsd has no
/// read-only option, and a guest-side `ro` is no protection (a guest
/// `mount -o remount,rw` wrote to the host, C.4). The bind exists only in
/// that namespace, so it dies with virtiofsd and is never seen on the host.
pub fn virtiofsd_command(
    bin: &Path,
    sock: &Path,
    ro: &Path,
    log: File,
    parent: i32,
) -> Result<Command, Error> {
    let ro_c = CString::new(ro.as_os_str().as_bytes())
        .map_err(|_| Error::failed(format!("vm: {} has a NUL byte", ro.display())))?;
    let mut cmd = Command::new(bin);
    cmd.arg(format!("--socket-path={}", sock.display()))
        .arg("-o")
        .arg(format!("source={}", ro.display()))
        .args([
            "-o",
            "cache=always",
            "-o",
            "sandbox=chroot",
            "-o",
            "log_level=warn",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    // SAFETY: the closure makes only system calls (nix passes the CStr
    // paths without allocating).
    unsafe {
        cmd.pre_exec(move || {
            child_setup(parent)?;
            unshare(CloneFlags::CLONE_NEWNS)?;
            // Private first, so the bind below does not propagate to
            // the host's namespace.
            let none: Option<&std::ffi::CStr> = None;
            mount(
                none,
                c"/",
                none,
                MsFlags::MS_PRIVATE | MsFlags::MS_REC,
                none,
            )?;
            mount(Some(c"/"), ro_c.as_c_str(), none, MsFlags::MS_BIND, none)?;
            mount(
                none,
                ro_c.as_c_str(),
                none,
                MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY,
                none,
            )?;
            Ok(())
        });
    }
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vm::launch::BASE_CMDLINE;
    use crate::vm::Accel;

    fn spec() -> VmSpec {
        VmSpec {
            kernel: "/boot/k".into(),
            initramfs: "/tmp/i".into(),
            cmdline: BASE_CMDLINE.into(),
            cpus: 2,
            memory_mib: 512,
            accel: Accel::Tcg,
        }
    }

    #[test]
    fn qemu_args_follow_the_recipe() {
        let a = qemu_args(&spec(), Path::new("/run/b")).join(" ");
        for want in [
            "-accel tcg,thread=multi -cpu max -smp 2 -m 512",
            "memory-backend-memfd,id=mem,size=512M,share=on",
            "-append console=ttyS0 panic=-1 -serial stdio",
            "socket,id=fs0,path=/run/b/hostroot.sock",
            "socket,id=runs,path=/run/b/runs.sock,server=on,wait=off",
            "name=org.sysdelta.runs",
            "-device pvpanic-pci -action panic=exit-failure",
        ] {
            assert!(a.contains(want), "{want} not in {a}");
        }
    }

    #[test]
    fn bad_specs_are_refused_before_anything_starts() {
        let t = tempfile::tempdir().unwrap();
        let mut s = spec();
        s.cpus = 0;
        assert!(check_spec(&s, t.path())
            .unwrap_err()
            .to_string()
            .contains("cpus"));
        let s = spec();
        assert!(check_spec(&s, t.path())
            .unwrap_err()
            .to_string()
            .contains("kernel /boot/k"));
        let long = t.path().join("x".repeat(120));
        let mut s = spec();
        s.kernel = "/proc/self/exe".into();
        s.initramfs = "/proc/self/exe".into();
        assert!(check_spec(&s, &long)
            .unwrap_err()
            .to_string()
            .contains("too long"));
        assert!(check_spec(&s, Path::new("/tmp/a,b"))
            .unwrap_err()
            .to_string()
            .contains("comma"));
    }
}
