//! What a user trusts of a run on a shared test box (issue 15): one
//! system-changing run per machine, what a dead run left stops the next one
//! on any store, a second signal during a teardown loses nothing, failures
//! are not a success, and bad input or a closed pipe change nothing.

use crate::common;
use common::*;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

/// The root tests write the same machine-wide sysctl: one at a time (each
/// uses its own run directory, so sysdelta's own lock does not order them).
static SYSCTL_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The turn of a root test that writes sysctls, holding the machine lock
/// too (tests/common/machine.rs), or None (with the reason printed) when
/// not root.
fn sysctl_test() -> Option<common::machine::Serial> {
    if !is_root() {
        common::skip("needs root to write sysctls");
        return None;
    }
    common::machine::serial(&SYSCTL_TESTS)
}

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "never reached: {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `sysdelta run PLAN` on `sb`'s store in the background, with the run
/// directory `run_dir` and its scratch directory inside the sandbox.
fn spawn_run(sb: &Sandbox, plan: &Path, run_dir: &Path) -> Child {
    sb.quiet_run(plan, sb.dir.path())
        .env("SYSDELTA_RUN_DIR", run_dir)
        .spawn()
        .unwrap()
}

fn run_in(sb: &Sandbox, run_dir: &Path, args: &[&str]) -> std::process::Output {
    sb.command_in(sb.dir.path())
        .env("SYSDELTA_RUN_DIR", run_dir)
        .args(args)
        .output()
        .unwrap()
}

fn sysctl(path: &str) -> String {
    std::fs::read_to_string(path).unwrap().trim().to_string()
}

