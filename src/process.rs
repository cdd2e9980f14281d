//! Running one shell command as a measured child process.
//!
//! One measured operation is one execution of `/bin/sh -c COMMAND`: the wall
//! time runs from just before `fork` to the return of `wait4` on the shell
//! (monotonic clock); user and system CPU time and max RSS are the rusage
//! `wait4` reports for the shell and every descendant it waited for. Nothing
//! is subtracted: the shell's own start-up (about a millisecond) is part of
//! every sample alike and cancels in a comparison.
//!
//! The child runs in its own process group so that a timeout or Ctrl-C can
//! kill the whole tree, and so that the terminal's SIGINT reaches sysdelta
//! (which then tears down cleanly) rather than only the workload. One
//! thread watches the output pipes, the child's pidfd, the timeout and the
//! cancel flag with `poll`: no thread is started per run.

use std::os::fd::{IntoRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Process group of the measured child in flight (0: none), so that an
/// abort on the second signal can kill it before sysdelta exits.
pub static CURRENT_GROUP: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Kill the process group of the child in flight, if any.
pub fn kill_current_group() {
    let g = CURRENT_GROUP.load(Ordering::SeqCst);
    if g > 0 {
        // SAFETY: plain syscall on a process group we created.
        unsafe { libc::kill(-g, libc::SIGKILL) };
    }
}

/// How many bytes of stderr are kept for the report of a failed run.
pub const STDERR_TAIL_BYTES: usize = 4096;

#[derive(Clone, Debug, Default)]
pub struct ShellSpec<'a> {
    pub command: &'a str,
    pub env: &'a [(String, String)],
    pub cwd: Option<&'a Path>,
    pub cpus: Option<&'a [usize]>,
    pub cgroup_procs: Option<&'a Path>,
    pub timeout: Option<Duration>,
    pub capture_stdout: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

#[derive(Clone, Debug)]
pub struct ProcessResult {
    pub exit: Exit,
    pub wall: Duration,
    pub user: Duration,
    pub sys: Duration,
    /// Largest resident set of the child or any waited-for descendant, KiB.
    pub maxrss_kib: u64,
    pub stdout: Vec<u8>,
    pub stderr_tail: String,
    pub timed_out: bool,
    pub cancelled: bool,
}

impl ProcessResult {
    pub fn success(&self) -> bool {
        self.exit == Exit::Code(0) && !self.timed_out && !self.cancelled
    }

    /// One line saying why a run failed, or None when it succeeded.
    pub fn failure_reason(&self) -> Option<String> {
        if self.cancelled {
            Some("interrupted".into())
        } else if self.timed_out {
            Some(format!("timed out after {:.1}s", self.wall.as_secs_f64()))
        } else {
            match self.exit {
                Exit::Code(0) => None,
                Exit::Code(c) => Some(format!("exit status {c}")),
                Exit::Signal(s) => Some(format!("killed by signal {s}")),
            }
        }
    }
}

/// Restricts the calling thread to a CPU list until dropped.
struct AffinityGuard {
    saved: libc::cpu_set_t,
}

impl AffinityGuard {
    fn restrict(cpus: &[usize]) -> std::io::Result<AffinityGuard> {
        // SAFETY: cpu_set_t is plain data; the calls get valid pointers and sizes.
        unsafe {
            let mut saved: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut saved) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &c in cpus {
                libc::CPU_SET(c, &mut set);
            }
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(AffinityGuard { saved })
        }
    }
}

impl Drop for AffinityGuard {
    fn drop(&mut self) {
        // SAFETY: restores the mask read in `restrict`.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.saved);
        }
    }
}

fn tv(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
}

/// A child's output pipe, read without blocking; keeps at most `keep`
/// bytes (the last ones).
struct Stream {
    fd: RawFd,
    data: Vec<u8>,
    keep: usize,
}

impl Stream {
    fn new(fd: Option<RawFd>, keep: usize) -> Stream {
        if let Some(fd) = fd {
            // SAFETY: our own pipe end.
            unsafe {
                let fl = libc::fcntl(fd, libc::F_GETFL);
                libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
            }
        }
        Stream {
            fd: fd.unwrap_or(-1),
            data: Vec::new(),
            keep,
        }
    }

