//! Whether a file sysdelta keeps state in is ours: the one way every state
//! file beside a store (the store, its journal, run log, deferred writes,
//! anchors, step and setup-env files), the state directory and a run's
//! scratch directory is opened, checked and created.
//!
//! sysdelta runs as root and acts on these files: it undoes what a journal
//! says, runs the teardown a store names, folds a run log. So a file is
//! obeyed only when nobody but its user could have written it, as OpenSSH's
//! StrictModes and git's `safe.directory` decide (CVE-2022-24765):
//!
//! - the final component is never followed when it is a symbolic link
//!   (`O_NOFOLLOW`), and what is judged is what was opened (`fstat`);
//! - its owner is a trusted uid ([`trusted_uids`]: the effective uid, root,
//!   and under sudo the invoking user's `SUDO_UID`, as git does);
//! - neither group nor others may write it, nor its directory, except
//!   that in a sticky directory (`/tmp`) a file we own is ours (its
//!   directory's other writers cannot remove or replace it), and that the
//!   owner's private group (user private groups, umask 002) is the owner;
//! - a directory named in [`SHARED_VAR`] is a team's shared directory the
//!   user accepts: its group may write it and the files in it, and they
//!   may belong to other users of that group (never world-writable ones).
//!
//! Only the file's own directory is judged, not every directory above it
//! (git judges a repository's top directory only). Nothing here knows
//! about stores or plans: callers name the files.

use std::fs::{File, Metadata, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The environment variable that names shared directories the user
/// accepts (colon-separated absolute paths; each exactly that directory,
/// not those below it).
pub const SHARED_VAR: &str = "SYSDELTA_SHARED_DIRS";

/// The mode of every file sysdelta makes beside a store.
pub const FILE_MODE: u32 = 0o600;
/// The mode of every directory sysdelta makes for its state.
pub const DIR_MODE: u32 = 0o700;

/// A refusal or failure: one line, the path first (callers make it bad
/// input, exit 2).
pub type Refusal = String;

/// The owner and mode (with its type bits) of a file, as judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Facts {
    pub uid: u32,
    pub mode: u32,
    /// Its group is its owner's private group (the owner's primary group,
    /// with no other member): group write is then the owner's alone, as
    /// with a umask of 002 on systems with user private groups (Debian's
    /// OpenSSH accepts it for the same reason). Only known, and only
    /// read, where the mode gives the group write.
    pub private_group: bool,
    /// How many names it has (hard links): see [`written_alone`].
    pub links: u64,
}

impl Facts {
    pub fn of(m: &Metadata) -> Facts {
        Facts {
            uid: m.uid(),
            mode: m.mode(),
            // Asked only of a group-writable file: the answer looks the
            // owner and the group up (NSS: /etc/passwd and /etc/group
            // here, a directory server on some machines), and opening a
            // store judges some ten files, which mostly give the group
            // no write.
            private_group: m.mode() & 0o020 != 0 && private_group(m.gid(), m.uid()),
            links: m.nlink(),
        }
    }
    /// Whether someone other than the owner may write it through its
    /// group.
    fn group_write(&self) -> bool {
        self.mode & 0o020 != 0 && !self.private_group
    }
    fn kind(&self) -> u32 {
        self.mode & libc::S_IFMT
    }
    fn is_dir(&self) -> bool {
        self.kind() == libc::S_IFDIR
    }
    /// Whether the sticky bit is set (a directory's other writers cannot
    /// remove or rename a file they do not own).
    pub fn sticky(&self) -> bool {
        self.mode & libc::S_ISVTX != 0
    }
}

/// Whether group `gid` is user `uid`'s private group: the user's primary
/// group, with no member but (at most) the user.
fn private_group(gid: u32, uid: u32) -> bool {
    use nix::unistd::{Gid, Group, Uid, User};
    let Ok(Some(user)) = User::from_uid(Uid::from_raw(uid)) else {
        return false;
    };
    let Ok(Some(group)) = Group::from_gid(Gid::from_raw(gid)) else {
        return false;
    };
    user.gid.as_raw() == gid && group.mem.iter().all(|m| *m == user.name)
}

