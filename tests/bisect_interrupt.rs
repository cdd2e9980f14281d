//! Ctrl-C during `sysdelta bisect`'s build of a commit: the bisection
//! stops as interrupted (exit 130, "interrupted" on stderr), never as
//! "the commit does not build", and `--resume` builds that commit again
//! instead of skipping it; and a bisection pulled into another store is
//! not resumed there (its build command is another store's) unless the
//! user saw it and said so.

mod common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{git, Sandbox};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// The build: commit `$SLOW_COMMIT` waits while the file `slow` is in
/// `$BISECT_TEST_DIR`, saying so in `started`; its shell turns a
/// Ctrl-C into a plain failure (exit 1), as make does ("Error 2") when
/// its compiler is interrupted. Every build touches `built` there and
/// writes run.sh, printing the commit's level with seeded noise of 1%.
const BUILD: &str = r#". ./params
touch "$BISECT_TEST_DIR/built"
if [ "$idx" = "$SLOW_COMMIT" ] && [ -e "$BISECT_TEST_DIR/slow" ]; then
    touch "$BISECT_TEST_DIR/started"
    trap 'exit 1' INT
    sleep 60
    exit 1
fi
cat > run.sh <<EOS
exec awk -v level=$level -v idx=$idx 'BEGIN { f = "counter"; c = 0; if ((getline c < f) <= 0) c = 0; close(f); print c + 1 > f; close(f); srand(idx * 1009 + c); printf "value: %.4f\n", 100 * level * (1 + 0.01 * (rand() - 0.5)) }'
EOS
"#;

const PLAN: &str = r#"[[workload]]
name = "w"
command = "sh run.sh"
shell = "none"
metrics = [{ name = "value", regex = 'value: (?P<value>[0-9.]+)' }]
"#;

/// Commits 0..=3, the level 1.5 from commit 2 on; oldest first.
fn repo(dir: &Path) -> Vec<String> {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["config", "user.email", "t@example.com"]);
    git(dir, &["config", "user.name", "t"]);
    std::fs::write(dir.join("build.sh"), BUILD).unwrap();
    for i in 0..=3 {
        let level = if i >= 2 { "1.5" } else { "1.0" };
        std::fs::write(dir.join("params"), format!("idx={i}\nlevel={level}\n")).unwrap();
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-qm", &format!("commit {i}")]);
    }
    git(dir, &["rev-list", "--reverse", "HEAD"])
        .lines()
        .map(str::to_string)
        .collect()
}

