//! Enter and leave each built-in config kind on the real system, and check
//! the system state afterwards equals the state before. Needs root and
//! tracefs (CI); skips with a printed reason otherwise.

mod common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sysdelta::config::journal::{Journal, JournalHandle};
use sysdelta::config::kind::ConfigKind;
use sysdelta::config::kinds::{self, tracefs};

/// tracefs is global: one test at a time in this binary.
static SERIAL: Mutex<()> = Mutex::new(());

fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    if !tracefs::supported() {
        return Some("kernel has no tracefs".into());
    }
    None
}

macro_rules! need_root_and_tracefs {
    () => {
        if let Some(why) = skip_reason() {
            // libtest names each test's thread after the test.
            let me = std::thread::current();
            common::skip(format!("{}: {why}", me.name().unwrap_or(module_path!())));
            return;
        }
    };
}

/// Tracing state read in a private mount namespace (so reading it never
/// mounts anything visible), plus whether tracefs is mounted.
fn tracing_state() -> String {
    let files =
        "current_tracer set_event buffer_size_kb tracing_on set_event_notrace_pid set_event_pid";
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg(format!(
        "cd /sys/kernel/tracing && for f in {files}; do echo \"== $f\"; cat $f; done"
    ));
    let mounted = tracefs::mounted();
    // SAFETY: only syscalls between fork and exec.
    // (Mounting tracefs over itself is EBUSY: read directly when mounted.)
    if !mounted {
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
    let out = cmd.output().expect("read tracing state");
    let text = String::from_utf8_lossy(&out.stdout);
    // buffer_size_kb: an unexpanded buffer reads "7 (expanded: 1408)"; any
    // tracing use expands it, and the kernel rounds sizes to whole
    // sub-buffers (1408 reads back as 1410). Compare in 16 KiB units.
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    if let Some(i) = lines.iter().position(|l| l == "== buffer_size_kb") {
        let kb: f64 = tracefs::parse_buffer_size(&lines[i + 1])
            .parse()
            .unwrap_or(0.0);
        lines[i + 1] = format!("~{}", (kb / 16.0).round());
    }
    // Entering and leaving expedite RCU grace periods for a moment
    // (config::rcu): the switch must be back as well.
    let rcu = std::fs::read_to_string("/sys/kernel/rcu_expedited").unwrap_or_default();
    format!(
        "mounted={mounted}\nrcu_expedited={}\n{}",
        rcu.trim(),
        lines.join("\n")
    )
}

/// Puts back whatever the journal holds when a test ends, also on panic,
/// so a failing test leaves the machine as it found it.
struct Restore(JournalHandle);

impl Drop for Restore {
    fn drop(&mut self) {
        if let Err(e) = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .restore_all()
        {
            eprintln!("restore after test: {e:#}");
        }
    }
}

fn journal(dir: &Path) -> JournalHandle {
    Arc::new(Mutex::new(
        Journal::open(&dir.join("store.journal")).unwrap(),
    ))
}

fn build(kind: &str, src: &str, j: &JournalHandle) -> Box<dyn ConfigKind> {
    let v: toml::Value = toml::from_str(src).unwrap();
    kinds::build(kind, &v, j.clone()).unwrap()
}

/// Enter then leave 5 times, printing the median and maximum wall time of
/// each. One enter = the `enter` call, including its journal fdatasync and,
/// where tracefs is not mounted, the mount; likewise one leave. Nothing is
/// subtracted.
fn enter_leave_timed(c: &mut dyn ConfigKind) {
    let (mut enter, mut leave) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let t = Instant::now();
        c.enter().unwrap();
        enter.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        c.leave().unwrap();
        leave.push(t.elapsed().as_secs_f64() * 1e3);
    }
    enter.sort_by(f64::total_cmp);
    leave.sort_by(f64::total_cmp);
    eprintln!(
        "COST {}: enter median {:.2} ms (max {:.2}), leave median {:.2} ms (max {:.2}), tracefs mounted before: {}",
        c.kind(),
        enter[2],
        enter[4],
        leave[2],
        leave[4],
        tracefs::mounted()
    );
}

