//! `ftrace`: tracer, enabled events, ring buffer size and tracing_on, set
//! through tracefs (mounted for the config if it was not, unmounted after).
//! "Tracing on, daemon off" in the 2002 LTT study's terms; pair it with
//! `trace_reader` for "daemon running".

use anyhow::{Context, Result};

use super::{check, tracefs, value};
use crate::config::journal::{self, EntryId, JournalHandle, UndoAction};
use crate::config::kind::{ConfigKind, LaunchMods};
use crate::error::Error;

pub struct Ftrace {
    tracer: Option<String>,
    /// "sched", "sched:sched_switch" or "sched:*".
    events: Option<Vec<String>>,
    buffer_size_kb: Option<u64>,
    tracing_on: Option<bool>,
    journal: JournalHandle,
    mount: Option<EntryId>,
    entries: Vec<EntryId>,
}

const KEYS: &[&str] = &["tracer", "events", "buffer_size_kb", "tracing_on"];

/// Letters, digits and `_`, as the kernel's tracer names are.
fn is_tracer_name(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// An event group or event name: letters, digits, `_` and `.` (which
/// dynamic events may use). Nothing that set_event reads as syntax (`!`,
/// `:`, `*` in a name, whitespace that would start another line).
fn is_event_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
}

fn check_tracer(t: &str) -> Result<(), Error> {
    if is_tracer_name(t) {
        Ok(())
    } else {
        Err(Error::bad(format!(
            "ftrace.tracer: `{}` is not a tracer name (letters, digits and _, e.g. \"nop\")",
            t.escape_debug()
        )))
    }
}

/// `group`, `group:event` or `group:*`; these are written as lines of
/// tracefs `set_event`, never joined to a path.
fn check_event(spec: &str) -> Result<(), Error> {
    let ok = match spec.split_once(':') {
        None => is_event_name(spec),
        Some((g, e)) => is_event_name(g) && (e == "*" || is_event_name(e)),
    };
    if ok {
        Ok(())
    } else {
        Err(Error::bad(format!(
            "ftrace.events: `{}` is not an event (write \"group\", \"group:event\" or \"group:*\", e.g. \"sched:sched_switch\")",
            spec.escape_debug()
        )))
    }
}

impl Ftrace {
    pub fn from_value(v: &toml::Value, journal: JournalHandle) -> Result<Ftrace, Error> {
        let t = value::table("ftrace", v, KEYS)?;
        let f = Ftrace {
            tracer: value::string("ftrace", t, "tracer")?,
            events: value::strings("ftrace", t, "events")?,
            buffer_size_kb: value::positive("ftrace", t, "buffer_size_kb")?,
            tracing_on: value::boolean("ftrace", t, "tracing_on")?,
            journal,
            mount: None,
            entries: Vec::new(),
        };
        if let Some(t) = &f.tracer {
            check_tracer(t)?;
        }
        for e in f.events.iter().flatten() {
            check_event(e)?;
        }
        if f.tracer.is_none()
            && f.events.is_none()
            && f.buffer_size_kb.is_none()
            && f.tracing_on.is_none()
        {
            return Err(Error::bad(format!(
                "ftrace sets nothing (set one of: {})",
                KEYS.join(", ")
            )));
        }
        Ok(f)
    }

    /// "sched" -> "sched:*" (what set_event takes for a whole group).
    fn set_event_line(spec: &str) -> String {
        if spec.contains(':') {
            spec.to_string()
        } else {
            format!("{spec}:*")
        }
    }
}

