//! The launcher: a small helper process that creates each measured
//! `sh -c` child on sysdelta's behalf, so that the child's max RSS is the
//! command's own.
//!
//! Why: the kernel keeps a process's peak RSS across exec, and at exec it
//! folds in the peak of the memory the process ran on until then. A child
//! made by `fork` runs on a copy of sysdelta's memory, one made by `vfork`
//! or `posix_spawn` on sysdelta's memory itself: either way its max RSS
//! could not read below sysdelta's own (`true` read 8712 KiB, where
//! `/usr/bin/time` reads 968). The launcher is exec'd once, from an
//! executable embedded in sysdelta (built from `launcher.c` by crates/base/build.rs,
//! run from an in-memory file, so nothing is installed), and has a small
//! memory of its own (about 550 KiB). It makes each child with
//! `clone(CLONE_VM | CLONE_VFORK | CLONE_PARENT)`: the child runs on the
//! launcher's memory until its exec, and it is sysdelta's child, not the
//! launcher's, so sysdelta waits for it, kills its group and reads its
//! rusage exactly as it would for a child it had made itself.
//!
//! One launcher serves the whole process. It is started by the first run
//! and exits when sysdelta does (its socket reaches end of file); runs from
//! several threads take turns for the few microseconds of a request. Each
//! request carries the command, the whole environment, the working
//! directory, the CPU affinity (the run's CPU list, else the calling
//! thread's), the cgroup to join, and the three standard descriptors.
//! Everything else (rlimits, umask, namespaces, credentials, ignored
//! signals) the child inherits from the launcher, which inherited it from
//! sysdelta when it started; sysdelta changes none of these for runs.
//!
//! The request format is described in `launcher.c`; both ends come from
//! the same build.

use std::ffi::OsStr;
use std::io::{self, IoSlice, Read, Write};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;

use nix::errno::Errno;
use nix::sys::socket::{self, ControlMessage, MsgFlags};

/// The launcher's executable, built by crates/base/build.rs.
static IMAGE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/sysdelta-launcher"));

/// "sdstetv2": request format 2 (`MAGIC` in launcher.c).
const MAGIC: u64 = 0x3276_6574_7473_6473;
/// CPUs a request can name: 16 words of 64 (`CPU_WORDS` in launcher.c).
const CPU_WORDS: usize = 16;
/// magic, payload_len, n_argv, n_env, has_cpus, then the CPU words.
const HEADER_LEN: usize = 8 * (5 + CPU_WORDS);
/// The launcher refuses larger requests (`MAX_PAYLOAD` in launcher.c);
/// exec itself accepts far less.
const MAX_PAYLOAD: usize = 64 << 20;

/// One command to start.
pub(super) struct Request<'a> {
    /// The path to exec (a shell, or the command's own program).
    pub program: &'a Path,
    /// Its arguments, argv[0] first.
    pub argv: &'a [&'a str],
    /// Set on top of sysdelta's own environment.
    pub env: &'a [(String, String)],
    pub cwd: Option<&'a Path>,
    /// None: the calling thread's affinity.
    pub cpus: Option<&'a [usize]>,
    /// A `cgroup.procs` file the child writes itself into before its exec.
    pub cgroup_procs: Option<&'a Path>,
    /// The child's stdin, stdout and stderr.
    pub stdio: [BorrowedFd<'a>; 3],
}

/// A request in the launcher's format, ready to send.
pub(super) struct Encoded<'a> {
    request: &'a Request<'a>,
    bytes: Vec<u8>,
}