/// Who may own what sysdelta obeys: the effective uid, root, and (when
/// running as root under sudo) the user who ran sudo.
pub fn trusted_uids() -> Vec<u32> {
    let me = nix::unistd::geteuid().as_raw();
    let mut uids = vec![me, 0];
    if me == 0 {
        if let Some(u) = std::env::var("SUDO_UID")
            .ok()
            .and_then(|s| s.parse::<u32>().ok())
        {
            uids.push(u);
        }
    }
    uids
}

/// The shared directories the user accepts ([`SHARED_VAR`]), as given
/// and canonical (relative entries are ignored: they would mean a
/// different directory in each working directory).
pub fn shared_dirs() -> Vec<PathBuf> {
    let Some(v) = std::env::var_os(SHARED_VAR) else {
        return Vec::new();
    };
    std::env::split_paths(&v)
        .filter(|p| p.is_absolute())
        .flat_map(|p| {
            let canon = std::fs::canonicalize(&p).ok();
            std::iter::once(p).chain(canon)
        })
        .collect()
}

/// Whether `dir` is one of the accepted shared directories.
fn is_shared(dir: &Path) -> bool {
    let shared = shared_dirs();
    if shared.is_empty() {
        return false;
    }
    let canon = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    shared.iter().any(|s| s == dir || *s == canon)
}

fn who(uid: u32) -> String {
    match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(u)) => format!("uid {uid} ({})", u.name),
        _ => format!("uid {uid}"),
    }
}

/// The hint every refusal of an owner or a mode ends with.
fn hint() -> String {
    format!("sysdelta obeys only files that you or root own and nobody else can write (a team's shared directory: {SHARED_VAR})")
}

/// Why the directory `dir` (its facts) may not hold state sysdelta
/// obeys; None when it may. Pure: the table the unit tests check.
pub fn judge_dir(dir: Facts, owners: &[u32], shared: bool) -> Option<String> {
    if !dir.is_dir() {
        return Some("is not a directory".into());
    }
    if !owners.contains(&dir.uid) && !shared {
        return Some(format!("is owned by {}", who(dir.uid)));
    }
    let others_write = dir.mode & 0o002 != 0;
    let group_write = dir.group_write();
    if dir.sticky() || !(others_write || group_write) {
        return None;
    }
    if shared && !others_write {
        return None;
    }
    Some(format!(
        "can be written by {} (mode {:04o}) and is not sticky",
        if others_write { "others" } else { "its group" },
        dir.mode & 0o7777
    ))
}

/// Why the file (or directory, `want_dir`) `file` in the directory `dir`
/// is not sysdelta's to obey; None when it is. Pure, as [`judge_dir`].
pub fn judge_file(
    file: Facts,
    dir: Facts,
    owners: &[u32],
    shared: bool,
    want_dir: bool,
) -> Option<String> {
    if file.kind() == libc::S_IFLNK {
        return Some("is a symbolic link".into());
    }
    match (want_dir, file.is_dir(), file.kind() == libc::S_IFREG) {
        (true, true, _) | (false, _, true) => {}
        (true, false, _) => return Some("is not a directory".into()),
        (false, _, false) => return Some("is not a regular file".into()),
    }
    // In a sticky directory its other writers can plant files but not
    // replace ours: only what we own is ours there, shared or not.
    let shared = shared && !dir.sticky();
    if !owners.contains(&file.uid) && !shared {
        return Some(format!("is owned by {}", who(file.uid)));
    }
    let others_write = file.mode & 0o002 != 0;
    let group_write = file.group_write();
    if others_write || (group_write && !shared) {
        return Some(format!(
            "can be written by {} (mode {:04o})",
            if others_write { "others" } else { "its group" },
            file.mode & 0o7777
        ));
    }
    None
}

fn refused(path: &Path, why: &str) -> Refusal {
    format!("{}: refused: it {why}; {}", path.display(), hint())
}

