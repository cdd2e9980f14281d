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