impl ConfigKind for Ftrace {
    fn kind(&self) -> &'static str {
        "ftrace"
    }

    fn preflight(&self) -> Vec<String> {
        if let Some(l) = check::root("ftrace", "to write tracefs") {
            return vec![l];
        }
        if !tracefs::supported() {
            return vec!["ftrace: this kernel has no tracefs (CONFIG_FTRACE off?)".into()];
        }
        let offer = match tracefs::probe() {
            Ok(o) => o,
            Err(e) => return vec![format!("ftrace: {e:#}")],
        };
        let mut out = Vec::new();
        if let Some(t) = &self.tracer {
            if !offer.tracers.contains(t) {
                out.push(format!(
                    "ftrace: tracer `{t}` is not available in this kernel (available: {})",
                    offer.tracers.join(" ")
                ));
            }
        }
        for e in self.events.iter().flatten() {
            if !offer.has_event(e) {
                let group = e.split(':').next().unwrap_or(e);
                let hint = if offer.groups().iter().any(|g| g == group) {
                    format!("group `{group}` exists but has no such event")
                } else {
                    format!("event groups here: {}", offer.groups().join(" "))
                };
                out.push(format!(
                    "ftrace: event `{e}` does not exist in this kernel ({hint})"
                ));
            }
        }
        out
    }

    fn enter(&mut self) -> Result<LaunchMods> {
        let journal = self.journal.clone();
        crate::config::rcu::expedited(&journal, || {
            self.mount = tracefs::ensure_mounted(&self.journal, "ftrace")?;
            // Journal every previous value first, in one fsync.
            let mut undos = Vec::new();
            if self.buffer_size_kb.is_some() {
                undos.push(UndoAction::WriteFile {
                    path: tracefs::path("buffer_size_kb"),
                    contents: tracefs::parse_buffer_size(&tracefs::read("buffer_size_kb")?),
                });
            }
            if self.events.is_some() {
                undos.push(UndoAction::WriteLines {
                    path: tracefs::path("set_event"),
                    lines: tracefs::enabled_events()?,
                });
            }
            if self.tracer.is_some() {
                undos.push(UndoAction::WriteFile {
                    path: tracefs::path("current_tracer"),
                    contents: tracefs::read("current_tracer")?,
                });
            }
            if self.tracing_on.is_some() {
                undos.push(UndoAction::WriteFile {
                    path: tracefs::path("tracing_on"),
                    contents: tracefs::read("tracing_on")?,
                });
            }
            self.entries = self.journal.lock().unwrap().record_all("ftrace", undos)?;

            if let Some(kb) = self.buffer_size_kb {
                journal::write_value(&tracefs::path("buffer_size_kb"), &kb.to_string())
                    .context("ftrace: cannot set buffer_size_kb")?;
            }
            if let Some(events) = &self.events {
                // Exactly these events: truncating set_event disables the rest.
                journal::apply(&UndoAction::WriteLines {
                    path: tracefs::path("set_event"),
                    lines: events.iter().map(|e| Ftrace::set_event_line(e)).collect(),
                })
                .context("ftrace: cannot enable events")?;
            }
            if let Some(t) = &self.tracer {
                journal::write_value(&tracefs::path("current_tracer"), t)
                    .with_context(|| format!("ftrace: cannot set tracer `{t}`"))?;
            }
            if let Some(on) = self.tracing_on {
                journal::write_value(&tracefs::path("tracing_on"), if on { "1" } else { "0" })
                    .context("ftrace: cannot set tracing_on")?;
            }
            Ok(LaunchMods::default())
        })
    }

    fn leave(&mut self) -> Result<()> {
        let journal = self.journal.clone();
        crate::config::rcu::expedited(&journal, || {
            // One journal update for the values and the mount (undone last:
            // its entry is the oldest).
            let mut ids = std::mem::take(&mut self.entries);
            ids.extend(self.mount.take());
            self.journal.lock().unwrap().undo_entries(&ids)?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_and_tracer_names() {
        for ok in [
            "sched",
            "sched:sched_switch",
            "sched:*",
            "syscalls",
            "probe.x:f.isra.0",
        ] {
            assert_eq!(check_event(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "sched:",
            ":x",
            "*",
            "*:*",
            "sched:a:b",
            "!sched",
            "sched\n!irq",
            "../x",
            "a/b",
            "sched sched",
        ] {
            let e = check_event(bad).unwrap_err();
            assert!(
                e.to_string().starts_with("ftrace.events: `"),
                "{bad:?}: {e}"
            );
            assert!(!e.to_string().contains('\n'), "one line: {e}");
        }
        for ok in ["nop", "function_graph", "blk"] {
            assert_eq!(check_tracer(ok), Ok(()), "{ok}");
        }
        for bad in ["", "nop\nfunction", "../nop", "a b"] {
            assert!(check_tracer(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn plan_values_with_bad_names_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let j = crate::config::journal::Journal::open_shared(&d.path().join("j")).unwrap();
        let build = |src: &str| Ftrace::from_value(&toml::from_str(src).unwrap(), j.clone());
        assert!(build("events = [\"sched\", \"irq:*\"]\ntracer = \"nop\"").is_ok());
        let e = build("events = [\"sched\", \"sched\\n!irq\"]")
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("`sched\\n!irq` is not an event"),
            "{e}"
        );
        let e = build("tracer = \"../x\"").err().unwrap();
        assert!(e.to_string().contains("`../x` is not a tracer name"), "{e}");
    }
}
