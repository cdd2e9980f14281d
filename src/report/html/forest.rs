//! The summary forest plot: every comparison's ratio to the baseline with
//! its CI, on a log axis, sorted by size of change.

use plotters::prelude::*;
use plotters::style::text_anchor::HPos;

use super::plot::{self, err};
use crate::analysis::{Analysis, Verdict};

/// One row of the forest: a (metric, config) comparison that has a ratio.
pub struct Row {
    pub label: String,
    pub ratio: f64,
    pub ci: Option<(f64, f64)>,
    pub verdict: Verdict,
}

/// Rows of every comparison with a positive ratio, largest |log ratio| first.
/// Comparisons without a ratio (n/a) are left to the table, and so is
/// telemetry (the monitors' metrics): dozens of them would bury the
/// workloads' own metrics in the plot.
pub fn rows(a: &Analysis) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for m in a
        .metrics
        .iter()
        .filter(|m| !crate::monitor::is_telemetry_metric(&m.spec.name))
    {
        for c in &m.comparisons {
            let Some(d) = c.delta_mean_pct else { continue };
            let ratio = 1.0 + d / 100.0;
            if ratio <= 0.0 || !ratio.is_finite() {
                continue;
            }
            let label = if a.configs.len() > 2 {
                format!("{}/{} [{}]", m.workload, m.spec.name, c.config)
            } else {
                format!("{}/{}", m.workload, m.spec.name)
            };
            rows.push(Row {
                label,
                ratio,
                // The change as a factor (the ratio of means for a
                // positive baseline), like `ratio` above.
                ci: c
                    .delta_ci_pct
                    .map(|(lo, hi)| (1.0 + lo / 100.0, 1.0 + hi / 100.0))
                    .filter(|(lo, hi)| *lo > 0.0 && *hi > 0.0),
                verdict: c.verdict,
            });
        }
    }
    rows.sort_by(|x, y| y.ratio.ln().abs().total_cmp(&x.ratio.ln().abs()));
    rows
}

/// The noise band: ratios within `[1/b, b]`, where `ln b` is the median
/// half-width of the comparisons' log-ratio CIs. A delta inside it is the
/// size a typical CI of this report cannot tell from no change.
pub fn noise_band(rows: &[Row]) -> Option<f64> {
    let mut hw: Vec<f64> = rows
        .iter()
        .filter_map(|r| r.ci.map(|(lo, hi)| (hi.ln() - lo.ln()) / 2.0))
        .filter(|h| h.is_finite())
        .collect();
    if hw.is_empty() {
        return None;
    }
    hw.sort_by(f64::total_cmp);
    Some(hw[hw.len() / 2].exp())
}

/// The log-axis range shared by every chunk of the plot.
pub fn x_range(rows: &[Row], band: Option<f64>) -> (f64, f64) {
    let mut lo: f64 = 1.0;
    let mut hi: f64 = 1.0;
    for r in rows {
        lo = lo.min(r.ratio);
        hi = hi.max(r.ratio);
        if let Some((a, b)) = r.ci {
            lo = lo.min(a);
            hi = hi.max(b);
        }
    }
    if let Some(b) = band {
        lo = lo.min(1.0 / b);
        hi = hi.max(b);
    }
    // Symmetric in log space around 1, so better and worse read alike.
    let span = (hi.ln().abs().max(lo.ln().abs()) * 1.08).clamp(0.01, 7.0);
    (1.0 / span.exp(), span.exp())
}

pub const ROW_PX: u32 = 18;

/// Axis tick of a ratio: "1.10x" style, more digits near 1.
fn ratio_tick(r: f64) -> String {
    if (r - 1.0).abs() < 0.1 {
        format!("{r:.3}\u{d7}")
    } else if r < 10.0 {
        format!("{r:.2}\u{d7}")
    } else {
        format!("{r:.0}\u{d7}")
    }
}

/// Draw rows (a chunk of the whole, all chunks share `x`) as one SVG. The x
/// axis is linear in ln(ratio), i.e. a log axis of the ratio, labelled in ratios.
pub fn draw(rows: &[Row], x: (f64, f64), band: Option<f64>, width: u32) -> anyhow::Result<String> {
    let label_chars = 46;
    let label_w = rows
        .iter()
        .map(|r| plot::text_width(&plot::clip(&r.label, label_chars), 12))
        .max()
        .unwrap_or(40)
        .clamp(60, 300)
        + 10;
    let height = 24 + 34 + ROW_PX * rows.len() as u32;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let n = rows.len() as f64;
        let mut chart = ChartBuilder::on(&root)
            .margin_top(24)
            .margin_right(16)
            .x_label_area_size(34)
            .y_label_area_size(label_w)
            .build_cartesian_2d(x.0.ln()..x.1.ln(), 0.0..n)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_labels(7)
            .x_label_formatter(&|v| ratio_tick(v.exp()))
            .x_label_style(plot::font(12))
            .max_light_lines(0)
            .set_all_tick_mark_size(0)
            .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
            .draw()
            .map_err(err)?;
        if let Some(b) = band {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(-b.ln(), 0.0), (b.ln(), n)],
                    RGBColor(0xd9, 0xd9, 0xd9).mix(0.6).filled(),
                )))
                .map_err(err)?;
        }
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(0.0, 0.0), (0.0, n)],
                BLACK.stroke_width(1),
            )))
            .map_err(err)?;
        // Row i is drawn at y = n - i - 0.5 so that the largest change is on top.
        let y = |i: usize| n - i as f64 - 0.5;
        let grey = RGBColor(0x9a, 0x9a, 0x9a);
        let worse = RGBColor(0xb2, 0x18, 0x2b);
        let better = RGBColor(0x21, 0x66, 0xac);
        for (i, r) in rows.iter().enumerate() {
            let col = match r.verdict {
                Verdict::Worse => worse,
                Verdict::Better => better,
                _ => grey,
            };
            if let Some((lo, hi)) = r.ci {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(lo.ln(), y(i)), (hi.ln(), y(i))],
                        col.stroke_width(2),
                    )))
                    .map_err(err)?;
            }
            // Worse: filled triangle; better: filled square; within noise:
            // hollow grey circle. Shape, not only colour, carries the verdict.
            let at = (r.ratio.ln(), y(i));
            match r.verdict {
                Verdict::Worse => chart
                    .draw_series(std::iter::once(TriangleMarker::new(at, 6, col.filled())))
                    .map(|_| ()),
                Verdict::Better => chart
                    .draw_series(std::iter::once(
                        EmptyElement::at(at) + Rectangle::new([(-4, -4), (4, 4)], col.filled()),
                    ))
                    .map(|_| ()),
                _ => chart
                    .draw_series(std::iter::once(Circle::new(at, 4, col.stroke_width(1))))
                    .map(|_| ()),
            }
            .map_err(err)?;
            let (px, py) = chart.backend_coord(&(x.0.ln(), y(i)));
            let style = if matches!(r.verdict, Verdict::Worse | Verdict::Better) {
                plot::font_anchored(12, HPos::Right)
            } else {
                plot::font_anchored(12, HPos::Right).color(&RGBColor(0x70, 0x70, 0x70))
            };
            root.draw(&Text::new(
                plot::clip(&r.label, label_chars),
                (px - 6, py),
                style,
            ))
            .map_err(err)?;
        }
        root.draw(&Text::new(
            "ratio to baseline mean (log scale); grey band: typical CI half-width",
            (label_w as i32, 10),
            plot::font(12),
        ))
        .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(buf)
}
