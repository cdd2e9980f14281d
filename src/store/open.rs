//! Opening a store: creating it whole, refusing what is not a sysdelta
//! store or has a newer schema, opening read-only what this process cannot
//! write, and migrating an older schema.

// The types and imports of the store, whose impl this file continues.
use super::sides::{keep_wal, unclaim};
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
        trust::check_written(path).map_err(bad)?;
        for suffix in SIDE_FILES {
            trust::check_written(&Store::beside(path, suffix)).map_err(bad)?;
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
