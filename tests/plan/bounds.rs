//! Every count, size and duration of a plan (and of the CLI overrides) is
//! bounded: a value the schedule, the store or the machine cannot hold is
//! refused when the plan loads, in one line naming file:line:col, the
//! field and the limit, before anything is created on disk.

use crate::common;

use common::{stderr, Sandbox};
use sysdelta::plan::{self, Overrides, MAX_RUNS, MAX_SCHEDULED_RUNS};

/// One config, one workload; `head` goes first. The plan's setup fails, so
/// that a plan that wrongly passes validation fails fast instead of
/// running for hours.
fn plan_with(head: &str) -> String {
    format!(
        "setup = \"exit 1\"\n{head}\n[[config]]\nname = \"a\"\n[[workload]]\nname = \"w\"\ncommand = \"true\"\n"
    )
}

fn refused(text: &str, ov: &Overrides) -> String {
    match plan::parse("p.toml", text, ov) {
        Ok(p) => panic!(
            "accepted: runs {} warmup {} timeout {:?}\n{text}",
            p.runs, p.warmup, p.workloads[0].timeout
        ),
        Err(e) => e.to_string(),
    }
}

fn assert_refused(text: &str, ov: &Overrides, want: &str) {
    let e = refused(text, ov);
    assert!(e.contains(want), "want {want:?} in: {e}");
    assert!(!e.contains('\n'), "one line: {e}");
}

