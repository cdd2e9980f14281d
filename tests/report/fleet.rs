//! The fleet report (`report::fleet`): three hosts' experiments of one
//! plan, built through the library, each analysed as `sysdelta report`
//! analyses it, pooled by DerSimonian-Laird and Hartung-Knapp-Sidik-Jonkman
//! (checked here against the formulas computed by hand from the hosts'
//! rows), a host with a +30% shift flagged as differing and the others
//! not, a kernel difference warned about, hosts that did not finish shown
//! with what they did, text within 80 columns and every JSON field
//! documented.

use crate::common;

use std::collections::BTreeMap;

use common::{create_experiment_on, run_record, On, Sandbox};
use sysdelta::analysis;
use sysdelta::metric::{Direction, MetricSpec};
use sysdelta::report::fleet::{self, HostExperiment};
use sysdelta::report::{self, Format, ReportOptions};
use sysdelta::status::ExperimentStatus;
use sysdelta::store::{RunRecord, RunResult, Store};
use sysdelta::workload::MetricSamples;

const RUNS: u32 = 12;

/// A fixed pseudo-random sequence in [0, 1).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn fingerprint(machine: &str, kernel: &str) -> BTreeMap<String, String> {
    [
        ("host", machine),
        ("kernel", kernel),
        ("cpu_model", "Test CPU @ 3.0GHz"),
        ("cpufreq_governor", "performance"),
        ("thp", "always [madvise] never"),
        ("smt", "on"),
        (
            "mitigations",
            "spectre_v1: Mitigation: usercopy; spectre_v2: Mitigation: Retpolines",
        ),
        ("loadavg_at_start", machine),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// One host's experiment: `wall` around 10 ms with +-1% noise in `base`,
/// `effect` (a fraction) more in `patched`; `blocks` of the planned
/// `RUNS` blocks ran, and the experiment ended `status`. Returns its data
/// as the store gives it back, under fleet host name `name`.
fn host(
    store: &Store,
    name: &str,
    kernel: &str,
    effect: f64,
    blocks: u32,
    status: ExperimentStatus,
    seed: u64,
) -> HostExperiment {
    let machine = format!("node-{name}");
    let fp = fingerprint(&machine, kernel);
    let on = On {
        label: Some("fleet-1"),
        host: &machine,
        fingerprint: &fp,
    };
    let spec = [MetricSpec::new("wall", "s", Direction::Lower)];
    let id = create_experiment_on(store, "fleet", &on, &["base", "patched"], RUNS, &spec);
    let mut rng = Lcg(seed);
    for block in 0..blocks {
        for (seq, config) in ["base", "patched"].into_iter().enumerate() {
            let level = if config == "patched" {
                0.010 * (1.0 + effect)
            } else {
                0.010
            };
            let samples = [MetricSamples {
                metric: "wall".into(),
                values: vec![level * (0.99 + 0.02 * rng.next())],
            }];
            store
                .record_run(&RunRecord {
                    started_at: 1_700_000_000.0 + f64::from(block * 2) + seq as f64,
                    ..run_record(id, block, seq as u32, config, RunResult::Ok(&samples))
                })
                .unwrap();
        }
    }
    store.finish(id, status, None).unwrap();
    let mut data = store.load(id).unwrap();
    // The store does not read fleet hosts yet: set as `sysdelta fleet` will.
    data.info.fleet_host = Some(name.to_string());
    HostExperiment::new(data)
}

fn options(format: Format) -> ReportOptions {
    ReportOptions {
        format,
        detail: false,
        trim: None,
        time_unit: None,
        analysis: analysis::Options {
            resamples: 2000,
            ..Default::default()
        },
    }
}

fn render(hosts: &[HostExperiment], format: Format) -> String {
    fleet::render(hosts, &options(format)).unwrap()
}

fn assert_fits_80(text: &str) {
    for l in text.lines() {
        assert!(l.chars().count() <= 80, "line over 80 columns: {l:?}");
    }
}

/// Hosts a and b: +5% and +4%; host c: the same change shifted by +30%;
/// c runs a newer kernel.
fn three_hosts(store: &Store) -> Vec<HostExperiment> {
    vec![
        host(
            store,
            "a",
            "6.1.0",
            0.05,
            RUNS,
            ExperimentStatus::Complete,
            1,
        ),
        host(
            store,
            "b",
            "6.1.0",
            0.04,
            RUNS,
            ExperimentStatus::Complete,
            2,
        ),
        host(
            store,
            "c",
            "6.8.0",
            0.35,
            RUNS,
            ExperimentStatus::Complete,
            3,
        ),
    ]
}

/// Student's t quantile at 0.975 on 2 degrees of freedom and the normal
/// one, from SciPy (`stats.t.ppf(0.975, 2)`, `stats.norm.ppf(0.975)`).
const T_975_2: f64 = 4.302652729749462;
const Z_975: f64 = 1.959963984540054;

fn close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 1e-9 * want.abs().max(1e-6),
        "{what}: got {got}, want {want}"
    );
}

