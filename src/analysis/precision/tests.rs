//! The streaming rule against what it stands for: the full analysis's
//! intervals block by block (on seeded data with what the analysis treats
//! apart: a metric some runs lack, runs with several samples (their
//! median), failed and warm-up runs, a baseline with zeros, the monitor
//! probe and its monitors-off control, a metric below 5 runs a side), the
//! full bootstrap and SciPy's at 10 to 500 runs a side, coverage on A/A
//! data, and the same decision for the same runs.
//!
//! Tolerances: with B = 2,000 replicates, the standard error of a 2.5%
//! quantile of normal-looking ratios is about 1.5% of the 95% interval's
//! width (sqrt(0.025 x 0.975 / 2000) / phi(1.96) = 0.06 sd, width 3.92
//! sd), so two independent draws differ by about 2.2% of it: 10% is over
//! four of their standard errors, and the Poisson weights' extra spread
//! (a replicate's size varies around n) is well inside it from 20 runs on.

use std::collections::BTreeMap;

use super::*;
use crate::analysis::analyze;
use crate::metric::{Direction, MetricSpec};
use crate::status::{ExperimentStatus, RunStatus};
use crate::store::ExperimentData;

const BLOCKS: u32 = 24;

fn info(configs: &[&str], workloads: &[&str]) -> ExperimentInfo {
    ExperimentInfo {
        id: 1,
        name: "seeded".into(),
        label: None,
        plan_source: "test".into(),
        plan_text: String::new(),
        overrides: Default::default(),
        host: "h".into(),
        fingerprint: BTreeMap::new(),
        seed: 7,
        order: "random-blocks".into(),
        runs_per_cell: BLOCKS,
        warmup: 1,
        baseline: "a".into(),
        created_at: String::new(),
        finished_at: None,
        status: ExperimentStatus::Running,
        entered_config: None,
        self_usage: None,
        configs: configs.iter().map(|s| s.to_string()).collect(),
        workloads: workloads.iter().map(|s| s.to_string()).collect(),
        fleet_id: None,
        fleet_host: None,
    }
}

