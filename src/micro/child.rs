//! Forked helper processes that are always killed and reaped.
//!
//! Benchmarks that need a peer (echo servers, ring members, semaphore
//! sleepers) fork it with [`Child::spawn`]. The child runs a closure that
//! must only make raw system calls (no allocation, no locks: the parent may
//! be multi-threaded), then `_exit`s. Dropping a [`Child`] sends SIGKILL and
//! waits for it, so an error, a cancel or a panic in the parent never leaves
//! a process behind; `PR_SET_PDEATHSIG` covers the parent being killed.

use std::io;

/// A forked child process, killed and reaped on drop.
#[derive(Debug)]
pub struct Child {
    pid: libc::pid_t,
    reaped: bool,
}

/// A CPU set prepared before `fork` so the child only has to make one call.
#[derive(Clone, Copy)]
pub struct CpuMask(nix::sched::CpuSet);

impl CpuMask {
    pub fn one(cpu: usize) -> CpuMask {
        CpuMask(crate::sys::affinity::cpu_set(&[cpu]))
    }

    /// Apply to the calling thread (in a child: the whole child).
    pub fn apply(&self) -> io::Result<()> {
        crate::sys::affinity::set_affinity(0, &self.0)
    }
}

impl Child {
    /// Fork a child that runs `f` pinned to `cpu` (if given) and exits with
    /// its return value. `f` must only make raw system calls.
    pub fn spawn(cpu: Option<CpuMask>, f: impl FnOnce() -> i32) -> io::Result<Child> {
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the child only calls async-signal-safe functions and the
        // closure (documented contract) before `_exit`.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            // SAFETY: raw syscalls only, then _exit (no destructors, no atexit).
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                if let Some(m) = cpu {
                    if m.apply().is_err() {
                        libc::_exit(2);
                    }
                }
                let code = f();
                libc::_exit(code);
            }
        }
        Ok(Child { pid, reaped: false })
    }

    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Non-blocking wait: Some(exit code or 128+signal) once it has exited.
    pub fn try_wait(&mut self) -> io::Result<Option<i32>> {
        if self.reaped {
            return Ok(None);
        }
        let mut st: libc::c_int = 0;
        // SAFETY: st is a valid out pointer; pid is our child.
        let r = unsafe { libc::waitpid(self.pid, &mut st, libc::WNOHANG) };
        if r == self.pid {
            self.reaped = true;
            return Ok(Some(decode_status(st)));
        }
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
        Ok(None)
    }

    /// Wait for a normal exit; returns the exit code (or 128+signal).
    pub fn wait(mut self) -> io::Result<i32> {
        let st = wait_pid(self.pid)?;
        self.reaped = true;
        Ok(decode_status(st))
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.reaped {
            // SAFETY: the pid is our own unreaped child, so it cannot have
            // been recycled for another process.
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
            }
            let _ = wait_pid(self.pid);
            self.reaped = true;
        }
    }
}

/// waitpid, retried on EINTR; returns the raw status.
pub fn wait_pid(pid: libc::pid_t) -> io::Result<libc::c_int> {
    let mut st: libc::c_int = 0;
    loop {
        // SAFETY: st is a valid out pointer.
        let r = unsafe { libc::waitpid(pid, &mut st, 0) };
        if r == pid {
            return Ok(st);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// Exit code, or 128 + signal number for a killed process.
pub fn decode_status(st: libc::c_int) -> i32 {
    if libc::WIFEXITED(st) {
        libc::WEXITSTATUS(st)
    } else if libc::WIFSIGNALED(st) {
        128 + libc::WTERMSIG(st)
    } else {
        -1
    }
}

/// Raw full write for children: loop on short writes, retry EINTR.
/// Returns false on error or EOF.
pub fn raw_write_all(fd: libc::c_int, buf: &[u8]) -> bool {
    let mut off = 0;
    while off < buf.len() {
        // SAFETY: the pointer and length describe a live slice.
        let r = unsafe { libc::write(fd, buf[off..].as_ptr().cast(), buf.len() - off) };
        if r > 0 {
            off += r as usize;
        } else if r < 0 && errno() == libc::EINTR {
            continue;
        } else {
            return false;
        }
    }
    true
}

/// Raw full read: loop on short reads, retry EINTR. False on error or EOF.
pub fn raw_read_exact(fd: libc::c_int, buf: &mut [u8]) -> bool {
    let mut off = 0;
    while off < buf.len() {
        // SAFETY: the pointer and length describe a live mutable slice.
        let r = unsafe { libc::read(fd, buf[off..].as_mut_ptr().cast(), buf.len() - off) };
        if r > 0 {
            off += r as usize;
        } else if r < 0 && errno() == libc::EINTR {
            continue;
        } else {
            return false;
        }
    }
    true
}

/// The calling thread's errno.
pub fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Check a libc return value: negative means failure with errno.
pub fn cvt(r: libc::c_int, what: &str) -> anyhow::Result<libc::c_int> {
    if r < 0 {
        Err(anyhow::anyhow!("{what}: {}", io::Error::last_os_error()))
    } else {
        Ok(r)
    }
}

/// An owned file descriptor closed on drop (thin, for raw-fd benchmarks).
#[derive(Debug)]
pub struct Fd(pub libc::c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        if self.0 >= 0 {
            // SAFETY: we own this descriptor.
            unsafe {
                libc::close(self.0);
            }
        }
    }
}

/// A pipe: (read end, write end).
pub fn pipe() -> anyhow::Result<(Fd, Fd)> {
    let mut p = [0; 2];
    // SAFETY: p has room for two descriptors.
    cvt(
        unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) },
        "pipe",
    )?;
    Ok((Fd(p[0]), Fd(p[1])))
}
