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

/// The CPUs this process may run on (CPU 0 when that cannot be read).
pub fn allowed_cpus() -> Vec<usize> {
    match crate::sys::affinity::allowed_cpus() {
        Ok(cpus) if !cpus.is_empty() => cpus,
        _ => vec![0],
    }
}

/// Pin the calling thread to one CPU (best effort: a failure leaves the
/// thread where the scheduler puts it).
pub fn pin_current_thread(cpu: usize) {
    let _ = crate::sys::affinity::pin_current(&[cpu]);
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
