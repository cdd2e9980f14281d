//! Reports a reviewer reads at a glance: units picked from the values (and
//! forced with --time-unit), text tables that fit 80 columns without
//! clipping a name into another, marks where a verdict and its CI seem to
//! disagree, and the geometric-mean row with its CI.

use crate::common;

use std::collections::BTreeMap;

use common::{stdout, Sandbox};
use sysdelta::analysis;
use sysdelta::metric::{Direction, MetricSpec};
use sysdelta::plan::Overrides;
use sysdelta::report::units::TimeUnit;
use sysdelta::report::{self, Format, ReportOptions};
use sysdelta::status::ExperimentStatus;
use sysdelta::store::{ExperimentData, ExperimentInfo, StoredMetric, StoredRun};

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

/// An experiment of `configs` (the first the baseline) and `metrics`
/// (workload, name, unit), `runs` runs per cell, each run's value of a
/// metric given by `value(config index, metric index, run index)`.
fn data(
    configs: &[&str],
    metrics: &[(&str, &str, &str)],
    runs: usize,
    value: impl Fn(usize, usize, usize) -> f64,
) -> ExperimentData {
    let mut workloads: Vec<String> = metrics.iter().map(|m| m.0.to_string()).collect();
    workloads.dedup();
    let mut out = Vec::new();
    let mut id = 0;
    for r in 0..runs {
        for (ci, c) in configs.iter().enumerate() {
            for w in &workloads {
                id += 1;
                let samples: BTreeMap<String, Vec<f64>> = metrics
                    .iter()
                    .enumerate()
                    .filter(|(_, m)| m.0 == w)
                    .map(|(mi, m)| (m.1.to_string(), vec![value(ci, mi, r)]))
                    .collect();
                out.push(StoredRun {
                    exit_code: Some(0),
                    started_at: 1_700_000_000.0 + id as f64,
                    ..StoredRun::ok(id, r as u32, id as u32, *c, w.clone(), samples)
                });
            }
        }
    }
    ExperimentData {
        info: ExperimentInfo {
            id: 1,
            name: "readable".into(),
            label: None,
            plan_source: "readable.toml".into(),
            plan_text: String::new(),
            overrides: Overrides::default(),
            host: "box".into(),
            fingerprint: BTreeMap::new(),
            seed: 1,
            order: "random-blocks".into(),
            runs_per_cell: runs as u32,
            warmup: 0,
            baseline: configs[0].into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            finished_at: Some("2026-01-01T00:01:00Z".into()),
            status: ExperimentStatus::Complete,
            entered_config: None,
            self_usage: None,
            fleet_id: None,
            fleet_host: None,
            configs: configs.iter().map(|c| c.to_string()).collect(),
            workloads,
        },
        metrics: metrics
            .iter()
            .map(|m| StoredMetric {
                workload: m.0.into(),
                spec: MetricSpec::new(m.1, m.2, Direction::Lower),
            })
            .collect(),
        runs: out,
        events: vec![],
        series: vec![],
        profiles: vec![],
        boots: vec![],
    }
}

fn render_with(d: &ExperimentData, format: Format, detail: bool, unit: Option<TimeUnit>) -> String {
    report::render(
        d,
        &ReportOptions {
            format,
            detail,
            trim: detail.then_some(1),
            time_unit: unit,
            analysis: analysis::Options {
                resamples: 2000,
                ..Default::default()
            },
        },
    )
    .unwrap()
}

fn render(d: &ExperimentData, format: Format) -> String {
    render_with(d, format, false, None)
}

/// Noise of +-2% around `v`.
fn noisy(v: f64, rng: &mut Lcg) -> f64 {
    v * (0.98 + 0.04 * rng.next())
}

fn thresholds() -> ExperimentData {
    let rng = std::cell::RefCell::new(Lcg(5));
    data(
        &["base", "new"],
        &[
            ("fast", "wall", "s"),
            ("slow", "wall", "s"),
            ("small", "rss", "KiB"),
            ("big", "rss", "KiB"),
            ("tiny", "x", ""),
        ],
        12,
        |_, mi, _| {
            let v = [1.0e-3, 2.0, 900.0, 2048.0, 3.428e-4][mi];
            noisy(v, &mut rng.borrow_mut()) * if mi == 0 { 1.02 } else { 1.0 }
        },
    )
}

