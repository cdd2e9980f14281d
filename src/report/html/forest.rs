//! The summary forest plot: every comparison's ratio to the baseline with
//! its CI, on a log axis: the changes beyond noise first, each group by
//! size of change.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::plot::{self, err};
use crate::analysis::{Analysis, Verdict};

/// One row of the forest: a (metric, config) comparison that has a ratio.
pub struct Row {
    pub label: String,
    pub ratio: f64,
    pub ci: Option<(f64, f64)>,
    pub verdict: Verdict,
    /// Why there is no CI bar, said beside the point: "not estimable"
    /// (the analysis tried) or "no CI" (too few runs, or an interval
    /// reaching -100% that a log axis cannot show).
    pub no_ci: Option<&'static str>,
}

/// Rows of every comparison with a positive ratio: verdicts (worse or
/// better) first, then the rest, each group largest |log ratio| first. By
/// size alone, noise rows with huge CIs (a few runs of a jittery metric)
/// came before the changes a reader looks for.
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
            // The change as a factor (the ratio of means for a positive
            // baseline), like `ratio` above.
            let ci = c
                .delta_ci_pct
                .map(|(lo, hi)| (1.0 + lo / 100.0, 1.0 + hi / 100.0))
                .filter(|(lo, hi)| *lo > 0.0 && *hi > 0.0);
            let no_ci = match ci {
                Some(_) => None,
                None if crate::analysis::ci_not_estimable(c) => Some("not estimable"),
                None => Some("no CI"),
            };
            rows.push(Row {
                label,
                ratio,
                ci,
                verdict: c.verdict,
                no_ci,
            });
        }
    }
    rows.sort_by(|x, y| {
        significant(y.verdict)
            .cmp(&significant(x.verdict))
            .then(y.ratio.ln().abs().total_cmp(&x.ratio.ln().abs()))
    });
    rows
}

/// Whether a verdict says the change is beyond noise.
pub fn significant(v: Verdict) -> bool {
    matches!(v, Verdict::Better | Verdict::Worse)
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

/// Where the row labels go: a column left of the plot (a wide page), or
/// a line above each row so the plot keeps the full width (a phone).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Wide,
    Narrow,
}

/// Width of the narrow drawing: fits a 420 px phone at full size.
pub const NARROW_WIDTH: u32 = 390;

/// Ticks of the log axis at round changes (0, +-1%, +-5%, +25%, -20%,
/// +100%, ...) within `x`, outermost first so the ends are labelled, each
/// at least `1/parts` of the axis from the others (fewer on a narrow
/// drawing, so that labels never touch).
pub fn ticks(x: (f64, f64), parts: f64) -> Vec<f64> {
    const UP: &[f64] = &[
        0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 200.0, 500.0, 1e3, 2e3, 5e3, 1e4,
        2e4, 5e4, 1e5,
    ];
    const DOWN: &[f64] = &[
        0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 80.0, 90.0, 95.0, 98.0, 99.0, 99.5, 99.8,
        99.9, 99.95, 99.98, 99.99,
    ];
    let (lo, hi) = (x.0.ln(), x.1.ln());
    let gap = (hi - lo) / parts;
    let mut cands: Vec<f64> = UP
        .iter()
        .map(|p| 1.0 + p / 100.0)
        .chain(DOWN.iter().map(|p| 1.0 - p / 100.0))
        .filter(|r| r.ln() > lo + gap * 0.2 && r.ln() < hi - gap * 0.2)
        .collect();
    cands.sort_by(|a, b| b.ln().abs().total_cmp(&a.ln().abs()));
    let mut out = vec![1.0];
    for c in &cands {
        if out.iter().all(|t: &f64| (t.ln() - c.ln()).abs() >= gap) {
            out.push(*c);
        }
    }
    // Each side gets a tick, closer than the gap if it must.
    for side in [-1.0, 1.0] {
        let on_side = |r: &f64| r.ln() * side > 0.0;
        if !out.iter().any(on_side) {
            if let Some(c) = cands.iter().filter(|r| on_side(r)).find(|c| {
                out.iter()
                    .all(|t: &f64| (t.ln() - c.ln()).abs() >= gap / 2.0)
            }) {
                out.push(*c);
            }
        }
    }
    out.sort_by(f64::total_cmp);
    out
}

