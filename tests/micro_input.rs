//! Bad input to the micro suite: one clear error, exit code 2.

use std::process::Command;
use std::sync::atomic::AtomicBool;

use sysdelta::error::Error;
use sysdelta::micro::{self, MicroOptions, Selection};

#[test]
fn unknown_benchmark_is_named_with_the_valid_groups() {
    let e = Selection::parse(&["proc".into(), "ctx.3p_0k".into()]).unwrap_err();
    assert!(e.to_string().contains("\"ctx.3p_0k\""), "{e}");
    for g in [
        "proc", "select", "ctx", "lat", "bw", "fs", "vm", "mem", "sem", "floor",
    ] {
        assert!(e.to_string().contains(g), "group {g} missing from: {e}");
    }
}

#[test]
fn impossible_semring_parameters_are_rejected() {
    let mut o = MicroOptions::quick();
    o.semring.groups = 0;
    let e = o.validate().unwrap_err();
    assert!(e.to_string().contains("groups=0"), "{e}");
    let mut o = MicroOptions::quick();
    o.semring.sems = 100_000;
    assert!(o.validate().is_err());
}

#[test]
fn too_few_samples_are_rejected() {
    let mut o = MicroOptions::quick();
    o.samples = 5;
    assert!(o
        .validate()
        .unwrap_err()
        .to_string()
        .contains("at least 11"));
}

#[test]
fn unusable_temp_dir_is_bad_input() {
    let mut o = MicroOptions::quick();
    o.tmpdir = "/proc/sysdelta-no-such-dir".into();
    let sel = Selection::parse(&["proc.null_call".into()]).unwrap();
    let e = micro::run_suite(&sel, &o, &AtomicBool::new(false)).unwrap_err();
    let b = e.downcast_ref::<Error>().expect("a BadInput error");
    assert!(b.to_string().contains("/proc/sysdelta-no-such-dir"), "{b}");
}

#[test]
fn workload_params_are_checked() {
    let ok: toml::Value = toml::from_str("filter = [\"proc.null_call\"]\nquick = true").unwrap();
    let w = micro::workload::MicroWorkload::from_params(&ok).unwrap();
    use sysdelta::workload::Workload;
    assert_eq!(w.metrics().len(), 1);
    assert_eq!(w.metrics()[0].name, "proc.null_call");
    for bad in [
        "filter = [\"nope\"]",
        "quick = 1",
        "samples = -3",
        "semring = { groups = 0 }",
        "colour = \"red\"",
    ] {
        let v: toml::Value = toml::from_str(bad).unwrap();
        let e = micro::workload::MicroWorkload::from_params(&v)
            .err()
            .unwrap_or_else(|| panic!("{bad} accepted"));
        assert!(e.to_string().starts_with("micro workload params:"), "{e}");
    }
}

fn sysdelta(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sysdelta"))
        .args(args)
        .output()
        .expect("run sysdelta")
}

#[test]
fn cli_bad_input_exits_2_with_one_line() {
    for args in [
        &["micro", "--quick", "no_such_bench"][..],
        &["micro", "--quick", "--sem-groups", "0", "sem.ring.seconds"],
        &["micro", "--quick", "--sem-laps", "-5", "sem.ring.seconds"],
        &[
            "micro",
            "--quick",
            "--tmpdir",
            "/proc/nope",
            "proc.null_call",
        ],
    ] {
        let o = sysdelta(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}
