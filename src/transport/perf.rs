//! perf: records as samples in a perf mmap ring.
//!
//! The natural producer, ftrace:print samples of trace_marker writes, does
//! not reach perf on kernels that keep trace_marker writes inside the ftrace
//! ring (a counting perf event on ftrace:print counted 0 of 1 trace_marker
//! writes on 6.18). So the stream used here is the one every kernel with syscall tracepoints offers:
//! the producer `write()`s each record to /dev/null, and a perf event on the
//! `syscalls:sys_enter_write` tracepoint of the producer thread takes one
//! sample per write carrying `record_size` bytes (rounded up to 8) copied
//! from the producer's user stack (`PERF_SAMPLE_STACK_USER`). The bytes are
//! stack, not the record itself, so the copy cost per record is the same but
//! sequence numbers cannot be checked. The consumer reads the mmap ring and
//! writes each sample's bytes to the file; the kernel never refuses a
//! sample, it reports what it could not store in `PERF_RECORD_LOST`.
//! Buffer is the ring's data size (a power of two of pages).

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use super::pair::{cvt, poll_in, run_pair, stop_check, Raw, StepParams};
use super::producer::{produce, Sent};
use super::sink::Sink;
use super::tracefs::Tracefs;
use crate::error::Error;
use crate::sys::perf::{
    perf_event_open, PerfEventAttr, FLAG_WATERMARK, PERF_RECORD_LOST, PERF_RECORD_SAMPLE,
    PERF_TYPE_TRACEPOINT,
};

const PERF_SAMPLE_STACK_USER: u64 = 1 << 13;
const PAGE: usize = 4096;

