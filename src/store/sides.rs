//! The files SQLite keeps beside a store (`-wal`, `-shm`, `-journal`): a
//! writer makes them its own before SQLite opens them and keeps them; a
//! reader reads through them only when they are the store's, else the file
//! alone. SQLite opens them without `O_EXCL` and, as root, gives what it
//! opens to the store's owner, so a file another user put under one of
//! those names would otherwise become the owner's (docs/security.md,
//! "Files beside a store").

// The types and imports of the store, whose impl this file continues.
use super::*;
use crate::sys::trust;

impl Store {
    /// A read-only connection that writes nothing in or next to the store
    /// (see [`read_only_connection`]), after one warning if the store's
    /// last changes are in a `-wal` it cannot read.
    pub(super) fn connect_read_only(path: &Path) -> rusqlite::Result<Connection> {
        let file = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let wal = Store::beside(&file, "-wal");
        let use_wal = readable_wal(&file);
        if use_wal == Ok(false) && std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
            crate::sys::stderr::say!(
                "sysdelta: warning: {}: the store's last changes are in its write-ahead log, which is not read here (no write access to it, or a directory others can write without the store's own -journal); they are shown once a writer of the store opens it",
                wal.display()
            );
        }
        connect_read_only_as(&file, use_wal)
    }

    /// Make the files SQLite keeps beside the store (`suffixes`: its `-wal`,
    /// `-shm` and `-journal`) this process's own before SQLite opens them:
    /// each made here (`O_EXCL`, not following a link) where it is
    /// missing, and judged again ([`trust::check_written`]) where it appeared
    /// since the store was checked. SQLite opens them with `O_CREAT` and
    /// no `O_EXCL`, and as root gives them to the store's owner: a `-wal`
    /// another user planted in a sticky directory between the check and
    /// that open would be read as the store's own changes, and from then
    /// on pass every check as root's, and a "hot" `-journal` planted there
    /// would be played back into the store. (SQLite gives a new, empty
    /// `-wal` or `-shm` the store's mode, as it does its own; [`keep_wal`]
    /// keeps both when the last connection closes. The empty `-journal`
    /// stays, unused in WAL mode and never hot: it holds the name, so that
    /// nobody else can put one there, which is what lets a reader in a
    /// sticky directory such as /tmp read through the `-wal`:
    /// [`readable_wal`].) Returns the files it made.
    pub(super) fn claim_beside(path: &Path, suffixes: &[&str]) -> Result<Vec<PathBuf>> {
        let mut made = Vec::new();
        for suffix in suffixes {
            let side = Store::beside(path, suffix);
            match trust::create_new(&side) {
                Ok(_) => made.push(side),
                Err(_) if std::fs::symlink_metadata(&side).is_ok() => {
                    if let Err(e) = trust::check_written(&side) {
                        unclaim(path, &made);
                        return Err(bad(e));
                    }
                }
                Err(e) => {
                    unclaim(path, &made);
                    return Err(bad(e));
                }
            }
        }
        Ok(made)
    }
}

/// Keep the store's `-wal` and `-shm` when this connection, the last, closes
/// (`SQLITE_FCNTL_PERSIST_WAL`; the `-wal` emptied, `journal_size_limit`
/// 0), as the empty `-journal` is kept ([`Store::claim_beside`]): SQLite
/// otherwise removes them, and in a sticky directory such as /tmp another
/// user could then put their own under those names before the next
/// connection opens them (SQLite makes them again without `O_EXCL`, and as
/// root gives them to the store's owner). Kept, they are the owner's and
/// nobody else can remove or replace them.
pub(super) fn keep_wal(conn: &Connection) -> Result<()> {
    conn.pragma_update(None, "journal_size_limit", 0)?;
    let mut on: std::ffi::c_int = 1;
    // SAFETY: the handle is this open connection's; the call reads and
    // writes the one int it is handed, which outlives it.
    let rc = unsafe {
        rusqlite::ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            rusqlite::ffi::SQLITE_FCNTL_PERSIST_WAL,
            (&raw mut on).cast(),
        )
    };
    match rc {
        rusqlite::ffi::SQLITE_OK => Ok(()),
        rc => Err(anyhow::anyhow!(
            "keeping the store's -wal: SQLite error {rc}"
        )),
    }
}

