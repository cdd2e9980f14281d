//! Where a measured child's stdout and stderr go: anonymous in-memory
//! files read once the child has exited.
//!
//! Why not pipes: a pipe needs a reader while the child runs, and its
//! hang-up at exit woke sysdelta a second time per run, just before the
//! exit itself did: one context switch more than a plain spawn-and-wait
//! loop. A file needs no reader, cannot be held open against us by a
//! descendant that outlives the run, and does not slow a chatty child with
//! a full pipe.

use std::os::fd::{AsFd, BorrowedFd};
use std::sync::OnceLock;

use super::STDERR_TAIL_BYTES;
use crate::overrides::CommandOutput;

thread_local! {
    /// An empty stderr file left by the last run on this thread.
    static SPARE_STDERR: std::cell::RefCell<Option<std::fs::File>> =
        const { std::cell::RefCell::new(None) };
}

/// /dev/null, opened once for the whole process.
static DEV_NULL: OnceLock<std::fs::File> = OnceLock::new();

/// Stdin or a discarded stdout: /dev/null.
pub(super) fn dev_null() -> std::io::Result<BorrowedFd<'static>> {
    if let Some(f) = DEV_NULL.get() {
        return Ok(f.as_fd());
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")?;
    Ok(DEV_NULL.get_or_init(|| f).as_fd())
}

/// Open `--output FILE` for a run's output: appended to (or emptied, with
/// `truncate`, once before the first run), made if missing (0644 less the
/// umask). As root it writes only where no other user can have steered
/// it: a symbolic link is followed only when you or root own it in a
/// directory you or root own and nobody else can write (or a sticky one:
/// `/dev/stdout` is root's link in root's /dev; the rule of
/// [`crate::sys::trust::judge_dir`]), and a file, FIFO or device another user
/// owns, or a file with other hard links, is refused. A link, file, FIFO
/// or hard link another user put under that name in /tmp or a shared
/// directory once had root's output written into it, or the root-only
/// file it led to emptied. A FIFO is not waited on at open.
pub fn open_file(p: &std::path::Path, truncate: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let owners = crate::sys::trust::trusted_uids();
    let as_root = nix::unistd::geteuid().is_root();
    let follow = match std::fs::symlink_metadata(p) {
        Ok(l) if l.file_type().is_symlink() => {
            let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
            let dir = std::fs::metadata(dir.unwrap_or(std::path::Path::new(".")))?;
            // The directory's owner could swap the link between this look
            // and the open: trusted only where the store's own files are.
            let dir = crate::sys::trust::Facts::of(&dir);
            owners.contains(&l.uid()) && crate::sys::trust::judge_dir(dir, &owners, false).is_none()
        }
        _ => false,
    };
    let f = std::fs::OpenOptions::new()
        .write(true)
        .append(!truncate)
        .truncate(false)
        .create(true)
        .mode(0o644)
        .custom_flags(match follow {
            true => libc::O_NONBLOCK | libc::O_CLOEXEC,
            false => libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
        })
        .open(p)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => std::io::Error::other(
                "is a symbolic link another user owns, or in a directory another user owns or others can write: not followed",
            ),
            Some(libc::ENXIO) => std::io::Error::other("is a FIFO nobody reads yet"),
            _ => e,
        })?;
    let m = f.metadata()?;
    if as_root && !owners.contains(&m.uid()) {
        // A file or FIFO of theirs would take root's output (a FIFO's
        // reader could also stall the runs by not reading).
        return Err(std::io::Error::other(format!(
            "owned by uid {}, not you or root",
            m.uid()
        )));
    }
    if as_root && m.file_type().is_file() && m.nlink() > 1 {
        // Another name for it may be another user's link to a file of root's.
        return Err(std::io::Error::other(format!(
            "has {} hard links: another name for it may be a file it must not change",
            m.nlink()
        )));
    }
    // Non-blocking only for the open: the child's writes block as usual.
    crate::sys::nonblock::make_blocking(&f)?;
    if truncate && m.file_type().is_file() {
        f.set_len(0)?;
    }
    Ok(f)
}

/// Where a run's output goes besides the files sysdelta reads: hyperfine's
/// `--output` (see [`CommandOutput`]).
pub(super) struct Destination {
    what: CommandOutput,
    /// The `File` destination, opened for appending for this run.
    file: Option<std::fs::File>,
}

impl Destination {
    pub(super) fn open(what: Option<&CommandOutput>) -> std::io::Result<Destination> {
        let what = what.cloned().unwrap_or_default();
        let file = match &what {
            CommandOutput::File(p) => Some(open_file(p, false)?),
            _ => None,
        };
        Ok(Destination { what, file })
    }

    /// A pipe's output is read, here from a file sysdelta reads once the
    /// run is over and discards.
    pub(super) fn wants_capture(&self) -> bool {
        self.what == CommandOutput::Pipe
    }

    /// The child's stdout when nothing is captured.
    pub(super) fn stdout<'a>(&'a self, null: BorrowedFd<'a>) -> BorrowedFd<'a> {
        match (&self.what, &self.file) {
            // SAFETY: sysdelta's stdout stays open while it runs commands.
            (CommandOutput::Inherit, _) => unsafe { BorrowedFd::borrow_raw(1) },
            (_, Some(f)) => f.as_fd(),
            _ => null,
        }
    }

