//! Every command that keeps or reads experiments works the same on an
//! SQLite store and on a team's PostgreSQL one: run, import, list, report
//! (every format), compare, history, plan-runs, env. Runs twice, once per
//! store.

mod common;
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
    // The slow config's 10 ms shows, in both stores.
    let delta = comparison(&json, "w", "wall", "slow")["delta_mean_pct"]
        .as_f64()
        .unwrap();
    assert!(delta > 20.0, "slow is slower: {delta}%");
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
