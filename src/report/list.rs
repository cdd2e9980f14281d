//! `sysdelta list`: one line per stored experiment, within 80 columns.

use std::fmt::Write as _;

use super::escape::{terminal_safe, terminal_safe_lines};
use crate::analysis::list::ListRow;

/// The width `list` keeps to.
const WIDTH: usize = 80;

/// The table `sysdelta list` prints: id, creation time (UTC, to the
/// minute), status, successful measured runs (the report's "ok", without
/// warm-ups), host, label and configs (baseline first). A list of configs
/// that does not fit in 80 columns ends in `+N` for the N not shown; no
/// name is ever cut. Stored strings are shown terminal-safe (an escape
/// sequence in a name is printed as `\x1b`, not sent to the terminal; a
/// newline as `\n`, so each experiment stays one line).
pub fn render(rows: &[ListRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>4} {:<16} {:<11} {:>6} {:<10} {:<12} configs",
        "id", "created (UTC)", "status", "ok", "host", "label"
    );
    for i in rows {
        // "2026-11-26T16:16:48Z" -> "2026-11-26 16:16".
        let created: String = i
            .created_at
            .replacen('T', " ", 1)
            .chars()
            .take(16)
            .collect();
        let head = format!(
            "{:>4} {:<16} {:<11} {:>6} {:<10} {:<12} ",
            i.id,
            terminal_safe(&created),
            terminal_safe(i.status.as_str()),
            i.runs_ok,
            terminal_safe(&i.host),
            terminal_safe(i.label.as_deref().unwrap_or("-")),
        );
        let configs: Vec<String> = i.configs.iter().map(|c| terminal_safe(c)).collect();
        let room = WIDTH.saturating_sub(head.chars().count());
        let _ = writeln!(out, "{head}{}", fit(&configs, room));
    }
    terminal_safe_lines(&out)
}

/// What `list` shows of a team store whose server is out of reach: the
/// runs that wait on this machine per experiment, and the other writes
/// (config entered, events, status) that wait with them.
pub fn render_local(runs: &std::collections::BTreeMap<i64, usize>, writes: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{:>4} waiting on this machine", "id");
    for (id, n) in runs {
        let _ = writeln!(out, "{id:>4} {n} run{}", if *n == 1 { "" } else { "s" });
    }
    let _ = writeln!(
        out,
        "     {writes} other write{}",
        if writes == 1 { "" } else { "s" }
    );
    out
}

/// `a, b, c` in at most `room` characters: as many whole names as fit with
/// `+N` for the rest (at least the first name, however long).
fn fit(names: &[String], room: usize) -> String {
    let all = names.join(", ");
    if all.chars().count() <= room || names.len() <= 1 {
        return all;
    }
    let mut shown = names.len() - 1;
    loop {
        let s = format!("{}, +{}", names[..shown].join(", "), names.len() - shown);
        if s.chars().count() <= room || shown == 1 {
            return s;
        }
        shown -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::fit;

    #[test]
    fn configs_that_do_not_fit_end_in_a_count_never_in_half_a_name() {
        let n = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(fit(&n(&["a", "b"]), 20), "a, b");
        assert_eq!(
            fit(&n(&["patched-thp-a", "patched-thp-b", "base"]), 20),
            "patched-thp-a, +2"
        );
        assert_eq!(
            fit(&n(&["a-very-long-config-name"]), 5),
            "a-very-long-config-name"
        );
    }
}
