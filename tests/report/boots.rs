//! Kernel experiments: the boot is the unit of replication. Synthetic
//! stores made as the runner makes them (boots begun, identified, ended;
//! runs recorded as rows naming their boot), analysed by the report.

use crate::common;
use crate::kernels;

use kernels::{Kernel, Shape, AA};
use sysdelta::analysis::{self, Analysis, MetricAnalysis, Verdict};
use sysdelta::stats;
use sysdelta::store::{ExperimentData, Store};

/// 6 boots x 5 runs per config, boots that differ a lot (sd 20% between
/// boots, 2% between runs of one boot), under TCG.
fn shape(seed: u64) -> Shape {
    Shape {
        boots: 6,
        runs: 5,
        sd_boot: 0.2,
        sd_run: 0.02,
        accel: "TCG",
        seed,
    }
}

fn load(kernels: &[Kernel], shape: &Shape) -> (common::Sandbox, ExperimentData) {
    let sb = common::Sandbox::new();
    let (store, exp) = kernels::store_with(&sb.store(), kernels, shape);
    let data = store.load(exp).unwrap();
    drop(store);
    (sb, data)
}

fn analyze(data: &ExperimentData) -> Analysis {
    analysis::analyze(data, &analysis::Options::default()).unwrap()
}

fn metric<'a>(a: &'a Analysis, name: &str) -> &'a MetricAnalysis {
    a.metrics.iter().find(|m| m.spec.name == name).unwrap()
}

/// Per-run values of `config` (what the statistics used before boots).
fn run_values(data: &ExperimentData, config: &str, m: &str) -> Vec<f64> {
    data.runs
        .iter()
        .filter(|r| r.config == config && r.status == "ok" && !r.warmup)
        .map(|r| r.samples[m][0])
        .collect()
}

#[test]
fn the_boot_is_the_unit_and_its_ci_is_wider_than_a_per_run_ci() {
    let (_sb, data) = load(&AA, &shape(1));
    let a = analyze(&data);
    assert!(
        a.unit_of_replication
            .starts_with("the boot: runs in one boot (up to 5) count once, by their mean"),
        "{}",
        a.unit_of_replication
    );
    let wall = metric(&a, "wall");
    for (ci, cell) in wall.cells.iter().enumerate() {
        assert_eq!(cell.values.len(), 6, "one value per boot");
        assert_eq!(cell.boots, Some(6));
        assert_eq!(cell.boot_runs.as_deref(), Some(&[5usize; 6][..]));
        assert_eq!(cell.summary.as_ref().unwrap().n, 6);
        // A boot's value is the mean of its runs' values.
        let runs = run_values(&data, &a.configs[ci], "wall");
        let first: f64 = runs[..5].iter().sum::<f64>() / 5.0;
        assert!((cell.values[0] - first).abs() < 1e-12);
        let share = cell.boot_share.unwrap();
        assert!(share > 0.9, "between-boot share {share}");
        let vc = cell.boot_variance.as_ref().unwrap();
        assert_eq!((vc.groups, vc.n), (6, 30));
        assert!(vc.p.unwrap() < 1e-6, "boots differ: F test p {:?}", vc.p);
    }
    // The CI the report shows (boots resampled) against the CI the 30
    // correlated runs a side would give if they were independent.
    let cmp = &wall.comparisons[0];
    let (lo, hi) = cmp.ratio_ci.unwrap();
    let (b, o) = (
        run_values(&data, "k1", "wall"),
        run_values(&data, "k2", "wall"),
    );
    let level = stats::bootstrap::expanded_confidence(&b, &o, 0.95);
    let (rlo, rhi) = stats::bootstrap::ratio_of_means_ci(&b, &o, 10_000, level, 1).unwrap();
    assert!(
        hi - lo > 1.5 * (rhi - rlo),
        "boot CI [{lo}, {hi}] should be much wider than the per-run CI [{rlo}, {rhi}]"
    );
    // The boots section: every boot ok, its kernel and CPUs, the accel.
    let boots = a.boots.as_ref().unwrap();
    assert!(boots.tcg);
    assert_eq!(boots.configs.len(), 2);
    let k1 = &boots.configs[0];
    assert_eq!(
        (k1.config.as_str(), k1.boots, k1.ok, k1.failed),
        ("k1", 6, 6, 0)
    );
    assert_eq!(k1.kernels, ["6.1.0-k1"]);
    assert_eq!(k1.cpus, [2]);
    let hello = k1.launch_to_hello_s.as_ref().unwrap();
    assert!(hello.min >= 2.0 && hello.max < 3.0 && hello.median >= hello.min);
    assert_eq!(
        a.warnings[0],
        "guests ran under TCG (an emulated CPU): times are emulated times, not the host's"
    );
}

