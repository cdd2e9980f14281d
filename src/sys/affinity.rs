//! CPU affinity through `nix::sched`, instead of `libc::cpu_set_t` by hand
//! in every file that pins something.

use std::io;

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;

/// A CPU set holding `cpus`. CPUs the set cannot hold (beyond
/// `CpuSet::count()`, 1024) are left out, as no machine here has them.
/// Plain data: build it before `fork` and apply it in the child.
pub fn cpu_set(cpus: &[usize]) -> CpuSet {
    let mut set = CpuSet::new();
    for &c in cpus {
        // Only fails for a CPU beyond the set's size (see above).
        let _ = set.set(c);
    }
    set
}

/// The CPUs in `set`, ascending.
pub fn cpus_in(set: &CpuSet) -> Vec<usize> {
    (0..CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .collect()
}

/// Restrict `pid` to `set`; pid 0 is the calling thread. Async-signal-safe
/// (one system call), so a child may call it between `fork` and `exec`.
pub fn set_affinity(pid: libc::pid_t, set: &CpuSet) -> io::Result<()> {
    sched_setaffinity(Pid::from_raw(pid), set).map_err(io::Error::from)
}

/// The calling thread's CPU set.
pub fn affinity() -> io::Result<CpuSet> {
    sched_getaffinity(Pid::from_raw(0)).map_err(io::Error::from)
}

/// The CPUs the calling thread may run on, ascending.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    affinity().map(|s| cpus_in(&s))
}

/// Restrict the calling thread to `cpus`.
pub fn pin_current(cpus: &[usize]) -> io::Result<()> {
    set_affinity(0, &cpu_set(cpus))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_round_trips() {
        assert_eq!(cpus_in(&cpu_set(&[0, 3, 5])), vec![0, 3, 5]);
        assert_eq!(cpus_in(&cpu_set(&[2, 1 << 20])), vec![2]);
    }

    #[test]
    fn pin_and_restore_in_a_thread() {
        // In a thread of its own, so the test runner's threads keep theirs.
        std::thread::spawn(|| {
            let before = allowed_cpus().unwrap();
            let first = before[0];
            pin_current(&[first]).unwrap();
            assert_eq!(allowed_cpus().unwrap(), vec![first]);
            set_affinity(0, &cpu_set(&before)).unwrap();
            assert_eq!(allowed_cpus().unwrap(), before);
        })
        .join()
        .unwrap();
    }
}