fn parent_of(path: &Path) -> PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    abs.parent().unwrap_or(Path::new("/")).to_path_buf()
}

/// The files sysdelta obeys (their entries are undone, their commands
/// and environments run, their URL connected to), by how their names
/// end: a shared directory lets teammates share a store's data, never
/// these, which must be the user's or root's even there.
const OBEYED: &[&str] = &[
    ".journal",
    ".runlog",
    ".deferred",
    ".step",
    ".setup-env",
    ".store",
];

/// Whether `path` is one of the files sysdelta obeys ([`OBEYED`]).
fn obeyed(path: &Path) -> bool {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    OBEYED.iter().any(|end| name.ends_with(end))
}

/// The facts of `path`'s directory, after judging it; and whether it is
/// an accepted shared directory for `path` (never for a file sysdelta
/// obeys).
fn dir_of(path: &Path) -> Result<(Facts, bool), Refusal> {
    let dir = parent_of(path);
    let (facts, shared) = check_dir(&dir)?;
    Ok((facts, shared && !obeyed(path)))
}

/// Judge the directory `dir` itself (followed if a link: a store's
/// directory may be a link to a data disk); its facts and whether shared.
pub fn check_dir(dir: &Path) -> Result<(Facts, bool), Refusal> {
    let m = std::fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let facts = Facts::of(&m);
    let shared = is_shared(dir);
    match judge_dir(facts, &trusted_uids(), shared) {
        Some(why) => Err(refused(dir, &why)),
        None => Ok((facts, shared)),
    }
}

/// Judge `path` (not followed) and its directory without opening it: its
/// metadata, None when it does not exist (its directory judged all the
/// same), or the refusal.
pub fn check(path: &Path) -> Result<Option<Metadata>, Refusal> {
    check_kind(path, false)
}

/// [`check`] for a directory.
pub fn check_dir_entry(path: &Path) -> Result<Option<Metadata>, Refusal> {
    check_kind(path, true)
}

fn check_kind(path: &Path, want_dir: bool) -> Result<Option<Metadata>, Refusal> {
    let (dir, shared) = dir_of(path)?;
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
        Ok(m) => match judge_file(Facts::of(&m), dir, &trusted_uids(), shared, want_dir) {
            Some(why) => Err(refused(path, &why)),
            None => Ok(Some(m)),
        },
    }
}

/// [`check`] of a file sysdelta, or SQLite for it, may write (the store
/// and the files beside it): also refused when it has other names
/// ([`written_alone`]).
pub fn check_written(path: &Path) -> Result<Option<Metadata>, Refusal> {
    let m = check(path)?;
    if let Some(m) = &m {
        written_alone(path, Facts::of(m))?;
    }
    Ok(m)
}

/// Refuse a plain file with other names (hard links) where sysdelta, or
/// SQLite for it, may write: [`check_written`] and [`open_write`]. A file of root's that another user linked into
/// /tmp under a store's `-wal` name (where the kernel lets them:
/// `fs.protected_hardlinks` 0) is root's, and a run once emptied it. What
/// sysdelta only reads or runs may have other names (cargo links the
/// binary it builds).
fn written_alone(path: &Path, f: Facts) -> Result<(), Refusal> {
    match f.kind() == libc::S_IFREG && f.links > 1 {
        true => Err(refused(
            path,
            &format!(
                "has {} hard links (another name for it may be a file this must not change)",
                f.links
            ),
        )),
        false => Ok(()),
    }
}

/// Judge the file an open descriptor is (what was opened, not what the
/// name may point at by now).
fn judge_open(path: &Path, f: &File, dir: Facts, shared: bool) -> Result<(), Refusal> {
    let m = f
        .metadata()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    match judge_file(Facts::of(&m), dir, &trusted_uids(), shared, false) {
        Some(why) => Err(refused(path, &why)),
        None => Ok(()),
    }
}