#[test]
fn units_switch_at_the_thresholds() {
    let d = thresholds();
    let text = render(&d, Format::Text);
    // The column titles: workload, then name and unit.
    for want in ["wall ms", "wall s", "rss KiB", "rss MiB"] {
        assert!(
            text.lines().any(|l| l.contains(&format!(" {want} |"))),
            "no column '{want}' in:\n{text}"
        );
    }
    let md = render(&d, Format::Markdown);
    for want in ["wall (ms)", "wall (s)", "rss (KiB)", "rss (MiB)"] {
        assert!(md.contains(want), "no '{want}' in:\n{md}");
    }
    // CSV: the unit column goes with the values in it.
    let csv = render(&d, Format::Csv);
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    let col = |name: &str| rows[0].iter().position(|c| *c == name).unwrap();
    let (w, u, mean) = (col("workload"), col("unit"), col("mean"));
    let mean_of = |wl: &str| {
        let r = rows.iter().find(|r| r[w] == wl).unwrap();
        (r[u], r[mean].parse::<f64>().unwrap())
    };
    let (unit, v) = mean_of("fast");
    assert!(unit == "ms" && (0.9..1.2).contains(&v), "fast: {v} {unit}");
    let (unit, v) = mean_of("slow");
    assert!(unit == "s" && (1.9..2.1).contains(&v), "slow: {v} {unit}");
    let (unit, v) = mean_of("big");
    assert!(unit == "MiB" && (1.9..2.1).contains(&v), "big: {v} {unit}");
    let (unit, v) = mean_of("small");
    assert!(
        unit == "KiB" && (850.0..950.0).contains(&v),
        "small: {v} {unit}"
    );
    // The HTML tables and plots carry the same units.
    let html = render(&d, Format::Html);
    assert!(html.contains("(ms, lower is better)"), "no ms in the HTML");
    // JSON keeps the stored units and values, as its raw samples are.
    let json: serde_json::Value = serde_json::from_str(&render(&d, Format::Json)).unwrap();
    assert_eq!(json["analysis"]["metrics"][0]["unit"], "s");
}

#[test]
fn time_unit_forces_one_unit() {
    let d = thresholds();
    let text = render_with(&d, Format::Text, false, Some(TimeUnit::Microsecond));
    assert!(text.contains(" wall us |"), "{text}");
    assert!(!text.contains(" wall s |") && !text.contains(" wall ms |"));
    // 1 ms is 1000 us, 2 s is 2000000 us.
    assert!(text
        .lines()
        .any(|l| l.starts_with("| base ") && l.contains(" 10")));
    // Sizes are not times: unchanged.
    assert!(text.contains(" rss MiB |"), "{text}");
}

#[test]
fn no_e_notation_in_any_format() {
    let d = thresholds();
    let e = regex_free_e_notation;
    for (name, f) in [
        ("text", Format::Text),
        ("markdown", Format::Markdown),
        ("csv", Format::Csv),
        ("html", Format::Html),
    ] {
        let out = render_with(&d, f, f == Format::Text, None);
        assert!(e(&out).is_none(), "{name}: {:?}", e(&out));
        // Warnings' p-values too (this data drifts: Mann-Kendall p ~1e-11).
        let out = render(&disagreeing(), f);
        assert!(
            f != Format::Text || out.contains("Mann-Kendall p < 0.001"),
            "{name}"
        );
        assert!(e(&out).is_none(), "{name}: {:?}", e(&out));
    }
}

/// The first `1.5e-4`-like number in `s`, if any.
fn regex_free_e_notation(s: &str) -> Option<String> {
    let b = s.as_bytes();
    (1..b.len().saturating_sub(2)).find_map(|i| {
        let ok = b[i - 1].is_ascii_digit()
            && (b[i] == b'e' || b[i] == b'E')
            && (b[i + 1] == b'-' || b[i + 1] == b'+' || b[i + 1].is_ascii_digit())
            && b.get(i + 2).is_some_and(u8::is_ascii_digit);
        // Inside a word (a hex hash, a CSS colour, "2e4a") it is no number.
        let word = i >= 2 && b[i - 2].is_ascii_alphabetic();
        (ok && !word).then(|| s[i.saturating_sub(8)..(i + 6).min(s.len())].to_string())
    })
}

