//! Signal costs: handler installation, delivery to a handler, and the
//! protection fault (a write to a read-only page turned into SIGSEGV),
//! each defined as LMbench 3's lat_sig defines it (install, catch, prot):
//!
//! * install: `sigaction(SIGUSR1, &act, &old)`, the old action read back
//!   (passing NULL skips that copy-out and measured 0.76x LMbench).
//! * handle: `kill(getpid(), SIGUSR1)` + delivery + handler + sigreturn,
//!   minus the cost of `kill(getpid(), 0)` (the send without delivery).
//! * prot fault: store to a read-only shared file page, SIGSEGV delivery,
//!   handler and sigreturn, the store repeating (a plain handler with no
//!   flags, as lat_sig's), minus the handle figure above: the fault path
//!   alone.
//!
//! Values are microseconds per operation with the empty-loop cost and the
//! named figure subtracted. Previous handlers are restored afterwards.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::child::cvt;
use super::harness::Bench;
use super::{us, BenchOut, Env};

static HANDLED: AtomicU64 = AtomicU64::new(0);

extern "C" fn count_handler(_: libc::c_int) {
    HANDLED.fetch_add(1, Ordering::Relaxed);
}

fn action(handler: usize, flags: libc::c_int) -> libc::sigaction {
    // SAFETY: zeroed sigaction is valid; fields set below.
    let mut a: libc::sigaction = unsafe { std::mem::zeroed() };
    a.sa_sigaction = handler;
    a.sa_flags = flags;
    // SAFETY: valid sigset pointer.
    unsafe { libc::sigemptyset(&mut a.sa_mask) };
    a
}

/// Restores a signal's previous disposition on drop.
struct Restore {
    sig: libc::c_int,
    old: libc::sigaction,
}

impl Restore {
    fn install(sig: libc::c_int, a: &libc::sigaction) -> anyhow::Result<Restore> {
        // SAFETY: zeroed out buffer, valid action.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        cvt(unsafe { libc::sigaction(sig, a, &mut old) }, "sigaction")?;
        Ok(Restore { sig, old })
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        // SAFETY: restores the saved action.
        unsafe {
            libc::sigaction(self.sig, &self.old, std::ptr::null_mut());
        }
    }
}

/// One operation: `sigaction(SIGUSR1, &act, &old)` (install a handler and
/// read the previous one back, as LMbench).
struct Install(libc::sigaction);
impl Bench for Install {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        // SAFETY: zeroed sigaction is a valid out buffer.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        for _ in 0..iters {
            // SAFETY: valid action and out buffer.
            cvt(
                unsafe { libc::sigaction(libc::SIGUSR1, &self.0, &mut old) },
                "sigaction",
            )?;
            std::hint::black_box(&old);
        }
        Ok(iters)
    }
}

pub fn install(env: &Env) -> anyhow::Result<BenchOut> {
    let a = action(count_handler as *const () as usize, 0);
    let _r = Restore::install(libc::SIGUSR1, &a)?;
    Ok(us(
        env.h.measure(&mut Install(a), 0.0)?,
        "sigaction(SIGUSR1, &act, &old)",
    ))
}

/// How a signal is sent to this thread. LMbench sends with
/// `kill(getpid(), sig)`; the kernel gives a process-directed signal to the
/// thread-group leader when it can take it, so that is synchronous only
/// when the measuring thread is the leader (the CLI). Elsewhere (a plan's
/// worker thread, the test harness) `tgkill` to this thread is the same
/// single system call aimed at the right thread.
#[derive(Clone, Copy)]
struct Sender {
    pid: libc::pid_t,
    tid: libc::pid_t,
}

impl Sender {
    fn here() -> Sender {
        // SAFETY: no preconditions.
        unsafe {
            Sender {
                pid: libc::getpid(),
                tid: libc::syscall(libc::SYS_gettid) as libc::pid_t,
            }
        }
    }

    fn is_leader(&self) -> bool {
        self.pid == self.tid
    }

    fn send(&self, sig: libc::c_int) -> libc::c_long {
        // SAFETY: sending to ourselves; sig 0 only checks permission.
        unsafe {
            if self.is_leader() {
                libc::kill(self.pid, sig) as libc::c_long
            } else {
                libc::syscall(libc::SYS_tgkill, self.pid, self.tid, sig)
            }
        }
    }

    fn what(&self) -> &'static str {
        if self.is_leader() {
            "kill(getpid(), SIGUSR1)"
        } else {
            "tgkill(getpid(), gettid(), SIGUSR1) (not the leader thread)"
        }
    }
}

/// One operation: the send with signal 0 (permission check, no delivery):
/// what LMbench subtracts from the catch figure.
struct Send(Sender);
impl Bench for Send {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        for _ in 0..iters {
            anyhow::ensure!(self.0.send(0) == 0, "kill(me, 0) failed");
        }
        Ok(iters)
    }
}

/// One operation: send SIGUSR1 to this thread with a counting handler
/// installed: the send, the delivery, the handler, and sigreturn.
struct Handle(Sender);
impl Bench for Handle {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        let before = HANDLED.load(Ordering::Relaxed);
        for _ in 0..iters {
            anyhow::ensure!(
                self.0.send(libc::SIGUSR1) == 0,
                "kill: {}",
                std::io::Error::last_os_error()
            );
        }
        let got = HANDLED.load(Ordering::Relaxed) - before;
        anyhow::ensure!(got == iters, "sent {iters} signals, handled {got}");
        Ok(iters)
    }
}

