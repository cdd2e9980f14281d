//! The state journal: every system change a config or a built-in workload
//! makes is preceded by a record of how to undo it, written and fsync'ed to
//! a JSON file next to the store (`<store>.journal`). Leaving a config runs
//! the undo and clears its entry. After a crash (SIGKILL, power loss) the
//! entries still in the file are what `sysdelta restore` puts back.
//!
//! The file is an append-only log, one JSON object per line:
//! `{"op":"add","entry":{...}}` or `{"op":"done","ids":[...]}`; each append
//! is fdatasync'ed before the change it guards is made (one disk flush per
//! journal update; the directory is synced once, when the file is created).
//! Replaying the log gives the pending entries; a torn last line (power
//! loss mid-append) is ignored, since its change was never made. When
//! nothing is pending the file is removed.
//!
//! Every undo action is written so that running it when the change never
//! happened (a crash between `record` and the change) is harmless: a mount
//! is only unmounted if it is mounted, a loop device only detached if it is
//! still bound to our backing file, a process only killed if its start time
//! still matches. The actions and running them are in `undo.rs`; the OS
//! calls they make are in `crate::sys`, re-exported here at their old paths.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::error::bad;

mod permitted;
mod undo;

pub use undo::{apply, describe, UndoAction};
// The OS calls the undos make, at the paths kinds, workloads and tests
// have always used; they live in `crate::sys`.
pub use crate::sys::loopdev::{detach_loop, loop_backing_file, remove_loop};
pub use crate::sys::mount::{is_mounted, unmount};
pub use crate::sys::procstat::process_start_time;
pub use crate::sys::sysfs::{write_lines, write_value};

// The escapes are undone by the one mountinfo parser; the name is kept for
// this module's tests.
#[cfg(test)]
use crate::sys::mountinfo::unescape as unescape_mount_field;

/// The journal shared by every config kind and workload of one experiment.
pub type JournalHandle = Arc<Mutex<Journal>>;

/// Identifies one pending entry.
pub type EntryId = u64;

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Entry {
    id: EntryId,
    /// Who made the change, for the restore report ("ftrace", "fsops").
    owner: String,
    /// The boot the change was made in (/proc/sys/kernel/random/boot_id):
    /// kernel state (sysctls, tracefs, mounts, loop devices, processes) of
    /// an earlier boot is gone, so only on-disk undos still apply.
    #[serde(default)]
    boot_id: String,
    undo: UndoAction,
}

impl Entry {
    /// Undo this entry, or say why there is nothing to undo any more.
    fn undo(&self) -> Result<String> {
        let on_disk = matches!(self.undo, UndoAction::RemovePath { .. });
        if !on_disk && !self.boot_id.is_empty() && self.boot_id != boot_id() {
            return Ok(format!(
                "{}: made before the last reboot, nothing to do",
                describe(&self.undo)
            ));
        }
        apply(&self.undo)
    }
}

/// This boot's id; empty where the kernel does not provide one.
pub fn boot_id() -> String {
    fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum LogLine {
    Add { entry: Entry },
    Done { ids: Vec<EntryId> },
}

#[derive(Debug, Default)]
struct JournalFile {
    next_id: EntryId,
    entries: Vec<Entry>,
}

impl JournalFile {
    fn apply(&mut self, line: LogLine) {
        match line {
            LogLine::Add { entry } => {
                self.next_id = self.next_id.max(entry.id + 1);
                self.entries.push(entry);
            }
            LogLine::Done { ids } => self.entries.retain(|e| !ids.contains(&e.id)),
        }
    }
}

/// The journal file and its pending entries.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    state: JournalFile,
}

impl Journal {
    /// Open (or start) the journal at `path`; existing entries are kept.
    ///
    /// The file is read only when it is ours ([`crate::sys::trust`]: not a
    /// link, owned by us or root, nobody else can write it or its
    /// directory), and every pending entry must be an undo sysdelta itself
    /// could have recorded ([`permitted::permitted`]); otherwise the whole
    /// journal is refused in one line (bad input) and nothing in it is
    /// undone.
    pub fn open(path: &Path) -> Result<Journal> {
        let j = Journal::open_unchecked(path)?;
        for e in &j.state.entries {
            if let Err(why) = permitted::permitted(&e.undo) {
                return Err(bad(format!(
                    "{}: refused: entry {} ([{}] {}) is no change sysdelta makes ({why}); nothing in this journal is undone",
                    path.display(),
                    e.id,
                    e.owner,
                    describe(&e.undo)
                )));
            }
        }
        Ok(j)
    }

