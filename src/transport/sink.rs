//! The consumer's output: a file on disk (removed afterwards unless kept) or
//! /dev/null, to separate transport cost from disk cost.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};

use super::bad_input;

/// Where the consumer writes.
#[derive(Clone, Debug, PartialEq)]
pub enum SinkTarget {
    /// A new file in this directory.
    Dir(PathBuf),
    /// /dev/null: transport cost only.
    Null,
}

/// An open sink with byte accounting and user-space batching.
pub struct Sink {
    file: File,
    path: Option<PathBuf>,
    keep: bool,
    /// Set on a full disk: the file is removed even with --keep.
    full: bool,
    buf: Vec<u8>,
    written: u64,
}

const BATCH: usize = 1 << 20;

/// A new file for the consumer's records in `dir`, named `name` (or
/// `name.1`, `name.2`, ... where that is taken), made here: `O_EXCL`, not
/// following a link, private (0600). The names are predictable and the
/// default directory is /tmp: a link another user put there under the
/// next name once had root's records written through it into any file,
/// truncated first.
fn create_new_in(dir: &Path, name: &str) -> anyhow::Result<(File, std::path::PathBuf)> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut last = None;
    for n in 0..100 {
        let path = match n {
            0 => dir.join(name),
            _ => dir.join(format!("{name}.{n}")),
        };
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
        {
            Ok(file) => return Ok((file, path)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some((path, e)),
            Err(e) => {
                return Err(bad_input(format!(
                    "cannot create consumer file {}: {e}",
                    path.display()
                )))
            }
        }
    }
    let (path, e) = last.expect("a name was tried");
    Err(bad_input(format!(
        "cannot create consumer file {}: {e} (and 99 names after it)",
        path.display()
    )))
}

impl Sink {
    /// Create the sink. `name` is the file name used in a directory target.
    pub fn create(target: &SinkTarget, name: &str, keep: bool) -> anyhow::Result<Sink> {
        let (file, path) = match target {
            SinkTarget::Null => (OpenOptions::new().write(true).open("/dev/null")?, None),
            SinkTarget::Dir(dir) => {
                let (file, path) = create_new_in(dir, name)?;
                (file, Some(path))
            }
        };
        Ok(Sink {
            file,
            path,
            keep,
            full: false,
            buf: Vec::with_capacity(BATCH),
            written: 0,
        })
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    pub fn raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// Bytes that reached the file so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Queue bytes; written to the file in 1 MiB batches.
    pub fn write(&mut self, data: &[u8]) -> anyhow::Result<()> {
        if self.buf.len() + data.len() > BATCH {
            self.flush()?;
        }
        if data.len() >= BATCH {
            return self.write_now(data);
        }
        self.buf.extend_from_slice(data);
        Ok(())
    }

    /// Write queued bytes out.
    pub fn flush(&mut self) -> anyhow::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let buf = std::mem::take(&mut self.buf);
        let r = self.write_now(&buf);
        self.buf = buf;
        self.buf.clear();
        r
    }

    fn write_now(&mut self, data: &[u8]) -> anyhow::Result<()> {
        let mut off = 0;
        while off < data.len() {
            match self.file.write(&data[off..]) {
                Ok(0) => return Err(self.full_error(io::Error::from_raw_os_error(libc::ENOSPC))),
                Ok(n) => {
                    off += n;
                    self.written += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.full_error(e)),
            }
        }
        Ok(())
    }

    /// Move up to `max` bytes from a pipe into the file with splice(2),
    /// blocking until some arrive; 0 means end of file.
    pub fn splice_from(&mut self, pipe: RawFd, max: usize) -> anyhow::Result<usize> {
        loop {
            // SAFETY: splice between two fds that stay open for the call.
            let n = unsafe {
                libc::splice(
                    pipe,
                    std::ptr::null_mut(),
                    self.file.as_raw_fd(),
                    std::ptr::null_mut(),
                    max,
                    libc::SPLICE_F_MOVE,
                )
            };
            if n >= 0 {
                self.written += n as u64;
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(self.full_error(e));
            }
        }
    }

    /// Account bytes moved into the file by splice(2).
    pub fn add_spliced(&mut self, n: u64) {
        self.written += n;
    }

    /// The error for a failed write: a full disk is bad input (one line, with
    /// the bytes written; the file is removed when the sink drops).
    pub fn full_error(&mut self, e: io::Error) -> anyhow::Error {
        let where_ = self
            .path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "/dev/null".into());
        if e.raw_os_error() == Some(libc::ENOSPC) || e.raw_os_error() == Some(libc::EDQUOT) {
            self.full = true;
            bad_input(format!(
                "disk full at consumer file {where_}: stopped after {} bytes written, file removed",
                self.written
            ))
        } else {
            anyhow::anyhow!("writing consumer file {where_}: {e}")
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        if let Some(p) = &self.path {
            if !self.keep || self.full {
                let _ = std::fs::remove_file(p);
            }
        }
    }
}
