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

use std::fs::File;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

pub use super::command::VmSpec;
use super::command::{check_spec, child_setup, virtiofsd_command};
pub use super::command::{find_qemu, find_virtiofsd, qemu_args};
use super::console::{self, Console};
use crate::config::journal::process_start_time;
use crate::error::Error;

/// The kernel options sysdelta's boots need: the console on the first
/// serial port, and reboot at once on a panic, which `-no-reboot` turns
/// into QEMU's exit. Callers append their own.
pub const BASE_CMDLINE: &str = "console=ttyS0 panic=-1";

/// How long virtiofsd may take to create its socket (2-21 ms measured).
const SOCKET_WAIT: Duration = Duration::from_secs(5);
/// How long virtiofsd may take to exit by itself once QEMU is gone.
const VIRTIOFSD_GRACE: Duration = Duration::from_secs(2);

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
        on_spawn: &mut dyn FnMut(i32, u64) -> Result<(), Error>,
    ) -> Result<Boot, Error> {
        check_spec(spec, dir)?;
        let qemu_bin = find_qemu()?;
        let virtiofsd_bin = find_virtiofsd()?;
        let parent = std::process::id() as i32;

        let ro = dir.join("ro");
        std::fs::create_dir(&ro)
            .map_err(|e| Error::failed(format!("vm: cannot create {}: {e}", ro.display())))?;
        let sock = dir.join("hostroot.sock");
        let log_path = dir.join("virtiofsd.log");
        let log = File::create(&log_path)
            .map_err(|e| Error::failed(format!("vm: cannot create {}: {e}", log_path.display())))?;

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
        let mut cmd = virtiofsd_command(&virtiofsd_bin, &sock, &ro, log, parent)?;
        let child = cmd.spawn().map_err(|e| {
            // The error of its pre-exec: unshare or mount refused.
            let hint = if e.kind() == std::io::ErrorKind::PermissionDenied {
                " (it needs root, for the mount namespace of the read-only root)"
            } else {
                ""
            };
            Error::failed(format!(
                "vm: cannot start {}: {e}{hint}",
                virtiofsd_bin.display()
            ))
        })?;
        boot.record(child, on_spawn, true)?;
        boot.wait_for_socket(&sock, &log_path)?;

        boot.qemu_argv = std::iter::once(qemu_bin.display().to_string())
            .chain(qemu_args(spec, dir))
            .collect();
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
            .map_err(|e| Error::failed(format!("vm: pipe for the console: {e}")))?;
        let write2 = write
            .try_clone()
            .map_err(|e| Error::failed(format!("vm: pipe for the console: {e}")))?;
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
        .map_err(|e| Error::failed(format!("vm: cannot start {}: {e}", qemu_bin.display())))?;
        boot.launched = Instant::now();
        let console = Arc::clone(&boot.console);
        let t0 = boot.launched;
        boot.reader = Some(
            std::thread::Builder::new()
                .name("vm-console".into())
                .spawn(move || console::pump(File::from(read), console, t0))
                .map_err(|e| Error::failed(format!("vm: console thread: {e}")))?,
        );
        boot.record(child, on_spawn, false)?;
        Ok(boot)
    }

    /// Keep a spawned child and tell the caller about it.
    fn record(
        &mut self,
        child: Child,
        on_spawn: &mut dyn FnMut(i32, u64) -> Result<(), Error>,
        is_virtiofsd: bool,
    ) -> Result<(), Error> {
        let pid = child.id() as i32;
        if is_virtiofsd {
            self.virtiofsd = Some(child);
        } else {
            self.qemu = Some(child);
        }
        // Not reaped yet, so /proc/PID/stat is there even if it exited.
        let start = process_start_time(pid)
            .ok_or_else(|| Error::failed(format!("vm: cannot read the start time of pid {pid}")))?;
        self.children.push((pid, start));
        on_spawn(pid, start)
    }

    fn wait_for_socket(&mut self, sock: &Path, log: &Path) -> Result<(), Error> {
        let t0 = Instant::now();
        loop {
            if sock.exists() {
                return Ok(());
            }
            let fsd = self.virtiofsd.as_mut().expect("virtiofsd was started");
            if let Ok(Some(status)) = fsd.try_wait() {
                self.virtiofsd_done = true;
                return Err(Error::failed(format!(
                    "vm: virtiofsd exited ({status}) before creating {}: {}",
                    sock.display(),
                    last_line(log)
                )));
            }
            if t0.elapsed() > SOCKET_WAIT {
                return Err(Error::failed(format!(
                    "vm: virtiofsd did not create {} within {SOCKET_WAIT:?}: {}",
                    sock.display(),
                    last_line(log)
                )));
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
    pub fn channel(&mut self, timeout: Duration) -> Result<UnixStream, Error> {
        let path = self.dir.join("runs.sock");
        let t0 = Instant::now();
        loop {
            if let Some(status) = self.try_wait() {
                return Err(Error::failed(format!(
                    "vm: QEMU exited ({status}) before {} accepted",
                    path.display()
                )));
            }
            match UnixStream::connect(&path) {
                Ok(s) => return Ok(s),
                Err(e) if t0.elapsed() >= timeout => {
                    return Err(Error::failed(format!(
                        "vm: {} did not accept within {timeout:?}: {e}",
                        path.display()
                    )))
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