/// xorshift64*: a fixed stream of uniforms in [0, 1).
struct Noise(u64);
impl Noise {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn data() -> ExperimentData {
    let control = format!("a{CONTROL_SUFFIX}");
    let configs = ["a", "b", "c", control.as_str()];
    let workloads = ["w1", "w2", PROBE_WORKLOAD];
    let spec = |w: &str, m: &str| StoredMetric {
        workload: w.into(),
        spec: MetricSpec::new(m, "s", Direction::Lower),
    };
    let metrics = vec![
        spec("w1", "wall"),
        spec("w1", "user"),
        spec("w1", "rare"),
        spec("w2", "wall"),
        spec("w2", "zero"),
        spec("w2", "late"),
        spec(PROBE_WORKLOAD, "wall"),
    ];
    let mut noise = Noise(0x9E37_79B9_7F4A_7C15);
    let mut runs = Vec::new();
    let mut id = 0;
    for block in 0..BLOCKS {
        let mut seq = 0;
        for (ci, c) in configs.iter().enumerate() {
            for w in workloads {
                // The control runs the probe only; the probe runs in the
                // baseline and the control.
                if (ci == 3) != (w == PROBE_WORKLOAD) && !(ci == 0 && w == PROBE_WORKLOAD) {
                    continue;
                }
                id += 1;
                seq += 1;
                let shift = 1.0 + 0.01 * ci as f64;
                let mut samples = BTreeMap::new();
                let mut x = || shift * (1.0 + 0.05 * noise.next());
                samples.insert("wall".to_string(), vec![x(), x(), x()]);
                if w == "w1" {
                    samples.insert("user".to_string(), vec![0.5 * x()]);
                    if id % 3 != 0 {
                        samples.insert("rare".to_string(), vec![2.0 * x()]);
                    }
                }
                if w == "w2" {
                    let z = if ci == 0 && block % 2 == 0 { 0.0 } else { x() };
                    samples.insert("zero".to_string(), vec![z]);
                    if block >= BLOCKS - 6 {
                        samples.insert("late".to_string(), vec![x()]);
                    }
                }
                let failed = id % 17 == 0;
                let samples = if failed { BTreeMap::new() } else { samples };
                runs.push(StoredRun {
                    warmup: block == 0,
                    status: if failed {
                        RunStatus::Failed
                    } else {
                        RunStatus::Ok
                    },
                    reason: failed.then(|| "exit status 1".into()),
                    started_at: id as f64,
                    ..StoredRun::ok(id, block, seq, *c, w, samples)
                });
            }
        }
    }
    ExperimentData {
        info: info(&configs, &workloads),
        metrics,
        runs,
        events: Vec::new(),
        series: Vec::new(),
        profiles: Vec::new(),
        boots: Vec::new(),
    }
}

/// The whole experiment analysed at 2,000 resamples, as the rule once did.
fn analysed(data: &ExperimentData) -> crate::analysis::Analysis {
    let opts = Options {
        resamples: RESAMPLES,
        ..Default::default()
    };
    analyze(data, &opts).unwrap()
}

/// The analysis's ratio CIs, by the rule's name for each comparison.
fn full(a: &crate::analysis::Analysis) -> HashMap<String, Option<(f64, f64)>> {
    let mut out = HashMap::new();
    for m in &a.metrics {
        for c in &m.comparisons {
            let what = format!("{}/{} {}", m.workload, m.spec.name, c.config);
            out.insert(what, c.ratio_ci);
        }
    }
    out
}

/// Both ends of `got` within `tol` of `want`'s width of `want`'s ends.
fn close(got: (f64, f64), want: (f64, f64), tol: f64) -> bool {
    let w = want.1 - want.0;
    (got.0 - want.0).abs() <= tol * w && (got.1 - want.1).abs() <= tol * w
}

#[test]
fn the_streaming_rule_reads_the_full_analysis_intervals_within_their_error() {
    let all = data();
    let mut p = Precision::new(&all.info).unwrap();
    let (mut compared, mut welch, mut refused) = (0, 0, 0);
    let zero_base = |what: &str| what.starts_with("w2/zero ");
    for upto in 1..=BLOCKS {
        let so_far = ExperimentData {
            runs: all
                .runs
                .iter()
                .filter(|r| r.block < upto)
                .cloned()
                .collect(),
            ..all.clone()
        };
        // What the store gives from the first block not yet complete on:
        // the runs seen before come again and are skipped.
        let fresh: Vec<StoredRun> = so_far
            .runs
            .iter()
            .filter(|r| r.block >= p.from_block())
            .cloned()
            .collect();
        p.add(&fresh);
        assert_eq!(p.from_block(), upto - 1);
        let want = full(&analysed(&so_far));
        let got = p.intervals(&so_far.metrics, &[]);
        // Every comparison the analysis makes, and no other.
        assert_eq!(got.len(), want.len(), "after block {upto}");
        for (what, ci) in got {
            let expected = want[&what];
            let n = {
                let (workload, rest) = what.split_once('/').unwrap();
                let metric = rest.split_once(' ').unwrap().0;
                let base = p.metric("a", workload, metric).map_or(0, |m| m.n);
                base.min(
                    p.metric(&what[what.rfind(' ').unwrap() + 1..], workload, metric)
                        .map_or(0, |m| m.n),
                )
            };
            match (ci, expected) {
                (None, None) => {}
                // Welch's interval below 5 a side: the report's, exactly
                // from the values kept; to rounding from the running
                // moments once the larger side is past them (a metric
                // some runs lack: w1/rare).
                (Some(g), Some(e)) if n < stats::welch::SMALL_CI_BELOW => {
                    let ulps = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs();
                    assert!(
                        ulps(g.0, e.0) && ulps(g.1, e.1),
                        "{what} after block {upto}: {g:?}, full {e:?}"
                    );
                    welch += 1;
                }
                // A baseline of half zeros puts the ratio's upper tail at
                // a denominator near 0, where the two schemes' extremes
                // differ most: the same interval to within a third of
                // its width, not more.
                (Some(g), Some(e)) if zero_base(&what) => {
                    assert!(
                        close(g, e, 0.34),
                        "{what} after block {upto}: {g:?}, full {e:?}"
                    );
                }
                // The bootstrap from 5 runs a side, read at the expanded
                // level (up to 99.99% at 5 a side, where the ends are the
                // replicates' extremes): within 10% of the width from 10
                // runs a side, 20% below.
                (Some(g), Some(e)) => {
                    let tol = if n >= 10 { 0.10 } else { 0.20 };
                    assert!(
                        close(g, e, tol),
                        "{what} after block {upto} ({n} runs): {g:?}, full {e:?}"
                    );
                    compared += 1;
                }
                // A baseline with zeros: a replicate whose weight falls
                // only on its zero runs has mean 0, and no ratio. With k
                // non-zero runs of n that takes e^-k under Poisson weights
                // and (1 - k/n)^n under resampling, so the streaming rule
                // refuses such an interval sooner (it is then not counted).
                (None, Some(_)) if zero_base(&what) => refused += 1,
                (g, e) => panic!("{what} after block {upto}: {g:?}, full {e:?}"),
            }
        }
    }
    assert!(
        compared > 100 && welch > 0 && refused < compared / 10,
        "{compared} {welch} {refused}"
    );
}

/// Runs of configs "a" and "b", one workload "w", one metric "wall", one
/// value each, alternating a and b, one pair a block.
fn pairs(base: &[f64], other: &[f64]) -> Vec<StoredRun> {
    let mut runs = Vec::new();
    for (block, (x, y)) in base.iter().zip(other).enumerate() {
        for (seq, (config, v)) in [("a", x), ("b", y)].into_iter().enumerate() {
            let samples = BTreeMap::from([("wall".to_string(), vec![*v])]);
            let id = (2 * block + seq) as i64 + 1;
            runs.push(StoredRun::ok(
                id,
                block as u32,
                seq as u32,
                config,
                "w",
                samples,
            ));
        }
    }
    runs
}

fn wall() -> Vec<StoredMetric> {
    vec![StoredMetric {
        workload: "w".into(),
        spec: MetricSpec::new("wall", "s", Direction::Lower),
    }]
}

/// Standard normals (Box-Muller) from a fixed stream.
fn normals(noise: &mut Noise, n: usize) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let (u, v) = (1.0 - noise.next(), noise.next());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        })
        .collect()
}

