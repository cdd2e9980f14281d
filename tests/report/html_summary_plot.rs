//! The HTML report's summary plot as a reviewer reads it: axis ticks at
//! round changes, every point's value written beside it, a row without a
//! CI marked as such (not drawn like "within noise"), and the plot's data
//! in view on a phone-sized window without scrolling sideways.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{chromium, create_experiment, record_ok, stderr, Sandbox};
use sysdelta::metric::{Direction, MetricSpec};
use sysdelta::store::Store;
use sysdelta::workload::MetricSamples;

const RUNS: u32 = 30;

/// Config a (baseline) and b, 30 runs each: `wall` about 30% higher in b,
/// and `faults`, zero in all but two runs per config, whose ratio CI is
/// not estimable (a resample of a's runs is all zeros). Returns each
/// metric's per-config values.
fn store(sb: &Sandbox) -> Vec<(&'static str, Vec<f64>, Vec<f64>)> {
    let store = Store::open(&sb.store(), true).unwrap();
    let specs = [
        MetricSpec::new("wall", "s", Direction::Lower),
        MetricSpec::new("faults", "", Direction::Lower),
    ];
    let id = create_experiment(&store, "summary", &["a", "b"], RUNS, &specs);
    let mut vals = vec![("wall", vec![], vec![]), ("faults", vec![], vec![])];
    for block in 0..RUNS {
        for (seq, config) in ["a", "b"].into_iter().enumerate() {
            let i = f64::from(block);
            let b = config == "b";
            let wall = if b { 13.0 } else { 10.0 } + (i * 7.0) % 5.0 * 0.05;
            let faults = match (b, block) {
                (false, 3 | 17) => 0.9,
                (true, 11 | 23) => 2.2,
                _ => 0.0,
            };
            for (m, v) in vals.iter_mut().zip([wall, faults]) {
                if b { &mut m.2 } else { &mut m.1 }.push(v);
            }
            let samples = [
                MetricSamples {
                    metric: "wall".into(),
                    values: vec![wall],
                },
                MetricSamples {
                    metric: "faults".into(),
                    values: vec![faults],
                },
            ];
            record_ok(&store, id, (block, seq as u32), config, &samples);
        }
    }
    store
        .finish(id, sysdelta::status::ExperimentStatus::Complete, None)
        .unwrap();
    vals
}

fn report(sb: &Sandbox) -> String {
    let out = sb.run(&["report", "last", "--format", "html"]);
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// The summary section's drawings: (class, svg).
fn summary_svgs(page: &str) -> Vec<(String, String)> {
    let s = &page[page.find("id=\"summary\"").unwrap()..page.find("id=\"metrics\"").unwrap()];
    s.split("<div class=\"")
        .skip(1)
        .filter_map(|d| {
            let class = d[..d.find('"')?].to_string();
            let svg = &d[d.find("<svg")?..d.find("</svg>")?];
            Some((class, svg.to_string()))
        })
        .collect()
}

/// (attributes, text) of every `<text>` element.
fn texts(svg: &str) -> Vec<(String, String)> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let gt = t.find('>')?;
            let body = &t[gt + 1..];
            Some((
                t[..gt].to_string(),
                body[..body.find("</text>")?].trim().to_string(),
            ))
        })
        .collect()
}

/// A tick label: a signed whole or decimal percent, in black.
fn ticks(svg: &str) -> Vec<String> {
    texts(svg)
        .into_iter()
        .filter(|(attrs, t)| {
            attrs.contains("fill=\"#000000\"")
                && t.ends_with('%')
                && t[..t.len() - 1]
                    .trim_start_matches(['+', '-'])
                    .parse::<f64>()
                    .is_ok()
        })
        .map(|(_, t)| t)
        .collect()
}

