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

#[cfg(test)]
mod tests {
    #[test]
    fn fixed_units_convert_and_name_the_unit() {
        assert_eq!(super::fixed(0.00123456, "s", "ms", 3), "1.235 ms");
        assert_eq!(super::fixed(2048.0, "KiB", "MiB", 1), "2.0 MiB");
        assert_eq!(super::fixed(1.0, "s", "MiB", 1), "n/a");
        assert_eq!(super::show(12.5, "ms"), "12.50 ms");
    }
}
