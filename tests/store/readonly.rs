//! Reading a store needs no write access: `list` and `report` on a store
//! another user owns, or on a read-only mount, print what they print with
//! write access, exit 0, and change not a byte in or next to the store.
//! And reading a file that is not a store (an empty one) changes nothing;
//! nor does a run's look into the other stores that ran on the machine.

use crate::common;
use common::*;

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::SystemTime;

/// The user `nobody`, as setpriv(1) and runuser(1) know it.
const NOBODY: &str = "65534";

/// The command prefix that runs a program as a user permission bits apply
/// to: nothing when this is not root; as root (whom they do not bind),
/// setpriv or runuser as `nobody`. Err: why there is none.
fn unprivileged() -> Result<Vec<String>, String> {
    if !nix::unistd::geteuid().is_root() {
        return Ok(Vec::new());
    }
    let candidates: [Vec<String>; 2] = [
        [
            "setpriv",
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
        ]
        .map(String::from)
        .to_vec(),
        ["runuser", "-u", "nobody", "--"].map(String::from).to_vec(),
    ];
    for prefix in candidates {
        // nobody must be able to run the binary where it was built.
        let ran = Command::new(&prefix[0])
            .args(&prefix[1..])
            .arg(bin())
            .arg("--help")
            .output();
        if ran.is_ok_and(|o| o.status.success()) {
            return Ok(prefix);
        }
    }
    Err(format!(
        "running as root, and neither setpriv nor runuser can run {} as nobody",
        bin()
    ))
}

/// Run sysdelta on `store` behind `prefix`, in the sandbox and with its
/// run directory: a run registers its store there and looks into every
/// store registered before it (as root), so with the machine's
/// `/run/sysdelta` the tests here, and any other sysdelta on the machine,
/// would read each other's stores.
fn run_as(prefix: &[String], sb: &Sandbox, store: &Path, args: &[&str]) -> Output {
    let mut cmd = match prefix.split_first() {
        Some((program, rest)) => {
            let mut c = Command::new(program);
            c.args(rest).arg(bin());
            c
        }
        None => Command::new(bin()),
    };
    cmd.arg("--store")
        .arg(store)
        .args(args)
        .env("SYSDELTA_RUN_DIR", sb.run_dir())
        .current_dir(sb.dir.path())
        .output()
        .unwrap()
}

/// A path's mode, set now and put back when this is dropped, so that a
/// failed test still leaves a tree its TempDir can remove.
struct Mode {
    path: PathBuf,
    old: u32,
}

impl Mode {
    fn set(path: &Path, mode: u32) -> Mode {
        let old = std::fs::metadata(path).unwrap().permissions().mode();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        Mode {
            path: path.to_path_buf(),
            old,
        }
    }
}

impl Drop for Mode {
    fn drop(&mut self) {
        let _ = std::fs::set_permissions(&self.path, std::fs::Permissions::from_mode(self.old));
    }
}

/// Every file in `dir`: name, bytes and modification time.
fn snapshot(dir: &Path) -> Vec<(OsString, Vec<u8>, SystemTime)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            (e.file_name(), file_bytes(&e.path()), m.modified().unwrap())
        })
        .collect();
    files.sort();
    files
}

/// The bytes of the file at `path`, read by a child process. Closing a
/// file this process opened would drop every fcntl lock the process holds
/// on it (they belong to the process, not to the descriptor), the locks
/// of an SQLite connection it has open on that file included: a store the
/// test's "owner" has open would then look closed to every other process.
fn file_bytes(path: &Path) -> Vec<u8> {
    let out = Command::new("cat").arg(path).output().unwrap();
    assert!(out.status.success(), "cat: {}", stderr(&out));
    out.stdout
}

/// A store with one finished experiment at `dir/s.db`.
fn measured_store(sb: &Sandbox, dir: &Path) -> PathBuf {
    std::fs::create_dir(dir).unwrap();
    let store = dir.join("s.db");
    let made = run_as(
        &[],
        sb,
        &store,
        &[
            "ab", "--runs", "3", "--config", "a=", "--config", "b=", "--", "true",
        ],
    );
    assert!(made.status.success(), "{}", stderr(&made));
    store
}

