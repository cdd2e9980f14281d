//! `trace_reader`: the "daemon running" case. Before each run, per-CPU
//! reader threads start splicing `trace_pipe_raw` into files under `dir`;
//! after the run they drain and stop. The bytes written and the events the
//! ring buffer lost meanwhile (overrun + commit overrun + dropped events
//! from per_cpu/cpuN/stats) become metrics of the run.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use super::capture::{Capture, RunTotals};
use super::{check, tracefs, value};
use crate::config::journal::{EntryId, JournalHandle, UndoAction};
use crate::config::kind::{ConfigKind, LaunchMods};
use crate::error::Error;
use crate::metric::MetricSamples;
use crate::metric::MetricSpec;

pub const DEFAULT_DIR: &str = "/var/tmp/sysdelta-trace";

/// The trace files are `dir/trace.cpuN`.
const PREFIX: &str = "trace";

pub struct TraceReader {
    dir: PathBuf,
    keep: bool,
    clear: bool,
    journal: JournalHandle,
    mount: Option<EntryId>,
    entries: Vec<EntryId>,
    /// How to put `set_event_notrace_pid` back (the readers are kept out).
    notrace: Option<EntryId>,
    capture: Option<Capture>,
}

impl TraceReader {
    pub fn from_value(v: &toml::Value, journal: JournalHandle) -> Result<TraceReader, Error> {
        let t = value::table("trace_reader", v, &["dir", "keep", "clear"])?;
        let dir = value::string("trace_reader", t, "dir")?.unwrap_or(DEFAULT_DIR.into());
        if !dir.starts_with('/') {
            return Err(Error::bad(format!(
                "trace_reader.dir must be an absolute path, not `{dir}`"
            )));
        }
        Ok(TraceReader {
            dir: PathBuf::from(dir),
            keep: value::boolean("trace_reader", t, "keep")?.unwrap_or(false),
            clear: value::boolean("trace_reader", t, "clear")?.unwrap_or(true),
            journal,
            mount: None,
            entries: Vec::new(),
            notrace: None,
            capture: None,
        })
    }
}

/// Journal how to remove what a capture creates: its files unless kept,
/// and the directory if it did not exist; then create the directory. Fails
/// (undoing its entries) when the directory is not private to root
/// ([`check::private_dir`]), before or after it is created: someone may
/// have made it in between.
pub(crate) fn journal_outputs(
    journal: &JournalHandle,
    owner: &str,
    dir: &std::path::Path,
    files: Vec<PathBuf>,
    keep: bool,
) -> Result<Vec<EntryId>> {
    let mut undos = Vec::new();
    if !dir.exists() {
        undos.push(UndoAction::RemovePath {
            path: dir.to_path_buf(),
            recursive: false,
        });
    }
    if !keep {
        for f in files {
            undos.push(UndoAction::RemovePath {
                path: f,
                recursive: false,
            });
        }
    }
    if let Some(why) = check::private_dir(owner, "dir", dir) {
        bail!("{why}");
    }
    let ids = journal.lock().unwrap().record_all(owner, undos)?;
    let made = std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create {}", dir.display()))
        .and_then(|()| match check::private_dir(owner, "dir", dir) {
            Some(why) => bail!("{why}"),
            None => Ok(()),
        });
    if let Err(e) = made {
        journal.lock().unwrap().undo_entries(&ids)?;
        return Err(e);
    }
    Ok(ids)
}

/// On leave: undo the outputs' entries, except a kept directory is kept
/// (its entry only forgotten) so the last run's files survive.
pub(crate) fn leave_outputs(journal: &JournalHandle, ids: Vec<EntryId>, keep: bool) -> Result<()> {
    let mut j = journal.lock().unwrap();
    if keep {
        j.done_all(&ids)
    } else {
        j.undo_entries(&ids).map(|_| ())
    }
}

impl ConfigKind for TraceReader {
    fn kind(&self) -> &'static str {
        "trace_reader"
    }

    fn preflight(&self) -> Vec<String> {
        let mut out: Vec<String> = check::root("trace_reader", "to read tracefs")
            .into_iter()
            .collect();
        if !tracefs::supported() {
            out.push("trace_reader: this kernel has no tracefs".into());
        }
        out.extend(check::writable_dir("trace_reader", &self.dir));
        out.extend(check::private_dir("trace_reader", "dir", &self.dir));
        out.extend(Capture::unsafe_outputs("trace_reader", &self.dir, PREFIX));
        out
    }

    fn enter(&mut self) -> Result<LaunchMods> {
        self.mount = tracefs::ensure_mounted(&self.journal, "trace_reader")?;
        let mut capture = Capture::new(&self.dir, PREFIX, self.clear);
        self.notrace = capture.exclude_own_threads(&self.journal, "trace_reader")?;
        self.entries = journal_outputs(
            &self.journal,
            "trace_reader",
            &self.dir,
            capture.files()?,
            self.keep,
        )?;
        self.capture = Some(capture);
        Ok(LaunchMods::default())
    }

    fn before_run(&mut self) -> Result<()> {
        Capture::start_opt(&mut self.capture)
    }

    fn after_run(&mut self) -> Result<Vec<MetricSamples>> {
        Capture::stop_opt(&mut self.capture, "trace")
    }

    fn metrics(&self) -> Vec<MetricSpec> {
        RunTotals::specs("trace")
    }

    fn leave(&mut self) -> Result<()> {
        if let Some(mut c) = self.capture.take() {
            c.stop()?;
        }
        leave_outputs(&self.journal, std::mem::take(&mut self.entries), self.keep)?;
        if let Some(id) = self.notrace.take() {
            self.journal.lock().unwrap().undo_entries(&[id])?;
        }
        tracefs::release(&self.journal, self.mount.take())
    }
}
