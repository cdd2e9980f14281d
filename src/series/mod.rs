//! Time-series analysis of one run's per-interval samples (throughput per
//! second, swap-ins per second): is it degrading, improving or flat, where
//! does it change, and where does it settle?
//!
//! Values are always in time order, one per interval of `interval_s` seconds.

pub mod changepoint;
pub mod mannkendall;
pub mod newest;
pub mod table;
pub mod theilsen;

use serde::Serialize;

use crate::metric::Direction;

pub use table::print_side_by_side;

/// Significance level of the Mann-Kendall test in the flag rule.
pub const MK_ALPHA: f64 = 0.05;
/// Confidence of the Theil-Sen slope interval.
pub const SLOPE_CONFIDENCE: f64 = 0.95;
/// Smallest relative change over the run that counts as a trend.
pub const MIN_RELATIVE_CHANGE: f64 = 0.05;
/// Longest series analysed point by point. Theil-Sen and Mann-Kendall are
/// O(n^2) in time (Theil-Sen also in memory); longer series are first
/// reduced to medians of consecutive bins of `bin` values each.
pub const MAX_POINTS: usize = 2048;

/// The verdict on one series.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Flag {
    /// Getting worse over the run (falling, for a higher-is-better metric).
    Degrading,
    /// Getting better over the run.
    Improving,
    /// No trend that passes all three tests of the rule.
    Flat,
    /// Fewer than 3 values, or values that are not finite: no verdict.
    #[serde(rename = "too_short")]
    TooShort,
}

impl Flag {
    pub fn as_str(self) -> &'static str {
        match self {
            Flag::Degrading => "degrading",
            Flag::Improving => "improving",
            Flag::Flat => "flat",
            Flag::TooShort => "too short",
        }
    }
}

/// Trend analysis of one series. Statistics that are undefined (too few
/// values) are NaN, and then `flag` is [`Flag::TooShort`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Trend {
    pub n: usize,
    pub interval_s: f64,
    /// Values per analysed point: 1, or more when the series was longer than
    /// [`MAX_POINTS`] and slope, test and change points ran on bin medians.
    pub bin: usize,
    /// Theil-Sen slope, in the series' unit per second.
    pub theil_sen_slope: f64,
    /// 95% confidence interval of the slope (Sen 1968), unit per second.
    pub slope_ci: (f64, f64),
    /// Two-sided Mann-Kendall p-value.
    pub mann_kendall_p: f64,
    /// Kendall's tau of the values against time.
    pub kendall_tau: f64,
    /// Indices (0-based, into the values) where a new mean level starts (PELT).
    pub change_points: Vec<usize>,
    /// Median of the last third of the values (the last ceil(n/3)).
    pub asymptotic_level: f64,
    /// Theil-Sen slope times the run's duration ((n-1) intervals), divided
    /// by |median of all values|: the fitted change over the run, relative.
    pub relative_change: f64,
    pub flag: Flag,
}

/// [`analyze_dir`] for a higher-is-better series (throughput).
///
/// Assumes what [`analyze_dir`] assumes.
pub fn analyze(values: &[f64], interval_s: f64) -> Trend {
    analyze_dir(values, interval_s, Direction::Higher)
}

/// Analyze a series sampled every `interval_s` seconds.
///
/// Flag rule: a series trends when ALL of (1) Mann-Kendall p < 0.05,
/// (2) the 95% Theil-Sen slope interval excludes 0, and (3) the fitted change
/// over the run is more than 5% of the series' median. The sign of the slope
/// and `direction` then say degrading or improving; otherwise it is flat.
///
/// Assumes what [`mannkendall::mann_kendall`], [`theilsen::theil_sen`] and
/// [`changepoint::change_points`] assume: serially independent noise around a
/// trend; not checked. The 5% change threshold keeps a significant but tiny
/// slope of a long, autocorrelated series from being flagged.
pub fn analyze_dir(values: &[f64], interval_s: f64, direction: Direction) -> Trend {
    let n = values.len();
    let asymptotic_level = asymptotic_level(values);
    let mut t = Trend {
        n,
        interval_s,
        bin: n.div_ceil(MAX_POINTS).max(1),
        theil_sen_slope: f64::NAN,
        slope_ci: (f64::NAN, f64::NAN),
        mann_kendall_p: f64::NAN,
        kendall_tau: f64::NAN,
        change_points: Vec::new(),
        asymptotic_level,
        relative_change: f64::NAN,
        flag: Flag::TooShort,
    };
    let binned: Vec<f64>;
    let y: &[f64] = if t.bin > 1 {
        // Bin medians, each placed at its bin's centre: the bins are equally
        // spaced except a shorter last one, whose centre is computed exactly.
        binned = values
            .chunks(t.bin)
            .map(|c| theilsen::median(c).unwrap_or(f64::NAN))
            .collect();
        &binned
    } else {
        values
    };
    let x: Vec<f64> = (0..y.len())
        .map(|i| {
            let start = i * t.bin;
            let len = t.bin.min(n - start);
            (start as f64 + (len as f64 - 1.0) / 2.0) * interval_s
        })
        .collect();
    let (Some(ts), Some(mk)) = (
        theilsen::theil_sen(&x, y, SLOPE_CONFIDENCE),
        mannkendall::mann_kendall(y),
    ) else {
        return t;
    };
    t.theil_sen_slope = ts.slope;
    t.slope_ci = (ts.low, ts.high);
    t.mann_kendall_p = mk.p;
    t.kendall_tau = mk.tau;
    t.change_points = changepoint::change_points(y)
        .into_iter()
        .map(|i| i * t.bin)
        .collect();
    let med = theilsen::median(values).unwrap_or(f64::NAN).abs();
    let span = (n - 1) as f64 * interval_s;
    t.relative_change = if med > 0.0 {
        ts.slope * span / med
    } else {
        f64::NAN
    };
    let excludes_zero = ts.low > 0.0 || ts.high < 0.0;
    let big = t.relative_change.abs() > MIN_RELATIVE_CHANGE;
    t.flag = if mk.p < MK_ALPHA && excludes_zero && big {
        let rising = ts.slope > 0.0;
        match (rising, direction) {
            (true, Direction::Higher) | (false, Direction::Lower) => Flag::Improving,
            _ => Flag::Degrading,
        }
    } else {
        Flag::Flat
    };
    t
}

/// Median of the last ceil(n/3) values; NaN for an empty series.
///
/// Assumes the series has settled in its last third: a median there is the
/// level it tends to only if the trend has flattened by then. Not checked;
/// the series' flag says whether it still trends.
pub fn asymptotic_level(values: &[f64]) -> f64 {
    let n = values.len();
    let k = n.div_ceil(3);
    theilsen::median(&values[n - k..]).unwrap_or(f64::NAN)
}

/// Asymptotic level of `other` divided by that of `base` (e.g. 2.4.14 over
/// 2.4.7); None when the base level is zero or either is not finite.
///
/// Assumes what [`asymptotic_level`] assumes for both series; a point
/// estimate with no interval.
pub fn asymptotic_ratio(base: &Trend, other: &Trend) -> Option<f64> {
    let (b, o) = (base.asymptotic_level, other.asymptotic_level);
    (b != 0.0 && b.is_finite() && o.is_finite()).then(|| o / b)
}