/// The only interval of a two-config experiment fed `runs`.
fn streaming(runs: &[StoredRun]) -> Option<(f64, f64)> {
    let mut p = Precision::new(&info(&["a", "b"], &["w"])).unwrap();
    p.add(runs);
    let got = p.intervals(&wall(), &[]);
    assert_eq!(got.len(), 1);
    got[0].1
}

#[test]
fn the_streaming_interval_is_the_full_bootstraps_within_its_error() {
    let mut noise = Noise(0x2545_F491_4F6C_DD1D);
    for n in [20, 100, 500] {
        // Log-normal noise, CoV about 10%, and a 3% shift.
        let base: Vec<f64> = normals(&mut noise, n)
            .iter()
            .map(|z| (0.1 * z).exp())
            .collect();
        let other: Vec<f64> = normals(&mut noise, n)
            .iter()
            .map(|z| 1.03 * (0.1 * z).exp())
            .collect();
        let got = streaming(&pairs(&base, &other)).unwrap();
        let level = stats::bootstrap::expanded_confidence(&base, &other, 0.95);
        let (bm, om) = (
            stats::bootstrap::resample_means(&base, RESAMPLES, stats::bootstrap::stream_seed(9, 0)),
            stats::bootstrap::resample_means(
                &other,
                RESAMPLES,
                stats::bootstrap::stream_seed(9, 1),
            ),
        );
        let want = stats::bootstrap::ratio_ci(&bm, &om, level).unwrap();
        assert!(close(got, want, 0.10), "n={n}: {got:?}, full {want:?}");
    }
}