#[test]
fn ftrace_enter_leave_restores_tracing_state() {
    need_root_and_tracefs!();
    let Some(_g) = common::machine::serial(&SERIAL) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let j = journal(dir.path());
    let _restore = Restore(j.clone());
    let before = tracing_state();
    let tracer = "nop";
    let mut c = build(
        "ftrace",
        &format!(
            "tracer = \"{tracer}\"\nevents = [\"sched\", \"syscalls\"]\nbuffer_size_kb = 2048\ntracing_on = false"
        ),
        &j,
    );
    assert_eq!(c.preflight(), Vec::<String>::new());
    c.enter().unwrap();
    let during = tracing_state();
    assert!(
        during.contains(&format!("== current_tracer\n{tracer}")),
        "{during}"
    );
    assert!(during.contains("sched:sched_switch"), "{during}");
    assert!(during.contains("== buffer_size_kb\n~128"), "{during}");
    assert!(Journal::is_pending(&dir.path().join("store.journal")).unwrap());
    c.leave().unwrap();
    assert_eq!(tracing_state(), before);
    assert!(!Journal::is_pending(&dir.path().join("store.journal")).unwrap());
    // Cost of a typical "tracing on" config: events + buffer, nop tracer.
    let mut c = build(
        "ftrace",
        "events = [\"sched\", \"syscalls\"]\ntracing_on = true",
        &j,
    );
    enter_leave_timed(c.as_mut());
    assert_eq!(tracing_state(), before);
}

#[test]
fn ftrace_function_tracer_or_failed_enter_leaves_no_trace() {
    need_root_and_tracefs!();
    let Some(_g) = common::machine::serial(&SERIAL) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let j = journal(dir.path());
    let _restore = Restore(j.clone());
    let before = tracing_state();
    if !tracefs::probe()
        .unwrap()
        .tracers
        .iter()
        .any(|t| t == "function")
    {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP function tracer: not offered by this kernel\n"),
        )
        .unwrap_or(());
        return;
    }
    let mut c = build(
        "ftrace",
        "events = [\"sched\"]\ntracer = \"function\"\ntracing_on = true",
        &j,
    );
    let t = Instant::now();
    match c.enter() {
        Ok(_) => {
            let enter = t.elapsed();
            let t = Instant::now();
            c.leave().unwrap();
            eprintln!(
                "COST ftrace(function tracer): enter {:.2} ms, leave {:.2} ms",
                enter.as_secs_f64() * 1e3,
                t.elapsed().as_secs_f64() * 1e3
            );
        }
        Err(e) => {
            // Some VMs forbid code patching (EPERM): the partial enter
            // (events already on) must still be undone by leave.
            eprintln!("function tracer refused here: {e:#}");
            c.leave().unwrap();
        }
    }
    assert_eq!(tracing_state(), before);
    assert!(!Journal::is_pending(&dir.path().join("store.journal")).unwrap());
}

