//! `select()` over many descriptors, as LMbench's lat_select. One
//! operation: one `select(maxfd+1, readfds, NULL, NULL, {0,0})` over N
//! descriptors (regular files, which are always readable, or listening
//! TCP sockets on loopback, which are not). Microseconds per call, empty
//! loop subtracted.

use super::child::{cvt, Fd};
use super::harness::Bench;
use super::net::tcp_listener;
use super::syscall::cpath;
use super::{us, BenchOut, Env};

struct Select {
    set: libc::fd_set,
    nfds: libc::c_int,
}

impl Bench for Select {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        for _ in 0..iters {
            let mut s = self.set;
            let mut tv = libc::timeval {
                tv_sec: 0,
                tv_usec: 0,
            };
            // SAFETY: valid fd_set and timeval; all fds < FD_SETSIZE.
            cvt(
                unsafe {
                    libc::select(
                        self.nfds,
                        &mut s,
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                        &mut tv,
                    )
                },
                "select",
            )?;
        }
        Ok(iters)
    }
}

/// Raises RLIMIT_NOFILE's soft limit for the measurement, restores on drop.
struct NofileGuard(Option<libc::rlimit>);

impl NofileGuard {
    fn ensure(need: u64) -> NofileGuard {
        // SAFETY: valid rlimit buffers.
        unsafe {
            let mut r: libc::rlimit = std::mem::zeroed();
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 || r.rlim_cur >= need {
                return NofileGuard(None);
            }
            let mut n = r;
            n.rlim_cur = need.min(r.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &n);
            NofileGuard(Some(r))
        }
    }
}

impl Drop for NofileGuard {
    fn drop(&mut self) {
        if let Some(r) = self.0 {
            // SAFETY: restores the saved limit.
            unsafe {
                libc::setrlimit(libc::RLIMIT_NOFILE, &r);
            }
        }
    }
}

pub fn select(env: &Env, n: usize, tcp: bool) -> anyhow::Result<BenchOut> {
    let _lim = NofileGuard::ensure(n as u64 + 256);
    let mut fds = Vec::with_capacity(n);
    let path = env.tmp.join("select-target");
    std::fs::write(&path, b"x")?;
    let c = cpath(&path)?;
    for _ in 0..n {
        let fd = if tcp {
            match tcp_listener() {
                Ok(fd) => fd,
                Err(e) => return Ok(BenchOut::Skip(format!("no TCP loopback: {e}"))),
            }
        } else {
            // SAFETY: valid path.
            Fd(cvt(
                unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) },
                "open",
            )?)
        };
        fds.push(fd);
    }
    let maxfd = fds.iter().map(|f| f.0).max().unwrap_or(0);
    if maxfd >= libc::FD_SETSIZE as i32 {
        return Ok(BenchOut::Skip(format!(
            "descriptor {maxfd} is beyond FD_SETSIZE ({}); too many files open",
            libc::FD_SETSIZE
        )));
    }
    // SAFETY: zeroed fd_set is empty; FD_SET within bounds (checked above).
    let set = unsafe {
        let mut s: libc::fd_set = std::mem::zeroed();
        libc::FD_ZERO(&mut s);
        for f in &fds {
            libc::FD_SET(f.0, &mut s);
        }
        s
    };
    let mut b = Select {
        set,
        nfds: maxfd + 1,
    };
    let what = if tcp {
        "listening TCP sockets"
    } else {
        "file fds"
    };
    Ok(us(
        env.h.measure(&mut b, 0.0)?,
        &format!("select() on {n} {what}"),
    ))
}
