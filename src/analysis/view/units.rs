//! Units a person reads: each metric's values are shown in the unit that
//! puts them between 1 and 1000 (ns, us, ms, s; B, KiB, MiB, GiB), as
//! hyperfine and benchstat do, so no report prints `3.428e-4 s`.
//!
//! The store keeps every value in the metric's own unit (`s`, `us`, `KiB`,
//! `ns/op`, ...); the JSON report keeps them so (it carries the raw
//! samples, which must agree with its statistics). The other formats are
//! rendered from a copy of the analysis rescaled here, so every number of a
//! metric (means, CIs of the shift, samples in plots) changes unit together
//! and ratios and percentages, which have none, stay as they are. The view
//! (`analysis::view`) picks each metric's [`Scale`] here once; whatever
//! else it carries in a display unit (the execution-order points, the
//! LMbench summary) is converted by the same [`Scale`] or [`convert`], so
//! no part of a report can show a metric in a unit its axis or heading
//! does not name.

use crate::analysis::{Analysis, MetricAnalysis};

/// A time unit forced with `--time-unit` (hyperfine's names; the short
/// symbols are accepted too).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TimeUnit {
    #[value(alias = "ns")]
    Nanosecond,
    #[value(alias = "us")]
    Microsecond,
    #[value(alias = "ms")]
    Millisecond,
    #[value(alias = "s")]
    Second,
}

impl TimeUnit {
    fn symbol(self) -> &'static str {
        match self {
            TimeUnit::Nanosecond => "ns",
            TimeUnit::Microsecond => "us",
            TimeUnit::Millisecond => "ms",
            TimeUnit::Second => "s",
        }
    }
}

/// Time units, each with its size in seconds, smallest first.
const TIME: [(&str, f64); 4] = [("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0)];
/// Sizes in bytes, smallest first (binary prefixes, as the kernel reports).
const SIZE: [(&str, f64); 4] = [
    ("B", 1.0),
    ("KiB", 1024.0),
    ("MiB", 1048576.0),
    ("GiB", 1073741824.0),
];

/// How one metric is shown: its values times `factor`, in `unit`.
#[derive(Clone, Debug, PartialEq)]
pub struct Scale {
    pub unit: String,
    pub factor: f64,
}

/// The family of `amount` (the part of a unit before any `/`, so `ns/op`
/// scales as `ns` does and keeps its `/op`) and its size in the family.
fn family(amount: &str) -> Option<(&'static [(&'static str, f64)], f64)> {
    let amount = if amount == "µs" { "us" } else { amount };
    for fam in [&TIME[..], &SIZE[..]] {
        if let Some(&(_, size)) = fam.iter().find(|(u, _)| *u == amount) {
            return Some((fam, size));
        }
    }
    None
}

/// The unit for a metric stored in `unit` whose values include `values`:
/// the largest unit of its family in which the smallest non-zero |value|
/// is at least 1 (so 1 ms prints as 1.000 ms, 0.9 ms as 900.0 us, and
/// 900 KiB stays KiB while 2048 KiB is 2.000 MiB). `forced` picks the unit
/// of a time metric instead. Units of no known family are kept.
pub fn choose(
    unit: &str,
    values: impl IntoIterator<Item = f64>,
    forced: Option<TimeUnit>,
) -> Scale {
    let keep = Scale {
        unit: unit.to_string(),
        factor: 1.0,
    };
    let (amount, per) = match unit.find('/') {
        Some(i) => (&unit[..i], &unit[i..]),
        None => (unit, ""),
    };
    let Some((fam, size)) = family(amount) else {
        return keep;
    };
    let to = |(name, target): (&str, f64)| Scale {
        unit: format!("{name}{per}"),
        factor: size / target,
    };
    if let Some(t) = forced.filter(|_| fam[0].0 == "ns") {
        return to(*TIME
            .iter()
            .find(|(u, _)| *u == t.symbol())
            .unwrap_or(&TIME[3]));
    }
    let smallest = values
        .into_iter()
        .map(f64::abs)
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    if !smallest.is_finite() {
        return keep;
    }
    let base = smallest * size;
    let pick = fam
        .iter()
        .rev()
        .find(|(_, s)| base >= *s * (1.0 - 1e-9))
        .unwrap_or(&fam[0]);
    to(*pick)
}