#[test]
fn ftrace_preflight_names_what_the_kernel_offers() {
    need_root_and_tracefs!();
    let Some(_g) = common::machine::serial(&SERIAL) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let j = journal(dir.path());
    let _restore = Restore(j.clone());
    let before = tracing_state();
    let c = build(
        "ftrace",
        "tracer = \"no_such_tracer\"\nevents = [\"no_such_group\", \"sched:no_such_event\"]",
        &j,
    );
    let lines = c.preflight();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(
        lines[0].contains("no_such_tracer") && lines[0].contains("nop"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("no_such_group") && lines[1].contains("sched"),
        "{}",
        lines[1]
    );
    assert!(lines[2].contains("group `sched` exists"), "{}", lines[2]);
    assert_eq!(tracing_state(), before, "preflight changed the system");
}

#[test]
fn sysctl_enter_leave_restores_values() {
    need_root_and_tracefs!();
    let Some(_g) = common::machine::serial(&SERIAL) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let j = journal(dir.path());
    let _restore = Restore(j.clone());
    let p = "/proc/sys/vm/swappiness";
    let before = std::fs::read_to_string(p).unwrap();
    let want = if before.trim() == "17" { 18 } else { 17 };
    let mut c = build("sysctl", &format!("\"vm.swappiness\" = {want}"), &j);
    assert!(c.preflight().is_empty());
    c.enter().unwrap();
    assert_eq!(std::fs::read_to_string(p).unwrap().trim(), want.to_string());
    c.leave().unwrap();
    assert_eq!(std::fs::read_to_string(p).unwrap(), before);
    enter_leave_timed(c.as_mut());
    assert_eq!(std::fs::read_to_string(p).unwrap(), before);
    let bad = build("sysctl", "\"vm.no_such_knob\" = 1", &j);
    let lines = bad.preflight();
    assert_eq!(lines.len(), 1);
    assert!(lines[0].contains("vm.no_such_knob"), "{}", lines[0]);
}

#[test]
fn cpus_changes_nothing_and_returns_the_list() {
    need_root_and_tracefs!();
    let dir = tempfile::tempdir().unwrap();
    let j = journal(dir.path());
    let mut c = kinds::build("cpus", &toml::Value::String("0".into()), j).unwrap();
    assert!(c.preflight().is_empty());
    let mods = c.enter().unwrap();
    assert_eq!(mods.cpus, Some(vec![0]));
    c.leave().unwrap();
    enter_leave_timed(c.as_mut());
}

#[test]
fn trace_reader_captures_and_counts_then_cleans_up() {
    need_root_and_tracefs!();
    let Some(_g) = common::machine::serial(&SERIAL) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let j = journal(dir.path());
    let _restore = Restore(j.clone());
    let out = dir.path().join("trace-out");
    let before = tracing_state();
    let mut f = build("ftrace", "events = [\"sched\"]\ntracing_on = true", &j);
    let mut r = build("trace_reader", &format!("dir = \"{}\"", out.display()), &j);
    assert!(r.preflight().is_empty(), "{:?}", r.preflight());
    f.enter().unwrap();
    let t = Instant::now();
    r.enter().unwrap();
    let enter = t.elapsed();
    r.before_run().unwrap();
    for _ in 0..20 {
        Command::new("true").status().unwrap();
    }
    let m = r.after_run().unwrap();
    let names: Vec<&str> = m.iter().map(|s| s.metric.as_str()).collect();
    assert_eq!(names, ["trace_bytes", "trace_events_lost"]);
    assert!(m[0].values[0] > 0.0, "no trace bytes captured: {m:?}");
    assert!(out.join("trace.cpu0").exists());
    let t = Instant::now();
    r.leave().unwrap();
    let leave = t.elapsed();
    eprintln!(
        "COST trace_reader: enter {:.2} ms, leave {:.2} ms (run capture: {} bytes, {} lost)",
        enter.as_secs_f64() * 1e3,
        leave.as_secs_f64() * 1e3,
        m[0].values[0],
        m[1].values[0]
    );
    f.leave().unwrap();
    assert!(!out.exists(), "trace files left behind");
    assert_eq!(tracing_state(), before);
    assert!(!Journal::is_pending(&dir.path().join("store.journal")).unwrap());
}

/// While alive, trace events only of the calling thread and of the tasks
/// it starts (set_event_pid, options/event-fork); both put back on drop.
struct OnlyThisThread {
    pids: String,
    fork: String,
}

impl OnlyThisThread {
    fn new() -> OnlyThisThread {
        let me = OnlyThisThread {
            pids: tracefs::read("set_event_pid").unwrap(),
            fork: tracefs::read("options/event-fork").unwrap(),
        };
        std::fs::write(tracefs::path("options/event-fork"), "1").unwrap();
        let tid = nix::unistd::gettid();
        std::fs::write(tracefs::path("set_event_pid"), format!("{tid}\n")).unwrap();
        me
    }
}

impl Drop for OnlyThisThread {
    fn drop(&mut self) {
        // Writing truncates: the list is what was written, empty or not.
        let pids: Vec<&str> = self.pids.split_whitespace().collect();
        let _ = std::fs::write(tracefs::path("set_event_pid"), pids.join(" ") + "\n");
        let _ = std::fs::write(tracefs::path("options/event-fork"), self.fork.trim());
    }
}

/// The TIDs of this process's threads named `name*`.
fn threads_named(name: &str) -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with(name))
        })
        .map(|t| t.file_name().to_string_lossy().into_owned())
        .collect()
}

