//! Bad input is one clear error of type BadInput (exit code 2 in the CLI),
//! reported before anything is run or changed.

use crate::common;

use std::sync::atomic::AtomicBool;

use sysdelta::error::is_user_error;
use sysdelta::transport::sink::SinkTarget;
use sysdelta::transport::sweep::{run_sweep, SweepOptions};
use sysdelta::transport::workload::TransportWorkload;
use sysdelta::transport::Kind;

fn opts(kinds: &[Kind], record_size: usize, volume: u64) -> SweepOptions {
    SweepOptions {
        transports: kinds.to_vec(),
        transports_explicit: true,
        record_size,
        volumes: vec![volume],
        start_buffer: 65536,
        max_buffer: 65536,
        sink: SinkTarget::Null,
        keep: false,
        cpus: None,
        progress: false,
        hold_consumer: false,
    }
}

fn bad(o: &SweepOptions) -> String {
    let e = run_sweep(o, &AtomicBool::new(false)).expect_err("bad input is rejected");
    assert!(is_user_error(&e), "not a BadInput: {e:#}");
    e.to_string()
}

#[test]
fn record_size_zero_is_rejected() {
    let m = bad(&opts(&[Kind::Pipe], 0, 1000));
    assert!(m.contains("record size 0"), "{m}");
}

#[test]
fn record_size_above_the_transport_maximum_is_rejected() {
    let m = bad(&opts(&[Kind::Pipe], 5000, 5_000_000));
    assert!(
        m.contains("5000") && m.contains("pipe") && m.contains("4096"),
        "{m}"
    );
    let m = bad(&opts(&[Kind::Ftrace], 2000, 2_000_000));
    assert!(m.contains("ftrace") && m.contains("1024"), "{m}");
}

#[test]
fn volume_not_a_multiple_of_the_record_size_is_rejected() {
    let m = bad(&opts(&[Kind::Pipe], 96, 1_000_000));
    assert!(m.contains("1000000") && m.contains("96"), "{m}");
}

#[test]
fn missing_consumer_directory_is_rejected() {
    let mut o = opts(&[Kind::Pipe], 100, 1_000_000);
    o.sink = SinkTarget::Dir("/nonexistent/sysdelta-test".into());
    let m = bad(&o);
    assert!(m.contains("/nonexistent/sysdelta-test"), "{m}");
}

#[test]
fn workload_params_are_checked() {
    let p: toml::Value = toml::from_str("record_size = 0").unwrap();
    let e = TransportWorkload::from_params(&p).err().expect("rejected");
    assert!(
        is_user_error(&e) && e.to_string().contains("record size 0"),
        "{e:#}"
    );
    let p: toml::Value = toml::from_str("transports = [\"relayfs\"]").unwrap();
    let e = TransportWorkload::from_params(&p).err().expect("rejected");
    assert!(e.to_string().contains("relayfs"), "{e:#}");
    let p: toml::Value = toml::from_str("volum_mb = 3").unwrap();
    let e = TransportWorkload::from_params(&p).err().expect("rejected");
    assert!(e.to_string().contains("volum_mb"), "{e:#}");
}

#[test]
fn cli_exits_2_with_one_line_on_bad_record_size() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sysdelta"))
        .args([
            "transport",
            "--transports",
            "pipe",
            "--record-size",
            "0",
            "--quiet",
        ])
        .output()
        .expect("binary runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("record size 0"), "{err}");
}

#[test]
fn cli_exits_2_without_permission_for_tracefs() {
    use std::os::unix::process::CommandExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        common::skip("needs root to run the binary as an unprivileged user");
        return;
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sysdelta"))
        .args(["transport", "--transports", "ftrace", "--quick", "--quiet"])
        .uid(65534)
        .gid(65534)
        .output()
        .expect("binary runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("no permission for tracefs"), "{err}");
}
