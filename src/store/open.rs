//! Opening a store: creating it whole, refusing what is not a sysdelta
//! store or has a newer schema, opening read-only what this process cannot
//! write, and migrating an older schema.

// The types and imports of the store, whose impl this file continues.
use super::*;
use crate::sys::trust;
use std::os::unix::fs::OpenOptionsExt;

/// The files beside a store (or a team store's anchor) that sysdelta reads
/// state from, or SQLite does: checked with the store itself.
const SIDE_FILES: &[&str] = &[
    ".journal",
    ".runlog",
    ".deferred",
    ".step",
    ".setup-env",
    "-wal",
    "-shm",
    "-journal",
];

impl Store {
    /// Open a store. With `create` (commands that write: run, import), a
    /// missing file becomes a new store, and a store this process cannot
    /// write is refused. Without (commands that read), a missing or empty
    /// file is bad input, and a store this process cannot write is opened
    /// read-only: nothing is migrated or folded, and not a byte is written
    /// in or next to it.
    ///
    /// A store that is not ours ([`Store::check_trusted`]: a link, another
    /// user's, or one others can write, it or a file beside it) is refused
    /// to a writer and to any command on a team store's anchor, and opened
    /// read-only for a reader of a store file.
    pub fn open(path: &Path, create: bool) -> Result<Store> {
        Store::open_as(path, create)
    }

    /// A team store (the anchor at `anchor`) connected, its schema
    /// checked and migrated, but what a dead run here left not yet taken
    /// in: the machine-wide check before a run connects first and takes
    /// the anchor's lock only then ([`Store::take_in_left`]), as the
    /// connect may wait up to its timeout on a slow or unreachable server
    /// and a run starting on the store waits only a second for that lock
    /// (`store::lock`).
    pub fn connect_team(anchor: &Path) -> Result<Store> {
        let url = pg::pointer_url(anchor).ok_or_else(|| {
            bad(format!(
                "{}: not a PostgreSQL store's anchor",
                anchor.display()
            ))
        })?;
        Store::check_trusted(anchor)?;
        Store::connect_pg(anchor, &url, false)
    }

    /// Take in what a dead run left for this team store (its run log and
    /// deferred writes) by a process holding the anchor's lock (`_lock`,
    /// from [`Store::try_lock`]), so that what it reads next is one state
    /// no other process changes.
    pub fn take_in_left(&self, _lock: &nix::fcntl::Flock<std::fs::File>) -> Result<()> {
        self.fold_orphaned_log(true)?;
        self.apply_deferred_file()
    }

