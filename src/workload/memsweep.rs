//! memsweep: a dialog-step emulator in the spirit of the 2001 SAP SD
//! benchmark ("dominated by m[map, copy], string operations and integer
//! operations" over a huge working set), reporting steps per second for
//! each interval, so that a slide under memory pressure shows as a series.
//!
//! One step (the operation counted):
//! 1. pick a source and a destination block (default 64 KiB) uniformly at
//!    random in the working set (an anonymous private mapping of
//!    `working_set` bytes, filled with pseudo-random words before timing);
//! 2. mmap a fresh anonymous scratch block (the "roll area"), copy the
//!    source block into it;
//! 3. string work: count one byte value over the scratch block and rewrite
//!    the ASCII letters of its first 256 bytes to upper case;
//! 4. integer work: a 64-bit multiply-xor hash over every word of it;
//! 5. copy the scratch block to the destination, store the hash in its
//!    first word (so the data keeps changing), munmap the scratch.
//!
//! The sweep runs in a forked child (put into the run's cgroup and CPU set
//! before it touches memory), which uses only async-signal-safe calls:
//! mmap, munmap, clock_gettime, read, write, _exit. The filling of the
//! working set is not timed; it is reported as `memsweep.prefill_s`.
//!
//! Output: `memsweep.steps_per_s` has one value per interval, IN TIME ORDER
//! (value i = steps completed in interval i / that interval's measured
//! length). It is a time series, not repeated samples of one quantity.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::metric::{Direction, MetricSpec};
use crate::workload::{MetricSamples, RunContext, RunOutcome, Workload};

/// Parameters of one memsweep workload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MemsweepParams {
    pub working_set: u64,
    pub block: u64,
    pub duration: Duration,
    pub interval: Duration,
}

pub struct MemsweepWorkload {
    pub params: MemsweepParams,
}

// The one size grammar (`crate::sys::size`), re-exported where the memsweep
// parameters have always been parsed.
pub use crate::sys::size::parse_size;

/// Parse a duration: "500ms", "10s", "2m", "1h", or a bare number of seconds.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().ok()?;
    let secs = match unit.trim() {
        "" | "s" => v,
        "ms" => v / 1e3,
        "us" => v / 1e6,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        _ => return None,
    };
    Duration::try_from_secs_f64(secs).ok()
}

/// The largest `working_set`: 1 TiB (sizes beyond RAM are the point of
/// the workload, with swap; beyond this no machine it runs on holds it).
const MAX_WORKING_SET: u64 = 1 << 40;
/// The largest `block`: 1 GiB.
const MAX_BLOCK: u64 = 1 << 30;
/// The longest `duration`: a week.
const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);
/// The most intervals (values) one run reports.
const MAX_INTERVALS: u128 = 1_000_000;