/// With syscall events on, the reader's own reads and splices must not be
/// traced: each would add events that the next read writes out, a loop
/// that once wrote 71 GB during a 1 s run. During the run the reader
/// threads are listed in set_event_notrace_pid; an idle 0.3 s run stays
/// small; afterwards set_event_notrace_pid is as it was.
///
/// "Idle" is this test's own process: the events traced are limited to it
/// and the threads it starts (set_event_pid with the event-fork option, so
/// the reader threads would be traced but for set_event_notrace_pid).
/// Traced system-wide, the bytes were those of whatever else ran: beside
/// two `yes > /dev/null` (a write syscall each per line) an idle 0.3 s run
/// wrote 37-69 MB, as large as a loop.
#[test]
fn trace_reader_does_not_trace_itself() {
    need_root_and_tracefs!();
    let Some(_g) = common::machine::serial(&SERIAL) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let j = journal(dir.path());
    let _restore = Restore(j.clone());
    let out = dir.path().join("trace-out");
    let before = tracing_state();
    let mut f = build("ftrace", "events = [\"syscalls\"]\ntracing_on = true", &j);
    let mut r = build("trace_reader", &format!("dir = \"{}\"", out.display()), &j);
    f.enter().unwrap();
    if !tracefs::path("set_event_notrace_pid").exists() {
        f.leave().unwrap();
        common::skip("trace_reader_does_not_trace_itself: kernel has no set_event_notrace_pid");
        return;
    }
    // Dropped before f leaves (its leave may unmount tracefs), or first on
    // a panic.
    let only_us = OnlyThisThread::new();
    r.enter().unwrap();
    for _ in 0..2 {
        r.before_run().unwrap();
        let readers = threads_named("sysdelta-trace");
        assert!(!readers.is_empty(), "no reader threads running");
        let notrace = tracefs::read("set_event_notrace_pid").unwrap();
        let listed: Vec<&str> = notrace.split_whitespace().collect();
        for t in &readers {
            assert!(listed.contains(&t.as_str()), "reader {t} not in {listed:?}");
        }
        std::thread::sleep(Duration::from_millis(300));
        let m = r.after_run().unwrap();
        let bytes = m[0].values[0];
        eprintln!(
            "IDLE syscall trace, 0.3 s: {bytes} bytes, {} lost",
            m[1].values[0]
        );
        // The test thread sleeps: a few events of its own, and of the
        // readers before they were listed. A reader that traced itself
        // fed its own reads back (the 71 GB above).
        assert!(bytes < 4e6, "{bytes} bytes in an idle 0.3 s run");
    }
    drop(only_us);
    r.leave().unwrap();
    f.leave().unwrap();
    assert_eq!(tracing_state(), before);
    assert!(!Journal::is_pending(&dir.path().join("store.journal")).unwrap());
}

#[test]
fn perf_record_records_and_cleans_up() {
    need_root_and_tracefs!();
    let Some(_g) = common::machine::serial(&SERIAL) else {
        return;
    };
    if kinds::check::which("perf").is_none() {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP perf_record: perf is not installed\n"),
        )
        .unwrap_or(());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let j = journal(dir.path());
    let _restore = Restore(j.clone());
    let out = dir.path().join("perf.data");
    let mut c = build(
        "perf_record",
        &format!("output = \"{}\"", out.display()),
        &j,
    );
    assert!(c.preflight().is_empty(), "{:?}", c.preflight());
    let t = Instant::now();
    c.enter().unwrap();
    let enter = t.elapsed();
    let t = Instant::now();
    c.before_run().unwrap();
    let start = t.elapsed();
    let spin = Instant::now();
    while spin.elapsed().as_millis() < 300 {
        std::hint::black_box(0u64);
    }
    let m = c.after_run().unwrap();
    assert_eq!(m[0].metric, "perf_samples");
    assert!(m[0].values[0] > 0.0, "{m:?}");
    let t = Instant::now();
    c.leave().unwrap();
    eprintln!(
        "COST perf_record: enter {:.2} ms, leave {:.2} ms, perf start per run {:.0} ms ({} samples, {} lost)",
        enter.as_secs_f64() * 1e3,
        t.elapsed().as_secs_f64() * 1e3,
        start.as_secs_f64() * 1e3,
        m[0].values[0],
        m[1].values[0]
    );
    assert!(!out.exists(), "perf output left behind");
    assert!(!Journal::is_pending(&dir.path().join("store.journal")).unwrap());
    let bad = build("perf_record", "event = \"cycles\"", &j);
    if !Path::new("/sys/bus/event_source/devices/cpu").exists() {
        assert!(bad.preflight().iter().any(|l| l.contains("PMU")));
    }
}

