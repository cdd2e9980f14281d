//! The baselines: a pipe and a unix datagram socket pair. The producer writes
//! non-blocking, so a full transport refuses the record (EAGAIN) and the
//! record is lost and counted, as a tracer that must not block would lose it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::pair::{cvt, poll_in, run_pair, stop_check, Raw, StepParams};
use super::producer::{produce, Sent, SeqTracker};
use super::sink::Sink;
use super::BufferRefused;

/// Pipe: buffer is F_SETPIPE_SZ of the pipe; records are at most PIPE_BUF so
/// a non-blocking write is all or nothing. The consumer splices the pipe
/// into the file.
pub fn run_pipe(p: &StepParams, sink: &mut Sink, cancel: &AtomicBool) -> anyhow::Result<Raw> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 fills two fds we then own.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } as isize)?;
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    set_nonblock(wr.as_raw_fd())?;
    let size = p.buffer.min(i32::MAX as u64) as libc::c_int;
    // SAFETY: fcntl on an fd we own.
    if let Err(e) = cvt(unsafe { libc::fcntl(wr.as_raw_fd(), libc::F_SETPIPE_SZ, size) } as isize) {
        let max = std::fs::read_to_string("/proc/sys/fs/pipe-max-size").unwrap_or_default();
        return Err(anyhow::Error::new(BufferRefused(format!(
            "pipe buffer {} refused ({e}): above fs.pipe-max-size = {} needs CAP_SYS_RESOURCE",
            p.buffer,
            max.trim()
        ))));
    }

    let done = AtomicBool::new(false);
    let abort = AtomicBool::new(false);
    let rs = p.record_size;
    let stop = stop_check(cancel, &abort, p.deadline);
    let records = p.records();
    let (produced, (bytes, ended)) = run_pair(
        p,
        &done,
        &abort,
        || {
            // Zero-copy pipe -> file, like the ftrace consumer's splice.
            let mut bytes = 0u64;
            loop {
                match sink.splice_from(rd.as_raw_fd(), 1 << 20)? {
                    0 => break,
                    n => bytes += n as u64,
                }
            }
            Ok((bytes, Instant::now()))
        },
        move || {
            // The write end moves here and closes on return: EOF for the reader.
            let wr = wr;
            produce(records, rs, &stop, |rec| {
                // SAFETY: writing from a valid slice.
                let n = unsafe { libc::write(wr.as_raw_fd(), rec.as_ptr().cast(), rec.len()) };
                sent_or_refused(cvt(n))
            })
        },
    )?;
    if bytes % rs as u64 != 0 {
        anyhow::bail!("pipe: consumer read {bytes} bytes, not a whole number of {rs}-byte records");
    }
    Ok(Raw {
        read: bytes / rs as u64,
        ended,
        kernel_dropped: Some(produced.refused),
        detail: format!("producer EAGAIN {}", produced.refused),
        sink_bytes: sink.written(),
        produced,
    })
}

/// Unix datagram socket pair: buffer is SO_SNDBUF of the producer's socket,
/// which bounds the bytes queued at the peer (a socket pair skips the
/// max_dgram_qlen check).
pub fn run_unix_dgram(p: &StepParams, sink: &mut Sink, cancel: &AtomicBool) -> anyhow::Result<Raw> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: socketpair fills two fds we then own.
    cvt(unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    } as isize)?;
    let (tx, rx) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    set_buffer(
        tx.as_raw_fd(),
        libc::SO_SNDBUFFORCE,
        libc::SO_SNDBUF,
        p.buffer,
    )
    .map_err(buffer_error)?;
    set_buffer(
        rx.as_raw_fd(),
        libc::SO_RCVBUFFORCE,
        libc::SO_RCVBUF,
        p.buffer,
    )
    .map_err(buffer_error)?;
    let done = AtomicBool::new(false);
    let abort = AtomicBool::new(false);
    let stop = stop_check(cancel, &abort, p.deadline);
    let records = p.records();
    let rs = p.record_size;
    let rxfd = rx.as_raw_fd();
    let txfd = tx.as_raw_fd();
    let (produced, got) = run_pair(
        p,
        &done,
        &abort,
        || consume_dgrams(rxfd, rs, sink, &done, cancel),
        move || {
            produce(records, rs, &stop, |rec| {
                // SAFETY: sending from a valid slice on an fd we own.
                let n = unsafe {
                    libc::send(
                        txfd,
                        rec.as_ptr().cast(),
                        rec.len(),
                        libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                    )
                };
                sent_or_refused(cvt(n))
            })
        },
    )?;
    Ok(Raw {
        read: got.read,
        ended: got.ended,
        kernel_dropped: Some(produced.refused),
        detail: format!(
            "producer EAGAIN {}, sequence gaps {}",
            produced.refused,
            got.seq.gaps + got.seq.tail_missing(produced.attempted)
        ),
        sink_bytes: sink.written(),
        produced,
    })
}