impl MemsweepWorkload {
    /// Build from the plan's parameter table: `working_set` (required, e.g.
    /// "512M"), `duration` (required, e.g. "10m"), `interval` (default
    /// "1s", at least 10ms), `block` (default "64K", at least 4K).
    pub fn from_params(v: &toml::Value) -> Result<Self, Error> {
        let t = v
            .as_table()
            .ok_or_else(|| Error::bad("memsweep: parameters must be a table"))?;
        for k in t.keys() {
            if !["working_set", "duration", "interval", "block"].contains(&k.as_str()) {
                return Err(Error::bad(format!(
                    "memsweep: unknown parameter {k:?} (known: working_set, duration, interval, block)"
                )));
            }
        }
        let size = |k: &str, def: Option<u64>| -> Result<u64, Error> {
            match t.get(k) {
                None => def.ok_or(Error::bad(format!(
                    "memsweep: missing parameter {k:?} (e.g. \"512M\")"
                ))),
                Some(toml::Value::Integer(i)) if *i > 0 => Ok(*i as u64),
                Some(toml::Value::String(s)) => parse_size(s).ok_or(Error::bad(format!(
                    "memsweep: {k} = {s:?} is not a size like \"512M\""
                ))),
                Some(o) => Err(Error::bad(format!(
                    "memsweep: {k} = {o} is not a size like \"512M\""
                ))),
            }
        };
        let dur = |k: &str, def: Option<Duration>| -> Result<Duration, Error> {
            match t.get(k) {
                None => def.ok_or(Error::bad(format!(
                    "memsweep: missing parameter {k:?} (e.g. \"60s\")"
                ))),
                Some(toml::Value::Integer(i)) if *i > 0 => Ok(Duration::from_secs(*i as u64)),
                Some(toml::Value::Float(f)) if *f > 0.0 => Duration::try_from_secs_f64(*f)
                    .map_err(|_| Error::bad(format!("memsweep: {k} = {f:?} is too large"))),
                Some(toml::Value::String(s)) => parse_duration(s).ok_or(Error::bad(format!(
                    "memsweep: {k} = {s:?} is not a duration like \"60s\""
                ))),
                Some(o) => Err(Error::bad(format!(
                    "memsweep: {k} = {o} is not a duration like \"60s\""
                ))),
            }
        };
        let p = MemsweepParams {
            working_set: size("working_set", None)?,
            block: size("block", Some(64 << 10))?,
            duration: dur("duration", None)?,
            interval: dur("interval", Some(Duration::from_secs(1)))?,
        };
        if p.working_set > MAX_WORKING_SET {
            return Err(Error::bad(format!(
                "memsweep: working_set is too large (at most {MAX_WORKING_SET} bytes = 1T), got {}",
                p.working_set
            )));
        }
        if p.block > MAX_BLOCK {
            return Err(Error::bad(format!(
                "memsweep: block is too large (at most {MAX_BLOCK} bytes = 1G), got {}",
                p.block
            )));
        }
        if p.duration > MAX_DURATION {
            return Err(Error::bad(format!(
                "memsweep: duration is too large (at most {}s), got {:?}",
                MAX_DURATION.as_secs(),
                p.duration
            )));
        }
        if p.interval < Duration::from_millis(10) {
            return Err(Error::bad(format!(
                "memsweep: interval {:?} is below the minimum of 10ms",
                p.interval
            )));
        }
        if p.duration < p.interval {
            return Err(Error::bad(format!(
                "memsweep: duration {:?} is shorter than one interval ({:?})",
                p.duration, p.interval
            )));
        }
        if p.block < 4096 || p.block % 4096 != 0 {
            return Err(Error::bad(format!(
                "memsweep: block {} must be a multiple of 4K",
                p.block
            )));
        }
        // The run keeps one value per interval.
        let intervals = p.duration.as_nanos() / p.interval.as_nanos();
        if intervals > MAX_INTERVALS {
            return Err(Error::bad(format!(
                "memsweep: duration / interval is too large (at most {MAX_INTERVALS} intervals), got {intervals}"
            )));
        }
        if p.working_set < 2 * p.block {
            return Err(Error::bad(format!(
                "memsweep: working_set {} must hold at least two blocks of {}",
                p.working_set, p.block
            )));
        }
        Ok(MemsweepWorkload { params: p })
    }

    /// Number of intervals a run reports.
    pub fn intervals(&self) -> u64 {
        (self.params.duration.as_nanos() / self.params.interval.as_nanos()) as u64
    }
}

// Records the child writes to the pipe: three native-endian u64s.
const REC_INTERVAL: u64 = 1; // (steps, elapsed ns)
const REC_PREFILL: u64 = 2; // (ns, 0)
const REC_ERROR: u64 = 3; // (errno, stage)

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer; async-signal-safe.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn put(fd: i32, rec: [u64; 3]) -> bool {
    // SAFETY: writing 24 bytes from a stack array; atomic for a pipe (< PIPE_BUF).
    let n = unsafe { libc::write(fd, rec.as_ptr() as *const libc::c_void, 24) };
    n == 24
}

fn errno() -> u64 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0) as u64
}

#[inline]
fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

/// One dialog step (see the module doc). Returns false if mmap failed.
///
/// # Safety
/// `ws` must point to `nblocks * block` writable bytes; `block` is a
/// multiple of 8.
unsafe fn step(ws: *mut u8, nblocks: u64, block: usize, rng: &mut u64) -> bool {
    let src = ws.add((xorshift(rng) % nblocks) as usize * block);
    let dst = ws.add((xorshift(rng) % nblocks) as usize * block);
    let scratch = libc::mmap(
        std::ptr::null_mut(),
        block,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
        -1,
        0,
    );
    if scratch == libc::MAP_FAILED {
        return false;
    }
    let sc = scratch as *mut u8;
    std::ptr::copy_nonoverlapping(src, sc, block);
    // String work.
    let bytes = std::slice::from_raw_parts_mut(sc, block);
    let stars = bytes.iter().filter(|&&b| b == b'*').count() as u64;
    for b in bytes[..256].iter_mut() {
        b.make_ascii_uppercase();
    }
    // Integer work.
    let words = std::slice::from_raw_parts(sc as *const u64, block / 8);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ stars;
    for w in words {
        h = (h ^ w).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(5);
    }
    std::ptr::copy_nonoverlapping(sc, dst, block);
    std::ptr::write_unaligned(dst as *mut u64, h);
    libc::munmap(scratch, block);
    true
}

