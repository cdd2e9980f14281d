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
//! still matches.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

/// The journal shared by every config kind and workload of one experiment.
pub type JournalHandle = Arc<Mutex<Journal>>;

/// Identifies one pending entry.
pub type EntryId = u64;

/// How to undo one change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum UndoAction {
    /// Write `contents` back into `path` in one write (sysctls, tracefs
    /// values such as `current_tracer`, `tracing_on`, `buffer_size_kb`).
    WriteFile { path: PathBuf, contents: String },
    /// Truncate `path`, then write each line with its own write: the shape
    /// of tracefs `set_event`, where truncation disables every event and
    /// each write enables one.
    WriteLines { path: PathBuf, lines: Vec<String> },
    /// Unmount `target` if it is mounted (and, when `source` is given, if
    /// its source is that device), so an unrelated mount is left alone.
    Unmount {
        target: PathBuf,
        source: Option<String>,
    },
    /// Detach loop device `device` if it is still bound to `backing_file`.
    DetachLoop {
        device: PathBuf,
        backing_file: PathBuf,
    },
    /// Remove loop device `number` (LOOP_CTL_REMOVE) if it is unbound: for
    /// devices sysdelta itself created beyond those that existed before.
    RemoveLoop { number: u32 },
    /// Remove a file, or a directory (recursively when `recursive`).
    RemovePath { path: PathBuf, recursive: bool },
    /// Kill process `pid` (its process group when `group`), but only if its
    /// start time (field 22 of /proc/PID/stat) is still `start_time`.
    KillProcess {
        pid: i32,
        start_time: u64,
        group: bool,
    },
    /// `swapoff` the swap file or device at `path` if it is active.
    Swapoff { path: PathBuf },
    /// Move every task of cgroup `path` to its parent, then remove it.
    RemoveCgroup { path: PathBuf },
    /// Hot-remove zram device `id` (one sysdelta added) if it still exists;
    /// already gone is done, so a restore after a crash between the removal
    /// and its journal update does not fail forever.
    RemoveZram { id: u32 },
}

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
    pub fn open(path: &Path) -> Result<Journal> {
        let mut state = JournalFile::default();
        match fs::read_to_string(path) {
            Ok(text) => {
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
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).context(format!("cannot read journal {}", path.display())),
        }
        Ok(Journal {
            path: path.to_path_buf(),
            state,
        })
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
        let selected: Vec<Entry> = self
            .state
            .entries
            .iter()
            .filter(|e| ids.contains(&e.id))
            .cloned()
            .collect();
        self.undo_list(selected)
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
        let selected: Vec<Entry> = self
            .state
            .entries
            .iter()
            .filter(|e| ids.contains(&e.id))
            .cloned()
            .collect();
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
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .with_context(|| format!("cannot write journal {}", self.path.display()))?;
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

/// One human line saying what an undo action does.
pub fn describe(undo: &UndoAction) -> String {
    match undo {
        UndoAction::WriteFile { path, contents } => {
            format!("write {:?} to {}", contents.trim_end(), path.display())
        }
        UndoAction::WriteLines { path, lines } => {
            format!("reset {} to {} line(s)", path.display(), lines.len())
        }
        UndoAction::Unmount { target, .. } => format!("unmount {}", target.display()),
        UndoAction::DetachLoop {
            device,
            backing_file,
        } => format!(
            "detach {} (backed by {})",
            device.display(),
            backing_file.display()
        ),
        UndoAction::RemoveLoop { number } => format!("remove loop device loop{number}"),
        UndoAction::RemovePath { path, .. } => format!("remove {}", path.display()),
        UndoAction::KillProcess { pid, .. } => format!("kill process {pid}"),
        UndoAction::Swapoff { path } => format!("swapoff {}", path.display()),
        UndoAction::RemoveCgroup { path } => format!("remove cgroup {}", path.display()),
        UndoAction::RemoveZram { id } => format!("hot-remove /dev/zram{id}"),
    }
}

/// Run one undo action; the line says what was done (or found already done).
pub fn apply(undo: &UndoAction) -> Result<String> {
    match undo {
        UndoAction::WriteFile { path, contents } => {
            with_tracefs(path, || write_value(path, contents))?;
            Ok(describe(undo))
        }
        UndoAction::WriteLines { path, lines } => {
            with_tracefs(path, || write_lines(path, lines))?;
            Ok(describe(undo))
        }
        UndoAction::Unmount { target, source } => {
            if !is_mounted(target, source.as_deref())? {
                return Ok(format!(
                    "{} is not mounted, nothing to do",
                    target.display()
                ));
            }
            unmount(target)?;
            Ok(describe(undo))
        }
        UndoAction::DetachLoop {
            device,
            backing_file,
        } => {
            if !loop_bound_to(device, backing_file) {
                return Ok(format!(
                    "{} is not bound to {}, nothing to do",
                    device.display(),
                    backing_file.display()
                ));
            }
            detach_loop(device)?;
            // With another opener (a killed run's orphaned child still
            // writing to the volume) the kernel only marks the device for
            // autoclear: wait for it to go, so that "restored" is true.
            let deadline = Instant::now() + LOOP_RELEASE_WAIT;
            while loop_bound_to(device, backing_file) {
                if Instant::now() >= deadline {
                    anyhow::bail!(
                        "{} is still in use after {}s; it detaches when its last user closes it",
                        device.display(),
                        LOOP_RELEASE_WAIT.as_secs()
                    );
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(describe(undo))
        }
        UndoAction::RemoveLoop { number } => {
            let dev = PathBuf::from(format!("/dev/loop{number}"));
            if !Path::new(&format!("/sys/block/loop{number}")).exists() {
                return Ok(format!("loop{number} is gone, nothing to do"));
            }
            // An autoclear detach (after the unmount just undone) may
            // still be finishing: give it a moment before calling it in use.
            let deadline = Instant::now() + Duration::from_secs(1);
            while loop_backing_file(&dev).is_some() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            if loop_backing_file(&dev).is_some() {
                return Ok(format!("loop{number} is in use, left alone"));
            }
            remove_loop(*number)?;
            Ok(describe(undo))
        }
        UndoAction::RemovePath { path, recursive } => {
            let res = match fs::symlink_metadata(path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Ok(format!("{} is gone, nothing to do", path.display()))
                }
                Err(e) => Err(e),
                Ok(m) if m.is_dir() && *recursive => fs::remove_dir_all(path),
                Ok(m) if m.is_dir() => fs::remove_dir(path),
                Ok(_) => fs::remove_file(path),
            };
            res.with_context(|| format!("cannot remove {}", path.display()))?;
            Ok(describe(undo))
        }
        UndoAction::KillProcess {
            pid,
            start_time,
            group,
        } => {
            if process_start_time(*pid) != Some(*start_time) {
                return Ok(format!("process {pid} is gone, nothing to do"));
            }
            kill_and_wait(*pid, *start_time, *group)?;
            Ok(describe(undo))
        }
        UndoAction::Swapoff { path } => {
            let swaps = fs::read_to_string("/proc/swaps").unwrap_or_default();
            let canon = fs::canonicalize(path).unwrap_or_else(|_| path.clone());
            let active = swaps
                .lines()
                .skip(1)
                .any(|l| l.split_whitespace().next() == Some(&*canon.to_string_lossy()));
            if !active {
                return Ok(format!(
                    "{} is not swapped on, nothing to do",
                    path.display()
                ));
            }
            let c = cstring(path)?;
            // SAFETY: c is a valid NUL-terminated path.
            if unsafe { libc::swapoff(c.as_ptr()) } != 0 {
                return Err(std::io::Error::last_os_error())
                    .context(format!("swapoff {}", path.display()));
            }
            Ok(describe(undo))
        }
        UndoAction::RemoveZram { id } => {
            if !Path::new(&format!("/sys/block/zram{id}")).exists() {
                return Ok(format!("/dev/zram{id} is gone, nothing to do"));
            }
            write_value(
                Path::new("/sys/class/zram-control/hot_remove"),
                &id.to_string(),
            )
            .with_context(|| format!("hot-removing /dev/zram{id}"))?;
            Ok(describe(undo))
        }
        UndoAction::RemoveCgroup { path } => {
            if !path.exists() {
                return Ok(format!("{} is gone, nothing to do", path.display()));
            }
            remove_cgroup(path)?;
            Ok(describe(undo))
        }
    }
}

const TRACEFS: &str = "/sys/kernel/tracing";

/// Run `f` (a write under tracefs) with tracefs mounted: if the journal
/// outlived the mount (someone unmounted it after a crash), mount it for
/// the write and unmount it again.
fn with_tracefs(path: &Path, f: impl FnOnce() -> Result<()>) -> Result<()> {
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

fn cstring(p: &Path) -> Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(|_| anyhow!("path has a NUL byte"))
}

// The escapes are undone by the one mountinfo parser; the name is kept for
// this file's tests.
#[cfg(test)]
use crate::sys::mountinfo::unescape as unescape_mount_field;

/// Whether `target` is a mount point (with `source` as its source, if given).
pub fn is_mounted(target: &Path, source: Option<&str>) -> Result<bool> {
    let info = fs::read_to_string("/proc/self/mountinfo").context("cannot read mountinfo")?;
    let want = fs::canonicalize(target).unwrap_or_else(|_| target.to_path_buf());
    Ok(crate::sys::mountinfo::has_mount(&info, &want, source))
}

/// Unmount, retrying briefly while busy (a just-exited writer), then
/// detaching lazily so a crashed run's mount never stays behind.
pub fn unmount(target: &Path) -> Result<()> {
    use nix::mount::{umount2, MntFlags};
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        match umount2(target, MntFlags::empty()) {
            Ok(()) => return Ok(()),
            Err(nix::errno::Errno::EBUSY) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(nix::errno::Errno::EBUSY) => {
                umount2(target, MntFlags::MNT_DETACH)
                    .with_context(|| format!("cannot unmount {}", target.display()))?;
                return Ok(());
            }
            Err(e) => return Err(e).context(format!("cannot unmount {}", target.display())),
        }
    }
}

/// The backing file the kernel reports for a loop device, if bound.
pub fn loop_backing_file(device: &Path) -> Option<PathBuf> {
    let name = device.file_name()?.to_string_lossy().into_owned();
    let text = fs::read_to_string(format!("/sys/block/{name}/loop/backing_file")).ok()?;
    Some(PathBuf::from(
        text.trim_end_matches('\n').trim_end_matches(" (deleted)"),
    ))
}

fn loop_bound_to(device: &Path, backing: &Path) -> bool {
    let want = fs::canonicalize(backing).unwrap_or_else(|_| backing.to_path_buf());
    loop_backing_file(device).is_some_and(|b| b == want || b == backing)
}

/// LOOP_CLR_FD from <linux/loop.h>.
const LOOP_CLR_FD: libc::c_ulong = 0x4C01;

/// How long a restore waits for a loop device that another process still
/// holds open to be released after the detach.
const LOOP_RELEASE_WAIT: Duration = Duration::from_secs(10);

pub fn detach_loop(device: &Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    let f = File::open(device).with_context(|| format!("cannot open {}", device.display()))?;
    // SAFETY: LOOP_CLR_FD takes no argument; fd is valid for the call.
    if unsafe { libc::ioctl(f.as_raw_fd(), LOOP_CLR_FD as _, 0) } != 0 {
        let e = std::io::Error::last_os_error();
        // ENXIO: already unbound.
        if e.raw_os_error() != Some(libc::ENXIO) {
            return Err(e).context(format!("cannot detach {}", device.display()));
        }
    }
    Ok(())
}

/// LOOP_CTL_REMOVE from <linux/loop.h>.
const LOOP_CTL_REMOVE: libc::c_ulong = 0x4C81;

/// Remove an unbound loop device; retried briefly while the kernel is
/// still finishing an autoclear detach (EBUSY).
pub fn remove_loop(number: u32) -> Result<()> {
    use std::os::fd::AsRawFd;
    let ctl = File::open("/dev/loop-control").context("cannot open /dev/loop-control")?;
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        // SAFETY: LOOP_CTL_REMOVE takes the device number as its argument.
        if unsafe {
            libc::ioctl(
                ctl.as_raw_fd(),
                LOOP_CTL_REMOVE as _,
                number as libc::c_ulong,
            )
        } >= 0
        {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::ENODEV) => return Ok(()),
            Some(libc::EBUSY) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5))
            }
            _ => return Err(e).context(format!("cannot remove loop{number}")),
        }
    }
}

