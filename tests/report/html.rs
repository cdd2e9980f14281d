//! The HTML report of a real small experiment: self-contained, escaped,
//! and rendered by headless Chromium without console errors or network
//! requests. The screenshot is kept for a human to look at.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{chromium, stdout, Sandbox};

/// Two configs, a workload that writes hostile text to stderr and fails
/// in one config, and a fast loop whose cost differs between configs.
const PLAN: &str = r#"
name = "html <check> & 'quotes'"
runs = 8
warmup = 1
seed = 7
[[config]]
name = "base"
setup = ""
[[config]]
name = "more<i>"
setup = "export EXTRA=4000"
[[workload]]
name = "loop"
command = 'i=0; while [ $i -lt $((3000 + ${EXTRA:-0})) ]; do i=$((i+1)); done'
[[workload]]
name = "fails"
command = '[ -z "$EXTRA" ] || { echo "bad <script>alert(1)</script> & more" >&2; exit 3; }'
"#;

fn make_report(sb: &Sandbox) -> PathBuf {
    let plan = sb.write("plan.toml", PLAN);
    let out = sb.run(&[
        "run",
        plan.to_str().unwrap(),
        "-q",
        "--no-report",
        "--label",
        "v<1>",
        "--max-failures",
        "0",
    ]);
    // `more<i>/fails` never succeeds: the run says so and exits 1.
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = sb.path("report.html");
    let out = sb.run(&["report", "--export-html", html.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    html
}

#[test]
fn html_is_self_contained_and_escaped() {
    let sb = Sandbox::new();
    let html = std::fs::read_to_string(make_report(&sb)).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    // Self-contained: no scripts, no external resources.
    assert!(
        !html.contains("<script"),
        "a <script> element made it into the page"
    );
    for needle in ["src=", "href=", "url(", "@import", "<link"] {
        assert!(!html.contains(needle), "found {needle} in the page");
    }
    // Hostile text from commands and plans is escaped.
    assert!(html.contains("bad &lt;script&gt;alert(1)&lt;/script&gt; &amp; more"));
    assert!(html.contains("more&lt;i&gt;"));
    assert!(html.contains("html &lt;check&gt; &amp; &#39;quotes&#39;"));
    assert!(html.contains("v&lt;1&gt;"));
    // The sections a reader relies on, with plots from plotters.
    for s in [
        "id=\"summary\"",
        "id=\"metrics\"",
        "id=\"environment\"",
        "id=\"runs\"",
        "Failed runs",
    ] {
        assert!(html.contains(s), "missing {s}");
    }
    assert!(
        html.matches("<svg").count() > 4,
        "the forest plot plus one plot per metric of `loop`"
    );
    // Every plot has a text alternative.
    assert_eq!(
        html.matches("<svg").count(),
        html.matches("role=\"img\" aria-label=").count()
    );
}

#[test]
fn html_to_a_missing_directory_is_bad_input_and_writes_nothing() {
    let sb = Sandbox::new();
    make_report(&sb);
    let target = sb.path("missing/dir/report.html");
    let out = sb.run(&["report", "--export-html", target.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    assert!(!target.exists() && !sb.path("missing").exists());
    assert!(stdout(&out).is_empty());
}

struct Loaded {
    console_lines: Vec<String>,
    page_requests: Vec<String>,
    dom: String,
}

/// Load `page` in headless Chromium with a net log; the browser is kept off
/// the network (every host resolves to nothing), so even its own
/// background requests go nowhere. Page requests are the net-log URL
/// requests whose isolation key is the file:// page.
fn load(browser: &Path, page: &Path, dir: &Path, screenshot: Option<&Path>) -> Loaded {
    let profile = tempfile::tempdir_in(dir).unwrap();
    let netlog = dir.join(format!(
        "net-{}.json",
        page.file_stem().unwrap().to_string_lossy()
    ));
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--hide-scrollbars",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .arg(format!("--log-net-log={}", netlog.display()));
    match screenshot {
        Some(s) => cmd
            .arg(format!("--screenshot={}", s.display()))
            .arg("--window-size=1000,2400"),
        None => cmd.arg("--dump-dom"),
    };
    let out = cmd
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let console_lines = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains("CONSOLE"))
        .map(String::from)
        .collect();
    let log: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&netlog).unwrap()).unwrap();
    let mut page_requests: Vec<String> = log["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| {
            let p = e.get("params")?;
            let url = p.get("url")?.as_str()?;
            let key = p.get("network_isolation_key")?.as_str()?;
            (key.contains("file://") && !url.starts_with("file:") && !url.starts_with("data:"))
                .then(|| url.to_string())
        })
        .collect();
    page_requests.dedup();
    Loaded {
        console_lines,
        page_requests,
        dom: String::from_utf8_lossy(&out.stdout).into_owned(),
    }
}

#[test]
fn html_renders_in_headless_chromium() {
    let Some(browser) = chromium() else { return };
    let sb = Sandbox::new();
    let html = make_report(&sb);

    // Control: the detectors see a console error and a network request in a page that has them.
    let bad = sb.write(
        "control.html",
        "<html><body><img src=\"http://example.invalid/x.png\"><script>console.error('boom')</script></body></html>",
    );
    let c = load(&browser, &bad, sb.dir.path(), None);
    assert!(
        !c.console_lines.is_empty(),
        "control: console error not detected"
    );
    assert!(
        c.page_requests
            .iter()
            .any(|u| u.contains("example.invalid")),
        "control: request not detected"
    );

    let l = load(&browser, &html, sb.dir.path(), None);
    assert!(
        l.console_lines.is_empty(),
        "console output: {:?}",
        l.console_lines
    );
    assert!(
        l.page_requests.is_empty(),
        "network requests: {:?}",
        l.page_requests
    );
    assert!(l.dom.contains("Samples per metric") && l.dom.contains("<svg"));

    let shot = std::env::var_os("SYSDELTA_SCREENSHOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("sysdelta-html-report.png"));
    let _ = std::fs::remove_file(&shot);
    load(&browser, &html, sb.dir.path(), Some(&shot));
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "screenshot is not a PNG"
    );
    eprintln!("screenshot of the report: {}", shot.display());
}

/// With the profile monitor on, the HTML report carries the per-config
/// top symbols and the differential view, as the text report does.
#[test]
fn html_shows_profiles_when_recorded() {
    // No monitors-off control (docs/monitors.md): this test reads the
    // Profiles section, and the control's 40 CPU-bound probe runs were
    // most of its time (35 s of a 35 s run here; 84 s beside the other
    // tests). The overhead line and the control are
    // html_short_runs.rs's.
    let sb = Sandbox::new();
    let plan = sb.write(
        "plan.toml",
        r#"
name = "profiled"
runs = 2
monitors = ["profile"]
monitor_interval = "100ms"
monitor_control = false
[[config]]
name = "a"
[[config]]
name = "b"
[[workload]]
name = "spin"
command = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"
"#,
    );
    let out = sb.run(&["run", plan.to_str().unwrap(), "-q", "--no-report"]);
    if out.status.code() == Some(2) {
        // Preflight: no perf_event access here (not root, paranoid > 0).
        std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!(
                "SKIP html profiles: {}\n",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        )
        .unwrap_or(());
        return;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = sb.path("profiled.html");
    let out = sb.run(&["report", "--export-html", html.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    let at = page
        .find("<h2 id=\"profiles\">")
        .expect("a Profiles section");
    let section = &page[at..];
    assert!(section.contains("total samples"), "{section:.2000}");
    assert!(section.contains("[k] "), "kernel symbols: {section:.2000}");
}