#[test]
fn blktrace_preflight_rejects_missing_device() {
    need_root_and_tracefs!();
    let dir = tempfile::tempdir().unwrap();
    let j = journal(dir.path());
    let c = build("blktrace", "devices = [\"nosuchdisk9\"]", &j);
    let lines = c.preflight();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("`nosuchdisk9` does not exist")),
        "{lines:?}"
    );
    // The trace must not go to the disk being traced.
    let root_disk = std::fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| {
            let here = std::fs::metadata("/var/tmp").map(|m| {
                use std::os::unix::fs::MetadataExt;
                format!("{}:{}", libc::major(m.dev()), libc::minor(m.dev()))
            });
            std::fs::read_to_string(format!("/sys/block/{n}/dev"))
                .map(|s| s.trim().to_string())
                .ok()
                == here.ok()
        });
    if let Some(disk) = root_disk {
        let c = build(
            "blktrace",
            &format!("devices = [\"{disk}\"]\ndir = \"/var/tmp/x\""),
            &j,
        );
        assert!(
            c.preflight()
                .iter()
                .any(|l| l.contains("put the trace on another filesystem")),
            "{:?}",
            c.preflight()
        );
    }
    let mut c = build("blktrace", "devices = \"fsops\"", &j);
    let err = c.enter().unwrap_err().to_string();
    assert!(err.contains("no `fsops` workload"), "{err}");
    assert!(!Journal::is_pending(&dir.path().join("store.journal")).unwrap());
}

const PREFLIGHT_HELPER: &str = "SYSDELTA_PREFLIGHT_HELPER";

/// Child side of the bad-input test: prints every kind's preflight lines.
#[test]
fn preflight_helper() {
    if std::env::var(PREFLIGHT_HELPER).is_err() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let j = journal(dir.path());
    for (kind, src) in [
        ("ftrace", "events = [\"sched\"]"),
        ("trace_reader", "dir = \"/tmp/sysdelta-preflight-probe\""),
        ("perf_record", "event = \"cpu-clock\""),
        ("blktrace", "devices = [\"vda\"]"),
        ("sysctl", "\"vm.swappiness\" = 10"),
    ] {
        for l in build(kind, src, &j).preflight() {
            println!("PREFLIGHT {kind}: {l}");
        }
    }
}

fn preflight_lines(as_nobody: bool, path: &str) -> Vec<String> {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "preflight_helper",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(PREFLIGHT_HELPER, "1")
    .env("PATH", path);
    if as_nobody {
        // SAFETY: setgid/setuid between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setgid(65534) != 0 || libc::setuid(65534) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "preflight helper failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        // The harness may print "test preflight_helper ... " on the same line.
        .filter_map(|l| l.find("PREFLIGHT ").map(|i| l[i + 10..].to_string()))
        .collect()
}

/// Not root, and perf not installed: one clear line each, from preflight
/// (which changes nothing).
#[test]
fn preflight_says_not_root_and_perf_missing() {
    need_root_and_tracefs!();
    let Some(_g) = common::machine::serial(&SERIAL) else {
        return;
    };
    let before = tracing_state();
    let lines = preflight_lines(true, &std::env::var("PATH").unwrap_or_default());
    for kind in [
        "ftrace",
        "trace_reader",
        "perf_record",
        "blktrace",
        "sysctl",
    ] {
        let mine: Vec<&String> = lines.iter().filter(|l| l.starts_with(kind)).collect();
        assert!(
            mine.iter().any(|l| l.contains("must run as root")),
            "{kind} as nobody: {mine:?}"
        );
    }
    let lines = preflight_lines(false, "/nonexistent");
    let perf: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("perf_record"))
        .collect();
    assert_eq!(
        perf,
        vec!["perf_record: perf_record: perf is not installed (not in PATH; apt-get install linux-perf)"],
        "all lines: {lines:?}"
    );
    assert_eq!(tracing_state(), before);
}

