//! Per-thread CPU time and CPU pinning.

use std::time::Duration;

/// CPU time consumed so far by the calling thread: `total` is exact
/// (`CLOCK_THREAD_CPUTIME_ID`, the scheduler's runtime in ns); `user` and
/// `system` come from `getrusage(RUSAGE_THREAD)`, whose split is sampled at
/// timer ticks and so is coarse over short intervals.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuTime {
    pub user: Duration,
    pub system: Duration,
    pub exact: Duration,
}

fn thread_clock() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

impl CpuTime {
    pub fn now() -> CpuTime {
        let exact = thread_clock();
        // SAFETY: getrusage only writes the struct we pass.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
        if rc != 0 {
            return CpuTime {
                exact,
                ..CpuTime::default()
            };
        }
        let tv = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
        };
        CpuTime {
            user: tv(ru.ru_utime),
            system: tv(ru.ru_stime),
            exact,
        }
    }

    pub fn since(self, earlier: CpuTime) -> CpuTime {
        CpuTime {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
            exact: self.exact.saturating_sub(earlier.exact),
        }
    }

    /// Exact user + system time.
    pub fn total(self) -> Duration {
        self.exact
    }

    /// The exact total split in the sampled user:system proportion
    /// (all system when no tick was sampled).
    pub fn split(self) -> (Duration, Duration) {
        let u = self.user.as_nanos();
        let s = self.system.as_nanos();
        if u + s == 0 {
            return (Duration::ZERO, self.exact);
        }
        let user = Duration::from_nanos((self.exact.as_nanos() * u / (u + s)) as u64);
        (user, self.exact.saturating_sub(user))
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
