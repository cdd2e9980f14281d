//! Files beside a store are obeyed only when they are ours (issue 28, item
//! 2): a journal, run log, store, deferred file or anchor that another user
//! planted, or that is a link to a root-owned file, is refused in one line
//! with exit 2, and nothing of root's is changed, killed or made readable.
//! Root only (the attacker's files are given to uid 65534 with lchown);
//! each test prints `SKIP: reason` and passes elsewhere.

use crate::common::*;
use sysdelta::store::Store;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

/// The attacker: `nobody`.
const NOBODY: u32 = 65534;

fn root_or_skip(test: &str) -> bool {
    if is_root() {
        return true;
    }
    crate::common::skip(format!("{test}: needs root"));
    false
}

/// A fresh sandbox: a root-owned 0700 temporary directory holding the
/// store's directory `d` (mode `mode`), and the run, state and scratch
/// directories sysdelta is pointed at. Everything goes with the TempDir.
struct Box {
    tmp: tempfile::TempDir,
}

impl Box {
    fn new(mode: u32) -> Box {
        let tmp = tempfile::tempdir().unwrap();
        for d in ["d", "run", "state", "scratch"] {
            std::fs::create_dir(tmp.path().join(d)).unwrap();
        }
        let b = Box { tmp };
        b.chmod(&b.dir(), mode);
        b
    }
    fn dir(&self) -> PathBuf {
        self.tmp.path().join("d")
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir().join(name)
    }
    fn store(&self) -> PathBuf {
        self.path("sysdelta.db")
    }
    fn chmod(&self, p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    /// sysdelta on `store`, with the sandbox's directories and none of the
    /// invoking environment's trust settings.
    fn cmd(&self, store: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(bin());
        c.arg("--store")
            .arg(store)
            .args(args)
            .env("SYSDELTA_RUN_DIR", self.tmp.path().join("run"))
            .env("SYSDELTA_STATE_DIR", self.tmp.path().join("state"))
            .env("TMPDIR", self.tmp.path().join("scratch"))
            .env_remove("SUDO_UID")
            .env_remove("SYSDELTA_SHARED_DIRS")
            .current_dir(self.tmp.path());
        c
    }
    fn run(&self, args: &[&str]) -> Output {
        self.cmd(&self.store(), args).output().unwrap()
    }
    /// A two-config plan of `true`; config a's teardown touches `marker`
    /// only once `flag` exists (so the first run, which leaves a, does not).
    fn plan(&self, flag: &Path, marker: &Path) -> PathBuf {
        let p = self.tmp.path().join("plan.toml");
        std::fs::write(
            &p,
            format!(
                "runs = 2\nseed = 1\n[[config]]\nname = \"a\"\nsetup = 'true'\nteardown = 'if [ -e {f} ]; then touch {m}; fi'\n[[config]]\nname = \"b\"\n[[workload]]\nname = \"w\"\ncommand = \"true\"\n",
                f = flag.display(),
                m = marker.display()
            ),
        )
        .unwrap();
        p
    }
    fn simple_plan(&self) -> PathBuf {
        let none = self.tmp.path().join("never");
        self.plan(&none, &none)
    }
    /// A store made by a root run of the plan.
    fn made_store(&self) {
        let plan = self.simple_plan();
        let out = self.run(&["run", plan.to_str().unwrap(), "--quiet", "--no-report"]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    /// No file in the store's directory is a set-aside copy.
    fn no_copies(&self) {
        for e in std::fs::read_dir(self.dir()).unwrap().flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            assert!(!n.contains("unfolded"), "a copy was made: {n}");
        }
    }
}

fn give_to_nobody(p: &Path) {
    std::os::unix::fs::lchown(p, Some(NOBODY), Some(NOBODY)).unwrap();
}

/// Exit 2 with one line on stderr, which says `what`.
fn refused_in_one_line(out: &Output, what: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains(what), "{what}: {err}");
}

/// A root-owned victim: a directory with a file in it, a file, and a
/// process; each checked untouched at the end.
struct Victims {
    dir: PathBuf,
    file: PathBuf,
    sleep: Child,
    start_time: u64,
}

impl Victims {
    fn new(b: &Box) -> Victims {
        let dir = b.tmp.path().join("root-dir");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("keep"), "keep").unwrap();
        let file = b.tmp.path().join("root-file");
        std::fs::write(&file, "root's").unwrap();
        b.chmod(&file, 0o600);
        // Its own process group's leader, as sysdelta's own children are.
        let sleep = {
            use std::os::unix::process::CommandExt;
            Command::new("sleep")
                .arg("600")
                .process_group(0)
                .spawn()
                .unwrap()
        };
        let pid = sleep.id() as i32;
        let start_time = sysdelta::config::journal::process_start_time(pid).unwrap();
        Victims {
            dir,
            file,
            sleep,
            start_time,
        }
    }
    /// A journal naming each victim, as a planted one would.
    fn journal(&self) -> String {
        let entries = [
            serde_json::json!({"action": "remove_path", "path": self.dir, "recursive": true}),
            serde_json::json!({"action": "write_file", "path": self.file, "contents": "attacker's"}),
            serde_json::json!({"action": "kill_process", "pid": self.sleep.id(), "start_time": self.start_time, "group": true}),
        ];
        entries
            .iter()
            .enumerate()
            .map(|(id, undo)| {
                serde_json::json!({"op": "add", "entry": {"id": id, "owner": "sysctl", "boot_id": "", "undo": undo}})
                    .to_string()
                    + "\n"
            })
            .collect()
    }
    fn untouched(&mut self) {
        assert_eq!(
            std::fs::read_to_string(self.dir.join("keep")).unwrap(),
            "keep"
        );
        assert_eq!(std::fs::read_to_string(&self.file).unwrap(), "root's");
        assert!(
            self.sleep.try_wait().unwrap().is_none(),
            "the root process was killed"
        );
    }
}

