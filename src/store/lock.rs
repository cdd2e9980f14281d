//! Waiting a moment for a store's exclusive lock, for the commands that
//! must hold it (`run`, `restore`).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::Store;
use crate::error::bad;

/// Take the store's exclusive lock ([`Store::try_lock`]), or say who has it.
///
/// Tried for a second before refusing: another sysdelta's check of what
/// dead runs left (`runner::machine::refuse_leftovers`) holds a store's
/// lock for an instant, and folding a dead run's log for a moment.
pub fn lock_waiting(path: &Path) -> Result<nix::fcntl::Flock<std::fs::File>> {
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        if let Some(l) = Store::try_lock(path)? {
            return Ok(l);
        }
        if Instant::now() >= deadline {
            return Err(bad(format!(
                "{}: in use by another running sysdelta; wait for it or stop it first",
                path.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
