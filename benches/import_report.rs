//! Importing Go benchmark output and reporting on it, against benchstat on
//! the same files, measured side by side in the same run.
//!
//! The input is what a Go user hands benchstat: two files (old and new) of
//! 100 benchmarks x 30 samples each, `-count 30` interleaved as `go test`
//! prints them, with a 2% shift and 2% noise (seeded, so every run of the
//! bench reads the same bytes).
//!
//! - **sysdelta**: `sysdelta import gobench old new` into a fresh store,
//!   then `sysdelta report --last`, two processes from exec to exit, timed
//!   apart and together; and `report --format benchstat` (benchstat's
//!   layout: the same table benchstat prints, so it computes no bootstrap
//!   interval of the mean, which it does not show), timed, with each
//!   report's length in lines beside benchstat's. The same again into a
//!   store that already holds an experiment (a CI job's, from its second
//!   commit on), which skips making the store.
//! - **one process**: `sysdelta import gobench old new --report --format
//!   benchstat`, which stores the runs and prints their report (fresh
//!   store, existing store), and the same with `--no-store`, which keeps
//!   nothing: benchstat's own job.
//! - **benchstat**: `benchstat old new`, one process (`go install
//!   golang.org/x/perf/cmd/benchstat@latest`; looked up in PATH, then in
//!   `~/go/bin`). Without it the bench says so and times sysdelta alone.
//!
//! Rounds alternate the two (A B A B, the order reversed every other
//! round); figures are medians over rounds with min and max, and the ratio
//! is taken pair by pair. Run: `cargo bench --bench import_report`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const BENCHMARKS: usize = 100;
const COUNT: usize = 30;
const ROUNDS: usize = 15;

/// Go benchmark output: `COUNT` passes over `BENCHMARKS` benchmarks, each
/// value `scale` x its base with about 2% Gaussian-ish noise.
fn go_output(scale: f64, seed: u64) -> String {
    let mut x = seed | 1;
    let mut uniform = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut s =
        String::from("goos: linux\ngoarch: amd64\npkg: example.com/bench\ncpu: bench CPU\n");
    for _ in 0..COUNT {
        for b in 0..BENCHMARKS {
            // Sum of 4 uniforms: close enough to normal for noise.
            let n: f64 = (0..4).map(|_| uniform()).sum::<f64>() - 2.0;
            let v = 1000.0 * (b + 1) as f64 * scale * (1.0 + 0.035 * n);
            s.push_str(&format!(
                "BenchmarkThing{b}-2   \t 1000000\t {v:.1} ns/op\n"
            ));
        }
    }
    s.push_str("PASS\nok  \texample.com/bench\t1.000s\n");
    s
}

fn benchstat() -> Option<PathBuf> {
    let in_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("benchstat"))
            .find(|p| p.is_file())
    });
    in_path.or_else(|| {
        let p = PathBuf::from(std::env::var_os("HOME")?).join("go/bin/benchstat");
        p.is_file().then_some(p)
    })
}

fn timed(cmd: &mut Command) -> f64 {
    let t = Instant::now();
    let out = cmd.stdout(Stdio::piped()).output().unwrap();
    let s = t.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.stdout.is_empty() || !out.stderr.is_empty());
    s
}

/// The store `dir/bench.db` made afresh: absent (`template` None) or a
/// copy of `template`, before any clock starts.
fn fresh_store(dir: &Path, template: Option<&Path>) -> PathBuf {
    let store = dir.join("bench.db");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", store.display()));
    }
    if let Some(t) = template {
        std::fs::copy(t, &store).unwrap();
    }
    store
}

/// `import --report --format benchstat` seconds: one process that stores
/// the files (into `fresh_store(dir, template)`) and prints their report;
/// with `keep` false, `--no-store`, which keeps nothing.
fn one_process(dir: &Path, old: &Path, new: &Path, template: Option<&Path>, keep: bool) -> f64 {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sysdelta"));
    cmd.args(["import", "gobench"])
        .args([old, new])
        .args(["--report", "--format", "benchstat"]);
    match keep {
        true => cmd.arg("--store").arg(fresh_store(dir, template)),
        // Takes no --store, and reads no SYSDELTA_STORE.
        false => cmd.arg("--no-store"),
    };
    timed(&mut cmd)
}

/// (import, report, report in benchstat's layout) seconds, into a fresh
/// store (`template` None: the first import, which makes the store) or
/// into a copy of `template` (a store that already holds an experiment,
/// as a CI job's does from its second commit on; copied before the clock
/// starts).
fn sysdelta(dir: &Path, old: &Path, new: &Path, template: Option<&Path>) -> (f64, f64, f64) {
    let store = fresh_store(dir, template);
    let bin = env!("CARGO_BIN_EXE_sysdelta");
    let import = timed(
        Command::new(bin)
            .args(["import", "gobench"])
            .arg(old)
            .arg(new)
            .arg("--store")
            .arg(&store),
    );
    let report = timed(
        Command::new(bin)
            .args(["report", "--last", "--store"])
            .arg(&store),
    );
    let layout = timed(
        Command::new(bin)
            .args(["report", "--last", "--format", "benchstat", "--store"])
            .arg(&store),
    );
    (import, report, layout)
}