#[test]
fn three_hosts_pooled_one_differs_and_kernels_are_warned_about() {
    let sb = Sandbox::new();
    let store = Store::open(&sb.store(), true).unwrap();
    let hosts = three_hosts(&store);
    let v: serde_json::Value = serde_json::from_str(&render(&hosts, Format::Json)).unwrap();
    assert_eq!(v["format"], "sysdelta-fleet-report-1");
    let cmps = v["comparisons"].as_array().unwrap();
    assert_eq!(cmps.len(), 1, "{cmps:?}");
    let c = &cmps[0];
    assert_eq!(
        (c["workload"].as_str(), c["metric"].as_str()),
        (Some("w"), Some("wall"))
    );
    assert_eq!(c["config"], "patched");
    let rows = c["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);

    // Each row is the host's own analysis, as `sysdelta report` has it.
    for (h, row) in hosts.iter().zip(rows) {
        let x = report::analyze(&h.data, &options(Format::Json).analysis).unwrap();
        let cmp = &x.analysis.metrics[0].comparisons[0];
        assert_eq!(row["host"], h.host.as_str());
        // (JSON's decimal digits may round the last bit.)
        let num = |v: &serde_json::Value| v.as_f64().unwrap();
        close(
            num(&row["delta_mean_pct"]),
            cmp.delta_mean_pct.unwrap(),
            "delta",
        );
        let ci = cmp.delta_ci_pct.unwrap();
        close(num(&row["delta_ci_pct"][0]), ci.0, "CI low");
        close(num(&row["delta_ci_pct"][1]), ci.1, "CI high");
        assert_eq!(row["n"], RUNS);
        assert_eq!(row["pooled"], true);
    }

    // DerSimonian-Laird and HKSJ by hand, from the rows.
    let (y, se): (Vec<f64>, Vec<f64>) = rows
        .iter()
        .map(|r| {
            let ratio = r["mean"].as_f64().unwrap() / r["baseline_mean"].as_f64().unwrap();
            let (lo, hi) = (
                r["ratio_ci"][0].as_f64().unwrap(),
                r["ratio_ci"][1].as_f64().unwrap(),
            );
            (ratio.ln(), (hi.ln() - lo.ln()) / (2.0 * Z_975))
        })
        .unzip();
    let w: Vec<f64> = se.iter().map(|s| 1.0 / (s * s)).collect();
    let sw: f64 = w.iter().sum();
    let m = (0..3).map(|i| w[i] * y[i]).sum::<f64>() / sw;
    let q: f64 = (0..3).map(|i| w[i] * (y[i] - m).powi(2)).sum();
    let cc = sw - w.iter().map(|w| w * w).sum::<f64>() / sw;
    let tau2 = ((q - 2.0) / cc).max(0.0);
    assert!(tau2 > 0.0, "three hosts this far apart are heterogeneous");
    let ws: Vec<f64> = se.iter().map(|s| 1.0 / (s * s + tau2)).collect();
    let sws: f64 = ws.iter().sum();
    let mu = (0..3).map(|i| ws[i] * y[i]).sum::<f64>() / sws;
    let var = (0..3).map(|i| ws[i] * (y[i] - mu).powi(2)).sum::<f64>() / (2.0 * sws);
    let (lo, hi) = (mu - T_975_2 * var.sqrt(), mu + T_975_2 * var.sqrt());
    let p = &c["pooled"];
    assert_eq!(p["hosts"], 3);
    let fit = &p["fit"];
    close(fit["tau2"].as_f64().unwrap(), tau2, "tau2");
    close(fit["q"].as_f64().unwrap(), q, "Q");
    close(fit["mu"].as_f64().unwrap(), mu, "mu");
    close(fit["ci"][0].as_f64().unwrap(), lo, "ci low");
    close(fit["ci"][1].as_f64().unwrap(), hi, "ci high");
    assert_eq!(fit["df"], 2);
    close(p["ratio"].as_f64().unwrap(), mu.exp(), "ratio");
    close(
        p["delta_pct"].as_f64().unwrap(),
        100.0 * (mu.exp() - 1.0),
        "pct",
    );
    close(
        p["delta_ci_pct"][0].as_f64().unwrap(),
        100.0 * (lo.exp() - 1.0),
        "pct low",
    );
    close(
        p["delta_ci_pct"][1].as_f64().unwrap(),
        100.0 * (hi.exp() - 1.0),
        "pct high",
    );

    // c's change is 30% off the others': c differs, a and b do not.
    let differs: Vec<&serde_json::Value> = rows.iter().map(|r| &r["differs"]).collect();
    assert_eq!(differs, [false, false, true], "{rows:?}");

    // Fingerprints: the kernel differs (the host name and the load do
    // not count), so the warning names it.
    assert_eq!(v["confounders"], serde_json::json!(["kernel"]));
    let diffs = v["fingerprint_differences"].as_object().unwrap();
    assert_eq!(diffs.keys().collect::<Vec<_>>(), ["kernel"]);
    assert_eq!(
        diffs["kernel"],
        serde_json::json!(["6.1.0", "6.1.0", "6.8.0"])
    );

    let text = render(&hosts, Format::Text);
    assert_fits_80(&text);
    assert!(
        text.contains("WARNING: the hosts differ in kernel release (kernel)"),
        "{text}"
    );
    let pooled = text
        .lines()
        .find(|l| l.trim_start().starts_with("pooled: "))
        .unwrap_or_else(|| panic!("no pooled line:\n{text}"));
    let want = format!(
        "pooled: {:+.1}% [{:+.1},{:+.1}] across 3 hosts",
        100.0 * (mu.exp() - 1.0),
        100.0 * (lo.exp() - 1.0),
        100.0 * (hi.exp() - 1.0)
    );
    assert!(pooled.contains(&want), "{pooled:?} lacks {want:?}");
    assert!(text.contains("host c differs"), "{text}");
    assert!(!text.contains("host a differs") && !text.contains("host b differs"));
    // The fingerprints side by side: the kernel row, a column per host.
    let kernel_row = text
        .lines()
        .find(|l| l.trim_start().starts_with("kernel "))
        .unwrap_or_else(|| panic!("no kernel row:\n{text}"));
    assert_eq!(
        kernel_row.split_whitespace().collect::<Vec<_>>(),
        ["kernel", "6.1.0", "6.1.0", "6.8.0"]
    );
    // Times in a unit a person reads, the same for every host.
    assert!(
        text.contains("w/wall (ms, lower is better): patched against base"),
        "{text}"
    );

    let md = render(&hosts, Format::Markdown);
    assert!(
        md.contains("**WARNING:**") && md.contains("**pooled:**"),
        "{md}"
    );
    assert!(
        md.contains("| c | ") && md.contains("host c differs"),
        "{md}"
    );

    // Formats a fleet report does not have are bad input.
    let e = fleet::render(&hosts, &options(Format::Csv)).unwrap_err();
    assert_eq!(sysdelta::error::exit_code(&e), 2);
}

#[test]
fn unfinished_hosts_show_what_they_did_and_pool_only_with_an_estimate() {
    let sb = Sandbox::new();
    let store = Store::open(&sb.store(), true).unwrap();
    let hosts = vec![
        host(
            &store,
            "a",
            "6.1.0",
            0.05,
            RUNS,
            ExperimentStatus::Complete,
            1,
        ),
        host(
            &store,
            "b",
            "6.1.0",
            0.04,
            RUNS,
            ExperimentStatus::Complete,
            2,
        ),
        host(
            &store,
            "c",
            "6.1.0",
            0.05,
            4,
            ExperimentStatus::Interrupted,
            3,
        ),
        host(&store, "d", "6.1.0", 0.05, 0, ExperimentStatus::Failed, 4),
    ];
    let text = render(&hosts, Format::Text);
    assert_fits_80(&text);
    let planned = 2 * RUNS;
    for want in [
        format!("  c: experiment 3, interrupted, 8 of {planned} runs"),
        format!("  d: experiment 4, failed, 0 of {planned} runs"),
        "  a: experiment 1, complete, 24 of 24 runs".to_string(),
    ] {
        assert!(text.lines().any(|l| l == want), "no line {want:?}:\n{text}");
    }
    assert!(text.contains("\n  c (interrupted) "), "{text}");
    assert!(text.contains("across 3 hosts"), "{text}");
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("not pooled (no estimate): d"), "{text}");
    assert!(
        text.contains("fingerprints are the same"),
        "same kernels, same everything:\n{text}"
    );
    assert!(!text.contains("WARNING"), "{text}");

    let v: serde_json::Value = serde_json::from_str(&render(&hosts, Format::Json)).unwrap();
    let rows = v["comparisons"][0]["rows"].as_array().unwrap();
    let pooled: Vec<&serde_json::Value> = rows.iter().map(|r| &r["pooled"]).collect();
    assert_eq!(pooled, [true, true, true, false]);
    assert_eq!(rows[2]["n"], 4);
    assert_eq!(v["hosts"][2]["status"], "interrupted");
    assert_eq!(v["hosts"][2]["runs_ok"], 8);
    assert!(v["confounders"].as_array().unwrap().is_empty());
}