    /// Read what is there now; close on end of file.
    fn drain(&mut self) {
        let mut buf = [0u8; 16384];
        while self.fd >= 0 {
            // SAFETY: reading into a live buffer of its length.
            let n = unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n > 0 {
                self.data.extend_from_slice(&buf[..n as usize]);
                if self.data.len() > self.keep {
                    let cut = self.data.len() - self.keep / 2;
                    self.data.drain(..cut.min(self.data.len()));
                }
            } else if n == 0 {
                self.close();
            } else {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    if e.kind() != std::io::ErrorKind::WouldBlock {
                        self.close();
                    }
                    break;
                }
            }
        }
    }

    /// After the child exited: read to end of file (the group was killed,
    /// so the write ends close), waiting at most a second for a straggler.
    fn finish(&mut self) {
        let until = Instant::now() + Duration::from_secs(1);
        while self.fd >= 0 && Instant::now() < until {
            self.drain();
            if self.fd >= 0 {
                let mut p = libc::pollfd {
                    fd: self.fd,
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                unsafe { libc::poll(&mut p, 1, 100) };
            }
        }
        self.close();
    }

    fn close(&mut self) {
        if self.fd >= 0 {
            // SAFETY: our own descriptor, closed once.
            unsafe { libc::close(self.fd) };
            self.fd = -1;
        }
    }
}