/// The child: wait for the go byte, fill the working set, run the timed
/// intervals, _exit. Async-signal-safe calls only (we forked a threaded
/// process): no allocation, no locks.
fn child_main(p: MemsweepParams, intervals: u64, go_fd: i32, out_fd: i32) -> ! {
    // SAFETY: plain syscalls on our own descriptors and mappings.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        let mut b = 0u8;
        if libc::read(go_fd, &mut b as *mut u8 as *mut libc::c_void, 1) != 1 {
            libc::_exit(3);
        }
        let block = p.block as usize;
        let nblocks = p.working_set / p.block;
        let len = nblocks as usize * block;
        let ws = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if ws == libc::MAP_FAILED {
            put(out_fd, [REC_ERROR, errno(), 1]);
            libc::_exit(2);
        }
        let ws = ws as *mut u8;
        let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
        let t0 = now_ns();
        let words = ws as *mut u64;
        for i in 0..len / 8 {
            *words.add(i) = xorshift(&mut rng);
        }
        put(out_fd, [REC_PREFILL, now_ns() - t0, 0]);
        let iv = p.interval.as_nanos() as u64;
        for _ in 0..intervals {
            let start = now_ns();
            let mut steps = 0u64;
            let mut now = start;
            while now - start < iv {
                if !step(ws, nblocks, block, &mut rng) {
                    put(out_fd, [REC_ERROR, errno(), 2]);
                    libc::_exit(2);
                }
                steps += 1;
                now = now_ns();
            }
            if !put(out_fd, [REC_INTERVAL, steps, now - start]) {
                libc::_exit(3);
            }
        }
        libc::_exit(0);
    }
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0i32; 2];
    // SAFETY: valid out-array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both fds are fresh and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn failed(reason: String, exit_code: Option<i32>) -> RunOutcome {
    RunOutcome::Failed {
        reason,
        stderr_tail: String::new(),
        exit_code,
    }
}

/// If the cgroup of `procs` (v2) recorded OOM kills, say so.
fn oom_note(procs: Option<&Path>) -> String {
    let Some(dir) = procs.and_then(|p| p.parent()) else {
        return String::new();
    };
    let ev = std::fs::read_to_string(dir.join("memory.events")).unwrap_or_default();
    let kills = ev
        .lines()
        .find_map(|l| l.strip_prefix("oom_kill "))
        .and_then(|v| v.trim().parse::<u64>().ok());
    let v1 = std::fs::read_to_string(dir.join("memory.oom_control")).unwrap_or_default();
    let v1 = v1
        .lines()
        .find_map(|l| l.strip_prefix("oom_kill "))
        .and_then(|v| v.trim().parse::<u64>().ok());
    match kills.or(v1) {
        Some(n) if n > 0 => format!(" (the run's memory cgroup counts {n} OOM kills)"),
        _ => String::new(),
    }
}

