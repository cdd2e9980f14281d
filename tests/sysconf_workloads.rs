//! The built-in workloads of test set #1 and the 2007 fsops study, run for
//! real at small sizes: metrics come out, RunContext is honoured (CPU list,
//! timeout), and cleanup leaves nothing behind. The tracing measurements
//! (trace reader loss during compile, blktrace on the fsops volumes) print
//! their figures. Needs root for fsops and tracing (CI); skips otherwise.

mod common;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sysdelta::config::journal::{Journal, JournalHandle};
use sysdelta::config::kinds::{self, tracefs};
use sysdelta::workload::compile::CompileWorkload;
use sysdelta::workload::compress::CompressWorkload;
use sysdelta::workload::fsops::FsopsWorkload;
use sysdelta::workload::{MetricSamples, RunContext, RunOutcome, Workload};

static SERIAL: Mutex<()> = Mutex::new(());

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

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn ctx<'a>(scratch: &'a Path, cancel: &'a AtomicBool, cpus: Option<&'a [usize]>) -> RunContext<'a> {
    RunContext {
        env: &[],
        cwd: None,
        timeout: Duration::from_secs(120),
        cancel,
        cpus,
        cgroup_procs: None,
        scratch,
    }
}

fn ok(o: RunOutcome) -> Vec<MetricSamples> {
    match o {
        RunOutcome::Ok(m) => m,
        RunOutcome::Failed {
            reason,
            stderr_tail,
            ..
        } => panic!("run failed: {reason}\n{stderr_tail}"),
    }
}

fn value(m: &[MetricSamples], name: &str) -> f64 {
    m.iter()
        .find(|s| s.metric == name)
        .unwrap_or_else(|| panic!("no metric {name} in {m:?}"))
        .values[0]
}

fn params(src: &str) -> toml::Value {
    toml::from_str(src).unwrap()
}

fn journal(dir: &Path) -> JournalHandle {
    Arc::new(Mutex::new(
        Journal::open(&dir.join("store.journal")).unwrap(),
    ))
}

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

#[test]
fn compile_builds_and_reports_build_time() {
    if kinds::check::which("cc").is_none() || kinds::check::which("make").is_none() {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP compile: no cc or make\n"),
        )
        .unwrap_or(());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut w =
        CompileWorkload::from_params(&params("files = 12\nfunctions = 4\njobs = 2")).unwrap();
    w.prepare(dir.path()).unwrap();
    assert!(dir.path().join("compile/src/f0011.c").exists());
    let cancel = AtomicBool::new(false);
    let m = ok(w.run(&ctx(dir.path(), &cancel, None)));
    assert!(value(&m, "build_time") > 0.0);
    assert!(
        dir.path().join("compile/prog").exists(),
        "the tree must link"
    );
    // Pinned to CPU 0: make and every cc it starts inherit the affinity.
    let cpus = [0usize];
    let m = ok(w.run(&ctx(dir.path(), &cancel, Some(&cpus))));
    assert!(value(&m, "build_time") > 0.0);
    // A timeout stops the run and kills the whole process group.
    let mut c = ctx(dir.path(), &cancel, None);
    c.timeout = Duration::from_millis(1);
    match w.run(&c) {
        RunOutcome::Failed { reason, .. } => assert!(reason.contains("timed out"), "{reason}"),
        RunOutcome::Ok(_) => panic!("a 1 ms timeout did not fail the run"),
    }
    w.cleanup();
    assert!(!dir.path().join("compile").exists());
}