#[test]
fn aa_over_boots_is_within_noise_where_runs_would_have_flagged_it() {
    // Seed 4: k2's six boots happened to land higher than k1's.
    let (_sb, data) = load(&AA, &shape(4));
    let a = analyze(&data);
    for m in &a.metrics {
        let c = &m.comparisons[0];
        assert_eq!(c.verdict, Verdict::Noise, "{}: {c:?}", m.spec.name);
    }
    // Runs taken as independent replicates would have called it.
    let (b, o) = (
        run_values(&data, "k1", "wall"),
        run_values(&data, "k2", "wall"),
    );
    let p = stats::mannwhitney::mann_whitney_u(&o, &b).unwrap().p;
    assert!(
        p < 0.01,
        "per-run U test p {p}: pick a seed where runs mislead"
    );
}

#[test]
fn a_real_shift_between_kernels_is_flagged() {
    // rt is 40% slower; boots differ by 5%, runs by 1%.
    let kernels = [
        Kernel {
            name: "cloud",
            level: 1.0,
        },
        Kernel {
            name: "rt",
            level: 1.4,
        },
    ];
    let s = Shape {
        sd_boot: 0.05,
        sd_run: 0.01,
        ..shape(5)
    };
    let (_sb, data) = load(&kernels, &s);
    let a = analyze(&data);
    let wall = &metric(&a, "wall").comparisons[0];
    assert_eq!(wall.verdict, Verdict::Worse, "{wall:?}");
    let ops = &metric(&a, "ops").comparisons[0];
    assert_eq!(ops.verdict, Verdict::Worse, "{ops:?}");
    // 6 vs 6 boots: below 8 a side the boot-level test is Welch's t on
    // the boot means (the U test's floor, 2 / 924, would not survive a
    // correction over many metrics).
    assert_eq!(wall.test, sysdelta::stats::power::ReportTest::Welch);
    let (base, other) = (
        &metric(&a, "wall").cells[0].values,
        &metric(&a, "wall").cells[1].values,
    );
    let w = sysdelta::stats::welch::welch_test(base, other).unwrap();
    assert_eq!(wall.p, Some(w.p));
    assert!(w.p < 2.0 / 924.0, "{w:?}");
    let (lo, _) = wall.delta_ci_pct.unwrap();
    assert!(lo > 20.0, "{:?}", wall.delta_ci_pct);
}

/// 3 boots a side: the rank test could never reject there (smallest p
/// 0.1), but the boot level's test is Welch's t on the boot means, which
/// can; so no "smallest possible p-value" warning, and a p from Welch.
#[test]
fn three_boots_a_side_are_tested_by_welch() {
    let s = Shape {
        boots: 3,
        ..shape(7)
    };
    let (_sb, data) = load(&AA, &s);
    let a = analyze(&data);
    assert!(
        !a.warnings
            .iter()
            .any(|w| w.contains("the smallest possible p-value")),
        "{:#?}",
        a.warnings
    );
    let wall = &metric(&a, "wall").comparisons[0];
    assert_eq!(wall.test, sysdelta::stats::power::ReportTest::Welch);
    assert!(wall.p.is_some() && wall.ratio_ci.is_some(), "{wall:?}");
    assert!(wall.ci_small_sample, "{wall:?}");
}

