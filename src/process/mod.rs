//! Running one shell command as a measured child process.
//!
//! One measured operation is one execution of `/bin/sh -c COMMAND` (or
//! another shell, or the command's program itself without a shell: see
//! [`program`]): the wall time runs from just before sysdelta asks for the
//! child to the return of `wait4` on it (monotonic clock); user and system
//! CPU time and max RSS are the rusage `wait4` reports for the child and
//! every descendant it waited for. Nothing is subtracted: the shell's own
//! start-up (about a millisecond) is part of every sample alike and cancels
//! in a comparison; the runner measures it on its own so that the report
//! can say how large it is against the command.
//!
//! The child is made by a small helper process, the [`launcher`], and not
//! by sysdelta itself: the kernel counts into a process's max RSS the
//! memory it ran on before its exec, so a child sysdelta made itself could
//! never read below sysdelta's own size. The launcher's children are still
//! sysdelta's own (`CLONE_PARENT`): sysdelta waits for them and signals
//! them directly, and their max RSS is what `/usr/bin/time` would report
//! for the same command.
//!
//! The child runs in its own process group so that a timeout or Ctrl-C can
//! kill the whole tree, and so that the terminal's SIGINT reaches sysdelta
//! (which then tears down cleanly) rather than only the workload. Its
//! stdout and stderr go to in-memory files read once it has exited
//! ([`output`]), and the measuring thread sleeps in a blocking wait for it
//! while one long-lived thread enforces timeouts and cancels
//! ([`watchdog`]): a short run wakes sysdelta once, when the child exits,
//! and no thread, pipe or descriptor is made per run for the watching.

mod launcher;
mod output;
pub use output::open_file as open_output;
pub mod program;
mod watchdog;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use output::{dev_null, OutputFile};
pub use program::{forget_found, Launch, DEFAULT_SHELL};

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

/// Stop the helper process that starts measured commands, and reap it
/// (see launcher.rs); the binary calls this before it exits.
pub fn stop_launcher() {
    launcher::stop();
}

/// How many bytes of stderr are kept for the report of a failed run.
pub const STDERR_TAIL_BYTES: usize = 4096;

#[derive(Clone, Debug, Default)]
pub struct ShellSpec<'a> {
    pub command: &'a str,
    /// A shell given `command` (default `/bin/sh`), or no shell.
    pub launch: Launch<'a>,
    pub env: &'a [(String, String)],
    pub cwd: Option<&'a Path>,
    pub cpus: Option<&'a [usize]>,
    pub cgroup_procs: Option<&'a Path>,
    pub timeout: Option<Duration>,
    pub capture_stdout: bool,
    /// Where the command's output goes besides what is captured (None:
    /// /dev/null).
    pub output: Option<&'a crate::overrides::CommandOutput>,
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
    /// Largest resident set of the child or any waited-for descendant, KiB
    /// (their own: see the module doc).
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

fn tv(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
}