/// SciPy's percentile bootstrap (100,000 resamples, at exactly 95%) on the
/// fixed vectors of `tests/reference/bootstrap.json` (made by
/// `make_vectors.py`), against the streaming replicates read at 95%.
#[test]
fn the_streaming_interval_is_scipys_bootstrap_within_its_error() {
    let cases: serde_json::Value =
        serde_json::from_str(include_str!("../../../tests/reference/bootstrap.json")).unwrap();
    let floats = |v: &serde_json::Value| -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().parse().unwrap())
            .collect()
    };
    let float = |v: &serde_json::Value| -> f64 { v.as_str().unwrap().parse().unwrap() };
    let mut checked = 0;
    for case in cases["cases"].as_array().unwrap() {
        let (base, other) = (floats(&case["base"]), floats(&case["other"]));
        assert_eq!(float(&case["confidence"]), 0.95);
        let mut reps = [
            poisson::Replicates::new(RESAMPLES),
            poisson::Replicates::new(RESAMPLES),
        ];
        for (side, (values, stream)) in [(&base, 0), (&other, 1)].into_iter().enumerate() {
            let mut weights = poisson::Weights::new(RESAMPLES, 7, stream);
            for &x in values {
                reps[side].add(x, weights.draw());
            }
        }
        let got = poisson::ratio_ci(&reps[0], &reps[1], 0.95).unwrap();
        let want = (float(&case["lo"]), float(&case["hi"]));
        // 10 runs a side: the Poisson replicates' varying size shows
        // (about 1/n of the spread); 15% there, 10% from 20 on.
        let tol = if base.len() < 20 { 0.15 } else { 0.10 };
        assert!(
            close(got, want, tol),
            "n={}: {got:?}, scipy {want:?}",
            base.len()
        );
        checked += 1;
    }
    assert!(checked >= 4);
}

/// A/A: the streaming 95% interval of the ratio (expanded level) covers
/// 1.0 in `trials` seeded experiments of `n` runs a side; the fraction.
fn aa_coverage(trials: usize, n: usize) -> f64 {
    let mut noise = Noise(0x0DDB_1A5E_5BAD_5EED);
    let mut covered = 0;
    for _ in 0..trials {
        let base: Vec<f64> = normals(&mut noise, n).iter().map(|z| 100.0 + z).collect();
        let other: Vec<f64> = normals(&mut noise, n).iter().map(|z| 100.0 + z).collect();
        let (lo, hi) = streaming(&pairs(&base, &other)).unwrap();
        covered += usize::from(lo <= 1.0 && 1.0 <= hi);
    }
    covered as f64 / trials as f64
}

/// 200 trials: a binomial standard error of 1.5 points at 95%.
#[test]
fn the_streaming_interval_covers_the_truth_about_95_percent_of_the_time() {
    let c = aa_coverage(200, 20);
    assert!((0.90..=0.99).contains(&c), "{c}");
}

/// The brief's 1,000 trials (0.7 points): `cargo test --release --lib
/// precision -- --ignored`.
#[test]
#[ignore = "1,000 trials: run in release"]
fn the_streaming_interval_covers_the_truth_93_to_97_percent_of_1000_times() {
    for n in [10, 20, 50] {
        let c = aa_coverage(1000, n);
        println!(
            "A/A coverage, {n} runs a side, 1,000 trials: {:.1}%",
            100.0 * c
        );
        assert!((0.93..=0.97).contains(&c), "n={n}: {c}");
    }
}

#[test]
fn the_same_runs_give_the_same_decision_however_they_are_read() {
    let all = data();
    let once = {
        let mut p = Precision::new(&all.info).unwrap();
        p.add(&all.runs);
        p
    };
    let by_block = {
        let mut p = Precision::new(&all.info).unwrap();
        for b in 0..BLOCKS {
            let fresh: Vec<StoredRun> = all
                .runs
                .iter()
                .filter(|r| r.block <= b && r.block >= p.from_block())
                .cloned()
                .collect();
            p.add(&fresh);
        }
        p
    };
    for only in [Vec::new(), vec!["wall".to_string()]] {
        for target in [0.01, 0.05, 0.5] {
            let a = once.check(&all.metrics, target, &only);
            assert_eq!(a, by_block.check(&all.metrics, target, &only));
            // And again: a check changes nothing.
            assert_eq!(a, once.check(&all.metrics, target, &only));
        }
    }
    assert_eq!(
        once.intervals(&all.metrics, &[]),
        by_block.intervals(&all.metrics, &[])
    );
}

