//! Every value a report draws or tabulates on its own is in the unit its
//! axis or heading names (issue 29's first two defects):
//! - the HTML "run in execution order" panel plots each run's value on the
//!   metric's display-unit axis (it plotted the stored s and KiB against
//!   an axis in ms and MiB, so every point sat on one flat line);
//! - the LMbench summary prints times in microseconds under "times in
//!   microseconds" (fork showed 22.204 for a stored 22,204 us).

use std::collections::BTreeMap;

use sysdelta::analysis;
use sysdelta::metric::{Direction, MetricSpec};
use sysdelta::plan::Overrides;
use sysdelta::report::{self, Format, ReportOptions};
use sysdelta::status::ExperimentStatus;
use sysdelta::store::{ExperimentData, ExperimentInfo, StoredMetric, StoredRun};

/// Two configs interleaved, 10 runs each, one workload whose metrics are
/// (name, unit, value of run i in config c).
fn data(metrics: &[(&str, &str)], value: impl Fn(&str, usize, usize) -> f64) -> ExperimentData {
    let configs: Vec<String> = ["base", "other"].map(String::from).to_vec();
    let mut runs = Vec::new();
    for i in 0..10usize {
        for (c, config) in configs.iter().enumerate() {
            let id = (2 * i + c + 1) as i64;
            let samples = (metrics.iter())
                .map(|(m, _)| (m.to_string(), vec![value(m, c, i)]))
                .collect();
            runs.push(StoredRun {
                exit_code: Some(0),
                started_at: 1_700_000_000.0 + id as f64,
                ..StoredRun::ok(id, i as u32, c as u32, config, "w", samples)
            });
        }
    }
    let info = ExperimentInfo {
        id: 1,
        name: "units".into(),
        label: None,
        plan_source: "t.toml".into(),
        plan_text: String::new(),
        overrides: Overrides::default(),
        host: "box".into(),
        fingerprint: BTreeMap::new(),
        seed: 1,
        order: "random-blocks".into(),
        runs_per_cell: 10,
        warmup: 0,
        baseline: "base".into(),
        created_at: "2026-01-01T00:00:00Z".into(),
        finished_at: None,
        status: ExperimentStatus::Complete,
        entered_config: None,
        self_usage: None,
        fleet_id: None,
        fleet_host: None,
        configs,
        workloads: vec!["w".into()],
    };
    ExperimentData {
        info,
        metrics: metrics
            .iter()
            .map(|(m, u)| StoredMetric {
                workload: "w".into(),
                spec: MetricSpec::new(m, u, Direction::Lower),
            })
            .collect(),
        runs,
        events: vec![],
        series: vec![],
        profiles: vec![],
        boots: vec![],
    }
}

fn render(d: &ExperimentData, format: Format) -> String {
    report::render(
        d,
        &ReportOptions {
            format,
            detail: false,
            trim: None,
            analysis: analysis::Options {
                resamples: 200,
                ..Default::default()
            },
            time_unit: None,
        },
    )
    .unwrap()
}

/// The value of attribute `name` in the tag that starts `tag`.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let i = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    Some(&tag[i..i + tag[i..].find('"')?])
}

/// The two plots of `metric`, the first two SVGs after its heading: its
/// values per config, and its runs in execution order (each its own SVG
/// with its own y ticks, samples.rs).
fn metric_svgs<'a>(html: &'a str, metric: &str) -> [&'a str; 2] {
    let mut at = html
        .find(&format!("<h4>{metric} <small>"))
        .unwrap_or_else(|| panic!("no section for {metric}"));
    [0, 1].map(|_| {
        let s = at + html[at..].find("<svg").unwrap();
        at = s + html[s..].find("</svg>").unwrap();
        &html[s..at]
    })
}

/// A linear map from a y pixel to a value, from the plot's labelled y
/// ticks (`<text ... text-anchor="end">1.05</text>`).
fn y_axis(svg: &str) -> (f64, f64) {
    let mut ticks = Vec::new();
    for t in svg.split("<text").skip(1) {
        let (tag, rest) = t.split_once('>').unwrap();
        let label = rest.split("</text>").next().unwrap().trim();
        if attr(tag, "text-anchor") == Some("end") {
            if let Ok(v) = label.parse::<f64>() {
                ticks.push((attr(tag, "y").unwrap().parse::<f64>().unwrap(), v));
            }
        }
    }
    assert!(ticks.len() >= 2, "fewer than 2 labelled ticks: {ticks:?}");
    let (a, b) = (ticks[0], ticks[ticks.len() - 1]);
    let slope = (b.1 - a.1) / (b.0 - a.0);
    (slope, a.1 - slope * a.0)
}

