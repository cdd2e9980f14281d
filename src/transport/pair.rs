//! What every transport shares: the parameters of one step, what a transport
//! reports back, and the producer/consumer pair it runs on pinned CPUs.
//!
//! Kept apart from `step`, which picks the transport for a step: the
//! transports import these and `step` imports the transports, so with both in
//! one file the two would import each other.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::producer::Produced;
use super::sink::SinkTarget;
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
