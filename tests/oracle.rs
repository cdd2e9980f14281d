//! The oracle (issue 29, item 5): experiments generated here, every number
//! `report` prints in text, Markdown, CSV, JSON and HTML recomputed from
//! the raw samples in the store by an independent implementation
//! (`tests/reference/oracle.py`, NumPy and SciPy), the formats checked
//! against it and against each other, the HTML's plotted points read back
//! through their axes. A failed check names the format, the experiment,
//! the metric and the two numbers. Deterministic, no root, no VM.

mod common;
#[path = "common/boots.rs"]
mod kernels;
#[path = "oracle/mod.rs"]
mod oracle;

use common::Sandbox;
use sysdelta::metric::{Direction, MetricSpec};
use sysdelta::store::{RunResult, Store};
use sysdelta::workload::MetricSamples;

#[test]
fn the_oracle_checks_itself() {
    if !oracle::ready() {
        return;
    }
    let out = std::process::Command::new(oracle::python().expect("ready"))
        .arg(oracle::script())
        .arg("selftest")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
}

/// A command workload whose metrics span ns to GiB, one of them higher is
/// better; its values follow a counter per config, so every run differs
/// and nothing depends on the machine (wall, user, sys and maxrss do, and
/// are checked as stored).
fn units_plan(sb: &Sandbox) -> std::path::PathBuf {
    let dir = sb.dir.path().display();
    let command = format!(
        "n=$(cat {dir}/c_$K 2>/dev/null || echo 0); n=$((n+1)); echo $n > {dir}/c_$K; \
         echo lat=$((n*100*K+3000)) size=$((n*1048576*K+5000000000)) \
         kb=$((n*7+K*1000)) rate=$((1000+n*K)) tiny=$((n%3+K))"
    );
    let plan = format!(
        r#"seed = 7
runs = 6
[[config]]
name = "base"
env = {{ K = "1" }}
[[config]]
name = "double"
env = {{ K = "2" }}
[[config]]
name = "triple"
env = {{ K = "3" }}
[[workload]]
name = "gen"
command = '{command}'
metrics = [
  {{ name = "lat", regex = 'lat=(?P<value>[0-9]+)', unit = "ns" }},
  {{ name = "size", regex = 'size=(?P<value>[0-9]+)', unit = "B" }},
  {{ name = "kb", regex = 'kb=(?P<value>[0-9]+)', unit = "KiB" }},
  {{ name = "rate", regex = 'rate=(?P<value>[0-9]+)', unit = "ops/s", direction = "higher" }},
  {{ name = "tiny", regex = 'tiny=(?P<value>[0-9]+)', unit = "ns" }},
]
"#
    );
    sb.write("units.toml", &plan)
}