impl Drop for Victims {
    fn drop(&mut self) {
        let _ = self.sleep.kill();
        let _ = self.sleep.wait();
    }
}

/// A planted journal, however planted, is refused by `run` and `restore`.
fn planted_journal_is_refused(dir_mode: u32, nobody_owns_it: bool, what: &str) {
    let b = Box::new(dir_mode);
    let mut v = Victims::new(&b);
    let j = b.path("sysdelta.db.journal");
    std::fs::write(&j, v.journal()).unwrap();
    b.chmod(&j, 0o600);
    if nobody_owns_it {
        give_to_nobody(&j);
    }
    let plan = b.simple_plan();
    refused_in_one_line(&b.run(&["run", plan.to_str().unwrap(), "--quiet"]), what);
    refused_in_one_line(&b.run(&["restore"]), what);
    v.untouched();
}

#[test]
fn a_journal_planted_by_another_user_is_refused_and_nothing_is_undone() {
    if !root_or_skip("a_journal_planted_by_another_user_is_refused_and_nothing_is_undone") {
        return;
    }
    planted_journal_is_refused(0o755, true, "is owned by uid 65534");
}

#[test]
fn a_journal_in_a_directory_others_can_write_is_refused_and_nothing_is_undone() {
    if !root_or_skip("a_journal_in_a_directory_others_can_write_is_refused_and_nothing_is_undone") {
        return;
    }
    planted_journal_is_refused(0o777, false, "can be written by others");
}

#[test]
fn a_root_journal_naming_changes_sysdelta_never_makes_is_refused_whole() {
    if !root_or_skip("a_root_journal_naming_changes_sysdelta_never_makes_is_refused_whole") {
        return;
    }
    // A journal of root's own, in root's 0700 directory: its actions
    // (remove a directory, write a file outside /proc/sys, kill a process
    // sysdelta did not start) are still refused, and none is done.
    planted_journal_is_refused(0o700, false, "is no change sysdelta makes");
}

