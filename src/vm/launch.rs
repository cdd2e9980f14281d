//! virtiofsd and QEMU for one boot (docs/kernels.md A.4).
//!
//! * **virtiofsd** serves the host's root as the virtiofs tag `hostroot`.
//!   It has no read-only option, so it serves a read-only bind mount of
//!   `/` made in its own private mount namespace just before its exec: the
//!   guest cannot write to the host even after `mount -o remount,rw`, and
//!   the bind mount vanishes with the process, so nothing is left mounted
//!   on the host whatever happens to sysdelta.
//! * **QEMU** boots the image as given, with the serial console on its
//!   stdout, the channel as a virtio-serial port whose host end is a unix
//!   socket server in the boot directory, and pvpanic so that a panic
//!   after `/init` loaded `pvpanic-pci` exits with status 1.
//!
//! Booting a bzImage makes the guest decompress it under TCG first; an
//! uncompressed vmlinux booted through its PVH entry would save 2.1-2.6 s
//! per boot of the XZ-compressed rt kernel (A.5). Not done yet.
//!
//! Both children get their own session (a terminal's Ctrl-C reaches
//! sysdelta, which then tears down, and a kill of the group takes all of
//! a child) and `PR_SET_PDEATHSIG(SIGKILL)`, so they die within 0.1 s of
//! sysdelta's death instead of waiting for `restore` (A.8).

use std::ffi::CString;
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use super::accel::Accel;
use super::console::{self, Console};
use super::PORT_NAME;
use crate::config::journal::process_start_time;

/// The kernel options sysdelta's boots need: the console on the first
/// serial port, and reboot at once on a panic, which `-no-reboot` turns
/// into QEMU's exit. Callers append their own.
pub const BASE_CMDLINE: &str = "console=ttyS0 panic=-1";

/// How long virtiofsd may take to create its socket (2-21 ms measured).
const SOCKET_WAIT: Duration = Duration::from_secs(5);
/// How long virtiofsd may take to exit by itself once QEMU is gone.
const VIRTIOFSD_GRACE: Duration = Duration::from_secs(2);
/// `sun_path` holds 108 bytes with its NUL.
const SUN_PATH_MAX: usize = 107;

#[derive(Clone, Debug)]
pub struct VmSpec {
    pub kernel: PathBuf,
    pub initramfs: PathBuf,
    pub cmdline: String,
    pub cpus: u32,
    pub memory_mib: u64,
    pub accel: Accel,
}

/// One boot: its virtiofsd, its QEMU and QEMU's console.
pub struct Boot {
    dir: PathBuf,
    virtiofsd: Option<Child>,
    virtiofsd_done: bool,
    qemu: Option<Child>,
    qemu_status: Option<ExitStatus>,
    qemu_done: bool,
    qemu_argv: Vec<String>,
    children: Vec<(i32, u64)>,
    console: Arc<Mutex<Console>>,
    reader: Option<JoinHandle<()>>,
    launched: Instant,
}

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
pub fn find_qemu() -> Result<PathBuf, String> {
    in_path("qemu-system-x86_64").ok_or_else(|| {
        "qemu-system-x86_64 not found in PATH (Debian 12: apt-get install qemu-system-x86)".into()
    })
}

