//! A kexec session's boot that failed its machine audit: its runs are
//! stored, and every format counts and shows them as left out, never as
//! ok runs, and no plot draws them (the statistics do not use them).

use crate::common;
use crate::kernels;

use kernels::{Shape, AA};
use sysdelta::analysis;
use sysdelta::report::{self, Format, ReportOptions};
use sysdelta::store::ExperimentData;

/// 6 boots x 5 runs of each kernel, and a seventh boot of k2 whose audit
/// failed after it ran 2 runs of 50 s.
fn data() -> (common::Sandbox, ExperimentData) {
    let sb = common::Sandbox::new();
    let (store, exp) = kernels::aa_with_audit_failed_boot(&sb.store());
    let data = store.load(exp).unwrap();
    (sb, data)
}

/// `text` with its line breaks and indents as single spaces (the text
/// report wraps at 80 columns).
fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn opts(format: Format) -> ReportOptions {
    ReportOptions {
        format,
        detail: false,
        trim: None,
        time_unit: None,
        analysis: analysis::Options {
            resamples: 500,
            ..Default::default()
        },
    }
}

#[test]
fn runs_of_a_boot_that_failed_its_audit_are_counted_as_left_out_not_ok() {
    let (_sb, d) = data();
    let x = report::analyze(&d, &opts(Format::Text).analysis).unwrap();
    assert_eq!((x.analysis.runs_ok, x.analysis.runs_left_out), (60, 2));

    let text = report::render(&d, &opts(Format::Text)).unwrap();
    assert!(
        words(&text).contains("runs 60 ok, 2 left out (machine audit failed), 0 failed"),
        "{text}"
    );
    for line in text.lines() {
        assert!(line.chars().count() <= 80, "over 80 columns: {line}");
    }
    let md = report::render(&d, &opts(Format::Markdown)).unwrap();
    assert!(
        md.contains("60 ok, 2 left out (machine audit failed), 0 failed"),
        "{md}"
    );
    let html = report::render(&d, &opts(Format::Html)).unwrap();
    assert!(
        html.contains("60 ok runs, <b>2 left out</b> (machine audit failed), 0 failed"),
        "the page's header"
    );
    assert!(
        html.contains("<td>30 ok, <b>2 left out</b> (machine audit)</td>"),
        "the runs table's k2 cell"
    );
    let json: serde_json::Value =
        serde_json::from_str(&report::render(&d, &opts(Format::Json)).unwrap()).unwrap();
    assert_eq!(json["analysis"]["runs_ok"], 60);
    assert_eq!(json["analysis"]["runs_left_out"], 2);
    // The raw runs are all there, as stored.
    assert_eq!(json["runs"].as_array().unwrap().len(), 62);
}

#[test]
fn the_execution_order_plot_draws_only_the_runs_the_statistics_use() {
    let (_sb, d) = data();
    let o = opts(Format::Html);
    let v = report::analyze(&d, &o.analysis)
        .unwrap()
        .into_view(None, sysdelta::analysis::view::Extras::from_data(&d));
    let wall = v
        .shown
        .metrics
        .iter()
        .position(|m| m.spec.name == "wall")
        .unwrap();
    let points = &v.order[wall].points;
    assert_eq!(points.iter().map(Vec::len).sum::<usize>(), 60);
    // None of the 50 s runs (every counted one is near 1 s).
    assert_eq!(v.order[wall].unit, "ms");
    assert!(
        points.iter().flatten().all(|(_, ms)| *ms < 10_000.0),
        "{points:?}"
    );
}

#[test]
fn a_session_with_every_boot_audited_clean_reads_as_before() {
    let sb = common::Sandbox::new();
    let shape = Shape {
        boots: 3,
        runs: 2,
        sd_boot: 0.1,
        sd_run: 0.01,
        accel: "kexec",
        seed: 2,
    };
    let (store, exp) = kernels::store_with(&sb.store(), &AA, &shape);
    let d = store.load(exp).unwrap();
    let text = report::render(&d, &opts(Format::Text)).unwrap();
    assert!(words(&text).contains("runs 12 ok, 0 failed"), "{text}");
    assert!(!text.contains("left out"), "{text}");
    let json = report::render(&d, &opts(Format::Json)).unwrap();
    assert!(!json.contains("runs_left_out"), "absent when none are");
}
