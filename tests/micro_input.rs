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
        // Precision keys: both or neither, a percentage, a duration.
        "target_cov = 2.0",
        "budget = \"10m\"",
        "target_cov = -1.0\nbudget = 600",
        "target_cov = 2.0\nbudget = true",
        "target_cov = 2.0\nbudget = \"soon\"",
        "min_sample_ms = 0",
    ] {
        let v: toml::Value = toml::from_str(bad).unwrap();
        let e = micro::workload::MicroWorkload::from_params(&v)
            .err()
            .unwrap_or_else(|| panic!("{bad} accepted"));
        assert!(e.to_string().starts_with("micro workload params:"), "{e}");
    }
}

#[test]
fn workload_takes_the_precision_settings() {
    let v: toml::Value = toml::from_str(
        "filter = [\"proc.null_call\"]\ntarget_cov = 2\nbudget = \"90s\"\nmin_sample_ms = 1000",
    )
    .unwrap();
    let w = micro::workload::MicroWorkload::from_params(&v).unwrap();
    let p = w.options().precision.expect("precision mode set");
    assert_eq!(p.target_cov, 0.02);
    assert_eq!(p.budget, std::time::Duration::from_secs(90));
    assert!(p.fix_sample, "min_sample_ms fixes the sample length");
    assert_eq!(w.options().min_sample, std::time::Duration::from_secs(1));
    let v: toml::Value = toml::from_str("target_cov = 1.5\nbudget = 600").unwrap();
    let p = micro::workload::MicroWorkload::from_params(&v)
        .unwrap()
        .options()
        .precision
        .unwrap();
    assert!(!p.fix_sample);
    assert_eq!(p.budget, std::time::Duration::from_secs(600));
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
        &["micro", "--target-cov", "2", "proc.null_call"],
        &["micro", "--budget", "60", "proc.null_call"],
        &[
            "micro",
            "--target-cov",
            "0",
            "--budget",
            "60",
            "proc.null_call",
        ],
        &[
            "micro",
            "--target-cov",
            "2",
            "--budget",
            "soon",
            "proc.null_call",
        ],
        // 10 metrics cannot each have 21 samples of 20 ms in 1 s.
        &["micro", "--target-cov", "2", "--budget", "1", "proc"],
    ] {
        let o = sysdelta(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

/// `--against-lmbench` refuses, in one line with exit 2, a directory that
/// is not a built LMbench 3 (naming what is missing), and too few rounds.
#[test]
fn against_lmbench_refuses_a_directory_without_lmbench() {
    let empty = tempfile::tempdir().unwrap();
    let d = empty.path().to_str().unwrap();
    for args in [
        &["micro", "--against-lmbench", d, "proc.null_call"][..],
        &[
            "micro",
            "--against-lmbench",
            "/nonexistent/lmbench/bin",
            "proc",
        ],
    ] {
        let o = sysdelta(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("not a built LMbench 3"), "{err}");
        assert!(err.contains("lat_syscall"), "names what is missing: {err}");
        assert!(o.stdout.is_empty(), "nothing measured or printed");
    }
    // A directory with every binary passes the check; fewer than 5 rounds
    // do not (no binary is run before that).
    let fake = tempfile::tempdir().unwrap();
    for b in micro::against::REQUIRED {
        std::fs::write(fake.path().join(b), "").unwrap();
    }
    let o = sysdelta(&[
        "micro",
        "--against-lmbench",
        fake.path().to_str().unwrap(),
        "--repeat",
        "3",
        "proc.null_call",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("at least 5 rounds"), "{err}");
}
