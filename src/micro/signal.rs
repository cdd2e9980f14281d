//! Signal costs: handler installation, delivery to a handler, and the
//! protection fault (a write to a read-only page turned into SIGSEGV).
//! Values are microseconds per operation with only the empty-loop cost
//! subtracted. Previous handlers are restored afterwards.

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

/// One operation: `sigaction(SIGUSR1, handler)` (install a handler).
struct Install(libc::sigaction);
impl Bench for Install {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        for _ in 0..iters {
            // SAFETY: valid action.
            cvt(
                unsafe { libc::sigaction(libc::SIGUSR1, &self.0, std::ptr::null_mut()) },
                "sigaction",
            )?;
        }
        Ok(iters)
    }
}

pub fn install(env: &Env) -> anyhow::Result<BenchOut> {
    let a = action(count_handler as *const () as usize, 0);
    let _r = Restore::install(libc::SIGUSR1, &a)?;
    Ok(us(
        env.h.measure(&mut Install(a), 0.0)?,
        "sigaction(SIGUSR1)",
    ))
}

/// One operation: `raise(SIGUSR1)` with a counting handler installed: the
/// send (tgkill to the calling thread, so delivery is synchronous even in a
/// multi-threaded process; LMbench uses kill(getpid())), the delivery, the
/// handler, and sigreturn.
struct Handle;
impl Bench for Handle {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        let before = HANDLED.load(Ordering::Relaxed);
        for _ in 0..iters {
            // SAFETY: a handler is installed for SIGUSR1.
            cvt(unsafe { libc::raise(libc::SIGUSR1) }, "raise")?;
        }
        let got = HANDLED.load(Ordering::Relaxed) - before;
        anyhow::ensure!(got == iters, "raised {iters} signals, handled {got}");
        Ok(iters)
    }
}

pub fn handle(env: &Env) -> anyhow::Result<BenchOut> {
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
    Ok(us(
        env.h.measure(&mut Handle, 0.0)?,
        "raise(SIGUSR1) + handler",
    ))
}

static PROT_PAGE: AtomicUsize = AtomicUsize::new(0);
static PROT_FAULTS: AtomicU64 = AtomicU64::new(0);

#[cfg(target_arch = "x86_64")]
extern "C" fn segv_handler(_: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes valid siginfo and ucontext pointers.
    unsafe {
        let addr = (*info).si_addr() as usize;
        let page = PROT_PAGE.load(Ordering::Relaxed);
        if page != 0 && addr >= page && addr < page + 4096 {
            // Skip the 3-byte `mov byte ptr [rdi], 0` that faulted.
            let uc = ctx as *mut libc::ucontext_t;
            (*uc).uc_mcontext.gregs[libc::REG_RIP as usize] += 3;
            PROT_FAULTS.fetch_add(1, Ordering::Relaxed);
        } else {
            // Not ours: fall back to the default action, the fault repeats
            // and kills the process as it would have without us.
            libc::signal(libc::SIGSEGV, libc::SIG_DFL);
        }
    }
}

/// One operation: a 1-byte store to a present, read-only page: the
/// protection fault, SIGSEGV delivery to a handler that skips the store,
/// and sigreturn (LMbench's "prot fault"). x86_64 only.
#[cfg(target_arch = "x86_64")]
struct Prot(usize);
#[cfg(target_arch = "x86_64")]
impl Bench for Prot {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        let before = PROT_FAULTS.load(Ordering::Relaxed);
        for _ in 0..iters {
            // SAFETY: the store faults and the handler skips it; the
            // encoding c6 07 00 is exactly 3 bytes with the address in rdi.
            unsafe {
                std::arch::asm!(".byte 0xc6, 0x07, 0x00", in("rdi") self.0, options(nostack));
            }
        }
        let got = PROT_FAULTS.load(Ordering::Relaxed) - before;
        anyhow::ensure!(got == iters, "{iters} stores, {got} protection faults");
        Ok(iters)
    }
}

#[cfg(target_arch = "x86_64")]
pub fn prot_fault(env: &Env) -> anyhow::Result<BenchOut> {
    // SAFETY: anonymous private mapping of one page, unmapped below.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    anyhow::ensure!(
        page != libc::MAP_FAILED,
        "mmap: {}",
        std::io::Error::last_os_error()
    );
    struct Unmap(*mut libc::c_void);
    impl Drop for Unmap {
        fn drop(&mut self) {
            PROT_PAGE.store(0, Ordering::Relaxed);
            // SAFETY: our mapping.
            unsafe {
                libc::munmap(self.0, 4096);
            }
        }
    }
    let _u = Unmap(page);
    // SAFETY: the page is ours; make it present, then read-only.
    unsafe {
        *(page as *mut u8) = 1;
        cvt(libc::mprotect(page, 4096, libc::PROT_READ), "mprotect")?;
    }
    PROT_PAGE.store(page as usize, Ordering::Relaxed);
    let a = action(
        segv_handler as *const () as usize,
        libc::SA_SIGINFO | libc::SA_NODEFER,
    );
    let _r = Restore::install(libc::SIGSEGV, &a)?;
    Ok(us(
        env.h.measure(&mut Prot(page as usize), 0.0)?,
        "store to read-only page -> SIGSEGV handler",
    ))
}

#[cfg(not(target_arch = "x86_64"))]
pub fn prot_fault(_env: &Env) -> anyhow::Result<BenchOut> {
    Ok(BenchOut::Skip(
        "protection fault benchmark is implemented for x86_64 only".into(),
    ))
}