fn tracepoint_id(fs: &Tracefs, event: &str) -> Option<u64> {
    std::fs::read_to_string(fs.root().join("events").join(event).join("id"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// A tracepoint event sampled at every hit, with `stack_user` bytes of the
/// user stack per sample, waking the reader every `watermark` bytes (0: at
/// every sample).
fn attr(config: u64, sample_type: u64, stack_user: u32, watermark: u32) -> PerfEventAttr {
    let mut a = PerfEventAttr {
        sample_period: 1,
        sample_type,
        sample_stack_user: stack_user,
        ..PerfEventAttr::new(PERF_TYPE_TRACEPOINT, config)
    };
    if watermark > 0 {
        a.flags = FLAG_WATERMARK;
        a.wakeup_events = watermark;
    }
    a
}

/// The event for thread `tid` (0: this one) on any CPU.
fn perf_open(a: &PerfEventAttr, tid: libc::pid_t) -> std::io::Result<OwnedFd> {
    perf_event_open(a, tid, -1)
}

/// Ok(()) when this kernel offers the perf stream used here.
pub fn probe(fs: &Tracefs) -> Result<(), Error> {
    let id = tracepoint_id(fs, "syscalls/sys_enter_write").ok_or_else(|| {
        Error::failed("no syscalls:sys_enter_write tracepoint (CONFIG_FTRACE_SYSCALLS off)")
    })?;
    perf_open(&attr(id, PERF_SAMPLE_STACK_USER, 104, 0), 0)
        .map(|_| ())
        .map_err(|e| Error::failed(format!("perf_event_open(syscalls:sys_enter_write): {e}")))
}

/// The mmap'ed ring of one perf event; unmapped on drop.
struct Ring {
    base: *mut u8,
    len: usize,
    data_off: usize,
    data_size: usize,
}

// SAFETY: the mapping is only used by the consumer thread that owns the Ring.
unsafe impl Send for Ring {}

impl Ring {
    fn map(fd: RawFd, data_size: usize) -> std::io::Result<Ring> {
        let len = PAGE + data_size;
        // SAFETY: mapping a perf fd read-write (so data_tail is honoured and
        // the kernel does not overwrite unread data).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let base = p as *mut u8;
        // perf_event_mmap_page: data_offset at 1040, data_size at 1048.
        let (off, size) = unsafe {
            (
                std::ptr::read_volatile(base.add(1040) as *const u64) as usize,
                std::ptr::read_volatile(base.add(1048) as *const u64) as usize,
            )
        };
        Ok(Ring {
            base,
            len,
            data_off: if off == 0 { PAGE } else { off },
            data_size: if size == 0 { data_size } else { size },
        })
    }

    fn head(&self) -> u64 {
        // SAFETY: data_head lives at offset 1024 of the control page.
        let h = unsafe { std::ptr::read_volatile(self.base.add(1024) as *const u64) };
        fence(Ordering::Acquire);
        h
    }

    fn set_tail(&self, tail: u64) {
        fence(Ordering::Release);
        // SAFETY: data_tail lives at offset 1032 of the control page.
        unsafe { std::ptr::write_volatile(self.base.add(1032) as *mut u64, tail) };
    }

    /// Copy `out.len()` bytes starting at ring position `pos` (wrapping).
    fn copy(&self, pos: u64, out: &mut [u8]) {
        let start = (pos % self.data_size as u64) as usize;
        let first = out.len().min(self.data_size - start);
        // SAFETY: both ranges lie inside the mapped data area.
        unsafe {
            let data = self.base.add(self.data_off);
            std::ptr::copy_nonoverlapping(data.add(start), out.as_mut_ptr(), first);
            std::ptr::copy_nonoverlapping(data, out.as_mut_ptr().add(first), out.len() - first);
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmapping what `map` mapped.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// What the perf consumer saw.
struct Got {
    samples: u64,
    lost: u64,
    ended: Instant,
}

/// Data area for a requested buffer: a power of two of pages, at least one.
pub fn ring_size(buffer: u64) -> usize {
    (buffer.max(PAGE as u64) as usize).next_power_of_two()
}

pub fn run(
    p: &StepParams,
    fs: &Tracefs,
    sink: &mut Sink,
    cancel: &AtomicBool,
) -> anyhow::Result<Raw> {
    let id = tracepoint_id(fs, "syscalls/sys_enter_write")
        .ok_or_else(|| anyhow::anyhow!("no syscalls:sys_enter_write tracepoint"))?;
    let stack = p.record_size.div_ceil(8) * 8;
    let data_size = ring_size(p.buffer);
    let devnull = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
    let dfd = devnull.as_raw_fd();
    let done = AtomicBool::new(false);
    let abort = AtomicBool::new(false);
    let stop = stop_check(cancel, &abort, p.deadline);
    let records = p.records();
    let rs = p.record_size;
    // The producer sends its thread id; the consumer opens the event on it
    // and answers "go" (true) or "failed" (false).
    let (tid_tx, tid_rx) = mpsc::channel::<libc::pid_t>();
    let (go_tx, go_rx) = mpsc::channel::<bool>();
    // "finished": the producer wrote its last record; "drained": the
    // consumer has read everything, so the producer's one extra write now
    // makes the kernel emit any PERF_RECORD_LOST it still holds (the kernel
    // writes that record only before the next sample it can store).
    let (fin_tx, fin_rx) = mpsc::channel::<()>();
    let (drained_tx, drained_rx) = mpsc::channel::<()>();
    let hold = p.hold_consumer;
    // The consumer must open the event before the producer starts, so a
    // held consumer waits after that, here, not in run_pair.
    let unheld = StepParams {
        hold_consumer: false,
        ..p.clone()
    };
    let (produced, got) = run_pair(
        &unheld,
        &done,
        &abort,
        || {
            let (go, tid_rx, fin_rx, drained_tx) = (go_tx, tid_rx, fin_rx, drained_tx);
            let tid = tid_rx.recv()?;
            let a = attr(
                id,
                PERF_SAMPLE_STACK_USER,
                stack as u32,
                (data_size / 4) as u32,
            );
            let opened = perf_open(&a, tid).and_then(|fd| {
                let ring = Ring::map(fd.as_raw_fd(), data_size)?;
                Ok((fd, ring))
            });
            let (fd, ring) = match opened {
                Ok(x) => x,
                Err(e) => {
                    let _ = go.send(false);
                    return Err(anyhow::anyhow!("perf event on sys_enter_write: {e}"));
                }
            };
            let _ = go.send(true);
            let mut finished = false;
            if hold {
                let _ = fin_rx.recv();
                finished = true;
            }
            let ends = Ends {
                fin_rx,
                finished,
                drained_tx,
            };
            consume(&ring, fd.as_raw_fd(), rs, sink, ends, cancel)
        },
        move || {
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() };
            let _ = tid_tx.send(tid);
            if go_rx.recv() != Ok(true) {
                return Err(std::io::Error::other("perf consumer did not start"));
            }
            let write = |rec: &[u8]| {
                // SAFETY: writing a valid slice to /dev/null.
                let n = unsafe { libc::write(dfd, rec.as_ptr().cast(), rec.len()) };
                cvt(n).map(|_| Sent::Accepted)
            };
            let r = produce(records, rs, &stop, write);
            let _ = fin_tx.send(());
            if drained_rx.recv().is_ok() {
                write(&[0u8; 8])?;
            }
            r
        },
    )?;
    Ok(Raw {
        read: got.samples,
        ended: got.ended,
        kernel_dropped: Some(got.lost),
        detail: format!(
            "PERF_RECORD_LOST {}, ring {} bytes, {stack} bytes of user stack per sample",
            got.lost, data_size
        ),
        sink_bytes: sink.written(),
        produced,
    })
}

/// The consumer's side of the end-of-step handshake.
struct Ends {
    fin_rx: mpsc::Receiver<()>,
    finished: bool,
    drained_tx: mpsc::Sender<()>,
}

/// Read samples until the producer has finished and the ring is empty, then
/// collect the LOST record the producer's flush write releases (its sample is
/// not a record and is not counted).
fn consume(
    ring: &Ring,
    fd: RawFd,
    record_size: usize,
    sink: &mut Sink,
    mut ends: Ends,
    cancel: &AtomicBool,
) -> anyhow::Result<Got> {
    let mut got = Got {
        samples: 0,
        lost: 0,
        ended: Instant::now(),
    };
    let mut tail = 0u64;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        if !ends.finished {
            ends.finished = !matches!(ends.fin_rx.try_recv(), Err(mpsc::TryRecvError::Empty));
        }
        let finished = ends.finished;
        let head = ring.head();
        if head == tail {
            if finished || cancel.load(Ordering::Relaxed) {
                break;
            }
            poll_in(&[fd], 5);
            continue;
        }
        tail = read_records(
            ring,
            tail,
            head,
            &mut buf,
            &mut got,
            Some((record_size, &mut *sink)),
        )?;
    }
    sink.flush()?;
    got.ended = Instant::now();
    let _ = ends.drained_tx.send(());
    // The flush sample arrives within microseconds; the bound only guards
    // against a producer that failed before writing it.
    let until = Instant::now() + std::time::Duration::from_secs(2);
    let before = got.samples;
    while got.samples == before && Instant::now() < until && !cancel.load(Ordering::Relaxed) {
        let head = ring.head();
        if head == tail {
            poll_in(&[fd], 5);
            continue;
        }
        tail = read_records(ring, tail, head, &mut buf, &mut got, None)?;
    }
    got.samples = before;
    Ok(got)
}

/// Read the records between `tail` and `head`; samples go to the sink when
/// one is given. Returns the new tail (also handed back to the kernel).
fn read_records(
    ring: &Ring,
    mut tail: u64,
    head: u64,
    buf: &mut [u8],
    got: &mut Got,
    mut sink: Option<(usize, &mut Sink)>,
) -> anyhow::Result<u64> {
    let mut hdr = [0u8; 8];
    while tail < head {
        ring.copy(tail, &mut hdr);
        let ty = u32::from_le_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]);
        let size = u16::from_le_bytes([hdr[6], hdr[7]]) as usize;
        if size < 8 {
            anyhow::bail!("perf ring: record of size {size} at {tail}");
        }
        let body = &mut buf[..size - 8];
        ring.copy(tail + 8, body);
        match ty {
            PERF_RECORD_SAMPLE => {
                got.samples += 1;
                if let Some((record_size, sink)) = sink.as_mut() {
                    // u64 size, then the stack bytes, then u64 dyn_size.
                    let n = size.saturating_sub(24).min(*record_size);
                    sink.write(&body[8..8 + n])?;
                }
            }
            PERF_RECORD_LOST if body.len() >= 16 => {
                got.lost += u64::from_le_bytes(body[8..16].try_into().unwrap_or([0; 8]));
            }
            _ => {}
        }
        tail += size as u64;
    }
    ring.set_tail(tail);
    Ok(tail)
}