/// RCU grace periods are expedited inside enter/leave only, journaled like
/// any setting, and the switch is back afterwards (also when `f` fails).
#[test]
fn rcu_expedite_is_on_inside_and_restored_after() {
    need_root_and_tracefs!();
    // Under the lock: another test's ftrace enter turns the switch on.
    let Some(_g) = common::machine::serial(&SERIAL) else {
        return;
    };
    let path = Path::new("/sys/kernel/rcu_expedited");
    let before = match std::fs::read_to_string(path) {
        Ok(v) if v.trim() == "0" => v,
        Ok(v) => {
            std::io::Write::write_fmt(
                &mut std::io::stderr(),
                format_args!("SKIP rcu_expedite: rcu_expedited is already {}\n", v.trim()),
            )
            .unwrap_or(());
            return;
        }
        Err(e) => {
            std::io::Write::write_fmt(
                &mut std::io::stderr(),
                format_args!("SKIP rcu_expedite: cannot read {}: {e}\n", path.display()),
            )
            .unwrap_or(());
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let j = journal(dir.path());
    let _restore = Restore(j.clone());
    let inside = sysdelta::config::rcu::expedited(&j, || {
        assert!(Journal::is_pending(&dir.path().join("store.journal")).unwrap());
        Ok(std::fs::read_to_string(path)?)
    })
    .unwrap();
    assert_eq!(inside.trim(), "1");
    assert_eq!(std::fs::read_to_string(path).unwrap(), before);
    let failed: anyhow::Result<()> =
        sysdelta::config::rcu::expedited(&j, || anyhow::bail!("enter failed"));
    assert!(failed.is_err());
    assert_eq!(std::fs::read_to_string(path).unwrap(), before);
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _: anyhow::Result<()> =
            sysdelta::config::rcu::expedited(&j, || panic!("enter panicked"));
    }));
    assert!(panicked.is_err());
    assert_eq!(std::fs::read_to_string(path).unwrap(), before);
    assert!(!Journal::is_pending(&dir.path().join("store.journal")).unwrap());
}

/// Unmounts a test's tmpfs when dropped, also on panic.
struct TmpfsMount(std::path::PathBuf);

impl Drop for TmpfsMount {
    fn drop(&mut self) {
        let _ = nix::mount::umount2(&self.0, nix::mount::MntFlags::MNT_DETACH);
    }
}

/// perf_record refuses to start a profile on a file system with less than
/// its minimum budget above the free-space floor kept for the store,
/// instead of filling the disk.
#[test]
fn perf_record_refuses_a_nearly_full_disk() {
    need_root_and_tracefs!();
    let Some(_g) = common::machine::serial(&SERIAL) else {
        return;
    };
    if kinds::check::which("perf").is_none() {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP perf_record space: perf is not installed\n"),
        )
        .unwrap_or(());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let j = journal(dir.path());
    let _restore = Restore(j.clone());
    let small = dir.path().join("small");
    std::fs::create_dir(&small).unwrap();
    // 70 MiB: the floor (at least 64 MiB) leaves 6 MiB, under the 16 MiB minimum.
    nix::mount::mount(
        Some("tmpfs"),
        &small,
        Some("tmpfs"),
        nix::mount::MsFlags::empty(),
        Some("size=70m"),
    )
    .unwrap();
    let _mount = TmpfsMount(small.clone());
    let mut c = build(
        "perf_record",
        &format!("output = \"{}\"", small.join("perf.data").display()),
        &j,
    );
    c.enter().unwrap();
    let e = c.before_run().unwrap_err();
    assert!(format!("{e:#}").contains("too little free space"), "{e:#}");
    c.leave().unwrap();
    assert!(!small.join("perf.data").exists());
}
