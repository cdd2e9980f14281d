//! Launching the test machine of [`super::machine`]: two virtiofsd (the
//! host's root read-only, as the VM path shares it, and the writable
//! `state` share) and QEMU without `-no-reboot`, so that a reboot in the
//! guest (a panic's `panic=N`) boots `-kernel` again as firmware would.
//! The console goes to a file. Everything dies with the [`Machine`]
//! (killed on drop) and with this process (parent-death signal).

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::command::{child_setup, find_qemu, find_virtiofsd, virtiofsd_command};
use crate::error::Error;

/// What the machine boots first (its "default kernel") and shares.
pub struct MachineSpec {
    pub kernel: PathBuf,
    pub initramfs: PathBuf,
    pub cmdline: String,
    pub cpus: u32,
    pub memory_mib: u64,
    /// Shared writable as tag `state`.
    pub share: PathBuf,
    /// Sockets, logs and the console file (short path: unix sockets).
    pub dir: PathBuf,
}

/// A running test machine.
pub struct Machine {
    children: Vec<Child>,
    qemu: usize,
    console: PathBuf,
}

impl Machine {
    pub fn start(spec: &MachineSpec) -> Result<Machine, Error> {
        let fail = |what: &str, e: std::io::Error| Error::failed(format!("machine: {what}: {e}"));
        let parent = std::process::id() as i32;
        let bin = find_virtiofsd()?;
        let d = &spec.dir;
        let ro = d.join("ro");
        std::fs::create_dir_all(&ro).map_err(|e| fail("ro dir", e))?;
        let mut m = Machine {
            children: Vec::new(),
            qemu: usize::MAX,
            console: d.join("console.log"),
        };
        let log = File::create(d.join("virtiofsd-root.log")).map_err(|e| fail("log", e))?;
        let mut root = virtiofsd_command(&bin, &d.join("root.sock"), &ro, log, parent)?;
        m.children
            .push(root.spawn().map_err(|e| fail("virtiofsd", e))?);
        let log = File::create(d.join("virtiofsd-state.log")).map_err(|e| fail("log", e))?;
        let mut state = Command::new(&bin);
        state
            .arg(format!("--socket-path={}", d.join("state.sock").display()))
            .args(["-o", &format!("source={}", spec.share.display())])
            .args([
                "-o",
                "cache=auto",
                "-o",
                "sandbox=chroot",
                "-o",
                "log_level=warn",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        // SAFETY: system calls only.
        unsafe { state.pre_exec(move || child_setup(parent)) };
        m.children
            .push(state.spawn().map_err(|e| fail("virtiofsd", e))?);
        for s in ["root.sock", "state.sock"] {
            let t0 = Instant::now();
            while !d.join(s).exists() {
                if t0.elapsed() > Duration::from_secs(10) {
                    return Err(Error::failed(format!("machine: no {s} after 10 s")));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let console = File::create(&m.console).map_err(|e| fail("console", e))?;
        let err = console.try_clone().map_err(|e| fail("console", e))?;
        let mut q = Command::new(find_qemu()?);
        q.args(qemu_args(spec))
            .stdin(Stdio::null())
            .stdout(console)
            .stderr(err);
        // SAFETY: system calls only.
        unsafe { q.pre_exec(move || child_setup(parent)) };
        m.children.push(q.spawn().map_err(|e| fail("qemu", e))?);
        m.qemu = m.children.len() - 1;
        Ok(m)
    }

    /// QEMU's exit (the machine powered off), or None after `timeout`.
    pub fn wait(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let t0 = Instant::now();
        loop {
            if let Ok(Some(s)) = self.children[self.qemu].try_wait() {
                return Some(s);
            }
            if t0.elapsed() > timeout {
                return None;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The console so far.
    pub fn console(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(&self.console).unwrap_or_default()).into_owned()
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        for c in self.children.iter_mut().rev() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn qemu_args(spec: &MachineSpec) -> Vec<String> {
    let d = spec.dir.display();
    [
        "-nodefaults",
        "-no-user-config",
        "-display",
        "none",
        "-machine",
        "pc",
        "-accel",
        "tcg",
        "-cpu",
        "max",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(super::command::guest_args(
        (spec.cpus, spec.memory_mib),
        (&spec.kernel, &spec.initramfs, &spec.cmdline),
        &spec.dir.join("root.sock"),
    ))
    .chain([
        "-chardev".into(),
        format!("socket,id=fs1,path={d}/state.sock"),
        "-device".into(),
        "vhost-user-fs-pci,chardev=fs1,tag=state".into(),
    ])
    .collect()
}