/// What the tests of another user's store start from: the prefix that
/// runs a command as that user ([`unprivileged`]), a store with one
/// finished experiment at `ro/s.db` in `sb`, that directory, and the
/// sandbox opened (0755) so that the user can reach it, until the returned
/// `Mode` is dropped. Err: why there is no such user.
fn another_users_store(sb: &Sandbox) -> Result<(Vec<String>, Mode, PathBuf, PathBuf), String> {
    let prefix = unprivileged()?;
    let sandbox = Mode::set(sb.dir.path(), 0o755);
    let dir = sb.path("ro");
    let store = measured_store(sb, &dir);
    Ok((prefix, sandbox, dir, store))
}

/// What `list` and `report --last` print, after asserting that they
/// succeeded without a word on stderr.
fn readings(prefix: &[String], sb: &Sandbox, store: &Path) -> Vec<String> {
    [&["list"][..], &["report", "--last"][..]]
        .iter()
        .map(|args| {
            let out = run_as(prefix, sb, store, args);
            assert_eq!(
                (out.status.code(), stderr(&out).as_str()),
                (Some(0), ""),
                "sysdelta {args:?}"
            );
            stdout(&out)
        })
        .collect()
}

#[test]
fn another_users_store_reads_as_with_write_access_and_is_left_unchanged() {
    let sb = Sandbox::new();
    let (prefix, _sandbox, dir, store) = match another_users_store(&sb) {
        Ok(setup) => setup,
        Err(why) => return common::skip(why),
    };
    let with_write_access = readings(&[], &sb, &store);
    let before = snapshot(&dir);

    let _file = Mode::set(&store, 0o444);
    let _dir = Mode::set(&dir, 0o555);
    assert_eq!(readings(&prefix, &sb, &store), with_write_access);
    assert_eq!(snapshot(&dir), before, "not a byte in or next to the store");
}

#[test]
fn another_users_store_in_use_shows_its_newest_commit() {
    let sb = Sandbox::new();
    let (prefix, _sandbox, dir, store) = match another_users_store(&sb) {
        Ok(setup) => setup,
        Err(why) => return common::skip(why),
    };
    // Its owner has it open (its -wal and -shm exist) and committed a
    // change not yet checkpointed into the file.
    let owner = rusqlite::Connection::open(&store).unwrap();
    owner
        .execute("UPDATE experiments SET label = 'newest'", [])
        .unwrap();
    assert!(Path::new(&format!("{}-shm", store.display())).exists());
    let before = snapshot(&dir);

    let _file = Mode::set(&store, 0o444);
    let _dir = Mode::set(&dir, 0o555);
    let read = readings(&prefix, &sb, &store);
    assert!(
        read[0].contains("newest"),
        "the committed label: {}",
        read[0]
    );
    assert_eq!(snapshot(&dir), before, "not a byte in or next to the store");
    drop(owner);
}

/// A tmpfs mounted on a directory and, once filled, shown read-only at a
/// second directory by a read-only bind mount; both unmounted when this is
/// dropped (also when the test fails).
///
/// Why not remount the tmpfs itself read-only: the kernel refuses that
/// (EBUSY) while any file on it is open for writing, and the file the test
/// copied there stays open in any child another test thread has forked and
/// not yet exec'd (CI failed on that, on a loaded machine). A new bind
/// mount has no writers of its own, so making it read-only cannot race.
struct Tmpfs {
    filled: PathBuf,
    read_only: Option<PathBuf>,
}

impl Tmpfs {
    fn mount(at: &Path) -> Result<Tmpfs, String> {
        use nix::mount::{mount, MsFlags};
        std::fs::create_dir(at).unwrap();
        mount(
            Some("tmpfs"),
            at,
            Some("tmpfs"),
            MsFlags::empty(),
            Some("size=16m"),
        )
        .map_err(|e| format!("cannot mount a tmpfs on {}: {e}", at.display()))?;
        Ok(Tmpfs {
            filled: at.to_path_buf(),
            read_only: None,
        })
    }