impl<'a> Request<'a> {
    /// Encode the request (done before the run's clock starts: it copies
    /// the whole environment).
    pub(super) fn encode(&'a self) -> io::Result<Encoded<'a>> {
        let mut bytes = vec![0u8; HEADER_LEN];
        fn path(p: Option<&Path>) -> &[u8] {
            p.map_or(&[], |p| p.as_os_str().as_bytes())
        }
        push_c_string(&mut bytes, path(Some(self.program)), "the program")?;
        push_c_string(&mut bytes, path(self.cwd), "the working directory")?;
        push_c_string(&mut bytes, path(self.cgroup_procs), "the cgroup path")?;
        for a in self.argv {
            push_c_string(&mut bytes, a.as_bytes(), "the command")?;
        }
        let n_env = push_environment(&mut bytes, self.env)?;
        let payload_len = bytes.len() - HEADER_LEN;
        if payload_len > MAX_PAYLOAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the command and its environment take {payload_len} bytes, more than exec accepts"),
            ));
        }
        let cpus = match self.cpus {
            Some(list) => cpu_words(list)?,
            None => calling_thread_cpus()?,
        };
        let n_argv = self.argv.len() as u64;
        let header = [MAGIC, payload_len as u64, n_argv, n_env as u64, 1]
            .into_iter()
            .chain(cpus);
        for (slot, word) in bytes.chunks_exact_mut(8).zip(header) {
            slot.copy_from_slice(&word.to_ne_bytes());
        }
        Ok(Encoded {
            request: self,
            bytes,
        })
    }
}

fn push_c_string(out: &mut Vec<u8>, s: &[u8], what: &str) -> io::Result<()> {
    if s.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{what} contains a NUL byte"),
        ));
    }
    out.extend_from_slice(s);
    out.push(0);
    Ok(())
}

/// Append `NAME=VALUE\0` for sysdelta's environment with `overrides` set
/// on top (a later override wins, as with `Command::env`); returns how many.
fn push_environment(out: &mut Vec<u8>, overrides: &[(String, String)]) -> io::Result<usize> {
    let mut n = 0;
    let mut push = |out: &mut Vec<u8>, k: &OsStr, v: &OsStr| {
        let mut entry = Vec::with_capacity(k.len() + v.len() + 1);
        entry.extend_from_slice(k.as_bytes());
        entry.push(b'=');
        entry.extend_from_slice(v.as_bytes());
        n += 1;
        push_c_string(out, &entry, "the environment")
    };
    let overridden = |k: &OsStr| overrides.iter().any(|(o, _)| OsStr::new(o) == k);
    for (k, v) in own_environment().iter().filter(|(k, _)| !overridden(k)) {
        push(out, k, v)?;
    }
    for (i, (k, v)) in overrides.iter().enumerate() {
        if !overrides[i + 1..].iter().any(|(later, _)| later == k) {
            push(out, OsStr::new(k), OsStr::new(v))?;
        }
    }
    Ok(n)
}

/// sysdelta's own environment, read once, at the first run: it does not
/// change after `main`'s first lines (which take the store's secrets out
/// before any thread or child exists), and reading it anew for every run
/// cost two allocations per variable.
fn own_environment() -> &'static [(std::ffi::OsString, std::ffi::OsString)] {
    static OWN: std::sync::OnceLock<Vec<(std::ffi::OsString, std::ffi::OsString)>> =
        std::sync::OnceLock::new();
    OWN.get_or_init(|| std::env::vars_os().collect())
}

fn cpu_words(list: &[usize]) -> io::Result<[u64; CPU_WORDS]> {
    let mut words = [0u64; CPU_WORDS];
    for &c in list {
        if c >= CPU_WORDS * 64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "CPU {c} is beyond the {} a run can be pinned to",
                    CPU_WORDS * 64
                ),
            ));
        }
        words[c / 64] |= 1 << (c % 64);
    }
    Ok(words)
}

/// The calling thread's CPU affinity, which a child it spawned itself
/// would have inherited.
fn calling_thread_cpus() -> io::Result<[u64; CPU_WORDS]> {
    use nix::sched::CpuSet;
    let set = crate::sys::affinity::affinity()?;
    let mut words = [0u64; CPU_WORDS];
    // No allocation: this runs once per spawned command.
    for c in 0..(CPU_WORDS * 64).min(CpuSet::count()) {
        if set.is_set(c).unwrap_or(false) {
            words[c / 64] |= 1 << (c % 64);
        }
    }
    Ok(words)
}

/// The running launcher.
struct Launcher {
    sock: UnixStream,
    pid: libc::pid_t,
}

static LAUNCHER: Mutex<Option<Launcher>> = Mutex::new(None);

