//! Writes to sysfs, procfs and tracefs files, the way those files expect
//! them: one write(2) per value, or a truncation then one write per line.
//! Separate from the state journal, which only records and replays undos:
//! config kinds, workloads and the journal's replay all write through here.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

use crate::sys::mount::unmount;

/// Where tracefs is mounted.
pub const TRACEFS: &str = "/sys/kernel/tracing";

/// Run `f` (a write under tracefs) with tracefs mounted: if the journal
/// outlived the mount (someone unmounted it after a crash), mount it for
/// the write and unmount it again.
pub fn with_tracefs(path: &Path, f: impl FnOnce() -> Result<()>) -> Result<()> {
    let tracefs = Path::new(TRACEFS);
    if !path.starts_with(tracefs) || tracefs.join("trace").exists() {
        return f();
    }
    nix::mount::mount(
        Some("tracefs"),
        tracefs,
        Some("tracefs"),
        nix::mount::MsFlags::empty(),
        None::<&str>,
    )
    .context("cannot mount tracefs to restore it")?;
    let r = f();
    let u = unmount(tracefs);
    r.and(u)
}

/// Truncate, then one write per line (tracefs `set_event`).
pub fn write_lines(path: &Path, lines: &[String]) -> Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    for line in lines.iter().filter(|l| !l.trim().is_empty()) {
        f.write_all(line.trim().as_bytes())
            .with_context(|| format!("cannot write {:?} to {}", line, path.display()))?;
    }
    Ok(())
}

/// Write a value to a sysfs/procfs/tracefs file with a single write(2),
/// which is what those files expect.
pub fn write_value(path: &Path, value: &str) -> Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let v = if value.is_empty() { "\n" } else { value };
    f.write_all(v.as_bytes())
        .with_context(|| format!("cannot write {:?} to {}", value.trim_end(), path.display()))
}