#[test]
fn host_runs_keep_the_run_as_the_unit() {
    // The same store without boot ids is analysed run by run, as always.
    let (_sb, mut data) = load(&AA, &shape(1));
    for r in &mut data.runs {
        r.boot_id = None;
    }
    data.boots.clear();
    let a = analyze(&data);
    assert_eq!(
        a.unit_of_replication,
        "the run (one sample per metric per run)"
    );
    assert!(a.boots.is_none());
    let cell = &metric(&a, "wall").cells[0];
    assert_eq!(cell.values, run_values(&data, "k1", "wall"));
    assert!(cell.boots.is_none() && cell.boot_share.is_none());
    let json = serde_json::to_value(cell).unwrap();
    let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["config", "summary", "values"]);
}

#[test]
fn a_failed_boot_is_listed_and_its_runs_kept() {
    let sb = common::Sandbox::new();
    let (store, exp) = kernels::store_with(&sb.store(), &AA, &shape(1));
    let boot = store.begin_boot(exp, "k2", 6, 0, "TCG", 1.9e9).unwrap();
    kernels::record(&store, exp, 6, 0, "k2", boot, 1.0);
    let console: String = (1..=30).map(|i| format!("console line {i}\n")).collect();
    store
        .end_boot(
            boot,
            &sysdelta::store::BootEnd {
                ok: false,
                reason: Some("Kernel panic - not syncing: VFS".into()),
                console_tail: Some(console.clone()),
                runs: 1,
            },
        )
        .unwrap();
    let data = store.load(exp).unwrap();
    let a = analyze(&data);
    let k2 = &a.boots.as_ref().unwrap().configs[1];
    assert_eq!((k2.boots, k2.ok, k2.failed), (7, 6, 1));
    let f = &k2.failed_boots[0];
    assert_eq!(f.reason, "Kernel panic - not syncing: VFS");
    assert_eq!(f.console_tail, console);
    // The run it delivered counts: k2 has 7 boots with runs.
    assert_eq!(metric(&a, "wall").cells[1].boots, Some(7));
    drop(Store::open(&sb.store(), false).unwrap());
}

/// A kexec boot whose machine audit failed ran its runs, but they are
/// kept out of the analysis, with a warning that counts them.
#[test]
fn runs_of_a_boot_whose_audit_failed_are_kept_apart() {
    let sb = common::Sandbox::new();
    let (store, exp) = kernels::store_with(&sb.store(), &AA, &shape(1));
    kernels::add_audit_failed_boot(&store, exp);
    let a = analyze(&store.load(exp).unwrap());
    // Six boots of k2 count, not seven; the 50 s runs are not in its mean.
    let k2 = &metric(&a, "wall").cells[1];
    assert_eq!(k2.boots, Some(6));
    assert!(k2.values.iter().all(|v| *v < 10.0), "{:?}", k2.values);
    assert!(
        a.warnings
            .iter()
            .any(|w| w.contains("2 runs left out of the analysis: 1 boot failed the machine audit")),
        "{:?}",
        a.warnings
    );
    // The boots section does not call them kept.
    let text = sysdelta::report::boots_text::text_section(&a);
    assert!(
        text.contains("Failed boots (1), their runs left out (the audit failed):"),
        "{text}"
    );
}

/// Over 40 A/A experiments the boot-level verdict keeps its 5% (2 flagged
/// here), where a per-run U test, taking 30 runs in 6 boots as 30
/// replicates, rejects in about 40% of them.
#[test]
fn aa_false_positives_stay_rare_over_boots() {
    let (mut boot_flags, mut run_flags) = (0, 0);
    for seed in 1..=40 {
        let (_sb, data) = load(&AA, &shape(seed));
        let a = analyze(&data);
        if metric(&a, "wall").comparisons[0].verdict != Verdict::Noise {
            boot_flags += 1;
        }
        let (b, o) = (
            run_values(&data, "k1", "wall"),
            run_values(&data, "k2", "wall"),
        );
        if stats::mannwhitney::mann_whitney_u(&o, &b).unwrap().p < 0.05 {
            run_flags += 1;
        }
    }
    assert!(
        boot_flags <= 4,
        "{boot_flags} of 40 A/A flagged at boot level"
    );
    assert!(run_flags >= 10, "{run_flags} of 40 per-run tests rejected");
}