#[test]
fn a_run_log_linked_to_a_root_only_file_is_not_copied_and_the_file_is_unchanged() {
    if !root_or_skip("a_run_log_linked_to_a_root_only_file_is_not_copied_and_the_file_is_unchanged")
    {
        return;
    }
    let b = Box::new(0o755);
    b.made_store();
    let secret = b.tmp.path().join("shadow");
    std::fs::write(&secret, "root:secret-hash:19000::::::\n").unwrap();
    b.chmod(&secret, 0o600);
    std::os::unix::fs::symlink(&secret, b.path("sysdelta.db.runlog")).unwrap();
    // A reader folds a dead run's log: not this one.
    let list = b.run(&["list"]);
    assert!(list.status.success(), "{}", stderr(&list));
    let plan = b.simple_plan();
    refused_in_one_line(
        &b.run(&["run", plan.to_str().unwrap(), "--quiet"]),
        "is a symbolic link",
    );
    b.no_copies();
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        "root:secret-hash:19000::::::\n"
    );
    assert_eq!(std::fs::metadata(&secret).unwrap().mode() & 0o7777, 0o600);
}

#[test]
fn a_store_or_journal_linked_to_a_root_file_gets_nothing_written_into_it() {
    if !root_or_skip("a_store_or_journal_linked_to_a_root_file_gets_nothing_written_into_it") {
        return;
    }
    let plan_box = Box::new(0o755);
    let plan = plan_box.simple_plan();
    // The store itself a link.
    let b = Box::new(0o755);
    let victim = b.tmp.path().join("victim");
    std::fs::write(&victim, "root's").unwrap();
    std::os::unix::fs::symlink(&victim, b.store()).unwrap();
    refused_in_one_line(
        &b.run(&["run", plan.to_str().unwrap(), "--quiet"]),
        "is a symbolic link",
    );
    refused_in_one_line(&b.run(&["restore"]), "is a symbolic link");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's");
    // The journal a link, beside a store of root's.
    let b = Box::new(0o755);
    b.made_store();
    let victim = b.tmp.path().join("victim");
    std::fs::write(&victim, "root's").unwrap();
    std::os::unix::fs::symlink(&victim, b.path("sysdelta.db.journal")).unwrap();
    refused_in_one_line(
        &b.run(&["run", plan.to_str().unwrap(), "--quiet"]),
        "is a symbolic link",
    );
    refused_in_one_line(&b.run(&["restore"]), "is a symbolic link");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's");
}