/// Run `sh -c COMMAND` and measure it. `cancel` is polled while it runs; when
/// set, or when the timeout passes, the whole process group is killed.
pub fn run_shell(spec: &ShellSpec, cancel: &AtomicBool) -> std::io::Result<ProcessResult> {
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg(spec.command);
    cmd.envs(spec.env.iter().map(|(k, v)| (k, v)));
    if let Some(d) = spec.cwd {
        cmd.current_dir(d);
    }
    cmd.stdin(Stdio::null());
    cmd.stdout(if spec.capture_stdout {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    cmd.stderr(Stdio::piped());
    cmd.process_group(0);
    let cgroup: Option<std::ffi::CString> = spec
        .cgroup_procs
        .map(|p| std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).expect("no NUL in path"));
    // A pre_exec closure makes std fork instead of posix_spawn, which costs
    // time on every run: install one only when a cgroup must be joined
    // before exec (so that no descendant escapes the limit).
    if let Some(path) = cgroup {
        // SAFETY: the closure only calls async-signal-safe functions (open,
        // write, close) on data prepared before fork.
        unsafe {
            cmd.pre_exec(move || {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // "0" means the writing process itself.
                let ok = libc::write(fd, b"0\n".as_ptr().cast(), 2) == 2;
                libc::close(fd);
                if !ok {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    // CPU affinity is inherited: restrict this thread while it spawns the
    // child, then restore it.
    let _affinity = match spec.cpus {
        Some(cpus) => Some(AffinityGuard::restrict(cpus)?),
        None => None,
    };

    let start = Instant::now();
    let mut child = cmd.spawn()?;
    drop(_affinity);
    let pid = child.id() as libc::pid_t;
    CURRENT_GROUP.store(pid, Ordering::SeqCst);
    let mut out = Stream::new(child.stdout.take().map(IntoRawFd::into_raw_fd), usize::MAX);
    let mut err = Stream::new(
        child.stderr.take().map(IntoRawFd::into_raw_fd),
        2 * STDERR_TAIL_BYTES,
    );
    let deadline = spec.timeout.map(|t| start + t);
    // SAFETY: pidfd_open on our own child; -1 (old kernel) falls back to
    // polling waitpid every 10 ms.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;

    // One thread does everything: wait for output, for the child's exit
    // (its pidfd becomes readable), for the timeout and for a cancel, so no
    // thread is started per run.
    let (mut timed_out, mut cancelled, mut killed) = (false, false, false);
    loop {
        let mut fds: Vec<libc::pollfd> = [out.fd, err.fd, pidfd]
            .iter()
            .filter(|fd| **fd >= 0)
            .map(|&fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let wait_ms = match (pidfd >= 0, deadline) {
            (true, Some(d)) => d
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(50)),
            (true, None) => Duration::from_millis(50),
            (false, _) => Duration::from_millis(10),
        };
        // SAFETY: fds is a valid array of pollfd for its length.
        unsafe {
            libc::poll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                wait_ms.as_millis() as i32,
            )
        };
        out.drain();
        err.drain();
        let exited = if pidfd >= 0 {
            fds.iter().any(|p| p.fd == pidfd && p.revents != 0)
        } else {
            // SAFETY: siginfo_t is plain data; waitid with WNOWAIT peeks at
            // our child's state without reaping it; si_pid is valid after it.
            unsafe {
                let mut info: libc::siginfo_t = std::mem::zeroed();
                let r = libc::waitid(
                    libc::P_PID,
                    pid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
                );
                r == 0 && info.si_pid() == pid
            }
        };
        if exited {
            break;
        }
        if !killed {
            cancelled = cancel.load(Ordering::SeqCst);
            timed_out = !cancelled && deadline.is_some_and(|d| Instant::now() >= d);
            if cancelled || timed_out {
                // SAFETY: plain syscall on our child's process group.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
                killed = true;
            }
        }
    }
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = loop {
        // SAFETY: pid is our child; status and ru are valid out-pointers.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if rc < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        break rc;
    };
    let wall = start.elapsed();
    // Anything the shell left behind in its group belongs to the run: kill
    // it so it cannot hold our pipes open or disturb the next run.
    // SAFETY: plain syscall on our child's process group.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    CURRENT_GROUP.store(0, Ordering::SeqCst);
    out.finish();
    err.finish();
    if pidfd >= 0 {
        // SAFETY: our own descriptor.
        unsafe { libc::close(pidfd) };
    }
    // std's Child must not try to reap a pid we already reaped.
    std::mem::forget(child);
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let stdout = out.data;
    let mut tail = err.data;
    if tail.len() > STDERR_TAIL_BYTES {
        tail.drain(..tail.len() - STDERR_TAIL_BYTES);
    }
    let stderr_tail = String::from_utf8_lossy(&tail).into_owned();
    let exit = if libc::WIFEXITED(status) {
        Exit::Code(libc::WEXITSTATUS(status))
    } else {
        Exit::Signal(libc::WTERMSIG(status))
    };
    Ok(ProcessResult {
        exit,
        wall,
        user: tv(ru.ru_utime),
        sys: tv(ru.ru_stime),
        maxrss_kib: ru.ru_maxrss.max(0) as u64,
        stdout,
        stderr_tail,
        timed_out,
        cancelled,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cmd: &str, timeout: Option<Duration>) -> ProcessResult {
        let spec = ShellSpec {
            command: cmd,
            timeout,
            capture_stdout: true,
            ..Default::default()
        };
        run_shell(&spec, &AtomicBool::new(false)).unwrap()
    }

    #[test]
    fn exit_status_stdout_and_stderr_are_reported() {
        let r = run("echo out; echo err >&2; exit 3", None);
        assert_eq!(r.exit, Exit::Code(3));
        assert_eq!(r.stdout, b"out\n");
        assert_eq!(r.stderr_tail, "err\n");
        assert_eq!(r.failure_reason().unwrap(), "exit status 3");
    }

    #[test]
    fn cpu_time_is_measured_for_descendants() {
        let r = run("i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done", None);
        assert!(r.success());
        assert!(r.user + r.sys > Duration::from_millis(20), "{r:?}");
        assert!(r.wall >= r.user.min(r.wall));
        assert!(r.maxrss_kib > 0);
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        let r = run("sleep 5 & sleep 5; wait", Some(Duration::from_millis(200)));
        assert!(r.timed_out);
        assert!(!r.success());
        assert!(r.wall < Duration::from_secs(3), "{:?}", r.wall);
    }

    #[test]
    fn cpu_restriction_reaches_the_child_and_not_us() {
        let before = std::fs::read_to_string("/proc/self/status").unwrap();
        let spec = ShellSpec {
            command: "grep Cpus_allowed_list /proc/self/status",
            cpus: Some(&[0]),
            capture_stdout: true,
            ..Default::default()
        };
        let r = run_shell(&spec, &AtomicBool::new(false)).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&r.stdout).split_whitespace().last(),
            Some("0")
        );
        assert_eq!(
            std::fs::read_to_string("/proc/self/status")
                .unwrap()
                .lines()
                .find(|l| l.starts_with("Cpus_allowed_list")),
            before.lines().find(|l| l.starts_with("Cpus_allowed_list"))
        );
    }

    #[test]
    fn stderr_tail_keeps_the_end() {
        let r = run(
            "i=0; while [ $i -lt 3000 ]; do echo line$i >&2; i=$((i+1)); done",
            None,
        );
        assert!(r.stderr_tail.len() <= STDERR_TAIL_BYTES);
        assert!(r.stderr_tail.ends_with("line2999\n"));
    }
}