/// Field 22 of /proc/PID/stat: start time in clock ticks since boot.
pub fn process_start_time(pid: i32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces and parentheses: fields
    // after it start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// SIGTERM, wait up to 2 s for the process to go away, then SIGKILL.
/// The process is usually not our child (a crashed run's), so its exit
/// is observed by polling /proc rather than waitpid.
fn kill_and_wait(pid: i32, start: u64, group: bool) -> Result<()> {
    let target = if group { -pid } else { pid };
    // SAFETY: plain kill(2).
    unsafe { libc::kill(target, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        // Reap it if it happens to be our child; ignore errors otherwise.
        // SAFETY: non-blocking waitpid on a specific pid.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
        if process_start_time(pid) != Some(start) || is_zombie(pid) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: plain kill(2).
    unsafe { libc::kill(target, libc::SIGKILL) };
    Ok(())
}

fn is_zombie(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let rest = s[s.rfind(')')? + 1..].to_string();
            rest.split_whitespace().next().map(|st| st == "Z")
        })
        .unwrap_or(false)
}

/// Move tasks to the parent cgroup (cgroup.procs on v2, tasks on v1), then rmdir.
fn remove_cgroup(path: &Path) -> Result<()> {
    let parent = path
        .parent()
        .ok_or_else(|| anyhow!("cgroup {} has no parent", path.display()))?;
    let procs_name = if path.join("cgroup.procs").exists() {
        "cgroup.procs"
    } else {
        "tasks"
    };
    for _ in 0..10 {
        let procs = fs::read_to_string(path.join(procs_name)).unwrap_or_default();
        if procs.trim().is_empty() {
            break;
        }
        for pid in procs.split_whitespace() {
            // A task may exit meanwhile; the next pass sees what remains.
            let _ = write_value(&parent.join(procs_name), pid);
        }
    }
    fs::remove_dir(path).with_context(|| format!("cannot remove cgroup {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removing_a_zram_device_that_is_gone_is_done() {
        // A restore after a crash between the removal and its journal
        // update must not fail (and so block every later run) forever.
        let r = apply(&UndoAction::RemoveZram { id: 4_000_000 }).unwrap();
        assert!(r.contains("is gone, nothing to do"), "{r}");
    }

    #[test]
    fn record_done_and_pending_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.journal");
        let file = dir.path().join("value");
        fs::write(&file, "old").unwrap();
        let mut j = Journal::open(&path).unwrap();
        assert!(!Journal::is_pending(&path).unwrap());
        let id = j
            .record(UndoAction::WriteFile {
                path: file.clone(),
                contents: "old".into(),
            })
            .unwrap();
        assert!(Journal::is_pending(&path).unwrap());
        fs::write(&file, "new").unwrap();
        // A second process opening the journal sees the entry and restores it.
        let mut other = Journal::open(&path).unwrap();
        let lines = other.restore_all().unwrap();
        assert_eq!(lines.len(), 1);
        assert_eq!(fs::read_to_string(&file).unwrap(), "old");
        assert!(!Journal::is_pending(&path).unwrap());
        // done() on an entry another process already cleared is harmless.
        j.done(id).unwrap();
    }

    #[test]
    fn pending_journal_refuses_with_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.journal");
        Journal::refuse_if_pending(&path).unwrap();
        let mut j = Journal::open(&path).unwrap();
        j.record(UndoAction::Unmount {
            target: "/nonexistent-mnt".into(),
            source: None,
        })
        .unwrap();
        let e = Journal::refuse_if_pending(&path).unwrap_err().to_string();
        assert!(!e.contains('\n'), "{e}");
        assert!(
            e.contains("sysdelta restore") && e.contains("unmount /nonexistent-mnt"),
            "{e}"
        );
        // A torn last line (power loss mid-append) is ignored.
        let mut text = fs::read_to_string(&path).unwrap();
        text.push_str("{\"op\":\"add\",\"ent");
        fs::write(&path, text).unwrap();
        assert_eq!(Journal::open(&path).unwrap().pending().len(), 1);
        j.restore_all().unwrap();
        Journal::refuse_if_pending(&path).unwrap();
    }

    #[test]
    fn kernel_state_of_an_earlier_boot_is_not_restored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.journal");
        let value = dir.path().join("value");
        fs::write(&value, "now").unwrap();
        let gone = dir.path().join("backing.img");
        fs::write(&gone, "x").unwrap();
        let mut j = Journal::open(&path).unwrap();
        j.record(UndoAction::RemovePath {
            path: gone.clone(),
            recursive: false,
        })
        .unwrap();
        j.record(UndoAction::WriteFile {
            path: value.clone(),
            contents: "before".into(),
        })
        .unwrap();
        // Pretend both were recorded in another boot.
        let text = fs::read_to_string(&path)
            .unwrap()
            .replace(&boot_id(), "an-earlier-boot");
        fs::write(&path, text).unwrap();
        let lines = Journal::open(&path).unwrap().restore_all().unwrap();
        assert!(lines[0].contains("before the last reboot"), "{lines:?}");
        assert_eq!(fs::read_to_string(&value).unwrap(), "now");
        assert!(
            !gone.exists(),
            "files on disk are removed whatever the boot"
        );
    }

    #[test]
    fn failed_undo_is_kept_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.journal");
        let mut j = Journal::open(&path).unwrap();
        let missing = dir.path().join("no/such/file");
        j.record(UndoAction::WriteFile {
            path: missing.clone(),
            contents: "x".into(),
        })
        .unwrap();
        let gone = dir.path().join("gone");
        j.record(UndoAction::RemovePath {
            path: gone,
            recursive: false,
        })
        .unwrap();
        let err = j.restore_all().unwrap_err().to_string();
        assert!(err.contains("no/such/file"), "{err}");
        assert_eq!(j.pending().len(), 1);
        assert!(Journal::is_pending(&path).unwrap());
    }

    #[test]
    fn undo_runs_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.journal");
        let file = dir.path().join("v");
        fs::write(&file, "").unwrap();
        let mut j = Journal::open(&path).unwrap();
        for v in ["first", "second"] {
            j.record(UndoAction::WriteFile {
                path: file.clone(),
                contents: v.into(),
            })
            .unwrap();
        }
        j.restore_all().unwrap();
        // The oldest recorded value is the state before everything.
        assert_eq!(fs::read_to_string(&file).unwrap(), "first");
    }

    #[test]
    fn start_time_of_self_is_stable() {
        let me = std::process::id() as i32;
        let a = process_start_time(me).unwrap();
        assert_eq!(Some(a), process_start_time(me));
        assert_eq!(unescape_mount_field("/a\\040b"), "/a b");
    }
}