    /// The child's stderr: the terminal's under `inherit` (no tail is kept
    /// for the report then), else the file sysdelta keeps the tail of.
    pub(super) fn stderr<'a>(&self, kept: BorrowedFd<'a>) -> BorrowedFd<'a> {
        match self.what {
            // SAFETY: sysdelta's stderr stays open while it runs commands.
            CommandOutput::Inherit => unsafe { BorrowedFd::borrow_raw(2) },
            _ => kept,
        }
    }

    /// Pass on stdout that was captured (for metrics) to where it goes.
    pub(super) fn copy(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        use std::io::Write;
        match (&self.what, &mut self.file) {
            (CommandOutput::Inherit, _) => {
                let mut o = std::io::stdout().lock();
                o.write_all(bytes)?;
                o.flush()
            }
            (_, Some(f)) => f.write_all(bytes),
            _ => Ok(()),
        }
    }
}

/// Once stderr has grown past this, all but its tail is punched out while
/// the run lasts, so a chatty child cannot fill memory.
const TRIM_STDERR_AT: u64 = 1 << 20;

/// A child's stdout or stderr: an anonymous in-memory file (memfd; an
/// unlinked temporary file where memfd is unavailable) that the child
/// writes (through a copy of [`OutputFile::fd`] it is given) and sysdelta
/// reads once the child has exited.
pub(super) struct OutputFile {
    file: std::fs::File,
    /// Keep only the last this many bytes (stderr); None keeps all (stdout).
    keep: Option<u64>,
}

impl OutputFile {
    pub(super) fn new(name: &str, keep: Option<u64>) -> std::io::Result<OutputFile> {
        let file = match nix::sys::memfd::memfd_create(name, nix::sys::memfd::MFdFlags::MFD_CLOEXEC)
        {
            Ok(fd) => std::fs::File::from(fd),
            Err(_) => tempfile::tempfile()?,
        };
        Ok(OutputFile { file, keep })
    }

    /// The stderr file of a run: the one an earlier run on this thread
    /// left empty, or a new one. (A descendant that escaped its run's group
    /// kill with `setsid` and writes to stderr later would write into a
    /// later run's file: an accepted cost of not making one file per run.)
    pub(super) fn for_stderr() -> std::io::Result<OutputFile> {
        match SPARE_STDERR.with(|s| s.borrow_mut().take()) {
            Some(file) => Ok(OutputFile {
                file,
                keep: Some(STDERR_TAIL_BYTES as u64),
            }),
            None => OutputFile::new("sysdelta-stderr", Some(STDERR_TAIL_BYTES as u64)),
        }
    }

    fn len(&self) -> u64 {
        self.file.metadata().map(|m| m.len()).unwrap_or(0)
    }

    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }

    /// After the child exited: what it wrote (its last `keep` bytes). An
    /// empty stderr file is kept for the next run's stderr (the common
    /// case: a new file costs a memfd_create and a close).
    pub(super) fn finish(self) -> Vec<u8> {
        use std::os::unix::fs::FileExt;
        let len = self.len();
        if len == 0 {
            if self.keep.is_some() {
                SPARE_STDERR.with(|s| *s.borrow_mut() = Some(self.file));
            }
            return Vec::new();
        }
        let from = self.keep.map_or(0, |k| len.saturating_sub(k));
        let mut buf = vec![0u8; (len - from) as usize];
        // A descendant that survived the group kill may still be writing:
        // what it added after `len` is not part of the run.
        match self.file.read_exact_at(&mut buf, from) {
            Ok(()) => buf,
            Err(_) => Vec::new(),
        }
    }
}

/// While a child runs: free all of `file` but its last `keep` bytes, in
/// whole pages from `*punched` on, once it has grown past
/// [`TRIM_STDERR_AT`], so a chatty child cannot fill memory. Best effort: a
/// file system without hole punching keeps the bytes until the run ends.
pub(super) fn punch_head(file: BorrowedFd, keep: u64, punched: &mut u64) {
    use nix::fcntl::{fallocate, FallocateFlags};
    let Ok(st) = nix::sys::stat::fstat(file) else {
        return;
    };
    let len = st.st_size as u64;
    if len < TRIM_STDERR_AT {
        return;
    }
    let upto = len.saturating_sub(keep) & !4095;
    if upto > *punched
        && fallocate(
            file,
            FallocateFlags::FALLOC_FL_PUNCH_HOLE | FallocateFlags::FALLOC_FL_KEEP_SIZE,
            *punched as libc::off_t,
            (upto - *punched) as libc::off_t,
        )
        .is_ok()
    {
        *punched = upto;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn punching_frees_all_but_the_tail_and_keeps_its_bytes() {
        let mut f = OutputFile::new("test", Some(STDERR_TAIL_BYTES as u64)).unwrap();
        let mut data = vec![b'x'; 3 << 20];
        data.extend_from_slice(b"the end\n");
        f.file.write_all(&data).unwrap();
        let blocks = |f: &OutputFile| nix::sys::stat::fstat(f.fd()).unwrap().st_blocks * 512;
        assert!(blocks(&f) >= 3 << 20);
        let mut punched = 0;
        punch_head(f.fd(), STDERR_TAIL_BYTES as u64, &mut punched);
        assert!(punched >= (3 << 20) - 8192, "{punched}");
        assert!(blocks(&f) <= 16384, "{} bytes still held", blocks(&f));
        let tail = f.finish();
        assert_eq!(tail.len(), STDERR_TAIL_BYTES);
        assert!(tail.ends_with(b"xthe end\n"));
    }
}