/// Start the launcher if none runs, so that the first run's clock does
/// not include its start (an exec from an in-memory file: a millisecond
/// or more, which that run's wall time then carried, and which made the
/// first run of `true` look several times slower than the rest).
pub(super) fn ready() -> io::Result<()> {
    let mut slot = LAUNCHER.lock().unwrap_or_else(|e| e.into_inner());
    if slot.is_none() {
        *slot =
            Some(Launcher::start().map_err(|e| {
                context(e, "cannot start sysdelta's launcher of measured commands")
            })?);
    }
    Ok(())
}

/// Start the command through the launcher (starting the launcher first if
/// need be) and return its pid: a child of this process, in its own
/// process group, that has already exec'd the request's program.
pub(super) fn spawn(req: &Encoded) -> io::Result<libc::pid_t> {
    let mut slot = LAUNCHER.lock().unwrap_or_else(|e| e.into_inner());
    // A launcher that died since the last run (killed by someone) refuses
    // the request whole: start a new one and send it again, once.
    for attempt in 0..2 {
        let launcher = match slot.as_mut() {
            Some(l) => l,
            None => slot.insert(Launcher::start().map_err(|e| {
                context(e, "cannot start sysdelta's launcher of measured commands")
            })?),
        };
        let sent = launcher.send(req);
        let reply = sent.and_then(|()| launcher.receive());
        match reply {
            Ok(reply) => return reply.into_pid(req.request),
            Err(e) => {
                if let Some(l) = slot.take() {
                    l.stop();
                }
                let refused =
                    matches!(e.raw_os_error(), Some(libc::EPIPE) | Some(libc::ECONNRESET));
                if !(refused && attempt == 0) {
                    return Err(context(
                        e,
                        "sysdelta's launcher of measured commands failed",
                    ));
                }
            }
        }
    }
    unreachable!("the second attempt returns")
}

/// Stop the launcher, if one runs, and reap it: its CPU time then counts
/// among this process's children (as the time spent making each child
/// counted before there was a launcher), and it is gone before sysdelta
/// exits. A run after this starts a new one.
pub(super) fn stop() {
    let launcher = LAUNCHER.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(l) = launcher {
        l.stop();
    }
}

fn context(e: io::Error, what: &str) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

impl Launcher {
    /// Exec the embedded launcher with one end of a socket as its stdin,
    /// in its own process group (the terminal's Ctrl-C is not for it).
    fn start() -> io::Result<Launcher> {
        let image = executable_image()?;
        let (ours, theirs) = socket::socketpair(
            socket::AddressFamily::Unix,
            socket::SockType::Stream,
            None,
            socket::SockFlag::SOCK_CLOEXEC,
        )?;
        let child = Command::new(format!("/proc/self/fd/{}", image.as_raw_fd()))
            .arg0("sysdelta-launcher")
            .env_clear()
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| match e.raw_os_error() {
                Some(libc::EACCES) | Some(libc::EPERM) => context(
                    e,
                    "exec from an in-memory file (is sysctl vm.memfd_noexec 2?)",
                ),
                _ => e,
            })?;
        Ok(Launcher {
            sock: UnixStream::from(ours),
            pid: child.id() as libc::pid_t,
        })
    }

    fn send(&mut self, req: &Encoded) -> io::Result<()> {
        let fds = req.request.stdio.map(|fd| fd.as_raw_fd());
        let rights = [ControlMessage::ScmRights(&fds)];
        let sent = loop {
            match socket::sendmsg::<()>(
                self.sock.as_raw_fd(),
                &[IoSlice::new(&req.bytes)],
                &rights,
                MsgFlags::MSG_NOSIGNAL,
                None,
            ) {
                Err(Errno::EINTR) => continue,
                r => break r?,
            }
        };
        // A stream socket may take a long request in parts; the rest
        // carries no descriptors.
        let mut rest = &req.bytes[sent..];
        while !rest.is_empty() {
            match socket::send(self.sock.as_raw_fd(), rest, MsgFlags::MSG_NOSIGNAL) {
                Ok(n) => rest = &rest[n..],
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    fn receive(&mut self) -> io::Result<Reply> {
        let mut buf = [0u8; 16];
        self.sock.read_exact(&mut buf)?;
        let field = |i: usize| i32::from_ne_bytes(buf[4 * i..4 * i + 4].try_into().unwrap());
        Ok(Reply {
            pid: field(0),
            err: field(1),
            stage: field(2),
        })
    }

    /// Kill and reap the launcher (no request is in flight: the caller
    /// holds the lock or has taken the launcher out of it).
    fn stop(self) {
        // SAFETY: plain syscalls on our own child.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            libc::waitpid(self.pid, std::ptr::null_mut(), 0);
        }
    }
}

/// The launcher's executable in an in-memory file, open read-only (some
/// kernels refuse to exec a file open for writing).
fn executable_image() -> io::Result<OwnedFd> {
    let name = c"sysdelta-launcher";
    // SAFETY: plain syscalls with a valid name.
    let fd = unsafe {
        let fd = libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_EXEC);
        // Kernels before 6.3 know no MFD_EXEC: their memfds are executable.
        if fd < 0 && Errno::last() == Errno::EINVAL {
            libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC)
        } else {
            fd
        }
    };
    if fd < 0 {
        return Err(context(io::Error::last_os_error(), "memfd_create"));
    }
    // SAFETY: a descriptor we just created and own.
    let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    file.write_all(IMAGE)?;
    let read_only = std::fs::File::open(format!("/proc/self/fd/{fd}"))?;
    Ok(read_only.into())
}

