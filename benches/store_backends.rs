//! Runs per second into a PostgreSQL store against SQLite, measured side
//! by side in the same session, from one machine and from three at once,
//! and what PostgreSQL adds to each run (target: under 1 ms).
//!
//! - **store**: the store alone, through the library, as the runner uses
//!   it: an experiment's runs recorded one by one (3 metrics each) with
//!   the run log open and folded as it falls due, then closed (every run
//!   in the tables); and, for the worst case, each run committed on its
//!   own (no run log).
//! - **run**: `sysdelta run` end to end, plans of 2 configs x 100 and x 400
//!   runs of `true`; from one machine, and from three at once (three
//!   processes, each with its own state directory: three machines writing
//!   one team store, against three machines each with its own SQLite
//!   file). The cost per run is the slope between the two sizes, apart
//!   from what a command pays once (connecting, checking the schema).
//!
//! PostgreSQL is a throwaway server of the bench's own on a Unix socket
//! (tests/common/pg.rs; root and the PostgreSQL 15 binaries needed, else
//! the bench says why and stops), with PostgreSQL's default durability
//! (`fsync`, `synchronous_commit` and `full_page_writes` on): each commit
//! waits for the disk, as on a team's server. The run path waits for none
//! of them: a background writer sends the run log's folds and the state
//! writes (`store::writer`). Rounds alternate the backends (A B, B A,
//! ...); figures are medians over rounds with min and max, and the
//! difference is taken pair by pair. Run: `cargo bench --bench
//! store_backends`.

#[path = "../tests/common/pg.rs"]
#[allow(dead_code)]
mod pg;
#[path = "../tests/common/procs.rs"]
#[allow(dead_code)]
mod procs;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use sysdelta::metric::{Direction, MetricSpec};
use sysdelta::plan::{Order, Overrides};
use sysdelta::store::{NewExperiment, RunRecord, RunResult, Store};
use sysdelta::workload::MetricSamples;

/// What tests/common/pg.rs asks of the tests' module (`super::is_root`).
fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

const ROUNDS: usize = 5;
const STORE_RUNS: u32 = 3000;
const CLI_RUNS: [u32; 2] = [100, 400];

fn median_min_max(v: &[f64]) -> (f64, f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    (s[s.len() / 2], s[0], s[s.len() - 1])
}

/// Record `STORE_RUNS` runs into a new experiment of the store at `path`;
/// seconds per run. `logged`: through the run log, as `sysdelta run`.
fn store_per_run(path: &Path, logged: bool) -> f64 {
    let store = Store::open(path, true).unwrap();
    let id = store
        .create_experiment(&NewExperiment {
            name: "bench",
            label: None,
            plan_source: "bench",
            plan_text: "",
            overrides: &Overrides::default(),
            host: "bench",
            fingerprint: &BTreeMap::new(),
            seed: 1,
            order: Order::RandomBlocks,
            runs: STORE_RUNS,
            warmup: 0,
            baseline: "a",
            configs: vec!["a".into()],
            workloads: vec!["w".into()],
        })
        .unwrap();
    let specs: Vec<MetricSpec> = ["wall", "user", "sys"]
        .iter()
        .map(|m| MetricSpec::new(m, "s", Direction::Lower))
        .collect();
    store.declare_metrics(id, "w", &specs).unwrap();
    let start = Instant::now();
    if logged {
        store.log_runs().unwrap();
    }
    for block in 0..STORE_RUNS {
        let samples: Vec<MetricSamples> = specs
            .iter()
            .map(|m| MetricSamples {
                metric: m.name.clone(),
                values: vec![0.001 * f64::from(block % 7 + 1)],
            })
            .collect();
        store
            .record_run(&RunRecord {
                experiment_id: id,
                block,
                seq: 0,
                config: "a",
                workload: "w",
                warmup: false,
                started_at: 0.0,
                result: RunResult::Ok(&samples),
                series: &[],
                profile: &[],
            })
            .unwrap();
    }
    store.close_run_log().unwrap();
    let per_run = start.elapsed().as_secs_f64() / f64::from(STORE_RUNS);
    assert_eq!(store.load(id).unwrap().runs.len(), STORE_RUNS as usize);
    per_run
}