#[test]
fn compress_reports_one_time_per_tool() {
    let tools: Vec<&str> = ["bzip2", "xz", "zstd"]
        .into_iter()
        .filter(|t| kinds::check::which(t).is_some())
        .collect();
    if tools.is_empty() {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP compress: none of bzip2, xz, zstd installed\n"),
        )
        .unwrap_or(());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let list = tools
        .iter()
        .map(|t| format!("\"{t}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let mut w =
        CompressWorkload::from_params(&params(&format!("size_mb = 2\ntools = [{list}]"))).unwrap();
    w.prepare(dir.path()).unwrap();
    let corpus = dir.path().join("compress/corpus");
    assert_eq!(std::fs::metadata(&corpus).unwrap().len(), 2 * 1024 * 1024);
    let cancel = AtomicBool::new(false);
    let m = ok(w.run(&ctx(dir.path(), &cancel, None)));
    assert_eq!(m.len(), tools.len());
    for t in &tools {
        assert!(value(&m, &format!("{t}_time")) > 0.0);
    }
    // Source-like compressibility: bzip2 shrinks it 3x-12x, as real C.
    if tools.contains(&"bzip2") {
        let out = std::process::Command::new("bzip2")
            .arg("-c")
            .arg(&corpus)
            .output()
            .unwrap();
        let ratio = 2.0 * 1024.0 * 1024.0 / out.stdout.len() as f64;
        eprintln!("corpus bzip2 ratio: {ratio:.1}");
        assert!((3.0..12.0).contains(&ratio), "ratio {ratio}");
    }
    w.cleanup();
    assert!(!dir.path().join("compress").exists());
}

/// fsops with the default 10 volumes: prepare + cleanup timed (one
/// operation = creating 10 sparse files, attaching 10 loop devices and the
/// journal records; cleanup the reverse), one run with a write phase, and
/// blktrace (`devices = "fsops"`) tracing exactly those volumes to a
/// directory on another filesystem.
#[test]
fn fsops_ten_volumes_with_blktrace_and_clean_teardown() {
    if !is_root() || !tracefs::supported() {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP fsops: needs root and tracefs\n"),
        )
        .unwrap_or(());
        return;
    }
    if kinds::check::which("mkfs.ext4").is_none() || !Path::new("/dev/loop-control").exists() {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP fsops: no mkfs.ext4 or no loop support\n"),
        )
        .unwrap_or(());
        return;
    }
    let Some(_g) = common::machine::serial(&SERIAL) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let scratch = std::fs::canonicalize(dir.path()).unwrap();
    let loops_before = loop_devices();
    let traces = tempfile::tempdir_in("/var/tmp").unwrap();
    let j = journal(&scratch);
    let _restore = Restore(j.clone());
    let mut w =
        FsopsWorkload::from_params(&params("size_mb = 64\nwrite_files = 2\nfile_size_kb = 512"))
            .unwrap()
            .with_journal(j.clone());
    assert!(
        w.preflight(&scratch).is_empty(),
        "{:?}",
        w.preflight(&scratch)
    );
    let t = Instant::now();
    w.prepare(&scratch).unwrap();
    let setup = t.elapsed();
    assert_eq!(w.devices().len(), 10);

    let bt = params(&format!(
        "devices = \"fsops\"\ndir = \"{}\"",
        traces.path().display()
    ));
    let mut b = kinds::build("blktrace", &bt, j.clone()).unwrap();
    assert!(b.preflight().is_empty(), "{:?}", b.preflight());
    let t = Instant::now();
    b.enter().unwrap();
    let bt_enter = t.elapsed();
    b.before_run().unwrap();
    let cancel = AtomicBool::new(false);
    let m = ok(w.run(&ctx(&scratch, &cancel, None)));
    let bm = b.after_run().unwrap();
    let t = Instant::now();
    b.leave().unwrap();
    let bt_leave = t.elapsed();
    assert!(value(&m, "fsops_time") >= value(&m, "mkfs_time"));
    assert!(value(&m, "write_time") > 0.0);
    assert!(
        value(&bm, "blktrace_bytes") > 0.0,
        "blktrace saw no I/O: {bm:?}"
    );
    eprintln!(
        "FSOPS run: {:.2} s (mkfs {:.3}, mount {:.3}, write {:.3}, umount {:.3}); blktrace {} bytes, {} events lost; blktrace enter {:.1} ms, leave {:.1} ms",
        value(&m, "fsops_time"),
        value(&m, "mkfs_time"),
        value(&m, "mount_time"),
        value(&m, "write_time"),
        value(&m, "umount_time"),
        value(&bm, "blktrace_bytes"),
        value(&bm, "blktrace_events_lost"),
        bt_enter.as_secs_f64() * 1e3,
        bt_leave.as_secs_f64() * 1e3,
    );
    // A second, untraced run works on the same volumes.
    ok(w.run(&ctx(&scratch, &cancel, None)));
    let devices = w.devices();
    let t = Instant::now();
    w.cleanup();
    let teardown = t.elapsed();
    eprintln!(
        "FSOPS 10 volumes: setup {:.0} ms, teardown {:.0} ms",
        setup.as_secs_f64() * 1e3,
        teardown.as_secs_f64() * 1e3
    );
    for d in devices {
        assert!(
            sysdelta::config::journal::loop_backing_file(&d)
                .is_none_or(|b| !b.starts_with(&scratch)),
            "{} still attached",
            d.display()
        );
    }
    assert_eq!(
        loop_devices(),
        loops_before,
        "loop devices created and not removed"
    );
    let left: Vec<_> = std::fs::read_dir(&scratch)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().starts_with("sysdelta-fsops"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(
        std::fs::read_dir(traces.path()).unwrap().next().is_none(),
        "trace files left"
    );
    assert!(!Journal::is_pending(&scratch.join("store.journal")).unwrap());
}

/// "Tracing on, daemon running" during the compile workload: sched and
/// syscalls events into the default-size ring buffer, the trace reader
/// splicing it to disk. Prints bytes and events lost (the figure the
/// report shows); asserts only that both are measured.
#[test]
fn trace_reader_keeps_count_during_compile() {
    if !is_root() || !tracefs::supported() {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP trace reader under compile: needs root and tracefs\n"),
        )
        .unwrap_or(());
        return;
    }
    if kinds::check::which("cc").is_none() || kinds::check::which("make").is_none() {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("SKIP trace reader under compile: no cc or make\n"),
        )
        .unwrap_or(());
        return;
    }
    let Some(_g) = common::machine::serial(&SERIAL) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let traces = tempfile::tempdir_in("/var/tmp").unwrap();
    let j = journal(dir.path());
    let _restore = Restore(j.clone());
    let mut w = CompileWorkload::from_params(&params("files = 40\nfunctions = 8")).unwrap();
    w.prepare(dir.path()).unwrap();
    // The kernel's default ring buffer, then a 16 MiB one per CPU.
    for buffer in ["", "\nbuffer_size_kb = 16384"] {
        let src = format!("events = [\"sched\", \"syscalls\"]\ntracing_on = true{buffer}");
        let mut f = kinds::build("ftrace", &params(&src), j.clone()).unwrap();
        let out = format!("dir = \"{}\"", traces.path().display());
        let mut r = kinds::build("trace_reader", &params(&out), j.clone()).unwrap();
        f.enter().unwrap();
        r.enter().unwrap();
        r.before_run().unwrap();
        let cancel = AtomicBool::new(false);
        let m = ok(w.run(&ctx(dir.path(), &cancel, None)));
        let rm = r.after_run().unwrap();
        r.leave().unwrap();
        f.leave().unwrap();
        let bytes = value(&rm, "trace_bytes");
        let lost = value(&rm, "trace_events_lost");
        eprintln!(
            "TRACE under compile ({:.2} s build, sched+syscalls, buffer {}): {:.1} MB written, {lost} events lost",
            value(&m, "build_time"),
            if buffer.is_empty() { "default" } else { "16 MiB/cpu" },
            bytes / 1e6
        );
        assert!(bytes > 0.0);
        assert!(lost >= 0.0);
    }
    w.cleanup();
    assert!(
        std::fs::read_dir(traces.path()).unwrap().next().is_none(),
        "trace files left"
    );
}