/// Through the binary: exit 2, one line, and nothing on disk but the plan.
fn assert_refused_by_binary(text: &str, flags: &[&str], want: &str) {
    let sb = Sandbox::new();
    sb.write("p.toml", text);
    let mut args = vec!["run", "p.toml", "--quiet", "--no-report"];
    args.extend_from_slice(flags);
    let out = sb.run(&args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "exit 2; stderr: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(want), "want {want:?} in: {err}");
    let left: Vec<_> = std::fs::read_dir(sb.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        left,
        vec!["p.toml"],
        "a refused plan creates nothing (store, journal, run log)"
    );
}

#[test]
fn run_counts_beyond_a_million_are_too_large_not_too_small() {
    let ov = Overrides::default();
    for (head, want) in [
        (
            "runs = 3000000000",
            "p.toml:2:8: runs is too large (at most 1000000), got 3000000000",
        ),
        (
            "runs = 4294967296",
            "p.toml:2:8: runs is too large (at most 1000000), got 4294967296",
        ),
        // Beyond i64: still "too large", not a type error.
        (
            "runs = 99999999999999999999",
            "p.toml:2:8: runs is too large (at most 1000000), got 99999999999999999999",
        ),
        ("runs = 1000001", "runs is too large (at most 1000000)"),
        (
            "warmup = 4294967295",
            "p.toml:2:10: warmup is too large (at most 1000000)",
        ),
        ("runs = 0", "p.toml:2:8: runs must be at least 1, got 0"),
        (
            "warmup = -1",
            "p.toml:2:10: warmup must be at least 0, got -1",
        ),
        ("seed = -1", "p.toml:2:8: seed must be at least 0"),
        (
            "seed = 18446744073709551616",
            "seed is too large (at most 18446744073709551615)",
        ),
        (
            "[quick]\nruns = 2000000",
            "p.toml:3:8: quick.runs is too large (at most 1000000)",
        ),
        (
            "[quick]\nwarmup = 2000000",
            "p.toml:3:10: quick.warmup is too large",
        ),
    ] {
        assert_refused(&plan_with(head), &ov, want);
    }
    // The limit itself is accepted.
    let p = plan::parse("p.toml", &plan_with(&format!("runs = {MAX_RUNS}")), &ov).unwrap();
    assert_eq!(p.runs, MAX_RUNS);
}

#[test]
fn the_whole_schedule_must_fit() {
    // 2 configs x 6 workloads x 1,000,000 runs = 12,000,000 > 10,000,000.
    let mut text = String::from("runs = 1000000\nsetup = \"exit 1\"\n");
    for c in ["a", "b"] {
        text.push_str(&format!("[[config]]\nname = \"{c}\"\n"));
    }
    for w in 0..6 {
        text.push_str(&format!(
            "[[workload]]\nname = \"w{w}\"\ncommand = \"true\"\n"
        ));
    }
    assert_refused(
        &text,
        &Overrides::default(),
        &format!("p.toml:1:8: the schedule is too large (at most {MAX_SCHEDULED_RUNS} runs)"),
    );
    // Warm-ups count: 1 x 1 x (1,000,000 + 1,000,000) fits; 6 workloads do not.
    let two_million = plan_with("runs = 1000000\nwarmup = 1000000");
    plan::parse("p.toml", &two_million, &Overrides::default()).unwrap();
    assert_refused_by_binary(&text, &[], "the schedule is too large");
}

/// A plan whose one config boots a kernel (the image is looked up at
/// preflight, not when the plan loads).
fn kernel_plan_with(head: &str) -> String {
    format!(
        "setup = \"exit 1\"\n{head}\n[[config]]\nname = \"a\"\n[config.kernel]\nimage = \"/boot/vmlinuz\"\n\
         [[workload]]\nname = \"w\"\ncommand = \"true\"\n"
    )
}

#[test]
fn kernel_runs_round_to_whole_boots_within_the_bound() {
    let ov = Overrides::default();
    // Runs are a multiple of the boots: 10 over 6 boots become 12.
    let p = plan::parse("p.toml", &kernel_plan_with("runs = 10\nboots = 6"), &ov).unwrap();
    assert_eq!((p.runs, p.boots), (12, 6));
    // At the bound, rounding up would pass it: the multiple below is taken.
    let at_bound = kernel_plan_with(&format!("runs = {MAX_RUNS}\nboots = 6"));
    let p = plan::parse("p.toml", &at_bound, &ov).unwrap();
    assert_eq!(p.runs, MAX_RUNS - MAX_RUNS % 6);
    let flags = Overrides {
        runs: Some(MAX_RUNS),
        boots: Some(7),
        ..Overrides::default()
    };
    let p = plan::parse("p.toml", &kernel_plan_with(""), &flags).unwrap();
    assert!(p.runs <= MAX_RUNS && p.runs % 7 == 0, "runs {}", p.runs);
}

#[test]
fn kernel_warmups_count_once_per_boot_in_the_schedule() {
    // 1 x 1 x (2,000 warm-ups x 10,000 boots) = 20,000,000 > 10,000,000.
    assert_refused(
        &kernel_plan_with("runs = 10000\nwarmup = 2000\nboots = 10000"),
        &Overrides::default(),
        "the schedule is too large",
    );
    // 500 x 10,000 + 10,000 fits.
    let fits = kernel_plan_with("runs = 10000\nwarmup = 500\nboots = 10000");
    plan::parse("p.toml", &fits, &Overrides::default()).unwrap();
}

#[test]
fn durations_are_bounded_and_never_panic() {
    let ov = Overrides::default();
    for (head, want) in [
        (
            "timeout = 1e300",
            "p.toml:2:11: timeout is too large (at most 604800s), got 1e300",
        ),
        (
            "timeout = \"1e300h\"",
            "timeout is too large (at most 604800s)",
        ),
        ("timeout = inf", "timeout is too large"),
        ("timeout = nan", "timeout: duration must be positive"),
        ("timeout = \"8d\"", "timeout: '8d' is not a duration"),
        ("timeout = 604801", "timeout is too large (at most 604800s)"),
        ("timeout = 1e-300", "timeout must be at least 1ms"),
        (
            "monitor_interval = 1e300",
            "p.toml:2:20: monitor_interval is too large (at most 3600s)",
        ),
        (
            "monitor_interval = \"2h\"",
            "monitor_interval is too large (at most 3600s)",
        ),
        (
            "monitor_interval = \"5ms\"",
            "monitor_interval must be at least 10ms",
        ),
    ] {
        assert_refused(&plan_with(head), &ov, want);
    }
    let workload_timeout =
        plan_with("").replace("command = \"true\"", "command = \"true\"\ntimeout = 1e300");
    assert_refused(&workload_timeout, &ov, "p.toml:8:11: timeout is too large");
    let week = plan::parse("p.toml", &plan_with("timeout = \"168h\""), &ov).unwrap();
    assert_eq!(week.workloads[0].timeout.as_secs(), 7 * 24 * 3600);
}

#[test]
fn cli_overrides_have_the_same_limits() {
    let text = plan_with("");
    let ov = |f: &dyn Fn(&mut Overrides)| {
        let mut o = Overrides::default();
        f(&mut o);
        o
    };
    for (o, want) in [
        (
            ov(&|o| o.runs = Some(2_000_000)),
            "--runs is too large (at most 1000000), got 2000000",
        ),
        (
            ov(&|o| o.runs = Some(0)),
            "--runs must be at least 1, got 0",
        ),
        (
            ov(&|o| o.warmup = Some(u32::MAX)),
            "--warmup is too large (at most 1000000), got 4294967295",
        ),
        (
            ov(&|o| {
                o.until_ci = Some(0.01);
                o.max_runs = Some(5_000_000);
            }),
            "--max-runs is too large (at most 1000000), got 5000000",
        ),
        (
            ov(&|o| {
                o.until_ci = Some(0.01);
                o.max_runs = Some(1);
            }),
            "--max-runs must be at least 2, got 1",
        ),
    ] {
        assert_refused(&text, &o, want);
    }
    // --max-runs is what an adaptive schedule may reach: 11 workloads x
    // 1,000,000 is refused although it starts with 10 runs per cell.
    let mut wide = String::from("[[config]]\nname = \"a\"\n");
    for w in 0..11 {
        wide.push_str(&format!(
            "[[workload]]\nname = \"w{w}\"\ncommand = \"true\"\n"
        ));
    }
    let adaptive = ov(&|o| {
        o.until_ci = Some(0.01);
        o.max_runs = Some(1_000_000);
    });
    assert_refused(&wide, &adaptive, "the schedule is too large");
    assert_refused_by_binary(
        &text,
        &["--runs", "2000000"],
        "--runs is too large (at most 1000000)",
    );
    assert_refused_by_binary(
        &text,
        &["--warmup", "4294967295"],
        "--warmup is too large (at most 1000000)",
    );
}

#[test]
fn refused_through_the_binary_with_nothing_on_disk() {
    assert_refused_by_binary(
        &plan_with("runs = 3000000000"),
        &[],
        "p.toml:2:8: runs is too large (at most 1000000)",
    );
    assert_refused_by_binary(
        &plan_with("warmup = 4294967295"),
        &[],
        "p.toml:2:10: warmup is too large",
    );
    assert_refused_by_binary(
        &plan_with("timeout = 1e300"),
        &[],
        "p.toml:2:11: timeout is too large",
    );
}

#[test]
fn builtin_workload_parameters_are_bounded() {
    let builtin = |params: &str| {
        format!(
            "setup = \"exit 1\"\n[[config]]\nname = \"a\"\n[[workload]]\nname = \"w\"\n{params}\n"
        )
    };
    let ov = Overrides::default();
    for (params, want) in [
        (
            "builtin = \"memsweep\"\nparams = { working_set = \"1G\", duration = 1e300 }",
            "memsweep: duration = 1e300 is too large",
        ),
        (
            "builtin = \"memsweep\"\nparams = { working_set = \"1G\", duration = \"1e300h\" }",
            "memsweep: duration = \"1e300h\" is not a duration",
        ),
        (
            "builtin = \"memsweep\"\nparams = { working_set = \"2T\", duration = \"10s\" }",
            "memsweep: working_set is too large (at most 1099511627776 bytes = 1T)",
        ),
        (
            "builtin = \"memsweep\"\nparams = { working_set = \"4G\", block = \"2G\", duration = \"10s\" }",
            "memsweep: block is too large",
        ),
        (
            "builtin = \"memsweep\"\nparams = { working_set = \"1G\", duration = \"8000h\", interval = \"1h\" }",
            "memsweep: duration is too large",
        ),
        (
            "builtin = \"memsweep\"\nparams = { working_set = \"1G\", duration = \"100h\", interval = \"10ms\" }",
            "memsweep: duration / interval is too large (at most 1000000 intervals)",
        ),
        (
            "builtin = \"micro\"\nparams = { samples = 1000000000000 }",
            "micro: samples is too large (at most 1000000)",
        ),
        // 2^62 x 4 wraps around to 0 in 64 bits: must not pass as 0 processes.
        (
            "builtin = \"micro\"\nparams = { semring = { groups = 4611686018427387904, sems = 4 } }",
            "semring would fork too many processes",
        ),
        (
            "builtin = \"transport\"\nparams = { volume_mb = 1152921504606846976 }",
            "transport workload: volume_mb is too large (at most 1000000)",
        ),
        (
            "builtin = \"transport\"\nparams = { buffer_kb = 18014398509481984 }",
            "transport workload: buffer_kb is too large",
        ),
    ] {
        let e = refused(&builtin(params), &ov);
        assert!(e.starts_with("p.toml:6:"), "positioned: {e}");
        assert!(e.contains(want), "want {want:?} in: {e}");
    }
}
