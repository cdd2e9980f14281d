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
