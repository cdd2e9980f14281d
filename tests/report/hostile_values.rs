//! Values another writer of the store chose, which no run of sysdelta
//! makes: a name longer than any column, a sample near f64::MAX, a metric
//! whose runs straddle zero, an impossible profile count. Each reading
//! command ends (no exit 101, no endless loop) and prints what it can, or
//! says in one line what is wrong (exit 2). SQLite stores: the values are
//! written with rusqlite, as anyone who can write the file would.

use crate::common;

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::{stderr, Sandbox};

/// A store of 6 runs a config of two configs, `base` and `other`, whose
/// workload `wl` reports a `score` beside the host's metrics.
fn measured(sb: &Sandbox) {
    let plan = sb.write(
        "plan.toml",
        r#"runs = 6
[[config]]
name = "base"
[[config]]
name = "other"
env = { X = "1" }
[[workload]]
name = "wl"
command = "echo score 12.5"
metrics = [{ name = "score", regex = 'score (?P<value>[0-9.]+)', unit = "pts", direction = "higher" }]
"#,
    );
    let out = sb.run(&[
        "run",
        plan.to_str().unwrap(),
        "--quiet",
        "--no-report",
        "--label",
        "lab",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

fn sql(sb: &Sandbox, sql: &str) {
    rusqlite::Connection::open(sb.store())
        .unwrap()
        .execute_batch(sql)
        .unwrap();
}

/// `args` run to its end, killed (and the test failed) only if it runs
/// for minutes: a bound on a hang, far above what any of these takes.
fn ends(sb: &Sandbox, args: &[&str]) -> Output {
    let mut child = sb
        .command()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    // Read both pipes on threads, so a large report cannot block the child.
    fn reader(mut r: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    }
    let o = reader(child.stdout.take().unwrap());
    let e = reader(child.stderr.take().unwrap());
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} never ended");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
    }
}

#[test]
fn a_name_too_long_for_any_column_is_printed_not_a_crash() {
    let sb = Sandbox::sqlite();
    measured(&sb);
    // 70,000 characters: `format!` pads to at most 65,535.
    let long = "h".repeat(70_000);
    sql(
        &sb,
        &format!(
            "UPDATE experiments SET host = '{long}', label = '{long}';
             UPDATE configs SET name = '{long}' WHERE name = 'other';
             UPDATE runs SET config = '{long}' WHERE config = 'other';
             INSERT INTO profiles SELECT id, 'sym', 1, 10 FROM runs;"
        ),
    );
    for args in [
        &["list"][..],
        &["report", "1"],
        &["report", "1", "--format", "benchstat"],
        &["report", "1", "--format", "markdown"],
        &["report", "1", "--format", "html"],
        &["plan-runs", "1"],
    ] {
        let out = ends(&sb, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(&long[..1000]),
            "{args:?} prints the name"
        );
    }
}

#[test]
fn a_sample_near_the_largest_number_ends_every_report() {
    let sb = Sandbox::sqlite();
    measured(&sb);
    sql(
        &sb,
        "UPDATE samples SET value = 1.7e308 WHERE metric = 'score'
         AND run_id = (SELECT MIN(id) FROM runs WHERE config = 'base' AND warmup = 0)",
    );
    for args in [
        &["report", "1", "--format", "html"][..],
        &["report", "1", "--detail", "--trim", "1"],
        &["plan-runs", "1"],
        &[
            "history",
            "--label-prefix",
            "lab",
            "wl/score",
            "--format",
            "html",
        ],
    ] {
        let out = ends(&sb, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn a_metric_whose_runs_straddle_zero_ends_the_run_planners() {
    let sb = Sandbox::sqlite();
    measured(&sb);
    // The baseline's wall times made negative, 0.99 of what they were:
    // the pooled mean near zero, the CoV in the hundreds of percent, so
    // the planners weigh millions of runs (their t quantiles at such
    // degrees of freedom once took minutes each) or more.
    sql(
        &sb,
        "UPDATE samples SET value = -0.99 * value WHERE metric = 'wall'
         AND run_id IN (SELECT id FROM runs WHERE config = 'base')",
    );
    for args in [&["report", "1", "--trim", "1"][..], &["plan-runs", "1"]] {
        let out = ends(&sb, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn a_profile_count_no_profiler_makes_is_bad_input_naming_its_column() {
    let sb = Sandbox::sqlite();
    measured(&sb);
    let runs = sb.sql_number("SELECT COUNT(*) FROM runs");
    // A negative count; and two counts whose sum no integer holds.
    for (count, runs_with_it) in [("-300", 1), ("9223372036854775807", 2)] {
        sql(
            &sb,
            &format!(
                "DELETE FROM profiles;
                 INSERT INTO profiles SELECT id, 'sym', 1, {count} FROM runs
                 WHERE config = 'base' AND warmup = 0 LIMIT {runs_with_it}"
            ),
        );
        let out = ends(&sb, &["report", "1"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{count}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains("damaged store") && err.contains("'samples'"),
            "{err}"
        );
    }
    assert_eq!(sb.sql_number("SELECT COUNT(*) FROM runs"), runs);
}
