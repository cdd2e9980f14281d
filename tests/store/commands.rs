//! Every command that keeps or reads experiments works the same on an
//! SQLite store and on a team's PostgreSQL one: run, import, list, report
//! (every format), compare, history, plan-runs, env. Runs twice, once per
//! store.

use crate::common;
use common::*;

fn ok(sb: &Sandbox, args: &[&str]) -> String {
    let out = sb.run(args);
    assert!(
        out.status.success(),
        "{} on {}: {}",
        args.join(" "),
        sb.backend(),
        stderr(&out)
    );
    stdout(&out)
}

both_stores! {
fn every_command_reads_what_run_and_import_stored(sb) {
    let plan = sb.write(
        "plan.toml",
        "runs = 6\nseed = 9\n[[config]]\nname = \"base\"\n[[config]]\nname = \"slow\"\n\
         setup = \"export EXTRA=0.01\"\n\
         [[workload]]\nname = \"w\"\ncommand = \"sleep 0.01; sleep ${EXTRA:-0}\"\n",
    );
    let p = plan.to_str().unwrap();
    ok(sb, &["run", p, "--quiet", "--no-report", "--label", "kernel-a"]);
    ok(sb, &["run", p, "--quiet", "--no-report", "--label", "kernel-b"]);
    let go = sb.write(
        "go.txt",
        "goos: linux\nBenchmarkJoin-2  20000  58.3 ns/op\nBenchmarkJoin-2  20000  59.1 ns/op\n",
    );
    ok(sb, &["import", "gobench", go.to_str().unwrap()]);

    let list = ok(sb, &["list"]);
    assert_eq!(list.lines().count(), 4, "a header and three experiments: {list}");
    assert!(list.contains("kernel-a") && list.contains("kernel-b"), "{list}");

    let text = ok(sb, &["report", "kernel-b"]);
    assert!(text.contains("slow"), "{text}");
    let json = sb.json_report("1");
    assert_eq!(json["experiment"]["status"], "complete");
    assert_eq!(json["runs"].as_array().unwrap().len(), 12);
    // The slow config's export reached its command: sleep never returns
    // early, so each of its runs lasted both sleeps. (Not "slow is 20%
    // slower": a loaded machine stretches a 10 ms sleep to 50-70 ms at
    // random, and the means of 6 runs then came out 19% apart.)
    let wall = |config: &str| -> Vec<f64> {
        json["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["workload"] == "w" && r["config"] == config)
            .map(|r| r["samples"]["wall"][0].as_f64().unwrap())
            .collect()
    };
    let (base, slow) = (wall("base"), wall("slow"));
    assert!(slow.iter().all(|&v| v >= 0.02), "slow runs: {slow:?}");
    // And the report's delta is the one those stored runs give, in both
    // stores.
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let expected = (mean(&slow) / mean(&base) - 1.0) * 100.0;
    let delta = comparison(&json, "w", "wall", "slow")["delta_mean_pct"]
        .as_f64()
        .unwrap();
    assert!(
        (delta - expected).abs() < 1e-9 * expected.abs().max(1.0),
        "delta {delta}% where the stored runs give {expected}% ({base:?} against {slow:?})"
    );
    for format in ["markdown", "csv", "html"] {
        ok(sb, &["report", "1", "--format", format]);
    }

    let cmp = ok(sb, &["compare", "kernel-a:slow", "kernel-b:slow"]);
    assert!(cmp.contains("kernel-a") && cmp.contains("kernel-b"), "{cmp}");
    let hist = ok(sb, &["history", "w/wall", "--label-prefix", "kernel-"]);
    assert!(hist.contains("kernel-a") && hist.contains("kernel-b"), "{hist}");
    let pr = ok(sb, &["plan-runs", "kernel-a"]);
    assert!(pr.contains("wall"), "{pr}");
    ok(sb, &["env", "1"]);
    let out = sb.run(&["run", "--resume", "1", "--trust-stored-plan", "--quiet", "--no-report"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("experiment 1 is already complete"));
}
}

both_stores! {
fn a_row_another_writer_made_nonsense_is_bad_input_naming_its_column(sb) {
    // Whoever can write a store can put anything in it: each command that
    // reads such a row says so in one line (exit 2), naming the column,
    // and changes nothing.
    let plan = sb.write(
        "plan.toml",
        "runs = 2\n[[config]]\nname = \"a\"\n[[config]]\nname = \"b\"\n[[workload]]\nname = \"w\"\ncommand = \"true\"\n",
    );
    ok(sb, &["run", plan.to_str().unwrap(), "--quiet", "--no-report"]);
    let exec = |sql: &str| match &sb.pg {
        None => rusqlite::Connection::open(sb.store()).unwrap().execute_batch(sql).unwrap(),
        Some(c) => drop(c.psql(sql)),
    };
    for (sql, column) in [
        ("UPDATE experiments SET status = 'weird'", "'status'"),
        ("UPDATE experiments SET status = 'complete', runs_per_cell = -5", "'runs_per_cell'"),
    ] {
        exec(sql);
        let runs = sb.sql_number("SELECT COUNT(*) FROM runs");
        for args in [&["list"][..], &["report", "1"]] {
            let out = sb.run(args);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{args:?} on {}: {err}", sb.backend());
            assert_eq!(err.trim().lines().count(), 1, "{err}");
            assert!(err.contains("damaged store") && err.contains(column), "{err}");
        }
        assert_eq!(sb.sql_number("SELECT COUNT(*) FROM runs"), runs);
    }
    // A metric whose direction is neither: not read as "lower".
    exec("UPDATE experiments SET runs_per_cell = 2; UPDATE metrics SET direction = 'sideways'");
    let out = sb.run(&["report", "1"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{}: {err}", sb.backend());
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("damaged store") && err.contains("'direction'"), "{err}");
    exec("UPDATE metrics SET direction = 'lower'");
    // A metric's name that is not text at all (SQLite keeps a blob as it
    // is in a TEXT column; PostgreSQL's text column cannot hold one).
    if sb.pg.is_none() {
        exec("UPDATE samples SET metric = X'FF00' || metric");
        let out = sb.run(&["report", "1"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("damaged store") && err.contains("'metric'"), "{err}");
    }
}
}
