//! One step of the sweep: one transport, one buffer size, one volume.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::Serialize;

use super::producer::Produced;
use super::sink::{Sink, SinkTarget};
use super::tracefs::Tracefs;
use super::{cpu, Kind};

/// What one step runs.
#[derive(Clone, Debug)]
pub struct StepParams {
    pub kind: Kind,
    pub record_size: usize,
    /// Bytes the producer writes (a whole number of records).
    pub volume: u64,
    /// Transport buffer in bytes: buffer_size_kb per CPU (ftrace), SO_RCVBUF
    /// (netlink), SO_SNDBUF (unix-dgram), F_SETPIPE_SZ (pipe), the mmap
    /// ring's data size rounded up to a power of two (perf).
    pub buffer: u64,
    pub sink: SinkTarget,
    pub keep: bool,
    /// CPUs to use: producer on the first, consumer on the second if any.
    pub cpus: Vec<usize>,
    /// Stop (and fail) past this instant.
    pub deadline: Option<Instant>,
    /// Index used in the kept file's name.
    pub index: usize,
    /// Start the consumer only after the producer has finished: every record
    /// beyond what the buffer holds is then dropped. For tests and
    /// demonstrations of drop accounting; never set by the sweep.
    pub hold_consumer: bool,
}

impl StepParams {
    pub fn records(&self) -> u64 {
        self.volume / self.record_size as u64
    }
}

/// What a transport reports back for one step.
#[derive(Clone, Debug)]
pub struct Raw {
    pub produced: Produced,
    /// Records that reached the consumer.
    pub read: u64,
    /// When the consumer had drained the last record into the sink.
    pub ended: Instant,
    /// The transport's own drop counter, where it has one.
    pub kernel_dropped: Option<u64>,
    /// Counter breakdown for the raw block.
    pub detail: String,
    pub sink_bytes: u64,
}

/// One reported step (one raw-data block).
#[derive(Clone, Debug, Serialize)]
pub struct StepResult {
    pub transport: String,
    pub record_size: usize,
    /// Buffer in bytes (see [`StepParams::buffer`]).
    pub buffer: u64,
    /// Bytes the producer was asked to write.
    pub volume: u64,
    /// "file" or "null".
    pub sink: String,
    /// Records the producer wrote (attempted).
    pub written: u64,
    /// Records the consumer received.
    pub read: u64,
    /// written - read: records lost.
    pub dropped: u64,
    /// The transport's own drop counter, for cross-checking `dropped`.
    pub kernel_dropped: Option<u64>,
    pub detail: String,
    /// Producer thread CPU time in ns (exact total, split user:system in
    /// the proportion sampled by getrusage).
    pub user_ns: u64,
    pub sys_ns: u64,
    /// (user + system CPU of the producer) / records written.
    pub cpu_ns_per_record: f64,
    /// From the first write until the consumer drained the last record.
    pub wall_s: f64,
    /// volume / wall, MB = 10^6 bytes (the whole volume, dropped records
    /// included, as in 2005).
    pub mb_per_s: f64,
    pub sink_bytes: u64,
    /// This step repeats the previous volume with a doubled buffer.
    pub retry: bool,
    /// Set when the transport is not offered here; numbers are then zero.
    pub skipped: Option<String>,
}

impl StepResult {
    pub fn skipped(kind: Kind, record_size: usize, reason: String) -> StepResult {
        StepResult {
            transport: kind.name().into(),
            record_size,
            buffer: 0,
            volume: 0,
            sink: String::new(),
            written: 0,
            read: 0,
            dropped: 0,
            kernel_dropped: None,
            detail: String::new(),
            user_ns: 0,
            sys_ns: 0,
            cpu_ns_per_record: 0.0,
            wall_s: 0.0,
            mb_per_s: 0.0,
            sink_bytes: 0,
            retry: false,
            skipped: Some(reason),
        }
    }
}

/// Shared state a step may need (the tracefs mount, kept across steps).
#[derive(Default)]
pub struct StepEnv {
    pub tracefs: Option<Tracefs>,
}

