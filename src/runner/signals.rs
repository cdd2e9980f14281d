//! SIGINT / SIGTERM: the first asks for a clean stop (the run in flight is
//! killed, the entered config is left, the experiment is marked
//! interrupted); the second aborts at once, leaving `sysdelta restore` to
//! undo what the journal holds.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// The exit code of a run stopped by a signal (the first or the second).
pub const INTERRUPTED: i32 = 130;

/// Install the handlers; returns the flag the first signal sets.
pub fn install() -> anyhow::Result<Arc<AtomicBool>> {
    let cancel = Arc::new(AtomicBool::new(false));
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    let flag = cancel.clone();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                if flag.swap(true, Ordering::SeqCst) {
                    crate::sys::stderr::say!("sysdelta: second signal: aborting now; run `sysdelta restore` if a config was entered");
                    crate::process::kill_current_group();
                    // 130 whatever the signal: the README's one code for
                    // "interrupted".
                    std::process::exit(INTERRUPTED);
                }
                crate::sys::stderr::say!("sysdelta: signal {sig}: stopping after the current config is torn down (again to abort)");
            }
        })?;
    Ok(cancel)
}