/// Remove the files [`Store::claim_beside`] made beside `path` once a store
/// that failed to open is closed, where SQLite did not take them over: the
/// empty `-journal`, and a `-wal` and `-shm` still there, empty, beside a
/// database not in WAL mode (header bytes 18 and 19 are not 2: not a
/// sysdelta store, refused before SQLite looked; one it looked at through
/// them it removed itself). Beside a database in WAL mode another process
/// may be using them. Nothing is changed next to a refused file.
pub(super) fn unclaim(path: &Path, made: &[PathBuf]) {
    let mut header = [0u8; 20];
    let wal_mode = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut header))
        .is_ok_and(|()| header[18] == 2 && header[19] == 2);
    for side in made {
        let journal = side.as_os_str().to_string_lossy().ends_with("-journal");
        if (journal || !wal_mode) && std::fs::symlink_metadata(side).is_ok_and(|m| m.len() == 0) {
            let _ = std::fs::remove_file(side);
        }
    }
}

/// Whether a reader of the store at `path` (absolute) reads through its
/// `-wal` and `-shm`: Ok(true) when both are there (a writer keeps them:
/// [`keep_wal`]; an older one's live or dead run left them), this process
/// can read them, and they and
/// any `-journal` are the store's; Ok(false) when not both are there or
/// readable, or when the directory lets others put a `-journal` there and
/// the store's own empty one ([`Store::open`]'s writer keeps it) is not
/// there to take the name; Err (one line, why) when one of them is not the
/// store's: a link, not a plain file, or neither ours nor root's
/// ([`trust::check_written`], which also takes a named shared directory's
/// teammates) nor owned by the store file's own owner in a directory only
/// that owner can write (or a sticky one).
///
/// A reader must never let SQLite open a file someone else planted: it
/// applies a `-wal`'s pages as the store's last changes, a "hot"
/// `-journal`'s as the pages to put back (a connection that is not
/// `immutable` looks for one at its first read), and as root it gives
/// both to the store's owner, after which they pass every check as that
/// owner's (a planted `-wal` beside root's store in /tmp became root's,
/// and `run --resume` then ran the plan it held; a `-journal` planted
/// while a run went on replaced the store at the next open). What was
/// judged stays what SQLite opens: a file another user cannot remove or
/// replace (theirs is refused; a sticky directory keeps its owner's).
pub(super) fn readable_wal(path: &Path) -> std::result::Result<bool, String> {
    use nix::unistd::{access, AccessFlags};
    use std::os::unix::fs::MetadataExt;
    let store_owner = std::fs::symlink_metadata(path).map(|m| m.uid()).ok();
    let dir = path.parent().unwrap_or(Path::new("/"));
    let dir_facts = std::fs::metadata(dir).ok().map(|m| trust::Facts::of(&m));
    let shared = trust::shared_dirs().iter().any(|d| d.as_path() == dir);
    // The directory is the store owner's (or root's) and only they write
    // it (their private group counts as them), or it is sticky: nobody
    // else can remove or replace the owner's files there. (Unknown: not.)
    let owners: Vec<u32> = store_owner.into_iter().chain([0]).collect();
    let owners_dir = dir_facts.is_some_and(|d| trust::judge_dir(d, &owners, false).is_none());
    // Others may make files here: not the owner's alone (or sticky, where
    // they may), nor a team's named shared directory (whose members may
    // write the store's data anyway).
    let others_write = !shared && (!owners_dir || dir_facts.is_some_and(|d| d.sticky()));
    let mut usable = true;
    for suffix in ["-wal", "-shm", "-journal"] {
        let side = Store::beside(path, suffix);
        let m = match std::fs::symlink_metadata(&side) {
            Err(_) => {
                // Not both of -wal and -shm; or no -journal of the store's
                // holds that name where others could put one between this
                // look and SQLite's.
                if suffix != "-journal" || others_write {
                    usable = false;
                }
                continue;
            }
            Ok(m) => m,
        };
        if !m.file_type().is_file() {
            return Err(format!(
                "{}: not a plain file, so not the store's",
                side.display()
            ));
        }
        let the_owners =
            Some(m.uid()) == store_owner && m.mode() & 0o002 == 0 && m.nlink() == 1 && owners_dir;
        if !the_owners {
            trust::check_written(&side)?;
        }
        // The -wal and -shm are read; an empty -journal only holds its name.
        usable &= suffix == "-journal" || access(&side, AccessFlags::R_OK).is_ok();
    }
    Ok(usable)
}

