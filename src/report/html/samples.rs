//! Per-metric plots: every run's value per config (strip plot, or a violin
//! when there are too many points to draw one by one) with the median and
//! its CI, and the same values in run order (drift becomes visible).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::plot::{self, err};

/// Above this many values in one plot, each config is drawn as a violin
/// (plus its median and CI) instead of one marker per value: keeps a
/// 500-metric report under 5 MB. The run-sequence plot still shows every value.
pub const STRIP_MAX_POINTS: usize = 120;

pub const HEIGHT: u32 = 220;

/// Distribution-free CI of the median from order statistics: the ranks
/// `n/2 -+ z*sqrt(n)/2` (normal approximation to Binomial(n, 1/2), z = 1.96
/// for 95%). None below 6 values, where it would span the whole sample.
pub fn median_ci(sorted: &[f64]) -> Option<(f64, f64)> {
    let n = sorted.len();
    if n < 6 {
        return None;
    }
    let h = 1.96 * (n as f64).sqrt() / 2.0;
    let lo = ((n as f64 / 2.0 - h).floor() as isize).max(0) as usize;
    let hi = ((n as f64 / 2.0 + h).ceil() as usize).min(n - 1);
    Some((sorted[lo], sorted[hi]))
}

fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// Gaussian kernel density at `m` points over [lo, hi], Silverman's bandwidth.
fn density(sorted: &[f64], lo: f64, hi: f64, m: usize) -> Vec<(f64, f64)> {
    let n = sorted.len() as f64;
    let mean = sorted.iter().sum::<f64>() / n;
    let sd = (sorted.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt();
    let iqr = sorted[(sorted.len() * 3) / 4] - sorted[sorted.len() / 4];
    let s = sd
        .min(iqr / 1.34)
        .max(sd * 0.1)
        .max((hi - lo).abs() * 1e-3 + f64::MIN_POSITIVE);
    let bw = 0.9 * s * n.powf(-0.2);
    (0..m)
        .map(|k| {
            let y = lo + (hi - lo) * k as f64 / (m - 1) as f64;
            let d: f64 = sorted
                .iter()
                .map(|x| (-0.5 * ((y - x) / bw).powi(2)).exp())
                .sum();
            (y, d)
        })
        .collect()
}

/// Distribution per config. `values[c]` are config c's per-run values.
fn distribution<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    configs: &[String],
    values: &[Vec<f64>],
    unit: &str,
    (ylo, yhi): (f64, f64),
) -> anyhow::Result<()> {
    let total: usize = values.iter().map(Vec::len).sum();
    let strip = total <= STRIP_MAX_POINTS;
    {
        let names: Vec<String> = configs.iter().map(|c| plot::clip(c, 14)).collect();
        let mut chart = plot::category_chart(root, &names, ylo..yhi, unit, 4)?;
        for (ci, vals) in values.iter().enumerate() {
            if vals.is_empty() {
                continue;
            }
            let x0 = ci as f64;
            let col = plot::color(ci);
            let mut sorted = vals.clone();
            sorted.sort_by(f64::total_cmp);
            if strip {
                // Deterministic jitter (golden-ratio sequence) so the plot is
                // the same every time the report is rendered.
                let pts: Vec<(f64, f64)> = vals
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (x0 + ((i as f64 * 0.618_034) % 1.0 - 0.5) * 0.5, *v))
                    .collect();
                plot::draw_markers(&mut chart, ci, &pts, 3, col.mix(0.75).filled())?;
            } else if sorted.len() >= 2 && sorted[0] < sorted[sorted.len() - 1] {
                let d = density(&sorted, sorted[0], sorted[sorted.len() - 1], 16);
                let dmax = d
                    .iter()
                    .map(|p| p.1)
                    .fold(0.0, f64::max)
                    .max(f64::MIN_POSITIVE);
                let mut poly: Vec<(f64, f64)> =
                    d.iter().map(|(y, w)| (x0 + 0.4 * w / dmax, *y)).collect();
                poly.extend(d.iter().rev().map(|(y, w)| (x0 - 0.4 * w / dmax, *y)));
                chart
                    .draw_series(std::iter::once(Polygon::new(poly, col.mix(0.35).filled())))
                    .map_err(err)?;
            }
            let med = median(&sorted);
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x0 - 0.3, med), (x0 + 0.3, med)],
                    BLACK.stroke_width(2),
                )))
                .map_err(err)?;
            if let Some((lo, hi)) = median_ci(&sorted) {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(x0 + 0.33, lo), (x0 + 0.33, hi)],
                        BLACK.stroke_width(3),
                    )))
                    .map_err(err)?;
            }
        }
    }
    Ok(())
}

/// Values in run order: `seq[c]` holds config c's (run index, value) pairs,
/// the index counting the workload's measured runs across all configs. It
/// has its own y ticks: on a phone it sits under the distribution, not
/// beside it.
fn run_sequence<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    seq: &[Vec<(usize, f64)>],
    unit: &str,
    (ylo, yhi): (f64, f64),
) -> anyhow::Result<()> {
    let y_ticks = plot::tick_labels(ylo..yhi, 4);
    let n = seq.iter().flatten().map(|p| p.0 + 1).max().unwrap_or(1);
    let marks = n <= 2 * STRIP_MAX_POINTS / 3;
    {
        let mut chart = ChartBuilder::on(root)
            .margin(8)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5..(n as f64 - 0.5), ylo..yhi)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(4)
            // Runs are counted: a tick between two runs (plotters puts
            // them every 0.5 on a short axis) gets no label, not a repeat.
            .x_label_formatter(&|v| {
                if (v - v.round()).abs() < 1e-9 && v.round() >= 0.0 {
                    format!("{}", v.round())
                } else {
                    String::new()
                }
            })
            .x_desc("run (in execution order)")
            .y_labels(4)
            .y_label_formatter(&y_ticks)
            .y_desc(unit)
            .label_style(plot::font(12))
            .max_light_lines(0)
            .set_all_tick_mark_size(0)
            .draw()
            .map_err(err)?;
        for (ci, pts) in seq.iter().enumerate() {
            let col = plot::color(ci);
            chart
                .draw_series(LineSeries::new(
                    pts.iter().map(|(i, v)| (*i as f64, *v)),
                    col.stroke_width(1),
                ))
                .map_err(err)?;
            if marks {
                let p: Vec<(f64, f64)> = pts.iter().map(|(i, v)| (*i as f64, *v)).collect();
                plot::draw_markers(&mut chart, ci, &p, 2, col.filled())?;
            }
        }
    }
    Ok(())
}

/// Two SVGs per metric, each [`PLOT_WIDTH`](plot::PLOT_WIDTH) wide: the
/// distribution per config, and the values in run order, on the same y
/// range so a level reads across both. Side by side in a wide window,
/// one under the other on a phone, where each fits the width at about
/// its drawn size (a single two-panel drawing came out at half size).
pub fn metric_plot(
    configs: &[String],
    values: &[Vec<f64>],
    seq: &[Vec<(usize, f64)>],
    unit: &str,
) -> anyhow::Result<[String; 2]> {
    let y = plot::padded_range(values.iter().flatten().copied()).unwrap_or((0.0, 1.0));
    let (mut left, mut right) = (String::new(), String::new());
    {
        let root =
            SVGBackend::with_string(&mut left, (plot::PLOT_WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        distribution(&root, configs, values, unit, y)?;
        root.present().map_err(err)?;
    }
    {
        let root =
            SVGBackend::with_string(&mut right, (plot::PLOT_WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        run_sequence(&root, seq, unit, y)?;
        root.present().map_err(err)?;
    }
    Ok([left, right])
}