    /// [`Journal::open`] without the check of the entries' actions: for
    /// the log's own tests, which undo into temporary files.
    fn open_unchecked(path: &Path) -> Result<Journal> {
        let mut state = JournalFile::default();
        let bytes = crate::sys::trust::read(path).map_err(bad)?;
        if let Some(bytes) = bytes {
            let text = String::from_utf8_lossy(&bytes);
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            for (i, l) in lines.iter().enumerate() {
                match serde_json::from_str::<LogLine>(l) {
                    Ok(line) => state.apply(line),
                    // A torn last append: its change was never made.
                    Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => {}
                    Err(e) => bail!(
                        "journal {} line {}: not a sysdelta journal record ({e})",
                        path.display(),
                        i + 1
                    ),
                }
            }
        }
        Ok(Journal {
            path: path.to_path_buf(),
            state,
        })
    }

    /// A journal with no file behind it, for building kinds only to ask
    /// them what they would do (`changes_system`), never to enter them.
    pub fn detached() -> JournalHandle {
        Arc::new(Mutex::new(Journal {
            path: PathBuf::from("/dev/null"),
            state: JournalFile::default(),
        }))
    }

    /// Open a journal and wrap it for sharing between kinds.
    pub fn open_shared(path: &Path) -> Result<JournalHandle> {
        Ok(Arc::new(Mutex::new(Journal::open(path)?)))
    }

    /// True when a journal with at least one pending entry exists at `path`
    /// (a previous run did not put everything back).
    pub fn is_pending(path: &Path) -> Result<bool> {
        Ok(!Journal::open(path)?.state.entries.is_empty())
    }

    /// The one-line refusal `sysdelta run` gives while a crashed run's
    /// changes are still in the journal.
    pub fn refuse_if_pending(path: &Path) -> Result<()> {
        Journal::open(path)?.refuse_pending(None)
    }

    /// The same refusal for a journal already read, leaving out the
    /// entries of `except` (a dead run's scratch directory, which the next
    /// run removes itself).
    pub fn refuse_pending(&self, except: Option<&str>) -> Result<()> {
        let left: Vec<&Entry> = self
            .state
            .entries
            .iter()
            .filter(|e| Some(e.owner.as_str()) != except)
            .collect();
        let Some(first) = left.first() else {
            return Ok(());
        };
        bail!(
            "{} holds {} system change(s) left by an interrupted run (first: [{}] {}); run `sysdelta restore` first",
            self.path.display(),
            left.len(),
            first.owner,
            describe(&first.undo)
        )
    }

    /// True when an entry not made by `owner` is pending.
    pub fn pending_owned_by_others(&self, owner: &str) -> bool {
        self.state.entries.iter().any(|e| e.owner != owner)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The pending entries, oldest first, as human lines.
    pub fn pending(&self) -> Vec<String> {
        self.state
            .entries
            .iter()
            .map(|e| format!("[{}] {}", e.owner, describe(&e.undo)))
            .collect()
    }

    /// Record how to undo a change, durably, BEFORE making the change.
    pub fn record(&mut self, undo: UndoAction) -> Result<EntryId> {
        Ok(self.record_all("sysdelta", vec![undo])?[0])
    }

    /// Record several undo actions with one fsync (cheaper when a config
    /// changes many values at once). They are undone in reverse order.
    pub fn record_all(&mut self, owner: &str, undos: Vec<UndoAction>) -> Result<Vec<EntryId>> {
        let mut ids = Vec::with_capacity(undos.len());
        let mut lines = Vec::with_capacity(undos.len());
        let boot = boot_id();
        for undo in undos {
            let id = self.state.next_id;
            self.state.next_id += 1;
            lines.push(LogLine::Add {
                entry: Entry {
                    id,
                    owner: owner.to_string(),
                    boot_id: boot.clone(),
                    undo,
                },
            });
            ids.push(id);
        }
        if lines.is_empty() {
            return Ok(ids);
        }
        self.append(&lines)?;
        for l in lines {
            self.state.apply(l);
        }
        Ok(ids)
    }

    /// The change was undone (or made permanent): forget the entry.
    pub fn done(&mut self, id: EntryId) -> Result<()> {
        self.done_all(&[id])
    }

    /// Forget several entries with one flush.
    pub fn done_all(&mut self, ids: &[EntryId]) -> Result<()> {
        let ids: Vec<EntryId> = ids
            .iter()
            .copied()
            .filter(|id| self.state.entries.iter().any(|e| e.id == *id))
            .collect();
        if ids.is_empty() {
            return Ok(());
        }
        self.state.apply(LogLine::Done { ids: ids.clone() });
        if self.state.entries.is_empty() {
            // Nothing pending: the file goes. Should the unlink be lost in
            // a crash, replaying the log gives the same empty set.
            return match fs::remove_file(&self.path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(e).context(format!("cannot remove journal {}", self.path.display()))
                }
                _ => Ok(()),
            };
        }
        self.append(&[LogLine::Done { ids }])
    }

