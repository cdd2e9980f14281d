//! A directory only its owner (the running user, root in practice) can
//! use, and the files in it: made mode 0700, or checked and fixed up when
//! it exists; files in it opened without following symlinks, mode 0600,
//! and replaced when another user owns them or others could open them.
//!
//! Why replace rather than chmod a file others could open: a descriptor
//! opened before the fix keeps working after a chmod, and `flock` works on
//! a read-only descriptor, so a user who once opened a world-readable lock
//! could hold it for good. A new inode in a directory only its owner can
//! enter is out of everyone else's reach.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A checked directory that only its owner (and root) can write.
#[derive(Debug)]
pub struct PrivateDir {
    path: PathBuf,
}

fn euid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

fn trusted_owner(uid: u32) -> bool {
    uid == euid() || uid == 0
}

impl PrivateDir {
    /// Make `path` (mode 0700, its parents as the umask says), or check an
    /// existing one and fix its mode. `Err` is one line saying why it
    /// cannot be made safe: a symlink, not a directory, owned by another
    /// user, or in a parent others can replace it in.
    pub fn make(path: &Path) -> Result<PrivateDir, String> {
        if fs::symlink_metadata(path).is_err() {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                fs::create_dir_all(parent).map_err(|e| {
                    format!("cannot create the directory {}: {e}", parent.display())
                })?;
            }
            match fs::DirBuilder::new().mode(0o700).create(path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(format!("cannot create {}: {e}", path.display())),
            }
        }
        Self::check(path, true)
    }

    /// The directory if it exists and is safe to read from, None if it is
    /// not there; `Err` as for [`PrivateDir::make`]. Fixes nothing but a
    /// mode this user may fix.
    pub fn existing(path: &Path) -> Result<Option<PrivateDir>, String> {
        match fs::symlink_metadata(path) {
            Err(_) => Ok(None),
            Ok(_) => Self::check(path, true).map(Some),
        }
    }

    fn check(path: &Path, fix: bool) -> Result<PrivateDir, String> {
        let shown = path.display();
        let meta = fs::symlink_metadata(path).map_err(|e| format!("{shown}: {e}"))?;
        if meta.file_type().is_symlink() {
            return Err(format!(
                "{shown} is a symbolic link: the run directory must be a directory owned by root"
            ));
        }
        if !meta.is_dir() {
            return Err(format!("{shown} is not a directory"));
        }
        if !trusted_owner(meta.uid()) {
            return Err(format!(
                "{shown} is owned by uid {}, not by you or root: remove it, or give it to root",
                meta.uid()
            ));
        }
        // The parent must not let others rename this directory away and
        // put their own in its place (a sticky directory such as /tmp
        // lets only the owner do that, as ssh's StrictModes allows).
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            if let Ok(pm) = fs::metadata(parent) {
                let sticky = pm.mode() & 0o1000 != 0;
                if !sticky && !trusted_owner(pm.uid()) {
                    return Err(format!(
                        "{shown} is in {}, which uid {} owns and could replace it in: use a directory in one that only root or you can write",
                        parent.display(),
                        pm.uid()
                    ));
                }
                if !sticky && pm.mode() & 0o022 != 0 {
                    return Err(format!(
                        "{shown} is in {}, which others can write (mode {:o}): use a directory in one that only root or you can write",
                        parent.display(),
                        pm.mode() & 0o7777
                    ));
                }
            }
        }
        if meta.mode() & 0o077 != 0 {
            if !fix || meta.uid() != euid() {
                if meta.mode() & 0o022 != 0 {
                    return Err(format!(
                        "{shown} can be written by others (mode {:o}) and is not yours to fix",
                        meta.mode() & 0o7777
                    ));
                }
            } else {
                // Through a descriptor opened without following a link:
                // what is fixed is what was checked.
                let dir = OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
                    .open(path)
                    .map_err(|e| format!("{shown}: {e}"))?;
                dir.set_permissions(fs::Permissions::from_mode(0o700))
                    .map_err(|e| format!("cannot make {shown} mode 0700: {e}"))?;
            }
        }
        Ok(PrivateDir {
            path: path.to_path_buf(),
        })
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `name` in the directory, opened for reading and writing (made mode
    /// 0600 if absent), never through a symlink. One that another user
    /// owns, that others could open, or that is a symlink is removed and
    /// made again.
    pub fn open_private(&self, name: &str) -> std::io::Result<File> {
        let path = self.path.join(name);
        let mut last = None;
        for _ in 0..4 {
            let opened = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(&path);
            let f = match opened {
                Ok(f) => f,
                Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                    fs::remove_file(&path)?;
                    last = Some(e);
                    continue;
                }
                Err(e) => return Err(e),
            };
            let m = f.metadata()?;
            if !m.is_file() {
                return Err(std::io::Error::other(format!(
                    "{} is not a regular file",
                    path.display()
                )));
            }
            if m.uid() == euid() && m.mode() & 0o077 == 0 {
                return Ok(f);
            }
            // Another's, or one others may have open: a new inode.
            drop(f);
            fs::remove_file(&path)?;
        }
        Err(last.unwrap_or_else(|| {
            std::io::Error::other(format!("{} keeps being replaced", path.display()))
        }))
    }

    /// Whether `file` is still what `name` names (an flock is worth only
    /// as much as the name others find it by).
    pub fn names(&self, name: &str, file: &File) -> bool {
        match (fs::symlink_metadata(self.path.join(name)), file.metadata()) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }

    /// The bytes of `name` when it is a regular file that this user or
    /// root owns and only its owner can write; None otherwise (absent, a
    /// symlink, planted by someone else).
    pub fn read_trusted(&self, name: &str) -> Option<Vec<u8>> {
        let mut f = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(self.path.join(name))
            .ok()?;
        let m = f.metadata().ok()?;
        if !m.is_file() || !trusted_owner(m.uid()) || m.mode() & 0o022 != 0 {
            return None;
        }
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes).ok()?;
        Some(bytes)
    }

    /// Replace `name` with `bytes`, mode 0600: a temporary `name.<pid>`,
    /// then a rename, so a reader sees the old or the new content, never
    /// half. The temporary file is removed when the write fails; one a
    /// killed process left is removed by [`PrivateDir::sweep`].
    pub fn write_atomically(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        let tmp = self.path.join(format!("{name}.{}", std::process::id()));
        // A leftover of a dead process that had this pid.
        let _ = fs::remove_file(&tmp);
        let written = (|| {
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&tmp)?;
            f.write_all(bytes)?;
            drop(f);
            fs::rename(&tmp, self.path.join(name))
        })();
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        written
    }

    /// Remove the temporary files (`<name>.<pid>`) that processes no
    /// longer alive left, e.g. a `restore` killed between its write and
    /// its rename.
    pub fn sweep(&self) {
        let Ok(rd) = fs::read_dir(&self.path) else {
            return;
        };
        for e in rd.flatten() {
            let name = e.file_name();
            let Some(pid) = temp_pid(&name.to_string_lossy()) else {
                continue;
            };
            if !alive(pid) {
                let _ = fs::remove_file(e.path());
            }
        }
    }
}

