//! The incremental rule against the full analysis it replaces, block by
//! block, on seeded data with what the analysis treats apart: a metric
//! some runs lack (resampled alone), runs with several samples (their
//! median), failed and warm-up runs, a baseline with zeros (no CI), the
//! monitor probe and its monitors-off control, and a metric below 5 runs a
//! side (Welch's interval).

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
                runs.push(StoredRun {
                    id,
                    block,
                    seq,
                    config: c.to_string(),
                    workload: w.to_string(),
                    warmup: block == 0,
                    status: if failed {
                        RunStatus::Failed
                    } else {
                        RunStatus::Ok
                    },
                    reason: failed.then(|| "exit status 1".into()),
                    stderr_tail: None,
                    exit_code: None,
                    started_at: id as f64,
                    samples: if failed { BTreeMap::new() } else { samples },
                    boot_id: None,
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

/// The whole experiment analysed at 2,000 resamples, as the rule did.
fn analysed(data: &ExperimentData) -> crate::analysis::Analysis {
    let opts = Options {
        resamples: RESAMPLES,
        ..Default::default()
    };
    analyze(data, &opts).unwrap()
}

/// The rule as it was, on that analysis.
fn full(a: &crate::analysis::Analysis, target: f64, only: &[String]) -> (bool, String) {
    let mut widest: Option<(f64, String)> = None;
    let mut undefined = 0usize;
    let wanted = |workload: &str, metric: &str| {
        only.is_empty()
            || only
                .iter()
                .any(|o| o == metric || *o == format!("{workload}/{metric}"))
    };
    for m in a
        .metrics
        .iter()
        .filter(|m| wanted(&m.workload, &m.spec.name))
    {
        for c in &m.comparisons {
            match c.ratio_ci {
                Some((lo, hi)) => {
                    let w = hi - lo;
                    if widest.as_ref().is_none_or(|(x, _)| w > *x) {
                        widest = Some((w, format!("{}/{} {}", m.workload, m.spec.name, c.config)));
                    }
                }
                None => undefined += 1,
            }
        }
    }
    match widest {
        None => (false, "no confidence interval defined yet".into()),
        Some((w, what)) => (
            w <= target,
            format!(
                "widest 95% CI of a ratio {:.2}% ({what}), target {:.2}%{}",
                100.0 * w,
                100.0 * target,
                if undefined > 0 {
                    format!("; {undefined} comparisons without a CI not counted")
                } else {
                    String::new()
                }
            ),
        ),
    }
}

#[test]
fn the_incremental_rule_decides_as_the_full_analysis_after_every_block() {
    let all = data();
    let mut p = Precision::new(&all.info).unwrap();
    let onlys: Vec<Vec<String>> = vec![
        Vec::new(),
        vec!["wall".into()],
        vec!["w1/rare".into(), "late".into()],
    ];
    let mut reached = 0;
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
        let a = analysed(&so_far);
        for only in &onlys {
            for target in [0.01, 0.03, 0.08, 0.5] {
                let expected = full(&a, target, only);
                let got = p.check(&so_far.metrics, target, only);
                assert_eq!(
                    got, expected,
                    "after block {upto}, target {target}, {only:?}"
                );
                reached += usize::from(got.0);
            }
        }
    }
    // Both answers occur: the comparison says something.
    assert!(reached > 0 && reached < (BLOCKS as usize) * 12, "{reached}");
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