fn many_metrics() -> ExperimentData {
    let rng = std::cell::RefCell::new(Lcg(9));
    let names = [
        ("a-workload-with-a-long-name", "vmstat.si_per_s", "1/s"),
        (
            "a-workload-with-a-long-name",
            "meminfo.memavailable_min_kb",
            "KiB",
        ),
        ("a-workload-with-a-long-name", "wall", "s"),
        (
            "a-workload-with-a-long-name",
            "counters.instructions_per_cycle",
            "instructions/cycle",
        ),
        ("b", "profile.kernel_pct", "%"),
        ("b", "wall", "s"),
        ("b", "a_name_with_no_dots_at_all_that_is_long", "ops/s"),
        ("c", "wall", "s"),
    ];
    data(
        &[
            "baseline",
            "patched-thp-a",
            "patched-thp-b",
            "a-config-name-so-long-that-it-needs-a-line-of-its-own-above-its-row",
        ],
        &names,
        10,
        |ci, mi, _| noisy(10.0 + mi as f64, &mut rng.borrow_mut()) * (1.0 + 0.1 * ci as f64),
    )
}

#[test]
fn configs_with_a_long_common_prefix_are_different_rows() {
    let text = render(&many_metrics(), Format::Text);
    let rows = |name: &str| {
        text.lines()
            .filter(|l| l.starts_with(&format!("| {name} ")))
            .count()
    };
    // One row per table block for each, never merged into one name.
    assert!(rows("patched-thp-a") > 0, "{text}");
    assert_eq!(rows("patched-thp-a"), rows("patched-thp-b"), "{text}");
    assert!(
        text.contains("a-config-name-so-long-that-it-needs-a-line-of-its-own-above-its-row"),
        "a long config name is printed whole:\n{text}"
    );
}

#[test]
fn text_reports_fit_80_columns_and_clip_nothing() {
    let d = many_metrics();
    for detail in [false, true] {
        let text = render_with(&d, Format::Text, detail, None);
        for l in text.lines() {
            assert!(l.chars().count() <= 80, "over 80 columns: {l:?}");
            // A table cell never ends in a truncation mark.
            if l.starts_with('|') {
                for cell in l.split('|').map(str::trim) {
                    assert!(!cell.ends_with('~'), "clipped cell in {l:?}");
                }
            }
        }
        // Names break at '.', never mid-word: `vmstat.` over `si_per_s`.
        assert!(
            text.contains(" vmstat. |") || text.contains(" vmstat.si_per_s"),
            "{text}"
        );
        assert!(!text.contains("vmstat.si_ "), "{text}");
    }
}

/// Two workloads built so that each disagreement case happens: in `rank`
/// the config's bulk is 5% slower but both sides have the same few huge
/// outliers (the rank test sees the shift, the mean's CI is wide); in
/// `mean` the bulk is identical and the config has five outliers (the
/// mean's CI is far from 0, the rank test is not significant).
fn disagreeing() -> ExperimentData {
    data(
        &["base", "new"],
        &[("rank", "wall", "s"), ("mean", "wall", "s")],
        30,
        |ci, mi, r| {
            let bulk = 1.0 + 0.01 * ((r * 7919) % 30) as f64 / 30.0;
            match mi {
                0 if r < 3 => 5.0 + r as f64 * (1.0 + ci as f64),
                0 => bulk * if ci == 1 { 1.05 } else { 1.0 },
                _ if ci == 1 && r % 6 == 1 => 5.0,
                _ => bulk,
            }
        },
    )
}

