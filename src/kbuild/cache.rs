//! Where builds live: `$XDG_CACHE_HOME/sysdelta/kbuild` (or
//! `~/.cache/sysdelta/kbuild`), a directory of the invoking user's own,
//! 0700, below directories no other user can change (so never in a
//! directory of /tmp's that is not this user's), where another user could
//! otherwise plant or swap a tree, an object directory or a finished
//! build's bzImage for root to build and boot.

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
    root_in(&base)
}

/// `base/sysdelta/kbuild`, made and checked as [`root`] says; the path
/// returned has no symbolic links left (one could be re-pointed later).
fn root_in(base: &Path) -> Result<PathBuf, Error> {
    if !base.is_absolute() {
        return Err(Error::bad(format!(
            "kernel builds: the cache directory {} is not absolute",
            base.display()
        )));
    }
    let dir = base.join("sysdelta").join("kbuild");
    // What exists of it is judged before anything is made in it.
    let mut existing = dir.clone();
    while std::fs::symlink_metadata(&existing).is_err() && existing.pop() {}
    safe_ancestors(&existing)?;
    private_dir(&dir)?;
    let real = std::fs::canonicalize(&dir)
        .map_err(|e| Error::bad(format!("kernel builds: {}: {e}", dir.display())))?;
    safe_ancestors(&real)?;
    Ok(real)
}

/// Refuse `dir` when a directory from `/` down to it could be changed by
/// another user: each must belong to root or this user and be writable by
/// no one else, unless it is sticky (/tmp), where the entry on the way
/// must then be this user's (others cannot rename or remove it there).
fn safe_ancestors(dir: &Path) -> Result<(), Error> {
    let real = std::fs::canonicalize(dir)
        .map_err(|e| Error::bad(format!("kernel builds: {}: {e}", dir.display())))?;
    let me = nix::unistd::geteuid().as_raw();
    let mut in_sticky = false;
    let mut chain: Vec<&Path> = real.ancestors().collect();
    chain.reverse();
    for a in chain {
        let m = std::fs::symlink_metadata(a)
            .map_err(|e| Error::bad(format!("kernel builds: {}: {e}", a.display())))?;
        let mode = m.permissions().mode();
        let why = if (in_sticky && m.uid() != me) || (m.uid() != 0 && m.uid() != me) {
            Some(format!("belongs to uid {}", m.uid()))
        } else if mode & 0o022 != 0 && mode & 0o1000 == 0 {
            Some(format!(
                "may be written by others (mode {:o})",
                mode & 0o7777
            ))
        } else {
            None
        };
        if let Some(why) = why {
            return Err(Error::bad(format!(
                "kernel builds: the cache {} is unsafe: {} {why}; set XDG_CACHE_HOME to a \
                 directory only you (or root) can change",
                dir.display(),
                a.display()
            )));
        }
        in_sticky = mode & 0o1000 != 0 && mode & 0o022 != 0;
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_cache_below_a_directory_others_can_change_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        let ok = root_in(&d.join("mine")).unwrap();
        assert!(ok.ends_with("mine/sysdelta/kbuild") && ok.is_dir());
        // A world-writable parent: someone could swap sysdelta/ under us.
        std::fs::create_dir(d.join("open")).unwrap();
        chmod(&d.join("open"), 0o777);
        let e = root_in(&d.join("open")).unwrap_err().to_string();
        assert!(e.contains("may be written by others (mode 777)"), "{e}");
        assert!(!d.join("open/sysdelta").exists(), "nothing made there");
        // A sticky one (like /tmp) is fine when the entry in it is ours.
        std::fs::create_dir(d.join("sticky")).unwrap();
        chmod(&d.join("sticky"), 0o1777);
        root_in(&d.join("sticky/ours")).unwrap();
        if !nix::unistd::geteuid().is_root() {
            return;
        }
        // ...and refused when another user made it (as root gives it away).
        let theirs = d.join("sticky/theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), None).unwrap();
        chmod(&theirs, 0o755);
        let e = root_in(&theirs).unwrap_err().to_string();
        assert!(e.contains("belongs to uid 65534"), "{e}");
        // A symlink to it is judged by where it leads.
        std::os::unix::fs::symlink(&theirs, d.join("link")).unwrap();
        let e = root_in(&d.join("link")).unwrap_err().to_string();
        assert!(e.contains("belongs to uid 65534"), "{e}");
    }
}
