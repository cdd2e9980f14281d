//! The HTML report and the history page on a 420 px phone, in headless
//! Chromium: nothing is wider than the screen (the page, a table or a plot
//! scrolling sideways), no text is drawn smaller than 10 CSS px (plots
//! once shrank to 5 px text), and every cell of the per-metric tables is
//! on screen and not covered by another (a sticky verdict column once
//! hid the CI). The pages' screenshots at 1400 and 420 px are kept for a
//! human to look at (set SYSDELTA_SCREENSHOT_DIR to choose where).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{chromium, stderr, Sandbox};

/// 3 configs x 3 workloads: one config slower at one workload (and its
/// loop count, a metric that is no timing, 75% higher), one an A/A copy of
/// the baseline.
const PLAN: &str = r#"
name = "three by three"
runs = 10
warmup = 0
seed = 3
[[config]]
name = "base"
setup = ""
[[config]]
name = "slower-spin"
setup = "export EXTRA=3000"
[[config]]
name = "same-again"
setup = ""
[[workload]]
name = "spin"
command = 'i=0; n=$((4000+${EXTRA:-0})); while [ $i -lt $n ]; do i=$((i+1)); done; echo "loops $((n+$$%7))"'
# The loop count as a metric: a verdict however loaded the machine is.
metrics = [{ name = "loops", regex = 'loops (?P<value>[0-9]+)', unit = "loops" }]
[[workload]]
name = "sleepy"
command = 'sleep 0.01'
[[workload]]
name = "cat-file"
command = 'cat /etc/passwd > /dev/null'
"#;

