//! The "daemon running" part of tracing: one thread per CPU splices that
//! CPU's `trace_pipe_raw` into a file (as trace-cmd record does), from just
//! before a run until just after it. Used by trace_reader and blktrace.
//!
//! Threads rather than processes: a SIGKILL of sysdelta takes them along, so
//! nothing of the reader can outlive a crash (the journal only has to put
//! the tracing state back).

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::{anyhow, Context, Result};

use super::tracefs::{self, CpuStats};
use crate::config::journal::{self, EntryId, JournalHandle, UndoAction};

/// Bytes moved per splice, and the pipe's capacity: 1 MiB, so one wakeup
/// moves many pages (the default 64 KiB pipe loses events under load).
const CHUNK: usize = 1 << 20;

/// tracefs file listing tasks whose trace events are not recorded.
const NOTRACE_PIDS: &str = "set_event_notrace_pid";

/// Per-run capture of every CPU's ring buffer into `dir/<prefix>.cpuN`.
pub struct Capture {
    dir: PathBuf,
    prefix: String,
    /// Empty the ring buffers before each run, so events that piled up
    /// between runs are not written (and counted) as this run's.
    clear: bool,
    /// The lines `set_event_notrace_pid` held before, when the reader
    /// threads are kept out of the trace (see [`Capture::exclude_own_threads`]).
    notrace: Option<Vec<String>>,
    running: Option<Running>,
}

struct Running {
    stop: Arc<AtomicBool>,
    /// Closed on stop, so readers waiting in poll wake at once (POLLHUP)
    /// instead of at the end of their poll timeout.
    wake: OwnedFd,
    threads: Vec<JoinHandle<Result<u64>>>,
    before: Vec<(usize, CpuStats)>,
}

/// What one run's capture produced.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunTotals {
    pub bytes: u64,
    pub lost: u64,
}

impl RunTotals {
    /// The run's metrics `<prefix>_bytes` and `<prefix>_events_lost`.
    pub fn samples(&self, prefix: &str) -> Vec<crate::metric::MetricSamples> {
        vec![
            crate::metric::MetricSamples {
                metric: format!("{prefix}_bytes"),
                values: vec![self.bytes as f64],
            },
            crate::metric::MetricSamples {
                metric: format!("{prefix}_events_lost"),
                values: vec![self.lost as f64],
            },
        ]
    }

    /// The specs of the metrics [`RunTotals::samples`] reports.
    pub fn specs(prefix: &str) -> Vec<crate::metric::MetricSpec> {
        use crate::metric::{Direction, MetricSpec};
        vec![
            MetricSpec::new(&format!("{prefix}_bytes"), "bytes", Direction::Lower),
            MetricSpec::new(&format!("{prefix}_events_lost"), "events", Direction::Lower),
        ]
    }
}

impl Capture {
    /// Start the per-CPU readers of a capture, if it exists (before a run).
    pub fn start_opt(c: &mut Option<Capture>) -> Result<()> {
        match c {
            Some(c) => c.start(),
            None => Ok(()),
        }
    }

    /// Stop the readers of a capture after a run; its metrics under `prefix`.
    pub fn stop_opt(
        c: &mut Option<Capture>,
        prefix: &str,
    ) -> Result<Vec<crate::metric::MetricSamples>> {
        match c {
            Some(c) => Ok(c.stop()?.samples(prefix)),
            None => Ok(Vec::new()),
        }
    }

    pub fn new(dir: &Path, prefix: &str, clear: bool) -> Capture {
        Capture {
            dir: dir.to_path_buf(),
            prefix: prefix.to_string(),
            clear,
            notrace: None,
            running: None,
        }
    }

    /// Keep the reader threads' own system calls out of the trace, as
    /// trace-cmd record does unless told `--no-filter`. A reader that traces
    /// itself feeds itself: with syscall events on, every read of a partial
    /// page is a system call whose events make the next partial page (one
    /// 1 s run once wrote 71 GB this way). Journals how to put
    /// `set_event_notrace_pid` back; does nothing on kernels without it
    /// (before 5.8), where the bounded drain still stops the loop.
    pub fn exclude_own_threads(
        &mut self,
        journal: &JournalHandle,
        owner: &str,
    ) -> Result<Option<EntryId>> {
        let path = tracefs::path(NOTRACE_PIDS);
        if !path.exists() {
            return Ok(None);
        }
        let lines: Vec<String> = tracefs::read(NOTRACE_PIDS)?
            .split_whitespace()
            .map(String::from)
            .collect();
        let id = journal.lock().unwrap().record_all(
            owner,
            vec![UndoAction::WriteLines {
                path,
                lines: lines.clone(),
            }],
        )?;
        self.notrace = Some(lines);
        Ok(id.first().copied())
    }

    /// The files one run writes (one per CPU with a ring buffer).
    pub fn files(&self) -> Result<Vec<PathBuf>> {
        Ok(tracefs::buffer_cpus()?
            .into_iter()
            .map(|c| self.file(c))
            .collect())
    }