/// The pid in a temporary file's name `<name>.<pid>`.
pub fn temp_pid(name: &str) -> Option<i32> {
    let (_, pid) = name.rsplit_once('.')?;
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok().filter(|p| *p > 0)
}

fn alive(pid: i32) -> bool {
    !matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
        Err(nix::errno::Errno::ESRCH)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        fs::symlink_metadata(p).unwrap().mode() & 0o7777
    }

    #[test]
    fn a_new_directory_and_its_files_are_for_their_owner_only() {
        let t = tempfile::tempdir().unwrap();
        let d = PrivateDir::make(&t.path().join("run")).unwrap();
        assert_eq!(mode(d.path()), 0o700);
        d.open_private("lock").unwrap();
        assert_eq!(mode(&d.path().join("lock")), 0o600);
        d.write_atomically("holder", b"pid 1\n").unwrap();
        assert_eq!(mode(&d.path().join("holder")), 0o600);
        assert_eq!(d.read_trusted("holder").unwrap(), b"pid 1\n");
    }

    #[test]
    fn an_open_directory_and_a_readable_file_are_fixed_up() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("run");
        fs::create_dir(&p).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(p.join("lock"), "").unwrap();
        fs::set_permissions(p.join("lock"), fs::Permissions::from_mode(0o644)).unwrap();
        // Held open, as by a user who opened it while others could.
        let held = File::open(p.join("lock")).unwrap();
        let before = held.metadata().unwrap().ino();
        let d = PrivateDir::make(&p).unwrap();
        assert_eq!(mode(&p), 0o700);
        let f = d.open_private("lock").unwrap();
        assert_eq!(mode(&p.join("lock")), 0o600);
        assert_ne!(
            f.metadata().unwrap().ino(),
            before,
            "replaced, not chmod'ed"
        );
        assert!(d.names("lock", &f));
    }

    #[test]
    fn symlinks_are_neither_followed_nor_trusted() {
        let t = tempfile::tempdir().unwrap();
        let target = t.path().join("target");
        fs::write(&target, "keep").unwrap();
        let link = t.path().join("run");
        std::os::unix::fs::symlink(t.path(), &link).unwrap();
        let e = PrivateDir::make(&link).unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");
        let d = PrivateDir::make(&t.path().join("real")).unwrap();
        std::os::unix::fs::symlink(&target, d.path().join("holder")).unwrap();
        assert_eq!(d.read_trusted("holder"), None);
        std::os::unix::fs::symlink(&target, d.path().join("lock")).unwrap();
        d.open_private("lock").unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep");
        assert!(!fs::symlink_metadata(d.path().join("lock"))
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn a_file_another_user_owns_is_neither_read_nor_kept() {
        if !nix::unistd::geteuid().is_root() {
            println!("SKIP: needs root to give a file to another user");
            eprintln!("SKIP: needs root to give a file to another user");
            return;
        }
        let t = tempfile::tempdir().unwrap();
        let d = PrivateDir::make(&t.path().join("run")).unwrap();
        for name in ["holder", "lock"] {
            let p = d.path().join(name);
            fs::write(&p, "planted").unwrap();
            fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
            std::os::unix::fs::chown(&p, Some(65534), Some(65534)).unwrap();
        }
        assert_eq!(
            d.read_trusted("holder"),
            None,
            "a planted holder line is not read"
        );
        let f = d.open_private("lock").unwrap();
        assert_eq!(f.metadata().unwrap().uid(), 0, "a planted lock is replaced");
        // A run directory another user owns is refused, not fixed.
        let theirs = t.path().join("theirs");
        fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        let e = PrivateDir::make(&theirs).unwrap_err();
        assert!(e.contains("uid 65534"), "{e}");
    }

    #[test]
    fn a_dead_process_temporary_file_is_swept() {
        let t = tempfile::tempdir().unwrap();
        let d = PrivateDir::make(&t.path().join("run")).unwrap();
        // Pid 2^22 + 1 is above the kernel's largest pid: never alive.
        let dead = d.path().join("holder.4194305");
        fs::write(&dead, "pid").unwrap();
        let mine = d.path().join(format!("holder.{}", std::process::id()));
        fs::write(&mine, "pid").unwrap();
        d.sweep();
        assert!(!dead.exists());
        assert!(mine.exists(), "a live process's file is left alone");
        assert_eq!(temp_pid("0123456789abcdef"), None);
        assert_eq!(temp_pid("holder.12"), Some(12));
    }
}