    /// Open, as [`Store::open`] says; `create`: a writer's.
    fn open_as(path: &Path, create: bool) -> Result<Store> {
        let trusted = Store::check_trusted(path);
        if let Some(url) = pg::pointer_url(path) {
            trusted?;
            return Store::open_pg(path, &url, create);
        }
        let untrusted = match trusted {
            Err(e) if create => return Err(e),
            Err(e) => Some(format!("{e:#}")),
            Ok(()) => None,
        };
        let p = path.display();
        if create && !path.exists() && Store::why_not_writable(path, false).is_none() {
            Store::create_whole(path)?;
            // Judged again: the store was judged before it existed, and a
            // file another user renamed into its place meanwhile (the link
            // then fails, and "another process made it" is taken) is theirs.
            Store::check_trusted(path)?;
        }
        let exists = path.exists();
        if !exists && !create {
            return Err(bad(format!(
                "{p}: no such store (run an experiment first, or pass --store)"
            )));
        }
        if exists && path.is_dir() {
            return Err(bad(format!("{p}: is a directory, not a sysdelta store")));
        }
        // SQLite reads an empty file as an empty database, and the
        // migrations would then write a schema into it.
        if exists && !create && std::fs::metadata(path).is_ok_and(|m| m.len() == 0) {
            return Err(bad(format!("{p}: not a sysdelta store (empty file)")));
        }
        let read_only = untrusted.or_else(|| Store::why_not_writable(path, exists));
        if let (Some(why), true) = (&read_only, create) {
            return Err(bad(format!("{p}: cannot write the store ({why})")));
        }
        let claimed = match read_only {
            None => Store::claim_beside(path, &["-wal", "-shm", "-journal"])?,
            Some(_) => Vec::new(),
        };
        let opened = (|| {
            let conn = match &read_only {
                None => Connection::open_with_flags(
                    path,
                    if exists {
                        OpenFlags::SQLITE_OPEN_READ_WRITE
                    } else {
                        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE
                    } | OpenFlags::SQLITE_OPEN_NO_MUTEX
                        | OpenFlags::SQLITE_OPEN_NOFOLLOW,
                ),
                Some(_) => Store::connect_read_only(path),
            }
            .map_err(|e| bad(format!("{p}: cannot open store: {e}")))?;
            let store = Store::with(Db::Sqlite(conn), path, read_only.clone());
            store.check_and_migrate(create)?;
            if read_only.is_none() {
                // Made again where SQLite removed it: it does when it turns
                // a database in rollback mode (a new one from an empty file)
                // to WAL.
                Store::claim_beside(path, &["-journal"])?;
            }
            store.fold_orphaned_log(false)?;
            Ok(store)
        })();
        if opened.is_err() {
            unclaim(path, &claimed);
        }
        opened
    }

    /// Open the PostgreSQL store `url`, anchored at `anchor` on this
    /// machine (see [`pg`]): connected, its schema checked and migrated as
    /// a file's is, and what a dead run here left in the run log folded
    /// and its deferred writes applied, each under the anchor's lock when
    /// no live run holds it.
    pub(super) fn open_pg(anchor: &Path, url: &str, create: bool) -> Result<Store> {
        let store = Store::connect_pg(anchor, url, create)?;
        store.fold_orphaned_log(false)?;
        if let Some(_lock) = Store::try_lock(anchor).ok().flatten() {
            store.apply_deferred_file()?;
        }
        Ok(store)
    }

    /// Connect to the PostgreSQL store `url` and check and migrate its
    /// schema; nothing local (run log, deferred writes) is read yet.
    fn connect_pg(anchor: &Path, url: &str, create: bool) -> Result<Store> {
        let url = pg::Url::parse(url)?;
        let conn = db::Pg::connect(url.config.clone(), url.shown.clone())?;
        let store = Store::with(Db::Pg(Box::new(conn)), anchor, None);
        store.check_and_migrate(create)?;
        Ok(store)
    }

    /// Refuse (bad input, one line) a store that is not ours to act on:
    /// the store file or anchor at `path`, or a file beside it that
    /// sysdelta reads state from, is a symbolic link, another user's, or
    /// writable by others, or their directory is ([`trust`]). What does
    /// not exist yet passes (its directory judged); it is made private.
    pub fn check_trusted(path: &Path) -> Result<()> {
        trust::check(path).map_err(bad)?;
        for suffix in SIDE_FILES {
            trust::check(&Store::beside(path, suffix)).map_err(bad)?;
        }
        Ok(())
    }

    pub(super) fn with(db: Db, path: &Path, read_only: Option<String>) -> Store {
        Store {
            db,
            path: path.to_path_buf(),
            log: RefCell::new(None),
            read_only,
            unreachable: std::cell::Cell::new(false),
            deferred: RefCell::new(Vec::new()),
            writer: RefCell::new(None),
            deferred_out: RefCell::new(None),
            gave_up: std::cell::Cell::new(false),
            left_runs: std::cell::Cell::new(0),
        }
    }

