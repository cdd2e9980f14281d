//! The "Samples per metric" section: per metric, its table (cards on a
//! phone) and its two plots. A report of thousands of metrics draws the
//! plots of at most [`MAX_PLOTTED`] of them, beyond-noise ones first: the
//! page stays one a browser opens, and every metric keeps its table.

use std::fmt::Write as _;

use anyhow::Result;

use super::cells::{ci_text, delta_text, footnote_html, legend, verdict_class, verdict_text};
use super::plot::{self, figure};
use super::{esc, samples};
use crate::analysis::view::order::ExecutionOrder;
use crate::analysis::view::ReportView;
use crate::analysis::{Analysis, MetricAnalysis, Verdict};
use crate::report::text::fmt_num;

/// The most metrics whose plots one page draws. Each metric's two plots
/// are 10-40 KB of SVG; drawing all of 1,000 Go benchmarks' 3,000 metrics
/// made a 47 MB page that browsers open slowly or not at all. Past this
/// many, the rest show their table only.
pub const MAX_PLOTTED: usize = 150;

/// Which metrics get plots: every one up to [`MAX_PLOTTED`]; past that,
/// those with a comparison beyond noise first, then the rest, each in
/// page order.
fn plotted(metrics: &[MetricAnalysis]) -> Vec<bool> {
    if metrics.len() <= MAX_PLOTTED {
        return vec![true; metrics.len()];
    }
    let beyond = |m: &MetricAnalysis| {
        m.comparisons
            .iter()
            .any(|c| matches!(c.verdict, Verdict::Better | Verdict::Worse))
    };
    let mut draw = vec![false; metrics.len()];
    let mut left = MAX_PLOTTED;
    for pass_beyond in [true, false] {
        for (i, m) in metrics.iter().enumerate() {
            if left > 0 && !draw[i] && beyond(m) == pass_beyond {
                draw[i] = true;
                left -= 1;
            }
        }
    }
    draw
}

pub(super) fn metrics(o: &mut String, v: &ReportView) -> Result<()> {
    let a = &v.shown;
    o.push_str("<h2 id=\"metrics\">Samples per metric</h2>");
    if crate::report::boots_text::by_boot(a) {
        o.push_str(super::boots::SAMPLES_INTRO);
        o.push_str(&legend(&a.configs));
    } else {
        let _ = write!(
        o,
        "<p>First: every run's value per config (one value per run: the median of its samples), with the median \
         (black bar) and its 95% order-statistic CI (thick vertical bar); above {} values the configs are drawn as \
         violins (kernel density). Beside it (below it on a phone): the same values in execution order, so drift shows as a slope.</p>{}",
        samples::STRIP_MAX_POINTS,
        legend(&a.configs)
    );
    }
    let draw = plotted(&a.metrics);
    let n_drawn = draw.iter().filter(|d| **d).count();
    if n_drawn < draw.len() {
        let _ = write!(
            o,
            "<p id=\"plots-left-out\"><b>Plots of {n_drawn} of {} metrics:</b> those with a change beyond noise first, \
             then the rest in page order; every metric has its table.</p>",
            draw.len()
        );
    }
    // Each metric's section is independent: draw them on all cores, then
    // join in order.
    use rayon::prelude::*;
    let sections: Vec<Result<String>> = a
        .metrics
        .par_iter()
        .zip(&v.order)
        .zip(&draw)
        .map(|((m, order), draw)| metric_section(a, m, order, *draw))
        .collect();
    let mut last_w = "";
    for (m, sec) in a.metrics.iter().zip(sections) {
        if m.workload != last_w {
            let _ = write!(o, "<h3>{}</h3>", esc(&m.workload));
            last_w = &m.workload;
        }
        o.push_str(&sec?);
    }
    Ok(())
}

