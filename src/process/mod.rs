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
//! stdout and stderr go to in-memory files read once it has exited
//! ([`output`]), and the measuring thread sleeps in a blocking wait for it
//! while one long-lived thread enforces timeouts and cancels
//! ([`watchdog`]): a short run wakes sysdelta once, when the child exits,
//! and no thread, pipe or descriptor is made per run for the watching.

mod output;
mod watchdog;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use output::{null_stdio, OutputFile};

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

/// Run `sh -c COMMAND` and measure it. Once `cancel` is set, or the timeout
/// has passed, the whole process group is killed (by the watchdog, within
/// one of its ticks).
pub fn run_shell(spec: &ShellSpec, cancel: &AtomicBool) -> std::io::Result<ProcessResult> {
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg(spec.command);
    cmd.envs(spec.env.iter().map(|(k, v)| (k, v)));
    if let Some(d) = spec.cwd {
        cmd.current_dir(d);
    }
    cmd.stdin(null_stdio());
    let out = if spec.capture_stdout {
        let f = OutputFile::new("sysdelta-stdout", None)?;
        cmd.stdout(f.stdio()?);
        Some(f)
    } else {
        cmd.stdout(null_stdio());
        None
    };
    let err = OutputFile::for_stderr()?;
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
    // SAFETY: `watch` is ended below (or dropped on unwinding), never
    // leaked, while `cancel` and `err` live on.
    let watch =
        match unsafe { watchdog::watch(pid, deadline, cancel, err.fd(), STDERR_TAIL_BYTES as u64) }
        {
            Ok(w) => w,
            Err(e) => {
                // SAFETY: plain syscalls on our own child and its group.
                unsafe {
                    libc::kill(-pid, libc::SIGKILL);
                    libc::waitpid(pid, std::ptr::null_mut(), 0);
                }
                std::mem::forget(child);
                CURRENT_GROUP.store(0, Ordering::SeqCst);
                return Err(e);
            }
        };
    // Sleep until the child has exited (the watchdog kills it on a timeout
    // or a cancel); WNOWAIT leaves it unreaped, so its pid stays ours until
    // the watch has ended.
    loop {
        // SAFETY: siginfo_t is plain data; waitid on our own child.
        let r = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
    }
    let (timed_out, cancelled) = watch.end();
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
    // std's Child must not try to reap a pid we already reaped.
    std::mem::forget(child);
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let stdout = out.map(OutputFile::finish).unwrap_or_default();
    let stderr_tail = String::from_utf8_lossy(&err.finish()).into_owned();
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
    fn a_cancel_kills_the_run_within_a_watchdog_tick() {
        let cancel = AtomicBool::new(false);
        let r = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(100));
                cancel.store(true, Ordering::SeqCst);
            });
            let spec = ShellSpec {
                command: "sleep 5",
                timeout: Some(Duration::from_secs(30)),
                ..Default::default()
            };
            run_shell(&spec, &cancel).unwrap()
        });
        assert!(r.cancelled && !r.timed_out, "{r:?}");
        assert_eq!(r.failure_reason().as_deref(), Some("interrupted"));
        assert!(r.wall < Duration::from_secs(2), "{:?}", r.wall);
    }

    #[test]
    fn a_timeout_works_after_the_watchdog_parked() {
        assert!(run("true", None).success());
        // Nothing to watch for longer than PARK_AFTER: the watchdog parks
        // (unless another test keeps it busy), and must wake for this run.
        std::thread::sleep(Duration::from_millis(1300));
        let r = run("sleep 5", Some(Duration::from_millis(100)));
        assert!(r.timed_out && r.wall < Duration::from_secs(2), "{r:?}");
    }

    #[test]
    fn concurrent_runs_keep_their_own_timeouts() {
        let (short, long) = std::thread::scope(|s| {
            let short = s.spawn(|| run("sleep 3", Some(Duration::from_millis(150))));
            let long = s.spawn(|| run("sleep 0.4", Some(Duration::from_secs(20))));
            (short.join().unwrap(), long.join().unwrap())
        });
        assert!(
            short.timed_out && short.wall < Duration::from_secs(2),
            "{short:?}"
        );
        assert!(long.success(), "{long:?}");
        assert!(long.wall >= Duration::from_millis(400), "{long:?}");
    }

    #[test]
    fn megabytes_of_stderr_keep_their_tail() {
        // Past TRIM_STDERR_AT, with the child alive long enough for the
        // watchdog's ticks to punch the head out while it runs.
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