/// Puts sysctls back as they were when it was made, also when the test
/// fails half-way (sysdelta's own restore is what the test checks; this is
/// only the machine's safety net).
struct SysctlGuard(Vec<(&'static str, String)>);

impl SysctlGuard {
    fn new(paths: &[&'static str]) -> SysctlGuard {
        SysctlGuard(paths.iter().map(|p| (*p, sysctl(p))).collect())
    }
}

impl Drop for SysctlGuard {
    fn drop(&mut self) {
        for (p, v) in &self.0 {
            let _ = std::fs::write(p, v);
        }
    }
}

fn sysctl_plan(sb: &Sandbox, key: &str, value: &str, command: &str, runs: u32) -> PathBuf {
    sb.write(
        "sysctl.toml",
        &format!(
            "runs = {runs}\norder = \"sequential\"\n\
             [[config]]\nname = \"tuned\"\n[config.sysctl]\n\"{key}\" = \"{value}\"\n\
             [[workload]]\nname = \"w\"\ncommand = \"{command}\"\n"
        ),
    )
}

fn shell_plan(sb: &Sandbox) -> PathBuf {
    sb.write(
        "shell.toml",
        "runs = 2\n[[config]]\nname = \"a\"\n[[workload]]\nname = \"w\"\ncommand = \"true\"\n",
    )
}

/// The sysctl [`start_pressure_run`] sets.
const PRESSURE: &str = "/proc/sys/vm/vfs_cache_pressure";

/// `sb` running, in the background with the run directory `run_dir`, a
/// plan that sets vm.vfs_cache_pressure ([`PRESSURE`]) to `value` and runs
/// `runs` times a workload sleeping `seconds`; returned once the first
/// workload started (the sysctl is set).
fn start_pressure_run(
    sb: &Sandbox,
    run_dir: &Path,
    value: &str,
    seconds: &str,
    runs: u32,
) -> Child {
    let started = sb.path("started");
    let plan = sysctl_plan(
        sb,
        "vm.vfs_cache_pressure",
        value,
        &format!("touch {}; sleep {seconds}", started.display()),
        runs,
    );
    let child = spawn_run(sb, &plan, run_dir);
    wait_until("the run's first workload", || started.exists());
    child
}

/// A plan of shell configs only (nothing system-wide) run in `sb` with the
/// run directory `run_dir`, and `extra` arguments.
fn run_shell_plan(sb: &Sandbox, run_dir: &Path, extra: &[&str]) -> std::process::Output {
    let plan = shell_plan(sb);
    let args = [&["run", plan.to_str().unwrap()][..], extra].concat();
    run_in(sb, run_dir, &args)
}

#[test]
fn a_second_system_changing_run_is_refused_naming_the_holder() {
    let Some(_serial) = sysctl_test() else {
        return;
    };
    let shared = tempfile::tempdir().unwrap();
    let (a, b) = (Sandbox::new(), Sandbox::new());
    let autogroup = "/proc/sys/kernel/sched_autogroup_enabled";
    let _guard = SysctlGuard::new(&[PRESSURE, autogroup]);
    let (p0, g0) = (sysctl(PRESSURE), sysctl(autogroup));
    let mut holder = start_pressure_run(&a, shared.path(), "170", "0.4", 4);
    let pb = sysctl_plan(&b, "kernel.sched_autogroup_enabled", "0", "true", 2);
    let out = run_in(&b, shared.path(), &["run", pb.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("pid {}", holder.id())) && err.contains("sysdelta.db"),
        "{err}"
    );
    assert!(!b.store().exists(), "a refused run stored something");
    // A run whose configs change nothing system-wide runs beside it.
    let out = run_shell_plan(&b, shared.path(), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(holder.wait().unwrap().success());
    assert_eq!((sysctl(PRESSURE), sysctl(autogroup)), (p0, g0));
}

#[test]
fn a_killed_runs_changes_on_another_store_refuse_a_run_until_restore() {
    let Some(_serial) = sysctl_test() else {
        return;
    };
    let shared = tempfile::tempdir().unwrap();
    let (a, b) = (Sandbox::new(), Sandbox::new());
    let _guard = SysctlGuard::new(&[PRESSURE]);
    let p0 = sysctl(PRESSURE);
    let mut child = start_pressure_run(&a, shared.path(), "171", "5", 2);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(sysctl(PRESSURE), "171");
    let out = run_shell_plan(&b, shared.path(), &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(a.store().to_str().unwrap()) && err.contains("sysdelta restore"),
        "{err}"
    );
    assert!(!b.store().exists());
    let out = run_in(&a, shared.path(), &["restore"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(sysctl(PRESSURE), p0);
    let out = run_shell_plan(&b, shared.path(), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A config whose setup makes state (a file) and whose teardown removes it.
fn stateful_plan(sb: &Sandbox, state: &Path) -> PathBuf {
    sb.write(
        "stateful.toml",
        &format!(
            "runs = 3\norder = \"sequential\"\n\
             [[config]]\nname = \"stateful\"\nsetup = 'touch {s}'\nteardown = 'rm -f {s}'\n\
             [[workload]]\nname = \"w\"\ncommand = \"touch {s}.ran; sleep 0.3\"\n",
            s = state.display()
        ),
    )
}

#[test]
fn a_run_killed_inside_a_shell_config_refuses_new_runs_until_resumed_or_forced() {
    let shared = tempfile::tempdir().unwrap();
    let (a, b) = (Sandbox::new(), Sandbox::new());
    let state = a.path("state");
    let plan = stateful_plan(&a, &state);
    let mut child = spawn_run(&a, &plan, shared.path());
    let ran = a.path("state.ran");
    wait_until("a run inside the config", || ran.exists());
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(state.exists());
    // Same store, another plan: refused, naming experiment and config.
    let other = shell_plan(&a);
    let out = run_in(&a, shared.path(), &["run", other.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("experiment 1") && err.contains("'stateful'") && err.contains("--resume 1"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // Another store on this machine: refused too.
    let out = run_shell_plan(&b, shared.path(), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!b.store().exists());
    // --force runs anyway, and says so.
    let out = run_shell_plan(&b, shared.path(), &["--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("--force"), "{}", stderr(&out));
    // Resume tears the config down; then nothing stands in the way.
    let out = run_in(
        &a,
        shared.path(),
        &["run", "--resume", "1", "--trust-stored-plan", "--no-report"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!state.exists());
    let out = run_shell_plan(&b, shared.path(), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Every run ended well: the register keeps no entry.
    let left: Vec<_> = std::fs::read_dir(shared.path().join("stores"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

fn scratch_dirs(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("sysdelta-"))
        .collect()
}

#[test]
fn a_second_sigterm_during_a_teardown_keeps_the_config_entered_until_resume() {
    // The race the issue saw 3 times in 6: try several times.
    for attempt in 0..3 {
        let sb = Sandbox::new();
        let tmp = sb.path("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let mark = |n: &str| sb.path(n);
        let plan = sb.write(
            "plan.toml",
            &format!(
                "runs = 2\n[[config]]\nname = \"slowdown\"\nsetup = 'true'\n\
                 teardown = 'touch {started}; sleep 2; touch {done}'\n\
                 [[workload]]\nname = \"w\"\ncommand = \"touch {ran}; sleep 0.2\"\n",
                started = mark("td-started").display(),
                done = mark("td-done").display(),
                ran = mark("ran").display(),
            ),
        );
        let mut child = sb.quiet_run(&plan, &tmp).spawn().unwrap();
        wait_until("a run", || mark("ran").exists());
        signal(&child, Signal::SIGTERM).unwrap();
        wait_until("the teardown", || mark("td-started").exists());
        std::thread::sleep(Duration::from_millis(300));
        signal(&child, Signal::SIGTERM).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(130), "attempt {attempt}: {status:?}");
        assert!(!mark("td-done").exists(), "the teardown was not cut short");
        let out = sb.command_in(&tmp).arg("restore").output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let said = stdout(&out);
        assert!(
            said.contains("inside config 'slowdown'"),
            "attempt {attempt}: restore forgot the entered config: {said}"
        );
        assert_eq!(
            scratch_dirs(&tmp),
            Vec::<String>::new(),
            "attempt {attempt}"
        );
        let out = sb
            .command_in(&tmp)
            .args([
                "run",
                "--resume",
                "1",
                "--trust-stored-plan",
                "--quiet",
                "--no-report",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(mark("td-done").exists(), "resume did not run the teardown");
        assert_eq!(scratch_dirs(&tmp), Vec::<String>::new());
    }
}

fn stored_runs(sb: &Sandbox) -> usize {
    sb.json_report("last")["runs"].as_array().unwrap().len()
}

#[test]
fn every_run_failing_exits_non_zero_and_stops_early() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "ab", "-q", "--runs", "10", "--config", "a=", "--config", "b=", "--", "false",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("failed 3 runs in a row"), "{err}");
    assert!(err.contains("no successful run of a/false"), "{err}");
    assert!(stored_runs(&sb) < 20, "fail-fast did not stop");
    // --max-failures 0 goes on to the end, and still fails.
    let out = sb.run(&[
        "ab",
        "-q",
        "--runs",
        "4",
        "--max-failures",
        "0",
        "--config",
        "a=",
        "--config",
        "b=",
        "--",
        "false",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(stored_runs(&sb), 8);
}

#[test]
fn ignore_failure_keeps_a_non_zero_exit_as_a_result() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "ab", "-q", "-i", "--runs", "3", "--config", "a=", "--config", "b=", "--", "exit 3",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = sb.json_report("last");
    let runs = r["runs"].as_array().unwrap();
    assert!(runs.iter().all(|r| r["status"] == "ok"), "{runs:?}");
}

#[test]
fn a_config_that_never_enters_fails_the_run() {
    let sb = Sandbox::new();
    let plan = sb.write(
        "plan.toml",
        "runs = 2\n[[config]]\nname = \"good\"\n[[config]]\nname = \"broken\"\nsetup = 'exit 7'\n\
         [[workload]]\nname = \"w\"\ncommand = \"true\"\n",
    );
    let out = sb.run(&["run", plan.to_str().unwrap(), "-q"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no successful run of broken/w"), "{err}");
    assert!(!err.contains("good/w"), "{err}");
}

#[test]
fn a_refused_plan_leaves_nothing_on_disk() {
    let sb = Sandbox::new();
    let plan = sb.write(
        "plan.toml",
        "runs = 2\n[[config]]\nname = \"a\"\n[config.sysctl]\n\"vm.no_such_key_here\" = 1\n\
         [[workload]]\nname = \"w\"\ncommand = \"true\"\n",
    );
    let out = sb.run(&["run", plan.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let mut left: Vec<String> = std::fs::read_dir(sb.dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "run")
        .collect();
    left.sort();
    assert_eq!(left, vec!["plan.toml".to_string()]);
}

/// Run sysdelta with stdout a pipe whose reader is already gone.
fn into_closed_pipe(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    let (r, w) = nix::unistd::pipe().unwrap();
    drop(r);
    sb.command()
        .args(args)
        .stdout(Stdio::from(w))
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn a_closed_pipe_ends_output_quietly_as_coreutils_do() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "ab", "-q", "--runs", "2", "--config", "a=", "--config", "b=", "--", "true",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    for args in [
        &["list"][..],
        &["report", "--format", "json"][..],
        &["env", "--last"][..],
    ] {
        let out = into_closed_pipe(&sb, args);
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGPIPE),
            "{args:?}: {out:?}"
        );
        assert_eq!(stderr(&out), "", "{args:?}");
    }
    // A run whose report meets a closed pipe still cleans up first: its
    // scratch directory and journal entry are gone, the runs are stored.
    let tmp = sb.path("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let (r, w) = nix::unistd::pipe().unwrap();
    drop(r);
    let out = sb
        .command_in(&tmp)
        .args([
            "ab", "-q", "--runs", "2", "--config", "a=", "--config", "b=", "--", "true",
        ])
        .stdout(Stdio::from(w))
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{out:?}");
    assert_eq!(scratch_dirs(&tmp), Vec::<String>::new());
    let out = sb.run(&["restore"]);
    assert!(
        stdout(&out).contains("nothing to restore"),
        "{}",
        stdout(&out)
    );
    assert_eq!(stored_runs(&sb), 4);
}

#[test]
fn a_scratch_directory_that_cannot_be_made_refuses_the_run_before_anything_is_stored() {
    let sb = Sandbox::new();
    let out = sb
        .command_in(&sb.path("no-such-dir"))
        .args([
            "ab", "-q", "--runs", "2", "--config", "a=", "--config", "b=", "--", "true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no-such-dir"), "{}", stderr(&out));
    assert!(!sb.store().exists());
}

#[test]
fn report_files_follow_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let out = sb.run(&[
        "ab", "-q", "--runs", "2", "--config", "a=", "--config", "b=", "--", "true",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let file = sb.path("report.txt");
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "umask 022; exec {} --store {} report --export-markdown {}",
            bin(),
            sb.store().display(),
            file.display()
        ))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644);
}

#[test]
fn error_lines_carry_no_control_character() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "ab", "-q", "--runs", "2", "--config", "a=", "--config", "b=", "--", "true",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let hostile = "v1\x1b]0;owned\x07\nsecond line\r\u{9b}";
    for args in [
        vec!["report", hostile],
        vec!["compare", hostile, "1"],
        vec!["history", "wall", "--label-prefix", hostile],
        vec!["run", hostile],
    ] {
        let out = sb.run(&args);
        let err = out.stderr.clone();
        assert!(!out.status.success(), "{args:?}");
        let text = String::from_utf8_lossy(&err);
        assert_eq!(text.lines().count(), 1, "{args:?}: {text}");
        assert!(
            err.iter().all(|&b| (b >= 0x20 && b != 0x7f) || b == b'\n'),
            "{args:?}: {text:?}"
        );
        assert!(!text.contains('\u{9b}'), "{args:?}: {text:?}");
    }
}

#[test]
fn a_teardown_killed_by_a_signal_leaves_the_experiment_to_resume() {
    // The teardown kills itself the first time (as a timeout or a second
    // Ctrl-C would), and ends normally the second time.
    let sb = Sandbox::new();
    let first = sb.path("first");
    let plan = sb.write(
        "plan.toml",
        &format!(
            "runs = 2\n[[config]]\nname = \"a\"\n\
             teardown = 'if [ ! -e {f} ]; then touch {f}; kill -9 $$; fi'\n\
             [[workload]]\nname = \"w\"\ncommand = \"true\"\n",
            f = first.display()
        ),
    );
    let out = sb.run(&["run", plan.to_str().unwrap(), "-q", "--no-report"]);
    assert!(!out.status.success(), "{}", stderr(&out));
    assert!(first.exists());
    let out = sb.run(&["restore"]);
    assert!(
        stdout(&out).contains("inside config 'a'"),
        "{}",
        stdout(&out)
    );
    let other = sb.write(
        "other.toml",
        "runs = 1\n[[config]]\nname = \"b\"\n[[workload]]\nname = \"w\"\ncommand = \"true\"\n",
    );
    let out = sb.run(&["run", other.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = sb.run(&[
        "run",
        "--resume",
        "1",
        "--trust-stored-plan",
        "-q",
        "--no-report",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = sb.run(&["run", other.to_str().unwrap(), "-q", "--no-report"]);
    assert!(out.status.success(), "{}", stderr(&out));
}
