//! The machine is left as found: ftrace's global state untouched and no
//! instance or private mount left behind; the consumer's file removed unless
//! kept; a full disk stops the step with the bytes written and removes the
//! file. Also the workload adapter's metrics.

mod common;

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Duration;

use sysdelta::error::is_user_error;
use sysdelta::transport::sink::SinkTarget;
use sysdelta::transport::step::{run_step, StepEnv, StepParams};
use sysdelta::transport::sweep::{run_sweep, SweepOptions};
use sysdelta::transport::tracefs::Tracefs;
use sysdelta::transport::workload::TransportWorkload;
use sysdelta::transport::Kind;
use sysdelta::workload::{RunContext, RunOutcome, Workload};

/// Tests that mount tracefs run one at a time, so the mount check is exact.
static TRACEFS: Mutex<()> = Mutex::new(());

fn our_private_mounts() -> usize {
    let tag = format!("sysdelta-tracefs-{}-", std::process::id());
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(&tag))
        .count()
}

fn snapshot(root: &Path) -> (String, String, String, Vec<String>) {
    let r = |f: &str| std::fs::read_to_string(root.join(f)).unwrap_or_default();
    let mut inst: Vec<String> = std::fs::read_dir(root.join("instances"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    inst.sort();
    (
        r("buffer_size_kb"),
        r("tracing_on"),
        r("current_tracer"),
        inst,
    )
}

#[test]
fn ftrace_sweep_leaves_tracer_state_and_no_instances() {
    let _g = TRACEFS.lock().unwrap_or_else(|e| e.into_inner());
    let watch = match Tracefs::open() {
        Ok(fs) => fs,
        Err(e) => {
            common::skip(format!("tracefs not usable here: {e}"));
            return;
        }
    };
    let before = snapshot(watch.root());
    let dir = tempfile::tempdir().unwrap();
    let opts = SweepOptions {
        transports: vec![Kind::Ftrace],
        transports_explicit: true,
        record_size: 100,
        volumes: vec![1_000_000, 2_000_000],
        start_buffer: 8192,
        max_buffer: 32768,
        sink: SinkTarget::Dir(dir.path().to_path_buf()),
        keep: false,
        cpus: None,
        progress: false,
        hold_consumer: false,
    };
    let steps = run_sweep(&opts, &AtomicBool::new(false)).expect("sweep runs");
    assert!(!steps.is_empty() && steps.iter().all(|s| s.skipped.is_none()));
    assert_eq!(
        snapshot(watch.root()),
        before,
        "global tracer state and instances"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "consumer files removed"
    );
    drop(watch);
    assert_eq!(our_private_mounts(), 0, "private tracefs mounts removed");
}

#[test]
fn kept_file_holds_what_the_consumer_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let p = StepParams {
        kind: Kind::Pipe,
        record_size: 100,
        volume: 1_000_000,
        buffer: 1 << 20,
        sink: SinkTarget::Dir(dir.path().to_path_buf()),
        keep: true,
        cpus: sysdelta::transport::cpu::allowed_cpus(),
        deadline: None,
        index: 7,
        hold_consumer: false,
    };
    let r = run_step(&p, &StepEnv::default(), &AtomicBool::new(false)).unwrap();
    let files: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(files.len(), 1);
    let len = std::fs::metadata(&files[0]).unwrap().len();
    assert_eq!(len, r.sink_bytes);
    assert_eq!(len, r.read * 100);
}

/// A small tmpfs, unmounted on drop.
struct TinyFs(tempfile::TempDir);

impl TinyFs {
    fn mount(bytes: u64) -> Option<TinyFs> {
        let d = tempfile::tempdir().ok()?;
        let opts = format!("size={bytes}");
        nix::mount::mount(
            Some("tmpfs"),
            d.path(),
            Some("tmpfs"),
            nix::mount::MsFlags::empty(),
            Some(opts.as_str()),
        )
        .ok()?;
        Some(TinyFs(d))
    }
}

impl Drop for TinyFs {
    fn drop(&mut self) {
        let c = CString::new(self.0.path().as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: unmounting the tmpfs this guard mounted.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    }
}

#[test]
fn full_disk_stops_reports_bytes_and_removes_the_file() {
    let Some(fs) = TinyFs::mount(256 * 1024) else {
        common::skip("cannot mount a tmpfs here (needs root)");
        return;
    };
    for kind in [Kind::Pipe, Kind::UnixDgram] {
        let opts = SweepOptions {
            transports: vec![kind],
            transports_explicit: true,
            record_size: 100,
            volumes: vec![5_000_000],
            start_buffer: 1 << 20,
            max_buffer: 1 << 20,
            sink: SinkTarget::Dir(fs.0.path().to_path_buf()),
            keep: true,
            cpus: None,
            progress: false,
            hold_consumer: false,
        };
        let e = run_sweep(&opts, &AtomicBool::new(false)).expect_err("disk fills");
        assert!(is_user_error(&e), "{e:#}");
        let m = e.to_string();
        assert!(
            m.contains("disk full") && m.contains("bytes written"),
            "{m}"
        );
        assert_eq!(
            std::fs::read_dir(fs.0.path()).unwrap().count(),
            0,
            "{kind}: file removed even with keep"
        );
    }
}

#[test]
fn workload_reports_three_metrics_per_transport() {
    let _g = TRACEFS.lock().unwrap_or_else(|e| e.into_inner());
    let with_ftrace = Tracefs::open().is_ok();
    let names = if with_ftrace {
        "[\"ftrace\", \"pipe\", \"unix-dgram\"]"
    } else {
        eprintln!("note: tracefs not usable here; workload test covers pipe and unix-dgram only");
        "[\"pipe\", \"unix-dgram\"]"
    };
    let params: toml::Value = toml::from_str(&format!(
        "transports = {names}\nvolume_mb = 1\nbuffer_kb = 256"
    ))
    .unwrap();
    let mut w = TransportWorkload::from_params(&params).unwrap();
    let specs: Vec<String> = w.metrics().into_iter().map(|m| m.name).collect();
    assert!(specs.contains(&"unix_dgram.cpu_ns_per_record".to_string()));
    let scratch = tempfile::tempdir().unwrap();
    w.prepare(scratch.path()).unwrap();
    let cancel = AtomicBool::new(false);
    let ctx = RunContext {
        env: &[],
        cwd: None,
        timeout: Duration::from_secs(60),
        cancel: &cancel,
        cpus: None,
        cgroup_procs: None,
        scratch: scratch.path(),
    };
    let out = w.run(&ctx);
    w.cleanup();
    let RunOutcome::Ok(samples) = out else {
        panic!("run failed: {out:?}")
    };
    let got: Vec<String> = samples.iter().map(|s| s.metric.clone()).collect();
    assert_eq!(got, specs);
    for s in &samples {
        assert_eq!(s.values.len(), 1);
        assert!(s.values[0].is_finite() && s.values[0] >= 0.0, "{s:?}");
    }
    assert_eq!(std::fs::read_dir(scratch.path()).unwrap().count(), 0);
    assert_eq!(our_private_mounts(), 0);
}

#[test]
fn cancel_mid_step_stops_and_still_cleans_up() {
    let _g = TRACEFS.lock().unwrap_or_else(|e| e.into_inner());
    let watch = match Tracefs::open() {
        Ok(fs) => fs,
        Err(e) => {
            common::skip(format!("tracefs not usable here: {e}"));
            return;
        }
    };
    let before = snapshot(watch.root());
    let opts = SweepOptions {
        transports: vec![Kind::Ftrace],
        transports_explicit: true,
        record_size: 100,
        // Far more than can be written before the cancel arrives.
        volumes: vec![10_000_000_000],
        start_buffer: 1 << 20,
        max_buffer: 1 << 20,
        sink: SinkTarget::Null,
        keep: false,
        cpus: None,
        progress: false,
        hold_consumer: false,
    };
    let cancel = AtomicBool::new(false);
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(100));
            cancel.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        run_sweep(&opts, &cancel)
    });
    let e = r.expect_err("cancelled");
    assert!(e.to_string().contains("interrupted"), "{e:#}");
    assert_eq!(snapshot(watch.root()), before);
}