#[test]
fn verdict_and_ci_disagreements_are_marked_and_explained() {
    let d = disagreeing();
    let text = render(&d, Format::Text);
    let delta = text
        .lines()
        .find(|l| l.starts_with("|   delta (%)"))
        .unwrap_or_else(|| panic!("{text}"));
    let ci = text.lines().find(|l| l.starts_with("|   95% CI")).unwrap();
    let cells: Vec<&str> = delta.split('|').map(str::trim).collect();
    let cis: Vec<&str> = ci.split('|').map(str::trim).collect();
    // Column 2 is `rank`, 3 is `mean`.
    assert!(cells[2].ends_with("worse*"), "rank: {delta}");
    assert!(cis[2].starts_with("[-"), "rank CI crosses 0: {ci}");
    assert!(
        cells[3].starts_with('~') && cells[3].ends_with('#'),
        "mean: {delta}"
    );
    assert!(cis[3].starts_with("[+"), "mean CI excludes 0: {ci}");
    assert!(
        text.contains("* rank test significant, mean CI crosses 0"),
        "{text}"
    );
    assert!(
        text.contains("# mean CI excludes 0, rank test not significant after correction"),
        "{text}"
    );
    let md = render(&d, Format::Markdown);
    assert!(md.contains("worse\\*") && md.contains("rank test significant, mean CI crosses 0"));
    let html = render(&d, Format::Html);
    assert!(html.contains("worse*") && html.contains("rank test not significant after correction"));
}

#[test]
fn geomean_row_matches_an_independent_bootstrap() {
    let ratios = [1.10, 1.20, 0.95];
    let runs = 30;
    let rng = std::cell::RefCell::new(Lcg(77));
    let d = data(
        &["base", "new"],
        &[("a", "wall", "s"), ("b", "wall", "s"), ("c", "wall", "s")],
        runs,
        |ci, mi, _| {
            let scale = if ci == 1 { ratios[mi] } else { 1.0 };
            scale * (1.0 + mi as f64) * (0.9 + 0.2 * rng.borrow_mut().next())
        },
    );
    // Each cell's values as the report sees them.
    let cell = |config: &str, w: &str| -> Vec<f64> {
        d.runs
            .iter()
            .filter(|r| r.config == config && r.workload == w)
            .map(|r| r.samples["wall"][0])
            .collect()
    };
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let cells: Vec<(Vec<f64>, Vec<f64>)> = ["a", "b", "c"]
        .iter()
        .map(|w| (cell("base", w), cell("new", w)))
        .collect();
    let geo = |cs: &[(Vec<f64>, Vec<f64>)]| {
        let logs: f64 = cs.iter().map(|(b, n)| (mean(n) / mean(b)).ln()).sum();
        (logs / cs.len() as f64).exp()
    };
    let point = geo(&cells);
    // A bootstrap of the geometric mean itself: runs resampled within
    // each cell, 4000 times.
    let mut r = Lcg(3);
    let mut pick = |v: &[f64]| -> Vec<f64> {
        (0..v.len())
            .map(|_| v[(r.next() * v.len() as f64) as usize])
            .collect()
    };
    let mut boots: Vec<f64> = (0..4000)
        .map(|_| {
            let cs: Vec<(Vec<f64>, Vec<f64>)> =
                cells.iter().map(|(b, n)| (pick(b), pick(n))).collect();
            geo(&cs)
        })
        .collect();
    boots.sort_by(f64::total_cmp);
    let (lo, hi) = (boots[100], boots[3899]);

    let json: serde_json::Value = serde_json::from_str(&render(&d, Format::Json)).unwrap();
    let g = &json["analysis"]["geomean"][0];
    assert_eq!(g["config"], "new");
    assert_eq!(g["workloads"], 3);
    let got = g["ratio"].as_f64().unwrap();
    assert!((got - point).abs() < 1e-9, "geomean {got} vs {point}");
    assert!(
        (got - (1.10f64 * 1.20 * 0.95).cbrt()).abs() < 0.03,
        "near the true ratio: {got}"
    );
    let (glo, ghi) = (
        g["ratio_ci"][0].as_f64().unwrap(),
        g["ratio_ci"][1].as_f64().unwrap(),
    );
    let width = hi - lo;
    assert!(
        (glo - lo).abs() < 0.25 * width && (ghi - hi).abs() < 0.25 * width,
        "CI [{glo}, {ghi}] vs bootstrap [{lo}, {hi}]"
    );
    let text = render(&d, Format::Text);
    let pct = 100.0 * (got - 1.0);
    assert!(
        text.contains(&format!("wall, new vs base over 3 workloads: {pct:+.1}% [")),
        "{text}"
    );
}