    /// Make a new store at `path` whole or not at all: its schema is
    /// written to a file in a private directory beside it, which is then
    /// linked into place, so a kill during the creation never leaves a
    /// half-made store that every later command refuses (at most a
    /// `.sysdelta-new-*` directory). A store another process made
    /// meanwhile is kept (the link fails, and that one is used).
    pub(super) fn create_whole(path: &Path) -> Result<()> {
        let cannot = |e: &dyn std::fmt::Display| {
            bad(format!("{}: cannot create store: {e}", path.display()))
        };
        let file = std::path::absolute(path).map_err(|e| cannot(&e))?;
        let dir = file.parent().unwrap_or(Path::new("/"));
        // Made in a directory of its own (0700, beside the store, so on its
        // file system): nobody else can put a file under the names SQLite
        // opens there (the database, its -journal, -wal and -shm, which
        // SQLite removes and makes again, without O_EXCL, for a new
        // database), as they could under predictable names in /tmp.
        let private = tempfile::Builder::new()
            .prefix(".sysdelta-new-")
            .tempdir_in(dir)
            .map_err(|e| cannot(&e))?;
        let tmp = private.path().join("store.db");
        // Its mode is SQLite's own for a new database (0644, less the
        // umask): colleagues may read results.
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
            .map_err(|e| cannot(&e))?;
        let conn = Connection::open_with_flags(
            &tmp,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_NOFOLLOW,
        )
        .map_err(|e| cannot(&e))?;
        let store = Store::with(Db::Sqlite(conn), &tmp, None);
        store.check_and_migrate(true)?;
        // Closing the only connection checkpoints the WAL into the file.
        drop(store);
        match std::fs::hard_link(&tmp, path) {
            Ok(()) => Ok(()),
            // Another process made it meanwhile: that one is used (and
            // judged again by the caller).
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(cannot(&e)),
        }
    }

    /// Why this process cannot write the store at `path`: the file, or
    /// the directory where SQLite keeps its `-wal` and `-shm` files and
    /// sysdelta the run log. None when it can.
    pub(super) fn why_not_writable(path: &Path, exists: bool) -> Option<String> {
        use nix::unistd::{access, AccessFlags};
        let file = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        if exists {
            if let Err(e) = access(&file, AccessFlags::W_OK) {
                return Some(format!(
                    "no write access to {}: {}",
                    file.display(),
                    e.desc()
                ));
            }
        }
        let dir = file.parent().unwrap_or(Path::new("/"));
        access(dir, AccessFlags::W_OK | AccessFlags::X_OK)
            .err()
            .map(|e| {
                format!(
                    "no write access to its directory {}: {}",
                    dir.display(),
                    e.desc()
                )
            })
    }