#[test]
fn min_time_sums_are_the_full_experiments() {
    let all = data();
    let mut p = Precision::new(&all.info).unwrap();
    // Half, ending inside a block; then the rest as the store gives it,
    // from that block on.
    p.add(&all.runs[..all.runs.len() / 2 + 1]);
    let from = p.from_block();
    assert!(from > 0);
    let rest: Vec<StoredRun> = all
        .runs
        .iter()
        .filter(|r| r.block >= from)
        .cloned()
        .collect();
    p.add(&rest);
    // Given again, nothing counts twice.
    p.add(&all.runs);
    let mut expected: HashMap<(&str, &str), (u32, f64)> = HashMap::new();
    for r in all.runs.iter().filter(|r| r.is_measured_ok()) {
        if let Some(w) = r.samples.get("wall").and_then(|v| v.first()) {
            let e = expected.entry((&r.config, &r.workload)).or_default();
            e.0 += 1;
            e.1 += w;
        }
    }
    assert_eq!(p.wall_sums(), expected);
}

/// The level from running moments is `expanded_confidence`'s from the
/// values (to rounding: Welford's sums, not two passes).
#[test]
fn the_running_level_is_the_reports_expanded_level() {
    let mut noise = Noise(0x5EED);
    for n in [2, 5, 20, 200] {
        let (b, o) = (normals(&mut noise, n), normals(&mut noise, n + 3));
        let (b, o): (Vec<f64>, Vec<f64>) = (
            b.iter().map(|z| 50.0 + 5.0 * z).collect(),
            o.iter().map(|z| 52.0 + 2.0 * z).collect(),
        );
        let (mut sb, mut so) = (MetricState::new(), MetricState::new());
        let w = vec![1; RESAMPLES];
        b.iter().for_each(|&x| sb.add(x, &w));
        o.iter().for_each(|&x| so.add(x, &w));
        let running =
            stats::bootstrap::expanded_level(sb.rel_var().unwrap(), so.rel_var().unwrap(), 0.95);
        let want = stats::bootstrap::expanded_confidence(&b, &o, 0.95);
        assert!((running - want).abs() < 1e-12, "n={n}: {running} {want}");
    }
}

/// A metric's state does not grow with its runs: it keeps the first
/// values Welch's interval may read, then only moments and replicates;
/// and Welch's interval of a small cell against a large one (past the
/// values kept) is the report's, from the large side's moments.
#[test]
fn a_state_keeps_a_bounded_number_of_values() {
    let mut noise = Noise(0xB0DE);
    let w = vec![1; RESAMPLES];
    let big: Vec<f64> = normals(&mut noise, 1000)
        .iter()
        .map(|z| 50.0 + 5.0 * z)
        .collect();
    let small: Vec<f64> = normals(&mut noise, 3)
        .iter()
        .map(|z| 52.0 + 2.0 * z)
        .collect();
    let (mut sb, mut ss) = (MetricState::new(), MetricState::new());
    big.iter().for_each(|&x| sb.add(x, &w));
    small.iter().for_each(|&x| ss.add(x, &w));
    assert_eq!((sb.n, sb.kept.len()), (1000, KEPT));
    assert!(sb.kept.capacity() <= 2 * KEPT, "{}", sb.kept.capacity());
    let got = welch_from_moments(&sb, &ss, 0.95).unwrap();
    let want = stats::welch::log_ratio_ci(&big, &small, 0.95).unwrap();
    assert!(
        (got.0 - want.0).abs() < 1e-12 && (got.1 - want.1).abs() < 1e-12,
        "{got:?} {want:?}"
    );
}