impl MemsweepWorkload {
    fn run_child(&self, ctx: &RunContext) -> RunOutcome {
        let (go_r, go_w) = match pipe() {
            Ok(p) => p,
            Err(e) => return failed(format!("memsweep: pipe: {e}"), None),
        };
        let (out_r, out_w) = match pipe() {
            Ok(p) => p,
            Err(e) => return failed(format!("memsweep: pipe: {e}"), None),
        };
        let intervals = self.intervals();
        let p = self.params;
        // SAFETY: the child runs only async-signal-safe code (child_main).
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return failed(
                format!("memsweep: fork: {}", std::io::Error::last_os_error()),
                None,
            );
        }
        if pid == 0 {
            child_main(p, intervals, go_r.as_raw_fd(), out_w.as_raw_fd());
        }
        drop(go_r);
        drop(out_w);
        let child = Child(pid);
        if let Some(procs) = ctx.cgroup_procs {
            if let Err(e) = std::fs::write(procs, pid.to_string()) {
                return failed(
                    format!("memsweep: cannot join cgroup {}: {e}", procs.display()),
                    None,
                );
            }
        }
        if let Some(cpus) = ctx.cpus {
            let set = crate::sys::affinity::cpu_set(cpus);
            if let Err(e) = crate::sys::affinity::set_affinity(pid, &set) {
                return failed(format!("memsweep: sched_setaffinity {cpus:?}: {e}"), None);
            }
        }
        // SAFETY: writing one byte from a stack variable to our pipe.
        if unsafe { libc::write(go_w.as_raw_fd(), b"g".as_ptr() as *const libc::c_void, 1) } != 1 {
            return failed("memsweep: cannot start the child".into(), None);
        }
        let deadline = Instant::now() + ctx.timeout;
        let mut buf: Vec<u8> = Vec::new();
        let mut steps = Vec::with_capacity(intervals as usize);
        let mut prefill_s = None;
        loop {
            if ctx.cancel.load(Ordering::SeqCst) {
                return failed("memsweep: cancelled".into(), None);
            }
            if Instant::now() >= deadline {
                return failed(format!("memsweep: timed out after {:?}", ctx.timeout), None);
            }
            let mut pfd = libc::pollfd {
                fd: out_r.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let n = unsafe { libc::poll(&mut pfd, 1, 100) };
            if n <= 0 {
                continue;
            }
            let mut chunk = [0u8; 4096];
            // SAFETY: reading into a stack buffer of the given size.
            let got = unsafe {
                libc::read(
                    out_r.as_raw_fd(),
                    chunk.as_mut_ptr() as *mut libc::c_void,
                    chunk.len(),
                )
            };
            if got < 0 {
                continue; // EINTR
            }
            if got == 0 {
                break; // child closed: exited or died
            }
            buf.extend_from_slice(&chunk[..got as usize]);
            while buf.len() >= 24 {
                let w = |i: usize| u64::from_ne_bytes(buf[i * 8..i * 8 + 8].try_into().unwrap());
                let rec = [w(0), w(1), w(2)];
                buf.drain(..24);
                match rec[0] {
                    REC_INTERVAL => steps.push(rec[1] as f64 / (rec[2].max(1) as f64 * 1e-9)),
                    REC_PREFILL => prefill_s = Some(rec[1] as f64 * 1e-9),
                    REC_ERROR => {
                        let what = if rec[2] == 1 {
                            "mmap of the working set"
                        } else {
                            "mmap of a scratch block"
                        };
                        let e = std::io::Error::from_raw_os_error(rec[1] as i32);
                        return failed(format!("memsweep: {what} failed: {e}"), None);
                    }
                    _ => {}
                }
            }
        }
        let status = child.wait();
        match status {
            Some(0) if steps.len() as u64 == intervals => RunOutcome::Ok(vec![
                MetricSamples {
                    metric: "memsweep.steps_per_s".into(),
                    values: steps,
                },
                MetricSamples {
                    metric: "memsweep.prefill_s".into(),
                    values: prefill_s.into_iter().collect(),
                },
            ]),
            Some(code) if code >= 0 => failed(
                format!(
                    "memsweep: child exited with {code} after {} of {intervals} intervals",
                    steps.len()
                ),
                Some(code),
            ),
            Some(sig) => failed(
                format!(
                    "memsweep: child killed by signal {} after {} of {intervals} intervals{}",
                    -sig,
                    steps.len(),
                    oom_note(ctx.cgroup_procs)
                ),
                None,
            ),
            None => failed("memsweep: waitpid failed".into(), None),
        }
    }
}

/// The forked child; killed and reaped on drop unless already waited for.
struct Child(libc::pid_t);

impl Child {
    /// Wait for exit: Some(code), or Some(-signal), None on error.
    fn wait(self) -> Option<i32> {
        let pid = self.0;
        std::mem::forget(self);
        let mut st = 0;
        loop {
            // SAFETY: waiting for our own child.
            let r = unsafe { libc::waitpid(pid, &mut st, 0) };
            if r == pid {
                break;
            }
            if r < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return None;
            }
        }
        if libc::WIFEXITED(st) {
            Some(libc::WEXITSTATUS(st))
        } else if libc::WIFSIGNALED(st) {
            Some(-libc::WTERMSIG(st))
        } else {
            None
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        // SAFETY: killing and reaping our own child.
        unsafe {
            libc::kill(self.0, libc::SIGKILL);
            let mut st = 0;
            libc::waitpid(self.0, &mut st, 0);
        }
    }
}

impl Workload for MemsweepWorkload {
    fn series(&self) -> Vec<(String, f64)> {
        vec![(
            "memsweep.steps_per_s".to_string(),
            self.params.interval.as_secs_f64(),
        )]
    }

    fn metrics(&self) -> Vec<MetricSpec> {
        vec![
            MetricSpec::new("memsweep.steps_per_s", "steps/s", Direction::Higher),
            MetricSpec::new("memsweep.prefill_s", "s", Direction::Lower),
        ]
    }

    fn run(&mut self, ctx: &RunContext) -> RunOutcome {
        self.run_child(ctx)
    }
}
