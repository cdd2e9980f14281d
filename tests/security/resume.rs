//! The machine lock and register are root's alone, and a resume executes
//! a stored plan only from a store the user owns, or when the plan is
//! given again, or after showing it and an explicit confirmation.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{is_root, stderr, Sandbox};

fn skip(why: &str) {
    crate::common::skip(why);
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A command as uid/gid 65534 (nobody), no supplementary groups.
fn as_nobody(args: &[&str]) -> Command {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .args(args);
    c
}

/// A process group this test started, killed (by its id) when dropped.
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        let pgid = nix::unistd::Pid::from_raw(-(self.0.id() as i32));
        let _ = nix::sys::signal::kill(pgid, nix::sys::signal::SIGKILL);
        let _ = self.0.wait();
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

/// Whether someone holds an flock on `path` (root's non-blocking try).
fn held(path: &Path) -> bool {
    !Command::new("flock")
        .args(["-n", "-x"])
        .arg(path)
        .arg("true")
        .status()
        .unwrap()
        .success()
}

/// A plan whose config uses a built-in kind (so its run takes the machine
/// lock) and changes nothing: vm.swappiness set to what it is.
fn lock_taking_plan(sb: &Sandbox) -> Option<PathBuf> {
    let now = std::fs::read_to_string("/proc/sys/vm/swappiness").ok()?;
    let now: u32 = now.trim().parse().ok()?;
    Some(sb.write(
        "lock.toml",
        &format!(
            "name = \"lock\"\nruns = 1\nwarmup = 0\n\n[[config]]\nname = \"a\"\n\
             [config.sysctl]\n\"vm.swappiness\" = {now}\n\n\
             [[workload]]\nname = \"w\"\ncommand = \"true\"\n"
        ),
    ))
}

/// A run directory as an old sysdelta left it: root's, 0755, its lock
/// 0644 (anyone could open it read-only).
fn open_run_dir(sb: &Sandbox) -> PathBuf {
    std::fs::set_permissions(sb.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = sb.run_dir();
    std::fs::create_dir(&run).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
    let lock = run.join("lock");
    std::fs::write(&lock, "").unwrap();
    std::fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o644)).unwrap();
    run
}

fn root_tools(tools: &[&str]) -> bool {
    if !is_root() {
        skip("needs root (to run as another user and take the machine lock)");
        return false;
    }
    if let Some(t) = tools.iter().find(|t| !have(t)) {
        skip(&format!("needs {t}"));
        return false;
    }
    true
}

