//! `ftrace`: tracer, enabled events, ring buffer size and tracing_on, set
//! through tracefs (mounted for the config if it was not, unmounted after).
//! "Tracing on, daemon off" in the 2002 LTT study's terms; pair it with
//! `trace_reader` for "daemon running".

use anyhow::{Context, Result};

use super::{check, tracefs, value};
use crate::config::journal::{self, EntryId, JournalHandle, UndoAction};
use crate::config::kind::{ConfigKind, LaunchMods};

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

impl Ftrace {
    pub fn from_value(v: &toml::Value, journal: JournalHandle) -> Result<Ftrace, String> {
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
        if f.tracer.is_none()
            && f.events.is_none()
            && f.buffer_size_kb.is_none()
            && f.tracing_on.is_none()
        {
            return Err(format!(
                "ftrace sets nothing (set one of: {})",
                KEYS.join(", ")
            ));
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