    /// Undo the given entries (newest first) and forget those that worked.
    /// Used by kinds on `leave`; an error names every undo that failed.
    pub fn undo_entries(&mut self, ids: &[EntryId]) -> Result<Vec<String>> {
        let selected = self.entries_with(ids);
        self.undo_list(selected)
    }

    /// The pending entries among `ids`, in journal order.
    fn entries_with(&self, ids: &[EntryId]) -> Vec<Entry> {
        self.state
            .entries
            .iter()
            .filter(|e| ids.contains(&e.id))
            .cloned()
            .collect()
    }

    /// Undo the entries one owner made (e.g. "scratch"), newest first.
    pub fn undo_owned_by(&mut self, owner: &str) -> Result<Vec<String>> {
        let ids: Vec<EntryId> = self
            .state
            .entries
            .iter()
            .filter(|e| e.owner == owner)
            .map(|e| e.id)
            .collect();
        self.undo_entries(&ids)
    }

    /// Undo every pending entry, newest first. Returns one human line per
    /// action; entries whose undo fails stay in the journal and the error
    /// names them.
    pub fn restore_all(&mut self) -> Result<Vec<String>> {
        let all = self.state.entries.clone();
        self.undo_list(all)
    }

    /// [`Journal::restore_all`], but for the entries of every owner other
    /// than `owner`.
    pub fn restore_all_but(&mut self, owner: &str) -> Result<Vec<String>> {
        let others = self
            .state
            .entries
            .iter()
            .filter(|e| e.owner != owner)
            .cloned()
            .collect();
        self.undo_list(others)
    }

    /// Undo the given entries concurrently, one thread each: for
    /// independent undos that each wait on the kernel (disabling blk
    /// tracing per device waits for an RCU grace period).
    pub fn undo_entries_parallel(&mut self, ids: &[EntryId]) -> Result<Vec<String>> {
        let selected = self.entries_with(ids);
        let results: Vec<Result<String>> = std::thread::scope(|s| {
            let hs: Vec<_> = selected.iter().map(|e| s.spawn(|| e.undo())).collect();
            hs.into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(anyhow!("undo panicked"))))
                .collect()
        });
        self.finish_undo(&selected, results)
    }

    fn undo_list(&mut self, mut entries: Vec<Entry>) -> Result<Vec<String>> {
        entries.sort_by_key(|e| std::cmp::Reverse(e.id));
        let results = entries.iter().map(|e| e.undo()).collect();
        self.finish_undo(&entries, results)
    }

    /// Forget the entries whose undo worked; name those that failed.
    fn finish_undo(
        &mut self,
        entries: &[Entry],
        results: Vec<Result<String>>,
    ) -> Result<Vec<String>> {
        let mut lines = Vec::new();
        let mut failed = Vec::new();
        let mut finished = Vec::new();
        for (e, r) in entries.iter().zip(results) {
            match r {
                Ok(what) => {
                    lines.push(format!("[{}] {}", e.owner, what));
                    finished.push(e.id);
                }
                Err(err) => failed.push(format!("[{}] {}: {:#}", e.owner, describe(&e.undo), err)),
            }
        }
        self.done_all(&finished)?;
        if !failed.is_empty() {
            bail!(
                "could not restore {} journal entr{} (kept in {}): {}",
                failed.len(),
                if failed.len() == 1 { "y" } else { "ies" },
                self.path.display(),
                failed.join("; ")
            );
        }
        Ok(lines)
    }

    /// Append records and fdatasync them. A new file also gets its
    /// directory synced, so the file itself survives power loss; a file
    /// whose last line is torn gets a newline first.
    fn append(&self, lines: &[LogLine]) -> Result<()> {
        let existed = self.path.exists();
        // Never through a link, never into someone else's file; a new
        // journal is made 0600.
        let mut f = crate::sys::trust::open_write(&self.path, true).map_err(bad)?;
        let mut text = String::new();
        if existed && !ends_with_newline(&self.path) {
            text.push('\n');
        }
        for l in lines {
            text.push_str(&serde_json::to_string(l)?);
            text.push('\n');
        }
        f.write_all(text.as_bytes())
            .and_then(|_| f.sync_data())
            .with_context(|| format!("cannot write journal {}", self.path.display()))?;
        if !existed {
            let dir = self
                .path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            File::open(dir)?.sync_all()?;
        }
        Ok(())
    }
}

fn ends_with_newline(path: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = File::open(path) else {
        return true;
    };
    if f.seek(SeekFrom::End(-1)).is_err() {
        return true; // empty file
    }
    let mut b = [0u8; 1];
    f.read_exact(&mut b).map(|_| b[0] == b'\n').unwrap_or(true)
}

#[cfg(test)]
mod tests;
