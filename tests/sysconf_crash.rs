//! After SIGKILL, the journal puts everything back. A child process (this
//! test binary re-run on the `crash_helper` test) changes the system
//! through config kinds or the fsops workload and is killed mid-way; the
//! parent then runs `Journal::restore_all` and checks the system state.
//! Needs root and tracefs (CI); skips with a printed reason otherwise.

mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sysdelta::config::journal::{self, Journal};
use sysdelta::config::kinds::{self, tracefs};
use sysdelta::workload::fsops::FsopsWorkload;
use sysdelta::workload::{RunContext, Workload};

const MODE: &str = "SYSDELTA_CRASH_HELPER";
const DIR: &str = "SYSDELTA_CRASH_DIR";

static SERIAL: Mutex<()> = Mutex::new(());

fn skip_reason() -> Option<&'static str> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root");
    }
    if !tracefs::supported() {
        return Some("kernel has no tracefs");
    }
    None
}

/// The child side: does nothing unless run by a parent test with MODE set.
#[test]
fn crash_helper() {
    let Ok(mode) = std::env::var(MODE) else {
        return;
    };
    let dir = PathBuf::from(std::env::var(DIR).unwrap());
    let j = Journal::open_shared(&dir.join("store.journal")).unwrap();
    match mode.as_str() {
        "tracing" => {
            let fn_tracer = "tracer = \"function\"\nevents = [\"sched\"]\ntracing_on = false";
            let plain = "events = [\"sched\"]\nbuffer_size_kb = 1024\ntracing_on = false";
            let v: toml::Value = toml::from_str(fn_tracer).unwrap();
            let mut f = kinds::build("ftrace", &v, j.clone()).unwrap();
            if let Err(e) = f.enter() {
                eprintln!("helper: function tracer refused ({e:#}); using events only");
                f.leave().unwrap();
                let v: toml::Value = toml::from_str(plain).unwrap();
                f = kinds::build("ftrace", &v, j.clone()).unwrap();
                f.enter().unwrap();
            }
            let v: toml::Value = toml::from_str("\"vm.swappiness\" = 13").unwrap();
            let mut s = kinds::build("sysctl", &v, j.clone()).unwrap();
            s.enter().unwrap();
            std::fs::write(dir.join("ready"), "").unwrap();
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        "fsops" => {
            let v: toml::Value = toml::from_str(&format!(
                "volumes = 10\nsize_mb = 32\nwrite_files = 4\nfile_size_kb = 256\ndir = \"{}\"",
                dir.display()
            ))
            .unwrap();
            let mut w = FsopsWorkload::from_params(&v).unwrap().with_journal(j);
            let scratch = dir.join("scratch");
            std::fs::create_dir_all(&scratch).unwrap();
            w.prepare(&scratch).unwrap();
            std::fs::write(dir.join("ready"), "").unwrap();
            let cancel = AtomicBool::new(false);
            let ctx = RunContext {
                env: &[],
                cwd: None,
                timeout: Duration::from_secs(60),
                cancel: &cancel,
                cpus: None,
                cgroup_procs: None,
                scratch: &scratch,
            };
            loop {
                w.run(&ctx);
            }
        }
        other => panic!("unknown helper mode {other}"),
    }
}

/// The helper child; on drop (also when the test panics) it is killed and
/// whatever its journal still holds is restored.
struct Helper {
    child: Child,
    journal: PathBuf,
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Ok(mut j) = Journal::open(&self.journal) {
            if let Err(e) = j.restore_all() {
                eprintln!("cleanup restore: {e:#}");
            }
        }
    }
}

fn spawn_helper(mode: &str, dir: &Path) -> Helper {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "crash_helper", "--nocapture", "--test-threads=1"])
        .env(MODE, mode)
        .env(DIR, dir);
    // SAFETY: prctl is async-signal-safe. The helper dies with this test.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    Helper {
        child: cmd.spawn().unwrap(),
        journal: dir.join("store.journal"),
    }
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        if let Some(st) = child.try_wait().unwrap() {
            panic!("helper exited ({st}) before {what}");
        }
        assert!(Instant::now() < deadline, "helper never reached: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn kill9(child: &mut Child) {
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
}

