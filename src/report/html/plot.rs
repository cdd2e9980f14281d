//! Shared pieces of the plots: the palette, fonts, error mapping, and the
//! `<figure>` a plot is shown in.
//!
//! Every plot is drawn by plotters' SVG backend into a string; nothing here
//! builds SVG by hand.

use std::fmt::Write as _;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::esc;
use crate::report::units;

/// Config colours: the Okabe-Ito palette reordered so that neighbours differ
/// in lightness as well as hue (baseline near-black, then light, mid, ...),
/// which keeps them apart in greyscale print. Each config also has its own
/// marker shape (see [`marker`]), the second channel for greyscale.
const PALETTE: &[(u8, u8, u8)] = &[
    (0x1a, 0x1a, 0x1a), // near-black, L* ~ 9
    (0xe6, 0x9f, 0x00), // orange, L* ~ 72
    (0x00, 0x72, 0xb2), // blue, L* ~ 46
    (0x56, 0xb4, 0xe9), // sky blue, L* ~ 70
    (0xd5, 0x5e, 0x00), // vermillion, L* ~ 56
    (0xcc, 0x79, 0xa7), // purple, L* ~ 62
    (0x00, 0x9e, 0x73), // green, L* ~ 58
];

pub fn color(i: usize) -> RGBColor {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    RGBColor(r, g, b)
}

/// CSS form of a config colour, for legends outside the SVG.
pub fn css_color(i: usize) -> String {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// The marker of config `i`: circle, triangle, square, cross, repeating.
#[derive(Clone, Copy)]
pub enum Marker {
    Circle,
    Triangle,
    Square,
    Cross,
}

pub fn marker(i: usize) -> Marker {
    [
        Marker::Circle,
        Marker::Triangle,
        Marker::Square,
        Marker::Cross,
    ][i % 4]
}

/// The Unicode glyph of a marker, for HTML legends.
pub fn marker_glyph(i: usize) -> &'static str {
    match marker(i) {
        Marker::Circle => "\u{25cf}",
        Marker::Triangle => "\u{25b2}",
        Marker::Square => "\u{25a0}",
        Marker::Cross => "\u{2716}",
    }
}

/// Draw config `i`'s markers at `pts`.
pub fn draw_markers<DB, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    i: usize,
    pts: &[(f64, f64)],
    size: i32,
    style: ShapeStyle,
) -> anyhow::Result<()>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let p = pts.iter().copied();
    match marker(i) {
        Marker::Circle => chart
            .draw_series(p.map(|c| Circle::new(c, size, style)))
            .map(|_| ()),
        Marker::Triangle => chart
            .draw_series(p.map(|c| TriangleMarker::new(c, size + 1, style)))
            .map(|_| ()),
        Marker::Square => chart
            .draw_series(p.map(|c| {
                EmptyElement::at(c) + Rectangle::new([(-size, -size), (size, size)], style)
            }))
            .map(|_| ()),
        Marker::Cross => chart
            .draw_series(p.map(|c| Cross::new(c, size, style)))
            .map(|_| ()),
    }
    .map_err(err)
}

/// Plotters errors carry the backend's error type; the report only needs the text.
pub fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow::anyhow!("drawing a plot: {e:?}")
}

/// A font of `size` SVG pixels (plotters writes font-size = size / 1.24).
pub fn font(size: u32) -> TextStyle<'static> {
    ("sans-serif", size as f64 * 1.24).into_font().color(&BLACK)
}

pub fn font_anchored(size: u32, h: HPos) -> TextStyle<'static> {
    font(size).pos(Pos::new(h, VPos::Center))
}

/// Rough width of `s` in pixels at `size` (plotters' naive font metric is
/// similar): used to size label areas and to clip long names.
pub fn text_width(s: &str, size: u32) -> u32 {
    (s.chars().count() as f64 * size as f64 * 0.55).ceil() as u32
}

/// Clip `s` to at most `max` characters, marking the cut with an ellipsis.
pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('\u{2026}');
        t
    }
}

/// A formatter for the `n` ticks plotters puts on `range` (the same key
/// points its mesh asks for): all printed with the decimals the tick step
/// needs (`report::units::axis_decimals`), so ticks never repeat.
pub fn tick_labels(range: std::ops::Range<f64>, n: usize) -> impl Fn(&f64) -> String {
    let kp = plotters::coord::types::RangedCoordf64::from(range).key_points(n);
    let decimals = units::axis_decimals(&kp);
    move |v: &f64| units::tick(*v, decimals)
}

