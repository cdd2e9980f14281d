//! Per-thread CPU time and CPU pinning.

use std::time::Duration;

/// User and system CPU time consumed so far by the calling thread
/// (`getrusage(RUSAGE_THREAD)`; the kernel derives both from the scheduler's
/// exact runtime, split by tick sampling).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuTime {
    pub user: Duration,
    pub system: Duration,
}

impl CpuTime {
    pub fn now() -> CpuTime {
        // SAFETY: getrusage only writes the struct we pass.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
        if rc != 0 {
            return CpuTime::default();
        }
        let tv = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
        };
        CpuTime {
            user: tv(ru.ru_utime),
            system: tv(ru.ru_stime),
        }
    }

    pub fn since(self, earlier: CpuTime) -> CpuTime {
        CpuTime {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }

    pub fn total(self) -> Duration {
        self.user + self.system
    }
}

/// The CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: sched_getaffinity writes at most sizeof(cpu_set_t) into `set`.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return vec![0];
    }
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect();
    if cpus.is_empty() {
        vec![0]
    } else {
        cpus
    }
}

/// Pin the calling thread to one CPU (best effort: a failure leaves the
/// thread where the scheduler puts it).
pub fn pin_current_thread(cpu: usize) {
    // SAFETY: plain cpu_set_t manipulation and a syscall on the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Producer and consumer CPUs: different ones when two are available, so the
/// consumer does not steal the producer's CPU time.
pub fn pick_cpus(allowed: &[usize]) -> (usize, usize) {
    match allowed {
        [] => (0, 0),
        [only] => (*only, *only),
        [a, b, ..] => (*a, *b),
    }
}
