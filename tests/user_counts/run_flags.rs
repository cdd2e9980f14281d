//! `run` and `ab` refuse a bad benchstat-layout flag (`--filter`, `--row`,
//! `--col`) before they measure anything, with or without `--no-report`:
//! exit 2, one line naming the flag, nothing run, nothing stored.

use crate::common::{self, stderr, Sandbox};

/// `ab` (or `run`) with a bad layout flag `flag`: refused as bad input
/// naming `names`, before its command ran or the store was touched.
fn refused(sb: &Sandbox, args: &[&str], names: &str) {
    let marker = sb.path("ran");
    let out = sb.run(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(names), "{err}");
    assert!(!marker.exists(), "{args:?}: a run was made");
    assert!(
        !sb.store_exists() || sb.sql_number("SELECT COUNT(*) FROM experiments") == 0,
        "{args:?}: an experiment was stored"
    );
}

#[test]
fn a_bad_benchstat_filter_is_refused_before_ab_measures() {
    let sb = Sandbox::new();
    let touch = format!("touch {}", sb.path("ran").display());
    for no_report in [false, true] {
        let mut args = vec![
            "ab",
            "-q",
            "-r",
            "2",
            "--format",
            "benchstat",
            "--filter",
            "(bad",
        ];
        if no_report {
            args.push("--no-report");
        }
        args.extend_from_slice(&["--", &touch]);
        refused(&sb, &args, "--filter '(bad'");
    }
}

#[test]
fn a_bad_row_or_col_is_refused_before_run_measures_even_with_no_report() {
    let sb = Sandbox::new();
    let plan = sb.write(
        "plan.toml",
        &format!(
            "name = \"p\"\nruns = 2\n[[config]]\nname = \"a\"\n[[workload]]\nname = \"w\"\ncommand = \"touch {}\"\n",
            sb.path("ran").display()
        ),
    );
    let plan = plan.to_str().unwrap();
    refused(
        &sb,
        &["run", plan, "-q", "--no-report", "--row", ".unit"],
        "--row/--col: .unit",
    );
    refused(
        &sb,
        &[
            "run",
            plan,
            "-q",
            "--no-report",
            "--row",
            ".config",
            "--col",
            ".config",
        ],
        "--row and --col both name .config",
    );
    // The same plan with good flags runs: the refusals were the flags'.
    let out = sb.run(&["run", plan, "-q", "--no-report", "--row", ".name"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert!(sb.path("ran").exists());
}