#[test]
fn a_run_with_units_from_ns_to_gib() {
    if !oracle::ready() {
        return;
    }
    let sb = Sandbox::sqlite();
    let plan = units_plan(&sb);
    let out = sb.run(&["run", plan.to_str().unwrap(), "--quiet", "--no-report"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    oracle::assert_none(&oracle::check(&sb, &oracle::last_id(&sb), "units"));
}

/// `ab -i` keeps runs whose command exited non-zero: each is stored with
/// its exit status, and the report says how many.
#[test]
fn ab_keeping_failed_commands() {
    if !oracle::ready() {
        return;
    }
    let sb = Sandbox::sqlite();
    let file = sb.write("haystack", "no needle here\n");
    let cmd = format!("grep -q needle-x {}", file.display());
    let out = sb.run(&[
        "ab", "-i", "--config", "a=", "--config", "b=", "-r", "4", "--quiet", "--", &cmd,
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let id = oracle::last_id(&sb);
    let mut fails = oracle::check(&sb, &id, "ab-i");
    let runs = sb.sql_number("SELECT COUNT(*) FROM runs WHERE warmup = 0");
    let stored = sb.sql_number("SELECT COUNT(*) FROM runs WHERE warmup = 0 AND exit_code = 1");
    if stored != runs {
        fails.push(format!(
            "store: experiment ab-i, grep exit status: runs stored with exit code 1 (grep found nothing): {stored}, expected {runs}"
        ));
    }
    for format in ["text", "markdown", "html", "json"] {
        let text = common::stdout(&sb.run(&["report", &id, "--format", format]));
        let says = text
            .lines()
            .any(|l| l.contains("non-zero") && l.contains(&runs.to_string()));
        if !says {
            fails.push(format!(
                "{format}: experiment ab-i, exit status: no line says the {runs} runs exited non-zero"
            ));
        }
    }
    oracle::assert_none(&fails);
}

/// Go benchmark output from two packages that both have BenchmarkFoo, at
/// two GOMAXPROCS each: four benchmarks, as benchstat counts them.
const GO_OLD: &str = "goos: linux\ngoarch: amd64\npkg: example.com/a\n\
BenchmarkFoo-2   \t 1000\t       100 ns/op\nBenchmarkFoo-2   \t 1000\t       102 ns/op\nBenchmarkFoo-2   \t 1000\t       101 ns/op\n\
BenchmarkFoo-4   \t 1000\t        60 ns/op\nBenchmarkFoo-4   \t 1000\t        61 ns/op\nBenchmarkFoo-4   \t 1000\t        62 ns/op\n\
PASS\npkg: example.com/b\n\
BenchmarkFoo-2   \t 100\t     10000 ns/op\nBenchmarkFoo-2   \t 100\t     10100 ns/op\nBenchmarkFoo-2   \t 100\t     10200 ns/op\n\
BenchmarkFoo-4   \t 100\t      6000 ns/op\nBenchmarkFoo-4   \t 100\t      6100 ns/op\nBenchmarkFoo-4   \t 100\t      6200 ns/op\nPASS\n";

#[test]
fn gobench_keeps_each_benchmarks_identity() {
    if !oracle::ready() {
        return;
    }
    let sb = Sandbox::sqlite();
    let old = sb.write("old.txt", GO_OLD);
    let new = sb.write("new.txt", &GO_OLD.replace(" ns/op", "0 ns/op"));
    let out = sb.run(&[
        "import",
        "gobench",
        old.to_str().unwrap(),
        new.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let id = oracle::last_id(&sb);
    let mut fails = oracle::check(&sb, &id, "gobench");
    fails.extend(oracle::run_script(&[
        "gobench",
        "--store",
        sb.store().to_str().unwrap(),
        "--id",
        &id,
        "--name",
        "gobench",
        "--dir",
        sb.path("oracle-gobench").to_str().unwrap(),
        "--files",
        old.to_str().unwrap(),
        new.to_str().unwrap(),
    ]));
    oracle::assert_none(&fails);
}

#[test]
fn lmbench_results_imported() {
    if !oracle::ready() {
        return;
    }
    let sb = Sandbox::sqlite();
    let dir = format!(
        "{}/tests/fixtures/lmbench/x86_64-linux-gnu",
        env!("CARGO_MANIFEST_DIR")
    );
    let files: Vec<String> = (0..3).map(|i| format!("{dir}/bench1.{i}")).collect();
    let mut args = vec!["import", "lmbench"];
    args.extend(files.iter().map(String::as_str));
    let out = sb.run(&args);
    assert!(out.status.success(), "{}", common::stderr(&out));
    oracle::assert_none(&oracle::check(&sb, &oracle::last_id(&sb), "lmbench"));
}

/// Micro-suite metrics as the runner stores them (microseconds), from a
/// fork of ~22 ms to a null call of ~40 ns: the LMbench summary tables,
/// headed "times in microseconds", must print them so.
#[test]
fn micro_summary_in_microseconds() {
    if !oracle::ready() {
        return;
    }
    let sb = Sandbox::sqlite();
    let store = Store::open(&sb.store(), true).unwrap();
    let metrics = [
        MetricSpec::new("proc.fork_exit", "us", Direction::Lower),
        MetricSpec::new("proc.null_call", "us", Direction::Lower),
    ];
    let exp = common::create_experiment(&store, "micro", &["old", "new"], 5, &metrics);
    let mut seq = 0;
    for block in 0..5u32 {
        for (c, config) in ["old", "new"].iter().enumerate() {
            let k = 1.0 + 0.01 * f64::from(block) + 0.1 * c as f64;
            let samples = [
                MetricSamples {
                    metric: "proc.fork_exit".into(),
                    values: vec![22204.0 * k, 22300.0 * k],
                },
                MetricSamples {
                    metric: "proc.null_call".into(),
                    values: vec![0.040 * k],
                },
            ];
            let rec = common::run_record(exp, block, seq, config, RunResult::Ok(&samples));
            store.record_run(&rec).unwrap();
            seq += 1;
        }
    }
    store
        .set_status(exp, sysdelta::status::ExperimentStatus::Complete)
        .unwrap();
    drop(store);
    oracle::assert_none(&oracle::check(&sb, &exp.to_string(), "micro"));
}

/// Kernel configs: runs grouped by boot, one value per boot (the mean of
/// its runs), as the runner stores them, without a VM.
#[test]
fn boots_are_the_unit() {
    if !oracle::ready() {
        return;
    }
    let sb = Sandbox::sqlite();
    let shape = kernels::Shape {
        boots: 6,
        runs: 3,
        sd_boot: 0.05,
        sd_run: 0.01,
        accel: "TCG",
        seed: 3,
    };
    let ks = [
        kernels::Kernel {
            name: "k1",
            level: 0.002,
        },
        kernels::Kernel {
            name: "k2",
            level: 0.0025,
        },
    ];
    let (store, exp) = kernels::store_with(&sb.store(), &ks, &shape);
    drop(store);
    oracle::assert_none(&oracle::check(&sb, &exp.to_string(), "boots"));
}

/// One host's part of a fleet run, as `sysdelta fleet` stores it: `wall`
/// around 10 ms in `base`, `effect` more in `patched`, with a fixed
/// pseudo-random spread.
fn fleet_host(store: &Store, fleet: i64, host: &str, effect: f64, seed: u64) {
    let fp = std::collections::BTreeMap::new();
    let on = common::On {
        label: Some("fleet-1"),
        host: &format!("node-{host}"),
        fingerprint: &fp,
    };
    let spec = [MetricSpec::new("wall", "s", Direction::Lower)];
    let exp = common::create_experiment_on(store, "fleet", &on, &["base", "patched"], 10, &spec);
    let mut noise = kernels::Noise::new(seed);
    for block in 0..10u32 {
        for (seq, config) in ["base", "patched"].into_iter().enumerate() {
            let level = if config == "patched" {
                1.0 + effect
            } else {
                1.0
            };
            let samples = [MetricSamples {
                metric: "wall".into(),
                values: vec![0.010 * level * (0.99 + 0.02 * noise.uniform())],
            }];
            let rec = common::run_record(exp, block, seq as u32, config, RunResult::Ok(&samples));
            store.record_run(&rec).unwrap();
        }
    }
    store
        .set_status(exp, sysdelta::status::ExperimentStatus::Complete)
        .unwrap();
    store.set_fleet(exp, fleet, host).unwrap();
}

/// A fleet of three hosts: each host's row recomputed from its samples
/// and checked against that host's own report, the hosts pooled again
/// (DerSimonian-Laird, HKSJ) from the rows, in text, Markdown and JSON.
#[test]
fn a_fleet_of_three_hosts() {
    if !oracle::ready() {
        return;
    }
    let sb = Sandbox::sqlite();
    let store = Store::open(&sb.store(), true).unwrap();
    let fleet = store
        .create_fleet(&sysdelta::store::fleet::NewFleet {
            name: "fleet",
            plan_source: "test",
            plan_text: "",
            overrides: "{}",
            hosts: "[]",
        })
        .unwrap();
    for (host, effect, seed) in [("a", 0.05, 1), ("b", 0.04, 2), ("c", 0.35, 3)] {
        fleet_host(&store, fleet, host, effect, seed);
    }
    drop(store);
    let fails = oracle::check_fleet(&sb, fleet, "fleet");
    oracle::assert_none(&fails);
}

/// An LMbench result whose value is not a number sysdelta can take (NaN,
/// infinite, negative) is refused as bad input, as the hyperfine and Go
/// importers refuse theirs: not dropped while the rest is imported.
#[test]
fn lmbench_values_that_are_no_numbers_are_refused() {
    let sb = Sandbox::sqlite();
    let good = std::fs::read_to_string(format!(
        "{}/tests/fixtures/lmbench/x86_64-linux-gnu/bench1.0",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let mut fails = Vec::new();
    for bad in ["nan", "inf", "-0.0433"] {
        let text = good.replace(
            "Simple syscall: 0.0433 microseconds",
            &format!("Simple syscall: {bad} microseconds"),
        );
        let file = sb.write("bench1.0", &text);
        let out = sb.run(&["import", "lmbench", file.to_str().unwrap()]);
        let code = out.status.code().unwrap_or(-1);
        if code != 2 {
            fails.push(format!(
                "import: experiment lmbench-{bad}, Simple syscall: exit status printed {code} \
                 (imported as experiment {}), expected 2 (bad input, nothing stored)",
                common::stdout(&out).trim()
            ));
        }
    }
    oracle::assert_none(&fails);
}