#[test]
fn one_host_gives_no_pooled_ci() {
    let sb = Sandbox::new();
    let store = Store::open(&sb.store(), true).unwrap();
    let hosts = vec![host(
        &store,
        "a",
        "6.1.0",
        0.05,
        RUNS,
        ExperimentStatus::Complete,
        1,
    )];
    let v: serde_json::Value = serde_json::from_str(&render(&hosts, Format::Json)).unwrap();
    let p = &v["comparisons"][0]["pooled"];
    assert_eq!(p["hosts"], 1);
    assert!(p["ratio_ci"].is_null() && p["fit"].is_null(), "{p}");
    let text = render(&hosts, Format::Text);
    assert!(text.contains("from one host (a): no pooled CI"), "{text}");
}

/// Every key of a JSON value, but not the keys of maps whose keys are
/// data (fingerprint keys).
fn json_keys(v: &serde_json::Value, out: &mut std::collections::BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                out.insert(k.clone());
                if k != "fingerprint_differences" {
                    json_keys(x, out);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| json_keys(x, out)),
        _ => {}
    }
}

#[test]
fn every_fleet_json_field_is_documented() {
    let doc =
        std::fs::read_to_string(format!("{}/docs/reports.md", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let fleet_doc = &doc[doc.find("## Fleet reports").expect("a fleet section")..];
    let sb = Sandbox::new();
    let store = Store::open(&sb.store(), true).unwrap();
    let mut hosts = three_hosts(&store);
    hosts.push(host(
        &store,
        "d",
        "6.1.0",
        0.05,
        0,
        ExperimentStatus::Failed,
        4,
    ));
    hosts[3].data.info.fleet_id = Some(7);
    for h in &mut hosts {
        h.data.info.fleet_id = Some(7);
    }
    let v: serde_json::Value = serde_json::from_str(&render(&hosts, Format::Json)).unwrap();
    assert_eq!(v["fleet_id"], 7);
    let mut keys = std::collections::BTreeSet::new();
    json_keys(&v, &mut keys);
    for k in [
        "pooled",
        "fit",
        "differs",
        "residual",
        "tau2",
        "i2",
        "warnings",
        "confounders",
    ] {
        assert!(keys.contains(k), "{k} missing from {keys:?}");
    }
    let missing: Vec<&String> = keys
        .iter()
        .filter(|k| !fleet_doc.contains(&format!("`{k}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "fleet JSON fields not in docs/reports.md's fleet section: {missing:?}"
    );
}
