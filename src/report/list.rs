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
/// newline as `\n`, so each experiment stays one line). Below the table, a
/// line per experiment with runs left out (a kexec boot that failed its
/// machine audit) says how many, as its report's header does; then a line
/// per named baseline (`--save-baseline NAME`) with the experiment it
/// points at.
pub fn render(rows: &[ListRow]) -> String {
    let created = |i: &ListRow| -> String {
        // "2026-11-26T16:16:48Z" -> "2026-11-26 16:16".
        i.created_at
            .replacen('T', " ", 1)
            .chars()
            .take(16)
            .collect()
    };
    let label = |i: &ListRow| terminal_safe(i.label.as_deref().unwrap_or("-"));
    // Host and label columns as wide as their longest value (a fleet's
    // host names are longer than the 10 columns they once had, and pushed
    // every row after theirs out of line); the configs take what is left.
    let width = |min: usize, f: &dyn Fn(&ListRow) -> String| {
        rows.iter()
            .map(|i| f(i).chars().count())
            .fold(min, usize::max)
    };
    let width = |min, f: &dyn Fn(&ListRow) -> String| crate::sys::visible::column(width(min, f));
    let host_w = width(10, &|i| terminal_safe(&i.host));
    let label_w = width(12, &label);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>4} {:<16} {:<11} {:>6} {:<host_w$} {:<label_w$} configs",
        "id", "created (UTC)", "status", "ok", "host", "label"
    );
    for i in rows {
        let head = format!(
            "{:>4} {:<16} {:<11} {:>6} {:<host_w$} {:<label_w$} ",
            i.id,
            terminal_safe(&created(i)),
            terminal_safe(i.status.as_str()),
            i.runs_ok,
            terminal_safe(&i.host),
            label(i),
        );
        let configs: Vec<String> = i.configs.iter().map(|c| terminal_safe(c)).collect();
        let room = WIDTH.saturating_sub(head.chars().count());
        let _ = writeln!(out, "{head}{}", fit(&configs, room));
    }
    // "ok" is the report's: runs of a boot that failed its machine audit
    // are not in it, and are said here as the report's header says them.
    for i in rows.iter().filter(|i| i.runs_left_out > 0) {
        let _ = writeln!(
            out,
            "experiment {}: {} left out (machine audit failed), not counted as ok",
            i.id,
            crate::words::count(i.runs_left_out, "run"),
        );
    }
    // Each named baseline and the experiment it points at now.
    for i in rows {
        for name in &i.named_baselines {
            let _ = writeln!(out, "baseline {}: experiment {}", terminal_safe(name), i.id);
        }
    }
    terminal_safe_lines(&out)
}

/// One experiment in `sysdelta list --format json`: a stable shape
/// (documented in docs/reports.md), fields in this order, strings as stored.
#[derive(serde::Serialize)]
struct JsonRow<'a> {
    id: i64,
    /// RFC 3339, UTC: "2026-11-26T16:16:48Z".
    created_at: &'a str,
    status: &'a str,
    /// Successful measured runs, warm-ups aside, that the report counts.
    runs_ok: usize,
    /// Successful measured runs of a boot that failed its machine audit:
    /// the report's "left out" (0 when none).
    runs_left_out: usize,
    host: &'a str,
    label: Option<&'a str>,
    baseline: Option<&'a str>,
    /// Baseline first.
    configs: &'a [String],
    /// The named baselines that point at this experiment now.
    named_baselines: &'a [String],
}

/// `sysdelta list --format json`: a JSON array of experiments, oldest
/// first, one object each (`JsonRow`), ending in a newline.
pub fn json(rows: &[ListRow]) -> anyhow::Result<String> {
    let rows: Vec<JsonRow> = rows
        .iter()
        .map(|i| JsonRow {
            id: i.id,
            created_at: &i.created_at,
            status: i.status.as_str(),
            runs_ok: i.runs_ok,
            runs_left_out: i.runs_left_out,
            host: &i.host,
            label: i.label.as_deref(),
            baseline: i.configs.first().map(String::as_str),
            configs: &i.configs,
            named_baselines: &i.named_baselines,
        })
        .collect();
    // A store's writer chose the labels and hosts: what a terminal acts on
    // is escaped (`escape::json_text`).
    Ok(super::escape::json_text(
        serde_json::to_string_pretty(&rows)? + "\n",
    ))
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
    use super::{fit, json, render, ListRow};
    use crate::status::ExperimentStatus;

    fn row(id: i64, host: &str, label: Option<&str>) -> ListRow {
        ListRow {
            id,
            created_at: "2026-11-26T16:16:48Z".into(),
            status: ExperimentStatus::Complete,
            runs_ok: 20,
            runs_left_out: 0,
            host: host.into(),
            label: label.map(Into::into),
            configs: vec!["base".into(), "slow".into()],
            named_baselines: Vec::new(),
        }
    }

    #[test]
    fn a_long_host_widens_its_column_and_every_row_stays_aligned() {
        let rows = [row(1, "vm", None), row(2, "build-17.lab", Some("6.18-rc1"))];
        let text = render(&rows);
        // Each row's configs start where the header's "configs" does.
        let at = |line: &str, what: &str| line.find(what).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let col = at(lines[0], "configs");
        for l in &lines[1..] {
            assert_eq!(at(l, "base"), col, "{text}");
            assert!(l.chars().count() <= 80, "{text}");
        }
    }

    #[test]
    fn json_is_an_array_of_experiments_with_a_stable_shape() {
        let one = ListRow {
            named_baselines: vec!["main".into()],
            ..row(1, "vm", None)
        };
        let v: serde_json::Value = serde_json::from_str(&json(&[one]).unwrap()).unwrap();
        assert_eq!(
            v,
            serde_json::json!([{
                "id": 1, "created_at": "2026-11-26T16:16:48Z", "status": "complete",
                "runs_ok": 20, "runs_left_out": 0, "host": "vm", "label": null, "baseline": "base",
                "configs": ["base", "slow"], "named_baselines": ["main"]
            }])
        );
    }

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