/// A change in percent, as the ticks and the points are labelled: a point's
/// value in whole percents from 1% up and with one decimal below; a tick
/// as exactly as its round value needs (one decimal below 1%).
fn pct(r: f64, point: bool) -> String {
    let d = (r - 1.0) * 100.0;
    // A change that rounds to zero is no "-0.0%".
    if d.abs() < 0.05 && point {
        "+0.0%".into()
    } else if d.abs() < 1e-9 {
        "0%".into()
    } else if point && d.abs() < 100.0 || d.abs() < 1.0 {
        format!("{d:+.1}%")
    } else if point {
        format!("{d:+.0}%")
    } else {
        // A tick is a round change (25%, 99.5%): printed exactly, so that
        // -99.5% and -99.9% never both read "-100%".
        let k = crate::report::units::tick_decimals(d);
        format!("{d:+.k$}%")
    }
}

/// The text beside a point: its change, and why it has no bar if it has none.
pub fn value_label(r: &Row) -> String {
    match r.no_ci {
        Some(why) => format!("{} ({why})", pct(r.ratio, true)),
        None => pct(r.ratio, true),
    }
}

pub const ROW_PX: u32 = 18;
const NARROW_ROW_PX: u32 = 34;

/// Draw rows (a chunk of the whole, all chunks share `x`) as one SVG. The x
/// axis is linear in ln(ratio), i.e. a log axis of the ratio, labelled in
/// round percent changes; every point has its value beside it.
pub fn draw(
    rows: &[Row],
    x: (f64, f64),
    band: Option<f64>,
    layout: Layout,
) -> anyhow::Result<String> {
    let label_chars = match layout {
        Layout::Wide => 46,
        Layout::Narrow => 54,
    };
    let (width, label_w, row_px) = match layout {
        Layout::Wide => {
            let w = rows
                .iter()
                .map(|r| plot::text_width(&plot::clip(&r.label, label_chars), 12))
                .max()
                .unwrap_or(40)
                .clamp(60, 300)
                + 10;
            (860, w, ROW_PX)
        }
        Layout::Narrow => (NARROW_WIDTH, 8, NARROW_ROW_PX),
    };
    // Tick labels above the rows too when the plot is taller than a screen.
    let top_ticks = rows.len() > 12;
    let top = if top_ticks { 44 } else { 24 };
    let height = top + 34 + row_px * rows.len() as u32;
    let tick_at = ticks(
        x,
        match layout {
            Layout::Wide => 9.0,
            Layout::Narrow => 6.0,
        },
    );
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let n = rows.len() as f64;
        let mut chart = ChartBuilder::on(&root)
            .margin_top(top)
            .margin_right(12)
            .x_label_area_size(34)
            .y_label_area_size(label_w)
            .build_cartesian_2d(x.0.ln()..x.1.ln(), 0.0..n)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .y_labels(0)
            .x_labels(0)
            .set_all_tick_mark_size(0)
            .draw()
            .map_err(err)?;
        let light = RGBColor(0xdd, 0xdd, 0xdd);
        for t in &tick_at {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(t.ln(), 0.0), (t.ln(), n)],
                    light.stroke_width(1),
                )))
                .map_err(err)?;
            let (px, py) = chart.backend_coord(&(t.ln(), 0.0));
            let style = plot::font(12).pos(Pos::new(HPos::Center, VPos::Top));
            root.draw(&Text::new(pct(*t, false), (px, py + 6), style.clone()))
                .map_err(err)?;
            if top_ticks {
                let (_, ty) = chart.backend_coord(&(t.ln(), n));
                let style = plot::font(12).pos(Pos::new(HPos::Center, VPos::Bottom));
                root.draw(&Text::new(pct(*t, false), (px, ty - 4), style))
                    .map_err(err)?;
            }
        }
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
        // Row i's band is [n - i - 1, n - i], the largest change on top.
        // Narrow: the label on the band's upper part, the point below it.
        let y = |i: usize| match layout {
            Layout::Wide => n - i as f64 - 0.5,
            Layout::Narrow => n - i as f64 - 0.68,
        };
        let geometry = RowGeometry {
            x,
            n,
            layout,
            label_chars,
        };
        for (i, r) in rows.iter().enumerate() {
            draw_row(&root, &mut chart, r, y(i), i, &geometry)?;
        }
        let title = match layout {
            Layout::Wide => {
                "change of the mean against the baseline (log scale); grey band: typical CI"
            }
            Layout::Narrow => "change of mean vs baseline (log); grey: typical CI",
        };
        root.draw(&Text::new(title, (label_w as i32, 10), plot::font(12)))
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(buf)
}

/// What every row of one forest plot shares.
struct RowGeometry {
    x: (f64, f64),
    /// Rows in the plot (the y range is 0..n).
    n: f64,
    layout: Layout,
    label_chars: usize,
}

type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    plotters::coord::cartesian::Cartesian2d<
        plotters::coord::types::RangedCoordf64,
        plotters::coord::types::RangedCoordf64,
    >,
>;

