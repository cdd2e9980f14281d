//! `sysdelta history` finds a step in a metric over labelled experiments,
//! says so when there is none, follows one config, fits 80 columns, and
//! draws the metric over experiments with the change marked.

use crate::common;

use common::{stderr, stdout, Sandbox};

/// Ten run times around `level` seconds, a deterministic +-1.5% spread.
fn times(level: f64, k: usize) -> String {
    (0..10)
        .map(|i| {
            let wiggle = ((i * 7 + k * 3) % 11) as f64 / 10.0 - 0.5;
            format!("{:.7}", level * (1.0 + 0.03 * wiggle))
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Import one hyperfine file per experiment, labelled `6.1`, `6.2`, ...;
/// `levels[k]` lists (command, level) of experiment k.
fn import(sb: &Sandbox, levels: &[Vec<(&str, f64)>]) {
    for (k, cmds) in levels.iter().enumerate() {
        let results: Vec<String> = cmds
            .iter()
            .map(|(c, l)| format!(r#"{{"command":"{c}","times":[{}]}}"#, times(*l, k)))
            .collect();
        let f = sb.write(
            &format!("v{k}.json"),
            &format!(r#"{{"results":[{}]}}"#, results.join(",")),
        );
        let out = sb.run(&[
            "import",
            "hyperfine",
            f.to_str().unwrap(),
            "--label",
            &format!("6.{}", k + 1),
            "--workload",
            "build",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
}

/// Seven experiments at 10 ms, then three at +27%.
fn step_levels() -> Vec<Vec<(&'static str, f64)>> {
    (0..10)
        .map(|k| vec![("make", if k < 7 { 0.010 } else { 0.0127 })])
        .collect()
}

/// The change in percent a marked line or label gives, as "(+27.0%)" or
/// "change +27.0%".
fn step_pct(s: &str) -> f64 {
    let at = s.find("+2").unwrap_or_else(|| panic!("no +2x% in {s:?}"));
    let rest = &s[at..];
    rest[..rest.find('%').unwrap()].parse().unwrap()
}

/// The text of every `<text>` element of an SVG, trimmed.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

fn assert_fits_80(text: &str) {
    for l in text.lines() {
        assert!(l.chars().count() <= 80, "line over 80 columns: {l:?}");
    }
}

#[test]
fn a_27_percent_step_after_seven_experiments_is_marked() {
    let sb = Sandbox::new();
    import(&sb, &step_levels());
    let out = sb.run(&["history", "build/wall", "--label-prefix", "6."]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert_fits_80(&text);
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("change point ("))
        .unwrap_or_else(|| panic!("no change point marked:\n{text}"));
    assert!(
        lines[at - 1].contains(" 6.7 ") && lines[at + 1].contains(" 6.8 "),
        "the mark sits between 6.7 and 6.8:\n{text}"
    );
    let d = step_pct(lines[at]);
    assert!((25.0..29.0).contains(&d), "{}", lines[at]);
    assert_eq!(text.matches("---- change point (").count(), 1, "{text}");
    assert!(text.contains("1 change point"), "{text}");
    assert!(!text.contains("No change found"), "{text}");

    let out = sb.run(&[
        "history",
        "wall",
        "--label-prefix",
        "6.",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cps = v["change_points"].as_array().unwrap();
    assert_eq!(cps.len(), 1, "{cps:?}");
    assert_eq!(cps[0]["index"], 7);
    assert_eq!(v["points"][0]["config"], "make");
}

#[test]
fn the_html_plot_marks_the_step_and_exports_alongside_text() {
    let sb = Sandbox::new();
    import(&sb, &step_levels());
    let page = sb.path("history.html");
    let json = sb.path("history.json");
    let out = sb.run(&[
        "history",
        "wall",
        "--label-prefix",
        "6.",
        "--export-html",
        page.to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("change point ("),
        "text still on stdout"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["change_points"][0]["index"], 7);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && !html.contains("<script"));
    let svg = &html[html.find("<svg").expect("an SVG plot")..html.find("</svg>").unwrap()];
    assert!(svg.contains("viewBox"), "scalable SVG");
    let at = svg
        .find("change +")
        .expect("the change is labelled in the plot");
    assert!((25.0..29.0).contains(&step_pct(&svg[at..])));
    // Every experiment is on the x axis.
    let texts = svg_texts(svg);
    for k in 1..=10 {
        let l = format!("6.{k}");
        assert!(texts.contains(&l), "{l} on the axis: {texts:?}");
    }
    assert!(html.contains(
        "aria-label=\"wall per experiment, 10 experiments; change point between 6.7 and 6.8\""
    ));

    // The same page on stdout.
    let out = sb.run(&[
        "history",
        "wall",
        "--label-prefix",
        "6.",
        "--format",
        "html",
    ]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("change +2"));
    // An export to a missing directory is bad input, and writes nothing.
    let fresh = sb.path("fresh.json");
    let out = sb.run(&[
        "history",
        "wall",
        "--export-json",
        fresh.to_str().unwrap(),
        "--export-html",
        sb.path("no/such/h.html").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!fresh.exists() && stdout(&out).is_empty());
    // `--json` is gone: one way to ask for JSON.
    let out = sb.run(&["history", "wall", "--label-prefix", "6.", "--json"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_flat_history_says_no_change_found() {
    let sb = Sandbox::new();
    let flat: Vec<Vec<(&str, f64)>> = (0..10).map(|_| vec![("make", 0.010)]).collect();
    import(&sb, &flat);
    let out = sb.run(&["history", "wall", "--label-prefix", "6."]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert_fits_80(&text);
    assert!(text.contains("No change found"), "{text}");
    assert!(!text.contains("change point ("), "{text}");
    let out = sb.run(&["history", "wall", "--format", "html"]);
    assert!(stdout(&out).contains("No change found"));
    assert!(!stdout(&out).contains("change +"));
}

#[test]
fn history_follows_one_config_not_the_pool() {
    let sb = Sandbox::new();
    // Each experiment: the baseline `base` flat, an A/A control `control`
    // flat, and `patched` stepping up by 27% from the eighth on.
    let levels: Vec<Vec<(&str, f64)>> = (0..10)
        .map(|k| {
            vec![
                ("base", 0.010),
                ("control", 0.010),
                ("patched", if k < 7 { 0.010 } else { 0.0127 }),
            ]
        })
        .collect();
    import(&sb, &levels);
    // Default: the baseline, which did not move.
    let out = sb.run(&["history", "wall", "--label-prefix", "6."]);
    let text = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.contains("config base (the baseline)"), "{text}");
    assert!(text.contains("No change found"), "{text}");
    // Each point is one config's runs only: 10 runs, not 30.
    let v: serde_json::Value =
        serde_json::from_slice(&sb.run(&["history", "wall", "--format", "json"]).stdout).unwrap();
    assert_eq!(v["points"][0]["n"], 10);
    // The patched config has the step.
    let out = sb.run(&["history", "wall", "--config", "patched"]);
    let text = stdout(&out);
    assert!(text.contains("config patched"), "{text}");
    let line = text
        .lines()
        .find(|l| l.contains("---- change point ("))
        .unwrap_or_else(|| panic!("{text}"));
    assert!((25.0..29.0).contains(&step_pct(line)), "{text}");
    // A config no experiment has is bad input, named.
    let out = sb.run(&["history", "wall", "--config", "nosuch"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no config 'nosuch'"), "{err}");
}

#[test]
fn long_labels_keep_lines_within_80_columns() {
    let sb = Sandbox::new();
    for k in 0..6 {
        let f = sb.write(
            &format!("l{k}.json"),
            &format!(
                r#"{{"results":[{{"command":"make","times":[{}]}}]}}"#,
                times(0.01, k)
            ),
        );
        let label = format!("linux-6.{k}-rc1-with-a-very-long-branch-name-for-testing-the-width");
        let out = sb.run(&[
            "import",
            "hyperfine",
            f.to_str().unwrap(),
            "--label",
            &label,
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let text = stdout(&sb.run(&["history", "wall", "--label-prefix", "linux-"]));
    assert_fits_80(&text);
    // Whole, never cut into something that reads as another label.
    assert!(
        text.contains("linux-6.3-rc1-with-a-very-long-branch-name-for-testing-the-width"),
        "{text}"
    );
}

#[test]
fn names_with_a_slash_are_found_whole() {
    // Go's metrics are named as benchstat names them (`sec/op`), and `ab -- ./bench`
    // names its workload `./bench`: neither may be split at its '/'.
    let sb = Sandbox::new();
    let old = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/gobench-old.txt"
    );
    for label in ["6.1", "6.2"] {
        let out = sb.run(&["import", "gobench", old, "--label", label]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    // Alone, sec/op is in several workloads: the error names the metric whole.
    let out = sb.run(&["history", "sec/op", "--label-prefix", "6."]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("metric 'sec/op' is in several workloads"),
        "{}",
        stderr(&out)
    );
    let out = sb.run(&["history", "SortInts-2/sec/op", "--label-prefix", "6."]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("history of SortInts-2/sec/op"), "{text}");
    assert!(text.contains("No change found"), "{text}");
}
