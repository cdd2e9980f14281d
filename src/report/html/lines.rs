//! Line plots: monitor and workload time series per config, and sweeps
//! (a quantity per transport against the configs, which a sweep orders by volume).

use plotters::prelude::*;

use super::plot::{self, err};
use crate::store::SeriesRecord;

/// At most this many runs' series are drawn per config (the first ones in
/// run order); the caption says when some were left out.
pub const MAX_RUNS_PER_CONFIG: usize = 8;

pub const HEIGHT: u32 = 220;

/// One time-series plot: `per_config[c]` are config c's runs of one series.
pub fn time_series(
    per_config: &[Vec<&SeriesRecord>],
    unit: &str,
    width: u32,
) -> anyhow::Result<String> {
    let recs = || {
        per_config
            .iter()
            .flat_map(|v| v.iter().take(MAX_RUNS_PER_CONFIG))
    };
    let (x0, x1) =
        plot::padded_range(recs().flat_map(|r| r.t.iter().copied())).unwrap_or((0.0, 1.0));
    let (y0, y1) =
        plot::padded_range(recs().flat_map(|r| r.v.iter().copied())).unwrap_or((0.0, 1.0));
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (width, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(8)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(x0.max(0.0)..x1, y0..y1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_labels(6)
            .x_label_formatter(&|v| plot::tick(*v))
            .x_desc("seconds since run start")
            .y_labels(5)
            .y_label_formatter(&|v| plot::tick(*v))
            .y_desc(unit)
            .label_style(plot::font(12))
            .max_light_lines(0)
            .set_all_tick_mark_size(0)
            .draw()
            .map_err(err)?;
        for (ci, runs) in per_config.iter().enumerate() {
            for r in runs.iter().take(MAX_RUNS_PER_CONFIG) {
                let pts = r.t.iter().zip(&r.v).map(|(t, v)| (*t, *v));
                chart
                    .draw_series(LineSeries::new(
                        pts,
                        plot::color(ci).mix(0.8).stroke_width(1),
                    ))
                    .map_err(err)?;
            }
        }
        root.present().map_err(err)?;
    }
    Ok(buf)
}

/// A sweep: one line per series (e.g. transport), x = category (config) in
/// order, y = the value at that category (None: not measured there).
pub fn sweep(
    categories: &[String],
    lines: &[(String, Vec<Option<f64>>)],
    unit: &str,
    width: u32,
) -> anyhow::Result<String> {
    let k = categories.len().max(1);
    let (y0, y1) = plot::padded_range(lines.iter().flat_map(|l| l.1.iter().flatten().copied()))
        .unwrap_or((0.0, 1.0));
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (width, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(8)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5..(k as f64 - 0.5), y0.min(0.0)..y1)
            .map_err(err)?;
        let names: Vec<String> = categories.iter().map(|c| plot::clip(c, 12)).collect();
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
            .y_labels(5)
            .y_label_formatter(&|v| plot::tick(*v))
            .y_desc(unit)
            .label_style(plot::font(12))
            .max_light_lines(0)
            .set_all_tick_mark_size(0)
            .draw()
            .map_err(err)?;
        for (li, (_, vals)) in lines.iter().enumerate() {
            let col = plot::color(li);
            let pts: Vec<(f64, f64)> = vals
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.map(|v| (i as f64, v)))
                .collect();
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), col.stroke_width(2)))
                .map_err(err)?;
            plot::draw_markers(&mut chart, li, &pts, 4, col.filled())?;
        }
        root.present().map_err(err)?;
    }
    Ok(buf)
}
