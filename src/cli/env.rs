//! `sysdelta env`: this machine's fingerprint, or, given a stored
//! experiment, what differs between then and now (kernel, governor, THP,
//! mitigations, load, ...), as pyperf's `system show` does before a run.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use clap::{Args, ValueEnum};

use super::output::emit;
use crate::report::escape::terminal_safe;
use crate::store::Store;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EnvFormat {
    Text,
    Json,
}

#[derive(Args)]
pub struct EnvArgs {
    /// A stored experiment (id, label or `last`): print what differs
    /// between the machine then and now.
    pub experiment: Option<String>,
    /// The last stored experiment (as `report --last`).
    #[arg(long, conflicts_with = "experiment")]
    pub last: bool,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value = "text")]
    pub format: EnvFormat,
}

impl EnvArgs {
    /// Whether this `env` reads the store (it does with an experiment).
    pub fn reads_store(&self) -> bool {
        self.experiment.is_some() || self.last
    }
}

/// `sysdelta env`.
pub fn run(a: &EnvArgs, store_path: &Path) -> Result<()> {
    let now = crate::monitor::fingerprint::collect();
    if !a.reads_store() {
        let text = match a.format {
            EnvFormat::Json => serde_json::to_string_pretty(&now)? + "\n",
            EnvFormat::Text => now.iter().fold(String::new(), |mut o, (k, v)| {
                let _ = writeln!(o, "{k:<18} {}", terminal_safe(v));
                o
            }),
        };
        return emit(&text, None);
    }
    let store = Store::open(store_path, false)?;
    let id = store.resolve(a.experiment.as_deref().unwrap_or("last"))?;
    let info = store.info(id)?;
    let diffs = differences(&info.fingerprint, &now);
    let text = match a.format {
        EnvFormat::Json => {
            let doc = serde_json::json!({
                "experiment": id,
                "created_at": info.created_at,
                "differs": diffs.iter().map(|(k, then, now)| {
                    (k.clone(), serde_json::json!({"then": then, "now": now}))
                }).collect::<serde_json::Map<_, _>>(),
                "same": info.fingerprint.keys().filter(|k| !diffs.iter().any(|d| &d.0 == *k)).collect::<Vec<_>>(),
            });
            crate::report::escape::json_text(serde_json::to_string_pretty(&doc)? + "\n")
        }
        EnvFormat::Text => render_text(id, &info.created_at, &diffs, now.len()),
    };
    emit(&text, None)
}

/// Every field whose value differs between `then` and `now`, as
/// (field, then, now); "-" where one side lacks it. For lists such as
/// `mitigations` ("a: x; b: y") only the items that differ are kept, so a
/// line says what changed rather than repeating 20 unchanged items.
pub fn differences(
    then: &BTreeMap<String, String>,
    now: &BTreeMap<String, String>,
) -> Vec<(String, String, String)> {
    let mut keys: Vec<&String> = then.keys().chain(now.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut out = Vec::new();
    for k in keys {
        let (t, n) = (
            then.get(k).map_or("-", String::as_str),
            now.get(k).map_or("-", String::as_str),
        );
        if t == n {
            continue;
        }
        let (t, n) = if t.contains("; ") && n.contains("; ") {
            let ti: Vec<&str> = t.split("; ").collect();
            let ni: Vec<&str> = n.split("; ").collect();
            let only = |a: &[&str], b: &[&str]| {
                a.iter()
                    .filter(|x| !b.contains(x))
                    .copied()
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            (only(&ti, &ni), only(&ni, &ti))
        } else {
            (t.to_string(), n.to_string())
        };
        out.push((k.clone(), t, n));
    }
    out
}

/// One field a pair of lines, within 80 columns (longer values wrap).
fn render_text(
    id: i64,
    created: &str,
    diffs: &[(String, String, String)],
    fields: usize,
) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "experiment {id} ({}) against now:",
        terminal_safe(created)
    );
    if diffs.is_empty() {
        let _ = writeln!(o, "no difference in {fields} fields");
        return o;
    }
    for (k, then, now) in diffs {
        for (i, (side, v)) in [("then", then), ("now", now)].into_iter().enumerate() {
            let head = if i == 0 {
                terminal_safe(k)
            } else {
                String::new()
            };
            let v = terminal_safe(v);
            let chunks = wrap(&v, 80 - 24);
            for (j, c) in chunks.iter().enumerate() {
                let (h, s) = if j == 0 {
                    (head.as_str(), side)
                } else {
                    ("", "")
                };
                let _ = writeln!(o, "{h:<18} {s:<4} {c}");
            }
        }
    }
    let _ = writeln!(o, "{} of {fields} fields differ", diffs.len());
    o
}

/// `s` cut into pieces of at most `width` characters, at spaces where it can.
fn wrap(s: &str, width: usize) -> Vec<String> {
    let mut out = vec![String::new()];
    for word in s.split(' ') {
        let last = out.last_mut().expect("never empty");
        if !last.is_empty() && last.chars().count() + 1 + word.chars().count() > width {
            out.push(String::new());
        }
        let mut chars: Vec<char> = word.chars().collect();
        while chars.len() > width {
            let rest = chars.split_off(width);
            let l = out.last_mut().expect("never empty");
            if !l.is_empty() {
                out.push(String::new());
            }
            *out.last_mut().expect("never empty") = chars.iter().collect();
            out.push(String::new());
            chars = rest;
        }
        let l = out.last_mut().expect("never empty");
        if !l.is_empty() {
            l.push(' ');
        }
        l.extend(chars);
    }
    out.retain(|l| !l.is_empty());
    if out.is_empty() {
        out.push(String::new());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changed_fields_and_list_items_are_shown() {
        let m = |v: &[(&str, &str)]| -> BTreeMap<String, String> {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        let then = m(&[
            ("kernel", "6.1"),
            ("thp", "always"),
            ("mitigations", "a: x; b: y; c: z"),
        ]);
        let now = m(&[
            ("kernel", "6.2"),
            ("thp", "always"),
            ("mitigations", "a: x; b: Y; c: z"),
        ]);
        let d = differences(&then, &now);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0], ("kernel".into(), "6.1".into(), "6.2".into()));
        assert_eq!(d[1], ("mitigations".into(), "b: y".into(), "b: Y".into()));
        let text = render_text(1, "t", &d, 3);
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        for w in wrap(&"x".repeat(200), 56) {
            assert!(w.chars().count() <= 56);
        }
    }
}
