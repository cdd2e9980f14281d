//! The open run log of a running experiment: a file mapped into memory
//! that each run's row is appended to, emptied after a fold. Apart from
//! reading a log back (contents.rs), which a fold after a crash and
//! `sysdelta flush` do without opening it for writing.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

use super::contents::Contents;
use super::{RunRow, FOLD_AT_ROWS, FOLD_EVERY};

/// Initial size of the log file, which is mapped into memory.
pub(super) const INITIAL_BYTES: usize = 1 << 20;
/// Fold once the rows since the last fold take this much.
pub const FOLD_AT_BYTES: usize = 8 << 20;

/// The open log of a running experiment.
///
/// The file is mapped into memory (`MAP_SHARED`) and a row is appended
/// with a copy into the mapping: a write to the page cache without a system
/// call, as safe against a SIGKILL as `write`, since the pages belong to the
/// file, not the process. Why not `write`: right after a measured child ran,
/// sysdelta's caches are cold, and one `write` through ext4 took about
/// 7 µs there against 1 µs in a tight loop. The file is zero beyond the
/// rows, and JSON never holds a NUL byte, so a row the kill cut short is
/// recognised and dropped by [`Contents::parse`]. Where a file cannot be
/// mapped, rows are written with `pwrite` at the same offsets.
pub struct RunLog {
    path: PathBuf,
    file: File,
    map: Option<Mapping>,
    /// The file's length.
    cap: usize,
    /// Bytes of rows in the file.
    used: usize,
    /// The rows in the file, kept in memory too so that a fold need not
    /// read and parse them back; the file is for the next sysdelta after a
    /// crash.
    pub pending: Vec<RunRow>,
    last_fold: Instant,
    last_append: Instant,
    /// The last append came at least half of [`FOLD_EVERY`] after the one
    /// before: runs are slow, so each is folded at once (a report of the
    /// running experiment then lags by no run).
    slow: bool,
}

/// The file's bytes, mapped shared and writable.
struct Mapping {
    ptr: std::ptr::NonNull<std::ffi::c_void>,
    len: usize,
}

impl Mapping {
    fn new(file: &File, len: usize) -> Option<Mapping> {
        use nix::sys::mman::{mmap, MapFlags, ProtFlags};
        // SAFETY: a fresh shared mapping of our own file; it is only
        // accessed through `bytes` while this Mapping lives.
        let ptr = unsafe {
            mmap(
                None,
                std::num::NonZeroUsize::new(len)?,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                file,
                0,
            )
        }
        .ok()?;
        Some(Mapping { ptr, len })
    }

    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: `len` bytes mapped at `ptr`, writable, ours alone.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().cast(), self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `new` mapped.
        let _ = unsafe { nix::sys::mman::munmap(self.ptr, self.len) };
    }
}

impl RunLog {
    /// Open (create) the log. Rows a dead run left in it stay and are
    /// folded with the new ones; a row it cut short is cleared.
    pub fn open(path: &Path) -> Result<RunLog> {
        // Ours only (a link or another user's file is refused), made 0600.
        let mut file = crate::sys::trust::open_write(path, false).map_err(crate::error::bad)?;
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut file, &mut bytes)
            .with_context(|| format!("{}: cannot read the run log", path.display()))?;
        let contents = Contents::parse(&bytes);
        let used = contents.used;
        let pending = contents.rows(path)?;
        // Everything after the rows (a row a kill cut short, with gaps in
        // it or not) goes, so the file is zero beyond them again.
        file.set_len(used as u64)
            .with_context(|| format!("{}: cannot cut the run log", path.display()))?;
        let mut log = RunLog {
            path: path.to_path_buf(),
            file,
            map: None,
            cap: used,
            used,
            pending,
            last_fold: Instant::now(),
            last_append: Instant::now(),
            slow: false,
        };
        log.resize(bytes.len().max(INITIAL_BYTES))?;
        Ok(log)
    }

    /// Make the file `len` bytes long, its blocks allocated, and map it.
    /// Allocating first matters: a store of the mapping into a sparse page
    /// on a full disk would kill sysdelta with SIGBUS. Where allocation
    /// fails (full disk, or a file system without it), rows are written
    /// with `pwrite`, which reports a full disk as an error.
    fn resize(&mut self, len: usize) -> Result<()> {
        use nix::fcntl::{fallocate, FallocateFlags};
        self.map = None;
        let grown = fallocate(&self.file, FallocateFlags::empty(), 0, len as libc::off_t);
        if grown.is_err() {
            self.file
                .set_len(len as u64)
                .with_context(|| format!("{}: cannot size the run log", self.path.display()))?;
        }
        self.cap = len;
        if grown.is_ok() {
            self.map = Mapping::new(&self.file, len);
        }
        Ok(())
    }

    /// Zero bytes `from..to` of the file.
    fn zero(&mut self, from: usize, to: usize) -> Result<()> {
        if to <= from {
            return Ok(());
        }
        match self.map.as_mut() {
            Some(m) => m.bytes()[from..to].fill(0),
            None => {
                use std::os::unix::fs::FileExt;
                self.file.write_all_at(&vec![0; to - from], from as u64)?
            }
        }
        Ok(())
    }

    /// Append one row as one line.
    pub fn append(&mut self, row: RunRow) -> Result<()> {
        let mut line = serde_json::to_vec(&row)?;
        line.push(b'\n');
        let end = self.used + line.len();
        if end > self.cap {
            self.resize((2 * end).max(INITIAL_BYTES))?;
        }
        match self.map.as_mut() {
            Some(m) => m.bytes()[self.used..end].copy_from_slice(&line),
            None => {
                use std::os::unix::fs::FileExt;
                self.file
                    .write_all_at(&line, self.used as u64)
                    .with_context(|| format!("{}: cannot append a run", self.path.display()))?
            }
        }
        self.used = end;
        self.pending.push(row);
        self.slow = self.last_append.elapsed() >= FOLD_EVERY / 2;
        self.last_append = Instant::now();
        Ok(())
    }

    /// Whether a fold is due after this append.
    pub fn fold_due(&self) -> bool {
        self.slow
            || self.pending.len() >= FOLD_AT_ROWS
            || self.used >= FOLD_AT_BYTES
            || self.last_fold.elapsed() >= FOLD_EVERY
    }

    /// After the rows were committed to SQLite: clear them from the file
    /// (rows start again at its beginning).
    pub fn emptied(&mut self) -> Result<()> {
        self.zero(0, self.used)
            .with_context(|| format!("{}: cannot empty the run log", self.path.display()))?;
        self.used = 0;
        self.pending.clear();
        self.last_fold = Instant::now();
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The first `n` pending rows are in the tables (the store's writer
    /// said so). Once none is left the file is emptied; until then the
    /// stored rows stay in it too, which a fold after a crash skips.
    pub fn acked(&mut self, n: usize) -> Result<()> {
        self.pending.drain(..n.min(self.pending.len()));
        match self.pending.is_empty() {
            true => self.emptied(),
            false => Ok(()),
        }
    }

    /// Bytes of rows in the file (stored ones included).
    pub fn used(&self) -> usize {
        self.used
    }

    /// A fold failed (a server out of reach): the rows stay, and the next
    /// fold is due a full [`FOLD_EVERY`] from now, not at the next run.
    pub fn retry_later(&mut self) {
        self.last_fold = Instant::now();
        self.slow = false;
    }
}