/// One metric's table and, when `draw`, its plots; `order` holds its runs
/// in execution order in the unit the plot's axis is in (the view
/// converted them).
fn metric_section(
    a: &Analysis,
    m: &MetricAnalysis,
    order: &ExecutionOrder,
    draw: bool,
) -> Result<String> {
    // The points share the samples' axis: they must be in its unit.
    anyhow::ensure!(
        order.unit == m.spec.unit,
        "{}: execution-order points in {} on an axis in {}",
        m.spec.name,
        order.unit,
        m.spec.unit
    );
    let mut section = String::with_capacity(8192);
    let o = &mut section;
    {
        let _ = write!(
            o,
            "<h4>{} <small>({}, {} is better)</small></h4>",
            esc(&m.spec.name),
            esc(&m.spec.unit),
            m.spec.direction.as_str()
        );
        // Kernel configs: n counts boots, and a column gives each cell's
        // between-boot share of variance.
        let boot_col = m.cells.iter().any(|c| c.boots.is_some());
        let _ = write!(o, "<div class=\"scroll\"><table class=\"cells\"><thead><tr><th class=\"l\">config</th><th>n</th>{}<th>median</th>\
            <th>median CI</th><th>mean</th><th>delta</th><th>CI</th><th class=\"l v\">verdict</th></tr></thead><tbody>",
            if boot_col { "<th>boot share</th>" } else { "" });
        for (ci, cell) in m.cells.iter().enumerate() {
            let mut sorted = cell.values.clone();
            sorted.sort_by(f64::total_cmp);
            let mci = samples::median_ci(&sorted)
                .map(|(l, h)| format!("[{}, {}]", fmt_num(l), fmt_num(h)))
                .unwrap_or_else(|| "-".into());
            let (med, mean) = cell
                .summary
                .as_ref()
                .map(|s| (fmt_num(s.median), fmt_num(s.mean)))
                .unwrap_or_else(|| ("-".into(), "-".into()));
            let (class, d, c, v) = if ci == 0 {
                ("base", "baseline".to_string(), String::new(), String::new())
            } else {
                let cmp = &m.comparisons[ci - 1];
                (
                    verdict_class(cmp.verdict),
                    delta_text(cmp),
                    ci_text(cmp),
                    verdict_text(cmp, a.alpha),
                )
            };
            let _ = write!(
                o,
                "<tr class=\"{class}\"><td class=\"l\"><b style=\"color:{}\">{}</b> {}</td><td data-l=\"n\">{}</td>{}<td data-l=\"median\">{med}</td>\
                <td data-l=\"median CI\">{mci}</td><td data-l=\"mean\">{mean}</td><td data-l=\"delta\">{d}</td><td data-l=\"CI\">{c}</td><td class=\"l v\">{}</td></tr>",
                plot::css_color(ci),
                plot::marker_glyph(ci),
                esc(&cell.config),
                cell.values.len(),
                if boot_col {
                    format!("<td data-l=\"boot share\">{}</td>", crate::report::boots_text::share_cell(cell))
                } else {
                    String::new()
                },
                esc(&v)
            );
        }
        o.push_str("</tbody></table></div>");
        footnote_html(o, m.comparisons.iter(), a.alpha);
        if !draw {
            return Ok(section);
        }
        let values: Vec<Vec<f64>> = m.cells.iter().map(|c| c.values.clone()).collect();
        let svgs = samples::metric_plot(&a.configs, &values, &order.points, &m.spec.unit)?;
        // The table above holds the numbers; the label says what the picture shows.
        let short = if boot_col {
            format!(
                "{}: each boot's value (the mean of its runs) per config (left), and every run in run \
                 order (right); numbers in the table above",
                m.spec.name
            )
        } else {
            format!(
            "{}: each run's value per config (left) and in run order (right); numbers in the table above",
            m.spec.name
        )
        };
        figure(o, &svgs, &short, "");
    }
    Ok(section)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::analysis::view::{ExperimentData, ExperimentInfo, Extras, StoredMetric, StoredRun};
    use crate::metric::{Direction, MetricSpec};
    use crate::plan::Overrides;

    /// One workload of `n` metrics (m000, m001, ...) x 2 configs x 12 runs;
    /// the last five are 50% slower under the second config.
    fn many_metrics(n: usize) -> ExperimentData {
        let configs = vec!["a".to_string(), "b".to_string()];
        let name = |i: usize| format!("m{i:03}");
        let metrics = (0..n)
            .map(|i| StoredMetric {
                workload: "w".into(),
                spec: MetricSpec::new(&name(i), "ms", Direction::Lower),
            })
            .collect();
        let mut runs = Vec::new();
        for b in 0..12u32 {
            for (ci, c) in configs.iter().enumerate() {
                let samples: BTreeMap<String, Vec<f64>> = (0..n)
                    .map(|i| {
                        let shift = if ci == 1 && i + 5 >= n { 1.5 } else { 1.0 };
                        let v = shift * (10.0 + ((b as usize * 7 + i * 3 + ci) % 5) as f64 * 0.1);
                        (name(i), vec![v])
                    })
                    .collect();
                let id = (b * 2 + ci as u32) as i64;
                runs.push(StoredRun::ok(id, b, ci as u32, c, "w", samples));
            }
        }
        let info = ExperimentInfo {
            id: 1,
            name: "many".into(),
            label: None,
            plan_source: "t".into(),
            plan_text: "x".into(),
            overrides: Overrides::default(),
            host: "h".into(),
            fingerprint: BTreeMap::new(),
            seed: 1,
            order: "random-blocks".into(),
            runs_per_cell: 12,
            warmup: 0,
            baseline: "a".into(),
            created_at: "now".into(),
            finished_at: None,
            status: crate::status::ExperimentStatus::Complete,
            entered_config: None,
            self_usage: None,
            fleet_id: None,
            fleet_host: None,
            configs,
            workloads: vec!["w".into()],
        };
        ExperimentData {
            info,
            metrics,
            runs,
            events: vec![],
            series: vec![],
            profiles: vec![],
            boots: vec![],
        }
    }

    /// Past [`super::MAX_PLOTTED`] metrics, every metric keeps its table,
    /// the changes beyond noise keep their plots wherever they are on the
    /// page, and the page says how many are drawn; the forest plot draws
    /// its first rows, verdicts among them, and the table has them all.
    #[test]
    fn a_large_report_plots_the_changes_and_tables_everything() {
        let n = super::MAX_PLOTTED + 60;
        let data = many_metrics(n);
        let opts = crate::analysis::Options {
            resamples: 200,
            ..Default::default()
        };
        let a = crate::analysis::analyze(&data, &opts).unwrap();
        let html = super::super::render(&crate::analysis::view::build(
            &data,
            &a,
            None,
            Extras::default(),
        ))
        .unwrap();
        let at = html.find("id=\"metrics\"").unwrap();
        let (summary, metrics) = html.split_at(at);
        assert_eq!(metrics.matches("<h4>").count(), n, "a table per metric");
        assert_eq!(
            metrics.matches("<svg").count(),
            2 * super::MAX_PLOTTED,
            "two plots per drawn metric"
        );
        assert!(metrics.contains(&format!("Plots of {} of {n} metrics", super::MAX_PLOTTED)));
        let last = &metrics[metrics.find(&format!("<h4>m{:03} ", n - 1)).unwrap()..];
        assert!(
            last.contains("<svg"),
            "the last metric, beyond noise, is drawn: {}",
            &last[..last.len().min(1500)]
        );
        assert!(summary.contains("The plot shows the first 180 (those beyond noise first); all"));
        // Three chunks of the forest, each drawn wide and narrow.
        assert_eq!(summary.matches("<svg").count(), 6);
        assert_eq!(
            summary.matches("<tr class=").count(),
            n,
            "the table has every comparison"
        );
    }
}