#[test]
fn producer_panic_propagates_and_the_consumer_still_stops() {
    use std::sync::atomic::Ordering;
    let p = StepParams {
        kind: Kind::Pipe,
        record_size: 100,
        volume: 100,
        buffer: 4096,
        sink: SinkTarget::Null,
        keep: false,
        cpus: vec![0],
        deadline: None,
        index: 0,
        hold_consumer: false,
    };
    let done = AtomicBool::new(false);
    let abort = AtomicBool::new(false);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        sysdelta::transport::step::run_pair(
            &p,
            &done,
            &abort,
            || {
                // A consumer waits for the producer's end, as the real ones do.
                while !done.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Ok(())
            },
            || -> std::io::Result<sysdelta::transport::producer::Produced> {
                panic!("producer fails")
            },
        )
    }));
    assert!(r.is_err(), "the panic reaches the caller");
    assert!(done.load(Ordering::Acquire));
}

#[test]
fn sweep_doubles_the_buffer_and_repeats_the_volume_after_drops() {
    // With the consumer held back, a pipe step drops exactly when the volume
    // does not fit in the pipe, so the ramp's path is known in advance.
    let opts = SweepOptions {
        transports: vec![Kind::Pipe],
        transports_explicit: true,
        record_size: 100,
        volumes: vec![100_000, 50_000],
        start_buffer: 4096,
        max_buffer: 1 << 20,
        sink: SinkTarget::Null,
        keep: false,
        cpus: None,
        progress: false,
        hold_consumer: true,
    };
    let steps = run_sweep(&opts, &AtomicBool::new(false)).unwrap();
    let path: Vec<(u64, u64, bool, bool)> = steps
        .iter()
        .map(|s| (s.volume, s.buffer, s.dropped > 0, s.retry))
        .collect();
    let first = &path[..path.len() - 1];
    // 100 kB: 4 KiB, 8 KiB, ... doubling while it drops, then one clean step.
    for (i, (v, b, dropped, retry)) in first.iter().enumerate() {
        assert_eq!(*v, 100_000);
        assert_eq!(*b, 4096 << i);
        assert_eq!(*retry, i > 0);
        assert_eq!(*dropped, i + 1 < first.len(), "{path:?}");
    }
    // 50 kB starts at the buffer that last worked, and fits.
    let last = path.last().unwrap();
    assert_eq!(*last, (50_000, first.last().unwrap().1, false, false));
    for s in &steps {
        assert_eq!(s.dropped, s.written - s.read);
    }
}