/// The (x, y) points of the run-order plot's line in `color`.
fn run_order_line(svg: &str, color: &str) -> Vec<(f64, f64)> {
    for p in svg.split("<polyline").skip(1) {
        let tag = p.split("/>").next().unwrap();
        if attr(tag, "stroke") != Some(color) || attr(tag, "stroke-width") != Some("1") {
            continue;
        }
        return attr(tag, "points")
            .unwrap()
            .split_whitespace()
            .map(|xy| {
                let (x, y) = xy.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect();
    }
    panic!("no run-order line in {color}");
}

#[test]
fn execution_order_points_map_through_the_axis_to_the_stored_values() {
    // wall in s, shown in ms; maxrss in KiB, shown in MiB.
    let value = |m: &str, c: usize, i: usize| match m {
        "wall" => 0.010 + 0.0002 * i as f64 + 0.001 * c as f64,
        _ => 4096.0 + 100.0 * i as f64 + 300.0 * c as f64,
    };
    let d = data(&[("wall", "s"), ("maxrss", "KiB")], value);
    let html = render(&d, Format::Html);
    // (metric, display unit, its size in the stored unit)
    for (metric, unit, per) in [("wall", "ms", 1e-3), ("maxrss", "MiB", 1024.0)] {
        assert!(
            html.contains(&format!("<h4>{metric} <small>({unit},")),
            "{metric} is not shown in {unit}"
        );
        // The run-order plot, read through its own y ticks.
        let svg = metric_svgs(&html, metric)[1];
        let (slope, at0) = y_axis(svg);
        // One pixel of the axis, in the display unit: the rounding of an
        // SVG coordinate.
        let px = slope.abs() * 1.5;
        for (c, color) in [(0, "#1A1A1A"), (1, "#E69F00")] {
            let line = run_order_line(svg, color);
            assert_eq!(line.len(), 10, "{metric} config {c}: {line:?}");
            for (i, (_, y)) in line.iter().enumerate() {
                let shown = at0 + slope * y;
                let want = value(metric, c, i) / per;
                assert!(
                    (shown - want).abs() <= px,
                    "{metric} config {c} run {i}: the point reads {shown} {unit} on the axis, the run's value is {want} {unit}"
                );
            }
        }
    }
}

#[test]
fn the_lmbench_summary_prints_microseconds_under_its_microseconds_heading() {
    // fork: 22,204 us (shown as 22.20 ms in the main table); null call
    // 0.05 us (shown in ns there).
    let value = |m: &str, c: usize, i: usize| match m {
        "proc.fork_exit" => 22_204.0 + 10.0 * c as f64 + (i % 2) as f64,
        _ => 0.050 + 0.001 * c as f64,
    };
    let d = data(&[("proc.fork_exit", "us"), ("proc.null_call", "us")], value);
    let text = render(&d, Format::Text);
    let t = text
        .find("Processor, Processes - times in microseconds")
        .unwrap_or_else(|| panic!("no LMbench processor table:\n{text}"));
    let table: Vec<&str> = text[t..].lines().take(8).collect();
    let row = |label: &str| -> Vec<&str> {
        table
            .iter()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label} row in {table:#?}"))
            .split_whitespace()
            .collect()
    };
    // Columns: label, null call, fork process (catalog order).
    for (label, c) in [("base", 0), ("other", 1)] {
        let mean = |m: &str| (0..10).map(|i| value(m, c, i)).sum::<f64>() / 10.0;
        let r = row(label);
        assert_eq!(
            r[1],
            format!("{:.3}", mean("proc.null_call")),
            "null call: {table:#?}"
        );
        assert_eq!(
            r[2],
            format!("{:.1}", mean("proc.fork_exit")),
            "fork: {table:#?}"
        );
    }
}
