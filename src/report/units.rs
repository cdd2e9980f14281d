//! Units a person reads. Which unit each metric is shown in is the view's
//! choice (`analysis::view::units`, re-exported here for the command
//! line's `--time-unit`); this file is the one place a value and its unit
//! become text.

pub use crate::analysis::view::units::{choose, convert, Scale, TimeUnit};

use super::cells::fmt_num;

/// `v`, already in `unit`, as the reports print a value with its unit:
/// "12.35 ms", or the bare number for a metric without a unit.
pub fn show(v: f64, unit: &str) -> String {
    if unit.is_empty() {
        fmt_num(v)
    } else {
        format!("{} {unit}", fmt_num(v))
    }
}

/// `v` stored in a metric's unit, shown in `scale`'s.
pub fn show_scaled(v: f64, scale: &Scale) -> String {
    show(v * scale.factor, &scale.unit)
}

/// `v` stored in `from` as "`v` in `to`" with `decimals` decimals, for the
/// lines whose unit is fixed by their wording (the shell's start-up in ms,
/// sysdelta's own peak RSS in MiB); "n/a" when the units are of different
/// families.
pub fn fixed(v: f64, from: &str, to: &str, decimals: usize) -> String {
    match convert(v, from, to) {
        Some(x) => format!("{x:.decimals$} {to}"),
        None => "n/a".into(),
    }
}

/// Decimals that print every multiple of `step` exactly: the fewest with
/// which `step` itself is a whole number of the last digit (0.25 needs 2,
/// 0.005 needs 3, 200 none). An axis labels its ticks so, as matplotlib's
/// ScalarFormatter does, so that neighbouring ticks never print alike and a
/// point reads off the axis to the tick step's precision.
pub fn tick_decimals(step: f64) -> usize {
    let step = step.abs();
    if !step.is_finite() || step == 0.0 {
        return 0;
    }
    (0..=12)
        .find(|&d| {
            let x = step * 10f64.powi(d as i32);
            (x - x.round()).abs() <= 1e-6 * x
        })
        .unwrap_or(12)
}

/// Decimals for an axis whose ticks are `ticks` (ascending): what the tick
/// step needs ([`tick_decimals`]), and at least what the reports have
/// always printed at the ticks' magnitude (none from 100, two from 1,
/// three below), so that one axis prints all its ticks alike.
pub fn axis_decimals(ticks: &[f64]) -> usize {
    let step = ticks
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|d| *d > 0.0)
        .fold(f64::INFINITY, f64::min);
    let top = ticks.iter().map(|v| v.abs()).fold(0.0, f64::max);
    let floor = if top >= 100.0 {
        0
    } else if top >= 1.0 {
        2
    } else {
        3
    };
    let need = if step.is_finite() {
        tick_decimals(step)
    } else {
        ticks.first().map_or(0, |v| tick_decimals(*v))
    };
    need.max(floor)
}

/// One axis tick `v` with `decimals` decimals (from [`tick_decimals`]),
/// never in `e` notation and never "-0".
pub fn tick(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let s = format!("{v:.decimals$}");
    // A tick a rounding error below zero is zero.
    match s.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        _ => s,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ticks_print_as_precisely_as_their_step() {
        assert_eq!(super::tick_decimals(0.005), 3);
        assert_eq!(super::tick_decimals(0.25), 2);
        assert_eq!(super::tick_decimals(0.2), 1);
        assert_eq!(super::tick_decimals(200.0), 0);
        assert_eq!(super::tick_decimals(1e-7), 7);
        let labels: Vec<String> = [4.665, 4.67, 4.675, 4.68]
            .iter()
            .map(|v| super::tick(*v, super::tick_decimals(0.005)))
            .collect();
        assert_eq!(labels, ["4.665", "4.670", "4.675", "4.680"]);
        assert_eq!(super::tick(-1e-17, 2), "0.00");
        assert_eq!(super::axis_decimals(&[116.0, 116.5, 117.0]), 1);
        assert_eq!(super::axis_decimals(&[5.0, 5.5, 6.0]), 2);
        assert_eq!(super::axis_decimals(&[100.0, 200.0]), 0);
        assert_eq!(super::axis_decimals(&[2e-5, 4e-5]), 5);
        assert_eq!(super::tick(-0.5, 1), "-0.5");
    }

    #[test]
    fn fixed_units_convert_and_name_the_unit() {
        assert_eq!(super::fixed(0.00123456, "s", "ms", 3), "1.235 ms");
        assert_eq!(super::fixed(2048.0, "KiB", "MiB", 1), "2.0 MiB");
        assert_eq!(super::fixed(1.0, "s", "MiB", 1), "n/a");
        assert_eq!(super::show(12.5, "ms"), "12.50 ms");
    }
}
