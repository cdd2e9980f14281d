//! `history --format html`: a metric over experiments, every run's value
//! and each experiment's median, with the change points marked, as one
//! self-contained page (inline CSS and SVG, no scripts).

use std::fmt::Write as _;

use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::HPos;

use super::plot::{self, err, PLOT_WIDTH};
use super::{esc, page::CSS};
use crate::analysis::history::History;
use crate::report::history::config_phrase;
use crate::report::text::fmt_num;

const RED: RGBColor = RGBColor(0xb2, 0x18, 0x2b);

/// The page: a sentence on what was found, the plot, and the table the
/// plot shows (its text alternative).
pub fn render(h: &History) -> Result<String> {
    let mut o = String::with_capacity(1 << 16);
    let title = format!("sysdelta history: {}/{}", h.workload, h.metric);
    let _ = write!(
        o,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{t}</title><style>{CSS}</style></head><body><h1>{t}</h1>",
        t = esc(&title)
    );
    let _ = write!(
        o,
        "<p class=\"meta\">{} experiments, {}; {} ({}) is better.</p>",
        h.points.len(),
        esc(&config_phrase(h)),
        esc(&h.direction),
        esc(&h.unit)
    );
    // The newest experiment's verdict first: what a reader (and a CI job)
    // asks of the newest commit.
    let _ = write!(
        o,
        "<p>{}</p>",
        esc(&crate::report::history::newest_line(&h.newest))
    );
    let found = if h.change_points.is_empty() {
        "<b>No change found.</b>".to_string()
    } else {
        let each: Vec<String> = h
            .change_points
            .iter()
            .map(|c| {
                format!(
                    "between {} and {}: median {} &rarr; {} ({}, p = {:.3})",
                    esc(&h.points[c.index - 1].label),
                    esc(&h.points[c.index].label),
                    fmt_num(c.median_before),
                    fmt_num(c.median_after),
                    pct(c.median_before, c.median_after),
                    c.p
                )
            })
            .collect();
        format!("<b>Change points:</b> {}.", each.join("; "))
    };
    let _ = write!(
        o,
        "<p>{found} Binary segmentation of the per-experiment medians; a split is kept when a \
         permutation test ({} orderings) gives p &lt; {}.</p>",
        h.permutations, h.alpha
    );
    // Two drawings, as the forest plot has: the wide one for a window,
    // one a phone shows at full size (its text at 12 px, not scaled down).
    let wide = plot_svg(h, 2 * PLOT_WIDTH)?;
    let narrow = plot_svg(h, super::forest::NARROW_WIDTH)?;
    let alt = format!(
        "{} per experiment, {} experiments; {}",
        h.metric,
        h.points.len(),
        if h.change_points.is_empty() {
            "no change found".to_string()
        } else {
            h.change_points
                .iter()
                .map(|c| {
                    format!(
                        "change point between {} and {}",
                        h.points[c.index - 1].label,
                        h.points[c.index].label
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    o.push_str("<figure><div class=\"plots\">");
    o.push_str(&plot::plot_div(Some("wide"), &alt, &wide));
    o.push_str(&plot::plot_div(Some("narrow"), &alt, &narrow));
    o.push_str(
        "</div><figcaption>Dots: every run's value; line: each experiment's median; \
         red line: a change point.</figcaption></figure>",
    );
    table(&mut o, h);
    o.push_str("</body></html>\n");
    Ok(crate::report::escape::terminal_safe_lines(&o))
}

fn pct(before: f64, after: f64) -> String {
    if before == 0.0 {
        "n/a".into()
    } else {
        format!("{:+.1}%", 100.0 * (after / before - 1.0))
    }
}

fn table(o: &mut String, h: &History) {
    o.push_str(
        "<div class=\"scroll\"><table><thead><tr><th>id</th><th class=\"l\">label</th>\
         <th class=\"l\">config</th><th>n</th><th>median</th><th>vs prev</th></tr></thead><tbody>",
    );
    for (i, p) in h.points.iter().enumerate() {
        if let Some(c) = h.change_points.iter().find(|c| c.index == i) {
            let _ = write!(
                o,
                "<tr class=\"diff\"><td class=\"l\" colspan=\"6\">change point (p = {:.3}): median {} &rarr; {} ({})</td></tr>",
                c.p,
                fmt_num(c.median_before),
                fmt_num(c.median_after),
                pct(c.median_before, c.median_after)
            );
        }
        let vs = if i == 0 {
            String::new()
        } else {
            pct(h.points[i - 1].median, p.median)
        };
        let _ = write!(
            o,
            "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            p.id,
            esc(&p.label),
            esc(&p.config),
            p.n,
            fmt_num(p.median),
            vs
        );
    }
    o.push_str("</tbody></table></div>");
}

/// Experiments along x (by label), the metric up y: every run as a grey
/// dot, the medians joined by a line, each change point a red vertical line
/// between the two experiments it separates, labelled with the change.
fn plot_svg(h: &History, width: u32) -> Result<String> {
    // Labels clipped to what one experiment's share of the axis holds
    // (12 px text, about 6.6 px a character), 14 characters at most.
    let per = (width.saturating_sub(80)) as usize / h.points.len().max(1);
    let chars = (per * 10 / 66).clamp(3, 14);
    let names: Vec<String> = h
        .points
        .iter()
        .map(|p| plot::clip(&p.label, chars))
        .collect();
    let ys = plot::padded_range(h.points.iter().flat_map(|p| p.values.iter().copied()))
        .unwrap_or((0.0, 1.0));
    let height = 360;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = plot::category_chart(&root, &names, ys.0..ys.1, &h.unit, 6)?;
        let grey = RGBColor(0x9a, 0x9a, 0x9a);
        for (i, p) in h.points.iter().enumerate() {
            chart
                .draw_series(
                    p.values
                        .iter()
                        .map(|v| Circle::new((i as f64, *v), 2, grey.filled())),
                )
                .map_err(err)?;
        }
        let medians: Vec<(f64, f64)> = h
            .points
            .iter()
            .enumerate()
            .map(|(i, p)| (i as f64, p.median))
            .collect();
        chart
            .draw_series(LineSeries::new(
                medians.iter().copied(),
                BLACK.stroke_width(2),
            ))
            .map_err(err)?;
        chart
            .draw_series(medians.iter().map(|c| Circle::new(*c, 4, BLACK.filled())))
            .map_err(err)?;
        for c in &h.change_points {
            let x = c.index as f64 - 0.5;
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x, ys.0), (x, ys.1)],
                    RED.stroke_width(2),
                )))
                .map_err(err)?;
            // The label on the side with more room, so it stays in the plot.
            let (px, py) = chart.backend_coord(&(x, ys.1));
            let (dx, anchor) = if 2 * c.index > h.points.len() {
                (-4, HPos::Right)
            } else {
                (4, HPos::Left)
            };
            root.draw(&Text::new(
                format!("change {}", pct(c.median_before, c.median_after)),
                (px + dx, py + 10),
                plot::font_anchored(12, anchor).color(&RED),
            ))
            .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(buf)
}