/// A store of `AA` with one more boot of k2 that panicked after one run,
/// its console 30 lines long.
fn with_failed_boot(sb: &common::Sandbox) {
    let (store, exp) = kernels::store_with(&sb.store(), &AA, &shape(1));
    let boot = store.begin_boot(exp, "k2", 6, 0, "TCG", 1.9e9).unwrap();
    kernels::record(&store, exp, 6, 0, "k2", boot, 1.0);
    let console: String = (1..=30).map(|i| format!("console line {i}\n")).collect();
    store
        .end_boot(
            boot,
            &sysdelta::store::BootEnd {
                ok: false,
                reason: Some("Kernel panic - not syncing: VFS".into()),
                console_tail: Some(console),
                runs: 1,
            },
        )
        .unwrap();
}

fn report(sb: &common::Sandbox, format: &str) -> String {
    let out = sb.run(&["report", "--format", format]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    common::stdout(&out)
}

const TCG: &str =
    "guests ran under TCG (an emulated CPU): times are emulated times, not the host's";

#[test]
fn every_format_shows_boots_shares_and_the_tcg_warning() {
    let sb = common::Sandbox::new();
    with_failed_boot(&sb);

    let text = report(&sb, "text");
    assert!(text.lines().all(|l| l.len() <= 80), "{text}");
    assert!(
        text.contains("WARNING: guests ran under TCG (an emulated CPU)"),
        "{text}"
    );
    assert!(
        text.contains(
            "boots: 6-7 per config, 1-5 runs each, random-blocks order, seed 1; runs 61 ok"
        ),
        "{text}"
    );
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("|   boot share |"))
        .collect();
    assert_eq!(rows.len(), 2, "a share row per config: {text}");
    assert!(rows[0].contains("99%"), "{}", rows[0]);
    assert!(
        text.contains("k2                 7   6      1  6.1.0-k2"),
        "{text}"
    );
    assert!(text.contains("- k2 boot 13 (block 6, 1 run): Kernel panic - not syncing: VFS"));
    assert!(text.contains("    | console line 30\n") && text.contains("    | console line 21\n"));
    assert!(
        !text.contains("console line 20\n"),
        "only the last 10 console lines"
    );

    let out = sb.run(&["report", "--trim", "1"]);
    let trimmed = common::stdout(&out);
    assert!(
        trimmed.contains("w / wall (ms): 5 boots per config (dropped the 1 highest"),
        "{trimmed}"
    );
    assert!(trimmed.contains("(all boots; trimming") && trimmed.contains("boots for 1%"));

    let md = report(&sb, "markdown");
    assert!(md.contains(&format!("> **warning:** {TCG}")), "{md}");
    assert!(md.contains("### Between-boot share of variance") && md.contains("| k1 | 99% | 99% |"));
    assert!(
        md.contains("| k2 | 7 | 6 | 1 | 6.1.0-k2 | 2 | TCG |"),
        "{md}"
    );

    let json: serde_json::Value = serde_json::from_str(&report(&sb, "json")).unwrap();
    let boots = json["boots"].as_array().unwrap();
    assert_eq!(boots.len(), 13);
    assert!(boots[12]["console_tail"]
        .as_str()
        .unwrap()
        .starts_with("console line 1\n"));
    let ab = &json["analysis"]["boots"];
    assert_eq!(ab["tcg"], true);
    assert_eq!(ab["timing_note"], TCG);
    assert_eq!(
        ab["configs"][1]["failed_boots"][0]["reason"],
        "Kernel panic - not syncing: VFS"
    );
    let cell = &json["analysis"]["metrics"][0]["cells"][0];
    assert!(cell["boot_share"].as_f64().unwrap() > 0.9);
    assert_eq!(cell["boots"], 6);
    assert_eq!(json["analysis"]["warnings"][0], TCG);

    let csv = report(&sb, "csv");
    let mut lines = csv.lines();
    assert!(lines.next().unwrap().ends_with(
        ",ci_note,boots,runs,boot_share,var_between_boots,var_within_boots,accel,timing_note"
    ));
    let first = lines.next().unwrap();
    assert!(
        first.contains(",6,30,0.99") && first.ends_with(&format!(",TCG,\"{TCG}\"")),
        "{first}"
    );

    let html = report(&sb, "html");
    let banner = html
        .find("<details class=\"box warn\" role=\"alert\" open>")
        .unwrap();
    assert!(html[banner..].starts_with(
        "<details class=\"box warn\" role=\"alert\" open><summary><b>Warnings (1).</b> </summary><ul><li>guests ran under TCG"
    ));
    assert!(html.contains("<h2 id=\"boots\">Boots</h2>"));
    assert!(
        html.contains("<pre>console line 1\nconsole line 2\n"),
        "whole console tail"
    );
    assert!(html.contains("<th>n</th><th>boot share</th>"));
}

