//! How a fleet run's hosts stand, as one table: `fleet status`, and the
//! summary `fleet run` and `fleet resume` end with.

use anyhow::Result;

use super::hosts::{self, Host};
use crate::store::fleet::Member;
use crate::store::Store;

/// One host's line: the host, its experiment as the store has it (none
/// when it never started), and a note (why its connection was lost).
pub struct Row<'a> {
    pub host: &'a Host,
    pub member: Option<&'a Member>,
    pub note: Option<String>,
}

/// The table: a header, then per host its name, destination,
/// experiment, status and measured runs ok / runs stored.
pub fn table(rows: &[Row]) -> String {
    let head = [
        "host",
        "destination",
        "experiment",
        "status",
        "ok/stored runs",
    ];
    let mut lines: Vec<[String; 5]> = vec![head.map(String::from)];
    for r in rows {
        lines.push(match r.member {
            Some(m) => [
                r.host.name.clone(),
                r.host.destination.clone(),
                m.experiment.to_string(),
                m.status.to_string(),
                format!("{}/{}", m.ok_runs, m.stored_runs),
            ],
            None => [
                r.host.name.clone(),
                r.host.destination.clone(),
                "-".into(),
                "not started".into(),
                "0/0".into(),
            ],
        });
    }
    let width = |i: usize| {
        lines
            .iter()
            .map(|l| l[i].chars().count())
            .max()
            .map_or(0, crate::sys::visible::column)
    };
    let widths: Vec<usize> = (0..5).map(width).collect();
    let mut s = String::new();
    for (i, l) in lines.iter().enumerate() {
        let mut line = String::new();
        for (j, cell) in l.iter().enumerate() {
            if j + 1 == l.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  ", w = widths[j]));
            }
        }
        if let Some(n) = i.checked_sub(1).and_then(|k| rows[k].note.as_ref()) {
            line.push_str("  ");
            line.push_str(n);
        }
        s.push_str(&crate::sys::visible::terminal_safe(line.trim_end()));
        s.push('\n');
    }
    s
}

/// `fleet status ID`: the table of fleet `what` (an id or `last`).
pub fn status(store: &Store, what: &str) -> Result<String> {
    let info = store.fleet(what)?;
    let hosts = hosts::from_json(&info.hosts)?;
    let members = store.fleet_members(info.id)?;
    let rows: Vec<Row> = hosts
        .iter()
        .map(|h| Row {
            host: h,
            member: members.iter().find(|m| m.host == h.name),
            note: None,
        })
        .collect();
    Ok(format!(
        "fleet {} ({}, created {}): plan {}\n{}",
        info.id,
        info.name,
        info.created_at,
        info.plan_source,
        table(&rows)
    ))
}
