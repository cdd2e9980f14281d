//! Line plots: monitor and workload time series per config, and sweeps
//! (a quantity per transport against the configs, which a sweep orders by volume).

use plotters::prelude::*;

use super::plot::{self, err};
use crate::analysis::view::SeriesRecord;

/// At most this many runs' series are drawn per config (the first ones in
/// run order); the caption says when some were left out.
pub const MAX_RUNS_PER_CONFIG: usize = 8;

pub const HEIGHT: u32 = 220;

/// A run with fewer values than this does not make a line of its own: runs
/// shorter than a few monitor intervals (20 ms runs under vmstat at 1 s)
/// have one value each, and a line through one point draws nothing.
pub const MIN_POINTS_PER_RUN: usize = 3;

/// How a time-series plot shows its runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeriesShape {
    /// One line per run over the seconds since its start (runs with a
    /// single value as a marker).
    PerInterval,
    /// Most runs have fewer than [`MIN_POINTS_PER_RUN`] values: one point
    /// per run, the mean of its values, against the run's number in its
    /// config.
    PerRun,
}

/// The shape a plot of these runs takes; None when no run has a finite
/// value (no plot is drawn then).
pub fn shape(per_config: &[Vec<&SeriesRecord>]) -> Option<SeriesShape> {
    let runs: Vec<&SeriesRecord> = per_config.iter().flatten().copied().collect();
    if !runs.iter().any(|r| r.v.iter().any(|v| v.is_finite())) {
        return None;
    }
    let short = runs
        .iter()
        .filter(|r| r.v.len() < MIN_POINTS_PER_RUN)
        .count();
    Some(if 2 * short > runs.len() {
        SeriesShape::PerRun
    } else {
        SeriesShape::PerInterval
    })
}

/// Mean of a run's finite values.
fn run_mean(r: &SeriesRecord) -> Option<f64> {
    let v: Vec<f64> = r.v.iter().copied().filter(|v| v.is_finite()).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// One time-series plot: `per_config[c]` are config c's runs of one series,
/// drawn in `shape` (from [`shape`]).
pub fn time_series(
    per_config: &[Vec<&SeriesRecord>],
    unit: &str,
    shape: SeriesShape,
    width: u32,
) -> anyhow::Result<String> {
    // Points per config and per run: (x, y) in the plot's coordinates.
    let runs: Vec<Vec<Vec<(f64, f64)>>> = per_config
        .iter()
        .enumerate()
        .map(|(ci, runs)| match shape {
            SeriesShape::PerInterval => runs
                .iter()
                .take(MAX_RUNS_PER_CONFIG)
                .map(|r| {
                    r.t.iter()
                        .zip(&r.v)
                        .map(|(t, v)| (*t, *v))
                        .filter(|(t, v)| t.is_finite() && v.is_finite())
                        .collect()
                })
                .collect(),
            // Every run, one point each: they are cheap and the point of
            // this shape is to show the runs.
            // Each config's points are shifted a little to the side, so
            // that configs with equal values do not hide one another.
            SeriesShape::PerRun => {
                let k = per_config.len().max(1) as f64;
                runs.iter()
                    .enumerate()
                    .filter_map(|(i, r)| {
                        let dx = 0.3 * ((ci as f64 + 0.5) / k - 0.5);
                        run_mean(r).map(|m| vec![(i as f64 + 1.0 + dx, m)])
                    })
                    .collect()
            }
        })
        .collect();
    let all = || runs.iter().flatten().flatten();
    let (x0, x1) = plot::padded_range(all().map(|p| p.0)).unwrap_or((0.0, 1.0));
    let (y0, y1) = plot::padded_range(all().map(|p| p.1)).unwrap_or((0.0, 1.0));
    let x_desc = match shape {
        SeriesShape::PerInterval => "seconds since run start",
        SeriesShape::PerRun => "run (mean of its values)",
    };
    let x_ticks = plot::tick_labels(x0.max(0.0)..x1, 6);
    let y_ticks = plot::tick_labels(y0..y1, 5);
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
            .x_label_formatter(&|v| match shape {
                SeriesShape::PerInterval => x_ticks(v),
                // Runs are counted: whole numbers only.
                SeriesShape::PerRun if (v - v.round()).abs() < 1e-9 => format!("{}", v.round()),
                SeriesShape::PerRun => String::new(),
            })
            .x_desc(x_desc)
            .y_labels(5)
            .y_label_formatter(&y_ticks)
            .y_desc(unit)
            .label_style(plot::font(12))
            .max_light_lines(0)
            .set_all_tick_mark_size(0)
            .draw()
            .map_err(err)?;
        for (ci, runs) in runs.iter().enumerate() {
            let col = plot::color(ci);
            let mut singles = Vec::new();
            for pts in runs {
                if pts.len() >= 2 {
                    chart
                        .draw_series(LineSeries::new(
                            pts.iter().copied(),
                            col.mix(0.8).stroke_width(1),
                        ))
                        .map_err(err)?;
                } else {
                    // Never a line through a single point: it draws nothing.
                    singles.extend(pts.iter().copied());
                }
            }
            plot::draw_markers(&mut chart, ci, &singles, 3, col.filled())?;
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
    let (y0, y1) = plot::padded_range(lines.iter().flat_map(|l| l.1.iter().flatten().copied()))
        .unwrap_or((0.0, 1.0));
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (width, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let names: Vec<String> = categories.iter().map(|c| plot::clip(c, 12)).collect();
        let mut chart = plot::category_chart(&root, &names, y0.min(0.0)..y1, unit, 5)?;
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