    /// A read-only connection that writes nothing in or next to the store
    /// (see [`read_only_connection`]), after one warning if the store's
    /// last changes are in a `-wal` it cannot read.
    pub(super) fn connect_read_only(path: &Path) -> rusqlite::Result<Connection> {
        let file = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let wal = Store::beside(&file, "-wal");
        let use_wal = readable_wal(&file);
        if use_wal == Ok(false) && std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
            crate::sys::stderr::say!(
                "sysdelta: warning: {}: the store's last changes are in its write-ahead log, which cannot be read without write access; they are not shown until someone with write access opens the store",
                wal.display()
            );
        }
        connect_read_only_as(&file, use_wal)
    }

    /// Make the files SQLite keeps beside the store (`suffixes`: its `-wal`,
    /// `-shm` and `-journal`) this process's own before SQLite opens them:
    /// each made here (`O_EXCL`, not following a link) where it is
    /// missing, and judged again ([`trust::check`]) where it appeared
    /// since the store was checked. SQLite opens them with `O_CREAT` and
    /// no `O_EXCL`, and as root gives them to the store's owner: a `-wal`
    /// another user planted in a sticky directory between the check and
    /// that open would be read as the store's own changes, and from then
    /// on pass every check as root's, and a "hot" `-journal` planted there
    /// would be played back into the store. (SQLite gives a new, empty
    /// one the store's mode, as it does its own, and removes the `-wal`
    /// and `-shm` when the last connection closes. The empty `-journal`
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
                    if let Err(e) = trust::check(&side) {
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

    /// Refuse what is not a sysdelta store this sysdelta can read, and
    /// bring an older schema up to date. Only `create` (a writer) makes a
    /// store of an SQLite database without tables; a read-only store is
    /// never changed: one that needs a migration is refused.
    pub(super) fn check_and_migrate(&self, create: bool) -> Result<()> {
        let p = self.shown();
        if let Db::Sqlite(conn) = &self.db {
            conn.busy_timeout(std::time::Duration::from_secs(10))?;
        }
        // Two hosts that open a new team store at once: one migrates, the
        // other waits and finds it done (the lock ends with the transaction).
        let locked = self.db.is_pg() && self.read_only.is_none();
        if locked {
            self.db.begin()?;
            self.db
                .value::<Option<String>>("SELECT CAST(pg_advisory_xact_lock(7573) AS TEXT)", &[])?;
        }
        let checked = self.check_and_migrate_locked(create, &p);
        if locked {
            match &checked {
                Ok(()) => self.db.commit()?,
                Err(_) => self.db.rollback(),
            }
        }
        checked
    }

    fn check_and_migrate_locked(&self, create: bool, p: &str) -> Result<()> {
        let (kind, tables_sql) = match &self.db {
            Db::Sqlite(_) => ("an SQLite database", "SELECT name FROM sqlite_master WHERE type = 'table'"),
            Db::Pg(_) => (
                "a PostgreSQL database",
                "SELECT CAST(table_name AS TEXT) FROM information_schema.tables WHERE table_schema = current_schema()",
            ),
        };
        // Reading the schema is the first access: a file that is not SQLite fails here, untouched.
        let tables: Vec<String> = self
            .db
            .query(tables_sql, &[], |r| r.get(0))
            .map_err(|e| bad(format!("{p}: not a sysdelta store ({e:#})")))?;
        let version: i64 = if tables.iter().any(|t| t == "meta") {
            let app: Option<String> = self
                .db
                .query_opt("SELECT value FROM meta WHERE key = 'app'", &[], |r| {
                    r.get(0)
                })
                .map_err(|e| bad(format!("{p}: not a sysdelta store ({e:#})")))?;
            if app.as_deref() != Some(schema::APP_ID) {
                return Err(bad(format!(
                    "{p}: not a sysdelta store (its meta table belongs to something else)"
                )));
            }
            let v: String = self
                .db
                .value("SELECT value FROM meta WHERE key = 'schema_version'", &[])
                .map_err(|e| {
                    bad(format!(
                        "{p}: damaged sysdelta store, no schema version ({e:#})"
                    ))
                })?;
            v.parse()
                .map_err(|_| bad(format!("{p}: damaged sysdelta store, schema version '{v}'")))?
        } else if tables.is_empty() && create {
            0
        } else if tables.is_empty() {
            return Err(bad(format!(
                "{p}: not a sysdelta store ({kind} without tables)"
            )));
        } else {
            return Err(bad(format!(
                "{p}: not a sysdelta store ({kind} with other tables: {})",
                tables.join(", ")
            )));
        };
        let known = schema::MIGRATIONS.len() as i64;
        if version > known {
            return Err(bad(format!(
                "{p}: store schema v{version} is newer than this sysdelta understands (v{known}); upgrade sysdelta"
            )));
        }
        if let Some(why) = &self.read_only {
            if version < known {
                return Err(bad(format!(
                    "{p}: store schema v{version} must be upgraded to v{known} before this sysdelta can read it, which needs write access ({why})"
                )));
            }
            return Ok(());
        }
        if let Db::Sqlite(conn) = &self.db {
            conn.pragma_update(None, "journal_mode", "WAL")
                .context("setting WAL mode")?;
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            conn.pragma_update(None, "foreign_keys", "ON")?;
            keep_wal(conn)?;
        }
        if version < known {
            let migrate = || -> Result<()> {
                for (i, m) in schema::MIGRATIONS.iter().enumerate().skip(version as usize) {
                    let sql = match self.db.is_pg() {
                        true => schema::for_postgresql(m),
                        false => m.to_string(),
                    };
                    self.db
                        .batch(&sql)
                        .with_context(|| format!("migrating store to v{}", i + 1))?;
                    if i + 1 == schema::UIDS_FROM {
                        self.give_uids()?;
                    }
                }
                for (key, value) in [
                    ("app", schema::APP_ID.to_string()),
                    ("schema_version", known.to_string()),
                ] {
                    self.db.execute(
                        "INSERT INTO meta (key, value) VALUES (?1, ?2)
                         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        &vals![key, &value],
                    )?;
                }
                Ok(())
            };
            // PostgreSQL migrates inside the locked transaction already open.
            match self.db.is_pg() {
                true => migrate()?,
                false => self.in_transaction(migrate)?,
            }
        }
        self.add_missing_indexes()
    }

    /// Create the look-up indexes ([`schema::INDEXES`]) this store lacks
    /// (none an older index serves: [`schema::COVERED_BY`]): once per
    /// store, as it is first opened for writing by a sysdelta that knows
    /// them; a store that has them all is only asked which it has (no lock
    /// on its tables).
    fn add_missing_indexes(&self) -> Result<()> {
        let names_sql = match self.db.is_pg() {
            true => {
                "SELECT CAST(indexname AS TEXT) FROM pg_indexes WHERE schemaname = current_schema()"
            }
            false => "SELECT name FROM sqlite_master WHERE type = 'index'",
        };
        let present: Vec<String> = self.db.query(names_sql, &[], |r| r.get(0))?;
        let missing = schema::missing_indexes(&present);
        if missing.is_empty() {
            return Ok(());
        }
        let create = || -> Result<()> {
            for sql in &missing {
                self.db
                    .batch(sql)
                    .with_context(|| format!("adding a look-up index: {sql}"))?;
            }
            Ok(())
        };
        match self.db.is_pg() {
            true => create(),
            false => self.in_transaction(create),
        }
    }

    /// Give each experiment stored before uids existed its own (see
    /// [`write::new_uid`]), so it too can be pushed and pulled.
    fn give_uids(&self) -> Result<()> {
        let ids: Vec<i64> =
            self.db
                .query("SELECT id FROM experiments WHERE uid IS NULL", &[], |r| {
                    r.get(0)
                })?;
        for id in ids {
            self.db.execute(
                "UPDATE experiments SET uid = ?2 WHERE id = ?1",
                &vals![id, &super::write::new_uid()],
            )?;
        }
        Ok(())
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
fn keep_wal(conn: &Connection) -> Result<()> {
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
fn unclaim(path: &Path, made: &[PathBuf]) {
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
/// `-wal` and `-shm`: Ok(true) when both are there (a writer has the store
/// open, or died with it open), this process can read them, and they and
/// any `-journal` are the store's; Ok(false) when not both are there or
/// readable, or when the directory lets others put a `-journal` there and
/// the store's own empty one ([`Store::open`]'s writer keeps it) is not
/// there to take the name; Err (one line, why) when one of them is not the
/// store's: a link, not a plain file, or neither ours nor root's
/// ([`trust::check`], which also takes a named shared directory's
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
    // Others may make files here: not the owner's alone, nor a team's named
    // shared directory (whose members may write the store's data anyway).
    let others_write = !shared
        && dir_facts.is_none_or(|d| d.sticky() || trust::judge_dir(d, &owners, false).is_some());
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
            trust::check(&side)?;
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
/// `-wal` file and `-shm` index. When both exist (a writer has the store
/// open, or died with it open) they are used, the `-shm` read-only
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