#[test]
fn time_unit_flag_on_the_command_line() {
    let sb = Sandbox::new();
    let fixture = format!(
        "{}/tests/fixtures/hyperfine.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = sb.run(&["import", "hyperfine", &fixture]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let id = stdout(&out).trim().to_string();
    // hyperfine's times here are 1-5 ms.
    let report = |args: &[&str]| {
        let mut a = vec!["report", id.as_str()];
        a.extend_from_slice(args);
        let o = sb.run(&a);
        assert!(o.status.success(), "{}", common::stderr(&o));
        stdout(&o)
    };
    assert!(report(&[]).contains(" wall ms |"));
    assert!(report(&["--time-unit", "microsecond"]).contains(" wall us |"));
    assert!(report(&["-u", "second"]).contains(" wall s |"));
    let bad = sb.run(&["report", &id, "--time-unit", "fortnight"]);
    assert_eq!(bad.status.code(), Some(2));
}

/// Every key of a JSON value, but not the keys of maps whose keys are data
/// (fingerprint fields, metric names of samples, self-usage fields).
fn json_keys(v: &serde_json::Value, out: &mut std::collections::BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                out.insert(k.clone());
                if !["fingerprint", "samples", "self_usage"].contains(&k.as_str()) {
                    json_keys(x, out);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| json_keys(x, out)),
        _ => {}
    }
}

#[test]
fn every_json_field_and_csv_column_is_documented() {
    let doc =
        std::fs::read_to_string(format!("{}/docs/reports.md", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let d = thresholds();
    let opts = |format| ReportOptions {
        format,
        detail: false,
        trim: None,
        time_unit: None,
        analysis: analysis::Options {
            resamples: 500,
            equivalence: Some(0.01),
            correction: analysis::Correction::Bh,
            ..Default::default()
        },
    };
    let json: serde_json::Value =
        serde_json::from_str(&report::render(&d, &opts(Format::Json)).unwrap()).unwrap();
    let mut keys = std::collections::BTreeSet::new();
    json_keys(&json, &mut keys);
    assert!(keys.contains("geomean") && keys.contains("equivalence"));
    let missing: Vec<&String> = keys
        .iter()
        .filter(|k| !doc.contains(&format!("`{k}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "JSON fields not in docs/reports.md: {missing:?}"
    );
    // One time format: RFC 3339 strings, never Unix seconds.
    assert!(json["runs"][0]["started_at"]
        .as_str()
        .unwrap()
        .ends_with('Z'));

    let csv = report::render(&d, &opts(Format::Csv)).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let missing: Vec<&&str> = header
        .iter()
        .filter(|c| !doc.contains(&format!("`{c}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "CSV columns not in docs/reports.md: {missing:?}"
    );
    // The CSV says which correction it used, and says "noise" as JSON does.
    assert!(header.contains(&"p_adjusted") && !header.contains(&"p_holm"));
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let col = |n: &str| header.iter().position(|c| *c == n).unwrap();
    assert!(rows.iter().all(|r| r[col("correction")] == "bh"));
    // So does the HTML table of every comparison.
    let html = report::render(&d, &opts(Format::Html)).unwrap();
    assert!(html.contains("<th>p (BH)</th>") && !html.contains("p (Holm)"));
    assert!(rows.iter().any(|r| r[col("verdict")] == "noise"));
    assert!(rows.iter().all(|r| r[col("verdict")] != "~"));
    // The CI columns are on the scale of delta_mean_pct (percent).
    let r = rows
        .iter()
        .find(|r| r[col("workload")] == "fast" && r[col("config")] == "new")
        .unwrap();
    let (d, lo, hi) = (
        r[col("delta_mean_pct")].parse::<f64>().unwrap(),
        r[col("delta_ci_low_pct")].parse::<f64>().unwrap(),
        r[col("delta_ci_high_pct")].parse::<f64>().unwrap(),
    );
    assert!(lo < d && d < hi, "{lo} < {d} < {hi}");
}
