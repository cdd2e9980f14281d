//! The machine-wide lock a real experiment holds (`runner::machine`), taken
//! by the tests that change shared kernel state (sysctls, tracefs, cgroups,
//! swap, loop devices).
//!
//! Why the lock, and not a run directory of the test's own: a private
//! `SYSDELTA_RUN_DIR` keeps a test's stores out of the machine's register,
//! but the kernel state is still one. A user's experiment beside
//! `cargo test` then reads a sysctl or a trace buffer the test just
//! changed, and the test reads what the experiment changed (a real run
//! beside the suite broke `sysconf_kinds`). Holding the machine's own lock,
//! the test waits for an experiment in progress to end, and an experiment
//! started while the test holds it is refused in one line that names the
//! test (its holder line), as a second experiment would be. The sysdelta
//! children these tests start keep their sandbox's run directory, so they
//! never wait for the lock their own test holds.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use sysdelta::runner::machine::MachineLock;

/// What `MachineLock::acquire` says when another process holds the lock.
const HELD: &str = "another sysdelta is changing this machine's state";

/// How long a test waits for an experiment that holds the lock before it
/// skips (`SYSDELTA_TEST_LOCK_WAIT`, seconds; default 20 minutes).
fn patience() -> Duration {
    let secs = std::env::var("SYSDELTA_TEST_LOCK_WAIT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1200);
    Duration::from_secs(secs)
}

/// The machine lock, held until dropped; None, after one `SKIP:` line,
/// where the test cannot hold it (not root, or the lock stayed held for
/// longer than [`patience`]: the line names the holder), and the caller
/// returns without changing anything.
pub fn hold(test: &str) -> Option<MachineLock> {
    if !super::is_root() {
        super::skip(format!("{test}: not root"));
        return None;
    }
    let start = Instant::now();
    let mut said = false;
    loop {
        // acquire never blocks: it refuses, naming the holder, while
        // another process (or another test of this binary) holds it.
        match MachineLock::acquire(None, &format!("cargo test: {test}")) {
            Ok(l) => return Some(l),
            // Only a lock someone holds is waited for; a run directory that
            // cannot be made would not change by waiting.
            Err(e) if !format!("{e:#}").contains(HELD) => {
                super::skip(format!("{test}: cannot take the machine lock: {e:#}"));
                return None;
            }
            Err(e) if start.elapsed() < patience() => {
                if !said && start.elapsed() > Duration::from_secs(5) {
                    said = true;
                    super::note(format!("{test}: waiting for the machine lock: {e:#}"));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => {
                super::skip(format!("{test}: the machine lock stayed held: {e:#}"));
                return None;
            }
        }
    }
}

/// One test at a time in this binary (`mutex`), and, for root, none beside
/// a real experiment (the machine lock); held until dropped.
pub struct Serial {
    _machine: Option<MachineLock>,
    _one: MutexGuard<'static, ()>,
}

/// [`Serial`] for the test running on this thread (libtest names the
/// thread after it); None, after a `SKIP:` line, when the machine lock
/// stayed held (see [`hold`]). Not root, the test cannot change the
/// machine, so only the mutex is taken.
pub fn serial(mutex: &'static Mutex<()>) -> Option<Serial> {
    let one = mutex.lock().unwrap_or_else(|e| e.into_inner());
    let machine = match super::is_root() {
        true => {
            let me = std::thread::current();
            Some(hold(me.name().unwrap_or("a test"))?)
        }
        false => None,
    };
    Some(Serial {
        _machine: machine,
        _one: one,
    })
}
