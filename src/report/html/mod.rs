//! The HTML report: one self-contained file (inline CSS and SVG, no
//! scripts, no network fetches) with the forest-plot summary, every sample
//! per metric, time series, transport sweeps and the environment.
//!
//! Plots are drawn by plotters' SVG backend (see `plot.rs`); every piece of
//! text that comes from a command, plan, host or store is escaped by [`esc`].

mod banners;
mod boots;
mod cells;
mod forest;
mod history;
mod lines;
mod metrics;
mod page;
mod plot;
mod runs;
mod samples;
mod sweeps;

use anyhow::Result;

use crate::analysis::view::ReportView;
pub use crate::analysis::view::{Extras, SourceExperiment};

pub use history::render as history_page;
pub use samples::median_ci;

/// Escape text for HTML element content and attribute values. Control
/// characters other than newline (which `<pre>` blocks of stderr need) are
/// shown as `\x1b` and the like, as [`crate::report::escape`] does for the
/// terminal.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in crate::report::escape::terminal_safe_lines(s).chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Render the HTML report of analysed data. Text drawn into the plots
/// (config and metric names) is not HTML-escaped by `esc`, so the page as a
/// whole gets the terminal-safe pass too: no control character reaches a
/// terminal that shows the file, or a browser's parser.
pub fn render(v: &ReportView) -> Result<String> {
    Ok(crate::report::escape::terminal_safe_lines(&page::render(
        v,
    )?))
}

/// The HTML format: one self-contained page with its plots.
pub struct Html;

impl super::format::ReportFormat for Html {
    fn report(&self, v: &ReportView, _: &super::ReportOptions) -> Result<String> {
        render(v)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::analysis;
    use crate::analysis::view::{
        ExperimentData, ExperimentInfo, SeriesRecord, StoredMetric, StoredRun,
    };
    use crate::metric::{Direction, MetricSpec};
    use crate::plan::Overrides;

    /// A transport sweep: configs are volumes, metrics `<transport>.mb_per_s`
    /// and `<transport>.dropped`, and each run recorded a throughput series.
    fn sweep_data() -> (ExperimentData, Extras) {
        let configs: Vec<String> = ["1MB", "10MB", "100MB"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut metrics = Vec::new();
        for t in ["pipe", "unix"] {
            metrics.push(StoredMetric {
                workload: "sweep".into(),
                spec: MetricSpec::new(&format!("{t}.mb_per_s"), "MB/s", Direction::Higher),
            });
            metrics.push(StoredMetric {
                workload: "sweep".into(),
                spec: MetricSpec::new(&format!("{t}.dropped"), "events", Direction::Lower),
            });
        }
        let mut runs = Vec::new();
        let mut series = Vec::new();
        for b in 0..5u32 {
            for (ci, c) in configs.iter().enumerate() {
                let id = (b * 10 + ci as u32) as i64;
                let mut samples = BTreeMap::new();
                samples.insert(
                    "pipe.mb_per_s".into(),
                    vec![900.0 - 100.0 * ci as f64 + b as f64],
                );
                samples.insert(
                    "unix.mb_per_s".into(),
                    vec![700.0 - 50.0 * ci as f64 + b as f64],
                );
                samples.insert("pipe.dropped".into(), vec![(ci * ci) as f64 + b as f64]);
                samples.insert("unix.dropped".into(), vec![ci as f64]);
                runs.push(StoredRun::ok(id, b, ci as u32, c, "sweep", samples));
                series.push((
                    c.clone(),
                    "sweep".into(),
                    SeriesRecord {
                        name: "throughput".into(),
                        unit: "MB/s".into(),
                        t: vec![0.0, 0.5, 1.0],
                        v: vec![800.0, 850.0 - ci as f64, 820.0],
                    },
                ));
            }
        }
        let info = ExperimentInfo {
            id: 1,
            name: "sweep".into(),
            label: None,
            plan_source: "t".into(),
            plan_text: "x".into(),
            overrides: Overrides::default(),
            host: "h".into(),
            fingerprint: BTreeMap::from([("kernel".to_string(), "6.18".to_string())]),
            seed: 1,
            order: "random-blocks".into(),
            runs_per_cell: 5,
            warmup: 0,
            baseline: "1MB".into(),
            created_at: "now".into(),
            finished_at: None,
            status: crate::status::ExperimentStatus::Complete,
            entered_config: None,
            self_usage: None,
            fleet_id: None,
            fleet_host: None,
            configs,
            workloads: vec!["sweep".into()],
        };
        let extras = Extras {
            sources: vec![SourceExperiment {
                title: "#1".into(),
                info: info.clone(),
                imported_from: None,
            }],
            series,
            banner: vec![],
        };
        (
            ExperimentData {
                info,
                metrics,
                runs,
                events: vec![],
                series: vec![],
                profiles: vec![],
                boots: vec![],
            },
            extras,
        )
    }

    #[test]
    fn sweeps_and_series_are_drawn_when_present() {
        let (data, x) = sweep_data();
        let opts = analysis::Options {
            resamples: 200,
            ..Default::default()
        };
        let a = analysis::analyze(&data, &opts).unwrap();
        let html = render(&analysis::view::build(&data, &a, None, x)).unwrap();
        assert!(html.contains("id=\"sweeps\""));
        assert!(
            html.contains(
                "MB/s per transport against config: pipe: 1MB=902.0 10MB=802.0 100MB=702.0;"
            ),
            "{}",
            &html[html.find("per transport").unwrap_or(0)..][..200.min(html.len())]
        );
        assert!(html.contains("records dropped per transport against config"));
        assert!(html.contains("id=\"series\"") && html.contains("Time series throughput of sweep"));
        // Without series or transport metrics the sections are left out.
        let plain = render(&analysis::view::build(&data, &a, None, Extras::default())).unwrap();
        assert!(!plain.contains("id=\"series\""));
    }

    #[test]
    fn escaping_covers_markup_and_quotes() {
        assert_eq!(
            esc("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
    }

    #[test]
    fn median_ci_brackets_the_median() {
        let v: Vec<f64> = (1..=40).map(f64::from).collect();
        let (lo, hi) = median_ci(&v).unwrap();
        assert!(
            lo < 20.5 && hi > 20.5 && lo >= 13.0 && hi <= 28.0,
            "{lo} {hi}"
        );
        assert!(median_ci(&v[..5]).is_none());
    }
}