fn no_follow(e: std::io::Error, path: &Path) -> Refusal {
    // O_NOFOLLOW on a link fails with ELOOP.
    if e.raw_os_error() == Some(libc::ELOOP) {
        refused(path, "is a symbolic link")
    } else {
        format!("{}: {e}", path.display())
    }
}

/// Open `path` to read, not following a link, and judged as opened; None
/// when it does not exist. (Non-blocking, so a planted FIFO is refused
/// rather than waited on.)
pub fn open_read(path: &Path) -> Result<Option<File>, Refusal> {
    open_read_as(path, true)
}

/// [`open_read`] never granting a shared directory's allowance: for what
/// root boots or executes later (a kexec session's images and initrds),
/// which must be the user's or root's alone wherever they lie.
pub fn open_read_private(path: &Path) -> Result<Option<File>, Refusal> {
    open_read_as(path, false)
}

fn open_read_as(path: &Path, allow_shared: bool) -> Result<Option<File>, Refusal> {
    let (dir, shared) = dir_of(path)?;
    if shared && !allow_shared {
        // The directory passed as shared only: judged as any other here.
        if let Some(why) = judge_dir(dir, &trusted_uids(), false) {
            return Err(refused(&parent_of(path), &why));
        }
    }
    let shared = shared && allow_shared;
    let f = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(no_follow(e, path)),
        Ok(f) => f,
    };
    judge_open(path, &f, dir, shared)?;
    Ok(Some(f))
}

/// Read the whole of `path` ([`open_read`]); None when it does not exist.
pub fn read(path: &Path) -> Result<Option<Vec<u8>>, Refusal> {
    use std::io::Read;
    let Some(mut f) = open_read(path)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Some(bytes))
}

/// Create `path` anew (`O_EXCL|O_NOFOLLOW`, mode 0600) in a judged
/// directory, to write.
pub fn create_new(path: &Path) -> Result<File, Refusal> {
    dir_of(path)?;
    create_new_unjudged(path)
}

fn create_new_unjudged(path: &Path) -> Result<File, Refusal> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| no_follow(e, path))
}

/// Open `path` to read and write (and, with `append`, to append),
/// creating it as [`create_new`] does if it does not exist, else judged
/// as opened.
pub fn open_write(path: &Path, append: bool) -> Result<File, Refusal> {
    let (dir, shared) = dir_of(path)?;
    match OpenOptions::new()
        .read(!append)
        .write(true)
        .append(append)
        .create_new(true)
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(f) => return Ok(f),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => return Err(no_follow(e, path)),
    }
    let f = OpenOptions::new()
        .read(!append)
        .write(true)
        .append(append)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| no_follow(e, path))?;
    judge_open(path, &f, dir, shared)?;
    let m = f
        .metadata()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    written_alone(path, Facts::of(&m))?;
    Ok(f)
}

/// Replace `path` with `bytes` whole: a new 0600 file beside it, synced
/// and renamed over it (a rename replaces a link, never what it points
/// at). An existing `path` is judged first.
pub fn replace(path: &Path, bytes: &[u8]) -> Result<(), Refusal> {
    use std::io::Write;
    check(path)?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let _ = std::fs::remove_file(&tmp);
    let written = create_new_unjudged(&tmp).and_then(|mut f| {
        f.write_all(bytes)
            .and_then(|()| f.sync_data())
            .and_then(|()| std::fs::rename(&tmp, path))
            .map_err(|e| format!("{}: {e}", path.display()))
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Make the directory `path` (mode 0700, its parents as they would be
/// made anyway), or judge the one there: a link, another user's, or one
/// others can write is refused.
pub fn make_dir(path: &Path) -> Result<(), Refusal> {
    use std::os::unix::fs::DirBuilderExt;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(DIR_MODE)
                .create(parent)
                .map_err(|e| format!("{}: {e}", parent.display()))?;
        }
    }
    match std::fs::DirBuilder::new().mode(DIR_MODE).create(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            check_dir_entry(path)?;
            check_dir(path).map(drop)
        }
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests;