/// Run one step. `cancel` is the user's Ctrl-C flag.
pub fn run_step(p: &StepParams, env: &StepEnv, cancel: &AtomicBool) -> anyhow::Result<StepResult> {
    let name = format!(
        "sysdelta-transport-{}-{}-{}.out",
        p.kind.name(),
        std::process::id(),
        p.index
    );
    let mut sink = Sink::create(&p.sink, &name, p.keep)?;
    let raw = match p.kind {
        Kind::Pipe => super::sockets::run_pipe(p, &mut sink, cancel)?,
        Kind::UnixDgram => super::sockets::run_unix_dgram(p, &mut sink, cancel)?,
        Kind::Netlink => super::netlink::run(p, &mut sink, cancel)?,
        Kind::Ftrace => {
            let fs = env
                .tracefs
                .as_ref()
                .ok_or_else(|| anyhow::anyhow!("ftrace step without a tracefs mount"))?;
            super::ftrace::run(p, fs, &mut sink, cancel)?
        }
        Kind::Perf => {
            let fs = env
                .tracefs
                .as_ref()
                .ok_or_else(|| anyhow::anyhow!("perf step without a tracefs mount"))?;
            super::perf::run(p, fs, &mut sink, cancel)?
        }
    };
    if cancel.load(Ordering::Relaxed) {
        anyhow::bail!("interrupted");
    }
    if let Some(d) = p.deadline {
        if Instant::now() > d {
            anyhow::bail!("{} step exceeded its time limit", p.kind);
        }
    }
    let written = raw.produced.attempted;
    let wall = raw.ended.saturating_duration_since(raw.produced.started);
    let wall_s = wall.as_secs_f64().max(1e-9);
    let cpu = raw.produced.cpu;
    let (user, system) = cpu.split();
    Ok(StepResult {
        transport: p.kind.name().into(),
        record_size: p.record_size,
        buffer: p.buffer,
        volume: p.volume,
        sink: match p.sink {
            SinkTarget::Null => "null".into(),
            SinkTarget::Dir(_) => "file".into(),
        },
        written,
        read: raw.read,
        dropped: written.saturating_sub(raw.read),
        kernel_dropped: raw.kernel_dropped,
        detail: raw.detail,
        user_ns: user.as_nanos() as u64,
        sys_ns: system.as_nanos() as u64,
        cpu_ns_per_record: cpu.total().as_nanos() as f64 / written.max(1) as f64,
        wall_s,
        mb_per_s: p.volume as f64 / 1e6 / wall_s,
        sink_bytes: raw.sink_bytes,
        retry: false,
        skipped: None,
    })
}

/// Run a consumer and a producer on their CPUs and wait for both.
///
/// `done` is set (Release) once the producer has returned, so a consumer that
/// sees it before an empty read knows the transport is drained. A failing
/// consumer sets `abort`, which the producer's stop check polls.
pub fn run_pair<T: Send>(
    p: &StepParams,
    done: &AtomicBool,
    abort: &AtomicBool,
    consumer: impl FnOnce() -> anyhow::Result<T> + Send,
    producer: impl FnOnce() -> io::Result<Produced> + Send,
) -> anyhow::Result<(Produced, T)> {
    let (pc, cc) = cpu::pick_cpus(&p.cpus);
    let hold = p.hold_consumer;
    std::thread::scope(|s| {
        let ch = s.spawn(move || {
            cpu::pin_current_thread(cc);
            while hold && !done.load(Ordering::Acquire) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            // Stops the producer if the consumer fails or panics.
            let guard = SetOnDrop(abort);
            let r = consumer();
            if r.is_ok() {
                std::mem::forget(guard);
            }
            r
        });
        let ph = s.spawn(move || {
            cpu::pin_current_thread(pc);
            // Lets the consumer finish even if the producer panics.
            let _done = SetOnDrop(done);
            producer()
        });
        let prod = ph.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        let cons = ch.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        // A consumer failure (full disk) explains a producer failure (EPIPE).
        let cons = cons?;
        Ok((prod?, cons))
    })
}

/// Sets its flag when dropped, including during a panic's unwinding.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// The producer's stop check: Ctrl-C, a failed consumer, or the deadline.
pub fn stop_check<'a>(
    cancel: &'a AtomicBool,
    abort: &'a AtomicBool,
    deadline: Option<Instant>,
) -> impl Fn() -> bool + 'a {
    move || {
        cancel.load(Ordering::Relaxed)
            || abort.load(Ordering::Relaxed)
            || deadline.is_some_and(|d| Instant::now() > d)
    }
}

/// `poll(2)` one or more fds for input, with a timeout in milliseconds.
pub fn poll_in(fds: &[RawFd], timeout_ms: i32) {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: pfds is a valid array of pollfd of the given length.
    unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout_ms) };
}

/// Turn a libc return value into an io::Result.
pub fn cvt(ret: isize) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}
