//! Runs shorter than the monitor interval still show their series: 4
//! configs x 3 workloads of 20 ms under vmstat at 1 s used to give 51 blank
//! plots (each run had one value, drawn as a line through one point). Now
//! every time-series plot in the HTML report has something drawn in it.
//! Also: the plan's monitors-off control runs the probe beside the
//! baseline, and the report prints the monitor overhead line (with a CI)
//! instead of showing the control as a config or the probe as a workload.

use crate::common;

use common::Sandbox;

const PLAN: &str = r#"
name = "short-runs"
runs = 3
seed = 5
monitors = ["vmstat"]
monitor_interval = "1s"

[[config]]
name = "c1"
[[config]]
name = "c2"
[[config]]
name = "c3"
[[config]]
name = "c4"

[[workload]]
name = "w1"
command = "sleep 0.02"
[[workload]]
name = "w2"
command = "sleep 0.02"
[[workload]]
name = "w3"
command = "sleep 0.02"
"#;

/// The `<svg>...</svg>` documents of the report's time-series section
/// (each plot's wide and narrow drawing).
fn series_svgs(html: &str) -> Vec<&str> {
    let start = html
        .find("<h2 id=\"series\">")
        .expect("a time-series section");
    let end = html[start + 4..]
        .find("<h2 id=")
        .map_or(html.len(), |e| start + 4 + e);
    let section = &html[start..end];
    let mut out = Vec::new();
    let mut rest = section;
    while let Some(s) = rest.find("<svg") {
        let e = rest[s..].find("</svg>").expect("closed svg") + s + 6;
        out.push(&rest[s..e]);
        rest = &rest[e..];
    }
    out
}

/// Marks of data a plotters SVG holds: markers (circle, triangle polygon,
/// cross lines) and lines of more than one point (polylines with at least
/// two coordinate pairs in a data colour). The axes are drawn in black.
fn data_marks(svg: &str) -> usize {
    let markers = svg.matches("<circle").count() + svg.matches("<polygon").count();
    let lines = svg
        .split("<polyline")
        .skip(1)
        .filter(|p| {
            let tag = &p[..p.find("/>").unwrap_or(p.len())];
            let black = tag.contains("stroke=\"#000000\"") || tag.contains("stroke=\"black\"");
            let pts = tag
                .split("points=\"")
                .nth(1)
                .map(|s| s[..s.find('"').unwrap_or(0)].split_whitespace().count())
                .unwrap_or(0);
            !black && pts >= 2
        })
        .count();
    markers + lines
}

#[test]
fn no_time_series_plot_is_empty_when_runs_are_shorter_than_the_interval() {
    let sb = Sandbox::new();
    let plan = sb.write("plan.toml", PLAN);
    let out = sb.run(&["run", plan.to_str().unwrap(), "--quiet", "--no-report"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = sb.path("r.html");
    let out = sb.run(&["report", "--export-html", html.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&html).unwrap();
    let svgs = series_svgs(&html);
    // 17 vmstat series per workload, 3 workloads: each plot drawn for a
    // window and for a phone, and neither may be empty.
    assert_eq!(
        svgs.len(),
        2 * 17 * 3,
        "one plot per workload and series, twice"
    );
    let empty: Vec<usize> = (0..svgs.len())
        .filter(|&i| data_marks(svgs[i]) == 0)
        .collect();
    assert!(
        empty.is_empty(),
        "empty plots: {empty:?}\n{}",
        svgs[empty[0]]
    );
    assert!(html.contains("one point per run"), "the caption says so");
    assert!(
        html.contains("id=\"monitor-overhead\""),
        "the HTML report has the overhead lines"
    );
    if std::env::var_os("SYSDELTA_KEEP_HTML").is_some() {
        let keep = std::path::Path::new("/tmp/sysdelta-short-runs.html");
        std::fs::write(keep, &html).unwrap();
        eprintln!("kept {}", keep.display());
    }

    // The control config ran the probe beside the baseline, 7 times a
    // block each (3 runs: 21 a side), and is the overhead line, with a
    // CI, not a column; the probe is no workload of the table.
    let out = sb.run(&["report"]);
    let text = String::from_utf8_lossy(&out.stdout);
    // The text report wraps at 80 columns: read it as one line of words.
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let at = words
        .find("monitor overhead, monitor probe/step: ")
        .unwrap_or_else(|| panic!("overhead line:\n{text}"));
    let line = &words[at..words[at..].find(" better)").map_or(words.len(), |e| at + e)];
    assert!(
        line.contains("(21 runs with, 21 without")
            && line.contains("% [")
            && line.contains("(median shift)"),
        "{line}"
    );
    assert!(!text.contains("| monitor probe"), "no probe row:\n{text}");
    assert!(
        !words.contains("(monitors off)/w"),
        "the control runs no workload of the plan, and no warning says it did:\n{text}"
    );
    assert!(
        !text.contains("| c1 (monitors off)"),
        "the control is no config row:\n{text}"
    );
}