/// [`read_only_connection`] of `file` (absolute), through its `-wal` as
/// [`readable_wal`] says, after one warning when it refused one.
fn connect_read_only_as(
    file: &Path,
    use_wal: std::result::Result<bool, String>,
) -> rusqlite::Result<Connection> {
    let use_wal = use_wal.unwrap_or_else(|why| {
        crate::sys::stderr::say!(
            "sysdelta: warning: {why}; the store is read from its file alone, without its -wal"
        );
        false
    });
    Connection::open_with_flags(
        read_only_uri(file, !use_wal),
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
}

/// `path` (absolute) as an SQLite URI filename
/// (<https://www.sqlite.org/uri.html>) opened read-only: `immutable` if
/// asked, and otherwise with its `-shm` opened read-only too. Every byte
/// but unreserved ones and `/` is percent-encoded, so any file name (`?`,
/// `#`, `%`, not UTF-8) names the same file.
pub(super) fn read_only_uri(path: &Path, immutable: bool) -> std::ffi::OsString {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let mut uri = b"file:".to_vec();
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b);
        } else {
            uri.extend(format!("%{b:02X}").bytes());
        }
    }
    uri.extend(b"?mode=ro");
    uri.extend(if immutable {
        &b"&immutable=1"[..]
    } else {
        &b"&readonly_shm=1"[..]
    });
    std::ffi::OsString::from_vec(uri)
}

/// A read-only connection to the SQLite database at `path` that writes
/// nothing in or next to it, whoever this process is (root included, who
/// may write everything): used to read another user's store, a store on a
/// read-only mount, and the stores of other runs (`peek`).
///
/// The store is in WAL mode, and SQLite reads such a database through its
/// `-wal` file and `-shm` index. When both exist (a writer keeps them, or
/// an older sysdelta's live or dead run left them) they are used, the `-shm` read-only
/// (`readonly_shm`, <https://www.sqlite.org/uri.html>): with a live
/// writer SQLite reads through its index, and with none it reads the
/// `-wal` into memory, where a writable `-shm` would be truncated and
/// rebuilt. Only when they are the store's ([`readable_wal`]). When they
/// are not both there, or not the store's, the store is opened `immutable`
/// (<https://www.sqlite.org/uri.html#uriimmutable>): no locks, no `-wal`,
/// no `-shm`, and it reads exactly what the file holds. (A plain read-only
/// connection would create both: as root, next to any user's store; in a
/// directory it cannot write, it fails with "attempt to write a readonly
/// database".) Its one risk is a
/// writer that starts while this one reads: a checkpoint may then change
/// pages under the reader, whose read may fail or miss the newest runs.
/// The store itself is never at risk.
pub(crate) fn read_only_connection(path: &Path) -> rusqlite::Result<Connection> {
    let file = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    connect_read_only_as(&file, readable_wal(&file))
}