/// The largest magnitude an axis reaches: a value beyond it is drawn at
/// its edge. Near f64::MAX, `hi - lo` and the padding overflow to
/// infinity, on which plotters' choice of ticks never ends (a store's
/// writer can put 1.7e308 in a sample; `report --format html` hung on it).
const AXIS_LIMIT: f64 = 1e300;

/// Padded [lo, hi] of finite values (a flat set gets +-5% or +-1), within
/// [`AXIS_LIMIT`].
pub fn padded_range(vals: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    let vals = vals.filter(|v| v.is_finite());
    for v in vals.map(|v| v.clamp(-AXIS_LIMIT, AXIS_LIMIT)) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return None;
    }
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        let d = if lo == 0.0 { 1.0 } else { lo.abs() * 0.05 };
        return Some((lo - d, hi + d));
    }
    let pad = (hi - lo) * 0.06;
    Some((lo - pad, hi + pad))
}

// The page and the sweep section both wrap plots in a figure; these live
// here, below both, so that neither imports the other for them.

/// Width in pixels of one plot (a wide plot is two).
pub(super) const PLOT_WIDTH: u32 = 420;

/// The smallest scale a plot is shown at. Plots are drawn with 12 px text
/// and scale with the window; a two-panel plot (840 px) on a 420 px phone
/// came out at half size, its text at 5 px. Below this scale the plot
/// keeps its width and scrolls sideways instead: 12 px x 0.85 = 10.2 px.
/// Every plot a phone shows is drawn at most [`PLOT_WIDTH`] wide, so at
/// 420 px none of them gets there.
const MIN_SCALE: f64 = 0.85;

/// `svg` in a `role="img"` div with `alt` as its text alternative (and
/// `class`, when given), never scaled below [`MIN_SCALE`].
pub(super) fn plot_div(class: Option<&str>, alt: &str, svg: &str) -> String {
    // plotters writes `<svg width="W" height="H" ...>` first.
    let width = svg
        .split_once("width=\"")
        .and_then(|(_, r)| r.split_once('"'))
        .and_then(|(w, _)| w.parse::<f64>().ok());
    let class = class.map(|c| format!(" class=\"{c}\"")).unwrap_or_default();
    match width {
        Some(w) => format!(
            "<div{class} role=\"img\" aria-label=\"{}\"><div style=\"min-width:{:.0}px\">{svg}</div></div>",
            esc(alt),
            w * MIN_SCALE
        ),
        None => format!("<div{class} role=\"img\" aria-label=\"{}\">{svg}</div>", esc(alt)),
    }
}

/// One `<figure>` of `svgs` side by side, each with `alt` as its text
/// alternative, and `caption` (already HTML) under them.
pub(super) fn figure(out: &mut String, svgs: &[String], alt: &str, caption: &str) {
    let _ = write!(out, "<figure><div class=\"plots\">");
    for s in svgs {
        out.push_str(&plot_div(None, alt, s));
    }
    let _ = write!(out, "</div><figcaption>{caption}</figcaption></figure>");
}

/// One `<figure>` of a plot drawn twice: `wide` for a window, `narrow`
/// (at most [`PLOT_WIDTH`]) for a phone; the style sheet shows one, and a
/// reader without media queries gets the wide one.
pub(super) fn figure_two(out: &mut String, [wide, narrow]: [&str; 2], alt: &str, caption: &str) {
    out.push_str("<figure>");
    out.push_str(&plot_div(Some("wide"), alt, wide));
    out.push_str(&plot_div(Some("narrow"), alt, narrow));
    let _ = write!(out, "<figcaption>{caption}</figcaption></figure>");
}

/// A chart whose x axis is `names` (one category per whole number, 0 up)
/// and whose y axis runs over `ys` with `y_labels` ticks in `unit`: the
/// frame, the category labels and the y ticks, drawn. Shared by the sweep
/// and the per-config distribution plots.
pub fn category_chart<'a, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, plotters::coord::Shift>,
    names: &[String],
    ys: std::ops::Range<f64>,
    unit: &str,
    y_labels: usize,
) -> anyhow::Result<
    ChartContext<
        'a,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
> {
    let k = names.len().max(1);
    let y_ticks = tick_labels(ys.clone(), y_labels);
    let mut chart = ChartBuilder::on(root)
        .margin(8)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(-0.5..(k as f64 - 0.5), ys)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(k + 1)
        .x_label_formatter(&|v| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < names.len() {
                names[i as usize].clone()
            } else {
                String::new()
            }
        })
        .y_labels(y_labels)
        .y_label_formatter(&y_ticks)
        .y_desc(unit)
        .label_style(font(12))
        .max_light_lines(0)
        .set_all_tick_mark_size(0)
        .draw()
        .map_err(err)?;
    Ok(chart)
}