/// Run `sh -c COMMAND` (or as `spec.launch` says) and measure it. Once
/// `cancel` is set, or the timeout has passed, the whole process group is
/// killed (by the watchdog, within one of its ticks).
pub fn run_shell(spec: &ShellSpec, cancel: &AtomicBool) -> std::io::Result<ProcessResult> {
    // Resolved before the clock starts, as a shell would have found the
    // program (its PATH lookup is part of a shell's run, not of this one).
    let (program, argv): (_, Vec<&str>) = match spec.launch {
        Launch::Shell(shell) => (
            program::resolve(shell, spec.env)?,
            vec![shell, "-c", spec.command],
        ),
        Launch::Direct(words) => {
            let first = words.first().ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "the command is empty")
            })?;
            (
                program::resolve(first, spec.env)?,
                words.iter().map(String::as_str).collect(),
            )
        }
    };
    let mut dest = output::Destination::open(spec.output)?;
    let out = if spec.capture_stdout || dest.wants_capture() {
        Some(OutputFile::new("sysdelta-stdout", None)?)
    } else {
        None
    };
    let err = OutputFile::for_stderr()?;
    let null = dev_null()?;
    let request = launcher::Request {
        program: &program,
        argv: &argv,
        env: spec.env,
        cwd: spec.cwd,
        cpus: spec.cpus,
        cgroup_procs: spec.cgroup_procs,
        stdio: [
            null,
            out.as_ref()
                .map_or_else(|| dest.stdout(null), OutputFile::fd),
            dest.stderr(err.fd()),
        ],
    };
    let request = request.encode()?;
    launcher::ready()?;
    let start = Instant::now();
    let pid = launcher::spawn(&request)?;
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
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let stdout = out.map(OutputFile::finish).unwrap_or_default();
    // What was captured for the metrics goes where it was asked to, too.
    if spec.capture_stdout {
        dest.copy(&stdout)?;
    }
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

    /// Touch `mib` MiB, so that this process's peak RSS is at least that.
    fn grow_by(mib: usize) -> Vec<u8> {
        let mut v = vec![0u8; mib << 20];
        for page in v.chunks_mut(4096) {
            page[0] = 1;
        }
        std::hint::black_box(v)
    }

    #[test]
    fn maxrss_is_the_commands_own_not_ours() {
        // The child of a 64 MiB process must not read 64 MiB: a shell
        // running `true` takes about 1.5 MiB (/usr/bin/time).
        let ballast = grow_by(64);
        let r = run("true", None);
        assert!(r.success(), "{r:?}");
        assert!(r.maxrss_kib < 8192, "maxrss of true: {} KiB", r.maxrss_kib);
        drop(ballast);
    }

    #[test]
    fn a_large_environment_does_not_raise_later_runs_maxrss() {
        let before = run("true", None).maxrss_kib;
        // 1.8 MiB of environment (each string within exec's 128 KiB).
        let big: Vec<(String, String)> = (0..15)
            .map(|i| (format!("BIG{i}"), "x".repeat(120 << 10)))
            .collect();
        let spec = ShellSpec {
            command: "true",
            env: &big,
            ..Default::default()
        };
        let r = run_shell(&spec, &AtomicBool::new(false)).unwrap();
        assert!(r.success() && r.maxrss_kib > before + 1024, "{r:?}");
        let after = run("true", None).maxrss_kib;
        assert!(
            after < before + 400,
            "before {before} KiB, after {after} KiB"
        );
    }

    #[test]
    fn environment_and_directory_reach_the_child() {
        let dir = tempfile::tempdir().unwrap();
        let env = [
            ("SYSDELTA_T".to_string(), "first".to_string()),
            ("SYSDELTA_T".to_string(), "second".to_string()),
        ];
        let spec = ShellSpec {
            command: "echo \"$SYSDELTA_T $(pwd) ${PATH:+has-path}\"",
            env: &env,
            cwd: Some(dir.path()),
            capture_stdout: true,
            ..Default::default()
        };
        let r = run_shell(&spec, &AtomicBool::new(false)).unwrap();
        let canonical = dir.path().canonicalize().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&r.stdout),
            format!("second {} has-path\n", canonical.display())
        );
    }

    #[test]
    fn a_failure_before_exec_names_what_failed() {
        let missing = Path::new("/nonexistent-sysdelta-dir");
        let spec = ShellSpec {
            command: "true",
            cwd: Some(missing),
            ..Default::default()
        };
        let e = run_shell(&spec, &AtomicBool::new(false)).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot change to directory /nonexistent-sysdelta-dir: "),
            "{e}"
        );
        let spec = ShellSpec {
            command: "true",
            cgroup_procs: Some(Path::new("/nonexistent-sysdelta-cgroup/cgroup.procs")),
            ..Default::default()
        };
        let e = run_shell(&spec, &AtomicBool::new(false)).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot join the cgroup through /nonexistent-sysdelta-cgroup/"),
            "{e}"
        );
        // The failed children were reaped, and runs go on.
        assert!(run("true", None).success());
    }

    #[test]
    fn a_direct_launch_execs_the_program_with_its_words() {
        let words: Vec<String> = ["sh", "-c", "echo \"$0|$1\"", "x", "a b $HOME"]
            .map(String::from)
            .to_vec();
        let spec = ShellSpec {
            command: "(shown only)",
            launch: Launch::Direct(&words),
            capture_stdout: true,
            ..Default::default()
        };
        let r = run_shell(&spec, &AtomicBool::new(false)).unwrap();
        assert_eq!(String::from_utf8_lossy(&r.stdout), "x|a b $HOME\n");
        let missing = ["sysdelta-no-such-program".to_string()];
        let spec = ShellSpec {
            launch: Launch::Direct(&missing),
            ..Default::default()
        };
        let e = run_shell(&spec, &AtomicBool::new(false)).unwrap_err();
        assert_eq!(e.to_string(), "'sysdelta-no-such-program' is not on PATH");
        // Another shell, found on PATH, is given the command with -c.
        let spec = ShellSpec {
            command: "echo $0",
            launch: Launch::Shell("sh"),
            capture_stdout: true,
            ..Default::default()
        };
        let r = run_shell(&spec, &AtomicBool::new(false)).unwrap();
        assert_eq!(String::from_utf8_lossy(&r.stdout), "sh\n");
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