/// The bisection's process group, killed (with its build) however the
/// test ends.
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        // Its leader reaped or not, what is left of the group goes.
        let _ = killpg(Pid::from_raw(self.0.id() as i32), Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

fn wait_for(what: &str, child: &mut Child, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "bisect ended before {what}"
        );
        assert!(start.elapsed() < Duration::from_secs(180), "never: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `sysdelta bisect` over `sb`'s repository (good: commit 0, bad: commit
/// 3), its build of commit `slow` waiting for a Ctrl-C; returned once that
/// build started.
fn bisect_until_slow_build(sb: &Sandbox, slow: &str) -> Group {
    std::fs::write(sb.path("slow"), "").unwrap();
    let _ = std::fs::remove_file(sb.path("started"));
    let mut g = Group(bisect(sb, slow).process_group(0).spawn().unwrap());
    let started = sb.path("started");
    wait_for(&format!("commit {slow}'s build"), &mut g.0, || {
        started.exists()
    });
    g
}

/// The bisect command line (stdout and stderr piped).
fn bisect(sb: &Sandbox, slow: &str) -> Command {
    let plan = sb.write("plan.toml", PLAN);
    let mut c = sb.command();
    c.arg("bisect")
        .arg("--repo")
        .arg(sb.path("repo"))
        .args([
            "--good",
            "HEAD~3",
            "--bad",
            "HEAD",
            "--build",
            "sh build.sh",
        ])
        .args(["--metric", "w/value", "--plan"])
        .arg(&plan)
        .args(["--seed", "7", "--cache"])
        .arg(sb.path("cache"))
        .env("BISECT_TEST_DIR", sb.dir.path())
        .env("SLOW_COMMIT", slow)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// The terminal's Ctrl-C: SIGINT to the whole group, build included; the
/// bisection's output once it ended.
fn ctrl_c(mut g: Group) -> std::process::Output {
    use std::io::Read;
    killpg(Pid::from_raw(g.0.id() as i32), Signal::SIGINT).unwrap();
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    g.0.stdout.take().unwrap().read_to_end(&mut stdout).unwrap();
    g.0.stderr.take().unwrap().read_to_end(&mut stderr).unwrap();
    let status = g.0.wait().unwrap();
    std::process::Output {
        status,
        stdout,
        stderr,
    }
}

#[test]
fn ctrl_c_during_a_build_is_an_interruption_that_resume_finishes() {
    let sb = Sandbox::sqlite();
    let commits = repo(&sb.path("repo"));
    // Commit 1 is the first midpoint.
    let id = interrupted(&ctrl_c(bisect_until_slow_build(&sb, "1")));

    // Resumed, commit 1 is built again (it builds now), not skipped, and
    // the answer is commit 2.
    std::fs::remove_file(sb.path("slow")).unwrap();
    let out = sb
        .command()
        .args(["bisect", "--resume", &id])
        .env("BISECT_TEST_DIR", sb.dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("does not build"), "{err}");
    finds(&out, &commits[2]);
}

#[test]
fn ctrl_c_during_the_good_commits_build_is_an_interruption_too() {
    let sb = Sandbox::sqlite();
    let commits = repo(&sb.path("repo"));
    let out = ctrl_c(bisect_until_slow_build(&sb, "0"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        err.contains("interrupted before its first experiment; start it again"),
        "{err}"
    );
    assert!(!err.contains("does not build"), "{err}");
    // Started again, the good commit builds (no failure was kept).
    std::fs::remove_file(sb.path("slow")).unwrap();
    finds(&bisect(&sb, "0").output().unwrap(), &commits[2]);
}

/// The bisection stopped as interrupted (exit 130), never as a commit
/// that does not build; the id its `--resume` advice names.
fn interrupted(out: &std::process::Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(!err.contains("does not build"), "{err}");
    err.split("--resume ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .expect(&err)
        .to_string()
}

/// The bisection ended well and named `commit` as the first bad one.
fn finds(out: &std::process::Output, commit: &str) {
    let (text, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{err}");
    assert!(
        text.contains(&format!("first bad commit {}", &commit[..12])),
        "{text}\n{err}"
    );
}

#[test]
fn an_interrupted_bisection_pulled_into_another_store_is_not_resumed_unconfirmed() {
    let theirs = Sandbox::sqlite();
    let commits = repo(&theirs.path("repo"));
    let id = interrupted(&ctrl_c(bisect_until_slow_build(&theirs, "1")));
    std::fs::remove_file(theirs.path("slow")).unwrap();
    // Pulled into the user's own store: owning that store does not make
    // the build command, written in another, the user's.
    let mine = Sandbox::sqlite();
    let pulled = mine.run(&["pull", "--from", theirs.store().to_str().unwrap()]);
    assert!(pulled.status.success(), "{}", common::stderr(&pulled));
    let runs = |sb: &Sandbox| sb.sql_number("SELECT COUNT(*) FROM runs");
    let before = runs(&mine);
    let built = theirs.path("built");
    std::fs::remove_file(&built).unwrap();
    let resume = |extra: &[&str]| {
        mine.command()
            .args(["bisect", "--resume", &id])
            .args(extra)
            .env("BISECT_TEST_DIR", theirs.dir.path())
            .output()
            .unwrap()
    };
    let out = resume(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("build: sh build.sh"), "shown: {err}");
    let last = err.trim().lines().last().unwrap_or_default();
    assert!(
        last.contains(&format!("copied in from {}", theirs.store().display()))
            && last.contains("nothing was run"),
        "{err}"
    );
    assert!(!built.exists(), "the stored build command ran");
    assert_eq!(runs(&mine), before, "nothing measured");
    // Once the user says so, it runs to its answer.
    finds(&resume(&["--trust-stored-plan"]), &commits[2]);
    assert!(built.exists() && runs(&mine) > before);
}