    /// The tmpfs, as it is now, read-only at `at`.
    fn show_read_only(&mut self, at: &Path) -> PathBuf {
        use nix::mount::{mount, MsFlags};
        std::fs::create_dir(at).unwrap();
        mount(
            Some(&self.filled),
            at,
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        )
        .unwrap();
        self.read_only = Some(at.to_path_buf());
        mount(
            None::<&str>,
            at,
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY,
            None::<&str>,
        )
        .unwrap();
        at.to_path_buf()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        use nix::mount::{umount2, MntFlags};
        if let Some(at) = &self.read_only {
            let _ = umount2(at, MntFlags::MNT_DETACH);
        }
        let _ = umount2(&self.filled, MntFlags::MNT_DETACH);
    }
}

#[test]
fn a_store_on_a_read_only_mount_reads_as_with_write_access_and_is_left_unchanged() {
    if !nix::unistd::geteuid().is_root() {
        return common::skip("mounting a tmpfs needs root");
    }
    let sb = Sandbox::new();
    let store = measured_store(&sb, &sb.path("made"));
    let with_write_access = readings(&[], &sb, &store);
    let mut tmpfs = match Tmpfs::mount(&sb.path("tmpfs")) {
        Ok(m) => m,
        Err(why) => return common::skip(why),
    };
    // A name SQLite's URIs give meaning to, which must still name the file.
    let name = "s ?mode=rw#%41.db";
    std::fs::copy(&store, sb.path("tmpfs").join(name)).unwrap();
    let mnt = tmpfs.show_read_only(&sb.path("mnt"));
    let on_mount = mnt.join(name);
    let before = snapshot(&mnt);
    // Root, to whom only the mount says no.
    assert_eq!(readings(&[], &sb, &on_mount), with_write_access);
    assert_eq!(snapshot(&mnt), before, "not a byte in or next to the store");
    // A command that writes says why it cannot, in one line.
    let out = run_as(
        &[],
        &sb,
        &on_mount,
        &[
            "ab", "--runs", "3", "--config", "a=", "--config", "b=", "--", "true",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot write the store") && err.contains("Read-only file system"),
        "{err}"
    );
    assert_eq!(snapshot(&mnt), before);
}

/// `list` and `report --last` on the sandbox's store fail with exit 2 and
/// exactly `line` on stderr, and leave the sandbox as it was.
fn assert_refused_unchanged(sb: &Sandbox, line: &str) {
    let before = snapshot(sb.dir.path());
    for args in [&["list"][..], &["report", "--last"][..]] {
        let out = sb.run(args);
        assert_eq!(out.status.code(), Some(2), "sysdelta {args:?}");
        assert_eq!(
            stderr(&out),
            format!("sysdelta: {}: {line}\n", sb.store().display())
        );
    }
    assert_eq!(snapshot(sb.dir.path()), before, "nothing changed");
}

#[test]
fn reading_an_empty_file_refuses_it_and_leaves_it_empty() {
    let sb = Sandbox::new();
    std::fs::write(sb.store(), b"").unwrap();
    assert_refused_unchanged(&sb, "not a sysdelta store (empty file)");
}

#[test]
fn reading_an_sqlite_database_without_tables_refuses_it_unchanged() {
    let sb = Sandbox::new();
    rusqlite::Connection::open(sb.store())
        .unwrap()
        .pragma_update(None, "user_version", 7)
        .unwrap();
    assert_refused_unchanged(
        &sb,
        "not a sysdelta store (an SQLite database without tables)",
    );
}

#[test]
fn a_store_that_needs_an_upgrade_is_refused_without_write_access() {
    let sb = Sandbox::new();
    let (prefix, _sandbox, dir, store) = match another_users_store(&sb) {
        Ok(setup) => setup,
        Err(why) => return common::skip(why),
    };
    // As the sysdelta before the last migration left it.
    let known = sysdelta::store::schema::MIGRATIONS.len();
    rusqlite::Connection::open(&store)
        .unwrap()
        .execute(
            "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
            [(known - 1).to_string()],
        )
        .unwrap();
    let before = snapshot(&dir);
    let _file = Mode::set(&store, 0o444);
    let _dir = Mode::set(&dir, 0o555);
    let out = run_as(&prefix, &sb, &store, &["list"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "sysdelta: {}: store schema v{} must be upgraded to v{known} before this sysdelta can read it, which needs write access (no write access to ",
            store.display(),
            known - 1
        )),
        "{err}"
    );
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn a_dead_runs_log_a_reader_cannot_fold_is_left_with_one_warning() {
    let sb = Sandbox::new();
    let (prefix, _sandbox, dir, store) = match another_users_store(&sb) {
        Ok(setup) => setup,
        Err(why) => return common::skip(why),
    };
    let listed = readings(&[], &sb, &store).swap_remove(0);
    // One more run of experiment 1, as a killed run leaves it in its log.
    let row = sysdelta::store::runlog::RunRow {
        experiment_id: 1,
        block: 7,
        seq: 0,
        config: "a".into(),
        workload: "true".into(),
        warmup: false,
        started_at: 0.0,
        status: "ok".into(),
        reason: None,
        stderr_tail: None,
        exit_code: None,
        samples: vec![("wall".into(), vec![0.25f64.to_bits()])],
        series: vec![],
        profile: vec![],
        boot: None,
    };
    let log = sysdelta::store::runlog::path_for(&store);
    std::fs::write(&log, serde_json::to_string(&row).unwrap() + "\n").unwrap();
    let before = snapshot(&dir);
    {
        let _file = Mode::set(&store, 0o444);
        let _dir = Mode::set(&dir, 0o555);
        let out = run_as(&prefix, &sb, &store, &["list"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert_eq!(stdout(&out), listed, "the runs in the store");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!("sysdelta: warning: {}: 1 run a stopped sysdelta left is not in the store and not shown until someone with write access opens it (no write access to ", log.display())),
            "{err}"
        );
        assert_eq!(snapshot(&dir), before, "the store and the log as they were");
    }
    // With write access, the next command folds it.
    let out = run_as(&[], &sb, &store, &["list"]);
    assert_eq!(stderr(&out), "");
    assert_ne!(stdout(&out), listed, "one more run: {}", stdout(&out));
    assert!(!log.exists());
}

/// Leave experiment 1 as a run killed inside config `a` leaves it.
fn enter_config(conn: &rusqlite::Connection) {
    conn.execute(
        "UPDATE experiments SET status = 'running', entered_config = 'a' WHERE id = 1",
        [],
    )
    .unwrap();
}

/// The (experiment, config) pairs a run's look into `store` finds entered.
fn entered_configs(store: &Path) -> Vec<(i64, String)> {
    sysdelta::store::peek::entered_configs(store)
        .into_iter()
        .map(|e| (e.id, e.config))
        .collect()
}

#[test]
fn a_look_into_another_store_finds_its_entered_config_and_writes_nothing_next_to_it() {
    let sb = Sandbox::new();
    let dir = sb.path("other");
    let store = measured_store(&sb, &dir);
    // Closed: its changes are checkpointed into the file, and no -wal or
    // -shm is left next to it.
    enter_config(&rusqlite::Connection::open(&store).unwrap());
    let before = snapshot(&dir);

    assert_eq!(entered_configs(&store), [(1, "a".to_string())]);
    assert_eq!(snapshot(&dir), before, "not a byte in or next to the store");
}

#[test]
fn a_look_into_a_store_whose_writer_died_reads_its_wal_and_changes_nothing() {
    let sb = Sandbox::new();
    let store = measured_store(&sb, &sb.path("live"));
    let owner = rusqlite::Connection::open(&store).unwrap();
    enter_config(&owner);
    // Its files as a writer killed with the store open leaves them: the
    // entered config only in the -wal, and a -shm no process holds.
    let dir = sb.path("dead");
    std::fs::create_dir(&dir).unwrap();
    for suffix in ["", "-wal", "-shm"] {
        std::fs::copy(
            format!("{}{suffix}", store.display()),
            dir.join(format!("s.db{suffix}")),
        )
        .unwrap();
    }
    drop(owner);
    let dead = dir.join("s.db");
    let before = snapshot(&dir);

    assert_eq!(entered_configs(&dead), [(1, "a".to_string())]);
    assert_eq!(snapshot(&dir), before, "not a byte in or next to the store");
}