#[test]
fn a_user_who_cannot_write_the_run_directory_cannot_hold_the_machine_lock() {
    if !root_tools(&["setpriv", "flock"]) {
        return;
    }
    let sb = Sandbox::sqlite();
    let Some(plan) = lock_taking_plan(&sb) else {
        return skip("no /proc/sys/vm/swappiness");
    };
    let run = open_run_dir(&sb);
    let lock = run.join("lock");
    // Another user opens the world-readable lock read-only and holds it.
    // Blocking: our own probe below holds the lock for an instant.
    let mut attacker = as_nobody(&["flock", "-x"]);
    attacker.arg(&lock).args(["sleep", "600"]);
    use std::os::unix::process::CommandExt;
    let said = sb.path("attacker.err");
    attacker
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&said).unwrap());
    let mut attacker = Group(attacker.spawn().unwrap());
    let start = Instant::now();
    while !held(&lock) {
        if let Ok(Some(st)) = attacker.0.try_wait() {
            panic!(
                "the attacker could not hold the old lock ({st}): {}",
                std::fs::read_to_string(&said).unwrap_or_default()
            );
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the attacker never held it"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Root's run is not stopped by it: the lock is replaced.
    let out = sb.run(&["run", plan.to_str().unwrap(), "--quiet", "--no-report"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("holder unknown"), "{}", stderr(&out));
    // And the directory and its files are root's alone now.
    assert_eq!(mode(&run), 0o700);
    assert_eq!(mode(&lock), 0o600);
    assert_eq!(std::fs::metadata(&lock).unwrap().uid(), 0);
    // The other user can no longer open the lock, so cannot hold it.
    let mut again = as_nobody(&["flock", "-n", "-x"]);
    let tried = again.arg(&lock).arg("true").output().unwrap();
    assert!(!tried.status.success(), "another user took the lock again");
    let said = String::from_utf8_lossy(&tried.stderr);
    assert!(said.contains("Permission denied"), "{said}");
}

#[test]
fn a_world_readable_lock_file_is_fixed_up_by_the_next_run() {
    if !root_tools(&[]) {
        return;
    }
    let sb = Sandbox::sqlite();
    let Some(plan) = lock_taking_plan(&sb) else {
        return skip("no /proc/sys/vm/swappiness");
    };
    let run = open_run_dir(&sb);
    // A holder line's temporary file, as a restore killed between its
    // write and its rename left it (pid above the kernel's largest).
    let leftover = run.join("holder.4194305");
    std::fs::write(&leftover, "pid 4194305, restore\n").unwrap();
    let out = sb.run(&["run", plan.to_str().unwrap(), "--quiet", "--no-report"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mode(&run), 0o700);
    assert_eq!(mode(&run.join("lock")), 0o600);
    for e in std::fs::read_dir(&run).unwrap().flatten() {
        let m = e.metadata().unwrap();
        assert_eq!(m.uid(), 0, "{:?}", e.path());
        assert_eq!(m.mode() & 0o077, 0, "{:?} is for root alone", e.path());
    }
    assert!(
        !leftover.exists(),
        "a dead holder's temporary file is swept"
    );
}

#[test]
fn a_run_directory_another_user_owns_is_refused_in_one_line() {
    if !root_tools(&[]) {
        return;
    }
    let sb = Sandbox::sqlite();
    let Some(plan) = lock_taking_plan(&sb) else {
        return skip("no /proc/sys/vm/swappiness");
    };
    let run = open_run_dir(&sb);
    std::os::unix::fs::chown(&run, Some(65534), Some(65534)).unwrap();
    let out = sb.run(&["run", plan.to_str().unwrap(), "--quiet", "--no-report"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("uid 65534"), "{err}");
    assert!(!sb.store_exists(), "nothing stored");
}

// --- Stored plans are code --------------------------------------------

const PLAN: &str = "name = \"p\"\nruns = 2\nwarmup = 0\nseed = 7\n\n\
                    [[config]]\nname = \"a\"\n\n\
                    [[config]]\nname = \"b\"\n\n\
                    [[workload]]\nname = \"w\"\ncommand = \"true\"\n";

/// A sandbox whose store holds experiment 1, interrupted half-way (its
/// second block's runs removed), and the plan file it ran.
fn half_done(sb: &Sandbox) -> PathBuf {
    let plan = sb.write("plan.toml", PLAN);
    let out = sb.run(&["run", plan.to_str().unwrap(), "--quiet", "--no-report"]);
    assert!(out.status.success(), "{}", stderr(&out));
    interrupt(sb);
    plan
}

/// Experiment 1 made interrupted again, its second block to run again.
fn interrupt(sb: &Sandbox) {
    sql(
        sb,
        "DELETE FROM samples WHERE run_id IN (SELECT id FROM runs WHERE block >= 1); \
         DELETE FROM runs WHERE block >= 1; \
         UPDATE experiments SET status = 'interrupted', finished_at = NULL",
    );
}

/// Another writer of the store changes the plan's text: the workload now
/// touches `marker`.
fn tamper(sb: &Sandbox, marker: &Path) {
    sql(
        sb,
        &format!(
            "UPDATE experiments SET plan_text = replace(plan_text, 'command = \"true\"', \
             'command = \"touch {}\"')",
            marker.display()
        ),
    );
}

fn untamper(sb: &Sandbox) {
    sql(
        sb,
        &format!(
            "UPDATE experiments SET plan_text = '{}'",
            PLAN.replace('\'', "''")
        ),
    );
}

fn sql(sb: &Sandbox, sql: &str) {
    match &sb.pg {
        None => {
            let c = rusqlite::Connection::open(sb.store()).unwrap();
            c.execute_batch(sql).unwrap();
        }
        Some(c) => {
            c.psql(sql);
        }
    }
}

fn runs(sb: &Sandbox) -> i64 {
    sb.sql_number("SELECT COUNT(*) FROM runs")
}

/// `run --resume 1`, with the sandbox named a shared team directory
/// (`SYSDELTA_SHARED_DIRS`): a store another member made there passes the
/// checks on files (tests/security/files.rs), so what stops a changed plan
/// is the rule on stored plans, tried here. Outside such a directory the
/// files' checks refuse another user's store before its plan is read.
fn resume(sb: &Sandbox, extra: &[&str]) -> Output {
    let mut args = vec!["run", "--resume", "1", "--quiet", "--no-report"];
    args.extend_from_slice(extra);
    sb.command()
        .env("SYSDELTA_SHARED_DIRS", sb.dir.path())
        .args(&args)
        .output()
        .unwrap()
}

/// Refused as bad input, in one line after what was shown (lines that
/// begin with two spaces or `sysdelta: experiment 1: `), and nothing run.
fn assert_refused(out: &Output, marker: &Path, before: i64, sb: &Sandbox) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let said: Vec<&str> = err
        .lines()
        .filter(|l| !l.starts_with("  ") && !l.starts_with("sysdelta: experiment 1: "))
        .collect();
    assert_eq!(said.len(), 1, "one line: {err}");
    assert!(!marker.exists(), "the stored command ran");
    assert_eq!(runs(sb), before, "nothing was run or stored");
    said[0].to_string()
}

fn give_away(store: &Path, uid: u32) {
    for suffix in ["", "-wal", "-shm"] {
        let mut p = store.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::os::unix::fs::chown(PathBuf::from(p), Some(uid), Some(uid));
    }
}

#[test]
fn a_plan_changed_in_a_store_another_user_owns_is_not_run_on_resume() {
    if !root_tools(&[]) {
        return;
    }
    let sb = Sandbox::sqlite();
    let plan = half_done(&sb);
    let marker = sb.path("marker");
    tamper(&sb, &marker);
    give_away(&sb.store(), 65534);
    let before = runs(&sb);
    let line = assert_refused(&resume(&sb, &[]), &marker, before, &sb);
    assert!(
        line.contains("uid 65534") && line.contains("--trust-stored-plan"),
        "{line}"
    );
    // The plan the user has is not what the store now says: refused.
    let plan = plan.to_str().unwrap();
    let line = assert_refused(&resume(&sb, &["--plan", plan]), &marker, before, &sb);
    assert!(line.contains("differ"), "{line}");
}

#[test]
fn a_plan_given_again_resumes_a_store_another_user_owns() {
    if !root_tools(&[]) {
        return;
    }
    let sb = Sandbox::sqlite();
    let plan = half_done(&sb);
    give_away(&sb.store(), 65534);
    let before = runs(&sb);
    let out = resume(&sb, &["--plan", plan.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(runs(&sb) > before, "the rest of the experiment ran");
}

#[test]
fn the_confirmation_flag_shows_the_stored_commands_before_running_them() {
    if !root_tools(&[]) {
        return;
    }
    let sb = Sandbox::sqlite();
    half_done(&sb);
    let marker = sb.path("marker");
    tamper(&sb, &marker);
    give_away(&sb.store(), 65534);
    let out = resume(&sb, &["--trust-stored-plan"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let shown = format!("touch {}", marker.display());
    assert!(err.contains(&shown), "the command is shown: {err}");
    assert!(marker.exists(), "and, confirmed, run");
}

#[test]
fn a_store_the_user_owns_resumes_as_before() {
    if !root_tools(&[]) {
        return;
    }
    let sb = Sandbox::sqlite();
    half_done(&sb);
    let before = runs(&sb);
    let out = resume(&sb, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("stored plan"), "{}", stderr(&out));
    assert!(runs(&sb) > before);
}

#[test]
fn a_plan_pulled_into_the_users_own_store_is_not_run_on_resume() {
    if !root_tools(&[]) {
        return;
    }
    // Another store's interrupted experiment, its plan changed by whoever
    // could write that store, pulled into the user's own: owning this
    // store does not make the pulled plan theirs.
    let theirs = Sandbox::sqlite();
    let plan = half_done(&theirs);
    let marker = theirs.path("marker");
    tamper(&theirs, &marker);
    let mine = Sandbox::sqlite();
    let store = theirs.store();
    let pulled = mine.run(&["pull", "--from", store.to_str().unwrap()]);
    assert!(pulled.status.success(), "{}", stderr(&pulled));
    let before = runs(&mine);
    let resume = |extra: &[&str]| {
        let mut args = vec!["run", "--resume", "1", "--quiet", "--no-report"];
        args.extend_from_slice(extra);
        mine.run(&args)
    };
    let line = assert_refused(&resume(&[]), &marker, before, &mine);
    assert!(
        line.contains(&format!("copied in from {}", store.display())),
        "{line}"
    );
    let plan_arg = plan.to_str().unwrap();
    let line = assert_refused(&resume(&["--plan", plan_arg]), &marker, before, &mine);
    assert!(line.contains("their texts differ"), "{line}");
    // Shown, then run, once the user says so.
    let out = resume(&["--trust-stored-plan"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(marker.exists(), "the shown plan ran");
}

#[test]
fn a_team_store_row_changed_by_another_member_is_not_run_on_resume() {
    let Some(sb) = Sandbox::postgresql() else {
        return;
    };
    let plan = half_done(&sb);
    let marker = sb.path("marker");
    tamper(&sb, &marker);
    let before = runs(&sb);
    let line = assert_refused(&resume(&sb, &[]), &marker, before, &sb);
    assert!(line.contains("team store"), "{line}");
    let plan_arg = plan.to_str().unwrap();
    let line = assert_refused(&resume(&sb, &["--plan", plan_arg]), &marker, before, &sb);
    assert!(line.contains("differ"), "{line}");
    // Put back as the user ran it: the plan given again is enough.
    untamper(&sb);
    let out = resume(&sb, &["--plan", plan_arg]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(runs(&sb) > before);
    assert!(!marker.exists());
    // Changed again, and run only once confirmed, after being shown.
    interrupt(&sb);
    tamper(&sb, &marker);
    let out = resume(&sb, &["--trust-stored-plan"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("touch {}", marker.display())));
    assert!(marker.exists());
}

#[test]
fn the_stored_environment_of_a_crashed_config_counts_as_stored_commands() {
    if !root_tools(&[]) {
        return;
    }
    let sb = Sandbox::sqlite();
    let plan_text = PLAN.replace(
        "name = \"a\"\n",
        "name = \"a\"\nsetup = \"export X=1\"\nteardown = \"true\"\n",
    );
    let plan = sb.write("plan.toml", &plan_text);
    let out = sb.run(&["run", plan.to_str().unwrap(), "--quiet", "--no-report"]);
    assert!(out.status.success(), "{}", stderr(&out));
    interrupt(&sb);
    // As if killed inside config a, with what its setup "exported".
    sql(
        &sb,
        "UPDATE experiments SET entered_config = 'a', \
         entered_env = '[[\"LD_PRELOAD\",\"/nonexistent/evil.so\"]]'",
    );
    give_away(&sb.store(), 65534);
    let before = runs(&sb);
    let marker = sb.path("marker");
    let out = resume(&sb, &["--plan", plan.to_str().unwrap()]);
    let line = assert_refused(&out, &marker, before, &sb);
    assert!(line.contains("--trust-stored-plan"), "{line}");
    assert!(
        stderr(&out).contains("LD_PRELOAD=/nonexistent/evil.so"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_fleet_row_changed_by_another_member_is_not_run_on_fleet_resume() {
    let Some(sb) = Sandbox::postgresql() else {
        return;
    };
    // The store's tables, made by a first run.
    let plan = half_done(&sb);
    let marker = sb.path("marker");
    let changed = PLAN.replace("true", &format!("touch {}", marker.display()));
    sql(
        &sb,
        &format!(
            "INSERT INTO fleets (uid, name, plan_source, plan_text, overrides, hosts, created_at) \
             VALUES ('f1', 'p', 'plan.toml', '{}', '{{\"run_flags\":[],\"seed\":1}}', \
             '[{{\"name\":\"h1\",\"destination\":\"127.0.0.1\"}}]', 'now')",
            changed.replace('\'', "''")
        ),
    );
    let out = sb.run(&["fleet", "resume", "last"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("touch {}", marker.display())),
        "shown: {err}"
    );
    let said: Vec<&str> = err
        .lines()
        .filter(|l| !l.starts_with("  ") && !l.starts_with("sysdelta: fleet 1: "))
        .collect();
    assert_eq!(said.len(), 1, "one line: {err}");
    assert!(said[0].contains("--trust-stored-plan"), "{err}");
    // The user's own plan is not what the row says: refused, no host tried.
    let out = sb.run(&["fleet", "resume", "last", "--plan", plan.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("differ") && err.trim().lines().count() == 1,
        "{err}"
    );
    assert!(!marker.exists());
}
