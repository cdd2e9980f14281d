//! Throwaway SSH "hosts" for the fleet tests: each an sshd of its own on a
//! loopback address (127.0.0.2, 127.0.0.3, ...: all of 127/8 is loopback
//! on Linux, no interface to set up) and a free port, with its own host
//! key, a client key it authorises, one it does not, and a known_hosts
//! line, all in a temp dir. Root logs in with the key; the session runs on
//! this machine, so a "remote" path is a local one. Dropping a host, also
//! when the test panics, kills its sshd and every session it spawned and
//! removes the dir.
//!
//! sshd comes from scripts/install-team-tools.sh; without it (or ssh,
//! ssh-keygen), or without root (sshd must be root to log root in),
//! `SshHost::start` prints `SKIP: ...` and gives None.
//!
//! ```ignore
//! let Some(h) = common::sshd::SshHost::start("127.0.0.2") else { return };
//! Command::new("ssh").args(h.ssh_options()).arg(h.destination()).arg("echo hi");
//! ```

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::procs;

pub const SSHD: &str = "/usr/sbin/sshd";

pub struct SshHost {
    dir: tempfile::TempDir,
    addr: String,
    port: u16,
    sshd: Option<Child>,
}

/// The path of `program` when it is in PATH.
fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

fn keygen(path: &Path, comment: &str) {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .output()
        .expect("ssh-keygen");
    assert!(
        out.status.success(),
        "ssh-keygen: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl SshHost {
    /// An sshd listening on `addr` (a loopback address such as
    /// 127.0.0.2) at a free port, accepting connections when this returns.
    /// None, after printing `SKIP: ...`, when not root or sshd, ssh or
    /// ssh-keygen is missing. Panics when sshd fails on a machine that has
    /// them.
    pub fn start(addr: &str) -> Option<SshHost> {
        if !super::is_root() {
            std::io::Write::write_fmt(
                &mut std::io::stderr(),
                format_args!("SKIP: SshHost needs root (sshd runs as root to log root in)\n"),
            )
            .unwrap_or(());
            return None;
        }
        if !Path::new(SSHD).is_file() {
            std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("SKIP: {SSHD} is missing (openssh-server; scripts/install-team-tools.sh installs it)\n")).unwrap_or(());
            return None;
        }
        for tool in ["ssh", "ssh-keygen"] {
            if which(tool).is_none() {
                std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("SKIP: {tool} is not in PATH (openssh-client; scripts/install-team-tools.sh installs it)\n")).unwrap_or(());
                return None;
            }
        }
        // sshd's privilege separation dir, where it chroots the
        // unprivileged child that talks to a client before it logs in. The
        // package's service makes it at each start; without the service,
        // it is made here and left: an empty root-owned dir under /run
        // (gone at reboot), the one any sshd on the machine expects, so
        // leaving it changes nothing but that sshd can start.
        if !Path::new("/run/sshd").is_dir() {
            std::fs::create_dir_all("/run/sshd").unwrap();
            std::fs::set_permissions("/run/sshd", std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        // In /tmp, not $TMPDIR: a remote forward's socket goes in this dir
        // and a socket's path must stay under 108 bytes.
        let dir = tempfile::Builder::new()
            .prefix("sysdelta-ssh-")
            .tempdir_in("/tmp")
            .unwrap();
        let mut host = SshHost {
            dir,
            addr: addr.to_string(),
            port: 0,
            sshd: None,
        };
        let d = host.dir().to_path_buf();
        keygen(&d.join("host_key"), &format!("sysdelta-test-host-{addr}"));
        keygen(&d.join("client_key"), "sysdelta-test-client");
        keygen(&d.join("wrong_key"), "sysdelta-test-unauthorised");
        std::fs::copy(d.join("client_key.pub"), d.join("authorized_keys")).unwrap();
        let host_pub = std::fs::read_to_string(d.join("host_key.pub")).unwrap();
        for attempt in 1.. {
            // The port: one the kernel finds free on addr, let go just
            // before sshd binds it (sshd sets SO_REUSEADDR). Should another
            // process take it in between, another port is tried.
            host.port = TcpListener::bind((addr, 0))
                .unwrap_or_else(|e| panic!("bind {addr}:0: {e}"))
                .local_addr()
                .unwrap()
                .port();
            let port = host.port;
            std::fs::write(
                d.join("known_hosts"),
                format!("[{addr}]:{port} {}", host_pub.trim_end()) + "\n",
            )
            .unwrap();
            let config = format!(
                "# tests/common/sshd.rs\n\
                 ListenAddress {addr}\n\
                 Port {port}\n\
                 HostKey {d}/host_key\n\
                 AuthorizedKeysFile {d}/authorized_keys\n\
                 PidFile {d}/sshd.pid\n\
                 PermitRootLogin prohibit-password\n\
                 PubkeyAuthentication yes\n\
                 PasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\n\
                 StrictModes no\n\
                 UsePAM no\n\
                 AllowStreamLocalForwarding yes\n\
                 AllowTcpForwarding yes\n\
                 StreamLocalBindUnlink yes\n\
                 LogLevel ERROR\n",
                d = d.display()
            );
            std::fs::write(host.config_path(), config).unwrap();
            match host.launch() {
                Ok(()) => break,
                Err(e) if attempt < 5 && e.contains("Address already in use") => continue,
                Err(e) => panic!("{e}"),
            }
        }
        Some(host)
    }

    /// The host's dir: keys, known_hosts, sshd_config, sshd.log.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir().join("sshd_config")
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// What sshd said on stderr (`-e`; LogLevel ERROR).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir().join("sshd.log")).unwrap_or_default()
    }

    /// The listening sshd's pid while it runs.
    pub fn pid(&self) -> Option<i32> {
        self.sshd.as_ref().map(|c| c.id() as i32)
    }

    /// `root@ADDR`.
    pub fn destination(&self) -> String {
        format!("root@{}", self.addr)
    }

    /// ssh's options to log in as root with the authorised key and check
    /// the host key against this host's known_hosts only; no config file,
    /// agent or prompt of the machine's takes part.
    pub fn ssh_options(&self) -> Vec<String> {
        self.options_with_key("client_key")
    }

    /// `ssh_options()` with a key the host does not authorise.
    pub fn wrong_key_options(&self) -> Vec<String> {
        self.options_with_key("wrong_key")
    }

    fn options_with_key(&self, key: &str) -> Vec<String> {
        let d = self.dir();
        let mut o: Vec<String> = vec![
            "-F".into(),
            "/dev/null".into(),
            "-p".into(),
            self.port.to_string(),
            "-i".into(),
            d.join(key).display().to_string(),
        ];
        for opt in [
            format!("UserKnownHostsFile={}", d.join("known_hosts").display()),
            "GlobalKnownHostsFile=/dev/null".into(),
            "StrictHostKeyChecking=yes".into(),
            "BatchMode=yes".into(),
            "ConnectTimeout=5".into(),
            "IdentitiesOnly=yes".into(),
            "IdentityAgent=none".into(),
        ] {
            o.push("-o".into());
            o.push(opt);
        }
        o
    }

    /// SIGKILL sshd and every session it spawned (its descendants, found in
    /// /proc, and the processes of the sessions they lead): the host is
    /// down, as after a crash, until `start_again`.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.sshd.take() {
            if let Ok(None) = child.try_wait() {
                let killed = procs::kill_tree(child.id() as i32);
                let _ = child.wait();
                procs::wait_gone(&killed, Duration::from_secs(10));
            } else {
                let _ = child.wait();
            }
        }
    }

    /// Start sshd (again): same address, port, keys; returns once it
    /// answers there.
    pub fn start_again(&mut self) {
        if let Err(e) = self.launch() {
            panic!("{e}");
        }
    }

    /// Spawn sshd and wait until it answers on its port with an SSH
    /// banner; or say why not, with sshd's log, having stopped it.
    fn launch(&mut self) -> Result<(), String> {
        assert!(self.sshd.is_none(), "sshd is running already");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir().join("sshd.log"))
            .unwrap();
        let child = Command::new(SSHD)
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(self.config_path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn sshd");
        self.sshd = Some(child);
        let target = SocketAddr::new(self.addr.parse().unwrap(), self.port);
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            // A banner, and from our sshd: not from whatever else might
            // hold the port when ours could not bind it.
            let banner = banner(&target);
            if let Ok(Some(status)) = self.sshd.as_mut().unwrap().try_wait() {
                self.sshd = None;
                return Err(format!(
                    "sshd on {target} exited ({status}):\n{}",
                    self.log()
                ));
            }
            if banner {
                return Ok(());
            }
            if Instant::now() > until {
                self.kill();
                return Err(format!(
                    "sshd on {target} does not answer after 20 s:\n{}",
                    self.log()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Whether an SSH server answers at `target`: its identification line
/// read after sending ours (so that sshd sees a client that left, not an
/// error).
fn banner(target: &SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(target, Duration::from_millis(200)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = s.write_all(b"SSH-2.0-sysdelta-probe\r\n");
    let mut buf = [0u8; 4];
    s.read_exact(&mut buf).is_ok() && &buf == b"SSH-"
}

impl Drop for SshHost {
    fn drop(&mut self) {
        self.kill();
    }
}