/// `v` stored in `from` as a value in `to`, when both units are of one
/// family (time or size) with the same `/...` tail; None otherwise (a
/// caller that needs a unit it cannot reach says so, rather than print
/// the stored number under the wrong name).
pub fn convert(v: f64, from: &str, to: &str) -> Option<f64> {
    if from == to {
        return Some(v);
    }
    let split = |u: &str| -> (String, String) {
        match u.find('/') {
            Some(i) => (u[..i].to_string(), u[i..].to_string()),
            None => (u.to_string(), String::new()),
        }
    };
    let ((fa, fp), (ta, tp)) = (split(from), split(to));
    let ((ffam, fsize), (tfam, tsize)) = (family(&fa)?, family(&ta)?);
    (fp == tp && ffam[0].0 == tfam[0].0).then(|| v * fsize / tsize)
}

/// The scale of one metric of a report, from its configs' means.
pub fn metric_scale(m: &MetricAnalysis, forced: Option<TimeUnit>) -> Scale {
    let means = m
        .cells
        .iter()
        .filter_map(|c| c.summary.as_ref().map(|s| s.mean));
    choose(&m.spec.unit, means, forced)
}

/// A copy of `a` with every metric in the unit [`metric_scale`] picks.
pub fn rescale(a: &Analysis, forced: Option<TimeUnit>) -> Analysis {
    let mut a = a.clone();
    for m in &mut a.metrics {
        let s = metric_scale(m, forced);
        if s.factor == 1.0 && s.unit == m.spec.unit {
            continue;
        }
        let f = s.factor;
        m.spec.unit = s.unit;
        for c in &mut m.cells {
            c.values.iter_mut().for_each(|v| *v *= f);
            if let Some(x) = c.summary.as_mut() {
                x.mean *= f;
                x.median *= f;
                x.min *= f;
                x.max *= f;
                x.stddev = x.stddev.map(|v| v * f);
                x.trimmed_mean = x.trimmed_mean.map(|v| v * f);
            }
            // Variances scale with the square of the unit.
            if let Some(v) = c.boot_variance.as_mut() {
                v.grand_mean *= f;
                for x in [
                    &mut v.ms_between,
                    &mut v.ms_within,
                    &mut v.between,
                    &mut v.within,
                ] {
                    *x *= f * f;
                }
            }
        }
        for cmp in &mut m.comparisons {
            if let Some(h) = cmp.hl_shift.as_mut() {
                h.shift *= f;
                h.lo *= f;
                h.hi *= f;
            }
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(u: &str, v: f64) -> String {
        choose(u, [v], None).unit
    }

    #[test]
    fn thresholds() {
        assert_eq!(unit("s", 1e-3), "ms");
        assert_eq!(unit("s", 0.999e-3), "us");
        assert_eq!(unit("s", 2.0), "s");
        assert_eq!(unit("s", 3.428e-4), "us");
        assert_eq!(unit("ns/op", 1500.0), "us/op");
        assert_eq!(unit("KiB", 900.0), "KiB");
        assert_eq!(unit("KiB", 2048.0), "MiB");
        assert_eq!(unit("KiB", 0.5), "B");
        assert_eq!(unit("ops/s", 1e-6), "ops/s");
        assert_eq!(
            choose("us", [5.0], Some(TimeUnit::Millisecond)).factor,
            1e-3
        );
        assert_eq!(choose("KiB", [5.0], Some(TimeUnit::Second)).unit, "KiB");
    }

    #[test]
    fn conversions_stay_in_their_family() {
        let near =
            |got: Option<f64>, want: f64| got.is_some_and(|g| (g - want).abs() < 1e-9 * want);
        assert!(near(convert(22.204, "ms", "us"), 22204.0));
        assert!(near(convert(2.0, "MiB", "KiB"), 2048.0));
        assert!(near(convert(1500.0, "ns/op", "us/op"), 1.5));
        assert_eq!(convert(1.0, "ms", "KiB"), None);
        assert_eq!(convert(1.0, "ns/op", "us"), None);
        assert_eq!(convert(3.0, "MB/s", "MB/s"), Some(3.0));
    }
}