/// Lines `cmd` prints.
fn lines(cmd: &mut Command) -> usize {
    let out = cmd.output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().count()
}

fn stats(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

/// Each round's seconds: sysdelta's import, report and benchstat-layout
/// report into a fresh store, the same into an existing one, and the peer's.
#[derive(Default)]
struct Rounds {
    import: Vec<f64>,
    report: Vec<f64>,
    layout: Vec<f64>,
    import_existing: Vec<f64>,
    layout_existing: Vec<f64>,
    /// `import --report --format benchstat`: fresh store, existing store,
    /// `--no-store`.
    one: Vec<f64>,
    one_existing: Vec<f64>,
    one_unstored: Vec<f64>,
    peer: Vec<f64>,
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.txt");
    let new = dir.path().join("new.txt");
    std::fs::write(&old, go_output(1.0, 0x5eed)).unwrap();
    std::fs::write(&new, go_output(1.02, 0xfeed)).unwrap();
    // The existing store: one import of the same files already in it.
    let template = dir.path().join("template.db");
    let made = Command::new(env!("CARGO_BIN_EXE_sysdelta"))
        .args(["import", "gobench"])
        .args([&old, &new])
        .arg("--store")
        .arg(&template)
        .output()
        .unwrap();
    assert!(made.status.success());
    let peer = benchstat();
    if peer.is_none() {
        println!("benchstat not found (go install golang.org/x/perf/cmd/benchstat@latest): timing sysdelta alone");
    }
    let mut r = Rounds::default();
    for round in 0..ROUNDS {
        let run_peer = || {
            peer.as_ref()
                .map(|b| timed(Command::new(b).arg(&old).arg(&new)))
        };
        let ours = || {
            let fresh = sysdelta(dir.path(), &old, &new, None);
            let existing = sysdelta(dir.path(), &old, &new, Some(&template));
            let one = [
                one_process(dir.path(), &old, &new, None, true),
                one_process(dir.path(), &old, &new, Some(&template), true),
                one_process(dir.path(), &old, &new, None, false),
            ];
            (fresh, existing, one)
        };
        let (p, ((i, rep, l), (ie, _, le), one)) = if round % 2 == 0 {
            let s = ours();
            (run_peer(), s)
        } else {
            let p = run_peer();
            (p, ours())
        };
        r.import.push(i);
        r.report.push(rep);
        r.layout.push(l);
        r.import_existing.push(ie);
        r.layout_existing.push(le);
        r.one.push(one[0]);
        r.one_existing.push(one[1]);
        r.one_unstored.push(one[2]);
        if let Some(p) = p {
            r.peer.push(p);
        }
    }
    println!(
        "{BENCHMARKS} Go benchmarks x {COUNT} samples x 2 files, {ROUNDS} rounds A B A B: median (min-max)"
    );
    let line = |name: &str, v: Vec<f64>| {
        let (m, lo, hi) = stats(v);
        println!("  {name:<44} {m:.4} s  ({lo:.4}-{hi:.4})");
    };
    let sum = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x + y).collect::<Vec<f64>>();
    line("sysdelta import (fresh store)", r.import.clone());
    line("sysdelta report (target < 0.5 s)", r.report.clone());
    line("sysdelta report --format benchstat", r.layout.clone());
    line("sysdelta import + report", sum(&r.import, &r.report));
    line(
        "sysdelta import + --format benchstat",
        sum(&r.import, &r.layout),
    );
    line(
        "  the same into an existing store",
        sum(&r.import_existing, &r.layout_existing),
    );
    line("import --report --format benchstat", r.one.clone());
    line("  the same into an existing store", r.one_existing.clone());
    line(
        "  the same --no-store (keeps nothing)",
        r.one_unstored.clone(),
    );
    if !r.peer.is_empty() {
        line("benchstat (peer)", r.peer.clone());
        let ratio = |ours: Vec<f64>| {
            let v: Vec<f64> = ours.iter().zip(&r.peer).map(|(o, p)| o / p).collect();
            stats(v)
        };
        for (name, ours) in [
            ("import + report", sum(&r.import, &r.report)),
            ("import + --format benchstat", sum(&r.import, &r.layout)),
            (
                "  into an existing store",
                sum(&r.import_existing, &r.layout_existing),
            ),
            ("import --report (one process)", r.one.clone()),
            ("  into an existing store", r.one_existing.clone()),
            ("  --no-store", r.one_unstored.clone()),
        ] {
            let (m, lo, hi) = ratio(ours);
            println!("  ratio to benchstat, pair by pair: {name:<30} {m:.2}x ({lo:.2}-{hi:.2})");
        }
        println!("  (target: import + report no slower than 1.0x benchstat)");
    }
    // How long each report is, beside benchstat's own.
    let bin = env!("CARGO_BIN_EXE_sysdelta");
    let store = fresh_store(dir.path(), Some(&template));
    let report = |extra: &[&str]| {
        lines(
            Command::new(bin)
                .args(["report", "--last", "--store"])
                .arg(&store)
                .args(extra),
        )
    };
    print!(
        "  lines: sysdelta report {}, --format benchstat {}",
        report(&[]),
        report(&["--format", "benchstat"])
    );
    match &peer {
        Some(b) => println!(", benchstat {}", lines(Command::new(b).arg(&old).arg(&new))),
        None => println!(),
    }
}
