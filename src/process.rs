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
//! (which then tears down cleanly) rather than only the workload. Its
//! stdout and stderr go to in-memory files that are read once it has
//! exited, so one thread watches only the child's pidfd, the timeout and the
//! cancel flag with `poll`: no thread is started per run, and a short run
//! wakes sysdelta once, when the child exits.

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

thread_local! {
    /// An empty stderr file left by the last run on this thread.
    static SPARE_STDERR: std::cell::RefCell<Option<std::fs::File>> =
        const { std::cell::RefCell::new(None) };
    /// /dev/null, opened once: a `dup` per run instead of a path lookup.
    static DEV_NULL: Option<std::fs::File> = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .ok();
}

/// Stdin or a discarded stdout: /dev/null.
fn null_stdio() -> Stdio {
    DEV_NULL
        .with(|f| f.as_ref().and_then(|f| f.try_clone().ok()))
        .map_or_else(Stdio::null, Stdio::from)
}

/// Once stderr has grown past this, all but its tail is punched out while
/// the run lasts, so a chatty child cannot fill memory.
const TRIM_STDERR_AT: u64 = 1 << 20;

/// A child's stdout or stderr: an anonymous in-memory file (memfd; an
/// unlinked temporary file where memfd is unavailable) that the child
/// writes and sysdelta reads once the child has exited.
///
/// Why not a pipe: a pipe needs a reader while the child runs, and its
/// hang-up at exit woke sysdelta a second time per run, just before the
/// exit itself did: one context switch more than a plain `wait4` loop, and
/// most of sysdelta's per-run overhead against hyperfine. A file needs no
/// reader, cannot be held open against us by a descendant that outlives
/// the run, and does not slow a chatty child with a full pipe.
struct OutputFile {
    file: std::fs::File,
    /// Keep only the last this many bytes (stderr); None keeps all (stdout).
    keep: Option<u64>,
    /// Bytes from the start already punched out.
    punched: u64,
}

impl OutputFile {
    fn new(name: &str, keep: Option<u64>) -> std::io::Result<OutputFile> {
        let file = match nix::sys::memfd::memfd_create(name, nix::sys::memfd::MFdFlags::MFD_CLOEXEC)
        {
            Ok(fd) => std::fs::File::from(fd),
            Err(_) => tempfile::tempfile()?,
        };
        Ok(OutputFile {
            file,
            keep,
            punched: 0,
        })
    }

    /// The stderr file of a run: the one an earlier run on this thread
    /// left empty, or a new one.
    fn for_stderr() -> std::io::Result<OutputFile> {
        match SPARE_STDERR.with(|s| s.borrow_mut().take()) {
            Some(file) => Ok(OutputFile {
                file,
                keep: Some(STDERR_TAIL_BYTES as u64),
                punched: 0,
            }),
            None => OutputFile::new("sysdelta-stderr", Some(STDERR_TAIL_BYTES as u64)),
        }
    }

    /// Keep this file for the next run's stderr if nothing was written to
    /// it (the common case: a file costs a memfd_create and a close).
    fn recycle(self) {
        if self.len() == 0 {
            SPARE_STDERR.with(|s| *s.borrow_mut() = Some(self.file));
        }
    }

    /// The child's end: a second descriptor of the same file.
    fn stdio(&self) -> std::io::Result<Stdio> {
        Ok(Stdio::from(self.file.try_clone()?))
    }

    fn len(&self) -> u64 {
        self.file.metadata().map(|m| m.len()).unwrap_or(0)
    }