/// `compare` of two kernel experiments keeps the boot as the unit and
/// carries each picked config's boots (and so the TCG warning) along.
#[test]
fn compare_of_kernel_experiments_keeps_the_boots() {
    let sb = common::Sandbox::new();
    let (store, _) = kernels::store_with(&sb.store(), &AA, &shape(1));
    kernels::experiment(&store, &AA, &shape(2));
    drop(store);
    let out = sb.run(&["compare", "1:k1", "2:k2", "--format", "json"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let a = &v["analysis"];
    assert_eq!(a["boots"]["tcg"], true);
    let names: Vec<&str> = a["boots"]["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["config"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["#1:k1", "#2:k2"]);
    assert_eq!(a["metrics"][0]["cells"][1]["boots"], 6);
    assert_eq!(a["warnings"][0], TCG);
}

/// The JSON report is written one run at a time (its memory bounded by
/// what it shows), in exactly the bytes the whole document printed as one
/// `serde_json::Value` gives: members in name order, every boot and run,
/// start times as RFC 3339, raw DEL/C1 controls escaped.
#[test]
fn json_written_piece_by_piece_is_the_whole_document() {
    let sb = common::Sandbox::new();
    with_failed_boot(&sb);
    let store = Store::open(&sb.store(), false).unwrap();
    let mut data = store.load(1).unwrap();
    data.runs[0].reason = Some("odd \u{7f}\u{9b} reason\nline two".into());
    let x = sysdelta::report::analyze(&data, &analysis::Options::default()).unwrap();
    let view = x.into_view(None, Default::default());
    let got = sysdelta::report::json::render(&view.raw, &view.stored).unwrap();
    // The former rendering: one tree of everything.
    let mut v = serde_json::json!({
        "format": "sysdelta-report-1",
        "experiment": &view.raw.info,
        "metrics": &view.raw.metrics,
        "runs": &view.raw.runs,
        "events": &view.raw.events,
        "analysis": &view.stored,
        "boots": &view.raw.boots,
    });
    // Start times as the new rendering wrote them (their conversion is
    // unit-tested in report::json); everything else must match byte for byte.
    let parsed: serde_json::Value = serde_json::from_str(&got).unwrap();
    for list in ["runs", "boots"] {
        let items = v[list].as_array_mut().unwrap();
        assert!(!items.is_empty());
        for (k, item) in items.iter_mut().enumerate() {
            let t = parsed[list][k]["started_at"].clone();
            assert!(
                t.is_null() || t.as_str().is_some_and(|t| t.ends_with('Z')),
                "{t}"
            );
            item["started_at"] = t;
        }
    }
    let want = sysdelta::report::escape::json_text(serde_json::to_string_pretty(&v).unwrap());
    assert!(got.contains("\\u007f\\u009b reason"), "controls escaped");
    assert!(
        got.contains("\"started_at\": \"20"),
        "start times as RFC 3339"
    );
    assert_eq!(got, want + "\n");
    assert!(got.ends_with("}\n"));
}