/// Catch cost in ns (send + deliver + handler + sigreturn, minus the send
/// with signal 0), as samples, and the send cost subtracted.
fn catch_ns(env: &Env) -> anyhow::Result<(Vec<f64>, f64, Sender)> {
    let a = action(count_handler as *const () as usize, 0);
    let _r = Restore::install(libc::SIGUSR1, &a)?;
    // Make sure SIGUSR1 is not blocked in this thread.
    // SAFETY: valid sigset.
    unsafe {
        let mut s: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut s);
        libc::sigaddset(&mut s, libc::SIGUSR1);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &s, std::ptr::null_mut());
    }
    let who = Sender::here();
    let send = super::harness::median(&env.h.measure(&mut Send(who), 0.0)?).max(0.0);
    let v = env.h.measure(&mut Handle(who), send)?;
    Ok((v, send, who))
}

pub fn handle(env: &Env) -> anyhow::Result<BenchOut> {
    let (v, send, who) = catch_ns(env)?;
    Ok(us(
        v,
        &format!(
            "{} + handler + sigreturn, minus the send with signal 0 ({:.3} us)",
            who.what(),
            send / 1e3
        ),
    ))
}

static PROT_PAGE: AtomicUsize = AtomicUsize::new(0);
static PROT_FAULTS: AtomicU64 = AtomicU64::new(0);
static PROT_TARGET: AtomicU64 = AtomicU64::new(0);

/// lat_sig's `prot` handler: count the fault and return, so the store
/// faults again. At the `PROT_TARGET`-th fault it makes the page writable
/// and the store completes (LMbench's child never returns from the store;
/// it exits from its handler instead, which a library cannot do). A fault
/// past the target is not ours: the default action comes back and the
/// fault repeats and kills the process as it would have without us.
extern "C" fn prot_handler(_: libc::c_int) {
    let n = PROT_FAULTS.fetch_add(1, Ordering::Relaxed) + 1;
    let target = PROT_TARGET.load(Ordering::Relaxed);
    let page = PROT_PAGE.load(Ordering::Relaxed);
    // SAFETY: mprotect and signal are async-signal-safe system calls; the
    // page is our mapping while PROT_PAGE is set.
    unsafe {
        if page != 0 && n == target {
            libc::mprotect(
                page as *mut libc::c_void,
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
            );
        } else if n > target {
            libc::signal(libc::SIGSEGV, libc::SIG_DFL);
        }
    }
}

/// `iters` operations with one store: the store to a read-only shared
/// file page faults, the handler returns, the store faults again, `iters`
/// times (lat_sig prot's loop); the page is then writable, the store
/// completes and the page is made read-only again for the next call (two
/// mprotects and a store per call, amortised over `iters`).
struct Prot(*mut u8);
impl Bench for Prot {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        if iters == 0 {
            return Ok(0);
        }
        PROT_FAULTS.store(0, Ordering::Relaxed);
        PROT_TARGET.store(iters, Ordering::Relaxed);
        // SAFETY: our one-page mapping; the store faults until the handler
        // makes the page writable.
        unsafe { std::ptr::write_volatile(self.0, 1) };
        let got = PROT_FAULTS.load(Ordering::Relaxed);
        PROT_TARGET.store(0, Ordering::Relaxed);
        // SAFETY: our mapping.
        cvt(
            unsafe { libc::mprotect(self.0.cast(), 4096, libc::PROT_READ) },
            "mprotect",
        )?;
        anyhow::ensure!(got == iters, "{iters} faults wanted, {got} taken");
        Ok(iters)
    }
}

pub fn prot_fault(env: &Env) -> anyhow::Result<BenchOut> {
    // lat_sig prot maps its file shared and read-only. This file is opened
    // read-write so the handler may make the page writable (VM_MAYWRITE);
    // the fault itself is the same: the VMA has no write permission, so the
    // kernel raises SIGSEGV before any page is looked up. A file of its
    // own, because the completing store dirties it.
    let path = env.tmp.join("prot-4k");
    std::fs::write(&path, [0u8; 4096])?;
    let c = super::syscall::cpath(&path)?;
    // SAFETY: valid path.
    let fd = super::child::Fd(cvt(
        unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) },
        "open",
    )?);
    let page = super::fs::map_file(fd.0, 4096, 0)?;
    struct Unmap(*mut u8);
    impl Drop for Unmap {
        fn drop(&mut self) {
            PROT_PAGE.store(0, Ordering::Relaxed);
            // SAFETY: our mapping.
            unsafe {
                libc::munmap(self.0.cast(), 4096);
            }
        }
    }
    let _u = Unmap(page);
    PROT_PAGE.store(page as usize, Ordering::Relaxed);
    // LMbench subtracts the catch cost (signal delivery and return) so the
    // figure is the protection fault itself. Both handlers are installed
    // as lat_sig installs them: a plain handler, no flags. The catch's
    // fastest sample, not its median: load only ever adds to a sample, and
    // a median caught in a burst of load was larger than the faults'
    // (a negative fault cost beside two CPU hogs), as with the page
    // fault's re-read (vm.rs).
    let catch = catch_ns(env)?
        .0
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .fold(f64::INFINITY, f64::min);
    let catch = if catch.is_finite() {
        catch.max(0.0)
    } else {
        0.0
    };
    let a = action(prot_handler as *const () as usize, 0);
    let _r = Restore::install(libc::SIGSEGV, &a)?;
    Ok(us(
        env.h.measure(&mut Prot(page), catch)?,
        &format!(
            "store to a read-only shared file page -> SIGSEGV handler -> the store again, minus the signal catch cost ({:.3} us)",
            catch / 1e3
        ),
    ))
}