    /// While the child runs: free all but the tail that will be kept, in
    /// whole pages, once the file has grown past [`TRIM_STDERR_AT`].
    fn trim(&mut self) {
        let Some(keep) = self.keep else { return };
        let len = self.len();
        if len < TRIM_STDERR_AT {
            return;
        }
        let upto = len.saturating_sub(keep) & !4095;
        if upto > self.punched {
            use nix::fcntl::{fallocate, FallocateFlags};
            // Best effort: a file system without hole punching just keeps
            // the bytes until the run ends.
            if fallocate(
                &self.file,
                FallocateFlags::FALLOC_FL_PUNCH_HOLE | FallocateFlags::FALLOC_FL_KEEP_SIZE,
                self.punched as libc::off_t,
                (upto - self.punched) as libc::off_t,
            )
            .is_ok()
            {
                self.punched = upto;
            }
        }
    }

    /// After the child exited: what it wrote (its last `keep` bytes).
    fn contents(&self) -> Vec<u8> {
        use std::os::unix::fs::FileExt;
        let len = self.len();
        let from = self.keep.map_or(0, |k| len.saturating_sub(k));
        let mut buf = vec![0u8; (len - from) as usize];
        // A descendant that survived the group kill may still be writing:
        // what it added after `len` is not part of the run.
        match self.file.read_exact_at(&mut buf, from) {
            Ok(()) => buf,
            Err(_) => Vec::new(),
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
    cmd.stdin(null_stdio());
    let mut out = if spec.capture_stdout {
        let f = OutputFile::new("sysdelta-stdout", None)?;
        cmd.stdout(f.stdio()?);
        Some(f)
    } else {
        cmd.stdout(null_stdio());
        None
    };
    let mut err = OutputFile::for_stderr()?;
    cmd.stderr(err.stdio()?);
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
    let child = cmd.spawn()?;
    drop(_affinity);
    // The child's ends of the output files: close ours now.
    drop(cmd);
    let pid = child.id() as libc::pid_t;
    CURRENT_GROUP.store(pid, Ordering::SeqCst);
    let deadline = spec.timeout.map(|t| start + t);
    // SAFETY: pidfd_open on our own child; -1 (old kernel) falls back to
    // polling waitpid every 10 ms.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;

    // Sleep until the child exits (its pidfd becomes readable): that is the
    // only wake-up of a short run. A long run also wakes every 50 ms to
    // check the timeout and the cancel flag and to bound stderr.
    let (mut timed_out, mut cancelled, mut killed) = (false, false, false);
    loop {
        let mut p = libc::pollfd {
            fd: pidfd,
            events: libc::POLLIN,
            revents: 0,
        };
        let wait = match (pidfd >= 0, deadline) {
            (true, Some(d)) => d
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(50)),
            (true, None) => Duration::from_millis(50),
            (false, _) => Duration::from_millis(10),
        };
        // SAFETY: one valid pollfd (poll ignores it when fd is -1).
        unsafe { libc::poll(&mut p, 1, wait.as_millis() as i32) };
        let exited = if pidfd >= 0 {
            p.revents != 0
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
        err.trim();
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
    // it so it cannot disturb the next run.
    // SAFETY: plain syscall on our child's process group.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    CURRENT_GROUP.store(0, Ordering::SeqCst);
    if pidfd >= 0 {
        // SAFETY: our own descriptor.
        unsafe { libc::close(pidfd) };
    }
    // std's Child must not try to reap a pid we already reaped.
    std::mem::forget(child);
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let stdout = out.take().map(|f| f.contents()).unwrap_or_default();
    let stderr_tail = String::from_utf8_lossy(&err.contents()).into_owned();
    err.recycle();
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
    fn megabytes_of_stderr_keep_their_tail() {
        // Past TRIM_STDERR_AT, with the child alive long enough for the
        // 50 ms wake-ups to punch the head out while it runs.
        let r = run(
            "head -c 4194304 /dev/zero | tr '\\0' x >&2; sleep 0.2; echo last >&2",
            None,
        );
        assert!(r.success(), "{r:?}");
        assert_eq!(r.stderr_tail.len(), STDERR_TAIL_BYTES);
        assert!(
            r.stderr_tail.ends_with("xxlast\n"),
            "{}",
            &r.stderr_tail[4000..]
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