/// The launcher's answer to one request.
struct Reply {
    pid: i32,
    err: i32,
    stage: i32,
}

impl Reply {
    fn into_pid(self, req: &Request) -> io::Result<libc::pid_t> {
        if self.pid > 0 && self.err == 0 {
            return Ok(self.pid);
        }
        if self.pid > 0 {
            // The child failed before its exec and has exited: reap it.
            // SAFETY: plain syscall on our own child.
            unsafe { libc::waitpid(self.pid, std::ptr::null_mut(), 0) };
        }
        let what = match self.stage {
            1 => "cannot create its process".to_string(),
            2 => "cannot give it a process group".to_string(),
            3 => match req.cpus {
                Some(list) => format!("cannot restrict it to CPUs {list:?}"),
                None => "cannot give it the calling thread's CPU affinity".to_string(),
            },
            4 => format!(
                "cannot join the cgroup through {}",
                req.cgroup_procs.unwrap_or(Path::new("?")).display()
            ),
            5 => format!(
                "cannot change to directory {}",
                req.cwd.unwrap_or(Path::new("?")).display()
            ),
            6 => "cannot redirect its stdin, stdout and stderr".to_string(),
            7 => format!("exec {}", req.program.display()),
            s => format!("launcher stage {s}"),
        };
        Err(context(io::Error::from_raw_os_error(self.err), &what))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

    fn run_true() -> super::super::ProcessResult {
        let spec = super::super::ShellSpec {
            command: "true",
            ..Default::default()
        };
        super::super::run_shell(&spec, &AtomicBool::new(false)).unwrap()
    }

    fn is_zombie(pid: libc::pid_t) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s[s.rfind(')').unwrap() + 2..].starts_with('Z'))
    }

    #[test]
    fn a_killed_launcher_is_replaced_by_the_next_run() {
        assert!(run_true().success());
        let old = {
            // Holding the lock: no other test's request is in flight.
            let slot = LAUNCHER.lock().unwrap_or_else(|e| e.into_inner());
            let pid = slot.as_ref().expect("a run started the launcher").pid;
            // SAFETY: signalling the launcher, our child (not reaped: it
            // stays a zombie until the next run finds it dead).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let t = Instant::now();
            while !is_zombie(pid) {
                assert!(
                    t.elapsed() < Duration::from_secs(10),
                    "launcher survived SIGKILL"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            pid
        };
        assert!(run_true().success());
        let new = LAUNCHER.lock().unwrap().as_ref().unwrap().pid;
        assert_ne!(new, old);
        assert!(
            !std::path::Path::new(&format!("/proc/{old}")).exists(),
            "the dead launcher was not reaped"
        );
    }
}