/// What a datagram consumer saw.
pub struct DgramGot {
    pub read: u64,
    pub seq: SeqTracker,
    /// recv() calls that failed with ENOBUFS (receiver overrun notices).
    pub enobufs: u64,
    pub ended: Instant,
}

/// Receive datagrams until the producer is done and the socket is empty.
pub fn consume_dgrams(
    fd: RawFd,
    size: usize,
    sink: &mut Sink,
    done: &AtomicBool,
    cancel: &AtomicBool,
) -> anyhow::Result<DgramGot> {
    // Up to BATCH datagrams per recvmmsg(2), so the consumer's syscall cost
    // is amortised the way splice amortises it for ftrace and pipe.
    const BATCH: usize = 64;
    let slot = size.max(1);
    let mut bufs = vec![0u8; slot * BATCH];
    let mut iovs: Vec<libc::iovec> = (0..BATCH)
        .map(|i| libc::iovec {
            iov_base: bufs[i * slot..].as_mut_ptr().cast(),
            iov_len: slot,
        })
        .collect();
    // SAFETY: mmsghdr is plain data; zeroed is a valid empty header.
    let mut msgs: Vec<libc::mmsghdr> = (0..BATCH)
        .map(|i| {
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_iov = &mut iovs[i];
            m.msg_hdr.msg_iovlen = 1;
            m
        })
        .collect();
    let mut got = DgramGot {
        read: 0,
        seq: SeqTracker::default(),
        enobufs: 0,
        ended: Instant::now(),
    };
    loop {
        // Read `done` before receiving: if it was set and the queue is then
        // empty, every record the producer sent has been received.
        let finished = done.load(Ordering::Acquire);
        // SAFETY: msgs points at BATCH headers whose iovecs point into bufs.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        match cvt(n as isize) {
            Ok(n) => {
                for (i, m) in msgs.iter().enumerate().take(n) {
                    let rec = &bufs[i * slot..i * slot + (m.msg_len as usize).min(slot)];
                    got.read += 1;
                    got.seq.see(rec);
                    sink.write(rec)?;
                }
            }
            Err(e) => match e.raw_os_error() {
                Some(libc::EAGAIN) => {
                    if finished || cancel.load(Ordering::Relaxed) {
                        break;
                    }
                    poll_in(&[fd], 5);
                }
                Some(libc::ENOBUFS) => got.enobufs += 1,
                Some(libc::EINTR) => {}
                _ => return Err(e.into()),
            },
        }
    }
    sink.flush()?;
    got.ended = Instant::now();
    Ok(got)
}

/// Map a non-blocking write's result: EAGAIN means "full, record lost".
pub fn sent_or_refused(r: io::Result<usize>) -> io::Result<Sent> {
    match r {
        Ok(_) => Ok(Sent::Accepted),
        Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => Ok(Sent::Refused),
        Err(e) => Err(e),
    }
}

fn set_nonblock(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl flag manipulation on a valid fd.
    let fl = cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) } as isize)?;
    cvt(unsafe { libc::fcntl(fd, libc::F_SETFL, fl as libc::c_int | libc::O_NONBLOCK) } as isize)?;
    Ok(())
}

/// Turn a [`set_buffer`] error into an anyhow error, keeping a
/// [`BufferRefused`] recognisable to the sweep.
pub fn buffer_error(e: io::Error) -> anyhow::Error {
    let refused = e
        .get_ref()
        .and_then(|i| i.downcast_ref::<BufferRefused>())
        .map(|b| b.0.clone());
    match refused {
        Some(msg) => anyhow::Error::new(BufferRefused(msg)),
        None => anyhow::anyhow!("setting a socket buffer: {e}"),
    }
}

/// Set a socket buffer: the FORCE option (root, may exceed the sysctl
/// maximum) first, the plain one otherwise.
pub fn set_buffer(fd: RawFd, force: libc::c_int, plain: libc::c_int, bytes: u64) -> io::Result<()> {
    let v: libc::c_int = bytes.min(i32::MAX as u64 / 2) as libc::c_int;
    let set = |opt| {
        // SAFETY: setsockopt reads one c_int.
        cvt(unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        } as isize)
    };
    set(force).or_else(|_| set(plain))?;
    // The kernel stores twice the request (for its bookkeeping), capped by
    // net.core.[rw]mem_max when the FORCE option was not allowed.
    let mut got: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes one c_int.
    cvt(unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            plain,
            (&mut got as *mut libc::c_int).cast(),
            &mut len,
        )
    } as isize)?;
    if (got as i64) < 2 * v as i64 {
        return Err(io::Error::other(BufferRefused(format!(
            "socket buffer {bytes} capped at {} by the kernel (net.core.rmem_max/wmem_max; \
             the FORCE option needs CAP_NET_ADMIN)",
            got / 2
        ))));
    }
    Ok(())
}