    /// One preflight line when `dir` holds something other than a regular
    /// file under a name a capture writes (`<prefix>.cpuN`): a capture
    /// replaces those files (earlier runs' traces), but never follows a
    /// symlink or writes into a device or directory of that name.
    pub fn unsafe_outputs(kind: &str, dir: &Path, prefix: &str) -> Option<String> {
        let is_output = |name: &str| {
            name.strip_prefix(prefix)
                .and_then(|r| r.strip_prefix(".cpu"))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        };
        let bad: Vec<String> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_str().is_some_and(is_output))
            .filter(|e| !e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.path().display().to_string())
            .collect();
        (!bad.is_empty()).then(|| {
            format!(
                "{kind}: {} not a regular file (a trace file goes there; remove it or use another dir)",
                match bad.as_slice() {
                    [one] => format!("{one} is"),
                    many => format!("{} are", many.join(", ")),
                }
            )
        })
    }

    fn file(&self, cpu: usize) -> PathBuf {
        self.dir.join(format!("{}.cpu{cpu}", self.prefix))
    }

    /// Start the readers (after clearing the buffers and reading the loss
    /// counters that the run's losses are counted from).
    pub fn start(&mut self) -> Result<()> {
        self.stop()?;
        if self.clear {
            tracefs::clear_buffers()?;
        }
        let cpus = tracefs::buffer_cpus()?;
        let mut before = Vec::new();
        for &c in &cpus {
            before.push((c, tracefs::cpu_stats(c)?));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (wake_rx, wake) = nix::unistd::pipe()?;
        let wake_rx = Arc::new(wake_rx);
        let mut threads = Vec::new();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        for &c in &cpus {
            // The ring buffer cannot hold more than its size, so a drain
            // that reads more is reading what the drain itself produced.
            let size_kb = tracefs::read(&format!("per_cpu/cpu{c}/buffer_size_kb"))?;
            let drain_limit = tracefs::parse_buffer_size(&size_kb)
                .parse::<u64>()
                .map_or(u64::MAX, |kb| (kb + 4) << 10);
            let raw = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(tracefs::path(&format!("per_cpu/cpu{c}/trace_pipe_raw")))
                .with_context(|| format!("cannot open trace_pipe_raw of cpu{c}"))?;
            // Not through a symlink: one put where a trace file goes would
            // have root overwrite whatever it points to.
            let out = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(self.file(c))
                .with_context(|| format!("cannot create {}", self.file(c).display()))?;
            let stop = stop.clone();
            let wake_rx = wake_rx.clone();
            let tid_tx = tid_tx.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("sysdelta-trace-cpu{c}"))
                    .spawn(move || {
                        let _ = tid_tx.send(nix::unistd::gettid().as_raw().to_string());
                        pump(raw, out, &stop, &wake_rx, drain_limit)
                    })?,
            );
        }
        drop(tid_tx);
        let readers = threads.len();
        // Running before anything else can fail, so stop() ends the threads.
        self.running = Some(Running {
            stop,
            wake,
            threads,
            before,
        });
        if let Some(before) = &self.notrace {
            let mut lines = before.clone();
            // One TID from each thread (each keeps its sender until it ends).
            lines.extend(tid_rx.iter().take(readers));
            journal::write_lines(&tracefs::path(NOTRACE_PIDS), &lines)?;
        }
        Ok(())
    }

    /// Stop the readers after they drained what is in the buffers; return
    /// the bytes written and the events lost during the run.
    pub fn stop(&mut self) -> Result<RunTotals> {
        let Some(r) = self.running.take() else {
            return Ok(RunTotals::default());
        };
        r.stop.store(true, Ordering::SeqCst);
        drop(r.wake);
        let mut totals = RunTotals::default();
        let mut first_err = None;
        for t in r.threads {
            match t.join() {
                Ok(Ok(b)) => totals.bytes += b,
                Ok(Err(e)) => first_err = first_err.or(Some(e)),
                Err(_) => first_err = first_err.or(Some(anyhow!("trace reader thread panicked"))),
            }
        }
        for (c, b) in r.before {
            let a = tracefs::cpu_stats(c)?;
            totals.lost += a.lost().saturating_sub(b.lost());
        }
        if let Some(before) = &self.notrace {
            journal::write_lines(&tracefs::path(NOTRACE_PIDS), before)?;
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(totals),
        }
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// splice(2) without offsets (nix gates it behind a feature we do not enable).
fn splice(from: i32, to: i32, len: usize, flags: libc::c_uint) -> std::io::Result<usize> {
    // SAFETY: both fds are open for the duration of the call; null offsets
    // mean "use the file position".
    let n = unsafe {
        libc::splice(
            from,
            std::ptr::null_mut(),
            to,
            std::ptr::null_mut(),
            len,
            flags | libc::SPLICE_F_MOVE,
        )
    };
    if n < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Free space checked after every this many bytes written.
const SPACE_CHECK_BYTES: u64 = 64 << 20;

/// True when the file system of `f` has less free space than the floor the
/// trace may not eat into: 5% of the file system, at least 2 GiB. A trace of
/// every syscall can write gigabytes a second; filling the disk would also
/// make the store's next commit fail.
fn low_on_space(f: &File) -> bool {
    match nix::sys::statvfs::fstatvfs(f) {
        Ok(st) => {
            let (avail, floor) = avail_and_floor(&st, 20, 2 << 30);
            avail < floor
        }
        Err(_) => false,
    }
}

/// Bytes available on the file system of `st`, and the floor a capture may
/// not eat into: 1/`floor_div` of the file system, at least `floor_min`.
/// Shared by the trace capture and perf_record, which keep different floors.
pub(crate) fn avail_and_floor(
    st: &nix::sys::statvfs::Statvfs,
    floor_div: u64,
    floor_min: u64,
) -> (u64, u64) {
    let frsize = st.fragment_size();
    let avail = st.blocks_available() * frsize;
    let size = st.blocks() * frsize;
    (avail, (size / floor_div).max(floor_min))
}

/// Whether a write failed because the file system (or quota) is full.
fn is_out_of_space(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
}

/// Say once that the reader stopped writing because space ran out.
fn stopped_for_space(total: u64) -> Result<u64> {
    // Stop reading: the ring buffer fills and the kernel counts what it
    // drops, which the run reports as events lost.
    eprintln!(
        "sysdelta: trace reader: stopped writing after {} MiB: the trace file system is \
         nearly full; further events are counted as lost",
        total >> 20
    );
    Ok(total)
}

/// Move one CPU's raw pages to `out` until `stop`, then drain: whole pages by
/// splice (no copy), the last partial page by read (splice only hands out
/// full pages), at most `drain_limit` bytes of it. Stops writing (without
/// failing the run) when the file system runs low on space.
fn pump(
    mut raw: File,
    mut out: File,
    stop: &AtomicBool,
    wake: &OwnedFd,
    drain_limit: u64,
) -> Result<u64> {
    let (pr, pw): (OwnedFd, OwnedFd) = nix::unistd::pipe()?;
    // SAFETY: F_SETPIPE_SZ on our own pipe; failure leaves the default size.
    unsafe { libc::fcntl(pw.as_raw_fd(), libc::F_SETPIPE_SZ, CHUNK as libc::c_int) };
    let mut total = 0u64;
    // Checked before the first write too: a disk that is already nearly
    // full can fill within the first check interval.
    let mut next_check = 0;
    loop {
        if total >= next_check {
            next_check = total + SPACE_CHECK_BYTES;
            if low_on_space(&out) {
                return stopped_for_space(total);
            }
        }
        match splice(
            raw.as_raw_fd(),
            pw.as_raw_fd(),
            CHUNK,
            libc::SPLICE_F_NONBLOCK,
        ) {
            Ok(0) => {}
            Ok(n) => {
                let mut left = n;
                while left > 0 {
                    match splice(pr.as_raw_fd(), out.as_raw_fd(), left, 0) {
                        Ok(m) => left -= m,
                        Err(e) if is_out_of_space(&e) => return stopped_for_space(total),
                        Err(e) => return Err(e).context("splice to the trace file"),
                    }
                }
                total += n as u64;
                continue;
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e).context("splice from trace_pipe_raw"),
        }
        if stop.load(Ordering::SeqCst) {
            break;
        }
        // Wait for data, for stop, or for 50 ms, whichever first (the
        // buffer wakes pollers only at buffer_percent, so the timeout keeps
        // us draining).
        let mut pfds = [raw.as_raw_fd(), wake.as_raw_fd()].map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        });
        // SAFETY: two valid pollfds.
        unsafe { libc::poll(pfds.as_mut_ptr(), 2, 50) };
    }
    let mut page = vec![0u8; 4096];
    let mut drained = 0u64;
    while drained < drain_limit {
        match raw.read(&mut page) {
            Ok(0) => break,
            Ok(n) => {
                match out.write_all(&page[..n]) {
                    Ok(()) => {}
                    Err(e) if is_out_of_space(&e) => return stopped_for_space(total),
                    Err(e) => return Err(e).context("write to the trace file"),
                }
                total += n as u64;
                drained += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e).context("read from trace_pipe_raw"),
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_may_sit_where_trace_files_go() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(Capture::unsafe_outputs("k", d.path(), "trace"), None);
        std::fs::write(d.path().join("trace.cpu0"), "old run").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", d.path().join("other.cpu1")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", d.path().join("trace.cpux")).unwrap();
        assert_eq!(Capture::unsafe_outputs("k", d.path(), "trace"), None);
        std::os::unix::fs::symlink("/etc/hostname", d.path().join("trace.cpu1")).unwrap();
        std::fs::create_dir(d.path().join("trace.cpu12")).unwrap();
        let e = Capture::unsafe_outputs("k", d.path(), "trace").unwrap();
        assert!(e.starts_with("k: ") && e.contains("trace.cpu1") && e.contains("trace.cpu12"));
        assert!(e.contains(" are not a regular file"), "{e}");
        assert!(!e.contains("trace.cpu0"), "{e}");
    }
}
