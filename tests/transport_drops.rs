//! Drop accounting: with a tiny buffer and the consumer held back until the
//! producer is done, records must be dropped, and the reported count must be
//! exactly records written minus records read, and agree with the
//! transport's own counter (EAGAIN, EBADF / "dropped events").

mod common;

use std::sync::atomic::AtomicBool;

use sysdelta::transport::sink::SinkTarget;
use sysdelta::transport::step::{run_step, StepEnv, StepParams, StepResult};
use sysdelta::transport::tracefs::Tracefs;
use sysdelta::transport::Kind;

fn forced(kind: Kind, env: &StepEnv, dir: &std::path::Path) -> StepResult {
    let p = StepParams {
        kind,
        record_size: 100,
        volume: 2_000_000,
        buffer: 4096,
        sink: SinkTarget::Dir(dir.to_path_buf()),
        keep: false,
        cpus: sysdelta::transport::cpu::allowed_cpus(),
        deadline: None,
        index: 0,
        hold_consumer: true,
    };
    run_step(&p, env, &AtomicBool::new(false)).expect("step runs")
}

fn check(r: &StepResult) {
    assert_eq!(
        r.written, 20_000,
        "{}: producer wrote every record",
        r.transport
    );
    assert!(
        r.dropped > 0,
        "{}: a 4 KiB buffer must drop: {r:?}",
        r.transport
    );
    assert!(
        r.read > 0,
        "{}: the buffer's contents arrive: {r:?}",
        r.transport
    );
    assert_eq!(r.dropped, r.written - r.read, "{}", r.transport);
    assert_eq!(
        r.kernel_dropped,
        Some(r.dropped),
        "{}: transport's own counter agrees: {}",
        r.transport,
        r.detail
    );
}

#[test]
fn pipe_drops_are_counted_exactly() {
    let d = tempfile::tempdir().unwrap();
    let r = forced(Kind::Pipe, &StepEnv::default(), d.path());
    check(&r);
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        0,
        "consumer file removed"
    );
}

#[test]
fn unix_dgram_drops_are_counted_exactly() {
    let d = tempfile::tempdir().unwrap();
    let r = forced(Kind::UnixDgram, &StepEnv::default(), d.path());
    check(&r);
    assert!(
        r.detail.contains(&format!("sequence gaps {}", r.dropped)),
        "{}",
        r.detail
    );
}

#[test]
fn netlink_drops_are_counted_exactly() {
    if let Err(e) = sysdelta::transport::netlink::probe() {
        common::skip(format!("no NETLINK_USERSOCK here: {e}"));
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let r = forced(Kind::Netlink, &StepEnv::default(), d.path());
    check(&r);
    assert!(
        r.detail.contains(&format!("sequence gaps {}", r.dropped)),
        "{}",
        r.detail
    );
}

#[test]
fn ftrace_drops_are_counted_exactly() {
    let fs = match Tracefs::open() {
        Ok(fs) => fs,
        Err(e) => {
            common::skip(format!("tracefs not usable here: {e}"));
            return;
        }
    };
    let env = StepEnv { tracefs: Some(fs) };
    let d = tempfile::tempdir().unwrap();
    let r = forced(Kind::Ftrace, &env, d.path());
    check(&r);
    // The count comes from the events found in the file, and the kernel's
    // own read counter agrees with it.
    assert!(
        r.detail.contains(&format!("kernel read events {}", r.read)),
        "{}",
        r.detail
    );
}

#[test]
fn perf_drops_are_counted_exactly() {
    let fs = match Tracefs::open() {
        Ok(fs) => fs,
        Err(e) => {
            common::skip(format!("tracefs not usable here: {e}"));
            return;
        }
    };
    if let Err(e) = sysdelta::transport::perf::probe(&fs) {
        common::skip(format!("perf stream not offered here: {e}"));
        return;
    }
    let env = StepEnv { tracefs: Some(fs) };
    let d = tempfile::tempdir().unwrap();
    let r = forced(Kind::Perf, &env, d.path());
    check(&r);
}
