//! Where builds live: `$XDG_CACHE_HOME/sysdelta/kbuild` (or
//! `~/.cache/sysdelta/kbuild`), a directory of the invoking user's own,
//! 0700, never under /tmp, where another user could plant a tree or an
//! object directory for root to build and boot.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::Error;

/// The build cache's root, made (0700) if missing, refused unless this
/// user owns it and no one else may write it.
pub fn root() -> Result<PathBuf, Error> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(x) => PathBuf::from(x),
        None => {
            let home = std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .ok_or_else(|| {
                    Error::bad("kernel builds: neither XDG_CACHE_HOME nor HOME is set")
                })?;
            PathBuf::from(home).join(".cache")
        }
    };
    if !base.is_absolute() {
        return Err(Error::bad(format!(
            "kernel builds: the cache directory {} is not absolute",
            base.display()
        )));
    }
    let dir = base.join("sysdelta").join("kbuild");
    private_dir(&dir)?;
    Ok(dir)
}

/// Make `dir` (and its parents) 0700 if missing; refuse one that is not a
/// directory of this user's, or that others may write.
pub fn private_dir(dir: &Path) -> Result<(), Error> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| Error::bad(format!("kernel builds: cannot make {}: {e}", dir.display())))?;
    let m = std::fs::symlink_metadata(dir)
        .map_err(|e| Error::bad(format!("kernel builds: {}: {e}", dir.display())))?;
    let me = nix::unistd::geteuid().as_raw();
    if !m.is_dir() || m.uid() != me {
        return Err(Error::bad(format!(
            "kernel builds: {} is not a directory of this user's (uid {me})",
            dir.display()
        )));
    }
    if m.permissions().mode() & 0o022 != 0 {
        return Err(Error::bad(format!(
            "kernel builds: {} may be written by others (mode {:o}); chmod go-w it",
            dir.display(),
            m.permissions().mode() & 0o7777
        )));
    }
    Ok(())
}

/// An exclusive flock on `path` (created 0600), held while the value
/// lives: one builder at a time per source checkout and object directory.
pub fn lock(path: &Path) -> Result<nix::fcntl::Flock<std::fs::File>, Error> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| Error::failed(format!("{}: {e}", path.display())))?;
    nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| Error::failed(format!("lock {}: {e}", path.display())))
}

/// A short stable name for a path (its blob id's first 12 digits), for
/// the per-tree and per-(tree, kconfig) directories.
pub fn name_of(parts: &[&str]) -> Result<String, Error> {
    Ok(super::git::hash_text(&parts.join("\n"))?
        .chars()
        .take(12)
        .collect())
}
