//! SysV semaphores: a two-process ping-pong, and semring, a re-creation of
//! Bill Hartner's 2002 semopbench (LKML, "updated ipc lock patch").
//!
//! Ping-pong, one operation: one round trip (parent posts semaphore 0, the
//! peer waits on it and posts semaphore 1, the parent waits on 1).
//! Microseconds, empty loop subtracted.
//!
//! semring: `groups` sets of `sems` semaphores; one process per semaphore,
//! each sleeping on its own. The parent posts the first semaphore of every
//! group; a process that wakes posts the next semaphore of its group and
//! sleeps again, so a token circles each ring; every process does `laps`
//! waits, then records its finish time and exits. One repetition is one
//! such run, from the parent's first post until the last process is
//! reaped. Reported per repetition (nothing subtracted): seconds, average
//! microseconds per process (its finish time minus the start), and CPU
//! utilisation (children's user+system time over wall time times allowed
//! CPUs, in percent).

use std::io;
use std::time::{Duration, Instant};

use super::child::Child;
use super::harness::Bench;
use super::pin::{allowed_cpus, place, Pinning};
use super::{us, BenchOut, Env, Unavailable};
use crate::error::Error;

/// semopbench's -g/-s/-n.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SemRingParams {
    pub groups: usize,
    pub sems: usize,
    pub laps: usize,
}

impl SemRingParams {
    pub const MAX_PROCS: usize = 4096;

    pub fn validate(&self) -> Result<(), Error> {
        if self.groups == 0 || self.sems == 0 || self.laps == 0 {
            return Err(Error::bad(format!(
                "semring parameters must be positive: groups={} sems={} laps={}",
                self.groups, self.sems, self.laps
            )));
        }
        // Checked: a product that wraps around must not pass as small.
        let procs = self.groups.checked_mul(self.sems);
        if procs.is_none_or(|n| n > Self::MAX_PROCS) {
            return Err(Error::bad(format!(
                "semring would fork {} processes (groups {} x sems {}); at most {} allowed",
                procs.map_or("too many".to_string(), |n| n.to_string()),
                self.groups,
                self.sems,
                Self::MAX_PROCS
            )));
        }
        Ok(())
    }
}

/// A SysV semaphore set, removed on drop.
struct SemSet(libc::c_int);

impl SemSet {
    fn new(n: usize) -> io::Result<SemSet> {
        // SAFETY: plain semget.
        let id = unsafe { libc::semget(libc::IPC_PRIVATE, n as libc::c_int, 0o600) };
        if id < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(SemSet(id))
    }
}

impl Drop for SemSet {
    fn drop(&mut self) {
        // SAFETY: removing our own set.
        unsafe {
            libc::semctl(self.0, 0, libc::IPC_RMID);
        }
    }
}

/// semop of `delta` on semaphore `num` of `set`, retried on EINTR
/// (raw syscall, usable in children).
fn sem_op(set: libc::c_int, num: usize, delta: i16) -> bool {
    let mut op = libc::sembuf {
        sem_num: num as u16,
        sem_op: delta,
        sem_flg: 0,
    };
    loop {
        // SAFETY: one valid sembuf.
        if unsafe { libc::semop(set, &mut op, 1) } == 0 {
            return true;
        }
        if super::child::errno() != libc::EINTR {
            return false;
        }
    }
}

fn skip_ipc(e: io::Error) -> BenchOut {
    BenchOut::Skip(format!("no SysV IPC semaphores: semget: {e}"))
}

struct PingPong(libc::c_int);

impl Bench for PingPong {
    fn run(&mut self, iters: u64) -> anyhow::Result<u64> {
        for _ in 0..iters {
            anyhow::ensure!(sem_op(self.0, 0, 1), "semop post failed");
            anyhow::ensure!(sem_op(self.0, 1, -1), "semop wait failed");
        }
        Ok(iters)
    }
}

pub fn pingpong(env: &Env, pin: Pinning) -> anyhow::Result<BenchOut> {
    let pl = match place(pin) {
        Ok(p) => p,
        Err(r) => return Ok(BenchOut::Skip(r.0)),
    };
    let set = match SemSet::new(2) {
        Ok(s) => s,
        Err(e) => return Ok(skip_ipc(e)),
    };
    let id = set.0;
    let _c = Child::spawn(pl.child, move || {
        while sem_op(id, 0, -1) && sem_op(id, 1, 1) {}
        0
    })?;
    Ok(us(
        env.h.measure(&mut PingPong(id), 0.0)?,
        "SysV semop round trip between two processes",
    ))
}

