//! ftrace: the producer writes records to a private instance's trace_marker;
//! the consumer splices each CPU's trace_pipe_raw into the file (and reads
//! the last partial pages at the end). The instance runs with
//! `options/overwrite = 0`, so a full ring buffer refuses new records: the
//! write fails with EBADF, and per_cpu/cpuN/stats counts "dropped events".
//! Buffer is the instance's buffer_size_kb (per CPU).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::pair::{cvt, poll_in, run_pair, stop_check, Raw, StepParams};
use super::producer::{produce, Sent};
use super::rbpage;
use super::sink::Sink;
use super::tracefs::{Instance, Tracefs};

/// The event id of ftrace's print entry (what a trace_marker write becomes).
pub fn print_event_id(fs: &Tracefs) -> Option<u16> {
    std::fs::read_to_string(fs.root().join("events/ftrace/print/id"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

pub fn run(
    p: &StepParams,
    fs: &Tracefs,
    sink: &mut Sink,
    cancel: &AtomicBool,
) -> anyhow::Result<Raw> {
    // The guard comes first so it drops last, after every fd below.
    let inst = Instance::create(fs)?;
    inst.write("tracing_on", "0")?;
    inst.write("options/overwrite", "0")?;
    let kb = p.buffer.div_ceil(1024).max(1);
    inst.write("buffer_size_kb", &kb.to_string()).map_err(|e| {
        anyhow::Error::new(super::BufferRefused(format!(
            "ftrace buffer_size_kb {kb} refused: {e}"
        )))
    })?;
    let page_size = inst
        .read("buffer_subbuf_size_kb")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .map(|k| k * 1024)
        .unwrap_or(4096);
    let cpus = inst.cpus();
    let readers: Vec<File> = cpus
        .iter()
        .map(|c| {
            OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(inst.path(&format!("per_cpu/cpu{c}/trace_pipe_raw")))
        })
        .collect::<io::Result<_>>()?;
    let marker = OpenOptions::new()
        .write(true)
        .open(inst.path("trace_marker"))?;
    inst.write("tracing_on", "1")?;

    let done = AtomicBool::new(false);
    let abort = AtomicBool::new(false);
    let stop = stop_check(cancel, &abort, p.deadline);
    let records = p.records();
    let rs = p.record_size;
    let mfd = marker.as_raw_fd();
    let rfds: Vec<RawFd> = readers.iter().map(|f| f.as_raw_fd()).collect();
    let (produced, ended) = run_pair(
        p,
        &done,
        &abort,
        || consume(&rfds, page_size, sink, &done, cancel),
        move || {
            produce(records, rs, &stop, |rec| {
                // SAFETY: writing a valid slice to an fd we own.
                let n = unsafe { libc::write(mfd, rec.as_ptr().cast(), rec.len()) };
                match cvt(n) {
                    Ok(n) if n == rec.len() => Ok(Sent::Accepted),
                    Ok(n) => Err(io::Error::other(format!(
                        "trace_marker took {n} of {} bytes",
                        rec.len()
                    ))),
                    // A full non-overwriting ring buffer: the record is lost.
                    Err(e) if e.raw_os_error() == Some(libc::EBADF) => Ok(Sent::Refused),
                    Err(e) => Err(e),
                }
            })
        },
    )?;
    inst.write("tracing_on", "0")?;
    let dropped_k = inst.stat_sum("dropped events") + inst.stat_sum("overrun");
    let read_k = inst.stat_sum("read events");
    let left = inst.stat_sum("entries");
    drop(marker);
    drop(readers);
    // Count what the file holds when there is one; /dev/null leaves only
    // the kernel's own read counter.
    sink.flush()?;
    let (read, how) = match sink.path() {
        Some(path) => {
            let n = rbpage::count_file(path, page_size, print_event_id(fs))?;
            (n, "records in file")
        }
        None => (read_k, "kernel read events"),
    };
    Ok(Raw {
        read,
        ended,
        kernel_dropped: Some(dropped_k),
        detail: format!(
            "producer EBADF {}, kernel dropped events {dropped_k}, kernel read events {read_k}, \
             left in buffer {left}, counted from {how}",
            produced.refused
        ),
        sink_bytes: sink.written(),
        produced,
    })
}

/// Splice full pages from every CPU's trace_pipe_raw into the sink until the
/// producer is done and nothing is left, then read the partial pages.
fn consume(
    rfds: &[RawFd],
    page_size: usize,
    sink: &mut Sink,
    done: &AtomicBool,
    cancel: &AtomicBool,
) -> anyhow::Result<Instant> {
    let mut pfd = [0 as RawFd; 2];
    // SAFETY: pipe2 fills two fds we then own.
    cvt(unsafe { libc::pipe2(pfd.as_mut_ptr(), libc::O_CLOEXEC) } as isize)?;
    let (pr, pw) = unsafe { (OwnedFd::from_raw_fd(pfd[0]), OwnedFd::from_raw_fd(pfd[1])) };
    let chunk = 16 * page_size;
    // SAFETY: fcntl on an fd we own; a failure leaves the default 64 KiB.
    unsafe {
        libc::fcntl(
            pw.as_raw_fd(),
            libc::F_SETPIPE_SZ,
            (4 * chunk) as libc::c_int,
        )
    };
    let sfd = sink.raw_fd();
    loop {
        let finished = done.load(Ordering::Acquire);
        let mut moved = false;
        for &fd in rfds {
            loop {
                // SAFETY: splice between fds we own.
                let n = unsafe {
                    libc::splice(
                        fd,
                        std::ptr::null_mut(),
                        pw.as_raw_fd(),
                        std::ptr::null_mut(),
                        chunk,
                        libc::SPLICE_F_NONBLOCK | libc::SPLICE_F_MOVE,
                    )
                };
                match cvt(n) {
                    Ok(0) => break,
                    Ok(n) => {
                        moved = true;
                        drain_pipe(pr.as_raw_fd(), sfd, n, sink)?;
                    }
                    Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                    Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => break,
                    Err(e) => return Err(anyhow::anyhow!("splice trace_pipe_raw: {e}")),
                }
            }
        }
        if cancel.load(Ordering::Relaxed) {
            break;
        }
        if !moved {
            if finished {
                break;
            }
            poll_in(rfds, 1);
        }
    }
    // The last, partly filled pages: read() hands them out, splice does not.
    let mut page = vec![0u8; page_size];
    for &fd in rfds {
        loop {
            // SAFETY: reading into our own buffer.
            let n = unsafe { libc::read(fd, page.as_mut_ptr().cast(), page.len()) };
            match cvt(n) {
                Ok(0) => break,
                Ok(n) => {
                    // Keep whole pages in the file so it can be parsed.
                    page[n..].fill(0);
                    sink.write(&page)?;
                }
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(_) => break,
            }
        }
    }
    sink.flush()?;
    Ok(Instant::now())
}

/// Move exactly `n` bytes from the pipe into the sink's file.
fn drain_pipe(pr: RawFd, sfd: RawFd, mut n: usize, sink: &mut Sink) -> anyhow::Result<()> {
    while n > 0 {
        // SAFETY: splice between fds we own.
        let m = unsafe {
            libc::splice(
                pr,
                std::ptr::null_mut(),
                sfd,
                std::ptr::null_mut(),
                n,
                libc::SPLICE_F_MOVE,
            )
        };
        match cvt(m) {
            Ok(0) => return Err(sink.full_error(io::Error::from_raw_os_error(libc::ENOSPC))),
            Ok(m) => {
                n -= m;
                sink.add_spliced(m as u64);
            }
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(e) => return Err(sink.full_error(e)),
        }
    }
    Ok(())
}