#[test]
fn a_foreign_store_stopped_inside_a_config_gets_no_resume_and_its_teardown_never_runs() {
    if !root_or_skip(
        "a_foreign_store_stopped_inside_a_config_gets_no_resume_and_its_teardown_never_runs",
    ) {
        return;
    }
    let b = Box::new(0o755);
    let flag = b.tmp.path().join("armed");
    let marker = b.tmp.path().join("teardown-ran-as-root");
    let plan = b.plan(&flag, &marker);
    let out = b.run(&["run", plan.to_str().unwrap(), "--quiet", "--no-report"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // What a dead run inside config a leaves, then the teardown armed.
    {
        let c = rusqlite::Connection::open(b.store()).unwrap();
        c.execute(
            "UPDATE experiments SET entered_config = 'a', status = 'running'",
            [],
        )
        .unwrap();
    }
    std::fs::write(&flag, "").unwrap();
    for side in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{side}", b.store().display()));
    }
    // Root's own store: the stop is reported, with the way to finish it.
    let own = b.run(&["run", plan.to_str().unwrap(), "--quiet"]);
    assert!(stderr(&own).contains("--resume"), "{}", stderr(&own));
    // Another user's: refused before anything in it is read or run.
    give_to_nobody(&b.store());
    let run = b.run(&["run", plan.to_str().unwrap(), "--quiet"]);
    refused_in_one_line(&run, "is owned by uid 65534");
    assert!(!stderr(&run).contains("--resume"), "{}", stderr(&run));
    refused_in_one_line(
        &b.run(&["run", "--resume", "1", "--quiet"]),
        "is owned by uid 65534",
    );
    let restore = b.run(&["restore"]);
    refused_in_one_line(&restore, "is owned by uid 65534");
    assert!(!marker.exists(), "the foreign store's teardown ran as root");
}

#[test]
fn a_planted_deferred_file_and_a_planted_anchor_are_refused() {
    if !root_or_skip("a_planted_deferred_file_and_a_planted_anchor_are_refused") {
        return;
    }
    let b = Box::new(0o755);
    b.made_store();
    let deferred = b.path("sysdelta.db.deferred");
    std::fs::write(
        &deferred,
        "{\"Status\":{\"exp\":1,\"status\":\"running\"}}\n",
    )
    .unwrap();
    give_to_nobody(&deferred);
    let plan = b.simple_plan();
    refused_in_one_line(
        &b.run(&["run", plan.to_str().unwrap(), "--quiet"]),
        "sysdelta.db.deferred: refused",
    );
    // An anchor in the state directory, given to nobody: named by path or
    // by its URL (refused before any server is asked).
    let url = "postgresql://mallory@127.0.0.1:1/team";
    let state = b.tmp.path().join("state");
    let anchor = sysdelta::store::pg::Url::parse(url)
        .unwrap()
        .anchor_in(&state);
    std::fs::write(&anchor, sysdelta::store::pg::anchor_text(url)).unwrap();
    give_to_nobody(&anchor);
    let by_path = b.cmd(&anchor, &["list"]).output().unwrap();
    refused_in_one_line(&by_path, "is owned by uid 65534");
    let by_url = b.cmd(Path::new(url), &["list"]).output().unwrap();
    refused_in_one_line(&by_url, "is owned by uid 65534");
    let anchor_deferred = PathBuf::from(format!("{}.deferred", anchor.display()));
    std::fs::write(&anchor_deferred, "").unwrap();
    give_to_nobody(&anchor_deferred);
    std::os::unix::fs::lchown(&anchor, Some(0), Some(0)).unwrap();
    refused_in_one_line(
        &b.cmd(&anchor, &["list"]).output().unwrap(),
        ".deferred: refused",
    );
}

#[test]
fn roots_own_store_in_a_sticky_directory_works_and_a_file_planted_there_is_refused() {
    if !root_or_skip(
        "roots_own_store_in_a_sticky_directory_works_and_a_file_planted_there_is_refused",
    ) {
        return;
    }
    let b = Box::new(0o1777);
    b.made_store();
    let list = b.run(&["list"]);
    assert!(list.status.success(), "{}", stderr(&list));
    let planted = b.path("sysdelta.db.runlog");
    std::fs::write(&planted, "").unwrap();
    give_to_nobody(&planted);
    let plan = b.simple_plan();
    refused_in_one_line(
        &b.run(&["run", plan.to_str().unwrap(), "--quiet"]),
        "is owned by uid 65534",
    );
}

/// The attacker's `-wal` and `-shm` beside root's store: a copy of the
/// store changed by `sql` in WAL mode, its log not yet checkpointed,
/// copied beside the store and given to nobody (as if nobody had written
/// them into the sticky directory).
fn plant_wal(b: &Box, sql: &str) {
    let copy = b.tmp.path().join("scratch/copy.db");
    std::fs::copy(b.store(), &copy).unwrap();
    let c = rusqlite::Connection::open(&copy).unwrap();
    c.execute_batch("PRAGMA wal_autocheckpoint = 0;").unwrap();
    c.execute_batch(sql).unwrap();
    for suffix in ["-wal", "-shm"] {
        let from = Store::beside(&copy, suffix);
        let to = Store::beside(&b.store(), suffix);
        std::fs::copy(&from, &to).unwrap();
        give_to_nobody(&to);
    }
}

#[test]
fn a_wal_planted_beside_roots_store_is_never_read_or_made_roots() {
    if !root_or_skip("a_wal_planted_beside_roots_store_is_never_read_or_made_roots") {
        return;
    }
    // Root's own store in a sticky directory, whose experiment another
    // user's -wal would make interrupted, relabelled, and its workload a
    // command of theirs. A reader once let SQLite open such a -wal: it
    // showed its rows as root's, and SQLite (as root) gave the file to
    // root, after which it passed every check and `run --resume` ran it.
    let b = Box::new(0o1777);
    b.made_store();
    let store_bytes = std::fs::read(b.store()).unwrap();
    let marker = b.tmp.path().join("ran");
    plant_wal(
        &b,
        &format!(
            "UPDATE experiments SET label = 'planted', status = 'interrupted', finished_at = NULL, \
             plan_text = replace(plan_text, 'command = \"true\"', 'command = \"touch {}\"'); \
             DELETE FROM samples WHERE run_id IN (SELECT id FROM runs WHERE block >= 1); \
             DELETE FROM runs WHERE block >= 1;",
            marker.display()
        ),
    );
    let wal = Store::beside(&b.store(), "-wal");
    for args in [&["list"][..], &["report", "--last"], &["list"]] {
        let out = b.run(args);
        let err = stderr(&out);
        assert!(out.status.success(), "{args:?}: {err}");
        assert!(
            !stdout(&out).contains("planted"),
            "{args:?} read the planted -wal"
        );
        assert!(
            !stdout(&out).contains("interrupted"),
            "{args:?} read the planted -wal"
        );
        assert_eq!(
            err.trim().lines().count(),
            1,
            "{args:?}: one warning: {err}"
        );
        assert!(err.contains("-wal") && err.contains("65534"), "{err}");
        assert_eq!(
            std::fs::symlink_metadata(&wal).unwrap().uid(),
            NOBODY,
            "the -wal was given to root"
        );
    }
    let resume = b.run(&["run", "--resume", "1", "--quiet", "--no-report"]);
    assert_eq!(resume.status.code(), Some(2), "{}", stderr(&resume));
    assert!(!marker.exists(), "the planted command ran");
    assert_eq!(
        std::fs::read(b.store()).unwrap(),
        store_bytes,
        "the store changed"
    );
}

#[test]
fn roots_store_holds_the_names_sqlite_opens_and_a_planted_journal_is_never_opened() {
    if !root_or_skip(
        "roots_store_holds_the_names_sqlite_opens_and_a_planted_journal_is_never_opened",
    ) {
        return;
    }
    // SQLite removes and makes again the -wal, -shm (and looks for a
    // -journal) without O_EXCL, and as root gives what it opens to the
    // store's owner: a -journal planted while a run went on became root's
    // and was played back into the store. Root's store keeps all three
    // names, its own, so nobody else can put a file there.
    let b = Box::new(0o1777);
    b.made_store();
    for suffix in ["-wal", "-shm", "-journal"] {
        let side = Store::beside(&b.store(), suffix);
        let m = std::fs::symlink_metadata(&side).unwrap_or_else(|e| panic!("{suffix}: {e}"));
        assert!(
            m.file_type().is_file() && m.uid() == 0,
            "{suffix}: root's file"
        );
    }
    // A store an older sysdelta left without its -journal, and another
    // user's there: a reader names it, reads the file alone, and never
    // opens it (it stays theirs); a writer refuses it.
    let journal = Store::beside(&b.store(), "-journal");
    std::fs::remove_file(&journal).unwrap();
    std::fs::write(&journal, "not a journal of root's").unwrap();
    give_to_nobody(&journal);
    let list = b.run(&["list"]);
    let err = stderr(&list);
    assert!(list.status.success(), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one warning: {err}");
    assert!(err.contains("-journal") && err.contains("65534"), "{err}");
    assert_eq!(std::fs::symlink_metadata(&journal).unwrap().uid(), NOBODY);
    let plan = b.simple_plan();
    refused_in_one_line(
        &b.run(&["run", plan.to_str().unwrap(), "--quiet"]),
        "is owned by uid 65534",
    );
    assert_eq!(std::fs::symlink_metadata(&journal).unwrap().uid(), NOBODY);
}

#[test]
fn a_root_file_linked_in_under_a_stores_name_is_never_written() {
    if !root_or_skip("a_root_file_linked_in_under_a_stores_name_is_never_written") {
        return;
    }
    // Where fs.protected_hardlinks is 0 any user may give a root-only file
    // a second name in /tmp: under a store's -wal it is root's file, and a
    // run once emptied it. (Made here by root, who may always.)
    let b = Box::new(0o1777);
    b.made_store();
    let plan = b.simple_plan();
    for suffix in ["-wal", "-shm", "-journal"] {
        let victim = b.tmp.path().join(format!("root-only{suffix}"));
        std::fs::write(&victim, "root's\n").unwrap();
        b.chmod(&victim, 0o600);
        let side = Store::beside(&b.store(), suffix);
        std::fs::remove_file(&side).unwrap();
        std::fs::hard_link(&victim, &side).unwrap();
        refused_in_one_line(
            &b.run(&["run", plan.to_str().unwrap(), "--quiet"]),
            "hard links",
        );
        let list = b.run(&["list"]);
        assert!(list.status.success(), "{}", stderr(&list));
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "root's\n",
            "{suffix}"
        );
        std::fs::remove_file(&side).unwrap();
    }
}

#[test]
fn an_output_file_planted_as_a_link_or_by_another_user_is_refused_and_left_as_it_was() {
    if !root_or_skip(
        "an_output_file_planted_as_a_link_or_by_another_user_is_refused_and_left_as_it_was",
    ) {
        return;
    }
    // --output names a file in a sticky directory where another user put
    // a link to a root-only file, or a file of their own: root's run once
    // emptied the root-only file and wrote its output into it.
    let b = Box::new(0o1777);
    let victim = b.tmp.path().join("root-only");
    std::fs::write(&victim, "root's\n").unwrap();
    b.chmod(&victim, 0o600);
    let link = b.path("out");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    give_to_nobody(&link);
    let theirs = b.path("theirs");
    std::fs::write(&theirs, "theirs\n").unwrap();
    give_to_nobody(&theirs);
    // (Some kernels refuse the link themselves: "Permission denied".)
    let ab_into = |out: &Path| {
        b.run(&[
            "ab",
            "echo A",
            "echo B",
            "--runs",
            "2",
            "--output",
            out.to_str().unwrap(),
        ])
    };
    for (out, why) in [(&link, "--output"), (&theirs, "owned by uid 65534")] {
        refused_in_one_line(&ab_into(out), why);
    }
    // Root's own link, in a directory another user owns: they can swap
    // it for theirs between root's look at it and the open.
    let their_dir = b.path("their-dir");
    std::fs::create_dir(&their_dir).unwrap();
    let roots_link = their_dir.join("out");
    std::os::unix::fs::symlink(&victim, &roots_link).unwrap();
    give_to_nobody(&their_dir);
    refused_in_one_line(&ab_into(&roots_link), "not followed");
    // A hard link to a root-only file, made there by anyone (with
    // fs.protected_hardlinks off), is root's file under another name.
    let hard = b.path("hard");
    std::fs::hard_link(&victim, &hard).unwrap();
    refused_in_one_line(&ab_into(&hard), "hard links");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's\n");
    assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "theirs\n");
    // Root's own file there takes every run's output.
    let own = b.path("own");
    let out = b.run(&[
        "ab",
        "echo A",
        "echo B",
        "--runs",
        "2",
        "--output",
        own.to_str().unwrap(),
        "-q",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut lines: Vec<String> = std::fs::read_to_string(&own)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    lines.sort();
    assert_eq!(lines, ["A", "A", "B", "B"]);
}

#[test]
fn a_fifo_another_user_planted_is_refused_by_import_not_waited_on() {
    if !root_or_skip("a_fifo_another_user_planted_is_refused_by_import_not_waited_on") {
        return;
    }
    let b = Box::new(0o1777);
    let fifo = b.path("results.json");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    give_to_nobody(&fifo);
    let mut child = b
        .cmd(&b.store(), &["import", "hyperfine", fifo.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A bound on the wait, not a figure: an import that waits on the
    // FIFO never ends, and is killed here.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    refused_in_one_line(&out, "a FIFO uid 65534 owns");
    assert!(!b.store().exists(), "nothing stored");
}

#[test]
fn a_shared_team_directory_works_only_once_named_in_sysdelta_shared_dirs() {
    if !root_or_skip("a_shared_team_directory_works_only_once_named_in_sysdelta_shared_dirs") {
        return;
    }
    let b = Box::new(0o2775);
    // A team's group (not root's own private group, whose write is root's).
    std::os::unix::fs::lchown(b.dir(), None, Some(NOBODY)).unwrap();
    b.chmod(&b.dir(), 0o2775);
    let plan = b.simple_plan();
    let args = ["run", plan.to_str().unwrap(), "--quiet", "--no-report"];
    refused_in_one_line(&b.run(&args), "SYSDELTA_SHARED_DIRS");
    assert!(!b.store().exists());
    let out = b
        .cmd(&b.store(), &args)
        .env("SYSDELTA_SHARED_DIRS", b.dir())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // A teammate's group-writable file there is accepted too; a file any
    // user can write never is.
    let report = b
        .cmd(&b.store(), &["list"])
        .env("SYSDELTA_SHARED_DIRS", b.dir())
        .output()
        .unwrap();
    assert!(report.status.success(), "{}", stderr(&report));
    // The store's data may be a teammate's there; what sysdelta obeys
    // (journal, run log, deferred writes, step, setup-env, anchors) never.
    let planted = b.path("sysdelta.db.journal");
    std::fs::write(&planted, "").unwrap();
    b.chmod(&planted, 0o600);
    std::os::unix::fs::lchown(&planted, Some(NOBODY), Some(NOBODY)).unwrap();
    let out = b
        .cmd(&b.store(), &args)
        .env("SYSDELTA_SHARED_DIRS", b.dir())
        .output()
        .unwrap();
    refused_in_one_line(&out, "is owned by uid 65534");
    std::os::unix::fs::lchown(&planted, Some(0), Some(0)).unwrap();
    b.chmod(&planted, 0o666);
    let out = b
        .cmd(&b.store(), &args)
        .env("SYSDELTA_SHARED_DIRS", b.dir())
        .output()
        .unwrap();
    refused_in_one_line(&out, "can be written by others");
}

#[test]
fn what_sysdelta_makes_beside_a_store_is_private() {
    if !root_or_skip("what_sysdelta_makes_beside_a_store_is_private") {
        return;
    }
    // A garbage run log is dropped with a warning, and a journal sysdelta
    // makes is 0600 (checked through the library: a run removes its own).
    let b = Box::new(0o755);
    b.made_store();
    std::fs::write(b.path("sysdelta.db.runlog"), "not a run record").unwrap();
    b.chmod(&b.path("sysdelta.db.runlog"), 0o600);
    let list = b.run(&["list"]);
    assert!(list.status.success(), "{}", stderr(&list));
    assert!(stderr(&list).contains("warning"), "{}", stderr(&list));
    assert!(!b.path("sysdelta.db.runlog").exists());
    let j = b.path("other.journal");
    let mut journal = sysdelta::config::journal::Journal::open(&j).unwrap();
    let id = journal
        .record(sysdelta::config::journal::UndoAction::RemovePath {
            path: b.path("sysdelta-nothing"),
            recursive: false,
        })
        .unwrap();
    assert_eq!(std::fs::metadata(&j).unwrap().mode() & 0o777, 0o600);
    journal.done(id).unwrap();
}

#[test]
fn a_register_entry_naming_a_foreign_store_stops_no_run_and_is_not_obeyed() {
    if !root_or_skip("a_register_entry_naming_a_foreign_store_stops_no_run_and_is_not_obeyed") {
        return;
    }
    // Another user's store, stopped inside a config with a teardown, that
    // a planted entry in the machine's register of stores points at.
    let theirs = Box::new(0o755);
    let flag = theirs.tmp.path().join("armed");
    let marker = theirs.tmp.path().join("teardown-ran-as-root");
    let plan = theirs.plan(&flag, &marker);
    let out = theirs.run(&["run", plan.to_str().unwrap(), "--quiet", "--no-report"]);
    assert!(out.status.success(), "{}", stderr(&out));
    rusqlite::Connection::open(theirs.store())
        .unwrap()
        .execute(
            "UPDATE experiments SET entered_config = 'a', status = 'running'",
            [],
        )
        .unwrap();
    std::fs::write(&flag, "").unwrap();
    give_to_nobody(&theirs.store());
    let mine = Box::new(0o700);
    let register = mine.tmp.path().join("run/stores");
    std::fs::create_dir_all(&register).unwrap();
    std::fs::write(
        register.join("0123456789abcdef"),
        theirs.store().as_os_str().as_encoded_bytes(),
    )
    .unwrap();
    let my_plan = mine.simple_plan();
    let run = mine.run(&["run", my_plan.to_str().unwrap(), "--quiet", "--no-report"]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(!stderr(&run).contains("--resume"), "{}", stderr(&run));
    assert!(!marker.exists(), "the foreign store's teardown ran as root");
}