fn now_ns() -> u64 {
    // SAFETY: valid timespec out pointer.
    unsafe {
        let mut t: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t);
        t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
    }
}

fn children_cpu_ns() -> u64 {
    // SAFETY: valid out buffer.
    unsafe {
        let mut r: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut r);
        let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
        tv(r.ru_utime) + tv(r.ru_stime)
    }
}

/// One semring repetition's figures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RingRep {
    pub seconds: f64,
    pub us_per_proc: f64,
    pub cpu_util: f64,
}

/// Shared anonymous memory of `n` u64 slots (finish times), unmapped on drop.
struct Shared {
    p: *mut u64,
    n: usize,
}

impl Shared {
    fn new(n: usize) -> anyhow::Result<Shared> {
        // SAFETY: fresh shared anonymous mapping.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                n * 8,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        anyhow::ensure!(
            p != libc::MAP_FAILED,
            "mmap: {}",
            io::Error::last_os_error()
        );
        Ok(Shared {
            p: p as *mut u64,
            n,
        })
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: our mapping.
        unsafe {
            libc::munmap(self.p.cast(), self.n * 8);
        }
    }
}

/// Run one semring repetition. `Ok(Err(reason))` if SysV IPC is missing.
pub fn ring_once(
    p: SemRingParams,
    check: &dyn Fn() -> anyhow::Result<()>,
) -> anyhow::Result<Result<RingRep, Unavailable>> {
    let mut sets = Vec::with_capacity(p.groups);
    for _ in 0..p.groups {
        match SemSet::new(p.sems) {
            Ok(s) => sets.push(s),
            Err(e) => {
                return Ok(Err(Unavailable(format!(
                    "SysV semaphores unavailable: semget({} sems): {e}",
                    p.sems
                ))))
            }
        }
    }
    let n = p.groups * p.sems;
    let finish = Shared::new(n)?;
    let mut children = Vec::with_capacity(n);
    for (g, set) in sets.iter().enumerate() {
        for s in 0..p.sems {
            let (id, sems, laps) = (set.0, p.sems, p.laps);
            let slot = finish.p as usize + (g * p.sems + s) * 8;
            children.push(Child::spawn(None, move || {
                for _ in 0..laps {
                    if !sem_op(id, s, -1) || !sem_op(id, (s + 1) % sems, 1) {
                        return 1;
                    }
                }
                // SAFETY: slot lies in the shared mapping.
                unsafe { std::ptr::write_volatile(slot as *mut u64, now_ns()) };
                0
            })?);
        }
    }
    let cpu0 = children_cpu_ns();
    let t0 = Instant::now();
    let start = now_ns();
    for set in &sets {
        anyhow::ensure!(
            sem_op(set.0, 0, 1),
            "semop start: {}",
            io::Error::last_os_error()
        );
    }
    for c in children.iter_mut() {
        loop {
            if let Some(code) = c.try_wait()? {
                anyhow::ensure!(code == 0, "semring process {} exited with {code}", c.pid());
                break;
            }
            check()?;
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    let cpu = (children_cpu_ns() - cpu0) as f64 / 1e9;
    let ncpu = allowed_cpus().map(|v| v.len()).unwrap_or(1).max(1) as f64;
    let mut sum = 0.0;
    for i in 0..n {
        // SAFETY: i < n slots.
        let f = unsafe { std::ptr::read_volatile(finish.p.add(i)) };
        sum += f.saturating_sub(start) as f64 / 1e3;
    }
    Ok(Ok(RingRep {
        seconds: wall,
        us_per_proc: sum / n as f64,
        cpu_util: 100.0 * cpu / (wall * ncpu),
    }))
}

/// `samples` repetitions after one warm-up repetition.
pub fn ring(env: &Env, p: SemRingParams) -> anyhow::Result<Result<Vec<RingRep>, Unavailable>> {
    p.validate().map_err(Error::into_failure)?;
    let check = || env.h.check();
    if let Err(e) = SemSet::new(p.sems) {
        return Ok(Err(Unavailable(format!(
            "SysV semaphores unavailable: semget({} sems): {e}",
            p.sems
        ))));
    }
    let reps = env.h.repeat(
        || ring_once(p, &check)?.map_err(anyhow::Error::msg),
        env.h.samples,
    );
    Ok(Ok(reps?))
}