/// The round changes an axis may be labelled with, in percent.
fn round_percents() -> Vec<String> {
    let mut v = vec!["0%".to_string()];
    for p in [
        "0.1", "0.2", "0.5", "1", "2", "5", "10", "25", "50", "100", "200", "500", "1000",
    ] {
        v.push(format!("+{p}%"));
    }
    for p in [
        "0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "50", "80", "90", "95", "98", "99",
    ] {
        v.push(format!("-{p}%"));
    }
    v
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn summary_plot_has_round_ticks_values_and_marks_rows_without_a_ci() {
    let sb = Sandbox::new();
    let vals = store(&sb);
    let page = report(&sb);
    let svgs = summary_svgs(&page);
    let classes: Vec<&str> = svgs.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(classes, ["wide", "narrow"], "a wide and a phone drawing");
    let allowed = round_percents();
    for (class, svg) in &svgs {
        assert!(svg.contains("viewBox"), "{class}: scalable SVG");
        let t = ticks(svg);
        assert!(t.len() >= 3 && t.contains(&"0%".into()), "{class}: {t:?}");
        for tick in &t {
            assert!(allowed.contains(tick), "{class}: tick {tick} is not round");
        }
        assert!(!svg.contains('\u{d7}'), "{class}: no e-power ratio ticks");
        // Every point's change beside it, as the report computes it: the
        // ratio of means (one decimal below 100%).
        let all: Vec<String> = texts(svg).into_iter().map(|(_, t)| t).collect();
        for (m, a, b) in &vals {
            let d = (mean(b) / mean(a) - 1.0) * 100.0;
            let want = if d.abs() < 100.0 {
                format!("{d:+.1}%")
            } else {
                format!("{d:+.0}%")
            };
            let want = if *m == "faults" {
                format!("{want} (not estimable)")
            } else {
                want
            };
            assert!(all.contains(&want), "{class}: {m}: no {want:?} in {all:?}");
        }
    }
    // The legend says what the mark of a missing CI is.
    assert!(page.contains("no CI (not estimable"), "legend");
    // Nothing forces a drawing wider than the window.
    assert!(!page.contains("max-width:none"));
    assert!(page.contains("svg{max-width:100%"));
}

/// Where the summary plot lands in a `w` x `h` window: the page with a
/// probe script appended (the report itself has none) is loaded in
/// headless Chromium in a `w` x `h` frame (headless windows are at least
/// 500 px wide; a frame is its own viewport, media queries included), and
/// the probe writes the measurements into the outer page's title.
fn measure(browser: &Path, sb: &Sandbox, page: &str, w: u32, h: u32) -> serde_json::Value {
    const PROBE: &str = r#"<script>
const fig = document.querySelector('#summary ~ figure');
const shown = [...fig.children].find(d => d.offsetWidth > 0);
const svg = shown.querySelector('svg');
const r = svg.getBoundingClientRect();
parent.document.title = JSON.stringify({
  vw: window.innerWidth, shown: shown.className, left: r.left, right: r.right,
  scale: r.width / svg.viewBox.baseVal.width,
  scroll_width: document.documentElement.scrollWidth});
</script>"#;
    let inner = page
        .replace("</body>", &format!("{PROBE}</body>"))
        .replace('&', "&amp;")
        .replace('"', "&quot;");
    let probe = sb.write(
        &format!("probe-{w}.html"),
        &format!(
            "<!DOCTYPE html><html><head><title>none</title></head>\
             <body style=\"margin:0\"><iframe style=\"border:0;display:block\" \
             width=\"{w}\" height=\"{h}\" srcdoc=\"{inner}\"></iframe></body></html>"
        ),
    );
    let profile = tempfile::tempdir_in(sb.dir.path()).unwrap();
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-background-networking",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--dump-dom",
        ])
        .arg(format!("--window-size={},{}", w.max(500) + 20, h + 20))
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", probe.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium: {}", stderr(&out));
    let dom = String::from_utf8_lossy(&out.stdout);
    let title = &dom[dom.find("<title>").unwrap() + 7..dom.find("</title>").unwrap()];
    let title = title.replace("&quot;", "\"").replace("&amp;", "&");
    serde_json::from_str(&title).unwrap_or_else(|e| panic!("{e}: {title}"))
}

#[test]
fn summary_plot_is_in_view_on_a_phone_and_on_a_desktop() {
    let Some(browser) = chromium() else { return };
    let sb = Sandbox::new();
    store(&sb);
    let page = report(&sb);

    let m = measure(&browser, &sb, &page, 420, 800);
    let vw = m["vw"].as_f64().unwrap();
    assert!(vw <= 420.0, "{m}");
    assert_eq!(m["shown"], "narrow", "{m}");
    assert!(m["left"].as_f64().unwrap() >= 0.0, "{m}");
    assert!(
        m["right"].as_f64().unwrap() <= vw,
        "the plot's data in view: {m}"
    );
    assert!(
        m["scale"].as_f64().unwrap() >= 0.9,
        "drawn at (nearly) full size, its text readable: {m}"
    );
    assert!(
        m["scroll_width"].as_f64().unwrap() <= vw,
        "nothing needs a horizontal scroll: {m}"
    );

    let m = measure(&browser, &sb, &page, 1400, 1000);
    assert_eq!(m["shown"], "wide", "{m}");
    assert!(
        m["right"].as_f64().unwrap() <= m["vw"].as_f64().unwrap(),
        "{m}"
    );
}