/// tracefs values the helper changes, read through a private mount when
/// tracefs is not mounted (mounting over itself is EBUSY).
fn tracing_state() -> String {
    let mounted = tracefs::mounted();
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg(
        "cd /sys/kernel/tracing && cat current_tracer set_event tracing_on && echo && cat /proc/sys/vm/swappiness",
    );
    if !mounted {
        // SAFETY: only syscalls between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNS)?;
                nix::mount::mount(
                    None::<&str>,
                    "/",
                    None::<&str>,
                    nix::mount::MsFlags::MS_REC | nix::mount::MsFlags::MS_PRIVATE,
                    None::<&str>,
                )?;
                nix::mount::mount(
                    Some("tracefs"),
                    "/sys/kernel/tracing",
                    Some("tracefs"),
                    nix::mount::MsFlags::empty(),
                    None::<&str>,
                )?;
                Ok(())
            });
        }
    }
    let out = cmd.output().unwrap();
    format!(
        "mounted={mounted}\n{}",
        String::from_utf8_lossy(&out.stdout)
    )
}

#[test]
fn sigkill_after_ftrace_and_sysctl_then_restore_puts_all_back() {
    if let Some(why) = skip_reason() {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP crash test: {why}\n"),
        )
        .unwrap_or(());
        return;
    }
    let Some(_g) = common::machine::serial(&SERIAL) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let before = tracing_state();
    let mut h = spawn_helper("tracing", dir.path());
    wait_for("ready", || dir.path().join("ready").exists(), &mut h.child);
    let during = tracing_state();
    kill9(&mut h.child);
    let jpath = dir.path().join("store.journal");
    let mut j = Journal::open(&jpath).unwrap();
    assert_ne!(during, before, "the helper changed nothing");
    assert!(during.ends_with("13\n"), "{during}");
    assert!(Journal::is_pending(&jpath).unwrap());
    let lines = j.restore_all().unwrap();
    eprintln!("restored:\n  {}", lines.join("\n  "));
    assert_eq!(tracing_state(), before);
    assert!(!Journal::is_pending(&jpath).unwrap());
}

/// The loop devices that exist (bound or not).
fn loop_devices() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("loop"))
        .collect();
    v.sort();
    v
}

/// Loop devices whose backing file lies under `dir`.
fn loops_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/sys/block").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("loop") {
            continue;
        }
        if let Some(b) = journal::loop_backing_file(Path::new(&format!("/dev/{name}"))) {
            if b.starts_with(dir) {
                out.push(name);
            }
        }
    }
    out
}

fn mounts_under(dir: &Path) -> Vec<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .nth(4)
                .is_some_and(|m| Path::new(m).starts_with(dir))
        })
        .map(String::from)
        .collect()
}

#[test]
fn sigkill_mid_fsops_run_then_restore_leaves_no_volume() {
    if let Some(why) = skip_reason() {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP fsops crash test: {why}\n"),
        )
        .unwrap_or(());
        return;
    }
    if kinds::check::which("mkfs.ext4").is_none() || !Path::new("/dev/loop-control").exists() {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP fsops crash test: no mkfs.ext4 or no loop support\n"),
        )
        .unwrap_or(());
        return;
    }
    let Some(_g) = common::machine::serial(&SERIAL) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dir_path = std::fs::canonicalize(dir.path()).unwrap();
    let loops_before = loop_devices();
    let mut h = spawn_helper("fsops", &dir_path);
    wait_for("ready", || dir_path.join("ready").exists(), &mut h.child);
    assert_eq!(loops_under(&dir_path).len(), 10);
    wait_for(
        "a mounted volume",
        || !mounts_under(&dir_path).is_empty(),
        &mut h.child,
    );
    kill9(&mut h.child);
    let jpath = dir_path.join("store.journal");
    assert!(Journal::is_pending(&jpath).unwrap());
    let lines = Journal::open(&jpath).unwrap().restore_all().unwrap();
    eprintln!("restored:\n  {}", lines.join("\n  "));
    // Loop devices with autoclear detach as their last user goes; allow it
    // a moment.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !loops_under(&dir_path).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(mounts_under(&dir_path), Vec::<String>::new());
    assert_eq!(loops_under(&dir_path), Vec::<String>::new());
    assert_eq!(loop_devices(), loops_before);
    let left: Vec<PathBuf> = std::fs::read_dir(&dir_path)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("sysdelta-fsops"))
        })
        .collect();
    assert_eq!(
        left,
        Vec::<PathBuf>::new(),
        "backing files or mount points left"
    );
    assert!(!Journal::is_pending(&jpath).unwrap());
}