/// The shared launcher honours every RunContext field: env, cwd, CPU list
/// (sched_setaffinity before exec), cgroup (the child joins it before
/// exec), and cancel (the whole process group is killed).
#[test]
fn launcher_honours_the_run_context() {
    use std::process::{Command, Stdio};
    use sysdelta::workload::compile::launch;
    let dir = tempfile::tempdir().unwrap();
    let cgroot = Path::new("/sys/fs/cgroup/unified");
    let cgroup = cgroot.join(format!("sysdelta-test-{}", std::process::id()));
    let use_cgroup = is_root() && cgroot.join("cgroup.procs").exists();
    if use_cgroup {
        std::fs::create_dir(&cgroup).unwrap();
    } else {
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!(
                "SKIP cgroup part: needs root and cgroup v2 at {}\n",
                cgroot.display()
            ),
        )
        .unwrap_or(());
    }
    let procs = cgroup.join("cgroup.procs");
    let out_path = dir.path().join("out");
    let cancel = AtomicBool::new(false);
    let env = [("SYSDELTA_TEST_VAR".to_string(), "hello".to_string())];
    let cpus = [0usize];
    let ctx = RunContext {
        env: &env,
        cwd: Some(dir.path()),
        timeout: Duration::from_secs(30),
        cancel: &cancel,
        cpus: Some(&cpus),
        cgroup_procs: use_cgroup.then_some(procs.as_path()),
        scratch: dir.path(),
    };
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg(
        "echo $SYSDELTA_TEST_VAR; pwd; grep Cpus_allowed_list /proc/self/status; cat /proc/self/cgroup",
    );
    let out = std::fs::File::create(&out_path).unwrap();
    let done =
        launch::run_io(cmd, &ctx, Stdio::from(out)).unwrap_or_else(|_| panic!("launch failed"));
    let text = std::fs::read_to_string(&out_path).unwrap();
    if use_cgroup {
        let _ = std::fs::remove_dir(&cgroup);
    }
    assert!(done.status.success());
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("hello"));
    assert_eq!(
        lines.next().map(Path::new),
        Some(std::fs::canonicalize(dir.path()).unwrap().as_path())
    );
    assert_eq!(
        lines.next().map(|l| l.split_whitespace().last()),
        Some(Some("0"))
    );
    if use_cgroup {
        let name = cgroup.file_name().unwrap().to_string_lossy().into_owned();
        assert!(text.contains(&format!("0::/{name}")), "{text}");
    }

    // Cancel: a background grandchild dies with the group.
    let pidfile = dir.path().join("bg.pid");
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(format!("sleep 30 & echo $! > {}; wait", pidfile.display()));
    let ctx = RunContext {
        cpus: None,
        cgroup_procs: None,
        ..ctx
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(300));
            cancel.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        match launch::run(cmd, &ctx) {
            Err(RunOutcome::Failed { reason, .. }) => {
                assert!(reason.contains("cancelled"), "{reason}")
            }
            _ => panic!("a cancelled run did not fail"),
        }
    });
    let bg: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The grandchild was killed; once reaped by init its /proc entry goes.
    let deadline = Instant::now() + Duration::from_secs(5);
    while Path::new(&format!("/proc/{bg}")).exists() && Instant::now() < deadline {
        let state = std::fs::read_to_string(format!("/proc/{bg}/stat")).unwrap_or_default();
        if state.contains(") Z") {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let state = std::fs::read_to_string(format!("/proc/{bg}/stat")).unwrap_or_default();
    assert!(
        state.is_empty() || state.contains(") Z"),
        "background sleep survived: {state}"
    );
}