/// The C virtiofsd of QEMU up to 7.2, whose `-o` options this module
/// passes. (The Rust virtiofsd spells some of them differently; it is not
/// told apart yet.)
pub fn find_virtiofsd() -> Result<PathBuf, String> {
    ["/usr/lib/qemu/virtiofsd", "/usr/libexec/virtiofsd"]
        .iter()
        .map(PathBuf::from)
        .find(|p| is_executable(p))
        .or_else(|| in_path("virtiofsd"))
        .ok_or_else(|| {
            "virtiofsd not found in /usr/lib/qemu, /usr/libexec or PATH (Debian 12: apt-get install qemu-system-x86)"
                .into()
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
    let m = spec.memory_mib;
    a.extend([
        "-smp".into(),
        spec.cpus.to_string(),
        "-m".into(),
        m.to_string(),
        // vhost-user needs the guest's RAM shared with virtiofsd.
        "-object".into(),
        format!("memory-backend-memfd,id=mem,size={m}M,share=on"),
        "-numa".into(),
        "node,memdev=mem".into(),
        "-kernel".into(),
        spec.kernel.display().to_string(),
        "-initrd".into(),
        spec.initramfs.display().to_string(),
        "-append".into(),
        spec.cmdline.clone(),
        "-serial".into(),
        "stdio".into(),
        "-chardev".into(),
        format!("socket,id=fs0,path={d}/hostroot.sock"),
        "-device".into(),
        "vhost-user-fs-pci,chardev=fs0,tag=hostroot".into(),
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

fn check_spec(spec: &VmSpec, dir: &Path) -> Result<(), String> {
    if !(1..=255).contains(&spec.cpus) {
        return Err(format!("vm: cpus must be 1 to 255, not {}", spec.cpus));
    }
    if spec.memory_mib < 128 {
        return Err(format!(
            "vm: memory must be at least 128 MiB, not {}",
            spec.memory_mib
        ));
    }
    for (what, p) in [("kernel", &spec.kernel), ("initramfs", &spec.initramfs)] {
        if !p.is_file() {
            return Err(format!("vm: {what} {} is not a file", p.display()));
        }
    }
    let d = dir
        .to_str()
        .ok_or_else(|| format!("vm: boot directory {} is not UTF-8", dir.display()))?;
    // Commas separate QEMU's and virtiofsd's sub-options.
    if d.contains(',') {
        return Err(format!("vm: boot directory {d} contains a comma, which QEMU and virtiofsd options cannot carry"));
    }
    let longest = d.len() + "/hostroot.sock".len();
    if longest > SUN_PATH_MAX {
        return Err(format!(
            "vm: boot directory {d} is too long for its unix sockets ({longest} bytes, at most {SUN_PATH_MAX})"
        ));
    }
    if !dir.is_dir() {
        return Err(format!("vm: boot directory {d} is not a directory"));
    }
    Ok(())
}

/// In the child, before exec: own session, death with the spawning
/// thread, and no orphan if the parent died before the prctl. Only
/// async-signal-safe calls: the parent may have other threads.
fn child_setup(parent: i32) -> std::io::Result<()> {
    nix::unistd::setsid()?;
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
    if nix::unistd::getppid().as_raw() != parent {
        // SAFETY: _exit is async-signal-safe; the parent is already gone.
        unsafe { libc::_exit(1) };
    }
    Ok(())
}

impl Boot {
    /// Start virtiofsd and QEMU for one boot in `dir`, an existing empty
    /// directory that will hold the sockets, `ro` (the mount point of the
    /// read-only root, empty on the host) and `virtiofsd.log`; the caller
    /// journals and removes it. `on_spawn(pid, start_time)` is called
    /// right after each child is spawned (virtiofsd, then QEMU); an error
    /// from it kills what was started and is returned.
    ///
    /// Call this from the thread that owns the boot until its end: the
    /// children's parent-death signal fires when the *thread* that spawned
    /// them exits, not the process.
    pub fn start(
        spec: &VmSpec,
        dir: &Path,
        on_spawn: &mut dyn FnMut(i32, u64) -> Result<(), String>,
    ) -> Result<Boot, String> {
        check_spec(spec, dir)?;
        let qemu_bin = find_qemu()?;
        let virtiofsd_bin = find_virtiofsd()?;
        let parent = std::process::id() as i32;

        let ro = dir.join("ro");
        std::fs::create_dir(&ro).map_err(|e| format!("vm: cannot create {}: {e}", ro.display()))?;
        let sock = dir.join("hostroot.sock");
        let log_path = dir.join("virtiofsd.log");
        let log = File::create(&log_path)
            .map_err(|e| format!("vm: cannot create {}: {e}", log_path.display()))?;

        let mut boot = Boot {
            dir: dir.to_path_buf(),
            virtiofsd: None,
            virtiofsd_done: false,
            qemu: None,
            qemu_status: None,
            qemu_done: false,
            qemu_argv: Vec::new(),
            children: Vec::new(),
            console: Arc::new(Mutex::new(Console::default())),
            reader: None,
            launched: Instant::now(),
        };

        // From here on an early return drops `boot`, which kills whatever
        // was started.
        let ro_c = CString::new(ro.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
        let mut cmd = Command::new(&virtiofsd_bin);
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
        let child = cmd
            .spawn()
            .map_err(|e| format!("vm: cannot start {}: {e}", virtiofsd_bin.display()))?;
        boot.record(child, on_spawn, true)?;
        boot.wait_for_socket(&sock, &log_path)?;

        boot.qemu_argv = std::iter::once(qemu_bin.display().to_string())
            .chain(qemu_args(spec, dir))
            .collect();
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
            .map_err(|e| format!("vm: pipe for the console: {e}"))?;
        let write2 = write
            .try_clone()
            .map_err(|e| format!("vm: pipe for the console: {e}"))?;
        let child = {
            let mut cmd = Command::new(&qemu_bin);
            cmd.args(&boot.qemu_argv[1..])
                .stdin(Stdio::null())
                .stdout(Stdio::from(write))
                .stderr(Stdio::from(write2));
            // SAFETY: as above, system calls only.
            unsafe { cmd.pre_exec(move || child_setup(parent)) };
            // `cmd` holds the pipe's write ends: it must go before the
            // reader can see end of file.
            cmd.spawn()
        }
        .map_err(|e| format!("vm: cannot start {}: {e}", qemu_bin.display()))?;
        boot.launched = Instant::now();
        let console = Arc::clone(&boot.console);
        let t0 = boot.launched;
        boot.reader = Some(
            std::thread::Builder::new()
                .name("vm-console".into())
                .spawn(move || console::pump(File::from(read), console, t0))
                .map_err(|e| format!("vm: console thread: {e}"))?,
        );
        boot.record(child, on_spawn, false)?;
        Ok(boot)
    }

    /// Keep a spawned child and tell the caller about it.
    fn record(
        &mut self,
        child: Child,
        on_spawn: &mut dyn FnMut(i32, u64) -> Result<(), String>,
        is_virtiofsd: bool,
    ) -> Result<(), String> {
        let pid = child.id() as i32;
        if is_virtiofsd {
            self.virtiofsd = Some(child);
        } else {
            self.qemu = Some(child);
        }
        // Not reaped yet, so /proc/PID/stat is there even if it exited.
        let start = process_start_time(pid)
            .ok_or_else(|| format!("vm: cannot read the start time of pid {pid}"))?;
        self.children.push((pid, start));
        on_spawn(pid, start)
    }

    fn wait_for_socket(&mut self, sock: &Path, log: &Path) -> Result<(), String> {
        let t0 = Instant::now();
        loop {
            if sock.exists() {
                return Ok(());
            }
            let fsd = self.virtiofsd.as_mut().expect("virtiofsd was started");
            if let Ok(Some(status)) = fsd.try_wait() {
                self.virtiofsd_done = true;
                return Err(format!(
                    "vm: virtiofsd exited ({status}) before creating {}: {}",
                    sock.display(),
                    last_line(log)
                ));
            }
            if t0.elapsed() > SOCKET_WAIT {
                return Err(format!(
                    "vm: virtiofsd did not create {} within {SOCKET_WAIT:?}: {}",
                    sock.display(),
                    last_line(log)
                ));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The pids started (virtiofsd, QEMU) with their start times.
    pub fn children(&self) -> Vec<(i32, u64)> {
        self.children.clone()
    }

    /// QEMU's command line, program first.
    pub fn qemu_argv(&self) -> &[String] {
        &self.qemu_argv
    }

    /// When QEMU was spawned; marker times count from here.
    pub fn launched(&self) -> Instant {
        self.launched
    }

    /// Connect to the virtio-serial port (`dir/runs.sock`), retrying until
    /// the socket accepts or `timeout`. QEMU makes the socket as it
    /// starts, so this usually succeeds long before the guest opens its
    /// end; guest writes wait for it.
    pub fn channel(&mut self, timeout: Duration) -> Result<UnixStream, String> {
        let path = self.dir.join("runs.sock");
        let t0 = Instant::now();
        loop {
            if let Some(status) = self.try_wait() {
                return Err(format!(
                    "vm: QEMU exited ({status}) before {} accepted",
                    path.display()
                ));
            }
            match UnixStream::connect(&path) {
                Ok(s) => return Ok(s),
                Err(e) if t0.elapsed() >= timeout => {
                    return Err(format!(
                        "vm: {} did not accept within {timeout:?}: {e}",
                        path.display()
                    ))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }

    /// The last lines of the serial console (at most 64 lines / 8 KiB),
    /// QEMU's own messages included.
    pub fn console_tail(&self) -> String {
        self.console
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .tail()
    }

    /// The `SYSDELTA-` marker lines of `/init` (see
    /// [`super::initramfs::INIT_MARKERS`]) with when they arrived after
    /// the launch, even those that scrolled out of the tail.
    pub fn markers(&self) -> Vec<(Duration, String)> {
        self.console
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .markers()
    }

    /// The guest command's exit status from `SYSDELTA-EXIT <status>`.
    pub fn guest_exit(&self) -> Option<i32> {
        self.markers()
            .iter()
            .find_map(|(_, m)| m.strip_prefix("SYSDELTA-EXIT ")?.trim().parse().ok())
    }

    /// The first "Kernel panic - not syncing: ..." of the console.
    pub fn panic_line(&self) -> Option<String> {
        self.console
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .panic_line()
    }

    /// Has QEMU exited? Non-blocking.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        if self.qemu_status.is_none() && !self.qemu_done {
            let q = self.qemu.as_mut()?;
            match q.try_wait() {
                Ok(Some(s)) => {
                    self.qemu_status = Some(s);
                    self.qemu_done = true;
                }
                Ok(None) => {}
                Err(_) => self.qemu_done = true,
            }
        }
        self.qemu_status
    }

    /// Wait for QEMU to exit, for at most `d`.
    pub fn wait_timeout(&mut self, d: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + d;
        loop {
            if let Some(s) = self.try_wait() {
                return Some(s);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            std::thread::sleep((deadline - now).min(Duration::from_millis(5)));
        }
    }

    /// SIGKILL QEMU's process group and reap it, give virtiofsd 2 s to exit
    /// by itself (it does once QEMU closes the socket), then SIGKILL it.
    /// Idempotent; Drop calls it.
    pub fn kill(&mut self) {
        if !self.qemu_done && self.try_wait().is_none() {
            if let Some(q) = self.qemu.as_mut() {
                // Not reaped yet, so the pid (the group's id, after
                // setsid) cannot have been reused.
                let _ = killpg(Pid::from_raw(q.id() as i32), Signal::SIGKILL);
                if let Ok(s) = q.wait() {
                    self.qemu_status = Some(s);
                }
            }
            self.qemu_done = true;
        }
        if !self.virtiofsd_done {
            // Without a QEMU it waits for one for ever: no grace then.
            let grace = if self.qemu.is_some() {
                VIRTIOFSD_GRACE
            } else {
                Duration::ZERO
            };
            if let Some(v) = self.virtiofsd.as_mut() {
                let t0 = Instant::now();
                let mut exited = false;
                while t0.elapsed() < grace {
                    if !matches!(v.try_wait(), Ok(None)) {
                        exited = true;
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                if !exited {
                    let _ = killpg(Pid::from_raw(v.id() as i32), Signal::SIGKILL);
                    let _ = v.wait();
                }
            }
            self.virtiofsd_done = true;
        }
        // With QEMU gone the pipe is at its end; wait briefly for the last
        // lines rather than for ever (nothing else should hold the pipe,
        // but a stuck join would hang the caller).
        if let Some(r) = self.reader.take() {
            let t0 = Instant::now();
            while !r.is_finished() && t0.elapsed() < Duration::from_secs(1) {
                std::thread::sleep(Duration::from_millis(2));
            }
            if r.is_finished() {
                let _ = r.join();
            }
        }
    }
}

impl Drop for Boot {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The last non-empty line of a small log file, for an error message.
fn last_line(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    match text.lines().rev().find(|l| !l.trim().is_empty()) {
        Some(l) => l.trim().to_string(),
        None => "(virtiofsd printed nothing)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(check_spec(&s, t.path()).unwrap_err().contains("cpus"));
        let s = spec();
        assert!(check_spec(&s, t.path())
            .unwrap_err()
            .contains("kernel /boot/k"));
        let long = t.path().join("x".repeat(120));
        let mut s = spec();
        s.kernel = "/proc/self/exe".into();
        s.initramfs = "/proc/self/exe".into();
        assert!(check_spec(&s, &long).unwrap_err().contains("too long"));
        assert!(check_spec(&s, Path::new("/tmp/a,b"))
            .unwrap_err()
            .contains("comma"));
    }
}