/// Measures the page as laid out and writes the result as JSON into the
/// body's `data-check` attribute, which `--dump-dom` prints. Text in an
/// SVG is scaled as its SVG is; hidden elements (the other forest layout,
/// closed details) have no box and are left out; every `<details>` is
/// opened first, so that the tables a reader opens count. `wide` lists the page's
/// elements that scroll sideways (the page itself, a table's or a plot's
/// box); `covered` the table cells whose middle shows another element.
const PROBE: &str = r#"<script>
(() => {
  for (const d of document.querySelectorAll('details')) d.open = true;
  const root = document.documentElement, vw = root.getBoundingClientRect().width, small = [], wide = [];
  const body = document.body;
  if (body.scrollWidth > body.clientWidth + 1) wide.push('page ' + body.scrollWidth);
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    if (el.scrollWidth > el.clientWidth + 1 && /auto|scroll/.test(getComputedStyle(el).overflowX))
      wide.push(el.tagName + '.' + el.className + ' ' + el.scrollWidth + '>' + el.clientWidth + ' '
        + el.textContent.trim().slice(0, 30));
    if (![...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
    let px = parseFloat(getComputedStyle(el).fontSize);
    const svg = el.closest('svg');
    if (svg) {
      const vb = svg.viewBox.baseVal, w = vb && vb.width ? vb.width : svg.width.baseVal.value;
      px *= svg.getBoundingClientRect().width / w;
    }
    if (px < 10) small.push(px.toFixed(1) + 'px ' + el.textContent.trim().slice(0, 30));
  }
  const visible = e => e.checkVisibility() && e.getBoundingClientRect().width > 0;
  const verdicts = [...document.querySelectorAll('td.v')].filter(visible);
  const off = [], covered = [];
  for (const e of document.querySelectorAll('table.cells td')) {
    if (!visible(e) || !e.textContent.trim()) continue;
    e.scrollIntoView({block: 'center'});
    const r = e.getBoundingClientRect();
    if (r.left < 0 || r.right > vw + 1) { off.push(e.textContent.trim().slice(0, 30)); continue; }
    const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    if (!at || !e.contains(at)) covered.push(e.textContent.trim().slice(0, 30));
  }
  window.scrollTo(0, 0);
  document.body.setAttribute('data-check',
    JSON.stringify({vw, small, wide, cells: verdicts.length, off, covered}));
})();
</script>"#;

/// `page` held at `width` CSS px: headless Chromium lays a page out at
/// least 500 px wide whatever --window-size says (the phone rules of the
/// CSS apply from 640 px down, to both), so a 420 px screenshot without
/// this would be a 500 px page cut at 420.
fn held_at(sb: &Sandbox, page: &Path, width: u32, extra: &str, name: &str) -> PathBuf {
    let html = std::fs::read_to_string(page).unwrap();
    sb.write(
        name,
        &html.replacen(
            "</body>",
            &format!("<style>html{{width:{width}px}}</style>{extra}</body>"),
            1,
        ),
    )
}

fn browser_args(cmd: &mut Command, profile: &Path, width: u32) {
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-background-networking",
        "--host-resolver-rules=MAP * ~NOTFOUND",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .arg(format!("--window-size={width},2400"));
}

/// The probe's verdict on `page` at `width` CSS px.
fn measure(browser: &Path, sb: &Sandbox, page: &Path, width: u32) -> serde_json::Value {
    let probed = held_at(sb, page, width, PROBE, &format!("probed-{width}.html"));
    let profile = tempfile::tempdir_in(sb.dir.path()).unwrap();
    let mut cmd = Command::new(browser);
    browser_args(&mut cmd, profile.path(), width);
    let out = cmd
        .arg("--dump-dom")
        .arg(format!("file://{}", probed.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium: {}", stderr(&out));
    let dom = String::from_utf8_lossy(&out.stdout);
    let at = dom.find("data-check=\"").expect("the probe ran") + 12;
    let json = &dom[at..at + dom[at..].find('"').unwrap()];
    serde_json::from_str(&json.replace("&quot;", "\"").replace("&amp;", "&")).unwrap()
}

/// Screenshots at 1400 and 420 px, where a human can look at them.
fn screenshots(browser: &Path, sb: &Sandbox, page: &Path, name: &str) {
    let dir = std::env::var_os("SYSDELTA_SCREENSHOT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    for width in [1400, 420] {
        let shot = dir.join(format!("sysdelta-{name}-{width}.png"));
        let held = held_at(sb, page, width, "", &format!("shot-{name}-{width}.html"));
        let profile = tempfile::tempdir_in(sb.dir.path()).unwrap();
        let mut cmd = Command::new(browser);
        browser_args(&mut cmd, profile.path(), width);
        let out = cmd
            .arg(format!("--screenshot={}", shot.display()))
            .arg(format!("file://{}", held.display()))
            .output()
            .unwrap();
        assert!(out.status.success(), "chromium: {}", stderr(&out));
        common::note(format!("screenshot: {}", shot.display()));
    }
}

fn check(browser: &Path, sb: &Sandbox, page: &Path, want_verdicts: bool) {
    let m = measure(browser, sb, page, 420);
    assert!(m["vw"].as_f64().unwrap() <= 420.0, "{m}");
    let none = |key: &str, what: &str| {
        assert_eq!(m[key].as_array().unwrap().len(), 0, "{what}: {m}");
    };
    none("wide", "wider than a 420 px screen");
    none("small", "text under 10 px");
    none("off", "table cells off screen");
    none("covered", "table cells covered");
    if want_verdicts {
        assert!(
            m["cells"].as_u64().unwrap() >= 6,
            "verdict cells measured: {m}"
        );
    }
}

#[test]
fn report_and_history_read_on_a_phone() {
    let Some(browser) = chromium() else { return };
    let sb = Sandbox::new();
    let plan = sb.write("plan.toml", PLAN);
    for label in ["v-1", "v-2", "v-3"] {
        let out = sb.run(&[
            "run",
            plan.to_str().unwrap(),
            "-q",
            "--no-report",
            "--label",
            label,
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let report = sb.path("report.html");
    let out = sb.run(&[
        "report",
        "--last",
        "--export-html",
        report.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let history = sb.path("history.html");
    let out = sb.run(&[
        "history",
        "spin/wall",
        "--label-prefix",
        "v-",
        "--export-html",
        history.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));

    check(&browser, &sb, &report, true);
    check(&browser, &sb, &history, false);
    screenshots(&browser, &sb, &report, "report-3x3");
    screenshots(&browser, &sb, &history, "history");
}

/// The forest plot and its table put the verdicts first: a reader sees
/// the changes beyond noise before the grey rows, whatever their size.
#[test]
fn verdicts_come_first_in_the_summary() {
    let sb = Sandbox::new();
    let plan = sb.write("plan.toml", PLAN);
    let out = sb.run(&["run", plan.to_str().unwrap(), "-q", "--no-report"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = String::from_utf8(sb.run(&["report", "--format", "html"]).stdout).unwrap();
    let table = &html[html.find("All comparisons as a table").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    let classes: Vec<&str> = table
        .split("<tr class=\"")
        .skip(1)
        .map(|r| &r[..r.find('"').unwrap()])
        .collect();
    assert_ne!(
        classes.first(),
        Some(&"noise"),
        "spin/loops in slower-spin is a verdict: {classes:?}"
    );
    let first_noise = classes
        .iter()
        .position(|c| *c == "noise")
        .unwrap_or(classes.len());
    assert!(
        classes[first_noise..].iter().all(|c| *c == "noise"),
        "a verdict after a noise row: {classes:?}"
    );
}
