//! The watchdog: one long-lived thread that ends a measured child early
//! when its timeout passes or its caller's cancel flag is set, and bounds
//! its stderr while it runs.
//!
//! Why a thread: the measuring thread sleeps in a blocking wait for the
//! child, as a plain spawn-and-wait loop (hyperfine's) does, so the child's
//! exit is its only wake-up and nothing is set up or torn down per run for
//! the watching (a pidfd and `poll` per run cost about 5 µs of the 80 µs
//! of CPU sysdelta spent on each run). The watchdog looks at the children
//! in flight every [`TICK`]; killing a child's process group ends the
//! measuring thread's wait. A timeout or a cancel therefore takes effect up
//! to one tick late. With nothing to watch for a second it parks until the
//! next child, so an idle sysdelta does not wake; back-to-back runs never
//! find it parked, so they pay no wake-up for it.

use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use super::output::punch_head;

/// How often the watchdog looks at the children in flight.
pub const TICK: Duration = Duration::from_millis(20);

/// A child in flight, as the watchdog sees it.
struct Entry {
    pid: libc::pid_t,
    deadline: Option<Instant>,
    cancel: *const AtomicBool,
    stderr: RawFd,
    keep: u64,
    punched: u64,
    timed_out: bool,
    cancelled: bool,
}

// SAFETY: `cancel` and `stderr` are used by the watchdog only while the
// entry is listed, under the list's lock; [`Watch`] unlists it (under the
// same lock) before the flag and the file it borrowed can go away.
unsafe impl Send for Entry {}

static LIST: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
static STARTED: OnceLock<bool> = OnceLock::new();
/// Set (under LIST's lock) while the watchdog waits on WAKE.
static PARKED: AtomicBool = AtomicBool::new(false);
static WAKE: Condvar = Condvar::new();
/// Park after this long with nothing to watch.
const PARK_AFTER: Duration = Duration::from_secs(1);

fn list() -> MutexGuard<'static, Vec<Entry>> {
    LIST.lock().unwrap_or_else(|e| e.into_inner())
}

/// A watched child; unlisted when ended or dropped (also while unwinding).
pub struct Watch<'a> {
    pid: libc::pid_t,
    _borrows: std::marker::PhantomData<(&'a AtomicBool, BorrowedFd<'a>)>,
}

/// Watch child `pid` (the leader of its own process group) until the
/// returned [`Watch`] ends: kill the group at `deadline` or once `cancel`
/// is set, and keep `stderr` to its last `keep` bytes.
///
/// # Safety
///
/// The returned [`Watch`] must be ended or dropped, never leaked (e.g. by
/// `std::mem::forget`): until then the watchdog thread reads `cancel` and
/// uses `stderr` through raw pointers the borrow checker cannot follow.
pub unsafe fn watch<'a>(
    pid: libc::pid_t,
    deadline: Option<Instant>,
    cancel: &'a AtomicBool,
    stderr: BorrowedFd<'a>,
    keep: u64,
) -> std::io::Result<Watch<'a>> {
    let started = *STARTED.get_or_init(|| {
        std::thread::Builder::new()
            .name("sysdelta-watchdog".into())
            .spawn(run)
            .is_ok()
    });
    if !started {
        return Err(std::io::Error::other(
            "cannot start the thread that enforces run timeouts",
        ));
    }
    let mut l = list();
    l.push(Entry {
        pid,
        deadline,
        cancel,
        stderr: stderr.as_raw_fd(),
        keep,
        punched: 0,
        timed_out: false,
        cancelled: false,
    });
    if PARKED.load(Ordering::SeqCst) {
        WAKE.notify_one();
    }
    drop(l);
    Ok(Watch {
        pid,
        _borrows: std::marker::PhantomData,
    })
}

impl Watch<'_> {
    /// Stop watching (the child has exited, not yet reaped, so its pid
    /// cannot have been reused). Returns (timed out?, cancelled?).
    pub fn end(self) -> (bool, bool) {
        unlist(self.pid)
    }
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        unlist(self.pid);
    }
}

fn unlist(pid: libc::pid_t) -> (bool, bool) {
    let mut l = list();
    match l.iter().position(|e| e.pid == pid) {
        Some(i) => {
            let e = l.swap_remove(i);
            (e.timed_out, e.cancelled)
        }
        None => (false, false),
    }
}

/// The watchdog thread: every tick, each child in flight that is past its
/// deadline or whose caller asked to cancel gets its group killed, once. A
/// panic in a tick is caught, so the watching goes on.
fn run() {
    let mut idle_since: Option<Instant> = None;
    loop {
        {
            let mut l = list();
            if !l.is_empty() {
                idle_since = None;
            } else if idle_since.get_or_insert_with(Instant::now).elapsed() >= PARK_AFTER {
                PARKED.store(true, Ordering::SeqCst);
                l = WAKE
                    .wait_while(l, |l| l.is_empty())
                    .unwrap_or_else(|e| e.into_inner());
                PARKED.store(false, Ordering::SeqCst);
                idle_since = None;
            }
        }
        std::thread::sleep(TICK);
        let _ = std::panic::catch_unwind(tick);
    }
}

fn tick() {
    let now = Instant::now();
    for e in list().iter_mut() {
        if !(e.timed_out || e.cancelled) {
            // SAFETY: see `Entry`: the flag outlives the listed entry.
            if unsafe { &*e.cancel }.load(Ordering::SeqCst) {
                e.cancelled = true;
            } else if e.deadline.is_some_and(|d| now >= d) {
                e.timed_out = true;
            }
            if e.timed_out || e.cancelled {
                // SAFETY: plain syscall on the child's process group; the
                // child is not reaped while it is listed.
                unsafe { libc::kill(-e.pid, libc::SIGKILL) };
            }
        }
        // SAFETY: see `Entry`: the file outlives the listed entry.
        let fd = unsafe { BorrowedFd::borrow_raw(e.stderr) };
        punch_head(fd, e.keep, &mut e.punched);
    }
}
