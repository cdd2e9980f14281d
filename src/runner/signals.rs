//! SIGINT / SIGTERM: the first asks for a clean stop (the run in flight is
//! killed, the entered config is left, the experiment is marked
//! interrupted); the second aborts at once, leaving `sysdelta restore` to
//! undo what the journal holds.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// The exit code of a run stopped by a signal (the first or the second).
pub const INTERRUPTED: i32 = 130;

/// Install the handlers; returns the flag the first signal sets.
///
/// The flag is set inside the signal handler itself
/// (`signal_hook::flag::register`), not by the thread that says what the
/// signal does: the terminal's Ctrl-C reaches sysdelta and the child it
/// waits for at once, and the handler runs before that `wait` returns to
/// the code that reads the flag, where the thread may run only later on a
/// loaded machine. A child that ends with the flag unset was not stopped
/// by our Ctrl-C (bisect's builds rely on it).
pub fn install() -> anyhow::Result<Arc<AtomicBool>> {
    let cancel = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register(sig, cancel.clone())?;
    }
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            // Counted here, not read from the flag, which the handler has
            // set already when the first signal reaches this thread.
            let mut seen = false;
            for sig in signals.forever() {
                if seen {
                    crate::sys::stderr::say!("sysdelta: second signal: aborting now; run `sysdelta restore` if a config was entered");
                    crate::process::kill_current_group();
                    // 130 whatever the signal: the README's one code for
                    // "interrupted".
                    std::process::exit(INTERRUPTED);
                }
                seen = true;
                crate::sys::stderr::say!("sysdelta: signal {sig}: stopping after the current config is torn down (again to abort)");
            }
        })?;
    Ok(cancel)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    /// The flag is set by the time the signal has been taken (its handler
    /// run), not later by the thread: bisect reads it once, right after a
    /// build's `wait` returns. Run in a child process of this test binary,
    /// so the handlers installed stay out of the other tests.
    #[test]
    fn the_first_signal_sets_the_flag_before_it_returns() {
        const CHILD: &str = "SYSDELTA_TEST_SIGNALS_CHILD";
        if std::env::var_os(CHILD).is_some() {
            let cancel = install().unwrap();
            // raise(): the handler runs on this thread before it returns.
            assert_eq!(unsafe { libc::raise(libc::SIGINT) }, 0);
            assert!(cancel.load(Ordering::SeqCst), "not set in the handler");
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "runner::signals::tests::the_first_signal_sets_the_flag_before_it_returns",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{said}");
        // The test ran there (not filtered out), and the first signal
        // asked for a clean stop, not an abort.
        assert!(said.contains("1 passed"), "{said}");
    }
}
