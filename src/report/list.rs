//! `sysdelta list`: one line per stored experiment.

use std::fmt::Write as _;

use anyhow::Result;

use super::escape::{terminal_safe, terminal_safe_lines};
use crate::store::Store;

/// The table `sysdelta list` prints: id, name, label, status, creation time
/// and successful measured runs. Stored strings are shown terminal-safe (an
/// escape sequence in a name is printed as `\x1b`, not sent to the
/// terminal; a newline as `\n`, so each experiment stays one line).
pub fn render(store: &Store) -> Result<String> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>4}  {:<20} {:<16} {:<12} {:<20} {:>5}",
        "id", "name", "label", "status", "created", "runs"
    );
    for id in store.experiment_ids()? {
        let d = store.load(id)?;
        let i = &d.info;
        let ok = d.runs.iter().filter(|r| r.is_measured_ok()).count();
        let _ = writeln!(
            out,
            "{:>4}  {:<20} {:<16} {:<12} {:<20} {:>5}",
            i.id,
            terminal_safe(&i.name),
            terminal_safe(i.label.as_deref().unwrap_or("-")),
            terminal_safe(i.status.as_str()),
            terminal_safe(&i.created_at),
            ok
        );
    }
    Ok(terminal_safe_lines(&out))
}