/// `machines` `sysdelta run`s of the plan at once, each its own state and
/// run directory, into `store` (a URL, or a file name each machine makes
/// in its own directory); wall seconds until the last ends.
fn cli_runs(dir: &Path, plan: &Path, store: Option<&str>, machines: usize, round: usize) -> f64 {
    let start = Instant::now();
    let children: Vec<_> = (0..machines)
        .map(|m| {
            let home = dir.join(format!("r{round}-m{m}"));
            std::fs::create_dir_all(&home).unwrap();
            let store =
                store.map_or_else(|| home.join("s.db").display().to_string(), str::to_string);
            Command::new(env!("CARGO_BIN_EXE_sysdelta"))
                .args([
                    "--store",
                    &store,
                    "run",
                    plan.to_str().unwrap(),
                    "--quiet",
                    "--no-report",
                ])
                .env("SYSDELTA_STATE_DIR", home.join("state"))
                .env("SYSDELTA_RUN_DIR", home.join("run"))
                .current_dir(&home)
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    start.elapsed().as_secs_f64()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    // PostgreSQL's default durability, as a team's server runs: every
    // commit waits for its WAL to reach the disk.
    let Some(cluster) = pg::PgCluster::start_with(pg::Options {
        durable: true,
        tcp: false,
    }) else {
        println!("store_backends: no PostgreSQL server could be started (see the SKIP line above)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    // --- the store alone ---
    let (mut sq_log, mut pg_log, mut sq_tx, mut pg_tx, mut diff_log) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let url = cluster.create_database(&format!("lib{round}"));
        let anchor: PathBuf = sysdelta::store::pg::anchor_in(&url, &state).unwrap();
        let file = dir.path().join(format!("lib{round}.db"));
        let file_tx = dir.path().join(format!("tx{round}.db"));
        let url_tx = cluster.create_database(&format!("tx{round}"));
        let anchor_tx = sysdelta::store::pg::anchor_in(&url_tx, &state).unwrap();
        let (s, p) = if round % 2 == 0 {
            let s = store_per_run(&file, true);
            (s, store_per_run(&anchor, true))
        } else {
            let p = store_per_run(&anchor, true);
            (store_per_run(&file, true), p)
        };
        sq_log.push(s);
        pg_log.push(p);
        diff_log.push(p - s);
        sq_tx.push(store_per_run(&file_tx, false));
        pg_tx.push(store_per_run(&anchor_tx, false));
    }
    // --- sysdelta run, end to end ---
    let plans: Vec<PathBuf> = CLI_RUNS
        .iter()
        .map(|runs| {
            let plan = dir.path().join(format!("plan{runs}.toml"));
            std::fs::write(
                &plan,
                format!(
                    "runs = {runs}\nseed = 1\n[[config]]\nname = \"a\"\n[[config]]\nname = \"b\"\n\
                     [[workload]]\nname = \"w\"\ncommand = \"true\"\nshell = \"none\"\n"
                ),
            )
            .unwrap();
            plan
        })
        .collect();
    let (small, large) = (f64::from(2 * CLI_RUNS[0]), f64::from(2 * CLI_RUNS[1]));
    let mut rows = Vec::new();
    let mut db = 0;
    for machines in [1usize, 3] {
        let (mut sq, mut pgs, mut diff, mut once) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for round in 0..ROUNDS {
            // Wall seconds of (small plan, large plan) per backend.
            let mut time = |pg: bool| -> (f64, f64) {
                let mut t = [0.0; 2];
                for (i, plan) in plans.iter().enumerate() {
                    db += 1;
                    let url = pg.then(|| cluster.create_database(&format!("cli{db}")));
                    t[i] = cli_runs(dir.path(), plan, url.as_deref(), machines, db);
                }
                (t[0], t[1])
            };
            let (s, p) = if round % 2 == 0 {
                let s = time(false);
                (s, time(true))
            } else {
                let p = time(true);
                (time(false), p)
            };
            let slope = |(a, b): (f64, f64)| (b - a) / (large - small);
            sq.push(machines as f64 / slope(s));
            pgs.push(machines as f64 / slope(p));
            // Per run, on each machine: what PostgreSQL added to its wall.
            diff.push(slope(p) - slope(s));
            // Paid once per command: the wall beyond its runs.
            once.push((p.0 - slope(p) * small) - (s.0 - slope(s) * small));
        }
        rows.push((machines, sq, pgs, diff, once));
    }

    let us = |v: &[f64]| {
        let (m, lo, hi) = median_min_max(v);
        format!("{:8.1} us ({:.1}-{:.1})", m * 1e6, lo * 1e6, hi * 1e6)
    };
    println!("store_backends: {ROUNDS} rounds, A B alternating; medians (min-max)");
    println!("the store alone, {STORE_RUNS} runs x 3 metrics, per run:");
    println!("  SQLite, run log              {}", us(&sq_log));
    println!("  PostgreSQL, run log          {}", us(&pg_log));
    println!("  PostgreSQL - SQLite          {}", us(&diff_log));
    println!("  SQLite, a commit per run     {}", us(&sq_tx));
    println!("  PostgreSQL, a commit per run {}", us(&pg_tx));
    println!(
        "sysdelta run, 2 configs x {} and x {} runs of `true` per machine (slope):",
        CLI_RUNS[0], CLI_RUNS[1]
    );
    let mut worst = 0.0f64;
    for (machines, sq, pgs, diff, once) in &rows {
        let rate = |v: &[f64]| {
            let (m, lo, hi) = median_min_max(v);
            format!("{m:7.0} runs/s ({lo:.0}-{hi:.0})")
        };
        println!(
            "  {machines} machine(s): SQLite {}  PostgreSQL {}",
            rate(sq),
            rate(pgs)
        );
        let (d, lo, hi) = median_min_max(diff);
        println!(
            "    PostgreSQL's wall per run on each machine, minus SQLite's: {:+.3} ms ({:+.3} to {:+.3})",
            d * 1e3,
            lo * 1e3,
            hi * 1e3
        );
        worst = worst.max(d);
        let (o, lo, hi) = median_min_max(once);
        println!(
            "    paid once per command (connect, schema check), PostgreSQL minus SQLite: {:+.0} ms ({:+.0} to {:+.0})",
            o * 1e3,
            lo * 1e3,
            hi * 1e3
        );
    }
    let lib = median_min_max(&pg_log).0;
    println!(
        "per-run cost of PostgreSQL (target < 1 ms): store {:.3} ms, run {:+.3} ms: {}",
        lib * 1e3,
        worst * 1e3,
        if lib < 1e-3 && worst < 1e-3 {
            "met"
        } else {
            "NOT met"
        }
    );
}
