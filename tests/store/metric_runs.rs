//! `Store::metric_runs`, what `history` reads: one metric's samples of
//! the measured, ok runs of one config, per experiment, and nothing of
//! other metrics, configs, warm-ups, failed runs or the monitor probe; the
//! same on SQLite and PostgreSQL, in the order the ids were given, across
//! more experiments than one statement takes.

use std::collections::BTreeMap;

use crate::common;

use sysdelta::metric::{Direction, MetricSamples, MetricSpec};
use sysdelta::plan::{Order, Overrides};
use sysdelta::store::whole::WholeExperiment;
use sysdelta::store::{MetricRun, NewExperiment, RunRecord, RunResult, Store};

const PROBE: &str = "monitor probe";
const CONTROL: &str = "base (monitors off)";

fn spec(name: &str) -> MetricSpec {
    MetricSpec {
        name: name.into(),
        unit: "s".into(),
        direction: Direction::Lower,
    }
}

fn samples(of: &[(&str, &[f64])]) -> Vec<MetricSamples> {
    of.iter()
        .map(|(m, v)| MetricSamples {
            metric: m.to_string(),
            values: v.to_vec(),
        })
        .collect()
}

/// (block, seq, config, workload, warm-up, samples; None: a failed run).
type Run<'a> = (u32, u32, &'a str, &'a str, bool, Option<Vec<MetricSamples>>);

/// Store one experiment labelled `label` whole: configs base, patched and
/// the monitors-off control; workloads w (wall, cycles), v (wall) and the
/// monitor probe (wall); `runs`.
fn store_experiment(store: &Store, label: &str, runs: &[Run]) -> i64 {
    let fp = BTreeMap::new();
    let ov = Overrides::default();
    let metrics = vec![
        ("w".to_string(), vec![spec("wall"), spec("cycles")]),
        ("v".to_string(), vec![spec("wall")]),
        (PROBE.to_string(), vec![spec("wall")]),
    ];
    let records = runs
        .iter()
        .map(|(block, seq, config, workload, warmup, s)| RunRecord {
            experiment_id: 0,
            block: *block,
            seq: *seq,
            config,
            workload,
            warmup: *warmup,
            started_at: 0.0,
            result: match s {
                Some(s) => RunResult::Ok(s),
                None => RunResult::Failed {
                    reason: "exit 1",
                    stderr_tail: "",
                    exit_code: Some(1),
                },
            },
            series: &[],
            profile: &[],
        })
        .collect();
    store
        .insert_whole(&WholeExperiment {
            experiment: NewExperiment {
                name: "t",
                label: Some(label),
                plan_source: "test",
                plan_text: "",
                overrides: &ov,
                host: "test",
                fingerprint: &fp,
                seed: 1,
                order: Order::RandomBlocks,
                runs: 1,
                warmup: 0,
                baseline: "base",
                configs: vec!["base".into(), "patched".into(), CONTROL.into()],
                workloads: vec!["w".into(), "v".into(), PROBE.into()],
            },
            metrics: &metrics,
            runs: records,
            source: "test",
            events: Vec::new(),
        })
        .unwrap()
}

fn run(workload: &str, metric: &str, values: &[f64]) -> MetricRun {
    MetricRun {
        workload: workload.into(),
        metric: metric.into(),
        values: values.to_vec(),
    }
}

both_stores! {
    fn one_metric_of_one_config_and_nothing_else(sb) {
        let store = Store::open(&sb.store(), true).unwrap();
        let wall = |v: &[f64]| Some(samples(&[("wall", v)]));
        let runs: Vec<Run> = vec![
            (0, 0, "base", "w", true, wall(&[9.0])),
            (1, 0, "base", "w", false, Some(samples(&[("cycles", &[5.0]), ("wall", &[1.0, 3.0])]))),
            (1, 1, "base", "v", false, wall(&[2.0])),
            (1, 2, "patched", "w", false, wall(&[7.0])),
            (1, 3, CONTROL, "w", false, wall(&[8.0])),
            (1, 4, "base", PROBE, false, wall(&[6.0])),
            (1, 5, "base", "w", false, None),
            (2, 0, "base", "w", false, Some(samples(&[("cycles", &[5.0])]))),
            (2, 1, "base", "w", false, wall(&[4.0])),
        ];
        let a = store_experiment(&store, "k1", &runs);
        let b = store_experiment(&store, "k2", &runs[3..4]);

        // `wall` alone: w's and v's, of the baseline's measured ok runs,
        // in run order, each run's samples in their order.
        let got = store.metric_runs(&[a], "wall", None).unwrap();
        assert_eq!(got.len(), 1);
        let e = &got[0];
        assert_eq!((e.id, e.baseline.as_str()), (a, "base"));
        assert_eq!(e.configs, ["base", "patched"], "no control config");
        let named: Vec<String> =
            e.metrics.iter().map(|m| format!("{}/{}", m.workload, m.spec.name)).collect();
        assert_eq!(named, ["w/wall", "v/wall"], "no probe metric");
        assert_eq!(
            e.runs,
            [run("w", "wall", &[1.0, 3.0]), run("v", "wall", &[2.0]), run("w", "wall", &[4.0])]
        );

        // WORKLOAD/METRIC and a config named: that workload's, that config's.
        let got = store.metric_runs(&[a], "w/wall", Some("patched")).unwrap();
        assert_eq!(got[0].metrics.len(), 1);
        assert_eq!(got[0].runs, [run("w", "wall", &[7.0])]);

        // The probe's metric is not a metric of the experiment's.
        let got = store.metric_runs(&[a], "monitor probe/wall", None).unwrap();
        assert!(got[0].metrics.is_empty() && got[0].runs.is_empty(), "{got:?}");

        // Ids in the order given; one the store lacks is left out.
        let got = store.metric_runs(&[b, 999_999, a], "cycles", None).unwrap();
        assert_eq!(got.iter().map(|e| e.id).collect::<Vec<_>>(), [b, a]);
        assert!(got[0].runs.is_empty(), "b's one run is patched's");
        assert_eq!(got[1].runs, [run("w", "cycles", &[5.0]), run("w", "cycles", &[5.0])]);
    }

    fn more_experiments_than_one_statement_takes(sb) {
        let store = Store::open(&sb.store(), true).unwrap();
        // 300 experiments: more than one batch of ids (256).
        let ids: Vec<i64> = (0..300)
            .map(|k| {
                let v = [k as f64];
                let s = samples(&[("wall", &v)]);
                store_experiment(&store, &format!("n{k}"), &[(1, 0, "base", "w", false, Some(s))])
            })
            .collect();
        let mut asked = ids.clone();
        asked.reverse();
        let got = store.metric_runs(&asked, "w/wall", None).unwrap();
        assert_eq!(got.iter().map(|e| e.id).collect::<Vec<_>>(), asked);
        for (k, e) in got.iter().rev().enumerate() {
            assert_eq!(e.runs, [run("w", "wall", &[k as f64])], "experiment {}", e.id);
        }
    }
}