/// Row `i` of the forest at height `y`: its CI bar, its point (shape by
/// verdict), its value beside the bar and its label.
fn draw_row(
    root: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    chart: &mut Chart,
    r: &Row,
    y: f64,
    i: usize,
    g: &RowGeometry,
) -> anyhow::Result<()> {
    let RowGeometry {
        x,
        n,
        layout,
        label_chars,
    } = *g;
    let grey = RGBColor(0x9a, 0x9a, 0x9a);
    let worse = RGBColor(0xb2, 0x18, 0x2b);
    let better = RGBColor(0x21, 0x66, 0xac);
    let no_ci = RGBColor(0x8a, 0x4b, 0x00);
    let (left_px, _) = chart.backend_coord(&(x.0.ln(), 0.0));
    let (right_px, _) = chart.backend_coord(&(x.1.ln(), 0.0));
    let col = match r.verdict {
        _ if r.no_ci.is_some() => no_ci,
        Verdict::Worse => worse,
        Verdict::Better => better,
        _ => grey,
    };
    if let Some((lo, hi)) = r.ci {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(lo.ln(), y), (hi.ln(), y)],
                col.stroke_width(2),
            )))
            .map_err(err)?;
    }
    // Worse: filled triangle; better: filled square; within noise:
    // hollow grey circle; no CI: a brown cross, so that a missing
    // interval never reads as "within noise". Shape, not only
    // colour, carries the verdict.
    let at = (r.ratio.ln(), y);
    match r.verdict {
        _ if r.no_ci.is_some() => chart
            .draw_series(std::iter::once(Cross::new(at, 5, col.stroke_width(2))))
            .map(|_| ()),
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
    // The value right of the bar, or left of it where the right
    // has no room.
    let value = value_label(r);
    let (lo, hi) = r.ci.unwrap_or((r.ratio, r.ratio));
    let (hi_px, py) = chart.backend_coord(&(hi.max(r.ratio).ln(), y));
    let (lo_px, _) = chart.backend_coord(&(lo.min(r.ratio).ln(), y));
    let tw = plot::text_width(&value, 11) as i32;
    let vstyle = |h| plot::font_anchored(11, h).color(&col);
    let placed = if hi_px + 7 + tw <= right_px || right_px - hi_px >= lo_px - left_px {
        Text::new(value, (hi_px + 7, py), vstyle(HPos::Left))
    } else {
        Text::new(value, (lo_px - 7, py), vstyle(HPos::Right))
    };
    root.draw(&placed).map_err(err)?;
    let style = if matches!(r.verdict, Verdict::Worse | Verdict::Better) {
        plot::font(12)
    } else {
        plot::font(12).color(&RGBColor(0x70, 0x70, 0x70))
    };
    let text = plot::clip(&r.label, label_chars);
    let label = match layout {
        Layout::Wide => {
            let (px, py) = chart.backend_coord(&(x.0.ln(), y));
            Text::new(
                text,
                (px - 6, py),
                style.pos(Pos::new(HPos::Right, VPos::Center)),
            )
        }
        Layout::Narrow => {
            let (px, py) = chart.backend_coord(&(x.0.ln(), n - i as f64 - 0.22));
            Text::new(
                text,
                (px + 2, py),
                style.pos(Pos::new(HPos::Left, VPos::Center)),
            )
        }
    };
    root.draw(&label).map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ticks near -100% are printed exactly, never all as "-100%".
    #[test]
    fn ticks_near_minus_100_percent_stay_apart() {
        assert_eq!(pct(1.0 - 0.995, false), "-99.5%");
        assert_eq!(pct(1.0 - 0.999, false), "-99.9%");
        assert_eq!(pct(1.25, false), "+25%");
        assert_eq!(pct(1.0 - 0.995, true), "-99.5%");
    }

    /// Every axis, from +-1% to x1000, gets 0% and at least one round tick
    /// on each side, and nothing outside the axis.
    #[test]
    fn ticks_are_round_and_cover_both_sides() {
        for span in [0.01f64, 0.05, 0.2, 0.7, 1.5, 3.0, 7.0] {
            let x = ((-span).exp(), span.exp());
            let t = ticks(x, 6.0);
            assert!(t.contains(&1.0), "{span}: {t:?}");
            assert!(
                t.iter().any(|r| *r < 1.0) && t.iter().any(|r| *r > 1.0),
                "{span}: {t:?}"
            );
            assert!(t.iter().all(|r| *r > x.0 && *r < x.1), "{span}: {t:?}");
            for r in t {
                let label = pct(r, false);
                let p: f64 = label.trim_end_matches('%').parse().unwrap();
                assert!((p * 10.0).fract().abs() < 1e-9, "{span}: {label}");
            }
        }
    }
}
